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
use crate::anchors::Direction;
use crate::error::Result;

const HIGHER: Option<(Direction, Declared)> = Some((Direction::HigherIsBetter, Declared::ByFormat));
const LOWER: Option<(Direction, Declared)> = Some((Direction::LowerIsBetter, Declared::ByFormat));
/// Higher is better for a name the file chooses: a convention, not a fact.
const HIGHER_BY_CONVENTION: Option<(Direction, Declared)> =
    Some((Direction::HigherIsBetter, Declared::ByConvention));

/// A short, stable name for a configuration: the first 12 hex digits of
/// BLAKE3 over its JSON.
fn config_version(prefix: &str, config: &Value) -> String {
    let bytes = serde_json::to_vec(config).unwrap_or_default();
    format!("{prefix}:{}", &blake3::hash(&bytes).to_hex()[..12])
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
        let entry = archive
            .by_index(i)
            .map_err(|e| malformed(file, format!("archive entry #{i}"), e.to_string()))?;
        let name = entry
            .name()
            .map_err(|e| malformed(file, format!("archive entry #{i}"), e.to_string()))?
            .into_owned();
        let mut text = String::new();
        entry
            .take(left.saturating_add(1))
            .read_to_string(&mut text)
            .map_err(|e| malformed(file, &name, format!("cannot be read: {e}")))?;
        left = left.checked_sub(text.len() as u64).ok_or_else(|| {
            malformed(
                file,
                &name,
                format!(
                    "the archive inflates past {max_inflated} bytes (a zip bomb, or a log larger than this reader accepts)"
                ),
            )
        })?;
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
                .map_err(|e| malformed(file, &name, format!("not JSON: {e}")))?;
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
        if status != "success" {
            notes.say(
                "unfinished log",
                format!(
                    "{}: the log's status is {status:?}; the samples it holds are recorded",
                    file.display()
                ),
            );
        }
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
        if samples.is_empty() {
            return Err(malformed(
                file,
                "samples",
                "the log holds no samples (was it written with --no-log-samples?)",
            ));
        }
        let mut means = Means::default();
        for (i, sample) in samples.iter().enumerate() {
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

/// lm-evaluation-harness `--log_samples` JSONL (`samples_<task>_<date>.jsonl`):
/// per line (a document) each metric it lists, task = `<lm task>/<doc_id>`,
/// scorer = the metric (`metric,filter` for a filter other than `none`, as
/// lm-eval names them); a metric whose per-sample value is not a number
/// (perplexity's log-likelihood pairs) is left out, said once.
pub(super) fn lm_eval(
    files: &[PathBuf],
    commit: &CommitId,
    options: &IngestOptions,
    notes: &mut Notes,
) -> Result<Evidence> {
    let mut evidence = Evidence::default();
    for file in files {
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

/// promptfoo's XML output is its JSON written as elements: the rows are
/// read back into the same JSON shape (numbers and booleans by their text).
fn promptfoo_xml_rows(text: &str, file: &Path) -> Result<Vec<Value>> {
    fn to_json(node: roxmltree::Node<'_, '_>) -> Value {
        let children: Vec<_> = node
            .children()
            .filter(roxmltree::Node::is_element)
            .collect();
        if children.is_empty() {
            let t = node.text().unwrap_or("").trim();
            return match t {
                "true" => Value::Bool(true),
                "false" => Value::Bool(false),
                _ => t
                    .parse::<f64>()
                    .ok()
                    .and_then(serde_json::Number::from_f64)
                    .map_or_else(|| Value::String(t.to_string()), Value::Number),
            };
        }
        let mut map = serde_json::Map::new();
        for c in children {
            map.insert(c.tag_name().name().to_string(), to_json(c));
        }
        Value::Object(map)
    }
    let doc = roxmltree::Document::parse(super::without_declaration(text))
        .map_err(|e| malformed(file, "XML", e.to_string()))?;
    let results = doc
        .descendants()
        .find(|n| {
            n.is_element()
                && n.tag_name().name() == "results"
                && n.children()
                    .any(|c| c.is_element() && c.tag_name().name() == "results")
        })
        .and_then(|outer| {
            outer
                .children()
                .find(|c| c.is_element() && c.tag_name().name() == "results")
        })
        .ok_or_else(|| {
            malformed(
                file,
                "<results>",
                "no <results><results> rows: not promptfoo XML output",
            )
        })?;
    Ok(results
        .children()
        .filter(roxmltree::Node::is_element)
        .map(to_json)
        .collect())
}

/// promptfoo results: per test (task = `test-<index>` and its description;
/// with several prompts or providers in the file, which one) its score
/// (`promptfoo_score`), whether it passed (`promptfoo_pass`, 1 or 0) and
/// each named score (`promptfoo_<name>`), all higher-is-better; its cost
/// and latency ride along as the `cost` and `latency_ms` anchors. Version =
/// the asserts of the file's tests (the scorers' configuration).
pub(super) fn promptfoo(
    files: &[PathBuf],
    commit: &CommitId,
    _options: &IngestOptions,
    notes: &mut Notes,
) -> Result<Evidence> {
    let mut evidence = Evidence::default();
    for file in files {
        let rows = promptfoo_rows(file)?;
        let arms: std::collections::BTreeSet<(String, String)> = rows
            .iter()
            .map(|r| (provider_of(r), r["promptIdx"].to_string()))
            .collect();
        let several = arms.len() > 1;
        // One version per file: the gate pairs a scorer's scores under one
        // version, so it is the scoring configuration of the whole eval
        // (every test's asserts, a grader's model among them), not of one
        // test.
        let mut asserts: Vec<String> = rows
            .iter()
            .map(|r| r["testCase"]["assert"].to_string())
            .collect();
        asserts.sort();
        asserts.dedup();
        let version = config_version("promptfoo", &Value::from(asserts));
        let mut means = Means::default();
        let mut measured: BTreeMap<String, (Option<f64>, Option<f64>)> = BTreeMap::new();
        for (i, row) in rows.iter().enumerate() {
            let at = format!("results[{i}]");
            let test = match &row["testIdx"] {
                Value::Number(n) => n.to_string(),
                _ => i.to_string(),
            };
            let mut task = format!("test-{test}");
            if let Some(d) = row["testCase"]["description"]
                .as_str()
                .or(row["description"].as_str())
            {
                task.push_str(&format!(": {d}"));
            }
            if several {
                task.push_str(&format!(" [{} #{}]", provider_of(row), row["promptIdx"]));
            }
            if !row["error"].is_null() && row["score"].is_null() {
                notes.say(
                    "row error",
                    format!(
                        "{}: a result ended in an error; not recorded",
                        file.display()
                    ),
                );
                continue;
            }
            let score = row["score"]
                .as_f64()
                .or(row["gradingResult"]["score"].as_f64())
                .ok_or_else(|| malformed(file, &at, "has no score: not a promptfoo result row"))?;
            means.add(&task, "promptfoo_score", &version, HIGHER, score);
            if let Some(pass) = row["success"]
                .as_bool()
                .or(row["gradingResult"]["pass"].as_bool())
            {
                means.add(
                    &task,
                    "promptfoo_pass",
                    &version,
                    HIGHER,
                    f64::from(u8::from(pass)),
                );
            }
            if let Some(named) = row["namedScores"].as_object() {
                for (name, v) in named {
                    if let Some(x) = v.as_f64() {
                        let scorer = format!(
                            "promptfoo_{}",
                            name.trim().replace(char::is_whitespace, "_")
                        );
                        means.add(&task, &scorer, &version, HIGHER_BY_CONVENTION, x);
                    }
                }
            }
            let cost = row["cost"].as_f64().filter(|c| c.is_finite() && *c >= 0.0);
            let latency = row["latencyMs"]
                .as_f64()
                .filter(|l| l.is_finite() && *l >= 0.0);
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
