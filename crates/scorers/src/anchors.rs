//! Deterministic anchors: scores no rhetoric can move — test pass rate,
//! build/typecheck exit status, cost, latency — each with the direction in
//! which it improves, which the gate respects.

use serde::{Deserialize, Serialize};

use ratchet_trace::{CommitId, EventDraft, Receipt, ReservedKind, Score, Store, Verified};

use crate::error::Result;

/// Which way a scorer improves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Direction {
    /// Larger is better (accuracy, pass rate).
    HigherIsBetter,
    /// Smaller is better (cost, latency).
    LowerIsBetter,
}

impl std::fmt::Display for Direction {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Direction::HigherIsBetter => "higher is better",
            Direction::LowerIsBetter => "lower is better",
        })
    }
}

/// The built-in deterministic scorers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Anchor {
    /// Passed / (passed + failed) per suite (from JUnit).
    PassRate,
    /// 1 when a build or typecheck step exited 0, else 0.
    BuildStatus,
    /// Cost of producing an output.
    Cost,
    /// Latency in milliseconds.
    Latency,
}

impl Anchor {
    /// Every anchor.
    pub const ALL: [Anchor; 4] = [
        Anchor::PassRate,
        Anchor::BuildStatus,
        Anchor::Cost,
        Anchor::Latency,
    ];

    /// The scorer name its scores are recorded under.
    pub fn scorer(self) -> &'static str {
        match self {
            Anchor::PassRate => crate::ingest::PASS_RATE,
            Anchor::BuildStatus => "build_status",
            Anchor::Cost => "cost",
            Anchor::Latency => "latency_ms",
        }
    }

    /// The direction in which it improves.
    pub fn direction(self) -> Direction {
        match self {
            Anchor::PassRate | Anchor::BuildStatus => Direction::HigherIsBetter,
            Anchor::Cost | Anchor::Latency => Direction::LowerIsBetter,
        }
    }

    /// The anchor recorded under `scorer`, if any.
    pub fn from_scorer(scorer: &str) -> Option<Anchor> {
        Anchor::ALL.into_iter().find(|a| a.scorer() == scorer)
    }
}

/// The payload of a `scorer` event: a scorer's declared direction.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScorerDeclaration {
    /// The scorer.
    pub scorer: String,
    /// Which way it improves.
    pub direction: Direction,
}

/// The direction `scorer` was declared with by this store at or before
/// `max_seq` (its first own declaration, and the seq of it), if any.
///
/// # Errors
/// [`crate::Error::Trace`] if the store cannot be read or a declaration
/// does not parse.
pub fn declared_direction(
    view: &Verified,
    scorer: &str,
    max_seq: u64,
) -> Result<Option<(Direction, u64)>> {
    declared_in(view.events(), scorer, max_seq)
}

/// [`declared_direction`] among `events` (in seq order).
fn declared_in(
    events: &[ratchet_trace::Event],
    scorer: &str,
    max_seq: u64,
) -> Result<Option<(Direction, u64)>> {
    // Only this store's own declarations: one merged in from a cell is what
    // the cell believed, never a rule for this store.
    Ok(ratchet_trace::own_control_events::<ScorerDeclaration>(
        events,
        ReservedKind::Scorer,
        max_seq,
    )?
    .into_iter()
    .find(|(_, d)| d.scorer == scorer)
    .map(|(e, d)| (d.direction, e.seq)))
}

/// The declaration of `scorer` as the store holds it now, read before a
/// write (not verified: the gate reads directions from its verified view,
/// so an edited row here can only add or refuse a declaration).
pub(crate) fn declared_before_writing(
    store: &Store,
    scorer: &str,
) -> Result<Option<(Direction, u64)>> {
    let events = store.events_of_kinds(&[ReservedKind::Scorer.as_str()])?;
    declared_in(&events, scorer, u64::MAX)
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
/// the built-in default ([`direction_in`]). The score is validated before
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

/// The direction `scorer` improves in: its declaration in the trace, else
/// the built-in default ([`direction_of`]). What every reader that needs a
/// direction (gate, watch, heal, ingestion) goes by.
///
/// # Errors
/// As [`declared_direction`].
pub fn direction_in(view: &Verified, scorer: &str) -> Result<Direction> {
    Ok(
        declared_direction(view, scorer, u64::MAX)?
            .map_or_else(|| direction_of(scorer), |(d, _)| d),
    )
}

/// The direction of any scorer: an anchor's own, the benchmark
/// importers' timings, bytes and allocations downwards (as each importer
/// declares them — so a writer who may not declare, a record token or the
/// output of `verify`, leaves nothing the gate would read the other way),
/// otherwise higher is better.
pub fn direction_of(scorer: &str) -> Direction {
    use crate::ingest::bench::{
        CRITERION_NS, GBENCH_CPU_NS, GBENCH_REAL_NS, HYPERFINE_S, PYTEST_BENCHMARK_S,
    };
    const DOWNWARDS: [&str; 8] = [
        CRITERION_NS,
        HYPERFINE_S,
        GBENCH_REAL_NS,
        GBENCH_CPU_NS,
        PYTEST_BENCHMARK_S,
        "go_ns_per_op",
        "go_bytes_per_op",
        "go_allocs_per_op",
    ];
    if DOWNWARDS.contains(&scorer) {
        return Direction::LowerIsBetter;
    }
    Anchor::from_scorer(scorer).map_or(Direction::HigherIsBetter, Anchor::direction)
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
    let mut s = Score::new(
        commit.clone(),
        step,
        Anchor::BuildStatus.scorer(),
        f64::from(u8::from(exit_code == 0)),
    );
    s.scorer_version = "exit-status-1".into();
    declare_scorer(
        store,
        Anchor::BuildStatus.scorer(),
        Anchor::BuildStatus.direction(),
    )?;
    Ok(store.record_score(&s, session)?)
}

/// The cost and latency anchor scores carried by scores that measured them:
/// for each score with a `cost` (or `latency_ms`), a `cost` (or `latency_ms`)
/// score on the same task and commit.
pub fn cost_and_latency(scores: &[Score]) -> Vec<Score> {
    let mut out = Vec::new();
    for s in scores {
        for (anchor, value) in [(Anchor::Cost, s.cost), (Anchor::Latency, s.latency_ms)] {
            if let Some(v) = value {
                let mut a = Score::new(s.commit.clone(), s.task.clone(), anchor.scorer(), v);
                a.scorer_version = format!("from:{}", s.scorer);
                out.push(a);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn anchors_know_their_direction() {
        assert_eq!(direction_of("latency_ms"), Direction::LowerIsBetter);
        assert_eq!(direction_of("cost"), Direction::LowerIsBetter);
        assert_eq!(direction_of("pass_rate"), Direction::HigherIsBetter);
        assert_eq!(direction_of("build_status"), Direction::HigherIsBetter);
        assert_eq!(direction_of("accuracy"), Direction::HigherIsBetter);
        for a in Anchor::ALL {
            assert_eq!(Anchor::from_scorer(a.scorer()), Some(a));
        }
    }

    #[test]
    fn cost_and_latency_become_their_own_scores() {
        let c = CommitId::parse(&"ab".repeat(20)).expect("commit");
        let mut s = Score::new(c, "t", "answer", 0.9);
        s.cost = Some(0.02);
        s.latency_ms = Some(130.0);
        let a = cost_and_latency(&[s]);
        let got: Vec<(&str, f64)> = a.iter().map(|x| (x.scorer.as_str(), x.value)).collect();
        assert_eq!(got.len(), 2);
        assert_eq!(got[0].0, "cost");
        assert_eq!(got[1].0, "latency_ms");
        assert!((got[1].1 - 130.0).abs() < 1e-12);
    }
}
