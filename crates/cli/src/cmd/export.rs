//! `ratchet export`: scores and events as Parquet (the `parquet` feature).

use std::path::Path;

use anyhow::Result;

use crate::Ctx;
#[cfg(feature = "parquet")]
use crate::out;

/// Every score and event written under `dir` as Parquet partitioned by
/// commit (a build without the `parquet` feature says how to get one).
#[cfg(feature = "parquet")]
pub fn run(ctx: &Ctx, dir: &Path, key_file: Option<&Path>) -> Result<u8> {
    let mut store = ctx.open_read(key_file)?;
    let report = ratchet_export::export_parquet(&mut store, dir)?;
    if ctx.json {
        out::json_in(store.id(), &report)?;
    } else {
        outln!(
            "wrote {} score row(s) and {} event(s) in {} Parquet file(s) under {}",
            report.scores,
            report.events,
            report.files.len(),
            dir.display()
        );
        outln!("{}", report.summary);
    }
    Ok(0)
}

/// Without the `parquet` feature: refused, saying how to build it in.
#[cfg(not(feature = "parquet"))]
pub fn run(_ctx: &Ctx, _dir: &Path, _key_file: Option<&Path>) -> Result<u8> {
    anyhow::bail!(
        "this ratchet was built without Parquet export; rebuild it with `cargo install --path crates/cli --features parquet` from a clone of ratchet"
    )
}
