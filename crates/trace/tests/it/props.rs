//! Property tests: one random mutation is caught at the right seq; merging
//! twice equals merging once; the store equals a plain in-memory model.

use crate::common;

use common::*;
use proptest::prelude::*;
use ratchet_trace::{
    AsOf, Error, EventDraft, FaultKind, MergeOptions, Score, Store, TestRun, VerifyOptions,
};

#[derive(Debug, Clone)]
enum Op {
    Note {
        session: String,
        n: i64,
    },
    Score {
        commit: u8,
        task: u8,
        value: f64,
    },
    Run {
        commit: u8,
        passed: u32,
        failed: u32,
    },
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        ("[a-z]{0,6}", any::<i64>()).prop_map(|(session, n)| Op::Note { session, n }),
        (0u8..4, 0u8..6, -1.0e3f64..1.0e3).prop_map(|(commit, task, value)| Op::Score {
            commit,
            task,
            value
        }),
        (0u8..4, 0u32..1000, 0u32..10).prop_map(|(commit, passed, failed)| Op::Run {
            commit,
            passed,
            failed
        }),
    ]
}

fn draft(op: &Op) -> EventDraft {
    match op {
        Op::Note { session, n } => EventDraft::json("note", &serde_json::json!({ "n": n }))
            .expect("json")
            .session(session.clone()),
        Op::Score {
            commit: c,
            task,
            value,
        } => Score::new(commit(*c), format!("t{task}"), "acc", *value)
            .to_draft()
            .expect("score"),
        Op::Run {
            commit: c,
            passed,
            failed,
        } => TestRun {
            commit: commit(*c),
            suite: "unit".into(),
            passed: *passed as u64,
            failed: *failed as u64,
            skipped: 0,
            duration_ms: 1.0,
            failures: Vec::new(),
        }
        .to_draft()
        .expect("run"),
    }
}

#[derive(Debug, Clone)]
enum Mutation {
    EditPayload(usize),
    EditSession(usize),
    EditTimestamp(usize),
    Delete(usize),
    Swap(usize, usize),
    EditHash(usize),
    EditPrevHash(usize),
}

fn mutation(n: usize) -> impl Strategy<Value = Mutation> {
    let i = 0..n;
    prop_oneof![
        i.clone().prop_map(Mutation::EditPayload),
        i.clone().prop_map(Mutation::EditSession),
        i.clone().prop_map(Mutation::EditTimestamp),
        i.clone().prop_map(Mutation::Delete),
        (i.clone(), i.clone())
            .prop_filter("distinct", |(a, b)| a != b)
            .prop_map(|(a, b)| Mutation::Swap(a.min(b), a.max(b))),
        i.clone().prop_map(Mutation::EditHash),
        i.prop_map(Mutation::EditPrevHash),
    ]
}

fn ops_and_mutation() -> impl Strategy<Value = (Vec<Op>, Mutation)> {
    prop::collection::vec(op(), 2..30).prop_flat_map(|ops| {
        let n = ops.len();
        (Just(ops), mutation(n))
    })
}

const COLS: &str = "id, ts_ms, cell, session, kind, commit_id, payload, prev_hash, hash";

proptest! {
    // Seeded: the same cases on every run, so CI never depends on luck.
    #![proptest_config(ProptestConfig { cases: 96, failure_persistence: None, rng_seed: proptest::test_runner::RngSeed::Fixed(20261130), .. ProptestConfig::default() })]

    #[test]
    fn one_mutation_is_caught_at_its_seq((ops, m) in ops_and_mutation()) {
        let (_d, mut s) = new_store();
        s.append_batch(ops.iter().map(draft)).expect("append");
        let cp = s.checkpoint().expect("cp");
        let n = ops.len() as u64;
        let a = attacker(s.dir());
        let seq = |i: usize| i as i64 + 1;
        let expected_seq = match &m {
            Mutation::EditPayload(i) => {
                a.execute("UPDATE events SET payload = CAST('{\"mutated\":true}' AS BLOB) WHERE seq = ?1", [seq(*i)]).expect("edit");
                seq(*i) as u64
            }
            Mutation::EditSession(i) => {
                a.execute("UPDATE events SET session = session || 'x' WHERE seq = ?1", [seq(*i)]).expect("edit");
                seq(*i) as u64
            }
            Mutation::EditTimestamp(i) => {
                a.execute("UPDATE events SET ts_ms = ts_ms - 1 WHERE seq = ?1", [seq(*i)]).expect("edit");
                seq(*i) as u64
            }
            Mutation::Delete(i) => {
                for t in ["events", "scores", "test_runs"] {
                    a.execute(&format!("DELETE FROM {t} WHERE seq = ?1"), [seq(*i)]).expect("delete");
                }
                seq(*i) as u64
            }
            Mutation::Swap(i, j) => {
                a.execute_batch(&format!(
                    "CREATE TEMP TABLE t AS SELECT * FROM events WHERE seq IN ({si}, {sj});
                     UPDATE events SET id = randomblob(16) WHERE seq IN ({si}, {sj});
                     UPDATE events SET ({COLS}) = (SELECT {COLS} FROM t WHERE t.seq = {sj}) WHERE seq = {si};
                     UPDATE events SET ({COLS}) = (SELECT {COLS} FROM t WHERE t.seq = {si}) WHERE seq = {sj};",
                    si = seq(*i), sj = seq(*j)
                )).expect("swap");
                seq(*i) as u64
            }
            Mutation::EditHash(i) => {
                a.execute("UPDATE events SET hash = randomblob(32) WHERE seq = ?1", [seq(*i)]).expect("edit");
                seq(*i) as u64
            }
            Mutation::EditPrevHash(i) => {
                a.execute("UPDATE events SET prev_hash = randomblob(32) WHERE seq = ?1", [seq(*i)]).expect("edit");
                seq(*i) as u64
            }
        };
        drop(a); // the attacker puts the triggers back
        let r = s.verify_with(&VerifyOptions::default().checkpoint(cp)).expect("verify");
        let f = r.fault.expect("mutation caught");
        // Swapping two identical-content events is still caught: seq is hashed.
        prop_assert_eq!(f.seq, expected_seq, "{:?} -> {:?}", m, f.kind);
        if let Mutation::Delete(i) = m {
            let want = if i as u64 + 1 == n {
                FaultKind::Truncated { checkpoint_size: n, store_size: n - 1 }
            } else {
                FaultKind::Missing { next_present: i as u64 + 2 }
            };
            prop_assert_eq!(f.kind, want);
        }
    }

    #[test]
    fn merging_twice_equals_merging_once(cells in prop::collection::vec(prop::collection::vec(op(), 0..12), 1..4),
                                         extra in prop::collection::vec(op(), 0..6)) {
        let mut cell_stores = Vec::new();
        for ops in &cells {
            let (d, mut c) = new_store();
            c.append_batch(ops.iter().map(draft)).expect("append");
            cell_stores.push((d, c));
        }
        let (_a, mut once) = new_store();
        let (_b, mut twice) = new_store();
        for (_, c) in &cell_stores {
            once.merge_cell(c.dir(), &MergeOptions::default()).expect("merge");
        }
        for _ in 0..2 {
            for (_, c) in &cell_stores {
                twice.merge_cell(c.dir(), &MergeOptions::default()).expect("merge");
            }
        }
        // Cells that grew after the first merge add only their new events.
        if let Some((_, c)) = cell_stores.first_mut() {
            c.append_batch(extra.iter().map(draft)).expect("append");
            once.merge_cell(c.dir(), &MergeOptions::default()).expect("merge");
            twice.merge_cell(c.dir(), &MergeOptions::default()).expect("merge");
            twice.merge_cell(c.dir(), &MergeOptions::default()).expect("merge");
        }
        let key = |s: &Store| -> Vec<_> {
            s.events_after(0, usize::MAX).expect("read").into_iter()
                .map(|e| (e.id, e.ts_ms, e.cell, e.kind, e.payload, e.origin.map(|o| (o.seq, o.hash))))
                .collect()
        };
        prop_assert_eq!(key(&once), key(&twice));
        prop_assert!(once.verify().expect("verify").is_valid());
        prop_assert!(twice.verify().expect("verify").is_valid());
        prop_assert_eq!(bits(&view(&once).commit_stats("acc", AsOf::Head)), bits(&view(&twice).commit_stats("acc", AsOf::Head)));
    }

    #[test]
    fn store_equals_an_in_memory_model(batches in prop::collection::vec(
        (prop::collection::vec(op(), 0..8), any::<bool>()), 1..10)) {
        let (_d, mut s) = new_store();
        // The model is built from the inputs alone: the ops that were
        // appended, in order. Nothing in it was read back from the store.
        let mut model: Vec<&Op> = Vec::new();
        for (ops, poison) in &batches {
            let mut drafts: Vec<EventDraft> = ops.iter().map(draft).collect();
            if *poison {
                // One invalid event poisons the batch: nothing of it is stored.
                drafts.push(EventDraft::raw("note", "{not json"));
                let err = s.append_batch(drafts).expect_err("poisoned");
                let is_invalid = matches!(err, Error::InvalidInput { .. });
                prop_assert!(is_invalid, "unexpected error");
            } else {
                let receipts = s.append_batch(drafts).expect("append");
                prop_assert_eq!(receipts.len(), ops.len());
                for (j, r) in receipts.iter().enumerate() {
                    prop_assert_eq!(r.seq as usize, model.len() + 1 + j);
                }
                model.extend(ops.iter());
            }
        }
        let stored = s.events_after(0, usize::MAX).expect("read");
        prop_assert_eq!(stored.len(), model.len());
        for (i, (e, op)) in stored.iter().zip(&model).enumerate() {
            prop_assert_eq!(e.seq as usize, i + 1);
            let v: serde_json::Value = serde_json::from_slice(&e.payload).expect("json");
            let commit_of = |c: u8| Some(commit(c).to_string());
            match op {
                Op::Note { session, n } => {
                    prop_assert_eq!((e.kind.as_str(), &e.session), ("note", session));
                    prop_assert_eq!(e.commit.as_ref().map(|c| c.to_string()), None);
                    prop_assert_eq!(v["n"].as_i64(), Some(*n));
                }
                Op::Score { commit: c, task, value } => {
                    prop_assert_eq!(e.kind.as_str(), "score");
                    prop_assert_eq!(e.commit.as_ref().map(|c| c.to_string()), commit_of(*c));
                    let task_name = format!("t{task}");
                    prop_assert_eq!(v["task"].as_str(), Some(task_name.as_str()));
                    prop_assert_eq!(v["scorer"].as_str(), Some("acc"));
                    // −0.0 is stored as 0.0 (one canonical zero).
                    let stored_value = v["value"].as_f64().expect("value");
                    prop_assert_eq!(stored_value.to_bits(), (value + 0.0).to_bits());
                }
                Op::Run { commit: c, passed, failed } => {
                    prop_assert_eq!(e.kind.as_str(), "test_run");
                    prop_assert_eq!(e.commit.as_ref().map(|c| c.to_string()), commit_of(*c));
                    prop_assert_eq!(v["passed"].as_u64(), Some(u64::from(*passed)));
                    prop_assert_eq!(v["failed"].as_u64(), Some(u64::from(*failed)));
                }
            }
        }
        // Stats agree with the inputs' scores.
        let mut sums: std::collections::BTreeMap<String, (u64, f64)> = Default::default();
        for op in &model {
            if let Op::Score { commit: c, value, .. } = op {
                let e = sums.entry(commit(*c).to_string()).or_default();
                e.0 += 1;
                e.1 += value;
            }
        }
        let v = view(&s);
        prop_assert_eq!(v.head().size as usize, model.len());
        let stats = v.commit_stats("acc", AsOf::Head);
        prop_assert_eq!(stats.len(), sums.len());
        for st in stats {
            let (n, sum) = sums[st.commit.as_str()];
            prop_assert_eq!(st.n, n);
            prop_assert!((st.mean - sum / n as f64).abs() <= 1e-9 * (1.0 + sum.abs()));
        }
        prop_assert!(s.verify().expect("verify").is_valid());
    }
}

/// Every finite f64, with the values a JSON writer or a float formatter is
/// most likely to get wrong weighted in: both zeros, subnormals, the
/// extremes, and integers.
fn any_finite() -> impl Strategy<Value = f64> {
    prop_oneof![
        any::<f64>().prop_filter("finite", |x| x.is_finite()),
        Just(-0.0),
        Just(0.0),
        (1u64..(1 << 52)).prop_map(f64::from_bits),
        (1u64..(1 << 52)).prop_map(|b| -f64::from_bits(b)),
        Just(f64::MAX),
        Just(f64::MIN),
        Just(f64::MIN_POSITIVE),
        (-1_000_000i64..1_000_000).prop_map(|i| i as f64),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, failure_persistence: None, rng_seed: proptest::test_runner::RngSeed::Fixed(20261201), .. ProptestConfig::default() })]

    /// Whatever float validation accepts, in any spelling, is stored so that
    /// the store still verifies and reads back the value SQLite can hold
    /// (−0.0 as 0.0, every other value bit for bit): no accepted input can
    /// brick a store.
    #[test]
    fn every_accepted_float_round_trips(v in any_finite()) {
        let (_d, mut s) = new_store();
        let c = commit(7);
        let nonneg = v.abs();
        let mut typed = Score::new(c.clone(), "typed", "x", v);
        typed.cost = Some(nonneg);
        typed.latency_ms = Some(nonneg);
        s.record_score(&typed, "p").expect("typed score");
        s.record_test_run(&TestRun { commit: c.clone(), suite: "typed".into(), passed: 1, failed: 0, skipped: 0, duration_ms: nonneg, failures: Vec::new() }, "p").expect("typed run");
        let mut spellings = vec![
            serde_json::to_string(&v).expect("json"),
            format!("{v:e}"),
            format!("{v:E}"),
        ];
        if v.fract() == 0.0 && v.abs() < 1e15 {
            spellings.push(format!("{}{}", if v.is_sign_negative() { "-" } else { "" }, v.abs() as i64));
        }
        for (i, text) in spellings.iter().enumerate() {
            let abs_text = text.trim_start_matches('-');
            s.append(EventDraft::raw("score", format!(
                r#"{{"task":"raw{i}","scorer":"x","scorer_version":"1","value":{text},"cost":{abs_text},"latency_ms":{abs_text}}}"#
            )).commit(c.clone())).expect("raw score");
            s.append(EventDraft::raw("test_run", format!(
                r#"{{"suite":"raw{i}","passed":1,"failed":0,"skipped":0,"duration_ms":{abs_text}}}"#
            )).commit(c.clone())).expect("raw run");
        }
        let r = s.verify().expect("verify");
        prop_assert!(r.is_valid(), "{v:e}: {:?}", r.fault);
        let want = (v + 0.0).to_bits();
        let view = view(&s);
        let scores = view.scores();
        prop_assert_eq!(scores.len(), 1 + spellings.len());
        for (_, sc) in scores {
            prop_assert_eq!(sc.value.to_bits(), want, "{} {:e}", sc.task, v);
            prop_assert_eq!(sc.cost.map(f64::to_bits), Some((nonneg + 0.0).to_bits()));
        }
        let runs = view.test_runs(&c, AsOf::Head);
        prop_assert_eq!(runs.len(), 1 + spellings.len());
        for (_, run) in runs {
            prop_assert_eq!(run.duration_ms.to_bits(), (nonneg + 0.0).to_bits());
        }
    }
}
