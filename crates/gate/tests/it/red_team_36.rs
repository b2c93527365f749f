//! Red team 36: the `benchmarks` kind's promises (README "Gating on
//! benchmarks", `crates/gate/src/benchmarks.rs`) attacked by seeded
//! simulation at the library level (`judge` on the per-pair log-ratios the
//! stage builds: unpaired, the i-th sample of each side in trace order;
//! paired, per round the median of each side's samples).
//!
//! Tests named `red_*` assert a promise and FAIL on this branch (each prints
//! the measured rate beside the promise); tests named `held_*` pass.
//! Every rate is over enough seeded runs that a failure sits many
//! Monte-Carlo standard errors beyond the promise.

use rand::{Rng, SeedableRng, rngs::StdRng};
use rand_distr::{Distribution, Normal};
use ratchet_gate::benchmarks::{BenchVerdict, Thresholds, judge, median};

const ALPHA: f64 = 0.05;

fn t(m: usize) -> Thresholds {
    Thresholds {
        alpha: ALPHA,
        regression: 0.05,
        equivalence: 0.01,
        benchmarks: m,
    }
}

/// The promise plus three Monte-Carlo standard errors at `runs` runs.
fn bound(promise: f64, runs: usize) -> f64 {
    promise + 3.0 * (promise * (1.0 - promise) / runs as f64).sqrt()
}

/// Unpaired log-ratios as `bench_stage::log_ratios` builds them from files
/// since this red team's findings: one run a side (what each test below
/// draws) is one pair, its medians' log-ratio — a run's samples share its
/// process's state and were wrongly paired sample by sample (the i-th
/// against the i-th), which findings 1–3 measured at 0.205, 0.507 and
/// 0.997 against α. One run a side now decides nothing (the tests pin it).
fn unpaired(base: &[f64], cand: &[f64]) -> Vec<f64> {
    vec![median(cand).ln() - median(base).ln()]
}

/// A suite of per-benchmark log-ratios polled every `every` pairs (the
/// suite's first final answer stops): (flagged slower, promoted).
fn polled(d: &[Vec<f64>], m: usize, every: usize) -> (bool, bool) {
    let th = t(m);
    let n = d.iter().map(Vec::len).min().unwrap_or(0);
    let mut look = every.min(n);
    while look > 0 {
        let v: Vec<BenchVerdict> = d.iter().map(|x| judge(&x[..look], &th).verdict).collect();
        if v.contains(&BenchVerdict::Slower) {
            return (true, false);
        }
        if v.iter().all(|v| v.not_slower()) {
            return (false, true);
        }
        if look == n {
            break;
        }
        look = (look + every).min(n);
    }
    (false, false)
}

/// One process's run of a benchmark: `n` timings around `median`, each
/// with log-normal noise `sigma`, all sharing the run's offset `offset`
/// (memory layout, frequency, the neighbours of that process).
fn run(rng: &mut StdRng, median: f64, offset: f64, sigma: f64, n: usize) -> Vec<f64> {
    let noise = Normal::new(0.0, sigma).expect("normal");
    (0..n)
        .map(|_| median * (offset + noise.sample(rng)).exp())
        .collect()
}

// ---------------------------------------------------------------------
// Finding 1 — unpaired samples of one run share that run's offset.
// ---------------------------------------------------------------------

/// The README promises the family-wise rate of false "slower" flags is at
/// most α; for unpaired samples it says only that "the machine's drift is
/// not cancelled". But the samples a file holds are ONE process's run
/// (criterion, pytest-benchmark, Google Benchmark repetitions): a
/// run-level offset (memory layout, CPU frequency, neighbours — a 1 %
/// log-sd between runs of identical code, no drift within the run) makes
/// every pair's sign the same coin: the "independent pairs" the sign test
/// needs are one pair repeated. 10 unchanged benchmarks, 100 samples a
/// side, 2 % within-run noise, polled every 10.
#[test]
fn red_unpaired_run_level_offset_breaks_family_wise_false_slower_rate() {
    const RUNS: usize = 400;
    let mut rng = StdRng::seed_from_u64(3601);
    let between = Normal::new(0.0, 0.01).expect("normal");
    let mut flagged = 0;
    for _ in 0..RUNS {
        let d: Vec<Vec<f64>> = (0..10)
            .map(|_| {
                let b = {
                    let o: f64 = between.sample(&mut rng);
                    run(&mut rng, 1e-3, o, 0.02, 100)
                };
                let c = {
                    let o: f64 = between.sample(&mut rng);
                    run(&mut rng, 1e-3, o, 0.02, 100)
                };
                unpaired(&b, &c)
            })
            .collect();
        flagged += usize::from(polled(&d, 10, 10).0);
    }
    let rate = flagged as f64 / RUNS as f64;
    eprintln!(
        "run-level offset 1 %: false slower flags {flagged}/{RUNS} = {rate:.3} (promise ≤ {ALPHA})"
    );
    assert!(rate <= bound(ALPHA, RUNS), "false slower rate {rate}");
}

/// The same offsets under `ratchet bench` (each round a fresh process per
/// side, paired by round): the offsets are part of each pair's noise, the
/// pairs are independent, and the promise holds.
#[test]
fn held_paired_rounds_absorb_run_level_offsets() {
    const RUNS: usize = 400;
    let mut rng = StdRng::seed_from_u64(3602);
    let between = Normal::new(0.0, 0.01).expect("normal");
    let mut flagged = 0;
    for _ in 0..RUNS {
        let d: Vec<Vec<f64>> = (0..10)
            .map(|_| {
                (0..60)
                    .map(|_| {
                        let b = {
                            let o: f64 = between.sample(&mut rng);
                            run(&mut rng, 1e-3, o, 0.02, 5)
                        };
                        let c = {
                            let o: f64 = between.sample(&mut rng);
                            run(&mut rng, 1e-3, o, 0.02, 5)
                        };
                        median(&c).ln() - median(&b).ln()
                    })
                    .collect()
            })
            .collect();
        flagged += usize::from(polled(&d, 10, 10).0);
    }
    let rate = flagged as f64 / RUNS as f64;
    eprintln!("paired rounds, offset 1 %: false slower flags {flagged}/{RUNS} = {rate:.3}");
    assert!(rate <= bound(ALPHA, RUNS), "{rate}");
}

// ---------------------------------------------------------------------
// Finding 2 — a tool (or a converter) that exports its times sorted.
// ---------------------------------------------------------------------

/// Nothing checks the order of a side's samples: "the i-th sample of each
/// side" is taken in trace order. A tool or converter that exports sorted
/// times (percentile dumps, a `sorted(times)` in a script) pairs order
/// statistics: d_i = Q̂_c(i) − Q̂_b(i), all sharing the two empirical
/// quantile functions' difference, so the signs are one coin again.
/// Identical code, 10 benchmarks, 50 samples a side, 5 % noise.
#[test]
fn red_sorted_exports_break_family_wise_false_slower_rate() {
    const RUNS: usize = 400;
    let mut rng = StdRng::seed_from_u64(3603);
    let (mut flagged, mut flagged_unsorted) = (0, 0);
    for _ in 0..RUNS {
        let mut sorted_d = Vec::new();
        let mut raw_d = Vec::new();
        for _ in 0..10 {
            let mut b = run(&mut rng, 1e-3, 0.0, 0.05, 50);
            let mut c = run(&mut rng, 1e-3, 0.0, 0.05, 50);
            raw_d.push(unpaired(&b, &c));
            b.sort_by(f64::total_cmp);
            c.sort_by(f64::total_cmp);
            sorted_d.push(unpaired(&b, &c));
        }
        flagged += usize::from(polled(&sorted_d, 10, 10).0);
        flagged_unsorted += usize::from(polled(&raw_d, 10, 10).0);
    }
    let rate = flagged as f64 / RUNS as f64;
    eprintln!(
        "sorted exports: false slower flags {flagged}/{RUNS} = {rate:.3}; same samples in run order: {flagged_unsorted}/{RUNS} (promise ≤ {ALPHA})"
    );
    assert!(rate <= bound(ALPHA, RUNS), "false slower rate {rate}");
}

/// Unequal sample counts per side with sorted exports: the candidate's 20
/// sorted samples meet the baseline's first 20 of 60 sorted — its fastest
/// third. An identical candidate is paired against the baseline's best
/// times and flagged "slower" nearly always (m = 1).
#[test]
fn red_sorted_exports_with_unequal_counts_flag_identical_code_slower() {
    const RUNS: usize = 400;
    let mut rng = StdRng::seed_from_u64(3604);
    let mut flagged = 0;
    for _ in 0..RUNS {
        let mut b = run(&mut rng, 1e-3, 0.0, 0.03, 60);
        let mut c = run(&mut rng, 1e-3, 0.0, 0.03, 20);
        b.sort_by(f64::total_cmp);
        c.sort_by(f64::total_cmp);
        flagged += usize::from(polled(&[unpaired(&b, &c)], 1, 20).0);
    }
    let rate = flagged as f64 / RUNS as f64;
    eprintln!(
        "sorted, 60 vs 20 samples: false slower {flagged}/{RUNS} = {rate:.3} (promise ≤ {ALPHA})"
    );
    assert!(rate <= bound(ALPHA, RUNS), "false slower rate {rate}");
}

// ---------------------------------------------------------------------
// Finding 3 — the parameter: median of pairwise log-ratios, not the ratio
// of the medians the table shows beside it.
// ---------------------------------------------------------------------

/// A bimodal benchmark (cache hit 1 ms / miss 2.72 ms). The baseline hits
/// 55 % of runs, the candidate misses 55 %: the candidate's median time is
/// 2.72× the baseline's, its mean 1.10×. The gate's parameter is
/// median(ln c_i − ln b_i) over unpaired pairs, which is ~0 here
/// (P(d < ln 1.05) ≈ 0.70), so the benchmark is shown "not slower" and the
/// class promotes — while the row prints baseline 1e-3, candidate 2.7e-3,
/// ratio ×1.0. The README never says which "ratio" is judged; the promise
/// "P(promote) ≤ α when a benchmark is ≥ 5 % slower" fails for the ratio
/// of medians (and of means) the user reads.
#[test]
fn red_bimodal_candidate_with_median_2_7x_slower_promotes() {
    const RUNS: usize = 300;
    let mut rng = StdRng::seed_from_u64(3605);
    let noise: Normal<f64> = Normal::new(0.0, 0.01).expect("normal");
    let draw = |rng: &mut StdRng, p_miss: f64, n: usize| -> Vec<f64> {
        (0..n)
            .map(|_| {
                let mode: f64 = if rng.random_bool(p_miss) { 1.0 } else { 0.0 };
                1e-3 * (mode + noise.sample(rng)).exp()
            })
            .collect()
    };
    let mut promoted = 0;
    let mut shown = (0.0, 0.0, 0.0);
    for i in 0..RUNS {
        let b = draw(&mut rng, 0.45, 400);
        let c = draw(&mut rng, 0.55, 400);
        let d = unpaired(&b, &c);
        promoted += usize::from(polled(std::slice::from_ref(&d), 1, 10).1);
        if i == 0 {
            shown = (median(&b), median(&c), judge(&d, &t(1)).ratio);
        }
    }
    let rate = promoted as f64 / RUNS as f64;
    eprintln!(
        "bimodal: row baseline {:.3e} candidate {:.3e} (medians ×{:.2}) ratio ×{:.3}; promoted {promoted}/{RUNS} = {rate:.3} (promise ≤ {ALPHA} for a ≥ 5 % slowdown)",
        shown.0,
        shown.1,
        shown.1 / shown.0,
        shown.2
    );
    assert!(rate <= bound(ALPHA, RUNS), "promote rate {rate}");
}

// ---------------------------------------------------------------------
// Finding 4 — noisy benchmarks are decided only by luck: the mixture has
// no bet cautious enough.
// ---------------------------------------------------------------------

/// The boldest-to-most-cautious bets are 0.99 … 0.5. A constant bet λ = ½
/// grows only when a win's probability exceeds ln 2 / ln 3 = 0.631; below
/// that every component shrinks, however many pairs. An UNCHANGED
/// benchmark with 12 % log-normal noise per sample (d's sd 0.17: P(d <
/// ln 1.05) = 0.61) is shown "not slower" within max_n = 1000 pairs only
/// by luck (every component's expected log-growth is negative): the rest
/// are rejected as truncated, though a sign test with a cautious bet
/// (λ ≈ 0.2) needs a few hundred pairs for it. Measured: 39 of 100
/// promoted by 1000 pairs, against the 90 % that β = 0.1 asks. The source
/// says "a cautious component keeps noisy effects in reach"; policy
/// `beta` is not used by the kind at all.
#[test]
fn red_unchanged_noisy_benchmark_rarely_shown_not_slower_within_max_n() {
    const RUNS: usize = 100;
    let mut rng = StdRng::seed_from_u64(3606);
    let mut promoted = 0;
    for _ in 0..RUNS {
        // 1000 pairs (rounds of one sample a side), as `ratchet bench` makes.
        let b = run(&mut rng, 1e-3, 0.0, 0.12, 1000);
        let c = run(&mut rng, 1e-3, 0.0, 0.12, 1000);
        let d: Vec<f64> = b.iter().zip(&c).map(|(x, y)| y.ln() - x.ln()).collect();
        promoted += usize::from(polled(&[d], 1, 100).1);
    }
    let rate = promoted as f64 / RUNS as f64;
    eprintln!(
        "unchanged, 12 % noise, 1000 pairs: promoted {promoted}/{RUNS} = {rate:.2} (1 − β = 0.9 expected of a test with power)"
    );
    assert!(rate >= 0.9, "promote rate {rate}");
}

// ---------------------------------------------------------------------
// Finding 5 — timer resolution: ties hide a regression.
// ---------------------------------------------------------------------

/// A 9.51 ms benchmark timed at 1 ms resolution (a coarse clock, a tool
/// that prints whole milliseconds) with run-to-run noise far below the
/// tick (0.01 %): the baseline reads 10, the candidate — exactly 5 % slower,
/// 9.99 ms — reads 10 too: every pair is a tie, so "unchanged" is shown
/// after a dozen pairs. At a true ratio of exactly 1+regression the class
/// promotes always (promise ≤ α). A measurement artefact (the rounded
/// values' own ratio IS 1), but "exact for any shape of timing" does not
/// warn that discretised timings are judged as rounded, nor does the gate
/// notice that every pair is an exact tie.
#[test]
fn red_timer_resolution_hides_a_five_percent_regression() {
    const RUNS: usize = 300;
    let mut rng = StdRng::seed_from_u64(3607);
    let mut promoted = 0;
    for _ in 0..RUNS {
        let tick = |x: f64| (x * 1e3).round() / 1e3;
        let b: Vec<f64> = run(&mut rng, 9.51e-3, 0.0, 0.0001, 60)
            .into_iter()
            .map(tick)
            .collect();
        let c: Vec<f64> = run(&mut rng, 9.51e-3 * 1.05, 0.0, 0.0001, 60)
            .into_iter()
            .map(tick)
            .collect();
        promoted += usize::from(polled(&[unpaired(&b, &c)], 1, 10).1);
    }
    let rate = promoted as f64 / RUNS as f64;
    eprintln!("1 ms ticks, true ×1.05: promoted {promoted}/{RUNS} = {rate:.3} (promise ≤ {ALPHA})");
    assert!(rate <= bound(ALPHA, RUNS), "promote rate {rate}");
}

/// A regression in the tail only: 25 % of the candidate's runs take 2×
/// (a new lock, a GC pause), the rest unchanged — its mean time is 1.25×,
/// total CI time 1.25×, hyperfine's headline "mean" 1.25×. The median
/// ratio is 1, so the gate says "unchanged" and promotes. Consistent with
/// the source's parameter (the median of d), but the README never says
/// "median": a user's "5 % slower is a regression" is not what is judged.
#[test]
fn red_mean_regression_of_25_percent_in_the_tail_promotes() {
    const RUNS: usize = 300;
    let mut rng = StdRng::seed_from_u64(3611);
    let mut promoted = 0;
    let mut mean_ratio = 0.0;
    for _ in 0..RUNS {
        let b = run(&mut rng, 1e-3, 0.0, 0.02, 200);
        let c: Vec<f64> = run(&mut rng, 1e-3, 0.0, 0.02, 200)
            .into_iter()
            .map(|x| if rng.random_bool(0.25) { 2.0 * x } else { x })
            .collect();
        mean_ratio += c.iter().sum::<f64>() / b.iter().sum::<f64>() / RUNS as f64;
        promoted += usize::from(polled(&[unpaired(&b, &c)], 1, 10).1);
    }
    let rate = promoted as f64 / RUNS as f64;
    eprintln!(
        "tail regression: mean ratio ×{mean_ratio:.3}, promoted {promoted}/{RUNS} = {rate:.3} (promise ≤ {ALPHA} if \"5 % slower\" meant the mean)"
    );
    assert!(rate <= bound(ALPHA, RUNS), "promote rate {rate}");
}

// ---------------------------------------------------------------------
// What held.
// ---------------------------------------------------------------------

/// The intersection–union bound at exactly +5 %: one benchmark whose pair
/// log-ratios have median exactly ln 1.05 — skewed (log-normal minus one),
/// heavy-tailed, and with heavy ties (a third of the pairs exactly at the
/// threshold) — polled every 5 up to 400, for m = 1 and m = 100 (the
/// "not slower" claim is at α whatever m): P(shown not slower) ≤ α.
#[test]
fn held_iut_at_exactly_five_percent_for_skewed_heavy_and_tied_pairs() {
    const RUNS: usize = 2000;
    let reg = 0.05f64.ln_1p();
    let mut rng = StdRng::seed_from_u64(3608);
    let z: Normal<f64> = Normal::new(0.0, 1.0).expect("normal");
    for shape in ["skewed", "cauchy", "ties"] {
        for m in [1usize, 100] {
            let th = t(m);
            let mut shown = 0;
            for _ in 0..RUNS {
                let d: Vec<f64> = (0..400)
                    .map(|_| match shape {
                        "skewed" => reg + 0.05 * (z.sample(&mut rng).exp() - 1.0),
                        "cauchy" => {
                            reg + 0.02 * (std::f64::consts::PI * (rng.random::<f64>() - 0.5)).tan()
                        }
                        _ => reg + 0.02 * f64::from(rng.random_range(-1i32..=1)),
                    })
                    .collect();
                if (5..=400)
                    .step_by(5)
                    .any(|n| judge(&d[..n], &th).verdict.not_slower())
                {
                    shown += 1;
                }
            }
            let rate = shown as f64 / RUNS as f64;
            eprintln!(
                "IUT at ×1.05, {shape}, m = {m}: shown not slower {shown}/{RUNS} = {rate:.4}"
            );
            assert!(rate <= bound(ALPHA, RUNS), "{shape} m={m}: {rate}");
        }
    }
}

/// Coverage of the reported interval at the stop: a benchmark whose true
/// median ratio is 1.03, skewed pairs, m = 10, polled every 10 and stopped
/// at the first verdict that is not "undecided" (or at 300): low is at
/// α/m, high at α, so [low, high] should miss 1.03 at most α + α/m.
#[test]
fn held_interval_covers_true_median_ratio_at_a_polled_stop() {
    const RUNS: usize = 1000;
    let theta = 1.03f64.ln();
    let mut rng = StdRng::seed_from_u64(3609);
    let z: Normal<f64> = Normal::new(0.0, 1.0).expect("normal");
    let th = t(10);
    let (mut miss_low, mut miss_high) = (0, 0);
    for _ in 0..RUNS {
        let d: Vec<f64> = (0..300)
            .map(|_| theta + 0.03 * (z.sample(&mut rng).exp() - 1.0))
            .collect();
        let mut j = judge(&d[..10], &th);
        for n in (10..=300).step_by(10) {
            j = judge(&d[..n], &th);
            if j.verdict != BenchVerdict::Undecided {
                break;
            }
        }
        miss_low += usize::from(j.low > theta.exp());
        miss_high += usize::from(j.high < theta.exp());
    }
    let rate = (miss_low + miss_high) as f64 / RUNS as f64;
    eprintln!(
        "interval at stop: low above truth {miss_low}/{RUNS}, high below truth {miss_high}/{RUNS} (promise ≤ α/m + α = 0.055)"
    );
    assert!(rate <= bound(0.055, RUNS), "{rate}");
}

/// Heavy ties under "no change": integer-tick timings where most pairs are
/// exactly equal (d = 0) — ties count against "slower" and "faster", so the
/// family-wise false-flag rate stays ≤ α (10 benchmarks, polled).
#[test]
fn held_heavy_ties_do_not_inflate_false_slower_flags() {
    const RUNS: usize = 400;
    let mut rng = StdRng::seed_from_u64(3610);
    let mut flagged = 0;
    for _ in 0..RUNS {
        let d: Vec<Vec<f64>> = (0..10)
            .map(|_| {
                let b: Vec<f64> = (0..200)
                    .map(|_| f64::from(rng.random_range(20u32..=21)))
                    .collect();
                let c: Vec<f64> = (0..200)
                    .map(|_| f64::from(rng.random_range(20u32..=21)))
                    .collect();
                unpaired(&b, &c)
            })
            .collect();
        flagged += usize::from(polled(&d, 10, 10).0);
    }
    let rate = flagged as f64 / RUNS as f64;
    eprintln!("ties: false slower {flagged}/{RUNS} = {rate:.3}");
    assert!(rate <= bound(ALPHA, RUNS), "{rate}");
}

// ---------------------------------------------------------------------
// Finding 7 (through a store) — a second `ratchet bench` session adds no
// pairs: rounds restart at 0 and pool into the first session's rounds.
// ---------------------------------------------------------------------

fn commit(i: u8) -> ratchet_trace::CommitId {
    ratchet_trace::CommitId::parse(&format!("{i:02x}").repeat(20)).expect("commit")
}

/// Appends one `ratchet bench` session's samples: `rounds` rounds numbered
/// on from the highest round the store holds (as `orchestrate::bench`
/// numbers them since this finding), 5 timings a side per round, 2 %
/// noise, identical code.
fn bench_session(store: &mut ratchet_trace::Store, rounds: u64, rng: &mut StdRng) {
    let view = store.verified(&Default::default()).expect("view");
    let first = view
        .events_of_kinds(&[ratchet_scorers::KIND_SAMPLES])
        .iter()
        .filter_map(|e| {
            ratchet_scorers::Samples::from_payload(&e.payload)
                .ok()?
                .round
        })
        .map(|r| r + 1)
        .max()
        .unwrap_or(0);
    drop(view);
    let mut drafts = Vec::new();
    for round in first..first + rounds {
        for c in [commit(1), commit(2)] {
            let s = ratchet_scorers::Samples {
                commit: c.clone(),
                benchmark: "bench/a".into(),
                scorer: "hyperfine_s".into(),
                scorer_version: "runner-1".into(),
                unit: "s".into(),
                values: run(rng, 1e-3, 0.0, 0.02, 5),
                round: Some(round),
            };
            let median = median(&s.values);
            drafts.push(s.to_draft().expect("draft"));
            let mut score = ratchet_trace::Score::new(c, "bench/a", "hyperfine_s", median);
            score.scorer_version = "runner-1".into();
            drafts.push(score.to_draft().expect("score"));
        }
    }
    store.append_batch(drafts).expect("append");
}

/// Two sessions of 20 rounds each (the first stopped undecided by
/// `--rounds 20`, the user runs `ratchet bench` again): 40 rounds were
/// measured, 40 pairs are expected ("pairs made by rounds of `ratchet
/// bench`"), but the second session's round r is pooled into the first's
/// round r — the benchmark still has 20 pairs, and a third or fourth
/// session never adds one either. (Validity holds — pooling is the same on
/// both sides — but the evidence a user paid for is discarded, and the
/// per-round "pairs" now mix two sessions' machine states.)
#[test]
fn red_a_second_bench_session_adds_no_pairs() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut store =
        ratchet_trace::Store::create(dir.path().join("s"), ratchet_trace::StoreOptions::default())
            .expect("store");
    let mut rng = StdRng::seed_from_u64(3612);
    bench_session(&mut store, 20, &mut rng);
    bench_session(&mut store, 20, &mut rng);
    let policy = ratchet_gate::Policy::parse(
        "[class.perf]\nscorer = \"hyperfine_s\"\ndirection = \"lower\"\ntest = \"benchmarks\"\nalpha = 0.05\nbeta = 0.1\nmax_n = 500\nregression = 0.05\nequivalence = 0.01\n",
    )
    .expect("policy");
    let (b, c) = (commit(1), commit(2));
    let q = crate::common::question("perf", policy.class("perf").expect("class"), &b, &c);
    let v = ratchet_gate::decide(&mut store, &q).expect("decide");
    let row = v
        .stages
        .iter()
        .find_map(|s| match &s.details {
            ratchet_gate::StageDetails::Benchmarks(d) => Some(d.benchmarks[0].clone()),
            _ => None,
        })
        .unwrap_or_else(|| panic!("no benchmarks stage: {v:#?}"));
    eprintln!(
        "two sessions of 20 rounds: the row reads {} pairs (40 rounds measured): {row:?}",
        row.n
    );
    assert_eq!(row.n, 40, "{row:?}");
}

// ---------------------------------------------------------------------
// Held (a theoretical gap only) — Bonferroni's m is the count of
// benchmarks the baseline has SO FAR: files arriving one by one.
// ---------------------------------------------------------------------

/// The stage sets m = the baseline's benchmarks at this look. Evidence
/// that arrives a benchmark at a time (one hyperfine/pytest file per
/// benchmark, each ingested as it finishes, the gate polled by the writer
/// after each) judges the j-th benchmark at α/j when it lands: the
/// family-wise bound is α·(1 + ½ + … + 1/m), not α. 100 benchmarks at
/// the null's edge (1 % slower: "slower than 1 %" is false), 12 samples a side each (above the ~log₂(m/α) the README
/// asks for), arriving one by one; a false "slower" at any look stops.
/// (Only the newly arrived benchmark can newly flag: the others' data are
/// fixed and their level only tightens.) The same suite judged once at
/// m = 100 is the control. Measured: 23/1000 one by one, 19/1000 at once
/// (seed 3613) — the sign mixture's slack absorbs the harmonic factor;
/// at 40 samples 3/1000 vs 1/1000. The bound the code proves is α·H_m,
/// though: worth stating, or fixing m from the policy.
#[test]
fn held_benchmarks_arriving_one_by_one_stay_within_alpha() {
    const RUNS: usize = 1000;
    const M: usize = 100;
    let mut rng = StdRng::seed_from_u64(3613);
    let (mut flagged, mut flagged_at_once) = (0, 0);
    for _ in 0..RUNS {
        let d: Vec<Vec<f64>> = (0..M)
            .map(|_| {
                let b = run(&mut rng, 1e-3, 0.0, 0.02, 12);
                let c = run(&mut rng, 1.01e-3, 0.0, 0.02, 12);
                unpaired(&b, &c)
            })
            .collect();
        flagged += usize::from(
            d.iter()
                .enumerate()
                .any(|(j, x)| judge(x, &t(j + 1)).verdict == BenchVerdict::Slower),
        );
        flagged_at_once += usize::from(
            d.iter()
                .any(|x| judge(x, &t(M)).verdict == BenchVerdict::Slower),
        );
    }
    let rate = flagged as f64 / RUNS as f64;
    eprintln!(
        "arriving one by one: false slower {flagged}/{RUNS} = {rate:.3}; all at once (m = {M}): {flagged_at_once}/{RUNS} (promise ≤ {ALPHA})"
    );
    assert!(rate <= bound(ALPHA, RUNS), "false slower rate {rate}");
}
