//! Directions: which way a scorer improves, as the trace declares it (a
//! `scorer` event, [`ScorerDeclaration`]) or, undeclared, as the built-in
//! default has it ([`direction_of`]: the deterministic anchors' own, the
//! benchmark importers' timings downwards, otherwise upwards).
//!
//! Declaring is a write with rules of its own (the first declaration
//! stands): `ratchet_scorers::declare_scorer` and the importers do it,
//! with this crate's payload.

use serde::{Deserialize, Serialize};

use ratchet_trace::{Event, ReservedKind, Result, Verified};

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

/// The scorer name of the pass-rate anchor.
pub const PASS_RATE: &str = "pass_rate";

/// The scorer name of criterion timings (nanoseconds, lower is better). Stable, so a policy can name it; the runner is the scorer
/// *version* (`ratchet_scorers::Environment::fingerprint`), so timings from different
/// runners are never paired — a change of runner starts a new segment,
/// never a regression.
pub const CRITERION_NS: &str = "criterion_ns";

/// The scorer of hyperfine's mean wall time, in seconds.
pub const HYPERFINE_S: &str = "hyperfine_s";

/// Google Benchmark's scorers: real (wall) and CPU time per iteration in
/// nanoseconds; counters per second where the benchmark reports them.
pub const GBENCH_REAL_NS: &str = "gbench_real_ns";
/// See [`GBENCH_REAL_NS`].
pub const GBENCH_CPU_NS: &str = "gbench_cpu_ns";

/// The scorer of pytest-benchmark's mean time per round, in seconds.
pub const PYTEST_BENCHMARK_S: &str = "pytest_benchmark_s";

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
            Anchor::PassRate => PASS_RATE,
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
/// [`ratchet_trace::Error`] if a declaration of this store does not parse
/// (a `scorer` event is written only by the declaring functions: one that
/// does not parse is an edited trace; verify the store).
pub fn declared_direction(
    view: &Verified,
    scorer: &str,
    max_seq: u64,
) -> Result<Option<(Direction, u64)>> {
    declared_direction_among(view.events(), scorer, max_seq)
}

/// [`declared_direction`] among `events` (in seq order): a writer's check
/// of what it is about to append reads them from the store
/// ([`ratchet_trace::Store::events_of_kinds`]).
///
/// # Errors
/// As [`declared_direction`].
pub fn declared_direction_among(
    events: &[Event],
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
        assert_eq!(direction_of("go_ns_per_op"), Direction::LowerIsBetter);
        for a in Anchor::ALL {
            assert_eq!(Anchor::from_scorer(a.scorer()), Some(a));
        }
    }

    #[test]
    fn a_declaration_is_stored_as_it_always_was() {
        let declaration = ScorerDeclaration {
            scorer: "latency_ms".into(),
            direction: Direction::LowerIsBetter,
        };
        let json = serde_json::to_string(&declaration).expect("json");
        assert_eq!(
            json,
            r#"{"scorer":"latency_ms","direction":"lower_is_better"}"#
        );
        assert_eq!(
            serde_json::from_str::<ScorerDeclaration>(&json).expect("parses"),
            declaration
        );
    }
}
