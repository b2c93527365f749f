//! heal never checks out a commit that would write into the store or over
//! files it did not write.

use super::*;
use crate::common::text;

/// v1 (0.85), a best-scored v2 authored by the attacker, v3 deployed
/// (0.90) whose live scores fall; an alarm on v3 recorded.
pub(crate) fn heal_world(v2_files: &[Entry<'_>]) -> (World, [String; 3]) {
    let w = World::new();
    let v1 = prompt_commit(&w, b"v1", &[], "v1");
    let v2 = w.commit_entries(v2_files, "v2");
    let v3 = prompt_commit(&w, b"v3", &[], "v3");
    w.checkout_head();
    w.init();
    record_alarm(&w, &[(&v1, 0.85), (&v2, 0.95), (&v3, 0.90)], &v3);
    w.save_checkpoint();
    (w, [v1, v2, v3])
}

/// Heals to `healed` (exit 0, one `checkout` recorded), then, as a person
/// deciding otherwise, attaches HEAD to `branch` again and checks it out at
/// `back`: a completed heal undone by hand, what a stale marker attacks.
pub(crate) fn heal_then_return_to(w: &World, branch: &str, healed: &str, back: &str) {
    let o = w.cmd(&["heal", "--json"], "");
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert_eq!(w.head_commit(), healed, "healed");
    assert_eq!(w.events("checkout").len(), 1);
    w.repo.set_head(branch).expect("attach");
    w.checkout_head();
    assert_eq!(w.head_commit(), back);
}

fn heal_skips_a_commit_tracking(path: &str) {
    let (w, [v1, v2, _]) = heal_world(&[
        ("prompt.txt", b"v2", BLOB),
        (path, b"attacker's bytes", BLOB),
    ]);
    let o = w.cmd(&["heal", "--json"], "");
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
    assert_eq!(v["chosen"], v1.as_str(), "{v:#}");
    let skipped = v["skipped"].to_string();
    assert!(
        skipped.contains(&v2) && skipped.contains("store directory"),
        "{skipped}"
    );
    assert_eq!(w.head_commit(), v1);
    assert_eq!(
        std::fs::read(w.root().join("prompt.txt")).expect("read"),
        b"v1"
    );
    // The store is whole: it verifies with key and checkpoint, holds the
    // checkout with the refusal, and no attacker file is in it.
    let o = w.verify_fully(&[]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(!w.root().join(path).exists() || path.ends_with("trace.db"));
    if path.ends_with("trace.db") {
        let bytes = std::fs::read(w.root().join(path)).expect("read");
        assert!(
            bytes.starts_with(b"SQLite format 3"),
            "the live store is still a database"
        );
    }
    let o = w.run(&["log", "--kind", "checkout", "--json"], "");
    assert!(
        text(&o).contains("store directory"),
        "the refusal is recorded: {}",
        text(&o)
    );
}

#[test]
fn heal_never_checks_out_a_commit_that_tracks_the_store_file() {
    heal_skips_a_commit_tracking(".ratchet/trace.db");
}

#[test]
fn heal_never_checks_out_a_commit_that_tracks_the_policy_beside_the_store() {
    heal_skips_a_commit_tracking(".ratchet/policy.toml");
}

#[test]
fn heal_never_overwrites_an_ignored_file() {
    let (w, [v1, v2, _]) = heal_world(&[
        ("prompt.txt", b"v2", BLOB),
        ("local.cfg", b"attacker's config", BLOB),
    ]);
    std::fs::write(w.root().join("local.cfg"), b"mine").expect("local");
    let o = w.cmd(&["heal", "--json"], "");
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
    assert_eq!(v["chosen"], v1.as_str(), "{v:#}");
    assert!(v["skipped"].to_string().contains(&v2), "{v:#}");
    assert_eq!(
        std::fs::read(w.root().join("local.cfg")).expect("read"),
        b"mine"
    );
}

/// A commit of `prompt.txt` = `version`, the `.gitignore` every commit of
/// these worlds has, and `extra`.
fn prompt_commit(w: &World, version: &[u8], extra: &[Entry<'_>], message: &str) -> String {
    let mut files: Vec<Entry<'_>> = vec![
        ("prompt.txt", version, BLOB),
        (".gitignore", b"local.cfg\n", BLOB),
    ];
    files.extend_from_slice(extra);
    w.commit_entries(&files, message)
}

/// Heals and expects v2 (which carries a link into the store) skipped.
fn heal_must_skip_link(v2_extra: &[Entry<'_>]) {
    let mut files: Vec<Entry<'_>> = vec![("prompt.txt", b"v2", BLOB)];
    files.extend_from_slice(v2_extra);
    let (w, [v1, v2, _]) = heal_world(&files);
    let o = w.cmd(&["heal", "--json"], "");
    let out = text(&o);
    let root = w.root();
    // Where `out` leads a process running in the work tree's root.
    let through = std::process::Command::new("ls")
        .current_dir(&root)
        .arg("out/")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).to_string())
        .unwrap_or_default();
    let link = std::fs::read_link(root.join("out")).ok();
    assert!(
        w.head_commit() == v1 && !root.join("out").exists(),
        "heal checked out {} (v2 is {v2}); the link `out` -> {link:?} lists, from the work tree: {through:?}\n{out}",
        w.head_commit()
    );
}

/// libgit2 writes a link's target as a C string: a blob `.ratchet\0x` is
/// judged as the path `.ratchet\0x` (not the store) but checked out as a
/// link to `.ratchet`.
#[test]
fn heal_skips_a_link_whose_target_a_nul_byte_cuts_to_the_store() {
    heal_must_skip_link(&[("out", b".ratchet\0harmless", LINK)]);
}

/// The target is resolved lexically: `a/../../.ratchet` with `a` a link
/// two directories deep is judged as the work tree's parent, but the
/// system follows `a` first and lands in the store.
#[test]
fn heal_skips_a_link_into_the_store_through_another_link() {
    heal_must_skip_link(&[
        ("sub/deeper/keep.txt", b"x", BLOB),
        ("a", b"sub/deeper", LINK),
        ("out", b"a/../../.ratchet", LINK),
    ]);
}

/// An absolute target through a path that is itself a link:
/// `/proc/self/cwd/.ratchet` is the store for every process run from the
/// work tree's root (CI), and is not lexically inside it.
#[test]
fn heal_skips_a_link_into_the_store_through_proc_self_cwd() {
    heal_must_skip_link(&[("out", b"/proc/self/cwd/.ratchet", LINK)]);
}

/// `store_paths_in` judges only the commit checked out, never the commit
/// HEAD is at. A checkout deletes every file HEAD tracks that the target
/// does not (when unmodified). So a HEAD that tracks `.ratchet/policy.toml`
/// (a repository that commits its policy beside the store, or a HEAD the
/// attacker pointed at a commit of theirs holding the file's bytes) makes
/// `heal` delete the live policy file out of the store directory.
#[test]
fn heal_never_deletes_a_store_file_that_head_tracks() {
    let w = World::new();
    let v1 = prompt_commit(&w, b"v1", &[], "v1");
    w.checkout_head();
    w.init();
    std::fs::write(w.store().join("policy.toml"), policy_text()).expect("policy");
    // v3 tracks the policy file beside the store, byte for byte.
    let v3 = w.commit_entries(
        &[
            ("prompt.txt", b"v3", BLOB),
            (".gitignore", b"local.cfg\n", BLOB),
            (".ratchet/policy.toml", policy_text().as_bytes(), BLOB),
        ],
        "v3: track the policy",
    );
    w.checkout_head();
    w.reset_index_to_head();
    record_alarm(&w, &[(&v1, 0.85), (&v3, 0.90)], &v3);
    let policy = w.store().join("policy.toml");
    assert!(policy.exists());
    let o = w.cmd(&["heal", "--json"], "");
    let after = std::fs::read_to_string(&policy).ok();
    assert_eq!(
        after.as_deref(),
        Some(policy_text().as_str()),
        "heal (exit {:?}, HEAD now {}, v1 {v1}) deleted or changed {} in the store directory: {}",
        o.status.code(),
        w.head_commit(),
        policy.display(),
        text(&o)
    );
}

/// The same with the trace itself: HEAD pointed (by someone who can move
/// refs and read the store) at a commit holding `.ratchet/trace.db` with
/// the file's current bytes. The heal's own append goes to the WAL, so the
/// main file still matches HEAD's blob when the checkout removes it.
#[test]
fn heal_never_deletes_the_trace_that_head_tracks() {
    let w = World::new();
    let v1 = prompt_commit(&w, b"v1", &[], "v1");
    w.checkout_head();
    w.init();
    let v3 = prompt_commit(&w, b"v3", &[], "v3");
    w.checkout_head();
    record_alarm(&w, &[(&v1, 0.85), (&v3, 0.90)], &v3);
    // The attacker: a commit like v3 that also tracks the trace as it is
    // now, HEAD's branch moved to it, the index matching.
    let db = std::fs::read(w.store().join("trace.db")).expect("db");
    assert!(
        !w.store().join("trace.db-wal").exists()
            || std::fs::metadata(w.store().join("trace.db-wal"))
                .map(|m| m.len())
                .unwrap_or(0)
                == 0,
        "the WAL was folded into trace.db at close"
    );
    let v3b = w.loose_commit(
        &[
            ("prompt.txt", b"v3", BLOB),
            (".gitignore", b"local.cfg\n", BLOB),
            (".ratchet/trace.db", &db, BLOB),
        ],
        &v3,
        "v3 (same prompt)",
    );
    let branch = w.head_name().expect("on a branch");
    w.point_ref(&branch, &v3b);
    w.reset_index_to_head();
    // The alarm is on v3; the heal ranks v1 above the fallen v3.
    let o = w.cmd(&["heal", "--json"], "");
    let heal_text = text(&o);
    let exists = w.store().join("trace.db").exists();
    let o2 = w.cmd(&["verify-chain"], "");
    assert!(
        exists && o2.status.code() == Some(0),
        "after heal (exit {:?}: {heal_text}) trace.db exists: {exists}; verify-chain exit {:?}: {}",
        o.status.code(),
        o2.status.code(),
        text(&o2)
    );
}

/// The store lives outside the work tree and `.ratchet` is a symbolic
/// link committed in the repository (`.ratchet -> ../store`). The store's
/// canonical path is outside the work tree, so `store_paths_in` sees no
/// path of a commit as inside it, and the link `.ratchet` is tracked, so
/// it is not "in the way". A commit that re-points `.ratchet` is checked
/// out by heal — and every later command that finds its store as
/// `.ratchet` opens the attacker's store. Unkeyed, without a checkpoint,
/// the attacker's store then decides: the author of a commit (no write
/// access to the store directory) flipped a verdict.
#[test]
fn heal_never_repoints_the_store_path() {
    let w = World::unkeyed();
    let outside = w.dir.path().join("store");
    let evil = w.dir.path().join("evil");
    let v1 = prompt_commit(
        &w,
        b"v1",
        &[(".ratchet", b"../evil", LINK)],
        "v1 (attacker: the link re-pointed)",
    );
    let v3 = prompt_commit(
        &w,
        b"v3",
        &[(".ratchet", b"../store", LINK)],
        "v3: the store lives beside the repository",
    );
    let o = ratchet(
        w.dir.path(),
        &["--store", outside.to_str().expect("utf8"), "init"],
        "",
    );
    assert!(o.status.success(), "{}", text(&o));
    w.checkout_head();
    assert_eq!(
        w.store().canonicalize().expect("link"),
        outside.canonicalize().expect("store")
    );
    record_alarm(&w, &[(&v1, 0.85), (&v3, 0.90)], &v3);
    // The attacker's store: their own verdict-to-be, unkeyed.
    let o = ratchet(
        w.dir.path(),
        &["--store", evil.to_str().expect("utf8"), "init"],
        "",
    );
    assert!(o.status.success(), "{}", text(&o));
    let o = w.cmd(&["heal", "--json"], "");
    let heal_text = text(&o);
    let now = w.store().canonicalize().ok();
    assert_eq!(
        now.as_deref(),
        Some(outside.canonicalize().expect("store").as_path()),
        "after heal (exit {:?}, HEAD {} = v1? {}): {heal_text}\n.ratchet now resolves to {now:?}",
        o.status.code(),
        w.head_commit(),
        w.head_commit() == v1
    );
}

/// After a heal completed (HEAD detached at the target), a person puts
/// their branch back (`git checkout main`: HEAD = the checkout's
/// `head_was`). The next `ratchet heal` — with nothing to heal — takes
/// that for a crash between record and checkout and moves the work tree
/// to the old target again, appending a `checkout` that "completes" a
/// checkout that had completed.
#[test]
fn a_completed_heal_is_not_redone_when_a_person_moves_head_back() {
    let w = World::new();
    let v1 = prompt_commit(&w, b"v1", &[], "v1");
    let v3 = prompt_commit(&w, b"v3", &[], "v3");
    w.checkout_head();
    w.init();
    record_alarm(&w, &[(&v1, 0.85), (&v3, 0.90)], &v3);
    let branch = w.head_name().expect("on a branch");
    // A person's decision: back to the branch (v3).
    heal_then_return_to(&w, &branch, &v1, &v3);
    let o = w.cmd(&["heal", "--json"], "");
    let head = w.repo.head().expect("head");
    assert!(
        head.name().ok() == Some(branch.as_str()) && w.head_commit() == v3,
        "heal exit {:?} moved HEAD to {:?} at {} (v1 {v1}); checkout events now {}: {}",
        o.status.code(),
        head.name().ok(),
        w.head_commit(),
        w.events("checkout").len(),
        text(&o)
    );
    assert_eq!(w.events("checkout").len(), 1, "nothing recorded");
}

#[test]
fn a_dry_run_after_a_heal_says_nothing_to_heal_and_proposes_nothing() {
    let (w, [_, v2, _]) = heal_world(&[("prompt.txt", b"v2", BLOB)]);
    let o = w.cmd(&["heal", "--json"], "");
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert_eq!(w.head_commit(), v2, "{}", text(&o));
    for args in [
        &["heal", "--dry-run", "--json"][..],
        &["heal", "--dry-run"][..],
    ] {
        let o = w.cmd(args, "");
        assert_eq!(o.status.code(), Some(0), "{}", text(&o));
        let out = text(&o);
        assert!(out.contains("nothing to heal"), "{out}");
        assert!(!out.contains("would check out"), "{out}");
        if args.contains(&"--json") {
            let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
            assert!(v["chosen"].is_null(), "{v:#}");
        }
    }
    assert_eq!(w.head_commit(), v2, "a dry run moves nothing");
}

/// Issue 35, attack 4: a commit the gate rejected on measured evidence (a
/// failing required suite) stays out of heal; a later decision about it in
/// *another* class — one for missing evidence, as a `decide` token asking
/// with no evidence gets — does not launder it back in.
#[test]
fn a_decision_in_another_class_never_lifts_a_measured_reject_for_heal() {
    let (w, [v1, v2, v3]) = heal_world(&[("prompt.txt", b"v2", BLOB)]);
    std::fs::write(
        w.store().join("policy.toml"),
        ratchet_testkit::gap_class(
            "prompt",
            "gaussian",
            "quality",
            0.1,
            2000,
            "required_suites = [\"unit\"]\n",
        ) + &ratchet_testkit::gap_class("other", "gaussian", "accuracy", 0.1, 2000, ""),
    )
    .expect("policy");
    let failing = format!(
        "{{\"kind\":\"test_run\",\"commit\":\"{v2}\",\"payload\":{{\"suite\":\"unit\",\"passed\":9,\"failed\":1,\"skipped\":0,\"duration_ms\":1.0,\"failures\":[\"t\"]}}}}\n"
    );
    let o = w.cmd(&["append"], &failing);
    assert!(o.status.success(), "{}", text(&o));
    let decide = |class: &str| {
        let mut args = gate_args(&v3, &v2, class);
        args.push("--allow-unpinned");
        w.cmd(&args, "")
    };
    let o = decide("prompt");
    assert_eq!(o.status.code(), Some(1), "measured reject: {}", text(&o));
    let skipped_v2 = |w: &World| {
        let o = w.cmd(&["heal", "--dry-run", "--json"], "");
        assert_eq!(o.status.code(), Some(0), "{}", text(&o));
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
        assert_eq!(v["chosen"], v1.as_str(), "{v:#}");
        assert!(
            v["skipped"].to_string().contains(&v2)
                && v["skipped"].to_string().contains("class prompt"),
            "{v:#}"
        );
    };
    skipped_v2(&w);
    // Another class decides v2 with no evidence of it: missing evidence.
    let o = decide("other");
    assert_eq!(o.status.code(), Some(4), "{}", text(&o));
    skipped_v2(&w);
}
