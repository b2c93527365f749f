//! Calibration: what a test does for each true effect — the operating
//! characteristic (P(promote)) and the sample size — by Wald's
//! approximations, by exact dynamic programming over the Bernoulli lattice,
//! and by seeded Monte Carlo for any test.

use rand::SeedableRng;
use rand::rngs::StdRng;
use serde::Serialize;

use crate::error::{Error, Result, invalid, open_unit};
use crate::sprt::{BernoulliSprt, Decision, SequentialTest};

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
                Decision::Promote => {
                    promote += *m;
                    stopped_here += *m;
                    *m = 0.0;
                }
                Decision::Reject => {
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
            Decision::Promote => promote += 1,
            Decision::Reject => reject += 1,
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
