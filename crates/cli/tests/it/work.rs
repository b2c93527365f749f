//! `ratchet verify` and `ratchet merge` as a person runs them.

use crate::common;

use std::path::Path;

use common::{ratchet, text};
use git2::Repository;
use ratchet_testkit::git::repo_with_branches;

/// A repository on `main` (a.txt x=1, b.txt y=1) with branches `a` (x=2)
/// and `b` (y=2), and a store in `.ratchet` (ignored).
fn repo(dir: &Path) -> Repository {
    let repo = repo_with_branches(
        dir,
        &[
            ("a.txt", Some("x=1\n")),
            ("b.txt", Some("y=1\n")),
            (".gitignore", Some(".ratchet\n")),
        ],
        &[("a", "a.txt", "x=2\n"), ("b", "b.txt", "y=2\n")],
    );
    assert!(ratchet(dir, &["init"], "").status.success());
    repo
}

const BUILD: &str = r#"sh -c 'test "$(cat a.txt)$(cat b.txt)" != x=2y=2'"#;

#[test]
fn verify_reports_each_command_and_exits_as_the_gate_does() {
    let d = tempfile::tempdir().expect("tempdir");
    repo(d.path());
    let ok = ratchet(d.path(), &["verify", "--cmd", "cat a.txt"], "");
    assert_eq!(ok.status.code(), Some(0), "{}", text(&ok));
    assert!(
        text(&ok).contains("ok   cat a.txt: exit 0"),
        "{}",
        text(&ok)
    );
    // The store directory is not part of what is verified.
    let ls = ratchet(
        d.path(),
        &["verify", "--cmd", "sh -c 'test ! -e .ratchet'"],
        "",
    );
    assert_eq!(ls.status.code(), Some(0), "{}", text(&ls));
    let bad = ratchet(
        d.path(),
        &["verify", "branch-a-does-not-exist", "--cmd", "true"],
        "",
    );
    assert_eq!(bad.status.code(), Some(2), "{}", text(&bad));
    let fail = ratchet(
        d.path(),
        &[
            "--json",
            "verify",
            "a",
            "--cmd",
            "sh -c 'echo boom >&2; exit 7'",
        ],
        "",
    );
    assert_eq!(fail.status.code(), Some(1), "{}", text(&fail));
    let v: serde_json::Value = serde_json::from_slice(&fail.stdout).expect("one JSON document");
    assert_eq!(v["verification"]["commands"][0]["exit"]["code"], 7);
    assert_eq!(v["verification"]["commands"][0]["stderr_tail"], "boom\n");
    assert_eq!(v["verification"]["passed"], false);
    let unbalanced = ratchet(d.path(), &["verify", "--cmd", "sh -c 'oops"], "");
    assert_eq!(unbalanced.status.code(), Some(2));
    assert!(
        text(&unbalanced).contains("unbalanced quotes"),
        "{}",
        text(&unbalanced)
    );
    let timeout = ratchet(
        d.path(),
        &["verify", "--timeout", "1", "--cmd", "sleep 30"],
        "",
    );
    assert_eq!(timeout.status.code(), Some(1));
    assert!(text(&timeout).contains("timed out"), "{}", text(&timeout));
}

#[test]
fn merge_lands_what_passes_and_names_a_semantic_conflict() {
    let d = tempfile::tempdir().expect("tempdir");
    let repo = repo(d.path());
    let before = repo.refname_to_id("refs/heads/main").expect("main");
    let out = ratchet(d.path(), &["merge", "a", "b", "--cmd", BUILD], "");
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let t = text(&out);
    assert!(t.contains("a: landed on main"), "{t}");
    assert!(t.contains("b: SEMANTIC CONFLICT"), "{t}");
    let tip = repo
        .find_commit(repo.refname_to_id("refs/heads/main").expect("main"))
        .expect("tip");
    assert_eq!(tip.parent_id(0).expect("parent"), before);
    let log = ratchet(d.path(), &["--json", "log", "--kind", "merge"], "");
    let v: serde_json::Value = serde_json::from_slice(&log.stdout).expect("json");
    assert_eq!(v["events"].as_array().map(Vec::len), Some(2), "{v}");
    // A dirty work tree is refused with a hint.
    std::fs::write(d.path().join("a.txt"), "by hand\n").expect("edit");
    let dirty = ratchet(d.path(), &["merge", "b", "--cmd", "true"], "");
    assert_eq!(dirty.status.code(), Some(2));
    assert!(
        text(&dirty).contains("uncommitted changes") && text(&dirty).contains("stash"),
        "{}",
        text(&dirty)
    );
}
