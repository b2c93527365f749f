//! `ratchet demo`: the whole law end to end (the library's
//! `ratchet_demo::run_demo`), with a progress bar and a summary.

use std::time::Instant;

use anyhow::{Context, Result, bail};
use ratchet_demo::{DemoOptions, DemoSummary, run_demo};

use crate::Ctx;
use crate::flags::DemoFlags;
use crate::out;

/// The demo run in a directory of its own (`--out`, else a new one kept
/// for looking at), its summary said and its report written there.
pub fn run(ctx: &Ctx, flags: DemoFlags) -> Result<u8> {
    let DemoFlags {
        out: out_dir,
        seed,
        proposals,
    } = flags;
    let json = ctx.json;
    let dir = match out_dir {
        Some(d) => d,
        // Kept: the repository, the store and the report are for looking at.
        None => tempfile::Builder::new()
            .prefix("ratchet-demo-")
            .tempdir()
            .context("creating a directory for the demo")?
            .keep(),
    };
    let bar = if json {
        indicatif::ProgressBar::hidden()
    } else {
        indicatif::ProgressBar::new(proposals as u64).with_style(
            indicatif::ProgressStyle::with_template("{msg} [{bar:40}] {pos}/{len} proposals")
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
        )
    };
    bar.set_message("judging");
    let started = Instant::now();
    let summary = run_demo(
        &DemoOptions {
            seed,
            proposals,
            dir: dir.clone(),
        },
        &mut |p| bar.set_position(p.done as u64),
    )?;
    bar.finish_and_clear();
    let elapsed = started.elapsed().as_secs_f64();
    let report = dir.join("report.html");
    let mut store = ratchet_trace::Store::open_read_only(
        &summary.store,
        ratchet_trace::StoreOptions::default(),
    )?;
    let html = ratchet_report::html(&mut store, &ratchet_report::ReportOptions::default())?;
    std::fs::write(&report, html).with_context(|| format!("writing {}", report.display()))?;
    if json {
        out::json(&serde_json::json!({
            "summary": summary,
            "seconds": elapsed,
            "promoted": summary.promoted(),
            "rejected": summary.rejected(),
            "false_promotes": summary.false_promotes(),
            "false_rejects": summary.false_rejects(),
            "false_rejects_at_design": summary.false_rejects_at_design(),
            "good_at_design": summary.good_at_design(),
            "below_design": summary.below_design(),
            "caught": summary.tamper.caught(),
            "report": report,
        }))?;
    } else {
        print_summary(&summary, elapsed)?;
        outln!("  report:     {}  (open it in a browser)", report.display());
    }
    if !summary.chain_verified || !summary.tamper.caught() {
        bail!("the demo's store did not verify, or its edited copy was not caught");
    }
    Ok(0)
}

fn print_summary(s: &DemoSummary, seconds: f64) -> Result<()> {
    outln!(
        "ratchet demo (seed {}): {} proposals judged in {seconds:.1} s",
        s.seed,
        s.proposals.len()
    );
    outln!(
        "  promoted {}, rejected {}; {:.0} tasks scored per decision on average",
        s.promoted(),
        s.rejected(),
        s.mean_tasks()
    );
    outln!(
        "  false promotes: {} of {} proposals no better than their baseline (α = {})",
        s.false_promotes(),
        s.null_proposals(),
        s.alpha
    );
    outln!(
        "  false rejects:  {} of {} better proposals at or beyond the design effect (β = {}: θ ≥ {} on discordant pairs)",
        s.false_rejects_at_design(),
        s.good_at_design(),
        s.beta,
        s.theta1
    );
    let (small, small_promoted) = s.below_design();
    outln!(
        "  smaller gains:  {small_promoted} of {small} promoted (below the design effect: no error rate is promised)"
    );
    let caught: Vec<String> = s
        .regressions
        .iter()
        .filter_map(|r| r.detected_after.map(|n| n.to_string()))
        .collect();
    outln!(
        "  latent regressions: {} fired, {} caught (after {} live requests), {} healed; false alarms {} over {} in-control live requests ({:.2} expected at the chart's ARL0 {})",
        s.regressions.len(),
        caught.len(),
        if caught.is_empty() {
            "-".into()
        } else {
            caught.join(", ")
        },
        s.regressions
            .iter()
            .filter(|r| r.healed_to.is_some())
            .count(),
        s.false_alarms,
        s.in_control_watched,
        s.in_control_watched as f64 / s.live_arl0,
        s.live_arl0
    );
    let ladder: Vec<String> = s
        .ladder
        .iter()
        .map(|r| match r.how {
            "heal" => format!("(heal) {:.3}", r.true_quality),
            _ => format!("{:.3}", r.true_quality),
        })
        .collect();
    outln!("  quality ladder (true pass rate): {}", ladder.join(" → "));
    outln!(
        "  chain: {} events, verified: {}; one byte edited in a copy ({}): caught at seq {}",
        s.events,
        s.chain_verified,
        s.tamper.copy.display(),
        s.tamper
            .fault_seq
            .map_or_else(|| "— not caught".into(), |q| q.to_string())
    );
    outln!("  repository: {}", s.repo.display());
    outln!("  store:      {}", s.store.display());
    Ok(())
}
