//! Drift: `watch`, `heal`, `best`, `arl`.

use std::io::Write;
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};

use anyhow::Result;
use ratchet_drift::{Chart, Follow};
use ratchet_orchestrate::WatchPlan;
use ratchet_trace::{AsOf, CommitId};

use crate::flags::{ArlDetector, ArlFlags, BestFlags, DetectorArg, HealFlags, WatchFlags};
use crate::{Ctx, exit, out};

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
    Ok(if report.alarms > 0 { exit::NEGATIVE } else { 0 })
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
        let on = report.staying_on.as_ref().unwrap_or(&report.alarmed);
        outln!("staying on {on}: {why}");
        if let Some(head) = report.head.as_deref().filter(|h| *h != on.as_str()) {
            outln!("checked out: {head}, not {on}");
        }
    }
    // "was" is what the work tree had checked out, which need not be the
    // alarmed (deployed) commit: say both when they differ.
    let was = report.head.as_deref().unwrap_or("an unborn HEAD");
    match (&report.chosen, report.checked_out) {
        (Some(c), true) => outln!("healed: checked out {c} (was {was})"),
        (Some(c), false) => outln!("dry run: would check out {c} (was {was})"),
        (None, _) if report.stayed.is_some() => {}
        (None, _) => outln!("no commit to heal to"),
    }
    if report.chosen.is_some() && report.head.as_deref() != Some(report.alarmed.as_str()) {
        outln!(
            "the alarm was on {}, the deployed commit; the work tree was not on it",
            report.alarmed
        );
    }
    Ok(0)
}

pub fn best(
    ctx: &Ctx,
    scorer: &str,
    min_n: u64,
    confidence: f64,
    exclude: &[CommitId],
    trust: &ratchet_trace::Sources,
    key_file: Option<&Path>,
) -> Result<u8> {
    let ledger = ctx.ledger_read(key_file)?;
    // A scorer the trace never saw is a mistake to name, not an empty
    // ranking: say which scorers there are.
    if !ledger.view().has_scorer(scorer, AsOf::Head) {
        let known: Vec<String> = ledger
            .view()
            .overview()
            .scorers
            .into_iter()
            .map(|s| s.scorer)
            .collect();
        anyhow::bail!(
            "unknown scorer {scorer:?}: the trace holds no score of it; {}",
            if known.is_empty() {
                "it holds no score at all (record some with `ratchet record-score` or `ratchet ingest`)".to_string()
            } else {
                format!("its scorers are {}", known.join(", "))
            }
        );
    }
    // Only the producers trusted rank the commits.
    let view = &ledger.view().restricted_to(trust);
    // The scorer's direction as the trace declares it (cost and latency
    // improve downwards): the best commit has the smallest upper bound then.
    let lower_is_better = ratchet_scorers::direction_in(ledger.view(), scorer)?
        == ratchet_scorers::Direction::LowerIsBetter;
    let ranking = ratchet_drift::best_commit(
        view,
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
    let reason = ranking
        .is_empty()
        .then(|| why_none_ranks(view, scorer, min_n, exclude));
    if ctx.json {
        out::json_in(
            ledger.store().id(),
            &serde_json::json!({
                "scorer": scorer, "better": direction, "ranking": ranking, "reason": reason
            }),
        )?;
    } else if let Some(reason) = &reason {
        outln!("no commit ranked: {reason}");
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
        // Timings in seconds are often below 10⁻³: significant digits,
        // not four decimals of zeros.
        let unit = ratchet_gate::shown::Unit::of_scorer(scorer);
        let shown = |x: f64| ratchet_gate::shown::number(x, unit);
        for r in &ranking {
            outln!(
                "{:<42} {:>7} {:>9} {:>9} {:>11}",
                r.commit,
                r.n,
                shown(r.mean),
                shown(r.sd),
                shown(r.lower_bound)
            );
        }
    }
    Ok(if ranking.is_empty() {
        exit::NEGATIVE
    } else {
        0
    })
}

/// Why `best` ranked no commit of a known scorer: how many commits have
/// scores of it (at the version ranked, its newest, from the producers
/// trusted), the most any has, against `--min-n`.
fn why_none_ranks(
    view: &ratchet_trace::Verified,
    scorer: &str,
    min_n: u64,
    exclude: &[CommitId],
) -> String {
    let Some(version) = view.scorer_versions(scorer, AsOf::Head).into_iter().next() else {
        return format!(
            "no score of {scorer} is from a producer trusted here (--trust names whose scores rank)"
        );
    };
    let stats: Vec<_> = view
        .commit_stats(
            ratchet_trace::ScorerRef::at_version(scorer, &version.version),
            AsOf::Head,
        )
        .into_iter()
        .filter(|s| !exclude.contains(&s.commit))
        .collect();
    let most = stats.iter().map(|s| s.n).max().unwrap_or(0);
    if stats.is_empty() {
        return format!(
            "every commit with scores of {scorer} (version {}) was excluded",
            version.version
        );
    }
    if most < min_n {
        return format!(
            "{} commit(s) have scores of {scorer} (version {}), the most any has is {most}, and a commit needs --min-n {min_n}: record more scores, or pass a smaller --min-n (at least 2)",
            stats.len(),
            version.version
        );
    }
    format!(
        "{} commit(s) have at least --min-n {min_n} scores of {scorer} (version {}), but no confidence bound could be drawn from them (their statistics overflowed)",
        stats.iter().filter(|s| s.n >= min_n).count(),
        version.version
    )
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

/// `ratchet watch`: the flags checked and turned into the library's terms, then run.
pub fn watch_command(ctx: &Ctx, flags: WatchFlags) -> Result<u8> {
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
        key_file,
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
    crate::cmd::drift::watch(
        ctx,
        &crate::cmd::drift::WatchArgs {
            plan: ratchet_orchestrate::WatchPlan {
                commit: ctx.commit(&commit)?,
                scorer,
                from,
                chart,
                auto: (bernoulli, cusum),
                two_sided,
                min_n,
                trust,
            },
            follow: ratchet_drift::Follow {
                record,
                keep_following: follow,
                interval: std::time::Duration::from_millis(interval_ms),
            },
            key_file,
        },
    )
}

/// `ratchet heal`: the flags checked and turned into the library's terms, then run.
pub fn heal_command(ctx: &Ctx, flags: HealFlags) -> Result<u8> {
    let HealFlags {
        commit,
        repo,
        min_n,
        dry_run,
        key_file,
        trust,
    } = flags;
    let only = commit.map(|c| ctx.commit(&c)).transpose()?;
    let options = ratchet_orchestrate::HealOptions {
        min_n,
        dry_run,
        trust: trusted(&trust)?,
        ..Default::default()
    };
    crate::cmd::drift::heal(ctx, &repo, only.as_ref(), &options, key_file.as_deref())
}

/// `ratchet best`: the flags checked and turned into the library's terms, then run.
pub fn best_command(ctx: &Ctx, flags: BestFlags) -> Result<u8> {
    let BestFlags {
        scorer,
        min_n,
        confidence,
        exclude,
        key_file,
        trust,
    } = flags;
    let exclude = exclude
        .iter()
        .map(|c| ctx.commit(c))
        .collect::<Result<Vec<_>>>()?;
    crate::cmd::drift::best(
        ctx,
        &scorer,
        min_n,
        confidence,
        &exclude,
        &trusted(&trust)?,
        key_file.as_deref(),
    )
}

/// The producers `--trust` names (none: the key holder's own scores).
fn trusted(list: &[String]) -> Result<ratchet_trace::Sources> {
    Ok(ratchet_gate::Trust::sources(
        (!list.is_empty()).then_some(list),
        "--trust",
    )?)
}

/// `ratchet arl`: the flags checked and turned into the library's terms, then run.
pub fn arl_command(ctx: &Ctx, flags: ArlFlags) -> Result<u8> {
    let ArlFlags {
        detector,
        k,
        h,
        lambda,
        width,
        target,
    } = flags;
    use ratchet_drift::Chart;
    let chart = match (detector, h, width, target) {
        (ArlDetector::Cusum, Some(h), _, _) => Chart::Cusum { k, h },
        (ArlDetector::Cusum, None, _, Some(t)) => Chart::cusum_for_arl0(k, t)?,
        (ArlDetector::Ewma, _, Some(l), _) => Chart::Ewma { lambda, l },
        (ArlDetector::Ewma, _, None, Some(t)) => Chart::ewma_for_arl0(lambda, t)?,
        (ArlDetector::Cusum, None, _, None) => {
            anyhow::bail!("give --h, or --target to solve for it")
        }
        (ArlDetector::Ewma, _, None, None) => {
            anyhow::bail!("give --width, or --target to solve for it")
        }
    };
    crate::cmd::drift::arl(ctx, chart)
}
