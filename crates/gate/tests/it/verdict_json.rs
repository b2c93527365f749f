//! A verdict is typed both ways: every shape the gate records reads back
//! with `Verdict::from_json` and writes the same bytes again, and bytes
//! that are not a verdict are refused with the field named.

use crate::common;
use rand::{Rng, SeedableRng, rngs::StdRng};
use ratchet_gate::{
    Error, GateStatus, GuardrailResult, Law, Policy, StageDetails, Verdict, decide, verdict_at,
};
use ratchet_testkit::{gap_class, guardrail, paired_class_to};
use ratchet_trace::{CommitId, Score, Store, TestRun};

/// One class per test kind and guardrail method, with invariants and
/// canaries; a class whose scorer has too few tasks; a class whose
/// required suite never ran.
fn policy() -> Policy {
    /// The betting guardrail's method: a confidence sequence.
    const SEQUENCE: &str = "method = \"sequence\"\n";
    /// The pass threshold of the `lower` class (on `latency_ms`).
    const PASS_THRESHOLD: &str = "pass_threshold = -100.0\n";
    /// A required suite that never runs in these tests.
    const INTEGRATION: &str = "required_suites = [\"integration\"]\n";
    let text = [
        gap_class(
            "bernoulli",
            "bernoulli",
            "acc",
            0.3,
            2000,
            "pass_threshold = 0.5\nrequired_suites = [\"unit\"]\n\
             [class.bernoulli.canaries]\ntasks = [\"t00000\", \"t00001\"]\nminimum = 0.0\n\
             [[class.bernoulli.invariant]]\nscorer = \"safety\"\nminimum = 1.0\n",
        ),
        gap_class("gaussian", "gaussian", "acc", 0.1, 2000, ""),
        guardrail("gaussian", "cost", "lower", 0.10, "relative", ""),
        gap_class("betting", "betting", "acc", 0.1, 2000, ""),
        guardrail("betting", "cost", "lower", 0.5, "absolute", SEQUENCE),
        paired_class_to("paired", "acc", 30.0, 2000, ""),
        gap_class(
            "lower",
            "bernoulli",
            "latency_ms",
            0.3,
            2000,
            PASS_THRESHOLD,
        ),
        gap_class("exact", "gaussian", "acc", 0.1, 2000, ""),
        guardrail("exact", "flat", "lower", 0.10, "relative", ""),
        gap_class("few", "gaussian", "rare", 0.1, 2000, ""),
        gap_class("untested", "betting", "acc", 0.1, 2000, INTEGRATION),
    ]
    .concat();
    Policy::parse(&text).expect("policy")
}

fn commit(n: u8) -> CommitId {
    CommitId::parse(&format!("{n:02x}").repeat(20)).expect("commit")
}

/// Reads `v`'s JSON back and checks it is `v`, byte for byte.
fn reads_back(v: &Verdict) -> Verdict {
    let bytes = v.to_json().expect("json");
    let back = Verdict::from_json(&bytes).unwrap_or_else(|e| {
        panic!(
            "the verdict does not read back ({e}): {}",
            String::from_utf8_lossy(&bytes)
        )
    });
    assert_eq!(
        String::from_utf8_lossy(&back.to_json().expect("json")),
        String::from_utf8_lossy(&bytes)
    );
    // NaN is not equal to itself: a verdict holding a figure recorded as
    // null (an exact Welch test's infinite t) is compared by its bytes
    // above and its typed head here.
    if exact_welch(v) {
        assert_eq!(
            (
                &back.outcome,
                &back.candidate,
                &back.policy_hash,
                &back.trace
            ),
            (&v.outcome, &v.candidate, &v.policy_hash, &v.trace)
        );
    } else {
        assert_eq!(&back, v);
    }
    back
}

/// Whether `v` has a Welch guardrail on exact data (an infinite t).
fn exact_welch(v: &Verdict) -> bool {
    v.stages.iter().any(|s| {
        matches!(&s.details, StageDetails::Guardrail(g)
            if matches!(g.result, GuardrailResult::Welch(w) if !w.t.is_finite()))
    })
}

#[test]
fn every_shape_of_verdict_reads_back_to_the_same_bytes() {
    let (_dir, mut store) = ratchet_testkit::new_store();
    let (base, cand) = (commit(1), commit(2));
    let mut rng = StdRng::seed_from_u64(25);
    let policy = policy();
    let classes = [
        "bernoulli",
        "gaussian",
        "betting",
        "paired",
        "lower",
        "exact",
        "few",
        "untested",
    ];
    let mut shapes = std::collections::BTreeSet::new();
    // Evidence arrives in batches and every class is polled after each:
    // open looks, then final ones, each read back.
    for batch in 0..6 {
        let mut scores = Vec::new();
        for t in batch * 60..(batch + 1) * 60 {
            let task = format!("t{t:05}");
            let b = f64::from(rng.random_range(0u8..=10)) / 10.0;
            let c = (b + f64::from(rng.random_range(0u8..=4)) / 10.0 - 0.1).clamp(0.0, 1.0);
            for (commit, acc, cost) in [(&base, b, 1.0), (&cand, c, 1.02)] {
                let cost = cost * (0.9 + 0.2 * rng.random::<f64>());
                scores.push(Score::new(commit.clone(), task.clone(), "acc", acc));
                scores.push(Score::new(commit.clone(), task.clone(), "cost", cost));
                scores.push(Score::new(commit.clone(), task.clone(), "safety", 1.0));
                // Exact data: Welch's t is infinite, recorded as `null`.
                scores.push(Score::new(commit.clone(), task.clone(), "flat", 2.0));
                let latency = -100.0 * acc - 50.0 * rng.random::<f64>();
                scores.push(Score::new(
                    commit.clone(),
                    task.clone(),
                    "latency_ms",
                    -latency,
                ));
            }
            if t == 0 {
                scores.push(Score::new(base.clone(), task.clone(), "rare", 0.5));
                scores.push(Score::new(cand.clone(), task.clone(), "rare", 0.6));
            }
        }
        store.record_scores(&scores, "eval").expect("scores");
        if batch == 1 {
            let run = TestRun {
                commit: cand.clone(),
                suite: "unit".into(),
                passed: 12,
                failed: 0,
                skipped: 1,
                duration_ms: 3.0,
                failures: Vec::new(),
            };
            store.record_test_run(&run, "ci").expect("run");
        }
        for class in classes {
            let q = common::question(class, policy.class(class).expect("class"), &base, &cand);
            let v = decide(&mut store, &q).expect("decide");
            let back = reads_back(&v);
            if String::from_utf8_lossy(&v.to_json().expect("json")).contains("\"t\":null") {
                shapes.insert("a figure recorded as null".to_string());
            }
            assert_eq!(back.law, Law::CURRENT);
            shapes.insert(format!("{:?}", v.outcome.status()));
            for stage in &v.stages {
                let shape = match &stage.details {
                    StageDetails::Verification(_) => "verification",
                    StageDetails::Tests(_) => "tests",
                    StageDetails::Invariants(_) => "invariants",
                    StageDetails::Sequential(_) => "sequential",
                    StageDetails::Guardrail(_) => "guardrail",
                    StageDetails::TooFewTasks(_) => "too few tasks",
                    StageDetails::Refused(_) => "refused",
                    StageDetails::Benchmarks(_) => "benchmarks",
                };
                shapes.insert(shape.to_string());
            }
            // A past look, recomputed, reads back as well.
            let earlier = verdict_at(&mut store, &q, v.trace.size / 2).expect("verdict_at");
            reads_back(&earlier);
        }
    }
    for shape in [
        "verification",
        "tests",
        "invariants",
        "sequential",
        "guardrail",
        "too few tasks",
        "a figure recorded as null",
        "Continue",
        "Promote",
        "MissingEvidence",
    ] {
        assert!(shapes.contains(shape), "{shape} never came up: {shapes:?}");
    }
}

/// The verdict of the `gaussian` class of [`policy`] on `cand` against
/// `base` at the store's head, recorded.
fn decide_gaussian(store: &mut Store, base: &CommitId, cand: &CommitId) -> Verdict {
    let policy = policy();
    let q = common::question(
        "gaussian",
        policy.class("gaussian").expect("class"),
        base,
        cand,
    );
    decide(store, &q).expect("decide")
}

#[test]
fn a_verdict_of_a_trace_that_fails_verification_reads_back() {
    let (_dir, mut store) = ratchet_testkit::new_store();
    let (base, cand) = (commit(3), commit(4));
    let scores: Vec<Score> = (0..20)
        .flat_map(|t| {
            [
                Score::new(base.clone(), format!("t{t}"), "acc", 0.5),
                Score::new(cand.clone(), format!("t{t}"), "acc", 0.0),
            ]
        })
        .collect();
    store.record_scores(&scores, "eval").expect("scores");
    let db = store.dir().join(ratchet_trace::DB_FILE);
    let c = rusqlite::Connection::open(&db).expect("raw");
    c.execute_batch(
        "DROP TRIGGER scores_no_update; UPDATE scores SET value = 1.0 WHERE value = 0.0;",
    )
    .expect("edit");
    drop(c);
    let v = decide_gaussian(&mut store, &base, &cand);
    assert_eq!(v.outcome.status(), GateStatus::UnverifiedTrace);
    let back = reads_back(&v);
    let StageDetails::Verification(found) = &back.stages[0].details else {
        panic!("the first stage is verification: {back:?}");
    };
    assert!(found.fault.is_some(), "{found:?}");
}

#[test]
fn bytes_that_are_not_a_verdict_are_refused_naming_what_is_wrong() {
    let (_dir, mut store) = ratchet_testkit::new_store();
    let (base, cand) = (commit(5), commit(6));
    let v = decide_gaussian(&mut store, &base, &cand);
    let json: serde_json::Value = serde_json::from_slice(&v.to_json().expect("json")).expect("v");
    /// What is wrong, the edit that makes it so, what the error says.
    type Edit = (&'static str, fn(&mut serde_json::Value), &'static str);
    let edits: [Edit; 5] = [
        ("a law from the future", |j| j["law"] = 6.into(), "law 6"),
        (
            "an abbreviated commit",
            |j| j["candidate"] = "abc123".into(),
            "not a full commit id",
        ),
        (
            "a short hash",
            |j| j["trace"]["hash"] = "ab".into(),
            "is not a hash",
        ),
        (
            "a stage with another stage's details",
            |j| j["stages"][0]["details"] = serde_json::json!({"suites": []}),
            "the details of stage",
        ),
        (
            "no outcome",
            |j| drop(j.as_object_mut().map(|o| o.remove("outcome"))),
            "outcome",
        ),
    ];
    for (what, edit, says) in edits {
        let mut bad = json.clone();
        edit(&mut bad);
        let err = Verdict::from_json(bad.to_string().as_bytes()).expect_err(what);
        assert!(
            matches!(err, Error::UnreadableVerdict { .. }) && err.to_string().contains(says),
            "{what}: {err}"
        );
    }
}
