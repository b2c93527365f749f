//! A landing never writes into the store, never deletes what the branch
//! it leaves tracks there, never overwrites an ignored file, and a planted
//! marker of an interrupted landing cannot make it.

use git2::Oid;

use super::*;
use crate::common::text;

/// main at `base` (ignoring `local.cfg`) checked out, a branch `feature`
/// that adds `local.cfg`, and the work tree holding the user's ignored
/// `local.cfg`.
fn merge_world() -> (World, String, String) {
    let w = World::unkeyed();
    let (base, feature) = w.main_and_feature(
        &[
            ("base.txt", b"base\n", BLOB),
            (".gitignore", b"local.cfg\n", BLOB),
        ],
        &[
            ("base.txt", b"base\n", BLOB),
            (".gitignore", b"local.cfg\n", BLOB),
            ("local.cfg", b"the branch's config\n", BLOB),
        ],
    );
    w.init();
    std::fs::write(w.root().join("local.cfg"), b"mine\n").expect("local");
    (w, base, feature)
}

/// The ignored `local.cfg` the world's owner keeps is still theirs.
fn assert_local_cfg_kept(w: &World, o: &std::process::Output) {
    let got = std::fs::read(w.root().join("local.cfg")).expect("read");
    assert_eq!(
        got,
        b"mine\n",
        "merge exit {:?}: {}",
        o.status.code(),
        text(o)
    );
}

/// The marker an interrupted landing into `main` leaves, written by
/// someone who can write `.git`.
fn plant_pending_landing(w: &World, previous: &str, commit: &str) {
    std::fs::write(
        w.repo.commondir().join("ratchet-merge.pending"),
        serde_json::json!({"into_ref": "refs/heads/main", "previous": previous, "commit": commit})
            .to_string(),
    )
    .expect("plant");
}

/// `merge` lands through `safe_checkout` alone, without the ignored-file
/// check heal makes (`untracked_in_the_way`).
#[test]
fn a_landing_never_overwrites_an_ignored_file() {
    let (w, _base, _feature) = merge_world();
    let o = w.run(&["merge", "feature", "--into", "main", "--cmd", "true"], "");
    assert_local_cfg_kept(&w, &o);
}

/// A planted `ratchet-merge.pending` (HEAD detached at `previous`, the
/// branch moved to `commit`: all three within the reach of someone who
/// writes `.git`) makes the next `merge` — of any branch — check out the
/// attacker's commit through `safe_checkout` alone, before anything about
/// the requested merge is read.
#[test]
fn a_planted_pending_landing_never_overwrites_an_ignored_file() {
    let (w, base, _feature) = merge_world();
    let evil = w.loose_commit(
        &[
            ("base.txt", b"base\n", BLOB),
            (".gitignore", b"local.cfg\n", BLOB),
            ("local.cfg", b"attacker's config\n", BLOB),
        ],
        &base,
        "attacker",
    );
    w.point_ref("refs/heads/main", &evil);
    w.repo
        .set_head_detached(Oid::from_str(&base).expect("oid"))
        .expect("detach");
    plant_pending_landing(&w, &base, &evil);
    let o = w.run(
        &["merge", "no-such-branch", "--into", "main", "--cmd", "true"],
        "",
    );
    assert_local_cfg_kept(&w, &o);
}

/// The root cause of test 1 through a planted `ratchet-merge.pending`:
/// HEAD detached at a commit P that tracks `.ratchet/trace.db` with the
/// file's current bytes (index at P's tree), `main` moved to a commit C
/// that does not track it, and the marker `{main, P, C}`. The next
/// `merge` — of any branch, even one that does not exist — "finishes the
/// landing" with a safe checkout from P to C, which removes the trace.
#[test]
fn a_planted_pending_landing_never_deletes_the_trace() {
    let (w, base, _feature) = merge_world();
    let db = std::fs::read(w.store().join("trace.db")).expect("db");
    let p = w.loose_commit(
        &[
            ("base.txt", b"base\n", BLOB),
            (".gitignore", b"local.cfg\n", BLOB),
            (".ratchet/trace.db", &db, BLOB),
        ],
        &base,
        "attacker: P",
    );
    let c = w.loose_commit(
        &[
            ("base.txt", b"base\n", BLOB),
            (".gitignore", b"local.cfg\n", BLOB),
        ],
        &p,
        "attacker: C",
    );
    w.point_ref("refs/heads/main", &c);
    w.repo
        .set_head_detached(Oid::from_str(&p).expect("oid"))
        .expect("detach");
    w.reset_index_to_head();
    std::fs::write(
        w.repo.commondir().join("ratchet-merge.pending"),
        serde_json::json!({"into_ref": "refs/heads/main", "previous": p, "commit": c}).to_string(),
    )
    .expect("plant");
    let o = w.run(
        &["merge", "no-such-branch", "--into", "main", "--cmd", "true"],
        "",
    );
    let exists = w.store().join("trace.db").exists();
    let o2 = w.run(&["verify-chain"], "");
    assert!(
        exists && o2.status.code() == Some(0),
        "merge exit {:?}: {}\ntrace.db exists: {exists}; verify-chain exit {:?}: {}",
        o.status.code(),
        text(&o),
        o2.status.code(),
        text(&o2)
    );
}

/// A landing deletes what `into` tracks and the merge does not: `main`
/// tracks `.ratchet/policy.toml` (a repository that versions its policy
/// beside the store), a branch deletes it, the merge is verified and lands
/// — and the live policy file is gone from the store directory.
#[test]
fn a_landing_never_deletes_a_store_file_that_into_tracks() {
    let w = World::unkeyed();
    let base = w.commit_entries(&[("base.txt", b"base\n", BLOB)], "base");
    let base_oid = Oid::from_str(&base).expect("oid");
    w.repo
        .reference("refs/heads/main", base_oid, true, "main")
        .expect("main");
    w.repo.set_head("refs/heads/main").expect("head");
    w.checkout_head();
    w.init();
    std::fs::write(w.store().join("policy.toml"), policy_text()).expect("policy");
    let tracked = w.commit_entries(
        &[
            ("base.txt", b"base\n", BLOB),
            (".ratchet/policy.toml", policy_text().as_bytes(), BLOB),
        ],
        "version the policy",
    );
    let feature = w.commit_entries(
        &[
            ("base.txt", b"base\n", BLOB),
            ("feature.txt", b"new\n", BLOB),
        ],
        "feature (drops the policy)",
    );
    w.point_ref("refs/heads/feature", &feature);
    w.point_ref("refs/heads/main", &tracked);
    w.reset_index_to_head();
    let o = w.run(&["merge", "feature", "--into", "main", "--cmd", "true"], "");
    let after = std::fs::read_to_string(w.store().join("policy.toml")).ok();
    assert_eq!(
        after.as_deref(),
        Some(policy_text().as_str()),
        "merge exit {:?}: {}",
        o.status.code(),
        text(&o)
    );
}
