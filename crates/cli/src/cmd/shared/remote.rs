//! A server's answer as a command prints it (the `--server` side of
//! `append`, `record-score`, `gate` and `status`).

use anyhow::Result;

use crate::{Ctx, out};

/// Prints a server's answer as the command's document (under `--json`) or
/// in a line of words.
pub fn answer(
    ctx: &Ctx,
    doc: &serde_json::Value,
    words: impl FnOnce(&serde_json::Value) -> String,
) -> Result<()> {
    if ctx.json {
        out::json(doc)
    } else {
        outln!("{}", words(doc));
        Ok(())
    }
}

/// A writing answer's receipts in words: the seqs recorded, or that nothing
/// was (the server had them already).
pub fn receipts_in_words(doc: &serde_json::Value) -> String {
    let receipts = doc["receipts"].as_array().map_or(&[][..], Vec::as_slice);
    match (receipts.first(), receipts.last()) {
        (Some(a), Some(b)) => format!(
            "recorded {} event(s) by the server: seq {}..={}",
            receipts.len(),
            a["seq"],
            b["seq"]
        ),
        _ => "already recorded: nothing stored twice".to_string(),
    }
}
