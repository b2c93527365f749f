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
    let store = Store::open(dir.join("store"), StoreOptions::default()).expect("open");
    let a = CommitId::parse(&"1".repeat(40)).expect("a");
    let b = CommitId::parse(&"2".repeat(40)).expect("b");
    let st = store
        .commit_stats_for(&a, "accuracy", AsOf::Head)
        .expect("stats")
        .expect("a has scores");
    assert_eq!((st.n, st.mean, st.variance), (3, 0.75, Some(0.0625)));
    let runs = store.test_runs(&a, AsOf::Head).expect("runs");
    assert_eq!(runs.len(), 1);
    assert_eq!(
        (runs[0].1.passed, runs[0].1.failed, runs[0].1.skipped),
        (41, 1, 2)
    );
    let merged = store.scores(&b, "accuracy", AsOf::Head).expect("scores");
    assert_eq!(merged.len(), 2);
    assert!(merged.iter().all(|(_, s)| s.holdout));
    let first = store.event_by_seq(1).expect("read").expect("first");
    assert_eq!(first.payload_json().expect("json")["text"], "naïve ✓");
    let last = store.event_by_seq(8).expect("read").expect("last");
    assert_eq!(
        last.origin.as_ref().map(|o| o.seq),
        Some(3),
        "merged provenance kept"
    );
}
