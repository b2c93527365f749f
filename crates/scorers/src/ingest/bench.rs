//! Benchmark outputs: criterion, Bencher's metric format, hyperfine,
//! Google Benchmark, pytest-benchmark and `go test -bench`. Each becomes
//! one score per benchmark and metric, under a scorer named for the tool
//! and unit (`hyperfine_s`, `go_ns_per_op`), with the direction the unit
//! implies, and under a *version* that fingerprints the runner: the
//! runner the caller names ([`IngestOptions::runner`]), else the machine
//! the file says it ran on (Google Benchmark, pytest-benchmark and Go
//! write it), else the machine ingesting it — said in the report, since a
//! file measured elsewhere is then fingerprinted as the wrong machine
//! ([`IngestReport::runner_from_here`](super::IngestReport::runner_from_here)).
//! Timings from different
//! runners are never paired: a change of runner starts a new segment,
//! never a regression.
//!
//! Beside each summary score, the run's every measurement is kept as a
//! [`Samples`](crate::Samples) event in the score's unit: hyperfine's
//! `times`, criterion's `sample.json` (time over iterations, per sample),
//! pytest-benchmark's `stats.data`, Google Benchmark's repetitions, each
//! `go test -bench -count` line. Where the tool gave one number (a Google
//! Benchmark run without repetitions, a BMF metric) it is the one sample;
//! where the list is missing or unusable, the summary stands as the one
//! sample and a note says why. A metric the tool cannot say the direction
//! of (a Go custom unit, a Google Benchmark user counter, a BMF measure) is
//! recorded with the direction given for it (or for all such metrics), else
//! named in a note.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use ratchet_trace::{CommitId, Score};

use super::{Declared, Evidence, IngestOptions, Means, Notes, malformed, read};
use crate::Direction;
// The importers' scorer names: `ratchet_records` holds them, beside the
// default direction ([`ratchet_records::direction_of`]) keyed by them.
use crate::error::{Error, Result};
pub use ratchet_records::{
    CRITERION_NS, GBENCH_CPU_NS, GBENCH_REAL_NS, HYPERFINE_S, PYTEST_BENCHMARK_S,
};

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

/// The runner timings are recorded under when their file does not name
/// the machine that measured them: the caller's
/// ([`IngestOptions::runner`]), else this machine's fingerprint — then
/// counted in `evidence` ([`IngestReport::runner_from_here`]), because a
/// file measured on another machine is fingerprinted as the wrong one and
/// its timings never pair with that machine's own.
///
/// [`IngestReport::runner_from_here`]: super::IngestReport::runner_from_here
fn runner_here(options: &IngestOptions, evidence: &mut Evidence) -> String {
    match &options.runner {
        Some(runner) => runner.clone(),
        None => {
            let here = Environment::current(&options.runner_label).fingerprint();
            evidence.runner_from_here = Some(here.clone());
            here
        }
    }
}

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
    // criterion 0.3.0 wrote the names capitalized.
    #[serde(alias = "Mean")]
    mean: CriterionEstimate,
    /// Present (non-null) when criterion sampled linearly: then the slope
    /// of time over iterations is the estimate criterion prints, and the
    /// one recorded.
    #[serde(default, alias = "Slope")]
    slope: Option<CriterionEstimate>,
}

/// criterion's `sample.json`: the iterations and total time of each
/// sample, as `{"iters": [...], "times": [...]}` (with `sampling_mode`
/// since 0.3.4) or, in 0.3.0, as `[[iters...], [times...]]`.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum CriterionSample {
    Named { iters: Vec<f64>, times: Vec<f64> },
    Pair(Vec<f64>, Vec<f64>),
}

/// The time per iteration of each of criterion's samples (`times[i] /
/// iters[i]`, nanoseconds), or why there are none.
fn criterion_samples(file: &Path) -> std::result::Result<Vec<f64>, String> {
    if !file.is_file() {
        return Err("has no sample.json".into());
    }
    let text = read(file).map_err(|e| e.to_string())?;
    let (iters, times) = match serde_json::from_str::<CriterionSample>(&text) {
        Ok(CriterionSample::Named { iters, times } | CriterionSample::Pair(iters, times)) => {
            (iters, times)
        }
        Err(e) => return Err(format!("sample.json is not criterion's samples: {e}")),
    };
    if iters.len() != times.len() || iters.is_empty() {
        return Err(format!(
            "sample.json has {} iteration counts for {} times",
            iters.len(),
            times.len()
        ));
    }
    let mut per_iteration = Vec::with_capacity(times.len());
    for (n, t) in iters.iter().zip(&times) {
        let per_iter = t / n;
        if !(n.is_finite() && *n > 0.0 && per_iter.is_finite() && per_iter >= 0.0) {
            return Err(format!(
                "sample.json has a sample of {t} ns over {n} iterations"
            ));
        }
        per_iteration.push(per_iter);
    }
    Ok(per_iteration)
}

/// Reads criterion's result files under `dir` (its `target/criterion`):
/// one score per benchmark (`<id>/new/benchmark.json` and `estimates.json`),
/// task = the benchmark's full id, value = the time in nanoseconds criterion
/// prints (the slope where it has one, else the mean; lower is better), scorer [`CRITERION_NS`], version = `env`'s fingerprint.
///
/// # Errors
/// [`Error::Io`] if the directory cannot be read, [`Error::Malformed`]
/// naming the file and the problem, or when no benchmark is found.
pub fn parse_criterion(dir: &Path, commit: &CommitId, env: &Environment) -> Result<Vec<Score>> {
    Ok(
        criterion_runs(dir, commit, &env.fingerprint(), &mut Notes::default())?
            .into_iter()
            .map(|(s, _)| s)
            .collect(),
    )
}

/// [`parse_criterion`], each score with its samples: the time per
/// iteration of each sample in `sample.json` (nanoseconds), else (a note
/// says why) the score's own value.
fn criterion_runs(
    dir: &Path,
    commit: &CommitId,
    version: &str,
    notes: &mut Notes,
) -> Result<Vec<(Score, Vec<f64>)>> {
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
        let (field, ns) = match &est.slope {
            Some(slope) => ("slope.point_estimate", slope.point_estimate),
            None => ("mean.point_estimate", est.mean.point_estimate),
        };
        if !(ns.is_finite() && ns >= 0.0) {
            return Err(malformed(&est_file, field, format!("{ns} is not a time")));
        }
        let mut score = Score::new(commit.clone(), bench.full_id, CRITERION_NS, ns);
        score.scorer_version = version.to_string();
        score
            .to_draft()
            .map_err(|e| malformed(&est_file, "score", e.to_string()))?;
        let samples = criterion_samples(&new.join("sample.json")).unwrap_or_else(|why| {
            notes.say(
                "no samples",
                format!(
                    "{}: {why}; its samples are its estimate alone",
                    new.display()
                ),
            );
            vec![ns]
        });
        scores.push((score, samples));
    }
    Ok(scores)
}

const LOWER: Option<(Direction, Declared)> = Some((Direction::LowerIsBetter, Declared::ByFormat));
const HIGHER: Option<(Direction, Declared)> = Some((Direction::HigherIsBetter, Declared::ByFormat));

/// The direction given for a metric the format says nothing about: its
/// own (`--direction NAME=…`), else the one for every such metric.
/// A metric named in [`IngestOptions::directions`] is marked used in
/// `notes`, so a name that matched nothing (a typo, a unit spelled other
/// than the file spells it) is said rather than silently ignored.
pub(super) fn given(
    options: &IngestOptions,
    metric: &str,
    notes: &mut Notes,
) -> Option<(Direction, Declared)> {
    let own = options.directions.get(metric).copied();
    if own.is_some() {
        notes.directions_used.insert(metric.to_string());
    }
    own.or(options.direction).map(|d| (d, Declared::Explicitly))
}

fn json_of<T: for<'de> Deserialize<'de>>(file: &Path, what: &str) -> Result<T> {
    let raw = read(file)?;
    let text = super::strict_json(&raw);
    serde_json::from_str(&text).map_err(|e| malformed(file, "JSON", format!("not {what}: {e}")))
}

fn score(commit: &CommitId, task: &str, scorer: &str, value: f64, version: &str) -> Score {
    let mut score = Score::new(
        commit.clone(),
        super::junit::storable_name(task),
        scorer,
        value,
    );
    score.scorer_version = version.to_string();
    score
}

/// A measured quantity fit for a score: finite and not negative.
fn measured(file: &Path, at: &str, value: f64) -> Result<f64> {
    if value.is_finite() && value >= 0.0 {
        Ok(value)
    } else {
        Err(malformed(file, at, format!("{value} is not a measurement")))
    }
}

/// criterion's output directories, under the runner the caller gave, else
/// this machine's (criterion does not write which machine it ran on).
pub(super) fn criterion_here(
    dirs: &[PathBuf],
    commit: &CommitId,
    options: &IngestOptions,
    notes: &mut Notes,
) -> Result<Evidence> {
    let mut here = Evidence::default();
    let version = runner_here(options, &mut here);
    let mut evidence = criterion(dirs, commit, &version, notes)?;
    evidence.runner_from_here = here.runner_from_here;
    Ok(evidence)
}

/// criterion's output directories, under runner `version`.
pub(super) fn criterion(
    dirs: &[PathBuf],
    commit: &CommitId,
    version: &str,
    notes: &mut Notes,
) -> Result<Evidence> {
    let mut evidence = Evidence::default();
    for dir in dirs {
        for (s, samples) in criterion_runs(dir, commit, version, notes)? {
            evidence.push_run(s, LOWER, dir, "score", "ns", samples)?;
        }
    }
    Ok(evidence)
}

/// A tool's list of measurements, if it is one: an array of numbers, each
/// finite and not negative, at least one.
fn measurements(list: &serde_json::Value) -> Option<Vec<f64>> {
    let values: Vec<f64> = list
        .as_array()?
        .iter()
        .map(|v| v.as_f64().filter(|x| x.is_finite() && *x >= 0.0))
        .collect::<Option<_>>()?;
    (!values.is_empty()).then_some(values)
}

/// Bencher's built-in measures whose direction is known; a custom measure
/// needs [`IngestOptions::direction`].
fn bmf_direction(measure: &str) -> Option<(Direction, Declared)> {
    match measure {
        "throughput" => HIGHER,
        "latency" | "file-size" | "build-time" | "instructions" | "cycles" | "l1-accesses"
        | "l2-accesses" | "ram-accesses" | "total-accesses" | "estimated-cycles" => LOWER,
        _ => None,
    }
}

/// The unit of a Bencher measure: its built-ins' units, else the
/// measure's own name.
fn bmf_unit(measure: &str) -> &str {
    match measure {
        "latency" => "ns",
        "throughput" => "ops/s",
        "file-size" => "B",
        "build-time" => "s",
        other => other,
    }
}

#[derive(Debug, Deserialize)]
struct BmfMetric {
    value: f64,
}

/// A metric's name as a scorer: lower case, runs of anything but letters
/// and digits as one `-` (`Final Bytes` → `final-bytes`).
fn slug(name: &str) -> String {
    let mut out = String::new();
    for c in name.trim().chars() {
        if c.is_alphanumeric() {
            out.extend(c.to_lowercase());
        } else if !out.ends_with('-') && !out.is_empty() {
            out.push('-');
        }
    }
    out.trim_end_matches('-').to_string()
}

/// Bencher Metric Format: `{benchmark: {measure: {value, lower_value?,
/// upper_value?}}}`; scorer = the measure's slug, fingerprint = this machine.
pub(super) fn bmf(
    files: &[PathBuf],
    commit: &CommitId,
    options: &IngestOptions,
    notes: &mut Notes,
) -> Result<Evidence> {
    let mut evidence = Evidence::default();
    let version = runner_here(options, &mut evidence);
    for file in files {
        let doc: BTreeMap<String, BTreeMap<String, BmfMetric>> = json_of(
            file,
            "Bencher Metric Format ({\"benchmark\": {\"measure\": {\"value\": N}}})",
        )?;
        for (bench, measures) in doc {
            for (measure, metric) in measures {
                let scorer = slug(&measure);
                let at = format!("{bench:?}.{measure:?}");
                let direction = bmf_direction(&scorer).or_else(|| given(options, &measure, notes));
                if direction.is_none() {
                    notes.say(
                        "no direction",
                        format!(
                            "measure {measure:?} has no known direction and was not recorded; give --direction {measure}=higher|lower (or --direction higher|lower for every such measure)"
                        ),
                    );
                    continue;
                }
                let value = measured(file, &at, metric.value)?;
                evidence.push_run(
                    score(commit, &bench, &scorer, value, &version),
                    direction,
                    file,
                    &at,
                    bmf_unit(&scorer),
                    vec![value],
                )?;
            }
        }
    }
    Ok(evidence)
}

#[derive(Debug, Deserialize)]
struct HyperfineExport {
    results: Vec<HyperfineResult>,
}

#[derive(Debug, Deserialize)]
struct HyperfineResult {
    command: String,
    mean: f64,
    #[serde(default)]
    times: Option<serde_json::Value>,
    #[serde(default)]
    exit_codes: Vec<Option<i64>>,
    #[serde(default)]
    parameters: BTreeMap<String, serde_json::Value>,
}

/// `hyperfine --export-json`: per command its mean wall time
/// ([`HYPERFINE_S`]), its samples the wall time of every run (`times`);
/// a command that exited non-zero is not a timing of the program and is
/// left out (said in a note).
pub(super) fn hyperfine(
    files: &[PathBuf],
    commit: &CommitId,
    options: &IngestOptions,
    notes: &mut Notes,
) -> Result<Evidence> {
    let mut evidence = Evidence::default();
    let version = runner_here(options, &mut evidence);
    for file in files {
        let doc: HyperfineExport = json_of(file, "a hyperfine --export-json file")?;
        for (i, r) in doc.results.into_iter().enumerate() {
            let at = format!("results[{i}]");
            if r.exit_codes.iter().any(|c| *c != Some(0)) {
                notes.say(
                    "failed command",
                    format!(
                        "{}: {:?} exited non-zero in some runs; not recorded",
                        file.display(),
                        r.command
                    ),
                );
                continue;
            }
            let mut task = r.command;
            // A parameter scan runs one command line per value: the
            // command already holds the value, but say it where it did not.
            for (name, value) in &r.parameters {
                let value = value
                    .as_str()
                    .map_or_else(|| value.to_string(), str::to_string);
                if !task.contains(&value) {
                    task.push_str(&format!(" [{name}={value}]"));
                }
            }
            let mean = measured(file, &at, r.mean)?;
            let times = r.times.as_ref().and_then(measurements).unwrap_or_else(|| {
                notes.say(
                    "no samples",
                    format!(
                        "{}: {at} has no usable times (a list of wall times); its samples are its mean alone",
                        file.display()
                    ),
                );
                vec![mean]
            });
            evidence.push_run(
                score(commit, &task, HYPERFINE_S, mean, &version),
                LOWER,
                file,
                &at,
                "s",
                times,
            )?;
        }
    }
    Ok(evidence)
}

#[derive(Debug, Deserialize)]
struct GbenchFile {
    #[serde(default)]
    context: GbenchContext,
    benchmarks: Vec<GbenchRow>,
}

#[derive(Debug, Default, Deserialize)]
struct GbenchContext {
    #[serde(default)]
    host_name: String,
    #[serde(default)]
    num_cpus: usize,
    #[serde(default)]
    mhz_per_cpu: f64,
    #[serde(default)]
    library_build_type: String,
}

#[derive(Debug, Deserialize)]
struct GbenchRow {
    name: String,
    #[serde(default)]
    run_name: Option<String>,
    #[serde(default)]
    run_type: Option<String>,
    #[serde(default)]
    aggregate_name: Option<String>,
    #[serde(default)]
    error_occurred: bool,
    #[serde(default)]
    real_time: Option<f64>,
    #[serde(default)]
    cpu_time: Option<f64>,
    #[serde(default)]
    time_unit: Option<String>,
    #[serde(default)]
    items_per_second: Option<f64>,
    #[serde(default)]
    bytes_per_second: Option<f64>,
    /// Every other key: the library's own (`iterations`, `threads`…) and
    /// the user counters (`state.counters["items"]`), which Google
    /// Benchmark writes as keys of their own beside them.
    #[serde(flatten)]
    other: BTreeMap<String, serde_json::Value>,
}

/// The keys Google Benchmark writes on a run that are not user counters
/// (1.5 to 1.8: identity, repetition, memory manager, complexity).
const GBENCH_LIBRARY_KEYS: [&str; 19] = [
    "family_index",
    "per_family_instance_index",
    "repetitions",
    "repetition_index",
    "threads",
    "iterations",
    "aggregate_unit",
    "label",
    "error_message",
    "skipped",
    "skip_message",
    "big_o",
    "rms",
    "complexity_n",
    "allocs_per_iter",
    "max_bytes_used",
    "total_allocated_bytes",
    "net_heap_growth",
    "manual_time",
];

impl GbenchRow {
    /// The user counters of this run, by name, with their values.
    fn counters(&self) -> impl Iterator<Item = (&str, f64)> {
        self.other.iter().filter_map(|(k, v)| {
            (!GBENCH_LIBRARY_KEYS.contains(&k.as_str()))
                .then(|| v.as_f64())
                .flatten()
                .map(|x| (k.as_str(), x))
        })
    }
}

fn nanoseconds_per(unit: &str) -> Option<f64> {
    Some(match unit {
        "ns" => 1.0,
        "us" => 1e3,
        "ms" => 1e6,
        "s" => 1e9,
        _ => return None,
    })
}

/// Google Benchmark JSON: per benchmark its real and CPU time in
/// nanoseconds (and items/bytes per second when counted). Where repetitions
/// were aggregated, the `mean` aggregate is the figure; repetitions without
/// aggregates are averaged. The samples are the repetitions (every entry
/// that is not an aggregate, in the file's order); a run without
/// repetitions has its one figure as its one sample, and so has a run
/// whose file kept only aggregates. Fingerprint = the file's host, CPUs,
/// clock and build type.
pub(super) fn google_benchmark(
    files: &[PathBuf],
    commit: &CommitId,
    options: &IngestOptions,
    notes: &mut Notes,
) -> Result<Evidence> {
    let mut evidence = Evidence::default();
    for file in files {
        let doc: GbenchFile = json_of(file, "Google Benchmark JSON (--benchmark_format=json)")?;
        let context = &doc.context;
        let version = options.runner.clone().unwrap_or_else(|| {
            Environment {
                cpu: format!("{} @ {} MHz", context.host_name, context.mhz_per_cpu),
                cpus: context.num_cpus,
                platform: format!("google-benchmark {}", context.library_build_type),
                label: options.runner_label.clone(),
            }
            .fingerprint()
        });
        let with_mean: std::collections::BTreeSet<&str> = doc
            .benchmarks
            .iter()
            .filter(|b| b.aggregate_name.as_deref() == Some("mean"))
            .map(|b| b.run_name.as_deref().unwrap_or(&b.name))
            .collect();
        // (real ns, cpu ns, items/s, bytes/s) summed with the count, per run name.
        type Sums = ([f64; 4], [usize; 4]);
        let mut runs: BTreeMap<String, Sums> = BTreeMap::new();
        // The user counters with a direction: per (run name, counter) the
        // figure's sum and count, and each repetition's value.
        let mut counters: BTreeMap<(String, String), (f64, usize, Vec<f64>)> = BTreeMap::new();
        // The same four of each repetition, per run name (`None`: one of
        // them could not be read, so the run's figure is its one sample).
        let mut repetitions: BTreeMap<&str, Option<[Vec<f64>; 4]>> = BTreeMap::new();
        for (i, b) in doc.benchmarks.iter().enumerate() {
            let at = format!("benchmarks[{i}] {:?}", b.name);
            let run_name = b.run_name.as_deref().unwrap_or(&b.name);
            let aggregate = b.run_type.as_deref() == Some("aggregate");
            if !aggregate && !b.error_occurred {
                let per = nanoseconds_per(b.time_unit.as_deref().unwrap_or("ns"));
                let row = [
                    b.real_time.map(|t| t * per.unwrap_or(f64::NAN)),
                    b.cpu_time.map(|t| t * per.unwrap_or(f64::NAN)),
                    b.items_per_second,
                    b.bytes_per_second,
                ];
                let entry = repetitions
                    .entry(run_name)
                    .or_insert_with(|| Some(Default::default()));
                if row.iter().flatten().any(|v| !(v.is_finite() && *v >= 0.0)) {
                    *entry = None;
                }
                if let Some(lists) = entry {
                    for (k, v) in row.into_iter().enumerate() {
                        lists[k].extend(v);
                    }
                }
                for (counter, v) in b.counters() {
                    if given(options, counter, notes).is_some() && v.is_finite() && v >= 0.0 {
                        counters
                            .entry((run_name.to_string(), counter.to_string()))
                            .or_default()
                            .2
                            .push(v);
                    }
                }
            }
            let wanted = if aggregate {
                b.aggregate_name.as_deref() == Some("mean")
            } else {
                !with_mean.contains(run_name)
            };
            if !wanted {
                continue;
            }
            if b.error_occurred {
                notes.say(
                    "benchmark error",
                    format!(
                        "{}: benchmark {:?} reported an error; not recorded",
                        file.display(),
                        b.name
                    ),
                );
                continue;
            }
            let unit = b.time_unit.as_deref().unwrap_or("ns");
            let per = nanoseconds_per(unit).ok_or_else(|| {
                malformed(
                    file,
                    &at,
                    format!("time_unit {unit:?} is not ns, us, ms or s"),
                )
            })?;
            let entry = runs.entry(run_name.to_string()).or_default();
            let values = [
                b.real_time.map(|t| t * per),
                b.cpu_time.map(|t| t * per),
                b.items_per_second,
                b.bytes_per_second,
            ];
            for (k, v) in values.into_iter().enumerate() {
                if let Some(v) = v {
                    entry.0[k] += measured(file, &at, v)?;
                    entry.1[k] += 1;
                }
            }
            for (counter, v) in b.counters() {
                if given(options, counter, notes).is_none() {
                    notes.say(
                        "no direction",
                        format!(
                            "counter {counter:?} of {run_name:?} has no known direction and was not recorded; give --direction {counter}=higher|lower (or --direction higher|lower for every counter)"
                        ),
                    );
                } else if v.is_finite() && v >= 0.0 {
                    let sum = counters
                        .entry((run_name.to_string(), counter.to_string()))
                        .or_default();
                    sum.0 += v;
                    sum.1 += 1;
                } else {
                    // A counter may count down (a delta): it is not a
                    // measurement a score can hold, but no reason to refuse
                    // the run's times.
                    notes.say(
                        "counter not a measurement",
                        format!(
                            "{}: counter {counter:?} of {run_name:?} is {v}, not a measurement (finite, not negative); not recorded",
                            file.display()
                        ),
                    );
                }
            }
        }
        let scorers = [
            (GBENCH_REAL_NS, LOWER),
            (GBENCH_CPU_NS, LOWER),
            ("gbench_items_per_second", HIGHER),
            ("gbench_bytes_per_second", HIGHER),
        ];
        let units = ["ns", "ns", "items/s", "bytes/s"];
        for (name, (sums, counts)) in runs {
            for (k, (scorer, direction)) in scorers.iter().enumerate() {
                if counts[k] > 0 {
                    let mean = sums[k] / counts[k] as f64;
                    let samples = match repetitions.get(name.as_str()) {
                        Some(Some(lists)) if !lists[k].is_empty() => lists[k].clone(),
                        Some(None) => {
                            notes.say(
                                "no samples",
                                format!(
                                    "{}: a repetition of {name:?} has a time or rate that is not a measurement; its samples are its figure alone",
                                    file.display()
                                ),
                            );
                            vec![mean]
                        }
                        _ => vec![mean],
                    };
                    evidence.push_run(
                        score(commit, &name, scorer, mean, &version),
                        *direction,
                        file,
                        &name,
                        units[k],
                        samples,
                    )?;
                }
            }
        }
        for ((name, counter), (sum, n, repetitions)) in counters {
            if n == 0 {
                continue;
            }
            let mean = sum / n as f64;
            let samples = if repetitions.is_empty() {
                vec![mean]
            } else {
                repetitions
            };
            evidence.push_run(
                score(
                    commit,
                    &name,
                    &format!("gbench_{}", slug(counter.as_str())),
                    mean,
                    &version,
                ),
                given(options, &counter, notes),
                file,
                &name,
                &counter,
                samples,
            )?;
        }
    }
    Ok(evidence)
}

#[derive(Debug, Deserialize)]
struct PytestBenchmarkFile {
    #[serde(default)]
    machine_info: serde_json::Value,
    benchmarks: Vec<PytestBenchmark>,
}

#[derive(Debug, Deserialize)]
struct PytestBenchmark {
    #[serde(default)]
    fullname: Option<String>,
    name: String,
    stats: PytestStats,
}

#[derive(Debug, Deserialize)]
struct PytestStats {
    mean: f64,
    #[serde(default)]
    rounds: Option<u64>,
    /// The time per iteration of every round (`--benchmark-json` writes
    /// it; a `--benchmark-save` without `--benchmark-save-data` does not).
    #[serde(default)]
    data: Option<serde_json::Value>,
}

/// pytest-benchmark JSON: per benchmark (its full name) the mean time
/// ([`PYTEST_BENCHMARK_S`]), its samples the time per iteration of every
/// round (`stats.data`). Fingerprint = the file's CPU, machine, OS and
/// Python.
pub(super) fn pytest_benchmark(
    files: &[PathBuf],
    commit: &CommitId,
    options: &IngestOptions,
    notes: &mut Notes,
) -> Result<Evidence> {
    let mut evidence = Evidence::default();
    for file in files {
        let doc: PytestBenchmarkFile = json_of(file, "pytest-benchmark JSON (--benchmark-json)")?;
        let machine = &doc.machine_info;
        let field = |path: &[&str]| {
            let mut node = machine;
            for k in path {
                node = &node[*k];
            }
            node.as_str()
                .map(str::to_string)
                .or_else(|| node.as_u64().map(|n| n.to_string()))
        };
        // The caller's runner, else the machine the file names.
        let version = match &options.runner {
            Some(runner) => runner.clone(),
            None => Environment {
                cpu: field(&["cpu", "brand_raw"])
                    .or_else(|| field(&["cpu", "brand"]))
                    .or_else(|| field(&["processor"]))
                    .unwrap_or_else(|| "unknown cpu".into()),
                cpus: field(&["cpu", "count"])
                    .and_then(|n| n.parse().ok())
                    .unwrap_or(0),
                platform: [
                    field(&["system"]),
                    field(&["machine"]),
                    field(&["python_implementation"]),
                    field(&["python_version"]),
                ]
                .into_iter()
                .flatten()
                .collect::<Vec<_>>()
                .join(" "),
                label: options.runner_label.clone(),
            }
            .fingerprint(),
        };
        for (i, b) in doc.benchmarks.into_iter().enumerate() {
            let at = format!("benchmarks[{i}]");
            let mean = measured(file, &at, b.stats.mean)?;
            let task = b.fullname.unwrap_or(b.name);
            let data = match &b.stats.data {
                None => Err("has no stats.data (saved without its data)".to_string()),
                Some(list) => match measurements(list) {
                    None => Err("has a stats.data that is not a list of times (elided?)".into()),
                    Some(data) if b.stats.rounds.is_some_and(|r| r != data.len() as u64) => {
                        Err(format!(
                            "has {} times in stats.data for {} rounds",
                            data.len(),
                            b.stats.rounds.unwrap_or_default()
                        ))
                    }
                    Some(data) => Ok(data),
                },
            };
            let data = data.unwrap_or_else(|why| {
                notes.say(
                    "no samples",
                    format!(
                        "{}: {task:?} {why}; its samples are its mean alone",
                        file.display()
                    ),
                );
                vec![mean]
            });
            evidence.push_run(
                score(commit, &task, PYTEST_BENCHMARK_S, mean, &version),
                LOWER,
                file,
                &at,
                "s",
                data,
            )?;
        }
    }
    Ok(evidence)
}

/// The scorer and direction of a `go test -bench` unit.
fn go_unit(
    unit: &str,
    options: &IngestOptions,
    notes: &mut Notes,
) -> Option<(String, Option<(Direction, Declared)>)> {
    let known = match unit {
        "ns/op" => Some(("go_ns_per_op", LOWER)),
        "B/op" => Some(("go_bytes_per_op", LOWER)),
        "allocs/op" => Some(("go_allocs_per_op", LOWER)),
        "MB/s" => Some(("go_mb_per_s", HIGHER)),
        _ => None,
    };
    match known {
        Some((s, d)) => Some((s.to_string(), d)),
        None => given(options, unit, notes)
            .map(|d| (format!("go_{}", slug(&unit.replace('/', " per "))), Some(d))),
    }
}

/// What `go test` said of one package: the benchmarks that reported a
/// result, the ones (or tests) that failed, and its verdict line.
#[derive(Debug, Default)]
struct GoPackage {
    benchmarks: std::collections::BTreeSet<String>,
    failures: Vec<String>,
    /// `Some(true)` for `FAIL\tpkg`, `Some(false)` for `ok  \tpkg`.
    failed: Option<bool>,
    seconds: Option<f64>,
}

/// The text `go test -bench` prints: per benchmark line (`BenchmarkX-8
/// N  v unit  v unit…`) one score per unit, task = `pkg.BenchmarkX-8` (the
/// GOMAXPROCS suffix kept: `-cpu 1,2,4` runs are different benchmarks);
/// `-count` repetitions averaged, and kept, line by line, as the samples
/// (in the unit printed; `ns/op` as `ns`). Fingerprint = the `goos`,
/// `goarch` and `cpu` the output names (else this machine's).
///
/// A benchmark that failed (`--- FAIL: BenchmarkX`, from `b.Fatal` or a
/// panic) prints no result line, so its scores are simply absent: what
/// says it failed is the test run recorded per package, as a JUnit report
/// records one per suite — suite = the package, passed = its benchmarks
/// that reported, failed = the ones that failed (at least one where the
/// package's verdict is `FAIL`). A package gets a run where the output has
/// its verdict line (`ok  pkg` or `FAIL pkg`) or a failure, so a policy can
/// require it on green commits too.
pub(super) fn go_bench(
    files: &[PathBuf],
    commit: &CommitId,
    options: &IngestOptions,
    notes: &mut Notes,
) -> Result<Evidence> {
    let here = Environment::current(&options.runner_label);
    let mut evidence = Evidence::default();
    for file in files {
        let text = read(file)?;
        let mut header: BTreeMap<&str, &str> = BTreeMap::new();
        let mut means = Means::default();
        let mut units: BTreeMap<String, String> = BTreeMap::new();
        let mut packages: BTreeMap<String, GoPackage> = BTreeMap::new();
        for (n, line) in text.lines().enumerate() {
            let at = format!("line {}", n + 1);
            if let Some((key, value)) = line.split_once(": ")
                && matches!(key, "goos" | "goarch" | "pkg" | "cpu")
            {
                header.insert(key, value.trim());
                continue;
            }
            let package = header.get("pkg").copied().unwrap_or(GO_BENCH_SUITE);
            // Sub-benchmarks' failures are indented beneath their parent's.
            if let Some(failed) = line.trim_start().strip_prefix("--- FAIL: ") {
                let name = failed.split_whitespace().next().unwrap_or(failed);
                packages
                    .entry(package.to_string())
                    .or_default()
                    .failures
                    .push(super::junit::storable_name(&format!("{package}.{name}")));
                continue;
            }
            // A package's verdict: `ok  \tpkg\t1.2s` or `FAIL\tpkg\t0.1s`
            // (a bare `FAIL` before it says the same).
            let words: Vec<&str> = line.split('\t').map(str::trim).collect();
            if let ["ok" | "FAIL", pkg, rest @ ..] = words.as_slice()
                && !pkg.is_empty()
            {
                let entry = packages.entry((*pkg).to_string()).or_default();
                entry.failed = Some(words[0] == "FAIL");
                entry.seconds = rest
                    .first()
                    .and_then(|t| t.strip_suffix('s'))
                    .and_then(|t| t.parse::<f64>().ok())
                    .filter(|t| t.is_finite() && *t >= 0.0);
                continue;
            }
            let fields: Vec<&str> = line.split_whitespace().collect();
            let Some(name) = fields.first().filter(|f| f.starts_with("Benchmark")) else {
                continue;
            };
            // `BenchmarkX` alone (printed before its result, or with -v) is
            // not a result line; a result has an iteration count next.
            if fields.len() < 4 || fields[1].parse::<u64>().is_err() {
                continue;
            }
            let task = match header.get("pkg") {
                Some(pkg) => format!("{pkg}.{name}"),
                None => (*name).to_string(),
            };
            packages
                .entry(package.to_string())
                .or_default()
                .benchmarks
                .insert(task.clone());
            // The caller's runner, else the machine the output names, else
            // this one (said: the output may come from elsewhere).
            let version = if let Some(runner) = &options.runner {
                runner.clone()
            } else if header.contains_key("goos") || header.contains_key("cpu") {
                Environment {
                    cpu: header
                        .get("cpu")
                        .map_or(here.cpu.clone(), |c| (*c).to_string()),
                    cpus: 0,
                    platform: format!(
                        "{}-{}",
                        header.get("goos").unwrap_or(&"?"),
                        header.get("goarch").unwrap_or(&"?")
                    ),
                    label: options.runner_label.clone(),
                }
                .fingerprint()
            } else {
                evidence.runner_from_here = Some(here.fingerprint());
                here.fingerprint()
            };
            for pair in fields[2..].chunks(2) {
                let [value, unit] = pair else {
                    return Err(malformed(file, &at, "a value without its unit"));
                };
                let value: f64 = value
                    .parse()
                    .map_err(|_| malformed(file, &at, format!("{value:?} is not a number")))?;
                let value = measured(file, &at, value)?;
                let Some((scorer, direction)) = go_unit(unit, options, notes) else {
                    notes.say(
                        "no direction",
                        format!("unit {unit:?} has no known direction and was not recorded; give --direction {unit}=higher|lower (or --direction higher|lower for every such unit)"),
                    );
                    continue;
                };
                let unit = if *unit == "ns/op" { "ns" } else { *unit };
                units.insert(scorer.clone(), unit.to_string());
                means.add(&task, &scorer, &version, direction, value);
            }
        }
        means.into_runs(&mut evidence, commit, file, |scorer| {
            units
                .get(scorer)
                .cloned()
                .unwrap_or_else(|| scorer.to_string())
        })?;
        for (package, p) in packages {
            if p.failed.is_none() && p.failures.is_empty() {
                continue;
            }
            let failed = (p.failures.len() as u64).max(u64::from(p.failed == Some(true)));
            if failed > 0 {
                notes.say(
                    "benchmark failed",
                    format!(
                        "{}: go test failed in {package} ({}); recorded as a failed test run of suite {package:?}, which a policy's required_suites can name",
                        file.display(),
                        if p.failures.is_empty() {
                            "no benchmark named; the package's verdict is FAIL".to_string()
                        } else {
                            p.failures.join(", ")
                        }
                    ),
                );
            }
            let run = ratchet_trace::TestRun {
                commit: commit.clone(),
                suite: super::junit::storable_name(&package),
                passed: p.benchmarks.len() as u64,
                failed,
                skipped: 0,
                duration_ms: p.seconds.unwrap_or(0.0) * 1000.0,
                failures: p
                    .failures
                    .into_iter()
                    .take(ratchet_trace::MAX_FAILURES_NAMED)
                    .collect(),
            };
            run.to_draft()
                .map_err(|e| malformed(file, format!("package {package}"), e.to_string()))?;
            evidence.runs.push(run);
        }
    }
    Ok(evidence)
}

/// The suite of a `go test -bench` output that names no package.
const GO_BENCH_SUITE: &str = "go-bench";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metric_names_become_scorer_slugs() {
        assert_eq!(slug("Final Bytes"), "final-bytes");
        assert_eq!(slug(" latency "), "latency");
        assert_eq!(slug("l1-accesses"), "l1-accesses");
    }

    #[test]
    fn go_units_have_their_directions() {
        let options = IngestOptions::default();
        assert_eq!(
            go_unit("ns/op", &options, &mut Notes::default()).map(|u| u.0),
            Some("go_ns_per_op".into())
        );
        assert_eq!(
            go_unit("MB/s", &options, &mut Notes::default())
                .and_then(|u| u.1)
                .map(|d| d.0),
            Some(Direction::HigherIsBetter)
        );
        assert!(go_unit("items/op", &options, &mut Notes::default()).is_none());
        let options = IngestOptions {
            direction: Some(Direction::LowerIsBetter),
            ..IngestOptions::default()
        };
        assert_eq!(
            go_unit("items/op", &options, &mut Notes::default()).map(|u| u.0),
            Some("go_items-per-op".into())
        );
    }
}
