//! heal never checks out a commit that would write into the store or over
//! files it did not write.

use crate::common::text;
use crate::*;

/// v1 (0.85), a best-scored v2 authored by the attacker, v3 deployed
/// (0.90) whose live scores fall; an alarm on v3 recorded.
pub(crate) fn heal_world(v2_files: &[Entry<'_>]) -> (World, [String; 3]) {
    let w = World::new();
    let v1 = w.commit_entries(
        &[
            ("prompt.txt", b"v1", BLOB),
            (".gitignore", b"local.cfg\n", BLOB),
        ],
        "v1",
    );
    let v2 = w.commit_entries(v2_files, "v2");
    let v3 = w.commit_entries(
        &[
            ("prompt.txt", b"v3", BLOB),
            (".gitignore", b"local.cfg\n", BLOB),
        ],
        "v3",
    );
    w.checkout_head();
    w.init();
    let mut lines = String::new();
    for (c, mean) in [(&v1, 0.85), (&v2, 0.95), (&v3, 0.90)] {
        lines.push_str(&score_lines(c, "quality", 0..100, |t| {
            mean + (f64::from(t % 11) - 5.0) * 0.004
        }));
    }
    let o = w.keyed(&["append"], &lines);
    assert!(o.status.success(), "{}", text(&o));
    let from = w.size();
    let live = score_lines(&v3, "quality", 100..160, |t| 0.60 + f64::from(t % 3) * 0.01);
    let o = w.keyed(&["append"], &live);
    assert!(o.status.success(), "{}", text(&o));
    let o = w.keyed(
        &[
            "watch",
            "--commit",
            &v3,
            "--scorer",
            "quality",
            "--from",
            &from.to_string(),
            "--record",
        ],
        "",
    );
    assert_eq!(o.status.code(), Some(1), "an alarm: {}", text(&o));
    w.save_checkpoint();
    (w, [v1, v2, v3])
}

fn heal_skips_a_commit_tracking(path: &str) {
    let (w, [v1, v2, _]) = heal_world(&[
        ("prompt.txt", b"v2", BLOB),
        (path, b"attacker's bytes", BLOB),
    ]);
    let o = w.keyed(&["heal", "--json"], "");
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
    let o = w.keyed(&["heal", "--json"], "");
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
    assert_eq!(v["chosen"], v1.as_str(), "{v:#}");
    assert!(v["skipped"].to_string().contains(&v2), "{v:#}");
    assert_eq!(
        std::fs::read(w.root().join("local.cfg")).expect("read"),
        b"mine"
    );
}

/// Heals and expects v2 (which carries a link into the store) skipped.
fn heal_must_skip_link(v2_extra: &[Entry<'_>]) {
    let mut files: Vec<Entry<'_>> = vec![("prompt.txt", b"v2", BLOB)];
    files.extend_from_slice(v2_extra);
    let (w, [v1, v2, _]) = heal_world(&files);
    let o = w.keyed(&["heal", "--json"], "");
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
