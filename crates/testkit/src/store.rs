//! Commit ids, scores and stores with known content.

use std::path::Path;

use ratchet_trace::{
    CommitId, FaultKind, Score, Store, StoreOptions, TestRun, Verified, VerifyOptions,
};

/// The commit whose 20 bytes are all `n` (`commit(0xab)` is `abab…ab`).
pub fn commit(n: u8) -> CommitId {
    CommitId::parse(&format!("{n:02x}").repeat(20)).expect("valid commit")
}

/// The baseline of the two-commit tests: hex letters, so that upper-casing
/// an id changes it.
pub fn base() -> CommitId {
    commit(0xab)
}

/// The candidate of the two-commit tests (hex letters, like [`base`]).
pub fn cand() -> CommitId {
    commit(0xcd)
}

/// A score of `commit(c)` on `task` by `scorer` (version "1").
pub fn score(c: u8, task: &str, scorer: &str, value: f64) -> Score {
    Score::new(commit(c), task, scorer, value)
}

/// A run of the `unit` suite for `commit`: `passed` and `failed` tests,
/// none skipped, 9 ms, no failure named. The run the gate's required suite
/// reads.
pub fn unit_run(commit: &CommitId, passed: u64, failed: u64) -> TestRun {
    TestRun {
        commit: commit.clone(),
        suite: "unit".into(),
        passed,
        failed,
        skipped: 0,
        duration_ms: 9.0,
        failures: Vec::new(),
    }
}

/// A store at `store` in a fresh temporary directory.
pub fn new_store() -> (tempfile::TempDir, Store) {
    new_store_with(StoreOptions::default())
}

/// [`new_store`] with `options` (a writer key, a cell).
pub fn new_store_with(options: StoreOptions) -> (tempfile::TempDir, Store) {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = Store::create(dir.path().join("store"), options).expect("create store");
    (dir, store)
}

/// The store at `dir` opened again with default options.
pub fn reopen(dir: &Path) -> Store {
    Store::open(dir, StoreOptions::default()).expect("reopen")
}

/// The writer's secret in keyed tests (fixed: the tests are seeded).
pub const WRITER_SECRET: [u8; 32] = [0x5a; 32];

/// The writer key made from [`WRITER_SECRET`].
pub fn writer_key() -> ratchet_trace::WriterKey {
    ratchet_trace::WriterKey::from_secret(&WRITER_SECRET).expect("key")
}

/// The first fault a full verification finds, as (seq, kind).
pub fn fault(store: &Store) -> Option<(u64, FaultKind)> {
    store
        .verify()
        .expect("verification runs")
        .fault
        .map(|f| (f.seq, f.kind))
}

/// The store's verified view (default options): what every decision reads.
pub fn view(store: &Store) -> Verified {
    store
        .verified(&VerifyOptions::default())
        .expect("the store verifies")
}

/// The fault a refused verification names, as (seq, kind).
pub fn refused(result: ratchet_trace::Result<Verified>) -> (u64, FaultKind) {
    match result {
        Err(ratchet_trace::Error::Tampered { fault }) => (fault.seq, fault.kind),
        Err(e) => panic!("refused, but not as tampered: {e}"),
        Ok(v) => panic!(
            "verification accepted a tampered store at head {:?}",
            v.head()
        ),
    }
}
