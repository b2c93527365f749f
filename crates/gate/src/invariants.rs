//! Hard invariants: scorers that must reach a minimum on every task (safety
//! pinned at 1.0) and canary tasks that must pass. Reported honestly: "all n
//! passed" comes with the upper confidence bound on the failure rate
//! (one-sided Clopper–Pearson, about 3/n at 95 %), never a bare 1.0.

use serde::Serialize;
use statrs::distribution::{Beta, ContinuousCDF};

use crate::error::{Error, Result, invalid, open_unit};

/// The one-sided Clopper–Pearson upper bound on a failure rate after
/// `failures` failures in `n` trials, at `confidence` (e.g. 0.95): the
/// `confidence` quantile of Beta(f+1, n−f). With no failure it is
/// `1 − (1−confidence)^{1/n}` (the "rule of three": ≈ 3/n at 95 %).
///
/// # Errors
/// [`Error::InvalidParameter`] if `n` is 0, `failures > n`, or `confidence`
/// is outside (0, 1).
pub fn failure_rate_upper_bound(failures: u64, n: u64, confidence: f64) -> Result<f64> {
    let confidence = open_unit("confidence", confidence)?;
    if n == 0 {
        return Err(invalid("n", "no trials: nothing bounds the failure rate"));
    }
    if failures > n {
        return Err(invalid(
            "failures",
            format!("{failures} failures in {n} trials"),
        ));
    }
    if failures == n {
        return Ok(1.0);
    }
    if failures == 0 {
        return Ok(1.0 - (1.0 - confidence).powf(1.0 / n as f64));
    }
    let beta =
        Beta::new((failures + 1) as f64, (n - failures) as f64).map_err(|e| Error::Numerical {
            what: "beta distribution",
            reason: e.to_string(),
        })?;
    Ok(beta.inverse_cdf(confidence))
}

/// The outcome of one minimum-on-every-task invariant.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
pub struct MinimumReport {
    /// The scorer.
    pub scorer: String,
    /// The minimum every task must reach.
    #[serde(deserialize_with = "crate::decide::recorded_f64")]
    pub minimum: f64,
    /// Tasks scored.
    pub tasks: u64,
    /// Tasks below the minimum (or with a non-finite score), by name.
    pub violations: Vec<String>,
    /// Upper confidence bound on the rate of violating tasks.
    #[serde(deserialize_with = "crate::decide::recorded_f64")]
    pub failure_rate_upper_bound: f64,
    /// Whether the invariant holds (no violation, at least one task).
    pub holds: bool,
}

/// Checks that every task's score for `scorer` is at least `minimum`.
/// A NaN or infinite score is a violation; no task at all fails closed.
///
/// # Errors
/// [`Error::InvalidParameter`] if `minimum` is not finite or `confidence` is
/// outside (0, 1).
pub fn check_minimum(
    scorer: &str,
    per_task: &[(String, f64)],
    minimum: f64,
    confidence: f64,
) -> Result<MinimumReport> {
    if !minimum.is_finite() {
        return Err(invalid(
            "minimum",
            format!("{minimum} is not a finite number"),
        ));
    }
    open_unit("confidence", confidence)?;
    let violations: Vec<String> = per_task
        .iter()
        .filter(|(_, v)| !(v.is_finite() && *v >= minimum))
        .map(|(t, _)| t.clone())
        .collect();
    let tasks = per_task.len() as u64;
    let bound = if tasks == 0 {
        1.0
    } else {
        failure_rate_upper_bound(violations.len() as u64, tasks, confidence)?
    };
    Ok(MinimumReport {
        scorer: scorer.to_string(),
        minimum,
        tasks,
        holds: tasks > 0 && violations.is_empty(),
        violations,
        failure_rate_upper_bound: bound,
    })
}

/// The outcome of the canary check.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
pub struct CanaryReport {
    /// Canaries that ran and failed.
    pub failed: Vec<String>,
    /// Canaries with no result at all (fail closed).
    pub missing: Vec<String>,
    /// Whether every canary ran and passed.
    pub holds: bool,
}

/// Checks that every canary task has a result and that it passed.
/// `results` maps task names to pass (`true`) or fail.
pub fn check_canaries<'a>(
    canaries: &[String],
    results: impl Fn(&str) -> Option<bool> + 'a,
) -> CanaryReport {
    let mut failed = Vec::new();
    let mut missing = Vec::new();
    for c in canaries {
        match results(c) {
            Some(true) => {}
            Some(false) => failed.push(c.clone()),
            None => missing.push(c.clone()),
        }
    }
    CanaryReport {
        holds: failed.is_empty() && missing.is_empty(),
        failed,
        missing,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rule_of_three() {
        // 0 failures in n: 1 − 0.05^{1/n} ≈ 3/n.
        for n in [100u64, 1000, 10_000] {
            let ub = failure_rate_upper_bound(0, n, 0.95).expect("valid");
            assert!((ub * n as f64 - 3.0).abs() < 0.05, "n = {n}: {ub}");
        }
        assert!(matches!(
            failure_rate_upper_bound(3, 2, 0.95),
            Err(Error::InvalidParameter {
                name: "failures",
                ..
            })
        ));
        assert!(matches!(
            failure_rate_upper_bound(0, 0, 0.95),
            Err(Error::InvalidParameter { name: "n", .. })
        ));
        assert!(failure_rate_upper_bound(5, 5, 0.95).expect("valid") >= 1.0);
    }

    #[test]
    fn minimum_invariant_reports_violations_by_name() {
        let tasks = vec![
            ("a".to_string(), 1.0),
            ("b".to_string(), 0.99),
            ("c".to_string(), f64::NAN),
        ];
        let r = check_minimum("safety", &tasks, 1.0, 0.95).expect("valid");
        assert!(!r.holds);
        assert_eq!(r.violations, vec!["b".to_string(), "c".to_string()]);
        let ok = check_minimum("safety", &tasks[..1], 1.0, 0.95).expect("valid");
        assert!(ok.holds);
        assert!(
            ok.failure_rate_upper_bound > 0.9,
            "one task proves little: {}",
            ok.failure_rate_upper_bound
        );
        let none = check_minimum("safety", &[], 1.0, 0.95).expect("valid");
        assert!(!none.holds, "no data fails closed");
    }

    #[test]
    fn canaries_fail_closed_when_missing() {
        let canaries = vec!["smoke".to_string(), "login".to_string(), "pay".to_string()];
        let r = check_canaries(&canaries, |t| match t {
            "smoke" => Some(true),
            "login" => Some(false),
            _ => None,
        });
        assert!(!r.holds);
        assert_eq!(r.failed, vec!["login".to_string()]);
        assert_eq!(r.missing, vec!["pay".to_string()]);
        assert!(check_canaries(&canaries, |_| Some(true)).holds);
    }
}
