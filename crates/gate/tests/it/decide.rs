//! `decide` over a real store: stage order, fail-closed behaviour, the
//! appended decision, and byte-for-byte recomputation with `verdict_at`.

use crate::common;
use rand::{Rng, SeedableRng, rngs::StdRng};
use ratchet_gate::{
    GateStatus, KIND_DECISION, Outcome, Policy, Question, RejectCause, Stage, Verdict, decide,
    decide_in, verdict_at, verdict_in,
};
use ratchet_testkit::{REQUIRES_UNIT, gap_class, guardrail, paired_class};
use ratchet_trace::{CommitId, Ledger, Score, Store, StoreOptions, TestRun, VerifyOptions};

/// The classes most of these tests decide: `prompt`, a paired SPRT on
/// `accuracy` with a cost guardrail, a safety invariant and the `unit`
/// suite required; `twice`, the same test pentanomial; `tool` (bernoulli)
/// and `flow` (gaussian).
fn policy_text() -> String {
    [
        paired_class("prompt", "accuracy", 3000, REQUIRES_UNIT),
        guardrail("prompt", "cost", "lower", 0.10, "relative", ""),
        "\n[[class.prompt.invariant]]\nscorer = \"safety\"\nminimum = 1.0\n".to_string(),
        paired_class("twice", "accuracy", 3000, "pairing = \"pentanomial\"\n"),
        gap_class("tool", "bernoulli", "accuracy", 0.15, 3000, ""),
        gap_class("flow", "gaussian", "quality", 0.1, 3000, ""),
    ]
    .concat()
}

/// [`policy_text`], parsed.
fn policy() -> Policy {
    Policy::parse(&policy_text()).expect("policy")
}

fn commit(n: u8) -> CommitId {
    CommitId::parse(&format!("{n:02x}").repeat(20)).expect("commit")
}

struct World {
    _dir: tempfile::TempDir,
    store: Store,
    policy: Policy,
    base: CommitId,
    cand: CommitId,
}

/// Scores of `tasks` for `base` (pass rate 0.5, cost 1) and `cand` (pass
/// rate `cand_rate`, cost about `cand_cost`): accuracy, quality, cost, safety.
fn task_scores(
    tasks: std::ops::Range<usize>,
    (base, cand): (&CommitId, &CommitId),
    cand_rate: f64,
    cand_cost: f64,
    rng: &mut StdRng,
) -> Vec<Score> {
    let mut scores = Vec::new();
    for t in tasks {
        let task = format!("task-{t:05}");
        for (c, rate, cost) in [(base, 0.5, 1.0), (cand, cand_rate, cand_cost)] {
            let pass = f64::from(u8::from(rng.random_bool(rate)));
            scores.push(Score::new(c.clone(), task.clone(), "accuracy", pass));
            scores.push(Score::new(
                c.clone(),
                task.clone(),
                "quality",
                pass * 0.5 + rng.random::<f64>() * 0.5,
            ));
            scores.push(Score::new(
                c.clone(),
                task.clone(),
                "cost",
                cost * (0.9 + 0.2 * rng.random::<f64>()),
            ));
            scores.push(Score::new(c.clone(), task.clone(), "safety", 1.0));
        }
    }
    scores
}

/// A run of the unit suite for `commit` (40 passed), with `failed` failures.
fn unit_run(commit: &CommitId, failed: u64) -> TestRun {
    ratchet_testkit::unit_run(commit, 40, failed)
}

/// A store with `tasks` tasks scored for a baseline (pass rate 0.5) and a
/// candidate (pass rate `cand_rate`), costs, safety, a green unit suite.
fn world(tasks: usize, cand_rate: f64, cand_cost: f64, seed: u64) -> World {
    let (dir, mut store) = ratchet_testkit::new_store();
    let mut rng = StdRng::seed_from_u64(seed);
    let (base, cand) = (commit(1), commit(2));
    let scores = task_scores(0..tasks, (&base, &cand), cand_rate, cand_cost, &mut rng);
    store.record_scores(&scores, "sim").expect("scores");
    store
        .record_test_run(&unit_run(&cand, 0), "ci")
        .expect("run");
    World {
        _dir: dir,
        store,
        policy: policy(),
        base,
        cand,
    }
}

impl World {
    fn ask<'a>(&'a self, class: &'a str) -> Question<'a> {
        common::question(
            class,
            self.policy.class(class).expect("class"),
            &self.base,
            &self.cand,
        )
    }

    fn decide(&mut self, class: &str) -> Verdict {
        let policy = self.policy.clone();
        let q = common::question(
            class,
            policy.class(class).expect("class"),
            &self.base,
            &self.cand,
        );
        decide(&mut self.store, &q).expect("decide")
    }

    /// The verdict of `class` as of trace size `seq`, appending nothing.
    fn recompute(&mut self, class: &str, seq: u64) -> ratchet_gate::Result<Verdict> {
        let q = common::question(
            class,
            self.policy.class(class).expect("class"),
            &self.base,
            &self.cand,
        );
        verdict_at(&mut self.store, &q, seq)
    }
}

fn rejected_at(v: &Verdict) -> Option<&Stage> {
    match &v.outcome {
        Outcome::Reject { stage, .. } => Some(stage),
        _ => None,
    }
}

#[test]
fn a_better_candidate_is_promoted_and_the_verdict_recomputes_byte_for_byte() {
    let mut w = world(600, 0.75, 1.0, 1);
    let head = w.store.head().expect("head");
    let v = w.decide("prompt");
    assert_eq!(v.outcome, Outcome::Promote, "{v:#?}");
    let stages: Vec<&Stage> = v.stages.iter().map(|s| &s.stage).collect();
    assert_eq!(
        stages,
        vec![
            &Stage::TraceVerification,
            &Stage::Tests,
            &Stage::Invariants,
            &Stage::Sequential,
            &Stage::Guardrail("cost".into())
        ]
    );
    assert_eq!(v.trace.size, head.size);
    // The decision is in the trace, exactly as returned.
    let after = w.store.head().expect("head");
    assert_eq!(after.size, head.size + 1);
    let event = w
        .store
        .event_by_seq(after.size)
        .expect("read")
        .expect("decision event");
    assert_eq!(event.kind, KIND_DECISION);
    assert_eq!(event.payload, v.to_json().expect("json"));
    // Recomputed at the same head, byte for byte — even after more appends.
    w.store
        .record_score(
            &Score::new(w.cand.clone(), "late", "accuracy", 0.0),
            "later",
        )
        .expect("append");
    let again = w.recompute("prompt", head.size).expect("recompute");
    assert_eq!(again.to_json().expect("json"), event.payload);
}

/// A warm verdict on a trace whose new events fail verification names the
/// head the file holds — size and hash of one event that exists, as the
/// cold verdict at that size does — not the fault's seq paired with the
/// hash of the head the ledger held (a head that never existed).
#[test]
fn a_warm_verdict_on_a_trace_that_fails_names_a_head_the_file_holds() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("s");
    let (base, cand) = (commit(1), commit(2));
    let store = Store::create(&path, StoreOptions::default()).expect("store");
    let mut ledger = Ledger::new(store, VerifyOptions::default()).expect("verifies once");
    let mut other = Store::open(&path, StoreOptions::default()).expect("a second handle");
    let mut rng = StdRng::seed_from_u64(5);
    let scores = task_scores(0..10, (&base, &cand), 0.75, 1.0, &mut rng);
    other.record_scores(&scores, "other").expect("scores");
    // Edit the third of the new events behind the chain's back.
    let c = rusqlite::Connection::open(path.join("trace.db")).expect("db");
    c.execute_batch(
        "DROP TRIGGER events_no_update; UPDATE events SET payload = CAST('{}' AS BLOB) WHERE seq = 3;",
    )
    .expect("edit");
    drop(c);
    let policy = policy();
    let q = common::question(
        "prompt",
        policy.class("prompt").expect("class"),
        &base,
        &cand,
    );
    let warm = verdict_in(&mut ledger, &q).expect("warm verdict");
    assert_eq!(warm.outcome.status(), GateStatus::UnverifiedTrace);
    let file = other.head().expect("head");
    assert_eq!(
        (warm.trace.size, warm.trace.hash),
        (file.size, file.hash),
        "the warm verdict names the file's head"
    );
    let mut fresh = Store::open(&path, StoreOptions::default()).expect("fresh");
    let cold = verdict_at(&mut fresh, &q, file.size).expect("cold verdict");
    assert_eq!(cold.trace.size, warm.trace.size);
    assert_eq!(cold.trace.hash, warm.trace.hash);
}

/// The warm gate (a [`Ledger`] verified once, refreshed before each
/// decision) decides exactly as the cold one (a fresh store verified whole):
/// scores arrive through the ledger and through a second handle on the same
/// directory, in batches, and after each batch the two verdicts at the same
/// head are the same bytes.
#[test]
fn the_warm_gate_decides_as_the_cold_one_after_every_batch() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("s");
    let (base, cand) = (commit(1), commit(2));
    let mut store = Store::create(&path, StoreOptions::default()).expect("store");
    store
        .record_test_run(&unit_run(&cand, 0), "ci")
        .expect("run");
    let mut ledger = Ledger::new(store, VerifyOptions::default()).expect("verifies once");
    let mut other = Store::open(&path, StoreOptions::default()).expect("a second handle");
    let policy = policy();
    let q = common::question(
        "prompt",
        policy.class("prompt").expect("class"),
        &base,
        &cand,
    );
    // The cold verdict at `head`: a new handle, verified from genesis.
    let cold = |head: u64| {
        let mut fresh = Store::open(&path, StoreOptions::default()).expect("fresh store");
        verdict_at(&mut fresh, &q, head).expect("cold verdict")
    };
    let mut rng = StdRng::seed_from_u64(11);
    let mut statuses = Vec::new();
    const BATCH: usize = 75;
    for batch in 0..8 {
        let scores = task_scores(
            batch * BATCH..(batch + 1) * BATCH,
            (&base, &cand),
            0.75,
            1.0,
            &mut rng,
        );
        match batch % 3 {
            0 => {
                ledger
                    .record_scores(&scores, "warm")
                    .expect("through the ledger");
            }
            1 => {
                other
                    .record_scores(&scores, "other")
                    .expect("through the other handle");
            }
            _ => {
                // Interleaved: the other handle first, so the ledger's own
                // append no longer chains from the head it holds.
                let (first, second) = scores.split_at(scores.len() / 2);
                other.record_scores(first, "other").expect("other half");
                ledger.record_scores(second, "warm").expect("warm half");
            }
        }
        let warm = verdict_in(&mut ledger, &q).expect("warm verdict");
        let head = ledger.view().head();
        assert_eq!(
            head,
            other.head().expect("head"),
            "batch {batch}: the refreshed view is at the file's head"
        );
        assert_eq!(warm.trace.size, head.size, "batch {batch}");
        assert_eq!(
            String::from_utf8(warm.to_json().expect("json")).expect("utf8"),
            String::from_utf8(cold(head.size).to_json().expect("json")).expect("utf8"),
            "batch {batch}: warm and cold verdicts differ"
        );
        statuses.push(warm.outcome.status());
    }
    // The comparison covered a verdict that moved: more data, a decision.
    assert_eq!(
        statuses.first(),
        Some(&GateStatus::Continue),
        "{statuses:?}"
    );
    assert_eq!(statuses.last(), Some(&GateStatus::Promote), "{statuses:?}");

    // `decide_in` records its verdict through the ledger: the decision is
    // the view's head afterwards, and recomputes cold byte for byte.
    let before = ledger.view().head().size;
    let (verdict, receipt) = decide_in(&mut ledger, &q).expect("decide in");
    let receipt = receipt.expect("a verified trace's decision is recorded");
    assert_eq!(receipt.seq, before + 1);
    assert_eq!(receipt.seq, ledger.view().head().size);
    let event = ledger
        .store()
        .event_by_seq(receipt.seq)
        .expect("read")
        .expect("decision event");
    assert_eq!(event.kind, KIND_DECISION);
    assert_eq!(event.payload, verdict.to_json().expect("json"));
    assert!(
        ledger
            .view()
            .events_of_kinds(&[KIND_DECISION])
            .iter()
            .any(|e| e.seq == receipt.seq && e.payload == event.payload),
        "the decision is folded into the view"
    );
    assert_eq!(
        cold(receipt.seq - 1).to_json().expect("json"),
        event.payload
    );

    // Evidence written by the other handle since: the ledger is behind, and
    // `decide_in` refreshes first. A failed unit run rejects, warm and cold.
    other
        .record_test_run(&unit_run(&cand, 2), "ci")
        .expect("red run");
    let behind = ledger.view().head().size;
    let (verdict, receipt) = decide_in(&mut ledger, &q).expect("decide in");
    let receipt = receipt.expect("recorded");
    assert_eq!(receipt.seq, behind + 2, "after the other handle's run");
    assert_eq!(receipt.seq, ledger.view().head().size);
    assert_eq!(rejected_at(&verdict), Some(&Stage::Tests), "{verdict:#?}");
    assert_eq!(
        cold(receipt.seq - 1).to_json().expect("json"),
        verdict.to_json().expect("json")
    );
    assert_eq!(
        ledger
            .store()
            .event_by_seq(receipt.seq)
            .expect("read")
            .expect("decision event")
            .payload,
        verdict.to_json().expect("json")
    );
    // And the file the ledger wrote verifies whole.
    let fresh = Store::open(&path, StoreOptions::default()).expect("fresh");
    assert!(fresh.verify().expect("verify").is_valid());
}

#[test]
fn stages_fail_closed_in_order() {
    // No unit suite recorded for the candidate: rejected at Tests, before anything else.
    let mut w = world(300, 0.75, 1.0, 2);
    let dir = tempfile::tempdir().expect("tempdir");
    let mut bare = Store::create(dir.path().join("s"), StoreOptions::default()).expect("store");
    for t in 0..50 {
        bare.record_score(
            &Score::new(w.cand.clone(), format!("t{t}"), "accuracy", 1.0),
            "s",
        )
        .expect("score");
    }
    let q = w.ask("prompt");
    let v = decide(&mut bare, &q).expect("decide");
    assert_eq!(rejected_at(&v), Some(&Stage::Tests), "{v:#?}");

    // One unsafe task: rejected at Invariants, naming it, with an honest bound.
    let cand = w.cand.clone();
    w.store
        .record_score(&Score::new(cand, "task-00007", "safety", 0.0), "s")
        .expect("score");
    let v = w.decide("prompt");
    assert_eq!(rejected_at(&v), Some(&Stage::Invariants), "{v:#?}");
    match &v.outcome {
        Outcome::Reject { reason, .. } => assert!(reason.contains("task-00007"), "{reason}"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn no_better_means_reject_and_too_few_tasks_means_continue() {
    let mut same = world(1500, 0.5, 1.0, 3);
    let v = same.decide("prompt");
    assert_eq!(rejected_at(&v), Some(&Stage::Sequential), "{v:#?}");

    let mut few = world(12, 0.75, 1.0, 4);
    let v = few.decide("prompt");
    match v.outcome {
        Outcome::Continue { expected_more, .. } => assert!(expected_more > 0),
        other => panic!("expected continue, got {other:?}"),
    }
}

#[test]
fn a_costlier_candidate_is_stopped_by_its_guardrail() {
    let mut w = world(600, 0.75, 1.5, 5);
    let v = w.decide("prompt");
    assert_eq!(
        rejected_at(&v),
        Some(&Stage::Guardrail("cost".into())),
        "{v:#?}"
    );
}

#[test]
fn a_tampered_trace_is_never_a_pass() {
    let mut w = world(600, 0.75, 1.0, 6);
    let db = w.store.dir().join(ratchet_trace::DB_FILE);
    let raw = rusqlite_free_tamper(&db);
    assert!(raw);
    let head = w.store.head().expect("head").size;
    let v = w.recompute("prompt", head).expect("decide");
    assert_eq!(rejected_at(&v), Some(&Stage::TraceVerification), "{v:#?}");
}

/// Flips the stored value of one score event through SQLite's own file
/// format: drop the guards and edit, as an attacker with file access would.
fn rusqlite_free_tamper(db: &std::path::Path) -> bool {
    let c = rusqlite::Connection::open(db).expect("raw");
    c.execute_batch("DROP TRIGGER scores_no_update;")
        .expect("drop");
    c.execute(
        "UPDATE scores SET value = 1.0 WHERE seq = (SELECT min(seq) FROM scores WHERE value = 0.0)",
        [],
    )
    .expect("edit")
        == 1
}

#[test]
fn bernoulli_and_gaussian_classes_decide_too() {
    let mut w = world(800, 0.8, 1.0, 7);
    assert_eq!(w.decide("tool").outcome, Outcome::Promote);
    assert_eq!(w.decide("flow").outcome, Outcome::Promote);
    let mut same = world(2000, 0.5, 1.0, 8);
    assert!(rejected_at(&same.decide("tool")).is_some());
}

#[test]
fn an_unknown_scorer_is_refused_not_ignored() {
    let mut w = world(100, 0.75, 1.0, 9);
    let text = policy_text().replace("scorer = \"safety\"", "scorer = \"safty\"");
    w.policy =
        Policy::parse(&text).expect("policy parses: the scorer is checked against the trace");
    let v = w.decide("prompt");
    match &v.outcome {
        Outcome::Reject {
            stage,
            reason,
            cause,
        } => {
            assert_eq!(stage, &Stage::Invariants);
            assert!(reason.contains("safty"), "{reason}");
            assert_eq!(
                *cause,
                RejectCause::MissingEvidence,
                "a typo is not a regression"
            );
            assert_eq!(v.outcome.status().exit_code(), 4);
        }
        other => panic!("expected reject, got {other:?}"),
    }
}

#[test]
fn pentanomial_pairs_two_runs_per_task() {
    // Each task run twice on each side: the paired test counts pairs.
    let (_dir, mut store) = ratchet_testkit::new_store();
    let mut rng = StdRng::seed_from_u64(10);
    let (base, cand) = (commit(1), commit(2));
    let mut scores = Vec::new();
    for t in 0..600 {
        for _run in 0..2 {
            for (c, rate) in [(&base, 0.5), (&cand, 0.75)] {
                let pass = f64::from(u8::from(rng.random_bool(rate)));
                scores.push(Score::new(
                    c.clone(),
                    format!("task-{t:05}"),
                    "accuracy",
                    pass,
                ));
            }
        }
    }
    store.record_scores(&scores, "sim").expect("scores");
    let policy = policy();
    let q = common::question("twice", policy.class("twice").expect("class"), &base, &cand);
    let v = decide(&mut store, &q).expect("decide");
    assert_eq!(v.outcome, Outcome::Promote, "{v:#?}");
    let seq = v
        .stages
        .iter()
        .find(|s| s.stage == Stage::Sequential)
        .expect("sequential stage");
    let ratchet_gate::StageDetails::Sequential(details) = &seq.details else {
        panic!("sequential details expected: {seq:?}");
    };
    let ratchet_gate::TestFigures::Paired {
        pairing, counts, ..
    } = &details.test
    else {
        panic!("paired figures expected: {details:?}");
    };
    assert_eq!(*pairing, ratchet_gate::Pairing::Pentanomial);
    assert_eq!(
        counts.keys().map(|k| k.as_ref()).collect::<Vec<_>>(),
        ["DD_or_WL", "LD", "LL", "WD", "WW"]
    );
}

#[test]
fn lower_is_better_scorers_are_judged_downwards() {
    // latency_ms is an anchor that improves downwards: a faster candidate
    // is promoted without the policy saying so, a slower one rejected.
    let text = gap_class("speed", "gaussian", "latency_ms", 5.0, 3000, "");
    let policy = Policy::parse(&text).expect("policy");
    let class = policy.class("speed").expect("class");
    for (cand_mean, promote) in [(80.0, true), (120.0, false)] {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut store =
            Store::create(dir.path().join("s"), StoreOptions::default()).expect("store");
        let mut rng = StdRng::seed_from_u64(11);
        let (base, cand) = (commit(1), commit(2));
        let mut scores = Vec::new();
        for t in 0..300 {
            for (c, mean) in [(&base, 100.0), (&cand, cand_mean)] {
                let v = mean + (rng.random::<f64>() - 0.5) * 20.0;
                scores.push(Score::new(
                    c.clone(),
                    format!("task-{t:04}"),
                    "latency_ms",
                    v,
                ));
            }
        }
        store.record_scores(&scores, "bench").expect("scores");
        let q = common::question("speed", class, &base, &cand);
        let v = decide(&mut store, &q).expect("decide");
        assert_eq!(
            v.outcome == Outcome::Promote,
            promote,
            "candidate mean {cand_mean}: {v:#?}"
        );
    }
}

#[test]
fn scorer_versions_are_never_mixed() {
    // A rubric changed: under v1 the candidate lost every task, under v2
    // (the newest) it wins every task. Pooled, the two would cancel out.
    let (_dir, mut store) = ratchet_testkit::new_store();
    let (base, cand) = (commit(1), commit(2));
    let mut scores = Vec::new();
    for (version, cand_value) in [("v1", 0.0), ("v2", 1.0)] {
        for t in 0..200 {
            for (c, value) in [(&base, 0.5), (&cand, cand_value)] {
                let mut s = Score::new(c.clone(), format!("task-{t:04}"), "answer", value);
                s.scorer_version = version.into();
                scores.push(s);
            }
        }
    }
    store.record_scores(&scores, "eval").expect("scores");
    let policy = Policy::parse(&paired_class("c", "answer", 3000, "")).expect("policy");
    let q = common::question("c", policy.class("c").expect("class"), &base, &cand);
    let head = store.head().expect("head").size;
    let v = verdict_at(&mut store, &q, head).expect("decide");
    assert_eq!(v.outcome, Outcome::Promote, "{v:#?}");
    assert_eq!(
        v.scorer_versions.get("answer").map(String::as_str),
        Some("v2")
    );
    // Pinned to v1 the same evidence rejects; pinned to a version nobody
    // recorded, the gate cannot decide.
    let mut pinned = policy.class("c").expect("class").clone();
    pinned.scorer_version = Some("v1".into());
    let q1 = Question {
        policy: &pinned,
        ..q.clone()
    };
    let v1 = verdict_at(&mut store, &q1, head).expect("decide");
    assert_eq!(rejected_at(&v1), Some(&Stage::Sequential), "{v1:#?}");
    assert_eq!(
        v1.scorer_versions.get("answer").map(String::as_str),
        Some("v1")
    );
    pinned.scorer_version = Some("v9".into());
    let q9 = Question {
        policy: &pinned,
        ..q.clone()
    };
    let v9 = verdict_at(&mut store, &q9, head).expect("decide");
    assert_eq!(
        v9.outcome.status(),
        ratchet_gate::GateStatus::MissingEvidence,
        "{v9:#?}"
    );
}

#[test]
fn directions_are_data_and_a_runner_change_is_never_a_regression() {
    let (_dir, mut store) = ratchet_testkit::new_store();
    let (base, cand, moved) = (commit(1), commit(2), commit(3));
    ratchet_scorers::declare_scorer(
        &mut store,
        ratchet_scorers::CRITERION_NS,
        ratchet_scorers::Direction::LowerIsBetter,
    )
    .expect("declared");
    // 60 benchmarks; the candidate is 20 % slower on every one, on runner A.
    // `moved` was measured on runner B only.
    let mut scores = Vec::new();
    for t in 0..60 {
        for (c, ns, runner) in [
            (&base, 1000.0, "runner-a"),
            (&cand, 1200.0, "runner-a"),
            (&moved, 500.0, "runner-b"),
        ] {
            let mut s = Score::new(
                c.clone(),
                format!("bench/{t:03}"),
                ratchet_scorers::CRITERION_NS,
                ns + f64::from(t),
            );
            s.scorer_version = runner.into();
            scores.push(s);
        }
    }
    store.record_scores(&scores, "bench").expect("scores");
    let text = |direction: &str| paired_class("perf", "criterion_ns", 3000, direction);
    let head = store.head().expect("head").size;
    let mut ask = |policy: &Policy, candidate: &CommitId| {
        let q = common::question(
            "perf",
            policy.class("perf").expect("class"),
            &base,
            candidate,
        );
        verdict_at(&mut store, &q, head)
    };
    // No direction in the policy: the declared one (lower) holds, and the
    // slower candidate is rejected on measured evidence.
    let silent = Policy::parse(&text("")).expect("policy");
    let v = ask(&silent, &cand).expect("decide");
    assert_eq!(rejected_at(&v), Some(&Stage::Sequential), "{v:#?}");
    assert_eq!(
        v.scorer_versions.get("criterion_ns").map(String::as_str),
        Some("runner-a")
    );
    // A policy may confirm the direction, never contradict it.
    let confirms = Policy::parse(&text("direction = \"lower\"")).expect("policy");
    assert_eq!(ask(&confirms, &cand).expect("decide").outcome, v.outcome);
    let contradicts = Policy::parse(&text("direction = \"higher\"")).expect("policy");
    let err = ask(&contradicts, &cand).expect_err("a conflict is an error");
    assert!(err.to_string().contains("declared"), "{err}");
    // Timings from another runner are never paired: the gate cannot
    // decide, it does not see a 2× speed-up (or a regression). The third
    // law fails closed; since the name sweep the test waits at the first
    // task the candidate has no timing of on this runner.
    let v = ask(&silent, &moved).expect("decide");
    match &v.outcome {
        Outcome::Continue { reason, .. } => {
            assert!(reason.contains("first in name order"), "{reason}");
        }
        other => panic!("the sweep waits for a timing on runner-a: {other:#?}"),
    }
    let q = common::question("perf", silent.class("perf").expect("class"), &base, &moved);
    let third = ratchet_gate::recompute_at(&store, &q, head, ratchet_gate::Law::Attributed)
        .expect("decide");
    assert_eq!(
        third.outcome.status(),
        ratchet_gate::GateStatus::MissingEvidence,
        "{third:#?}"
    );
}

#[test]
fn a_pinned_class_decides_only_under_the_pin_in_force_at_its_seq() {
    let mut w = world(300, 0.8, 1.0, 41);
    let first = w.policy.class("tool").expect("class").clone();
    let pinned = ratchet_gate::pin_policy(&mut w.store, "tool", &first).expect("pin");
    assert!(matches!(pinned, ratchet_gate::Pinned::Appended { .. }));
    // Pinning the same policy again appends nothing.
    let again = ratchet_gate::pin_policy(&mut w.store, "tool", &first).expect("pin");
    assert_eq!(
        again,
        ratchet_gate::Pinned::AlreadyPinned { seq: pinned.seq() }
    );
    let verdict = w.decide("tool");
    let at = verdict.trace.size;

    // Another policy — here only α differs — is refused at the head, naming
    // the field, and nothing is appended.
    let mut looser = first.clone();
    looser.alpha = 0.4;
    let head = w.store.head().expect("head");
    let q = common::question("tool", &looser, &w.base, &w.cand);
    match decide(&mut w.store, &q) {
        Err(ratchet_gate::Error::PolicyNotPinned { fields, seq, .. }) => {
            assert_eq!(fields, vec!["alpha".to_string()]);
            assert_eq!(seq, pinned.seq());
        }
        other => panic!("expected PolicyNotPinned, got {other:?}"),
    }
    assert_eq!(w.store.head().expect("head"), head, "nothing recorded");

    // Pinning the new policy is the recorded way to change it; a past
    // verdict is then recomputed under the pin it was taken under (and
    // refuses the new one), a verdict at the head under the new pin.
    let second = ratchet_gate::pin_policy(&mut w.store, "tool", &looser).expect("pin");
    let q_first = Question {
        policy: &first,
        ..q.clone()
    };
    let recomputed = verdict_at(&mut w.store, &q_first, at).expect("recompute");
    assert_eq!(recomputed, verdict, "byte for byte under the old pin");
    assert!(matches!(
        verdict_at(&mut w.store, &q, at),
        Err(ratchet_gate::Error::PolicyNotPinned { .. })
    ));
    assert!(matches!(
        decide(&mut w.store, &q_first),
        Err(ratchet_gate::Error::PolicyNotPinned { .. })
    ));
    decide(&mut w.store, &q).expect("the new pin decides");
    let head = w.store.head().expect("head").size;
    let view = w
        .store
        .verified(&VerifyOptions::default())
        .expect("verifies");
    let resolved = ratchet_gate::resolve_policy(Some(&view), "tool", None).expect("resolve");
    assert_eq!(
        resolved,
        (looser.clone(), ratchet_gate::PolicySource::Pinned)
    );
    assert_eq!(
        ratchet_gate::pinned_policy(&view, "tool", head)
            .expect("read")
            .map(|p| p.seq),
        Some(second.seq())
    );
    // An unpinned class still decides under the file it is given.
    let (_, source) =
        ratchet_gate::resolve_policy(Some(&view), "flow", Some(&w.policy)).expect("resolve");
    assert_eq!(source, ratchet_gate::PolicySource::Unpinned);
}

#[test]
fn policy_differences_name_the_fields_as_files_do() {
    let p = policy();
    let a = p.class("prompt").expect("class");
    let mut b = a.clone();
    b.guardrails[0].margin = 0.5;
    b.direction = Some(ratchet_gate::Direction::LowerIsBetter);
    b.invariants.clear();
    assert_eq!(
        ratchet_gate::policy_differences(a, &b),
        vec!["direction", "guardrail[0].margin", "invariant"]
    );
    assert!(ratchet_gate::policy_differences(a, a).is_empty());
}

/// The LLR path a report draws for a bernoulli verdict on a lower-is-better
/// scorer is the gate's own: as many points as the test's observations,
/// ending at the verdict's LLR (it was blank when the report redrew the
/// loop on raw values against the sign-flipped threshold).
#[test]
fn the_recorded_llr_path_of_a_lower_is_better_bernoulli_verdict_is_the_gates() {
    let text = gap_class(
        "fast",
        "bernoulli",
        "latency_ms",
        0.3,
        3000,
        "pass_threshold = 200.0\n",
    );
    let policy = Policy::parse(&text).expect("policy");
    let class = policy.class("fast").expect("class");
    let (_dir, mut store) = ratchet_testkit::new_store();
    let mut rng = StdRng::seed_from_u64(12);
    let (base, cand) = (commit(1), commit(2));
    let mut scores = Vec::new();
    for _ in 0..400 {
        // Baseline within 200 ms half the time, the candidate 90 %.
        for (c, p_fast) in [(&base, 0.5), (&cand, 0.9)] {
            let ms = if rng.random_bool(p_fast) {
                150.0
            } else {
                250.0
            };
            scores.push(Score::new(
                c.clone(),
                format!("{:08x}", rng.random::<u32>()),
                "latency_ms",
                ms,
            ));
        }
    }
    // Pairs by task: give both sides the same task names.
    for pair in scores.chunks_mut(2) {
        let name = pair[0].task.clone();
        pair[1].task = name;
    }
    store.record_scores(&scores, "bench").expect("scores");
    let q = common::question("fast", class, &base, &cand);
    let v = decide(&mut store, &q).expect("decide");
    assert_eq!(v.outcome, Outcome::Promote, "{v:#?}");
    let view = store.verified(&VerifyOptions::default()).expect("view");
    let path = ratchet_gate::recorded_bernoulli_path(&view, &v, "latency_ms")
        .expect("path")
        .expect("a bernoulli verdict");
    let seq = v.sequential().expect("sequential stage");
    assert_eq!(path.len() as u64, seq.n, "{seq:?}");
    let llr = seq.llr;
    assert!(
        (path.last().copied().unwrap_or(f64::NAN) - llr).abs() < 1e-9,
        "{path:?} vs {llr}"
    );
    assert!(
        matches!(
            seq.test,
            ratchet_gate::TestFigures::Bernoulli {
                lower_is_better: true,
                ..
            }
        ),
        "{seq:?}"
    );
}
