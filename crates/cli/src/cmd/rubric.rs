//! `ratchet rubric check` and `ratchet rubric pin`.

use std::path::Path;

use anyhow::{Context, Result};
use ratchet_scorers::Rubric;

use crate::flags::RubricCommand;
use crate::{Ctx, out};

/// `ratchet rubric …`: validate a rubric file, or pin its version.
pub fn run(ctx: &Ctx, what: RubricCommand) -> Result<u8> {
    match what {
        RubricCommand::Check { path } => check(ctx, &path),
        RubricCommand::Pin { path, key_file } => pin(ctx, &path, key_file.as_deref()),
    }
}

/// The rubric's version and items, or why it does not parse.
fn check(ctx: &Ctx, path: &Path) -> Result<u8> {
    let rubric = Rubric::from_path(path).with_context(|| format!("rubric {}", path.display()))?;
    if ctx.json {
        out::json(&serde_json::json!({
            "name": rubric.name, "version": rubric.version(), "holdout": rubric.holdout, "items": rubric.items
        }))?;
        return Ok(0);
    }
    outln!(
        "rubric {} ok, version {}{}",
        rubric.name,
        rubric.version(),
        if rubric.holdout { " (holdout)" } else { "" }
    );
    for it in &rubric.items {
        outln!(
            "  {:<24} {} weight {}{}",
            it.id,
            it.kind,
            it.weight,
            if it.must { " must" } else { "" }
        );
    }
    Ok(0)
}

/// The rubric's current version pinned in the trace.
fn pin(ctx: &Ctx, path: &Path, key_file: Option<&Path>) -> Result<u8> {
    let rubric = Rubric::from_path(path).with_context(|| format!("rubric {}", path.display()))?;
    let mut store = ctx.open(key_file)?;
    let pinned = ratchet_scorers::pin_rubric(&mut store, &rubric)?;
    if ctx.json {
        let receipts = match &pinned {
            ratchet_scorers::Pinned::Appended { receipt } => vec![*receipt],
            ratchet_scorers::Pinned::AlreadyPinned { .. } => Vec::new(),
        };
        out::written(
            &store,
            &receipts,
            serde_json::json!({ "rubric": rubric.name, "version": rubric.version(), "pin": pinned }),
        )?;
        return Ok(0);
    }
    match &pinned {
        ratchet_scorers::Pinned::Appended { receipt } => outln!(
            "pinned rubric {} at version {} (seq {})",
            rubric.name,
            rubric.version(),
            receipt.seq
        ),
        ratchet_scorers::Pinned::AlreadyPinned { seq } => outln!(
            "rubric {} is already pinned at version {} (seq {seq}): nothing appended",
            rubric.name,
            rubric.version()
        ),
    }
    Ok(0)
}
