//! Calibration: what a test does for each true effect — the operating
//! characteristic (P(promote)) and the sample size — by Wald's
//! approximations, by exact dynamic programming over the Bernoulli lattice,
//! and by seeded Monte Carlo for any test.

use rand::SeedableRng;
use rand::rngs::StdRng;
use serde::Serialize;

use crate::error::{Error, Result, invalid, open_unit};
use crate::gsprt::{EloModel, Pairing, game_probabilities};
use crate::policy::{ClassPolicy, TestKind};
use crate::sprt::{BernoulliSprt, SequentialTest, TestState};

/// Wald's approximations at one true parameter.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct WaldApproximation {
    /// `1 − L(θ)`, the probability of promoting.
    pub p_promote: f64,
    /// `E_θ[N]`, the expected number of observations (untruncated test).
    pub expected_n: f64,
    /// The root h ≠ 0 of `E_θ[e^{hz}] = 1` (0 where `E_θ[z] = 0`).
    pub h: f64,
}

/// Wald's OC and ASN of a Bernoulli SPRT when the true pass rate is `p`
/// (methods.md: `L = (e^{hA} − 1)/(e^{hA} − e^{hB})`,
/// `E[N] = (L·B + (1−L)·A)/E[z]`, and `−A·B/E[z²]` where `E[z] = 0`).
/// Truncation is ignored: these are the open test's figures.
///
/// # Errors
/// [`Error::InvalidParameter`] unless 0 < p < 1.
pub fn wald_bernoulli(test: &BernoulliSprt, p: f64) -> Result<WaldApproximation> {
    let p = open_unit("p", p)?;
    let (win, loss) = test.increments();
    let (a, b) = (test.boundaries().upper(), test.boundaries().lower());
    let ez = p * win + (1.0 - p) * loss;
    let ez2 = p * win * win + (1.0 - p) * loss * loss;
    // E[e^{hz}] − 1, convex in h with a root at 0.
    let g = |h: f64| p * (h * win).exp() + (1.0 - p) * (h * loss).exp() - 1.0;
    if ez.abs() < 1e-12 * ez2.sqrt() {
        return Ok(WaldApproximation {
            p_promote: 1.0 - a / (a - b),
            expected_n: -a * b / ez2,
            h: 0.0,
        });
    }
    // The other root lies on the side opposite to the drift: h > 0 when E[z] < 0.
    let dir = if ez < 0.0 { 1.0 } else { -1.0 };
    let mut far = dir;
    while g(far) <= 0.0 {
        far *= 2.0;
        if far.abs() > 1e6 {
            return Err(Error::Numerical {
                what: "wald_bernoulli",
                reason: "no non-zero root of E[exp(hz)] = 1".into(),
            });
        }
    }
    let (mut lo, mut hi) = if dir > 0.0 { (0.0, far) } else { (far, 0.0) };
    // Bisect on the sign change, excluding the trivial root at 0: on the
    // inner side of the root g < 0, on the outer side g > 0.
    for _ in 0..200 {
        let mid = 0.5 * (lo + hi);
        if mid <= lo || mid >= hi {
            break;
        }
        let inner = g(mid) < 0.0;
        match (dir > 0.0, inner) {
            (true, true) | (false, false) => lo = mid,
            _ => hi = mid,
        }
    }
    let h = 0.5 * (lo + hi);
    let l = ((h * a).exp() - 1.0) / ((h * a).exp() - (h * b).exp());
    Ok(WaldApproximation {
        p_promote: 1.0 - l,
        expected_n: (l * b + (1.0 - l) * a) / ez,
        h,
    })
}

/// What a (truncated) test does at one true parameter.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct OperatingPoint {
    /// P(the test promotes).
    pub p_promote: f64,
    /// P(the test rejects at the lower boundary).
    pub p_reject: f64,
    /// P(the test reaches its truncation limit).
    pub p_truncated: f64,
    /// `E[N]`, observations until the test stops.
    pub expected_n: f64,
    /// Quantiles of N at 10 %, 50 % and 90 %.
    pub n_quantiles: [u64; 3],
}

/// Exact OC and ASN of a truncated Bernoulli SPRT at true pass rate `p`, by
/// propagating the probability mass over the lattice (n, successes) and
/// absorbing it at the boundaries — the same decisions the state machine
/// takes, computed with the same arithmetic.
///
/// # Errors
/// [`Error::InvalidParameter`] unless 0 < p < 1 and the test has a truncation
/// limit (an open test has no finite lattice).
pub fn exact_bernoulli(test: &BernoulliSprt, p: f64) -> Result<OperatingPoint> {
    let p = open_unit("p", p)?;
    let max_n = test
        .max_n()
        .ok_or_else(|| invalid("max_n", "exact calibration needs a truncation limit"))?;
    if max_n > 200_000 {
        return Err(invalid(
            "max_n",
            format!("{max_n} is too large for the exact lattice (≤ 200000)"),
        ));
    }
    let bounds = *test.boundaries();
    let mut mass = vec![0.0f64; max_n as usize + 2];
    let mut next = vec![0.0f64; max_n as usize + 2];
    mass[0] = 1.0;
    let (mut promote, mut reject, mut expected_n) = (0.0, 0.0, 0.0);
    let mut stopped_cdf: Vec<f64> = Vec::with_capacity(max_n as usize);
    let mut cumulative = 0.0;
    for n in 1..=max_n {
        let nu = n as usize;
        next[0] = mass[0] * (1.0 - p);
        for s in 1..=nu {
            next[s] = mass[s] * (1.0 - p) + mass[s - 1] * p;
        }
        let mut stopped_here = 0.0;
        for (s, m) in next.iter_mut().enumerate().take(nu + 1) {
            if *m == 0.0 {
                continue;
            }
            match bounds.judge(test.llr_at(n, s as u64)) {
                TestState::Promote => {
                    promote += *m;
                    stopped_here += *m;
                    *m = 0.0;
                }
                TestState::Reject => {
                    reject += *m;
                    stopped_here += *m;
                    *m = 0.0;
                }
                _ => {}
            }
        }
        expected_n += n as f64 * stopped_here;
        cumulative += stopped_here;
        stopped_cdf.push(cumulative);
        std::mem::swap(&mut mass, &mut next);
    }
    let truncated: f64 = mass.iter().sum();
    expected_n += max_n as f64 * truncated;
    let quantile = |q: f64| -> u64 {
        stopped_cdf
            .iter()
            .position(|&c| c >= q)
            .map(|i| i as u64 + 1)
            .unwrap_or(max_n)
    };
    Ok(OperatingPoint {
        p_promote: promote,
        p_reject: reject,
        p_truncated: truncated,
        expected_n,
        n_quantiles: [quantile(0.1), quantile(0.5), quantile(0.9)],
    })
}

/// A Monte-Carlo estimate with its standard errors.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MonteCarloEstimate {
    /// The point estimates.
    pub point: OperatingPoint,
    /// Number of simulated tests.
    pub runs: usize,
    /// Standard error of `p_promote`: `√(p(1−p)/runs)`.
    pub se_promote: f64,
    /// Standard error of `p_reject`.
    pub se_reject: f64,
    /// Standard error of `expected_n`: sample sd of N over `√runs`.
    pub se_expected_n: f64,
}

/// Runs `runs` copies of `template`, each fed by `draw` from one seeded
/// generator, until each stops or reaches `cap` observations (counted as
/// truncated). Deterministic for a given seed.
///
/// # Errors
/// [`Error::InvalidParameter`] if `runs` or `cap` is 0; any error the test's
/// `update` returns.
pub fn monte_carlo<T, F>(
    template: &T,
    runs: usize,
    cap: u64,
    seed: u64,
    mut draw: F,
) -> Result<MonteCarloEstimate>
where
    T: SequentialTest + Clone,
    F: FnMut(&mut StdRng) -> T::Observation,
{
    if runs == 0 || cap == 0 {
        return Err(invalid(
            "runs/cap",
            "need at least one run of at least one observation",
        ));
    }
    let mut rng = StdRng::seed_from_u64(seed);
    let (mut promote, mut reject, mut truncated) = (0usize, 0usize, 0usize);
    let mut ns: Vec<u64> = Vec::with_capacity(runs);
    for _ in 0..runs {
        let mut t = template.clone();
        let mut d = t.decision();
        while !d.is_final() && t.n() < cap {
            d = t.update(draw(&mut rng))?;
        }
        match d {
            TestState::Promote => promote += 1,
            TestState::Reject => reject += 1,
            _ => truncated += 1,
        }
        ns.push(t.n());
    }
    let r = runs as f64;
    let mean = ns.iter().map(|&n| n as f64).sum::<f64>() / r;
    let var = ns.iter().map(|&n| (n as f64 - mean).powi(2)).sum::<f64>() / (r - 1.0).max(1.0);
    ns.sort_unstable();
    let q = |f: f64| ns[((f * r).ceil() as usize).clamp(1, runs) - 1];
    let (pp, pr) = (promote as f64 / r, reject as f64 / r);
    Ok(MonteCarloEstimate {
        point: OperatingPoint {
            p_promote: pp,
            p_reject: pr,
            p_truncated: truncated as f64 / r,
            expected_n: mean,
            n_quantiles: [q(0.1), q(0.5), q(0.9)],
        },
        runs,
        se_promote: (pp * (1.0 - pp) / r).sqrt(),
        se_reject: (pr * (1.0 - pr) / r).sqrt(),
        se_expected_n: (var / r).sqrt(),
    })
}

#[cfg(test)]
mod typed_words {
    use super::*;

    #[test]
    fn the_words_are_the_serialized_forms() {
        for m in [CalibrationMethod::Exact, CalibrationMethod::MonteCarlo] {
            assert_eq!(serde_json::to_value(m).expect("json"), m.as_str());
        }
        for e in [
            Effect::PassRate {
                rate: 0.7,
                theta: 0.6,
            },
            Effect::MeanShift { shift: -0.2 },
        ] {
            let v = serde_json::to_value(e).expect("json");
            assert_eq!(v["unit"], e.unit());
            let key = if e.unit() == "pass_rate" {
                "rate"
            } else {
                "shift"
            };
            assert_eq!(v[key].as_f64(), Some(e.value()));
        }
        use crate::GateStatus as G;
        for g in [
            G::Promote,
            G::Reject,
            G::Continue,
            G::MissingEvidence,
            G::UnverifiedTrace,
            G::Truncated,
        ] {
            assert_eq!(serde_json::to_value(g).expect("json"), g.as_str());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sprt::Boundaries;

    fn test_05_07() -> BernoulliSprt {
        BernoulliSprt::new(0.5, 0.7, Boundaries::new(0.05, 0.05).expect("valid")).expect("valid")
    }

    /// methods.md's check: at θ = p0, h = 1 and L = 1 − α for α = β = 0.05
    /// (exactly: (19 − 1)/(19 − 1/19)).
    #[test]
    fn wald_oc_at_the_hypotheses() {
        let t = test_05_07();
        let w0 = wald_bernoulli(&t, 0.5).expect("valid");
        assert!((w0.h - 1.0).abs() < 1e-9, "h = {}", w0.h);
        let l = (19.0 - 1.0) / (19.0 - 1.0 / 19.0);
        assert!((w0.p_promote - (1.0 - l)).abs() < 1e-9);
        let w1 = wald_bernoulli(&t, 0.7).expect("valid");
        assert!((w1.h + 1.0).abs() < 1e-9, "h = {}", w1.h);
        assert!((w1.p_promote - l).abs() < 1e-9);
        // Between the hypotheses the OC is monotone.
        let mut last = 0.0;
        for p in [0.45, 0.5, 0.55, 0.6, 0.65, 0.7, 0.75] {
            let w = wald_bernoulli(&t, p).expect("valid");
            assert!(w.p_promote > last, "OC increases with p");
            assert!(w.expected_n > 0.0);
            last = w.p_promote;
        }
    }

    #[test]
    fn exact_lattice_is_a_probability_distribution() {
        let t = test_05_07().with_truncation(400).expect("valid");
        for p in [0.4, 0.5, 0.6, 0.7, 0.8] {
            let e = exact_bernoulli(&t, p).expect("valid");
            let total = e.p_promote + e.p_reject + e.p_truncated;
            assert!((total - 1.0).abs() < 1e-12, "mass {total} at p = {p}");
            assert!(e.expected_n > 0.0 && e.expected_n <= 400.0);
        }
        assert!(matches!(
            exact_bernoulli(&test_05_07(), 0.5),
            Err(Error::InvalidParameter { name: "max_n", .. })
        ));
    }

    #[test]
    fn exact_lattice_matches_a_tiny_hand_computation() {
        // p0 = 0.5, p1 = 0.9, α = β = 0.25: A = ln 3, B = −ln 3.
        // A success adds ln 1.8, a failure ln 0.2. Two successes (ln 3.24)
        // cross A; a failure first (ln 0.2 < −ln 3) crosses B at once; after
        // S then F: ln 0.36 > −ln 3, continue; truncate at n = 2.
        let t = BernoulliSprt::new(0.5, 0.9, Boundaries::new(0.25, 0.25).expect("valid"))
            .expect("valid")
            .with_truncation(2)
            .expect("valid");
        let p = 0.6;
        let e = exact_bernoulli(&t, p).expect("valid");
        assert!((e.p_promote - p * p).abs() < 1e-15);
        assert!((e.p_reject - (1.0 - p)).abs() < 1e-15);
        assert!((e.p_truncated - p * (1.0 - p)).abs() < 1e-15);
        assert!((e.expected_n - ((1.0 - p) * 1.0 + p * 2.0)).abs() < 1e-15);
    }
}

/// What a calibration table assumes about the world the test will run in.
/// [`Assumptions::measured`] replaces the guesses with a baseline's own
/// figures.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Assumptions {
    /// The baseline's pass rate (bernoulli tests).
    pub p0: f64,
    /// Standard deviation of a paired difference, in the scorer's unit
    /// (gaussian tests).
    pub sigma: f64,
    /// Draw ratio per task (paired tests).
    pub draw: f64,
    /// Monte-Carlo runs per effect.
    pub runs: usize,
    /// Monte-Carlo seed (each effect row uses `seed + k`).
    pub seed: u64,
}

impl Default for Assumptions {
    fn default() -> Self {
        Assumptions {
            p0: 0.5,
            sigma: 1.0,
            draw: 0.3,
            runs: 2000,
            seed: 1,
        }
    }
}

impl Assumptions {
    /// These assumptions with p0, σ and the draw ratio measured from a
    /// baseline's recorded scores (σ and the draw ratio kept where the
    /// baseline cannot say: one task, no task run twice).
    pub fn measured(self, world: &crate::BaselineWorld) -> Self {
        Assumptions {
            p0: world.p0,
            sigma: world.sigma.unwrap_or(self.sigma),
            draw: world.draw.unwrap_or(self.draw),
            ..self
        }
    }
}

/// The true effect a calibration row assumes, in the test's own unit.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(tag = "unit", rename_all = "snake_case")]
pub enum Effect {
    /// The candidate's pass rate (bernoulli), with the discordant-pair θ it means.
    PassRate {
        /// The candidate's pass rate.
        rate: f64,
        /// P(the candidate is the one that passed | the pair is discordant).
        theta: f64,
    },
    /// The mean of a paired difference (gaussian).
    MeanShift {
        /// The shift.
        shift: f64,
    },
    /// An Elo difference in the policy's model (paired).
    Elo {
        /// The model.
        model: EloModel,
        /// The difference.
        elo: f64,
    },
}

impl Effect {
    /// Its unit as serialized: `pass_rate`, `mean_shift` or `elo`.
    pub fn unit(&self) -> &'static str {
        match self {
            Effect::PassRate { .. } => "pass_rate",
            Effect::MeanShift { .. } => "mean_shift",
            Effect::Elo { .. } => "elo",
        }
    }

    /// Its size in that unit: the pass rate, the shift or the Elo difference.
    pub fn value(&self) -> f64 {
        match *self {
            Effect::PassRate { rate, .. } => rate,
            Effect::MeanShift { shift } => shift,
            Effect::Elo { elo, .. } => elo,
        }
    }
}

impl Effect {
    /// In words, a mean shift in `unit` (the class's scorer's: `mean
    /// shift +40.7 µs`; positive is better, on the gate's judged scale).
    pub fn shown(&self, unit: crate::shown::Unit) -> String {
        match self {
            Effect::MeanShift { shift } => {
                format!("mean shift {}", crate::shown::signed(*shift, unit))
            }
            other => other.to_string(),
        }
    }
}

impl std::fmt::Display for Effect {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Effect::PassRate { rate, theta } => write!(f, "pass rate {rate:.4} (θ {theta:.4})"),
            Effect::MeanShift { shift } => write!(
                f,
                "mean shift {}",
                crate::shown::signed(*shift, crate::shown::Unit::Plain)
            ),
            Effect::Elo { model, elo } => {
                let unit = match model {
                    EloModel::Logistic => "logistic",
                    EloModel::Normalized => "normalized",
                    EloModel::BayesElo => "BayesElo",
                };
                write!(f, "{unit} Elo {elo:+.1}")
            }
        }
    }
}

/// How a row's figures were computed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CalibrationMethod {
    /// Exact, over the Bernoulli lattice.
    Exact,
    /// Seeded Monte Carlo of the same state machine the gate runs.
    MonteCarlo,
}

impl CalibrationMethod {
    /// The word as serialized: `exact` or `monte_carlo`.
    pub fn as_str(self) -> &'static str {
        match self {
            CalibrationMethod::Exact => "exact",
            CalibrationMethod::MonteCarlo => "monte_carlo",
        }
    }
}

/// One row of a policy's calibration table: what its test does at one
/// true effect.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CalibrationRow {
    /// The true effect.
    pub effect: Effect,
    /// P(promote).
    pub p_promote: f64,
    /// P(the test reaches `max_n` undecided).
    pub p_truncated: f64,
    /// Whether this row is the effect the test is designed to detect (the
    /// gap, or elo1), where P(promote) should reach 1 − β.
    pub design: bool,
    /// Expected tasks until the test stops (capped at `max_n`).
    pub expected_n: f64,
    /// The 10th, 50th and 90th percentiles of the tasks needed.
    pub n_quantiles: [u64; 3],
    /// How it was computed.
    pub method: CalibrationMethod,
}

/// A warning when the design effect's row shows the test cannot reach its
/// power: P(promote) at the effect it is built to detect is below 1 − β by
/// more than the row's Monte-Carlo error (three standard errors over
/// `runs`; none for an exact row), with P(truncated) — usually `max_n` is
/// too small for that effect.
pub fn power_warning(policy: &ClassPolicy, rows: &[CalibrationRow], runs: usize) -> Option<String> {
    let row = rows.iter().find(|r| r.design)?;
    let target = 1.0 - policy.beta;
    let slack = match row.method {
        CalibrationMethod::Exact => 0.0,
        CalibrationMethod::MonteCarlo => {
            3.0 * (target * (1.0 - target) / runs.max(1) as f64).sqrt()
        }
    };
    (row.p_promote + slack < target).then(|| {
        format!(
            "at the design effect ({}) the test promotes with probability {:.3}, below 1 − β = {target:.3}; it truncates at max_n = {} with probability {:.3}: raise max_n (or the effect to detect)",
            row.effect, row.p_promote, policy.max_n, row.p_truncated
        )
    })
}

impl CalibrationRow {
    /// The row of a Monte-Carlo estimate at `effect`.
    fn simulated(effect: Effect, m: &MonteCarloEstimate, design: bool) -> CalibrationRow {
        CalibrationRow {
            effect,
            p_promote: m.point.p_promote,
            p_truncated: m.point.p_truncated,
            design,
            expected_n: m.point.expected_n,
            n_quantiles: m.point.n_quantiles,
            method: CalibrationMethod::MonteCarlo,
        }
    }
}

/// Rows a calibration table has at most: effects at `k/4` of the policy's
/// gap (or Elo span) for k = −2..=6.
pub const CALIBRATION_ROWS: usize = 9;

/// One game of a paired comparison: 2 a win, 1 a draw, 0 a loss, for win
/// and draw probabilities `win` and `draw`.
pub fn sample_game(rng: &mut StdRng, win: f64, draw: f64) -> usize {
    let u: f64 = rand::Rng::random(rng);
    if u < win {
        2
    } else if u < win + draw {
        1
    } else {
        0
    }
}

/// A class policy's calibration table: for true effects from −½ to 1½
/// times the effect it is built to detect, P(promote), the expected tasks
/// and their quantiles. Exact for bernoulli tests (the test sees discordant
/// pairs only; tasks = pairs / P(discordant)), seeded Monte Carlo otherwise.
/// `on_row` is called after each row (a progress bar).
///
/// # Errors
/// [`Error::InvalidParameter`] for a policy or assumption out of its domain
/// (σ ≤ 0, no runs).
pub fn calibration_table(
    policy: &ClassPolicy,
    a: &Assumptions,
    on_row: &mut dyn FnMut(),
) -> Result<Vec<CalibrationRow>> {
    let mut rows = Vec::new();
    match policy.test {
        TestKind::None => {
            return Err(Error::InvalidParameter {
                name: "test",
                reason: "the class runs no sequential test (test = \"none\"): it is decided by its required suites and invariants, and has no error rates to calibrate".into(),
            });
        }
        TestKind::Benchmarks => {
            return Err(Error::InvalidParameter {
                name: "test",
                reason: "calibrate models one paired test; the benchmarks kind's error rates are measured per timing shape by the gate's seeded simulations (crates/gate/tests/it/benchmarks.rs)".into(),
            });
        }
        TestKind::Bernoulli => {
            // With the baseline passing a task with probability p0 and the
            // candidate with r, independently, a pair is discordant with
            // probability d and the candidate is the one that passed with
            // probability θ; the OC is exact in θ.
            open_unit("p0", a.p0)?;
            let gap = policy.gap.unwrap_or_default();
            let t = policy.bernoulli_test()?;
            for k in -2i32..=6 {
                let rate = a.p0 + f64::from(k) * gap / 4.0;
                if !(rate > 0.0 && rate < 1.0) {
                    continue;
                }
                let (won, lost) = (rate * (1.0 - a.p0), a.p0 * (1.0 - rate));
                let d = won + lost;
                let e = exact_bernoulli(&t, won / d)?;
                let tasks = |pairs: u64| (pairs as f64 / d).ceil() as u64;
                on_row();
                rows.push(CalibrationRow {
                    effect: Effect::PassRate {
                        rate,
                        theta: won / d,
                    },
                    p_promote: e.p_promote,
                    p_truncated: e.p_truncated,
                    design: k == 4,
                    expected_n: e.expected_n / d,
                    n_quantiles: e.n_quantiles.map(tasks),
                    method: CalibrationMethod::Exact,
                });
            }
        }
        TestKind::Gaussian => {
            let gap = policy.gap.unwrap_or_default();
            let t = policy.gaussian_test(crate::Law::CURRENT)?;
            for k in -2i32..=6 {
                let shift = f64::from(k) * gap / 4.0;
                let normal = rand_distr::Normal::new(shift, a.sigma)
                    .map_err(|e| invalid("sigma", e.to_string()))?;
                let m = monte_carlo(
                    &t,
                    a.runs,
                    policy.max_n,
                    a.seed.wrapping_add(k as u64),
                    |rng| rand_distr::Distribution::sample(&normal, rng),
                )?;
                on_row();
                rows.push(CalibrationRow::simulated(
                    Effect::MeanShift { shift },
                    &m,
                    k == 4,
                ));
            }
        }
        TestKind::Betting => {
            // Bounded scores in the worst case for their variance: each
            // side passes or fails (the range's ends), the baseline at p0
            // and the candidate at p0 + shift (in units of the range).
            open_unit("p0", a.p0)?;
            let [lo, hi] = policy.score_range();
            let width = hi - lo;
            let gap = policy.gap.unwrap_or_default();
            // The test new verdicts run.
            let t = policy.betting_test(crate::Law::CURRENT)?;
            for k in -2i32..=6 {
                let shift = f64::from(k) * gap / 4.0;
                let rate = a.p0 + shift / width;
                if !(rate > 0.0 && rate < 1.0) {
                    continue;
                }
                let m = monte_carlo(
                    &t,
                    a.runs,
                    policy.max_n,
                    a.seed.wrapping_add(k as u64),
                    |rng| {
                        let b = rand::Rng::random_bool(rng, a.p0);
                        let c = rand::Rng::random_bool(rng, rate);
                        width * (f64::from(u8::from(c)) - f64::from(u8::from(b)))
                    },
                )?;
                on_row();
                rows.push(CalibrationRow::simulated(
                    Effect::MeanShift { shift },
                    &m,
                    k == 4,
                ));
            }
        }
        TestKind::Paired => {
            let t = policy.paired_test()?;
            let elo = t.elo();
            let step = (elo.elo1 - elo.elo0) / 4.0;
            let pentanomial = t.pairing() == Pairing::Pentanomial;
            for k in -2i32..=6 {
                let e = elo.elo0 + f64::from(k) * step;
                let Some((win, draw)) = game_probabilities(elo.model, e, a.draw) else {
                    continue;
                };
                let m = monte_carlo(
                    &t,
                    a.runs,
                    policy.max_n,
                    a.seed.wrapping_add(k as u64),
                    |rng| {
                        if pentanomial {
                            sample_game(rng, win, draw) + sample_game(rng, win, draw)
                        } else {
                            sample_game(rng, win, draw)
                        }
                    },
                )?;
                on_row();
                rows.push(CalibrationRow::simulated(
                    Effect::Elo {
                        model: elo.model,
                        elo: e,
                    },
                    &m,
                    k == 4,
                ));
            }
        }
    }
    Ok(rows)
}

#[cfg(test)]
mod table_tests {
    use super::*;

    fn class(text: &str) -> ClassPolicy {
        crate::Policy::parse(text)
            .expect("policy")
            .class("c")
            .expect("class")
            .clone()
    }

    #[test]
    fn a_bernoulli_table_is_exact_and_keeps_walds_bounds() {
        let p = class(
            "[class.c]\nscorer = \"a\"\ntest = \"bernoulli\"\nalpha = 0.05\nbeta = 0.05\ngap = 0.2\nmax_n = 5000\n",
        );
        let mut calls = 0;
        let rows =
            calibration_table(&p, &Assumptions::default(), &mut || calls += 1).expect("table");
        assert_eq!(rows.len(), CALIBRATION_ROWS);
        assert_eq!(calls, rows.len(), "one progress call per row");
        assert!(rows.iter().all(|r| r.method == CalibrationMethod::Exact));
        let at = |rate: f64| {
            rows.iter()
                .find(|r| matches!(r.effect, Effect::PassRate { rate: x, .. } if (x - rate).abs() < 1e-9))
                .expect("row")
        };
        // No effect: θ = ½ exactly, and Wald's bound α/(1−β) holds for the
        // exact operating characteristic.
        let null = at(0.5);
        assert!(
            matches!(null.effect, Effect::PassRate { theta, .. } if (theta - 0.5).abs() < 1e-12)
        );
        assert!(null.p_promote <= 0.05 / 0.95, "{null:?}");
        // The effect it is built for: P(reject) ≤ β/(1−α).
        let alt = at(0.7);
        assert!(1.0 - alt.p_promote <= 0.05 / 0.95 + 1e-9, "{alt:?}");
        // P(promote) rises with the effect.
        assert!(
            rows.windows(2)
                .all(|w| w[0].p_promote <= w[1].p_promote + 1e-12)
        );
    }

    #[test]
    fn gaussian_and_paired_tables_are_seeded_monte_carlo() {
        let g = class(
            "[class.c]\nscorer = \"a\"\ntest = \"gaussian\"\nalpha = 0.05\nbeta = 0.05\ngap = 0.5\nmax_n = 2000\n",
        );
        let a = Assumptions {
            runs: 400,
            ..Assumptions::default()
        };
        let one = calibration_table(&g, &a, &mut || {}).expect("table");
        let two = calibration_table(&g, &a, &mut || {}).expect("table");
        assert_eq!(one, two, "same seed, same table");
        assert!(
            one.iter()
                .all(|r| r.method == CalibrationMethod::MonteCarlo)
        );
        // At no effect, P(promote) ≤ α/(1−β) = 5.26 % within 3 Monte-Carlo SE.
        let null = one
            .iter()
            .find(|r| matches!(r.effect, Effect::MeanShift { shift } if shift == 0.0))
            .expect("null row");
        let se = (0.0526f64 * (1.0 - 0.0526) / 400.0).sqrt();
        assert!(null.p_promote <= 0.0526 + 3.0 * se, "{null:?}");

        let p = class(
            "[class.c]\nscorer = \"a\"\ntest = \"paired\"\npairing = \"pentanomial\"\nalpha = 0.05\nbeta = 0.05\nelo0 = 0.0\nelo1 = 40.0\nmax_n = 4000\n",
        );
        let rows = calibration_table(&p, &a, &mut || {}).expect("table");
        assert_eq!(rows.len(), CALIBRATION_ROWS);
        let top = rows.last().expect("row");
        assert!(matches!(top.effect, Effect::Elo { elo, .. } if (elo - 60.0).abs() < 1e-9));
        assert!(top.p_promote > 0.9, "{top:?}");
        assert!(sample_game(&mut StdRng::seed_from_u64(3), 1.0, 0.0) == 2);
    }
}
