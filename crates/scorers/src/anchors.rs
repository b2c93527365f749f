//! Deterministic anchors: scores no rhetoric can move — test pass rate,
//! build/typecheck exit status, cost, latency — each with the direction in
//! which it improves, which the gate respects.

use serde::{Deserialize, Serialize};

use ratchet_trace::{CommitId, Receipt, Score, Store};

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

/// The direction of any scorer: an anchor's own, otherwise higher is better.
pub fn direction_of(scorer: &str) -> Direction {
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
