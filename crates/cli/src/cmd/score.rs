//! `ratchet score`: pending observations scored by the rubrics' current
//! versions (the batch "sleep phase"; idempotent).

use std::path::{Path, PathBuf};

use anyhow::Result;

use crate::cmd::shared::rubrics;
use crate::{Ctx, out};

/// Every observation not yet scored by its rubric's version, scored.
pub fn run(ctx: &Ctx, rubric_paths: &[PathBuf], key_file: Option<&Path>) -> Result<u8> {
    let rubrics = rubrics(rubric_paths)?;
    let mut store = ctx.open(key_file)?;
    let scoring = ratchet_scorers::score_pending(&mut store, &rubrics)?;
    if ctx.json {
        out::written(
            &store,
            &scoring.receipts,
            serde_json::json!({ "scoring": scoring }),
        )?;
    } else {
        outln!(
            "{} observation(s): {} scored now, {} already scored, {} with an unknown rubric, {} invalid",
            scoring.observations,
            scoring.scored,
            scoring.already_scored,
            scoring.unknown_rubric,
            scoring.invalid.len()
        );
        if scoring.not_the_key_holders > 0 {
            outln!(
                "  {} observation(s) left unscored: written by a token's session or a merged cell, not by this store's key holder (a score made here would be the key holder's evidence)",
                scoring.not_the_key_holders
            );
        }
        for (seq, why) in &scoring.invalid {
            outln!("  seq {seq}: {why}");
        }
    }
    Ok(0)
}
