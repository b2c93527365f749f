//! Batch scoring (the sleep phase) and criterion ingestion.

use std::path::Path;

use ratchet_scorers::{
    CRITERION_NS, Environment, Rubric, RubricSet, ingest_criterion, parse_criterion,
    record_observation, score_pending,
};
use ratchet_trace::{CommitId, Store, StoreOptions, VerifyOptions};
use serde_json::json;

fn commit() -> CommitId {
    CommitId::parse(&"34".repeat(20)).expect("commit")
}

const RUBRIC: &str = "name = \"answer\"\n[[item]]\nid = \"correct\"\ntype = \"boolean\"\nweight = 1.0\n[[item]]\nid = \"steps\"\ntype = \"count\"\nmax = 2\nweight = 1.0\n";

#[test]
fn pending_observations_are_scored_once_per_rubric_version() {
    let d = tempfile::tempdir().expect("tempdir");
    let mut store = Store::create(d.path().join("s"), StoreOptions::default()).expect("store");
    let c = commit();
    record_observation(
        &mut store,
        &c,
        "t1",
        "answer",
        &json!({"correct": true, "steps": 2}),
        "judge",
    )
    .expect("obs");
    record_observation(
        &mut store,
        &c,
        "t2",
        "answer",
        &json!({"correct": false, "steps": 1}),
        "judge",
    )
    .expect("obs");
    let bad = record_observation(
        &mut store,
        &c,
        "t3",
        "answer",
        &json!({"correct": "maybe"}),
        "judge",
    )
    .expect("obs");
    record_observation(&mut store, &c, "t4", "other", &json!({}), "judge").expect("obs");

    let v1 = RubricSet::new(vec![Rubric::from_toml(RUBRIC).expect("rubric")]);
    let r = score_pending(&mut store, &v1).expect("batch");
    assert_eq!(
        (r.observations, r.scored, r.already_scored, r.unknown_rubric),
        (4, 2, 0, 1)
    );
    assert_eq!(r.invalid.len(), 1);
    assert_eq!(r.invalid[0].0, bad.seq);
    assert!(
        r.invalid[0].1.contains("correct") && r.invalid[0].1.contains("steps"),
        "{}",
        r.invalid[0].1
    );
    let view = store.verified(&VerifyOptions::default()).expect("verifies");
    let mut values: Vec<f64> = Vec::new();
    let hex = c.to_string();
    view.each_score(0, &mut |row| {
        if row.commit == hex && row.scorer == "answer" {
            values.push(row.value);
        }
    });
    assert_eq!(values.len(), 2);
    assert!(
        (values[0] - 1.0).abs() < 1e-12 && (values[1] - 0.25).abs() < 1e-12,
        "{values:?}"
    );

    // Idempotent.
    let again = score_pending(&mut store, &v1).expect("batch");
    assert_eq!((again.scored, again.already_scored), (0, 2));

    // A new rubric version rescores everything under it.
    let v2 = RubricSet::new(vec![
        Rubric::from_toml(&RUBRIC.replace("weight = 1.0\n[[item]]", "weight = 3.0\n[[item]]"))
            .expect("rubric"),
    ]);
    let r = score_pending(&mut store, &v2).expect("batch");
    assert_eq!((r.scored, r.already_scored), (2, 0));
    assert!(store.verify().expect("verify").is_valid());
}

#[test]
fn criterion_results_become_scores_keyed_to_the_runner() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/criterion");
    let env = Environment {
        cpu: "Test CPU".into(),
        cpus: 2,
        platform: "linux-x86_64".into(),
        label: "rustc 1.95.0".into(),
    };
    let scores = parse_criterion(&dir, &commit(), &env).expect("parse");
    let tasks: Vec<&str> = scores.iter().map(|s| s.task.as_str()).collect();
    assert_eq!(
        tasks,
        vec![
            "markov_chain_arl/cusum_two_sided_200_states",
            "sprt_update/bernoulli"
        ]
    );
    assert!(scores.iter().all(|s| s.scorer == CRITERION_NS
        && s.scorer_version == env.fingerprint()
        && s.value > 0.0));
    // Another runner: another scorer, so the gate never pairs across runners.
    let other = Environment {
        label: "rustc 1.96.0".into(),
        ..env.clone()
    };
    assert_ne!(env.fingerprint(), other.fingerprint());

    let d = tempfile::tempdir().expect("tempdir");
    let mut store = Store::create(d.path().join("s"), StoreOptions::default()).expect("store");
    let r = ingest_criterion(&mut store, &dir, &commit(), &env, "bench").expect("ingest");
    assert_eq!((r.scores, r.samples), (2, 2));
    // These results have no sample.json: each estimate is its one sample, and a note says so.
    assert!(
        r.notes.iter().any(|n| n.contains("has no sample.json")),
        "{:?}",
        r.notes
    );
    let err =
        ingest_criterion(&mut store, d.path(), &commit(), &env, "bench").expect_err("no results");
    assert!(err.to_string().contains("no criterion results"), "{err}");
    // The scorer's declaration (lower is better), two scores, their two
    // samples and the ingestion's own `ingest` event.
    assert_eq!(store.head().expect("head").size, 6, "nothing more stored");
    assert_eq!(
        ratchet_scorers::declared_direction(
            &store.verified(&VerifyOptions::default()).expect("verifies"),
            CRITERION_NS,
            u64::MAX
        )
        .expect("read"),
        Some((ratchet_scorers::Direction::LowerIsBetter, 1))
    );
    let again = ingest_criterion(&mut store, &dir, &commit(), &env, "bench").expect("again");
    assert_eq!((again.scores, again.already_ingested_at), (0, Some(6)));
    assert_eq!(
        store.head().expect("head").size,
        6,
        "the same results count once"
    );
}
