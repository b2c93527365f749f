//! A crash between a recorded move and git's is recovered by the next
//! command, trace and git agreeing, nothing lost.

use git2::Oid;

use super::*;
use crate::common::text;

use super::heal::heal_world;

/// Runs `args` with `RATCHET_CRASH_AT=step` and expects the process to die
/// there (SIGABRT, as a kill -9 would leave it: nothing cleaned up).
fn crash(w: &World, step: &str, args: &[&str]) {
    let key = w.key_s();
    let mut all: Vec<&str> = args.to_vec();
    all.extend(["--key-file", key.as_str()]);
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_ratchet"))
        .current_dir(w.root())
        .args(&all)
        .env("RATCHET_CRASH_AT", step)
        .env_remove("RATCHET_STORE")
        .output()
        .expect("spawn");
    assert!(
        !o.status.success(),
        "{step}: the crash point was reached: {}",
        text(&o)
    );
    assert_eq!(
        o.status.code(),
        None,
        "{step}: killed by a signal: {}",
        text(&o)
    );
}

#[test]
fn a_crash_at_any_step_of_a_promotion_is_recovered_by_the_next_command() {
    for step in ["gate:decided", "promotion:recorded", "promotion:ref-moved"] {
        let (w, base, cand) = gate_world();
        let repo_s = w.root().to_str().expect("utf8").to_string();
        // Promote the better commit (roles swapped: `base` wins).
        let mut args = gate_args(&cand, &base, "prompt");
        args.extend(["--record-promotion", repo_s.as_str(), "--allow-unpinned"]);
        crash(&w, step, &args);
        // The ref never moved ahead of the trace: either both say promoted,
        // or the trace does and status names the ref as a fault.
        let o = w.cmd(&["status", "--json"], "");
        let v: serde_json::Value = serde_json::from_slice(&o.stdout)
            .unwrap_or_else(|e| panic!("{step}: {e}: {}", text(&o)));
        let deployed = v["deployed"]["prompt"]["commit"]
            .as_str()
            .map(str::to_string);
        match step {
            "gate:decided" => {
                assert_eq!(deployed, None, "{step}");
                assert_eq!(w.promotion_ref(), None, "{step}");
                assert_eq!(o.status.code(), Some(0), "{step}: {}", text(&o));
            }
            "promotion:recorded" => {
                assert_eq!(deployed.as_deref(), Some(base.as_str()), "{step}");
                assert_eq!(w.promotion_ref(), None, "{step}");
                assert_eq!(o.status.code(), Some(7), "{step}: {}", text(&o));
            }
            _ => {
                assert_eq!(deployed.as_deref(), Some(base.as_str()), "{step}");
                assert_eq!(w.promotion_ref().as_deref(), Some(base.as_str()), "{step}");
                assert_eq!(o.status.code(), Some(0), "{step}: {}", text(&o));
            }
        }
        // The next command on the class brings trace and refs together,
        // with nothing lost: the decision stays recorded.
        let o = gate(&w, &cand, &base, &["--record-promotion", &repo_s]);
        assert_eq!(o.status.code(), Some(0), "{step}: {}", text(&o));
        assert_eq!(w.promotion_ref().as_deref(), Some(base.as_str()), "{step}");
        let o = w.cmd(&["status"], "");
        assert_eq!(o.status.code(), Some(0), "{step}: {}", text(&o));
        let o = w.run(&["log", "--kind", "decision", "--json"], "");
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
        assert_eq!(
            v["events"].as_array().map(Vec::len),
            Some(2),
            "{step}: both decisions kept"
        );
        let o = w.cmd(&["verify-chain", "--repo", &repo_s], "");
        assert_eq!(o.status.code(), Some(0), "{step}: {}", text(&o));
    }
}

#[test]
fn a_crash_at_any_step_of_a_heal_is_recovered_by_the_next_heal() {
    for step in ["heal:recorded", "heal:checked-out"] {
        let (w, [v1, _, v3]) = heal_world(&[
            ("prompt.txt", b"v2", BLOB),
            (".ratchet/trace.db", b"x", BLOB),
        ]);
        crash(&w, step, &["heal"]);
        let expected_head = if step == "heal:recorded" { &v3 } else { &v1 };
        assert_eq!(&w.head_commit(), expected_head, "{step}");
        // The next heal completes the recorded checkout (or finds the alarm
        // healed) and never heals twice.
        let o = w.cmd(&["heal", "--json"], "");
        assert_eq!(o.status.code(), Some(0), "{step}: {}", text(&o));
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
        assert!(
            v["stayed"]
                .as_str()
                .is_some_and(|s| s.contains("nothing to heal")),
            "{step}: {v:#}"
        );
        assert_eq!(w.head_commit(), v1, "{step}");
        assert_eq!(
            std::fs::read(w.root().join("prompt.txt")).expect("read"),
            b"v1"
        );
        let o = w.run(&["log", "--kind", "checkout", "--json"], "");
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
        let n = v["events"].as_array().map(Vec::len);
        assert_eq!(
            n,
            Some(if step == "heal:recorded" { 2 } else { 1 }),
            "{step}: {v:#}"
        );
        let o = w.verify_fully(&[]);
        assert_eq!(o.status.code(), Some(0), "{step}: {}", text(&o));
    }
}

#[test]
fn a_crash_at_any_step_of_a_landing_is_completed_by_the_next_merge() {
    for step in [
        "merge:detached",
        "merge:ref-moved",
        "merge:checked-out",
        "merge:landed",
    ] {
        let w = World::new();
        let (_, feature) = w.main_and_feature(
            &[("base.txt", b"base\n", BLOB)],
            &[
                ("base.txt", b"base\n", BLOB),
                ("feature.txt", b"new\n", BLOB),
            ],
        );
        let o = w.run(&["init"], "");
        assert!(o.status.success(), "{}", text(&o));
        let o = std::process::Command::new(env!("CARGO_BIN_EXE_ratchet"))
            .current_dir(w.root())
            .args(["merge", "feature", "--into", "main", "--cmd", "true"])
            .env("RATCHET_CRASH_AT", step)
            .env_remove("RATCHET_STORE")
            .output()
            .expect("spawn");
        assert_eq!(o.status.code(), None, "{step}: died there: {}", text(&o));
        // The next merge finishes the landing (or finds the branch in).
        let o = w.run(&["merge", "feature", "--into", "main", "--cmd", "true"], "");
        assert_eq!(o.status.code(), Some(0), "{step}: {}", text(&o));
        let head = w.repo.head().expect("head");
        assert_eq!(
            head.name().ok(),
            Some("refs/heads/main"),
            "{step}: HEAD attached again"
        );
        let tip = head.target().expect("tip");
        assert!(
            w.repo
                .graph_descendant_of(tip, Oid::from_str(&feature).expect("oid"))
                .expect("graph"),
            "{step}: main holds the feature"
        );
        assert_eq!(
            std::fs::read(w.root().join("feature.txt")).expect("read"),
            b"new\n",
            "{step}"
        );
        let mut opts = git2::StatusOptions::new();
        opts.include_untracked(true);
        let dirty = w.repo.statuses(Some(&mut opts)).expect("status").len();
        assert_eq!(dirty, 0, "{step}: the work tree matches main");
        assert!(
            !w.repo.commondir().join("ratchet-merge.pending").exists(),
            "{step}"
        );
        let o = w.run(&["log", "--kind", "merge", "--json"], "");
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
        assert!(
            !v["events"].as_array().expect("events").is_empty(),
            "{step}: recorded"
        );
        let o = w.run(&["verify-chain"], "");
        assert_eq!(o.status.code(), Some(0), "{step}: {}", text(&o));
    }
}
