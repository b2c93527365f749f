//! Helpers shared by the trace store's tests: the fixtures every crate
//! uses (from `ratchet-testkit`: stores, commits, the attacker's raw
//! edits), and stores filled with a known mix of events.
#![allow(dead_code)]

pub use ratchet_testkit::*;

use ratchet_trace::{EventDraft, FaultKind, Score, Store, TestRun};

/// The first fault a full verification of `store` finds, as (seq, kind),
/// which there must be: what a test of a tampered store checks first.
pub fn first_fault(store: &Store) -> (u64, FaultKind) {
    let f = store
        .verify()
        .expect("verify runs")
        .fault
        .expect("a fault is found");
    (f.seq, f.kind)
}

/// A new store holding `n` events of [`fill`], then `sql` (statements) run on its
/// file by the attacker (guards lifted, put back): where most tampering
/// tests start.
pub fn filled_then_edited(n: usize, sql: &str) -> (tempfile::TempDir, Store) {
    let (d, mut s) = new_store();
    fill(&mut s, n);
    attacker(s.dir()).execute_batch(sql).expect(sql);
    (d, s)
}

/// Appends `n` events cycling through notes, scores and test runs.
pub fn fill(store: &mut Store, n: usize) {
    let drafts: Vec<EventDraft> = (0..n).map(mixed_draft).collect();
    store.append_batch(drafts).expect("append");
}

/// The `i`th event of [`fill`]: a note, a score or a test run.
pub fn mixed_draft(i: usize) -> EventDraft {
    match i % 3 {
        0 => EventDraft::json(
            "note",
            &serde_json::json!({"i": i, "marker": format!("MARK{i:06}")}),
        )
        .expect("json")
        .session("s1"),
        1 => Score::new(
            commit((i % 4) as u8),
            format!("task-{}", i % 7),
            "acc",
            (i % 10) as f64 / 10.0,
        )
        .to_draft()
        .expect("score"),
        _ => TestRun {
            commit: commit((i % 4) as u8),
            suite: "unit".into(),
            passed: i as u64,
            failed: 0,
            skipped: 1,
            duration_ms: 12.5,
            failures: Vec::new(),
        }
        .to_draft()
        .expect("test run"),
    }
}

/// Statistics as their bits: `==` on `f64` would let `-0.0` equal `0.0`.
pub fn bits(
    stats: &[ratchet_trace::CommitStats],
) -> Vec<(String, u64, u64, Option<u64>, u64, u64)> {
    stats
        .iter()
        .map(|s| {
            (
                s.commit.to_string(),
                s.n,
                s.mean.to_bits(),
                s.variance.map(f64::to_bits),
                s.min.to_bits(),
                s.max.to_bits(),
            )
        })
        .collect()
}
