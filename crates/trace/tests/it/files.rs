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

/// The directory the private-modes child works in (set only for the child).
#[cfg(unix)]
const PRIVATE_MODES_CHILD_DIR: &str = "RATCHET_PRIVATE_MODES_CHILD_DIR";

/// The mode bits of `path` (permissions only).
#[cfg(unix)]
fn mode_of(path: &std::path::Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .permissions()
        .mode()
        & 0o777
}

/// Entry point of the child of
/// [`what_a_store_makes_is_its_owners_only_whatever_the_umask`] (a no-op in
/// a normal run): makes a keyed store, a blob and a checkpoint under the
/// umask its parent set, and checks every mode while the store is open
/// (its -wal and -shm files exist only then).
#[cfg(unix)]
#[test]
fn private_modes_child_entry() {
    let Ok(root) = std::env::var(PRIVATE_MODES_CHILD_DIR) else {
        return;
    };
    let root = std::path::PathBuf::from(root);
    // The umask the parent set is in force here: a plain file is 0644.
    let plain = root.join("plain");
    std::fs::write(&plain, b"").expect("plain");
    assert_eq!(mode_of(&plain), 0o644, "the umask is 022");

    let key_path = root.join("writer.key");
    let key = WriterKey::create_file(&key_path).expect("key");
    let dir = root.join("deep/store");
    let mut store = Store::create(&dir, StoreOptions::default().writer_key(key)).expect("create");
    fill(&mut store, 3);
    let blob = store
        .put_blob(b"a payload too big to inline")
        .expect("blob");
    let hex = blob.to_hex();
    let checkpoint = root.join("elsewhere.checkpoint");
    store
        .checkpoint()
        .expect("checkpoint")
        .write_atomic(&checkpoint)
        .expect("write");
    let db = common::db_path(&dir);
    let wal = dir.join(format!("{}-wal", ratchet_trace::DB_FILE));
    let shm = dir.join(format!("{}-shm", ratchet_trace::DB_FILE));
    assert!(wal.is_file() && shm.is_file(), "the store is in WAL mode");
    let blobs = dir.join("blobs");
    for (path, mode) in [
        (dir.clone(), 0o700),
        (db, 0o600),
        (wal, 0o600),
        (shm, 0o600),
        (dir.join(".gitignore"), 0o600),
        (blobs.clone(), 0o700),
        (blobs.join(&hex[..2]), 0o700),
        (blobs.join(&hex[..2]).join(&hex[2..]), 0o600),
        (checkpoint.clone(), 0o600),
        (key_path, 0o600),
    ] {
        assert_eq!(
            mode_of(&path),
            mode,
            "{} is {:o}, not {mode:o}",
            path.display(),
            mode_of(&path)
        );
    }
    // The parents made on the way are ordinary directories.
    assert_eq!(mode_of(&root.join("deep")), 0o755);

    // What exists keeps its mode: a directory its owner made (and shares),
    // a checkpoint file replaced.
    let shared = root.join("shared");
    std::fs::create_dir(&shared).expect("shared");
    Store::create(&shared, StoreOptions::default()).expect("create in a shared directory");
    assert_eq!(
        mode_of(&shared),
        0o755,
        "an existing directory is not chmodded"
    );
    assert_eq!(mode_of(&common::db_path(&shared)), 0o600);
    std::fs::set_permissions(
        &checkpoint,
        std::os::unix::fs::PermissionsExt::from_mode(0o644),
    )
    .expect("chmod");
    fill(&mut store, 1);
    store
        .checkpoint()
        .expect("checkpoint")
        .write_atomic(&checkpoint)
        .expect("rewrite");
    assert_eq!(
        mode_of(&checkpoint),
        0o644,
        "a replaced file keeps its mode"
    );
    println!("PRIVATE-MODES-OK");
}

/// A store's directory, database (with SQLite's -wal and -shm), blobs and
/// their directories, the checkpoints ratchet writes and key files are
/// made for their owner only — 0700 and 0600 — under the usual umask 022,
/// which would make them 0755 and 0644. The umask is the process's, so
/// the work is done in a child (this test binary) started under it.
#[cfg(unix)]
#[test]
fn what_a_store_makes_is_its_owners_only_whatever_the_umask() {
    let root = tempfile::tempdir().expect("tempdir");
    let out = std::process::Command::new("sh")
        .arg("-c")
        .arg("umask 022; exec \"$0\" \"$@\"")
        .arg(std::env::current_exe().expect("test binary"))
        .args([
            "files::private_modes_child_entry",
            "--exact",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(PRIVATE_MODES_CHILD_DIR, root.path())
        .output()
        .expect("run the child");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains("PRIVATE-MODES-OK"),
        "child failed: {stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
