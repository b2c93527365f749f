//! Non-inferiority tests for guardrail metrics (cost, latency, …): the
//! candidate may be worse than the baseline, but by less than a margin.
//!
//! Every variant reduces to one "excess" `D` that must be shown negative:
//!
//! | direction | margin | `D` |
//! |---|---|---|
//! | lower is better | absolute m | `μC − μB − m` |
//! | lower is better | relative m | `μC − (1+m)·μB` |
//! | higher is better | absolute m | `μB − μC − m` |
//! | higher is better | relative m | `(1−m)·μB − μC` |
//!
//! H0: `D ≥ 0` (the candidate is worse by the margin or more) against
//! H1: `D < 0`, one-sided at level α. Several guardrails that must all pass
//! form an intersection–union test: each at level α, no correction.

use serde::Serialize;
use statrs::distribution::{ContinuousCDF, StudentsT};

use crate::error::{Error, Result, invalid, open_unit};
use ratchet_records::Direction;

/// How far the candidate may fall behind.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Margin {
    /// In the metric's own unit.
    Absolute(f64),
    /// As a fraction of the baseline mean (0.05 = 5 %).
    Relative(f64),
}

/// Mean, variance and size of one sample.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct SampleStats {
    /// Number of values.
    pub n: u64,
    /// Mean.
    pub mean: f64,
    /// Sample variance (n − 1 denominator).
    pub variance: f64,
}

impl SampleStats {
    /// Summarizes values (Welford).
    ///
    /// # Errors
    /// [`Error::InvalidObservation`] for a NaN or infinite value or fewer than two values.
    pub fn from_values(values: &[f64]) -> Result<Self> {
        if values.len() < 2 {
            return Err(Error::InvalidObservation {
                reason: format!("{} values; a variance needs at least 2", values.len()),
            });
        }
        let (mut mean, mut m2) = (0.0, 0.0);
        for (i, &x) in values.iter().enumerate() {
            if !x.is_finite() {
                return Err(Error::InvalidObservation {
                    reason: format!("value #{i} is {x}, not a finite number"),
                });
            }
            let d = x - mean;
            mean += d / (i + 1) as f64;
            m2 += d * (x - mean);
        }
        Ok(SampleStats {
            n: values.len() as u64,
            mean,
            variance: m2 / (values.len() - 1) as f64,
        })
    }
}

/// A non-inferiority test: direction, margin and level.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct NonInferiority {
    direction: Direction,
    margin: Margin,
    alpha: f64,
    /// Coefficients (on μC, on μB) and constant of the excess `D`.
    coef_c: f64,
    coef_b: f64,
    constant: f64,
}

/// The fixed-horizon Welch test's result.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, serde::Deserialize)]
pub struct WelchOutcome {
    /// The estimated excess `D̂` (negative favours the candidate).
    #[serde(deserialize_with = "crate::decide::recorded_f64")]
    pub excess: f64,
    /// Its standard error.
    #[serde(deserialize_with = "crate::decide::recorded_f64")]
    pub se: f64,
    /// `D̂ / se`.
    #[serde(deserialize_with = "crate::decide::recorded_f64")]
    pub t: f64,
    /// Welch–Satterthwaite degrees of freedom.
    #[serde(deserialize_with = "crate::decide::recorded_f64")]
    pub df: f64,
    /// One-sided p-value, `P(T_df ≤ t)` under `D = 0`.
    #[serde(deserialize_with = "crate::decide::recorded_f64")]
    pub p_value: f64,
    /// Whether H0 is rejected at level α: the candidate is non-inferior.
    pub non_inferior: bool,
}

/// The always-valid (confidence-sequence) test's result after n paired tasks.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, serde::Deserialize)]
pub struct SequenceOutcome {
    /// Paired tasks used.
    pub n: u64,
    /// The estimated excess `D̂`.
    #[serde(deserialize_with = "crate::decide::recorded_f64")]
    pub excess: f64,
    /// Upper end of the confidence sequence for `D` at this n.
    #[serde(deserialize_with = "crate::decide::recorded_f64")]
    pub upper_bound: f64,
    /// Whether the upper bound is below 0: non-inferior, valid at any look.
    pub non_inferior: bool,
}

impl NonInferiority {
    /// A test at level `alpha`.
    ///
    /// # Examples
    ///
    /// ```
    /// use ratchet_gate::{Direction, Margin, NonInferiority, SampleStats};
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// // Cost: lower is better; the candidate may cost up to 10 % more.
    /// let test = NonInferiority::new(Direction::LowerIsBetter, Margin::Relative(0.10), 0.05)?;
    /// let base: Vec<f64> = (0..30).map(|i| 1.00 + 0.01 * f64::from(i % 5)).collect();
    /// let cand: Vec<f64> = base.iter().map(|c| c + 0.03).collect(); // ~3 % dearer
    ///
    /// let welch = test.welch(&SampleStats::from_values(&base)?, &SampleStats::from_values(&cand)?)?;
    /// assert!(welch.non_inferior && welch.excess < 0.0);
    /// // The same tasks paired, valid at any number of looks:
    /// assert!(test.sequential(&base, &cand, 30)?.non_inferior);
    /// let dear: Vec<f64> = base.iter().map(|c| c * 1.5).collect();
    /// assert!(!test.sequential(&base, &dear, 30)?.non_inferior);
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] for α outside (0, 1), a negative or
    /// non-finite margin, or a relative margin ≥ 1 when higher is better.
    pub fn new(direction: Direction, margin: Margin, alpha: f64) -> Result<Self> {
        let alpha = open_unit("alpha", alpha)?;
        let m = match margin {
            Margin::Absolute(m) | Margin::Relative(m) => m,
        };
        if !m.is_finite() || m < 0.0 {
            return Err(invalid(
                "margin",
                format!("{m} must be a finite number ≥ 0"),
            ));
        }
        let (coef_c, coef_b, constant) = match (direction, margin) {
            (Direction::LowerIsBetter, Margin::Absolute(m)) => (1.0, -1.0, m),
            (Direction::LowerIsBetter, Margin::Relative(m)) => (1.0, -(1.0 + m), 0.0),
            (Direction::HigherIsBetter, Margin::Absolute(m)) => (-1.0, 1.0, m),
            (Direction::HigherIsBetter, Margin::Relative(m)) => {
                if m >= 1.0 {
                    return Err(invalid(
                        "margin",
                        format!("a relative margin of {m} would allow a candidate of 0"),
                    ));
                }
                (-1.0, 1.0 - m, 0.0)
            }
        };
        Ok(NonInferiority {
            direction,
            margin,
            alpha,
            coef_c,
            coef_b,
            constant,
        })
    }

    /// The level α.
    pub fn alpha(&self) -> f64 {
        self.alpha
    }

    /// Fixed-horizon Welch test on two independent samples.
    ///
    /// # Errors
    /// [`Error::InvalidObservation`] if either sample has fewer than two values;
    /// [`Error::Numerical`] if the t distribution cannot be built.
    pub fn welch(&self, baseline: &SampleStats, candidate: &SampleStats) -> Result<WelchOutcome> {
        if baseline.n < 2 || candidate.n < 2 {
            return Err(Error::InvalidObservation {
                reason: "each side needs at least 2 values".into(),
            });
        }
        let excess = self.coef_c * candidate.mean + self.coef_b * baseline.mean - self.constant;
        let vc = self.coef_c * self.coef_c * candidate.variance / candidate.n as f64;
        let vb = self.coef_b * self.coef_b * baseline.variance / baseline.n as f64;
        let se = (vc + vb).sqrt();
        if se == 0.0 {
            // No spread on either side: the data are exact.
            let non_inferior = excess < 0.0;
            return Ok(WelchOutcome {
                excess,
                se,
                t: if non_inferior {
                    f64::NEG_INFINITY
                } else {
                    f64::INFINITY
                },
                df: f64::INFINITY,
                p_value: if non_inferior { 0.0 } else { 1.0 },
                non_inferior,
            });
        }
        let df = (vc + vb).powi(2)
            / (vc * vc / (candidate.n - 1) as f64 + vb * vb / (baseline.n - 1) as f64);
        let t = excess / se;
        let dist = StudentsT::new(0.0, 1.0, df).map_err(|e| Error::Numerical {
            what: "student t",
            reason: e.to_string(),
        })?;
        let p_value = dist.cdf(t);
        Ok(WelchOutcome {
            excess,
            se,
            t,
            df,
            p_value,
            non_inferior: p_value < self.alpha,
        })
    }

    /// Always-valid test on paired per-task values (the same tasks, in the
    /// same order, on both sides), with a confidence sequence for the mean
    /// per-task excess tuned to be tightest near `planned_n` tasks. Looking
    /// after every task does not inflate the error rate.
    ///
    /// # Errors
    /// [`Error::InvalidObservation`] if the sides differ in length, have
    /// fewer than two tasks, or hold a non-finite value;
    /// [`Error::InvalidParameter`] if `planned_n` is 0.
    pub fn sequential(
        &self,
        baseline: &[f64],
        candidate: &[f64],
        planned_n: u64,
    ) -> Result<SequenceOutcome> {
        if baseline.len() != candidate.len() {
            return Err(Error::InvalidObservation {
                reason: format!(
                    "paired samples differ in length: {} baseline, {} candidate",
                    baseline.len(),
                    candidate.len()
                ),
            });
        }
        let excess: Vec<f64> = baseline
            .iter()
            .zip(candidate)
            .map(|(b, c)| self.coef_c * c + self.coef_b * b - self.constant)
            .collect();
        let stats = SampleStats::from_values(&excess)?;
        let cs = ConfidenceSequence::new(self.alpha, planned_n)?;
        let upper_bound = stats.mean + cs.half_width(stats.n, stats.variance.sqrt());
        Ok(SequenceOutcome {
            n: stats.n,
            excess: stats.mean,
            upper_bound,
            non_inferior: upper_bound < 0.0,
        })
    }

    /// The direction.
    pub fn direction(&self) -> Direction {
        self.direction
    }

    /// The margin.
    pub fn margin(&self) -> Margin {
        self.margin
    }
}

/// The asymptotic confidence sequence of Waudby-Smith, Arbour, Sinha,
/// Kennedy and Ramdas ("Time-uniform central limit theory and asymptotic
/// confidence sequences", 2021/2024), as used by GrowthBook's `gbstats`:
/// two-sided half-width `σ̂·√(2(nρ²+1)/(n²ρ²)·ln(√(nρ²+1)/α))`, with
/// `ρ = √((−2 ln α + ln(−2 ln α + 1))/n*)`.
///
/// Used one-sided here, at the same α: the one-sided miss probability is at
/// most the two-sided one, so the one-sided use is conservative (checked by
/// simulation in tests/it/simulation.rs).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct ConfidenceSequence {
    alpha: f64,
    rho: f64,
}

impl ConfidenceSequence {
    /// A sequence at level α tuned for `planned_n` observations.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] for α outside (0, 1) or `planned_n` = 0.
    pub fn new(alpha: f64, planned_n: u64) -> Result<Self> {
        let alpha = open_unit("alpha", alpha)?;
        if planned_n == 0 {
            return Err(invalid("planned_n", "must be at least 1"));
        }
        let l = -2.0 * alpha.ln();
        Ok(ConfidenceSequence {
            alpha,
            rho: ((l + (l + 1.0).ln()) / planned_n as f64).sqrt(),
        })
    }

    /// The tuning parameter ρ.
    pub fn rho(&self) -> f64 {
        self.rho
    }

    /// The half-width after `n` observations with standard deviation `sd`.
    pub fn half_width(&self, n: u64, sd: f64) -> f64 {
        let n = n as f64;
        let r2 = self.rho * self.rho;
        sd * (2.0 * (n * r2 + 1.0) / (n * n * r2) * ((n * r2 + 1.0).sqrt() / self.alpha).ln())
            .sqrt()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parameters_are_checked_by_name() {
        let bad = [
            NonInferiority::new(Direction::LowerIsBetter, Margin::Absolute(-1.0), 0.05),
            NonInferiority::new(Direction::LowerIsBetter, Margin::Relative(f64::NAN), 0.05),
            NonInferiority::new(Direction::HigherIsBetter, Margin::Relative(1.0), 0.05),
        ];
        for b in bad {
            assert!(
                matches!(b, Err(Error::InvalidParameter { name: "margin", .. })),
                "{b:?}"
            );
        }
        assert!(matches!(
            NonInferiority::new(Direction::LowerIsBetter, Margin::Absolute(1.0), 1.5),
            Err(Error::InvalidParameter { name: "alpha", .. })
        ));
        assert!(matches!(
            SampleStats::from_values(&[1.0, f64::NAN]),
            Err(Error::InvalidObservation { .. })
        ));
        assert!(matches!(
            SampleStats::from_values(&[1.0]),
            Err(Error::InvalidObservation { .. })
        ));
    }

    #[test]
    fn exact_data_decide_by_sign() {
        let t = NonInferiority::new(Direction::LowerIsBetter, Margin::Absolute(0.5), 0.05)
            .expect("valid");
        let b = SampleStats::from_values(&[1.0, 1.0, 1.0]).expect("stats");
        let c = SampleStats::from_values(&[1.2, 1.2]).expect("stats");
        assert!(t.welch(&b, &c).expect("welch").non_inferior);
        let c = SampleStats::from_values(&[1.6, 1.6]).expect("stats");
        assert!(!t.welch(&b, &c).expect("welch").non_inferior);
    }

    #[test]
    fn half_width_shrinks_and_rho_follows_the_formula() {
        let cs = ConfidenceSequence::new(0.05, 1000).expect("valid");
        let l = -2.0 * 0.05f64.ln();
        assert!((cs.rho() - ((l + (l + 1.0).ln()) / 1000.0).sqrt()).abs() < 1e-15);
        let mut last = f64::INFINITY;
        for n in [10, 100, 1000, 10_000] {
            let w = cs.half_width(n, 1.0);
            assert!(w < last);
            last = w;
        }
        // Wider than the fixed-horizon normal bound at the planned n (1.645/√n).
        assert!(cs.half_width(1000, 1.0) > 1.645 / 1000f64.sqrt());
    }
}
