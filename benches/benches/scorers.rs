//! Scorer benchmarks: rubric arithmetic, the parse-validate-score path, and
//! batch scoring against plain appends of the same rows. Figures in
//! benches/README.md.

use std::hint::black_box;
use std::time::Duration;

use criterion::{BatchSize, Criterion, Throughput, criterion_group, criterion_main};
use ratchet_scorers::{Rubric, RubricSet, score_pending};
use ratchet_trace::{EventDraft, Score, Store, StoreOptions};
use serde_json::json;

const RUBRIC: &str = r#"
name = "answer"
must_cap = 0.2
[[item]]
id = "correct"
type = "boolean"
weight = 3.0
must = true
[[item]]
id = "steps"
type = "count"
max = 5
weight = 1.0
[[item]]
id = "coverage"
type = "fraction"
weight = 1.0
[[item]]
id = "cites"
type = "boolean"
weight = 0.5
"#;

fn rubric_scoring(c: &mut Criterion) {
    let rubric = Rubric::from_toml(RUBRIC).expect("rubric");
    let json_obs: Vec<serde_json::Value> = (0..1000)
        .map(|i| json!({"correct": i % 3 != 0, "steps": i % 6, "coverage": (i % 10) as f64 / 10.0, "cites": i % 2 == 0}))
        .collect();
    let parsed: Vec<_> = json_obs
        .iter()
        .map(|o| rubric.validate_observation(o).expect("valid"))
        .collect();
    let texts: Vec<String> = json_obs.iter().map(|o| o.to_string()).collect();
    let mut g = c.benchmark_group("rubric");
    g.throughput(Throughput::Elements(1000));
    g.bench_function("score_parsed", |b| {
        b.iter(|| {
            for o in &parsed {
                black_box(rubric.score(o));
            }
        })
    });
    g.bench_function("parse_validate_score_json_text", |b| {
        b.iter(|| {
            for t in &texts {
                let v: serde_json::Value = serde_json::from_str(t).expect("json");
                black_box(rubric.score_json(&v).expect("valid"));
            }
        })
    });
    g.finish();
}

fn batch(c: &mut Criterion) {
    const N: usize = 100_000;
    let rubric = Rubric::from_toml(RUBRIC).expect("rubric");
    let set = RubricSet::new(vec![rubric.clone()]);
    let commit = ratchet_benches::commit(0);
    let dir = tempfile::tempdir().expect("tempdir");
    let mut g = c.benchmark_group("batch_scoring_100k");
    g.throughput(Throughput::Elements(N as u64));
    g.sample_size(10).measurement_time(Duration::from_secs(20));
    let mut k = 0;
    // A store holding N observations, scored from scratch each iteration.
    let template = dir.path().join("template");
    {
        let mut s = Store::create(&template, StoreOptions::default()).expect("store");
        for i in 0..N {
            let obs = json!({"correct": i % 3 != 0, "steps": i % 6, "coverage": (i % 10) as f64 / 10.0, "cites": i % 2 == 0});
            let draft = EventDraft::json(
                ratchet_scorers::KIND_OBSERVATION,
                &json!({"task": format!("t{i}"), "rubric": "answer", "observation": obs}),
            )
            .expect("json")
            .commit(commit.clone());
            s.append(draft).expect("append");
        }
    }
    g.bench_function("score_pending", |b| {
        b.iter_batched(
            || {
                k += 1;
                let to = dir.path().join(format!("copy{k}"));
                std::fs::create_dir_all(&to).expect("mkdir");
                std::fs::copy(template.join("trace.db"), to.join("trace.db")).expect("copy");
                Store::open(&to, StoreOptions::default()).expect("open")
            },
            |mut s| {
                let r = score_pending(&mut s, &set).expect("batch");
                assert_eq!(r.scored, N as u64);
                s
            },
            BatchSize::PerIteration,
        )
    });
    // Baseline: plain appends of the same score rows in one batch.
    let scores: Vec<Score> = (0..N)
        .map(|i| {
            let mut s = Score::new(commit.clone(), format!("t{i}"), "answer", 0.5);
            s.scorer_version = rubric.version();
            s
        })
        .collect();
    g.bench_function("append_same_rows", |b| {
        b.iter_batched(
            || {
                k += 1;
                Store::create(
                    dir.path().join(format!("plain{k}")),
                    StoreOptions::default(),
                )
                .expect("store")
            },
            |mut s| {
                s.record_scores(&scores, "batch").expect("append");
                s
            },
            BatchSize::PerIteration,
        )
    });
    g.finish();
}

criterion_group!(benches, rubric_scoring, batch);
criterion_main!(benches);
