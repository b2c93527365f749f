//! The trust promises through the `ratchet` binary, as a user (or an
//! attacker with file access) would meet them: keys are used wherever they
//! exist, reserved kinds cannot be forged, evidence is counted once, and
//! nothing decides or acts on a trace that does not verify.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Output;

use common::{assert_says, ratchet, text};
use ratchet_testkit::{REQUIRES_UNIT, paired_class};

const BASE: &str = "1111111111111111111111111111111111111111";
const CAND: &str = "2222222222222222222222222222222222222222";

/// The gate's usual paired class on `accuracy`, the `unit` suite required,
/// bounded at 2000 pairs.
fn policy() -> String {
    paired_class("prompt", "accuracy", 2000, REQUIRES_UNIT)
}

/// Scores where the candidate wins most tasks (an honest promote), and a
/// green run of the required suite.
fn winning_lines() -> String {
    let mut out = String::new();
    for t in 0..300 {
        for (c, v) in [(BASE, 0.5), (CAND, if t % 10 < 8 { 0.9 } else { 0.1 })] {
            out.push_str(&format!(
                "{{\"kind\":\"score\",\"commit\":\"{c}\",\"payload\":{{\"task\":\"t{t:04}\",\"scorer\":\"accuracy\",\"scorer_version\":\"1\",\"value\":{v}}}}}\n"
            ));
        }
    }
    out.push_str(&format!(
        "{{\"kind\":\"test_run\",\"commit\":\"{CAND}\",\"payload\":{{\"suite\":\"unit\",\"passed\":10,\"failed\":0,\"skipped\":0,\"duration_ms\":5.0}}}}\n"
    ));
    out
}

struct Keyed {
    dir: tempfile::TempDir,
    store: PathBuf,
    key: PathBuf,
}

impl Keyed {
    fn new() -> Keyed {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = dir.path().join("s");
        let key = dir.path().join("writer.key");
        let k = Keyed { dir, store, key };
        let o = k.run(&["init", "--keyed", "--key-file", k.key_s()], "");
        assert!(o.status.success(), "{}", text(&o));
        std::fs::write(k.store.join("policy.toml"), policy()).expect("policy");
        let o = k.run(&["append", "--key-file", k.key_s()], &winning_lines());
        assert!(o.status.success(), "{}", text(&o));
        k
    }

    fn key_s(&self) -> &str {
        self.key.to_str().expect("utf8")
    }

    fn run(&self, args: &[&str], stdin: &str) -> Output {
        let mut all = vec!["--store", self.store.to_str().expect("utf8")];
        all.extend_from_slice(args);
        ratchet(self.dir.path(), &all, stdin)
    }

    fn gate(&self, extra: &[&str]) -> Output {
        let mut args = common::gate_args(BASE, CAND, "prompt");
        // (The class is unpinned: these attacks are on the file's bytes.)
        args.push("--allow-unpinned");
        args.extend_from_slice(extra);
        self.run(&args, "")
    }
}

/// Runs SQL against a store file with the guard triggers dropped, then puts
/// them back byte for byte (a careful attacker covers their tracks).
fn tamper(store: &Path, sql: &str) {
    let c = rusqlite::Connection::open(store.join("trace.db")).expect("open");
    let triggers: Vec<(String, String)> = c
        .prepare("SELECT name, sql FROM sqlite_master WHERE type = 'trigger'")
        .and_then(|mut st| st.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?.collect())
        .expect("triggers");
    for (name, _) in &triggers {
        c.execute_batch(&format!("DROP TRIGGER {name}"))
            .expect("drop");
    }
    c.execute_batch(sql).expect(sql);
    for (_, sql) in &triggers {
        c.execute_batch(sql).expect("restore");
    }
}

#[test]
fn a_keyed_store_is_never_plainly_ok_without_its_key() {
    let k = Keyed::new();
    let o = k.run(&["verify-chain"], "");
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        text(&o).contains("--key-file") && text(&o).contains("--without-macs"),
        "{}",
        text(&o)
    );
    let o = k.run(&["verify-chain", "--without-macs"], "");
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let first = String::from_utf8_lossy(&o.stdout)
        .lines()
        .next()
        .unwrap_or_default()
        .to_string();
    assert!(first.contains("MACs NOT checked"), "{first}");
    let o = k.run(&["verify-chain", "--key-file", k.key_s()], "");
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert_says(&o, "MACs checked");
}

#[test]
fn the_gate_checks_macs_with_the_key_it_was_given() {
    let k = Keyed::new();
    let honest = k.gate(&["--key-file", k.key_s(), "--json"]);
    assert_eq!(honest.status.code(), Some(0), "{}", text(&honest));
    // Events whose MACs are gone (as after a plain chain was rebuilt or
    // rows were appended without the key).
    tamper(&k.store, "UPDATE events SET mac = NULL WHERE seq = 7");
    let o = k.gate(&["--key-file", k.key_s(), "--json"]);
    assert_ne!(o.status.code(), Some(0), "{}", text(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json verdict");
    assert_eq!(v["outcome"]["stage"], "trace_verification", "{v}");
    let o = k.run(&["verify-chain", "--key-file", k.key_s()], "");
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert_says(&o, "seq 7");
}

#[test]
fn reserved_kinds_cannot_be_appended_from_the_shell() {
    let (d, st) = common::fresh_store();
    let st = st.as_str();
    for kind in ["alarm", "decision", "checkout", "promotion", "ingest"] {
        let line = format!("{{\"kind\":\"{kind}\",\"commit\":\"{BASE}\",\"payload\":{{}}}}\n");
        let o = ratchet(d.path(), &["--store", st, "append"], &line);
        assert_eq!(o.status.code(), Some(2), "{kind}: {}", text(&o));
        assert!(text(&o).contains("reserved"), "{kind}: {}", text(&o));
    }
    let o = common::in_store_ok(d.path(), st, &["--json", "log"]);
    assert!(
        !text(&o).contains("\"kind\""),
        "nothing stored: {}",
        text(&o)
    );
}

#[test]
fn a_keyed_cell_is_not_merged_without_its_key() {
    let k = Keyed::new();
    let d = tempfile::tempdir().expect("tempdir");
    let home = d.path().join("home");
    let home = home.to_str().expect("utf8");
    common::init(d.path(), home);
    let cell = k.store.to_str().expect("utf8");
    let o = common::in_store(d.path(), home, &["merge-cells", cell]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert_says(&o, "keyed");
    common::in_store_ok(
        d.path(),
        home,
        &["merge-cells", cell, "--cell-key-file", k.key_s()],
    );
}

#[test]
fn a_report_ingested_twice_counts_once_and_a_failure_is_not_laundered() {
    let (d, st) = common::fresh_store();
    let st = st.as_str();
    std::fs::write(d.path().join("s/policy.toml"), policy()).expect("policy");
    let lines = common::without_test_runs(&winning_lines());
    common::append(d.path(), st, &lines);
    let junit = |failures: usize| {
        let cases: String = (0..10)
            .map(|i| {
                if i < failures {
                    format!("<testcase name=\"c{i}\" classname=\"unit\" time=\"0.1\"><failure message=\"boom\"/></testcase>")
                } else {
                    format!("<testcase name=\"c{i}\" classname=\"unit\" time=\"0.1\"/>")
                }
            })
            .collect();
        format!(
            "<?xml version=\"1.0\"?><testsuites><testsuite name=\"unit\" tests=\"10\" failures=\"{failures}\" errors=\"0\" skipped=\"0\" time=\"1.0\">{cases}</testsuite></testsuites>"
        )
    };
    let red = d.path().join("red.xml");
    let green = d.path().join("green.xml");
    std::fs::write(&red, junit(2)).expect("red");
    std::fs::write(&green, junit(0)).expect("green");
    let ingest = |f: &Path| {
        common::in_store(
            d.path(),
            st,
            &[
                "ingest",
                "junit",
                f.to_str().expect("utf8"),
                "--commit",
                CAND,
            ],
        )
    };
    let o = ingest(&green);
    assert!(o.status.success(), "{}", text(&o));
    let o = ingest(&green);
    assert!(o.status.success(), "{}", text(&o));
    assert_says(&o, "already ingested");
    let gate = || common::gate(d.path(), st, BASE, CAND, "prompt", &["--json"]);
    assert_eq!(
        gate().status.code(),
        Some(0),
        "green suite, better candidate"
    );
    // A red run followed by a green one: the red run still counts.
    assert!(ingest(&red).status.success());
    std::fs::write(&green, junit(0).replace("time=\"1.0\"", "time=\"1.5\"")).expect("rerun");
    assert!(ingest(&green).status.success());
    let o = gate();
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json verdict");
    assert_eq!(v["outcome"]["stage"], "tests", "{v}");
}

/// A score edited in its table, or the kept per-commit statistics that
/// `best` and `heal` rank from raised for the worse commit: either way the
/// trace does not verify, and nothing is ranked, watched or healed.
#[test]
fn watch_best_and_heal_refuse_a_trace_that_does_not_verify() {
    for edit in [
        "UPDATE scores SET value = 1.0 WHERE seq = 2",
        "UPDATE commit_stats SET mean = 0.99, max = 1.0 WHERE commit_id = (SELECT min(commit_id) FROM commit_stats)",
    ] {
        refused_after(edit);
    }
}

fn refused_after(edit: &str) {
    let (d, st_s) = common::fresh_store();
    let st = d.path().join("s");
    let st_s = st_s.as_str();
    common::append(d.path(), st_s, &winning_lines());
    tamper(&st, edit);
    for args in [
        vec!["best", "--scorer", "accuracy", "--min-n", "5"],
        vec![
            "watch", "--commit", CAND, "--scorer", "accuracy", "--from", "0",
        ],
        vec!["heal", "--dry-run"],
    ] {
        let mut all = vec!["--store", st_s];
        all.extend_from_slice(&args);
        let o = ratchet(d.path(), &all, "");
        assert_eq!(o.status.code(), Some(2), "{edit} {args:?}: {}", text(&o));
        assert!(
            text(&o).contains("verification failed"),
            "{edit} {args:?}: {}",
            text(&o)
        );
    }
}

/// A keyed store read without its key says so first and exits non-zero:
/// `status` used to print "events by kind: none", "commits (0)" and exit 0
/// on a store holding evidence. `RATCHET_KEY_FILE` names the key for every
/// command, and `log` takes `--key-file` like the others.
#[test]
fn a_keyed_store_read_without_its_key_says_so_and_exits_non_zero() {
    let k = Keyed::new();
    let o = k.run(&["status"], "");
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let said = text(&o);
    assert!(
        said.contains("is keyed and was read without its key") && said.contains("RATCHET_KEY_FILE"),
        "{said}"
    );
    assert!(!said.contains("commits (0)"), "{said}");
    let with_env = std::process::Command::new(env!("CARGO_BIN_EXE_ratchet"))
        .args(["--store", k.store.to_str().expect("utf8"), "status"])
        .env("RATCHET_KEY_FILE", k.key_s())
        .output()
        .expect("ratchet");
    assert_eq!(with_env.status.code(), Some(0), "{}", text(&with_env));
    assert!(
        text(&with_env).contains("MACs checked"),
        "{}",
        text(&with_env)
    );
    let log = k.run(&["log", "--key-file", k.key_s(), "--limit", "1"], "");
    assert_eq!(log.status.code(), Some(0), "{}", text(&log));
}
