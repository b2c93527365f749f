//! Output: one JSON document per command under `--json`, words otherwise.

use std::io::Write;

use anyhow::Result;

/// Prints `v` as the command's one JSON document.
pub fn json<T: serde::Serialize>(v: &T) -> Result<()> {
    let mut out = std::io::stdout().lock();
    serde_json::to_writer_pretty(&mut out, v)?;
    writeln!(out)?;
    Ok(())
}

/// Prints `v` as one line of a JSON Lines stream (`watch --follow --json`).
pub fn json_line<T: serde::Serialize>(v: &T) -> Result<()> {
    let mut out = std::io::stdout().lock();
    serde_json::to_writer(&mut out, v)?;
    writeln!(out)?;
    out.flush()?;
    Ok(())
}

/// A 40- or 64-hex id shortened for a table.
pub fn short(id: &str) -> &str {
    &id[..id.len().min(12)]
}
