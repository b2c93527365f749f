//! A CUSUM made for pass/fail streams (Reynolds & Stoumbos 1999), whose
//! in-control ARL is computed exactly.
//!
//! A normal-theory chart on 0/1 data mis-states its ARL (on 10k stable
//! 0/1 scores the default two-sided CUSUM raised 19 alarms where its ARL0
//! promised one in 465). The Bernoulli CUSUM counts the *watched* outcome
//! — failures when the pass rate may drop, passes when it may rise — whose
//! rate moves from `q0` to `q1 > q0`:
//!
//! `S ← max(0, S + x − k)`, alarm at `S ≥ h`, with the SPRT reference
//! `k = ln((1−q0)/(1−q1)) / ln(q1(1−q0)/(q0(1−q1)))`.
//!
//! The statistic is kept in integer units of `1/m` (k rounded to the
//! nearest `r/m`, `m` = [`BernoulliCusum::UNITS`]), so it lives on a finite
//! lattice `0, 1, …, H−1` and its run length is a finite absorbing Markov
//! chain: [`bernoulli_cusum_arl`] solves it exactly (no discretisation, unlike
//! the Brook–Evans chain of a normal CUSUM) for the chart as it runs, the
//! rounded k included.

use serde::Serialize;

use crate::arl::expected_steps;
use crate::detectors::{Alarm, Detector, Shift};
use crate::error::{Error, Result, invalid};

/// A one-sided Bernoulli CUSUM; see the module docs.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BernoulliCusum {
    /// In-control pass rate.
    p0: f64,
    /// Out-of-control pass rate it is tuned to catch.
    p1: f64,
    /// Reference value, in 1/UNITS.
    r: u64,
    /// Decision interval, in 1/UNITS.
    h_units: u64,
    s: u64,
    n: u64,
    last_zero: u64,
}

impl BernoulliCusum {
    /// The statistic's resolution: k is rounded to a multiple of 1/UNITS.
    pub const UNITS: u64 = 20;

    /// A chart for pass rate `p0` that watches for a move to `p1` (below
    /// `p0`: a drop, counting failures; above: a rise, counting passes),
    /// alarming when the statistic reaches `h` (in counts of the watched
    /// outcome, rounded to 1/[`Self::UNITS`]).
    ///
    /// # Examples
    ///
    /// ```
    /// use ratchet_drift::{BernoulliCusum, Detector, Shift};
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// // Pass rate 0.9, watching for a drop to 0.7: each failure adds 1 − k.
    /// let mut chart = BernoulliCusum::new(0.9, 0.7, 3.0)?;
    /// let (k, h) = chart.parameters();
    /// assert!(k > 0.0 && k < 1.0 && (h - 3.0).abs() < 1e-12);
    /// let mut alarm = None;
    /// for pass in [1.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0] {
    ///     alarm = alarm.or(chart.update(pass)?);
    /// }
    /// assert_eq!(alarm.map(|a| a.shift), Some(Shift::Down));
    /// assert!(chart.update(0.5).is_err()); // only 0 or 1
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] unless `0 < p0, p1 < 1`, `p0 ≠ p1` and
    /// `0 < h ≤ 100`.
    pub fn new(p0: f64, p1: f64, h: f64) -> Result<Self> {
        for (name, p) in [("p0", p0), ("p1", p1)] {
            if !(p > 0.0 && p < 1.0) {
                return Err(invalid(name, format!("{p} must be a rate in (0, 1)")));
            }
        }
        if (p0 - p1).abs() < 1e-9 {
            return Err(invalid("p1", "must differ from p0"));
        }
        if !(h > 0.0 && h <= 100.0) {
            return Err(invalid("h", format!("{h} must be in (0, 100]")));
        }
        let (q0, q1) = watched_rates(p0, p1);
        let k = ((1.0 - q0) / (1.0 - q1)).ln() / (q1 * (1.0 - q0) / (q0 * (1.0 - q1))).ln();
        let r = (k * Self::UNITS as f64).round().max(1.0) as u64;
        let h_units = (h * Self::UNITS as f64).round().max(1.0) as u64;
        Ok(BernoulliCusum {
            p0,
            p1,
            r,
            h_units,
            s: 0,
            n: 0,
            last_zero: 0,
        })
    }

    /// The chart for `p0` → `p1` whose in-control ARL is the smallest at or
    /// above `target_arl0` (exact, see [`bernoulli_cusum_arl`]).
    ///
    /// # Examples
    ///
    /// ```
    /// use ratchet_drift::{BernoulliCusum, bernoulli_cusum_arl};
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let chart = BernoulliCusum::for_arl0(0.9, 0.8, 500.0)?;
    /// let in_control = bernoulli_cusum_arl(&chart, 0.9)?;
    /// assert!(in_control >= 500.0); // the smallest h that reaches the target
    /// assert!(bernoulli_cusum_arl(&chart, 0.8)? < in_control / 10.0); // the drop is caught fast
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// As [`BernoulliCusum::new`]; [`Error::InvalidParameter`] if no h up to
    /// 100 reaches the target.
    pub fn for_arl0(p0: f64, p1: f64, target_arl0: f64) -> Result<Self> {
        if !(target_arl0.is_finite() && target_arl0 >= 2.0) {
            return Err(invalid("target", format!("{target_arl0} must be ≥ 2")));
        }
        let probe = BernoulliCusum::new(p0, p1, 1.0)?;
        let arl = |h_units: u64| -> Result<f64> {
            let mut chart = probe.clone();
            chart.h_units = h_units;
            bernoulli_cusum_arl(&chart, p0)
        };
        // Double h until the target is reached (never solving for absurdly
        // long run lengths, where the linear system loses precision), then
        // bisect.
        let limit = 100 * Self::UNITS;
        let (mut lo, mut hi) = (1u64, Self::UNITS);
        while arl(hi)? < target_arl0 {
            if hi >= limit {
                return Err(invalid(
                    "target",
                    format!("{target_arl0} is out of reach with h ≤ 100"),
                ));
            }
            lo = hi + 1;
            hi = (hi * 2).min(limit);
        }
        // ARL0 increases with h: the smallest h_units reaching the target.
        while lo < hi {
            let mid = (lo + hi) / 2;
            if arl(mid)? >= target_arl0 {
                hi = mid;
            } else {
                lo = mid + 1;
            }
        }
        let mut chart = probe;
        chart.h_units = lo;
        Ok(chart)
    }

    /// The reference k and the interval h, as run (rounded to 1/UNITS).
    pub fn parameters(&self) -> (f64, f64) {
        let m = Self::UNITS as f64;
        (self.r as f64 / m, self.h_units as f64 / m)
    }

    /// The statistic now, in counts of the watched outcome.
    pub fn statistic(&self) -> f64 {
        self.s as f64 / Self::UNITS as f64
    }

    /// The in-control and tuned-for pass rates.
    pub fn rates(&self) -> (f64, f64) {
        (self.p0, self.p1)
    }

    fn watches_drop(&self) -> bool {
        self.p1 < self.p0
    }

    /// Takes `other`'s rates, reference and interval, keeping this chart's
    /// statistic and counts (a self-starting chart retuned as its rate moves).
    pub(crate) fn retune(&mut self, other: &BernoulliCusum) {
        self.p0 = other.p0;
        self.p1 = other.p1;
        self.r = other.r;
        self.h_units = other.h_units;
    }
}

/// The watched outcome's rates (q0, q1): failures for a drop, passes for a rise.
fn watched_rates(p0: f64, p1: f64) -> (f64, f64) {
    if p1 < p0 {
        (1.0 - p0, 1.0 - p1)
    } else {
        (p0, p1)
    }
}

impl Detector for BernoulliCusum {
    fn update(&mut self, x: f64) -> Result<Option<Alarm>> {
        // Exactly 0 or 1 (−0.0 is stored as 0.0 by the trace).
        let pass = if x.to_bits() == 1f64.to_bits() {
            true
        } else if x.to_bits() == 0f64.to_bits() || x.to_bits() == (-0f64).to_bits() {
            false
        } else {
            return Err(Error::InvalidObservation {
                reason: format!("{x} is not a pass/fail score (0 or 1)"),
            });
        };
        self.n += 1;
        let watched = pass != self.watches_drop();
        let up = if watched { Self::UNITS } else { 0 };
        self.s = (self.s + up).saturating_sub(self.r);
        if self.s == 0 {
            self.last_zero = self.n;
        }
        if self.s >= self.h_units {
            let m = Self::UNITS as f64;
            return Ok(Some(Alarm {
                detector: "bernoulli_cusum".into(),
                n: self.n,
                statistic: self.s as f64 / m,
                limit: self.h_units as f64 / m,
                shift: if self.watches_drop() {
                    Shift::Down
                } else {
                    Shift::Up
                },
                change_start: self.last_zero + 1,
            }));
        }
        Ok(None)
    }

    fn reset(&mut self) {
        self.s = 0;
        self.n = 0;
        self.last_zero = 0;
    }

    fn n(&self) -> u64 {
        self.n
    }
}

/// The exact average run length of `chart` (from a zero statistic) when the
/// true pass rate is `p`: the chain on `0..H` (units of 1/UNITS) moves up by
/// `UNITS − r` with the watched outcome's probability and down by `r`
/// (floored at 0) otherwise; `(I − Q)·a = 1`.
///
/// # Errors
/// [`Error::InvalidParameter`] for `p` outside (0, 1) or a chart of more
/// than 2,000 states; [`Error::Numerical`] if the system is singular.
pub fn bernoulli_cusum_arl(chart: &BernoulliCusum, p: f64) -> Result<f64> {
    if !(p > 0.0 && p < 1.0) {
        return Err(invalid("p", format!("{p} must be a rate in (0, 1)")));
    }
    let n = chart.h_units as usize;
    if n > 2000 {
        return Err(invalid(
            "h",
            format!("{n} lattice states; at most 2000 are solved"),
        ));
    }
    let q = if chart.watches_drop() { 1.0 - p } else { p };
    let (up, down) = (BernoulliCusum::UNITS, chart.r);
    let mut m = vec![0.0; n * n];
    for s in 0..n as u64 {
        let i = s as usize;
        let after_watched = (s + up).saturating_sub(down);
        if after_watched < chart.h_units {
            m[i * n + after_watched as usize] += q;
        }
        let after_other = s.saturating_sub(down) as usize;
        m[i * n + after_other] += 1.0 - q;
    }
    Ok(expected_steps(m, n)?[0])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parameters_follow_the_sprt_reference_and_are_refused_when_invalid() {
        // p0 = 0.9 → p1 = 0.8: failure rate 0.1 → 0.2, k = ln(0.9/0.8)/ln(0.2·0.9/(0.1·0.8)).
        let chart = BernoulliCusum::new(0.9, 0.8, 4.0).expect("valid");
        let k = (0.9f64 / 0.8).ln() / (0.2f64 * 0.9 / (0.1 * 0.8)).ln();
        let (kr, h) = chart.parameters();
        assert!(
            (kr - k).abs() <= 0.5 / BernoulliCusum::UNITS as f64,
            "{kr} vs {k}"
        );
        assert!((h - 4.0).abs() < 1e-12);
        assert!(BernoulliCusum::new(0.0, 0.5, 4.0).is_err());
        assert!(BernoulliCusum::new(0.5, 0.5, 4.0).is_err());
        assert!(BernoulliCusum::new(0.5, 0.4, 0.0).is_err());
        let mut chart = chart;
        assert!(chart.update(0.5).is_err(), "not a pass/fail score");
        assert_eq!(chart.n(), 0, "a refused observation is not counted");
    }

    #[test]
    fn the_chain_agrees_with_a_hand_computed_case() {
        // UNITS-scaled chart with r = UNITS/2 (k = ½) and h = 1: every
        // watched outcome moves the statistic by +½, every other by −½
        // (floored). States 0 and ½: from 0 a watched outcome goes to ½;
        // from ½ a watched outcome reaches 1 and alarms. With q the watched
        // rate: a0 = 1 + q·a½ + (1−q)·a0, a½ = 1 + (1−q)·a0, so
        // a0 = (1 + q)/q².
        let mut chart = BernoulliCusum::new(0.5, 0.4, 1.0).expect("valid");
        chart.r = BernoulliCusum::UNITS / 2;
        for p in [0.3, 0.5, 0.8] {
            let q = 1.0 - p;
            let exact = (1.0 + q) / (q * q);
            let arl = bernoulli_cusum_arl(&chart, p).expect("arl");
            assert!((arl - exact).abs() < 1e-9 * exact, "{arl} vs {exact}");
        }
    }
}
