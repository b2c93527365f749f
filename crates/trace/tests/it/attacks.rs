//! Attacks on the store's promises, each written as someone with write
//! access to the files (but not the writer key) would run it. The gate's
//! side of the same attacks (a reject never turns into a promote) is in
//! `crates/gate/tests/it/attacks.rs`.

use crate::common;

use common::*;
use ratchet_trace::{
    AsOf, Error, EventDraft, FaultKind, MergeOptions, ReservedKind, Score, StoreOptions, TestRun,
    VerifyOptions, WriterKey,
};

#[test]
fn a_planted_trigger_is_a_fault_and_stops_every_later_write() {
    let (_d, mut s) = new_store();
    fill(&mut s, 5);
    // Added before honest appends: it would write a flipped twin of every
    // honest score at a negative seq.
    rusqlite::Connection::open(db_path(s.dir()))
        .expect("raw")
        .execute_batch(
            "CREATE TRIGGER evil AFTER INSERT ON scores BEGIN
               INSERT INTO scores VALUES (-NEW.seq, NEW.commit_id, NEW.task, NEW.scorer,
                 NEW.scorer_version, 1.0 - NEW.value, NULL, NULL, 0);
             END;",
        )
        .expect("plant");
    let err = s
        .record_score(&Score::new(commit(1), "t", "acc", 0.25), "s")
        .expect_err("an altered schema takes no write");
    assert!(
        matches!(&err, Error::SchemaAltered { what } if what.contains("trigger evil was added")),
        "{err}"
    );
    let (seq, kind) = first_fault(&reopen(s.dir()));
    assert_eq!(seq, 0, "the store as a whole");
    assert!(
        matches!(&kind, FaultKind::SchemaAltered { what } if what.contains("evil")),
        "{kind:?}"
    );
}

#[test]
fn every_kind_of_schema_change_is_named() {
    for (sql, what) in [
        (
            "CREATE VIEW best AS SELECT * FROM scores",
            "view best was added",
        ),
        ("CREATE TABLE extra (x)", "table extra was added"),
        (
            "CREATE INDEX sneaky ON scores (value)",
            "index sneaky was added",
        ),
        ("DROP INDEX scores_by_scorer_commit", "was dropped"),
        ("DROP TRIGGER scores_no_update", "was dropped"),
    ] {
        let (_d, mut s) = new_store();
        fill(&mut s, 3);
        rusqlite::Connection::open(db_path(s.dir()))
            .expect("raw")
            .execute_batch(sql)
            .expect(sql);
        let (seq, kind) = first_fault(&reopen(s.dir()));
        assert_eq!(seq, 0, "{sql}");
        assert!(
            matches!(&kind, FaultKind::SchemaAltered { what: w } if w.contains(what)),
            "{sql}: {kind:?}"
        );
    }
}

#[test]
fn an_altered_table_definition_is_caught() {
    // `writable_schema` rewrites the SQL text SQLite keeps for a table (here:
    // the value column loses its REAL affinity, so text could be stored).
    let (_d, mut s) = new_store();
    fill(&mut s, 3);
    let raw = rusqlite::Connection::open(db_path(s.dir())).expect("raw");
    raw.execute_batch(
        "PRAGMA writable_schema = ON;
         UPDATE sqlite_schema SET sql = replace(sql, 'value          REAL NOT NULL', 'value ANY')
           WHERE name = 'scores';
         PRAGMA writable_schema = OFF;",
    )
    .expect("rewrite");
    drop(raw);
    let (seq, kind) = first_fault(&reopen(s.dir()));
    assert_eq!(seq, 0);
    assert!(
        matches!(&kind, FaultKind::SchemaAltered { what } if what.contains("table scores was altered")),
        "{kind:?}"
    );
}

#[test]
fn metadata_added_by_hand_is_caught() {
    let (_d, s) = filled_then_edited(
        3,
        "INSERT INTO meta (key, value) VALUES ('trusted_prefix', '3')",
    );
    let (seq, kind) = first_fault(&reopen(s.dir()));
    assert_eq!(seq, 0);
    assert!(
        matches!(&kind, FaultKind::SchemaAltered { what } if what.contains("trusted_prefix")),
        "{kind:?}"
    );
}

#[test]
fn rows_below_seq_one_are_outside_the_chain_in_every_table() {
    for (table, sql) in [
        (
            "scores",
            format!(
                "INSERT INTO scores VALUES (0, '{}', 't', 'acc', '1', 1.0, NULL, NULL, 0)",
                commit(2)
            ),
        ),
        (
            "test_runs",
            format!(
                "INSERT INTO test_runs VALUES (-7, '{}', 'unit', 10, 0, 0, 1.0)",
                commit(2)
            ),
        ),
        (
            "events",
            "INSERT INTO events SELECT -1, id, ts_ms, cell, session, kind, commit_id, payload,
               origin_store, origin_seq, origin_hash, prev_hash, hash, mac FROM events WHERE seq = 1"
                .to_string(),
        ),
    ] {
        let (_d, s) = filled_then_edited(4, &sql);
        let (seq, kind) = first_fault(&reopen(s.dir()));
        assert_eq!(seq, 0, "{table}");
        assert!(
            matches!(kind, FaultKind::OutsideChain { table: t, .. } if t == table),
            "{table}: {kind:?}"
        );
    }
}

#[test]
fn a_second_event_with_an_existing_id_is_caught() {
    // Event 3 is a test run, event 4 a note: each copied (its id included)
    // to the end, the chain relinked — and the test run's projection row
    // copied too, so the repeated id is the only thing wrong.
    for (from, projection) in [
        (
            3,
            Some(
                "INSERT INTO test_runs SELECT 9, commit_id, suite, passed, failed, skipped, duration_ms FROM test_runs WHERE seq = 3",
            ),
        ),
        (4, None),
    ] {
        let (_d, mut s) = new_store();
        fill(&mut s, 8);
        let a = attacker(s.dir());
        a.execute(
            "INSERT INTO events SELECT 9, id, ts_ms, cell, session, kind, commit_id, payload,
               origin_store, origin_seq, origin_hash, prev_hash, hash, mac FROM events WHERE seq = ?1",
            [from],
        )
        .expect("copy");
        if let Some(sql) = projection {
            a.execute(sql, []).expect("copy the projection row");
        }
        recompute_chain(&a, s.id(), 9);
        drop(a);
        let s = reopen(s.dir());
        assert_eq!(
            first_fault(&s),
            (
                9,
                FaultKind::DuplicateId {
                    first_seq: from as u64
                }
            ),
            "copy of {from}"
        );
        assert_eq!(
            refused(s.verified(&VerifyOptions::default())),
            (
                9,
                FaultKind::DuplicateId {
                    first_seq: from as u64
                }
            )
        );
    }
}

#[test]
fn reserved_kinds_are_refused_to_generic_appends_and_left_to_their_owners() {
    let (_d, mut s) = new_store();
    for kind in ReservedKind::ALL {
        for draft in [
            EventDraft::raw(kind.as_str(), "{}"),
            EventDraft::json(kind.as_str(), &serde_json::json!({"x": 1})).expect("json"),
        ] {
            let err = s.append(draft.clone()).expect_err(kind.as_str());
            assert!(
                matches!(&err, Error::ReservedKind { kind: k, .. } if k == kind.as_str()),
                "{err}"
            );
            let in_batch = s
                .append_batch([EventDraft::raw("note", "{}"), draft])
                .expect_err("in a batch too");
            assert!(matches!(in_batch, Error::ReservedKind { .. }), "{in_batch}");
        }
    }
    assert_eq!(s.head().expect("head").size, 0, "nothing stored");
    // The owners' typed path writes them.
    s.append(
        EventDraft::reserved(ReservedKind::Alarm, &serde_json::json!({"x": 1})).expect("draft"),
    )
    .expect("owner writes");
    assert!(s.verify().expect("verify").is_valid());
}

#[test]
fn negative_zero_and_every_spelling_of_it_round_trip() {
    let (_d, mut s) = new_store();
    let c = commit(3);
    let mut score = Score::new(c.clone(), "t0", "acc", -0.0);
    score.cost = Some(-0.0);
    score.latency_ms = Some(-0.0);
    s.record_score(&score, "s").expect("record");
    s.record_test_run(
        &TestRun {
            commit: c.clone(),
            suite: "unit".into(),
            passed: 1,
            failed: 0,
            skipped: 0,
            duration_ms: -0.0,
            failures: Vec::new(),
        },
        "s",
    )
    .expect("test run");
    for (i, spelling) in ["-0", "-0.0", "-0e0", "-0E+3", "-0.000"].iter().enumerate() {
        let payload = format!(
            r#"{{"task":"t{}","scorer":"acc","scorer_version":"1","value":{spelling},"cost":{spelling},"latency_ms":{spelling}}}"#,
            i + 1
        );
        s.append(EventDraft::raw("score", payload).commit(c.clone()))
            .expect(spelling);
        let run = format!(
            r#"{{"suite":"s{i}","passed":1,"failed":0,"skipped":0,"duration_ms":{spelling}}}"#
        );
        s.append(EventDraft::raw("test_run", run).commit(c.clone()))
            .expect(spelling);
    }
    let v = view(&reopen(s.dir()));
    let scores = v.scores();
    assert_eq!(scores.len(), 6);
    for (_, sc) in scores {
        assert_eq!(sc.commit, c);
        assert_eq!(sc.value.to_bits(), 0.0f64.to_bits());
        assert_eq!(sc.cost.map(f64::to_bits), Some(0.0f64.to_bits()));
        assert_eq!(sc.latency_ms.map(f64::to_bits), Some(0.0f64.to_bits()));
    }
    for (_, run) in v.test_runs(&c, AsOf::Head) {
        assert_eq!(run.duration_ms.to_bits(), 0.0f64.to_bits());
    }
}

#[test]
fn a_keyed_cell_is_not_merged_without_its_key() {
    let (key, _) = WriterKey::generate().expect("key");
    let (_h, mut home) = new_store();
    let (_c, mut cell) = new_store_with(StoreOptions::default().writer_key(key.clone()));
    fill(&mut cell, 5);
    let err = home
        .merge_cell(cell.dir(), &MergeOptions::default())
        .expect_err("no key, no merge");
    assert!(matches!(err, Error::CellKeyRequired { .. }), "{err}");
    assert_eq!(home.head().expect("head").size, 0, "nothing ingested");
    let r = home
        .merge_cell(cell.dir(), &MergeOptions::default().cell_key(key))
        .expect("with its key");
    assert_eq!(r.ingested, 5);
}

#[test]
fn a_cell_cannot_name_another_producer() {
    let (_h, mut home) = new_store();
    let (_o, other) = new_store();
    let (_c, mut cell) = new_store();
    fill(&mut home, 2);
    fill(&mut cell, 4);
    for claimed in [home.id().to_string(), other.id().to_string()] {
        let copy = tempfile::tempdir().expect("tempdir");
        let dst = copy.path().join("cell");
        std::fs::create_dir_all(&dst).expect("mkdir");
        rusqlite::Connection::open(db_path(cell.dir()))
            .expect("src")
            .execute("VACUUM INTO ?1", [db_path(&dst).to_str().expect("utf8")])
            .expect("copy");
        let a = attacker(&dst);
        a.execute("UPDATE events SET cell = ?1 WHERE seq = 3", [&claimed])
            .expect("claim");
        recompute_chain(&a, cell.id(), 3);
        drop(a);
        assert!(
            reopen(&dst).verify().expect("verify").is_valid(),
            "a valid chain"
        );
        let before = home.head().expect("head");
        let err = home
            .merge_cell(&dst, &MergeOptions::default())
            .expect_err("forged producer");
        assert!(
            matches!(&err, Error::ForgedProducer { seq: 3, claimed: c, .. } if *c == claimed),
            "{err}"
        );
        assert_eq!(home.head().expect("head"), before, "nothing ingested");
    }
}

#[test]
fn verification_uses_the_key_the_store_was_opened_with() {
    let (key, _) = WriterKey::generate().expect("key");
    let (_d, mut s) = new_store_with(StoreOptions::default().writer_key(key.clone()));
    fill(&mut s, 6);
    let a = attacker(s.dir());
    a.execute("UPDATE events SET mac = NULL WHERE seq = 4", [])
        .expect("strip");
    drop(a);
    assert_eq!(first_fault(&s), (4, FaultKind::MacMissing));
    // Opened without it: the plain chain is fine, and the report (and
    // `verified`) say the MACs were not checked.
    let plain = reopen(s.dir());
    let r = plain.verify().expect("verify");
    assert!(r.is_valid() && r.keyed && !r.macs_checked && r.macs_unchecked());
    let err = plain
        .verified(&VerifyOptions::default())
        .expect_err("fails closed");
    assert!(matches!(err, Error::MacsUnchecked { .. }), "{err}");
}
