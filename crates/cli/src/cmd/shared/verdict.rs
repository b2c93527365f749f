//! A verdict in words (`gate`, `gate --server`, `verify --class`, `bench`).

use std::io::Write;

use anyhow::Result;
use ratchet_gate::{Outcome, Stage, StageState, Verdict};

use crate::out;

/// The verdict in words, its figures read on `scale` (the primary
/// scorer's unit and direction).
pub fn print_verdict(v: &Verdict, scale: &ratchet_gate::shown::Scale) -> Result<()> {
    let mut stdout = std::io::stdout().lock();
    match &v.outcome {
        Outcome::Promote => writeln!(
            stdout,
            "PROMOTE {} over {} ({})",
            v.candidate, v.baseline, v.class
        )?,
        Outcome::Reject { stage, reason, .. } => {
            let what = v.outcome.status().headline();
            writeln!(stdout, "{what} at {}: {reason}", stage)?
        }
        Outcome::Continue {
            expected_more,
            reason,
        } => {
            // A benchmarks class counts pairs of runs, not tasks.
            let benchmarks = v
                .stages
                .iter()
                .any(|s| matches!(s.details, ratchet_gate::StageDetails::Benchmarks(_)));
            let more = if benchmarks {
                "runs of each side (or `ratchet bench` rounds)"
            } else {
                "tasks"
            };
            writeln!(
                stdout,
                "CONTINUE: about {expected_more} more {more} needed ({reason})"
            )?
        }
    }
    // A benchmarks class leads with its table: regressions first.
    for s in &v.stages {
        if let ratchet_gate::StageDetails::Benchmarks(d) = &s.details {
            write_benchmarks(&mut stdout, d, scale)?;
        }
    }
    for s in &v.stages {
        let mark = match s.passed {
            StageState::Passed => "pass",
            StageState::Failed => "FAIL",
            StageState::Open => "open",
        };
        writeln!(stdout, "  {mark:<4}  {:<20} {}", s.stage, s.shown(scale))?;
    }
    // A promotion with no stage of a test: the class runs none (`test =
    // "none"`), said so that no one looks for the effect it did not measure.
    if matches!(v.outcome, Outcome::Promote)
        && !v
            .stages
            .iter()
            .any(|s| matches!(s.stage, Stage::Sequential | Stage::Guardrail(_)))
    {
        writeln!(
            stdout,
            "  (no sequential test: the class is decided by its required suites and invariants alone)"
        )?;
    }
    // Evidence stored but not read: its producer is not one the class trusts.
    for a in &v.set_aside {
        let what = match (a.scores, a.test_runs) {
            (0, runs) => format!("{runs} test run(s)"),
            (scores, 0) => format!("{scores} score(s)"),
            (scores, runs) => format!("{scores} score(s) and {runs} test run(s)"),
        };
        writeln!(
            stdout,
            "  set aside: {what} about the {} from {}: not a producer class {} trusts for the {} (its `trust`)",
            a.side, a.producer, v.class, a.side
        )?;
    }
    // The order the test read: the declared list (and what it left
    // unread), the name sweep (law 5), or the baseline's trace order (laws
    // 2–4) and how to fix it.
    if let Some(order) = &v.order {
        writeln!(stdout, "  order: {}", order.words())?;
    }
    writeln!(
        stdout,
        "policy {} at trace size {} ({})",
        out::short(&v.policy_hash.to_hex()),
        v.trace.size,
        out::short(&v.trace.hash.to_hex())
    )?;
    Ok(())
}

/// A benchmarks stage's table: each benchmark's figures on `scale` and its
/// verdict, then how the ratios were read.
fn write_benchmarks(
    o: &mut impl Write,
    d: &ratchet_gate::BenchmarksDetails,
    scale: &ratchet_gate::shown::Scale,
) -> Result<()> {
    use ratchet_gate::shown::number;
    writeln!(
        o,
        "  {:<32} {:>12} {:>12} {:>26}  verdict",
        "benchmark", "baseline", "candidate", "ratio [interval]"
    )?;
    for r in &d.benchmarks {
        writeln!(
            o,
            "  {:<32} {:>12} {:>12} {:>26}  {}",
            r.label(),
            number(r.baseline, scale.unit()),
            number(r.candidate, scale.unit()),
            format!("×{:.3} [{:.3}, {:.3}]", r.ratio, r.low, r.high),
            r.verdict.as_str()
        )?;
    }
    writeln!(
        o,
        "  ({}; ratio = candidate ÷ baseline, lower bound at α/{} per benchmark, upper at α)",
        if d.paired {
            "paired by round"
        } else {
            "unpaired samples: the machine's drift between the two runs is not cancelled"
        },
        d.benchmarks.len()
    )?;
    Ok(())
}
