//! The `ratchet` binary, run as a user would: output, JSON and exit codes.

use crate::common;

use std::path::Path;
use std::process::Command;

use common::{assert_says, ratchet, ratchet_ok, text};

const C: &str = "0123456789abcdef0123456789abcdef01234567";

/// A one-item boolean rubric named `answer`, shared by the rubric and
/// batch-score tests.
const ANSWER_RUBRIC: &str =
    "name = \"answer\"\n[[item]]\nid = \"correct\"\ntype = \"boolean\"\nweight = 1.0\n";

#[test]
fn store_end_to_end_with_exit_codes() {
    let d = tempfile::tempdir().expect("tempdir");
    let p = d.path();
    std::fs::create_dir(p.join(".git")).expect("fake git root");
    std::fs::create_dir(p.join("sub")).expect("subdir");
    let sub = p.join("sub");

    ratchet_ok(&sub, &["init"], "");
    assert!(
        p.join(".ratchet/trace.db").is_file(),
        "default store at the git root"
    );

    let lines = format!(
        "{{\"kind\":\"note\",\"payload\":{{\"hello\":1}}}}\n\n{{\"kind\":\"score\",\"commit\":\"{C}\",\"session\":\"s\",\"payload\":{{\"task\":\"t1\",\"scorer\":\"acc\",\"scorer_version\":\"1\",\"value\":0.5}}}}\n"
    );
    let o = ratchet_ok(&sub, &["append"], &lines);
    assert_says(&o, "appended 2 events");

    ratchet_ok(
        &sub,
        &[
            "record-score",
            "--commit",
            C,
            "--task",
            "t2",
            "--scorer",
            "acc",
            "--value",
            "-0.25",
        ],
        "",
    );

    let o = ratchet_ok(&sub, &["--json", "log"], "");
    let events: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json log");
    // Two appended, the declaration of `acc` (recorded when the scorer first
    // appears through record-score), the score.
    let events = &events["events"];
    assert_eq!(events.as_array().map(Vec::len), Some(4));
    assert_eq!(events[0]["payload"]["hello"], 1);
    assert_eq!(events[2]["kind"], "scorer");
    assert_eq!(events[2]["payload"]["direction"], "higher_is_better");

    let o = ratchet(&sub, &["verify-chain"], "");
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert_says(&o, "ok: 4 events verified");

    let cp = p.join("cp");
    ratchet_ok(
        &sub,
        &["checkpoint", "--out", cp.to_str().expect("utf8")],
        "",
    );
    let o = ratchet(
        &sub,
        &["verify-chain", "--checkpoint", cp.to_str().expect("utf8")],
        "",
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));

    // Tamper through raw SQL: exit 1, naming the seq.
    let conn = rusqlite_free_edit(&p.join(".ratchet/trace.db"), b"\"hello\":1", b"\"hello\":2");
    assert!(conn, "payload found in the file");
    let o = ratchet(&sub, &["verify-chain"], "");
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert_says(&o, "seq 1");
    let o = ratchet(&sub, &["--json", "verify-chain"], "");
    assert_eq!(o.status.code(), Some(1));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
    assert_eq!(v["fault"]["seq"], 1);
    assert_eq!(v["fault"]["kind"]["fault"], "hash_mismatch");
}

/// Edits bytes of the database file in place (no SQLite involved), after
/// making sure no WAL holds newer pages.
fn rusqlite_free_edit(db: &Path, from: &[u8], to: &[u8]) -> bool {
    assert!(
        !db.with_extension("db-wal").exists()
            || std::fs::metadata(db.with_extension("db-wal"))
                .map(|m| m.len())
                .unwrap_or(0)
                == 0
    );
    let mut bytes = std::fs::read(db).expect("read db");
    let Some(at) = bytes.windows(from.len()).position(|w| w == from) else {
        return false;
    };
    bytes[at..at + to.len()].copy_from_slice(to);
    std::fs::write(db, bytes).expect("write db");
    true
}

#[test]
fn bad_input_exits_2_with_a_clear_message_and_stores_nothing() {
    let (d, st) = common::fresh_store();
    let st = st.as_str();
    let bad = "{\"kind\":\"note\",\"payload\":{}}\n{\"kind\":\"note\",\"commit\":\"abc\",\"payload\":{}}\n";
    let o = ratchet(d.path(), &["--store", st, "append"], bad);
    assert_eq!(o.status.code(), Some(2));
    assert_says(&o, "line 2: ");
    assert_says(&o, "full commit id");
    // A number no JSON reader can hold would break every later read
    // (`log --json` included): refused on the way in.
    let o = ratchet(
        d.path(),
        &["--store", st, "append"],
        "{\"kind\":\"note\",\"payload\":{\"x\":1e999}}\n",
    );
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        text(&o).contains("payload") && text(&o).contains("out of range"),
        "{}",
        text(&o)
    );

    for (value, field) in [("NaN", "score.value"), ("inf", "score.value")] {
        let o = common::in_store(
            d.path(),
            st,
            &[
                "record-score",
                "--commit",
                C,
                "--task",
                "t",
                "--scorer",
                "a",
                "--value",
                value,
            ],
        );
        assert_eq!(o.status.code(), Some(2), "{}", text(&o));
        assert!(text(&o).contains(field), "{}", text(&o));
    }
    let o = common::in_store(d.path(), st, &["--json", "log"]);
    let events: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
    assert_eq!(
        events["events"].as_array().map(Vec::len),
        Some(0),
        "nothing stored"
    );

    let o = common::in_store(
        d.path(),
        d.path().join("none").to_str().expect("utf8"),
        &["log"],
    );
    assert_eq!(o.status.code(), Some(2));
    assert_says(&o, "ratchet init");

    let cp = d.path().join("bad-cp");
    std::fs::write(&cp, "not a checkpoint\n").expect("write");
    let o = common::in_store(
        d.path(),
        st,
        &["verify-chain", "--checkpoint", cp.to_str().expect("utf8")],
    );
    assert_eq!(o.status.code(), Some(2));
    assert_says(&o, "line 1");
}

#[test]
fn keyed_store_and_cell_merge() {
    let d = tempfile::tempdir().expect("tempdir");
    let (home, cell, key) = (
        d.path().join("home"),
        d.path().join("cell"),
        d.path().join("home.key"),
    );
    let (home_s, cell_s, key_s) = (
        home.to_str().expect("utf8"),
        cell.to_str().expect("utf8"),
        key.to_str().expect("utf8"),
    );
    common::in_store_ok(d.path(), home_s, &["init", "--keyed", "--key-file", key_s]);
    let o = common::in_store(d.path(), home_s, &["init", "--keyed", "--key-file", key_s]);
    assert_eq!(
        o.status.code(),
        Some(2),
        "refuses to overwrite the key: {}",
        text(&o)
    );

    common::init(d.path(), cell_s);
    let lines = "{\"kind\":\"note\",\"payload\":[1]}\n{\"kind\":\"note\",\"payload\":[2]}\n";
    common::append(d.path(), cell_s, lines);

    let o = common::in_store(d.path(), home_s, &["merge-cells", cell_s]);
    assert_eq!(
        o.status.code(),
        Some(2),
        "keyed home needs its key: {}",
        text(&o)
    );
    assert_says(&o, "--key-file");
    let o = common::in_store_ok(
        d.path(),
        home_s,
        &["merge-cells", cell_s, "--key-file", key_s],
    );
    assert_says(&o, "2 new events");
    let o = common::in_store(
        d.path(),
        home_s,
        &["--json", "merge-cells", cell_s, "--key-file", key_s],
    );
    let r: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
    assert_eq!(r["cells"][0]["ingested"], 0, "idempotent");

    let o = common::in_store(d.path(), home_s, &["verify-chain", "--key-file", key_s]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert_says(&o, "MACs checked");
}

#[test]
fn demo_catches_its_tampering() {
    let d = tempfile::tempdir().expect("tempdir");
    let o = ratchet_ok(
        d.path(),
        &[
            "--json",
            "demo",
            "--proposals",
            "6",
            "--dir",
            d.path().join("demo").to_str().expect("utf8"),
        ],
        "",
    );
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
    assert_eq!(v["caught"], true);
    assert_eq!(
        v["summary"]["tamper"]["fault_seq"],
        v["summary"]["tamper"]["seq"]
    );
    assert_eq!(v["summary"]["chain_verified"], true);
}

/// The default demo tells the whole story it exists to tell: regressions
/// fire in live traffic, each is caught, and heal checks out a better
/// commit (the old default seed showed none).
#[test]
fn the_default_demo_shows_a_regression_caught_and_healed() {
    let d = tempfile::tempdir().expect("tempdir");
    let o = ratchet_ok(
        d.path(),
        &[
            "--json",
            "demo",
            "--dir",
            d.path().join("demo").to_str().expect("utf8"),
        ],
        "",
    );
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
    let fired = v["summary"]["regressions"].as_array().expect("regressions");
    assert!(!fired.is_empty(), "a regression fired: {v}");
    for r in fired {
        assert!(r["detected_after"].is_u64(), "caught: {r}");
        assert!(r["healed_to"].is_string(), "healed: {r}");
    }
}

/// The class the CLI's gate tests decide: `prompt`, a bernoulli test on
/// `accuracy` that detects a difference of 0.2 (at most 2000 tasks), the
/// `unit` suite required. The text of `policy.toml`.
fn policy() -> String {
    ratchet_testkit::gap_class(
        "prompt",
        "bernoulli",
        "accuracy",
        0.2,
        2000,
        ratchet_testkit::REQUIRES_UNIT,
    )
}

/// JSON Lines for `append`: per task, baseline passes every other task,
/// candidate passes `cand_every` out of 10.
fn scores_jsonl(base: &str, cand: &str, tasks: usize, cand_pass_per_10: usize) -> String {
    let mut out = String::new();
    for t in 0..tasks {
        for (c, pass) in [(base, t % 2 == 0), (cand, t % 10 < cand_pass_per_10)] {
            out.push_str(&format!(
                "{{\"kind\":\"score\",\"commit\":\"{c}\",\"payload\":{{\"task\":\"t{t:04}\",\"scorer\":\"accuracy\",\"scorer_version\":\"1\",\"value\":{}}}}}\n",
                u8::from(pass)
            ));
        }
    }
    out.push_str(&format!(
        "{{\"kind\":\"test_run\",\"commit\":\"{cand}\",\"payload\":{{\"suite\":\"unit\",\"passed\":10,\"failed\":0,\"skipped\":0,\"duration_ms\":5.0}}}}\n"
    ));
    out
}

/// A store in a new temporary directory, `policy()` beside it, holding the
/// scores of [`scores_jsonl`] with these arguments (appended through the CLI).
fn scored_store(
    baseline: &str,
    candidate: &str,
    tasks: usize,
    cand_pass_per_10: usize,
) -> (tempfile::TempDir, std::path::PathBuf) {
    let (d, st_s) = common::fresh_store();
    let st = d.path().join("s");
    let st_s = st_s.as_str();
    std::fs::write(st.join("policy.toml"), policy()).expect("policy");
    common::append(
        d.path(),
        st_s,
        &scores_jsonl(baseline, candidate, tasks, cand_pass_per_10),
    );
    (d, st)
}

#[test]
fn gate_exit_codes_promote_reject_continue_error() {
    let base = "1111111111111111111111111111111111111111";
    let good = "2222222222222222222222222222222222222222";
    let same = "3333333333333333333333333333333333333333";
    let (d, st) = common::fresh_store();
    let st = st.as_str();
    std::fs::write(d.path().join("s/policy.toml"), policy()).expect("policy");
    let mut lines = scores_jsonl(base, good, 400, 9);
    lines.push_str(
        &scores_jsonl(base, same, 400, 5)
            .lines()
            .filter(|l| l.contains(same))
            .collect::<Vec<_>>()
            .join("\n"),
    );
    lines.push('\n');
    common::append(d.path(), st, &lines);

    let gate = |cand: &str, extra: &[&str]| common::gate(d.path(), st, base, cand, "prompt", extra);
    let o = gate(good, &[]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert_says(&o, "PROMOTE");
    let o = gate(same, &["--json"]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json verdict");
    assert_eq!(v["outcome"]["verdict"], "reject");
    // A candidate with only a handful of tasks: continue.
    let few = "4444444444444444444444444444444444444444";
    let few_lines: Vec<String> = scores_jsonl(base, few, 400, 9)
        .lines()
        .filter(|l| l.contains(few))
        .map(String::from)
        .collect();
    let (runs, scores): (Vec<String>, Vec<String>) =
        few_lines.into_iter().partition(|l| l.contains("test_run"));
    let input = scores
        .into_iter()
        .take(6)
        .chain(runs)
        .collect::<Vec<_>>()
        .join("\n");
    common::append(d.path(), st, &input);
    let o = gate(few, &[]);
    assert_eq!(o.status.code(), Some(3), "{}", text(&o));
    // Errors: unknown class, bad policy file.
    let o = common::gate(d.path(), st, base, good, "agent", &[]);
    assert_eq!(o.status.code(), Some(2));
    assert_says(&o, "class.agent");
    std::fs::write(
        d.path().join("bad.toml"),
        policy().replace("alpha = 0.05", "alpha = 2"),
    )
    .expect("bad policy");
    let bad = d.path().join("bad.toml");
    let o = gate(good, &["--policy", bad.to_str().expect("utf8")]);
    assert_eq!(o.status.code(), Some(2));
    assert_says(&o, "class.prompt.alpha");

    // The verdicts are in the trace, and the trace still verifies.
    let o = common::in_store(d.path(), st, &["verify-chain"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
}

#[test]
fn calibrate_prints_the_operating_characteristic() {
    let d = tempfile::tempdir().expect("tempdir");
    let p = d.path().join("policy.toml");
    std::fs::write(&p, policy()).expect("policy");
    let o = ratchet_ok(
        d.path(),
        &[
            "calibrate",
            "--policy",
            p.to_str().expect("utf8"),
            "--class",
            "prompt",
            "--p0",
            "0.5",
            "--json",
        ],
        "",
    );
    let rows: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
    let rows = rows["rows"].as_array().expect("rows");
    assert!(rows.len() >= 5);
    // P(promote) rises with the true pass rate, ≤ α at p0, ≥ 1 − β at p1.
    let p: Vec<f64> = rows
        .iter()
        .map(|r| r["p_promote"].as_f64().expect("p"))
        .collect();
    assert!(p.windows(2).all(|w| w[0] <= w[1]), "{p:?}");
    let at = |rate: f64| {
        rows.iter()
            .find(|r| {
                r["effect"]["unit"] == "pass_rate"
                    && r["effect"]["rate"]
                        .as_f64()
                        .is_some_and(|x| (x - rate).abs() < 1e-9)
            })
            .map(|r| r["p_promote"].as_f64().expect("p"))
    };
    assert!(at(0.5).expect("row at p0") <= 0.05);
    assert!(at(0.7).expect("row at p1") >= 0.95);
}

fn git(dir: &Path, args: &[&str]) -> String {
    let o = Command::new("git")
        .current_dir(dir)
        .args([
            "-c",
            "user.name=ratchet test",
            "-c",
            "user.email=test@example.invalid",
            "-c",
            "commit.gpgsign=false",
        ])
        .args(args)
        .output()
        .expect("git runs");
    assert!(
        o.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout).trim().to_string()
}

/// A git repository at `p` with one commit of `prompt.txt` per version
/// (the version is both its content and its message) and a store
/// initialised in it (`.ratchet`); the commits' ids, oldest first.
fn prompt_versions(p: &Path, versions: &[&str]) -> Vec<String> {
    git(p, &["init", "-q"]);
    let mut commits = Vec::new();
    for v in versions {
        std::fs::write(p.join("prompt.txt"), v).expect("write");
        git(p, &["add", "prompt.txt"]);
        git(p, &["commit", "-q", "-m", v]);
        commits.push(git(p, &["rev-parse", "HEAD"]));
    }
    ratchet_ok(p, &["init"], "");
    commits
}

fn quality_lines(commit: &str, mean: f64, n: usize, tag: &str) -> String {
    (0..n)
        .map(|i| {
            let v = mean + ((i % 11) as f64 - 5.0) * 0.01;
            format!("{{\"kind\":\"score\",\"commit\":\"{commit}\",\"payload\":{{\"task\":\"{tag}{i}\",\"scorer\":\"quality\",\"scorer_version\":\"1\",\"value\":{v}}}}}\n")
        })
        .collect()
}

#[test]
fn watch_records_an_alarm_and_heal_checks_out_the_best_commit() {
    let d = tempfile::tempdir().expect("tempdir");
    let p = d.path();
    let commits = prompt_versions(p, &["v1", "v2", "v3"]);
    let mut lines = String::new();
    for (c, mean) in commits.iter().zip([0.80, 0.85, 0.90]) {
        lines.push_str(&quality_lines(c, mean, 100, "eval"));
    }
    ratchet_ok(p, &["append"], &lines);
    let o = ratchet(p, &["--json", "checkpoint"], "");
    let from = serde_json::from_slice::<serde_json::Value>(&o.stdout).expect("json")["size"]
        .as_u64()
        .expect("size");
    let live = quality_lines(&commits[2], 0.90, 60, "live")
        + &quality_lines(&commits[2], 0.70, 40, "drift");
    ratchet_ok(p, &["append"], &live);

    let from_s = from.to_string();
    let o = ratchet(
        p,
        &[
            "watch",
            "--commit",
            &commits[2],
            "--scorer",
            "quality",
            "--from",
            &from_s,
            "--record",
        ],
        "",
    );
    assert_eq!(o.status.code(), Some(1), "alarms exit 1: {}", text(&o));
    assert!(
        text(&o).contains("ALARM") && text(&o).contains("downward shift"),
        "{}",
        text(&o)
    );

    let o = ratchet_ok(p, &["heal", "--dry-run"], "");
    assert!(
        text(&o).contains(&format!("would check out {}", commits[1])),
        "{}",
        text(&o)
    );
    assert_eq!(
        std::fs::read_to_string(p.join("prompt.txt")).expect("read"),
        "v3"
    );

    ratchet_ok(p, &["heal"], "");
    assert_eq!(
        std::fs::read_to_string(p.join("prompt.txt")).expect("read"),
        "v2"
    );
    assert_eq!(git(p, &["rev-parse", "HEAD"]), commits[1]);

    let o = ratchet(
        p,
        &[
            "--json",
            "best",
            "--scorer",
            "quality",
            "--exclude",
            &commits[2],
        ],
        "",
    );
    let ranking: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
    assert_eq!(ranking["ranking"][0]["commit"], commits[1].as_str());
    let o = ratchet(p, &["verify-chain"], "");
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
}

#[test]
fn arl_prints_the_table_and_solves_limits() {
    let d = tempfile::tempdir().expect("tempdir");
    let o = ratchet_ok(d.path(), &["--json", "arl", "--k", "0.5", "--h", "4"], "");
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
    let arl0 = v["rows"][0]["arl"].as_f64().expect("arl");
    assert!((arl0 - 168.0).abs() < 1.0, "{arl0}");
    let o = ratchet(
        d.path(),
        &[
            "--json",
            "arl",
            "--detector",
            "ewma",
            "--lambda",
            "0.1",
            "--target",
            "500",
        ],
        "",
    );
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
    assert!(
        (v["chart"]["l"].as_f64().expect("L") - 2.814).abs() < 0.002,
        "{v}"
    );
    let o = ratchet(d.path(), &["arl", "--detector", "shewhart", "--h", "3"], "");
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn ingest_and_rubric_commands() {
    let (d, st) = common::fresh_store();
    let st = st.as_str();
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scorers/tests/fixtures");
    let junit = fixtures.join("pytest.xml");
    let o = common::in_store_ok(
        d.path(),
        st,
        &[
            "ingest",
            "junit",
            junit.to_str().expect("utf8"),
            "--commit",
            C,
        ],
    );
    assert_says(&o, "1 test run(s) and 1 score(s)");

    let rubric = d.path().join("r.toml");
    std::fs::write(&rubric, ANSWER_RUBRIC).expect("write");
    let o = ratchet(
        d.path(),
        &["rubric", "check", rubric.to_str().expect("utf8")],
        "",
    );
    assert!(
        o.status.success() && text(&o).contains("rubric answer ok"),
        "{}",
        text(&o)
    );
    let lines = d.path().join("obs.jsonl");
    std::fs::write(
        &lines,
        "{\"task\":\"t\",\"rubric\":\"answer\",\"observation\":{\"correct\":false}}\n",
    )
    .expect("write");
    common::in_store_ok(
        d.path(),
        st,
        &[
            "ingest",
            "jsonl",
            lines.to_str().expect("utf8"),
            "--commit",
            C,
            "--rubric",
            rubric.to_str().expect("utf8"),
        ],
    );

    let bad = d.path().join("bad.toml");
    std::fs::write(
        &bad,
        "name = \"x\"\n[[item]]\nid = \"a\"\ntype = \"count\"\nmax = 0\nweight = -1.0\n",
    )
    .expect("write");
    let o = ratchet(
        d.path(),
        &["rubric", "check", bad.to_str().expect("utf8")],
        "",
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(
        text(&o).contains("max must be at least 1") && text(&o).contains("weight -1"),
        "{}",
        text(&o)
    );
    let o = common::in_store(d.path(), st, &["verify-chain"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
}

#[test]
fn batch_score_and_criterion_ingest() {
    let (d, st) = common::fresh_store();
    let st = st.as_str();
    let rubric = d.path().join("r.toml");
    std::fs::write(&rubric, ANSWER_RUBRIC).expect("write");
    let obs = format!(
        "{{\"kind\":\"observation\",\"commit\":\"{C}\",\"payload\":{{\"task\":\"t1\",\"rubric\":\"answer\",\"observation\":{{\"correct\":true}}}}}}\n"
    );
    common::append(d.path(), st, &obs);
    let r = rubric.to_str().expect("utf8");
    let o = common::in_store(d.path(), st, &["score", "--rubric", r]);
    assert!(
        o.status.success() && text(&o).contains("1 scored now"),
        "{}",
        text(&o)
    );
    let o = common::in_store(d.path(), st, &["score", "--rubric", r]);
    assert_says(&o, "0 scored now, 1 already scored");

    let crit = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scorers/tests/fixtures/criterion");
    let o = common::in_store_ok(
        d.path(),
        st,
        &[
            "ingest",
            "criterion",
            crit.to_str().expect("utf8"),
            "--commit",
            C,
            "--label",
            "test",
        ],
    );
    assert!(
        text(&o).contains("runner fingerprint") && text(&o).contains("2 score(s)"),
        "{}",
        text(&o)
    );
}

#[cfg(feature = "parquet")]
#[test]
fn export_writes_parquet_partitions() {
    let (d, st) = common::fresh_store();
    let st = st.as_str();
    for t in ["t1", "t2"] {
        common::in_store_ok(
            d.path(),
            st,
            &[
                "record-score",
                "--commit",
                C,
                "--task",
                t,
                "--scorer",
                "acc",
                "--value",
                "0.5",
            ],
        );
    }
    let out = d.path().join("pq");
    let o = common::in_store_ok(
        d.path(),
        st,
        &["--json", "export", "--parquet", out.to_str().expect("utf8")],
    );
    let r: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
    assert_eq!(r["scores"], 2);
    assert!(
        out.join(format!("scores/commit={C}/part-0.parquet"))
            .is_file()
    );
    let o = common::in_store(
        d.path(),
        st,
        &["export", "--parquet", out.to_str().expect("utf8")],
    );
    assert_eq!(
        o.status.code(),
        Some(2),
        "refuses a non-empty directory: {}",
        text(&o)
    );
}

#[test]
fn a_promotion_moves_its_ref() {
    let d = tempfile::tempdir().expect("tempdir");
    let p = d.path();
    let commits = prompt_versions(p, &["base", "cand"]);
    std::fs::write(p.join(".ratchet/policy.toml"), policy()).expect("policy");
    ratchet_ok(
        p,
        &["append"],
        &scores_jsonl(&commits[0], &commits[1], 400, 9),
    );
    let mut args = common::gate_args(&commits[0], &commits[1], "prompt");
    args.extend(["--record-promotion", "."]);
    let o = ratchet(p, &args, "");
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert_eq!(
        git(p, &["rev-parse", "refs/ratchet/promoted/prompt"]),
        commits[1]
    );
    let o = ratchet(
        p,
        &["--json", "log", "--from", "0", "--limit", "100000"],
        "",
    );
    let events: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
    let kinds: Vec<&str> = events["events"]
        .as_array()
        .expect("events")
        .iter()
        .filter_map(|e| e["kind"].as_str())
        .collect();
    assert_eq!(&kinds[kinds.len() - 2..], &["decision", "promotion"]);
}

/// Overwrites the value of the score at `seq` in the store at `st` with 1.0,
/// the guard trigger dropped first: an edit of recorded evidence behind the
/// chain's back, which every decision over the store must then refuse.
fn overwrite_score(st: &Path, seq: u64) {
    let c = rusqlite::Connection::open(st.join("trace.db")).expect("open");
    c.execute_batch(&format!(
        "DROP TRIGGER scores_no_update; UPDATE scores SET value = 1.0 WHERE seq = {seq};"
    ))
    .expect("edit");
}

#[test]
fn gate_exit_codes_tell_missing_evidence_and_tampering_from_a_regression() {
    let base = "1111111111111111111111111111111111111111";
    let good = "2222222222222222222222222222222222222222";
    let (d, st) = scored_store(base, good, 400, 9);
    let st_s = st.to_str().expect("utf8");
    let gate = |extra: &[&str]| common::gate(d.path(), st_s, base, good, "prompt", extra);
    let head = |d: &Path| -> u64 {
        let o = common::in_store(d, st_s, &["--json", "checkpoint"]);
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
        v["size"].as_u64().expect("size")
    };
    // A dry run decides without recording; the verdict reads in words.
    let before = head(d.path());
    let o = gate(&["--dry-run"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let out = text(&o);
    assert!(
        out.contains("sequential test") && out.contains("boundaries"),
        "{out}"
    );
    assert!(
        out.contains("effect") && out.contains("not recorded"),
        "{out}"
    );
    assert!(
        !out.contains("Sequential") && !out.contains("Guardrail("),
        "no Debug names: {out}"
    );
    assert_eq!(head(d.path()), before, "nothing appended");
    // A scorer nobody recorded: cannot decide (4), not a regression (1).
    let typo = d.path().join("typo.toml");
    std::fs::write(
        &typo,
        policy().replace("scorer = \"accuracy\"", "scorer = \"acuracy\""),
    )
    .expect("policy");
    let o = gate(&["--policy", typo.to_str().expect("utf8"), "--json"]);
    assert_eq!(o.status.code(), Some(4), "{}", text(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
    assert_eq!(
        (v["status"].as_str(), v["exit_code"].as_u64()),
        (Some("missing_evidence"), Some(4))
    );
    assert_eq!(v["outcome"]["cause"], "missing_evidence");
    // A trace that does not verify: 5.
    overwrite_score(&st, 2);
    let o = gate(&["--json"]);
    assert_eq!(o.status.code(), Some(5), "{}", text(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
    assert_eq!(v["status"], "unverified_trace");
}

#[test]
fn calibrate_from_the_store_measures_its_inputs() {
    let base = "1111111111111111111111111111111111111111";
    let good = "2222222222222222222222222222222222222222";
    // The baseline passes every other task: p0 = 0.5.
    let (d, st) = scored_store(base, good, 200, 9);
    let st_s = st.to_str().expect("utf8");
    // The one calibration this test runs twice: from the baseline's scores.
    let calibrate = || {
        common::in_store(
            d.path(),
            st_s,
            &["calibrate", "--class", "prompt", "--from-store", base],
        )
    };
    let o = calibrate();
    assert!(o.status.success(), "{}", text(&o));
    assert_says(
        &o,
        "measured from 200 task(s) of accuracy version 1: p0 0.5,",
    );
    // A tampered store is not calibrated from.
    overwrite_score(&st, 3);
    let o = calibrate();
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert_says(&o, "verification failed");
}

#[test]
fn watch_picks_the_bernoulli_chart_for_pass_fail_scores() {
    let c = "3333333333333333333333333333333333333333";
    let (d, st_s) = common::fresh_store();
    let st_s = st_s.as_str();
    // 300 measured pass/fail scores at about 0.8, then 200 live ones at 0.4.
    let line = |t: usize, v: u8| {
        format!(
            "{{\"kind\":\"score\",\"commit\":\"{c}\",\"payload\":{{\"task\":\"t{t:04}\",\"scorer\":\"passed\",\"scorer_version\":\"1\",\"value\":{v}}}}}\n"
        )
    };
    let measured: String = (0..300).map(|t| line(t, u8::from(t % 5 != 0))).collect();
    common::append(d.path(), st_s, &measured);
    let live: String = (300..500).map(|t| line(t, u8::from(t % 5 < 2))).collect();
    common::append(d.path(), st_s, &live);
    let o = common::in_store(
        d.path(),
        st_s,
        &[
            "watch", "--commit", c, "--scorer", "passed", "--from", "300",
        ],
    );
    assert_eq!(o.status.code(), Some(1), "the drop alarms: {}", text(&o));
    assert!(
        text(&o).contains("Bernoulli"),
        "auto picked the pass/fail chart: {}",
        text(&o)
    );
}

/// Issue 40 (c): `watch` on a deployment whose 30 warm-up scores are all
/// passes (a 95 %-pass service, one deployment in five) refused with "σ
/// cannot be 0", exit 2. Auto picks the Bernoulli chart, which needs no
/// spread; a normal chart says what it lacks and what to use.
#[test]
fn watch_starts_from_a_warm_up_of_all_passes() {
    let c = "4444444444444444444444444444444444444444";
    let (d, st_s) = common::fresh_store();
    let st_s = st_s.as_str();
    let line = |t: usize, v: u8| {
        format!(
            "{{\"kind\":\"score\",\"commit\":\"{c}\",\"payload\":{{\"task\":\"t{t:04}\",\"scorer\":\"passed\",\"scorer_version\":\"1\",\"value\":{v}}}}}\n"
        )
    };
    let warm: String = (0..30).map(|t| line(t, 1)).collect();
    common::append(d.path(), st_s, &warm);
    // 300 live requests at 95 %.
    let live: String = (30..330).map(|t| line(t, u8::from(t % 20 != 0))).collect();
    common::append(d.path(), st_s, &live);
    let watch = |extra: &[&str]| {
        let mut args = vec!["watch", "--commit", c, "--scorer", "passed", "--from", "30"];
        args.extend_from_slice(extra);
        common::in_store(d.path(), st_s, &args)
    };
    let o = watch(&[]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "in control, no alarm: {}",
        text(&o)
    );
    assert!(text(&o).contains("Bernoulli"), "{}", text(&o));
    let o = watch(&["--detector", "cusum"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert_says(&o, "30 score(s), all 1");
    assert_says(&o, "--detector bernoulli");
}

#[test]
fn commits_are_typed_as_git_revisions_and_unknown_ones_are_refused() {
    let d = tempfile::tempdir().expect("tempdir");
    let p = d.path();
    git(p, &["init", "-q"]);
    std::fs::write(p.join("f"), "1").expect("write");
    git(p, &["add", "f"]);
    git(p, &["commit", "-q", "-m", "one"]);
    std::fs::write(p.join("f"), "2").expect("write");
    git(p, &["commit", "-q", "-am", "two"]);
    let head = git(p, &["rev-parse", "HEAD"]);
    let first = git(p, &["rev-parse", "HEAD~1"]);
    ratchet_ok(p, &["init"], "");
    let score = |rev: &str, extra: &[&str]| {
        let mut args = vec![
            "record-score",
            "--commit",
            rev,
            "--task",
            "t",
            "--scorer",
            "acc",
            "--value",
            "0.5",
        ];
        args.extend_from_slice(extra);
        ratchet(p, &args, "")
    };
    for rev in ["HEAD", &head[..7], "HEAD~1"] {
        let o = score(rev, &[]);
        assert!(o.status.success(), "{rev}: {}", text(&o));
    }
    let o = ratchet(p, &["--json", "log"], "");
    let events: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
    let commits: Vec<&str> = events["events"]
        .as_array()
        .expect("array")
        .iter()
        .filter(|e| e["kind"] == "score")
        .filter_map(|e| e["commit"].as_str())
        .collect();
    assert_eq!(
        commits,
        [head.as_str(), head.as_str(), first.as_str()],
        "stored as full ids"
    );
    // Unknown revisions and unknown full ids are errors, the latter with a way out.
    let o = score("HEAD~7", &[]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let unknown = "0123456789abcdef0123456789abcdef01234567";
    let o = score(unknown, &[]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert_says(&o, "--allow-unknown-commit");
    assert!(score(unknown, &["--allow-unknown-commit"]).status.success());
    // The same commit on both sides is refused before anything is read.
    std::fs::write(p.join(".ratchet/policy.toml"), policy()).expect("policy");
    let o = ratchet(p, &common::gate_args("HEAD", &head, "prompt"), "");
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert_says(&o, "same commit");
    // Errors say each thing once.
    let o = ratchet(p, &["verify-chain", "--key-file", "/nonexistent/key"], "");
    let msg = text(&o);
    assert_eq!(msg.matches("No such file or directory").count(), 1, "{msg}");
}

#[test]
fn a_closed_pipe_ends_quietly() {
    let (d, st_s) = common::fresh_store();
    let st_s = st_s.as_str();
    let lines: String = (0..3000)
        .map(|i| format!("{{\"kind\":\"note\",\"payload\":{{\"i\":{i}}}}}\n"))
        .collect();
    common::append(d.path(), st_s, &lines);
    let o = Command::new("bash")
        .arg("-c")
        .arg(format!(
            "set -o pipefail; '{}' --store '{st_s}' log --limit 3000 | head -n 1",
            env!("CARGO_BIN_EXE_ratchet")
        ))
        .output()
        .expect("bash");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(
        o.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
}

/// A test that reaches `max_n` undecided is its own answer — `truncated`,
/// exit 6 — not a measured reject; and `calibrate` warns that such a
/// `max_n` cannot reach 1 − β at the design effect.
#[test]
fn truncation_has_its_own_exit_code_and_calibrate_warns_of_it() {
    let base = "1111111111111111111111111111111111111111";
    let cand = "2222222222222222222222222222222222222222";
    let (d, st) = common::fresh_store();
    let st = st.as_str();
    let policy = "[class.short]\nscorer = \"accuracy\"\ntest = \"betting\"\nalpha = 0.05\nbeta = 0.1\ngap = 0.1\nmax_n = 30\n";
    std::fs::write(d.path().join("s/policy.toml"), policy).expect("policy");
    // Equal pass rates: 30 tasks cannot decide either way.
    common::append(d.path(), st, &scores_jsonl(base, cand, 60, 5));
    let o = common::gate(d.path(), st, base, cand, "short", &["--json", "--dry-run"]);
    assert_eq!(o.status.code(), Some(6), "{}", text(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json verdict");
    assert_eq!(v["status"], "truncated", "{v}");
    assert_eq!(v["outcome"]["cause"], "truncated", "{v}");
    let o = common::gate(d.path(), st, base, cand, "short", &["--dry-run"]);
    assert_says(&o, "TRUNCATED");

    let p = d.path().join("s/policy.toml");
    let o = ratchet_ok(
        d.path(),
        &[
            "calibrate",
            "--policy",
            p.to_str().expect("utf8"),
            "--class",
            "short",
            "--p0",
            "0.5",
        ],
        "",
    );
    let out = text(&o);
    assert!(
        out.contains("P(truncated)") && out.contains("(design effect)"),
        "{out}"
    );
    assert!(out.contains("warning: at the design effect"), "{out}");
    assert!(out.contains("raise max_n"), "{out}");
}

/// `best` ranks by the scorer's own direction: for `latency_ms` (lower is
/// better) the fastest commit comes first, by its upper bound. And `watch`
/// refuses an `--arl0` Page–Hinkley cannot honour instead of ignoring it.
#[test]
fn best_follows_the_scorers_direction_and_page_hinkley_refuses_arl0() {
    let fast = "1111111111111111111111111111111111111111";
    let slow = "2222222222222222222222222222222222222222";
    let (d, st) = common::fresh_store();
    let st = st.as_str();
    let mut lines = String::new();
    for t in 0..40 {
        for (c, ms) in [
            (fast, 100.0 + f64::from(t % 7)),
            (slow, 300.0 + f64::from(t % 5)),
        ] {
            lines.push_str(&format!(
                "{{\"kind\":\"score\",\"commit\":\"{c}\",\"payload\":{{\"task\":\"t{t:03}\",\"scorer\":\"latency_ms\",\"scorer_version\":\"1\",\"value\":{ms}}}}}\n"
            ));
        }
    }
    common::append(d.path(), st, &lines);
    let o = common::in_store_ok(d.path(), st, &["best", "--scorer", "latency_ms", "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
    assert_eq!(v["better"], "lower", "{v}");
    assert_eq!(v["ranking"][0]["commit"], fast, "{v}");
    let o = common::in_store(d.path(), st, &["best", "--scorer", "latency_ms"]);
    assert_says(&o, "upper bound");

    let o = common::in_store(
        d.path(),
        st,
        &[
            "watch",
            "--commit",
            fast,
            "--scorer",
            "latency_ms",
            "--from",
            "0",
            "--detector",
            "page-hinkley",
            "--arl0",
            "500",
        ],
    );
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert_says(&o, "--arl0 cannot be honoured by Page–Hinkley");
}

/// A control plane polling `ratchet gate` after every batch, with task
/// names in no order and half the candidate's scores arriving a batch
/// before the baseline's: each poll's sequence extends the last one's, so
/// the first answer that is not "continue" is the answer the complete data
/// give, and the observations counted never shrink between polls.
#[test]
fn polling_the_binary_extends_one_sequence() {
    let base = "1111111111111111111111111111111111111111";
    let cand = "2222222222222222222222222222222222222222";
    let policy = "[class.c]\nscorer = \"accuracy\"\ntest = \"betting\"\nalpha = 0.05\nbeta = 0.1\ngap = 0.2\nmax_n = 5000\n";
    for seed in 0..3u64 {
        let (d, st) = common::fresh_store();
        let st = st.as_str();
        std::fs::write(d.path().join("s/policy.toml"), policy).expect("policy");
        let line = |c: &str, task: &str, v: u8| {
            format!(
                "{{\"kind\":\"score\",\"commit\":\"{c}\",\"payload\":{{\"task\":\"{task}\",\"scorer\":\"accuracy\",\"scorer_version\":\"1\",\"value\":{v}}}}}\n"
            )
        };
        // A small deterministic generator (xorshift), seeded per run.
        let mut x = 0x9e37_79b9_7f4a_7c15u64 ^ (seed + 1);
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let gate = || {
            let o = common::gate(d.path(), st, base, cand, "c", &["--json", "--dry-run"]);
            let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json verdict");
            let n = v["stages"]
                .as_array()
                .and_then(|s| s.iter().find(|s| s["stage"] == "sequential"))
                .and_then(|s| s["details"]["n"].as_u64())
                .unwrap_or(0);
            (v["status"].as_str().unwrap_or("").to_string(), n)
        };
        let (mut first, mut last_n, mut held) = (None, 0, String::new());
        for _batch in 0..30 {
            let mut input = std::mem::take(&mut held);
            for _ in 0..10 {
                let task = format!("{:016x}", next());
                let b = u8::from(next() % 10 < 5);
                let c = u8::from(next() % 10 < 8);
                if next() % 2 == 0 {
                    input.push_str(&line(cand, &task, c));
                    held.push_str(&line(base, &task, b));
                } else {
                    input.push_str(&line(base, &task, b));
                    input.push_str(&line(cand, &task, c));
                }
            }
            common::append(d.path(), st, &input);
            let (status, n) = gate();
            assert!(
                n >= last_n,
                "seed {seed}: the sequence shrank from {last_n} to {n}"
            );
            last_n = n;
            if first.is_none() && status != "continue" {
                first = Some((status, n));
            }
        }
        common::append(d.path(), st, &held);
        let (at_end, n_end) = gate();
        let (status, n) = first.expect("decided within 300 tasks");
        assert_eq!(
            (status, n),
            (at_end, n_end),
            "seed {seed}: the first answer is the final one"
        );
    }
}

/// The README's path as a new user walks it: a policy requiring suite
/// `unit`, scores appended, then a real runner's reports ingested. A report
/// recorded under its runner's suite name is refused by name (the error says
/// which suites the commit has); the same directory ingested with `--suite
/// unit` is what the gate reads, and the failing test is named.
#[test]
fn real_reports_by_directory_meet_the_policy_s_required_suite() {
    let base = "1111111111111111111111111111111111111111";
    let cand = "2222222222222222222222222222222222222222";
    let (d, st) = common::fresh_store();
    let st = st.as_str();
    std::fs::write(d.path().join("s/policy.toml"), policy()).expect("policy");
    // Scores only: no test run yet.
    let lines = common::without_test_runs(&scores_jsonl(base, cand, 400, 9));
    common::append(d.path(), st, &lines);
    let real = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scorers/tests/fixtures/real");
    let gradle = real.join("junit-gradle");
    let gradle = gradle.to_str().expect("utf8");
    let ingest = |extra: &[&str]| {
        let mut args = vec!["--store", st, "ingest", "junit", gradle, "--commit", cand];
        args.extend_from_slice(extra);
        ratchet(d.path(), &args, "")
    };
    let o = ingest(&[]);
    assert!(o.status.success(), "{}", text(&o));
    assert_says(&o, "from 2 file(s)");
    let gate = || common::gate(d.path(), st, base, cand, "prompt", &[]);
    let o = gate();
    assert_eq!(o.status.code(), Some(4), "missing evidence: {}", text(&o));
    assert!(
        text(&o).contains("suite unit has no recorded run")
            && text(&o).contains("AppTest")
            && text(&o).contains("--suite"),
        "the error names the suites recorded: {}",
        text(&o)
    );
    // --json: one document with the store's id and the receipt.
    let o = ingest(&["--suite", "unit", "--json"]);
    assert!(o.status.success(), "{}", text(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
    assert!(v["store_id"].is_string(), "{v}");
    assert_eq!(v["ingest"]["test_runs"], 1);
    assert_eq!(v["ingest"]["files"].as_array().map(Vec::len), Some(2));
    let o = gate();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));

    // A failing Surefire report under the required name rejects, naming the test.
    let failing = real.join("junit-surefire-failing");
    common::in_store_ok(
        d.path(),
        st,
        &[
            "ingest",
            "junit",
            failing.to_str().expect("utf8"),
            "--commit",
            cand,
            "--suite",
            "unit",
        ],
    );
    let o = gate();
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(
        text(&o).contains("FailingTest"),
        "the failed test is named: {}",
        text(&o)
    );
}

/// `ratchet init --keyed --key-file`, an append and `checkpoint --out` run
/// under the usual umask 022 (which would make 0755 directories and 0644
/// files): the store's directory is 0700, its database, `.gitignore`, the
/// key file and the checkpoint 0600 — the trace and the key are their
/// owner's only. A directory the user made beforehand keeps its mode.
#[cfg(unix)]
#[test]
fn init_makes_the_store_and_its_key_owner_only_under_umask_022() {
    use std::os::unix::fs::PermissionsExt;
    let mode = |p: &Path| {
        std::fs::metadata(p)
            .unwrap_or_else(|e| panic!("{}: {e}", p.display()))
            .permissions()
            .mode()
            & 0o777
    };
    let under_umask = |cwd: &Path, args: &[&str], stdin: &str| {
        let mut child = Command::new("sh")
            .arg("-c")
            .arg("umask 022; exec \"$0\" \"$@\"")
            .arg(env!("CARGO_BIN_EXE_ratchet"))
            .args(args)
            .current_dir(cwd)
            .env_remove("RATCHET_STORE")
            .env_remove("RATCHET_SERVER")
            .env_remove("RATCHET_TOKEN_FILE")
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("spawn");
        use std::io::Write as _;
        child
            .stdin
            .take()
            .expect("stdin")
            .write_all(stdin.as_bytes())
            .expect("stdin");
        let o = child.wait_with_output().expect("wait");
        assert!(o.status.success(), "{args:?}: {}", text(&o));
    };
    let d = tempfile::tempdir().expect("tempdir");
    let p = d.path();
    let (store, key, cp) = (p.join("s"), p.join("writer.key"), p.join("cp"));
    let [store_s, key_s, cp_s] = [&store, &key, &cp].map(|x| x.to_str().expect("utf8"));
    under_umask(
        p,
        &["--store", store_s, "init", "--keyed", "--key-file", key_s],
        "",
    );
    let line = format!("{{\"kind\":\"note\",\"commit\":\"{C}\",\"payload\":{{\"n\":1}}}}\n");
    under_umask(
        p,
        &["--store", store_s, "append", "--key-file", key_s],
        &line,
    );
    under_umask(p, &["--store", store_s, "checkpoint", "--out", cp_s], "");
    for (path, want) in [
        (store.clone(), 0o700),
        (store.join("trace.db"), 0o600),
        (store.join(".gitignore"), 0o600),
        (key.clone(), 0o600),
        (cp.clone(), 0o600),
    ] {
        assert_eq!(mode(&path), want, "{}: {:o}", path.display(), mode(&path));
    }
    // Nothing else in the store's directory is readable by others either
    // (SQLite's -wal and -shm, while they exist, take the database's mode).
    for entry in std::fs::read_dir(&store).expect("list") {
        let path = entry.expect("entry").path();
        assert_eq!(
            mode(&path) & 0o077,
            0,
            "{}: {:o}",
            path.display(),
            mode(&path)
        );
    }
    // A directory the user made (and chose to share) is not chmodded.
    let shared = p.join("shared");
    std::fs::create_dir(&shared).expect("mkdir");
    std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    under_umask(p, &["--store", shared.to_str().expect("utf8"), "init"], "");
    assert_eq!(mode(&shared), 0o755);
    assert_eq!(mode(&shared.join("trace.db")), 0o600);
}

/// Two real promptfoo runs (promptfoo 0.121.20, `fixtures/real/ORIGIN.md` of
/// the scorers crate), the second with one test added among the others:
/// ingested for a baseline and a candidate, the gate pairs the four tests
/// both ran instead of finding no task scored on both sides.
#[test]
fn a_promptfoo_test_added_leaves_the_other_tests_paired_in_the_gate() {
    let base = "1111111111111111111111111111111111111111";
    let cand = "2222222222222222222222222222222222222222";
    let (d, st) = common::fresh_store();
    let st = st.as_str();
    let run = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../scorers/tests/fixtures/real/promptfoo-0.121.20");
    for (file, commit) in [("results.json", base), ("results-plus-one.json", cand)] {
        let path = run.join(file);
        let path = path.to_str().expect("utf8");
        common::in_store_ok(
            d.path(),
            st,
            &["ingest", "promptfoo", path, "--commit", commit],
        );
    }
    let policy = ratchet_testkit::gap_class("eval", "bernoulli", "promptfoo_pass", 0.2, 2000, "");
    std::fs::write(d.path().join("s/policy.toml"), policy).expect("policy");
    let o = common::gate(d.path(), st, base, cand, "eval", &["--json", "--dry-run"]);
    let out = text(&o);
    assert!(
        !out.contains("scored on both sides (fails closed)"),
        "{out}"
    );
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json verdict");
    let sequential = v["stages"]
        .as_array()
        .and_then(|s| s.iter().find(|s| s["stage"] == "sequential"))
        .unwrap_or_else(|| panic!("no sequential stage: {v}"));
    // Both runs passed and failed the same four tests (the echo provider
    // answers alike): four pairs, all concordant.
    assert_eq!(sequential["details"]["tasks_available"], 4, "{v}");
    assert_eq!(sequential["details"]["both_or_neither"], 4, "{v}");
    assert_eq!(v["scorer_versions"]["promptfoo_pass"], "promptfoo-2", "{v}");
}
