//! Every kind of tampering design.md §3 names is caught, at the right seq.

use crate::common;

use common::*;
use ratchet_trace::{Checkpoint, Error, FaultKind, Store, StoreOptions, VerifyOptions, WriterKey};

#[test]
fn untouched_store_verifies() {
    let (_d, mut s) = new_store();
    fill(&mut s, 30);
    let r = s.verify().expect("verify");
    assert!(r.is_valid(), "{r:?}");
    assert_eq!(r.size, 30);
    assert_eq!(r.head, s.head().expect("head").hash);
}

#[test]
fn raw_sql_edits_are_refused_by_triggers() {
    let (_d, mut s) = new_store();
    fill(&mut s, 6);
    let before = s.events_after(0, 100).expect("read");
    let raw = rusqlite::Connection::open(db_path(s.dir())).expect("raw");
    let attempts = [
        "UPDATE events SET payload = x'7b7d' WHERE seq = 1",
        "DELETE FROM events WHERE seq = 6",
        "UPDATE scores SET value = 1.0",
        "DELETE FROM test_runs",
        "UPDATE meta SET value = 'x' WHERE key = 'store_id'",
        "DELETE FROM meta",
        "INSERT OR REPLACE INTO meta (key, value) VALUES ('store_id', 'x')",
    ];
    for sql in attempts {
        let err = raw.execute(sql, []).expect_err(sql);
        assert!(err.to_string().contains("append-only"), "{sql}: {err}");
    }
    // A client that turns on recursive triggers, as ratchet's own
    // connections do, has its REPLACE refused by the DELETE guard.
    raw.execute_batch("PRAGMA recursive_triggers = ON;")
        .expect("pragma");
    for sql in [
        "INSERT OR REPLACE INTO events SELECT * FROM events WHERE seq = 2",
        "INSERT OR REPLACE INTO scores SELECT * FROM scores LIMIT 1",
    ] {
        let err = raw.execute(sql, []).expect_err(sql);
        assert!(err.to_string().contains("append-only"), "{sql}: {err}");
    }
    drop(raw);
    assert_eq!(
        s.events_after(0, 100).expect("read"),
        before,
        "nothing changed"
    );
    assert!(s.verify().expect("verify").is_valid());
}

/// Schema version 2 has no per-row INSERT guard (its cost was a third of the
/// append): an `INSERT OR REPLACE` from a plain SQLite client, with no
/// trigger dropped, goes through — and every one that changes a row is
/// caught by verification at its seq.
#[test]
fn insert_or_replace_from_a_plain_client_is_caught_at_its_seq() {
    let (_d, mut s) = new_store();
    fill(&mut s, 10);
    let first_score = view(&s)
        .scores()
        .first()
        .map(|(seq, _)| *seq)
        .expect("a score");
    let cases = [
        (
            "INSERT OR REPLACE INTO events (seq, id, ts_ms, cell, session, kind, commit_id, payload, prev_hash, hash)
             SELECT seq, id, ts_ms, cell, session, kind, commit_id, CAST('{}' AS BLOB), prev_hash, hash FROM events WHERE seq = 3",
            3,
        ),
        (
            "INSERT OR REPLACE INTO scores (seq, commit_id, task, scorer, scorer_version, value, holdout)
             SELECT seq, commit_id, task, scorer, scorer_version, 1.0 - value, holdout FROM scores ORDER BY seq LIMIT 1",
            first_score,
        ),
    ];
    for (sql, seq) in cases {
        let (_d, mut s) = new_store();
        fill(&mut s, 10);
        let raw = rusqlite::Connection::open(db_path(s.dir())).expect("raw");
        assert_eq!(raw.execute(sql, []).expect(sql), 1, "{sql}");
        drop(raw);
        let (found, _) = first_fault(&s);
        assert_eq!(found, seq, "{sql}");
    }
    // The same REPLACE with identical content changes nothing.
    let raw = rusqlite::Connection::open(db_path(s.dir())).expect("raw");
    raw.execute(
        "INSERT OR REPLACE INTO events SELECT * FROM events WHERE seq = 2",
        [],
    )
    .expect("identical replace");
    drop(raw);
    assert!(s.verify().expect("verify").is_valid());
}

#[test]
fn edited_payload_by_raw_sql_is_caught() {
    let (_d, s) = filled_then_edited(
        20,
        "UPDATE events SET payload = CAST('{\"i\":9}' AS BLOB) WHERE seq = 10",
    );
    assert_eq!(first_fault(&s), (10, FaultKind::HashMismatch));
}

#[test]
fn each_edited_column_is_caught() {
    for (col, value) in [
        ("ts_ms", "ts_ms + 1"),
        ("cell", "'elsewhere'"),
        ("session", "'s2'"),
        ("kind", "'other'"),
        ("commit_id", "NULL"),
        ("id", "randomblob(16)"),
        ("hash", "randomblob(32)"),
    ] {
        let (_d, s) = filled_then_edited(
            9,
            &format!("UPDATE events SET {col} = {value} WHERE seq = 5"),
        );
        // seq 5 is a score: it has a commit and a projection row.
        let (seq, kind) = first_fault(&s);
        assert_eq!(seq, 5, "{col}: {kind:?}");
    }
}

#[test]
fn byte_edited_in_the_file_itself_is_caught() {
    let (_d, mut s) = new_store();
    fill(&mut s, 60);
    let dir = s.dir().to_path_buf();
    drop(s); // last connection closes: the WAL is checkpointed into trace.db
    let path = db_path(&dir);
    let mut bytes = std::fs::read(&path).expect("read file");
    // Event i = 33 (seq 34) is a note whose payload holds MARK000033.
    let needle = b"MARK000033";
    let at = bytes
        .windows(needle.len())
        .position(|w| w == needle)
        .expect("marker in file");
    bytes[at + 4] = b'9';
    std::fs::write(&path, &bytes).expect("write file");
    let s = reopen(&dir);
    assert_eq!(first_fault(&s), (34, FaultKind::HashMismatch));
}

#[test]
fn deleted_row_is_caught() {
    let (_d, s) = filled_then_edited(
        20,
        "DELETE FROM events WHERE seq = 7; DELETE FROM scores WHERE seq = 7;",
    );
    assert_eq!(first_fault(&s), (7, FaultKind::Missing { next_present: 8 }));
}

#[test]
fn swapped_rows_are_caught() {
    let (_d, mut s) = new_store();
    fill(&mut s, 20);
    // Swap the contents of seq 5 and 8 (both notes), keeping seqs.
    let a = attacker(s.dir());
    a.execute_batch(
        "CREATE TEMP TABLE t AS SELECT * FROM events WHERE seq IN (5, 8);
         UPDATE events SET id = randomblob(16) WHERE seq IN (5, 8);
         UPDATE events SET (id, ts_ms, cell, session, kind, commit_id, payload, prev_hash, hash) =
           (SELECT id, ts_ms, cell, session, kind, commit_id, payload, prev_hash, hash FROM t WHERE t.seq = 8) WHERE seq = 5;
         UPDATE events SET (id, ts_ms, cell, session, kind, commit_id, payload, prev_hash, hash) =
           (SELECT id, ts_ms, cell, session, kind, commit_id, payload, prev_hash, hash FROM t WHERE t.seq = 5) WHERE seq = 8;",
    )
    .expect("swap");
    drop(a);
    let (seq, kind) = first_fault(&s);
    assert_eq!(seq, 5, "{kind:?}");
    assert_eq!(kind, FaultKind::BrokenLink);
}

#[test]
fn truncated_tail_is_caught_against_a_checkpoint() {
    let (d, mut s) = new_store();
    fill(&mut s, 25);
    let cp = s.checkpoint().expect("checkpoint");
    let cp_file = d.path().join("held-elsewhere");
    cp.write_atomic(&cp_file).expect("write cp");
    attacker(s.dir())
        .execute_batch(
            "DELETE FROM events WHERE seq > 21; DELETE FROM scores WHERE seq > 21; DELETE FROM test_runs WHERE seq > 21;",
        )
        .expect("truncate");
    // Left as they were, the kept statistics give the truncation away; a
    // careful attacker recomputes them.
    let (seq, kind) = first_fault(&s);
    assert!(
        seq == 0 && matches!(kind, FaultKind::SummaryMismatch { .. }),
        "{kind:?}"
    );
    refold_commit_stats(&attacker(s.dir()));
    // A truncated chain is self-consistent: only the checkpoint shows it.
    assert!(s.verify().expect("verify").is_valid());
    let cp = Checkpoint::read(&cp_file).expect("read cp");
    let r = s
        .verify_with(&VerifyOptions::default().checkpoint(cp))
        .expect("verify");
    let f = r.fault.expect("truncation found");
    assert_eq!(f.seq, 22);
    assert_eq!(
        f.kind,
        FaultKind::Truncated {
            checkpoint_size: 25,
            store_size: 21
        }
    );
}

#[test]
fn rolled_back_file_is_caught_against_a_checkpoint() {
    let (d, mut s) = new_store();
    fill(&mut s, 10);
    let dir = s.dir().to_path_buf();
    drop(s);
    let old_copy = std::fs::read(db_path(&dir)).expect("copy");
    let mut s = reopen(&dir);
    fill(&mut s, 10);
    let cp = s.checkpoint().expect("cp");
    drop(s);

    // Rolled back to the older copy: truncation.
    std::fs::write(db_path(&dir), &old_copy).expect("roll back");
    let mut s = reopen(&dir);
    let r = s
        .verify_with(&VerifyOptions::default().checkpoint(cp.clone()))
        .expect("verify");
    assert_eq!(
        r.fault.expect("rollback found").kind,
        FaultKind::Truncated {
            checkpoint_size: 20,
            store_size: 10
        }
    );

    // Rolled back and regrown past the checkpoint: a fork at the checkpoint.
    fill(&mut s, 15);
    assert!(s.verify().expect("verify").is_valid());
    let r = s
        .verify_with(&VerifyOptions::default().checkpoint(cp))
        .expect("verify");
    let f = r.fault.expect("fork found");
    assert_eq!((f.seq, f.kind), (20, FaultKind::CheckpointMismatch));
    drop(d);
}

#[test]
fn checkpoint_of_another_store_is_an_error() {
    let (_d1, s1) = new_store();
    let (_d2, s2) = new_store();
    let cp = s1.checkpoint().expect("cp");
    let err = s2
        .verify_with(&VerifyOptions::default().checkpoint(cp))
        .expect_err("origin");
    assert!(matches!(err, Error::CheckpointOrigin { .. }), "{err}");
}

#[test]
fn a_checkpoint_never_lets_verification_skip_its_prefix() {
    // A file writer can edit a row inside any prefix without touching the
    // stored hashes; only recomputing the prefix sees it.
    let (_d, mut s) = new_store();
    fill(&mut s, 30);
    let cp = s.checkpoint().expect("cp");
    fill(&mut s, 12);
    let r = s
        .verify_with(&VerifyOptions::default().checkpoint(cp.clone()))
        .expect("verify");
    assert!(r.is_valid(), "{r:?}");
    assert_eq!(r.size, 42);
    attacker(s.dir())
        .execute(
            "UPDATE events SET payload = CAST('{}' AS BLOB) WHERE seq = 12",
            [],
        )
        .expect("edit");
    let f = s
        .verify_with(&VerifyOptions::default().checkpoint(cp))
        .expect("verify")
        .fault
        .expect("fault");
    assert_eq!((f.seq, f.kind), (12, FaultKind::HashMismatch));
}

#[test]
fn documented_layout_matches_the_store() {
    let (_d, mut s) = new_store();
    fill(&mut s, 12);
    let before = s.head().expect("head");
    let conn = attacker(s.dir());
    recompute_chain(&conn, s.id(), 1);
    assert_eq!(
        s.head().expect("head"),
        before,
        "the crate docs describe the real layout"
    );
}

#[test]
fn recomputed_chain_passes_plain_but_fails_keyed_verification() {
    let (key, _) = WriterKey::generate().expect("key");
    let (_d, mut s) = new_store_with(StoreOptions::default().writer_key(key.clone()));
    fill(&mut s, 15);
    let keyed = VerifyOptions::default().key(key.clone());
    assert!(s.verify_with(&keyed).expect("verify").is_valid());

    let conn = attacker(s.dir());
    conn.execute(
        "UPDATE events SET payload = CAST('{\"forged\":1}' AS BLOB) WHERE seq = 10",
        [],
    )
    .expect("forge");
    recompute_chain(&conn, s.id(), 10);
    drop(conn);
    // Opened without the key, only the plain chain can be checked: it was
    // rebuilt, and the report says MACs went unchecked on a keyed store.
    let plain = reopen(s.dir()).verify().expect("plain verify");
    assert!(plain.is_valid(), "a plain chain can be rebuilt");
    assert!(plain.macs_unchecked(), "{plain:?}");
    // The store opened with its key checks MACs without being told.
    let f = s.verify().expect("verify").fault.expect("forgery found");
    assert_eq!((f.seq, f.kind), (10, FaultKind::MacMismatch));
    let f = s
        .verify_with(&keyed)
        .expect("verify")
        .fault
        .expect("forgery found");
    assert_eq!((f.seq, f.kind), (10, FaultKind::MacMismatch));

    attacker(s.dir())
        .execute("UPDATE events SET mac = NULL WHERE seq = 3", [])
        .expect("strip");
    let f = s
        .verify_with(&keyed)
        .expect("verify")
        .fault
        .expect("stripped mac found");
    assert_eq!((f.seq, f.kind), (3, FaultKind::MacMissing));
}

#[test]
fn keyed_store_refuses_writers_without_the_key() {
    let (key, _) = WriterKey::generate().expect("key");
    let (other, _) = WriterKey::generate().expect("key");
    let (_d, mut s) = new_store_with(StoreOptions::default().writer_key(key));
    fill(&mut s, 3);
    let dir = s.dir().to_path_buf();
    drop(s);
    let mut no_key = Store::open(&dir, StoreOptions::default()).expect("open to read");
    assert!(matches!(
        no_key.append(mixed_draft(0)),
        Err(Error::KeyRequired)
    ));
    let mut wrong = Store::open(&dir, StoreOptions::default().writer_key(other)).expect("open");
    assert!(matches!(
        wrong.append(mixed_draft(0)),
        Err(Error::WrongKey { .. })
    ));
    assert_eq!(no_key.head().expect("head").size, 3, "nothing stored");
}

#[test]
fn edited_projection_rows_are_caught() {
    // seq 2 is a score, seq 3 a test run (see common::mixed_draft).
    let cases: [(&str, u64, FaultKind); 5] = [
        (
            "UPDATE scores SET value = value + 0.5 WHERE seq = 5",
            5,
            FaultKind::ProjectionMismatch { table: "scores" },
        ),
        (
            "UPDATE test_runs SET failed = 3 WHERE seq = 6",
            6,
            FaultKind::ProjectionMismatch { table: "test_runs" },
        ),
        (
            "DELETE FROM scores WHERE seq = 8",
            8,
            FaultKind::ProjectionMissing { table: "scores" },
        ),
        (
            "INSERT INTO scores (seq, commit_id, task, scorer, scorer_version, value, holdout)
             VALUES (4, 'ab', 't', 'acc', '1', 1.0, 0)",
            4,
            FaultKind::ProjectionOrphan { table: "scores" },
        ),
        (
            "INSERT INTO test_runs (seq, commit_id, suite, passed, failed, skipped, duration_ms)
             VALUES (1000, 'ab', 'x', 1, 0, 0, 1.0)",
            1000,
            FaultKind::ProjectionOrphan { table: "test_runs" },
        ),
    ];
    for (sql, seq, kind) in cases {
        let (_d, s) = filled_then_edited(12, sql);
        assert_eq!(first_fault(&s), (seq, kind), "{sql}");
    }
}

#[test]
fn insert_or_replace_on_an_existing_id_is_caught() {
    let (_d, mut s) = new_store();
    fill(&mut s, 10);
    // With the guards dropped, REPLACE on an existing seq deletes that row and
    // puts another in its place; on an existing id (not a unique key) it adds
    // a row at the end. Both are caught at their seq.
    let a = attacker(s.dir());
    a.execute(
        "INSERT OR REPLACE INTO events (seq, id, ts_ms, cell, session, kind, commit_id, payload, prev_hash, hash)
         SELECT 11, id, ts_ms, cell, session, kind, commit_id, CAST('{}' AS BLOB), prev_hash, hash FROM events WHERE seq = 4",
        [],
    )
    .expect("replace by id");
    drop(a);
    assert_eq!(first_fault(&s), (11, FaultKind::BrokenLink));
    attacker(s.dir()).execute(
        "INSERT OR REPLACE INTO events (seq, id, ts_ms, cell, session, kind, commit_id, payload, prev_hash, hash)
         SELECT 4, id, ts_ms, cell, session, kind, commit_id, CAST('{}' AS BLOB), prev_hash, hash FROM events WHERE seq = 4",
        [],
    )
    .expect("replace by seq");
    assert_eq!(first_fault(&s), (4, FaultKind::HashMismatch));
}

#[test]
fn rows_replayed_into_another_store_fail() {
    let (_d1, mut a) = new_store();
    fill(&mut a, 5);
    let (_d2, b) = new_store();
    let conn = attacker(b.dir());
    conn.execute(
        &format!("ATTACH DATABASE '{}' AS a", db_path(a.dir()).display()),
        [],
    )
    .expect("attach");
    conn.execute(
        "INSERT INTO main.events SELECT * FROM a.events WHERE kind = 'note'",
        [],
    )
    .expect("replay");
    drop(conn);
    let (seq, kind) = first_fault(&b);
    assert_eq!(seq, 1);
    assert_eq!(
        kind,
        FaultKind::BrokenLink,
        "genesis is bound to the store id"
    );
}

#[test]
fn faults_deep_in_large_stores_are_found_at_their_seq() {
    // Verification works in batches of a few thousand rows across threads:
    // faults at and around batch boundaries, and the lowest of several, must
    // still be reported exactly.
    let (_d, mut s) = new_store();
    fill(&mut s, 9000);
    let dir = s.dir().to_path_buf();
    for (edits, want) in [
        (vec![2048], 2048),
        (vec![2049], 2049),
        (vec![4097, 8999], 4097),
        (vec![8999, 6500], 6500),
        (vec![9000], 9000),
    ] {
        let (_d2, copy) = {
            let d2 = tempfile::tempdir().expect("tempdir");
            let dst = d2.path().join("s");
            std::fs::create_dir_all(&dst).expect("mkdir");
            let src = rusqlite::Connection::open(db_path(&dir)).expect("src");
            src.execute("VACUUM INTO ?1", [db_path(&dst).to_str().expect("utf8")])
                .expect("copy");
            (d2, dst)
        };
        let a = attacker(&copy);
        for seq in &edits {
            a.execute("UPDATE events SET ts_ms = ts_ms + 1 WHERE seq = ?1", [seq])
                .expect("edit");
        }
        drop(a);
        let st = reopen(&copy);
        let f = st.verify().expect("verify").fault.expect("fault");
        assert_eq!(
            (f.seq, f.kind),
            (want, FaultKind::HashMismatch),
            "edits {edits:?}"
        );
        let r = st.verify().expect("verify");
        assert_eq!(r.size, want - 1);
        assert_eq!(
            Some(r.head),
            st.event_by_seq(want - 1).expect("read").map(|e| e.hash)
        );
    }
    // A deleted row deep inside: the reader finds it, below any later hash fault.
    attacker(&dir)
        .execute_batch(
            "DELETE FROM events WHERE seq = 5000; UPDATE events SET ts_ms = 0 WHERE seq = 7000;",
        )
        .expect("edit");
    assert_eq!(
        first_fault(&s),
        (5000, FaultKind::Missing { next_present: 5001 })
    );
}

#[test]
fn verification_up_to_a_seq_ignores_what_came_later() {
    let (_d, s) = filled_then_edited(30, "UPDATE events SET ts_ms = 1 WHERE seq = 25");
    let r = s
        .verify_with(&VerifyOptions::default().up_to(20))
        .expect("verify");
    assert!(r.is_valid(), "{r:?}");
    assert_eq!(r.size, 20);
    assert_eq!(
        Some(r.head),
        s.event_by_seq(20).expect("read").map(|e| e.hash)
    );
    let f = s
        .verify_with(&VerifyOptions::default().up_to(26))
        .expect("verify")
        .fault
        .expect("fault");
    assert_eq!((f.seq, f.kind), (25, FaultKind::HashMismatch));
}

/// The per-commit statistics kept on append are derived data: any edit of
/// the table — a count, a mean moved by one ulp, a row removed or added —
/// is a fault, whoever makes it and whether or not triggers are in place
/// (the table is updated in place, so it has no guard).
#[test]
fn edited_commit_stats_are_caught() {
    let edits = [
        "UPDATE commit_stats SET n = n + 1 WHERE rowid IN (SELECT rowid FROM commit_stats LIMIT 1)",
        "UPDATE commit_stats SET mean = mean * (1 + 2.3e-16) WHERE commit_id = (SELECT min(commit_id) FROM commit_stats)",
        "UPDATE commit_stats SET max = 1e9 WHERE commit_id = (SELECT min(commit_id) FROM commit_stats)",
        "UPDATE commit_stats SET last_seq = last_seq - 1 WHERE commit_id = (SELECT min(commit_id) FROM commit_stats)",
        "DELETE FROM commit_stats WHERE commit_id = (SELECT max(commit_id) FROM commit_stats)",
        "INSERT INTO commit_stats SELECT scorer, 'v-forged', commit_id, n, mean, m2, min, max, last_seq FROM commit_stats LIMIT 1",
        "INSERT INTO commit_stats SELECT 'ghost', scorer_version, commit_id, n, mean, m2, min, max, last_seq FROM commit_stats LIMIT 1",
    ];
    for sql in edits {
        let (_d, mut s) = new_store();
        fill(&mut s, 40);
        let before = view(&s).commit_stats("acc", ratchet_trace::AsOf::Head);
        // A plain client: no trigger stands in the way of this table.
        let raw = rusqlite::Connection::open(db_path(s.dir())).expect("raw");
        let changed = raw.execute(sql, []).map_err(|e| format!("{sql}: {e}"));
        drop(raw);
        match changed {
            // WITHOUT ROWID tables have no rowid: that edit is spelled per commit instead.
            Err(e) if e.contains("no such column: rowid") => {
                attacker(s.dir())
                    .execute(
                        "UPDATE commit_stats SET n = n + 1 WHERE commit_id = (SELECT min(commit_id) FROM commit_stats)",
                        [],
                    )
                    .expect("edit");
            }
            Err(e) => panic!("{e}"),
            Ok(n) => assert_eq!(n, 1, "{sql}"),
        }
        let (seq, kind) = first_fault(&s);
        assert!(
            seq == 0 && matches!(kind, FaultKind::SummaryMismatch { .. }),
            "{sql}: {seq} {kind:?}"
        );
        // No decision reads the edited table: verification refuses, and
        // hands out no view.
        let (seq, kind) = refused(s.verified(&VerifyOptions::default()));
        assert!(
            seq == 0 && matches!(kind, FaultKind::SummaryMismatch { .. }),
            "{sql}: {seq} {kind:?}"
        );
        let (report, folded) = s
            .verify_and_fold(&VerifyOptions::default())
            .expect("verification runs");
        assert!(!report.is_valid() && folded.is_none(), "{sql}");
        // The figures never came from the table: once it is rebuilt from the
        // score rows, the view is what it was before the edit, to the bit.
        s.rebuild_commit_stats().expect("rebuild");
        assert_eq!(
            bits(&view(&s).commit_stats("acc", ratchet_trace::AsOf::Head)),
            bits(&before),
            "{sql}"
        );
    }
}

/// A careless `DELETE FROM commit_stats` (the one table without a DELETE
/// guard) makes the store fail verification; `rebuild_commit_stats` brings
/// it back from the score rows, and cannot launder an edited score.
#[test]
fn damaged_commit_stats_are_rebuilt_from_the_scores() {
    let (_d, mut s) = new_store();
    fill(&mut s, 40);
    let before = view(&s).commit_stats("acc", ratchet_trace::AsOf::Head);
    let raw = rusqlite::Connection::open(db_path(s.dir())).expect("raw");
    raw.execute("DELETE FROM commit_stats", [])
        .expect("careless delete");
    drop(raw);
    assert!(!s.verify().expect("verify").is_valid());
    s.rebuild_commit_stats().expect("rebuild");
    assert!(s.verify().expect("verify").is_valid());
    assert_eq!(
        bits(&view(&s).commit_stats("acc", ratchet_trace::AsOf::Head)),
        bits(&before)
    );
    // An edited score: rebuilding folds it in, and verification still
    // finds the edit at its seq (the score row disagrees with its event).
    let seq = view(&s).scores()[0].0;
    attacker(s.dir())
        .execute("UPDATE scores SET value = 1.0 WHERE seq = ?1", [seq as i64])
        .expect("edit");
    s.rebuild_commit_stats().expect("rebuild");
    assert_eq!(first_fault(&s).0, seq);
    assert_eq!(refused(s.verified(&VerifyOptions::default())).0, seq);
}
