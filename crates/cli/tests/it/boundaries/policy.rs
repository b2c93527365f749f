//! A policy or rubric file beside the store cannot change a pinned decision.

use std::path::Path;

use super::*;
use crate::common::{ratchet, text};

#[test]
fn an_edited_policy_file_cannot_flip_a_pinned_verdict() {
    let (w, base, cand) = gate_world();
    let policy_path = w.store().join("policy.toml");
    // Unpinned, status says so.
    let o = w.cmd(&["status"], "");
    assert!(text(&o).contains("policy not pinned"), "{}", text(&o));
    // Before pinning, the one-line edit flips the honest reject: the hole.
    std::fs::write(
        &policy_path,
        format!("{}direction = \"lower\"\n", policy_text()),
    )
    .expect("edit");
    // A keyed store refuses to decide an unpinned class from the file...
    let mut args = gate_args(&base, &cand, "prompt");
    args.push("--dry-run");
    let o = w.cmd(&args, "");
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        text(&o).contains("not pinned in this keyed store")
            && text(&o).contains("--allow-unpinned"),
        "{}",
        text(&o)
    );
    // ...unless told it is an experiment: then the edit is the policy.
    let o = gate(&w, &base, &cand, &["--dry-run"]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "unpinned, the edit promotes: {}",
        text(&o)
    );
    std::fs::write(&policy_path, policy_text()).expect("restore");

    // The owner pins the policy, and keeps a checkpoint elsewhere.
    let o = w.cmd(&["policy", "pin", policy_path.to_str().expect("utf8")], "");
    assert!(o.status.success(), "{}", text(&o));
    assert!(text(&o).contains("pinned class prompt"), "{}", text(&o));
    let o = w.cmd(&["policy", "pin", policy_path.to_str().expect("utf8")], "");
    assert!(text(&o).contains("already pinned"), "{}", text(&o));
    let o = gate(&w, &base, &cand, &[]);
    assert_eq!(o.status.code(), Some(1), "honest reject: {}", text(&o));
    w.save_checkpoint();
    let size = w.size();

    // Each edit an attacker can make beside the store is refused, naming
    // the fields, and records nothing.
    let edits = [
        (
            format!("{}direction = \"lower\"\n", policy_text()),
            "direction",
        ),
        (
            policy_text().replace("alpha = 0.05", "alpha = 0.4"),
            "alpha",
        ),
        (
            policy_text().replace("test = \"gaussian\"", "test = \"bernoulli\""),
            "test",
        ),
        (
            policy_text().replace("scorer = \"accuracy\"", "scorer = \"other\""),
            "scorer",
        ),
        (
            format!(
                "{}required_suites = []\n[[class.prompt.invariant]]\nscorer = \"accuracy\"\nminimum = 0.0\n",
                policy_text()
            ),
            "invariant",
        ),
    ];
    for (edited, field) in &edits {
        std::fs::write(&policy_path, edited).expect("edit");
        let o = gate(&w, &base, &cand, &[]);
        assert_eq!(o.status.code(), Some(2), "{field}: {}", text(&o));
        let t = text(&o);
        assert!(
            t.contains("pinned") && t.contains(field) && t.contains("ratchet policy pin"),
            "{field}: {t}"
        );
        // The same file given explicitly, from anywhere, is refused too.
        let elsewhere = w.dir.path().join("attacker.toml");
        std::fs::write(&elsewhere, edited).expect("write");
        let o = gate(
            &w,
            &base,
            &cand,
            &["--policy", elsewhere.to_str().expect("utf8")],
        );
        assert_eq!(o.status.code(), Some(2), "{field}: {}", text(&o));
    }
    assert_eq!(w.size(), size, "no refused decision was recorded");
    // Without the file the pin decides: the honest reject.
    std::fs::remove_file(&policy_path).expect("remove");
    let o = gate(&w, &base, &cand, &["--json"]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
    assert_eq!(v["policy_source"], "pinned");
    // The store verifies with key and checkpoint, and no promote is in it.
    let o = w.verify_fully(&[]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let o = w.run(&["log", "--kind", "decision", "--json"], "");
    assert!(!text(&o).contains("\"promote\""), "{}", text(&o));
    let o = w.cmd(&["status"], "");
    assert!(!text(&o).contains("policy not pinned"), "{}", text(&o));
    assert!(
        text(&o).contains("policy of prompt: pinned"),
        "{}",
        text(&o)
    );
}

#[test]
fn a_pinned_rubric_refuses_an_edited_file() {
    let (w, base, _) = gate_world();
    let rubric = r#"
name = "answer"
[[item]]
id = "correct"
type = "boolean"
weight = 1.0
"#;
    let path = w.dir.path().join("answer.toml");
    std::fs::write(&path, rubric).expect("rubric");
    let o = w.cmd(&["rubric", "pin", path.to_str().expect("utf8")], "");
    assert!(o.status.success(), "{}", text(&o));
    let edited = w.dir.path().join("edited.toml");
    std::fs::write(&edited, rubric.replace("weight = 1.0", "weight = 2.0")).expect("edit");
    let lines = w.dir.path().join("obs.jsonl");
    std::fs::write(
        &lines,
        format!("{{\"task\":\"q1\",\"rubric\":\"answer\",\"observation\":{{\"correct\":true}},\"commit\":\"{base}\"}}\n"),
    )
    .expect("lines");
    let size = w.size();
    let ingest = |rubric: &Path| {
        let (lines, rubric) = (
            lines.to_str().expect("utf8"),
            rubric.to_str().expect("utf8"),
        );
        w.cmd(&["ingest", "jsonl", lines, "--rubric", rubric], "")
    };
    let o = ingest(&edited);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("pinned at version"), "{}", text(&o));
    let o = w.cmd(&["score", "--rubric", edited.to_str().expect("utf8")], "");
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert_eq!(w.size(), size, "nothing stored");
    // The pinned file itself scores.
    let o = ingest(&path);
    assert!(o.status.success(), "{}", text(&o));
}

/// Pass/fail, paired: the baseline passes every task, the candidate fails
/// 60 of 100, so the pinned policy rejects the candidate.
fn bernoulli_text() -> String {
    ratchet_testkit::gap_class_with_beta("tool", "bernoulli", "pass", 0.1, 0.3, 500, "")
}

fn bernoulli_world() -> (World, String, String) {
    let (w, base, cand) = two_versions("tool.txt");
    w.init();
    let policy = w.store().join("policy.toml");
    std::fs::write(&policy, bernoulli_text()).expect("policy");
    let mut lines = score_lines(&base, "pass", 0..100, |_| 1.0);
    lines.push_str(&score_lines(&cand, "pass", 0..100, |t| {
        if t % 5 < 3 { 0.0 } else { 1.0 }
    }));
    let o = w.cmd(&["append"], &lines);
    assert!(o.status.success(), "{}", text(&o));
    let o = w.cmd(&["policy", "pin", policy.to_str().expect("utf8")], "");
    assert!(o.status.success(), "{}", text(&o));
    (w, base, cand)
}

/// `pass_threshold = nan` serializes as JSON `null`, exactly as an absent
/// `pass_threshold` does: the file's hash equals the pin's, so `decide`
/// runs under the *file* (it checks the hash, then uses `q.policy`), with
/// a threshold no score reaches. Every pair is concordant and the pinned
/// reject becomes a "continue" that the trace records under the pinned
/// policy's hash.
#[test]
fn a_nan_in_the_policy_file_is_not_the_pinned_policy() {
    let (w, base, cand) = bernoulli_world();
    // Under the pin: reject.
    let o = w.cmd(&gate_args(&base, &cand, "tool"), "");
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));

    // The attacker adds one line to the policy file beside the store.
    let policy = w.store().join("policy.toml");
    std::fs::write(
        &policy,
        format!("{}pass_threshold = nan\n", bernoulli_text()),
    )
    .expect("edit");

    // The file is refused: a policy's numbers are finite.
    let o = w.cmd(&gate_args(&base, &cand, "tool"), "");
    assert_eq!(o.status.code(), Some(2), "CLI: {}", text(&o));
    assert!(text(&o).contains("pass_threshold"), "{}", text(&o));
    match ratchet_gate::Policy::from_path(&policy) {
        Err(ratchet_gate::Error::PolicyFile { reason, .. }) => {
            assert!(reason.contains("pass_threshold"), "{reason}");
        }
        other => panic!("expected the policy file refused, got {other:?}"),
    }

    // A program that builds the policy itself and calls the library's decide.
    let mut store = w.open_keyed();
    let view = store
        .verified(&ratchet_trace::VerifyOptions::default())
        .expect("verifies");
    let pinned = ratchet_gate::pinned_policy(&view, "tool", view.head().size)
        .expect("pins")
        .expect("pinned");
    let base_id = ratchet_trace::CommitId::parse(&base).expect("id");
    let cand_id = ratchet_trace::CommitId::parse(&cand).expect("id");
    let mut forged = pinned.policy.clone();
    forged.pass_threshold = Some(f64::NAN);
    let given = &forged;
    let q = ratchet_gate::Question {
        class: "tool",
        policy: given,
        baseline: &base_id,
        candidate: &cand_id,
        checkpoint: None,
        allow_unpinned: false,
    };
    let result = ratchet_gate::decide(&mut store, &q);
    match result {
        Err(ratchet_gate::Error::PolicyNotPinned { .. }) => {}
        Ok(v) => panic!(
            "decide used a policy file that differs from the pin (pass_threshold {:?} vs pinned {:?}; file hash {} == pinned hash {}: {}): outcome {:?}, recorded policy_hash {}",
            given.pass_threshold,
            pinned.policy.pass_threshold,
            given.hash(),
            pinned.hash,
            given.hash() == pinned.hash,
            v.outcome,
            v.policy_hash
        ),
        Err(e) => panic!("unexpected error: {e}"),
    }
}

/// `calibrate` falls back to the policy file alone whenever the store
/// does not open — so a file writer who also breaks `trace.db` (or deletes
/// it) has the edited file calibrate a pinned class, silently.
#[test]
fn calibrate_of_a_pinned_class_never_uses_an_edited_file() {
    let w = World::new();
    w.commit_entries(&[("prompt.txt", b"v1", BLOB)], "v1");
    w.checkout_head();
    w.init();
    let policy = w.store().join("policy.toml");
    std::fs::write(&policy, policy_text()).expect("policy");
    let o = w.cmd(&["policy", "pin", policy.to_str().expect("utf8")], "");
    assert!(o.status.success(), "{}", text(&o));
    let edited = policy_text().replace("gap = 0.05", "gap = 0.9");
    std::fs::write(&policy, &edited).expect("edit");
    // With the store intact the edited file is refused: held.
    let o = w.cmd(&["calibrate", "--class", "prompt", "--runs", "50"], "");
    assert_ne!(o.status.code(), Some(0), "intact store: {}", text(&o));
    // Now the store cannot be opened.
    std::fs::write(w.store().join("trace.db"), b"not a database at all").expect("smash");
    let o = w.cmd(&["calibrate", "--class", "prompt", "--runs", "50"], "");
    assert_ne!(
        o.status.code(),
        Some(0),
        "calibrate ran the edited policy of a pinned class: {}",
        text(&o)
    );
}

/// A hostile cell pins the attacker's policy for the class (a later pin
/// than the home's); merged into the home, it does not count: the edited
/// file is still refused. HELD.
#[test]
fn a_cells_pin_does_not_count_in_the_home() {
    let (w, base, cand) = super::refs::promoted_world();
    let edited = policy_text().replace("gap = 0.05", "gap = 0.9");
    let cell = w.dir.path().join("cell");
    let cell_s = cell.to_str().expect("utf8").to_string();
    let o = ratchet(&w.root(), &["--store", &cell_s, "init"], "");
    assert!(o.status.success(), "{}", text(&o));
    let cell_policy = w.dir.path().join("cell-policy.toml");
    std::fs::write(&cell_policy, &edited).expect("cell policy");
    let o = ratchet(
        &w.root(),
        &[
            "--store",
            &cell_s,
            "policy",
            "pin",
            cell_policy.to_str().expect("utf8"),
        ],
        "",
    );
    assert!(o.status.success(), "{}", text(&o));
    let o = w.cmd(&["merge-cells", &cell_s], "");
    assert!(o.status.success(), "{}", text(&o));
    std::fs::write(w.store().join("policy.toml"), &edited).expect("edit");
    let o = w.cmd(&gate_args(&base, &cand, "prompt"), "");
    assert_eq!(o.status.code(), Some(2), "refused: {}", text(&o));
    assert!(text(&o).contains("gap"), "{}", text(&o));
}
