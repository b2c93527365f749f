//! `ratchet watch`: a commit's live scores followed with a change
//! detector, alarms printed (and recorded).

use std::io::Write;
use std::ops::ControlFlow;

use anyhow::Result;
use ratchet_drift::Follow;
use ratchet_orchestrate::WatchPlan;

use crate::cmd::shared::trusted;
use crate::flags::{DetectorArg, WatchFlags};
use crate::{Ctx, exit, out};

/// The stream followed (once, or with `--follow` until stopped), each
/// alarm said (and recorded with `--record`); exit 1 if any was raised.
pub fn run(ctx: &Ctx, flags: WatchFlags) -> Result<u8> {
    let key_file = flags.key_file.clone();
    let (plan, follow) = plan(ctx, flags)?;
    // Verified once; each poll then reads only what is new (`refresh`).
    let mut ledger = ctx.ledger(key_file.as_deref())?;
    let mut monitor = ratchet_orchestrate::start_watch(&mut ledger, &plan)?;
    let watch = monitor.watch();
    if !ctx.json {
        outln!(
            "following {} {} after seq {}: {}, watching {}",
            plan.commit,
            plan.scorer,
            monitor.position(),
            monitor.chart(),
            watch
        );
    }
    let json = ctx.json;
    let stream = json && follow.keep_following;
    let mut alarms = Vec::new();
    let report = monitor.follow(&mut ledger, &follow, &mut |alarm, appended| {
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
                match (follow.record, appended) {
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
                "commit": plan.commit, "scorer": plan.scorer, "chart": monitor.chart(), "watch": watch,
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
    Ok(if report.alarms > 0 { exit::NEGATIVE } else { 0 })
}

/// The flags checked and turned into the library's terms: the stream and
/// chart to follow, and how.
fn plan(ctx: &Ctx, flags: WatchFlags) -> Result<(WatchPlan, Follow)> {
    let WatchFlags {
        commit,
        scorer,
        from,
        detector,
        k,
        ewma_lambda,
        page_hinkley,
        pass_shift,
        h,
        arl0,
        two_sided,
        min_n,
        record,
        follow,
        interval_ms,
        key_file: _,
        trust,
    } = flags;
    let trust = trusted(&trust)?;
    if detector == DetectorArg::PageHinkley && arl0.is_some() {
        anyhow::bail!(
            "--arl0 cannot be honoured by Page–Hinkley: its statistic runs about the running mean, and no run-length computation for its threshold exists here; set its threshold with --page-hinkley DELTA LAMBDA (σ units), or use --detector cusum or ewma, whose limits are solved for --arl0"
        );
    }
    let arl0 = arl0.unwrap_or(10_000.0);
    // The sides that alarm: the harm only (symmetric, so either
    // one-sided solution), or both.
    let sides = if two_sided {
        ratchet_drift::Watch::Both
    } else {
        ratchet_drift::Watch::Decreases
    };
    let cusum = match h {
        Some(h) => ratchet_drift::Chart::Cusum { k, h },
        None => ratchet_drift::Chart::cusum_for_arl0_watching(k, arl0, sides)?,
    };
    let bernoulli = ratchet_drift::Chart::Bernoulli {
        shift: pass_shift,
        arl0,
    };
    let chart = match detector {
        DetectorArg::Ewma => Some(ratchet_drift::Chart::ewma_for_arl0_watching(
            ewma_lambda,
            arl0,
            sides,
        )?),
        DetectorArg::PageHinkley => Some(ratchet_drift::Chart::PageHinkley {
            delta: page_hinkley.first().copied().unwrap_or(0.5),
            lambda: page_hinkley.get(1).copied().unwrap_or(50.0),
        }),
        DetectorArg::Bernoulli => Some(bernoulli),
        DetectorArg::Cusum => Some(cusum),
        // Settled on the verified trace: bernoulli for 0/1 streams.
        DetectorArg::Auto if two_sided => Some(cusum),
        DetectorArg::Auto => None,
    };
    Ok((
        WatchPlan {
            commit: ctx.commit(&commit)?,
            scorer,
            from,
            chart,
            auto: (bernoulli, cusum),
            two_sided,
            min_n,
            trust,
        },
        Follow {
            record,
            keep_following: follow,
            interval: std::time::Duration::from_millis(interval_ms),
        },
    ))
}
