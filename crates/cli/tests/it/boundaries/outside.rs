//! Inputs outside the tree a checkout writes: links that leave the work
//! tree (and come back through a link, or through `/proc`), refs above a
//! promotion ref's name, other work trees of the same repository, and a
//! marker replayed by someone without the writer key.

use std::path::Path;

use super::heal::heal_then_return_to;
use super::*;
use crate::common::text;

/// v1 (0.85), a best-scored v2 (built by `v2_files` from the work tree's
/// root), v3 deployed (0.90) whose live scores fall; an alarm on v3
/// recorded. Keyed.
fn heal_world(v2_files: impl Fn(&Path) -> Vec<(String, Vec<u8>, i32)>) -> (World, [String; 3]) {
    let w = World::with_key(true);
    let v1 = w.commit_entries(&[("prompt.txt", b"v1", BLOB)], "v1");
    let files = v2_files(&w.root());
    let entries: Vec<Entry<'_>> = files
        .iter()
        .map(|(p, b, m)| (p.as_str(), b.as_slice(), *m))
        .collect();
    let v2 = w.commit_entries(&entries, "v2");
    let v3 = w.commit_entries(&[("prompt.txt", b"v3", BLOB)], "v3");
    w.checkout_head();
    w.init();
    record_alarm(&w, &[(&v1, 0.85), (&v2, 0.95), (&v3, 0.90)], &v3);
    (w, [v1, v2, v3])
}

/// Heals (from `cwd` below the root, if given) and expects v2, whose
/// `out` is a link that reaches the store, skipped.
fn heal_must_skip_out_link(
    v2_extra: impl Fn(&Path) -> Vec<(String, Vec<u8>, i32)>,
    cwd: Option<&str>,
) {
    let (w, [v1, v2, _]) = heal_world(|root| {
        let mut files = vec![("prompt.txt".to_string(), b"v2".to_vec(), BLOB)];
        files.extend(v2_extra(root));
        files
    });
    let root = w.root();
    let dir = match cwd {
        Some(sub) => {
            std::fs::create_dir_all(root.join(sub)).expect("cwd");
            root.join(sub)
        }
        None => root.clone(),
    };
    let o = w.cmd_in(&dir, &["heal", "--json"], "");
    let out = text(&o);
    // Where `out` leads a process running in the work tree's root.
    let through = std::process::Command::new("ls")
        .current_dir(&root)
        .arg("-a")
        .arg("out/")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).to_string())
        .unwrap_or_default();
    let link = std::fs::read_link(root.join("out")).ok();
    assert!(
        w.head_commit() == v1 && std::fs::symlink_metadata(root.join("out")).is_err(),
        "heal checked out {} (v2 is {v2}, v1 {v1}); the link `out` -> {link:?} lists, from the work tree's root: {through:?}\n{out}",
        w.head_commit()
    );
}

fn link(path: &str, target: &str) -> (String, Vec<u8>, i32) {
    (path.to_string(), target.as_bytes().to_vec(), LINK)
}

fn blob(path: &str, bytes: &[u8]) -> (String, Vec<u8>, i32) {
    (path.to_string(), bytes.to_vec(), BLOB)
}

/// `link_may_reach` stops looking for other links of the commit once the
/// target has left the work tree (`..` at its root): `../repo/a/../../.ratchet`
/// re-enters the work tree by its own name, then goes through the tree
/// link `a -> sub/deeper`. Resolved as text it is `<parent>/.ratchet`
/// (nothing there); the system follows `a` and lands in the store.
#[test]
fn heal_skips_a_link_that_leaves_the_work_tree_and_reenters_through_a_tree_link() {
    heal_must_skip_out_link(
        |_| {
            vec![
                blob("sub/deeper/keep.txt", b"x"),
                link("a", "sub/deeper"),
                link("out", "../repo/a/../../.ratchet"),
            ]
        },
        None,
    );
}

/// The same through an absolute target: an absolute target is never
/// checked against the commit's other links.
#[test]
fn heal_skips_an_absolute_link_into_the_store_through_a_tree_link() {
    heal_must_skip_out_link(
        |root| {
            vec![
                blob("sub/deeper/keep.txt", b"x"),
                link("a", "sub/deeper"),
                link(
                    "out",
                    &format!("{}/a/../../.ratchet", root.to_str().expect("utf8")),
                ),
            ]
        },
        None,
    );
}

/// `/proc` is refused by `target.starts_with("/proc")`, a test on the
/// target as written: `/../proc/self/cwd/.ratchet` is the same path (`..`
/// at the root is the root) but does not start with `/proc`. Run from a
/// subdirectory, the heal's own canonicalisation of `/proc/self/cwd`
/// resolves to that subdirectory, not the store; any process later run
/// from the work tree's root (CI, the deploy hook) reaches the store
/// through `out`.
#[test]
fn heal_skips_a_proc_link_written_with_a_leading_parent_dir() {
    heal_must_skip_out_link(
        |_| vec![link("out", "/../proc/self/cwd/.ratchet")],
        Some("tools"),
    );
}

/// A ref *above* the promotion ref's name (`refs/ratchet/promoted` as a
/// loose ref file) blocks it as surely as one beneath it, but
/// `check_ref_writable` looks only beneath: the promotion is recorded,
/// then git cannot write the ref; every later command on the class
/// records a restoration that cannot be made either.
#[test]
fn a_ref_above_the_promotion_ref_blocks_it_before_anything_is_recorded() {
    let w = World::with_key(true);
    let base = w.commit_entries(&[("prompt.txt", b"v1", BLOB)], "v1");
    let cand = w.commit_entries(&[("prompt.txt", b"v2", BLOB)], "v2");
    w.checkout_head();
    w.init();
    std::fs::write(w.store().join("policy.toml"), policy_text()).expect("policy");
    let mut lines = score_lines(&base, "accuracy", 0..200, |t| {
        0.80 + f64::from(t % 7) * 0.01
    });
    lines.push_str(&score_lines(&cand, "accuracy", 0..200, |t| {
        0.70 + f64::from(t % 5) * 0.01
    }));
    let o = w.cmd(&["append"], &lines);
    assert!(o.status.success(), "{}", text(&o));
    // The attacker (who writes `.git`): a loose ref named
    // `refs/ratchet/promoted`.
    let refs_ratchet = w.repo.commondir().join("refs/ratchet");
    std::fs::create_dir_all(&refs_ratchet).expect("dir");
    std::fs::write(refs_ratchet.join("promoted"), format!("{cand}\n")).expect("plant");
    let repo_s = w.root().to_str().expect("utf8").to_string();
    let mut outputs = Vec::new();
    for _ in 0..2 {
        // `base` is the better commit: promote it.
        let o = gate(&w, &cand, &base, &["--record-promotion", &repo_s]);
        outputs.push(format!("exit {:?}: {}", o.status.code(), text(&o)));
    }
    let promotions = w.events("promotion");
    assert!(
        promotions.is_empty(),
        "{} promotion event(s) recorded for a ref git cannot write: {:#?}\n{}",
        promotions.len(),
        promotions
            .iter()
            .map(|e| e["payload"].clone())
            .collect::<Vec<_>>(),
        outputs.join("\n")
    );
}

/// The markers live in the common git directory, shared by every linked
/// work tree of the repository, but each work tree has its own store
/// (`Store::discover` stops at the work tree's `.git` file). A heal that
/// died between its record and its checkout in the main work tree loses
/// its marker to the next heal run in any other work tree (its store
/// holds no such checkout: "stale"), and the main work tree is never
/// brought to what its trace says.
#[cfg(feature = "crash-hooks")]
#[test]
fn a_heal_in_another_work_tree_does_not_discard_this_work_trees_pending_checkout() {
    let (w, [_, v2, v3]) = heal_world(|_| vec![blob("prompt.txt", b"v2")]);
    // A linked work tree with its own store.
    let other = w.dir.path().join("other");
    w.repo.worktree("other", &other, None).expect("worktree");
    let o = ratchet(&other, &["init"], "");
    assert!(o.status.success(), "{}", text(&o));
    // The heal in the main work tree dies after recording its checkout.
    let key = w.key_s();
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_ratchet"))
        .current_dir(w.root())
        .args(["heal", "--key-file", key.as_str()])
        .env("RATCHET_CRASH_AT", "heal:recorded")
        .env_remove("RATCHET_STORE")
        .output()
        .expect("spawn");
    assert_eq!(o.status.code(), None, "died: {}", text(&o));
    assert_eq!(w.head_commit(), v3);
    // Someone heals in the other work tree (nothing to heal there).
    let o = ratchet(&other, &["heal"], "");
    let other_text = format!("exit {:?}: {}", o.status.code(), text(&o));
    // The next heal here completes the recorded checkout.
    let o = w.cmd(&["heal", "--json"], "");
    assert_eq!(
        w.head_commit(),
        v2,
        "the trace here records a checkout of v2 ({v2}) that never happened, and the work tree stays at v3 ({v3}).\nother work tree's heal: {other_text}\nthis heal: exit {:?}: {}",
        o.status.code(),
        text(&o)
    );
}

/// The landing marker is in the common git directory too, and the next
/// merge in *any* work tree takes it for its own: a merge in a linked
/// work tree whose branch is at the same commit as the interrupted
/// landing's `previous` re-attaches ITS HEAD to the other work tree's
/// branch (and the work tree the landing died in is left detached).
#[cfg(feature = "crash-hooks")]
#[test]
fn a_merge_in_another_work_tree_does_not_take_over_an_interrupted_landing() {
    let w = World::with_key(false);
    let _ = w.main_and_feature(
        &[("base.txt", b"base\n", BLOB)],
        &[
            ("base.txt", b"base\n", BLOB),
            ("feature.txt", b"new\n", BLOB),
        ],
    );
    w.init();
    // A linked work tree on its own branch `other`, at main's tip.
    let other = w.dir.path().join("other");
    w.repo.worktree("other", &other, None).expect("worktree");
    let o = ratchet(&other, &["init"], "");
    assert!(o.status.success(), "{}", text(&o));
    // A landing into main dies with HEAD detached.
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_ratchet"))
        .current_dir(w.root())
        .args(["merge", "feature", "--into", "main", "--cmd", "true"])
        .env("RATCHET_CRASH_AT", "merge:detached")
        .env_remove("RATCHET_STORE")
        .output()
        .expect("spawn");
    assert_eq!(o.status.code(), None, "died: {}", text(&o));
    // A merge in the other work tree, into its own branch.
    let o = ratchet(
        &other,
        &["merge", "feature", "--into", "other", "--cmd", "true"],
        "",
    );
    let other_text = format!("exit {:?}: {}", o.status.code(), text(&o));
    let other_repo = Repository::open(&other).expect("open other");
    let other_head = other_repo
        .find_reference("HEAD")
        .ok()
        .and_then(|h| h.symbolic_target().ok().flatten().map(str::to_string));
    assert_eq!(
        other_head.as_deref(),
        Some("refs/heads/other"),
        "the other work tree's HEAD was moved by a recovery of a landing it never made: {other_text}"
    );
    // And the landing here is still completed by the next merge here.
    let o = w.run(&["merge", "feature", "--into", "main", "--cmd", "true"], "");
    assert_eq!(
        w.head_name().as_deref(),
        Some("refs/heads/main"),
        "this work tree's HEAD is left detached: exit {:?}: {}\nother: {other_text}",
        o.status.code(),
        text(&o)
    );
}

/// A person put their branch back after a completed heal (the marker was
/// removed). Someone who writes `.git` plants a marker naming that heal
/// (`after_seq` 0, `head_was` = the branch's commit, `to` = the heal's
/// target): the next heal "completes" a checkout that had completed,
/// moving the person's work tree and recording a keyed `checkout` event
/// the planter could not write.
#[test]
fn a_replayed_checkout_marker_does_not_redo_a_completed_heal() {
    let (w, [_, v2, v3]) = heal_world(|_| vec![blob("prompt.txt", b"v2")]);
    let branch = w.head_name().expect("on a branch");
    heal_then_return_to(&w, &branch, &v2, &v3);
    std::fs::write(
        w.repo.commondir().join("ratchet-checkout.pending"),
        serde_json::json!({"after_seq": 0, "head_was": v3, "to": v2}).to_string(),
    )
    .expect("plant");
    let o = w.cmd(&["heal", "--json"], "");
    assert!(
        w.head_name().as_deref() == Some(branch.as_str()) && w.head_commit() == v3,
        "heal exit {:?} moved HEAD to {:?} at {} (v2 {v2}); checkout events now {}: {}",
        o.status.code(),
        w.head_name(),
        w.head_commit(),
        w.events("checkout").len(),
        text(&o)
    );
}

/// HEAD at a commit that tracks a file of the store makes every heal
/// refuse (leaving it would delete the file): the refusal says so, names
/// the commit checked out now, and changes nothing.
#[test]
fn a_head_that_tracks_the_store_is_named_as_the_reason_heal_cannot_move() {
    let w = World::with_key(true);
    let v1 = w.commit_entries(&[("prompt.txt", b"v1", BLOB)], "v1");
    w.checkout_head();
    w.init();
    std::fs::write(w.store().join("policy.toml"), policy_text()).expect("policy");
    let v3 = w.commit_entries(
        &[
            ("prompt.txt", b"v3", BLOB),
            (".ratchet/policy.toml", policy_text().as_bytes(), BLOB),
        ],
        "v3: track the policy",
    );
    w.checkout_head();
    record_alarm(&w, &[(&v1, 0.85), (&v3, 0.90)], &v3);
    let size = w.size();
    let o = w.cmd(&["heal"], "");
    let out = text(&o);
    assert_ne!(o.status.code(), Some(0), "{out}");
    assert!(
        out.contains("checked out now") && out.contains(&v3),
        "the refusal names HEAD's commit: {out}"
    );
    assert_eq!(w.head_commit(), v3);
    assert_eq!(w.size(), size, "nothing recorded");
    assert_eq!(
        std::fs::read_to_string(w.store().join("policy.toml"))
            .ok()
            .as_deref(),
        Some(policy_text().as_str())
    );
}
