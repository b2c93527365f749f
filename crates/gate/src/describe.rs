//! Each stage's figures in one line of words: what `ratchet gate` prints
//! under each stage and what a report shows beside it.

use std::fmt;

use crate::decide::{
    EffectInterval, GuardrailDetails, GuardrailResult, InvariantsDetails, SequentialDetails, Stage,
    StageDetails, StageReport, StageState, TestFigures, TestsDetails, VerificationDetails,
};
use crate::shown::{Scale, Unit, number, sig, signed};

impl fmt::Display for StageReport {
    /// What the stage computed, against what, in one line; the effect on
    /// the gate's judged scale (positive = better), the primary scorer's
    /// direction being unknown here ([`StageReport::shown`] knows it).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.shown(&Scale::default()))
    }
}

impl StageReport {
    /// What the stage computed, against what, in one line, its figures in
    /// their scorer's unit and its effect as `scale` reads it
    /// (`candidate − baseline`, [`Scale::effect`]).
    pub fn shown(&self, scale: &Scale) -> String {
        match &self.details {
            StageDetails::Verification(d) => verification(d),
            StageDetails::Tests(d) => tests(d),
            StageDetails::Invariants(d) => invariants(d),
            StageDetails::Sequential(d) => sequential(d, scale),
            StageDetails::Guardrail(d) => {
                let unit = match &self.stage {
                    Stage::Guardrail(scorer) => Unit::of_scorer(scorer),
                    _ => Unit::Plain,
                };
                guardrail(d, self.passed, unit)
            }
            StageDetails::TooFewTasks(d) => format!("{} task(s) scored on both sides", d.tasks),
            StageDetails::Refused(d) => refused(d),
            StageDetails::Benchmarks(d) => benchmarks(d),
        }
    }
}

fn refused(d: &crate::decide::Refused) -> String {
    use crate::decide::Refusal;
    let why = match &d.because {
        Refusal::OutOfRange { score, low, high } => {
            format!("a score of {score} outside [{low}, {high}]")
        }
        Refusal::NoSpread => "paired differences all equal".to_string(),
        Refusal::Skewed { skewness, limit } => {
            format!("paired differences of skewness {skewness:+.2} (beyond ±{limit})")
        }
    };
    format!(
        "{} refused {why}, after {} task(s) scored on both sides",
        d.test.as_str(),
        d.tasks
    )
}

fn verification(d: &VerificationDetails) -> String {
    match &d.fault {
        Some(f) => format!("fault: {f}"),
        None => format!(
            "{} events recomputed{}{}",
            d.size,
            if d.macs_checked {
                ", MACs checked"
            } else if d.keyed {
                ", MACs NOT checked"
            } else {
                ""
            },
            if d.checkpoint_checked {
                ", consistent with the checkpoint"
            } else {
                ""
            }
        ),
    }
}

fn tests(d: &TestsDetails) -> String {
    if d.suites.is_empty() {
        return "no required suite".into();
    }
    d.suites
        .iter()
        .map(|x| {
            let failed: u64 = x.runs.iter().map(|r| r.failed).sum();
            format!(
                "{}: {} run(s), {failed} failed test(s)",
                x.suite,
                x.runs.len()
            )
        })
        .collect::<Vec<_>>()
        .join("; ")
}

fn invariants(d: &InvariantsDetails) -> String {
    format!(
        "{} invariant(s){}",
        d.invariants.len(),
        if d.canaries.is_some() {
            ", canaries checked"
        } else {
            ""
        }
    )
}

fn sequential(d: &SequentialDetails, scale: &Scale) -> String {
    let unit = scale.unit();
    let (name, hypotheses) = match &d.test {
        TestFigures::Bernoulli {
            theta0,
            theta1,
            candidate_only_passed,
            baseline_only_passed,
            both_or_neither,
            ..
        } => (
            "bernoulli",
            format!(
                "discordant pairs, θ0 {theta0} vs θ1 {theta1}: candidate alone passed {candidate_only_passed}, baseline alone {baseline_only_passed}, both or neither {both_or_neither}"
            ),
        ),
        TestFigures::Gaussian { mu1, variance, .. } => (
            "gaussian",
            format!(
                "paired differences, mean 0 vs {} (variance {})",
                number(*mu1, unit),
                variance.map_or("n/a".into(), sig)
            ),
        ),
        TestFigures::Betting {
            range,
            gap,
            log_capital_promote,
            log_capital_reject,
            promote_bound,
            reject_bound,
            ..
        } => (
            "betting",
            format!(
                "scores in [{}, {}], mean difference above 0 or below {}: ln capital for {log_capital_promote:.3} of {promote_bound:.3}, against {log_capital_reject:.3} of {reject_bound:.3}",
                number(range[0], unit),
                number(range[1], unit),
                number(*gap, unit)
            ),
        ),
        TestFigures::Paired {
            elo0, elo1, counts, ..
        } => (
            "paired",
            format!(
                "GSPRT, Elo {elo0} vs {elo1}: {}",
                counts
                    .iter()
                    .map(|(k, v)| format!("{k} {v}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        ),
    };
    let effect = match (scale.effect(d), d.effect) {
        (Some(shown), Some(e)) => format!(
            "; effect — {} ({} {}, shown only)",
            shown.text,
            // With the decision's bound first, the method named is the
            // two-sided interval's.
            if e.bound.is_some() {
                "two-sided:"
            } else {
                "95 %"
            },
            e.interval
                .map_or("fixed-sample interval", EffectInterval::as_str)
        ),
        _ => String::new(),
    };
    // Betting's statistic is its capital, shown in its hypotheses with its
    // bounds: an LLR and Wald's boundaries beside it would be a second,
    // different pair of numbers for the same look.
    if matches!(d.test, TestFigures::Betting { .. }) {
        return format!("{name} ({hypotheses}) after {} observation(s){effect}", d.n);
    }
    format!(
        "{name} ({hypotheses}); LLR {:.3} after {} observation(s), boundaries [{:.3}, {:.3}] as applied (Wald [{:.3}, {:.3}]){effect}",
        d.llr, d.n, d.lower, d.upper, d.wald_lower, d.wald_upper
    )
}

fn guardrail(d: &GuardrailDetails, passed: StageState, unit: Unit) -> String {
    // `excess` is how far the candidate is worse than the baseline
    // allows (margin included): non-inferior means shown below 0.
    let (method, excess, shown) = match d.result {
        GuardrailResult::Welch(r) => ("welch", r.excess, format!("p = {}", sig(r.p_value))),
        GuardrailResult::Sequence(r) => (
            "sequence",
            r.excess,
            format!("upper bound {}", signed(r.upper_bound, unit)),
        ),
    };
    format!(
        "{method}: excess over the margin {} ({shown}); {}",
        signed(excess, unit),
        if passed == StageState::Passed {
            "non-inferior"
        } else {
            "not shown non-inferior"
        }
    )
}

/// "benchmarks (paired by round): 28 unchanged, 1 not slower, 1 slower —
/// slowest: parse ×1.251 [1.210, 1.290]".
fn benchmarks(d: &crate::BenchmarksDetails) -> String {
    use crate::benchmarks::BenchVerdict;
    let mut counts: Vec<(BenchVerdict, usize)> = Vec::new();
    for r in &d.benchmarks {
        match counts.iter_mut().find(|(v, _)| *v == r.verdict) {
            Some((_, n)) => *n += 1,
            None => counts.push((r.verdict, 1)),
        }
    }
    let tally: Vec<String> = counts
        .iter()
        .map(|(v, n)| format!("{n} {}", v.as_str()))
        .collect();
    let first = d.benchmarks.first().map_or(String::new(), |r| {
        format!(
            "; first: {} ×{:.3} [{:.3}, {:.3}] over {} pair(s)",
            r.label(),
            r.ratio,
            r.low,
            r.high,
            r.n
        )
    });
    format!(
        "benchmarks ({}; regression {:.1} %, noise {:.1} %): {}{first}",
        if d.paired {
            "paired by round"
        } else {
            "unpaired samples: the machine's drift is not cancelled"
        },
        d.regression * 100.0,
        d.equivalence * 100.0,
        tally.join(", ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Stage;
    use crate::decide::{SuiteReport, SuiteRun, TooFewTasks};

    #[test]
    fn each_stage_says_what_it_computed_in_one_line() {
        let report = |stage: Stage, passed: StageState, details: StageDetails| StageReport {
            stage,
            passed,
            details,
        };
        let tests = report(
            Stage::Tests,
            StageState::Failed,
            StageDetails::Tests(TestsDetails {
                suites: vec![SuiteReport {
                    suite: "unit".into(),
                    passed: false,
                    runs: vec![SuiteRun {
                        seq: 3,
                        passed: 9,
                        failed: 2,
                        skipped: 0,
                    }],
                }],
            }),
        );
        assert_eq!(tests.to_string(), "unit: 1 run(s), 2 failed test(s)");
        let none = report(
            Stage::Tests,
            StageState::Passed,
            StageDetails::Tests(TestsDetails { suites: Vec::new() }),
        );
        assert_eq!(none.to_string(), "no required suite");
        let few = report(
            Stage::Sequential,
            StageState::Open,
            StageDetails::TooFewTasks(TooFewTasks {
                test: Some(crate::TestKind::Paired),
                tasks: 4,
            }),
        );
        assert_eq!(few.to_string(), "4 task(s) scored on both sides");
    }
}
