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

/// The one shape of every document a writing command prints: the store
/// written to (its id and absolute directory), the events appended
/// (`seq`, `id`, `hash`, in order; empty when nothing was), then the keys
/// the command adds in `extra` (an object).
pub fn written(
    store: &ratchet_trace::Store,
    receipts: &[ratchet_trace::Receipt],
    extra: serde_json::Value,
) -> Result<()> {
    let mut doc = serde_json::Map::new();
    doc.insert("store_id".into(), store.id().into());
    doc.insert(
        "store_dir".into(),
        serde_json::to_value(absolute(store.dir()))?,
    );
    doc.insert("receipts".into(), serde_json::to_value(receipts)?);
    if let serde_json::Value::Object(extra) = extra {
        doc.extend(extra);
    }
    json(&doc)
}

/// `path` made absolute (symbolic links resolved where it exists), as
/// every path in a JSON document is.
pub fn absolute(path: &std::path::Path) -> std::path::PathBuf {
    std::fs::canonicalize(path)
        .or_else(|_| std::path::absolute(path))
        .unwrap_or_else(|_| path.to_path_buf())
}

/// Prints `v` (an object) as the command's one JSON document, led by the
/// id of the store it was read from, as every document about a store is.
pub fn json_in<T: serde::Serialize>(store_id: &str, v: &T) -> Result<()> {
    let mut doc = serde_json::Map::new();
    doc.insert("store_id".into(), store_id.into());
    match serde_json::to_value(v)? {
        serde_json::Value::Object(fields) => {
            for (k, v) in fields {
                doc.entry(k).or_insert(v);
            }
        }
        other => {
            doc.insert("result".into(), other);
        }
    }
    json(&doc)
}
