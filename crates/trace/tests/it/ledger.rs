//! The warm owner: a [`Ledger`] verifies once, then folds only what is new
//! (checked to chain from the head it holds) and what it appends itself.
//! Its view must always be the view a cold verification would hand out —
//! and no edit of rows it already folded may change it.

use crate::common;

use common::*;
use ratchet_trace::{
    AppendOnce, AsOf, Error, EventDraft, FaultKind, Ledger, Score, Store, StoreOptions, TestRun,
    Ulid, Verified, VerifyOptions, WriterKey,
};

/// Everything a decision can read of a view, compared between a warm view
/// and a cold one: statistics to the bit, and the rest by value.
fn assert_same_view(warm: &Verified, cold: &Verified) {
    assert_eq!(warm.head(), cold.head(), "head");
    assert_eq!(warm.store_id(), cold.store_id());
    assert_eq!(warm.overview(), cold.overview(), "overview");
    assert_eq!(warm.score_count(), cold.score_count());
    assert_eq!(warm.events(), cold.events(), "events kept whole");
    assert_eq!(warm.scores(), cold.scores(), "scores");
    for scorer in ["acc", "lat", "none"] {
        assert_eq!(
            bits(&warm.commit_stats(scorer, AsOf::Head)),
            bits(&cold.commit_stats(scorer, AsOf::Head)),
            "{scorer} statistics"
        );
        assert_eq!(
            warm.scorer_versions(scorer, AsOf::Head),
            cold.scorer_versions(scorer, AsOf::Head)
        );
        for (a, b) in [(0u8, 1u8), (1, 2), (3, 0)] {
            assert_eq!(
                warm.paired_scores(&commit(a), &commit(b), scorer, AsOf::Head),
                cold.paired_scores(&commit(a), &commit(b), scorer, AsOf::Head)
            );
        }
    }
    for c in 0..4 {
        assert_eq!(
            warm.test_runs(&commit(c), AsOf::Head),
            cold.test_runs(&commit(c), AsOf::Head)
        );
    }
}

fn scores(from: usize, n: usize) -> Vec<Score> {
    (from..from + n)
        .map(|i| {
            let mut s = Score::new(
                commit((i % 4) as u8),
                format!("t{}", i % 9),
                if i % 5 == 0 { "lat" } else { "acc" },
                ((i * 7919) % 1000) as f64 / 999.0 - 0.25,
            );
            s.scorer_version = format!("v{}", i % 2);
            s
        })
        .collect()
}

/// (a) Another handle's appends are folded by a refresh, which reports how
/// many there were; the warm view is the cold one, statistics to the bit.
#[test]
fn refresh_folds_what_another_handle_appended() {
    let (_d, mut s) = new_store();
    fill(&mut s, 20);
    let dir = s.dir().to_path_buf();
    let mut ledger = Ledger::new(s, VerifyOptions::default()).expect("ledger");
    assert_eq!(ledger.view().head().size, 20);
    assert_eq!(ledger.refresh().expect("nothing new"), 0);

    let mut other = Store::open(&dir, StoreOptions::default()).expect("other handle");
    let mut appended = 0u64;
    for round in 0..5 {
        other
            .record_scores(&scores(round * 100, 40 + round * 30), "other")
            .expect("scores");
        fill(&mut other, 7);
        other
            .record_test_run(
                &TestRun {
                    commit: commit(round as u8 % 4),
                    suite: format!("suite{round}"),
                    passed: 5,
                    failed: round as u64 % 2,
                    skipped: 0,
                    duration_ms: 2.5,
                    failures: Vec::new(),
                },
                "ci",
            )
            .expect("run");
        let n = (40 + round * 30 + 7 + 1) as u64;
        appended += n;
        assert_eq!(ledger.refresh().expect("refresh"), n, "round {round}");
        assert_eq!(ledger.view().head(), other.head().expect("head"));
        assert_same_view(ledger.view(), &view(&other));
        assert_eq!(ledger.refresh().expect("again"), 0, "nothing twice");
    }
    assert_eq!(ledger.view().head().size, 20 + appended);
    // The view's report moves with its head.
    assert_eq!(ledger.view().report().size, 20 + appended);
    assert!(ledger.view().report().is_valid());
}

/// (b) What the ledger appends is folded in as it is written: no refresh
/// needed, and the view is the cold one.
#[test]
fn appends_through_the_ledger_fold_in_without_a_refresh() {
    let (_d, s) = new_store();
    let mut ledger = Ledger::new(s, VerifyOptions::default()).expect("ledger");
    let check = |ledger: &Ledger| {
        assert_eq!(
            ledger.view().head(),
            ledger.store().head().expect("head"),
            "the view's head is the store's"
        );
        assert_same_view(ledger.view(), &view(ledger.store()));
    };
    let r = ledger
        .record_score(&Score::new(commit(1), "t0", "acc", 0.5), "one")
        .expect("score");
    assert_eq!(r.seq, 1);
    check(&ledger);
    let receipts = ledger
        .record_scores(&scores(0, 300), "batch")
        .expect("scores");
    assert_eq!(receipts.len(), 300);
    check(&ledger);
    ledger
        .record_test_run(
            &TestRun {
                commit: commit(2),
                suite: "unit".into(),
                passed: 9,
                failed: 1,
                skipped: 0,
                duration_ms: 3.0,
                failures: Vec::new(),
            },
            "ci",
        )
        .expect("run");
    ledger
        .append(
            EventDraft::json("note", &serde_json::json!({"hello": "ledger"}))
                .expect("draft")
                .session("n"),
        )
        .expect("note");
    ledger
        .append_batch((0..50).map(mixed_draft).collect())
        .expect("batch");
    check(&ledger);
    let drafts = || {
        scores(1000, 3)
            .iter()
            .map(|s| s.to_draft().expect("draft"))
            .collect::<Vec<_>>()
    };
    let once = ledger.append_once("report:1", drafts()).expect("once");
    assert!(matches!(once, AppendOnce::Appended(ref r) if r.len() == 3));
    check(&ledger);
    let size = ledger.view().head().size;
    let again = ledger.append_once("report:1", drafts()).expect("again");
    assert!(
        matches!(again, AppendOnce::AlreadyAppended { .. }),
        "{again:?}"
    );
    assert_eq!(ledger.view().head().size, size, "nothing appended twice");
    check(&ledger);
    assert_eq!(
        ledger.refresh().expect("refresh"),
        0,
        "every append was already folded"
    );
    let acc: u64 = ledger
        .view()
        .commit_stats("acc", AsOf::Head)
        .iter()
        .map(|c| c.n)
        .sum();
    let want = 1
        + scores(0, 300).iter().filter(|s| s.scorer == "acc").count()
        + scores(1000, 3).iter().filter(|s| s.scorer == "acc").count()
        + (0..50).filter(|i| i % 3 == 1).count();
    assert_eq!(acc, want as u64);

    // Another handle appends between two ledger appends: the ledger's next
    // append reads the gap and folds both.
    let mut other = Store::open(ledger.store().dir(), StoreOptions::default()).expect("other");
    fill(&mut other, 11);
    ledger
        .record_score(&Score::new(commit(3), "late", "acc", 0.75), "one")
        .expect("score");
    check(&ledger);
    assert_eq!(ledger.view().head().size, size + 11 + 1);
}

/// The seq and payload of a score the tests below edit: an `acc` score of
/// commit 2 whose value, 0.625, is spelled once in its payload.
fn a_store_with_an_edit_target() -> (tempfile::TempDir, Store, u64) {
    let (d, mut s) = new_store();
    fill(&mut s, 12);
    let target = s
        .record_score(&Score::new(commit(2), "edited", "acc", 0.625), "s")
        .expect("target")
        .seq;
    fill(&mut s, 12);
    (d, s, target)
}

/// (c) A file writer edits an earlier row — a score's payload, its
/// projection row and the kept statistics, all consistent — after the
/// ledger was built. The warm view is not read again, so it keeps the
/// honest value through refreshes; a cold verification and `reverify` name
/// the edited seq.
#[test]
fn an_edit_of_a_folded_row_cannot_change_the_warm_view() {
    let (_d, s, target) = a_store_with_an_edit_target();
    let dir = s.dir().to_path_buf();
    let mut ledger = Ledger::new(s, VerifyOptions::default()).expect("ledger");
    let honest = ledger.view().commit_stats("acc", AsOf::Head);
    let honest_score = ledger
        .view()
        .scores()
        .into_iter()
        .find(|(seq, _)| *seq == target)
        .expect("the target")
        .1;
    assert_eq!(honest_score.value.to_bits(), 0.625f64.to_bits());
    {
        let a = attacker(&dir);
        let n = a
            .execute(
                "UPDATE events SET payload = CAST(replace(CAST(payload AS TEXT), '0.625', '0.999') AS BLOB)
                  WHERE seq = ?1",
                [target as i64],
            )
            .expect("edit the payload");
        assert_eq!(n, 1);
        a.execute(
            "UPDATE scores SET value = 0.999 WHERE seq = ?1",
            [target as i64],
        )
        .expect("edit the projection");
        refold_commit_stats(&a);
        let payload: String = a
            .query_row(
                "SELECT CAST(payload AS TEXT) FROM events WHERE seq = ?1",
                [target as i64],
                |r| r.get(0),
            )
            .expect("payload");
        assert!(payload.contains("0.999"), "{payload}");
    }
    // Another handle keeps appending; the ledger folds only that.
    let mut other = Store::open(&dir, StoreOptions::default()).expect("other");
    other
        .record_score(&Score::new(commit(1), "after", "acc", 0.5), "other")
        .expect("append after the edit");
    assert_eq!(ledger.refresh().expect("the new event chains"), 1);
    let warm = ledger.view();
    let kept = warm
        .scores()
        .into_iter()
        .find(|(seq, _)| *seq == target)
        .expect("the target")
        .1;
    assert_eq!(kept, honest_score, "the warm view keeps the honest score");
    let c2 = |stats: &[ratchet_trace::CommitStats]| {
        stats
            .iter()
            .find(|c| c.commit == commit(2))
            .map(|c| (c.n, c.mean.to_bits()))
    };
    assert_eq!(
        c2(&warm.commit_stats("acc", AsOf::Head)),
        c2(&honest),
        "commit 2's figures are the honest ones"
    );

    // A cold verification, and the ledger's own, find the edit at its seq.
    let fresh = Store::open(&dir, StoreOptions::default()).expect("fresh");
    assert_eq!(
        refused(fresh.verified(&VerifyOptions::default())),
        (target, FaultKind::HashMismatch)
    );
    let head = ledger.view().head();
    match ledger.reverify() {
        Err(Error::Tampered { fault }) => {
            assert_eq!((fault.seq, fault.kind), (target, FaultKind::HashMismatch));
        }
        other => panic!("reverify must refuse the edit: {other:?}"),
    }
    assert_eq!(
        ledger.view().head(),
        head,
        "a failed reverify keeps the view"
    );
    assert_eq!(
        c2(&ledger.view().commit_stats("acc", AsOf::Head)),
        c2(&honest)
    );
}

/// (d) The head row's hash rewritten, then a new event appended by another
/// handle (which links to the rewritten hash): the new event does not
/// chain from the head the ledger holds, so the refresh refuses it and the
/// view stays as it was.
#[test]
fn a_new_event_that_does_not_chain_from_the_held_head_is_refused() {
    let (_d, mut s) = new_store();
    fill(&mut s, 30);
    let dir = s.dir().to_path_buf();
    let mut ledger = Ledger::new(s, VerifyOptions::default()).expect("ledger");
    let before = ledger.view().head();
    let stats = ledger.view().commit_stats("acc", AsOf::Head);
    attacker(&dir)
        .execute(
            "UPDATE events SET hash = ?1 WHERE seq = ?2",
            rusqlite::params![&[7u8; 32][..], before.size as i64],
        )
        .expect("rewrite the head's hash");
    let mut other = Store::open(&dir, StoreOptions::default()).expect("other");
    let r = other
        .record_score(&Score::new(commit(1), "new", "acc", 1.0), "other")
        .expect("append");
    assert_eq!(r.seq, before.size + 1);
    match ledger.refresh() {
        Err(Error::Tampered { fault }) => {
            assert_eq!(fault.seq, before.size + 1, "{fault:?}");
            assert_eq!(fault.kind, FaultKind::BrokenLink, "{fault:?}");
        }
        other => panic!("the refresh must refuse the new event: {other:?}"),
    }
    assert_eq!(ledger.view().head(), before, "the view is unchanged");
    assert_eq!(
        bits(&ledger.view().commit_stats("acc", AsOf::Head)),
        bits(&stats)
    );
    assert!(
        matches!(ledger.refresh(), Err(Error::Tampered { .. })),
        "and stays refused: nothing was folded"
    );
    // A cold verification names the rewritten head row.
    assert_eq!(
        refused(
            Store::open(&dir, StoreOptions::default())
                .expect("open")
                .verified(&VerifyOptions::default())
        )
        .0,
        before.size
    );
}

/// Inserts a copy of the note at `note_seq` at `seq` (a new id, no MAC),
/// links it to the row before and hashes it as the documented layout says:
/// a perfect plain-chain forgery, short only of the writer key.
fn forge_next(
    dir: &std::path::Path,
    store_id: &str,
    note_seq: u64,
    seq: u64,
    mac: Option<[u8; 32]>,
) {
    let a = attacker(dir);
    let id = Ulid::from_parts(4_102_444_800_000, 0x5eed).0.to_be_bytes();
    a.execute(
        "INSERT INTO events SELECT ?1, ?2, ts_ms, cell, session, kind, commit_id, payload,
           origin_store, origin_seq, origin_hash, prev_hash, hash, NULL FROM events WHERE seq = ?3",
        rusqlite::params![seq as i64, &id[..], note_seq as i64],
    )
    .expect("forge");
    recompute_chain(&a, store_id, seq as i64);
    if let Some(mac) = mac {
        a.execute(
            "UPDATE events SET mac = ?1 WHERE seq = ?2",
            rusqlite::params![&mac[..], seq as i64],
        )
        .expect("mac");
    }
}

/// (e) A keyed store: the ledger holds the key. A writer without it cannot
/// append at all; a row forged at the next seq with SQL — linked and
/// hashed perfectly, but with no MAC or a made-up one — is refused by the
/// refresh, and the view stays as it was.
#[test]
fn a_keyed_ledger_refuses_a_forged_next_row() {
    let (key, _) = WriterKey::generate().expect("key");
    for (mac, store_has_key) in [
        (None, true),
        (Some([0xab; 32]), true),
        (None, false),
        (Some([0x01; 32]), false),
    ] {
        let (_d, mut s) = new_store_with(StoreOptions::default().writer_key(key.clone()));
        fill(&mut s, 9);
        let dir = s.dir().to_path_buf();
        let id = s.id().to_string();
        drop(s);
        let opened = if store_has_key {
            StoreOptions::default().writer_key(key.clone())
        } else {
            StoreOptions::default()
        };
        let store = Store::open(&dir, opened).expect("open");
        assert!(
            matches!(
                Ledger::new(
                    Store::open(&dir, StoreOptions::default()).expect("open"),
                    VerifyOptions::default()
                ),
                Err(Error::MacsUnchecked { .. })
            ),
            "no warm owner of a keyed store without its key"
        );
        let mut ledger =
            Ledger::new(store, VerifyOptions::default().key(key.clone())).expect("ledger");
        assert!(ledger.view().report().macs_checked);
        let before = ledger.view().head();
        let overview = ledger.view().overview();

        // A writer without the key cannot append.
        let mut keyless = Store::open(&dir, StoreOptions::default()).expect("keyless");
        let err = keyless
            .record_score(&Score::new(commit(1), "t", "acc", 1.0), "x")
            .expect_err("no key, no append");
        assert!(matches!(err, Error::KeyRequired), "{err}");
        assert_eq!(ledger.refresh().expect("nothing new"), 0);

        // So the file writer forges the next row by hand.
        forge_next(&dir, &id, 1, before.size + 1, mac);
        let want = if mac.is_some() {
            FaultKind::MacMismatch
        } else {
            FaultKind::MacMissing
        };
        match ledger.refresh() {
            Err(Error::Tampered { fault }) => {
                assert_eq!(
                    (fault.seq, &fault.kind),
                    (before.size + 1, &want),
                    "{mac:?}"
                );
            }
            other => panic!("the forged row must be refused ({mac:?}): {other:?}"),
        }
        assert_eq!(ledger.view().head(), before, "the view is unchanged");
        assert_eq!(ledger.view().overview(), overview);
        // The plain chain is perfect: only the key tells.
        let plain = Store::open(&dir, StoreOptions::default())
            .expect("open")
            .verify()
            .expect("verify");
        assert!(plain.is_valid() && plain.macs_unchecked(), "{plain:?}");
        assert_eq!(
            refused(
                Store::open(&dir, StoreOptions::default())
                    .expect("open")
                    .verified(&VerifyOptions::default().key(key.clone()))
            ),
            (before.size + 1, want)
        );
    }
}

#[test]
fn a_warm_append_once_finds_its_key_in_the_view_and_past_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = Store::create(dir.path(), StoreOptions::default()).expect("store");
    let mut ledger = Ledger::new(store, VerifyOptions::default()).expect("ledger");
    let note = || vec![EventDraft::raw("note", "{}")];
    assert!(matches!(
        ledger.append_once("k1", note()),
        Ok(AppendOnce::Appended(_))
    ));
    // Found in the view: nothing written.
    let head = ledger.store().head().expect("head");
    assert!(matches!(
        ledger.append_once("k1", note()),
        Ok(AppendOnce::AlreadyAppended { seq: 2 })
    ));
    assert_eq!(ledger.store().head().expect("head"), head);
    // Another writer stores under k2 after the view's head: the write
    // transaction finds it among the events the view has not seen.
    let mut other = Store::open(dir.path(), StoreOptions::default()).expect("open");
    let Ok(AppendOnce::Appended(r)) = other.append_once("k2", note()) else {
        panic!("the other writer appends");
    };
    // The receipts are the batch's; its marker follows them.
    let marker = r.last().expect("receipt").seq + 1;
    let again = ledger.append_once("k2", note());
    assert!(
        matches!(again, Ok(AppendOnce::AlreadyAppended { seq }) if seq == marker),
        "{again:?}"
    );
    assert_eq!(
        other.head().expect("head").size,
        marker,
        "nothing stored twice"
    );
    // And the view followed: a cold verification agrees with it.
    let cold = Store::open(dir.path(), StoreOptions::default())
        .expect("open")
        .verified(&VerifyOptions::default())
        .expect("verified");
    assert_same_view(ledger.view(), &cold);
}

/// What the warm view holds per event, by kind, stated in benches/README.md
/// and bounded here: a caller's plain event (a note: a kind no decision
/// reads) costs the view nothing per event beyond its kind's count (it is
/// verified, counted, and left in the file); events a decision reads are
/// kept whole. `keep_all_events` (what an export asks for) keeps them all.
#[test]
fn the_view_holds_nothing_per_plain_event_and_states_what_it_holds_per_kept_one() {
    let n = 20_000usize;
    let per_event = |kind: &str, keep_all: bool| {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut store = Store::create(dir.path(), StoreOptions::default()).expect("store");
        let empty = store
            .verified(&VerifyOptions::default())
            .expect("view")
            .heap_bytes();
        let drafts: Vec<EventDraft> = (0..n)
            .map(|i| {
                EventDraft::json(kind, &serde_json::json!({ "n": i }))
                    .expect("draft")
                    .session("cell-1")
            })
            .collect();
        store.append_batch(drafts).expect("append");
        let options = if keep_all {
            VerifyOptions::default().keep_all_events()
        } else {
            VerifyOptions::default()
        };
        let mut ledger = Ledger::new(store, options).expect("ledger");
        let cold = (ledger.view().heap_bytes() - empty) as f64 / n as f64;
        // The warm path (folding what was just appended) holds the same.
        let more: Vec<EventDraft> = (0..100)
            .map(|i| EventDraft::json(kind, &serde_json::json!({ "m": i })).expect("draft"))
            .collect();
        ledger.append_batch(more).expect("append");
        assert_eq!(ledger.view().overview().kinds[kind], n as u64 + 100);
        cold
    };
    let note = per_event("note", false);
    let note_all = per_event("note", true);
    let observation = per_event("observation", false);
    println!(
        "view heap per event: note {note:.1} B, note with keep_all_events {note_all:.1} B, observation {observation:.1} B"
    );
    assert!(note < 1.0, "a note costs the view {note:.1} B");
    assert!(observation > 100.0, "an observation is kept whole");
    assert!(note_all > 100.0, "keep_all_events keeps notes whole");
}

/// A benchmark run's samples (`ratchet_scorers::Samples`) are read by a
/// per-benchmark comparison: the view keeps them whole, as it does
/// observations, while a note is only counted.
#[test]
fn samples_are_kept_whole_in_the_view_and_notes_are_not() {
    assert!(!ratchet_trace::is_plain("samples"));
    assert!(ratchet_trace::is_plain("note"));
    let dir = tempfile::tempdir().expect("tempdir");
    let mut store = Store::create(dir.path(), StoreOptions::default()).expect("store");
    let samples = serde_json::json!({ "values": [1.5, 2.5] });
    store
        .append_batch(vec![
            EventDraft::json("samples", &samples).expect("draft"),
            EventDraft::json("note", &serde_json::json!({ "n": 1 })).expect("draft"),
        ])
        .expect("append");
    let ledger = Ledger::new(store, VerifyOptions::default()).expect("ledger");
    let kept = ledger.view().events_of_kinds(&["samples", "note"]);
    assert_eq!(kept.len(), 1, "the note is counted, not kept");
    assert_eq!(
        serde_json::from_slice::<serde_json::Value>(&kept[0].payload).expect("json"),
        samples
    );
    assert_eq!(ledger.view().overview().kinds["note"], 1);
}
