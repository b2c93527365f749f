//! Gate benchmarks: the cost of one sequential-test update per kind, and of
//! calibrating a policy by Monte Carlo. Figures in benches/README.md.

use std::hint::black_box;
use std::time::Duration;

use criterion::{BatchSize, Criterion, Throughput, criterion_group, criterion_main};
use rand::{Rng, SeedableRng, rngs::StdRng};
use ratchet_gate::{
    BernoulliSprt, Boundaries, GaussianSprt, LogisticElo, PairedGsprt, Pairing, SequentialTest,
    exact_bernoulli, monte_carlo,
};

const OBS: usize = 10_000;

fn bounds() -> Boundaries {
    // Tiny error rates: the tests stay open for the whole stream.
    Boundaries::new(1e-12, 1e-12).expect("valid")
}

fn updates(c: &mut Criterion) {
    let mut rng = StdRng::seed_from_u64(1);
    let bools: Vec<bool> = (0..OBS).map(|_| rng.random_bool(0.55)).collect();
    let floats: Vec<f64> = (0..OBS).map(|_| rng.random::<f64>()).collect();
    let classes: Vec<usize> = (0..OBS).map(|_| rng.random_range(0..5)).collect();

    let mut g = c.benchmark_group("sprt_update");
    g.throughput(Throughput::Elements(OBS as u64));
    let bern = BernoulliSprt::new(0.5, 0.6, bounds()).expect("valid");
    g.bench_function("bernoulli", |b| {
        b.iter_batched(
            || bern.clone(),
            |mut t| {
                for &x in &bools {
                    black_box(t.observe(x));
                }
                t
            },
            BatchSize::SmallInput,
        )
    });
    let gauss = GaussianSprt::new(0.4, 0.6, bounds()).expect("valid");
    g.bench_function("gaussian", |b| {
        b.iter_batched(
            || gauss.clone(),
            |mut t| {
                for &x in &floats {
                    black_box(t.update(x).expect("finite"));
                }
                t
            },
            BatchSize::SmallInput,
        )
    });
    let elo = LogisticElo {
        elo0: 0.0,
        elo1: 5.0,
    };
    let penta = PairedGsprt::new(Pairing::Pentanomial, elo, bounds()).expect("valid");
    g.bench_function("paired_gsprt_count", |b| {
        b.iter_batched(
            || penta.clone(),
            |mut t| {
                for &x in &classes {
                    black_box(t.observe(x).expect("class"));
                }
                t
            },
            BatchSize::SmallInput,
        )
    });
    g.finish();

    // The GSPRT's LLR needs two maximum-likelihood fits: one evaluation.
    let mut filled = penta.clone();
    for &x in &classes {
        filled.observe(x).expect("class");
    }
    let mut g = c.benchmark_group("paired_gsprt");
    g.bench_function("llr_evaluation", |b| b.iter(|| black_box(filled.llr())));
    g.finish();
}

fn calibration(c: &mut Criterion) {
    let test = BernoulliSprt::new(0.5, 0.6, Boundaries::new(0.05, 0.05).expect("valid"))
        .expect("valid")
        .with_truncation(2000)
        .expect("valid");
    let mut g = c.benchmark_group("calibration");
    g.sample_size(10).measurement_time(Duration::from_secs(10));
    g.bench_function("monte_carlo_10k_runs_bernoulli", |b| {
        b.iter(|| monte_carlo(&test, 10_000, 2000, 7, |rng| rng.random_bool(0.55)).expect("mc"))
    });
    g.bench_function("exact_lattice_max_n_2000", |b| {
        b.iter(|| exact_bernoulli(&test, 0.55).expect("exact"))
    });
    g.finish();
}

/// `decide` over 1M score rows (two commits × 500k tasks), verifying the
/// trace from a checkpoint taken before the last appends.
fn decide_1m(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("tempdir");
    let (mut store, base, cand) = ratchet_benches::paired_store(&dir.path().join("s"), 500_000);
    let checkpoint = store.checkpoint().expect("checkpoint");
    store
        .append(ratchet_trace::EventDraft::raw(
            "note",
            r#"{"after":"checkpoint"}"#,
        ))
        .expect("append");
    let policy = ratchet_gate::Policy::parse(
        r#"
[class.prompt]
scorer = "accuracy"
test = "paired"
alpha = 0.05
beta = 0.05
elo0 = 0.0
elo1 = 10.0
max_n = 500000
"#,
    )
    .expect("policy");
    let class = policy.class("prompt").expect("class");
    let q = ratchet_gate::Question {
        class: "prompt",
        policy: class,
        baseline: &base,
        candidate: &cand,
        checkpoint: Some(&checkpoint),
        allow_unpinned: true,
    };
    let mut g = c.benchmark_group("decide");
    g.sample_size(10).measurement_time(Duration::from_secs(10));
    g.bench_function("paired_1m_score_rows_from_checkpoint", |b| {
        b.iter(|| black_box(ratchet_gate::decide(&mut store, &q).expect("decide")))
    });
    // decide's read alone (per-task means of both commits, on the view
    // verification folds: verified once here, as a warm owner holds it), and
    // SQLite's own aggregate of the same per-task means as the yardstick.
    let view = store
        .verified(&ratchet_trace::VerifyOptions::default().checkpoint(checkpoint.clone()))
        .expect("verifies");
    g.bench_function("paired_scores_1m_score_rows", |b| {
        b.iter(|| {
            black_box(
                view.paired_scores(&base, &cand, "accuracy", ratchet_trace::AsOf::Head)
                    .len(),
            )
        })
    });
    let raw = ratchet_benches::raw_connection(&store);
    g.bench_function("sqlite_group_by_task_1m_score_rows", |b| {
        b.iter(|| {
            let mut q = raw
                .prepare_cached(
                    "SELECT task, avg(CASE WHEN commit_id = ?1 THEN value END),
                            avg(CASE WHEN commit_id = ?2 THEN value END)
                       FROM scores WHERE scorer = 'accuracy' AND commit_id IN (?1, ?2)
                      GROUP BY task ORDER BY task",
                )
                .expect("prepare");
            let rows: Vec<(String, Option<f64>, Option<f64>)> = q
                .query_map([base.as_str(), cand.as_str()], |r| {
                    Ok((r.get(0)?, r.get(1)?, r.get(2)?))
                })
                .expect("query")
                .collect::<rusqlite::Result<_>>()
                .expect("rows");
            black_box(rows)
        })
    });
    g.finish();
}

criterion_group!(benches, updates, calibration, decide_1m);
criterion_main!(benches);
