//! Numbers as a person reads them: the one formatter of every measured
//! figure the CLI, the report and the Python bindings show (an effect, its
//! interval, a mean, a guardrail's excess), and the effect of a verdict
//! turned back from the gate's judged scale into "candidate − baseline" in
//! the scorer's own unit.
//!
//! Presentation only. The gate judges a lower-is-better scorer on negated
//! scores, so that a positive recorded effect always means "better"; the
//! recorded verdict keeps that (it must recompute byte for byte under its
//! law). What is shown here is derived from it: [`Scale::effect`] flips
//! the sign back for a lower-is-better scorer and names the direction.
//!
//! ```
//! use ratchet_gate::shown::{Unit, number, signed};
//!
//! assert_eq!(signed(-4.07e-5, Unit::of_scorer("hyperfine_s")), "-40.7 µs");
//! assert_eq!(number(1234.6, Unit::of_scorer("criterion_ns")), "1.235 µs");
//! assert_eq!(signed(0.05, Unit::Percent), "+5 %");
//! assert_eq!(number(4.07e-5, Unit::Plain), "4.07e-5");
//! assert_eq!(number(0.1234567, Unit::Plain), "0.1235");
//! ```

use ratchet_records::Direction;
use ratchet_trace::Verified;
use serde::Serialize;

use crate::decide::{
    BoundSide, DecisionBound, SequentialDetails, Stage, StageDetails, TestFigures, Verdict,
};
use crate::{ClassPolicy, Law, TestKind};

/// Significant digits of every figure shown.
pub const DIGITS: usize = 4;

/// The unit a figure is shown in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Unit {
    /// No unit known: plain significant digits.
    #[serde(rename = "")]
    Plain,
    /// A fraction shown as a percentage (a relative margin: 0.05 is 5 %).
    #[serde(rename = "%")]
    Percent,
    /// Seconds, shown scaled to ns, µs, ms or s.
    #[serde(rename = "s")]
    Seconds,
    /// Milliseconds, shown scaled.
    #[serde(rename = "ms")]
    Milliseconds,
    /// Microseconds, shown scaled.
    #[serde(rename = "µs")]
    Microseconds,
    /// Nanoseconds, shown scaled.
    #[serde(rename = "ns")]
    Nanoseconds,
}

impl Unit {
    /// The unit of a scorer's values, from its name: the timing scorers
    /// of the benchmark formats (`hyperfine_s`, `pytest_benchmark_s`,
    /// `criterion_ns`, `gbench_real_ns`, `go_ns_per_op`) and any scorer
    /// named `*_s`, `*_ms`, `*_us`, `*_ns` or `*_ns_per_op`; else
    /// [`Unit::Plain`].
    pub fn of_scorer(scorer: &str) -> Unit {
        let s = scorer.to_ascii_lowercase();
        if s.ends_with("_ns") || s.ends_with("_ns_per_op") || s == "ns" {
            Unit::Nanoseconds
        } else if s.ends_with("_us") || s.ends_with("_µs") {
            Unit::Microseconds
        } else if s.ends_with("_ms") {
            Unit::Milliseconds
        } else if s.ends_with("_s") || s.ends_with("_seconds") {
            Unit::Seconds
        } else {
            Unit::Plain
        }
    }

    /// Nanoseconds in one of this unit (`None`: not a time).
    fn nanoseconds(self) -> Option<f64> {
        match self {
            Unit::Seconds => Some(1e9),
            Unit::Milliseconds => Some(1e6),
            Unit::Microseconds => Some(1e3),
            Unit::Nanoseconds => Some(1.0),
            Unit::Plain | Unit::Percent => None,
        }
    }

    /// The unit's symbol (`""` for plain numbers).
    pub fn as_str(self) -> &'static str {
        match self {
            Unit::Plain => "",
            Unit::Percent => "%",
            Unit::Seconds => "s",
            Unit::Milliseconds => "ms",
            Unit::Microseconds => "µs",
            Unit::Nanoseconds => "ns",
        }
    }
}

/// `x` with [`DIGITS`] significant digits, trailing zeros dropped; an
/// exponent outside [1e-3, 1e6) (`4.07e-5`, not `0.0000`); `-` for a
/// value that is not finite.
pub fn sig(x: f64) -> String {
    if !x.is_finite() {
        return "-".into();
    }
    let a = x.abs();
    if a == 0.0 {
        return "0".into();
    }
    if (1e-3..1e6).contains(&a) {
        let magnitude = a.log10().floor() as i32;
        let decimals = (DIGITS as i32 - 1 - magnitude).max(0) as usize;
        trim(&format!("{x:.decimals$}"))
    } else {
        let s = format!("{x:.prec$e}", prec = DIGITS - 1);
        match s.split_once('e') {
            Some((mantissa, exp)) => format!("{}e{exp}", trim(mantissa)),
            None => s,
        }
    }
}

/// A decimal without the zeros after the point that say nothing.
fn trim(s: &str) -> String {
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s.to_string()
    }
}

/// `x` in `unit` with [`DIGITS`] significant digits: a time scaled to
/// ns, µs, ms or s (`40.7 µs`), a fraction as a percentage (`5 %`), else
/// plain ([`sig`]). No sign for positive values.
pub fn number(x: f64, unit: Unit) -> String {
    if !x.is_finite() {
        return "-".into();
    }
    if let Some(per) = unit.nanoseconds() {
        let ns = x * per;
        let a = ns.abs();
        let (v, sym) = if a == 0.0 {
            (0.0, unit.as_str())
        } else if a < 1e3 {
            (ns, "ns")
        } else if a < 1e6 {
            (ns / 1e3, "µs")
        } else if a < 1e9 {
            (ns / 1e6, "ms")
        } else {
            (ns / 1e9, "s")
        };
        return format!("{} {sym}", sig(v));
    }
    match unit {
        Unit::Percent => format!("{} %", sig(x * 100.0)),
        _ => sig(x),
    }
}

/// [`number`] with its sign always shown (`+40.7 µs`, `-3.2 %`, `0`).
pub fn signed(x: f64, unit: Unit) -> String {
    let n = number(x, unit);
    if x.is_finite() && x > 0.0 {
        format!("+{n}")
    } else {
        n
    }
}

/// How a verdict's figures read: the primary scorer it judged, which way
/// that scorer improves, and its unit.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
pub struct Scale {
    /// The primary scorer (`None`: not known).
    pub scorer: Option<String>,
    /// Which way it improves (`None`: not known; the effect is then shown
    /// on the gate's judged scale, positive = better).
    pub direction: Option<Direction>,
}

impl Scale {
    /// The scale of a scorer read in `direction`.
    pub fn of(scorer: &str, direction: Direction) -> Scale {
        Scale {
            scorer: Some(scorer.to_string()),
            direction: Some(direction),
        }
    }

    /// The unit of the primary scorer's values.
    pub fn unit(&self) -> Unit {
        self.scorer.as_deref().map_or(Unit::Plain, Unit::of_scorer)
    }

    /// How `verdict` reads its primary scorer, as the gate read it: the
    /// class policy (`policy`, else the one pinned in `view` under the
    /// verdict's `policy_hash`) names the scorer, else the scorer the
    /// verdict read that no guardrail or invariant names. Its direction:
    /// recorded by a bernoulli verdict; else declared in the trace (up to
    /// the class's pin under [`Law::Attributed`]); else the policy's; else
    /// the default for the scorer's name. With neither `view` nor a
    /// policy, the direction of a gaussian or betting verdict is unknown
    /// (`None`): its effect is shown on the judged scale, so labelled.
    pub fn of_verdict(
        view: Option<&Verified>,
        verdict: &Verdict,
        policy: Option<&ClassPolicy>,
    ) -> Scale {
        let at = verdict.trace.size;
        let pin = view.and_then(|v| {
            crate::pin::pinned_policy(v, &verdict.class, at)
                .ok()
                .flatten()
        });
        let pinned = pin
            .as_ref()
            .filter(|p| p.hash == verdict.policy_hash)
            .map(|p| &p.policy);
        let policy = policy
            .filter(|p| p.hash() == verdict.policy_hash)
            .or(pinned);
        let scorer = match policy {
            Some(p) if p.test == TestKind::None => None,
            Some(p) => Some(p.scorer.clone()),
            None => primary_scorer(verdict),
        };
        let Some(scorer) = scorer else {
            return Scale::default();
        };
        let recorded_lower = verdict.sequential().is_some_and(|f| {
            matches!(
                f.test,
                TestFigures::Bernoulli {
                    lower_is_better: true,
                    ..
                }
            )
        });
        let declared_until = match (&pin, verdict.law >= Law::Attributed) {
            (Some(p), true) => p.seq,
            _ => at,
        };
        let declared = view.and_then(|v| {
            ratchet_records::declared_direction(v, &scorer, declared_until)
                .ok()
                .flatten()
                .map(|(d, _)| d)
        });
        let direction = if recorded_lower {
            Some(Direction::LowerIsBetter)
        } else if view.is_none() && policy.is_none() {
            // The verdict alone: a gaussian or betting verdict does not
            // record the direction it judged in, and a declaration or a
            // policy may have set it. Shown on the judged scale.
            None
        } else {
            Some(
                declared
                    .or(policy.and_then(|p| p.direction))
                    .unwrap_or_else(|| ratchet_records::direction_of(&scorer)),
            )
        };
        Scale {
            scorer: Some(scorer),
            direction,
        }
    }

    /// The effect of a sequential stage as a person reads it (`None`: the
    /// stage estimated none).
    pub fn effect(&self, fig: &SequentialDetails) -> Option<EffectShown> {
        let e = fig.effect?;
        let (measure, unit, flip, better) = match &fig.test {
            TestFigures::Bernoulli { .. } => (
                "pass-rate difference (candidate − baseline)",
                Unit::Plain,
                false,
                "a higher pass rate is better",
            ),
            TestFigures::Paired { .. } => (
                "score − ½ per game (wins +½, losses −½)",
                Unit::Plain,
                false,
                "above 0: the candidate wins more",
            ),
            TestFigures::Gaussian { .. } | TestFigures::Betting { .. } => match self.direction {
                Some(Direction::LowerIsBetter) => {
                    ("candidate − baseline", self.unit(), true, "lower is better")
                }
                Some(Direction::HigherIsBetter) => (
                    "candidate − baseline",
                    self.unit(),
                    false,
                    "higher is better",
                ),
                None => (
                    "effect on the judged scale (candidate − baseline, negated for a lower-is-better scorer)",
                    self.unit(),
                    false,
                    "positive is better",
                ),
            },
        };
        let s = if flip { -1.0 } else { 1.0 };
        let (value, a, b) = (s * e.estimate, s * e.ci_low, s * e.ci_high);
        let (low, high) = if a <= b { (a, b) } else { (b, a) };
        // The recorded estimate is positive when the candidate is better.
        let reads_as = if e.estimate > 0.0 {
            "an improvement"
        } else if e.estimate < 0.0 {
            "a regression"
        } else {
            "no difference"
        };
        let bound = e.bound.map(|b| BoundShown::of(b, flip, unit));
        let text = match &bound {
            // The decision's own bound leads: the two-sided interval
            // beside a promote often reaches below 0 and, read alone,
            // says "maybe worse" of a candidate the test showed better.
            Some(b) => format!(
                "{}; two-sided 95 % interval [{}, {}]; {measure}: {} ({reads_as}: {better})",
                b.text,
                signed(low, unit),
                signed(high, unit),
                signed(value, unit),
            ),
            None => format!(
                "{measure}: {} [{}, {}] ({reads_as}: {better})",
                signed(value, unit),
                signed(low, unit),
                signed(high, unit),
            ),
        };
        Some(EffectShown {
            measure,
            scorer: self.scorer.clone(),
            unit,
            value,
            low,
            high,
            n: e.n,
            reads_as,
            better,
            bound,
            text,
        })
    }

    /// The effect of `verdict`'s sequential stage, read on this scale.
    pub fn verdict_effect(&self, verdict: &Verdict) -> Option<EffectShown> {
        self.effect(verdict.sequential()?)
    }
}

/// The primary scorer of a verdict read alone: the scorer it read that no
/// guardrail or invariant names.
fn primary_scorer(verdict: &Verdict) -> Option<String> {
    let mut others: Vec<&str> = Vec::new();
    for s in &verdict.stages {
        if let Stage::Guardrail(g) = &s.stage {
            others.push(g);
        }
        if let StageDetails::Invariants(i) = &s.details {
            others.extend(i.invariants.iter().map(|i| i.scorer.as_str()));
        }
    }
    verdict
        .scorer_versions
        .keys()
        .find(|k| !others.contains(&k.as_str()))
        .cloned()
}

/// An effect as a person reads it: `candidate − baseline` in the scorer's
/// unit, with its 95 % interval and whether that is an improvement.
/// Derived from a recorded verdict; never recorded itself.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EffectShown {
    /// What `value` measures (`candidate − baseline`, a pass-rate
    /// difference, a game score).
    pub measure: &'static str,
    /// The primary scorer, when known.
    pub scorer: Option<String>,
    /// The unit of `value`, `low` and `high` (`s`, `ns`, … ; `""`: none).
    pub unit: Unit,
    /// The estimate, in the scorer's own direction (for a lower-is-better
    /// scorer, negative is an improvement).
    pub value: f64,
    /// Lower end of the 95 % interval.
    pub low: f64,
    /// Upper end of the 95 % interval.
    pub high: f64,
    /// Observations.
    pub n: usize,
    /// `an improvement`, `a regression` or `no difference` (by the
    /// estimate; the interval says how sure).
    pub reads_as: &'static str,
    /// Which way is better (`lower is better`, …).
    pub better: &'static str,
    /// The one-sided bound that matches the test's decision (verdicts of
    /// [`Law::Tuned`] on; `None` before, or for a test still open).
    pub bound: Option<BoundShown>,
    /// All of it in words: `candidate − baseline: -40.7 µs [-45.1 µs,
    /// -36.2 µs] (an improvement: lower is better)`; with a bound, that
    /// first: `promoted: improvement ≥ +0.031 (one-sided, α = 0.05, always
    /// valid); two-sided 95 % interval [-0.012, +0.094]; …`.
    pub text: String,
}

/// A [`DecisionBound`] as a person reads it: as an improvement (positive
/// is better, whatever the scorer's direction) and, for a lower-is-better
/// scorer, as candidate − baseline in its unit too.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BoundShown {
    /// `lower` (a promote: the improvement is at least `improvement`) or
    /// `upper` (a reject: at most).
    pub side: BoundSide,
    /// The miss rate it holds at: the test's α (lower) or β (upper).
    pub level: f64,
    /// The bound on the improvement (positive is better).
    pub improvement: f64,
    /// The bound as candidate − baseline in the scorer's own direction
    /// (`−improvement` for a lower-is-better scorer): with `side` flipped
    /// for such a scorer, it bounds [`EffectShown::value`].
    pub value: f64,
    /// What it is set against, as an improvement: 0 (the test's null) for
    /// a promote, the design gap for a reject.
    pub against: f64,
    /// In words: `promoted: improvement ≥ +0.031 (one-sided, α = 0.05,
    /// always valid)`; `rejected: improvement ≤ +0.07, below the gap +0.1
    /// (one-sided, β = 0.1, always valid)`.
    pub text: String,
}

impl BoundShown {
    fn of(b: DecisionBound, flip: bool, unit: Unit) -> BoundShown {
        let value = if flip { -b.value } else { b.value };
        // For a lower-is-better scorer an improvement is a fall: the same
        // bound said as candidate − baseline too, so that no sign is
        // left to guess.
        let as_difference = |rel: &str| {
            if flip {
                format!(", i.e. candidate − baseline {rel} {}", signed(value, unit))
            } else {
                String::new()
            }
        };
        let text = match b.side {
            BoundSide::Lower => format!(
                "promoted: improvement ≥ {}{} (one-sided, α = {}, always valid)",
                signed(b.value, unit),
                as_difference("≤"),
                sig(b.level)
            ),
            BoundSide::Upper => format!(
                "rejected: improvement ≤ {}, below the gap {}{} (one-sided, β = {}, always valid)",
                signed(b.value, unit),
                signed(b.against, unit),
                as_difference("≥"),
                sig(b.level)
            ),
        };
        BoundShown {
            side: b.side,
            level: b.level,
            improvement: b.value,
            value,
            against: b.against,
            text,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn figures_keep_their_significant_digits_at_every_scale() {
        assert_eq!(sig(4.07e-5), "4.07e-5");
        assert_eq!(sig(-0.000_040_7), "-4.07e-5");
        assert_eq!(sig(0.125), "0.125");
        assert_eq!(sig(12.3456), "12.35");
        assert_eq!(sig(2.0), "2");
        assert_eq!(sig(1.5e7), "1.5e7");
        assert_eq!(sig(0.0), "0");
        assert_eq!(sig(f64::NAN), "-");
        let s = Unit::of_scorer("hyperfine_s");
        assert_eq!(s, Unit::Seconds);
        assert_eq!(signed(4.07e-5, s), "+40.7 µs");
        assert_eq!(signed(-4.07e-5, s), "-40.7 µs");
        assert_eq!(number(0.25, s), "250 ms");
        assert_eq!(number(3.5, s), "3.5 s");
        assert_eq!(number(812.0, Unit::of_scorer("go_ns_per_op")), "812 ns");
        assert_eq!(number(2.5e6, Unit::of_scorer("gbench_real_ns")), "2.5 ms");
        assert_eq!(Unit::of_scorer("criterion_ns"), Unit::Nanoseconds);
        assert_eq!(Unit::of_scorer("pytest_benchmark_s"), Unit::Seconds);
        assert_eq!(Unit::of_scorer("accuracy"), Unit::Plain);
        assert_eq!(signed(-0.032, Unit::Percent), "-3.2 %");
    }

    #[test]
    fn a_lower_is_better_effect_reads_as_candidate_minus_baseline() {
        let fig = SequentialDetails {
            test: TestFigures::Gaussian {
                design: "paired differences".into(),
                effect_measure: "mean difference (candidate − baseline)".into(),
                mu0: 0.0,
                mu1: 1e-5,
                variance: Some(1e-12),
            },
            llr: 3.0,
            n: 40,
            lower: -2.0,
            upper: 3.0,
            wald_lower: -2.0,
            wald_upper: 3.0,
            // Judged on negated times: the candidate 40.7 µs faster.
            effect: Some(crate::EffectEstimate {
                n: 40,
                estimate: 4.07e-5,
                ci_low: 3.62e-5,
                ci_high: 4.51e-5,
                interval: None,
                bound: None,
            }),
            max_n: 1000,
            decision: crate::TestState::Promote,
            tasks_available: 40,
            stopped_at_missing_task: None,
        };
        let lower = Scale::of("latency_s", Direction::LowerIsBetter);
        let e = lower.effect(&fig).expect("an effect");
        assert_eq!(
            e.text,
            "candidate − baseline: -40.7 µs [-45.1 µs, -36.2 µs] (an improvement: lower is better)"
        );
        assert!(e.value < 0.0 && e.low < e.high);
        let higher = Scale::of("latency_s", Direction::HigherIsBetter);
        assert_eq!(
            higher.effect(&fig).expect("an effect").text,
            "candidate − baseline: +40.7 µs [+36.2 µs, +45.1 µs] (an improvement: higher is better)"
        );
    }

    fn promoted_with(bound: DecisionBound) -> SequentialDetails {
        SequentialDetails {
            test: TestFigures::Betting {
                design: "paired differences, betting".into(),
                effect_measure: "mean difference (candidate − baseline)".into(),
                range: [0.0, 1.0],
                gap: 0.1,
                log_capital_promote: 3.1,
                log_capital_reject: -1.0,
                promote_bound: 3.0,
                reject_bound: 2.3,
            },
            llr: 4.1,
            n: 400,
            lower: -2.3,
            upper: 3.0,
            wald_lower: -2.3,
            wald_upper: 2.9,
            effect: Some(crate::EffectEstimate {
                n: 400,
                estimate: 0.07,
                ci_low: -0.012,
                ci_high: 0.14,
                interval: Some(crate::EffectInterval::Betting),
                bound: Some(bound),
            }),
            max_n: 10_000,
            decision: crate::TestState::Promote,
            tasks_available: 400,
            stopped_at_missing_task: None,
        }
    }

    #[test]
    fn a_promote_reads_as_its_one_sided_bound_before_the_two_sided_interval() {
        let fig = promoted_with(DecisionBound {
            side: BoundSide::Lower,
            level: 0.05,
            value: 0.031,
            against: 0.0,
        });
        let e = Scale::of("accuracy", Direction::HigherIsBetter)
            .effect(&fig)
            .expect("an effect");
        assert_eq!(
            e.text,
            "promoted: improvement ≥ +0.031 (one-sided, α = 0.05, always valid); two-sided 95 % interval [-0.012, +0.14]; candidate − baseline: +0.07 (an improvement: higher is better)"
        );
        // A lower-is-better scorer: the same bound said both ways.
        let e = Scale::of("latency_s", Direction::LowerIsBetter)
            .effect(&fig)
            .expect("an effect");
        assert!(
            e.text.starts_with(
                "promoted: improvement ≥ +31 ms, i.e. candidate − baseline ≤ -31 ms (one-sided, α = 0.05, always valid)"
            ),
            "{}",
            e.text
        );
        assert_eq!(e.bound.map(|b| b.value), Some(-0.031));
    }

    #[test]
    fn a_reject_reads_as_its_upper_bound_against_the_gap() {
        let mut fig = promoted_with(DecisionBound {
            side: BoundSide::Upper,
            level: 0.1,
            value: 0.07,
            against: 0.1,
        });
        fig.decision = crate::TestState::Reject;
        let e = Scale::of("accuracy", Direction::HigherIsBetter)
            .effect(&fig)
            .expect("an effect");
        assert!(
            e.text.starts_with(
                "rejected: improvement ≤ +0.07, below the gap +0.1 (one-sided, β = 0.1, always valid); two-sided 95 % interval"
            ),
            "{}",
            e.text
        );
    }
}
