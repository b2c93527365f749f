//! Average run length: exact enough to trust (Brook–Evans Markov chains for
//! CUSUM and EWMA), a quick first guess (Siegmund for CUSUM), a seeded Monte
//! Carlo cross-check, and solvers for the limit that gives a target ARL0.
//!
//! Everything is in standardized units: observations N(δ, 1) against an
//! in-control mean 0.

use rand::SeedableRng;
use rand::rngs::StdRng;
use rand_distr::{Distribution, Normal};
use serde::Serialize;
use statrs::function::erf::erfc;

use crate::detectors::Detector;
use crate::error::{Error, Result, invalid};

/// States used by default: enough to reproduce the published tables to
/// their printed precision (see tests/it/tables.rs).
pub const DEFAULT_STATES: usize = 200;

fn phi(x: f64) -> f64 {
    0.5 * erfc(-x / std::f64::consts::SQRT_2)
}

/// Solves `(I − P) a = 1` for the transient chain `P` (row-major, n × n)
/// by Gaussian elimination with partial pivoting; returns `a`.
pub(crate) fn expected_steps(mut m: Vec<f64>, n: usize) -> Result<Vec<f64>> {
    // m holds P; turn it into I − P.
    for (i, v) in m.iter_mut().enumerate() {
        *v = if i / n == i % n { 1.0 - *v } else { -*v };
    }
    let mut b = vec![1.0; n];
    for col in 0..n {
        let pivot = (col..n)
            .max_by(|&a, &c| m[a * n + col].abs().total_cmp(&m[c * n + col].abs()))
            .unwrap_or(col);
        if m[pivot * n + col].abs() < 1e-300 {
            return Err(Error::Numerical {
                what: "markov chain ARL",
                reason: "singular system: the chain never leaves the in-control region".into(),
            });
        }
        if pivot != col {
            for j in 0..n {
                m.swap(col * n + j, pivot * n + j);
            }
            b.swap(col, pivot);
        }
        let d = m[col * n + col];
        for r in col + 1..n {
            let f = m[r * n + col] / d;
            if f != 0.0 {
                for j in col..n {
                    m[r * n + j] -= f * m[col * n + j];
                }
                b[r] -= f * b[col];
            }
        }
    }
    let mut a = vec![0.0; n];
    for r in (0..n).rev() {
        let s: f64 = (r + 1..n).map(|j| m[r * n + j] * a[j]).sum();
        a[r] = (b[r] - s) / m[r * n + r];
    }
    Ok(a)
}

fn check_states(states: usize) -> Result<()> {
    if !(10..=2000).contains(&states) {
        return Err(invalid(
            "states",
            format!("{states} must be between 10 and 2000"),
        ));
    }
    Ok(())
}

/// ARL of the one-sided upper CUSUM `C = max(0, C + z − k)`, alarm at
/// `C > h`, for observations N(`shift`, 1), started at `start` (0, or h/2 for
/// the fast initial response) — Brook & Evans (1972): the statistic on
/// [0, h) in `states` cells of width `w = 2h/(2·states − 1)`, cell 0 holding
/// everything at or below w/2.
///
/// # Errors
/// [`Error::InvalidParameter`] for h ≤ 0, k < 0, a non-finite shift or a
/// state count outside 10..=2000.
pub fn cusum_arl_one_sided(k: f64, h: f64, shift: f64, start: f64, states: usize) -> Result<f64> {
    check_states(states)?;
    let valid = h.is_finite() && h > 0.0 && k.is_finite() && k >= 0.0 && shift.is_finite();
    if !valid {
        return Err(invalid(
            "k/h/shift",
            format!("need h > 0, k ≥ 0, finite shift; got k = {k}, h = {h}, shift = {shift}"),
        ));
    }
    let n = states;
    let w = 2.0 * h / (2.0 * n as f64 - 1.0);
    let mut p = vec![0.0; n * n];
    for i in 0..n {
        let c = i as f64 * w;
        p[i * n] = phi(w / 2.0 - c + k - shift);
        for j in 1..n {
            let hi = (j as f64 + 0.5) * w - c + k - shift;
            let lo = (j as f64 - 0.5) * w - c + k - shift;
            p[i * n + j] = phi(hi) - phi(lo);
        }
    }
    let a = expected_steps(p, n)?;
    let cell = ((start / w) + 0.5).floor().clamp(0.0, (n - 1) as f64) as usize;
    Ok(a[cell])
}

/// ARL of the two-sided tabular CUSUM, combining the two one-sided chains
/// as `1/ARL = 1/ARL⁺ + 1/ARL⁻` (Lucas & Crosier 1982).
///
/// # Errors
/// As [`cusum_arl_one_sided`].
pub fn cusum_arl(k: f64, h: f64, shift: f64, fir: bool, states: usize) -> Result<f64> {
    let start = if fir { h / 2.0 } else { 0.0 };
    let up = cusum_arl_one_sided(k, h, shift, start, states)?;
    let down = cusum_arl_one_sided(k, h, -shift, start, states)?;
    Ok(1.0 / (1.0 / up + 1.0 / down))
}

/// Siegmund's approximation to the one-sided CUSUM ARL: with
/// `b = h + 1.166` and `Δ = shift − k`, `(e^{−2Δb} + 2Δb − 1)/(2Δ²)`, or
/// `b²` when Δ = 0. A first guess; it drifts low for large shifts.
pub fn siegmund_one_sided(k: f64, h: f64, shift: f64) -> f64 {
    let b = h + 1.166;
    let d = shift - k;
    if d.abs() < 1e-12 {
        b * b
    } else {
        ((-2.0 * d * b).exp() + 2.0 * d * b - 1.0) / (2.0 * d * d)
    }
}

/// Siegmund's approximation for the two-sided CUSUM.
pub fn siegmund(k: f64, h: f64, shift: f64) -> f64 {
    1.0 / (1.0 / siegmund_one_sided(k, h, shift) + 1.0 / siegmund_one_sided(k, h, -shift))
}

/// ARL of the EWMA chart with steady-state limits `±L√(λ/(2−λ))`, for
/// observations N(`shift`, 1), started at 0 — the Markov chain of Lucas &
/// Saccucci (1990): `states` cells across the in-control interval.
///
/// # Errors
/// [`Error::InvalidParameter`] for λ outside (0, 1], L ≤ 0, a non-finite
/// shift or a state count outside 10..=2000.
pub fn ewma_arl(lambda: f64, l: f64, shift: f64, states: usize) -> Result<f64> {
    check_states(states)?;
    let valid = lambda > 0.0 && lambda <= 1.0 && l.is_finite() && l > 0.0 && shift.is_finite();
    if !valid {
        return Err(invalid(
            "lambda/L/shift",
            format!("need 0 < λ ≤ 1, L > 0; got λ = {lambda}, L = {l}"),
        ));
    }
    // An odd count puts a cell centre exactly on the start value 0.
    let n = states | 1;
    let c = l * (lambda / (2.0 - lambda)).sqrt();
    let w = 2.0 * c / n as f64;
    let mid = |j: usize| -c + (j as f64 + 0.5) * w;
    let mut p = vec![0.0; n * n];
    for i in 0..n {
        let from = (1.0 - lambda) * mid(i);
        for j in 0..n {
            let hi = (mid(j) + w / 2.0 - from) / lambda - shift;
            let lo = (mid(j) - w / 2.0 - from) / lambda - shift;
            p[i * n + j] = phi(hi) - phi(lo);
        }
    }
    let a = expected_steps(p, n)?;
    Ok(a[n / 2])
}

/// The decision interval h of a two-sided CUSUM with reference `k` whose
/// in-control ARL is `target` (bisection on the Markov-chain ARL).
///
/// # Examples
///
/// ```
/// use ratchet_drift::{DEFAULT_STATES, cusum_arl, cusum_h_for_arl0};
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let h = cusum_h_for_arl0(0.5, 168.0, DEFAULT_STATES)?;
/// assert!((h - 4.0).abs() < 0.02, "{h}"); // Montgomery: k = ½, h = 4 gives ARL0 ≈ 168
/// assert!((cusum_arl(0.5, h, 0.0, false, DEFAULT_STATES)? - 168.0).abs() < 0.5);
/// # Ok(()) }
/// ```
///
/// # Errors
/// [`Error::InvalidParameter`] for a target below 2 or above 10⁹.
pub fn cusum_h_for_arl0(k: f64, target: f64, states: usize) -> Result<f64> {
    solve_increasing("target", target, 0.05, 20.0, |h| {
        cusum_arl(k, h, 0.0, false, states)
    })
}

/// The decision interval h of a CUSUM with reference `k` of which only one
/// side alarms (the harm a monitor watches) whose in-control ARL is
/// `target`: solved on the one-sided chain. The two-sided solution
/// ([`cusum_h_for_arl0`]) gives such a chart about twice the in-control
/// run length asked for, since `1/ARL = 1/ARL⁺ + 1/ARL⁻`.
///
/// # Errors
/// As [`cusum_h_for_arl0`].
pub fn cusum_h_for_arl0_one_sided(k: f64, target: f64, states: usize) -> Result<f64> {
    solve_increasing("target", target, 0.05, 25.0, |h| {
        cusum_arl_one_sided(k, h, 0.0, 0.0, states)
    })
}

/// The width L of an EWMA chart with smoothing λ whose in-control ARL is
/// `target` (steady-state limits).
///
/// # Examples
///
/// ```
/// use ratchet_drift::{DEFAULT_STATES, ewma_arl, ewma_l_for_arl0};
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let l = ewma_l_for_arl0(0.05, 500.0, DEFAULT_STATES)?;
/// assert!((l - 2.615).abs() < 0.01, "{l}"); // Lucas & Saccucci: λ = 0.05 needs L ≈ 2.615
/// assert!((ewma_arl(0.05, l, 0.0, DEFAULT_STATES)? - 500.0).abs() < 1.0);
/// # Ok(()) }
/// ```
///
/// # Errors
/// As [`cusum_h_for_arl0`].
pub fn ewma_l_for_arl0(lambda: f64, target: f64, states: usize) -> Result<f64> {
    solve_increasing("target", target, 0.05, 6.0, |l| {
        ewma_arl(lambda, l, 0.0, states)
    })
}

/// Bisection for `f(x) = target`, f increasing on [lo, hi].
fn solve_increasing(
    name: &'static str,
    target: f64,
    mut lo: f64,
    mut hi: f64,
    f: impl Fn(f64) -> Result<f64>,
) -> Result<f64> {
    if !(target.is_finite() && (2.0..=1e9).contains(&target)) {
        return Err(invalid(name, format!("{target} must be between 2 and 1e9")));
    }
    if f(hi)? < target || f(lo)? > target {
        return Err(invalid(
            name,
            format!("{target} is out of reach of the limits searched"),
        ));
    }
    for _ in 0..60 {
        let mid = 0.5 * (lo + hi);
        if f(mid)? < target {
            lo = mid;
        } else {
            hi = mid;
        }
        if hi - lo < 1e-7 * hi {
            break;
        }
    }
    Ok(0.5 * (lo + hi))
}

/// A Monte-Carlo run-length estimate.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RunLengthEstimate {
    /// Mean run length (runs reaching `cap` count as `cap`).
    pub mean: f64,
    /// Its standard error.
    pub se: f64,
    /// Runs that reached `cap` without an alarm.
    pub censored: usize,
}

/// Runs `runs` copies of `template` on N(`shift`, σ=1·`scale`) streams from
/// one seeded generator until each alarms (or `cap` observations).
///
/// # Errors
/// [`Error::InvalidParameter`] if `runs` < 2 or `cap` is 0.
pub fn monte_carlo_arl<D: Detector + Clone>(
    template: &D,
    mean: f64,
    scale: f64,
    runs: usize,
    cap: u64,
    seed: u64,
) -> Result<RunLengthEstimate> {
    if runs < 2 || cap == 0 {
        return Err(invalid(
            "runs/cap",
            "need at least 2 runs and a positive cap",
        ));
    }
    let normal = Normal::new(mean, scale).map_err(|e| invalid("scale", e.to_string()))?;
    let mut rng = StdRng::seed_from_u64(seed);
    let mut lengths = Vec::with_capacity(runs);
    let mut censored = 0;
    for _ in 0..runs {
        let mut detector = template.clone();
        detector.reset();
        let mut len = cap;
        for t in 1..=cap {
            if detector.update(normal.sample(&mut rng))?.is_some() {
                len = t;
                break;
            }
        }
        if len == cap {
            censored += 1;
        }
        lengths.push(len as f64);
    }
    let r = runs as f64;
    let m = lengths.iter().sum::<f64>() / r;
    let var = lengths.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (r - 1.0);
    Ok(RunLengthEstimate {
        mean: m,
        se: (var / r).sqrt(),
        censored,
    })
}

/// Shifts (in σ) an [`arl_profile`] reports.
pub const ARL_SHIFTS: [f64; 9] = [0.0, 0.25, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0, 4.0];

/// A chart's average run length at each shift of [`ARL_SHIFTS`].
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ArlProfile {
    /// The chart, with its limit.
    pub chart: crate::Chart,
    /// One row per shift.
    pub rows: Vec<ArlRow>,
}

/// The ARL at one shift.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct ArlRow {
    /// The shift of the mean, in σ.
    pub shift: f64,
    /// The ARL by the Markov chain.
    pub arl: f64,
    /// Siegmund's approximation (CUSUM only), as a cross-check.
    pub siegmund: Option<f64>,
}

/// The ARL profile of a CUSUM or EWMA chart ([`DEFAULT_STATES`] states).
///
/// # Errors
/// [`Error::InvalidParameter`] for another kind of chart, or parameters out
/// of range.
pub fn arl_profile(chart: crate::Chart) -> Result<ArlProfile> {
    let rows = ARL_SHIFTS
        .iter()
        .map(|&shift| {
            Ok(match chart {
                crate::Chart::Cusum { k, h } => ArlRow {
                    shift,
                    arl: cusum_arl(k, h, shift, false, DEFAULT_STATES)?,
                    siegmund: Some(siegmund(k, h, shift)),
                },
                crate::Chart::Ewma { lambda, l } => ArlRow {
                    shift,
                    arl: ewma_arl(lambda, l, shift, DEFAULT_STATES)?,
                    siegmund: None,
                },
                _ => {
                    return Err(invalid(
                        "chart",
                        "an ARL profile is computed for CUSUM and EWMA charts",
                    ));
                }
            })
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(ArlProfile { chart, rows })
}
