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
        return remote(ctx, &client);
    }
    let mut store = ctx.open(key_file)?;
    let mut text = String::new();
    std::io::stdin()
        .lock()
        .read_to_string(&mut text)
        .context("reading stdin (JSON Lines, UTF-8)")?;
    let receipts = store
        .append_json_lines(&text)
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

/// `append --server`: the lines on stdin, recorded once by the server.
fn remote(ctx: &Ctx, client: &ratchet_serve::Client) -> Result<u8> {
    use std::io::Read;
    let mut text = String::new();
    std::io::stdin()
        .lock()
        .read_to_string(&mut text)
        .context("reading stdin (JSON Lines, UTF-8)")?;
    let doc = client.record_events(&text)?;
    answer(ctx, &doc, receipts_in_words)?;
    Ok(0)
}
