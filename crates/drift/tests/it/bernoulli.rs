//! The Bernoulli CUSUM: its exact chain ARL against seeded simulation, and
//! what it does on the stream that made a normal chart cry wolf.

use rand::{Rng, SeedableRng, rngs::StdRng};
use ratchet_drift::{BernoulliCusum, Cusum, Detector, bernoulli_cusum_arl};

/// Mean run length over `runs` seeded Bernoulli(p) streams, and its SE.
fn simulated_arl(chart: &BernoulliCusum, p: f64, runs: usize, seed: u64) -> (f64, f64) {
    let mut rng = StdRng::seed_from_u64(seed);
    let mut lengths = Vec::with_capacity(runs);
    for _ in 0..runs {
        let mut c = chart.clone();
        c.reset();
        loop {
            let x = f64::from(u8::from(rng.random_bool(p)));
            if c.update(x).expect("0/1").is_some() {
                break;
            }
        }
        lengths.push(c.n() as f64);
    }
    let n = runs as f64;
    let mean = lengths.iter().sum::<f64>() / n;
    let var = lengths.iter().map(|l| (l - mean) * (l - mean)).sum::<f64>() / (n - 1.0);
    (mean, (var / n).sqrt())
}

#[test]
fn the_exact_chain_matches_simulation_in_and_out_of_control() {
    // Pass rate 0.9 watched for a drop to 0.8, ARL0 ≈ 500 so the
    // simulation stays cheap; then the same chart out of control.
    let chart = BernoulliCusum::for_arl0(0.9, 0.8, 500.0).expect("chart");
    for (p, runs, seed) in [(0.9, 2000, 1), (0.8, 2000, 2), (0.7, 2000, 3)] {
        let exact = bernoulli_cusum_arl(&chart, p).expect("arl");
        let (mc, se) = simulated_arl(&chart, p, runs, seed);
        assert!(
            (mc - exact).abs() <= 3.0 * se,
            "p = {p}: chain {exact:.2}, simulation {mc:.2} ± {se:.2}"
        );
    }
    let arl0 = bernoulli_cusum_arl(&chart, 0.9).expect("arl");
    assert!(arl0 >= 500.0, "the smallest h reaching the target: {arl0}");
    // One unit of h less would not reach it.
    let (_, h) = chart.parameters();
    let smaller =
        BernoulliCusum::new(0.9, 0.8, h - 1.0 / BernoulliCusum::UNITS as f64).expect("chart");
    assert!(bernoulli_cusum_arl(&smaller, 0.9).expect("arl") < 500.0);
}

#[test]
fn a_stable_pass_fail_stream_does_not_cry_wolf() {
    // The stream: 10,000 stable 0/1 scores at pass rate 0.7. The
    // normal-theory chart (k ½, h 5, "ARL0 ≈ 465") on them, against the
    // Bernoulli CUSUM tuned for a drop to 0.6 with an exact ARL0 of 10,000:
    // over 20 seeded streams the Bernoulli chart's alarms per stream stay
    // near 10,000/ARL0 ≈ 1 (Poisson-like: 3 SE of 20 streams ≈ 0.7).
    let chart = BernoulliCusum::for_arl0(0.7, 0.6, 10_000.0).expect("chart");
    let arl0 = bernoulli_cusum_arl(&chart, 0.7).expect("arl");
    let mut rng = StdRng::seed_from_u64(19);
    let (mut bern_alarms, mut normal_alarms) = (0u64, 0u64);
    let streams = 20;
    for _ in 0..streams {
        let mut b = chart.clone();
        b.reset();
        let mut n = Cusum::new(0.7, (0.7f64 * 0.3).sqrt(), 0.5, 5.0).expect("normal chart");
        for _ in 0..10_000 {
            let x = f64::from(u8::from(rng.random_bool(0.7)));
            if b.update(x).expect("0/1").is_some() {
                bern_alarms += 1;
                b.reset();
            }
            if n.update(x).expect("finite").is_some() {
                normal_alarms += 1;
                n.reset();
            }
        }
    }
    let per_stream = bern_alarms as f64 / f64::from(streams);
    let expected = 10_000.0 / arl0;
    let tolerance = 3.0 * (expected / f64::from(streams)).sqrt();
    assert!(
        (per_stream - expected).abs() <= tolerance,
        "bernoulli: {per_stream} alarms per stream, expected {expected:.2} ± {tolerance:.2}"
    );
    // The normal chart on the same data alarms far more than its nominal
    // 10,000/465 ≈ 21.5 per stream would suggest is "in control" — and in
    // any case an order of magnitude more than the pass/fail chart.
    assert!(
        normal_alarms > 10 * bern_alarms.max(1),
        "normal {normal_alarms} vs bernoulli {bern_alarms}"
    );
}
