//! Red team against schema version 2 (the per-commit statistics kept on
//! append), end to end through the ranking heal uses (`best_commit` on the
//! verified view): verification passed, and the ranking (hence heal's
//! choice) changed.
//!
//! The red team found these holes (issue 14); they are fixed, and the tests
//! pin the fixes (`crates/trace/tests/it/kept_statistics.rs` has the store-level
//! reproductions). The attacker uses only a plain SQLite client and a byte
//! editor.

use std::path::Path;

use crate::common::{ranking, record_versions_and_a_fall, three_versions};

use ratchet_drift::best_commit;
use ratchet_testkit::{commit, permute_leaf_cells};
use ratchet_trace::{CommitId, Ledger, Score, Store, StoreOptions, VerifyOptions};

/// Runs `sql` on the file the way a plain SQLite client would (no
/// ratchet connection settings) and returns each result row's first column
/// as text, one per line.
fn sqlite3(db: &Path, sql: &str) -> String {
    let c = rusqlite::Connection::open(db).expect("open the database file");
    let mut lines = Vec::new();
    for statement in sql.split(';').map(str::trim).filter(|s| !s.is_empty()) {
        let mut st = c.prepare(statement).expect(statement);
        let mut rows = st.query([]).expect(statement);
        while let Some(row) = rows.next().expect(statement) {
            let v: rusqlite::types::Value = row.get(0).expect("column");
            lines.push(match v {
                rusqlite::types::Value::Integer(i) => i.to_string(),
                rusqlite::types::Value::Real(f) => f.to_string(),
                rusqlite::types::Value::Text(t) => t,
                rusqlite::types::Value::Null => String::new(),
                rusqlite::types::Value::Blob(b) => format!("{b:?}"),
            });
        }
    }
    lines.join("\n")
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
    permute_leaf_cells(store, "commit_stats", order);
}

/// The ranking `ratchet best` shows: `best_commit` on the view a full
/// verification folds.
fn ranked(store: &Store) -> Vec<CommitId> {
    let view = store
        .verified(&VerifyOptions::default())
        .expect("the trace verifies");
    best_commit(&view, &ranking("acc", 2, &[]))
        .expect("ranks")
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
fn break_ranking_loses_the_best_commit_to_a_misordered_page() {
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
    assert_eq!(ranked(&s), vec![commit(1), commit(2)]);
    drop(s);

    permute_commit_stats_cells(&dir, &[1, 2, 0]);

    let s = Store::open(&dir, StoreOptions::default()).expect("open");
    let after = ranked(&s);
    assert_eq!(
        after.first(),
        Some(&commit(1)),
        "the trace verified and then ranked {after:?}: the best commit is gone"
    );
}

/// Two commits whose scores are all 0 tie; the tie goes to the smaller id
/// (commit 1). A mean stored as -0.0 (bytes edited; SQL would store an
/// integral REAL as the integer 0) compares equal to the fold's +0.0 under
/// `f64 ==`, so verification passes, but `best_commit` sorts lower bounds
/// with `total_cmp`, where -0.0 < +0.0: commit 2 now ranks first.
#[test]
fn break_ranking_tie_flipped_by_a_negative_zero_mean() {
    let tmp = tempfile::tempdir().expect("tmp");
    let dir = tmp.path().join("store");
    let mut s = Store::create(&dir, StoreOptions::default()).expect("store");
    let scores: Vec<Score> = [1u8, 2]
        .iter()
        .flat_map(|&c| (0..3).map(move |i| Score::new(commit(c), format!("t{i}"), "acc", 0.0)))
        .collect();
    s.record_scores(&scores, "s").expect("scores");
    assert_eq!(ranked(&s), vec![commit(1), commit(2)]);
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

    // Fixed: verification compares the kept statistics to the bit, so the
    // -0.0 is a fault and nothing is ranked from the store.
    let s = Store::open(&dir, StoreOptions::default()).expect("open");
    let err = s
        .verified(&VerifyOptions::default())
        .expect_err("a -0.0 mean is a fault");
    assert!(
        matches!(
            &err,
            ratchet_trace::Error::Tampered { fault }
                if matches!(fault.kind, ratchet_trace::FaultKind::SummaryMismatch { .. })
        ),
        "{err}"
    );
}

/// End to end through `heal`: v1 (mean 0.80), v2 (0.85), v3 deployed and
/// fallen to 0.70. Honestly heal checks out v2. With v2's `commit_stats`
/// cell moved behind the `speed` scorer's row, heal verifies the trace
/// (passes), ranks without v2 and checks out v1 — a worse commit — and the
/// store still verifies afterwards.
#[test]
fn break_heal_checks_out_a_worse_commit_after_a_misordered_page() {
    let tmp = tempfile::tempdir().expect("tmp");
    let (_repo, commits) = three_versions(tmp.path());
    let dir = tmp.path().join(".ratchet");
    let mut store = Store::create(&dir, StoreOptions::default()).expect("store");
    record_versions_and_a_fall(&mut store, &commits);
    store
        .record_score(&Score::new(commits[2].clone(), "t0", "speed", 1.0), "s")
        .expect("another scorer");
    let head = store.head().expect("head").size;
    let alarm = ratchet_drift::TraceAlarm {
        commit: commits[2].clone(),
        scorer: "quality".into(),
        scorer_version: None,
        alarm: ratchet_drift::Alarm {
            detector: "cusum".into(),
            n: 12,
            statistic: 5.3,
            limit: 5.0,
            shift: ratchet_drift::Shift::Down,
            change_start: 4,
        },
        seq: head - 1,
        change_seq: head - 9,
        baseline_mean: 0.9,
        baseline_sd: 0.03,
        from_seq: None,
        chart: None,
        watch: None,
    };
    let dry = ratchet_orchestrate::HealOptions {
        dry_run: true,
        ..Default::default()
    };
    let mut ledger = Ledger::new(store, VerifyOptions::default()).expect("verifies");
    let (honest, _) =
        ratchet_orchestrate::heal(tmp.path(), &mut ledger, &alarm, &dry).expect("honest heal");
    assert_eq!(honest.chosen.as_ref(), Some(&commits[1]), "{honest:#?}");
    drop(ledger);

    // Sorted keys: quality/1/<three commits by id>, speed/1/v3. Move v2's
    // row behind speed's.
    let sorted: Vec<String> = sqlite3(
        &db(&dir),
        "SELECT commit_id FROM commit_stats ORDER BY scorer, scorer_version, commit_id;",
    )
    .lines()
    .map(str::to_string)
    .collect();
    assert_eq!(sorted.len(), 4);
    let v2 = sorted
        .iter()
        .take(3)
        .position(|c| c == commits[1].as_str())
        .expect("v2's row");
    let mut order: Vec<usize> = (0..4).filter(|&i| i != v2).collect();
    order.push(v2);
    permute_commit_stats_cells(&dir, &order);

    let store = Store::open(&dir, StoreOptions::default()).expect("open");
    let mut ledger = Ledger::new(store, VerifyOptions::default()).expect("verifies");
    let (report, _) = ratchet_orchestrate::heal(
        tmp.path(),
        &mut ledger,
        &alarm,
        &ratchet_orchestrate::HealOptions::default(),
    )
    .expect("heal verified the trace and acted");
    let still_valid = ledger.store().verify().expect("verify").is_valid();
    eprintln!(
        "chosen {:?}; ranking {:?}; store still verifies: {still_valid}",
        report.chosen,
        report.ranking.iter().map(|r| &r.commit).collect::<Vec<_>>()
    );
    assert_eq!(
        report.chosen.as_ref(),
        Some(&commits[1]),
        "heal checked out {:?} (v1, mean 0.80) instead of v2 (mean 0.85)",
        report.chosen
    );
}
