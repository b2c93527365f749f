//! Opening, appending, bad input and queries.

use crate::common;

use common::*;
use ratchet_trace::{
    AsOf, CommitId, CommitStats, DEFAULT_MAX_INLINE_PAYLOAD, Error, EventDraft, Ledger, Score,
    ScorerRef, Store, StoreOptions, TestRun, Ulid, Verified, VerifyOptions,
};

#[test]
fn create_open_and_refuse_the_wrong_thing() {
    let d = tempfile::tempdir().expect("tempdir");
    let dir = d.path().join("s");
    assert!(matches!(
        Store::open(&dir, StoreOptions::default()),
        Err(Error::StoreMissing { .. })
    ));
    let s = Store::create(&dir, StoreOptions::default()).expect("create");
    let id = s.id().to_string();
    drop(s);
    assert!(matches!(
        Store::create(&dir, StoreOptions::default()),
        Err(Error::StoreExists { .. })
    ));
    assert_eq!(
        Store::open(&dir, StoreOptions::default())
            .expect("open")
            .id(),
        id
    );
    assert_eq!(
        Store::open_or_create(&dir, StoreOptions::default())
            .expect("open")
            .id(),
        id
    );

    // A file that is not a database.
    let junk = d.path().join("junk");
    std::fs::create_dir_all(&junk).expect("mkdir");
    std::fs::write(
        junk.join(ratchet_trace::DB_FILE),
        b"this is not sqlite at all, just text......",
    )
    .expect("write");
    let err = Store::open(&junk, StoreOptions::default()).expect_err("junk");
    assert!(matches!(err, Error::NotAStore { .. }), "{err}");

    // An SQLite database that is not a ratchet store.
    let other = d.path().join("other");
    std::fs::create_dir_all(&other).expect("mkdir");
    rusqlite::Connection::open(other.join(ratchet_trace::DB_FILE))
        .expect("sqlite")
        .execute_batch("CREATE TABLE t (x); PRAGMA application_id = 7;")
        .expect("table");
    let err = Store::open(&other, StoreOptions::default()).expect_err("foreign");
    assert!(matches!(err, Error::NotAStore { .. }), "{err}");
    assert!(err.to_string().contains("application_id"), "{err}");
}

#[test]
fn newer_schema_is_refused_with_versions_named() {
    let (_d, s) = new_store();
    let dir = s.dir().to_path_buf();
    drop(s);
    rusqlite::Connection::open(db_path(&dir))
        .expect("raw")
        .execute_batch("PRAGMA user_version = 99;")
        .expect("bump");
    let err = Store::open(&dir, StoreOptions::default()).expect_err("newer");
    assert!(
        matches!(
            err,
            Error::SchemaTooNew {
                found: 99,
                supported: ratchet_trace::SCHEMA_VERSION,
                ..
            }
        ),
        "{err}"
    );
}

/// Asserts that `err` is `Error::InvalidInput` naming `field`, showing it
/// when not: how each refused input below is checked.
#[track_caller]
fn assert_invalid_input(err: &Error, field: &str) {
    assert!(
        matches!(err, Error::InvalidInput { field: f, .. } if *f == field),
        "{err}"
    );
}

#[test]
fn bad_input_is_refused_and_nothing_stored() {
    let (_d, mut s) = new_store();
    fill(&mut s, 5);
    let before = s.events_after(0, 100).expect("read");
    let c = commit(1);
    let mut nan = Score::new(c.clone(), "t", "acc", f64::NAN);
    let err = s.record_score(&nan, "x").expect_err("nan");
    assert_invalid_input(&err, "score.value");
    nan.value = f64::INFINITY;
    assert!(matches!(
        s.record_score(&nan, "x"),
        Err(ratchet_trace::Error::InvalidInput {
            field: "score.value",
            ..
        })
    ));

    let err = CommitId::parse("abc123").expect_err("short commit");
    assert!(err.to_string().contains("full commit id"), "{err}");

    let err = s
        .append(EventDraft::raw("note", "{\"unterminated\": "))
        .expect_err("json");
    assert_invalid_input(&err, "payload");

    let big = format!("\"{}\"", "x".repeat(DEFAULT_MAX_INLINE_PAYLOAD));
    let err = s.append(EventDraft::raw("note", big)).expect_err("too big");
    assert!(matches!(err, Error::PayloadTooLarge { .. }), "{err}");
    assert!(
        err.to_string().contains("blob"),
        "says where big data goes: {err}"
    );

    // A bad event anywhere in a batch rejects the whole batch, naming its position.
    let batch = vec![
        mixed_draft(0),
        mixed_draft(1),
        EventDraft::raw("note", "nope"),
        mixed_draft(3),
    ];
    let err = s.append_batch(batch).expect_err("batch");
    assert!(err.to_string().contains("event #2"), "{err}");

    // A score event must carry a commit and a well-formed body.
    let err = s
        .append(EventDraft::raw(
            "score",
            r#"{"task":"t","scorer":"s","scorer_version":"1","value":1}"#,
        ))
        .expect_err("no commit");
    assert_invalid_input(&err, "commit");
    let err = s
        .append(
            EventDraft::raw(
                "score",
                r#"{"task":"t","scorer":"s","scorer_version":"1","value":"high"}"#,
            )
            .commit(c),
        )
        .expect_err("string value");
    assert_invalid_input(&err, "payload");

    assert_eq!(
        s.events_after(0, 100).expect("read"),
        before,
        "nothing stored"
    );
    assert!(s.verify().expect("verify").is_valid());
}

/// Long batches are prepared and hashed on a second thread while rows are
/// inserted (see `ChainWriter::insert_all`). The pipeline must keep what the
/// one-by-one path promises: a bad event anywhere — first, last, in any
/// hand-over chunk — stores nothing and is named by its position; a good
/// batch verifies, MACs included, with every projection row in place.
#[test]
fn long_batches_keep_every_promise_of_short_ones() {
    let key = ratchet_trace::WriterKey::from_secret(&[9u8; 32]).expect("key");
    let (_d, mut s) = new_store_with(StoreOptions::default().writer_key(key.clone()));
    fill(&mut s, 7);
    let before = s.head().expect("head");
    for bad in [0, 127, 128, 255, 256, 999] {
        let mut batch: Vec<EventDraft> = (0..1000).map(mixed_draft).collect();
        batch[bad] = EventDraft::raw("note", "nope");
        let err = s.append_batch(batch).expect_err("bad batch");
        assert!(
            err.to_string().contains(&format!("event #{bad} ")),
            "{bad}: {err}"
        );
        assert_eq!(s.head().expect("head"), before, "nothing stored ({bad})");
    }
    let receipts = s
        .append_batch((0..1000).map(mixed_draft))
        .expect("good batch");
    assert_eq!(receipts.len(), 1000);
    assert_eq!(receipts[999].seq, before.size + 1000);
    assert_eq!(s.head().expect("head").hash, receipts[999].hash);
    let r = s
        .verify_with(&ratchet_trace::VerifyOptions::default().key(key))
        .expect("verify");
    assert!(r.is_valid() && r.macs_checked, "{r:?}");
    let v = view(&s);
    assert!(v.report().macs_checked, "the store's own key is used");
    assert_eq!(v.scores().len(), 2 + 333, "every score folded");
    assert_eq!(v.score_count(), 2 + 333);
}

#[test]
fn ids_are_strictly_increasing_and_seqs_contiguous() {
    let (_d, mut s) = new_store();
    for _ in 0..20 {
        fill(&mut s, 7);
    }
    let events = s.events_after(0, usize::MAX).expect("read");
    assert_eq!(events.len(), 140);
    for w in events.windows(2) {
        assert!(w[0].id < w[1].id, "ids monotonic");
        assert_eq!(w[0].seq + 1, w[1].seq);
        assert_eq!(w[1].prev_hash, w[0].hash);
    }
    assert_eq!(events[0].prev_hash, s.genesis());
    assert!(events.iter().all(|e| e.cell == s.id()));
}

#[test]
fn point_reads_and_tail() {
    let (_d, mut s) = new_store();
    fill(&mut s, 2500);
    let e = s.event_by_seq(1234).expect("read").expect("exists");
    assert_eq!(s.event_by_id(e.id).expect("read"), Some(e.clone()));
    assert_eq!(s.event_by_id(Ulid::nil()).expect("read"), None);
    assert_eq!(s.event_by_seq(2501).expect("read"), None);

    let mut tail = s.tail(1000);
    let seqs: Vec<u64> = tail.by_ref().map(|e| e.expect("event").seq).collect();
    assert_eq!(seqs, (1001..=2500).collect::<Vec<_>>());
    assert_eq!(tail.position(), 2500);
    fill(&mut s, 3);
    let more: Vec<u64> = s.tail(2500).map(|e| e.expect("event").seq).collect();
    assert_eq!(more, vec![2501, 2502, 2503]);
}

/// The statistics the view keeps as it folds (read at the head) and a scan
/// of its scores (read at an earlier seq, once later scores exist) fold the
/// same values the same way: equal to the bit, one version or all, after
/// single appends, pipelined batches and merges, at every step. The view a
/// warm [`Ledger`] folded append by append (and merge by refresh) is the
/// cold verification's, to the bit; verification itself requires the
/// `commit_stats` table kept on append to be the refold of the score rows.
#[test]
fn kept_statistics_equal_a_scan_to_the_bit() {
    let (_d, s) = new_store();
    let (_c, mut cell) = new_store();
    let mut ledger = Ledger::new(s, VerifyOptions::default()).expect("ledger");
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let score = |r: u64, i: u64| {
        let mut sc = Score::new(
            commit((r % 6) as u8),
            format!("t{i}"),
            if r.is_multiple_of(7) { "cost" } else { "acc" },
            (r >> 11) as f64 / (1u64 << 53) as f64 * 100.0 - 50.0,
        );
        sc.scorer_version = format!("v{}", (r >> 3) % 3);
        sc
    };
    const VERSIONS: [Option<&str>; 4] = [None, Some("v0"), Some("v1"), Some("v2")];
    // The previous check's head and what it read there, per scorer × version.
    let mut before: Option<(u64, Vec<Vec<CommitStats>>)> = None;
    let mut scans = 0;
    let mut check = |ledger: &Ledger| {
        let cold = view(ledger.store());
        let warm = ledger.view();
        assert_eq!(warm.head(), cold.head(), "the ledger folded every event");
        let head = cold.head().size;
        let mut now = Vec::new();
        for scorer in ["acc", "cost"] {
            for version in VERSIONS {
                let at = |v: &Verified, as_of: AsOf| match version {
                    Some(ver) => v.commit_stats(ScorerRef::at_version(scorer, ver), as_of),
                    None => v.commit_stats(scorer, as_of),
                };
                let kept = at(&cold, AsOf::Head);
                assert_eq!(
                    bits(&kept),
                    bits(&at(warm, AsOf::Head)),
                    "warm = cold: {scorer} {version:?} at {head}"
                );
                assert_eq!(bits(&kept), bits(&at(&cold, AsOf::Seq(head))));
                if let Some((seq, old)) = &before {
                    let was = &old[now.len()];
                    let scanned = at(&cold, AsOf::Seq(*seq));
                    assert_eq!(
                        bits(&scanned),
                        bits(was),
                        "scan at {seq} = kept then: {scorer} {version:?}"
                    );
                    let n = |x: &[CommitStats]| x.iter().map(|s| s.n).sum::<u64>();
                    if n(&kept) > n(was) {
                        scans += 1;
                    }
                }
                for st in &kept {
                    let one = cold
                        .commit_stats_for(&st.commit, scorer, AsOf::Head)
                        .filter(|_| version.is_none());
                    if let Some(one) = one {
                        assert_eq!(bits(&[one]), bits(std::slice::from_ref(st)));
                    }
                }
                now.push(kept);
            }
        }
        for scorer in ["acc", "cost", "none"] {
            assert_eq!(
                cold.scorer_versions(scorer, AsOf::Head),
                cold.scorer_versions(scorer, AsOf::Seq(head)),
                "{scorer}"
            );
            assert_eq!(
                cold.scorer_versions(scorer, AsOf::Head),
                warm.scorer_versions(scorer, AsOf::Head),
                "{scorer}"
            );
            for (a, b) in [(0u8, 1u8), (2, 5), (3, 9)] {
                let shared = |v: &Verified, as_of: AsOf| {
                    v.shared_scorer_version(scorer, &commit(a), &commit(b), as_of)
                };
                assert_eq!(
                    shared(&cold, AsOf::Head),
                    shared(&cold, AsOf::Seq(head)),
                    "{scorer} {a} {b}"
                );
                assert_eq!(shared(&cold, AsOf::Head), shared(warm, AsOf::Head));
            }
        }
        before = Some((head, now));
    };
    let mut i = 0u64;
    for round in 0..6 {
        for _ in 0..5 {
            i += 1;
            ledger.record_score(&score(next(), i), "one").expect("one");
        }
        let batch: Vec<Score> = (0..300)
            .map(|_| {
                i += 1;
                score(next(), i)
            })
            .collect();
        ledger.record_scores(&batch, "batch").expect("batch");
        let cell_batch: Vec<Score> = (0..50 + round * 100)
            .map(|_| {
                i += 1;
                score(next(), i)
            })
            .collect();
        cell.record_scores(&cell_batch, "cell").expect("cell");
        let merged = ledger
            .store_mut()
            .merge_cell(cell.dir(), &ratchet_trace::MergeOptions::default())
            .expect("merge");
        assert_eq!(ledger.refresh().expect("refresh"), merged.ingested);
        check(&ledger);
    }
    assert!(scans > 0, "the scan path was compared");
    assert_eq!(ledger.view().commit_stats("acc", AsOf::Head).len(), 6);
}

#[test]
fn commit_stats_match_a_direct_computation() {
    let (_d, mut s) = new_store();
    let mut rng_state = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = || {
        rng_state ^= rng_state << 13;
        rng_state ^= rng_state >> 7;
        rng_state ^= rng_state << 17;
        (rng_state >> 11) as f64 / (1u64 << 53) as f64
    };
    let mut by_commit: std::collections::BTreeMap<String, Vec<f64>> = Default::default();
    let mut scores = Vec::new();
    for i in 0..3000 {
        let c = commit((i % 5) as u8);
        // Large offset, tiny spread: naive sum-of-squares variance would cancel.
        let v = 1.0e6 + next();
        by_commit.entry(c.to_string()).or_default().push(v);
        scores.push(Score::new(c, format!("t{i}"), "latency", v));
    }
    s.record_scores(&scores, "sim").expect("record");
    s.record_score(&Score::new(commit(9), "t", "other", 5.0), "sim")
        .expect("record");
    let v = view(&s);
    let stats = v.commit_stats("latency", AsOf::Head);
    assert_eq!(stats.len(), 5);
    for st in &stats {
        let xs = &by_commit[st.commit.as_str()];
        let n = xs.len() as f64;
        let mean = xs.iter().sum::<f64>() / n;
        let var = xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0);
        assert_eq!(st.n, xs.len() as u64);
        // Summation error bound for the direct computation: n·ε·max|x|.
        let tol = n * f64::EPSILON * 1.0e6 * 2.0;
        assert!((st.mean - mean).abs() <= tol, "{} vs {mean}", st.mean);
        let v = st.variance.expect("n >= 2");
        assert!((v - var).abs() / var < 1e-9, "variance {v} vs {var}");
        assert_eq!(
            st.min.to_bits(),
            xs.iter().cloned().fold(f64::INFINITY, f64::min).to_bits()
        );
        assert_eq!(
            st.max.to_bits(),
            xs.iter()
                .cloned()
                .fold(f64::NEG_INFINITY, f64::max)
                .to_bits()
        );
    }
    let one = v
        .commit_stats_for(&commit(9), "other", AsOf::Head)
        .expect("one");
    assert_eq!((one.n, one.variance), (1, None));
    assert_eq!(v.commit_stats_for(&commit(9), "latency", AsOf::Head), None);
}

/// `paired_scores` joins by task in the baseline's trace order (not by
/// name): a task is placed where the baseline first scored it, tasks only
/// the candidate has come last, and each side's values keep trace order.
#[test]
fn paired_scores_join_by_task_in_the_baselines_order() {
    let (_d, mut s) = new_store();
    let (a, b) = (commit(1), commit(2));
    let rows = [
        (&b, "t0", 0.05),
        (&a, "t9", 0.1),
        (&b, "t9", 0.2),
        (&a, "t2", 0.3),
        (&a, "t2", 0.35),
        (&b, "t3", 0.4),
        (&b, "t2", 0.5),
        (&a, "t0", 0.6),
    ];
    for (c, t, v) in rows {
        s.record_score(&Score::new(c.clone(), t, "acc", v), "p")
            .expect("record");
    }
    let v = view(&s);
    let p = v.paired_scores(&a, &b, "acc", AsOf::Head);
    let got: Vec<(&str, &[f64], &[f64])> = p
        .iter()
        .map(|t| (t.task, t.baseline, t.candidate))
        .collect();
    let want: Vec<(&str, &[f64], &[f64])> = vec![
        ("t9", &[0.1], &[0.2]),
        ("t2", &[0.3, 0.35], &[0.5]),
        // The baseline scored t0 last; the candidate's earlier score does
        // not move it.
        ("t0", &[0.6], &[0.05]),
        ("t3", &[], &[0.4]),
    ];
    assert_eq!(got, want);
    assert_eq!(p.find("t2").map(|t| t.baseline), Some(&[0.3, 0.35][..]));
    assert_eq!(p.find("nope"), None);
    // As of an earlier seq, later scores do not count: the order so far is
    // a prefix of the order at the head.
    let early = v.paired_scores(&a, &b, "acc", 4);
    let got: Vec<&str> = early.iter().map(|t| t.task).collect();
    assert_eq!(got, vec!["t9", "t2", "t0"]);
    assert!(v.paired_scores(&a, &b, "acc", 0).is_empty());
}

/// Whatever order the evidence arrives in, the baseline's tasks keep the
/// baseline's order at every seq: the order at one seq is a prefix of the
/// order at every later seq, counting the baseline's tasks only.
#[test]
fn the_baselines_order_only_grows() {
    let (_d, mut s) = new_store();
    let (a, b) = (commit(1), commit(2));
    let mut scores = Vec::new();
    for i in 0..500u32 {
        let task = format!("t{:03}", (i * 37) % 211);
        let c = if i % 3 == 0 { &a } else { &b };
        scores.push(Score::new(c.clone(), task, "acc", f64::from(i % 17) / 16.0));
    }
    s.record_scores(&scores, "p").expect("record");
    let v = view(&s);
    let head = v.head().size;
    let baseline_tasks = |at: u64| -> Vec<String> {
        v.paired_scores(&a, &b, "acc", at)
            .iter()
            .filter(|t| !t.baseline.is_empty())
            .map(|t| t.task.to_string())
            .collect()
    };
    let full = baseline_tasks(head);
    assert!(full.len() > 50);
    for at in (0..=head).step_by(7) {
        let part = baseline_tasks(at);
        assert_eq!(part[..], full[..part.len()], "as of {at}");
    }
}

#[test]
fn scores_and_test_runs_by_commit() {
    let (_d, mut s) = new_store();
    let c = commit(3);
    let run = TestRun {
        commit: c.clone(),
        suite: "unit".into(),
        passed: 10,
        failed: 1,
        skipped: 2,
        duration_ms: 3.5,
        failures: Vec::new(),
    };
    s.record_test_run(&run, "ci").expect("record");
    let mut sc = Score::new(c.clone(), "t", "acc", 0.9);
    sc.cost = Some(0.01);
    sc.latency_ms = Some(120.0);
    sc.holdout = true;
    s.record_score(&sc, "ci").expect("record");
    let v = view(&s);
    assert_eq!(v.test_runs(&c, AsOf::Head), vec![(1, run)]);
    assert!(v.test_runs(&commit(4), AsOf::Head).is_empty());
    assert_eq!(v.scores(), vec![(2, sc)]);
    let mut rows = Vec::new();
    v.each_score(0, &mut |r| {
        rows.push((
            r.seq,
            r.commit.to_string(),
            r.session.to_string(),
            r.holdout,
        ))
    });
    assert_eq!(rows, vec![(2, c.to_string(), "ci".to_string(), true)]);
}

#[test]
fn blobs_are_content_addressed_and_checked() {
    let (_d, s) = new_store();
    let data = vec![42u8; 1 << 20];
    let h = s.put_blob(&data).expect("put");
    assert_eq!(h, blake3::hash(&data));
    assert_eq!(s.put_blob(&data).expect("again"), h, "idempotent");
    assert_eq!(s.get_blob(&h).expect("get"), data);
    let hex = h.to_hex();
    let path = s.dir().join("blobs").join(&hex[..2]).join(&hex[2..]);
    assert!(path.is_file());
    let mut bad = data.clone();
    bad[1000] ^= 1;
    std::fs::write(&path, &bad).expect("corrupt");
    assert!(matches!(s.get_blob(&h), Err(Error::BlobCorrupt { .. })));
    assert!(matches!(
        s.get_blob(&blake3::hash(b"nothing")),
        Err(Error::BlobMissing { .. })
    ));
}

#[test]
fn readers_see_committed_events_while_a_writer_works() {
    let (_d, mut w) = new_store();
    fill(&mut w, 10);
    let r = Store::open(w.dir(), StoreOptions::default()).expect("reader");
    assert_eq!(r.head().expect("head").size, 10);
    fill(&mut w, 5);
    assert_eq!(r.head().expect("head").size, 15);
    assert!(r.verify().expect("verify").is_valid());
}

/// A verified view is one state: it holds no connection, so it neither
/// sees what another handle writes after it was made nor blocks that writer.
#[test]
fn a_verified_view_is_one_state_and_holds_no_lock() {
    let (_d, mut w) = new_store();
    fill(&mut w, 10);
    let r = Store::open(w.dir(), StoreOptions::default()).expect("reader");
    let v = view(&r);
    fill(&mut w, 5); // another handle writes meanwhile: not blocked
    assert_eq!(v.head().size, 10, "the view is fixed");
    assert!(v.report().is_valid());
    assert_eq!(v.overview().size, 10);
    assert_eq!(v.overview().kinds.values().sum::<u64>(), 10);
    assert_eq!(
        r.head().expect("head").size,
        15,
        "a new query sees the new state"
    );
    assert_eq!(view(&r).head().size, 15, "and so does a new verification");
}

/// Every aggregate query reads the trace as of a seq through the same name
/// it reads the whole trace with, and `AsOf::Seq(head)` is `AsOf::Head`.
#[test]
fn each_query_reads_the_trace_as_it_stood_at_a_seq() {
    let (_d, mut s) = new_store();
    let (a, b) = (commit(1), commit(2));
    let values = [0.25, 0.5, 0.75, 1.0];
    // seq 1..=4: a's task t{i}; seq 5..=8: b's; seq 9: a test run of b.
    for (i, v) in values.iter().enumerate() {
        s.record_score(&Score::new(a.clone(), format!("t{i}"), "acc", *v), "r")
            .expect("score");
    }
    for (i, v) in values.iter().enumerate() {
        s.record_score(&Score::new(b.clone(), format!("t{i}"), "acc", 1.0 - v), "r")
            .expect("score");
    }
    let run = TestRun {
        commit: b.clone(),
        suite: "unit".into(),
        passed: 3,
        failed: 0,
        skipped: 0,
        duration_ms: 1.0,
        failures: Vec::new(),
    };
    s.record_test_run(&run, "ci").expect("run");
    let v = view(&s);
    let head = v.head().size;
    assert_eq!(head, 9);
    for at in 0..=head {
        let a_seen = at.min(4) as usize;
        let b_seen = at.saturating_sub(4).min(4) as usize;
        let mean = |xs: &[f64]| xs.iter().sum::<f64>() / xs.len() as f64;
        // score_stream / commit_stats_for / commit_stats
        let stream: Vec<(u64, f64)> = v
            .score_stream(&a, "acc", 0, usize::MAX)
            .into_iter()
            .filter(|(seq, _)| *seq <= at)
            .collect();
        assert_eq!(stream.len(), a_seen);
        let stats_a = v.commit_stats_for(&a, "acc", at);
        assert_eq!(
            stats_a.as_ref().map(|x| x.n),
            (a_seen > 0).then_some(a_seen as u64)
        );
        if a_seen > 0 {
            let got = stats_a.expect("stats").mean;
            assert!((got - mean(&values[..a_seen])).abs() < 1e-12);
        }
        let all = v.commit_stats("acc", at);
        assert_eq!(all.len(), usize::from(a_seen > 0) + usize::from(b_seen > 0));
        // test_runs
        assert_eq!(v.test_runs(&b, at).len(), usize::from(at >= 9));
        // scorer_versions / has_scorer / shared_scorer_version
        assert_eq!(v.has_scorer("acc", at), at >= 1);
        let versions = v.scorer_versions("acc", at);
        assert_eq!(
            versions.iter().map(|v| v.n).sum::<u64>(),
            (a_seen + b_seen) as u64
        );
        assert_eq!(
            v.shared_scorer_version("acc", &a, &b, at).is_some(),
            b_seen > 0
        );
        let paired = v.paired_scores(&a, &b, "acc", at);
        assert_eq!(paired.len(), a_seen.max(b_seen));
        assert_eq!(
            paired.iter().filter(|t| !t.candidate.is_empty()).count(),
            b_seen
        );
        let both: Vec<(f64, f64)> = paired
            .iter()
            .filter_map(|m| Some((*m.baseline.first()?, *m.candidate.first()?)))
            .collect();
        assert_eq!(both.len(), b_seen);
        for (i, m) in both.iter().enumerate() {
            assert!((m.0 - values[i]).abs() < 1e-12);
            assert!((m.1 - (1.0 - values[i])).abs() < 1e-12);
        }
    }
    assert_eq!(
        v.commit_stats("acc", AsOf::Head),
        v.commit_stats("acc", head)
    );
    assert_eq!(
        v.paired_scores(&a, &b, "acc", AsOf::Head),
        v.paired_scores(&a, &b, "acc", AsOf::Seq(head))
    );
}

/// `each_score` lends, in seq order after a seq, exactly the scores that
/// were recorded (session and version included), and `scores` owns them.
#[test]
fn each_score_lends_the_rows_that_were_recorded() {
    let (_d, mut s) = new_store();
    let mut recorded = Vec::new();
    for i in 0..50u32 {
        let mut sc = Score::new(
            commit((i % 3) as u8 + 1),
            format!("t{i}"),
            "acc",
            f64::from(i) / 50.0,
        );
        sc.cost = (i % 2 == 0).then_some(0.5);
        sc.scorer_version = format!("v{}", i % 2);
        let r = s.record_score(&sc, &format!("r{}", i % 4)).expect("score");
        recorded.push((r.seq, sc, format!("r{}", i % 4)));
    }
    let v = view(&s);
    assert_eq!(
        v.scores(),
        recorded
            .iter()
            .map(|(seq, sc, _)| (*seq, sc.clone()))
            .collect::<Vec<_>>()
    );
    for after in [0, 17, 49, 50] {
        let mut lent = Vec::new();
        v.each_score(after, &mut |r| {
            lent.push((
                r.seq,
                r.commit.to_string(),
                r.task.to_string(),
                r.scorer_version.to_string(),
                r.value,
                r.cost,
                r.session.to_string(),
                r.origin_store.map(str::to_string),
            ))
        });
        let expect: Vec<_> = recorded
            .iter()
            .filter(|(seq, _, _)| *seq > after)
            .map(|(seq, sc, session)| {
                (
                    *seq,
                    sc.commit.to_string(),
                    sc.task.clone(),
                    sc.scorer_version.clone(),
                    sc.value,
                    sc.cost,
                    session.clone(),
                    None,
                )
            })
            .collect();
        assert_eq!(lent, expect, "after {after}");
    }
}
