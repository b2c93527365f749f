//! `ratchet record-score`: one score, into the store or through `--server`.

use anyhow::Result;

use crate::cmd::shared::remote::{answer, receipts_in_words};
use crate::flags::RecordScoreFlags;
use crate::{Ctx, out};

/// The score as flagged, its commit resolved, recorded with its scorer's
/// direction declared when `--direction` gives one.
pub fn run(ctx: &Ctx, flags: RecordScoreFlags) -> Result<u8> {
    let RecordScoreFlags {
        commit,
        task,
        scorer,
        value,
        scorer_version,
        cost,
        latency_ms,
        holdout,
        direction,
        session,
        key_file,
    } = flags;
    let score = ratchet_trace::Score {
        commit: ctx.commit(&commit)?,
        task,
        scorer,
        scorer_version,
        value,
        cost,
        latency_ms,
        holdout,
    };
    let direction = direction.map(Into::into);
    if let Some(client) = ctx.client()? {
        return remote(ctx, &client, &score, direction);
    }
    let mut store = ctx.open(key_file.as_deref())?;
    let receipt = ratchet_scorers::record_score(&mut store, &score, &session, direction)?;
    if ctx.json {
        out::written(
            &store,
            std::slice::from_ref(&receipt),
            serde_json::json!({}),
        )?;
    } else {
        outln!("recorded score at seq {} ({})", receipt.seq, receipt.id);
    }
    Ok(0)
}

/// `record-score --server`: one score line, ingested by the server.
fn remote(
    ctx: &Ctx,
    client: &ratchet_serve::Client,
    score: &ratchet_trace::Score,
    direction: Option<ratchet_scorers::Direction>,
) -> Result<u8> {
    let mut line = serde_json::json!({
        "task": score.task, "scorer": score.scorer, "value": score.value,
        "commit": score.commit.as_str(), "holdout": score.holdout,
    });
    if !score.scorer_version.is_empty() {
        line["scorer_version"] = score.scorer_version.clone().into();
    }
    if let Some(c) = score.cost {
        line["cost"] = c.into();
    }
    if let Some(l) = score.latency_ms {
        line["latency_ms"] = l.into();
    }
    if let Some(d) = direction {
        line["direction"] = match d {
            ratchet_scorers::Direction::HigherIsBetter => "higher",
            ratchet_scorers::Direction::LowerIsBetter => "lower",
        }
        .into();
    }
    let doc = client.ingest("jsonl", &[], format!("{line}\n").as_bytes())?;
    answer(ctx, &doc, receipts_in_words)?;
    Ok(0)
}
