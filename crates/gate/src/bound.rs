//! The one-sided bound that matches a sequential test's decision
//! ([`crate::DecisionBound`]), found by inverting the test: the same
//! statistic and boundary, the hypotheses shifted together.
//!
//! A promote says the effect is above the test's null; a reject that it is
//! below the design gap. The two-sided 95 % interval beside a verdict
//! answers another question (where the effect lies, at both ends at once)
//! and reaches below 0 beside most promotes (issue 40, finding 6). The
//! bound here is the statement the decision made, with its number: for a
//! likelihood-ratio test of `θ0` against `θ1`, the LLR of `θ0 + m` against
//! `θ1 + m` is, under a true effect `θ0 + m`, a likelihood ratio again, so
//! by Ville's inequality it reaches the promote boundary `A` with
//! probability at most `e^{−A}` = α/(1−β) at any time (Wald's bound on the
//! test's own false promotes). The set of shifts whose LLR reached `A` is
//! therefore excluded at that rate, always validly; its edge is the lower
//! bound, and it lies beyond the null exactly when the test's own LLR (the
//! shift 0) reached `A` — when the test promoted. The reject side mirrors
//! it with the lower boundary.

use crate::sprt::TestState;

/// The edge of a set of hypotheses `excluded` that runs from `far` (the
/// excluded end) to the edge and is kept beyond it up to `kept`: `None`
/// when even `far` is kept. `probe` is tried first, so that the answer is
/// on `probe`'s far side exactly when `probe` is excluded (the test's own
/// hypothesis: the bound agrees with its decision by construction, not by
/// the precision of a bisection). The answer is the last excluded point
/// found (conservative).
pub(crate) fn frontier(
    excluded: impl Fn(f64) -> bool,
    far: f64,
    kept: f64,
    probe: f64,
) -> Option<f64> {
    if !excluded(far) {
        return None;
    }
    let (mut out, mut keep) = (far, kept);
    if probe > far.min(kept) && probe < far.max(kept) {
        if excluded(probe) {
            out = probe;
        } else {
            keep = probe;
        }
    }
    for _ in 0..64 {
        if (keep - out).abs() <= 1e-12 * (1.0 + out.abs()) {
            break;
        }
        let mid = 0.5 * (out + keep);
        if excluded(mid) {
            out = mid;
        } else {
            keep = mid;
        }
    }
    Some(out)
}

/// The shift `m` of both hypotheses at the edge of what a likelihood-ratio
/// test's `decision` excluded: for a promote, the largest `m ≥ 0` whose
/// LLR `llr(m)` (of `θ0 + m` against `θ1 + m`) is still at least `upper`;
/// for a reject, the smallest `m ≤ 0` whose LLR is still at most `lower`.
/// `llr(0)` must be the test's own LLR. `span` is the shifts the
/// hypotheses allow (an end is returned when the edge lies beyond it);
/// `step` is a first stride to look for a kept shift, doubled until one is
/// found. `None` for a test that neither promoted nor rejected.
///
/// `llr(m)` falls as `m` rises near the data (the hypotheses move past
/// the estimate), so the excluded shifts next to 0 are one interval; far
/// from the data it flattens towards 0 on both sides, which the search
/// never reaches past a kept shift.
pub(crate) fn shifted(
    llr: impl Fn(f64) -> f64,
    decision: TestState,
    (lower, upper): (f64, f64),
    span: (f64, f64),
    step: f64,
) -> Option<f64> {
    let (excluded, end): (Box<dyn Fn(f64) -> bool>, f64) = match decision {
        TestState::Promote => (Box::new(|m| llr(m) >= upper), span.1),
        TestState::Reject => (Box::new(|m| llr(m) <= lower), span.0),
        TestState::Continue | TestState::Truncated => return None,
    };
    let dir = end.signum();
    let mut kept = dir * step.min(end.abs());
    while excluded(kept) {
        if kept.abs() >= end.abs() {
            return excluded(0.0).then_some(end);
        }
        kept = dir * (2.0 * kept.abs()).min(end.abs());
    }
    frontier(excluded, 0.0, kept, 0.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_linear_llr_is_inverted_where_it_meets_its_boundary() {
        // LLR 5 − 2m: reaches the upper boundary 3 at m = 1.
        let m = shifted(
            |m| 5.0 - 2.0 * m,
            TestState::Promote,
            (-3.0, 3.0),
            (-10.0, 10.0),
            0.1,
        );
        assert!((m.expect("a promote") - 1.0).abs() < 1e-9);
        // LLR −5 − 2m: reaches the lower boundary −3 at m = −1.
        let m = shifted(
            |m| -5.0 - 2.0 * m,
            TestState::Reject,
            (-3.0, 3.0),
            (-10.0, 10.0),
            0.1,
        );
        assert!((m.expect("a reject") + 1.0).abs() < 1e-9);
        assert_eq!(
            shifted(|m| -m, TestState::Continue, (-3.0, 3.0), (-10.0, 10.0), 0.1),
            None
        );
    }
}
