//! `ratchet report`: the store's HTML report, or with `--markdown` the
//! latest decision as a pull-request comment.

use anyhow::{Context, Result};

use crate::flags::ReportFlags;
use crate::{Ctx, out};

/// The report written to `--out` (or the comment printed).
pub fn run(ctx: &Ctx, flags: ReportFlags) -> Result<u8> {
    let ReportFlags {
        out: out_path,
        markdown,
        class,
        candidate,
        scorer,
        key_file,
    } = flags;
    // Resolved as the gate resolves it (`HEAD`, a short id), so that the
    // comment's candidate is the commit the gate decided.
    let summary = markdown
        .then(|| -> Result<ratchet_report::Summary> {
            Ok(ratchet_report::Summary {
                class,
                candidate: candidate.map(|c| ctx.commit(&c)).transpose()?,
            })
        })
        .transpose()?;
    let mut store = ctx.open_read(key_file.as_deref())?;
    if let Some(which) = &summary {
        let view = store.verified(&ratchet_trace::VerifyOptions::default())?;
        let text = ratchet_report::markdown_of(&view, which)?;
        if ctx.json {
            out::json(&serde_json::json!({ "store_id": store.id(), "markdown": text }))?;
        } else {
            out!("{text}");
        }
        return Ok(0);
    }
    let options = ratchet_report::ReportOptions {
        scorer,
        ..ratchet_report::ReportOptions::default()
    };
    let html = ratchet_report::html(&mut store, &options)?;
    std::fs::write(&out_path, &html).with_context(|| format!("writing {}", out_path.display()))?;
    if ctx.json {
        out::json(&serde_json::json!({
            "store_id": store.id(), "report": out::absolute(&out_path), "bytes": html.len()
        }))?;
    } else {
        outln!(
            "report written to {} ({} KB)",
            out_path.display(),
            html.len() / 1024
        );
    }
    Ok(0)
}
