//! Ingestion of what people's tools already write: JUnit XML (one test run
//! and one pass-rate score per suite) and JSON Lines of scores or rubric
//! observations. Every input is parsed and validated whole before anything
//! is stored, and stored in one transaction: a malformed file stores nothing.

use std::path::Path;

use quick_junit::{NonSuccessKind, Report, TestCaseStatus};
use serde::{Deserialize, Serialize};

use ratchet_trace::{AppendOnce, CommitId, EventDraft, Score, Store, TestRun};

use crate::error::{Error, Result};
use crate::holdout::RubricSet;

/// The scorer name of the pass-rate anchor.
pub const PASS_RATE: &str = "pass_rate";

/// What an ingestion stored.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct IngestReport {
    /// Test runs recorded.
    pub test_runs: usize,
    /// Scores recorded.
    pub scores: usize,
    /// Seq of the last event stored.
    pub last_seq: Option<u64>,
    /// Set when the same content was ingested for the same commit before:
    /// the seq of that ingestion's `ingest` event. Nothing was stored.
    pub already_ingested_at: Option<u64>,
}

/// The idempotency key of one ingestion: the format, the commit and the
/// bytes read. The same report ingested twice for the same commit is
/// recognized (and counted once); the same report for another commit is not
/// the same evidence.
fn ingest_key(format: &str, commit: Option<&CommitId>, content: &[u8]) -> String {
    let mut h = blake3::Hasher::new_derive_key("ratchet-scorers 2026-11-30 ingest key v1");
    h.update(format.as_bytes());
    h.update(&[0]);
    h.update(commit.map(CommitId::as_str).unwrap_or("").as_bytes());
    h.update(&[0]);
    h.update(content);
    format!("{format}:{}", h.finalize().to_hex())
}

/// Declares the direction of every scorer among `scores` (see
/// [`crate::declare_scorer`]): a scorer's direction is recorded in the
/// trace when it first appears.
fn declare_all<'a>(store: &mut Store, scorers: impl IntoIterator<Item = &'a str>) -> Result<()> {
    let mut seen = std::collections::BTreeSet::new();
    for name in scorers {
        // A scorer declared before keeps its direction (declared by hand,
        // e.g. a custom lower-is-better metric); a new one gets the default.
        if seen.insert(name) && crate::anchors::declared_before_writing(store, name)?.is_none() {
            crate::declare_scorer(store, name, crate::direction_of(name))?;
        }
    }
    Ok(())
}

/// Appends one ingestion's drafts in one transaction, unless the same
/// ingestion was stored before.
fn append_ingestion(
    store: &mut Store,
    key: &str,
    drafts: Vec<EventDraft>,
    test_runs: usize,
    scores: usize,
) -> Result<IngestReport> {
    Ok(match store.append_once(key, drafts)? {
        AppendOnce::Appended(receipts) => IngestReport {
            test_runs,
            scores,
            last_seq: receipts.last().map(|r| r.seq),
            already_ingested_at: None,
        },
        AppendOnce::AlreadyAppended { seq } => IngestReport {
            test_runs: 0,
            scores: 0,
            last_seq: None,
            already_ingested_at: Some(seq),
        },
    })
}

fn read(path: &Path) -> Result<String> {
    std::fs::read_to_string(path).map_err(|source| Error::Io {
        path: path.to_path_buf(),
        source,
    })
}

fn malformed(file: &Path, location: impl Into<String>, reason: impl Into<String>) -> Error {
    Error::Malformed {
        file: file.to_path_buf(),
        location: location.into(),
        reason: reason.into(),
    }
}

/// Parses a JUnit XML report (pytest, cargo-nextest, jest-junit, Surefire…)
/// with quick-junit into one [`TestRun`] per suite, counting test cases by
/// status (errors count as failures), with the suite's time. Timestamps
/// without an offset are read as UTC.
///
/// # Errors
/// [`Error::Malformed`] naming the file and the XML element at fault.
pub fn parse_junit(xml: &str, file: &Path, commit: &CommitId) -> Result<Vec<TestRun>> {
    let xml = with_suites_root(without_declaration(
        xml.strip_prefix('\u{feff}').unwrap_or(xml),
    ));
    let xml = with_utc_timestamps(&xml);
    let report =
        Report::deserialize_from_str(&xml).map_err(|e| malformed(file, "XML", e.to_string()))?;
    if report.test_suites.is_empty() {
        return Err(malformed(file, "<testsuites>", "holds no <testsuite>"));
    }
    // quick-junit reads only top-level suites: a nested <testsuite> (as
    // PHPUnit and Ant write them) would silently drop its test cases, and
    // with them its failures. Refuse rather than count a partial report.
    let opened = xml
        .match_indices("<testsuite")
        .filter(|(i, m)| {
            xml[i + m.len()..]
                .chars()
                .next()
                .is_some_and(|c| c == '>' || c == '/' || c.is_whitespace())
        })
        .count();
    if opened > report.test_suites.len() {
        return Err(malformed(
            file,
            "<testsuite>",
            format!(
                "{opened} <testsuite> elements but {} at the top level: nested suites are not read, so the report is refused",
                report.test_suites.len()
            ),
        ));
    }
    let mut runs = Vec::new();
    for (i, suite) in report.test_suites.iter().enumerate() {
        let (mut passed, mut failed, mut skipped) = (0u64, 0u64, 0u64);
        for case in &suite.test_cases {
            match &case.status {
                // A test that failed and passed on a rerun failed: every run
                // counts (Surefire's <flakyFailure>/<flakyError>).
                TestCaseStatus::Success { flaky_runs } if !flaky_runs.is_empty() => failed += 1,
                TestCaseStatus::Success { .. } => passed += 1,
                TestCaseStatus::NonSuccess {
                    kind: NonSuccessKind::Failure | NonSuccessKind::Error,
                    ..
                } => failed += 1,
                TestCaseStatus::Skipped { .. } => skipped += 1,
            }
        }
        let name = suite.name.as_str().trim();
        if name.is_empty() {
            return Err(malformed(file, format!("<testsuite> #{i}"), "has no name"));
        }
        let duration_ms = suite
            .time
            .or_else(|| suite.test_cases.iter().map(|c| c.time).sum())
            .map(|d| d.as_secs_f64() * 1000.0)
            .unwrap_or(0.0);
        runs.push(TestRun {
            commit: commit.clone(),
            suite: name.to_string(),
            passed,
            failed,
            skipped,
            duration_ms,
            failures: Vec::new(),
        });
    }
    Ok(runs)
}

/// Decodes the bytes of an XML file to text: by its byte-order mark, else
/// by the `encoding` its declaration names (ISO-8859-1, windows-1252,
/// UTF-16…, any label the WHATWG Encoding Standard knows), else as UTF-8.
///
/// # Errors
/// [`Error::Malformed`] if the declared encoding is unknown or the bytes are
/// not valid in it.
pub fn decode_xml(bytes: &[u8], file: &Path) -> Result<String> {
    let (encoding, bom) = match encoding_rs::Encoding::for_bom(bytes) {
        Some((encoding, bom)) => (encoding, bom),
        None if bytes.starts_with(b"<\0?\0") => (encoding_rs::UTF_16LE, 0),
        None if bytes.starts_with(b"\0<\0?") => (encoding_rs::UTF_16BE, 0),
        None => match declared_encoding(bytes) {
            Some(label) => (
                encoding_rs::Encoding::for_label(label.as_bytes()).ok_or_else(|| {
                    malformed(
                        file,
                        "<?xml?>",
                        format!("declares encoding {label:?}, which is not an encoding known to the WHATWG Encoding Standard"),
                    )
                })?,
                0,
            ),
            None => (encoding_rs::UTF_8, 0),
        },
    };
    let (text, had_errors) = encoding.decode_without_bom_handling(&bytes[bom..]);
    if had_errors {
        return Err(malformed(
            file,
            "bytes",
            format!("not valid {} text", encoding.name()),
        ));
    }
    Ok(text.into_owned())
}

/// The `encoding` label of an XML declaration (ASCII-compatible encodings).
fn declared_encoding(bytes: &[u8]) -> Option<String> {
    let head = bytes.get(..bytes.len().min(200))?;
    let decl_end = head.windows(2).position(|w| w == b"?>")?;
    let decl = std::str::from_utf8(head.strip_prefix(b"<?xml")?.get(..decl_end - 5)?).ok()?;
    let at = decl.find("encoding")?;
    let rest = decl[at + "encoding".len()..]
        .trim_start()
        .strip_prefix('=')?
        .trim_start();
    let quote = rest.chars().next().filter(|c| *c == '"' || *c == '\'')?;
    let value = &rest[1..];
    Some(value[..value.find(quote)?].to_string())
}

/// The document without its XML declaration: the text is decoded already,
/// and an `encoding` it still names would no longer be true.
fn without_declaration(xml: &str) -> &str {
    let trimmed = xml.trim_start();
    match trimmed.strip_prefix("<?xml") {
        Some(rest) => rest.find("?>").map_or(xml, |end| &rest[end + 2..]),
        None => xml,
    }
}

/// Maven Surefire and Gradle write one `<testsuite>` per file with no
/// `<testsuites>` around it; quick-junit reads only the latter shape. A
/// bare suite root is wrapped (after any comments before it).
fn with_suites_root(xml: &str) -> std::borrow::Cow<'_, str> {
    let mut rest = xml.trim_start();
    loop {
        if let Some(comment) = rest.strip_prefix("<!--") {
            match comment.find("-->") {
                Some(end) => rest = comment[end + 3..].trim_start(),
                None => return std::borrow::Cow::Borrowed(xml),
            }
        } else if rest.starts_with("<!DOCTYPE") {
            match rest.find('>') {
                Some(end) => rest = rest[end + 1..].trim_start(),
                None => return std::borrow::Cow::Borrowed(xml),
            }
        } else {
            break;
        }
    }
    let bare = rest
        .strip_prefix("<testsuite")
        .and_then(|r| r.chars().next())
        .is_some_and(|c| c == '>' || c == '/' || c.is_whitespace());
    if bare {
        std::borrow::Cow::Owned(format!("<testsuites>{rest}</testsuites>"))
    } else {
        std::borrow::Cow::Borrowed(xml)
    }
}

/// jest-junit (and others) write `timestamp="2026-11-30T10:00:00"` with no
/// offset, which quick-junit's RFC 3339 parser refuses. Timestamps play no
/// part in what ratchet records, so offset-less ones are read as UTC: this
/// appends `Z` to `timestamp` attribute values that carry no offset. Nothing
/// else of the document is touched; quick-junit still parses it.
fn with_utc_timestamps(xml: &str) -> std::borrow::Cow<'_, str> {
    const ATTR: &str = "timestamp=\"";
    if !xml.contains(ATTR) {
        return std::borrow::Cow::Borrowed(xml);
    }
    let mut out = String::with_capacity(xml.len() + 16);
    let mut rest = xml;
    while let Some(i) = rest.find(ATTR) {
        let start = i + ATTR.len();
        out.push_str(&rest[..start]);
        let Some(len) = rest[start..].find('"') else {
            out.push_str(&rest[start..]);
            return std::borrow::Cow::Owned(out);
        };
        let value = &rest[start..start + len];
        out.push_str(value);
        let time = value.split_once('T').map(|(_, t)| t).unwrap_or("");
        let has_offset =
            time.ends_with('Z') || time.ends_with('z') || time.contains('+') || time.contains('-');
        if !time.is_empty() && !has_offset {
            out.push('Z');
        }
        rest = &rest[start + len..];
    }
    out.push_str(rest);
    std::borrow::Cow::Owned(out)
}

/// Ingests a JUnit XML file: a test run per suite, and per suite a
/// `pass_rate` score (passed / (passed + failed); skipped tests do not count;
/// suites that ran nothing get none), all in one transaction.
///
/// # Errors
/// [`Error::Io`], [`Error::Malformed`], or [`Error::Trace`] if storing fails
/// (then nothing is stored).
pub fn ingest_junit(
    store: &mut Store,
    path: &Path,
    commit: &CommitId,
    session: &str,
) -> Result<IngestReport> {
    let bytes = std::fs::read(path).map_err(|source| Error::Io {
        path: path.to_path_buf(),
        source,
    })?;
    let text = decode_xml(&bytes, path)?;
    let runs = parse_junit(&text, path, commit)?;
    let mut drafts = Vec::new();
    let mut scores = 0;
    for run in &runs {
        drafts.push(run.to_draft()?.session(session));
        let ran = run.passed + run.failed;
        if ran > 0 {
            let mut s = Score::new(
                commit.clone(),
                run.suite.clone(),
                PASS_RATE,
                run.passed as f64 / ran as f64,
            );
            s.scorer_version = "junit-1".into();
            drafts.push(s.to_draft()?.session(session));
            scores += 1;
        }
    }
    let key = ingest_key("junit", Some(commit), text.as_bytes());
    if scores > 0 {
        declare_all(store, [PASS_RATE])?;
    }
    append_ingestion(store, &key, drafts, runs.len(), scores)
}

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
\"holdout\", \"commit\"; or an observation {\"task\", \"rubric\", \"observation\": {...}} \
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
/// [`Error::Malformed`] naming the file, the line and the problem (a line
/// that is not JSON, an unknown or missing field, a missing commit, an
/// unknown rubric, an observation that does not fit, a non-finite value,
/// an empty file).
pub fn parse_jsonl(
    text: &str,
    file: &Path,
    commit: Option<&CommitId>,
    rubrics: &RubricSet,
) -> Result<Vec<Score>> {
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
                (Some(text), _) => {
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
        let score = match line {
            Line::Observation(ObservationLine {
                task,
                rubric,
                observation,
                commit: c,
            }) => {
                let r = rubrics
                    .get(&rubric)
                    .ok_or_else(|| malformed(file, &at, format!("unknown rubric {rubric:?}")))?;
                let value = r
                    .score_json(&observation)
                    .map_err(|e| malformed(file, &at, e.to_string()))?;
                let mut s = Score::new(resolve(&c)?, task, r.name.clone(), value);
                s.scorer_version = r.version();
                s.holdout = r.holdout;
                s
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
            }) => {
                let mut s = Score::new(resolve(&c)?, task, scorer, value);
                if let Some(v) = scorer_version {
                    s.scorer_version = v;
                }
                s.cost = cost;
                s.latency_ms = latency_ms;
                s.holdout = holdout;
                s
            }
        };
        // The store's own validation, reported at this line.
        score
            .to_draft()
            .map_err(|e| malformed(file, &at, e.to_string()))?;
        out.push(score);
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

/// Ingests a JSON Lines file in one transaction (see [`parse_jsonl`]); a
/// score carrying `cost` or `latency_ms` also records the `cost` /
/// `latency_ms` anchor score for its task.
///
/// # Errors
/// As [`parse_jsonl`], plus [`Error::Io`] and [`Error::Trace`];
/// [`Error::RubricNotPinned`] if a rubric given is pinned in the trace at
/// another version (nothing is read or stored).
pub fn ingest_jsonl(
    store: &mut Store,
    path: &Path,
    commit: Option<&CommitId>,
    rubrics: &RubricSet,
    session: &str,
) -> Result<IngestReport> {
    crate::pins::check_rubrics_pinned_before_writing(store, rubrics)?;
    let text = read(path)?;
    let mut scores = parse_jsonl(&text, path, commit, rubrics)?;
    // Measured cost and latency also become their anchor scores.
    let anchors = crate::anchors::cost_and_latency(&scores);
    scores.extend(anchors);
    // Keyed on the scores as resolved (each line's own commit, or the
    // default), not on the flags: the same evidence is the same ingestion
    // however it was named on the command line.
    let resolved =
        serde_json::to_vec(&scores).map_err(|e| malformed(path, "scores", e.to_string()))?;
    let key = ingest_key("jsonl", None, &resolved);
    // Directions known by construction are declared: anchors (cost,
    // latency…) and rubric scores (higher is better). A plain score of any
    // other name is left undeclared, so its first declaration is a person's
    // (`record-score --direction`) or the policy's, never a guess.
    let known: Vec<&str> = scores
        .iter()
        .map(|s| s.scorer.as_str())
        .filter(|name| crate::Anchor::from_scorer(name).is_some() || rubrics.get(name).is_some())
        .collect();
    declare_all(store, known)?;
    store_scores(store, &key, &scores, session)
}

/// Appends parsed scores in one transaction, once per `key`.
fn store_scores(
    store: &mut Store,
    key: &str,
    scores: &[Score],
    session: &str,
) -> Result<IngestReport> {
    let drafts = scores
        .iter()
        .map(|s| Ok(s.to_draft()?.session(session)))
        .collect::<Result<Vec<EventDraft>>>()?;
    append_ingestion(store, key, drafts, 0, scores.len())
}

/// The environment a benchmark ran in: what must match for two timings to
/// be comparable. Part of the scorer name of criterion scores, so the gate
/// never pairs timings from different runners.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Environment {
    /// CPU model (from /proc/cpuinfo where available).
    pub cpu: String,
    /// Logical CPUs.
    pub cpus: usize,
    /// OS and architecture.
    pub platform: String,
    /// A caller-supplied label, e.g. the toolchain (`rustc 1.95.0`).
    pub label: String,
}

impl Environment {
    /// This machine's environment, with `label` (e.g. the toolchain version).
    pub fn current(label: &str) -> Environment {
        let cpu = std::fs::read_to_string("/proc/cpuinfo")
            .ok()
            .and_then(|t| {
                t.lines()
                    .find(|l| l.starts_with("model name"))
                    .and_then(|l| l.split_once(':'))
                    .map(|(_, v)| v.trim().to_string())
            })
            .unwrap_or_else(|| "unknown cpu".to_string());
        Environment {
            cpu,
            cpus: std::thread::available_parallelism()
                .map(|n| n.get())
                .unwrap_or(1),
            platform: format!("{}-{}", std::env::consts::OS, std::env::consts::ARCH),
            label: label.to_string(),
        }
    }

    /// A short fingerprint: the first 12 hex digits of BLAKE3 over the fields.
    pub fn fingerprint(&self) -> String {
        let text = format!(
            "{}\n{}\n{}\n{}",
            self.cpu, self.cpus, self.platform, self.label
        );
        blake3::hash(text.as_bytes()).to_hex()[..12].to_string()
    }
}

/// The scorer name of criterion timings (mean nanoseconds, lower is
/// better). Stable, so a policy can name it; the runner is the scorer
/// *version* ([`Environment::fingerprint`]), so timings from different
/// runners are never paired — a change of runner starts a new segment,
/// never a regression.
pub const CRITERION_NS: &str = "criterion_ns";

#[derive(Debug, Deserialize)]
struct CriterionBenchmark {
    full_id: String,
}

#[derive(Debug, Deserialize)]
struct CriterionEstimate {
    point_estimate: f64,
}

#[derive(Debug, Deserialize)]
struct CriterionEstimates {
    mean: CriterionEstimate,
}

/// Reads criterion's result files under `dir` (its `target/criterion`):
/// one score per benchmark (`<id>/new/benchmark.json` and `estimates.json`),
/// task = the benchmark's full id, value = the mean time in nanoseconds
/// (lower is better), scorer [`CRITERION_NS`], version = `env`'s fingerprint.
///
/// # Errors
/// [`Error::Io`] if the directory cannot be read, [`Error::Malformed`]
/// naming the file and the problem, or when no benchmark is found.
pub fn parse_criterion(dir: &Path, commit: &CommitId, env: &Environment) -> Result<Vec<Score>> {
    let mut found = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let entries = std::fs::read_dir(&d).map_err(|source| Error::Io {
            path: d.clone(),
            source,
        })?;
        for entry in entries {
            let entry = entry.map_err(|source| Error::Io {
                path: d.clone(),
                source,
            })?;
            let path = entry.path();
            if path.is_dir() {
                if path.file_name().is_some_and(|n| n == "new") {
                    if path.join("estimates.json").is_file() {
                        found.push(path);
                    }
                } else if path
                    .file_name()
                    .is_some_and(|n| n != "base" && n != "report")
                {
                    stack.push(path);
                }
            }
        }
    }
    if found.is_empty() {
        return Err(malformed(
            dir,
            "directory",
            "no criterion results (<id>/new/estimates.json) under it",
        ));
    }
    found.sort();
    let mut scores = Vec::new();
    for new in found {
        let bench_file = new.join("benchmark.json");
        let est_file = new.join("estimates.json");
        let bench: CriterionBenchmark = serde_json::from_str(&read(&bench_file)?)
            .map_err(|e| malformed(&bench_file, "JSON", e.to_string()))?;
        let est: CriterionEstimates = serde_json::from_str(&read(&est_file)?)
            .map_err(|e| malformed(&est_file, "JSON", e.to_string()))?;
        let ns = est.mean.point_estimate;
        if !(ns.is_finite() && ns >= 0.0) {
            return Err(malformed(
                &est_file,
                "mean.point_estimate",
                format!("{ns} is not a time"),
            ));
        }
        let mut s = Score::new(commit.clone(), bench.full_id, CRITERION_NS, ns);
        s.scorer_version = env.fingerprint();
        s.to_draft()
            .map_err(|e| malformed(&est_file, "score", e.to_string()))?;
        scores.push(s);
    }
    Ok(scores)
}

/// Ingests criterion results in one transaction (see [`parse_criterion`]).
///
/// # Errors
/// As [`parse_criterion`], plus [`Error::Trace`].
pub fn ingest_criterion(
    store: &mut Store,
    dir: &Path,
    commit: &CommitId,
    env: &Environment,
    session: &str,
) -> Result<IngestReport> {
    let scores = parse_criterion(dir, commit, env)?;
    // The results as parsed (a directory has no single content to hash).
    let content =
        serde_json::to_vec(&scores).map_err(|e| malformed(dir, "results", e.to_string()))?;
    let key = ingest_key("criterion", Some(commit), &content);
    declare_all(store, [CRITERION_NS])?;
    store_scores(store, &key, &scores, session)
}
