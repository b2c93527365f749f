//! Red team, round hred: RATCHET_KEY_FILE, --server, `{undecided}`, the
//! benchmarks gate, the report's change points.

use crate::common;

use std::path::Path;
use std::process::{Command, Output, Stdio};

use common::text;

/// `ratchet args…` in `cwd` with RATCHET_KEY_FILE set to `key` (or unset).
fn with_key_env(cwd: &Path, key: Option<&Path>, args: &[&str]) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_ratchet"));
    c.current_dir(cwd)
        .args(args)
        .env_remove("RATCHET_STORE")
        .env_remove("RATCHET_SERVER")
        .env_remove("RATCHET_TOKEN_FILE")
        .env_remove("RATCHET_KEY_FILE")
        .stdin(Stdio::null());
    if let Some(k) = key {
        c.env("RATCHET_KEY_FILE", k);
    }
    c.output().expect("run ratchet")
}

/// Two keyed stores `a` and `b`, one event in `a`; their keys beside them.
fn two_keyed_stores() -> tempfile::TempDir {
    let d = tempfile::tempdir().expect("tempdir");
    for s in ["a", "b"] {
        let o = with_key_env(
            d.path(),
            None,
            &["--store", s, "init", "--keyed", "--key-file", &format!("{s}.key")],
        );
        assert!(o.status.success(), "{}", text(&o));
    }
    let commit = "0123456789abcdef0123456789abcdef01234567";
    let o = with_key_env(
        d.path(),
        Some(&d.path().join("a.key")),
        &[
            "--store", "a", "record-score", "--commit", commit, "--task", "t", "--scorer", "s",
            "--value", "1",
        ],
    );
    assert!(o.status.success(), "{}", text(&o));
    d
}

/// `verify-chain` reads RATCHET_KEY_FILE like every other command (it
/// asked for --key-file with the right key in the environment).
#[test]
fn verify_chain_takes_the_key_from_the_environment() {
    let d = two_keyed_stores();
    let o = with_key_env(d.path(), Some(&d.path().join("a.key")), &["--store", "a", "verify-chain"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(text(&o).contains("MACs checked"), "{}", text(&o));
}

/// A key of another store is named as such before anything is read: it
/// used to read as "MAC does not match (written without the writer key)"
/// (`status`, `gate`) and `best` advised restoring the store from a
/// trusted copy — a wrong key made an intact store look altered; on an
/// empty store `status` said "verifies, MACs checked" under the wrong key.
#[test]
fn a_key_of_another_store_is_said_to_be_one() {
    let d = two_keyed_stores();
    let wrong = d.path().join("b.key");
    for args in [
        vec!["--store", "a", "status"],
        vec!["--store", "a", "status", "--json"],
        vec!["--store", "a", "best", "--scorer", "s"],
        vec!["--store", "a", "verify-chain"],
        vec!["--store", "a", "log"],
        vec!["--store", "b", "status"],
    ] {
        let key = if args[1] == "b" { d.path().join("a.key") } else { wrong.clone() };
        let o = with_key_env(d.path(), Some(&key), &args);
        let said = text(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {said}");
        assert!(said.contains("does not match this store's key"), "{args:?}: {said}");
        assert!(!said.contains("MAC does not match"), "{args:?}: {said}");
        assert!(!said.contains("trusted copy"), "{args:?}: {said}");
    }
}
