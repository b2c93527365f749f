//! The trace is the record of what is deployed; a promotion ref that
//! disagrees with it is a fault, and is restored from it.

use std::path::Path;

use super::*;
use crate::common::text;

#[test]
fn a_promotion_ref_moved_outside_the_trace_is_a_fault_and_is_restored() {
    let (w, base, cand) = gate_world();
    let root = w.root();
    let repo_s = root.to_str().expect("utf8").to_string();
    // An initial deployment of the baseline, recorded through the library's
    // own path (a promote of the baseline over a worse commit is not
    // available here, so the honest promotion is of the baseline's class
    // by a gate that promotes: swap the roles).
    let o = gate(&w, &cand, &base, &["--record-promotion", &repo_s]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert_eq!(w.promotion_ref().as_deref(), Some(base.as_str()));
    let o = w.cmd(&["status"], "");
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    // Honest reject of the candidate; then the attacker moves the ref to it.
    let o = gate(&w, &base, &cand, &["--record-promotion", &repo_s]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    w.save_checkpoint();
    w.point_ref("refs/ratchet/promoted/prompt", &cand);
    let o = w.cmd(&["status"], "");
    assert_eq!(o.status.code(), Some(7), "{}", text(&o));
    assert!(
        text(&o).contains("REF FAULT") && text(&o).contains(&cand),
        "{}",
        text(&o)
    );
    let o = w.verify_fully(&["--repo", &repo_s]);
    assert_eq!(o.status.code(), Some(7), "{}", text(&o));
    let o = w.cmd(&["status", "--json"], "");
    assert_eq!(o.status.code(), Some(7));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
    assert_eq!(v["deployed"]["prompt"]["commit"], base.as_str(), "{v:#}");
    // A ref of a class never promoted is a fault too.
    w.point_ref("refs/ratchet/promoted/other", &cand);
    let o = w.cmd(&["status"], "");
    assert_eq!(o.status.code(), Some(7));
    assert!(text(&o).contains("promoted/other"), "{}", text(&o));
    w.repo
        .find_reference("refs/ratchet/promoted/other")
        .expect("ref")
        .delete()
        .expect("delete");
    // The next command that touches the class restores the ref and says so
    // in the trace.
    let o = gate(&w, &base, &cand, &["--record-promotion", &repo_s]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert_eq!(w.promotion_ref().as_deref(), Some(base.as_str()));
    let o = w.run(&["log", "--kind", "promotion", "--json"], "");
    assert!(
        text(&o).contains("restores") && text(&o).contains(&cand),
        "{}",
        text(&o)
    );
    let o = w.cmd(&["status"], "");
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
}

/// Base honestly better than cand; base promoted over cand (recorded,
/// ref moved), then cand honestly rejected. The trace says: base deployed.
pub(crate) fn promoted_world() -> (World, String, String) {
    let (w, base, cand) = gate_world();
    let policy = w.store().join("policy.toml");
    let o = w.cmd(&["policy", "pin", policy.to_str().expect("utf8")], "");
    assert!(o.status.success(), "{}", text(&o));
    let repo_s = w.root().to_str().expect("utf8").to_string();
    let mut args = gate_args(&cand, &base, "prompt");
    args.extend(["--record-promotion", repo_s.as_str(), "--allow-unpinned"]);
    let o = w.cmd(&args, "");
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let mut args = gate_args(&base, &cand, "prompt");
    args.extend(["--record-promotion", repo_s.as_str(), "--allow-unpinned"]);
    let o = w.cmd(&args, "");
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    w.save_checkpoint();
    let o = w.cmd(&["status"], "");
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    (w, base, cand)
}

/// What `git rev-parse` (the tool a deployment script uses) says the ref
/// points at, if git is installed.
fn git_rev_parse(root: &Path, rev: &str) -> Option<String> {
    let o = std::process::Command::new("git")
        .current_dir(root)
        .args(["rev-parse", "--verify", "--quiet", rev])
        .output()
        .ok()?;
    o.status
        .success()
        .then(|| String::from_utf8_lossy(&o.stdout).trim().to_string())
}

/// git reads a loose ref `ref:refs/heads/x` (no space after the colon) as
/// a symbolic ref; libgit2 finds it corrupt and skips it while iterating.
/// The idea: a packed-refs entry of the same name at the trace's commit
/// would then be what `status` compares, while `git rev-parse` gives the
/// rejected commit. HELD: libgit2 reports the ref missing (exit 7).
#[test]
fn status_compares_the_promotion_ref_that_git_reads() {
    let (w, base, cand) = promoted_world();
    let root = w.root();
    let repo_s = root.to_str().expect("utf8").to_string();
    // The attacker, who can move refs: a branch at the rejected commit, a
    // packed entry at the honest one, and the loose ref rewritten.
    w.point_ref("refs/heads/evil", &cand);
    let git = root.join(".git");
    std::fs::write(
        git.join("packed-refs"),
        format!(
            "# pack-refs with: peeled fully-peeled sorted \n{base} refs/ratchet/promoted/prompt\n"
        ),
    )
    .expect("packed-refs");
    std::fs::write(
        git.join("refs/ratchet/promoted/prompt"),
        "ref:refs/heads/evil\n",
    )
    .expect("loose ref");

    let git_says = git_rev_parse(&root, "refs/ratchet/promoted/prompt");
    let o = w.cmd(&["status"], "");
    let status_text = text(&o);
    let status_code = o.status.code();
    let o = w.verify_fully(&["--repo", &repo_s]);
    let verify_text = text(&o);
    let verify_code = o.status.code();
    assert!(
        status_code == Some(7) && verify_code == Some(7),
        "git rev-parse says the promoted ref is {git_says:?} (rejected candidate {cand}, trace says {base}); \
         status exit {status_code:?}:\n{status_text}\nverify-chain --repo exit {verify_code:?}:\n{verify_text}"
    );
}

/// `status` skips the promotion-ref comparison when the trace does not
/// verify — and then exits 0. A file writer who moves the ref *and*
/// breaks verification (one dropped trigger) gets `ratchet status && deploy`
/// through, although the ref disagrees with every verified trace.
#[test]
fn status_does_not_exit_zero_on_a_moved_ref_when_the_trace_fails() {
    let (w, _base, cand) = promoted_world();
    w.point_ref("refs/ratchet/promoted/prompt", &cand);
    {
        let c = rusqlite::Connection::open(w.store().join("trace.db")).expect("open");
        c.execute_batch("DROP TRIGGER scores_no_update;")
            .expect("drop trigger");
    }
    let o = w.cmd(&["status"], "");
    assert_ne!(
        o.status.code(),
        Some(0),
        "status exits 0 with the promotion ref at the rejected {cand}: {}",
        text(&o)
    );
    let o = w.cmd(&["status", "--json"], "");
    assert_ne!(o.status.code(), Some(0), "status --json: {}", text(&o));
}

/// A symbolic promotion ref to a ref that does not exist (yet), for a
/// class the trace never promoted: `points_at` None equals `trace_says`
/// None, so no fault is named although a `refs/ratchet/promoted/*` ref of
/// a class never promoted exists (documented as a fault). The attacker
/// creates the target later.
#[test]
fn a_dangling_symbolic_promotion_ref_of_an_unpromoted_class_is_a_fault() {
    let (w, _base, _cand) = promoted_world();
    w.repo
        .reference_symbolic(
            "refs/ratchet/promoted/agent",
            "refs/heads/later",
            true,
            "attacker",
        )
        .expect("symref");
    let o = w.cmd(&["status"], "");
    assert_eq!(o.status.code(), Some(7), "{}", text(&o));
}

/// A class whose name holds a slash: its ref is
/// `refs/ratchet/promoted/team/prompt`, two levels below the prefix.
/// HELD: libgit2's glob `*` matches across `/`, so the moved ref is named.
#[test]
fn a_moved_ref_of_a_class_with_a_slash_is_a_fault() {
    let (w, base, cand) = two_versions("prompt.txt");
    w.init();
    let policy = w.store().join("policy.toml");
    std::fs::write(
        &policy,
        policy_text().replace("[class.prompt]", "[class.\"team/prompt\"]"),
    )
    .expect("policy");
    record_honest_scores(&w, &base, &cand);
    let repo_s = w.root().to_str().expect("utf8").to_string();
    let mut args = gate_args(&cand, &base, "team/prompt");
    args.extend(["--record-promotion", repo_s.as_str(), "--allow-unpinned"]);
    let o = w.cmd(&args, "");
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    w.point_ref("refs/ratchet/promoted/team/prompt", &cand);
    let o = w.cmd(&["status"], "");
    assert_eq!(o.status.code(), Some(7), "{}", text(&o));
}

/// Someone who can move refs deletes `refs/ratchet/promoted/prompt` and
/// creates `refs/ratchet/promoted/prompt/x`: git cannot hold both, so the
/// restoration `gate --record-promotion` makes first can never be written.
/// Each attempt appends a `promotion` event saying the ref was restored,
/// then fails — the trace fills with restorations that did not happen, and
/// no decision can be recorded with a promotion any more.
#[test]
fn a_restoration_that_cannot_be_made_is_not_recorded_as_made() {
    let (w, base, cand) = gate_world();
    let repo_s = w.root().to_str().expect("utf8").to_string();
    let o = gate(&w, &cand, &base, &["--record-promotion", &repo_s]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert_eq!(w.promotion_ref().as_deref(), Some(base.as_str()));
    w.repo
        .find_reference("refs/ratchet/promoted/prompt")
        .expect("ref")
        .delete()
        .expect("delete");
    w.point_ref("refs/ratchet/promoted/prompt/x", &cand);
    let o = w.cmd(&["status"], "");
    assert_eq!(o.status.code(), Some(7), "{}", text(&o));
    let mut codes = Vec::new();
    for _ in 0..3 {
        let o = gate(&w, &base, &cand, &["--record-promotion", &repo_s]);
        codes.push((o.status.code(), text(&o)));
    }
    let restores: Vec<serde_json::Value> = w
        .events("promotion")
        .into_iter()
        .filter(|e| e.to_string().contains("restores"))
        .collect();
    assert!(
        restores.is_empty() || w.promotion_ref().is_some(),
        "{} restoration(s) recorded, ref still missing; gate runs: {codes:#?}",
        restores.len()
    );
}

/// The store lives beside the repository (`--store ../store`, the CI
/// layout of a store restored from a cache), promotions are recorded into
/// the repository, and the ref is then moved to the rejected candidate.
/// `status`, run in the repository, finds the repository from the store's
/// directory — none — compares no ref, and exits 0.
#[test]
fn status_in_the_repository_compares_its_promotion_refs_with_an_outside_store() {
    let (w, base, cand) = two_versions("prompt.txt");
    let store = w.dir.path().join("store");
    let store_s = store.to_str().expect("utf8").to_string();
    let o = w.run(
        &[
            "--store",
            &store_s,
            "init",
            "--keyed",
            "--key-file",
            &w.key_s(),
        ],
        "",
    );
    assert!(o.status.success(), "{}", text(&o));
    std::fs::write(store.join("policy.toml"), policy_text()).expect("policy");
    let mut lines = score_lines(&base, "accuracy", 0..200, |t| {
        0.80 + f64::from(t % 7) * 0.01
    });
    lines.push_str(&score_lines(&cand, "accuracy", 0..200, |t| {
        0.70 + f64::from(t % 5) * 0.01
    }));
    let o = w.cmd(&["--store", &store_s, "append"], &lines);
    assert!(o.status.success(), "{}", text(&o));
    let repo_s = w.root().to_str().expect("utf8").to_string();
    let mut args = vec!["--store", store_s.as_str()];
    args.extend(gate_args(&cand, &base, "prompt"));
    args.extend(["--record-promotion", repo_s.as_str(), "--allow-unpinned"]);
    let o = w.cmd(&args, "");
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert_eq!(w.promotion_ref().as_deref(), Some(base.as_str()));
    w.point_ref("refs/ratchet/promoted/prompt", &cand);
    let o = w.cmd(&["--store", &store_s, "status"], "");
    assert_ne!(
        o.status.code(),
        Some(0),
        "status exits 0 with refs/ratchet/promoted/prompt at the rejected {cand}: {}",
        text(&o)
    );
}
