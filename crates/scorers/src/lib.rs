//! `ratchet-scorers`: the rule that a language-model judge only fills in
//! observable facts, and the number the gate uses is computed by code.
//!
//! # Brief overview
//!
//! * [`Rubric`] — a typed checklist ([`Item`]s of kind [`ItemKind`]:
//!   boolean, count with a maximum, fraction), versioned by the BLAKE3 hash
//!   of its canonical form. [`Rubric::validate_observation`] checks a judge's
//!   JSON item by item and reports every problem at once;
//!   [`Rubric::score`] is plain weighted arithmetic (formula in the
//!   `rubric` module docs).
//! * [`RubricSet`] and its [`ProposerView`] — holdout rubrics count for the
//!   gate but are not listed or readable through the proposer's view.
//! * Ingestion: [`ingest`] reads what a tool wrote ([`Format`]): JUnit XML
//!   from any runner → test runs (failed tests named) and `pass_rate`
//!   scores; criterion, Bencher's BMF, hyperfine, Google Benchmark,
//!   pytest-benchmark, `go test -bench` → timing scores under a version
//!   that fingerprints the runner ([`Environment`]), so runners are never
//!   compared, each beside its run's every measurement ([`Samples`], a
//!   `samples` event); Inspect AI, lm-evaluation-harness and promptfoo → one score
//!   per sample and metric; JSON Lines of scores or rubric observations.
//!   Each all-or-nothing, once per evidence.
//! * Deterministic anchors ([`Anchor`]): pass rate, build status, cost,
//!   latency, each with its [`Direction`]; the gate takes a scorer's
//!   direction from [`direction_of`] unless the policy says otherwise.
//! * The recorded payloads the gate reads — [`Direction`] and the `scorer`
//!   declarations, [`Pin`]s, [`Samples`] — are `ratchet-records`', named
//!   here too.
//! * Batch scoring: [`record_observation`] and [`score_pending`] (the sleep
//!   phase: every unscored observation, idempotently).
//!
//! ```
//! use ratchet_scorers::Rubric;
//!
//! let rubric = Rubric::from_toml(r#"
//!     name = "helpfulness"
//!     [[item]]
//!     id = "answers_question"
//!     type = "boolean"
//!     weight = 3.0
//!     must = true
//!     [[item]]
//!     id = "cites_sources"
//!     type = "count"
//!     max = 3
//!     weight = 1.0
//! "#)?;
//! let judge = serde_json::json!({ "answers_question": true, "cites_sources": 3 });
//! assert_eq!(rubric.score_json(&judge)?, 1.0);
//! let judge = serde_json::json!({ "answers_question": false, "cites_sources": 3 });
//! assert_eq!(rubric.score_json(&judge)?, 0.0); // a failed must item caps the score
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![deny(missing_docs)]

mod anchors;
mod batch;
mod error;
mod holdout;
mod ingest;
mod pins;
mod rubric;
mod samples;

pub use anchors::{cost_and_latency, declare_scorer, record_build_status, record_score};
pub use batch::{BatchReport, KIND_OBSERVATION, record_observation, score_pending};
pub use error::{Error, Problem, Result};
pub use holdout::{ProposerView, RubricSet};
pub use ingest::{
    CRITERION_NS, Environment, Format, IngestOptions, IngestReport, JSONL_FORMAT,
    MAX_INFLATED_BYTES, PASS_RATE, ReadReports, ScorerRecorded, decode_xml, ingest,
    ingest_criterion, ingest_jsonl, ingest_junit, ingest_ledger, parse_criterion, parse_jsonl,
    parse_junit, read_reports, store_reports, store_reports_in, unnameable_suite,
};
pub use pins::{check_rubrics_pinned, pin_rubric};
pub use rubric::{Aggregation, Item, ItemKind, Observation, Rubric};
// The recorded payloads the gate reads, and their readers: in
// `ratchet-records` (which links no importer), named here as before.
pub use ratchet_records::{
    Anchor, Direction, KIND_SAMPLES, Pin, Pinned, Samples, ScorerDeclaration, append_pin,
    declared_direction, direction_in, direction_of, pinned_rubric_version, pins, rubric_pin_in,
};
