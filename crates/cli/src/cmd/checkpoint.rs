//! `ratchet checkpoint`: the store's size and head, to keep elsewhere.

use std::path::Path;

use anyhow::Result;

use crate::{Ctx, out};

/// The checkpoint printed, or written to `--out`.
pub fn run(ctx: &Ctx, out_file: Option<&Path>) -> Result<u8> {
    let store = ctx.open_read(None)?;
    let cp = store.checkpoint()?;
    if let Some(p) = out_file {
        cp.write_atomic(p)?;
    }
    if ctx.json {
        out::json(&cp)?;
    } else if out_file.is_none() {
        out!("{cp}");
    } else {
        outln!("checkpoint at size {} written", cp.size);
    }
    Ok(0)
}
