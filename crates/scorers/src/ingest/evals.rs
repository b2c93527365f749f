//! LLM-eval outputs: Inspect AI logs, lm-evaluation-harness per-sample
//! JSONL and promptfoo results. Per sample and metric one score: task =
//! the sample's stable id (prefixed by the eval's task where one file may
//! hold several), scorer = the metric, version = the *scorer's*
//! configuration (its parameters, a grader model among them; the asserts of
//! a promptfoo test). The model or prompt under evaluation is not in the
//! version: it is what a candidate commit may change, and a version that
//! changed with it would never pair with the baseline.

use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};

use serde_json::Value;

use ratchet_trace::CommitId;

use super::junit::storable_name;
use super::{Declared, Evidence, IngestOptions, Means, Notes, malformed, read, read_bytes};
use crate::Direction;
use crate::error::Result;

const HIGHER: Option<(Direction, Declared)> = Some((Direction::HigherIsBetter, Declared::ByFormat));
const LOWER: Option<(Direction, Declared)> = Some((Direction::LowerIsBetter, Declared::ByFormat));
/// Higher is better for a name the file chooses: a convention, not a fact.
const HIGHER_BY_CONVENTION: Option<(Direction, Declared)> =
    Some((Direction::HigherIsBetter, Declared::ByConvention));

/// A short, stable name for a value: the first 12 hex digits of BLAKE3
/// over its JSON.
fn short_hash(value: &Value) -> String {
    let bytes = serde_json::to_vec(value).unwrap_or_default();
    blake3::hash(&bytes).to_hex()[..12].to_string()
}

/// A short, stable name for a configuration: `prefix:` and its
/// [`short_hash`].
fn config_version(prefix: &str, config: &Value) -> String {
    format!("{prefix}:{}", short_hash(config))
}

/// An Inspect score value as a number, as Inspect's own `value_to_float`
/// reads it: `C`orrect 1, `I`ncorrect 0, `P`artial 0.5, `N`o answer 0,
/// booleans, numbers and numeric strings.
fn inspect_value(v: &Value) -> Option<f64> {
    match v {
        Value::Bool(b) => Some(f64::from(u8::from(*b))),
        Value::Number(n) => n.as_f64(),
        Value::String(s) => match s.trim().to_ascii_lowercase().as_str() {
            "c" | "correct" | "yes" | "true" => Some(1.0),
            "i" | "incorrect" | "no" | "false" | "n" | "noanswer" => Some(0.0),
            "p" | "partial" => Some(0.5),
            other => other.parse::<f64>().ok(),
        },
        _ => None,
    }
    .filter(|x| x.is_finite())
}

/// The zstd frames of `compressed` inflated, at most `limit` bytes of
/// them (more is never produced: the caller refuses a result this long).
/// Skippable frames are skipped, as zstd's own reader does.
fn unzstd(mut compressed: &[u8], limit: u64) -> std::result::Result<Vec<u8>, String> {
    use ruzstd::decoding::StreamingDecoder;
    use ruzstd::decoding::errors::{FrameDecoderError, ReadFrameHeaderError};
    let mut out = Vec::new();
    while !compressed.is_empty() && (out.len() as u64) < limit {
        match StreamingDecoder::new(&mut compressed) {
            Ok(mut frame) => {
                let room = limit - out.len() as u64;
                (&mut frame)
                    .take(room)
                    .read_to_end(&mut out)
                    .map_err(|e| e.to_string())?;
            }
            Err(FrameDecoderError::ReadFrameHeaderError(ReadFrameHeaderError::SkipFrame {
                length,
                ..
            })) => {
                let length = usize::try_from(length).unwrap_or(usize::MAX);
                compressed = compressed.get(length..).ok_or_else(|| {
                    "a skippable frame runs past the end of the entry".to_string()
                })?;
            }
            Err(e) => return Err(e.to_string()),
        }
    }
    Ok(out)
}

/// A log's parts: its header (`eval`, `results`…) and its samples.
fn inspect_parts(file: &Path, max_inflated: u64, notes: &mut Notes) -> Result<(Value, Vec<Value>)> {
    let is_archive = file.extension().is_some_and(|e| e == "eval");
    if !is_archive {
        return super::inspect_log::log(&super::strict_json(&read(file)?))
            .map_err(|e| malformed(file, "JSON", format!("not an Inspect log: {e}")));
    }
    // The `.eval` archive: `header.json` and one `samples/<id>_epoch_<n>.json`
    // per sample and epoch.
    let bytes = read_bytes(file)?;
    let mut archive = zip::ZipArchive::new(std::io::Cursor::new(bytes)).map_err(|e| {
        malformed(
            file,
            "archive",
            format!("not an Inspect .eval archive: {e}"),
        )
    })?;
    // What the entries inflate to is counted as they are read, whatever
    // their headers claim: a small archive must not become gigabytes.
    let mut left = max_inflated;
    let mut json_at = |archive: &mut zip::ZipArchive<std::io::Cursor<Vec<u8>>>, i: usize| {
        let at = || format!("archive entry #{i}");
        let (name, zstd) = {
            let raw = archive
                .by_index_raw(i)
                .map_err(|e| malformed(file, at(), e.to_string()))?;
            let name = raw
                .name()
                .map_err(|e| malformed(file, at(), e.to_string()))?
                .into_owned();
            (name, raw.compression() == zip::CompressionMethod::ZSTD)
        };
        let too_big = |name: &str| {
            malformed(
                file,
                name,
                format!(
                    "the archive inflates past {max_inflated} bytes (a zip bomb, or a log larger than this reader accepts)"
                ),
            )
        };
        let bytes = if zstd {
            // Inspect 0.3.x's default: zstd (method 93), which zip reads
            // only through a C library; the raw entry is inflated here
            // with the same bound as deflate, and its CRC-32 checked as
            // zip checks a deflated entry's.
            let mut raw = archive
                .by_index_raw(i)
                .map_err(|e| malformed(file, &name, e.to_string()))?;
            let crc = raw.crc32();
            let mut compressed = Vec::new();
            raw.read_to_end(&mut compressed)
                .map_err(|e| malformed(file, &name, format!("cannot be read: {e}")))?;
            let bytes = unzstd(&compressed, left.saturating_add(1))
                .map_err(|e| malformed(file, &name, format!("cannot be inflated (zstd): {e}")))?;
            if bytes.len() as u64 <= left && crc32fast::hash(&bytes) != crc {
                return Err(malformed(
                    file,
                    &name,
                    "inflates to bytes whose CRC-32 is not the one the archive records (a damaged file)",
                ));
            }
            bytes
        } else {
            let entry = archive
                .by_index(i)
                .map_err(|e| malformed(file, &name, format!("cannot be read: {e}")))?;
            let mut bytes = Vec::new();
            entry
                .take(left.saturating_add(1))
                .read_to_end(&mut bytes)
                .map_err(|e| malformed(file, &name, format!("cannot be read: {e}")))?;
            bytes
        };
        left = left
            .checked_sub(bytes.len() as u64)
            .ok_or_else(|| too_big(&name))?;
        let text = String::from_utf8(bytes)
            .map_err(|e| malformed(file, &name, format!("not UTF-8 text: {e}")))?;
        Ok::<_, crate::Error>((name, text))
    };
    let mut header = None;
    let mut samples = Vec::new();
    let mut names: Vec<(usize, String)> = (0..archive.len())
        .filter_map(|i| {
            archive
                .name_for_index(i)
                .and_then(|n| n.ok())
                .map(|n| (i, n.into_owned()))
        })
        .collect();
    names.sort_by(|a, b| a.1.cmp(&b.1));
    for (i, name) in names {
        if name == "header.json" {
            let (name, text) = json_at(&mut archive, i)?;
            let (h, _) = super::inspect_log::log(&super::strict_json(&text))
                .map_err(|e| malformed(file, &name, format!("not an Inspect log header: {e}")))?;
            header = Some(h);
        } else if name.starts_with("samples/") && name.ends_with(".json") {
            let (name, text) = json_at(&mut archive, i)?;
            samples.push(
                super::inspect_log::sample(&super::strict_json(&text))
                    .map_err(|e| malformed(file, &name, format!("not JSON: {e}")))?,
            );
        }
    }
    let header = match header {
        Some(h) => h,
        None => {
            // A log still being written has only its journal.
            notes.say(
                "no header",
                format!(
                    "{}: the archive has no header.json (an unfinished log?)",
                    file.display()
                ),
            );
            Value::Null
        }
    };
    Ok((header, samples))
}

/// Inspect AI logs (`.eval` archives and `.json`): per sample and scorer
/// (a dictionary value: per key, `scorer/key`) the value as Inspect reads
/// it, epochs averaged; task = `<eval task>/<sample id>`; version = the
/// eval task, its version and the scorer's parameters. Higher is better.
pub(super) fn inspect(
    files: &[PathBuf],
    commit: &CommitId,
    options: &IngestOptions,
    notes: &mut Notes,
) -> Result<super::Evidence> {
    let mut evidence = Evidence::default();
    let max_inflated = options
        .max_inflated_bytes
        .unwrap_or(super::MAX_INFLATED_BYTES);
    for file in files {
        let (header, samples) = inspect_parts(file, max_inflated, notes)?;
        let eval = &header["eval"];
        let task_name = eval["task"].as_str().unwrap_or("inspect");
        let task_name = task_name.rsplit('/').next().unwrap_or(task_name);
        let status = header["status"].as_str().unwrap_or("unknown");
        // Each scorer's configuration, from the results' score entries.
        let mut scorer_config: BTreeMap<String, Value> = BTreeMap::new();
        if let Some(entries) = header["results"]["scores"].as_array() {
            for entry in entries {
                if let Some(name) = entry["name"].as_str().or(entry["scorer"].as_str()) {
                    scorer_config.insert(name.to_string(), entry["params"].clone());
                }
            }
        }
        let version_of = |scorer: &str| {
            config_version(
                "inspect",
                &serde_json::json!([
                    task_name,
                    eval["task_version"],
                    scorer,
                    scorer_config.get(scorer).unwrap_or(&Value::Null)
                ]),
            )
        };
        // A run that stopped (status `error`, `cancelled`) is said once,
        // with what of it was recorded, after its samples are read.
        let finished = status == "success" || header.is_null();
        if samples.is_empty() && finished {
            return Err(malformed(
                file,
                "samples",
                "the log holds no samples (was it written with --no-log-samples?)",
            ));
        }
        let mut means = Means::default();
        let mut recorded = 0usize;
        for (i, sample) in samples.iter().enumerate() {
            let before = means.added();
            let id = match &sample["id"] {
                Value::String(s) => s.clone(),
                Value::Number(n) => n.to_string(),
                _ => return Err(malformed(file, format!("samples[{i}]"), "has no id")),
            };
            if !sample["error"].is_null() {
                notes.say(
                    "sample error",
                    format!(
                        "{}: sample {id:?} ended in an error; not recorded",
                        file.display()
                    ),
                );
                continue;
            }
            let task = format!("{task_name}/{id}");
            // Logs before Inspect 0.3.x held one `score`, later ones `scores`.
            let mut scores: Vec<(String, &Value)> = Vec::new();
            if let Some(map) = sample["scores"].as_object() {
                scores.extend(map.iter().map(|(k, v)| (k.clone(), v)));
            } else if sample["score"].is_object() {
                scores.push(("score".to_string(), &sample["score"]));
            }
            for (scorer, score) in scores {
                let value = &score["value"];
                match value {
                    Value::Object(parts) => {
                        for (key, part) in parts {
                            match inspect_value(part) {
                                Some(x) => means.add(&task, &format!("{scorer}/{key}"), &version_of(&scorer), HIGHER_BY_CONVENTION, x),
                                None => notes.say("not a number", format!("{}: a score value that is not a number ({part}) was not recorded", file.display())),
                            }
                        }
                    }
                    other => match inspect_value(other) {
                        Some(x) => means.add(
                            &task,
                            &scorer,
                            &version_of(&scorer),
                            HIGHER_BY_CONVENTION,
                            x,
                        ),
                        None => notes.say(
                            "not a number",
                            format!(
                                "{}: a score value that is not a number ({other}) was not recorded",
                                file.display()
                            ),
                        ),
                    },
                }
            }
            if means.added() > before {
                recorded += 1;
            }
        }
        if !finished {
            let why = match header["error"].as_str().and_then(|e| e.lines().next()) {
                Some(e) => format!(" ({})", e.chars().take(200).collect::<String>()),
                None => String::new(),
            };
            let what = match (recorded, samples.len()) {
                (_, 0) => "it holds no sample: the run stopped before one was written".to_string(),
                (0, n) => format!("none of the {n} sample(s) it holds has a score to record"),
                (k, n) => format!(
                    "{k} of the {n} sample(s) it holds are recorded, the rest have no score"
                ),
            };
            notes.say(
                "unfinished log",
                format!(
                    "{}: the log's status is {status:?}{why}; {what}",
                    file.display()
                ),
            );
        }
        means.into_evidence(&mut evidence, commit, file, |_, _| {})?;
    }
    Ok(evidence)
}

/// The fields of an lm-eval samples line that are not metrics.
const LM_EVAL_FIELDS: [&str; 11] = [
    "doc_id",
    "doc",
    "target",
    "arguments",
    "resps",
    "filtered_resps",
    "filter",
    "metrics",
    "doc_hash",
    "prompt_hash",
    "target_hash",
];

/// lm-evaluation-harness metrics whose direction is known.
fn lm_eval_direction(metric: &str) -> Option<(Direction, Declared)> {
    let base = metric.split(',').next().unwrap_or(metric);
    match base {
        "perplexity" | "word_perplexity" | "byte_perplexity" | "bits_per_byte" | "ter"
        | "ter_score" | "brier_score" | "mae" | "mse" | "rmse" => LOWER,
        "acc"
        | "acc_norm"
        | "acc_mutual_info"
        | "exact_match"
        | "em"
        | "f1"
        | "mcc"
        | "bleu"
        | "chrf"
        | "bleu_score"
        | "chrf_score"
        | "comet_score"
        | "bleurt_score"
        | "rouge1"
        | "rouge2"
        | "rougeL"
        | "rougeLsum"
        | "contains"
        | "pass@1"
        | "pass_at_1"
        | "prompt_level_strict_acc"
        | "prompt_level_loose_acc"
        | "inst_level_strict_acc"
        | "inst_level_loose_acc" => HIGHER,
        _ => None,
    }
}

/// The lm-eval task a samples file belongs to: `samples_<task>_<date>.jsonl`.
fn lm_eval_task(file: &Path) -> String {
    let stem = file
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let name = stem.strip_prefix("samples_").unwrap_or(&stem);
    match name.rsplit_once('_') {
        Some((task, date)) if date.starts_with(|c: char| c.is_ascii_digit()) => task.to_string(),
        _ => name.to_string(),
    }
}

/// The scorer name an lm-eval aggregate is recorded under: its own, never
/// a per-sample metric's (see [`lm_eval`]).
const LM_EVAL_AGGREGATE: &str = "aggregate/";

/// lm-evaluation-harness output, as `--output_path DIR --log_samples`
/// writes it (`DIR/<model>/samples_<task>_<date>.jsonl` and
/// `results_<date>.json`; a directory is read one level down).
///
/// Samples JSONL: per line (a document) each metric it lists, task =
/// `<lm task>/<doc_id>`, scorer = the metric (`metric,filter` for a filter
/// other than `none`, as lm-eval names them); a metric whose per-sample
/// value is not a number (perplexity's log-likelihood pairs) is left out,
/// said once. These are what the gate pairs, task by task.
///
/// `results_*.json`: the aggregates lm-eval computed over a task's samples
/// (`"acc,none": 0.5`). An aggregate is one number for a whole task, not a
/// sample, so it is kept out of what the gate pairs: it is recorded under
/// its own scorer, `aggregate/<metric>` (`aggregate/<metric>,<filter>`), on
/// task `<lm task>` — a policy naming `acc` reads the samples only, and the
/// store has no other kind for a summary that the gate would skip. Their
/// standard errors (`acc_stderr,none`) are not recorded (said once); the
/// direction is the file's own `higher_is_better` where lm-eval's metric
/// is not known here.
pub(super) fn lm_eval(
    files: &[PathBuf],
    commit: &CommitId,
    options: &IngestOptions,
    notes: &mut Notes,
) -> Result<Evidence> {
    let mut evidence = Evidence::default();
    for file in files {
        if file.extension().is_some_and(|e| e == "json") {
            lm_eval_results(file, commit, options, notes, &mut evidence)?;
            continue;
        }
        let lm_task = lm_eval_task(file);
        let text = read(file)?;
        let mut means = Means::default();
        for (n, raw) in text.lines().enumerate() {
            let at = format!("line {}", n + 1);
            if raw.trim().is_empty() {
                continue;
            }
            let line: Value = serde_json::from_str(&super::strict_json(raw))
                .map_err(|e| malformed(file, &at, format!("not JSON: {e}")))?;
            let doc_id = match &line["doc_id"] {
                Value::Number(n) => n.to_string(),
                Value::String(s) => s.clone(),
                _ => {
                    return Err(malformed(
                        file,
                        &at,
                        "has no doc_id: not an lm-eval samples line",
                    ));
                }
            };
            // Newer lm-eval lists the line's metrics; older versions only
            // wrote them beside the document's own fields.
            let metrics: Vec<&str> = match line["metrics"].as_array() {
                Some(listed) => listed.iter().filter_map(Value::as_str).collect(),
                None => line
                    .as_object()
                    .map(|o| {
                        o.keys()
                            .map(String::as_str)
                            .filter(|k| !LM_EVAL_FIELDS.contains(k))
                            .collect()
                    })
                    .unwrap_or_default(),
            };
            if metrics.is_empty() {
                return Err(malformed(
                    file,
                    &at,
                    "holds no metric: not an lm-eval samples line",
                ));
            }
            let filter = line["filter"].as_str().unwrap_or("none");
            let version = format!("lm-eval {}", storable_name(filter));
            let task = format!("{lm_task}/{doc_id}");
            for metric in metrics {
                let value = match &line[metric] {
                    Value::Bool(b) => Some(f64::from(u8::from(*b))),
                    Value::Number(x) => x.as_f64().filter(|x| x.is_finite()),
                    _ => None,
                };
                let Some(value) = value else {
                    notes.say(
                        "not a number",
                        format!(
                            "{}: metric {metric:?} has no per-sample number; not recorded",
                            file.display()
                        ),
                    );
                    continue;
                };
                let scorer = if filter == "none" {
                    metric.to_string()
                } else {
                    format!("{metric},{filter}")
                };
                let direction = lm_eval_direction(metric)
                    .or_else(|| super::bench::given(options, metric, notes));
                if direction.is_none() {
                    notes.say("no direction", format!("metric {metric:?} has no known direction and was not recorded; give --direction {metric}=higher|lower (or --direction higher|lower for every such metric)"));
                    continue;
                }
                means.add(&task, &scorer, &version, direction, value);
            }
        }
        means.into_evidence(&mut evidence, commit, file, |_, _| {})?;
    }
    Ok(evidence)
}

/// lm-eval's `results_*.json`: per task (and group) each aggregate metric
/// as a score of `aggregate/<metric>` (see [`lm_eval`]).
fn lm_eval_results(
    file: &Path,
    commit: &CommitId,
    options: &IngestOptions,
    notes: &mut Notes,
    evidence: &mut Evidence,
) -> Result<()> {
    let doc: Value = serde_json::from_str(&super::strict_json(&read(file)?))
        .map_err(|e| malformed(file, "JSON", format!("not JSON: {e}")))?;
    let results = doc["results"].as_object().ok_or_else(|| {
        malformed(
            file,
            "results",
            "no \"results\" object of tasks: not lm-eval's results_*.json (its per-sample files are samples_*.jsonl)",
        )
    })?;
    let mut means = Means::default();
    for (lm_task, metrics) in results {
        let Some(metrics) = metrics.as_object() else {
            return Err(malformed(
                file,
                format!("results.{lm_task}"),
                "is not an object of metrics",
            ));
        };
        for (key, value) in metrics {
            // `metric,filter`; what has no comma is the task's name,
            // alias or sample count, not a metric.
            let Some((metric, filter)) = key.split_once(',') else {
                continue;
            };
            if metric.ends_with("_stderr") {
                notes.say(
                    "stderr",
                    format!(
                        "{}: the aggregates' standard errors ({key}…) are not recorded",
                        file.display()
                    ),
                );
                continue;
            }
            let Some(x) = value.as_f64().filter(|x| x.is_finite()) else {
                notes.say(
                    "not a number",
                    format!(
                        "{}: aggregate {key:?} of {lm_task} is not a number ({value}); not recorded",
                        file.display()
                    ),
                );
                continue;
            };
            let scorer = if filter == "none" {
                format!("{LM_EVAL_AGGREGATE}{metric}")
            } else {
                format!("{LM_EVAL_AGGREGATE}{metric},{filter}")
            };
            let declared = match doc["higher_is_better"][lm_task][metric].as_bool() {
                Some(true) => HIGHER_BY_CONVENTION,
                Some(false) => Some((Direction::LowerIsBetter, Declared::ByConvention)),
                None => None,
            };
            let direction = lm_eval_direction(metric)
                .or(declared)
                .or(options.direction.map(|d| (d, Declared::Explicitly)));
            if direction.is_none() {
                notes.say("no direction", format!("aggregate {key:?} has no known direction and was not recorded; give --direction higher|lower"));
                continue;
            }
            let version = format!("lm-eval {}", storable_name(filter));
            means.add(lm_task, &scorer, &version, direction, x);
        }
    }
    means.into_evidence(evidence, commit, file, |_, _| {})
}

/// promptfoo's result rows, from JSON (`{"results": {"results": [...]}}`)
/// or JSONL (one row per line).
fn promptfoo_rows(file: &Path) -> Result<Vec<Value>> {
    let text = read(file)?;
    if file.extension().is_some_and(|e| e == "jsonl") {
        return text
            .lines()
            .enumerate()
            .filter(|(_, l)| !l.trim().is_empty())
            .map(|(n, l)| {
                serde_json::from_str(l).map_err(|e| {
                    malformed(file, format!("line {}", n + 1), format!("not JSON: {e}"))
                })
            })
            .collect();
    }
    if file.extension().is_some_and(|e| e == "xml") {
        return promptfoo_xml_rows(&text, file);
    }
    let doc: Value = serde_json::from_str(&text)
        .map_err(|e| malformed(file, "JSON", format!("not promptfoo output: {e}")))?;
    let rows = doc["results"]["results"]
        .as_array()
        .or(doc["results"].as_array())
        .ok_or_else(|| {
            malformed(
                file,
                "results",
                "no results list: not `promptfoo eval -o` output",
            )
        })?;
    Ok(rows.clone())
}

/// promptfoo's XML output (`-o results.xml`) is its JSON document written
/// as elements: an array as its element repeated (the rows are the
/// `<results>` elements repeated inside `<promptfoo><results>`), every
/// leaf as text. Rows are read back into the JSON shape with the leaves as
/// strings (numbers and booleans are read from them where a number or a
/// boolean is wanted) and an empty element as null: XML cannot tell `""`,
/// `{}`, `[]` and null apart, nor a one-element array from its element.
fn promptfoo_xml_rows(text: &str, file: &Path) -> Result<Vec<Value>> {
    fn to_json(node: roxmltree::Node<'_, '_>) -> Value {
        let children: Vec<_> = node
            .children()
            .filter(roxmltree::Node::is_element)
            .collect();
        if children.is_empty() {
            let text: String = node
                .children()
                .filter(roxmltree::Node::is_text)
                .filter_map(|c| c.text())
                .collect();
            return if text.is_empty() {
                Value::Null
            } else {
                Value::String(text)
            };
        }
        let mut map = serde_json::Map::new();
        for c in children {
            let value = to_json(c);
            let name = c.tag_name().name();
            match map.get_mut(name) {
                Some(Value::Array(items)) => items.push(value),
                Some(first) => *first = Value::Array(vec![first.take(), value]),
                None => {
                    map.insert(name.to_string(), value);
                }
            }
        }
        Value::Object(map)
    }
    let doc = roxmltree::Document::parse(super::without_declaration(text))
        .map_err(|e| malformed(file, "XML", e.to_string()))?;
    let is =
        |n: &roxmltree::Node<'_, '_>, name: &str| n.is_element() && n.tag_name().name() == name;
    let outer = doc
        .descendants()
        .find(|n| is(n, "results") && n.children().any(|c| is(&c, "results")))
        .ok_or_else(|| {
            malformed(
                file,
                "<results>",
                "no <results> element holding <results> rows: not `promptfoo eval -o results.xml` output",
            )
        })?;
    Ok(outer
        .children()
        .filter(|c| is(c, "results"))
        .map(to_json)
        .collect())
}

/// A number as promptfoo's JSON holds it, or as its XML writes it (text).
fn number(v: &Value) -> Option<f64> {
    match v {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
    .filter(|x: &f64| x.is_finite())
}

/// A boolean as promptfoo's JSON holds it, or as its XML writes it.
fn boolean(v: &Value) -> Option<bool> {
    match v {
        Value::Bool(b) => Some(*b),
        Value::String(s) if s == "true" => Some(true),
        Value::String(s) if s == "false" => Some(false),
        _ => None,
    }
}

/// A value in the one form JSON and XML output share: scalars as text,
/// empty values (`""`, `{}`, `[]`, null) dropped, a one-element array as
/// its element, object members sorted. What a test is hashed from, so the
/// same run read from `-o results.json`, `.jsonl` or `.xml` names its tests
/// alike.
fn canonical(v: &Value) -> Value {
    match v {
        Value::Null => Value::Null,
        Value::Bool(b) => Value::String(b.to_string()),
        Value::Number(n) => Value::String(n.to_string()),
        Value::String(s) if s.is_empty() => Value::Null,
        Value::String(s) => Value::String(s.clone()),
        Value::Array(items) => match items.as_slice() {
            [] => Value::Null,
            [one] => canonical(one),
            many => Value::Array(many.iter().map(canonical).collect()),
        },
        Value::Object(map) => {
            let kept: BTreeMap<&String, Value> = map
                .iter()
                .map(|(k, v)| (k, canonical(v)))
                .filter(|(_, v)| !v.is_null())
                .collect();
            if kept.is_empty() {
                Value::Null
            } else {
                Value::Object(kept.into_iter().map(|(k, v)| (k.clone(), v)).collect())
            }
        }
    }
}

/// The version of every promptfoo score: this reader's, and nothing of the
/// eval's configuration (see [`promptfoo`]).
const PROMPTFOO_VERSION: &str = "promptfoo-2";

/// promptfoo results (`promptfoo eval -o` JSON, JSONL or XML): per test its
/// score (`promptfoo_score`), whether it passed (`promptfoo_pass`, 1 or 0)
/// and each named score (`promptfoo_<name>`), all higher-is-better; its
/// cost and latency ride along as the `cost` and `latency_ms` anchors.
///
/// A test is its description (else `test`) and a short hash of what it is
/// — its vars, its asserts and its options (a grader model among them) —
/// so the task names the test's scoring: a test whose asserts change is a
/// new task, which pairs with nothing, and a test added (anywhere in the
/// file: the index is not part of the name) leaves every other test
/// paired. The version is the same for every score ([`PROMPTFOO_VERSION`]):
/// the gate pairs a scorer's scores under one version, so a version per
/// test, or one over every test's asserts, would leave it a single test to
/// pair, or none once a test is added. With several prompts or providers
/// in the file, which one is in the task too.
pub(super) fn promptfoo(
    files: &[PathBuf],
    commit: &CommitId,
    _options: &IngestOptions,
    notes: &mut Notes,
) -> Result<Evidence> {
    let mut evidence = Evidence::default();
    for file in files {
        let rows = promptfoo_rows(file)?;
        let arm = |r: &Value| {
            let prompt = match &r["promptIdx"] {
                Value::String(s) => s.clone(),
                Value::Null => String::new(),
                other => other.to_string(),
            };
            (provider_of(r), prompt)
        };
        let arms: std::collections::BTreeSet<(String, String)> = rows.iter().map(arm).collect();
        let several = arms.len() > 1;
        let mut means = Means::default();
        let mut measured: BTreeMap<String, (Option<f64>, Option<f64>)> = BTreeMap::new();
        for (i, row) in rows.iter().enumerate() {
            let at = format!("results[{i}]");
            let case = &row["testCase"];
            let vars = if case["vars"].is_null() {
                &row["vars"]
            } else {
                &case["vars"]
            };
            let identity = canonical(&serde_json::json!({
                "vars": vars,
                "assert": case["assert"],
                "options": case["options"],
            }));
            let hash = short_hash(&identity);
            let description = case["description"]
                .as_str()
                .or(row["description"].as_str())
                .filter(|d| !d.trim().is_empty())
                .unwrap_or("test");
            let mut task = format!("{description} #{hash}");
            if several {
                let (provider, prompt) = arm(row);
                task.push_str(&format!(" [{provider} #{prompt}]"));
            }
            let score = number(&row["score"]).or(number(&row["gradingResult"]["score"]));
            let Some(score) = score else {
                if row["error"].is_null() {
                    return Err(malformed(
                        file,
                        &at,
                        "has no score: not a promptfoo result row",
                    ));
                }
                notes.say(
                    "row error",
                    format!(
                        "{}: a result ended in an error; not recorded",
                        file.display()
                    ),
                );
                continue;
            };
            means.add(&task, "promptfoo_score", PROMPTFOO_VERSION, HIGHER, score);
            if let Some(pass) = boolean(&row["success"]).or(boolean(&row["gradingResult"]["pass"]))
            {
                means.add(
                    &task,
                    "promptfoo_pass",
                    PROMPTFOO_VERSION,
                    HIGHER,
                    f64::from(u8::from(pass)),
                );
            }
            if let Some(named) = row["namedScores"].as_object() {
                for (name, v) in named {
                    if let Some(x) = number(v) {
                        let scorer = format!(
                            "promptfoo_{}",
                            name.trim().replace(char::is_whitespace, "_")
                        );
                        means.add(&task, &scorer, PROMPTFOO_VERSION, HIGHER_BY_CONVENTION, x);
                    }
                }
            }
            let cost = number(&row["cost"]).filter(|c| *c >= 0.0);
            let latency = number(&row["latencyMs"]).filter(|l| *l >= 0.0);
            measured.insert(storable_name(&task), (cost, latency));
        }
        means.into_evidence(&mut evidence, commit, file, |task, s| {
            if s.scorer == "promptfoo_score"
                && let Some((cost, latency)) = measured.get(task)
            {
                s.cost = *cost;
                s.latency_ms = *latency;
            }
        })?;
    }
    evidence.push_measured_anchors(&files[0])?;
    Ok(evidence)
}

fn provider_of(row: &Value) -> String {
    row["provider"]["id"]
        .as_str()
        .or(row["provider"]["label"].as_str())
        .or(row["provider"].as_str())
        .unwrap_or("provider")
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zstd_entries_inflate_frame_by_frame_past_skippable_frames_up_to_the_limit() {
        use ruzstd::encoding::{CompressionLevel, compress_to_vec};
        let first = compress_to_vec(&br#"{"id": "#[..], CompressionLevel::Fastest);
        let second = compress_to_vec(&b"7}"[..], CompressionLevel::Fastest);
        // A skippable frame between them: its magic, its length, its bytes.
        let mut skippable = 0x184D_2A50_u32.to_le_bytes().to_vec();
        skippable.extend(3_u32.to_le_bytes());
        skippable.extend(b"abc");
        let entry = [first, skippable, second].concat();
        assert_eq!(unzstd(&entry, 1 << 20).as_deref(), Ok(&br#"{"id": 7}"#[..]));
        // Never more than the limit, however much the frames hold.
        let spaces = compress_to_vec(&vec![b' '; 1 << 20][..], CompressionLevel::Fastest);
        assert!(spaces.len() < 1 << 16, "{}", spaces.len());
        assert_eq!(unzstd(&spaces, 1000).map(|b| b.len()), Ok(1000));
        // A frame cut short is an error, not a shorter text.
        let cut = &spaces[..spaces.len() / 2];
        assert!(unzstd(cut, 1 << 21).is_err());
    }

    #[test]
    fn inspect_values_read_as_inspect_reads_them() {
        assert_eq!(inspect_value(&Value::from("C")), Some(1.0));
        assert_eq!(inspect_value(&Value::from("I")), Some(0.0));
        assert_eq!(inspect_value(&Value::from("P")), Some(0.5));
        assert_eq!(inspect_value(&Value::from(true)), Some(1.0));
        assert_eq!(inspect_value(&Value::from(0.25)), Some(0.25));
        assert_eq!(inspect_value(&Value::from("0.75")), Some(0.75));
        assert_eq!(inspect_value(&Value::from("maybe")), None);
        assert_eq!(inspect_value(&serde_json::json!([1])), None);
    }

    #[test]
    fn lm_eval_task_names_come_from_the_file_name() {
        assert_eq!(
            lm_eval_task(Path::new("samples_hellaswag_2024-05-13T15-45-05.123.jsonl")),
            "hellaswag"
        );
        assert_eq!(
            lm_eval_task(Path::new("samples_arc_easy_2024-01-01T00-00-00.jsonl")),
            "arc_easy"
        );
        assert_eq!(lm_eval_task(Path::new("mine.jsonl")), "mine");
    }
}
