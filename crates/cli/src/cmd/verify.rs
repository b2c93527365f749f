//! `ratchet verify`: commands run against a directory or a git revision
//! in a sandbox, recorded (and with `--class`, the gate decides on what
//! they wrote).

use anyhow::{Context, Result};
use ratchet_orchestrate::checks::{CheckReport, Source};

use crate::cmd::shared::sandbox::print_command;
use crate::cmd::shared::verdict::print_verdict;
use crate::flags::VerifyFlags;
use crate::{Ctx, out};

/// The commands' report in words or JSON; the exit code is the
/// verification's (the verdict's, with `--class`).
pub fn run(ctx: &Ctx, flags: VerifyFlags) -> Result<u8> {
    let VerifyFlags {
        source,
        candidate,
        run: flags,
    } = flags;
    let (source, candidate) = (source.as_deref(), candidate.as_deref());
    let cwd = std::env::current_dir().context("reading the current directory")?;
    let source_text = source.unwrap_or(".");
    let as_dir = cwd.join(source_text);
    let source = if as_dir.is_dir() {
        Source::Directory(&as_dir)
    } else {
        Source::Revision {
            repo: &cwd,
            rev: source_text,
        }
    };
    let candidate = candidate.map(|c| ctx.commit(c)).transpose()?;
    let spec = flags.spec(ctx, candidate)?;
    let mut sandbox = flags.sandbox()?;
    let mut store = ctx.open(flags.key_file.as_deref())?;
    let (report, receipt) =
        ratchet_orchestrate::checks::run_checks(&mut store, sandbox.as_mut(), &source, &spec)?;
    if ctx.json {
        out::written(
            &store,
            std::slice::from_ref(&receipt),
            serde_json::json!({ "verification": report }),
        )?;
    } else {
        print_verification(&report)?;
        outln!("recorded as seq {}", receipt.seq);
    }
    Ok(report.status().exit_code())
}

fn print_verification(r: &CheckReport) -> Result<()> {
    outln!(
        "{} in the {} sandbox: {} files, snapshot {}",
        r.source,
        r.backend,
        r.files,
        &r.snapshot[..16]
    );
    for c in &r.commands {
        print_command(c)?;
    }
    if let Some(e) = &r.evaluation {
        for f in &e.ingested {
            outln!(
                "  ingested {} ({}): {} test runs, {} scores{}",
                f.path.display(),
                f.format,
                f.test_runs,
                f.scores,
                f.note
                    .as_deref()
                    .map(|n| format!(" — {n}"))
                    .unwrap_or_default()
            );
        }
        print_verdict(
            &e.verdict,
            &ratchet_gate::shown::Scale::of_verdict(None, &e.verdict, None),
        )?;
    }
    outln!("{}", if r.passed { "PASSED" } else { "FAILED" });
    Ok(())
}
