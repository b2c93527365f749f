//! A store written by layout version 1 (tests/fixtures/v1, made by
//! `examples/write_fixture.rs`) must open and verify in every later version:
//! the hashed layout is a compatibility promise.

use ratchet_trace::{AsOf, Checkpoint, CommitId, Store, StoreOptions, VerifyOptions, WriterKey};

fn fixture() -> (tempfile::TempDir, std::path::PathBuf) {
    let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/v1");
    let tmp = tempfile::tempdir().expect("tempdir");
    // Copy: opening writes WAL files, and the committed fixture stays pristine.
    let dst = tmp.path().join("v1");
    std::fs::create_dir_all(dst.join("store")).expect("mkdir");
    for f in ["checkpoint", "writer.key", "store/trace.db"] {
        std::fs::copy(src.join(f), dst.join(f)).expect("copy fixture");
    }
    (tmp, dst)
}

#[test]
fn v1_fixture_opens_and_verifies_with_key_and_checkpoint() {
    let (_t, dir) = fixture();
    let key = WriterKey::from_hex(&std::fs::read_to_string(dir.join("writer.key")).expect("key"))
        .expect("parse key");
    let cp = Checkpoint::read(dir.join("checkpoint")).expect("checkpoint");
    let store = Store::open(dir.join("store"), StoreOptions::default()).expect("open v1 store");
    assert_eq!(store.writer_key_id(), Some(key.id_hex().as_str()));
    let r = store
        .verify_with(&VerifyOptions::default().key(key).checkpoint(cp.clone()))
        .expect("verify");
    assert!(r.is_valid(), "{r:?}");
    assert_eq!((r.size, r.head), (cp.size, cp.head));
    assert_eq!(cp.size, 8);
}

#[test]
fn v1_fixture_reads_back_its_content() {
    let (_t, dir) = fixture();
    let key = WriterKey::from_hex(&std::fs::read_to_string(dir.join("writer.key")).expect("key"))
        .expect("parse key");
    let store = Store::open(dir.join("store"), StoreOptions::default()).expect("open");
    assert!(
        matches!(
            store.verified(&VerifyOptions::default()),
            Err(ratchet_trace::Error::MacsUnchecked { .. })
        ),
        "a keyed store is not read without its key"
    );
    let view = store
        .verified(&VerifyOptions::default().key(key))
        .expect("v1 verifies");
    let a = CommitId::parse(&"1".repeat(40)).expect("a");
    let b = CommitId::parse(&"2".repeat(40)).expect("b");
    let st = view
        .commit_stats_for(&a, "accuracy", AsOf::Head)
        .expect("a has scores");
    assert_eq!((st.n, st.mean, st.variance), (3, 0.75, Some(0.0625)));
    let runs = view.test_runs(&a, AsOf::Head);
    assert_eq!(runs.len(), 1);
    assert_eq!(
        (runs[0].1.passed, runs[0].1.failed, runs[0].1.skipped),
        (41, 1, 2)
    );
    let mut merged = Vec::new();
    view.each_score(0, &mut |r| {
        if r.commit == b.as_str() && r.scorer == "accuracy" {
            merged.push((r.holdout, r.origin_store.is_some()));
        }
    });
    assert_eq!(
        merged,
        vec![(true, true); 2],
        "b's two holdout scores, merged"
    );
    let first = store.event_by_seq(1).expect("read").expect("first");
    assert_eq!(first.payload_json().expect("json")["text"], "naïve ✓");
    let last = store.event_by_seq(8).expect("read").expect("last");
    assert_eq!(
        last.origin.as_ref().map(|o| o.seq),
        Some(3),
        "merged provenance kept"
    );
}

fn user_version(db: &std::path::Path) -> i64 {
    rusqlite::Connection::open(db)
        .and_then(|c| c.pragma_query_value(None, "user_version", |r| r.get(0)))
        .expect("user_version")
}

fn objects(db: &std::path::Path, kind: &str) -> Vec<String> {
    rusqlite::Connection::open(db)
        .and_then(|c| {
            c.prepare(&format!(
                "SELECT name FROM sqlite_schema WHERE type = '{kind}' AND sql IS NOT NULL ORDER BY name"
            ))?
                .query_map([], |r| r.get(0))?
                .collect()
        })
        .expect("schema objects")
}

fn triggers(db: &std::path::Path) -> Vec<String> {
    objects(db, "trigger")
}

/// Schema version 2 dropped the per-row insert guards. A version-1 store is
/// read as it is when opened read-only, and upgraded in place (no row
/// touched: the key and the checkpoint still verify it) when opened for
/// writing; it then takes appends.
#[test]
fn v1_fixture_is_read_as_is_and_upgraded_on_a_writable_open() {
    let (_t, dir) = fixture();
    let db = dir.join("store").join(ratchet_trace::DB_FILE);
    let key = WriterKey::from_hex(&std::fs::read_to_string(dir.join("writer.key")).expect("key"))
        .expect("parse key");
    let cp = Checkpoint::read(dir.join("checkpoint")).expect("checkpoint");
    let check = || {
        VerifyOptions::default()
            .key(key.clone())
            .checkpoint(cp.clone())
    };

    let ro = Store::open_read_only(dir.join("store"), StoreOptions::default()).expect("open ro");
    let scanned = ro
        .verified(&check())
        .expect("v1 verifies as it is")
        .commit_stats("accuracy", AsOf::Head);
    assert_eq!(scanned.len(), 2);
    drop(ro);
    assert_eq!(user_version(&db), 1, "a read-only open changes nothing");
    assert_eq!(triggers(&db).len(), 12);
    assert!(objects(&db, "index").contains(&"events_by_origin".to_string()));

    let mut store = Store::open(
        dir.join("store"),
        StoreOptions::default().writer_key(key.clone()),
    )
    .expect("open");
    assert_eq!(user_version(&db), ratchet_trace::SCHEMA_VERSION);
    let left = triggers(&db);
    assert_eq!(left.len(), 9, "{left:?}");
    assert!(
        left.iter()
            .all(|t| !t.ends_with("_no_replace") || t == "meta_no_replace")
    );
    assert!(!objects(&db, "index").contains(&"events_by_origin".to_string()));
    // Verification requires the kept statistics to be the refold of the
    // stored scores: the upgrade filled them in.
    assert_eq!(
        store
            .verified(&check())
            .expect("verifies after the upgrade")
            .commit_stats("accuracy", AsOf::Head),
        scanned,
        "the upgrade leaves the figures as they were"
    );
    store
        .append(
            ratchet_trace::EventDraft::json("note", &serde_json::json!({"after": "upgrade"}))
                .expect("draft"),
        )
        .expect("append after upgrade");
    let r = store.verify_with(&check()).expect("verify");
    assert!(r.is_valid(), "{r:?}");
    assert_eq!(r.size, cp.size + 1);
}

/// A version-1 store whose schema was altered is not upgraded: the open
/// fails naming the change, and the file keeps its version.
#[test]
fn an_altered_v1_store_is_refused_not_upgraded() {
    let (_t, dir) = fixture();
    let db = dir.join("store").join(ratchet_trace::DB_FILE);
    rusqlite::Connection::open(&db)
        .and_then(|c| {
            c.execute_batch("CREATE TRIGGER planted AFTER INSERT ON events BEGIN SELECT 1; END;")
        })
        .expect("plant");
    let err = Store::open(dir.join("store"), StoreOptions::default()).expect_err("refused");
    assert!(
        matches!(&err, ratchet_trace::Error::SchemaAltered { what } if what.contains("planted")),
        "{err}"
    );
    assert_eq!(user_version(&db), 1);
    assert_eq!(triggers(&db).len(), 13);
}
