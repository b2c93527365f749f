//! Drift: `watch`, `heal`, `best`, `arl`.

use std::io::Write;
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};

use anyhow::Result;
use ratchet_drift::{Chart, Follow};
use ratchet_orchestrate::WatchPlan;
use ratchet_trace::CommitId;

use crate::{Ctx, EXIT_NEGATIVE, out};

/// `watch`'s flags, typed.
#[derive(Debug)]
pub struct WatchArgs {
    pub plan: WatchPlan,
    pub follow: Follow,
    pub key_file: Option<PathBuf>,
}

pub fn watch(ctx: &Ctx, a: &WatchArgs) -> Result<u8> {
    // Verified once; each poll then reads only what is new (`refresh`).
    let mut ledger = ctx.ledger(a.key_file.as_deref())?;
    let mut monitor = ratchet_orchestrate::start_watch(&mut ledger, &a.plan)?;
    let watch = monitor.watch();
    if !ctx.json {
        outln!(
            "following {} {} after seq {}: {}, watching {}",
            a.plan.commit,
            a.plan.scorer,
            monitor.position(),
            monitor.chart(),
            watch
        );
    }
    let json = ctx.json;
    let stream = json && a.follow.keep_following;
    let mut alarms = Vec::new();
    let report = monitor.follow(&mut ledger, &a.follow, &mut |alarm, appended| {
        if stream {
            // Following without end: one JSON object per line, as they come.
            if out::json_line(&serde_json::json!({ "alarm": alarm, "recorded": appended })).is_err()
            {
                return ControlFlow::Break(());
            }
        } else if json {
            alarms.push(serde_json::json!({ "alarm": alarm, "recorded": appended }));
        } else {
            let said = writeln!(
                std::io::stdout().lock(),
                "ALARM {} {}: {} shift at seq {} (change from seq {}), statistic {:.3} > {:.3}{}",
                alarm.commit,
                alarm.scorer,
                alarm.alarm.shift,
                alarm.seq,
                alarm.change_seq,
                alarm.alarm.statistic,
                alarm.alarm.limit,
                match (a.follow.record, appended) {
                    (true, true) => ", recorded",
                    (true, false) => ", recorded before",
                    _ => "",
                }
            );
            if said.is_err() {
                return ControlFlow::Break(());
            }
        }
        ControlFlow::Continue(())
    })?;
    if json && !stream {
        out::json_in(
            ledger.store().id(),
            &serde_json::json!({
                "commit": a.plan.commit, "scorer": a.plan.scorer, "chart": monitor.chart(), "watch": watch,
                "alarms": alarms, "report": report
            }),
        )?;
    } else if !json {
        outln!(
            "followed to seq {}: {} alarm(s)",
            report.position,
            report.alarms
        );
    }
    Ok(if report.alarms > 0 { EXIT_NEGATIVE } else { 0 })
}

pub fn heal(
    ctx: &Ctx,
    repo: &Path,
    only: Option<&CommitId>,
    options: &ratchet_orchestrate::HealOptions,
    key_file: Option<&Path>,
) -> Result<u8> {
    let mut ledger = ctx.ledger(key_file)?;
    let (report, _) = ratchet_orchestrate::heal_latest(repo, &mut ledger, only, options)?;
    if ctx.json {
        out::json_in(ledger.store().id(), &report)?;
        return Ok(0);
    }
    for (c, why) in &report.skipped {
        outln!("skipped {c}: {why}");
    }
    if let Some(why) = &report.stayed {
        outln!("staying on {}: {why}", report.alarmed);
    }
    match (&report.chosen, report.checked_out) {
        (Some(c), true) => outln!("healed: checked out {c} (was {})", report.alarmed),
        (Some(c), false) => outln!("dry run: would check out {c} (was {})", report.alarmed),
        (None, _) if report.stayed.is_some() => {}
        (None, _) => outln!("no commit to heal to"),
    }
    Ok(0)
}

pub fn best(
    ctx: &Ctx,
    scorer: &str,
    min_n: u64,
    confidence: f64,
    exclude: &[CommitId],
    key_file: Option<&Path>,
) -> Result<u8> {
    let ledger = ctx.ledger_read(key_file)?;
    // The scorer's direction as the trace declares it (cost and latency
    // improve downwards): the best commit has the smallest upper bound then.
    let lower_is_better = ratchet_scorers::direction_in(ledger.view(), scorer)?
        == ratchet_scorers::Direction::LowerIsBetter;
    let ranking = ratchet_drift::best_commit(
        ledger.view(),
        &ratchet_drift::Ranking {
            scorer,
            version: None,
            min_n,
            confidence,
            exclude,
            lower_is_better,
        },
    )?;
    let direction = if lower_is_better { "lower" } else { "higher" };
    if ctx.json {
        out::json_in(
            ledger.store().id(),
            &serde_json::json!({
                "scorer": scorer, "better": direction, "ranking": ranking
            }),
        )?;
    } else {
        outln!(
            "{:<42} {:>7} {:>9} {:>9} {:>11}",
            "commit",
            "n",
            "mean",
            "sd",
            if lower_is_better {
                "upper bound"
            } else {
                "lower bound"
            }
        );
        for r in &ranking {
            outln!(
                "{:<42} {:>7} {:>9.4} {:>9.4} {:>11.4}",
                r.commit,
                r.n,
                r.mean,
                r.sd,
                r.lower_bound
            );
        }
    }
    Ok(if ranking.is_empty() { EXIT_NEGATIVE } else { 0 })
}

pub fn arl(ctx: &Ctx, chart: Chart) -> Result<u8> {
    let profile = ratchet_drift::arl_profile(chart)?;
    if ctx.json {
        out::json(&profile)?;
        return Ok(0);
    }
    outln!("{}", profile.chart);
    outln!("{:>8} {:>12} {:>12}", "shift σ", "ARL (chain)", "Siegmund");
    for r in &profile.rows {
        let s = r.siegmund.map_or_else(|| "-".into(), |v| format!("{v:.2}"));
        outln!("{:>8.2} {:>12.2} {s:>12}", r.shift, r.arl);
    }
    Ok(0)
}
