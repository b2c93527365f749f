//! `ratchet calibrate`: what a class's test does for each true effect —
//! P(promote), E[N], N quantiles — under assumed or measured conditions.

use std::io::Write;

use anyhow::Result;

use crate::cmd::shared::policy_file::{class_policy, policy_file};
use crate::flags::CalibrateFlags;
use crate::{Ctx, out};

/// The calibration table of `--class`, its conditions measured from the
/// baseline's scores with `--from-store`.
pub fn run(ctx: &Ctx, flags: CalibrateFlags) -> Result<u8> {
    let CalibrateFlags {
        policy,
        class,
        p0,
        sigma,
        draw,
        runs,
        seed,
        from_store,
        key_file,
    } = flags;
    let mut assumptions = ratchet_gate::Assumptions {
        p0,
        sigma,
        draw,
        runs,
        seed,
    };
    let from_store = from_store.map(|b| ctx.commit(&b)).transpose()?;
    let key_file = key_file.as_deref();
    // The pinned policy when the store pins the class (and exists); a
    // policy file alone otherwise.
    // Only a store that does not exist is passed over: one that cannot be
    // opened, or does not verify, is an error (a damaged store must not
    // make an edited file the policy).
    let missing = |e: &anyhow::Error| {
        e.chain().any(|c| {
            matches!(
                crate::trace_error_of(c),
                Some(ratchet_trace::Error::StoreMissing { .. })
            )
        })
    };
    let ledger = match ctx.ledger_read(key_file) {
        Ok(l) => Some(l),
        Err(e) if from_store.is_none() && missing(&e) => None,
        Err(e) => return Err(e),
    };
    let view = ledger.as_ref().map(ratchet_trace::Ledger::view);
    let class_policy = match view {
        Some(v) => class_policy(ctx, Some(v), &class, policy.as_deref())?.0,
        None => policy_file(ctx, policy.as_deref())?
            .ok_or_else(|| anyhow::anyhow!("no policy file: pass --policy FILE"))?
            .class(&class)?
            .clone(),
    };
    let class_policy = &class_policy;
    let mut world = None;
    let unit = ratchet_gate::shown::Unit::of_scorer(&class_policy.scorer);
    if let (Some(baseline), Some(view)) = (from_store.as_ref(), view) {
        let baseline_world = ratchet_gate::baseline_world(view, class_policy, baseline)?;
        if !ctx.json {
            outln!(
                "measured from {} task(s) of {} version {}: p0 {}, σ of a difference {}, draw ratio {}",
                baseline_world.tasks,
                baseline_world.scorer,
                baseline_world.scorer_version,
                ratchet_gate::shown::sig(baseline_world.p0),
                baseline_world.sigma.map_or("n/a (one task)".into(), |s| {
                    ratchet_gate::shown::number(s, unit)
                }),
                baseline_world.draw.map_or(
                    format!("{} (assumed: no task ran twice)", assumptions.draw),
                    ratchet_gate::shown::sig
                )
            );
        }
        assumptions = assumptions.measured(&baseline_world);
        world = Some(baseline_world);
    }
    let progress =
        indicatif::ProgressBar::new(ratchet_gate::CALIBRATION_ROWS as u64).with_message("effects");
    let rows =
        ratchet_gate::calibration_table(class_policy, &assumptions, &mut || progress.inc(1))?;
    progress.finish_and_clear();
    let warning = ratchet_gate::power_warning(class_policy, &rows, assumptions.runs);
    if ctx.json {
        out::json(&serde_json::json!({
            "class": class, "assumptions": assumptions, "measured_from": world, "rows": rows,
            "warning": warning
        }))?;
        return Ok(0);
    }
    write_calibration(&rows, warning.as_deref(), unit)?;
    Ok(0)
}

/// The calibration table in words: one row per true effect (a mean shift
/// in the scorer's unit, positive = better).
fn write_calibration(
    rows: &[ratchet_gate::CalibrationRow],
    warning: Option<&str>,
    unit: ratchet_gate::shown::Unit,
) -> Result<()> {
    let mut stdout = std::io::stdout().lock();
    writeln!(
        stdout,
        "{:<22} {:>10} {:>12} {:>9} {:>8} {:>8} {:>8}  method",
        "true effect (+ better)", "P(promote)", "P(truncated)", "E[N]", "N10", "N50", "N90"
    )?;
    for r in rows {
        writeln!(
            stdout,
            "{:<22} {:>10.4} {:>12.4} {:>9.1} {:>8} {:>8} {:>8}  {}{}",
            r.effect.shown(unit),
            r.p_promote,
            r.p_truncated,
            r.expected_n,
            r.n_quantiles[0],
            r.n_quantiles[1],
            r.n_quantiles[2],
            match r.method {
                ratchet_gate::CalibrationMethod::Exact => "exact",
                ratchet_gate::CalibrationMethod::MonteCarlo => "monte carlo",
            },
            if r.design { "  (design effect)" } else { "" }
        )?;
    }
    if let Some(w) = warning {
        writeln!(stdout, "warning: {w}")?;
    }
    Ok(())
}
