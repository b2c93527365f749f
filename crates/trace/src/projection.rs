//! Typed projections of reserved event kinds: `score` and `test_run` rows.
//!
//! A projection row is derived from its event's payload by [`Projection::from_event`],
//! both when appending and when verifying, so the two can never drift apart.

use rusqlite::{Connection, Row, params};
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::event::{CommitId, EventDraft, validate_name};

/// Event kind of a score.
pub const KIND_SCORE: &str = "score";
/// Event kind of a test run.
pub const KIND_TEST_RUN: &str = "test_run";

/// One measured value of one scorer on one task under one commit.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Score {
    /// The commit that was measured.
    pub commit: CommitId,
    /// The task (test case, prompt, benchmark) it was measured on.
    pub task: String,
    /// The scorer's name.
    pub scorer: String,
    /// Version of the scorer (for rubrics: the rubric's content hash).
    pub scorer_version: String,
    /// The score; must be finite.
    pub value: f64,
    /// Cost of producing the output, if measured (finite, ≥ 0).
    pub cost: Option<f64>,
    /// Latency in milliseconds, if measured (finite, ≥ 0).
    pub latency_ms: Option<f64>,
    /// Whether the scorer is a holdout (counted by the gate, hidden from proposers).
    pub holdout: bool,
}

impl Score {
    /// A score with version `"1"`, no cost or latency, not a holdout.
    pub fn new(
        commit: CommitId,
        task: impl Into<String>,
        scorer: impl Into<String>,
        value: f64,
    ) -> Self {
        Score {
            commit,
            task: task.into(),
            scorer: scorer.into(),
            scorer_version: "1".into(),
            value,
            cost: None,
            latency_ms: None,
            holdout: false,
        }
    }

    /// The event that records this score.
    ///
    /// # Errors
    /// [`Error::InvalidInput`] naming the field if a value is not finite, negative
    /// where it must not be, or a name is empty or too long.
    pub fn to_draft(&self) -> Result<EventDraft> {
        let body = ScoreBody {
            task: self.task.clone(),
            scorer: self.scorer.clone(),
            scorer_version: self.scorer_version.clone(),
            value: canonical(self.value),
            cost: self.cost.map(canonical),
            latency_ms: self.latency_ms.map(canonical),
            holdout: self.holdout,
        };
        body.validate()?;
        Ok(EventDraft::json(KIND_SCORE, &body)?.commit(self.commit.clone()))
    }
}

/// One run of one test suite under one commit.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TestRun {
    /// The commit that was tested.
    pub commit: CommitId,
    /// The suite's name.
    pub suite: String,
    /// Tests that passed.
    pub passed: u64,
    /// Tests that failed (errors included).
    pub failed: u64,
    /// Tests skipped.
    pub skipped: u64,
    /// Wall time of the run in milliseconds (finite, ≥ 0).
    pub duration_ms: f64,
    /// The names of the tests that failed (at most [`MAX_FAILURES_NAMED`],
    /// in the report's order). Kept in the hash-chained event, not in the
    /// `test_runs` projection table: what a reader of the verified view
    /// sees, never what a reader of the table sees.
    pub failures: Vec<String>,
}

/// How many failed tests a test run names: a report with more failures
/// keeps its count exact and names the first this many.
pub const MAX_FAILURES_NAMED: usize = 200;

impl TestRun {
    /// The event that records this test run.
    ///
    /// # Errors
    /// [`Error::InvalidInput`] naming the field if a count or the duration is out of range.
    pub fn to_draft(&self) -> Result<EventDraft> {
        let body = TestRunBody {
            suite: self.suite.clone(),
            passed: self.passed,
            failed: self.failed,
            skipped: self.skipped,
            duration_ms: canonical(self.duration_ms),
            failures: self.failures.clone(),
        };
        body.validate()?;
        Ok(EventDraft::json(KIND_TEST_RUN, &body)?.commit(self.commit.clone()))
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct ScoreBody {
    task: String,
    scorer: String,
    scorer_version: String,
    value: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    cost: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    latency_ms: Option<f64>,
    #[serde(default)]
    holdout: bool,
}

fn check_finite(field: &'static str, v: f64, non_negative: bool) -> Result<()> {
    if !v.is_finite() {
        return Err(Error::invalid(field, format!("{v} is not a finite number")));
    }
    if non_negative && v < 0.0 {
        return Err(Error::invalid(field, format!("{v} is negative")));
    }
    Ok(())
}

impl ScoreBody {
    fn validate(&self) -> Result<()> {
        validate_name("score.task", &self.task)?;
        validate_name("score.scorer", &self.scorer)?;
        validate_name("score.scorer_version", &self.scorer_version)?;
        check_finite("score.value", self.value, false)?;
        if let Some(c) = self.cost {
            check_finite("score.cost", c, true)?;
        }
        if let Some(l) = self.latency_ms {
            check_finite("score.latency_ms", l, true)?;
        }
        Ok(())
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct TestRunBody {
    suite: String,
    passed: u64,
    failed: u64,
    skipped: u64,
    duration_ms: f64,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    failures: Vec<String>,
}

impl TestRunBody {
    fn validate(&self) -> Result<()> {
        validate_name("test_run.suite", &self.suite)?;
        for (f, v) in [
            ("test_run.passed", self.passed),
            ("test_run.failed", self.failed),
            ("test_run.skipped", self.skipped),
        ] {
            if v > i64::MAX as u64 {
                return Err(Error::invalid(f, format!("{v} is too large")));
            }
        }
        if self.failures.len() > MAX_FAILURES_NAMED {
            return Err(Error::invalid(
                "test_run.failures",
                format!(
                    "names {} tests; at most {MAX_FAILURES_NAMED} are kept",
                    self.failures.len()
                ),
            ));
        }
        if self.failures.len() as u64 > self.failed {
            return Err(Error::invalid(
                "test_run.failures",
                format!(
                    "names {} failed tests but the run counts {} failures",
                    self.failures.len(),
                    self.failed
                ),
            ));
        }
        for name in &self.failures {
            validate_name("test_run.failures", name)?;
        }
        check_finite("test_run.duration_ms", self.duration_ms, true)
    }
}

/// The typed row an event of a reserved kind projects to.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Projection {
    Score(Score),
    TestRun(TestRun),
}

/// The float SQLite gives back for `x`: a REAL column stores −0.0 as 0.0,
/// so the projection derived from a payload holding `-0`, `-0.0` or `-0e0`
/// (as ordinary JSON writers emit) must hold 0.0, or the row would never
/// match its event again. Adding +0.0 maps −0.0 to +0.0 and leaves every
/// other finite value, subnormals included, bit for bit as it was.
fn canonical(x: f64) -> f64 {
    x + 0.0
}

fn parse_body<T: for<'de> Deserialize<'de>>(kind: &str, payload: &[u8]) -> Result<T> {
    serde_json::from_slice(payload)
        .map_err(|e| Error::invalid("payload", format!("not a valid {kind} payload: {e}")))
}

fn need_commit(kind: &str, commit: Option<&CommitId>) -> Result<CommitId> {
    commit
        .cloned()
        .ok_or_else(|| Error::invalid("commit", format!("a {kind} event must name its commit")))
}

impl Projection {
    /// The projection of an event, `None` for kinds without one.
    pub fn from_event(
        kind: &str,
        commit: Option<&CommitId>,
        payload: &[u8],
    ) -> Result<Option<Self>> {
        match kind {
            KIND_SCORE => {
                let body: ScoreBody = parse_body(kind, payload)?;
                body.validate()?;
                Ok(Some(Projection::Score(Score {
                    commit: need_commit(kind, commit)?,
                    task: body.task,
                    scorer: body.scorer,
                    scorer_version: body.scorer_version,
                    value: canonical(body.value),
                    cost: body.cost.map(canonical),
                    latency_ms: body.latency_ms.map(canonical),
                    holdout: body.holdout,
                })))
            }
            KIND_TEST_RUN => {
                let body: TestRunBody = parse_body(kind, payload)?;
                body.validate()?;
                Ok(Some(Projection::TestRun(TestRun {
                    commit: need_commit(kind, commit)?,
                    suite: body.suite,
                    passed: body.passed,
                    failed: body.failed,
                    skipped: body.skipped,
                    duration_ms: canonical(body.duration_ms),
                    failures: body.failures,
                })))
            }
            _ => Ok(None),
        }
    }

    pub fn insert(&self, conn: &Connection, seq: u64) -> Result<()> {
        match self {
            Projection::Score(s) => conn
                .prepare_cached(
                    "INSERT INTO scores (seq, commit_id, task, scorer, scorer_version, value, cost, latency_ms, holdout)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
                )
                .and_then(|mut st| {
                    st.execute(params![
                        seq as i64,
                        s.commit.as_str(),
                        s.task,
                        s.scorer,
                        s.scorer_version,
                        s.value,
                        s.cost,
                        s.latency_ms,
                        s.holdout
                    ])
                })
                .map_err(Error::sqlite("inserting a score row"))?,
            Projection::TestRun(t) => conn
                .prepare_cached(
                    "INSERT INTO test_runs (seq, commit_id, suite, passed, failed, skipped, duration_ms)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
                )
                .and_then(|mut st| {
                    st.execute(params![
                        seq as i64,
                        t.commit.as_str(),
                        t.suite,
                        t.passed as i64,
                        t.failed as i64,
                        t.skipped as i64,
                        t.duration_ms
                    ])
                })
                .map_err(Error::sqlite("inserting a test run row"))?,
        };
        Ok(())
    }
}

/// Columns read for a score row, in this order, by [`score_from_row`].
pub(crate) const SCORE_COLUMNS: &str =
    "seq, commit_id, task, scorer, scorer_version, value, cost, latency_ms, holdout";
/// Columns read for a test run row, in this order, by [`test_run_from_row`].
pub(crate) const TEST_RUN_COLUMNS: &str =
    "seq, commit_id, suite, passed, failed, skipped, duration_ms";

/// A stored commit column, exactly as ratchet writes it (lower-case hex of
/// 40 or 64 digits). Parsing would accept `ABC…` as `abc…`, but the readers
/// compare the stored text: a row whose text is not canonical is one no
/// query would find under its commit, so it must not verify either.
fn commit_col(row: &Row<'_>, i: usize) -> rusqlite::Result<CommitId> {
    let text: String = row.get(i)?;
    if !crate::encoding::is_canonical_commit(&text) {
        return Err(rusqlite::Error::FromSqlConversionFailure(
            i,
            rusqlite::types::Type::Text,
            format!("commit {text:?} is not in canonical form").into(),
        ));
    }
    CommitId::parse(&text).map_err(|e| {
        rusqlite::Error::FromSqlConversionFailure(i, rusqlite::types::Type::Text, Box::new(e))
    })
}

fn count_col(row: &Row<'_>, i: usize) -> rusqlite::Result<u64> {
    let value: i64 = row.get(i)?;
    u64::try_from(value).map_err(|e| {
        rusqlite::Error::FromSqlConversionFailure(i, rusqlite::types::Type::Integer, Box::new(e))
    })
}

/// Reads `(seq, score)` from a row selected with [`SCORE_COLUMNS`].
pub(crate) fn score_from_row(row: &Row<'_>) -> rusqlite::Result<(u64, Score)> {
    Ok((
        count_col(row, 0)?,
        Score {
            commit: commit_col(row, 1)?,
            task: row.get(2)?,
            scorer: row.get(3)?,
            scorer_version: row.get(4)?,
            value: row.get(5)?,
            cost: row.get(6)?,
            latency_ms: row.get(7)?,
            holdout: row.get(8)?,
        },
    ))
}

/// Reads `(seq, test run)` from a row selected with [`TEST_RUN_COLUMNS`].
pub(crate) fn test_run_from_row(row: &Row<'_>) -> rusqlite::Result<(u64, TestRun)> {
    Ok((
        count_col(row, 0)?,
        TestRun {
            commit: commit_col(row, 1)?,
            suite: row.get(2)?,
            passed: count_col(row, 3)?,
            failed: count_col(row, 4)?,
            skipped: count_col(row, 5)?,
            duration_ms: row.get(6)?,
            failures: Vec::new(),
        },
    ))
}

/// Bit-exact equality of projections (`-0.0 != 0.0`, NaN never stored).
pub(crate) fn same_projection(a: &Projection, b: &Projection) -> bool {
    fn same_f(a: f64, b: f64) -> bool {
        a.to_bits() == b.to_bits()
    }
    fn same_of(a: Option<f64>, b: Option<f64>) -> bool {
        match (a, b) {
            (None, None) => true,
            (Some(a), Some(b)) => same_f(a, b),
            _ => false,
        }
    }
    match (a, b) {
        (Projection::Score(x), Projection::Score(y)) => {
            x.commit == y.commit
                && x.task == y.task
                && x.scorer == y.scorer
                && x.scorer_version == y.scorer_version
                && same_f(x.value, y.value)
                && same_of(x.cost, y.cost)
                && same_of(x.latency_ms, y.latency_ms)
                && x.holdout == y.holdout
        }
        (Projection::TestRun(x), Projection::TestRun(y)) => {
            x.commit == y.commit
                && x.suite == y.suite
                && x.passed == y.passed
                && x.failed == y.failed
                && x.skipped == y.skipped
                && same_f(x.duration_ms, y.duration_ms)
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn commit() -> CommitId {
        CommitId::parse(&"ab".repeat(20)).expect("commit")
    }

    #[test]
    fn non_finite_scores_are_refused_by_name() {
        for (v, cost, lat, field) in [
            (f64::NAN, None, None, "score.value"),
            (f64::INFINITY, None, None, "score.value"),
            (0.5, Some(f64::NEG_INFINITY), None, "score.cost"),
            (0.5, Some(-1.0), None, "score.cost"),
            (0.5, None, Some(f64::NAN), "score.latency_ms"),
        ] {
            let mut score = Score::new(commit(), "t", "acc", v);
            score.cost = cost;
            score.latency_ms = lat;
            match score.to_draft() {
                Err(Error::InvalidInput { field: f, .. }) => assert_eq!(f, field),
                other => panic!("expected {field} error, got {other:?}"),
            }
        }
    }

    #[test]
    fn score_payload_round_trips_through_projection() {
        let mut score = Score::new(commit(), "task-1", "acc", 0.1 + 0.2);
        score.cost = Some(1e-9);
        score.holdout = true;
        let draft = score.to_draft().expect("draft");
        let projection = Projection::from_event(&draft.kind, draft.commit.as_ref(), &draft.payload)
            .expect("parse")
            .expect("projection");
        assert!(same_projection(&projection, &Projection::Score(score)));
    }

    #[test]
    fn reserved_kinds_need_their_shape() {
        let commit_id = commit();
        let refused = Projection::from_event(KIND_SCORE, Some(&commit_id), br#"{"task":"t"}"#)
            .expect_err("missing");
        assert!(refused.to_string().contains("score payload"), "{refused}");
        let refused = Projection::from_event(
            KIND_SCORE,
            None,
            br#"{"task":"t","scorer":"s","scorer_version":"1","value":1}"#,
        )
        .expect_err("no commit");
        assert!(matches!(
            refused,
            Error::InvalidInput {
                field: "commit",
                ..
            }
        ));
        let refused = Projection::from_event(
            KIND_TEST_RUN,
            Some(&commit_id),
            br#"{"suite":"u","passed":1,"failed":0,"skipped":0,"duration_ms":-1}"#,
        )
        .expect_err("negative");
        assert!(matches!(
            refused,
            Error::InvalidInput {
                field: "test_run.duration_ms",
                ..
            }
        ));
        assert!(
            Projection::from_event("note", None, b"{}")
                .expect("other kinds")
                .is_none()
        );
    }
}
