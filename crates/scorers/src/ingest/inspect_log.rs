//! Inspect logs read for what ingestion keeps, and nothing else: a log's
//! header (task, task version, status, each scorer's parameters) and per
//! sample its id, whether it errored, and its score values. Everything
//! else — messages, metadata, a value padded with a million zeros — is
//! skipped as it is read and never built into a tree: an upload costs its
//! bytes, not the many times more a `serde_json::Value` of it would.

use std::collections::BTreeMap;
use std::fmt;

use serde::Deserialize;
use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::value::RawValue;
use serde_json::{Map, Value};

/// The most members kept of a dictionary score value; more are skipped.
const MAX_PARTS: usize = 256;
/// The longest string kept of a scalar (a score value is `"C"`, `"0.5"`…).
const MAX_TEXT: usize = 4096;
/// The largest scorer parameters read (they name the scorer's version).
const MAX_PARAMS: usize = 1 << 20;

/// A log, or an archive's `header.json` (which has no `samples`).
#[derive(Deserialize)]
struct LogIn {
    /// Every Inspect log opens with it; JSON without it is another tool's.
    #[serde(default)]
    eval: Option<EvalIn>,
    #[serde(default)]
    status: Kept,
    /// Why a run whose status is `error` stopped.
    #[serde(default)]
    error: Option<ErrorIn>,
    #[serde(default)]
    results: Option<ResultsIn>,
    #[serde(default)]
    samples: Option<Vec<SampleIn>>,
}

#[derive(Deserialize, Default)]
struct EvalIn {
    #[serde(default)]
    task: Kept,
    #[serde(default)]
    task_version: Kept,
}

#[derive(Deserialize)]
struct ErrorIn {
    #[serde(default)]
    message: Kept,
}

#[derive(Deserialize)]
struct ResultsIn {
    #[serde(default)]
    scores: Option<Vec<ScoreConfigIn>>,
}

#[derive(Deserialize)]
struct ScoreConfigIn {
    #[serde(default)]
    name: Kept,
    #[serde(default)]
    scorer: Kept,
    #[serde(default)]
    params: Option<Box<RawValue>>,
}

/// One sample (of a log, or an archive's `samples/…json`).
#[derive(Deserialize)]
pub(super) struct SampleIn {
    #[serde(default)]
    id: Kept,
    #[serde(default)]
    error: Option<IgnoredAny>,
    #[serde(default)]
    scores: Option<BTreeMap<String, ScoreIn>>,
    #[serde(default)]
    score: Option<ScoreIn>,
}

#[derive(Deserialize)]
struct ScoreIn {
    #[serde(default)]
    value: Kept,
}

/// A JSON value as kept: a scalar, or at the top an object of scalars (a
/// dictionary score, at most [`MAX_PARTS`] of them); arrays, deeper objects
/// and the rest of a long string are skipped, read but never built.
#[derive(Default)]
struct Kept(Value);

impl<'de> Deserialize<'de> for Kept {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(Keep { top: true }).map(Kept)
    }
}

#[derive(Clone, Copy)]
struct Keep {
    top: bool,
}

impl<'de> DeserializeSeed<'de> for Keep {
    type Value = Value;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Keep {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Value, E> {
        Ok(v.into())
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Value, E> {
        Ok(v.into())
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Value, E> {
        Ok(serde_json::Number::from_f64(v).map_or(Value::Null, Value::Number))
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.chars().take(MAX_TEXT).collect()))
    }
    fn visit_unit<E: de::Error>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_none<E: de::Error>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(Value::Null)
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut out = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            if self.top && out.len() < MAX_PARTS {
                let value = map.next_value_seed(Keep { top: false })?;
                out.insert(key, value);
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(if self.top {
            Value::Object(out)
        } else {
            Value::Null
        })
    }
}

impl SampleIn {
    /// The sample in the shape ingestion reads: `id`, `error` (non-null
    /// when the sample errored), `scores` (scorer → `{value}`), `score`.
    fn into_value(self) -> Value {
        let mut kept = Map::new();
        kept.insert("id".into(), self.id.0);
        if self.error.is_some() {
            kept.insert("error".into(), Value::Bool(true));
        }
        if let Some(scores) = self.scores {
            let scores: Map<String, Value> = scores
                .into_iter()
                .map(|(k, s)| (k, serde_json::json!({ "value": s.value.0 })))
                .collect();
            kept.insert("scores".into(), Value::Object(scores));
        }
        if let Some(s) = self.score {
            kept.insert("score".into(), serde_json::json!({ "value": s.value.0 }));
        }
        Value::Object(kept)
    }
}

/// A log's header and its samples, in the shape ingestion reads.
///
/// # Errors
/// The JSON error, a message for JSON without Inspect's `eval` section, or
/// one for scorer parameters over 1 MiB.
pub(super) fn log(text: &str) -> Result<(Value, Vec<Value>), String> {
    let log: LogIn = serde_json::from_str(text).map_err(|e| e.to_string())?;
    let Some(eval) = log.eval else {
        return Err(
            "it has no \"eval\" section, which every Inspect log opens with (is it another tool's output? `ratchet ingest --help` lists the formats)"
                .into(),
        );
    };
    let mut scores = Vec::new();
    for c in log.results.and_then(|r| r.scores).unwrap_or_default() {
        let params = match c.params {
            Some(raw) if raw.get().len() > MAX_PARAMS => {
                return Err(format!(
                    "a scorer's params are {} bytes, over the {MAX_PARAMS} a version is read from",
                    raw.get().len()
                ));
            }
            Some(raw) => serde_json::from_str::<Value>(raw.get()).map_err(|e| e.to_string())?,
            None => Value::Null,
        };
        scores
            .push(serde_json::json!({ "name": c.name.0, "scorer": c.scorer.0, "params": params }));
    }
    let header = serde_json::json!({
        "eval": { "task": eval.task.0, "task_version": eval.task_version.0 },
        "status": log.status.0,
        "error": log.error.map_or(Value::Null, |e| e.message.0),
        "results": { "scores": scores },
    });
    let samples = log
        .samples
        .unwrap_or_default()
        .into_iter()
        .map(SampleIn::into_value)
        .collect();
    Ok((header, samples))
}

/// One sample of an archive, in the shape ingestion reads.
///
/// # Errors
/// The JSON error.
pub(super) fn sample(text: &str) -> Result<Value, String> {
    serde_json::from_str::<SampleIn>(text)
        .map(SampleIn::into_value)
        .map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sample_keeps_its_id_error_and_score_values_and_nothing_else() {
        let pad = vec!["0"; 100_000].join(",");
        let text = format!(
            r#"{{"id": 7, "messages": [{pad}], "scores": {{"match": {{"value": "C", "answer": [{pad}]}},
               "dict": {{"value": {{"a": 1, "b": [{pad}], "c": {{"deep": 1}}}}}}}}, "error": null}}"#
        );
        let parsed = sample(&text).expect("parses");
        assert_eq!(
            parsed,
            serde_json::json!({
                "id": 7,
                "scores": {
                    "dict": { "value": { "a": 1, "b": null, "c": null } },
                    "match": { "value": "C" },
                }
            })
        );
        let errored = sample(r#"{"id": "x", "error": {"message": "boom"}}"#).expect("parses");
        assert_eq!(errored["error"], true);
    }

    #[test]
    fn a_log_keeps_its_header_and_refuses_oversized_scorer_params() {
        let text = r#"{"eval": {"task": "pop", "task_version": 2, "dataset": {"x": [1, 2]}},
            "status": "success",
            "results": {"scores": [{"name": "match", "params": {"k": [1, 2]}}]},
            "samples": [{"id": "s1", "score": {"value": 1}}]}"#;
        let (header, samples) = log(text).expect("parses");
        assert_eq!(header["eval"]["task"], "pop");
        assert_eq!(header["eval"]["task_version"], 2);
        assert_eq!(header["status"], "success");
        assert_eq!(
            header["results"]["scores"][0]["params"],
            serde_json::json!({"k": [1, 2]})
        );
        assert_eq!(
            samples,
            [serde_json::json!({"id": "s1", "score": {"value": 1}})]
        );
        let big = format!(
            r#"{{"eval": {{"task": "pop"}}, "results": {{"scores": [{{"name": "m", "params": "{}"}}]}}}}"#,
            "x".repeat(MAX_PARAMS + 1)
        );
        let refused = log(&big).expect_err("refused");
        assert!(refused.contains("params"), "{refused}");
    }
}
