//! Drift benchmarks: detector updates, Markov-chain ARL, best-commit ranking
//! and the monitor following the trace. Figures in benches/README.md.

use std::hint::black_box;
use std::time::Duration;

use criterion::{BatchSize, Criterion, Throughput, criterion_group, criterion_main};
use rand::{Rng, SeedableRng, rngs::StdRng};
use ratchet_drift::{
    Cusum, DEFAULT_STATES, Detector, Ewma, EwmaLimits, Monitor, PageHinkley, Ranking, best_commit,
    cusum_arl, ewma_arl,
};
use ratchet_trace::VerifyOptions;

const OBS: usize = 10_000;

/// Detector updates on realistic streams — N(0, 1) in control (alarms
/// happen, at the in-control ARL, and restart the detector), N(1, 1)
/// shifted (alarms every few values), 0/1 pass/fail standardized — against
/// the floor measured in the same run: one pass summing the same stream.
fn detectors(c: &mut Criterion) {
    let mut rng = StdRng::seed_from_u64(1);
    let normal = |rng: &mut StdRng| -> f64 {
        // Box–Muller: no distribution crate on the bench path.
        let (u, v): (f64, f64) = (rng.random::<f64>().max(f64::MIN_POSITIVE), rng.random());
        (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()
    };
    let in_control: Vec<f64> = (0..OBS).map(|_| normal(&mut rng)).collect();
    let shifted: Vec<f64> = (0..OBS).map(|_| normal(&mut rng) + 1.0).collect();
    let pass_fail: Vec<f64> = (0..OBS)
        .map(|_| if rng.random_bool(0.5) { 1.0 } else { -1.0 })
        .collect();
    let mut g = c.benchmark_group("detector_update");
    g.throughput(Throughput::Elements(OBS as u64));
    fn run<D: Detector + Clone>(
        g: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>,
        name: &str,
        d: &D,
        xs: &[f64],
    ) {
        g.bench_function(name, |b| {
            b.iter_batched(
                || d.clone(),
                |mut d| {
                    for &x in xs {
                        if let Some(a) = d.update(x).expect("finite") {
                            black_box(a);
                            d.reset();
                        }
                    }
                    d
                },
                BatchSize::SmallInput,
            )
        });
    }
    for (stream, xs) in [
        ("normal", &in_control),
        ("shifted", &shifted),
        ("pass_fail", &pass_fail),
    ] {
        g.bench_function(format!("floor_sum/{stream}"), |b| {
            b.iter(|| black_box(xs.iter().fold(0.0, |acc, &x| acc + black_box(x))))
        });
        let cusum = Cusum::new(0.0, 1.0, 0.5, 5.0).expect("valid");
        let ewma = Ewma::new(0.0, 1.0, 0.1, 2.814, EwmaLimits::TimeVarying).expect("valid");
        let ph = PageHinkley::new(0.05, 20.0).expect("valid");
        run(&mut g, &format!("cusum/{stream}"), &cusum, xs);
        run(&mut g, &format!("ewma_time_varying/{stream}"), &ewma, xs);
        run(&mut g, &format!("page_hinkley/{stream}"), &ph, xs);
    }
    g.finish();
}

fn arl(c: &mut Criterion) {
    let mut g = c.benchmark_group("markov_chain_arl");
    g.bench_function("cusum_two_sided_200_states", |b| {
        b.iter(|| cusum_arl(0.5, 4.0, 1.0, false, DEFAULT_STATES).expect("arl"))
    });
    g.bench_function("ewma_201_states", |b| {
        b.iter(|| ewma_arl(0.1, 2.814, 1.0, DEFAULT_STATES).expect("arl"))
    });
    g.finish();
}

fn live(c: &mut Criterion) {
    // 1,000 commits × 1,000 scores = 1M score rows.
    let dir = tempfile::tempdir().expect("tempdir");
    let store = ratchet_benches::score_store(&dir.path().join("s"), 1_000_000, 1000);
    // Decisions read the view verification folds (verified once, outside
    // the timed loop, as a warm owner holds it).
    let view = store.verified(&VerifyOptions::default()).expect("verifies");
    let ranking = Ranking {
        scorer: "accuracy",
        version: None,
        min_n: 30,
        confidence: 0.95,
        exclude: &[],
        lower_is_better: false,
    };
    let mut g = c.benchmark_group("live");
    g.sample_size(10).measurement_time(Duration::from_secs(8));
    g.bench_function("best_commit_1000_commits_1m_scores", |b| {
        b.iter(|| black_box(best_commit(&view, &ranking).expect("rank")))
    });
    // Yardstick: SQLite's own per-commit aggregate over the same rows.
    let raw = ratchet_benches::raw_connection(&store);
    g.bench_function("sqlite_group_by_1000_commits_1m_scores", |b| {
        b.iter(|| black_box(ratchet_benches::group_by_commit(&raw, "scores", "accuracy")))
    });
    // The monitor following one commit whose stream is all of 1M appended events.
    let dir2 = tempfile::tempdir().expect("tempdir");
    let one = ratchet_benches::score_store(&dir2.path().join("s"), 1_000_000, 1);
    let one = one.verified(&VerifyOptions::default()).expect("verifies");
    let commit = ratchet_benches::commit(0);
    // Baseline from the first 1,000 scores; the stream is the 999,000 after.
    let from_start =
        Monitor::start(&one, &commit, "accuracy", 1000, 0.5, 1e6, 30).expect("monitor");
    g.throughput(Throughput::Elements(999_000));
    g.bench_function("monitor_follows_1m_events", |b| {
        b.iter_batched(
            || from_start.clone(),
            |mut m| black_box(m.poll(&one).expect("poll")),
            BatchSize::LargeInput,
        )
    });
    g.finish();
}

criterion_group!(benches, detectors, arl, live);
criterion_main!(benches);
