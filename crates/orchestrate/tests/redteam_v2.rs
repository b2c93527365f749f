//! Red team against schema version 2 (the per-commit statistics kept on
//! append), end to end through `rank_commits`: verification in the same
//! read transaction passes, and the ranking (hence heal's choice) changes.
//!
//! Both tests are expected to FAIL until the holes are fixed (see
//! `crates/trace/tests/redteam_v2.rs` for the store-level reproductions).
//! The attacker uses only the stock `sqlite3` shell and a byte editor.

use std::path::Path;
use std::process::Command;

use ratchet_trace::{CommitId, Score, Store, StoreOptions};

fn commit(n: u8) -> CommitId {
    CommitId::parse(&format!("{n:02x}").repeat(20)).expect("commit")
}

fn sqlite3(db: &Path, sql: &str) -> String {
    let out = Command::new("sqlite3")
        .arg(db)
        .arg(sql)
        .output()
        .expect("the sqlite3 shell");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .expect("utf-8")
        .trim()
        .to_string()
}

fn db(store: &Path) -> std::path::PathBuf {
    store.join(ratchet_trace::DB_FILE)
}

/// Every frame into the main file, no WAL left (every `Store` is dropped).
fn settle(store: &Path) {
    sqlite3(
        &db(store),
        "PRAGMA wal_checkpoint(TRUNCATE); PRAGMA journal_mode = DELETE;",
    );
}

/// Reorders the cell pointers of the one-page `commit_stats` table.
fn permute_commit_stats_cells(store: &Path, order: &[usize]) {
    settle(store);
    let ps: usize = sqlite3(&db(store), "PRAGMA page_size;")
        .parse()
        .expect("page size");
    let root: usize = sqlite3(
        &db(store),
        "SELECT rootpage FROM sqlite_schema WHERE name = 'commit_stats';",
    )
    .parse()
    .expect("root");
    let mut bytes = std::fs::read(db(store)).expect("read");
    let base = (root - 1) * ps;
    assert_eq!(bytes[base], 0x0a, "a leaf index page");
    let n = u16::from_be_bytes([bytes[base + 3], bytes[base + 4]]) as usize;
    assert_eq!(n, order.len());
    let ptrs: Vec<[u8; 2]> = (0..n)
        .map(|i| [bytes[base + 8 + 2 * i], bytes[base + 9 + 2 * i]])
        .collect();
    for (i, &from) in order.iter().enumerate() {
        bytes[base + 8 + 2 * i..base + 10 + 2 * i].copy_from_slice(&ptrs[from]);
    }
    std::fs::write(db(store), bytes).expect("write");
}

fn ranked(store: &mut Store) -> Vec<CommitId> {
    ratchet_orchestrate::rank_commits(store, "acc", 2, 0.95, &[])
        .expect("rank_commits verifies and ranks")
        .into_iter()
        .map(|r| r.commit)
        .collect()
}

/// Commit 1 is far better than commit 2 on `acc`; commit 3 is scored on a
/// scorer (`zzz`) whose key sorts after `acc`. With the `commit_stats` leaf
/// page's cell pointers reordered ([acc/c2, zzz/c3, acc/c1]), `PRAGMA
/// quick_check` passes (it does not check WITHOUT ROWID key order), the
/// summary comparison (a scan) passes, and the head read — a seek on
/// `scorer = 'acc'` that stops at `zzz` — never sees commit 1. `heal` ranks
/// with the same read, so it would check out commit 2.
#[test]
fn break_rank_commits_loses_the_best_commit_to_a_misordered_page() {
    let tmp = tempfile::tempdir().expect("tmp");
    let dir = tmp.path().join("store");
    let mut s = Store::create(&dir, StoreOptions::default()).expect("store");
    let mut scores = Vec::new();
    for i in 0..20 {
        let t = format!("t{i}");
        scores.push(Score::new(
            commit(1),
            &t,
            "acc",
            0.9 + (i % 3) as f64 * 0.01,
        ));
        scores.push(Score::new(
            commit(2),
            &t,
            "acc",
            0.4 + (i % 3) as f64 * 0.01,
        ));
    }
    scores.push(Score::new(commit(3), "t0", "zzz", 0.5));
    s.record_scores(&scores, "s").expect("scores");
    assert_eq!(ranked(&mut s), vec![commit(1), commit(2)]);
    drop(s);

    permute_commit_stats_cells(&dir, &[1, 2, 0]);

    let mut s = Store::open(&dir, StoreOptions::default()).expect("open");
    let after = ranked(&mut s);
    assert_eq!(
        after.first(),
        Some(&commit(1)),
        "rank_commits verified the trace and then ranked {after:?}: the best commit is gone"
    );
}

/// Two commits whose scores are all 0 tie; the tie goes to the smaller id
/// (commit 1). A mean stored as -0.0 (bytes edited; SQL would store an
/// integral REAL as the integer 0) compares equal to the fold's +0.0 under
/// `f64 ==`, so verification passes, but `best_commit` sorts lower bounds
/// with `total_cmp`, where -0.0 < +0.0: commit 2 now ranks first.
#[test]
fn break_rank_commits_tie_flipped_by_a_negative_zero_mean() {
    let tmp = tempfile::tempdir().expect("tmp");
    let dir = tmp.path().join("store");
    let mut s = Store::create(&dir, StoreOptions::default()).expect("store");
    let scores: Vec<Score> = [1u8, 2]
        .iter()
        .flat_map(|&c| (0..3).map(move |i| Score::new(commit(c), format!("t{i}"), "acc", 0.0)))
        .collect();
    s.record_scores(&scores, "s").expect("scores");
    assert_eq!(ranked(&mut s), vec![commit(1), commit(2)]);
    drop(s);

    let sentinel = 0.7109375_f64; // 91/128: exact in decimal and binary
    sqlite3(
        &db(&dir),
        &format!(
            "UPDATE commit_stats SET mean = {sentinel} WHERE commit_id = '{}';",
            commit(1).as_str()
        ),
    );
    settle(&dir);
    let mut bytes = std::fs::read(db(&dir)).expect("read");
    let pat = sentinel.to_bits().to_be_bytes();
    let at = bytes
        .windows(8)
        .position(|w| w == pat)
        .expect("the sentinel is on disk");
    bytes[at..at + 8].copy_from_slice(&(-0.0f64).to_bits().to_be_bytes());
    std::fs::write(db(&dir), bytes).expect("write");

    let mut s = Store::open(&dir, StoreOptions::default()).expect("open");
    let after = ranked(&mut s);
    assert_eq!(
        after,
        vec![commit(1), commit(2)],
        "rank_commits verified the trace and then flipped the tie"
    );
}
