//! The chart a [`Monitor`](crate::Monitor) runs, started from a short
//! warm-up: self-starting, so that each deployment keeps the in-control
//! ARL it was promised, not only deployments on average.
//!
//! # Why self-starting
//!
//! A chart whose μ and σ are plugged in from m warm-up scores runs, for
//! the rest of the deployment, with whatever error those m scores happened
//! to carry: with m = 30 and `--arl0 500` one deployment in three had an
//! in-control ARL under 250 (benches/README.md, "Issue 40"). Two remedies
//! are published: widen the limits for the estimation error (Jones, Champ
//! & Rigdon 2004; Gandy & Kvaløy 2013's guaranteed conditional
//! performance), or keep estimating (Hawkins' self-starting CUSUM, Hawkins
//! & Olwell 1998, ch. 7; Quesenberry's Q-statistics). Widening buys the
//! guarantee with a slower alarm for *every* deployment, forever, and needs
//! a bootstrap or a quantile search over ARLs at each start. The
//! self-starting chart instead lets the error wash out: each new score x
//! is standardised by the mean x̄ and SD s of the n in-control scores
//! before it, `T = (x − x̄)/s·√(n/(n+1))`, which is exactly Student-t with
//! n − 1 degrees of freedom for normal scores whatever μ and σ are, and
//! mapped to `U = Φ⁻¹(F_{t,n−1}(T))` — N(0, 1) — on which the chart runs
//! with its known-parameter limits. Its cost is a constant per score (a t
//! CDF and a normal quantile), and the state is still a function of the
//! trace alone.
//!
//! Which scores are "in control": as in Hawkins' chart, every score the
//! chart passes without an alarm joins the estimate at once. Holding back
//! the scores of an open excursion (until the statistic returns to zero,
//! or for a lag) keeps a shift from being absorbed, but it biases the
//! estimate away from the watched side and slows the learning exactly in
//! the deployments whose warm-up erred that way: measured, it gave back
//! most of the per-deployment ARL0 gained (benches/README.md, "Issue 40").
//! The price is paid by a shift that comes within the first scores after a
//! short warm-up, which is partly absorbed before it alarms; the figures
//! are in the same section.
//!
//! The Bernoulli CUSUM self-starts the same way on the rate: its in-control
//! pass rate is `(x + ½)/(n + 1)` over the n cleared 0/1 scores (strictly
//! inside (0, 1), so a warm-up of all passes starts a chart too), and it is
//! retuned (k and the h of its exact ARL) whenever that rate moves to
//! another point of a 0.005 grid; its statistic, in counts of the watched
//! outcome, carries over.

use std::collections::BTreeMap;
use std::sync::{Mutex, OnceLock};

use rand::SeedableRng;
use rand::rngs::StdRng;
use rand_distr::{Bernoulli, Distribution, Normal};
use serde::Serialize;
use statrs::distribution::{ContinuousCDF, StudentsT};

use crate::bernoulli::BernoulliCusum;
use crate::detectors::{Alarm, Cusum, Detector, Ewma, EwmaLimits, PageHinkley, Shift};
use crate::error::{Error, Result, invalid};
use crate::monitor::{Chart, Watch};

/// What a chart starts from: the warm-up's count, mean and sample SD (for
/// 0/1 scores the mean is the pass rate).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Warmup {
    /// Scores.
    pub n: u64,
    /// Their mean.
    pub mean: f64,
    /// Their sample standard deviation (0 with fewer than 2).
    pub sd: f64,
}

impl Warmup {
    /// The warm-up of `scores`.
    pub fn of(scores: &[f64]) -> Warmup {
        let mut running = Running::default();
        for &x in scores {
            running.push(x);
        }
        running.warmup()
    }
}

/// Welford's running mean and sum of squared deviations.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
struct Running {
    n: u64,
    mean: f64,
    m2: f64,
}

impl Running {
    fn from_warmup(w: &Warmup) -> Running {
        Running {
            n: w.n,
            mean: w.mean,
            m2: if w.n > 1 {
                w.sd * w.sd * (w.n - 1) as f64
            } else {
                0.0
            },
        }
    }

    fn push(&mut self, x: f64) {
        self.n += 1;
        let d = x - self.mean;
        self.mean += d / self.n as f64;
        self.m2 += d * (x - self.mean);
    }

    fn sd(&self) -> f64 {
        if self.n < 2 {
            0.0
        } else {
            (self.m2.max(0.0) / (self.n - 1) as f64).sqrt()
        }
    }

    fn warmup(&self) -> Warmup {
        Warmup {
            n: self.n,
            mean: self.mean,
            sd: self.sd(),
        }
    }

    fn passes(&self) -> u64 {
        (self.mean * self.n as f64).round().max(0.0) as u64
    }
}

/// |U| never exceeds this (Φ⁻¹ of the smallest positive f64 is about −38.5):
/// a score so far out that its t tail underflows still moves the chart by a
/// finite amount.
const MAX_U: f64 = 38.0;

/// Hawkins' transform: `x` standardised by the estimate of the scores
/// before it, through Student-t with n − 1 degrees of freedom, to N(0, 1).
fn predictive_u(x: f64, est: &Running) -> Result<f64> {
    let (n, sd) = (est.n as f64, est.sd());
    if est.n < 2 || sd <= 0.0 {
        return Err(invalid("baseline", "the in-control estimate has no spread"));
    }
    let t = (x - est.mean) / sd * (n / (n + 1.0)).sqrt();
    let dist = StudentsT::new(0.0, 1.0, n - 1.0).map_err(|e| Error::Numerical {
        what: "student t",
        reason: e.to_string(),
    })?;
    // Through the lower tail of |t|, where the CDF keeps its precision.
    let tail = dist.cdf(-t.abs());
    let z = if tail > 0.0 {
        (-statrs::function::erf::erfc_inv(2.0 * tail) * std::f64::consts::SQRT_2)
            .abs()
            .min(MAX_U)
    } else {
        MAX_U
    };
    Ok(if t < 0.0 { -z } else { z })
}

/// Grid of the Bernoulli chart's in-control rate (points per unit).
const RATE_GRID: f64 = 200.0;

/// The Bernoulli CUSUM for `p0 = key/RATE_GRID` → `p1`, solved once per
/// process: a pure function of its arguments, memoised because solving h
/// takes a dozen exact chain solves and a self-starting chart revisits the
/// same few rates.
fn tuned(key: u32, shift: f64, arl0: f64, drop: bool) -> Result<BernoulliCusum> {
    type Memo = BTreeMap<(u32, u64, u64, bool), BernoulliCusum>;
    static MEMO: OnceLock<Mutex<Memo>> = OnceLock::new();
    let memo = MEMO.get_or_init(|| Mutex::new(BTreeMap::new()));
    let id = (key, shift.to_bits(), arl0.to_bits(), drop);
    if let Some(c) = memo.lock().unwrap_or_else(|e| e.into_inner()).get(&id) {
        return Ok(c.clone());
    }
    let p0 = f64::from(key) / RATE_GRID;
    let p1 = if drop { p0 - shift } else { p0 + shift };
    let chart = BernoulliCusum::for_arl0(p0, p1, arl0)?;
    memo.lock()
        .unwrap_or_else(|e| e.into_inner())
        .insert(id, chart.clone());
    Ok(chart)
}

/// The self-starting Bernoulli CUSUM's tuning.
#[derive(Debug, Clone, PartialEq)]
struct RateChart {
    chart: BernoulliCusum,
    shift: f64,
    arl0: f64,
    drop: bool,
    key: u32,
}

impl RateChart {
    /// The grid point of the rate `(x + ½)/(n + 1)`, kept where the tuned-for
    /// rate stays inside (0, 1).
    fn key(&self, est: &Running) -> u32 {
        let p = (est.passes() as f64 + 0.5) / (est.n as f64 + 1.0);
        let (lo, hi) = key_range(self.shift, self.drop);
        ((p * RATE_GRID).round() as u32).clamp(lo, hi)
    }

    fn retune(&mut self, est: &Running) -> Result<()> {
        let key = self.key(est);
        if key != self.key {
            self.chart
                .retune(&tuned(key, self.shift, self.arl0, self.drop)?);
            self.key = key;
        }
        Ok(())
    }
}

/// Grid points a chart for a move of `shift` can be tuned at: p0 and p1 in
/// [0.005, 0.995].
fn key_range(shift: f64, drop: bool) -> (u32, u32) {
    let steps = (shift * RATE_GRID).ceil() as u32;
    if drop {
        (1 + steps, 199)
    } else {
        (1, 199u32.saturating_sub(steps))
    }
}

#[derive(Debug, Clone, PartialEq)]
enum Inner {
    Cusum(Cusum),
    Ewma(Ewma),
    PageHinkley(PageHinkley),
    Bernoulli(RateChart),
}

/// A [`Chart`] running on a live stream from its warm-up: CUSUM and EWMA
/// self-starting on Hawkins' U, the Bernoulli CUSUM self-starting on its
/// rate, Page–Hinkley (which follows its own running mean and promises no
/// ARL) as it is. See the module docs for why.
#[derive(Debug, Clone, PartialEq)]
pub struct LiveChart {
    inner: Inner,
    /// The in-control scores: the warm-up's and every score passed since.
    estimate: Running,
}

impl LiveChart {
    /// Starts `chart` from `warmup`, alarming on the sides `watch` reports
    /// (a Bernoulli chart is one-sided and is built for that side).
    ///
    /// # Examples
    ///
    /// ```
    /// use ratchet_drift::{Chart, Detector, LiveChart, Warmup, Watch};
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// // 30 passes out of 30: a Bernoulli chart starts at the rate 30.5/31.
    /// let all_pass = Warmup { n: 30, mean: 1.0, sd: 0.0 };
    /// let chart = Chart::Bernoulli { shift: 0.1, arl0: 500.0 };
    /// let mut live = LiveChart::start(chart, &all_pass, Watch::Decreases)?;
    /// assert!((live.in_control_rate().expect("bernoulli") - 0.985).abs() < 1e-9);
    /// assert!(live.update(1.0)?.is_none());
    /// // A normal chart on the same warm-up says what it lacks.
    /// let cusum = Chart::cusum_for_arl0(0.5, 500.0)?;
    /// let err = LiveChart::start(cusum, &all_pass, Watch::Decreases).expect_err("no spread");
    /// assert!(err.to_string().contains("--detector bernoulli"), "{err}");
    /// // Scores of one other value: no pass/fail advice.
    /// let flat = Warmup { n: 30, mean: 0.8, sd: 0.0 };
    /// let err = LiveChart::start(cusum, &flat, Watch::Decreases).expect_err("no spread");
    /// assert!(err.to_string().contains("30 score(s), all 0.8"), "{err}");
    /// assert!(!err.to_string().contains("bernoulli"), "{err}");
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] for the chart's parameters, a CUSUM,
    /// EWMA or Page–Hinkley chart on a warm-up of fewer than 2 scores or
    /// without spread, a Bernoulli chart watching both directions or a
    /// move the measured rate cannot make.
    pub fn start(chart: Chart, warmup: &Warmup, watch: Watch) -> Result<LiveChart> {
        let normal = !matches!(chart, Chart::Bernoulli { .. });
        if normal && !(warmup.n >= 2 && warmup.sd > 0.0 && warmup.sd.is_finite()) {
            // All 0 or all 1 is a pass/fail stream: its chart needs no spread.
            let pass_fail =
                warmup.mean.to_bits() == 0f64.to_bits() || warmup.mean.to_bits() == 1f64.to_bits();
            return Err(invalid(
                "baseline",
                format!(
                    "{} score(s), all {}: {chart} scales by the scores' spread and needs at least 2 that differ{}",
                    warmup.n,
                    warmup.mean,
                    if pass_fail {
                        "; for pass/fail (0/1) scores use --detector bernoulli, which needs no spread"
                    } else {
                        ""
                    }
                ),
            ));
        }
        let inner = match chart {
            Chart::Cusum { k, h } => Inner::Cusum(Cusum::new(0.0, 1.0, k, h)?),
            Chart::Ewma { lambda, l } => {
                Inner::Ewma(Ewma::new(0.0, 1.0, lambda, l, EwmaLimits::SteadyState)?)
            }
            Chart::PageHinkley { delta, lambda } => {
                Inner::PageHinkley(PageHinkley::new(delta * warmup.sd, lambda * warmup.sd)?)
            }
            Chart::Bernoulli { shift, arl0 } => {
                let drop = match watch {
                    Watch::Decreases => true,
                    Watch::Increases => false,
                    Watch::Both => {
                        return Err(invalid(
                            "watch",
                            "the Bernoulli CUSUM is one-sided: watch decreases or increases",
                        ));
                    }
                };
                if !(shift > 0.0 && shift < 0.99) {
                    return Err(invalid("shift", format!("{shift} must be in (0, 0.99)")));
                }
                if warmup.n == 0 {
                    return Err(invalid("baseline", "no pass/fail scores to start from"));
                }
                let est = Running::from_warmup(warmup);
                let rate = (est.passes() as f64 + 0.5) / (est.n as f64 + 1.0);
                let target = if drop { rate - shift } else { rate + shift };
                if !(target > 0.0 && target < 1.0) {
                    return Err(invalid(
                        "shift",
                        format!(
                            "the measured pass rate {rate:.3} ({} of {}) cannot move by {shift} {}",
                            est.passes(),
                            est.n,
                            if drop { "down" } else { "up" }
                        ),
                    ));
                }
                let mut chart = RateChart {
                    chart: BernoulliCusum::new(0.5, if drop { 0.4 } else { 0.6 }, 1.0)?,
                    shift,
                    arl0,
                    drop,
                    key: 0,
                };
                chart.retune(&est)?;
                Inner::Bernoulli(chart)
            }
        };
        Ok(LiveChart {
            inner,
            estimate: Running::from_warmup(warmup),
        })
    }

    /// The in-control estimate the next score is judged against: the
    /// warm-up and every score cleared since.
    pub fn in_control(&self) -> Warmup {
        self.estimate.warmup()
    }

    /// A CUSUM-type chart's statistic on the `shift` side now, and the
    /// reference value k it subtracts per score (the self-starting CUSUM's
    /// on Hawkins' U, in σ; the Bernoulli CUSUM's as now tuned, in counts of
    /// the watched outcome — one-sided, so `shift` is its side): what an
    /// alarm's chart draws ([`TraceAlarm::path`](crate::TraceAlarm::path)).
    /// `None` for EWMA and Page–Hinkley, whose statistics are no such sum.
    pub fn cusum_state(&self, shift: Shift) -> Option<(f64, f64)> {
        match &self.inner {
            Inner::Cusum(c) => {
                let (up, down) = c.statistics();
                let side = if shift == Shift::Up { up } else { down };
                Some((side, c.parameters().0))
            }
            Inner::Bernoulli(r) => Some((r.chart.statistic(), r.chart.parameters().0)),
            Inner::Ewma(_) | Inner::PageHinkley(_) => None,
        }
    }

    /// The Bernoulli chart's in-control pass rate as tuned (a point of the
    /// 0.005 grid); `None` for other charts.
    pub fn in_control_rate(&self) -> Option<f64> {
        match &self.inner {
            Inner::Bernoulli(r) => Some(r.chart.rates().0),
            _ => None,
        }
    }
}

impl Detector for LiveChart {
    fn update(&mut self, x: f64) -> Result<Option<Alarm>> {
        if !x.is_finite() {
            return Err(Error::InvalidObservation {
                reason: format!("{x} is not a finite score"),
            });
        }
        let alarm = match &mut self.inner {
            Inner::PageHinkley(d) => return d.update(x),
            Inner::Cusum(c) => c.update(predictive_u(x, &self.estimate)?)?.map(|a| Alarm {
                detector: "self_starting_cusum".into(),
                ..a
            }),
            Inner::Ewma(e) => e.update(predictive_u(x, &self.estimate)?)?.map(|a| Alarm {
                detector: "self_starting_ewma".into(),
                ..a
            }),
            Inner::Bernoulli(r) => r.chart.update(x)?,
        };
        // A score the chart passed joins the in-control estimate; the one
        // that raised an alarm does not.
        if alarm.is_none() {
            self.estimate.push(x);
            if let Inner::Bernoulli(r) = &mut self.inner {
                r.retune(&self.estimate)?;
            }
        }
        Ok(alarm)
    }

    /// Restarts the statistic; the in-control estimate stays.
    fn reset(&mut self) {
        match &mut self.inner {
            Inner::Cusum(d) => d.reset(),
            Inner::Ewma(d) => d.reset(),
            Inner::PageHinkley(d) => d.reset(),
            Inner::Bernoulli(r) => r.chart.reset(),
        }
    }

    fn n(&self) -> u64 {
        match &self.inner {
            Inner::Cusum(d) => d.n(),
            Inner::Ewma(d) => d.n(),
            Inner::PageHinkley(d) => d.n(),
            Inner::Bernoulli(r) => r.chart.n(),
        }
    }
}

/// The scores a [`deployment_arl0s`] simulation draws.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Scores {
    /// N(0, 1) in the warm-up, N(`shift`, 1) live (every chart here is
    /// location- and scale-free, so one normal stands for all).
    Normal {
        /// The live mean's shift, in σ (0: in control), from live score
        /// `onset` (0-based) on.
        shift: f64,
        /// Live scores before the shift.
        onset: u64,
    },
    /// 0/1 scores passing at `warmup` in the warm-up and `live` after.
    PassFail {
        /// Pass rate of the warm-up, and live before `onset`.
        warmup: f64,
        /// Pass rate live from live score `onset` (0-based) on.
        live: f64,
        /// Live scores before the change.
        onset: u64,
    },
}

/// Per-deployment run lengths: for each of `deployments` seeded warm-ups of
/// `m` scores, the chart `make` builds from it is run `runs` times on fresh
/// live streams until a reported alarm (one `watch` reports; an alarm the
/// other way restarts the statistic, as in the monitor) or `cap` scores,
/// and the mean run length is that deployment's ARL (censored runs count
/// as `cap`, which can only shorten it). Returned in deployment order.
///
/// With an `onset` the run length is counted from it (the delay: the
/// onset's score alarming is 1), and runs that alarm before it are left
/// out; a deployment all of whose runs did is NaN.
///
/// With `runs` runs a deployment's estimate has a relative standard error
/// of about 1/√runs (run lengths are roughly geometric).
///
/// # Errors
/// [`Error::InvalidParameter`] for m < 2, runs < 1, cap = 0 or rates
/// outside [0, 1]; the chart's own errors from `make` or its updates.
#[allow(clippy::too_many_arguments)]
pub fn deployment_arl0s<D: Detector + Clone>(
    make: &mut dyn FnMut(&Warmup) -> Result<D>,
    watch: Watch,
    scores: Scores,
    m: u64,
    deployments: usize,
    runs: usize,
    cap: u64,
    seed: u64,
) -> Result<Vec<f64>> {
    if m < 2 || runs == 0 || cap == 0 {
        return Err(invalid("m/runs/cap", "need m ≥ 2, runs ≥ 1 and cap ≥ 1"));
    }
    let normal = Normal::new(0.0, 1.0).map_err(|e| invalid("normal", e.to_string()))?;
    let coin = |p: f64| Bernoulli::new(p).map_err(|e| invalid("rate", e.to_string()));
    let (warm_coin, live_coin) = match scores {
        Scores::PassFail { warmup, live, .. } => (Some(coin(warmup)?), Some(coin(live)?)),
        Scores::Normal { .. } => (None, None),
    };
    let (shift, onset) = match scores {
        Scores::Normal { shift, onset } => (shift, onset),
        Scores::PassFail { onset, .. } => (0.0, onset),
    };
    let mut rng = StdRng::seed_from_u64(seed);
    let draw = |rng: &mut StdRng, c: Option<Bernoulli>, shift: f64| match c {
        Some(c) => f64::from(u8::from(c.sample(rng))),
        None => shift + normal.sample(rng),
    };
    let mut out = Vec::with_capacity(deployments);
    for _ in 0..deployments {
        let warm: Vec<f64> = (0..m).map(|_| draw(&mut rng, warm_coin, 0.0)).collect();
        let template = make(&Warmup::of(&warm))?;
        let (mut total, mut counted) = (0u64, 0u64);
        for _ in 0..runs {
            let mut chart = template.clone();
            let mut len = Some(cap);
            for t in 0..onset + cap {
                let x = if t < onset {
                    draw(&mut rng, warm_coin, 0.0)
                } else {
                    draw(&mut rng, live_coin, shift)
                };
                if let Some(a) = chart.update(x)? {
                    if watch.reports(a.shift) {
                        len = t.checked_sub(onset).map(|d| d + 1);
                        break;
                    }
                    chart.reset();
                }
            }
            if let Some(len) = len {
                total += len;
                counted += 1;
            }
        }
        out.push(total as f64 / counted as f64);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_transform_is_student_t_mapped_to_the_normal() {
        // n = 3 prior scores 0, 1, 2: mean 1, sd 1; x = 1 + 2·√(4/3) gives
        // T = 2 with 2 degrees of freedom, F = ½ + 2/(2√(2 + 4)) = 0.908248.
        let mut est = Running::default();
        for x in [0.0, 1.0, 2.0] {
            est.push(x);
        }
        let u = predictive_u(1.0 + 2.0 * (4.0f64 / 3.0).sqrt(), &est).expect("u");
        let f = 0.5 + 2.0 / (2.0 * 6.0f64.sqrt());
        let want = -statrs::function::erf::erfc_inv(2.0 * f) * std::f64::consts::SQRT_2;
        assert!((u - want).abs() < 1e-9, "{u} vs {want}");
        assert!((u - 1.3300).abs() < 1e-3, "{u}"); // Φ⁻¹(0.908248)
        // Far tails stay finite and keep their sign.
        assert!((predictive_u(-1e300, &est).expect("u") + MAX_U).abs() < 1e-12);
    }
}
