//! What a library user does with files, without the CLI: key files, the
//! append line format, read-only stores, finding the store directory.

use crate::common;

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

/// The store a read-only child opens (set only for the child process).
const READ_ONLY_CHILD_DIR: &str = "RATCHET_READ_ONLY_CHILD_DIR";

/// Entry point of the child of
/// [`a_store_its_user_may_not_write_is_opened_read_only`] (a no-op in a
/// normal run): opens the store as an ordinary user would, with
/// [`Store::open`], and reports what it could do.
#[test]
fn read_only_child_entry() {
    let Ok(dir) = std::env::var(READ_ONLY_CHILD_DIR) else {
        return;
    };
    let mut store = Store::open(&dir, StoreOptions::default()).expect("open falls back");
    assert!(store.is_read_only(), "opened for writing");
    let report = store.verify().expect("verify");
    assert!(report.is_valid(), "{report:?}");
    assert_eq!(
        store.events_after(0, 100).expect("read").len() as u64,
        report.size
    );
    match store.append(EventDraft::raw("note", "{}")) {
        Err(Error::ReadOnly { .. }) => {}
        other => panic!("expected ReadOnly, got {other:?}"),
    }
    println!("READ-ONLY-OK {}", report.size);
}

/// File modes, not a flag, make the store read-only here: the write-protected
/// file, and the unwritable directory (where a WAL database cannot get its
/// shared-memory file and is read as immutable). Root ignores file modes, so
/// as root the child runs as `nobody` (setpriv, util-linux).
#[cfg(unix)]
#[test]
fn a_store_its_user_may_not_write_is_opened_read_only() {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    use std::process::Command;
    let set_mode = |p: &std::path::Path, mode: u32| {
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).expect("chmod");
    };
    let root = tempfile::tempdir().expect("tempdir");
    set_mode(root.path(), 0o755);
    let probe = root.path().join("probe");
    std::fs::write(&probe, b"").expect("probe");
    let as_root = std::fs::metadata(&probe).expect("meta").uid() == 0;
    // The child is this test binary, copied where `nobody` can run it.
    let exe = root.path().join("child");
    std::fs::copy(std::env::current_exe().expect("test binary"), &exe).expect("copy");
    set_mode(&exe, 0o755);

    for (case, dir_mode) in [("file", 0o777), ("directory", 0o555)] {
        let store_dir = root.path().join(case);
        let mut store = Store::create(&store_dir, StoreOptions::default()).expect("create");
        fill(&mut store, 7);
        drop(store); // the last connection folds the WAL back in and removes it
        let db = common::db_path(&store_dir);
        set_mode(&db, 0o444);
        set_mode(&store_dir, dir_mode);
        let before = std::fs::read(&db).expect("bytes");

        let args = [
            "files::read_only_child_entry",
            "--exact",
            "--nocapture",
            "--test-threads=1",
        ];
        let mut child = if as_root {
            let mut c = Command::new("setpriv");
            c.args(["--reuid=65534", "--regid=65534", "--clear-groups"])
                .arg(&exe)
                .args(args);
            c
        } else {
            let mut c = Command::new(&exe);
            c.args(args);
            c
        };
        let out = child
            .env(READ_ONLY_CHILD_DIR, &store_dir)
            .output()
            .expect("run the child (as root this needs setpriv from util-linux)");
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success() && stdout.contains("READ-ONLY-OK 7"),
            "{case}: child failed: {stdout}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(
            std::fs::read(&db).expect("bytes"),
            before,
            "{case}: written"
        );
        set_mode(&store_dir, 0o755);
    }
}
