//! The Markdown summary for a pull request: what was decided, in words.

use ratchet_trace::ReservedKind;
use std::fmt::Write as _;

use ratchet_trace::{AsOf, CommitId, Verified};
use serde_json::Value;

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
    let decisions: Vec<Decision> = view
        .events_of_kinds(&[ReservedKind::Decision.as_str()])
        .into_iter()
        .filter(|e| e.origin.is_none())
        .map(|e| Decision {
            seq: e.seq,
            ts_ms: e.ts_ms,
            v: read::payload(e),
        })
        .collect();
    let episodes = read::episodes(&decisions);
    if episodes.is_empty() {
        return Ok("**ratchet**: no decision recorded in this store.\n".into());
    }
    let mut out = String::new();
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
                f.and_then(|f| Some(format!(
                    " after {} observations, statistic {:+.3} between {:+.3} and {:+.3}",
                    f["n"].as_u64()?,
                    f["llr"].as_f64()?,
                    f["lower"].as_f64()?,
                    f["upper"].as_f64()?
                )))
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
    let verb = match (d.verdict(), d.v["outcome"]["cause"].as_str()) {
        ("promote", _) => "promoted",
        ("reject", Some("truncated")) => "did not promote (the test was truncated)",
        _ => "rejected",
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
        short(d.v["trace"]["hash"].as_str().unwrap_or(""))
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
                f["test"].as_str().unwrap_or("?"),
                f["n"],
                f["llr"].as_f64().unwrap_or(f64::NAN),
                f["lower"].as_f64().unwrap_or(f64::NAN),
                f["upper"].as_f64().unwrap_or(f64::NAN),
                f["effect_measure"]
                    .as_str()
                    .unwrap_or("candidate − baseline"),
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
    if let Ok(c) = CommitId::parse(d.candidate()) {
        let runs = view.test_runs(&c, AsOf::Seq(d.at()));
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
        let result = match &s["passed"] {
            Value::Bool(true) => "passed",
            Value::Bool(false) => "**failed**",
            _ => "not decided",
        };
        writeln!(out, "| {} | {result} |", stage_name(&s["stage"]))?;
    }
    writeln!(out)?;
    Ok(())
}
