//! Snapshots of the words and JSON each command prints (issue 38: CLI
//! output was checked by `contains()` alone). One deterministic store —
//! fixed commits, scores and policy — is built once per test and each
//! command's stdout (and, for a refusal, stderr) is compared with its
//! snapshot under `snapshots/`. What changes from run to run is redacted:
//! hashes (64 hex digits), temporary paths, times.
//!
//! A change to what a command prints shows here as a diff; accept it with
//! `INSTA_UPDATE=always cargo test -p ratchet --test it snapshots` (or
//! `cargo insta review`) after reading it.

use std::path::Path;
use std::process::Output;

use crate::common::{append, fresh_store, ratchet};

const BASE: &str = "3333333333333333333333333333333333333333";
const CAND: &str = "4444444444444444444444444444444444444444";

/// Class `quality` on `exact_match` (pass/fail, betting) with a required
/// suite; class `perf` on `latency_s` (lower is better, gaussian).
const POLICY: &str = "[class.quality]\nscorer = \"exact_match\"\ntest = \"betting\"\nalpha = 0.05\nbeta = 0.1\ngap = 0.05\nmax_n = 2000\nrequired_suites = [\"unit\"]\n\n[class.perf]\nscorer = \"latency_s\"\ndirection = \"lower\"\ntest = \"gaussian\"\nalpha = 0.05\nbeta = 0.1\ngap = 0.00001\nmax_n = 500\n";

/// 80 tasks: the candidate passes 30 more of them than the baseline on
/// `exact_match`; ~1 ms timings, the candidate ~40 µs faster.
fn evidence() -> String {
    let mut out = String::new();
    for t in 0..80 {
        let base_pass = u8::from(t % 2 == 0);
        let cand_pass = u8::from(t % 2 == 0 || t % 8 != 1);
        let base_s = 1e-3 + 2e-5 * ((t * 7 % 13) as f64 / 13.0);
        let cand_s = base_s - 4.0e-5 + 3e-6 * ((t as f64) * 1.3).sin();
        for (c, pass, secs) in [(BASE, base_pass, base_s), (CAND, cand_pass, cand_s)] {
            out.push_str(&format!(
                "{{\"kind\":\"score\",\"commit\":\"{c}\",\"payload\":{{\"task\":\"t{t:03}\",\"scorer\":\"exact_match\",\"scorer_version\":\"1\",\"value\":{pass}}}}}\n{{\"kind\":\"score\",\"commit\":\"{c}\",\"payload\":{{\"task\":\"t{t:03}\",\"scorer\":\"latency_s\",\"scorer_version\":\"1\",\"value\":{secs}}}}}\n"
            ));
        }
    }
    out
}

const JUNIT: &str = r#"<?xml version="1.0" encoding="UTF-8"?>
<testsuites><testsuite name="unit" tests="2" failures="0"><testcase classname="m" name="a" time="0.01"/><testcase classname="m" name="b" time="0.02"/></testsuite></testsuites>
"#;

/// The store every snapshot reads: evidence, a pinned policy, the unit
/// suite passed by both commits.
fn store() -> (tempfile::TempDir, String) {
    let (d, st) = fresh_store();
    append(d.path(), &st, &evidence());
    let policy = d.path().join("policy.toml");
    std::fs::write(&policy, POLICY).expect("policy");
    let junit = d.path().join("junit.xml");
    std::fs::write(&junit, JUNIT).expect("junit");
    for commit in [BASE, CAND] {
        run(
            d.path(),
            &st,
            &[
                "ingest",
                "junit",
                "junit.xml",
                "--suite",
                "unit",
                "--commit",
                commit,
            ],
        );
    }
    run(d.path(), &st, &["policy", "pin", "policy.toml"]);
    (d, st)
}

fn run(cwd: &Path, st: &str, args: &[&str]) -> Output {
    let mut all = vec!["--store", st, "--allow-unknown-commit"];
    all.extend_from_slice(args);
    ratchet(cwd, &all, "")
}

/// What a run printed, exit code first, redacted.
fn shown(o: &Output, cwd: &Path) -> String {
    let mut s = format!("exit {}\n", o.status.code().unwrap_or(-1));
    s.push_str(&String::from_utf8_lossy(&o.stdout));
    let err = String::from_utf8_lossy(&o.stderr);
    if !err.trim().is_empty() {
        s.push_str("--- stderr\n");
        s.push_str(&err);
    }
    s.replace(&cwd.display().to_string(), "[dir]")
}

/// Redactions for what varies between runs.
macro_rules! snapshot {
    ($name:expr, $value:expr) => {
        insta::with_settings!({
            snapshot_path => "snapshots",
            prepend_module_to_snapshot => false,
            filters => vec![
                (r"\b[0-9a-f]{64}\b", "[hash]"),
                (r"\b[0-9A-HJKMNP-TV-Z]{26}\b", "[ulid]"),
                (r"trace size (\d+) \([0-9a-f]{12}\)", "trace size $1 ([head])"),
                (r"trace head ` [0-9a-f]{8} `", "trace head ` [head] `"),
                (r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC", "[time]"),
                (r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z?", "[time]"),
                (r"\b\d{13}\b", "[ms]"),
                (r"/tmp/[^\s\x22]+", "[tmp]"),
                (r"in \d+(\.\d+)? ?(ms|s|µs)", "in [elapsed]"),
            ],
        }, {
            insta::assert_snapshot!($name, $value);
        });
    };
}

#[test]
fn the_gate_prints_its_verdict_in_words_and_json() {
    let (d, st) = store();
    let p = d.path();
    let args = ["gate", "--baseline", BASE, "--candidate", CAND, "--dry-run"];
    let quality = [&args[..], &["--class", "quality"]].concat();
    snapshot!("gate_quality", shown(&run(p, &st, &quality), p));
    let perf = [&args[..], &["--class", "perf"]].concat();
    snapshot!("gate_perf", shown(&run(p, &st, &perf), p));
    let json = [&["--json"][..], &perf].concat();
    snapshot!("gate_perf_json", shown(&run(p, &st, &json), p));
}

#[test]
fn status_log_and_verify_chain_print_what_the_store_holds() {
    let (d, st) = store();
    let p = d.path();
    snapshot!("status", shown(&run(p, &st, &["status"]), p));
    snapshot!(
        "log_tail",
        shown(&run(p, &st, &["log", "--kind", "test_run"]), p)
    );
    snapshot!("verify_chain", shown(&run(p, &st, &["verify-chain"]), p));
}

#[test]
fn the_pull_request_comment_after_a_recorded_decision() {
    let (d, st) = store();
    let p = d.path();
    let o = run(
        p,
        &st,
        &[
            "gate",
            "--baseline",
            BASE,
            "--candidate",
            CAND,
            "--class",
            "quality",
        ],
    );
    snapshot!("gate_quality_recorded", shown(&o, p));
    snapshot!(
        "report_markdown",
        shown(&run(p, &st, &["report", "--markdown"]), p)
    );
}

#[test]
fn calibrate_prints_what_a_policy_does() {
    let (d, st) = store();
    let p = d.path();
    let o = run(
        p,
        &st,
        &[
            "calibrate",
            "--policy",
            "policy.toml",
            "--class",
            "perf",
            "--runs",
            "200",
            "--seed",
            "1",
            "--from-store",
            BASE,
        ],
    );
    snapshot!("calibrate_perf", shown(&o, p));
}

#[test]
fn refusals_say_what_is_wrong() {
    let (d, st) = store();
    let p = d.path();
    snapshot!(
        "gate_unknown_class",
        shown(
            &run(
                p,
                &st,
                &[
                    "gate",
                    "--baseline",
                    BASE,
                    "--candidate",
                    CAND,
                    "--class",
                    "nope"
                ]
            ),
            p
        )
    );
    snapshot!(
        "ingest_missing_file",
        shown(
            &run(p, &st, &["ingest", "junit", "absent.xml", "--commit", BASE]),
            p
        )
    );
    snapshot!(
        "init_on_a_server",
        shown(&run(p, &st, &["--server", "/nonexistent.sock", "init"]), p)
    );
}

#[test]
fn the_help_names_every_command_and_the_exit_codes() {
    let d = tempfile::tempdir().expect("tempdir");
    snapshot!("help", shown(&ratchet(d.path(), &["--help"], ""), d.path()));
}
