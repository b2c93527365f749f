//! What a library user does with files, without the CLI: key files, the
//! append line format, read-only stores, finding the store directory.

mod common;

use common::{fill, new_store};
use ratchet_trace::{Error, EventDraft, Store, StoreOptions, VerifyOptions, WriterKey};

#[test]
fn a_key_file_is_created_once_read_back_and_never_overwritten() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("writer.key");
    let key = WriterKey::create_file(&path).expect("create");
    let read = WriterKey::read_file(&path).expect("read");
    assert_eq!(key.id_hex(), read.id_hex());
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&path).expect("meta").permissions().mode();
        assert_eq!(mode & 0o777, 0o600, "a key is readable by its owner only");
    }
    let before = std::fs::read(&path).expect("bytes");
    match WriterKey::create_file(&path) {
        Err(Error::KeyFileExists { path: p }) => assert_eq!(p, path),
        other => panic!("expected KeyFileExists, got {other:?}"),
    }
    assert_eq!(
        std::fs::read(&path).expect("bytes"),
        before,
        "key untouched"
    );

    // A keyed store made with it takes appends with it, and refuses them without.
    let store_dir = dir.path().join("store");
    let mut store =
        Store::create(&store_dir, StoreOptions::default().writer_key(key)).expect("create");
    fill(&mut store, 2);
    drop(store);
    let mut keyless = Store::open(&store_dir, StoreOptions::default()).expect("open");
    assert!(matches!(
        keyless.append(EventDraft::raw("note", "{}")),
        Err(Error::KeyRequired)
    ));
}

#[test]
fn a_bad_key_file_is_named_in_the_error() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("not-a-key");
    std::fs::write(&path, "hello").expect("write");
    let e = WriterKey::read_file(&path).expect_err("not hex");
    assert!(matches!(e, Error::InvalidKey { .. }), "{e:?}");
    assert!(e.to_string().contains("not-a-key"), "{e}");
    let missing = WriterKey::read_file(dir.path().join("absent")).expect_err("missing");
    assert!(matches!(missing, Error::Io { .. }), "{missing:?}");
}

#[test]
fn append_lines_parse_strictly() {
    let commit = "ab".repeat(20);
    let d = EventDraft::from_json_line(&format!(
        r#"{{"kind":"note","session":"s","commit":"{commit}","payload":{{"a":[1,2]}}}}"#
    ))
    .expect("full line");
    assert_eq!(d.kind(), "note");
    // A byte-order mark (as some editors write) is not part of the line.
    EventDraft::from_json_line("\u{feff}{\"kind\":\"note\",\"payload\":{}}").expect("BOM");
    for (bad, names) in [
        (r#"{"payload":{}}"#, "kind"),
        (r#"{"kind":"note"}"#, "payload"),
        (r#"{"kind":"note","payload":{},"sesion":"typo"}"#, "sesion"),
        (r#"{"kind":"note","payload":{},"commit":"abc"}"#, "commit"),
        ("not json", "event line"),
    ] {
        let e = EventDraft::from_json_line(bad).expect_err(bad);
        assert!(e.to_string().contains(names), "{bad}: {e}");
    }
}

#[test]
fn a_read_only_store_is_read_and_verified_but_never_written() {
    let (_dir, mut store) = new_store();
    fill(&mut store, 5);
    let store_dir = store.dir().to_path_buf();
    drop(store);
    let db = common::db_path(&store_dir);
    let before = std::fs::read(&db).expect("bytes");

    let mut ro = Store::open_read_only(&store_dir, StoreOptions::default()).expect("open");
    assert!(ro.is_read_only());
    let report = ro.verify_with(&VerifyOptions::default()).expect("verify");
    assert!(report.is_valid(), "{report:?}");
    assert_eq!(report.size, 5);
    assert_eq!(ro.events_after(0, 10).expect("events").len(), 5);
    ro.checkpoint().expect("checkpoint");
    match ro.append(EventDraft::raw("note", "{}")) {
        Err(Error::ReadOnly { path }) => assert_eq!(path, store_dir),
        other => panic!("expected ReadOnly, got {other:?}"),
    }
    drop(ro);
    assert_eq!(
        std::fs::read(&db).expect("bytes"),
        before,
        "nothing written"
    );
}

#[test]
fn the_store_directory_is_found_from_a_subdirectory_of_the_repository() {
    let dir = tempfile::tempdir().expect("tempdir");
    let repo = dir.path().join("repo");
    std::fs::create_dir_all(repo.join(".git")).expect("git");
    std::fs::create_dir_all(repo.join("a/b")).expect("sub");
    assert_eq!(Store::discover(repo.join("a/b")), repo.join(".ratchet"));
    let outside = dir.path().join("plain");
    std::fs::create_dir_all(&outside).expect("plain");
    // tempdirs live outside any repository on a test machine; the nearest
    // `.git` above wins, which for `outside` is none of ours.
    let found = Store::discover(&outside);
    assert!(found.ends_with(".ratchet"));
    assert!(!found.starts_with(&repo));
}
