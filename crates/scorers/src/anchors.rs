//! Deterministic anchors: scores no rhetoric can move — test pass rate,
//! build/typecheck exit status, cost, latency — each with the direction in
//! which it improves, which the gate respects. The anchors, directions and
//! their `scorer` payload are `ratchet_records`' (what the gate reads);
//! declaring a direction and recording an anchor's score are here.

use ratchet_trace::{CommitId, EventDraft, Receipt, ReservedKind, Score, Store};

use crate::error::Result;
use crate::{Anchor, Direction, ScorerDeclaration, direction_of};

/// The declaration of `scorer` as the store holds it now, read before a
/// write (not verified: the gate reads directions from its verified view,
/// so an edited row here can only add or refuse a declaration).
pub(crate) fn declared_before_writing(
    store: &Store,
    scorer: &str,
) -> Result<Option<(Direction, u64)>> {
    let events = store.events_of_kinds(&[ReservedKind::Scorer.as_str()])?;
    Ok(ratchet_records::declared_direction_among(
        &events,
        scorer,
        u64::MAX,
    )?)
}

/// Declares the direction in which `scorer` improves, once: the first
/// declaration stands, a repeat with the same direction records nothing
/// (`None`), and a different direction is an error. Ingestion declares
/// every scorer it records (anchors and criterion timings lower-is-better
/// where they are, rubrics and pass rates higher).
///
/// # Errors
/// [`crate::Error::DirectionConflict`] naming the earlier declaration;
/// [`crate::Error::Trace`] if the store cannot be read or written.
pub fn declare_scorer(
    store: &mut Store,
    scorer: &str,
    direction: Direction,
) -> Result<Option<Receipt>> {
    // (Two writers declaring at once may both append; the first
    // declaration stands, which is what every reader takes.)
    match declaration(store, scorer, Some(direction))? {
        Some(draft) => Ok(Some(store.append(draft)?)),
        None => Ok(None),
    }
}

/// The declaration event `scorer` still needs (`None`: declared already, the
/// same way). `given` is the direction a caller states (a different
/// declaration in the trace is then an error); without one, an undeclared
/// scorer is declared with its default ([`direction_of`]). One read of the
/// trace either way.
fn declaration(
    store: &Store,
    scorer: &str,
    given: Option<Direction>,
) -> Result<Option<EventDraft>> {
    match (declared_before_writing(store, scorer)?, given) {
        (Some((declared, seq)), Some(given)) if declared != given => {
            Err(crate::Error::DirectionConflict {
                scorer: scorer.to_string(),
                declared,
                given,
                seq,
            })
        }
        (Some(_), _) => Ok(None),
        (None, given) => Ok(Some(declaration_draft(
            scorer,
            given.unwrap_or_else(|| direction_of(scorer)),
        )?)),
    }
}

/// The event that declares `scorer`'s direction (whether the trace has a
/// declaration already is the caller's to check).
pub(crate) fn declaration_draft(scorer: &str, direction: Direction) -> Result<EventDraft> {
    Ok(EventDraft::reserved(
        ReservedKind::Scorer,
        &ScorerDeclaration {
            scorer: scorer.to_string(),
            direction,
        },
    )?)
}

/// Records one score, declaring its scorer's direction in the same
/// transaction the first time the scorer appears: `direction` when given
/// (a later conflicting one is an error), else the trace's declaration or
/// the built-in default ([`crate::direction_in`]). The score is validated before
/// anything is declared.
///
/// # Errors
/// [`crate::Error::DirectionConflict`] if `direction` contradicts the
/// trace; [`crate::Error::Trace`] for an invalid score or a failed append
/// (then nothing is stored).
pub fn record_score(
    store: &mut Store,
    score: &Score,
    session: &str,
    direction: Option<Direction>,
) -> Result<Receipt> {
    let draft = score.to_draft()?.session(session);
    store.validate_draft(&draft)?;
    let mut drafts: Vec<EventDraft> = declaration(store, &score.scorer, direction)?
        .into_iter()
        .collect();
    drafts.push(draft);
    let mut receipts = store.append_batch(drafts)?;
    Ok(receipts
        .pop()
        .expect("append_batch returns one receipt per draft, and there is one"))
}

/// Records a build or typecheck step's exit status as a `build_status`
/// score (1 for exit code 0, else 0), task = the step's name.
///
/// # Errors
/// [`crate::Error::Trace`] for a bad name or a failed append.
pub fn record_build_status(
    store: &mut Store,
    commit: &CommitId,
    step: &str,
    exit_code: i32,
    session: &str,
) -> Result<Receipt> {
    let mut score = Score::new(
        commit.clone(),
        step,
        Anchor::BuildStatus.scorer(),
        f64::from(u8::from(exit_code == 0)),
    );
    score.scorer_version = "exit-status-1".into();
    declare_scorer(
        store,
        Anchor::BuildStatus.scorer(),
        Anchor::BuildStatus.direction(),
    )?;
    Ok(store.record_score(&score, session)?)
}

/// The cost and latency anchor scores carried by scores that measured them:
/// for each score with a `cost` (or `latency_ms`), a `cost` (or `latency_ms`)
/// score on the same task and commit.
pub fn cost_and_latency(scores: &[Score]) -> Vec<Score> {
    let mut out = Vec::new();
    for s in scores {
        for (anchor, value) in [(Anchor::Cost, s.cost), (Anchor::Latency, s.latency_ms)] {
            if let Some(v) = value {
                let mut anchor_score =
                    Score::new(s.commit.clone(), s.task.clone(), anchor.scorer(), v);
                anchor_score.scorer_version = format!("from:{}", s.scorer);
                out.push(anchor_score);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cost_and_latency_become_their_own_scores() {
        let commit = CommitId::parse(&"ab".repeat(20)).expect("commit");
        let mut score = Score::new(commit, "t", "answer", 0.9);
        score.cost = Some(0.02);
        score.latency_ms = Some(130.0);
        let derived = cost_and_latency(&[score]);
        let got: Vec<(&str, f64)> = derived
            .iter()
            .map(|x| (x.scorer.as_str(), x.value))
            .collect();
        assert_eq!(got.len(), 2);
        assert_eq!(got[0].0, "cost");
        assert_eq!(got[1].0, "latency_ms");
        assert!((got[1].1 - 130.0).abs() < 1e-12);
    }
}
