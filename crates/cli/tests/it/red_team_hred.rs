//! Red team, round hred: RATCHET_KEY_FILE, --server, `{undecided}`, the
//! benchmarks gate, the report's change points.

use crate::common;

use std::path::Path;
use std::process::{Command, Output, Stdio};

use common::text;

/// `ratchet args…` in `cwd` with RATCHET_KEY_FILE set to `key` (or unset).
fn with_key_env(cwd: &Path, key: Option<&Path>, args: &[&str]) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_ratchet"));
    c.current_dir(cwd)
        .args(args)
        .env_remove("RATCHET_STORE")
        .env_remove("RATCHET_SERVER")
        .env_remove("RATCHET_TOKEN_FILE")
        .env_remove("RATCHET_KEY_FILE")
        .stdin(Stdio::null());
    if let Some(k) = key {
        c.env("RATCHET_KEY_FILE", k);
    }
    c.output().expect("run ratchet")
}

/// Two keyed stores `a` and `b`, one event in `a`; their keys beside them.
fn two_keyed_stores() -> tempfile::TempDir {
    let d = tempfile::tempdir().expect("tempdir");
    for s in ["a", "b"] {
        let o = with_key_env(
            d.path(),
            None,
            &[
                "--store",
                s,
                "init",
                "--keyed",
                "--key-file",
                &format!("{s}.key"),
            ],
        );
        assert!(o.status.success(), "{}", text(&o));
    }
    let commit = "0123456789abcdef0123456789abcdef01234567";
    let o = with_key_env(
        d.path(),
        Some(&d.path().join("a.key")),
        &[
            "--store",
            "a",
            "record-score",
            "--commit",
            commit,
            "--task",
            "t",
            "--scorer",
            "s",
            "--value",
            "1",
        ],
    );
    assert!(o.status.success(), "{}", text(&o));
    d
}

/// `verify-chain` reads RATCHET_KEY_FILE like every other command (it
/// asked for --key-file with the right key in the environment).
#[test]
fn verify_chain_takes_the_key_from_the_environment() {
    let d = two_keyed_stores();
    let o = with_key_env(
        d.path(),
        Some(&d.path().join("a.key")),
        &["--store", "a", "verify-chain"],
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(text(&o).contains("MACs checked"), "{}", text(&o));
}

/// A key of another store is named as such before anything is read: it
/// used to read as "MAC does not match (written without the writer key)"
/// (`status`, `gate`) and `best` advised restoring the store from a
/// trusted copy — a wrong key made an intact store look altered; on an
/// empty store `status` said "verifies, MACs checked" under the wrong key.
#[test]
fn a_key_of_another_store_is_said_to_be_one() {
    let d = two_keyed_stores();
    let wrong = d.path().join("b.key");
    for args in [
        vec!["--store", "a", "status"],
        vec!["--store", "a", "status", "--json"],
        vec!["--store", "a", "best", "--scorer", "s"],
        vec!["--store", "a", "verify-chain"],
        vec!["--store", "a", "log"],
        vec!["--store", "b", "status"],
    ] {
        let key = if args[1] == "b" {
            d.path().join("a.key")
        } else {
            wrong.clone()
        };
        let o = with_key_env(d.path(), Some(&key), &args);
        let said = text(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {said}");
        assert!(
            said.contains("does not match this store's key"),
            "{args:?}: {said}"
        );
        assert!(!said.contains("MAC does not match"), "{args:?}: {said}");
        assert!(!said.contains("trusted copy"), "{args:?}: {said}");
    }
}

/// Google Benchmark JSON of one benchmark `BM_s`, one run of `ns`.
fn gbench_one(ns: &str) -> String {
    format!(
        r#"{{"context":{{"host_name":"h","num_cpus":2,"mhz_per_cpu":1000,"library_build_type":"release"}},"benchmarks":[{{"name":"BM_s","run_name":"BM_s","run_type":"iteration","iterations":1,"real_time":{ns},"cpu_time":{ns},"time_unit":"ns"}}]}}"#
    )
}

/// One run whose timing is 0 (ingest takes it: 0 is a measurement) made
/// its commit's level 0, and `change_points` shows nothing for a history
/// holding a non-positive level: that one run hid a 30 % step from the
/// report. The run is left out, and counted, instead.
#[test]
fn one_zero_timing_does_not_hide_the_reports_change_points() {
    let (d, st) = common::fresh_store();
    let ingest = |i: u32, ns: &str, file: &str| {
        let path = d.path().join(file);
        std::fs::write(&path, gbench_one(ns)).expect("write");
        let commit = format!("{i:08x}{:032x}", 0);
        let o = common::ratchet(
            d.path(),
            &[
                "--store",
                &st,
                "--allow-unknown-commit",
                "ingest",
                "google-benchmark",
                path.to_str().expect("utf8"),
                "--commit",
                &commit,
            ],
            "",
        );
        assert!(o.status.success(), "{}", text(&o));
    };
    for (i, ns) in [
        "1000", "1003", "998", "1001", "1300", "1302", "1297", "1301", "1299", "1303",
    ]
    .iter()
    .enumerate()
    {
        ingest(
            u32::try_from(i).expect("small") + 1,
            ns,
            &format!("f{i}.json"),
        );
    }
    ingest(2, "0", "zero.json");
    let out = d.path().join("r.html");
    let o = common::ratchet(
        d.path(),
        &[
            "--store",
            &st,
            "report",
            "--out",
            out.to_str().expect("utf8"),
        ],
        "",
    );
    assert!(o.status.success(), "{}", text(&o));
    let html = std::fs::read_to_string(&out).expect("report");
    assert!(
        html.contains("×1.300 at <code>00000005</code>"),
        "the step is hidden"
    );
    assert!(html.contains("1 run(s) whose median is not a positive number left out"));
}

/// Google Benchmark JSON from host `host` of the benchmarks `(name, ns)`.
pub(crate) fn gbench_on(host: &str, rows: &[(&str, f64)]) -> String {
    let rows: Vec<String> = rows
        .iter()
        .map(|(n, v)| {
            format!(
                r#"{{"name":"{n}","run_name":"{n}","run_type":"iteration","iterations":1,"real_time":{v},"cpu_time":{v},"time_unit":"ns"}}"#
            )
        })
        .collect();
    format!(
        r#"{{"context":{{"host_name":"{host}","num_cpus":2,"mhz_per_cpu":1000,"library_build_type":"release"}},"benchmarks":[{}]}}"#,
        rows.join(",")
    )
}

/// Found by a red team under the third law: the benchmarks gate read only
/// the runner of the baseline's newest runs. Here `b1` is 5 % slower and
/// is rejected on runner `h`; then one-benchmark runs of both commits on a
/// new runner `h2` (a runner pool changed, a filtered run, or anyone
/// trusted for the baseline side) made the gate read `h2` only — and it
/// PROMOTED, `b1` and runner `h` named nowhere. Since the fourth law every
/// runner both sides were measured on is judged: still REJECT, `b1` on
/// `h` named.
#[test]
fn a_five_percent_regression_is_rejected_on_its_runner_after_the_runner_changes() {
    let (d, st) = common::fresh_store();
    let policy = d.path().join("policy.toml");
    std::fs::write(
        &policy,
        "[class.perf]\nscorer = \"gbench_real_ns\"\ntest = \"benchmarks\"\nalpha = 0.05\nbeta = 0.1\nmax_n = 100\nregression = 0.05\nequivalence = 0.01\n",
    )
    .expect("policy");
    let (base, cand) = ("1".repeat(40), "2".repeat(40));
    let ingest = |file: &str, body: String, commit: &str| {
        let path = d.path().join(file);
        std::fs::write(&path, body).expect("write");
        let o = common::ratchet(
            d.path(),
            &[
                "--store",
                &st,
                "--allow-unknown-commit",
                "ingest",
                "google-benchmark",
                path.to_str().expect("utf8"),
                "--commit",
                commit,
            ],
            "",
        );
        assert!(o.status.success(), "{}", text(&o));
    };
    for i in 0..24u32 {
        let j = f64::from(i) * 0.01;
        ingest(
            &format!("b{i}.json"),
            gbench_on("h", &[("b1", 1000.0 + j), ("b2", 2000.0 + j)]),
            &base,
        );
        ingest(
            &format!("c{i}.json"),
            gbench_on("h", &[("b1", 1050.0 + j), ("b2", 2000.0 + j)]),
            &cand,
        );
    }
    let gate = |st: &str| {
        common::ratchet(
            d.path(),
            &[
                "--store",
                st,
                "--allow-unknown-commit",
                "gate",
                "--baseline",
                &base,
                "--candidate",
                &cand,
                "--class",
                "perf",
                "--policy",
                policy.to_str().expect("utf8"),
            ],
            "",
        )
    };
    let o = gate(&st);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(text(&o).contains("b1"), "{}", text(&o));
    // The switch: both commits measured again on `h2`, `b2` only, the
    // baseline last (so `h2` is its newest runner).
    for (prefix, commit) in [("c2", &cand), ("b2", &base)] {
        for i in 0..30u32 {
            let j = f64::from(i) * 0.01;
            ingest(
                &format!("{prefix}-{i}.json"),
                gbench_on("h2", &[("b2", 2000.0 + j)]),
                commit,
            );
        }
    }
    let o = gate(&st);
    let out = text(&o);
    assert_eq!(o.status.code(), Some(1), "still rejected: {out}");
    let first = out.lines().next().unwrap_or_default();
    assert!(
        first.contains("b1 on ") && first.contains("slower"),
        "b1 named with its runner: {out}"
    );
}
