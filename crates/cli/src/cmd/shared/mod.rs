//! What several commands use, each item saying whose it is. A helper of
//! one command lives in that command's file; one used by two or more
//! lives here, once.

use std::path::PathBuf;

use anyhow::{Context, Result};
use ratchet_scorers::{Rubric, RubricSet};

use crate::{Ctx, exit};

pub mod policy_file;
pub mod remote;
pub mod sandbox;
pub mod verdict;

/// The rubric files given (`ingest --rubric`, `score --rubric`), read.
pub fn rubrics(paths: &[PathBuf]) -> Result<RubricSet> {
    Ok(RubricSet::new(
        paths
            .iter()
            .map(|p| Rubric::from_path(p).with_context(|| format!("rubric {}", p.display())))
            .collect::<Result<_>>()?,
    ))
}

/// The producers `--trust` names (none: the key holder's own scores), for
/// `watch`, `heal` and `best`.
pub fn trusted(list: &[String]) -> Result<ratchet_trace::Sources> {
    Ok(ratchet_gate::Trust::sources(
        (!list.is_empty()).then_some(list),
        "--trust",
    )?)
}

/// Prints each promotion ref that disagrees with the trace (words only)
/// and gives the exit code: [`exit::REF_FAULT`] if any does (`status`,
/// `verify-chain`).
pub fn ref_exit(ctx: &Ctx, faults: Option<&[ratchet_orchestrate::RefFault]>) -> Result<u8> {
    let faults = faults.unwrap_or_default();
    if !ctx.json {
        for f in faults {
            outln!(
                "REF FAULT: {f} (the trace is the record; the next `gate --record-promotion` of the class restores the ref)"
            );
        }
    }
    Ok(if faults.is_empty() {
        0
    } else {
        exit::REF_FAULT
    })
}
