//! Issue 40, item 1, through the binary: a class that declares its `tasks`
//! (a file beside the policy, pinned with it) is read in the declared
//! order, whatever order the scores were recorded in; `ratchet gate` says
//! which order it read, counts the scores off the list, and refuses a task
//! file edited after the pin. The error rates under a pool of workers are
//! measured at scale through the library (`crates/gate/tests/it/
//! order_40.rs`); here a few seeded runs of the same arrival process go
//! through `ratchet append` and `ratchet gate` after every batch.

use rand::{Rng, SeedableRng, rngs::StdRng};

use crate::common;

use common::{append, fresh_store, gate, in_store_ok, text};

const BASE: &str = "5555555555555555555555555555555555555555";
const CAND: &str = "6666666666666666666666666666666666666666";

/// Class `listed` reads `tasks.txt`; class `traced` declares nothing.
fn write_policy(dir: &std::path::Path, tasks: usize) -> String {
    let class = |name: &str, extra: &str| {
        format!(
            "[class.{name}]\nscorer = \"s\"\ntest = \"betting\"\nalpha = 0.05\nbeta = 0.1\ngap = 0.2\nmax_n = 100000\n{extra}"
        )
    };
    let policy = format!(
        "{}\n{}",
        class("listed", "tasks = \"tasks.txt\"\n"),
        class("traced", "")
    );
    std::fs::write(dir.join("policy.toml"), policy).expect("policy");
    let ids: String = (0..tasks).map(|t| format!("{}\n", task(t))).collect();
    std::fs::write(dir.join("tasks.txt"), ids).expect("tasks");
    dir.join("policy.toml").to_str().expect("utf8").to_owned()
}

fn task(t: usize) -> String {
    format!("t{t:04}")
}

fn score_line(commit: &str, task: &str, value: f64) -> String {
    format!(
        "{{\"kind\":\"score\",\"commit\":\"{commit}\",\"payload\":{{\"task\":\"{task}\",\"scorer\":\"s\",\"scorer_version\":\"1\",\"value\":{value}}}}}\n"
    )
}

#[test]
fn the_gate_reads_the_declared_order_says_so_and_counts_what_is_off_the_list() {
    let (d, st) = fresh_store();
    let policy = write_policy(d.path(), 40);
    let o = in_store_ok(d.path(), &st, &["policy", "pin", &policy]);
    assert!(
        text(&o).contains("tasks: 40 listed, read in that order (first t0000)"),
        "{}",
        text(&o)
    );
    // Each side's run recorded last task first (the baseline's before the
    // candidate's), two tasks off the list among them, and the candidate
    // without a score of t0005 yet.
    for (commit, value) in [(BASE, 0.0), (CAND, 1.0)] {
        let mut lines = String::new();
        for t in (0..40).rev() {
            if !(t == 5 && commit == CAND) {
                lines.push_str(&score_line(commit, &task(t), 1.0));
            }
        }
        for extra in ["warmup-a", "warmup-b"] {
            lines.push_str(&score_line(commit, extra, value));
        }
        append(d.path(), &st, &lines);
    }

    let o = gate(d.path(), &st, BASE, CAND, "listed", &["--dry-run"]);
    let words = text(&o);
    assert!(words.starts_with("CONTINUE"), "{words}");
    assert!(
        words.contains("task t0005, next in the declared order, is not yet scored on both sides")
            && words.contains("after 5 observations"),
        "waits at the fifth listed task, whatever the trace order:\n{words}"
    );
    assert!(
        words.contains("order: tasks read in the class's declared order (40 listed)")
            && words.contains("not read: 2 score(s) of 2 task(s) off the list (s, baseline)")
            && words.contains("not read: 2 score(s) of 2 task(s) off the list (s, candidate)"),
        "{words}"
    );
    let o = gate(
        d.path(),
        &st,
        BASE,
        CAND,
        "listed",
        &["--dry-run", "--json"],
    );
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
    assert_eq!(v["order"]["by"], "declared", "{v}");
    assert_eq!(v["order"]["tasks"], 40, "{v}");
    assert_eq!(v["order"]["undeclared"][0]["scores"], 2, "{v}");
    assert_eq!(v["law"], 5, "{v}");

    // Without a declaration: the name sweep, which also waits at t0005
    // (the baseline recorded t0039 first; name order puts t0000 first),
    // and says so.
    let o = gate(d.path(), &st, BASE, CAND, "traced", &["--dry-run"]);
    let words = text(&o);
    assert!(
        words.contains("order: tasks read in name order, fixed before any outcome")
            && words.contains("task t0005, next in name order, is not yet scored on both sides")
            && words.contains("after 5 observations"),
        "{words}"
    );
    let o = gate(
        d.path(),
        &st,
        BASE,
        CAND,
        "traced",
        &["--dry-run", "--json"],
    );
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
    assert_eq!(v["order"]["by"], "name_sweep", "{v}");

    // The list is pinned with the policy: an edited file is refused.
    let swapped = std::fs::read_to_string(d.path().join("tasks.txt"))
        .expect("tasks")
        .replacen("t0000\nt0001\n", "t0001\nt0000\n", 1);
    std::fs::write(d.path().join("tasks.txt"), swapped).expect("edit");
    let o = gate(
        d.path(),
        &st,
        BASE,
        CAND,
        "listed",
        &["--policy", &policy, "--dry-run"],
    );
    assert!(!o.status.success(), "{}", text(&o));
    assert!(
        text(&o).contains("tasks[0]"),
        "names the field that differs from the pin: {}",
        text(&o)
    );
}

/// A seeded run of the pool (10 workers, failures finishing within mean 1,
/// passes within mean 4, exponential): the jobs' scores appended as ten
/// complete, `ratchet gate --json` after every batch until it decides.
/// Both sides' jobs share one pool, or (`baseline_first`) the baseline's
/// run goes through a pool of its own and is recorded before the
/// candidate's.
fn run_through_the_binary(
    rng: &mut StdRng,
    class: &str,
    (p_base, p_cand): (f64, f64),
    baseline_first: bool,
) -> String {
    const TASKS: usize = 300;
    let (d, st) = fresh_store();
    let policy = write_policy(d.path(), TASKS);
    in_store_ok(d.path(), &st, &["policy", "pin", &policy]);
    let (mut base, mut cand) = (Vec::new(), Vec::new());
    for t in 0..TASKS {
        for (commit, p, jobs) in [(BASE, p_base, &mut base), (CAND, p_cand, &mut cand)] {
            let pass = rng.random_bool(p);
            let mean = if pass { 4.0 } else { 1.0 };
            // Exponential by inversion: −mean · ln U, U in (0, 1].
            let u: f64 = 1.0 - rng.random::<f64>();
            jobs.push((
                score_line(commit, &task(t), f64::from(u8::from(pass))),
                -mean * u.ln(),
            ));
        }
    }
    let completed = if baseline_first {
        let mut done = ratchet_testkit::pool_completions(10, base);
        done.extend(ratchet_testkit::pool_completions(10, cand));
        done
    } else {
        let jobs = base.into_iter().zip(cand).flat_map(|(b, c)| [b, c]);
        ratchet_testkit::pool_completions(10, jobs)
    };
    for batch in completed.chunks(10) {
        append(d.path(), &st, &batch.concat());
        let o = gate(d.path(), &st, BASE, CAND, class, &["--json"]);
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
        let by = if class == "listed" {
            "declared"
        } else {
            "name_sweep"
        };
        assert_eq!(v["order"]["by"], by, "{v}");
        let status = v["status"].as_str().expect("status").to_string();
        if status != "continue" {
            return status;
        }
    }
    "continue".into()
}

/// Per order (declared; the name sweep of a class that declares nothing,
/// with both runs in one pool and with the baseline's run first), eight
/// runs at the null and eight at the design effect (0.4 against 0.6),
/// failures finishing sooner. Bounds: α + 3·√(α(1−α)/8) = 0.28 (at most 2
/// false promotes of 8) and β + 3·√(β(1−β)/8) = 0.42 (at most 3 false
/// rejects of 8) — the binary's check; the rates themselves are measured
/// over 300 runs a cell in the library's test.
#[test]
fn a_pool_of_workers_through_the_binary_stays_within_alpha_and_beta() {
    for (class, baseline_first, seed) in [
        ("listed", false, 4040),
        ("traced", false, 4041),
        ("traced", true, 4042),
    ] {
        let mut rng = StdRng::seed_from_u64(seed);
        let null: Vec<String> = (0..8)
            .map(|_| run_through_the_binary(&mut rng, class, (0.5, 0.5), baseline_first))
            .collect();
        let promotes = null.iter().filter(|s| *s == "promote").count();
        assert!(
            promotes <= 2,
            "{class} (baseline first {baseline_first}): false promotes at the null: {null:?}"
        );
        let design: Vec<String> = (0..8)
            .map(|_| run_through_the_binary(&mut rng, class, (0.4, 0.6), baseline_first))
            .collect();
        let rejects = design.iter().filter(|s| *s == "reject").count();
        assert!(
            rejects <= 3,
            "{class} (baseline first {baseline_first}): false rejects at the design effect: {design:?}"
        );
        eprintln!(
            "order_40 through the binary ({class}, baseline first {baseline_first}): null {null:?}, design {design:?}"
        );
    }
}
