//! The generalized SPRT for paired outcomes, as in chess-engine testing
//! (Stockfish's fishtest, `server/fishtest/stats/LLRcalc.py` and
//! `stat_util.py`).
//!
//! Each observation is the outcome of one task run by both the candidate and
//! the baseline, scored from the candidate's side:
//!
//! * **trinomial** — loss / draw / win, scores 0, ½, 1;
//! * **pentanomial** — two runs per task (say two seeds), the pair's total
//!   in five classes LL, LD+DL, LW+DD+WL, DW+WD, WW, scores 0, ¼, ½, ¾, 1.
//!
//! The hypotheses are bounds `elo0 < elo1` in one of fishtest's three
//! units ([`EloModel`]; the unit travels with the bounds in [`EloBounds`], so
//! 2 normalized Elo is never read as 2 logistic Elo):
//!
//! * **logistic** — expected scores `s = 1/(1+10^(−elo/400))`, the
//!   statistic is the mean score;
//! * **normalized** (fishtest's default today) — the statistic is the
//!   t-value `(μ − ½)/σ` per game, `t = nelo/(800/ln 10)` (×√2 per game pair
//!   for pentanomial); the maximum-likelihood distribution with a given
//!   t-value is found by fishtest's fixed-point iteration (`MLE_t_value`);
//! * **BayesElo** (fishtest's history; trinomial only) — the draw Elo is
//!   estimated from the (regularized) counts, the bounds are converted to
//!   expected scores `P(win) + ½P(draw)` under it, then as logistic.
//!
//! `tests/it/fishtest.rs` reproduces vectors computed by fishtest's own code
//! for all three. For the expectation statistic, under each hypothesis the
//! maximum-likelihood distribution with that mean is
//! `p_i = p̂_i/(1 + x(a_i − s))`, x the root of
//! `Σ p̂_i (a_i − s)/(1 + x(a_i − s)) = 0` (solved by bisection to machine
//! precision — the function is strictly decreasing on its domain). The
//! statistic is `LLR = N·Σ p̂_i (ln p1_i − ln p0_i)` with N the number of
//! observations; empty classes count 1e-3, as in fishtest.
//!
//! **Error rates.** With the hypotheses' distributions estimated from the
//! data, this is a generalized SPRT: it promises Wald's bounds α/(1−β) and
//! β/(1−α), not α and β. Simulated with the overshoot correction (α = β =
//! 0.05, trinomial, 40 Elo apart, 40 % draws, 20,000 runs each) it gave false
//! promote 0.0525 and false reject 0.0527 against the bound 0.0526
//! (tests/it/simulation.rs checks a smaller run on every build).

use serde::Serialize;

use crate::error::{Error, Result, invalid};
use crate::sprt::{Boundaries, SequentialTest, TestState, truncate};

/// Hypotheses in logistic Elo: H0 `elo0`, H1 `elo1 > elo0`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct LogisticElo {
    /// Elo under the null.
    pub elo0: f64,
    /// Elo under the alternative.
    pub elo1: f64,
}

/// The unit of a paired GSPRT's Elo bounds (fishtest's `elo_model`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EloModel {
    /// Logistic Elo: the statistic is the expected score.
    #[default]
    Logistic,
    /// Normalized Elo: the statistic is the t-value of the score.
    Normalized,
    /// BayesElo with the draw Elo estimated from the data (trinomial only).
    BayesElo,
}

/// Hypotheses H0 `elo0`, H1 `elo1 > elo0`, in `model`'s unit.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct EloBounds {
    /// The unit.
    pub model: EloModel,
    /// Elo under the null.
    pub elo0: f64,
    /// Elo under the alternative.
    pub elo1: f64,
}

impl From<LogisticElo> for EloBounds {
    fn from(e: LogisticElo) -> Self {
        EloBounds {
            model: EloModel::Logistic,
            elo0: e.elo0,
            elo1: e.elo1,
        }
    }
}

/// Per-game (win, draw) probabilities of a true effect `elo` in `model`'s
/// unit, given the draw ratio `draw` of even games: what a simulation of
/// the test draws outcomes from. Logistic: score `1/(1+10^(−elo/400))` with
/// that draw ratio; normalized: the score whose t-value per game is
/// `elo/(800/ln 10)` at that draw ratio (`u = t·√((1−d)/(1+t²))`, score
/// `½ + u/2`); BayesElo: the draw Elo that gives `draw` at 0, then
/// `P(win) = 1/(1+10^((d_elo−elo)/400))`, `P(loss) = 1/(1+10^((d_elo+elo)/400))`.
/// `None` when no such distribution exists (a score too extreme for the
/// draw ratio).
pub fn game_probabilities(model: EloModel, elo: f64, draw: f64) -> Option<(f64, f64)> {
    if !(0.0..1.0).contains(&draw) || !elo.is_finite() {
        return None;
    }
    let (win, draw) = match model {
        EloModel::Logistic => (logistic_score(elo) - draw / 2.0, draw),
        EloModel::Normalized => {
            let t = elo / NELO_PER_T;
            let u = t * ((1.0 - draw) / (1.0 + t * t)).sqrt();
            (0.5 + u / 2.0 - draw / 2.0, draw)
        }
        EloModel::BayesElo => {
            let drawelo = 400.0 * ((1.0 + draw) / (1.0 - draw)).log10();
            let w = 1.0 / (1.0 + 10f64.powf((drawelo - elo) / 400.0));
            let l = 1.0 / (1.0 + 10f64.powf((drawelo + elo) / 400.0));
            (w, 1.0 - w - l)
        }
    };
    (win >= 0.0 && draw >= 0.0 && win + draw <= 1.0).then_some((win, draw))
}

/// fishtest's `nelo_divided_by_nt`: normalized Elo per unit of t-value.
pub const NELO_PER_T: f64 = 800.0 / std::f64::consts::LN_10;

/// The expected score of a logistic Elo difference.
pub fn logistic_score(elo: f64) -> f64 {
    1.0 / (1.0 + 10f64.powf(-elo / 400.0))
}

/// How outcomes are classified.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Pairing {
    /// One run per task: loss, draw, win.
    Trinomial,
    /// Two runs per task: LL, LD+DL, LW+DD+WL, DW+WD, WW.
    Pentanomial,
}

impl Pairing {
    /// Number of outcome classes.
    pub fn classes(self) -> usize {
        match self {
            Pairing::Trinomial => 3,
            Pairing::Pentanomial => 5,
        }
    }
}

/// Siegmund's overshoot correction as fishtest applies it (Sequential
/// Analysis, Corollary 8.33): track the jumps by which the running minimum
/// and maximum of the LLR move, and pull each boundary in by `Σδ²/(2Σδ)`.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize)]
struct Overshoot {
    ref0: f64,
    m0: f64,
    sq0: f64,
    ref1: f64,
    m1: f64,
    sq1: f64,
}

impl Overshoot {
    fn record(&mut self, llr: f64) {
        if llr < self.ref0 {
            let d = llr - self.ref0;
            self.m0 += d;
            self.sq0 += d * d;
            self.ref0 = llr;
        }
        if llr > self.ref1 {
            let d = llr - self.ref1;
            self.m1 += d;
            self.sq1 += d * d;
            self.ref1 = llr;
        }
    }

    /// How far the (lower, upper) boundaries move inward.
    fn corrections(&self) -> (f64, f64) {
        let o0 = if self.m0 != 0.0 {
            -self.sq0 / self.m0 / 2.0
        } else {
            0.0
        };
        let o1 = if self.m1 != 0.0 {
            self.sq1 / self.m1 / 2.0
        } else {
            0.0
        };
        (o0, o1)
    }
}

/// The paired-outcome GSPRT.
///
/// `update` only counts (cheap); the LLR is recomputed when asked for, or
/// after every observation when the overshoot correction is on (it needs the
/// LLR path).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PairedGsprt {
    pairing: Pairing,
    elo: EloBounds,
    bounds: Boundaries,
    max_n: Option<u64>,
    counts: [u64; 5],
    n: u64,
    overshoot: Option<Overshoot>,
    decision: TestState,
}

impl PairedGsprt {
    /// A test of `elo.elo0` against `elo.elo1` on outcomes classified by `pairing`.
    ///
    /// # Examples
    ///
    /// ```
    /// use ratchet_gate::{Boundaries, TestState, LogisticElo, PairedGsprt, Pairing, SequentialTest};
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// // fishtest-style: H0 0 Elo against H1 40 Elo, trinomial outcomes.
    /// let elo = LogisticElo { elo0: 0.0, elo1: 40.0 };
    /// let mut test = PairedGsprt::new(Pairing::Trinomial, elo, Boundaries::new(0.05, 0.05)?)?
    ///     .with_truncation(5000)?;
    /// let mut decision = TestState::Continue;
    /// // Classes 0 = loss, 1 = draw, 2 = win (for the candidate): a mean score of 0.6.
    /// for class in [2, 1, 0, 2, 1].into_iter().cycle().take(5000) {
    ///     decision = test.update(class)?;
    ///     if decision.is_final() { break; }
    /// }
    /// assert_eq!(decision, TestState::Promote);
    /// assert_eq!(test.counts().len(), 3);
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] unless both Elo values are finite, within
    /// ±2000, and `elo1 > elo0`, and for BayesElo bounds on pentanomial
    /// outcomes (its draw Elo is a per-game quantity).
    pub fn new(pairing: Pairing, elo: impl Into<EloBounds>, bounds: Boundaries) -> Result<Self> {
        let elo = elo.into();
        for (name, v) in [("elo0", elo.elo0), ("elo1", elo.elo1)] {
            if !v.is_finite() || v.abs() > 2000.0 {
                return Err(invalid(
                    name,
                    format!("{v} is not a usable Elo (|elo| ≤ 2000)"),
                ));
            }
        }
        if elo.model == EloModel::BayesElo && pairing == Pairing::Pentanomial {
            return Err(invalid(
                "elo_model",
                "BayesElo bounds need trinomial outcomes (its draw Elo is estimated per game)",
            ));
        }
        if elo.elo1 <= elo.elo0 {
            return Err(invalid(
                "elo1",
                format!("{} must be greater than elo0 = {}", elo.elo1, elo.elo0),
            ));
        }
        Ok(PairedGsprt {
            pairing,
            elo,
            bounds,
            max_n: None,
            counts: [0; 5],
            n: 0,
            overshoot: None,
            decision: TestState::Continue,
        })
    }

    /// Turns on the overshoot correction.
    pub fn with_overshoot_correction(mut self) -> Self {
        self.overshoot = Some(Overshoot::default());
        self
    }

    /// Stops the test at `max_n` observations (see [`TestState::Truncated`]).
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] if `max_n` is 0.
    pub fn with_truncation(mut self, max_n: u64) -> Result<Self> {
        if max_n == 0 {
            return Err(invalid("max_n", "the truncation limit must be at least 1"));
        }
        self.max_n = Some(max_n);
        Ok(self)
    }

    /// How outcomes are classified.
    pub fn pairing(&self) -> Pairing {
        self.pairing
    }

    /// The outcome counts, low to high.
    pub fn counts(&self) -> &[u64] {
        &self.counts[..self.pairing.classes()]
    }

    /// The hypotheses, in their unit.
    pub fn elo(&self) -> EloBounds {
        self.elo
    }

    /// The boundaries after the overshoot correction, if on.
    pub fn effective_boundaries(&self) -> (f64, f64) {
        let (o0, o1) = self
            .overshoot
            .map(|o| o.corrections())
            .unwrap_or((0.0, 0.0));
        (self.bounds.lower() + o0, self.bounds.upper() - o1)
    }

    fn judge(&self, llr: f64) -> TestState {
        let (lower, upper) = self.effective_boundaries();
        let d = if llr >= upper {
            TestState::Promote
        } else if llr <= lower {
            TestState::Reject
        } else {
            TestState::Continue
        };
        truncate(d, self.n, self.max_n)
    }

    /// Adds one outcome, given as its class index (0 = worst for the candidate).
    ///
    /// # Errors
    /// [`Error::InvalidObservation`] if the class does not exist for this pairing.
    pub fn observe(&mut self, class: usize) -> Result<TestState> {
        if class >= self.pairing.classes() {
            return Err(Error::InvalidObservation {
                reason: format!(
                    "outcome class {class} does not exist; {:?} has classes 0..{}",
                    self.pairing,
                    self.pairing.classes()
                ),
            });
        }
        if self.decision.is_final() {
            return Ok(self.decision);
        }
        self.counts[class] += 1;
        self.n += 1;
        if let Some(mut o) = self.overshoot {
            let llr = self.llr();
            o.record(llr);
            self.overshoot = Some(o);
            self.decision = self.judge(llr);
        } else if self.max_n.is_some_and(|m| self.n >= m) {
            self.decision = self.judge(self.llr());
        }
        Ok(self.decision)
    }

    /// Re-evaluates the decision from the counts (what `decision()` reports
    /// when the overshoot correction is off).
    pub fn evaluate(&mut self) -> TestState {
        if !self.decision.is_final() {
            self.decision = self.judge(self.llr());
        }
        self.decision
    }
}

impl SequentialTest for PairedGsprt {
    type Observation = usize;

    fn update(&mut self, class: usize) -> Result<TestState> {
        self.observe(class)?;
        Ok(self.evaluate())
    }

    fn llr(&self) -> f64 {
        if self.n == 0 {
            return 0.0;
        }
        llr_counts(self.counts(), self.elo)
    }

    fn n(&self) -> u64 {
        self.n
    }

    fn decision(&self) -> TestState {
        self.decision
    }
}

/// The LLR of raw outcome counts (3 or 5 classes) for `elo`'s bounds in
/// its unit: fishtest's `LLR_logistic`, `LLR_normalized`, or its BayesElo
/// path (`update_SPRT` with `elo_model = "BayesElo"`).
pub fn llr_counts(counts: &[u64], elo: EloBounds) -> f64 {
    let (total, pdf) = regularized_pdf(counts);
    let q0 = hypothesis(&pdf, elo.model, elo.elo0);
    let q1 = hypothesis(&pdf, elo.model, elo.elo1);
    total
        * pdf
            .iter()
            .zip(q0.iter().zip(&q1))
            .map(|(&(_, p), (a, b))| p * (b.ln() - a.ln()))
            .sum::<f64>()
}

/// The expected score per outcome (0 … 1: a loss 0, a draw ½, a win 1;
/// per game pair for pentanomial) of the maximum-likelihood distribution
/// the GSPRT puts on `counts` under a hypothesis of `elo` in `model`'s
/// unit: how a bound on the Elo reads as a bound on the score.
pub(crate) fn expected_score(counts: &[u64], model: EloModel, elo: f64) -> f64 {
    // The logistic hypothesis *is* a mean score: taken as it is, not as
    // the mean of the distribution solved for it (equal up to the root's
    // precision), so that an Elo of 0 reads as exactly 0.
    if model == EloModel::Logistic {
        return logistic_score(elo);
    }
    if model == EloModel::Normalized && elo == 0.0 {
        return 0.5;
    }
    let (_, pdf) = regularized_pdf(counts);
    hypothesis(&pdf, model, elo)
        .iter()
        .zip(&pdf)
        .map(|(q, (a, _))| q * a)
        .sum()
}

/// The maximum-likelihood distribution on the support of `pdf` under a
/// hypothesis of `elo` in `model`'s unit: fishtest's `LLR_logistic`,
/// `LLR_normalized`, or its BayesElo path (`update_SPRT` with `elo_model =
/// "BayesElo"`).
fn hypothesis(pdf: &[(f64, f64)], model: EloModel, elo: f64) -> Vec<f64> {
    match model {
        EloModel::Logistic => mle_with_mean(pdf, logistic_score(elo)),
        EloModel::BayesElo => {
            // The draw Elo of the regularized trinomial counts, and the
            // bound's expected score P(win) + ½P(draw) under it.
            let p = |i: usize| pdf[i].1;
            let (loss, win) = (p(0), p(pdf.len() - 1));
            let drawelo = 200.0 * ((1.0 - loss) / loss * (1.0 - win) / win).log10();
            let score = |belo: f64| {
                let w = 1.0 / (1.0 + 10f64.powf((-belo + drawelo) / 400.0));
                let l = 1.0 / (1.0 + 10f64.powf((belo + drawelo) / 400.0));
                w + 0.5 * (1.0 - w - l)
            };
            mle_with_mean(pdf, score(elo))
        }
        EloModel::Normalized => {
            let per_pair = if pdf.len() == 5 {
                std::f64::consts::SQRT_2
            } else {
                1.0
            };
            mle_with_t_value(pdf, 0.5, elo / NELO_PER_T * per_pair)
        }
    }
}

/// The counts as (score, frequency) pairs with their total, an empty class
/// counting 1e-3 (fishtest's `regularize` and `results_to_pdf`).
fn regularized_pdf(counts: &[u64]) -> (f64, Vec<(f64, f64)>) {
    let k = counts.len();
    let reg: Vec<f64> = counts
        .iter()
        .map(|&c| if c == 0 { 1e-3 } else { c as f64 })
        .collect();
    let total: f64 = reg.iter().sum();
    let pdf = reg
        .iter()
        .enumerate()
        .map(|(i, &c)| (i as f64 / (k - 1) as f64, c / total))
        .collect();
    (total, pdf)
}

/// The maximum-likelihood distribution on the support of `pdf` whose
/// t-value `(μ − reference)/σ` is `t` (fishtest's `MLE_t_value`: a
/// fixed-point iteration from the uniform distribution, at most ten steps,
/// each solving a secular equation).
fn mle_with_t_value(pdf: &[(f64, f64)], reference: f64, t: f64) -> Vec<f64> {
    let n = pdf.len();
    let mut q = vec![1.0 / n as f64; n];
    for _ in 0..10 {
        let mu: f64 = q.iter().zip(pdf).map(|(q, (a, _))| q * a).sum();
        let var: f64 = q
            .iter()
            .zip(pdf)
            .map(|(q, (a, _))| q * (a - mu) * (a - mu))
            .sum();
        let sigma = var.sqrt();
        let shifted: Vec<(f64, f64)> = pdf
            .iter()
            .map(|&(a, p)| {
                let z = (mu - a) / sigma;
                (a - reference - t * sigma * (1.0 + z * z) / 2.0, p)
            })
            .collect();
        let x = secular_root(&shifted, 0.0);
        let next: Vec<f64> = shifted.iter().map(|&(d, p)| p / (1.0 + x * d)).collect();
        let change = next
            .iter()
            .zip(&q)
            .map(|(a, b)| (a - b).abs())
            .fold(0.0, f64::max);
        q = next;
        if change < 1e-9 {
            break;
        }
    }
    q
}

/// The maximum-likelihood distribution on the support of `pdf` with mean `s`
/// (fishtest's `MLE_expected`; `pdf` has positive mass everywhere and
/// min a < s < max a).
fn mle_with_mean(pdf: &[(f64, f64)], s: f64) -> Vec<f64> {
    let x = secular_root(pdf, s);
    pdf.iter().map(|&(a, p)| p / (1.0 + x * (a - s))).collect()
}

/// The root x of `Σ p_i d_i/(1 + x d_i) = 0`, d_i = a_i − s, on the interval
/// where every `1 + x d_i > 0`: (−1/max d, −1/min d). The function is
/// strictly decreasing there, from +∞ to −∞, so bisection always converges;
/// it runs until the bracket stops shrinking.
fn secular_root(pdf: &[(f64, f64)], s: f64) -> f64 {
    let f = |x: f64| {
        pdf.iter()
            .map(|&(a, p)| p * (a - s) / (1.0 + x * (a - s)))
            .sum::<f64>()
    };
    let dmin = pdf
        .iter()
        .map(|&(a, _)| a - s)
        .fold(f64::INFINITY, f64::min);
    let dmax = pdf
        .iter()
        .map(|&(a, _)| a - s)
        .fold(f64::NEG_INFINITY, f64::max);
    let (mut lo, mut hi) = (-1.0 / dmax, -1.0 / dmin);
    // Step inside the open interval.
    let eps = 1e-12 * (hi - lo);
    lo += eps;
    hi -= eps;
    for _ in 0..200 {
        let mid = 0.5 * (lo + hi);
        if mid <= lo || mid >= hi {
            break;
        }
        if f(mid) > 0.0 {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    0.5 * (lo + hi)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// fishtest's own self-test (`stat_util.py`, `__main__`): pentanomial
    /// counts [10789, 19328, 33806, 19402, 10543], logistic Elo bounds
    /// [−3, 1], α = β = 0.05 → LLR 2.1310678118, state "" (continue).
    #[test]
    fn reproduces_fishtests_self_test() {
        let counts = [10789u64, 19328, 33806, 19402, 10543];
        let llr = llr_counts(
            &counts,
            LogisticElo {
                elo0: -3.0,
                elo1: 1.0,
            }
            .into(),
        );
        assert!((llr - 2.1310678118).abs() < 5e-11, "LLR {llr:.10}");

        let b = Boundaries::new(0.05, 0.05).expect("valid");
        let mut t = PairedGsprt::new(
            Pairing::Pentanomial,
            LogisticElo {
                elo0: -3.0,
                elo1: 1.0,
            },
            b,
        )
        .expect("valid");
        for (class, &c) in counts.iter().enumerate() {
            for _ in 0..c {
                t.observe(class).expect("class exists");
            }
        }
        assert_eq!(t.evaluate(), TestState::Continue);
        assert!((t.llr() - 2.1310678118).abs() < 5e-11);
    }

    #[test]
    fn mle_has_the_requested_mean_and_sums_to_one() {
        let pdf = [(0.0, 0.1), (0.25, 0.2), (0.5, 0.4), (0.75, 0.2), (1.0, 0.1)];
        for s in [0.3, 0.5, 0.62] {
            let q = mle_with_mean(&pdf, s);
            let total: f64 = q.iter().sum();
            let mean: f64 = q.iter().zip(&pdf).map(|(q, (a, _))| q * a).sum();
            assert!((total - 1.0).abs() < 1e-12, "sums to {total}");
            assert!((mean - s).abs() < 1e-12, "mean {mean} for {s}");
        }
    }

    #[test]
    fn llr_is_zero_at_the_midpoint_symmetry_and_signs_agree_with_the_data() {
        let bounds = |model, elo0, elo1| EloBounds { model, elo0, elo1 };
        for model in [EloModel::Logistic, EloModel::Normalized, EloModel::BayesElo] {
            // Symmetric data, symmetric hypotheses around 0: LLR = 0.
            let llr = llr_counts(&[10, 20, 10], bounds(model, -5.0, 5.0));
            assert!(llr.abs() < 1e-9, "{model:?}: {llr}");
            // Candidate wins more: evidence for the higher hypothesis.
            assert!(llr_counts(&[5, 20, 15], bounds(model, 0.0, 30.0)) > 0.0);
            assert!(llr_counts(&[15, 20, 5], bounds(model, 0.0, 30.0)) < 0.0);
        }
    }

    #[test]
    fn bad_outcomes_and_parameters_are_refused() {
        let b = Boundaries::new(0.05, 0.05).expect("valid");
        let mut t = PairedGsprt::new(
            Pairing::Trinomial,
            LogisticElo {
                elo0: 0.0,
                elo1: 5.0,
            },
            b,
        )
        .expect("valid");
        assert!(matches!(
            t.observe(3),
            Err(Error::InvalidObservation { .. })
        ));
        assert_eq!(t.n(), 0);
        assert!(matches!(
            PairedGsprt::new(
                Pairing::Trinomial,
                LogisticElo {
                    elo0: 5.0,
                    elo1: 5.0
                },
                b
            ),
            Err(Error::InvalidParameter { name: "elo1", .. })
        ));
        assert!(matches!(
            PairedGsprt::new(
                Pairing::Trinomial,
                LogisticElo {
                    elo0: f64::NAN,
                    elo1: 5.0
                },
                b
            ),
            Err(Error::InvalidParameter { name: "elo0", .. })
        ));
    }

    #[test]
    fn overshoot_pulls_the_boundaries_in() {
        let b = Boundaries::new(0.05, 0.05).expect("valid");
        let mut t = PairedGsprt::new(
            Pairing::Trinomial,
            LogisticElo {
                elo0: 0.0,
                elo1: 50.0,
            },
            b,
        )
        .expect("valid")
        .with_overshoot_correction();
        for class in [2, 1, 2, 0, 2, 2, 1, 2] {
            t.observe(class).expect("class exists");
        }
        let (lower, upper) = t.effective_boundaries();
        assert!(upper < b.upper() && upper > 0.0, "upper moved in: {upper}");
        assert!(
            lower >= b.lower() && lower < 0.0,
            "lower not moved out: {lower}"
        );
    }
}
