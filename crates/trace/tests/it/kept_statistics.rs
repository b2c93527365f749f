//! Red team against schema version 2: the per-commit statistics kept on
//! append (`commit_stats`), the dropped per-row insert guards, the
//! in-place upgrade, the pipelined append and the threaded merge.
//!
//! Tests named `break_*` were holes the red team found (issue 14): fixed in
//! the same stop, they now pin the fixes. Every other test is an attack
//! that was caught from the start.

use crate::common;

use std::path::Path;

use common::*;
use ratchet_trace::{
    AsOf, CommitStats, Error, EventDraft, FaultKind, MergeOptions, Store, StoreOptions, TestRun,
    VerifyOptions,
};

/// Commit 1 is clearly the best on `acc`; commit 2 is worse; a second
/// scorer `zzz` sorts after `acc` in the table's key.
fn two_commits_and_another_scorer(s: &mut Store) {
    let mut scores = Vec::new();
    for i in 0..20 {
        let t = format!("t{i}");
        scores.push(score(1, &t, "acc", 0.9 + (i % 3) as f64 * 0.01));
        scores.push(score(2, &t, "acc", 0.4 + (i % 3) as f64 * 0.01));
    }
    scores.push(score(1, "t0", "zzz", 0.5));
    s.record_scores(&scores, "s").expect("scores");
}

// ---------------------------------------------------------------------------
// BREAK 1: a WITHOUT ROWID b-tree whose cells are out of key order passes
// `PRAGMA quick_check` (SQLite checks WITHOUT ROWID key order only in the
// full integrity_check: `if( isQuick || HasRowid(pTab) ) pPk = 0;`), and the
// summary comparison scans the table (it sees every row, in any order), so
// verification passes; but `commit_stats` at the head *seeked* on the scorer
// and stopped at the first key past it, so a row placed after a larger key
// was never read and the best commit vanished from the ranking. Decisions
// now read the verified view, folded from the event bytes: no table at all.
// ---------------------------------------------------------------------------

#[test]
fn break_misordered_commit_stats_page_does_not_hide_the_best_commit_from_the_view() {
    let (_d, mut s) = new_store();
    two_commits_and_another_scorer(&mut s);
    let honest = view(&s).commit_stats("acc", AsOf::Head);
    assert_eq!(honest.len(), 2);
    assert_eq!(honest[0].commit, commit(1));
    let dir = s.dir().to_path_buf();
    let size = s.head().expect("head").size;
    drop(s);
    // Sorted rows: [acc/1/c1, acc/1/c2, zzz/1/c1]. Put acc/1/c1 last:
    // [acc/1/c2, zzz/1/c1, acc/1/c1].
    permute_leaf_cells(&dir, "commit_stats", &[1, 2, 0]);

    let s = reopen(&dir);
    // The table's rows are all there (verification scans them, in any
    // order), so the store verifies; and the view it hands out never reads
    // the table: it holds what the verified scores say.
    let v = view(&s);
    assert_eq!(v.head().size, size);
    assert_eq!(bits(&v.commit_stats("acc", AsOf::Head)), bits(&honest));
    assert_eq!(
        v.commit_stats_for(&commit(1), "acc", AsOf::Head).as_ref(),
        honest.first()
    );
}

/// The same misordering hid the newest scorer version from
/// `scorer_versions`/`shared_scorer_version` at the head, so a reader that
/// takes "the newest version" (best_commit, baseline_world) ranked on a
/// stale version. The view reads no table: it lists every version.
#[test]
fn break_misordered_commit_stats_page_does_not_hide_the_newest_version() {
    let (_d, mut s) = new_store();
    let mut old = score(1, "t", "acc", 0.5);
    old.scorer_version = "a-old".into();
    let mut old2 = score(1, "u", "acc", 0.6);
    old2.scorer_version = "a-old".into();
    let mut new = score(1, "t", "acc", 0.7);
    new.scorer_version = "b-new".into();
    let other = score(1, "t", "zzz", 0.5);
    s.record_scores(&[old, old2, new, other], "s")
        .expect("scores");
    let size = s.head().expect("head").size;
    let honest = view(&s).scorer_versions("acc", AsOf::Head);
    assert_eq!(honest[0].version, "b-new");
    let dir = s.dir().to_path_buf();
    drop(s);
    // Sorted: [acc/a-old/c1, acc/b-new/c1, zzz/1/c1] -> [acc/a-old, zzz, acc/b-new].
    permute_leaf_cells(&dir, "commit_stats", &[0, 2, 1]);
    let s = reopen(&dir);
    let v = view(&s);
    assert_eq!(v.head().size, size);
    assert_eq!(v.scorer_versions("acc", AsOf::Head), honest);
    assert_eq!(
        v.shared_scorer_version("acc", &commit(1), &commit(1), AsOf::Head)
            .as_deref(),
        Some("b-new")
    );
}

// ---------------------------------------------------------------------------
// BREAK 2: the summary comparison is `f64 ==` (derived PartialEq of
// Welford), not bit equality as README promises ("compared to the bit") and
// as projections are compared (`same_projection` uses to_bits). A mean of
// -0.0 where the fold says 0.0 passes. best_commit ranks with total_cmp, so
// a commit whose mean is -0.0 loses a tie it should win (heal picks the
// other commit).
// ---------------------------------------------------------------------------

#[test]
fn break_negative_zero_in_commit_stats_passes_verification() {
    let (_d, mut s) = new_store();
    s.record_scores(
        &[
            score(1, "t0", "acc", 0.0),
            score(1, "t1", "acc", 0.0),
            score(2, "t0", "acc", 0.0),
            score(2, "t1", "acc", 0.0),
        ],
        "s",
    )
    .expect("scores");
    let honest = view(&s).commit_stats("acc", AsOf::Head);
    assert_eq!(honest[0].mean.to_bits(), 0.0f64.to_bits());
    let dir = s.dir().to_path_buf();
    drop(s);
    // An integral REAL is stored as an integer: write a sentinel through
    // SQL (8-byte float on disk), then turn its bytes into -0.0.
    let sentinel = 0.123_456_789_012_345_67_f64;
    rusqlite::Connection::open(db_path(&dir))
        .expect("raw")
        .execute(
            "UPDATE commit_stats SET mean = ?1 WHERE commit_id = ?2",
            rusqlite::params![sentinel, commit(1).as_str()],
        )
        .expect("edit");
    replace_bytes(
        &dir,
        &sentinel.to_bits().to_be_bytes(),
        &(-0.0f64).to_bits().to_be_bytes(),
    );
    let s = reopen(&dir);
    // Compared to the bit: the -0.0 in the table is a fault, and no view of
    // the store is handed out.
    let (seq, kind) = refused(s.verified(&VerifyOptions::default()));
    assert!(
        seq == 0 && matches!(kind, FaultKind::SummaryMismatch { .. }),
        "{seq} {kind:?}"
    );
    // The figures never came from the table: rebuilt from the scores, the
    // view is the honest one, +0.0 included.
    drop(s);
    let mut s = reopen(&dir);
    s.rebuild_commit_stats().expect("rebuild");
    assert_eq!(
        bits(&view(&s).commit_stats("acc", AsOf::Head)),
        bits(&honest)
    );
}

// ---------------------------------------------------------------------------
// BREAK 3 (robustness): an unverified unpinned read panicked (u64 overflow
// in Welford::merge, debug builds) on rows a file writer controls. No read
// of the table is left to a decision; verification reads it, and must name
// the forgery rather than panic.
// ---------------------------------------------------------------------------

#[test]
fn break_huge_counts_in_commit_stats_do_not_panic_verification() {
    let (_d, mut s) = new_store();
    let mut all = Vec::new();
    for v in ["v1", "v2", "v3"] {
        let mut a = score(1, "t", "acc", 0.5);
        a.scorer_version = v.into();
        all.push(a);
    }
    s.record_scores(&all, "s").expect("scores");
    let honest = view(&s).commit_stats("acc", AsOf::Head);
    rusqlite::Connection::open(db_path(s.dir()))
        .expect("raw")
        .execute("UPDATE commit_stats SET n = 9223372036854775807", [])
        .expect("edit");
    let read = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        refused(s.verified(&VerifyOptions::default()))
    }));
    let (seq, kind) = read.expect("verification panicked on a forged row");
    assert!(
        seq == 0 && matches!(kind, FaultKind::SummaryMismatch { .. }),
        "{seq} {kind:?}"
    );
    assert!(matches!(
        fault(&s),
        Some((0, FaultKind::SummaryMismatch { .. }))
    ));
    s.rebuild_commit_stats().expect("rebuild");
    assert_eq!(view(&s).commit_stats("acc", AsOf::Head), honest);
}

// ---------------------------------------------------------------------------
// Caught: malformed commit_stats rows (types, huge n, negative n, text in a
// REAL column) — verification names the table, reads and appends fail with
// an error and store nothing, nothing panics.
// ---------------------------------------------------------------------------

#[test]
fn malformed_commit_stats_rows_are_faults_not_panics() {
    let edits = [
        "UPDATE commit_stats SET mean = 'abc'",
        "UPDATE commit_stats SET n = -1",
        "UPDATE commit_stats SET n = 1.5",
        "UPDATE commit_stats SET n = 9223372036854775807",
        "UPDATE commit_stats SET last_seq = -5",
        "UPDATE commit_stats SET min = x'00'",
        "UPDATE commit_stats SET m2 = 1e308 * 10",
        "UPDATE commit_stats SET commit_id = '0A' || substr(commit_id, 3)",
        "UPDATE commit_stats SET scorer = CAST(scorer AS BLOB)",
        "UPDATE commit_stats SET commit_id = CAST(commit_id AS BLOB)",
    ];
    for sql in edits {
        let (_d, mut s) = new_store();
        fill(&mut s, 30);
        let before_head = s.head().expect("head");
        let raw = rusqlite::Connection::open(db_path(s.dir())).expect("raw");
        raw.execute(sql, [])
            .unwrap_or_else(|e| panic!("{sql}: {e}"));
        drop(raw);
        let f = fault(&s);
        assert!(
            matches!(f, Some((0, FaultKind::SummaryMismatch { .. }))),
            "{sql}: {f:?}"
        );
        // A deciding read: refused, never a panic.
        let (seq, kind) = refused(s.verified(&VerifyOptions::default()));
        assert!(
            seq == 0 && matches!(kind, FaultKind::SummaryMismatch { .. }),
            "{sql}: {seq} {kind:?}"
        );
        // Appending a score onto the malformed row either fails whole or
        // goes through (the fault stays); never a partial append.
        let r = s.record_scores(
            &[score(1, "new", "acc", 0.3), score(2, "new", "acc", 0.3)],
            "s",
        );
        let after = s.head().expect("head");
        match r {
            Ok(_) => assert_eq!(after.size, before_head.size + 2, "{sql}"),
            Err(e) => {
                assert_eq!(after, before_head, "{sql}: {e}: nothing stored");
            }
        }
        assert!(fault(&s).is_some(), "{sql}: still a fault");
    }
}

// ---------------------------------------------------------------------------
// Caught: downgrade tricks with user_version.
// ---------------------------------------------------------------------------

#[test]
fn a_v2_store_marked_v1_is_a_fault_and_is_not_upgraded_over() {
    let (_d, mut s) = new_store();
    two_commits_and_another_scorer(&mut s);
    // Forge the table and mark the store v1, hoping the summary check is
    // skipped while the head read still uses the table.
    rusqlite::Connection::open(db_path(s.dir()))
        .expect("raw")
        .execute_batch(
            "UPDATE commit_stats SET mean = 0.01 WHERE commit_id LIKE '01%';
             PRAGMA user_version = 1;",
        )
        .expect("edit");
    let f = fault(&s);
    assert!(
        matches!(&f, Some((0, FaultKind::SchemaAltered { .. }))),
        "{f:?}"
    );
    let dir = s.dir().to_path_buf();
    drop(s);
    let ro = Store::open_read_only(&dir, StoreOptions::default()).expect("ro");
    assert!(ro.verify().expect("verify").fault.is_some());
    drop(ro);
    let err = Store::open(&dir, StoreOptions::default()).expect_err("writable open refuses");
    assert!(matches!(err, Error::SchemaAltered { .. }), "{err}");
}

/// Rewrites the store at `dir` into an exact v1 schema through the file:
/// `commit_stats` dropped, the v1 guards and the origin index put back,
/// `user_version` 1. What the v1-store tests start from.
fn rewrite_as_exact_v1(dir: &Path) {
    let raw = rusqlite::Connection::open(db_path(dir)).expect("raw");
    raw.execute_batch(
        "DROP TABLE commit_stats;
         CREATE TRIGGER events_no_replace BEFORE INSERT ON events
WHEN EXISTS (SELECT 1 FROM events WHERE seq = NEW.seq)
BEGIN SELECT RAISE(FAIL, 'ratchet: events is append-only; a row with this key exists'); END;
CREATE TRIGGER scores_no_replace BEFORE INSERT ON scores
WHEN EXISTS (SELECT 1 FROM scores WHERE seq = NEW.seq)
BEGIN SELECT RAISE(FAIL, 'ratchet: scores is append-only; a row with this key exists'); END;
CREATE TRIGGER test_runs_no_replace BEFORE INSERT ON test_runs
WHEN EXISTS (SELECT 1 FROM test_runs WHERE seq = NEW.seq)
BEGIN SELECT RAISE(FAIL, 'ratchet: test_runs is append-only; a row with this key exists'); END;
CREATE INDEX events_by_origin ON events (origin_store, origin_seq) WHERE origin_store IS NOT NULL;
         PRAGMA user_version = 1;",
    )
    .expect("downgrade");
}

/// A v2 store rewritten into an exact v1 schema (commit_stats dropped, v1
/// guards and origin index back, user_version 1) is a genuine v1 store: it
/// verifies, and a handle opened while it was v2 can no longer read the
/// table (an error, not a stale answer); a writable open rebuilds the table
/// from the verified scores.
#[test]
fn a_v2_store_rewritten_as_exact_v1_reads_honestly() {
    let (_d, mut s) = new_store();
    two_commits_and_another_scorer(&mut s);
    let honest = view(&s).commit_stats("acc", AsOf::Head);
    rewrite_as_exact_v1(s.dir());
    let r = s.verify().expect("verify");
    assert!(r.is_valid(), "an exact v1 store verifies: {r:?}");
    // The open handle, opened while the store was v2: its view is folded
    // from the verified events, never from a table, so it is the honest one.
    assert_eq!(view(&s).commit_stats("acc", AsOf::Head), honest);
    let dir = s.dir().to_path_buf();
    drop(s);
    let ro = Store::open_read_only(&dir, StoreOptions::default()).expect("ro");
    assert_eq!(view(&ro).commit_stats("acc", AsOf::Head), honest);
    drop(ro);
    let rw = reopen(&dir);
    assert!(rw.verify().expect("verify").is_valid());
    assert_eq!(view(&rw).commit_stats("acc", AsOf::Head), honest);
}

/// The v1 → v2 upgrade folds the *stored* score rows without verifying
/// them. A v1 store with an edited score row (self-consistent table after
/// the upgrade) must still fail verification at the edited seq.
#[test]
fn upgrade_of_a_tampered_v1_store_does_not_launder_the_edit() {
    let (_d, mut s) = new_store();
    two_commits_and_another_scorer(&mut s);
    rewrite_as_exact_v1(s.dir());
    {
        let a = attacker(s.dir());
        a.execute("UPDATE scores SET value = 0.99 WHERE seq = 2", [])
            .expect("edit");
    }
    let dir = s.dir().to_path_buf();
    drop(s);
    let rw = reopen(&dir);
    let f = fault(&rw);
    assert!(
        matches!(f, Some((2, FaultKind::ProjectionMismatch { .. }))),
        "{f:?}"
    );
}

// ---------------------------------------------------------------------------
// Caught: verification that stops before the head (up_to) skips the summary
// check, as documented; a checkpoint never does.
// ---------------------------------------------------------------------------

#[test]
fn up_to_skips_the_summary_but_a_checkpoint_does_not() {
    let (_d, mut s) = new_store();
    two_commits_and_another_scorer(&mut s);
    let cp = s.checkpoint().expect("checkpoint");
    let size = s.head().expect("head").size;
    rusqlite::Connection::open(db_path(s.dir()))
        .expect("raw")
        .execute(
            "UPDATE commit_stats SET mean = 0.01 WHERE commit_id = ?1 AND scorer = 'acc'",
            [commit(1).as_str()],
        )
        .expect("edit");
    let short = s
        .verify_with(&VerifyOptions::default().up_to(size - 1))
        .expect("verify");
    assert!(short.is_valid(), "documented: up_to skips the summary");
    let at_head = s
        .verify_with(&VerifyOptions::default().up_to(size))
        .expect("verify");
    assert!(matches!(
        at_head.fault.map(|f| f.kind),
        Some(FaultKind::SummaryMismatch { .. })
    ));
    let with_cp = s
        .verify_with(&VerifyOptions::default().checkpoint(cp))
        .expect("verify");
    assert!(matches!(
        with_cp.fault.map(|f| f.kind),
        Some(FaultKind::SummaryMismatch { .. })
    ));
    assert!(matches!(
        s.verified(&VerifyOptions::default()),
        Err(ratchet_trace::Error::Tampered { .. })
    ));
}

// ---------------------------------------------------------------------------
// Caught: INSERT OR REPLACE from a plain SQLite client.
// ---------------------------------------------------------------------------

#[test]
fn insert_or_replace_from_a_plain_client_is_found_or_refused() {
    let cases: [(&str, bool); 6] = [
        (
            "INSERT OR REPLACE INTO events SELECT seq, id, ts_ms, cell, 'other', kind, commit_id, payload, origin_store, origin_seq, origin_hash, prev_hash, hash, mac FROM events WHERE seq = 5",
            false,
        ),
        (
            "INSERT OR REPLACE INTO scores SELECT seq, commit_id, task, scorer, scorer_version, 1.0, cost, latency_ms, holdout FROM scores WHERE seq = 2",
            false,
        ),
        (
            "INSERT OR REPLACE INTO test_runs SELECT seq, commit_id, suite, 0, 99, skipped, duration_ms FROM test_runs WHERE seq = 3",
            false,
        ),
        (
            "INSERT OR REPLACE INTO meta VALUES ('created_ms', '1')",
            true,
        ),
        (
            "INSERT OR REPLACE INTO meta VALUES ('writer_key_id', 'ab')",
            false,
        ),
        (
            "INSERT OR REPLACE INTO commit_stats SELECT scorer, scorer_version, commit_id, n, 0.99, m2, min, max, last_seq FROM commit_stats LIMIT 1",
            false,
        ),
    ];
    for (sql, refused) in cases {
        let (_d, mut s) = new_store();
        fill(&mut s, 30);
        let raw = rusqlite::Connection::open(db_path(s.dir())).expect("raw");
        let r = raw.execute(sql, []);
        drop(raw);
        if refused {
            let e = r.expect_err("refused by the meta guard");
            assert!(
                e.to_string().contains("ratchet: meta is append-only"),
                "{sql}: {e}"
            );
            assert!(s.verify().expect("verify").is_valid());
            continue;
        }
        r.unwrap_or_else(|e| panic!("{sql}: {e}"));
        let dir = s.dir().to_path_buf();
        drop(s);
        let s = reopen(&dir);
        // A key id planted in an unkeyed store is not a fault of the chain,
        // but the store now looks keyed: every deciding read fails closed.
        let read = s.verified(&VerifyOptions::default());
        assert!(
            matches!(
                read,
                Err(ratchet_trace::Error::Tampered { .. }
                    | ratchet_trace::Error::MacsUnchecked { .. })
            ),
            "{sql}: not found ({:?})",
            read.err()
        );
    }
}

// ---------------------------------------------------------------------------
// Caught: all-or-nothing pipelined appends (>= 256 events).
// ---------------------------------------------------------------------------

fn bad_draft() -> EventDraft {
    // A score payload that does not parse as a score.
    EventDraft::json("score", &serde_json::json!({"nonsense": true}))
        .expect("json")
        .commit(commit(1))
}

#[test]
fn a_bad_event_anywhere_in_a_pipelined_batch_stores_nothing() {
    let (_d, mut s) = new_store();
    fill(&mut s, 10);
    let head0 = s.head().expect("head");
    let stats0 = view(&s).commit_stats("acc", AsOf::Head);
    for len in [256usize, 300, 1000] {
        for bad in [0, 1, 127, 128, 129, 255, 256, len - 1] {
            if bad >= len {
                continue;
            }
            let mut drafts: Vec<EventDraft> = (0..len).map(mixed_draft).collect();
            drafts[bad] = bad_draft();
            let err = s.append_batch(drafts).expect_err("refused");
            assert!(
                err.to_string()
                    .contains(&format!("event #{bad} of the batch")),
                "len {len} bad {bad}: {err}"
            );
            assert_eq!(s.head().expect("head"), head0, "len {len} bad {bad}");
            assert_eq!(view(&s).commit_stats("acc", AsOf::Head), stats0);
        }
    }
    // JSON lines: a bad line late in a long text.
    let mut text = String::new();
    for i in 0..600 {
        if i == 517 {
            text.push_str("{\"kind\": \"score\", \"commit\": \"");
            text.push_str(commit(1).as_str());
            text.push_str("\", \"payload\": {\"x\": 1}}\n");
        } else {
            text.push_str(&format!(
                "{{\"kind\": \"score\", \"commit\": \"{}\", \"payload\": {{\"task\": \"t{i}\", \"scorer\": \"acc\", \"scorer_version\": \"1\", \"value\": 0.5}}}}\n",
                commit(1).as_str()
            ));
        }
    }
    let err = s.append_json_lines(&text).expect_err("refused");
    assert!(err.to_string().contains("line 518"), "{err}");
    assert_eq!(s.head().expect("head"), head0);
    assert_eq!(view(&s).commit_stats("acc", AsOf::Head), stats0);
    assert!(s.verify().expect("verify").is_valid());
}

#[test]
fn a_pipelined_append_keeps_the_summary_exact() {
    let (_d, mut s) = new_store();
    let drafts: Vec<EventDraft> = (0..5000).map(mixed_draft).collect();
    s.append_batch(drafts).expect("append");
    let drafts: Vec<EventDraft> = (0..700).map(mixed_draft).collect();
    s.append_batch(drafts).expect("append");
    // Verification requires the table kept by the pipelined append to be the
    // refold of the score rows, to the bit; the view folds the same values
    // the same way, and a scan at an earlier seq agrees with what the view
    // kept there.
    let v = view(&s);
    let size = v.head().size;
    let head: Vec<CommitStats> = v.commit_stats("acc", AsOf::Head);
    let scan = v.commit_stats("acc", AsOf::Seq(size));
    assert_eq!(bits(&head), bits(&scan));
    let first = Store::open(s.dir(), StoreOptions::default())
        .expect("open")
        .verified(&VerifyOptions::default().up_to(5000))
        .expect("verified to 5000");
    assert_eq!(
        bits(&first.commit_stats("acc", AsOf::Head)),
        bits(&v.commit_stats("acc", AsOf::Seq(5000)))
    );
}

// ---------------------------------------------------------------------------
// Caught: a hostile cell in merge_cell ingests nothing.
// ---------------------------------------------------------------------------

fn home_and_cell() -> (tempfile::TempDir, Store, Store) {
    let (d, mut home) = new_store();
    fill(&mut home, 12);
    let mut cell = Store::create(d.path().join("cell"), StoreOptions::default()).expect("cell");
    let drafts: Vec<EventDraft> = (0..5000).map(mixed_draft).collect();
    cell.append_batch(drafts).expect("cell append");
    (d, home, cell)
}

fn assert_untouched(home: &Store, head: ratchet_trace::Head, stats: &[CommitStats]) {
    assert_eq!(home.head().expect("head"), head, "nothing ingested");
    assert_eq!(view(home).commit_stats("acc", AsOf::Head), stats);
}

#[test]
fn a_hostile_cell_ingests_nothing() {
    type Edit = fn(&Path);
    let edits: [(&str, Edit); 5] = [
        ("late hash edit", |d| {
            attacker(d)
                .execute("UPDATE events SET session = 'x' WHERE seq = 4900", [])
                .map(|n| assert_eq!(n, 1))
                .expect("edit");
        }),
        ("late projection edit", |d| {
            attacker(d)
                .execute("UPDATE scores SET value = 0.77 WHERE seq = 4997", [])
                .map(|n| assert_eq!(n, 1))
                .expect("edit");
        }),
        ("forged summary", |d| {
            rusqlite::Connection::open(db_path(d))
                .expect("raw")
                .execute("UPDATE commit_stats SET mean = 0.0123", [])
                .map(|n| assert!(n >= 1))
                .expect("edit");
        }),
        ("orphan score row past the head", |d| {
            attacker(d)
                .execute(
                    "INSERT INTO scores SELECT seq + 10000, commit_id, task, scorer, scorer_version, value, cost, latency_ms, holdout FROM scores WHERE seq = 2",
                    [],
                )
                .map(|n| assert_eq!(n, 1))
                .expect("edit");
        }),
        ("a row outside the chain", |d| {
            attacker(d)
                .execute(
                    "INSERT INTO scores SELECT -1, commit_id, task, scorer, scorer_version, value, cost, latency_ms, holdout FROM scores WHERE seq = 2",
                    [],
                )
                .map(|n| assert_eq!(n, 1))
                .expect("edit");
        }),
    ];
    for (what, edit) in edits {
        let (_d, mut home, cell) = home_and_cell();
        let cell_dir = cell.dir().to_path_buf();
        drop(cell);
        edit(&cell_dir);
        let head = home.head().expect("head");
        let stats = view(&home).commit_stats("acc", AsOf::Head);
        let err = home
            .merge_cell(&cell_dir, &MergeOptions::default())
            .expect_err(what);
        assert!(matches!(err, Error::CellTampered { .. }), "{what}: {err}");
        assert_untouched(&home, head, &stats);
    }
}

/// A cell that equivocates late (an id the home already holds, with other
/// content, after thousands of good events): nothing ingested.
#[test]
fn a_late_equivocation_ingests_nothing() {
    let (d, mut home) = new_store();
    fill(&mut home, 12);
    // The cell first merges the home (so it relays home events), then the
    // home merges the cell back.
    let mut cell = Store::create(d.path().join("cell"), StoreOptions::default()).expect("cell");
    let drafts: Vec<EventDraft> = (0..3000).map(mixed_draft).collect();
    cell.append_batch(drafts).expect("cell append");
    let report = home
        .merge_cell(cell.dir(), &MergeOptions::default())
        .expect("first merge");
    assert_eq!(report.ingested, 3000);
    let drafts: Vec<EventDraft> = (0..3000).map(mixed_draft).collect();
    cell.append_batch(drafts).expect("cell append");
    let head = home.head().expect("head");
    let stats = view(&home).commit_stats("acc", AsOf::Head);
    // Pretend the cell's last event reuses the id of a home event: the
    // attacker rebuilds the cell's chain (unkeyed cell) to pass verification.
    let home_id: Vec<u8> = rusqlite::Connection::open(db_path(home.dir()))
        .expect("raw")
        .query_row("SELECT id FROM events WHERE seq = 3", [], |r| r.get(0))
        .expect("id");
    let cell_id = cell.id().to_string();
    let cell_dir = cell.dir().to_path_buf();
    drop(cell);
    {
        let a = attacker(&cell_dir);
        a.execute("UPDATE events SET id = ?1 WHERE seq = 6000", [&home_id[..]])
            .expect("edit");
        recompute_chain(&a, &cell_id, 6000);
    }
    let err = home
        .merge_cell(&cell_dir, &MergeOptions::default())
        .expect_err("equivocation");
    assert!(
        matches!(
            err,
            Error::Equivocation { .. } | Error::ForgedProducer { .. }
        ),
        "{err}"
    );
    assert_untouched(&home, head, &stats);
}

/// A cell whose commit_stats page is misordered (BREAK 1) verifies, and
/// merges; the home's own table is written by the home, so it is exact.
#[test]
fn a_misordered_cell_summary_does_not_reach_the_home() {
    let (d, mut home) = new_store();
    let mut cell = Store::create(d.path().join("cell"), StoreOptions::default()).expect("cell");
    two_commits_and_another_scorer(&mut cell);
    let dir = cell.dir().to_path_buf();
    drop(cell);
    permute_leaf_cells(&dir, "commit_stats", &[1, 2, 0]);
    home.merge_cell(&dir, &MergeOptions::default())
        .expect("merge");
    // The home verifies (its own table is exact) and its view is the
    // cell's honest figures.
    let honest: Vec<CommitStats> = {
        let (_t, mut clean) = new_store();
        two_commits_and_another_scorer(&mut clean);
        view(&clean).commit_stats("acc", AsOf::Head)
    };
    let v = view(&home);
    assert_eq!(v.commit_stats("acc", AsOf::Head).len(), 2);
    let counts = |x: &[CommitStats]| x.iter().map(|c| (c.n, c.mean)).collect::<Vec<_>>();
    assert_eq!(counts(&v.commit_stats("acc", AsOf::Head)), counts(&honest));
}

// ---------------------------------------------------------------------------
// Caught: what verification read is what the view holds; a later edit of
// the file cannot reach it.
// ---------------------------------------------------------------------------

#[test]
fn an_edit_after_verification_does_not_reach_the_view() {
    let (_d, mut s) = new_store();
    two_commits_and_another_scorer(&mut s);
    let dir = s.dir().to_path_buf();
    let v = view(&s);
    let honest = v.commit_stats("acc", AsOf::Head);
    rusqlite::Connection::open(db_path(&dir))
        .expect("raw")
        .execute("UPDATE commit_stats SET mean = 0.01", [])
        .expect("edit while the view lives");
    assert_eq!(v.commit_stats("acc", AsOf::Head), honest);
    assert!(s.verify().expect("verify").fault.is_some());
    assert!(matches!(
        s.verified(&VerifyOptions::default()),
        Err(ratchet_trace::Error::Tampered { .. })
    ));
}

#[test]
fn test_runs_and_scores_of_a_replaced_row_are_found_at_their_seq() {
    let (_d, mut s) = new_store();
    s.record_test_run(
        &TestRun {
            commit: commit(1),
            suite: "unit".into(),
            passed: 3,
            failed: 1,
            skipped: 0,
            duration_ms: 1.0,
            failures: Vec::new(),
        },
        "s",
    )
    .expect("run");
    // Replace the failing run by a green one, rewriting the event and the
    // projection row consistently (no key: the hash breaks).
    rusqlite::Connection::open(db_path(s.dir()))
        .expect("raw")
        .execute(
            "INSERT OR REPLACE INTO test_runs SELECT seq, commit_id, suite, passed, 0, skipped, duration_ms FROM test_runs WHERE seq = 1",
            [],
        )
        .expect("replace");
    assert!(matches!(
        fault(&s),
        Some((1, FaultKind::ProjectionMismatch { .. }))
    ));
}
