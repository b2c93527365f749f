//! `ratchet merge`: branches merged into a branch one at a time, each
//! merge verified in a sandbox before it lands (and deployed).

use anyhow::{Result, anyhow};
use ratchet_orchestrate::{MergeOutcome, MergeRequest};

use crate::cmd::shared::sandbox::print_command;
use crate::flags::MergeFlags;
use crate::{Ctx, exit, out};

/// Each branch's outcome in words or JSON; exit 1 unless every branch
/// landed or was already in.
pub fn run(ctx: &Ctx, flags: MergeFlags) -> Result<u8> {
    let MergeFlags {
        branches,
        into,
        repo,
        deploy,
        run: flags,
    } = flags;
    let mut request = MergeRequest::new(&into, flags.spec(ctx, None)?);
    request.deploy = deploy
        .as_deref()
        .map(|d| shell_words::split(d).map_err(|_| anyhow!("--deploy {d:?}: unbalanced quotes")))
        .transpose()?;
    let mut sandbox = flags.sandbox()?;
    let mut store = ctx.open(flags.key_file.as_deref())?;
    let outcomes = ratchet_orchestrate::merge::merge_branches(
        &repo,
        &mut store,
        sandbox.as_mut(),
        &branches,
        &request,
    )?;
    if ctx.json {
        out::json_in(
            store.id(),
            &serde_json::json!({ "into": into, "outcomes": outcomes }),
        )?;
    } else {
        for o in &outcomes {
            print_outcome(o)?;
        }
    }
    Ok(if outcomes.iter().all(MergeOutcome::succeeded) {
        0
    } else {
        exit::NEGATIVE
    })
}

fn print_outcome(o: &MergeOutcome) -> Result<()> {
    match o {
        MergeOutcome::Landed {
            branch,
            into,
            commit,
            attempts,
            verification,
            deploy,
            ..
        } => {
            outln!("{branch}: landed on {into} as {commit} (attempt {attempts})");
            for c in &verification.commands {
                print_command(c)?;
            }
            if let Some(d) = deploy {
                outln!("  deploy:");
                print_command(d)?;
            }
        }
        MergeOutcome::UpToDate { branch, into, .. } => {
            outln!("{branch}: {into} already contains it")
        }
        MergeOutcome::Conflict {
            branch,
            into,
            report,
        } => {
            outln!("{branch}: CONFLICT with {into}; nothing changed");
            for f in &report.files {
                outln!("  {}", f.path);
                for h in &f.hunks {
                    for l in h.lines() {
                        outln!("    {l}");
                    }
                }
            }
        }
        MergeOutcome::SemanticConflict {
            branch,
            into,
            commit,
            verification,
        } => {
            outln!(
                "{branch}: SEMANTIC CONFLICT — merges cleanly into {into} but the merge {commit} fails verification; nothing landed"
            );
            for c in &verification.commands {
                print_command(c)?;
            }
        }
        MergeOutcome::Refused { branch, reason, .. } => outln!("{branch}: REFUSED — {reason}"),
    }
    Ok(())
}
