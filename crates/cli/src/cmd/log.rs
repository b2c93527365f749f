//! `ratchet log`: events as stored, filtered, as a table or JSON.

use std::io::Write;

use anyhow::Result;

use crate::flags::LogFlags;
use crate::{Ctx, out};

/// The events from `--from` (or the `--last` ones) matching the filters;
/// a `--kind` that neither this store holds nor ratchet reserves is
/// refused, naming the kinds there are.
pub fn run(ctx: &Ctx, flags: LogFlags) -> Result<u8> {
    let LogFlags {
        from,
        limit,
        last,
        kind,
        commit,
        scorer,
        key_file,
    } = flags;
    let filter = ratchet_trace::EventFilter {
        kind,
        commit: commit.map(|c| ctx.commit(&c)).transpose()?,
        scorer,
    };
    let store = ctx.open_read(key_file.as_deref())?;
    if let Some(kind) = &filter.kind {
        let kinds = store.event_kinds()?;
        let known = kinds.iter().any(|(k, _)| k == kind)
            || ratchet_trace::ReservedKind::of(kind).is_some()
            || kind == ratchet_trace::KIND_SCORE
            || kind == ratchet_trace::KIND_TEST_RUN;
        if !known {
            let here: Vec<&str> = kinds.iter().map(|(k, _)| k.as_str()).collect();
            anyhow::bail!(
                "no event of kind {kind:?} in this store, and ratchet reserves no such kind; the kinds here: {}",
                if here.is_empty() {
                    "none".to_string()
                } else {
                    here.join(", ")
                }
            );
        }
    }
    let events = match last {
        Some(n) => store.last_events_matching(n, &filter)?,
        None => store.events_matching(from, limit, &filter)?,
    };
    if ctx.json {
        /// Written straight from the events, payloads byte for byte (no
        /// detour through `serde_json::Value`, which cannot hold every
        /// number a payload stored by an older version may hold).
        #[derive(serde::Serialize)]
        struct Log<'a> {
            store_id: &'a str,
            events: &'a [ratchet_trace::Event],
        }
        return out::json(&Log {
            store_id: store.id(),
            events: &events,
        })
        .map(|_| 0);
    }
    let mut stdout = std::io::stdout().lock();
    writeln!(
        stdout,
        "{:>8}  {:<26}  {:<10}  {:<12}  payload",
        "seq", "id", "kind", "commit"
    )?;
    for e in events {
        let commit = e.commit.as_ref().map_or("-", |c| out::short(c.as_str()));
        let payload = String::from_utf8_lossy(&e.payload);
        let shown: String = payload.chars().take(60).collect();
        let more = if payload.chars().count() > 60 {
            "…"
        } else {
            ""
        };
        writeln!(
            stdout,
            "{:>8}  {}  {:<10}  {:<12}  {shown}{more}",
            e.seq, e.id, e.kind, commit
        )?;
    }
    Ok(0)
}
