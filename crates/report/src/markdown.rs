//! The Markdown summary for a pull request: what was decided, in words.

use ratchet_trace::ReservedKind;
use std::fmt::Write as _;

use ratchet_gate::StageState;
use ratchet_trace::{AsOf, Verified};

use crate::read::{self, Decision, short, stage_name, utc};
use crate::{Result, alpha_beta, decision_scorer, fmt_g};

/// A short Markdown summary fit for a pull-request comment: per class,
/// the latest *final* decision in plain words — what was decided, on how
/// many tasks, under which α and β, the effect with its interval, the
/// failed tests of the candidate by name — then each stage's result; and
/// a comparison still open, if any.
///
/// # Errors
/// [`crate::Error::Fmt`] only (writing to a string).
pub fn markdown(view: &Verified) -> Result<String> {
    let (decisions, unreadable) =
        Decision::read_all(&view.events_of_kinds(&[ReservedKind::Decision.as_str()]));
    let episodes = read::episodes(&decisions);
    let mut out = String::new();
    for (seq, why) in &unreadable {
        writeln!(
            out,
            "**ratchet**: the decision at seq {seq} is not shown: {why} (a ratchet that knows its law reads it).\n"
        )?;
    }
    if episodes.is_empty() {
        out.push_str("**ratchet**: no decision recorded in this store.\n");
        return Ok(out);
    }
    for (class, eps) in &episodes {
        let open = eps.last().filter(|e| !e.is_final()).map(|e| e.last);
        match eps.iter().rev().find(|e| e.is_final()) {
            Some(ep) => decided(&mut out, view, class, ep.last, ep.interim.len() + 1)?,
            None => writeln!(
                out,
                "### ratchet gate: **NO FINAL DECISION** (class `{class}`)\n"
            )?,
        }
        if let Some(d) = open {
            let f = d.sequential();
            writeln!(
                out,
                "Still open: candidate `{}` against `{}` — the gate said *continue*{} (seq {}).\n",
                short(d.candidate()),
                short(d.baseline()),
                f.map(|f| format!(
                    " after {} observations, statistic {:+.3} between {:+.3} and {:+.3}",
                    f.n, f.llr, f.lower, f.upper
                ))
                .unwrap_or_default(),
                d.seq
            )?;
        }
    }
    Ok(out)
}

fn decided(
    out: &mut String,
    view: &Verified,
    class: &str,
    d: &Decision,
    looks: usize,
) -> Result<()> {
    let verb = if d.promoted() {
        "promoted"
    } else if d.truncated() {
        "did not promote (the test was truncated)"
    } else {
        "rejected"
    };
    writeln!(
        out,
        "### ratchet gate: **{}** (class `{class}`)\n",
        d.outcome().to_uppercase()
    )?;
    writeln!(
        out,
        "The gate **{verb}** candidate `{}` against baseline `{}` (decision at seq {}, {} UTC, after {looks} look{} at the gate; trace head `{}`).",
        short(d.candidate()),
        short(d.baseline()),
        d.seq,
        utc(d.ts_ms),
        if looks == 1 { "" } else { "s" },
        short(d.v.trace.hash.to_hex().as_str())
    )?;
    let ab = alpha_beta(view, d)
        .map(|(a, b)| {
            format!(
                "α = {} (false-promote rate), β = {} (false-reject rate)",
                fmt_g(a),
                fmt_g(b)
            )
        })
        .unwrap_or_else(|| "α and β not recorded".into());
    match (d.sequential(), d.effect()) {
        (Some(f), Some((est, lo, hi, tasks, iv))) => {
            writeln!(
                out,
                "It read **{tasks} tasks** scored on both sides (`{}`): the `{}` sequential test, under {ab}, stopped after {} observations at statistic {:+.3} (boundaries {:+.3} and {:+.3}).\n\
                 Effect: **{est:+.4}** — {} — 95 % interval {lo:+.4} to {hi:+.4} ({iv}).",
                decision_scorer(view, d).unwrap_or_else(|| "?".into()),
                f.test.test().as_str(),
                f.n,
                f.llr,
                f.lower,
                f.upper,
                f.test.effect_measure(),
            )?;
        }
        _ => writeln!(
            out,
            "No effect was measured: the decision stopped before the sequential test ({ab})."
        )?,
    }
    if let Some(r) = d.reason() {
        writeln!(out, "Why: {r}.")?;
    }
    writeln!(out)?;
    // Failed tests, by name, of the candidate's recorded runs.
    {
        let runs = view.test_runs(&d.v.candidate, AsOf::Seq(d.at()));
        let failing: Vec<_> = runs.iter().filter(|(_, r)| r.failed > 0).collect();
        if runs.is_empty() {
            writeln!(out, "Tests: no run recorded for the candidate.\n")?;
        } else if failing.is_empty() {
            writeln!(
                out,
                "Tests: no failure in the candidate's {} recorded run{}.\n",
                runs.len(),
                if runs.len() == 1 { "" } else { "s" }
            )?;
        } else {
            writeln!(out, "Failed tests of the candidate:\n")?;
            for (seq, r) in failing {
                let names = if r.failures.is_empty() {
                    "(no names recorded)".to_string()
                } else {
                    r.failures
                        .iter()
                        .map(|f| format!("`{}`", f.replace('`', "'")))
                        .collect::<Vec<_>>()
                        .join(", ")
                };
                let unnamed = r.failed.saturating_sub(r.failures.len() as u64);
                writeln!(
                    out,
                    "* suite `{}` (run at seq {seq}): {} failed — {names}{}",
                    r.suite,
                    r.failed,
                    if unnamed > 0 && !r.failures.is_empty() {
                        format!(" and {unnamed} more")
                    } else {
                        String::new()
                    }
                )?;
            }
            writeln!(out)?;
        }
    }
    writeln!(out, "| stage | result |\n|---|---|")?;
    for s in d.stages() {
        let result = match s.passed {
            StageState::Passed => "passed",
            StageState::Failed => "**failed**",
            StageState::Open => "not decided",
        };
        writeln!(out, "| {} | {result} |", stage_name(&s.stage))?;
    }
    writeln!(out)?;
    Ok(())
}
