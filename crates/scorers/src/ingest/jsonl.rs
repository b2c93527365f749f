//! JSON Lines of scores or of rubric observations.

use std::path::{Path, PathBuf};

use serde::Deserialize;

use ratchet_trace::{CommitId, Score};

use super::{Declared, Evidence, malformed, read};
use crate::Direction;
use crate::error::Result;
use crate::holdout::RubricSet;

/// A score line of a JSON Lines file.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
struct ScoreLine {
    task: String,
    scorer: String,
    value: f64,
    #[serde(default)]
    scorer_version: Option<String>,
    #[serde(default)]
    cost: Option<f64>,
    #[serde(default)]
    latency_ms: Option<f64>,
    #[serde(default)]
    holdout: bool,
    #[serde(default)]
    commit: Option<String>,
    #[serde(default)]
    direction: Option<LineDirection>,
}

/// A direction as a line writes it, as policy files do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
enum LineDirection {
    #[serde(alias = "higher_is_better")]
    Higher,
    #[serde(alias = "lower_is_better")]
    Lower,
}

impl From<LineDirection> for Direction {
    fn from(d: LineDirection) -> Direction {
        match d {
            LineDirection::Higher => Direction::HigherIsBetter,
            LineDirection::Lower => Direction::LowerIsBetter,
        }
    }
}

/// A judge's observation, to be scored by a rubric.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
struct ObservationLine {
    task: String,
    rubric: String,
    observation: serde_json::Value,
    #[serde(default)]
    commit: Option<String>,
}

/// One line of a JSON Lines file: a score, or a judge's observation. Which
/// one is told by its fields (`rubric` makes an observation), then the line
/// is read strictly: a misspelled field is an error, never silently dropped.
enum Line {
    Score(ScoreLine),
    Observation(ObservationLine),
}

/// The line format, for error messages and `--help`.
pub const JSONL_FORMAT: &str = "one JSON object per line, either a score \
{\"task\", \"scorer\", \"value\"} with optional \"scorer_version\", \"cost\", \"latency_ms\", \
\"holdout\", \"commit\", \"direction\" (\"higher\" or \"lower\" is better); or an observation {\"task\", \"rubric\", \"observation\": {...}} \
with optional \"commit\"";

impl Line {
    fn parse(raw: &str) -> std::result::Result<Line, String> {
        let value: serde_json::Value =
            serde_json::from_str(raw).map_err(|e| format!("not JSON: {e}"))?;
        let Some(object) = value.as_object() else {
            return Err(format!("not a JSON object; expected {JSONL_FORMAT}"));
        };
        if object.contains_key("rubric") || object.contains_key("observation") {
            serde_json::from_value(value)
                .map(Line::Observation)
                .map_err(|e| format!("observation line: {e}"))
        } else {
            serde_json::from_value(value)
                .map(Line::Score)
                .map_err(|e| format!("score line: {e}"))
        }
    }
}

/// Parses JSON Lines of scores (`{"task", "scorer", "value", …}`) or of
/// rubric observations (`{"task", "rubric", "observation": {…}}`, scored
/// here by the rubric's arithmetic and recorded under the rubric's version).
/// `commit` applies to lines that do not name their own. A UTF-8 byte-order
/// mark is skipped; blank lines are skipped; a file without one line is an
/// error.
///
/// # Errors
/// [`Error::Malformed`](crate::Error::Malformed) naming the file, the line and the problem (a line
/// that is not JSON, an unknown or missing field, a missing commit, an
/// unknown rubric, an observation that does not fit, a non-finite value,
/// an empty file).
pub fn parse_jsonl(
    text: &str,
    file: &Path,
    commit: Option<&CommitId>,
    rubrics: &RubricSet,
) -> Result<Vec<Score>> {
    Ok(parse_lines(text, file, commit, rubrics)?
        .into_iter()
        .map(|(score, _, _)| score)
        .collect())
}

/// A parsed line: the score, the direction its line declares (rubric
/// scores: higher is better, by construction), and where it was.
type ParsedLine = (Score, Option<(Direction, Declared)>, String);

fn parse_lines(
    text: &str,
    file: &Path,
    commit: Option<&CommitId>,
    rubrics: &RubricSet,
) -> Result<Vec<ParsedLine>> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut out = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let at = format!("line {}", i + 1);
        if raw.trim().is_empty() {
            continue;
        }
        let line = Line::parse(raw).map_err(|reason| malformed(file, &at, reason))?;
        let resolve = |c: &Option<String>| -> Result<CommitId> {
            match (c, commit) {
                // A file ingested for one commit is evidence about that
                // commit only: a line naming another is not the file's to
                // give (a candidate's output scoring its baseline).
                (Some(text), Some(given)) => {
                    let named =
                        CommitId::parse(text).map_err(|e| malformed(file, &at, e.to_string()))?;
                    if named != *given {
                        return Err(malformed(
                            file,
                            &at,
                            format!(
                                "the line scores commit {named}, but the file is ingested for commit {given}: a file ingested for one commit holds evidence about that commit only (drop the line's \"commit\", or ingest the file without --commit)"
                            ),
                        ));
                    }
                    Ok(named)
                }
                (Some(text), None) => {
                    CommitId::parse(text).map_err(|e| malformed(file, &at, e.to_string()))
                }
                (None, Some(c)) => Ok(c.clone()),
                (None, None) => Err(malformed(
                    file,
                    &at,
                    "no commit: the line names none and no default commit was given",
                )),
            }
        };
        let (score, direction) = match line {
            Line::Observation(ObservationLine {
                task,
                rubric,
                observation,
                commit: c,
            }) => {
                let rubric = rubrics
                    .get(&rubric)
                    .ok_or_else(|| malformed(file, &at, format!("unknown rubric {rubric:?}")))?;
                let value = rubric
                    .score_json(&observation)
                    .map_err(|e| malformed(file, &at, e.to_string()))?;
                let mut score = Score::new(resolve(&c)?, task, rubric.name.clone(), value);
                score.scorer_version = rubric.version();
                score.holdout = rubric.holdout;
                (score, Some((Direction::HigherIsBetter, Declared::ByFormat)))
            }
            Line::Score(ScoreLine {
                task,
                scorer,
                value,
                scorer_version,
                cost,
                latency_ms,
                holdout,
                commit: c,
                direction,
            }) => {
                let mut score = Score::new(resolve(&c)?, task, scorer, value);
                if let Some(v) = scorer_version {
                    score.scorer_version = v;
                }
                score.cost = cost;
                score.latency_ms = latency_ms;
                score.holdout = holdout;
                // A line's own direction is explicit; an anchor's (cost,
                // latency…) is known; any other name is left undeclared, so
                // its first declaration is a person's or the policy's,
                // never a guess.
                let known = crate::Anchor::from_scorer(&score.scorer)
                    .map(|a| (a.direction(), Declared::ByFormat));
                let declared = direction
                    .map(|d| (Direction::from(d), Declared::Explicitly))
                    .or(known);
                (score, declared)
            }
        };
        // The store's own validation, reported at this line.
        score
            .to_draft()
            .map_err(|e| malformed(file, &at, e.to_string()))?;
        out.push((score, direction, at));
    }
    if out.is_empty() {
        return Err(malformed(
            file,
            "file",
            format!("holds no line; expected {JSONL_FORMAT}"),
        ));
    }
    Ok(out)
}

/// The evidence of JSON Lines files: their scores, then the `cost` /
/// `latency_ms` anchor scores of the lines that measured them.
pub(super) fn evidence(
    files: &[PathBuf],
    commit: Option<&CommitId>,
    rubrics: &RubricSet,
) -> Result<Evidence> {
    let mut evidence = Evidence::default();
    for file in files {
        let text = read(file)?;
        for (score, direction, at) in parse_lines(&text, file, commit, rubrics)? {
            evidence.push(score, direction, file, &at)?;
        }
    }
    evidence.push_measured_anchors(&files[0])?;
    Ok(evidence)
}
