//! `ratchet merge-cells`: the events of cell stores, merged into this one.

use anyhow::{Context, Result};
use ratchet_trace::{MergeOptions, WriterKey};

use crate::flags::MergeCellsFlags;
use crate::{Ctx, out};

/// Each cell merged in turn (new events ingested, those already here
/// counted), its report said as it lands.
pub fn run(ctx: &Ctx, flags: MergeCellsFlags) -> Result<u8> {
    let MergeCellsFlags {
        cells,
        key_file,
        cell_key_file,
    } = flags;
    let mut home = ctx.open(key_file.as_deref())?;
    let mut mo = MergeOptions::default();
    if let Some(p) = cell_key_file {
        mo = mo.cell_key(WriterKey::read_file(&p)?);
    }
    let mut reports = Vec::new();
    for cell in &cells {
        let merged = home
            .merge_cell(cell, &mo)
            .with_context(|| format!("merging cell {}", cell.display()))?;
        if !ctx.json {
            outln!(
                "{}: {} new events ingested ({} already present), cell merged through seq {}",
                cell.display(),
                merged.ingested,
                merged.already_present,
                merged.high_water_after
            );
        }
        reports.push(merged);
    }
    if ctx.json {
        out::json(&serde_json::json!({ "store_id": home.id(), "cells": reports }))?;
    }
    Ok(0)
}
