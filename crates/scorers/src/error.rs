//! The one error type of `ratchet-scorers`.

use std::fmt;
use std::path::PathBuf;

/// `Result` with this crate's [`Error`] as the default error.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// One problem with one item (or with the file, in parentheses).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// The item's id.
    pub item: String,
    /// What is wrong.
    pub reason: String,
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.item, self.reason)
    }
}

fn list(problems: &[Problem]) -> String {
    problems
        .iter()
        .map(Problem::to_string)
        .collect::<Vec<_>>()
        .join("; ")
}

/// Everything that can go wrong scoring and ingesting.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A rubric file is invalid; every problem is listed.
    #[error("invalid rubric: {}", list(problems))]
    InvalidRubric {
        /// The problems.
        problems: Vec<Problem>,
    },
    /// A judge's observation does not fit the rubric; every problem is
    /// listed; no score was produced.
    #[error("observation does not fit rubric {rubric}: {}", list(problems))]
    InvalidObservation {
        /// The rubric.
        rubric: String,
        /// The problems, by item.
        problems: Vec<Problem>,
    },
    /// An input file is malformed; nothing of it was stored.
    #[error("{}: {location}: {reason}; nothing stored", file.display())]
    Malformed {
        /// The file.
        file: PathBuf,
        /// Where in it: `line 7`, or an XML path.
        location: String,
        /// What is wrong.
        reason: String,
    },
    /// `ingest` was asked for a format it does not read.
    #[error("unknown format {given:?}: ingest reads {known}")]
    UnknownFormat {
        /// What was given.
        given: String,
        /// The formats known.
        known: String,
    },
    /// A format's results belong to one commit, and none was given.
    #[error("ingest {format} needs the commit the results belong to (--commit REV)")]
    NeedsCommit {
        /// The format.
        format: &'static str,
    },
    /// `ingest` was given no file.
    #[error("ingest {format} was given no file or directory to read")]
    NoInput {
        /// The format.
        format: &'static str,
    },
    /// A holdout rubric was asked for through the proposer's view.
    #[error("rubric {0} is not available to the proposing side")]
    Hidden(String),
    /// A file could not be read.
    #[error("cannot read {}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// The trace store refused or failed.
    #[error(transparent)]
    Trace(#[from] ratchet_trace::Error),
    /// A scorer was declared with another direction before: a scorer's
    /// direction is data, fixed when it first appears.
    #[error(
        "scorer {scorer:?} was declared {declared:?} at seq {seq}; it cannot now be {given:?} (record it under another name)"
    )]
    DirectionConflict {
        /// The scorer.
        scorer: String,
        /// The direction in the trace.
        declared: crate::Direction,
        /// The direction given now.
        given: crate::Direction,
        /// Seq of the declaration.
        seq: u64,
    },
    /// The ingestion would declare a scorer's direction its caller chose,
    /// and the caller may not declare directions (a `record` token of
    /// `ratchet serve`): the first declaration decides how the gate reads
    /// every later score of the scorer.
    #[error(
        "scorer {scorer:?} has no declared direction, and this writer may not declare one ({given:?} was given): the store's owner declares it (`ratchet record-score --direction`, or an ingestion of its own), or leave the direction out"
    )]
    MayNotDeclare {
        /// The scorer.
        scorer: String,
        /// The direction the caller gave.
        given: crate::Direction,
    },
    /// A rubric is pinned in the trace at another version than the file
    /// given: nothing was scored with it.
    #[error(
        "rubric {rubric:?} is pinned at version {pinned} (seq {seq}), but the file given is version {given}; score with the pinned rubric, or pin this one first (`ratchet rubric pin FILE`, a recorded act)"
    )]
    RubricNotPinned {
        /// The rubric.
        rubric: String,
        /// The version pinned.
        pinned: String,
        /// The version of the file given.
        given: String,
        /// Seq of the pin.
        seq: u64,
    },
}

impl Error {
    /// The trace store's error this one is, if it is one: a transparent
    /// wrapper forwards its `source()` past the wrapped error, so the
    /// chain alone does not show it.
    pub fn trace_error(&self) -> Option<&ratchet_trace::Error> {
        match self {
            Error::Trace(e) => Some(e),
            _ => None,
        }
    }
}
