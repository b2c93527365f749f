//! Ingestion of what people's tools already write, under one call:
//! [`ingest`] with a [`Format`] and the files (or directories) the tool
//! wrote. Test reports (JUnit XML from any runner) become test runs and
//! `pass_rate` scores; benchmark outputs (criterion, Bencher's BMF,
//! hyperfine, Google Benchmark, pytest-benchmark, `go test -bench`) become
//! timing scores keyed to the runner that measured them; LLM-eval outputs
//! (Inspect AI, lm-evaluation-harness, promptfoo) become one score per
//! sample and metric; JSON Lines carry scores or rubric observations.
//!
//! Every input is parsed and validated whole before anything is stored, and
//! stored in one transaction with the directions of the scorers it brings:
//! a malformed file stores nothing. The same evidence ingested twice is
//! recognized and counted once. What a file holds that is not read (an
//! attribute no verdict needs, a metric without a known direction) is said
//! once in [`IngestReport::notes`] and never refuses the file.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Serialize;

use ratchet_trace::{AppendOnce, CommitId, EventDraft, Ledger, Score, Store, TestRun};

use crate::Direction;
use crate::Samples;
use crate::error::{Error, Result};
use crate::holdout::RubricSet;

pub(crate) mod bench;
mod evals;
mod inspect_log;
mod jsonl;
mod junit;

pub use bench::{CRITERION_NS, Environment, parse_criterion};
pub use jsonl::{JSONL_FORMAT, parse_jsonl};
pub use junit::unnameable_suite;

pub use ratchet_records::PASS_RATE;

/// What [`ingest`] reads: the tool that wrote the files.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum Format {
    /// JUnit XML from any runner (files, or directories of `*.xml`).
    Junit,
    /// criterion's `target/criterion` directory.
    Criterion,
    /// JSON Lines of scores or rubric observations ([`JSONL_FORMAT`]).
    Jsonl,
    /// Bencher Metric Format JSON.
    Bmf,
    /// `hyperfine --export-json`.
    Hyperfine,
    /// Google Benchmark's `--benchmark_format=json` (or `--benchmark_out`).
    GoogleBenchmark,
    /// pytest-benchmark's `--benchmark-json`.
    PytestBenchmark,
    /// The text `go test -bench` prints.
    GoBench,
    /// Inspect AI logs (`.eval` archives or `.json`).
    Inspect,
    /// lm-evaluation-harness per-sample JSONL (`--log_samples`).
    LmEval,
    /// promptfoo results (`promptfoo eval -o` JSON, JSONL or XML).
    Promptfoo,
}

impl Format {
    /// Every format, in the order `--help` lists them.
    pub const ALL: [Format; 11] = [
        Format::Junit,
        Format::Criterion,
        Format::Jsonl,
        Format::Bmf,
        Format::Hyperfine,
        Format::GoogleBenchmark,
        Format::PytestBenchmark,
        Format::GoBench,
        Format::Inspect,
        Format::LmEval,
        Format::Promptfoo,
    ];

    /// The name the CLI and Python take (`google-benchmark`).
    pub fn name(self) -> &'static str {
        match self {
            Format::Junit => "junit",
            Format::Criterion => "criterion",
            Format::Jsonl => "jsonl",
            Format::Bmf => "bmf",
            Format::Hyperfine => "hyperfine",
            Format::GoogleBenchmark => "google-benchmark",
            Format::PytestBenchmark => "pytest-benchmark",
            Format::GoBench => "go-bench",
            Format::Inspect => "inspect",
            Format::LmEval => "lm-eval",
            Format::Promptfoo => "promptfoo",
        }
    }

    /// The file extensions read from a directory given as input (`None`:
    /// the directory itself is the input, as criterion's is).
    fn directory_extensions(self) -> Option<&'static [&'static str]> {
        Some(match self {
            Format::Junit => &["xml"],
            Format::Criterion => return None,
            Format::Jsonl => &["jsonl"],
            Format::LmEval => &["jsonl", "json"],
            Format::Inspect => &["eval", "json"],
            Format::Promptfoo => &["json", "jsonl", "xml"],
            Format::GoBench => &["txt"],
            Format::Bmf | Format::Hyperfine | Format::GoogleBenchmark | Format::PytestBenchmark => {
                &["json"]
            }
        })
    }

    /// Whether a directory given as input is read one level down too:
    /// lm-eval's `--output_path DIR` writes into `DIR/<model name>/`.
    fn descends(self) -> bool {
        self == Format::LmEval
    }

    /// Whether a file found in a directory is this format's: lm-eval's
    /// JSON is its `results_*.json` (another JSON beside it is not read).
    fn wanted_in_directory(self, path: &Path) -> bool {
        let json = path.extension().is_some_and(|e| e == "json");
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        self != Format::LmEval || !json || name.starts_with("results")
    }

    /// What a score's version stands for under this format (for people
    /// reading what was recorded).
    pub fn version_means(self) -> &'static str {
        match self {
            Format::Junit => "the JUnit reader",
            Format::Jsonl => "as each line gives it",
            Format::Inspect | Format::LmEval => "the scorer's configuration",
            Format::Promptfoo => "the promptfoo reader (a test's asserts are in its task name)",
            _ => "the runner fingerprint",
        }
    }

    /// Whether the results are tied to one commit given by the caller
    /// (JSON Lines may name a commit per line instead).
    fn needs_commit(self) -> bool {
        self != Format::Jsonl
    }
}

impl std::fmt::Display for Format {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for Format {
    type Err = Error;

    fn from_str(s: &str) -> Result<Format> {
        let wanted = s.trim().to_ascii_lowercase().replace('_', "-");
        Format::ALL
            .into_iter()
            .find(|f| f.name() == wanted)
            .ok_or_else(|| Error::UnknownFormat {
                given: s.to_string(),
                known: Format::ALL
                    .iter()
                    .map(|f| f.name())
                    .collect::<Vec<_>>()
                    .join(", "),
            })
    }
}

/// How [`ingest`] records what it reads. `Default` is right for most
/// formats once [`IngestOptions::commit`] is set.
#[derive(Debug, Clone, Default)]
pub struct IngestOptions {
    /// The commit the results belong to (required by every format but
    /// JSON Lines, whose lines may name their own).
    pub commit: Option<CommitId>,
    /// The session recorded on every event (default: the format's name).
    pub session: Option<String>,
    /// JUnit: record every suite read as one suite of this name (what a
    /// policy's `required_suites` names), counts summed.
    pub suite: Option<String>,
    /// JSON Lines: the rubrics that score observation lines.
    pub rubrics: RubricSet,
    /// Benchmarks: a label that must match for timings to be compared
    /// (e.g. the toolchain), part of the runner fingerprint.
    pub runner_label: String,
    /// Benchmarks: the runner every timing is recorded under (its scorer
    /// version), given by the caller instead of a fingerprint. For files
    /// that do not name their machine (criterion, hyperfine, BMF, `go
    /// test -bench` without its header), ingested on another machine than
    /// the one that measured them; the same name wherever one runner's
    /// timings are ingested pairs them.
    pub runner: Option<String>,
    /// The direction of metrics whose format does not say which way is
    /// better (a BMF custom measure, a `go test -bench` custom unit, an
    /// lm-eval metric not known here). Without it such metrics are not
    /// recorded, and a note says so.
    pub direction: Option<Direction>,
    /// The direction of one such metric, by the name or unit the file
    /// gives it (`hit-ratio` and `widgets/op` of `go test -bench`, a Google
    /// Benchmark counter `items`, a BMF measure, an lm-eval metric): each
    /// its own, where one [`IngestOptions::direction`] would serve them
    /// all. A metric named here takes this direction; the others take
    /// `direction`. A known unit (`ns/op`, a time) keeps its own.
    pub directions: BTreeMap<String, Direction>,
    /// The idempotency key the batch is stored under instead of one made
    /// from its content: a client-chosen request id, so that a retried
    /// upload counts once while two equal uploads both count.
    pub idempotency_key: Option<String>,
    /// Declare nothing: a direction the caller chose (`--direction`, a
    /// line's `"direction"`) for a scorer the trace has not declared is
    /// refused, and a direction the format implies (times lower, pass
    /// rates higher) is left undeclared with a note. Set for writers who
    /// may record but not set how scores are read: a `record` token, the
    /// output of a command `verify` ran (a branch's own evaluation).
    pub no_new_directions: bool,
    /// The most an archive (an Inspect `.eval`) may inflate to, all its
    /// entries together (`None`: [`MAX_INFLATED_BYTES`]). A server reading
    /// uploads sets it in proportion to its body limit.
    pub max_inflated_bytes: Option<u64>,
}

/// The most an archive's entries may inflate to unless
/// [`IngestOptions::max_inflated_bytes`] says otherwise: 1 GiB.
pub const MAX_INFLATED_BYTES: u64 = 1 << 30;

/// What an ingestion stored.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct IngestReport {
    /// The format read.
    pub format: Format,
    /// The files read (after directories were listed).
    pub files: Vec<PathBuf>,
    /// Test runs recorded.
    pub test_runs: usize,
    /// Scores recorded.
    pub scores: usize,
    /// The test runs recorded that failed (a JUnit suite with a failure, a
    /// `go test -bench` package whose benchmark failed): what the gate's
    /// required tests will see.
    pub failed_runs: Vec<TestRun>,
    /// Events of samples recorded (benchmarks: one per run beside its
    /// summary score, more for a run too long for one event).
    pub samples: usize,
    /// The scorers recorded, with the direction each improves in.
    pub scorers: Vec<ScorerRecorded>,
    /// Seq of the last event stored.
    pub last_seq: Option<u64>,
    /// The events stored, in order (empty when nothing was). Not in the
    /// serialized report: the CLI prints them as every writing command does.
    #[serde(skip)]
    pub receipts: Vec<ratchet_trace::Receipt>,
    /// Set when the same evidence was ingested for the same commit before:
    /// the seq of that ingestion's `ingest` event. Nothing was stored.
    pub already_ingested_at: Option<u64>,
    /// What was read but not recorded, or read with a fallback, once per
    /// kind (an unreadable time, a metric with no known direction…).
    pub notes: Vec<String>,
    /// Benchmarks: the fingerprint of *this* machine, when timings were
    /// recorded under it because their file does not name the machine
    /// that measured them and no [`IngestOptions::runner`] was given.
    /// Timings measured elsewhere then never pair with that runner's own:
    /// a caller should say so. (Absent from the JSON when not set.)
    #[serde(skip_serializing_if = "Option::is_none")]
    pub runner_from_here: Option<String>,
}

/// One scorer an ingestion recorded.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ScorerRecorded {
    /// Its name (what a policy names).
    pub scorer: String,
    /// The version its scores were recorded under (a runner fingerprint,
    /// an eval configuration…).
    pub versions: Vec<String>,
    /// Which way it improves, as the trace has it after this ingestion.
    pub direction: Option<Direction>,
    /// Scores recorded under it.
    pub scores: usize,
}

/// Things read but not recorded, said once per kind with a count.
#[derive(Debug, Default)]
pub(crate) struct Notes {
    by_kind: BTreeMap<&'static str, (String, usize)>,
    order: Vec<&'static str>,
    /// The metrics of [`IngestOptions::directions`] a file had.
    pub(crate) directions_used: std::collections::BTreeSet<String>,
}

impl Notes {
    /// Says `message` under `kind`, unless that kind was said already (then
    /// it is counted).
    pub(crate) fn say(&mut self, kind: &'static str, message: impl Into<String>) {
        match self.by_kind.get_mut(kind) {
            Some((_, n)) => *n += 1,
            None => {
                self.by_kind.insert(kind, (message.into(), 1));
                self.order.push(kind);
            }
        }
    }

    fn into_messages(self) -> Vec<String> {
        let mut by_kind = self.by_kind;
        self.order
            .into_iter()
            .filter_map(|k| by_kind.remove(k))
            .map(|(m, n)| {
                if n > 1 {
                    format!("{m} (and {} more like it)", n - 1)
                } else {
                    m
                }
            })
            .collect()
    }
}

/// How a scorer's direction is known.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Declared {
    /// By the format (a time is lower-is-better): an earlier declaration
    /// in the trace stands, and a note says when it differs.
    ByFormat,
    /// By the caller or the file itself (`"direction"` on a JSON line,
    /// [`IngestOptions::direction`]): an earlier, different declaration is
    /// an error.
    Explicitly,
    /// By the format's convention for a name the file chooses (an Inspect
    /// scorer, a promptfoo named score: higher is better). For an owner as
    /// [`Declared::ByFormat`]; a writer who may not declare
    /// ([`IngestOptions::no_new_directions`]) leaves a new one undeclared,
    /// since whoever writes the file would choose the name and so the
    /// direction.
    ByConvention,
}

/// What a format's files hold, parsed and validated, before it is stored.
#[derive(Debug, Default)]
pub(crate) struct Evidence {
    pub(crate) runs: Vec<TestRun>,
    pub(crate) scores: Vec<Score>,
    pub(crate) directions: BTreeMap<String, (Direction, Declared)>,
    /// Every measurement of each benchmark run, beside its summary score
    /// (split where one run does not fit one event).
    pub(crate) samples: Vec<Samples>,
    /// [`IngestReport::runner_from_here`].
    pub(crate) runner_from_here: Option<String>,
}

impl Evidence {
    /// Adds a score, declaring its scorer's direction (a conflicting
    /// direction for one scorer within the same input is an error).
    pub(crate) fn push(
        &mut self,
        score: Score,
        direction: Option<(Direction, Declared)>,
        file: &Path,
        at: &str,
    ) -> Result<()> {
        score
            .to_draft()
            .map_err(|e| malformed(file, at, e.to_string()))?;
        if let Some((d, how)) = direction {
            match self.directions.get(&score.scorer) {
                Some((earlier, _)) if *earlier != d => {
                    return Err(malformed(
                        file,
                        at,
                        format!(
                            "scorer {:?} is {d} here but {earlier} earlier in the same input",
                            score.scorer
                        ),
                    ));
                }
                Some(_) => {}
                None => {
                    self.directions.insert(score.scorer.clone(), (d, how));
                }
            }
        }
        self.scores.push(score);
        Ok(())
    }

    /// Adds a benchmark run: its summary score (as [`Evidence::push`]) and
    /// beside it the run's every measurement, in `unit`, under the score's
    /// commit, task, scorer and version.
    pub(crate) fn push_run(
        &mut self,
        score: Score,
        direction: Option<(Direction, Declared)>,
        file: &Path,
        at: &str,
        unit: &str,
        values: Vec<f64>,
    ) -> Result<()> {
        let samples = Samples {
            commit: score.commit.clone(),
            benchmark: score.task.clone(),
            scorer: score.scorer.clone(),
            scorer_version: score.scorer_version.clone(),
            unit: unit.to_string(),
            values,
            round: None,
        };
        samples
            .to_draft()
            .map_err(|e| malformed(file, at, e.to_string()))?;
        self.push(score, direction, file, at)?;
        self.samples.extend(crate::samples::split_to_fit(
            samples,
            ratchet_trace::DEFAULT_MAX_INLINE_PAYLOAD,
        ));
        Ok(())
    }

    /// Adds the `cost` and `latency_ms` anchor scores of the scores that
    /// measured them (see [`crate::cost_and_latency`]).
    pub(crate) fn push_measured_anchors(&mut self, file: &Path) -> Result<()> {
        for anchor in crate::anchors::cost_and_latency(&self.scores) {
            let direction = crate::Anchor::from_scorer(&anchor.scorer)
                .map(|a| (a.direction(), Declared::ByFormat));
            self.push(anchor, direction, file, "anchors")?;
        }
        Ok(())
    }
}

/// A (task, scorer)'s running sum: its version, direction, sum, count and
/// the values summed, in order.
type Sum = (String, Option<(Direction, Declared)>, f64, usize, Vec<f64>);

/// Scores averaged per (task, scorer): epochs of one sample, repeats of
/// one test. One score per task and scorer is what the gate pairs.
#[derive(Debug, Default)]
pub(crate) struct Means {
    sums: BTreeMap<(String, String), Sum>,
    order: Vec<(String, String)>,
    /// Values added, all tasks and scorers together.
    added: usize,
}

impl Means {
    /// How many values were added (all tasks and scorers).
    pub(crate) fn added(&self) -> usize {
        self.added
    }

    pub(crate) fn add(
        &mut self,
        task: &str,
        scorer: &str,
        version: &str,
        direction: Option<(Direction, Declared)>,
        value: f64,
    ) {
        let key = (junit::storable_name(task), junit::storable_name(scorer));
        let entry = self.sums.entry(key.clone()).or_insert_with(|| {
            self.order.push(key);
            (version.to_string(), direction, 0.0, 0, Vec::new())
        });
        entry.2 += value;
        entry.3 += 1;
        entry.4.push(value);
        self.added += 1;
    }

    /// The means as benchmark runs: each a summary score (the mean, as
    /// [`Means::into_evidence`] gives it) and beside it every value averaged,
    /// in the order added, in the unit `unit_of(scorer)` names.
    pub(crate) fn into_runs(
        mut self,
        evidence: &mut Evidence,
        commit: &CommitId,
        file: &Path,
        unit_of: impl Fn(&str) -> String,
    ) -> Result<()> {
        for key in self.order {
            if let Some((version, direction, sum, n, values)) = self.sums.remove(&key) {
                let (task, scorer) = key;
                let unit = unit_of(&scorer);
                let mut score = Score::new(commit.clone(), task.clone(), scorer, sum / n as f64);
                score.scorer_version = version;
                evidence.push_run(score, direction, file, &task, &unit, values)?;
            }
        }
        Ok(())
    }

    pub(crate) fn into_evidence(
        mut self,
        evidence: &mut Evidence,
        commit: &CommitId,
        file: &Path,
        mut extra: impl FnMut(&str, &mut Score),
    ) -> Result<()> {
        for key in self.order {
            if let Some((version, direction, sum, n, _)) = self.sums.remove(&key) {
                let (task, scorer) = key;
                let mut score = Score::new(commit.clone(), task.clone(), scorer, sum / n as f64);
                score.scorer_version = version;
                extra(&task, &mut score);
                evidence.push(score, direction, file, &task)?;
            }
        }
        Ok(())
    }
}

/// The idempotency key of one ingestion: the format, the commit and the
/// evidence. The same report ingested twice for the same commit is
/// recognized (and counted once); the same report for another commit is not
/// the same evidence.
fn ingest_key(format: &str, commit: Option<&CommitId>, content: &[u8]) -> String {
    let mut hasher = blake3::Hasher::new_derive_key("ratchet-scorers 2026-11-30 ingest key v1");
    hasher.update(format.as_bytes());
    hasher.update(&[0]);
    hasher.update(commit.map(CommitId::as_str).unwrap_or("").as_bytes());
    hasher.update(&[0]);
    hasher.update(content);
    format!("{format}:{}", hasher.finalize().to_hex())
}

pub(crate) fn read_bytes(path: &Path) -> Result<Vec<u8>> {
    std::fs::read(path).map_err(|source| Error::Io {
        path: path.to_path_buf(),
        source,
    })
}

pub(crate) fn read(path: &Path) -> Result<String> {
    let bytes = read_bytes(path)?;
    let text = String::from_utf8(bytes)
        .map_err(|e| malformed(path, "bytes", format!("not UTF-8 text: {e}")))?;
    Ok(match text.strip_prefix('\u{feff}') {
        Some(rest) => rest.to_string(),
        None => text,
    })
}

pub(crate) fn malformed(
    file: &Path,
    location: impl Into<String>,
    reason: impl Into<String>,
) -> Error {
    Error::Malformed {
        file: file.to_path_buf(),
        location: location.into(),
        reason: reason.into(),
    }
}

/// JSON as Python's `json` module writes it, made strict: the bare
/// `NaN`, `Infinity` and `-Infinity` it writes for non-finite floats (an
/// lm-eval metric that overflowed, an unscored sample) become `null`, so
/// one such value is one value not recorded rather than a file refused.
/// Text inside strings is left alone.
pub(crate) fn strict_json(text: &str) -> std::borrow::Cow<'_, str> {
    if !(text.contains("NaN") || text.contains("Infinity")) {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    let mut in_string = false;
    let mut escaped = false;
    let mut rest = text;
    while let Some(c) = rest.chars().next() {
        if in_string {
            if escaped {
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else if c == '"' {
                in_string = false;
            }
        } else if c == '"' {
            in_string = true;
        } else if let Some(token) = ["-Infinity", "Infinity", "NaN"]
            .into_iter()
            .find(|t| rest.starts_with(t))
        {
            out.push_str("null");
            rest = &rest[token.len()..];
            continue;
        }
        out.push(c);
        rest = &rest[c.len_utf8()..];
    }
    std::borrow::Cow::Owned(out)
}

/// The files a format reads from `paths`: a file as given, a directory's
/// files with the format's extensions (sorted, not recursive: Surefire's
/// `junitreports/` beside its `TEST-*.xml` would count every test twice;
/// lm-eval alone is read one level down, where it writes).
fn files_of(format: Format, paths: &[PathBuf]) -> Result<Vec<PathBuf>> {
    if paths.is_empty() {
        return Err(Error::NoInput {
            format: format.name(),
        });
    }
    let mut files = Vec::new();
    for path in paths {
        let meta = std::fs::metadata(path).map_err(|source| Error::Io {
            path: path.clone(),
            source,
        })?;
        match format.directory_extensions() {
            None => {
                if !meta.is_dir() {
                    return Err(malformed(
                        path,
                        "path",
                        format!("is not a directory; {format} reads its output directory"),
                    ));
                }
                files.push(path.clone());
            }
            Some(_) if meta.is_file() => files.push(path.clone()),
            Some(extensions) => {
                let wanted = |entry: &PathBuf| {
                    entry
                        .extension()
                        .and_then(|e| e.to_str())
                        .is_some_and(|e| extensions.contains(&e))
                        && entry.is_file()
                        && format.wanted_in_directory(entry)
                };
                let mut found = Vec::new();
                let mut below = Vec::new();
                for entry in list_directory(path)? {
                    if wanted(&entry) {
                        found.push(entry);
                    } else if format.descends() && entry.is_dir() {
                        below.push(entry);
                    }
                }
                // One level down only, and only for a tool that writes
                // there: a directory tree is not searched.
                for dir in below {
                    found.extend(list_directory(&dir)?.into_iter().filter(|e| wanted(e)));
                }
                if found.is_empty() {
                    let place = if format.descends() {
                        " (nor does any folder in it)"
                    } else {
                        ""
                    };
                    return Err(malformed(
                        path,
                        "directory",
                        format!(
                            "holds no .{} file for {format}{place}",
                            extensions.join(" or .")
                        ),
                    ));
                }
                found.sort();
                files.extend(found);
            }
        }
    }
    files.sort();
    files.dedup();
    Ok(files)
}

/// The paths in directory `dir`.
fn list_directory(dir: &Path) -> Result<Vec<PathBuf>> {
    let io = |source| Error::Io {
        path: dir.to_path_buf(),
        source,
    };
    std::fs::read_dir(dir)
        .map_err(io)?
        .map(|entry| entry.map(|e| e.path()).map_err(io))
        .collect()
}

/// Ingests what `format`'s tool wrote in `paths` (files, or directories of
/// them), all in one transaction with the declarations of the scorers'
/// directions; once per evidence (see [`IngestReport::already_ingested_at`]).
///
/// # Examples
///
/// ```
/// use ratchet_scorers::{Format, IngestOptions, ingest};
/// use ratchet_trace::{CommitId, Store, StoreOptions};
///
/// let dir = tempfile::tempdir()?;
/// let mut store = Store::create(dir.path().join("store"), StoreOptions::default())?;
/// let report = dir.path().join("junit.xml");
/// std::fs::write(&report, r#"<testsuite name="unit">
///   <testcase classname="calc" name="adds"/>
///   <testcase classname="calc" name="divides"><failure message="by zero"/></testcase>
/// </testsuite>"#)?;
/// let commit = CommitId::parse(&"a".repeat(40))?;
/// let options = IngestOptions { commit: Some(commit), ..IngestOptions::default() };
/// let ingested = ingest(&mut store, Format::Junit, &[report], &options)?;
/// assert_eq!((ingested.test_runs, ingested.scores), (1, 1));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// JSON Lines of scores, whose lines may name their own commit; the same
/// evidence ingested again stores nothing:
///
/// ```
/// use ratchet_scorers::{Format, IngestOptions, ingest};
/// use ratchet_trace::Store;
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let dir = tempfile::tempdir()?;
/// let mut store = Store::create(dir.path().join("store"), Default::default())?;
/// let file = dir.path().join("scores.jsonl");
/// let commit = "c".repeat(40);
/// std::fs::write(&file, format!(
///     "{{\"task\": \"t1\", \"scorer\": \"accuracy\", \"value\": 0.5, \"commit\": \"{commit}\"}}\n\
///      {{\"task\": \"t2\", \"scorer\": \"accuracy\", \"value\": 1.0, \"commit\": \"{commit}\"}}\n"))?;
/// let first = ingest(&mut store, Format::Jsonl, &[file.clone()], &IngestOptions::default())?;
/// assert_eq!((first.scores, first.already_ingested_at), (2, None));
/// let size = store.head()?.size;
/// let again = ingest(&mut store, Format::Jsonl, &[file], &IngestOptions::default())?;
/// assert!(again.scores == 0 && again.already_ingested_at.is_some());
/// assert_eq!(store.head()?.size, size);
/// # Ok(()) }
/// ```
///
/// # Errors
/// [`Error::NeedsCommit`] when the format needs a commit and none is given;
/// [`Error::NoInput`]; [`Error::Io`]; [`Error::Malformed`] naming the file,
/// where in it and what is wrong; [`Error::DirectionConflict`] when a
/// direction given explicitly contradicts the trace; [`Error::RubricNotPinned`];
/// [`Error::Trace`] if storing fails. Then nothing is stored.
pub fn ingest(
    store: &mut Store,
    format: Format,
    paths: &[PathBuf],
    options: &IngestOptions,
) -> Result<IngestReport> {
    ingest_into(store, format, paths, options)
}

/// [`ingest`] for a long-lived owner: the declarations it must respect and
/// the idempotency key are looked up in the ledger's verified view
/// (refreshed first), and what is stored is folded into it. The same
/// evidence gives the same events as through the store; the difference is
/// cost — a store is searched whole on each ingestion, a warm view only
/// past what it has seen.
///
/// # Errors
/// As [`ingest`]; [`Error::Trace`] if the refresh fails.
pub fn ingest_ledger(
    ledger: &mut Ledger,
    format: Format,
    paths: &[PathBuf],
    options: &IngestOptions,
) -> Result<IngestReport> {
    ledger.refresh()?;
    ingest_into(ledger, format, paths, options)
}

/// Where ingestion reads the scorer declarations it must respect, and
/// appends: a store (read with SQL before the write) or a warm ledger.
trait Target {
    fn rubrics_pinned(&self, rubrics: &RubricSet) -> Result<()>;
    fn declared(&self, scorer: &str) -> Result<Option<(Direction, u64)>>;
    fn append_once(&mut self, key: &str, drafts: Vec<EventDraft>) -> Result<AppendOnce>;
}

impl Target for Store {
    fn rubrics_pinned(&self, rubrics: &RubricSet) -> Result<()> {
        crate::pins::check_rubrics_pinned_before_writing(self, rubrics)
    }
    fn declared(&self, scorer: &str) -> Result<Option<(Direction, u64)>> {
        crate::anchors::declared_before_writing(self, scorer)
    }
    fn append_once(&mut self, key: &str, drafts: Vec<EventDraft>) -> Result<AppendOnce> {
        Ok(Store::append_once(self, key, drafts)?)
    }
}

impl Target for Ledger {
    fn rubrics_pinned(&self, rubrics: &RubricSet) -> Result<()> {
        crate::pins::check_rubrics_pinned(self.view(), rubrics)
    }
    fn declared(&self, scorer: &str) -> Result<Option<(Direction, u64)>> {
        Ok(crate::declared_direction(self.view(), scorer, u64::MAX)?)
    }
    fn append_once(&mut self, key: &str, drafts: Vec<EventDraft>) -> Result<AppendOnce> {
        Ok(Ledger::append_once(self, key, drafts)?)
    }
}

fn ingest_into<T: Target>(
    store: &mut T,
    format: Format,
    paths: &[PathBuf],
    options: &IngestOptions,
) -> Result<IngestReport> {
    let reports = read_reports(format, paths, options)?;
    store_read(store, reports)
}

/// Reports read and parsed into the events they will be, not yet stored:
/// what [`read_reports`] returns and [`store_reports`] appends. Reading
/// needs no store, so a long-lived owner parses an upload (an archive
/// inflated, a large log walked) before it takes its ledger, and holds the
/// ledger only to write.
#[derive(Debug)]
pub struct ReadReports {
    format: Format,
    files: Vec<PathBuf>,
    evidence: Evidence,
    key: String,
    session: String,
    notes: Notes,
    no_new_directions: bool,
    /// JSON Lines scored by rubrics: the rubrics that must be pinned.
    rubrics: Option<RubricSet>,
}

impl ReadReports {
    /// The key the evidence will be stored once under: the client's
    /// [`IngestOptions::idempotency_key`], else one made from the evidence.
    pub fn key(&self) -> &str {
        &self.key
    }

    /// The most events storing this appends (runs, scores, samples and a
    /// declaration per new scorer; the batch's marker not counted): what a
    /// server checks a writer's quota against before it stores anything.
    pub fn events_at_most(&self) -> u64 {
        (self.evidence.runs.len()
            + self.evidence.scores.len()
            + self.evidence.samples.len()
            + self.evidence.directions.len()) as u64
    }

    /// The same evidence with every benchmark run's samples marked as
    /// measured in paired round `round` (what `ratchet bench` records: the
    /// gate pairs a baseline's and a candidate's runs by round).
    #[must_use]
    pub fn in_round(mut self, round: u64) -> Self {
        for s in &mut self.evidence.samples {
            s.round = Some(round);
        }
        self
    }

    /// The same evidence stored once under `key` instead (a server keys
    /// content per session, so one writer's upload never stands for
    /// another's).
    #[must_use]
    pub fn keyed(mut self, key: String) -> Self {
        self.key = key;
        self
    }
}

/// Reads and parses reports as [`ingest`] does, without a store.
///
/// # Errors
/// As [`ingest`], but for what only the store can say (a direction
/// conflict, an unpinned rubric), which [`store_reports`] reports.
pub fn read_reports(
    format: Format,
    paths: &[PathBuf],
    options: &IngestOptions,
) -> Result<ReadReports> {
    let commit = options.commit.as_ref();
    if format.needs_commit() && commit.is_none() {
        return Err(Error::NeedsCommit {
            format: format.name(),
        });
    }
    let files = files_of(format, paths)?;
    let mut notes = Notes::default();
    let mut rubrics = None;
    let (evidence, key) = match format {
        Format::Junit => junit_evidence(&files, paths, commit, options, &mut notes)?,
        Format::Jsonl => {
            rubrics = Some(options.rubrics.clone());
            let evidence = jsonl::evidence(&files, commit, &options.rubrics)?;
            let key = evidence_key(format, None, &evidence, &files)?;
            (evidence, key)
        }
        _ => {
            let commit = commit.ok_or(Error::NeedsCommit {
                format: format.name(),
            })?;
            let evidence = match format {
                Format::Criterion => bench::criterion_here(&files, commit, options, &mut notes)?,
                Format::Bmf => bench::bmf(&files, commit, options, &mut notes)?,
                Format::Hyperfine => bench::hyperfine(&files, commit, options, &mut notes)?,
                Format::GoogleBenchmark => {
                    bench::google_benchmark(&files, commit, options, &mut notes)?
                }
                Format::PytestBenchmark => {
                    bench::pytest_benchmark(&files, commit, options, &mut notes)?
                }
                Format::GoBench => bench::go_bench(&files, commit, options, &mut notes)?,
                Format::Inspect => evals::inspect(&files, commit, options, &mut notes)?,
                Format::LmEval => evals::lm_eval(&files, commit, options, &mut notes)?,
                _ => evals::promptfoo(&files, commit, options, &mut notes)?,
            };
            let key = evidence_key(format, Some(commit), &evidence, &files)?;
            (evidence, key)
        }
    };
    for name in options.directions.keys() {
        if !notes.directions_used.contains(name) {
            notes.say(
                "direction unused",
                format!(
                    "--direction {name}=… named no metric without a known direction in what {format} read; give the name as the file writes it (a go-bench unit such as hit-ratio, a Google Benchmark counter, a BMF measure, an lm-eval metric)"
                ),
            );
        }
    }
    if evidence.runs.is_empty() && evidence.scores.is_empty() {
        let said = std::mem::take(&mut notes).into_messages();
        return Err(malformed(
            &files[0],
            "file",
            if said.is_empty() {
                format!("holds no result {format} can record")
            } else {
                format!("nothing could be recorded: {}", said.join("; "))
            },
        ));
    }
    Ok(ReadReports {
        format,
        files,
        evidence,
        key: options.idempotency_key.clone().unwrap_or(key),
        session: options
            .session
            .clone()
            .unwrap_or_else(|| format.name().to_string()),
        notes,
        no_new_directions: options.no_new_directions,
        rubrics,
    })
}

/// Stores what [`read_reports`] read into a warm ledger (refreshed first),
/// as [`ingest_ledger`] would have.
///
/// # Errors
/// As [`ingest_ledger`].
pub fn store_reports(ledger: &mut Ledger, reports: ReadReports) -> Result<IngestReport> {
    ledger.refresh()?;
    store_read(ledger, reports)
}

/// Stores what [`read_reports`] read into `store`, in one transaction, as
/// [`ingest`] would have.
///
/// # Errors
/// As [`ingest`].
pub fn store_reports_in(store: &mut Store, reports: ReadReports) -> Result<IngestReport> {
    store_read(store, reports)
}

fn store_read<T: Target>(store: &mut T, r: ReadReports) -> Result<IngestReport> {
    if let Some(rubrics) = &r.rubrics {
        store.rubrics_pinned(rubrics)?;
    }
    store_evidence(
        store,
        r.format,
        r.files,
        &r.key,
        r.evidence,
        &r.session,
        r.notes,
        r.no_new_directions,
    )
}

/// The idempotency key of parsed evidence: the scores, runs and samples as they
/// will be stored (each with its commit), so the same evidence is the same
/// ingestion however the files were named or ordered.
fn evidence_key(
    format: Format,
    commit: Option<&CommitId>,
    evidence: &Evidence,
    files: &[PathBuf],
) -> Result<String> {
    let mut content = serde_json::to_vec(&evidence.scores)
        .map_err(|e| malformed(&files[0], "scores", e.to_string()))?;
    if !evidence.runs.is_empty() {
        content.extend(
            serde_json::to_vec(&evidence.runs)
                .map_err(|e| malformed(&files[0], "test runs", e.to_string()))?,
        );
    }
    // Benchmarks' samples: the same summaries with other measurements
    // beneath them are other evidence.
    if !evidence.samples.is_empty() {
        content.extend(
            serde_json::to_vec(&evidence.samples)
                .map_err(|e| malformed(&files[0], "samples", e.to_string()))?,
        );
    }
    Ok(ingest_key(format.name(), commit, &content))
}

/// JUnit files: a test run per suite (or one per ingestion, renamed), and
/// per run a `pass_rate` score (passed / (passed + failed); skipped tests
/// do not count; a run of nothing gets none).
fn junit_evidence(
    files: &[PathBuf],
    given: &[PathBuf],
    commit: Option<&CommitId>,
    options: &IngestOptions,
    notes: &mut Notes,
) -> Result<(Evidence, String)> {
    let commit = commit.ok_or(Error::NeedsCommit { format: "junit" })?;
    let mut runs = Vec::new();
    let mut texts = Vec::new();
    for file in files {
        let text = decode_xml(&read_bytes(file)?, file)?;
        let text = without_declaration(&text).to_string();
        if !junit::looks_like_junit(&text) && !given.contains(file) {
            // A directory's other XML (Failsafe's summary, TestNG's own
            // results): not a report, not counted.
            notes.say(
                "not junit",
                format!("{}: not a JUnit report (skipped)", file.display()),
            );
            continue;
        }
        runs.extend(junit::parse(&text, file, commit, notes)?);
        texts.push(text);
    }
    if let Some(suite) = &options.suite {
        let name = junit::storable_name(suite);
        runs = vec![junit::merged(runs, &name, commit)];
    } else {
        // Said here, where it can still be changed: once stored, a policy
        // can only require the name the runner made up.
        for run in &runs {
            if let Some(why) = junit::unnameable_suite(&run.suite) {
                notes.say(
                    "unnameable suite",
                    format!(
                        "suite {:?} is {why}, not a name a policy's required_suites can rely on; `ratchet ingest junit FILE --suite NAME` stores the report under a name the policy can require",
                        run.suite
                    ),
                );
            }
        }
    }
    let mut evidence = Evidence::default();
    for run in &runs {
        run.to_draft()
            .map_err(|e| malformed(&files[0], format!("suite {}", run.suite), e.to_string()))?;
        let ran = run.passed + run.failed;
        if ran > 0 {
            let mut score = Score::new(
                commit.clone(),
                run.suite.clone(),
                PASS_RATE,
                run.passed as f64 / ran as f64,
            );
            score.scorer_version = "junit-1".into();
            evidence.push(
                score,
                Some((Direction::HigherIsBetter, Declared::ByFormat)),
                &files[0],
                "pass rate",
            )?;
        }
    }
    evidence.runs = runs;
    // One report as it always was keyed (its text), so a report ingested
    // before keeps being recognized; otherwise the evidence as stored.
    let key = match (texts.as_slice(), &options.suite) {
        ([one], None) => ingest_key("junit", Some(commit), one.as_bytes()),
        _ => evidence_key(Format::Junit, Some(commit), &evidence, files)?,
    };
    Ok((evidence, key))
}

/// Appends parsed evidence in one transaction, with the declarations of
/// its scorers' directions, once per `key`.
// The arguments are the parsed evidence and where it goes; a struct would only rename them.
#[allow(clippy::too_many_arguments)]
fn store_evidence<T: Target>(
    store: &mut T,
    format: Format,
    files: Vec<PathBuf>,
    key: &str,
    evidence: Evidence,
    session: &str,
    mut notes: Notes,
    no_new_directions: bool,
) -> Result<IngestReport> {
    let mut drafts = Vec::new();
    let mut directions = BTreeMap::new();
    for (scorer, (direction, how)) in &evidence.directions {
        let earlier = store.declared(scorer)?;
        match (earlier, how) {
            (Some((declared, seq)), Declared::Explicitly) if declared != *direction => {
                return Err(Error::DirectionConflict {
                    scorer: scorer.clone(),
                    declared,
                    given: *direction,
                    seq,
                });
            }
            (Some((declared, seq)), Declared::ByFormat | Declared::ByConvention) => {
                if declared != *direction {
                    notes.say(
                        "direction kept",
                        format!(
                            "scorer {scorer:?} was declared {declared} at seq {seq}; that declaration stands ({format} would say {direction})"
                        ),
                    );
                }
                directions.insert(scorer.as_str(), declared);
            }
            (Some((declared, _)), Declared::Explicitly) => {
                directions.insert(scorer.as_str(), declared);
            }
            (None, Declared::Explicitly) if no_new_directions => {
                return Err(Error::MayNotDeclare {
                    scorer: scorer.clone(),
                    given: *direction,
                });
            }
            (None, Declared::ByConvention) if no_new_directions => {
                notes.say(
                    "direction not declared",
                    format!(
                        "scorer {scorer:?} is new, and {format} only guesses its direction ({direction}): its scores are recorded, its direction is left for the store's owner to declare (or a policy's `direction`)"
                    ),
                );
            }
            // A writer who may not declare declares nothing, not even what
            // its format implies: how a scorer is read is the key holder's
            // word (a policy, a declaration of its own).
            (None, Declared::ByFormat) if no_new_directions => {
                notes.say(
                    "direction not declared",
                    format!(
                        "scorer {scorer:?} is new: {format} says it is {direction}, but this writer declares nothing; its scores are recorded, its direction is the policy's or the store owner's to declare"
                    ),
                );
            }
            (None, _) => {
                drafts.push(crate::anchors::declaration_draft(scorer, *direction)?);
                directions.insert(scorer.as_str(), *direction);
            }
        }
    }
    for run in &evidence.runs {
        drafts.push(run.to_draft()?.session(session));
    }
    let mut scorers: BTreeMap<&str, ScorerRecorded> = BTreeMap::new();
    for s in &evidence.scores {
        drafts.push(s.to_draft()?.session(session));
        let entry = scorers
            .entry(s.scorer.as_str())
            .or_insert_with(|| ScorerRecorded {
                scorer: s.scorer.clone(),
                versions: Vec::new(),
                direction: directions.get(s.scorer.as_str()).copied(),
                scores: 0,
            });
        entry.scores += 1;
        if !entry.versions.contains(&s.scorer_version) {
            entry.versions.push(s.scorer_version.clone());
        }
    }
    for samples in &evidence.samples {
        drafts.push(samples.to_draft()?.session(session));
    }
    let scorers: Vec<ScorerRecorded> = scorers.into_values().collect();
    let notes = notes.into_messages();
    let runner_from_here = evidence.runner_from_here.clone();
    Ok(match store.append_once(key, drafts)? {
        AppendOnce::Appended(receipts) => IngestReport {
            format,
            files,
            test_runs: evidence.runs.len(),
            scores: evidence.scores.len(),
            failed_runs: evidence
                .runs
                .iter()
                .filter(|r| r.failed > 0)
                .cloned()
                .collect(),
            samples: evidence.samples.len(),
            scorers,
            last_seq: receipts.last().map(|r| r.seq),
            receipts,
            already_ingested_at: None,
            notes,
            runner_from_here,
        },
        AppendOnce::AlreadyAppended { seq } => IngestReport {
            format,
            files,
            test_runs: 0,
            scores: 0,
            failed_runs: Vec::new(),
            samples: 0,
            scorers: Vec::new(),
            last_seq: None,
            receipts: Vec::new(),
            already_ingested_at: Some(seq),
            notes,
            runner_from_here,
        },
    })
}

/// Parses a JUnit XML document into one [`TestRun`] per top-level suite
/// (every `<testcase>` beneath it counted, nested suites included; errors
/// count as failures; failed tests named). What [`ingest`] reads for
/// [`Format::Junit`], without the notes.
///
/// # Errors
/// [`Error::Malformed`] naming the file and what is wrong.
pub fn parse_junit(xml: &str, file: &Path, commit: &CommitId) -> Result<Vec<TestRun>> {
    let xml = xml.strip_prefix('\u{feff}').unwrap_or(xml);
    junit::parse(
        without_declaration(xml),
        file,
        commit,
        &mut Notes::default(),
    )
}

/// Ingests a JUnit XML file (see [`ingest`] with [`Format::Junit`]).
///
/// # Errors
/// As [`ingest`].
pub fn ingest_junit(
    store: &mut Store,
    path: &Path,
    commit: &CommitId,
    session: &str,
) -> Result<IngestReport> {
    let options = IngestOptions {
        commit: Some(commit.clone()),
        session: Some(session.to_string()),
        ..IngestOptions::default()
    };
    ingest(store, Format::Junit, &[path.to_path_buf()], &options)
}

/// Ingests a JSON Lines file (see [`ingest`] with [`Format::Jsonl`]).
///
/// # Errors
/// As [`ingest`].
pub fn ingest_jsonl(
    store: &mut Store,
    path: &Path,
    commit: Option<&CommitId>,
    rubrics: &RubricSet,
    session: &str,
) -> Result<IngestReport> {
    let options = IngestOptions {
        commit: commit.cloned(),
        session: Some(session.to_string()),
        rubrics: rubrics.clone(),
        ..IngestOptions::default()
    };
    ingest(store, Format::Jsonl, &[path.to_path_buf()], &options)
}

/// Ingests criterion results (see [`ingest`] with [`Format::Criterion`]),
/// fingerprinted as `env`.
///
/// # Errors
/// As [`ingest`].
pub fn ingest_criterion(
    store: &mut Store,
    dir: &Path,
    commit: &CommitId,
    env: &Environment,
    session: &str,
) -> Result<IngestReport> {
    let mut notes = Notes::default();
    let files = vec![dir.to_path_buf()];
    let evidence = bench::criterion(&files, commit, &env.fingerprint(), &mut notes)?;
    let key = evidence_key(Format::Criterion, Some(commit), &evidence, &files)?;
    store_evidence(
        store,
        Format::Criterion,
        files,
        &key,
        evidence,
        session,
        notes,
        false,
    )
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
pub(crate) fn without_declaration(xml: &str) -> &str {
    let trimmed = xml.trim_start();
    match trimmed.strip_prefix("<?xml") {
        Some(rest) => rest.find("?>").map_or(xml, |end| &rest[end + 2..]),
        None => xml,
    }
}
