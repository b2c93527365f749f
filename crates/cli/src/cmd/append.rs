//! `ratchet append`: JSON Lines events from stdin, into the store or
//! through `--server`.

use std::io::Read;
use std::path::Path;

use anyhow::{Context, Result};

use crate::cmd::shared::remote::{answer, receipts_in_words};
use crate::{Ctx, out};

/// The lines on stdin, appended in one transaction (or recorded once by
/// the server under `--server`).
pub fn run(ctx: &Ctx, key_file: Option<&Path>) -> Result<u8> {
    if let Some(client) = ctx.client()? {
        let doc = client.record_events(&stdin_text()?)?;
        answer(ctx, &doc, receipts_in_words)?;
        return Ok(0);
    }
    // The store first: a missing one is said before stdin is waited for.
    let mut store = ctx.open(key_file)?;
    let receipts = store
        .append_json_lines(&stdin_text()?)
        .context("appending the events on stdin")?;
    if ctx.json {
        out::written(&store, &receipts, serde_json::json!({}))?;
    } else {
        match (receipts.first(), receipts.last()) {
            (Some(a), Some(b)) => outln!(
                "appended {} events: seq {}..={}",
                receipts.len(),
                a.seq,
                b.seq
            ),
            _ => outln!("no events on stdin; nothing appended"),
        }
    }
    Ok(0)
}

/// All of stdin, as UTF-8.
fn stdin_text() -> Result<String> {
    let mut text = String::new();
    std::io::stdin()
        .lock()
        .read_to_string(&mut text)
        .context("reading stdin (JSON Lines, UTF-8)")?;
    Ok(text)
}
