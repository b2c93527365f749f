//! Issue 37, every real file read right, as a user meets it through the
//! CLI: files real tools wrote on this machine
//! (`crates/scorers/tests/fixtures/real`, origins in its `ORIGIN.md`).

use std::path::PathBuf;

use crate::common::{self, assert_says, text};

const BASE: &str = "1111111111111111111111111111111111111111";
const CAND: &str = "2222222222222222222222222222222222222222";

fn real(path: &str) -> String {
    let p: PathBuf = [
        env!("CARGO_MANIFEST_DIR"),
        "../scorers/tests/fixtures/real",
        path,
    ]
    .iter()
    .collect();
    p.to_str().expect("utf8").to_owned()
}

/// Per task, both commits' `accuracy` (the candidate as good): scores
/// enough for the gate to get past its evidence, no test run.
fn scores(tasks: usize) -> String {
    let mut out = String::new();
    for t in 0..tasks {
        for c in [BASE, CAND] {
            out.push_str(&format!(
                "{{\"kind\":\"score\",\"commit\":\"{c}\",\"payload\":{{\"task\":\"t{t:04}\",\"scorer\":\"accuracy\",\"scorer_version\":\"1\",\"value\":{}}}}}\n",
                u8::from(t % 2 == 0)
            ));
        }
    }
    out
}

/// A store with the `prompt` class requiring `suite`, and the scores.
fn store_requiring(suite: &str) -> (tempfile::TempDir, String) {
    let (d, st) = common::fresh_store();
    let policy = ratchet_testkit::gap_class(
        "prompt",
        "bernoulli",
        "accuracy",
        0.2,
        2000,
        &format!("required_suites = [{suite:?}]\n"),
    );
    std::fs::write(d.path().join("s/policy.toml"), policy).expect("policy");
    common::append(d.path(), &st, &scores(400));
    (d, st)
}

#[test]
fn a_failed_go_benchmark_is_said_on_stderr_and_rejected_by_the_gate() {
    let (d, st) = store_requiring("example.com/benchfail");
    let file = real("go-bench-run-here/go-1.19-bench-fatal-two-metrics.txt");
    let o = common::in_store_ok(
        d.path(),
        &st,
        &[
            "ingest",
            "go-bench",
            &file,
            "--commit",
            CAND,
            "--direction",
            "hit-ratio=higher",
            "--direction",
            "widgets/op=lower",
        ],
    );
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(
        stderr.contains("example.com/benchfail.BenchmarkBroken") && stderr.contains("failed"),
        "{}",
        text(&o)
    );
    assert_says(&o, "recorded 1 test run(s)");
    // Each custom unit its own direction, the times their known one.
    assert_says(&o, "scorer go_hit-ratio (higher is better)");
    assert_says(&o, "scorer go_widgets-per-op (lower is better)");
    assert_says(&o, "scorer go_ns_per_op (lower is better)");
    let o = common::gate(d.path(), &st, BASE, CAND, "prompt", &[]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert_says(&o, "suite example.com/benchfail: 1 failed");
    assert_says(&o, "BenchmarkBroken");
}

#[test]
fn one_plain_direction_still_serves_every_custom_unit_and_a_bad_one_is_refused() {
    let (d, st) = common::fresh_store();
    let file = real("go-bench-run-here/go-1.19-bench-fatal-two-metrics.txt");
    let ingest = |extra: &[&str]| {
        let mut args = vec!["ingest", "go-bench", file.as_str(), "--commit", CAND];
        args.extend_from_slice(extra);
        common::in_store(d.path(), &st, &args)
    };
    let o = ingest(&["--direction", "sideways"]);
    assert!(!o.status.success(), "{}", text(&o));
    assert_says(&o, "higher or lower");
    let o = ingest(&[
        "--direction",
        "hit-ratio=higher",
        "--direction",
        "hit-ratio=lower",
    ]);
    assert!(!o.status.success(), "{}", text(&o));
    assert_says(&o, "give it once");
    let o = ingest(&["--direction", "higher"]);
    assert!(o.status.success(), "{}", text(&o));
    assert_says(&o, "scorer go_hit-ratio (higher is better)");
    assert_says(&o, "scorer go_widgets-per-op (higher is better)");
}

#[test]
fn a_suite_name_ctest_made_up_is_pointed_at_suite_name_when_ingested_and_when_gated() {
    let (d, st) = store_requiring("unit");
    let file = real("junit-ctest/ctest-3.25.1-disabled.xml");
    let o = common::in_store_ok(d.path(), &st, &["ingest", "junit", &file, "--commit", CAND]);
    assert_says(&o, "\"(empty)\"");
    assert_says(&o, "--suite NAME");
    let o = common::gate(d.path(), &st, BASE, CAND, "prompt", &[]);
    assert_eq!(o.status.code(), Some(4), "{}", text(&o));
    assert_says(&o, "suite \"(empty)\" is the name ctest writes");
    assert_says(&o, "--suite NAME");
    // Stored under the required name, the disabled tests skipped: 8 of 9 ran green.
    let o = common::in_store_ok(
        d.path(),
        &st,
        &[
            "ingest", "junit", &file, "--commit", CAND, "--suite", "unit", "--json",
        ],
    );
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
    assert_eq!(v["ingest"]["test_runs"], 1, "{v}");
    let o = common::gate(d.path(), &st, BASE, CAND, "prompt", &[]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert_says(&o, "suite unit: 1 failed");
}
