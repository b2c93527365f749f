//! Always-valid tests and intervals for bounded scores, by betting
//! (Waudby-Smith & Ramdas, "Estimating means of bounded random variables
//! by betting", JRSS-B 86(1), 2024).
//!
//! For observations `x ∈ [0, 1]` and a hypothesised mean `m`, the capital
//! `K_t(m) = ∏ (1 + λ_i (x_i − m))` with predictable bets `λ_i` (chosen from
//! `x_1 … x_{i−1}` only) is a nonnegative martingale when the mean is `m`,
//! and a supermartingale when the mean is below `m` and every `λ_i ≥ 0`.
//! Ville's inequality then bounds `P(sup_t K_t ≥ 1/α) ≤ α`: the test may be
//! looked at after every observation, stopped at any time, by any rule, and
//! the error rate holds for *any* distribution on `[0, 1]` — skewed, discrete,
//! heavy-tailed within its range. This is why polling is free here and not
//! for a plug-in SPRT.
//!
//! The bets are the predictable plug-in empirical-Bernstein ones (PrPl-EB)
//! of `confseq` (`betting_strategies.lambda_predmix_eb`: prior mean ½,
//! prior variance ¼, one pseudo-observation), truncated at `½/m` (or
//! `½/(1 − m)` for bets against), as `confseq.betting.betting_mart` does by
//! default; `tests/it/betting.rs` checks the capital against it to 1e-9.
//!
//! Since [`crate::Law::Tuned`] the gate's test ([`BettingTest::tuned`])
//! bets mostly for the effect it was designed to find: each capital is a
//! fixed mixture, `TUNED_WEIGHT` of a capital whose bets are sized for
//! growth at the design effect ([`BettingCapital::toward`]) and the rest a
//! PrPl-EB capital as above (power for effects far beyond the design). Any
//! mixture of nonnegative supermartingales with fixed weights is one, so
//! Ville's inequality still holds at any stopping time. PrPl-EB bets are
//! sized for an interval's width, not for a test's growth: they paid about
//! twice Wald's sample size on pass/fail data (issue 40). On pass/fail
//! differences the tuned capital *is* Wald's likelihood ratio of θ = ½
//! against θ₁ on the discordant pairs (`benches/README.md`, "Issue 40: the
//! default test's price").
//!
//! ```
//! use ratchet_gate::{BettingTest, TestState, SequentialTest};
//! // Paired differences in [-1, 1]: promote when the mean difference is
//! // shown above 0 at α = 0.05; reject when shown below the gap 0.2 at β = 0.1.
//! let mut t = BettingTest::new(0.05, 0.1, 0.2, 1.0)?.with_truncation(10_000)?;
//! let mut d = TestState::Continue;
//! for i in 0..400 {
//!     d = t.update(if i % 10 < 6 { 1.0 } else { -1.0 })?; // mean 0.2
//!     if d.is_final() { break; }
//! }
//! assert_eq!(d, TestState::Promote);
//! # Ok::<(), ratchet_gate::Error>(())
//! ```

use serde::Serialize;

use crate::error::{Error, Result};
use crate::sprt::{SequentialTest, TestState, truncate};

/// The predictable plug-in empirical-Bernstein bet sizes (PrPl-EB) for
/// level `a`: `λ_t = √(2 ln(1/a) / (t ln(1 + t) σ̂²_{t−1}))`, where `σ̂²` is
/// a regularised running variance (prior ¼ with one pseudo-observation).
#[derive(Debug, Clone, Copy, PartialEq)]
struct PlugIn {
    t: u64,
    sum: f64,
    squares: f64,
    sigma2_prev: f64,
    two_log: f64,
}

impl PlugIn {
    const PRIOR_MEAN: f64 = 0.5;
    const PRIOR_VARIANCE: f64 = 0.25;

    fn new(level: f64) -> Self {
        PlugIn {
            t: 0,
            sum: 0.0,
            squares: 0.0,
            sigma2_prev: Self::PRIOR_VARIANCE,
            two_log: 2.0 * (1.0 / level).ln(),
        }
    }

    /// The bet for the next observation (from the ones before it only).
    fn next_bet(&self) -> f64 {
        let t = (self.t + 1) as f64;
        let l = (self.two_log / (t * (1.0 + t).ln() * self.sigma2_prev)).sqrt();
        if l.is_nan() { 0.0 } else { l }
    }

    fn push(&mut self, x: f64) {
        self.t += 1;
        let t = self.t as f64;
        self.sum += x;
        let mean = ((Self::PRIOR_MEAN + self.sum) / (t + 1.0)).min(1.0);
        self.squares += (x - mean) * (x - mean);
        self.sigma2_prev = (Self::PRIOR_VARIANCE + self.squares) / (t + 1.0);
    }
}

/// Bets sized for growth at one alternative mean `a` of the observations
/// (the design effect): `λ_t = |a − m| / M̂_{t−1}`, where `M̂` is a
/// regularised running mean of `(x − m)²` (a tenth of a pseudo-observation
/// at the prior).
///
/// Why this size: the capital's growth per observation,
/// `E log(1 + λ(x − m))`, is `λ E[x − m] − λ² E[(x − m)²] / 2` to second
/// order, largest at `λ = E[x − m] / E[(x − m)²]`; `E[x − m]` is the
/// alternative's `a − m`, and `E[(x − m)²]` is estimated from the data.
/// That estimate is the alternative's own when the data come from it —
/// exactly when this capital's growth matters. On pass/fail differences
/// (`x ∈ {0, 1}`, `m = ½`) every `(x − m)²` is ¼, so with the prior ¼ the
/// bet is the constant `4(a − ½)`, and `1 + λ(x − ½)` is `2a` or `2(1 − a)`:
/// Wald's likelihood ratio of θ₁ = `a` against θ₀ = ½, step by step; a tie
/// (`x = ½`, a concordant pair) leaves the capital as it was and raises the
/// next bets to the three-point distribution's optimum `(a − m)/E[(x − m)²]`.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Tuned {
    /// `|a − m|`, the alternative's edge.
    edge: f64,
    t: u64,
    squares: f64,
    /// `max(m, 1 − m)²`, the largest `(x − m)²` the range allows: the
    /// first bets are the smallest the estimate could call for.
    prior: f64,
}

impl Tuned {
    fn new(m: f64, a: f64) -> Self {
        Tuned {
            edge: (a - m).abs(),
            t: 0,
            squares: 0.0,
            prior: m.max(1.0 - m).powi(2),
        }
    }

    /// The bet for the next observation (from the ones before it only).
    fn next_bet(&self) -> f64 {
        // The prior's weight keeps the first bet finite and conservative;
        // a tenth of an observation lets the data's own spread size the
        // bets within a few observations (a whole one cost rubric scores
        // 8 % more tasks at the design effect, 20 % at twice it, where
        // decisions come after 20 to 60 tasks: `examples/price.rs`).
        const PRIOR_WEIGHT: f64 = 0.1;
        self.edge * (self.t as f64 + PRIOR_WEIGHT) / (PRIOR_WEIGHT * self.prior + self.squares)
    }

    fn push(&mut self, deviation: f64) {
        self.t += 1;
        self.squares += deviation * deviation;
    }
}

/// How a capital sizes its bets.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Bets {
    /// PrPl-EB (confseq's default; every law).
    PlugIn(PlugIn),
    /// Tuned to an alternative mean ([`crate::Law::Tuned`]).
    Tuned(Tuned),
}

impl Bets {
    fn next_bet(&self) -> f64 {
        match self {
            Bets::PlugIn(b) => b.next_bet(),
            Bets::Tuned(b) => b.next_bet(),
        }
    }

    fn push(&mut self, x: f64, m: f64) {
        match self {
            Bets::PlugIn(b) => b.push(x),
            Bets::Tuned(b) => b.push(x - m),
        }
    }
}

/// The weight of the tuned capital in each capital of
/// [`BettingTest::tuned`] (the rest is PrPl-EB's). It costs
/// `ln(1/TUNED_WEIGHT)` ≈ 0.05 nats of a bound of `ln(1/α)` ≈ 3.0 at the
/// design effect (about 2 % more tasks), and keeps a capital whose bets
/// keep growing with the evidence, for effects far beyond the design.
const TUNED_WEIGHT: f64 = 0.95;

/// The truncation of tuned bets, as a fraction of the largest bet that
/// keeps the capital nonnegative (`c/m` betting above `m`, `c/(1 − m)`
/// below): one observation at the far end of the range keeps at least
/// `1 − c` of the capital. PrPl-EB's is ½ (confseq's `trunc_scale`); tuned
/// bets on scores of small spread ask for more, and a capped bet grows the
/// capital more slowly (at half the asked bet, ¾ of the growth).
const TUNED_TRUNCATION: f64 = 0.8;

/// One capital process for observations in `[0, 1]` at a hypothesised
/// mean `m`, betting that the mean is above `m` ([`BettingCapital::above`])
/// or below it ([`BettingCapital::below`]), with PrPl-EB bets at a level —
/// `confseq.betting.betting_mart` with `theta` 1 or 0 and its defaults —
/// or with bets tuned to one alternative mean ([`BettingCapital::toward`]).
/// Its log is kept.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BettingCapital {
    m: f64,
    side: f64,
    cap: f64,
    bets: Bets,
    log_k: f64,
}

impl BettingCapital {
    /// Betting that the mean exceeds `m` (a supermartingale whenever it is
    /// at most `m`), bets sized for level `level`.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] for `m` or `level` outside (0, 1).
    pub fn above(m: f64, level: f64) -> Result<Self> {
        Self::checked(m, 1.0, level)
    }

    /// Betting that the mean is below `m` (a supermartingale whenever it is
    /// at least `m`).
    ///
    /// # Errors
    /// As [`BettingCapital::above`].
    pub fn below(m: f64, level: f64) -> Result<Self> {
        Self::checked(m, -1.0, level)
    }

    fn checked(m: f64, side: f64, level: f64) -> Result<Self> {
        for (name, v) in [("m", m), ("level", level)] {
            if !(v > 0.0 && v < 1.0) {
                return Err(Error::InvalidParameter {
                    name,
                    reason: format!("{v} must be in (0, 1)"),
                });
            }
        }
        Ok(Self::new(m, side, level))
    }

    fn new(m: f64, side: f64, level: f64) -> Self {
        let cap = if side > 0.0 { 0.5 / m } else { 0.5 / (1.0 - m) };
        BettingCapital {
            m,
            side,
            cap,
            bets: Bets::PlugIn(PlugIn::new(level)),
            log_k: 0.0,
        }
    }

    /// Betting that the mean is `alternative` rather than `m` (above `m`
    /// when `alternative > m`, below it otherwise: a supermartingale
    /// whenever the mean is on `m`'s side), with bets sized for the
    /// capital's growth when the mean is `alternative` (see the module
    /// docs), truncated at 0.8 of the largest bet that keeps the capital
    /// nonnegative (`TUNED_TRUNCATION`).
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] for `m` or `alternative` outside (0, 1),
    /// or equal.
    pub fn toward(m: f64, alternative: f64) -> Result<Self> {
        for (name, v) in [("m", m), ("alternative", alternative)] {
            if !(v > 0.0 && v < 1.0) {
                return Err(Error::InvalidParameter {
                    name,
                    reason: format!("{v} must be in (0, 1)"),
                });
            }
        }
        // Equal means bet nothing: a capital stuck at 1 that tests nothing.
        if (alternative - m).abs() < f64::EPSILON {
            return Err(Error::InvalidParameter {
                name: "alternative",
                reason: format!("{alternative} must differ from m = {m}: nothing to bet on"),
            });
        }
        Ok(Self::tuned(m, alternative))
    }

    fn tuned(m: f64, alternative: f64) -> Self {
        let side = if alternative > m { 1.0 } else { -1.0 };
        let cap = TUNED_TRUNCATION * if side > 0.0 { 1.0 / m } else { 1.0 / (1.0 - m) };
        BettingCapital {
            m,
            side,
            cap,
            bets: Bets::Tuned(Tuned::new(m, alternative)),
            log_k: 0.0,
        }
    }

    /// Adds one observation.
    ///
    /// # Errors
    /// [`Error::InvalidObservation`] for one outside `[0, 1]` (the capital
    /// is unchanged).
    pub fn observe(&mut self, x: f64) -> Result<()> {
        if !(0.0..=1.0).contains(&x) {
            return Err(Error::InvalidObservation {
                reason: format!("{x} is outside [0, 1]"),
            });
        }
        self.push(x);
        Ok(())
    }

    /// ln of the capital.
    pub fn log_capital(&self) -> f64 {
        self.log_k
    }

    fn push(&mut self, x: f64) {
        let lambda = self.bets.next_bet().min(self.cap);
        // 1 + λ(x − m) ≥ 1 − c > 0 with the truncation c (½ for PrPl-EB,
        // TUNED_TRUNCATION tuned): never 0.
        self.log_k += (1.0 + self.side * lambda * (x - self.m)).ln();
        self.bets.push(x, self.m);
    }
}

/// One side's capital in a [`BettingTest`].
#[derive(Debug, Clone, Copy, PartialEq)]
enum Capital {
    /// PrPl-EB alone (laws 1 to 3).
    PlugIn(BettingCapital),
    /// `TUNED_WEIGHT` of a capital tuned to the design effect, the rest
    /// PrPl-EB's ([`crate::Law::Tuned`]).
    Mixed {
        tuned: BettingCapital,
        plug_in: BettingCapital,
    },
}

impl Capital {
    /// The capital betting on `side` of `m` at `level`: PrPl-EB alone, or
    /// (`toward` an alternative mean) the fourth law's mixture with bets
    /// tuned toward it.
    fn new(m: f64, side: f64, level: f64, toward: Option<f64>) -> Capital {
        let plug_in = BettingCapital::new(m, side, level);
        match toward {
            Some(alternative) => Capital::Mixed {
                tuned: BettingCapital::tuned(m, alternative),
                plug_in,
            },
            None => Capital::PlugIn(plug_in),
        }
    }

    fn push(&mut self, x: f64) {
        match self {
            Capital::PlugIn(k) => k.push(x),
            Capital::Mixed { tuned, plug_in } => {
                tuned.push(x);
                plug_in.push(x);
            }
        }
    }

    /// ln of the capital: for the mixture,
    /// `ln(w e^{ln K_tuned} + (1 − w) e^{ln K_plug_in})`, summed from the
    /// larger term so that neither exponential overflows.
    fn log_k(&self) -> f64 {
        match self {
            Capital::PlugIn(k) => k.log_k,
            Capital::Mixed { tuned, plug_in } => {
                let (a, b) = (
                    TUNED_WEIGHT.ln() + tuned.log_k,
                    (1.0 - TUNED_WEIGHT).ln() + plug_in.log_k,
                );
                let top = a.max(b);
                top + ((a - top).exp() + (b - top).exp()).ln()
            }
        }
    }
}

/// A sequential test of the mean of bounded paired differences
/// `d ∈ [−width, width]` (a candidate's score minus the baseline's on one
/// task, both in a range of that width), valid for any distribution and any
/// stopping rule:
///
/// * **promote** when the capital betting that the mean exceeds 0 reaches
///   `1/α` (so P(promote) ≤ α whenever the mean difference is ≤ 0);
/// * **reject** when the capital betting that the mean is below `gap`
///   reaches `1/β` (so P(reject) ≤ β whenever it is ≥ `gap`);
/// * truncated at `max_n` observations.
///
/// Both capitals use PrPl-EB bets (the module docs of `betting`). When both reach
/// their bound at one observation (a true effect between 0 and the gap),
/// the test rejects: the gate fails closed.
#[derive(Debug, Clone, PartialEq)]
pub struct BettingTest {
    alpha: f64,
    beta: f64,
    gap: f64,
    width: f64,
    promote: Capital,
    reject: Capital,
    n: u64,
    max_n: Option<u64>,
    decision: TestState,
}

impl BettingTest {
    /// A test at false-promote rate `alpha` and false-reject rate `beta`
    /// (at a mean difference of `gap`), for differences in
    /// `[−width, width]`.
    ///
    /// # Examples
    ///
    /// ```
    /// use ratchet_gate::{BettingTest, TestState, SequentialTest};
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// // Differences in [−1, 1]; H1 is a mean difference of at least 0.2.
    /// let mut test = BettingTest::new(0.05, 0.1, 0.2, 1.0)?.with_truncation(10_000)?;
    /// let mut decision = TestState::Continue;
    /// for i in 0..10_000 {
    ///     decision = test.update(if i % 2 == 0 { 0.5 } else { -0.5 })?; // no improvement
    ///     if decision.is_final() { break; }
    /// }
    /// assert_eq!(decision, TestState::Reject); // shown below the gap
    /// assert!(BettingTest::new(0.05, 0.1, 1.5, 1.0).is_err()); // a gap the range cannot hold
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] for α, β outside (0, 1), a width that is
    /// not positive, or a gap outside (0, width).
    pub fn new(alpha: f64, beta: f64, gap: f64, width: f64) -> Result<Self> {
        Self::checked(alpha, beta, gap, width, false)
    }

    /// The test of [`crate::Law::Tuned`]: as [`BettingTest::new`], with
    /// each capital a fixed mixture — 19/20 (`TUNED_WEIGHT`) of a capital whose
    /// bets are sized for growth at the other hypothesis (the promote
    /// capital's at a mean difference of `gap`, the reject capital's at 0;
    /// [`BettingCapital::toward`]) and the rest PrPl-EB's. Valid for any
    /// distribution of the differences in their range and any stopping
    /// rule, as [`BettingTest::new`]; on pass/fail differences (every pair
    /// discordant) its promote capital is 19/20 of Wald's
    /// likelihood ratio of θ = ½ against θ₁ = (1 + gap/width)/2, plus the
    /// plug-in's share.
    ///
    /// # Examples
    ///
    /// ```
    /// use ratchet_gate::{BettingTest, TestState, SequentialTest};
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// // Pass/fail differences at the design effect: 6 wins in 10 discordant pairs.
    /// let wins = |i: u64| if i % 10 < 6 { 1.0 } else { -1.0 };
    /// let mut tuned = BettingTest::tuned(0.05, 0.1, 0.2, 1.0)?;
    /// let mut plug_in = BettingTest::new(0.05, 0.1, 0.2, 1.0)?;
    /// for test in [&mut tuned, &mut plug_in] {
    ///     let mut i = 0;
    ///     while !test.update(wins(i))?.is_final() { i += 1; }
    ///     assert_eq!(test.decision(), TestState::Promote);
    /// }
    /// // Wald's LLR grows 6 ln 1.2 + 4 ln 0.8 ≈ 0.20 a block of ten and
    /// // peaks 6 ln 1.2 ≈ 1.09 above that after each block's wins: it
    /// // crosses ln 18 ≈ 2.89 at the 96th pair. The tuned capital is 0.95
    /// // of that same ratio (plus the plug-in's share) against ln 20: it
    /// // needs a peak of ln(20/0.95) ≈ 3.05, one block later.
    /// assert_eq!(tuned.n(), 106);
    /// // The earlier laws' bets need 135 here, and twice Wald's pairs on
    /// // random pass/fail differences (`benches/README.md`, issue 40).
    /// assert_eq!(plug_in.n(), 135);
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// As [`BettingTest::new`].
    pub fn tuned(alpha: f64, beta: f64, gap: f64, width: f64) -> Result<Self> {
        Self::checked(alpha, beta, gap, width, true)
    }

    fn checked(alpha: f64, beta: f64, gap: f64, width: f64, tuned: bool) -> Result<Self> {
        for (name, v) in [("alpha", alpha), ("beta", beta)] {
            if !(v > 0.0 && v < 1.0) {
                return Err(Error::InvalidParameter {
                    name,
                    reason: format!("{v} must be in (0, 1)"),
                });
            }
        }
        if !(width.is_finite() && width > 0.0) {
            return Err(Error::InvalidParameter {
                name: "range",
                reason: format!("the score range's width {width} must be positive"),
            });
        }
        if !(gap > 0.0 && gap < width) {
            return Err(Error::InvalidParameter {
                name: "gap",
                reason: format!(
                    "{gap} must be in (0, {width}): a mean difference the range allows"
                ),
            });
        }
        let m0 = 0.5;
        let m1 = (gap / width + 1.0) / 2.0;
        // Each tuned capital bets toward the other hypothesis, written as
        // its own mean ± the shift, as `betting_lower_bound` and
        // `betting_upper_bound` move it, so that their probe at the test's
        // null is this capital bit for bit.
        let shift = half_gap(gap, width);
        let (promote, reject) = (
            Capital::new(m0, 1.0, alpha, tuned.then_some(m0 + shift)),
            Capital::new(m1, -1.0, beta, tuned.then_some(m1 - shift)),
        );
        Ok(BettingTest {
            alpha,
            beta,
            gap,
            width,
            promote,
            reject,
            n: 0,
            max_n: None,
            decision: TestState::Continue,
        })
    }

    /// How far its tuned bets reach, on the `[0, 1]` scale its capitals
    /// bet on (the distance between its null and its alternative), when it
    /// is [`BettingTest::tuned`]; `None` for PrPl-EB alone.
    pub fn tuned_shift(&self) -> Option<f64> {
        match self.promote {
            Capital::Mixed { .. } => Some(half_gap(self.gap, self.width)),
            Capital::PlugIn(_) => None,
        }
    }

    /// A difference `d ∈ [−width, width]` on the `[0, 1]` scale the
    /// capitals bet on (the gap maps to the reject capital's null): the
    /// one mapping, so that a bound probing the test's hypotheses meets
    /// them bit for bit.
    pub fn on_unit_scale(&self, d: f64) -> f64 {
        (d / self.width + 1.0) / 2.0
    }

    /// Stops as [`TestState::Truncated`] after `max_n` observations.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] for `max_n` = 0.
    pub fn with_truncation(mut self, max_n: u64) -> Result<Self> {
        if max_n == 0 {
            return Err(Error::InvalidParameter {
                name: "max_n",
                reason: "must be at least 1".into(),
            });
        }
        self.max_n = Some(max_n);
        Ok(self)
    }

    /// ln of the capital betting on an improvement (promotes at ln(1/α)).
    pub fn log_capital_promote(&self) -> f64 {
        self.promote.log_k()
    }

    /// ln of the capital betting on less than the gap (rejects at ln(1/β)).
    pub fn log_capital_reject(&self) -> f64 {
        self.reject.log_k()
    }

    /// ln(1/α), the promote bound of [`BettingTest::log_capital_promote`].
    pub fn promote_bound(&self) -> f64 {
        (1.0 / self.alpha).ln()
    }

    /// ln(1/β), the reject bound of [`BettingTest::log_capital_reject`].
    pub fn reject_bound(&self) -> f64 {
        (1.0 / self.beta).ln()
    }

    /// The gap (score units).
    pub fn gap(&self) -> f64 {
        self.gap
    }

    /// The width of the difference range (`[−width, width]`).
    pub fn width(&self) -> f64 {
        self.width
    }
}

impl SequentialTest for BettingTest {
    type Observation = f64;

    fn update(&mut self, d: f64) -> Result<TestState> {
        if self.decision.is_final() {
            return Ok(self.decision);
        }
        if !(d.is_finite() && d.abs() <= self.width) {
            return Err(Error::InvalidObservation {
                reason: format!(
                    "difference {d} is outside [−{w}, {w}], the range the betting test was built for",
                    w = self.width
                ),
            });
        }
        let x = self.on_unit_scale(d);
        self.promote.push(x);
        self.reject.push(x);
        self.n += 1;
        let d = if self.reject.log_k() >= self.reject_bound() {
            TestState::Reject
        } else if self.promote.log_k() >= self.promote_bound() {
            TestState::Promote
        } else {
            TestState::Continue
        };
        self.decision = truncate(d, self.n, self.max_n);
        Ok(self.decision)
    }

    /// For reports: the promote capital's log against the reject capital's,
    /// `ln K⁺ − ln K⁻` (not a likelihood ratio; the decisions are taken on
    /// each capital against its own bound).
    fn llr(&self) -> f64 {
        self.promote.log_k() - self.reject.log_k()
    }

    fn n(&self) -> u64 {
        self.n
    }

    fn decision(&self) -> TestState {
        self.decision
    }
}

/// An always-valid interval for a mean: with probability at least `1 − α`
/// it covers the mean at *every* sample size at once, so the interval read
/// at a stop chosen by any rule (a sequential test's) covers at its level.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct ValidInterval {
    /// Lower end.
    pub low: f64,
    /// Upper end.
    pub high: f64,
}

/// The hedged betting confidence sequence at level `1 − alpha` for the mean
/// of `xs ∈ [0, 1]`, read after the last observation: every `m` whose
/// hedged capital `max(½ K⁺_t(m), ½ K⁻_t(m))` stayed below `1/α` at every
/// `t` (the running intersection), found by bisection on each side of the
/// sample mean (the set is an interval: Waudby-Smith & Ramdas, 2024, §4).
/// The bets are PrPl-EB at level `α/2` each, truncated at `½/m` and
/// `½/(1 − m)` (confseq's `betting_cs` defaults).
///
/// # Errors
/// [`Error::InvalidObservation`] for an observation outside `[0, 1]`;
/// [`Error::InvalidParameter`] for α outside (0, 1).
pub fn betting_interval(xs: &[f64], alpha: f64) -> Result<ValidInterval> {
    if !(alpha > 0.0 && alpha < 1.0) {
        return Err(Error::InvalidParameter {
            name: "alpha",
            reason: format!("{alpha} must be in (0, 1)"),
        });
    }
    if let Some(x) = xs.iter().find(|x| !(0.0..=1.0).contains(*x)) {
        return Err(Error::InvalidObservation {
            reason: format!("{x} is outside [0, 1]"),
        });
    }
    if xs.is_empty() {
        return Ok(ValidInterval {
            low: 0.0,
            high: 1.0,
        });
    }
    let bound = (1.0 / alpha).ln();
    // Whether m was ever excluded up to the end.
    let excluded = |m: f64| -> bool {
        if m <= 0.0 || m >= 1.0 {
            return false;
        }
        let mut up = BettingCapital::new(m, 1.0, alpha / 2.0);
        let mut down = BettingCapital::new(m, -1.0, alpha / 2.0);
        let half = 0.5f64.ln();
        xs.iter().any(|&x| {
            up.push(x);
            down.push(x);
            (half + up.log_k).max(half + down.log_k) >= bound
        })
    };
    let mean = xs.iter().sum::<f64>() / xs.len() as f64;
    // Bisection between a point inside (the mean, never excluded once the
    // set is an interval containing it, else its nearest inside point) and
    // an end of [0, 1].
    let edge = |inside: f64, end: f64| -> f64 {
        // The ends themselves are never excluded (a mean of 0 or 1 bets
        // nothing); just inside them is where the search starts.
        let outside = if end == 0.0 { 1e-9 } else { 1.0 - 1e-9 };
        if !excluded(outside) {
            return end;
        }
        let (mut i, mut o) = (inside, outside);
        for _ in 0..40 {
            let mid = 0.5 * (i + o);
            if excluded(mid) {
                o = mid;
            } else {
                i = mid;
            }
            if (o - i).abs() < 1e-7 {
                break;
            }
        }
        i
    };
    Ok(ValidInterval {
        low: edge(mean, 0.0),
        high: edge(mean, 1.0),
    })
}

/// The one-sided always-valid lower bound at level `1 − level` on the mean
/// of `xs ∈ [0, 1]`, read after the last observation: the largest `m`
/// whose capital betting that the mean exceeds it, `K⁺_t(m)`, reached
/// `1/level` at some `t` (0 when no `m` did). The capital is the promote
/// capital of [`BettingTest`] moved to its null `m`: PrPl-EB bets at
/// `level` truncated at `½/m` (laws 1–3, `toward` `None`), or since
/// [`crate::Law::Tuned`] (`toward` `Some(shift)`) the same fixed mixture
/// with bets tuned toward `m + shift`, as the test's are toward its
/// alternative. `at` is probed first, so that `L ≥ at` exactly when the
/// capital at `at` crossed — for the test's null ½, exactly when it
/// promoted; the edge is then found by bisection (each factor
/// `1 + λ(x − m)` falls as `m` rises for a fixed bet, and the coverage of
/// the result is measured in `tests/it/bounds.rs`). The bound returned is
/// on the excluded side of the bisection (conservative).
///
/// # Errors
/// As [`betting_interval`].
pub fn betting_lower_bound(xs: &[f64], level: f64, at: f64, toward: Option<f64>) -> Result<f64> {
    check_unit(xs, level)?;
    let excluded = |m: f64| crossed(xs, m, 1.0, level, toward);
    // 1 is never excluded: every factor is at most 1 there.
    Ok(crate::bound::frontier(excluded, 1e-9, 1.0, at).unwrap_or(0.0))
}

/// The one-sided always-valid upper bound at level `1 − level` on the mean
/// of `xs ∈ [0, 1]`: the smallest `m` whose capital betting that the mean
/// is below it, `K⁻_t(m)` (the reject capital of [`BettingTest`] at its
/// gap moved to `m`; tuned toward `m − shift` since the fourth law),
/// reached `1/level` at some `t` (1 when none did); `at` is probed first,
/// as in [`betting_lower_bound`].
///
/// # Errors
/// As [`betting_interval`].
pub fn betting_upper_bound(xs: &[f64], level: f64, at: f64, toward: Option<f64>) -> Result<f64> {
    check_unit(xs, level)?;
    let excluded = |m: f64| crossed(xs, m, -1.0, level, toward);
    // 0 is never excluded: every factor is at most 1 there.
    Ok(crate::bound::frontier(excluded, 1.0 - 1e-9, 0.0, at).unwrap_or(1.0))
}

/// The distance between a [`BettingTest`]'s null and its alternative on
/// the `[0, 1]` scale its capitals bet on.
fn half_gap(gap: f64, width: f64) -> f64 {
    gap / width / 2.0
}

/// Whether the capital betting on `side` of `m` (PrPl-EB at `level`, or
/// the fourth law's mixture tuned `shift` away) reached `1/level` at some
/// observation of `xs`.
fn crossed(xs: &[f64], m: f64, side: f64, level: f64, shift: Option<f64>) -> bool {
    let toward = shift.map(|shift| (m + side * shift).clamp(1e-9, 1.0 - 1e-9));
    let mut k = Capital::new(m, side, level, toward);
    let bound = (1.0 / level).ln();
    xs.iter().any(|&x| {
        k.push(x);
        k.log_k() >= bound
    })
}

fn check_unit(xs: &[f64], level: f64) -> Result<()> {
    if !(level > 0.0 && level < 1.0) {
        return Err(Error::InvalidParameter {
            name: "level",
            reason: format!("{level} must be in (0, 1)"),
        });
    }
    match xs.iter().find(|x| !(0.0..=1.0).contains(*x)) {
        Some(x) => Err(Error::InvalidObservation {
            reason: format!("{x} is outside [0, 1]"),
        }),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parameters_are_named_when_wrong() {
        for (a, b, g, w, name) in [
            (0.0, 0.1, 0.1, 1.0, "alpha"),
            (0.05, 1.0, 0.1, 1.0, "beta"),
            (0.05, 0.1, 0.0, 1.0, "gap"),
            (0.05, 0.1, 1.5, 1.0, "gap"),
            (0.05, 0.1, 0.1, 0.0, "range"),
        ] {
            match BettingTest::new(a, b, g, w) {
                Err(Error::InvalidParameter { name: n, .. }) => assert_eq!(n, name),
                other => panic!("{name}: {other:?}"),
            }
        }
    }

    #[test]
    fn an_observation_outside_the_range_is_refused_and_changes_nothing() {
        let mut t = BettingTest::new(0.05, 0.1, 0.2, 1.0).expect("test");
        t.update(0.5).expect("in range");
        let before = t.clone();
        assert!(t.update(1.5).is_err());
        assert!(t.update(f64::NAN).is_err());
        assert_eq!(t, before);
    }

    #[test]
    fn the_interval_holds_the_mean_and_narrows() {
        let xs: Vec<f64> = (0..2000).map(|i| f64::from(i % 4) / 3.0).collect();
        let short = betting_interval(&xs[..100], 0.05).expect("cs");
        let long = betting_interval(&xs, 0.05).expect("cs");
        for cs in [short, long] {
            assert!(cs.low < 0.5 && 0.5 < cs.high, "{cs:?}");
        }
        assert!(long.high - long.low < short.high - short.low);
    }

    #[test]
    fn the_lower_bound_passes_the_null_exactly_when_the_test_promotes() {
        // Differences with mean 0.4 in [−1, 1]: the test promotes, and the
        // bound read at its stop is above ½ (a positive difference); one
        // observation before the stop it was not.
        for make in [BettingTest::new, BettingTest::tuned] {
            let mut t = make(0.05, 0.1, 0.2, 1.0).expect("test");
            let mut xs = Vec::new();
            for i in 0..2000 {
                let d = if i % 10 < 7 { 1.0 } else { -1.0 };
                xs.push((d + 1.0) / 2.0);
                if t.update(d).expect("in range").is_final() {
                    break;
                }
            }
            assert_eq!(t.decision(), TestState::Promote);
            let shift = t.tuned_shift();
            let at_stop = betting_lower_bound(&xs, 0.05, 0.5, shift).expect("bound");
            let before = betting_lower_bound(&xs[..xs.len() - 1], 0.05, 0.5, shift).expect("bound");
            assert!(at_stop > 0.5 && at_stop < 0.7, "{at_stop}");
            assert!(before < 0.5, "{before}");
        }
    }

    #[test]
    fn the_upper_bound_passes_the_gap_exactly_when_the_test_rejects() {
        let (gap, width) = (0.2, 1.0);
        let m1 = (gap / width + 1.0) / 2.0;
        for make in [BettingTest::new, BettingTest::tuned] {
            let mut t = make(0.05, 0.1, gap, width).expect("test");
            let mut xs = Vec::new();
            for i in 0..5000 {
                let d = if i % 2 == 0 { 0.5 } else { -0.5 };
                xs.push((d / width + 1.0) / 2.0);
                if t.update(d).expect("in range").is_final() {
                    break;
                }
            }
            assert_eq!(t.decision(), TestState::Reject);
            let shift = t.tuned_shift();
            let at_stop = betting_upper_bound(&xs, 0.1, m1, shift).expect("bound");
            let before = betting_upper_bound(&xs[..xs.len() - 1], 0.1, m1, shift).expect("bound");
            assert!(at_stop < m1 && at_stop > 0.5, "{at_stop}");
            assert!(before > m1, "{before}");
        }
    }
}
