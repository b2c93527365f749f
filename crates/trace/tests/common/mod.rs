//! Helpers shared by the integration tests: stores with known content, and
//! an "attacker" who edits the database behind the store's back.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

use ratchet_trace::{CommitId, EventDraft, Score, Store, StoreOptions, TestRun};

pub fn commit(n: u8) -> CommitId {
    CommitId::parse(&format!("{n:02x}").repeat(20)).expect("valid commit")
}

/// A store in a fresh temporary directory.
pub fn new_store() -> (tempfile::TempDir, Store) {
    new_store_with(StoreOptions::default())
}

pub fn new_store_with(options: StoreOptions) -> (tempfile::TempDir, Store) {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = Store::create(dir.path().join("store"), options).expect("create store");
    (dir, store)
}

/// Appends `n` events cycling through notes, scores and test runs.
pub fn fill(store: &mut Store, n: usize) {
    let drafts: Vec<EventDraft> = (0..n).map(mixed_draft).collect();
    store.append_batch(drafts).expect("append");
}

pub fn mixed_draft(i: usize) -> EventDraft {
    match i % 3 {
        0 => EventDraft::json("note", &serde_json::json!({"i": i, "marker": format!("MARK{i:06}")}))
            .expect("json")
            .session("s1"),
        1 => Score::new(commit((i % 4) as u8), format!("task-{}", i % 7), "acc", (i % 10) as f64 / 10.0)
            .to_draft()
            .expect("score"),
        _ => TestRun {
            commit: commit((i % 4) as u8),
            suite: "unit".into(),
            passed: i as u64,
            failed: 0,
            skipped: 1,
            duration_ms: 12.5,
        }
        .to_draft()
        .expect("test run"),
    }
}

pub fn db_path(store_dir: &Path) -> PathBuf {
    store_dir.join(ratchet_trace::DB_FILE)
}

/// A raw connection with the append-only triggers dropped: what someone with
/// write access to the file can do.
pub fn attacker(store_dir: &Path) -> rusqlite::Connection {
    let c = rusqlite::Connection::open(db_path(store_dir)).expect("raw open");
    c.busy_timeout(std::time::Duration::from_secs(30)).expect("busy");
    for t in ["events", "scores", "test_runs", "meta"] {
        c.execute_batch(&format!(
            "DROP TRIGGER IF EXISTS {t}_no_update; DROP TRIGGER IF EXISTS {t}_no_delete; DROP TRIGGER IF EXISTS {t}_no_replace;"
        ))
        .expect("drop triggers");
    }
    c
}
