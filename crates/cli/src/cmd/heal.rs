//! `ratchet heal`: after an alarm, the work tree moved to the best
//! measured commit (or told why it stays).

use anyhow::Result;

use crate::cmd::shared::trusted;
use crate::flags::HealFlags;
use crate::{Ctx, out};

/// The latest alarm healed (of `--commit`'s stream only, when given).
pub fn run(ctx: &Ctx, flags: HealFlags) -> Result<u8> {
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
    let mut ledger = ctx.ledger(key_file.as_deref())?;
    let (report, _) =
        ratchet_orchestrate::heal_latest(&repo, &mut ledger, only.as_ref(), &options)?;
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
