//! Every measurement a benchmark tool gave, kept beside the one number its
//! summary score holds: hyperfine's `times`, criterion's per-iteration
//! samples, pytest-benchmark's `stats.data`, Google Benchmark's
//! repetitions, each line of `go test -bench -count N`. A per-benchmark
//! comparison reads these; the summary score is unchanged.
//!
//! One event of kind [`KIND_SAMPLES`] per run of one benchmark, under the
//! same commit, session, task name, scorer and scorer version as the
//! summary score it stands beside, appended in the same transaction.
//! A run whose values do not fit one event (an event's payload is held to
//! [`ratchet_trace::DEFAULT_MAX_INLINE_PAYLOAD`] bytes: some 3,000 values)
//! is stored as consecutive events of the same run (same commit,
//! benchmark, scorer, version and round), in the tool's order: a reader
//! pools a run's events to read it whole.

use serde::{Deserialize, Serialize};

use ratchet_trace::{CommitId, EventDraft, MAX_NAME_LEN};

use ratchet_trace::{Error, Result};

/// The event kind of one run of one benchmark's samples.
pub const KIND_SAMPLES: &str = "samples";

/// One run of one benchmark: every measurement the tool gave, in the tool's order, in the scorer's unit.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Samples {
    /// The commit measured.
    pub commit: CommitId,
    /// The same name as the summary score's task.
    pub benchmark: String,
    /// The same scorer name as the summary score (`hyperfine_s`,
    /// `criterion_ns`, `pytest_benchmark_s`, `gbench_real_ns`,
    /// `go_ns_per_op`…).
    pub scorer: String,
    /// The same runner fingerprint as the summary score's `scorer_version`.
    pub scorer_version: String,
    /// The unit of the values (`s`, `ns`…).
    pub unit: String,
    /// The measurements: finite (and > 0 for times); at least one.
    pub values: Vec<f64>,
    /// The paired round (ABBA) that measured them, set by `ratchet bench`;
    /// `None` from a plain ingestion.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub round: Option<u64>,
}

fn invalid(field: &'static str, reason: impl Into<String>) -> Error {
    Error::InvalidInput {
        field,
        reason: reason.into(),
    }
}

fn check_name(field: &'static str, value: &str) -> Result<()> {
    if value.is_empty() {
        return Err(invalid(field, "must not be empty"));
    }
    if value.len() > MAX_NAME_LEN {
        return Err(invalid(
            field,
            format!("{} bytes, over the limit of {MAX_NAME_LEN}", value.len()),
        ));
    }
    if value.chars().any(char::is_control) {
        return Err(invalid(
            field,
            format!("{value:?} holds control characters"),
        ));
    }
    Ok(())
}

impl Samples {
    /// Checks what [`Samples::to_draft`] checks: every name non-empty, at
    /// most [`MAX_NAME_LEN`] bytes and free of control characters; at
    /// least one value; every value finite.
    fn validate(&self) -> Result<()> {
        check_name("samples.benchmark", &self.benchmark)?;
        check_name("samples.scorer", &self.scorer)?;
        check_name("samples.scorer_version", &self.scorer_version)?;
        check_name("samples.unit", &self.unit)?;
        if self.values.is_empty() {
            return Err(invalid("samples.values", "must hold at least one value"));
        }
        if let Some((i, v)) = self.values.iter().enumerate().find(|(_, v)| !v.is_finite()) {
            return Err(invalid(
                "samples.values",
                format!("value {i} ({v}) is not a finite number"),
            ));
        }
        Ok(())
    }

    /// The event to append (kind [`KIND_SAMPLES`], commit set, payload this
    /// struct as JSON; `-0.0` stored as `0.0`, as scores are).
    ///
    /// # Errors
    /// [`Error::InvalidInput`] naming the
    /// field: a name empty, too long or holding control characters, no
    /// values, a value not finite.
    pub fn to_draft(&self) -> Result<EventDraft> {
        self.validate()?;
        let mut canonical = self.clone();
        for v in &mut canonical.values {
            *v += 0.0;
        }
        Ok(EventDraft::json(KIND_SAMPLES, &canonical)?.commit(self.commit.clone()))
    }

    /// Whether `next`, stored at `next_seq`, holds more of the run this
    /// event (stored at `seq`) began: an importer splits a run too large
    /// for one event into events of consecutive seqs with the same commit,
    /// benchmark, scorer, version and round; anything else is a run of its
    /// own.
    pub fn continued_by(&self, seq: u64, next: &Samples, next_seq: u64) -> bool {
        next_seq == seq.saturating_add(1)
            && self.commit == next.commit
            && self.benchmark == next.benchmark
            && self.scorer == next.scorer
            && self.scorer_version == next.scorer_version
            && self.round == next.round
    }

    /// Parses a stored payload (an event of kind [`KIND_SAMPLES`]).
    ///
    /// # Errors
    /// [`Error::InvalidInput`] if the
    /// payload is not this struct's JSON (an unknown field included) or
    /// does not validate.
    pub fn from_payload(bytes: &[u8]) -> Result<Samples> {
        let read: Samples = serde_json::from_slice(bytes)
            .map_err(|e| invalid("samples", format!("payload is not samples: {e}")))?;
        read.validate()?;
        Ok(read)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn samples(values: Vec<f64>) -> Samples {
        Samples {
            commit: CommitId::parse(&"a".repeat(40)).expect("commit"),
            benchmark: "fib".into(),
            scorer: "hyperfine_s".into(),
            scorer_version: "abc".into(),
            unit: "s".into(),
            values,
            round: None,
        }
    }

    /// The payload `draft` is stored with.
    fn stored(draft: EventDraft) -> Vec<u8> {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut store =
            ratchet_trace::Store::create(dir.path().join("s"), Default::default()).expect("store");
        store.append(draft).expect("appends");
        let mut events = store.events_of_kinds(&[KIND_SAMPLES]).expect("reads");
        assert_eq!(events.len(), 1);
        events.remove(0).payload
    }

    #[test]
    fn a_draft_round_trips_and_refuses_what_no_reader_can_use() {
        let recorded = samples(vec![1.5, 2.0, -0.0]);
        let draft = recorded.to_draft().expect("draft");
        assert_eq!(draft.kind(), KIND_SAMPLES);
        let payload = stored(draft);
        let back = Samples::from_payload(&payload).expect("parses");
        assert_eq!(back.values, vec![1.5, 2.0, 0.0]);
        assert!(back.values[2].is_sign_positive());
        assert_eq!(back.round, None);
        assert_eq!(back.commit, recorded.commit);
        let text = String::from_utf8(payload).expect("utf8");
        assert!(!text.contains("round"), "{text}");
        assert!(samples(vec![]).to_draft().is_err());
        assert!(samples(vec![1.0, f64::NAN]).to_draft().is_err());
        assert!(samples(vec![f64::INFINITY]).to_draft().is_err());
        let mut recorded = samples(vec![1.0]);
        recorded.unit = String::new();
        assert!(recorded.to_draft().is_err());
        recorded.unit = "s".into();
        recorded.benchmark = "b".repeat(MAX_NAME_LEN + 1);
        assert!(recorded.to_draft().is_err());
        let rounded = Samples {
            round: Some(3),
            ..samples(vec![1.0])
        };
        let back = Samples::from_payload(&stored(rounded.to_draft().expect("draft")));
        assert_eq!(back.expect("parses").round, Some(3));
        assert!(Samples::from_payload(br#"{"x": 1}"#).is_err());
    }
}
