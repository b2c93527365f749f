//! The `benchmarks` kind: each benchmark judged on its own samples, the
//! suite's false "slower" flags bounded family-wise, promote only when
//! every benchmark is shown not slower — measured by seeded simulation
//! under the shapes timings have (log-normal, a heavy right tail, bimodal,
//! a machine that drifts), polled as evidence arrives, and end to end
//! through a store.

use rand::{Rng, SeedableRng, rngs::StdRng};
use rand_distr::{Distribution, Normal};
use ratchet_gate::benchmarks::{BenchVerdict, Reading, Thresholds, judge_with, verdict_with};
use ratchet_gate::{GateStatus, Policy, StageDetails};
use ratchet_scorers::Samples;
use ratchet_trace::{CommitId, Store, StoreOptions};

use crate::common;

/// How one timing is drawn: its log is the benchmark's log-median plus
/// this shape's noise.
#[derive(Debug, Clone, Copy)]
enum Shape {
    /// Log-normal, 2 % spread.
    LogNormal,
    /// Log-normal with 5 % of runs 2–10× slower (GC pauses, interrupts).
    HeavyTail,
    /// Two modes 12 % apart, half the runs in each (frequency scaling).
    Bimodal,
}

const SHAPES: [Shape; 3] = [Shape::LogNormal, Shape::HeavyTail, Shape::Bimodal];

/// Both ways the bets read a pair: signs (the first three laws), sized
/// (since the fourth).
const READINGS: [Reading; 2] = [Reading::Signs, Reading::Sized];

fn log_noise(shape: Shape, rng: &mut StdRng) -> f64 {
    let normal = Normal::new(0.0, 0.02).expect("normal");
    let base = normal.sample(rng);
    match shape {
        Shape::LogNormal => base,
        Shape::HeavyTail if rng.random_bool(0.05) => base + rng.random_range(2f64..10.0).ln(),
        Shape::HeavyTail => base,
        Shape::Bimodal if rng.random_bool(0.5) => base + 0.12,
        Shape::Bimodal => base,
    }
}

fn thresholds(m: usize) -> Thresholds {
    Thresholds {
        alpha: 0.05,
        regression: 0.05,
        equivalence: 0.01,
        benchmarks: m,
    }
}

/// One simulated suite polled every `every` pairs up to `n`: each
/// benchmark's unpaired log-ratios (i-th sample against i-th), the
/// candidate's times `factor[b]` × the baseline's. Returns whether some
/// look flagged a benchmark slower, and whether some look promoted (every
/// benchmark not slower, none slower) — the first final answer stops.
fn polled_suite(
    shape: Shape,
    factors: &[f64],
    n: usize,
    every: usize,
    reading: Reading,
    rng: &mut StdRng,
) -> (bool, bool) {
    let m = factors.len();
    let d: Vec<Vec<f64>> = factors
        .iter()
        .map(|f| {
            (0..n)
                .map(|_| f.ln() + log_noise(shape, rng) - log_noise(shape, rng))
                .collect()
        })
        .collect();
    let t = thresholds(m);
    for look in (every..=n).step_by(every) {
        let verdicts: Vec<BenchVerdict> = d
            .iter()
            .map(|x| verdict_with(&x[..look], &t, reading))
            .collect();
        if verdicts.contains(&BenchVerdict::Slower) {
            return (true, false);
        }
        if verdicts.iter().all(|v| v.not_slower()) {
            return (false, true);
        }
    }
    (false, false)
}

/// A rate's bound: the promise plus three Monte-Carlo standard errors of a
/// rate equal to the promise over `runs` runs.
fn bound(promise: f64, runs: usize) -> f64 {
    promise + 3.0 * (promise * (1.0 - promise) / runs as f64).sqrt()
}

/// An unchanged suite of 10 benchmarks, 200 pairs each, polled every 10:
/// the family-wise rate of a false "slower" flag is at most α = 0.05 for
/// every shape (Bonferroni over sign e-processes: conservative, so the
/// measured rate is far below), and the suite promotes nearly always (the
/// bimodal shape needs the most pairs: a quarter of its pairs differ by a
/// whole mode).
#[test]
fn false_slower_flags_stay_within_alpha_family_wise_for_every_shape() {
    const RUNS: usize = 300;
    for reading in READINGS {
        let mut rng = StdRng::seed_from_u64(36);
        for shape in SHAPES {
            let (mut flagged, mut promoted) = (0, 0);
            for _ in 0..RUNS {
                let (f, p) = polled_suite(shape, &[1.0; 10], 200, 10, reading, &mut rng);
                flagged += usize::from(f);
                promoted += usize::from(p);
            }
            let rate = flagged as f64 / RUNS as f64;
            eprintln!(
                "{reading:?} {shape:?}: false slower flags {flagged}/{RUNS}, promotes {promoted}/{RUNS}"
            );
            assert!(rate <= bound(0.05, RUNS), "{reading:?} {shape:?}: {rate}");
            assert!(
                promoted as f64 / RUNS as f64 >= 0.9,
                "{reading:?} {shape:?}: {promoted}"
            );
        }
    }
}

/// A suite whose one benchmark is exactly 5 % slower — the regression
/// threshold — among 9 unchanged: promoting it is a false promote, at
/// most α = 0.05 (the intersection–union test, no correction), for every
/// shape, polled every 10 pairs up to 200.
#[test]
fn a_regression_at_the_threshold_is_promoted_at_most_alpha_for_every_shape() {
    const RUNS: usize = 300;
    let mut factors = vec![1.0; 10];
    factors[3] = 1.05;
    for reading in READINGS {
        let mut rng = StdRng::seed_from_u64(360);
        for shape in SHAPES {
            let promoted = (0..RUNS)
                .filter(|_| polled_suite(shape, &factors, 200, 10, reading, &mut rng).1)
                .count();
            let rate = promoted as f64 / RUNS as f64;
            eprintln!("{reading:?} {shape:?}: false promotes at +5 %: {promoted}/{RUNS}");
            assert!(rate <= bound(0.05, RUNS), "{reading:?} {shape:?}: {rate}");
        }
    }
}

/// A machine that slows down by 30 % over the session. Unpaired — the
/// baseline's runs first, the candidate's after, minutes apart — the same
/// program looks slower and is flagged; paired by round (ABBA: each
/// round's two runs share the machine's state) it is not flagged.
#[test]
fn pairing_by_round_cancels_a_drifting_machine_that_unpaired_samples_carry() {
    let mut rng = StdRng::seed_from_u64(3600);
    let rounds = 60usize;
    let drift = |step: usize, steps: usize| (1.0 + 0.3 * step as f64 / steps as f64).ln();
    let noise = |rng: &mut StdRng| log_noise(Shape::LogNormal, rng);
    // Unpaired: all of A's runs (steps 0..rounds), then all of B's.
    let a: Vec<f64> = (0..rounds)
        .map(|i| drift(i, 2 * rounds) + noise(&mut rng))
        .collect();
    let b: Vec<f64> = (0..rounds)
        .map(|i| drift(rounds + i, 2 * rounds) + noise(&mut rng))
        .collect();
    let unpaired: Vec<f64> = a.iter().zip(&b).map(|(x, y)| y - x).collect();
    for reading in READINGS {
        let j = judge_with(&unpaired, &thresholds(1), reading);
        assert_eq!(
            j.verdict,
            BenchVerdict::Slower,
            "unpaired, {reading:?}: {j:?}"
        );
    }
    // Paired: round r runs A and B back to back (ABBA order), sharing the drift.
    let paired: Vec<f64> = (0..rounds)
        .map(|r| {
            let (sa, sb) = if r % 2 == 0 {
                (2 * r, 2 * r + 1)
            } else {
                (2 * r + 1, 2 * r)
            };
            (drift(sb, 2 * rounds) + noise(&mut rng)) - (drift(sa, 2 * rounds) + noise(&mut rng))
        })
        .collect();
    for reading in READINGS {
        let j = judge_with(&paired, &thresholds(1), reading);
        assert_ne!(
            j.verdict,
            BenchVerdict::Slower,
            "paired, {reading:?}: {j:?}"
        );
        assert!(j.verdict.not_slower(), "paired, {reading:?}: {j:?}");
    }
}

/// What reading sizes buys: one benchmark of 30, 5 % slower, its pairs'
/// log-ratios normal with a 4.2 % spread (two runs of 3 % run-to-run
/// noise: go test -bench and hyperfine on a busy machine), the gate asked
/// after 24 pairs (24 runs a side). 400 seeded suites: signs flag it in
/// about a fifth of them, sizes in about half. The assertion leaves 4
/// Monte-Carlo standard errors of the difference (≤ 0.035 each way for
/// 400 runs) below the measured gap.
#[test]
fn sized_bets_flag_a_five_percent_regression_in_fewer_noisy_runs_than_signs() {
    const RUNS: usize = 400;
    let noise = Normal::new(0.0, 0.042).expect("normal");
    let mut rng = StdRng::seed_from_u64(4036);
    let t = thresholds(30);
    let (mut signs, mut sized) = (0usize, 0usize);
    for _ in 0..RUNS {
        let d: Vec<f64> = (0..24)
            .map(|_| 1.05f64.ln() + noise.sample(&mut rng))
            .collect();
        signs += usize::from(verdict_with(&d, &t, Reading::Signs) == BenchVerdict::Slower);
        sized += usize::from(verdict_with(&d, &t, Reading::Sized) == BenchVerdict::Slower);
    }
    eprintln!("flagged at 24 pairs: signs {signs}/{RUNS}, sized {sized}/{RUNS}");
    let gap = (sized as f64 - signs as f64) / RUNS as f64;
    assert!(gap >= 0.15, "signs {signs}, sized {sized}");
}

fn commit(i: u8) -> CommitId {
    CommitId::parse(&format!("{i:02x}").repeat(20)).expect("commit")
}

/// Appends `n` runs (5 timings each) per side of 30 benchmarks spanning
/// 1 µs to 10 ms (log-uniform), 2 % noise, the candidate `slow` × slower on
/// benchmark 17.
fn thirty_benchmarks(store: &mut Store, slow: f64, n: usize, seed: u64) {
    let mut rng = StdRng::seed_from_u64(seed);
    let (base, cand) = (commit(1), commit(2));
    let mut drafts = Vec::new();
    for b in 0..30 {
        let median = 1e-6 * 10f64.powf(4.0 * b as f64 / 29.0);
        for (commit, factor) in [(&base, 1.0), (&cand, if b == 17 { slow } else { 1.0 })] {
            // `n` separate runs of the tool, 5 samples each: unpaired, a
            // run (its median) is one observation.
            for _ in 0..n {
                let values = (0..5)
                    .map(|_| median * factor * log_noise(Shape::LogNormal, &mut rng).exp())
                    .collect();
                let s = Samples {
                    commit: commit.clone(),
                    benchmark: format!("bench/{b:02}"),
                    scorer: "hyperfine_s".into(),
                    scorer_version: "runner-1".into(),
                    unit: "s".into(),
                    values,
                    round: None,
                };
                drafts.push(s.to_draft().expect("draft"));
                // Runs are separate ingestions: not consecutive events.
                drafts.push(
                    ratchet_trace::EventDraft::json("note", &serde_json::json!({})).expect("note"),
                );
            }
            let mut score = ratchet_trace::Score::new(
                commit.clone(),
                format!("bench/{b:02}"),
                "hyperfine_s",
                median * factor,
            );
            score.scorer_version = "runner-1".into();
            drafts.push(score.to_draft().expect("score"));
        }
    }
    store.append_batch(drafts).expect("append");
}

const POLICY: &str = "[class.perf]\nscorer = \"hyperfine_s\"\ndirection = \"lower\"\ntest = \"benchmarks\"\nalpha = 0.05\nbeta = 0.1\nmax_n = 500\nregression = 0.05\nequivalence = 0.01\n";

fn decide(store: &mut Store) -> ratchet_gate::Verdict {
    let policy = Policy::parse(POLICY).expect("policy");
    let (b, c) = (commit(1), commit(2));
    let q = common::question("perf", policy.class("perf").expect("class"), &b, &c);
    ratchet_gate::decide(store, &q).expect("decide")
}

fn rows(v: &ratchet_gate::Verdict) -> &[ratchet_gate::BenchmarkRow] {
    v.stages
        .iter()
        .find_map(|s| match &s.details {
            StageDetails::Benchmarks(d) => Some(d.benchmarks.as_slice()),
            _ => None,
        })
        .expect("a benchmarks stage")
}

/// The case through a store: 30 benchmarks from 1 µs to 10 ms, one
/// 25 % slower with 30 unpaired samples a side (and, in a second store, 5 %
/// slower with 60 — a 5 % change against 1 % noise at α/30 needs them):
/// rejected, the benchmark named first in the table and sized, its
/// interval around the true ratio; the verdict reads back to its bytes.
#[test]
fn a_regression_in_one_of_thirty_benchmarks_is_rejected_named_and_sized() {
    for (slow, n, seed) in [(1.25, 30, 1), (1.05, 60, 2)] {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut store = Store::create(dir.path().join("s"), StoreOptions::default()).expect("s");
        thirty_benchmarks(&mut store, slow, n, seed);
        let v = decide(&mut store);
        assert_eq!(v.outcome.status(), GateStatus::Reject, "{slow}: {v:#?}");
        let first = &rows(&v)[0];
        assert_eq!(first.benchmark, "bench/17", "{v:#?}");
        assert_eq!(first.verdict, BenchVerdict::Slower);
        assert!(
            first.low <= slow && slow <= first.high && (first.ratio / slow - 1.0).abs() < 0.03,
            "{slow}: {first:?}"
        );
        assert_eq!(
            rows(&v)
                .iter()
                .filter(|r| r.verdict == BenchVerdict::Slower)
                .count(),
            1,
            "{:#?}",
            rows(&v)
        );
        let json = v.to_json().expect("json");
        let back = ratchet_gate::Verdict::from_json(&json).expect("reads back");
        assert_eq!(back.to_json().expect("json"), json);
    }
}

/// The same suite unchanged promotes; each benchmark shown unchanged or
/// not slower, with the table saying the samples were unpaired.
#[test]
fn an_unchanged_suite_of_thirty_benchmarks_promotes() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut store = Store::create(dir.path().join("s"), StoreOptions::default()).expect("s");
    thirty_benchmarks(&mut store, 1.0, 30, 3);
    let v = decide(&mut store);
    assert_eq!(v.outcome.status(), GateStatus::Promote, "{v:#?}");
    assert!(rows(&v).iter().all(|r| r.verdict.not_slower()));
    let line = v
        .stages
        .iter()
        .find(|s| matches!(s.details, StageDetails::Benchmarks(_)))
        .expect("stage")
        .to_string();
    assert!(line.contains("unpaired"), "{line}");
}

/// The hardest null for a "slower" flag: every benchmark exactly at the
/// equivalence margin (1 % slower), where the claim "more than 1 %
/// slower" is false by the least. 10 benchmarks, 200 pairs polled every
/// 10, each shape and reading: the family-wise rate of a flag stays
/// within α = 0.05 (the bound: α plus three Monte-Carlo standard errors).
#[test]
fn flags_at_the_equivalence_margin_stay_within_alpha_for_every_shape_and_reading() {
    const RUNS: usize = 200;
    for reading in READINGS {
        let mut rng = StdRng::seed_from_u64(3601);
        for shape in SHAPES {
            let flagged = (0..RUNS)
                .filter(|_| polled_suite(shape, &[1.01; 10], 200, 10, reading, &mut rng).0)
                .count();
            let rate = flagged as f64 / RUNS as f64;
            eprintln!("{reading:?} {shape:?}: flags at the margin {flagged}/{RUNS}");
            assert!(rate <= bound(0.05, RUNS), "{reading:?} {shape:?}: {rate}");
        }
    }
}
