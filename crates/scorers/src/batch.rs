//! The sleep phase: score, in bulk and idempotently, every observation in
//! the trace that has no score for its rubric's current version.
//!
//! An observation is an event of kind `observation` (payload: task, rubric,
//! the judge's JSON) under a commit. The score it yields is recorded with
//! session `observation:<id>` (the observation event's id, which a merge
//! preserves) and the rubric's version, which is what makes a second run —
//! here, or in a home the events were merged into — find nothing to do,
//! until the rubric changes. Scores written before ids were used name the
//! observation's seq (`observation:<seq>`); those still count for this
//! store's own observations.
//!
//! The observations are read from a verified trace (with the writer key the
//! store was opened with): a file writer cannot edit an observation and
//! have the key holder's run turn it into a genuinely signed score.

use std::collections::HashSet;

use serde::{Deserialize, Serialize};

use ratchet_trace::{CommitId, EventDraft, Receipt, Score, Store};

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
    /// Observations another producer wrote — a capability token's session
    /// or a merged cell — left unscored: a score this run appends is the
    /// key holder's own evidence, so it is made only of the key holder's
    /// own observations (a token's or a cell's would be laundered into
    /// evidence every class trusts).
    #[serde(default)]
    pub not_the_key_holders: u64,
    /// Observations that do not fit their rubric: (seq, problems). Never scored.
    pub invalid: Vec<(u64, String)>,
    /// The scores appended, in order. Not in the serialized report: the
    /// CLI prints them as every writing command does.
    #[serde(skip)]
    pub receipts: Vec<ratchet_trace::Receipt>,
}

/// Scores every observation that has no score for its rubric's current
/// version, appending the scores in one transaction. Running it again adds
/// nothing.
///
/// # Examples
///
/// ```
/// use ratchet_scorers::{Rubric, RubricSet, record_observation, score_pending};
/// use ratchet_trace::{AsOf, CommitId, Store};
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let dir = tempfile::tempdir()?;
/// let mut store = Store::create(dir.path(), Default::default())?;
/// let commit = CommitId::parse(&"c".repeat(40))?;
/// // The judge's facts are stored as given; the number is computed later, by code.
/// record_observation(&mut store, &commit, "task-1", "answer", &serde_json::json!({"correct": true}), "judge")?;
/// let rubrics = RubricSet::new(vec![Rubric::from_toml(
///     "name = \"answer\"\n[[item]]\nid = \"correct\"\ntype = \"boolean\"\nweight = 1.0\n",
/// )?]);
/// assert_eq!(score_pending(&mut store, &rubrics)?.scored, 1);
/// assert_eq!(score_pending(&mut store, &rubrics)?.scored, 0); // once per rubric version
/// let view = store.verified(&Default::default())?;
/// assert_eq!(view.commit_stats_for(&commit, "answer", AsOf::Head).map(|s| s.mean), Some(1.0));
/// # Ok(()) }
/// ```
///
/// # Errors
/// [`crate::Error::RubricNotPinned`] if a rubric is pinned in the trace at
/// another version; [`crate::Error::Trace`] if the store cannot be read or written.
pub fn score_pending(store: &mut Store, rubrics: &RubricSet) -> Result<BatchReport> {
    let versions: Vec<(String, String)> = rubrics
        .all()
        .iter()
        .map(|r| (r.name.clone(), r.version()))
        .collect();
    // Scores already made, by observation id and the store that made them
    // (a cell's score counts for an observation merged from that same cell,
    // never for one of ours), or by the legacy seq form (this store's own
    // scores of its own observations only).
    let mut done: HashSet<(String, String, Option<String>)> = HashSet::new();
    let mut pending: Vec<(
        u64,
        ratchet_trace::Ulid,
        Option<String>,
        CommitId,
        ObservationPayload,
    )> = Vec::new();
    let mut report = BatchReport::default();
    let view = store.verified(&ratchet_trace::VerifyOptions::default())?;
    crate::pins::check_rubrics_pinned(&view, rubrics)?;
    view.each_score(0, &mut |s| {
        let named =
            s.session
                .strip_prefix(SESSION_PREFIX)
                .and_then(|rest| match rest.parse::<u64>() {
                    Ok(_) if s.origin_store.is_some() => None,
                    Ok(seq) => Some(format!("seq:{seq}")),
                    Err(_) => Some(rest.to_string()),
                });
        if let Some(key) = named {
            done.insert((
                key,
                s.scorer_version.to_string(),
                s.origin_store.map(str::to_string),
            ));
        }
    });
    let tokens = view.token_session_names(u64::MAX);
    for e in view.events_of_kinds(&[KIND_OBSERVATION]) {
        {
            report.observations += 1;
            if !matches!(
                ratchet_trace::Verified::producer_of_event(e, &tokens),
                ratchet_trace::Producer::KeyHolder { .. }
            ) {
                report.not_the_key_holders += 1;
                continue;
            }
            match (
                serde_json::from_slice::<ObservationPayload>(&e.payload),
                e.commit.clone(),
            ) {
                (Ok(p), Some(c)) => pending.push((
                    e.seq,
                    e.id,
                    e.origin.as_ref().map(|o| o.store.clone()),
                    c,
                    p,
                )),
                (Err(err), _) => report
                    .invalid
                    .push((e.seq, format!("not an observation payload: {err}"))),
                (_, None) => report
                    .invalid
                    .push((e.seq, "observation without a commit".into())),
            }
        }
    }
    drop(view);
    let mut drafts = Vec::new();
    for (seq, id, origin, commit, p) in pending {
        let Some(rubric) = rubrics.get(&p.rubric) else {
            report.unknown_rubric += 1;
            continue;
        };
        let version = versions
            .iter()
            .find(|(n, _)| *n == p.rubric)
            .map(|(_, v)| v.clone())
            .unwrap_or_default();
        let scored = done.contains(&(id.to_string(), version.clone(), origin.clone()))
            || (origin.is_none() && done.contains(&(format!("seq:{seq}"), version.clone(), None)));
        if scored {
            report.already_scored += 1;
            continue;
        }
        match rubric.score_json(&p.observation) {
            Ok(value) => {
                let mut score = Score::new(commit, p.task, rubric.name.clone(), value);
                score.scorer_version = version;
                score.holdout = rubric.holdout;
                drafts.push(score.to_draft()?.session(format!("{SESSION_PREFIX}{id}")));
            }
            Err(e) => report.invalid.push((seq, e.to_string())),
        }
    }
    report.scored = drafts.len() as u64;
    report.receipts = store.append_batch(drafts)?;
    Ok(report)
}
