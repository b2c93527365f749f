//! Fixtures shared by ratchet's criterion benchmarks: stores filled with
//! realistic rows, built once per benchmark run.

use std::path::Path;

use ratchet_trace::{CommitId, EventDraft, Score, Store, StoreOptions};

/// The commit id used for commit number `i`.
pub fn commit(i: usize) -> CommitId {
    let h = blake3::hash(&(i as u64).to_le_bytes()).to_hex();
    CommitId::parse(&h[..40]).expect("40 hex digits are a commit id")
}

/// A small JSON note, like an agent's trace event.
pub fn note(i: usize) -> EventDraft {
    EventDraft::raw(
        "note",
        format!(
            r#"{{"step":{i},"tool":"search","ok":true,"tokens":{}}}"#,
            i % 977
        ),
    )
    .session("bench")
}

/// Creates a store in `dir` holding `scores` score rows spread over `commits`
/// commits (task = row index), appended in batches of 10,000.
pub fn score_store(dir: &Path, scores: usize, commits: usize) -> Store {
    let mut store = Store::create(dir, StoreOptions::default()).expect("create bench store");
    let mut batch = Vec::with_capacity(10_000);
    for i in 0..scores {
        let value = ((i * 7919) % 1000) as f64 / 1000.0;
        let s = Score::new(commit(i % commits), format!("task-{i}"), "accuracy", value);
        batch.push(s.to_draft().expect("valid score"));
        if batch.len() == 10_000 {
            store.append_batch(batch.drain(..)).expect("append");
        }
    }
    store.append_batch(batch).expect("append");
    store
}

/// Creates a store in `dir` holding `n` notes, appended in batches of 10,000.
pub fn note_store(dir: &Path, n: usize) -> Store {
    let mut store = Store::create(dir, StoreOptions::default()).expect("create bench store");
    for start in (0..n).step_by(10_000) {
        store
            .append_batch((start..(start + 10_000).min(n)).map(note))
            .expect("append");
    }
    store
}

/// Creates a store in `dir` where a baseline and a candidate commit each
/// scored the same `tasks` tasks (scorer `accuracy`, pass/fail, candidate
/// slightly better), appended in batches of 10,000.
pub fn paired_store(dir: &Path, tasks: usize) -> (Store, CommitId, CommitId) {
    let mut store = Store::create(dir, StoreOptions::default()).expect("create bench store");
    let (base, cand) = (commit(0), commit(1));
    let mut batch = Vec::with_capacity(10_000);
    for t in 0..tasks {
        // Deterministic pseudo-random passes: baseline ~50 %, candidate ~56 %.
        let h = blake3::hash(&(t as u64).to_le_bytes());
        let (hb, hc) = (h.as_bytes()[0], h.as_bytes()[1]);
        for (c, pass) in [(&base, hb < 128), (&cand, hc < 144)] {
            let s = Score::new(
                c.clone(),
                format!("task-{t:07}"),
                "accuracy",
                f64::from(u8::from(pass)),
            );
            batch.push(s.to_draft().expect("valid score"));
        }
        if batch.len() >= 10_000 {
            store.append_batch(batch.drain(..)).expect("append");
        }
    }
    store.append_batch(batch).expect("append");
    (store, base, cand)
}

/// SQLite's own per-commit aggregate of one scorer's values (count, mean,
/// min, max, sum of squares), read from `table` (`scores`, or `scores NOT
/// INDEXED`): the yardstick of the per-commit statistics benches.
pub fn group_by_commit(
    raw: &rusqlite::Connection,
    table: &str,
    scorer: &str,
) -> Vec<(String, i64, f64, f64, f64, f64)> {
    raw.prepare_cached(&format!(
        "SELECT commit_id, count(*), avg(value), min(value), max(value), sum(value * value)
           FROM {table} WHERE scorer = ?1 GROUP BY commit_id"
    ))
    .and_then(|mut q| {
        q.query_map([scorer], |r| {
            Ok((
                r.get(0)?,
                r.get(1)?,
                r.get(2)?,
                r.get(3)?,
                r.get(4)?,
                r.get(5)?,
            ))
        })?
        .collect()
    })
    .expect("GROUP BY")
}

/// A read-only raw connection to a store's database file.
pub fn raw_connection(store: &Store) -> rusqlite::Connection {
    rusqlite::Connection::open_with_flags(
        store.dir().join(ratchet_trace::DB_FILE),
        rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY,
    )
    .expect("raw connection")
}
