//! The default test's price (issue 40, item 4): tasks to a decision (ASN)
//! of the betting test against Wald's SPRT on the same data, and its error
//! rates when looked at after every observation — the strictest polling
//! there is (a control plane asking after every batch reads a subset of
//! those looks).
//!
//! Three kinds of data, α 0.05 and β 0.10 (the setting):
//! * **pass/fail**, every pair discordant (the hardest case the bernoulli
//!   kind is designed for): the difference is +1 with probability θ, −1
//!   otherwise; gap 0.2 is θ₁ = 0.6 against θ₀ = ½. Wald's ASN is exact
//!   (`exact_bernoulli`: no Monte-Carlo error).
//! * **pass/fail, half tied**: half the pairs concordant (difference 0),
//!   the other half as above; gap 0.1 (a mean difference over all tasks)
//!   is θ₁ = 0.6 on the discordant pairs, and Wald's ASN in tasks is the
//!   exact ASN in discordant pairs over ½.
//! * **rubric scores**: a 4-item rubric, each side scored by the share of
//!   items it passes, items passed independently with the task's own
//!   chance p ~ U(0.2, 0.8) (the candidate's p + effect); differences in
//!   steps of ¼, variance 2·E[p(1 − p)]/4 = 0.11 at no effect. Gap 0.1.
//!   Wald's reference is the SPRT for normal differences with that
//!   variance known (what the gaussian kind would be without estimating
//!   it), simulated on the same differences.
//!
//! This file is also the model behind `examples/price.rs`, which prints the
//! table of `benches/README.md` ("Issue 40: the default test's price").

use rand::{Rng, rngs::StdRng};
use ratchet_gate::{
    BernoulliSprt, BettingTest, Boundaries, MonteCarloEstimate, Result, SequentialTest, TestState,
    exact_bernoulli, monte_carlo,
};

/// The error rates.
pub const ALPHA: f64 = 0.05;
/// The error rates.
pub const BETA: f64 = 0.10;
/// Far beyond any run: the tests here never truncate in practice (a
/// truncated run is counted as such, never as a decision).
pub const MAX_N: u64 = 20_000;

/// One kind of data the default test meets.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Data {
    /// Differences ±1 (every pair discordant).
    PassFail,
    /// Pass/fail with half the pairs concordant (difference 0): the
    /// discordant half as [`Data::PassFail`], the gap 0.1 a mean
    /// difference over all tasks (θ₁ 0.6 on the discordant pairs).
    PassFailTies,
    /// Differences of two 4-item rubric scores.
    Rubric,
}

/// The share of discordant pairs in [`Data::PassFailTies`].
const DISCORDANT: f64 = 0.5;

impl Data {
    /// The policy's gap: the design effect, a mean difference.
    pub fn gap(self) -> f64 {
        match self {
            Data::PassFail => 0.2,
            Data::PassFailTies | Data::Rubric => 0.1,
        }
    }

    /// The variance of one difference at no effect (rubric: 2·E[p(1−p)]/4
    /// with E[p(1−p)] = ½ − (0.6²/12 + ¼) = 0.22).
    pub fn null_variance(self) -> f64 {
        match self {
            Data::PassFail => 1.0,
            Data::PassFailTies => DISCORDANT,
            Data::Rubric => 0.11,
        }
    }

    /// The variance of one difference at `effect` e (pass/fail: 1 − e²;
    /// rubric: the two sides' binomial variances given p, the mean
    /// difference being e whatever p: E[(p+e)(1−p−e) + p(1−p)]/4, with
    /// E[p(1−p)] = 0.22 and E[(p+e)(1−p−e)] = 0.22 − e² for p ~ U(0.2, 0.8)).
    pub fn variance(self, effect: f64) -> f64 {
        match self {
            Data::PassFail => 1.0 - effect * effect,
            Data::PassFailTies => DISCORDANT - effect * effect,
            Data::Rubric => (0.22 + 0.22 - effect * effect) / 4.0,
        }
    }

    /// One difference (candidate − baseline) at a mean difference `effect`.
    pub fn draw(self, rng: &mut StdRng, effect: f64) -> f64 {
        match self {
            Data::PassFail => {
                if rng.random_bool((1.0 + effect) / 2.0) {
                    1.0
                } else {
                    -1.0
                }
            }
            Data::PassFailTies => {
                if !rng.random_bool(DISCORDANT) {
                    0.0
                } else if rng.random_bool(0.5 + effect / (2.0 * DISCORDANT)) {
                    1.0
                } else {
                    -1.0
                }
            }
            Data::Rubric => {
                let p: f64 = rng.random_range(0.2..0.8);
                let mut score = |q: f64| (0..4).filter(|_| rng.random_bool(q)).count() as f64 / 4.0;
                let cand = score(p + effect);
                cand - score(p)
            }
        }
    }

    /// The name in the table.
    pub fn name(self) -> &'static str {
        match self {
            Data::PassFail => "pass/fail",
            Data::PassFailTies => "pass/fail, half tied",
            Data::Rubric => "rubric",
        }
    }
}

/// Wald's SPRT for normal differences with a known variance: mean 0
/// against mean `gap`, LLR `Σ (gap/σ²)(d − gap/2)`, Wald's boundaries.
#[derive(Debug, Clone)]
pub struct KnownVariance {
    slope: f64,
    middle: f64,
    bounds: Boundaries,
    llr: f64,
    n: u64,
    decision: TestState,
}

impl KnownVariance {
    /// The test of `data`'s gap at its null variance.
    pub fn new(data: Data) -> Result<Self> {
        Ok(KnownVariance {
            slope: data.gap() / data.null_variance(),
            middle: data.gap() / 2.0,
            bounds: Boundaries::new(ALPHA, BETA)?,
            llr: 0.0,
            n: 0,
            decision: TestState::Continue,
        })
    }
}

impl SequentialTest for KnownVariance {
    type Observation = f64;

    fn update(&mut self, d: f64) -> Result<TestState> {
        if !self.decision.is_final() {
            self.n += 1;
            self.llr += self.slope * (d - self.middle);
            self.decision = self.bounds.judge(self.llr);
        }
        Ok(self.decision)
    }

    fn llr(&self) -> f64 {
        self.llr
    }

    fn n(&self) -> u64 {
        self.n
    }

    fn decision(&self) -> TestState {
        self.decision
    }
}

/// Wald's ASN for `data` at `effect`: exact on the lattice for pass/fail
/// (with ties: the SPRT of θ = ½ against θ₁ = ½ + gap/(2q) on the
/// discordant pairs, a share q of the tasks, so E[tasks] = E[pairs]/q by
/// Wald's identity), simulated for rubric scores (with its standard error;
/// 0 when exact).
pub fn wald(data: Data, effect: f64, runs: usize, seed: u64) -> Result<(f64, f64)> {
    match data {
        Data::PassFail | Data::PassFailTies => {
            let q = data.null_variance();
            // The lattice costs n²/2 steps: 4000 pairs hold all but a
            // negligible mass at these designs (P(N > 4000) is asserted
            // below 1e-9, so the truncation moves the ASN by < 1e-5).
            let theta = |e: f64| 0.5 + e / (2.0 * q);
            let t = BernoulliSprt::new(0.5, theta(data.gap()), Boundaries::new(ALPHA, BETA)?)?
                .with_truncation(4000)?;
            let exact = exact_bernoulli(&t, theta(effect))?;
            assert!(exact.p_truncated < 1e-9, "{exact:?}");
            Ok((exact.expected_n / q, 0.0))
        }
        Data::Rubric => {
            let m = monte_carlo(&KnownVariance::new(data)?, runs, MAX_N, seed, |r| {
                data.draw(r, effect)
            })?;
            Ok((m.point.expected_n, m.se_expected_n))
        }
    }
}

/// The betting test of the laws before [`ratchet_gate::Law::Tuned`]
/// (`tuned` false) or of that law, for `data`, simulated at `effect`.
pub fn betting(
    data: Data,
    tuned: bool,
    effect: f64,
    runs: usize,
    seed: u64,
) -> Result<MonteCarloEstimate> {
    let t = if tuned {
        BettingTest::tuned(ALPHA, BETA, data.gap(), 1.0)?
    } else {
        BettingTest::new(ALPHA, BETA, data.gap(), 1.0)?
    };
    monte_carlo(&t.with_truncation(MAX_N)?, runs, MAX_N, seed, |r| {
        data.draw(r, effect)
    })
}

/// The fixed-horizon n of a one-sided z-test of mean 0 at level α with
/// power 1 − β at the gap: `((z_{1−α} σ₀ + z_{1−β} σ₁)/gap)²`, σ₀ and σ₁
/// the differences' standard deviations at no effect and at the gap.
pub fn fixed_horizon_n(data: Data) -> f64 {
    use statrs::distribution::{ContinuousCDF, Normal};
    let z = Normal::standard();
    let (s0, s1) = (
        data.null_variance().sqrt(),
        data.variance(data.gap()).sqrt(),
    );
    ((z.inverse_cdf(1.0 - ALPHA) * s0 + z.inverse_cdf(1.0 - BETA) * s1) / data.gap())
        .powi(2)
        .ceil()
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    /// Runs per cell: the ASN's standard error is sd(N)/√runs, about
    /// 0.8·ASN/√4000 ≈ 1.3 % of it; a rate's is √(b(1−b)/4000) (0.0034 at
    /// α = 0.05, 0.0047 at β = 0.10).
    const RUNS: usize = 4000;

    /// Three standard errors of a rate near `bound` over `runs`.
    fn tolerance(bound: f64, runs: usize) -> f64 {
        3.0 * (bound * (1.0 - bound) / runs as f64).sqrt()
    }

    #[test]
    fn the_model_draws_the_effect_and_variance_it_states() {
        // 40,000 draws: the mean's standard error is σ/200 (≤ 0.005), the
        // variance's about σ²·√(2/40000)·(kurtosis factor ≤ 2) (≤ 0.002
        // for rubric scores); four standard errors each.
        let mut rng = StdRng::seed_from_u64(400);
        for data in [Data::PassFail, Data::PassFailTies, Data::Rubric] {
            for effect in [0.0, data.gap()] {
                let n = 40_000;
                let xs: Vec<f64> = (0..n).map(|_| data.draw(&mut rng, effect)).collect();
                let mean = xs.iter().sum::<f64>() / n as f64;
                let var = xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1) as f64;
                let sd = data.variance(effect).sqrt();
                assert!(
                    (mean - effect).abs() < 4.0 * sd / 200.0,
                    "{data:?} {effect}: mean {mean}"
                );
                let se_var = 2.0 * data.variance(effect) * (2.0 / n as f64).sqrt();
                assert!(
                    (var - data.variance(effect)).abs() < 4.0 * se_var,
                    "{data:?} {effect}: variance {var}"
                );
            }
        }
    }

    #[test]
    fn looked_at_after_every_observation_the_tuned_test_holds_alpha_at_no_effect_and_beta_at_the_gap()
     {
        for (data, seed) in [
            (Data::PassFail, 401),
            (Data::PassFailTies, 403),
            (Data::Rubric, 402),
        ] {
            let null = betting(data, true, 0.0, RUNS, seed).expect("simulate");
            assert!(
                null.point.p_promote <= ALPHA + tolerance(ALPHA, RUNS),
                "{data:?}: false promotes {:?}",
                null.point
            );
            let design = betting(data, true, data.gap(), RUNS, seed + 10).expect("simulate");
            assert!(
                design.point.p_reject <= BETA + tolerance(BETA, RUNS),
                "{data:?}: false rejects {:?}",
                design.point
            );
            // Never truncated: every run decided, so the ASN is a decision's.
            assert!(null.point.p_truncated + design.point.p_truncated <= 0.0);
        }
    }

    /// The claim of issue 40, item 4: at most 1.2× Wald's ASN at the design
    /// effect, for both kinds of data. The simulated ASN must lie below
    /// 1.2 × Wald's plus three standard errors of the difference (the
    /// betting ASN's, and 1.2 × Wald's for simulated rubric references).
    /// The plug-in bets of the earlier laws fail the same check (the
    /// issue measured 1.97× and 1.30×): this test can fail.
    #[test]
    fn at_the_design_effect_the_tuned_test_needs_at_most_1_2_times_walds_tasks() {
        for (data, seed) in [
            (Data::PassFail, 411),
            (Data::PassFailTies, 413),
            (Data::Rubric, 412),
        ] {
            let effect = data.gap();
            let (wald_n, wald_se) = wald(data, effect, RUNS, seed).expect("wald");
            let price = |tuned: bool| {
                let m = betting(data, tuned, effect, RUNS, seed + 1).expect("simulate");
                let se = (m.se_expected_n.powi(2) + (1.2 * wald_se).powi(2)).sqrt();
                (m.point.expected_n, m.point.expected_n - 1.2 * wald_n, se)
            };
            let (tuned_n, excess, se) = price(true);
            eprintln!(
                "{} at the gap: Wald {wald_n:.1} ± {wald_se:.1}, tuned {tuned_n:.1} ({:.3}× Wald, {:.3}× the fixed horizon's n)",
                data.name(),
                tuned_n / wald_n,
                tuned_n / fixed_horizon_n(data)
            );
            assert!(
                excess <= 3.0 * se,
                "{data:?}: tuned betting {tuned_n:.1} tasks against Wald's {wald_n:.1}"
            );
            let (old_n, excess, se) = price(false);
            eprintln!(
                "{data:?} at the gap: plug-in bets {old_n:.1} ({:.3}×)",
                old_n / wald_n
            );
            assert!(
                excess > 3.0 * se,
                "{data:?}: the earlier laws' bets {old_n:.1} against Wald's {wald_n:.1}"
            );
        }
    }
}
