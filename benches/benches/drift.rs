//! Drift benchmarks: detector updates, Markov-chain ARL, best-commit ranking
//! and the monitor following the trace. Figures in benches/README.md.

use std::hint::black_box;
use std::time::Duration;

use criterion::{BatchSize, Criterion, Throughput, criterion_group, criterion_main};
use rand::{Rng, SeedableRng, rngs::StdRng};
use ratchet_drift::{
    Cusum, DEFAULT_STATES, Detector, Ewma, EwmaLimits, Monitor, PageHinkley, best_commit,
    cusum_arl, ewma_arl,
};

const OBS: usize = 10_000;

fn detectors(c: &mut Criterion) {
    let mut rng = StdRng::seed_from_u64(1);
    // In control: no alarm interrupts the stream.
    let xs: Vec<f64> = (0..OBS).map(|_| rng.random::<f64>() - 0.5).collect();
    let mut g = c.benchmark_group("detector_update");
    g.throughput(Throughput::Elements(OBS as u64));
    let cusum = Cusum::new(0.0, 1.0, 0.5, 50.0).expect("valid");
    let ewma = Ewma::new(0.0, 1.0, 0.1, 50.0, EwmaLimits::TimeVarying).expect("valid");
    let ph = PageHinkley::new(0.5, 1e9).expect("valid");
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
                        black_box(d.update(x).expect("finite"));
                    }
                    d
                },
                BatchSize::SmallInput,
            )
        });
    }
    run(&mut g, "cusum", &cusum, &xs);
    run(&mut g, "ewma_time_varying", &ewma, &xs);
    run(&mut g, "page_hinkley", &ph, &xs);
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
    let mut g = c.benchmark_group("live");
    g.sample_size(10).measurement_time(Duration::from_secs(8));
    g.bench_function("best_commit_1000_commits_1m_scores", |b| {
        b.iter(|| black_box(best_commit(&store, "accuracy", 30, 0.95, &[]).expect("rank")))
    });
    // The monitor following one commit whose stream is all of 1M appended events.
    let dir2 = tempfile::tempdir().expect("tempdir");
    let one = ratchet_benches::score_store(&dir2.path().join("s"), 1_000_000, 1);
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
