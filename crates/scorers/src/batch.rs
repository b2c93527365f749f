//! The sleep phase: score, in bulk and idempotently, every observation in
//! the trace that has no score for its rubric's current version.
//!
//! An observation is an event of kind `observation` (payload: task, rubric,
//! the judge's JSON) under a commit. The score it yields is recorded with
//! session `observation:<seq>` and the rubric's version, which is what makes
//! a second run find nothing to do — until the rubric changes.

use std::collections::HashSet;

use serde::{Deserialize, Serialize};

use ratchet_trace::{CommitId, EventDraft, KIND_SCORE, Receipt, Score, Store};

use crate::error::Result;
use crate::holdout::RubricSet;

/// Event kind of a judge's observation.
pub const KIND_OBSERVATION: &str = "observation";

const SESSION_PREFIX: &str = "observation:";

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct ObservationPayload {
    task: String,
    rubric: String,
    observation: serde_json::Value,
}

/// Records a judge's observation for later scoring (stored as given; an
/// observation that does not fit its rubric is reported by
/// [`score_pending`] and never scored).
///
/// # Errors
/// [`crate::Error::Trace`] if the append fails.
pub fn record_observation(
    store: &mut Store,
    commit: &CommitId,
    task: &str,
    rubric: &str,
    observation: &serde_json::Value,
    session: &str,
) -> Result<Receipt> {
    let payload = ObservationPayload {
        task: task.to_string(),
        rubric: rubric.to_string(),
        observation: observation.clone(),
    };
    Ok(store.append(
        EventDraft::json(KIND_OBSERVATION, &payload)?
            .commit(commit.clone())
            .session(session),
    )?)
}

/// What a batch-scoring run did.
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
pub struct BatchReport {
    /// Observation events seen.
    pub observations: u64,
    /// Scores appended by this run.
    pub scored: u64,
    /// Observations already scored under their rubric's current version.
    pub already_scored: u64,
    /// Observations whose rubric is not in the set (left for later).
    pub unknown_rubric: u64,
    /// Observations that do not fit their rubric: (seq, problems). Never scored.
    pub invalid: Vec<(u64, String)>,
}

/// Scores every observation that has no score for its rubric's current
/// version, appending the scores in one transaction. Running it again adds
/// nothing.
///
/// # Errors
/// [`crate::Error::Trace`] if the store cannot be read or written.
pub fn score_pending(store: &mut Store, rubrics: &RubricSet) -> Result<BatchReport> {
    let versions: Vec<(String, String)> = rubrics
        .all()
        .iter()
        .map(|r| (r.name.clone(), r.version()))
        .collect();
    let mut done: HashSet<(u64, String)> = HashSet::new();
    let mut pending: Vec<(u64, CommitId, ObservationPayload)> = Vec::new();
    let mut report = BatchReport::default();
    for e in store.tail(0) {
        let e = e?;
        if e.kind == KIND_SCORE {
            if let Some(seq) = e
                .session
                .strip_prefix(SESSION_PREFIX)
                .and_then(|s| s.parse::<u64>().ok())
            {
                let version = serde_json::from_slice::<serde_json::Value>(&e.payload)
                    .ok()
                    .and_then(|v| {
                        v.get("scorer_version")
                            .and_then(|x| x.as_str())
                            .map(String::from)
                    })
                    .unwrap_or_default();
                done.insert((seq, version));
            }
        } else if e.kind == KIND_OBSERVATION {
            report.observations += 1;
            match (
                serde_json::from_slice::<ObservationPayload>(&e.payload),
                e.commit,
            ) {
                (Ok(p), Some(c)) => pending.push((e.seq, c, p)),
                (Err(err), _) => report
                    .invalid
                    .push((e.seq, format!("not an observation payload: {err}"))),
                (_, None) => report
                    .invalid
                    .push((e.seq, "observation without a commit".into())),
            }
        }
    }
    let mut drafts = Vec::new();
    for (seq, commit, p) in pending {
        let Some(rubric) = rubrics.get(&p.rubric) else {
            report.unknown_rubric += 1;
            continue;
        };
        let version = versions
            .iter()
            .find(|(n, _)| *n == p.rubric)
            .map(|(_, v)| v.clone())
            .unwrap_or_default();
        if done.contains(&(seq, version.clone())) {
            report.already_scored += 1;
            continue;
        }
        match rubric.score_json(&p.observation) {
            Ok(value) => {
                let mut s = Score::new(commit, p.task, rubric.name.clone(), value);
                s.scorer_version = version;
                s.holdout = rubric.holdout;
                drafts.push(s.to_draft()?.session(format!("{SESSION_PREFIX}{seq}")));
            }
            Err(e) => report.invalid.push((seq, e.to_string())),
        }
    }
    report.scored = drafts.len() as u64;
    store.append_batch(drafts)?;
    Ok(report)
}
