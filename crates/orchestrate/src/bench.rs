//! `bench`: two revisions built side by side, then their benchmark run in
//! paired rounds (ABBA), every run's samples recorded with its round, and —
//! with a class — the gate asked after each round until it decides.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use serde::Serialize;

use ratchet_gate::{GateStatus, Outcome, Policy, Question, Verdict};
use ratchet_trace::{CommitId, Store};

use crate::checks::{Loaded, Source, check_commands, load, write_snapshot};
use crate::sandbox::{CommandReport, EnvPolicy, Limits, Sandbox, checked_relative};
use crate::{Error, Result, io_err};

#[cfg(test)]
mod filter_tests;

/// The session every event `bench` records is under.
pub const BENCH_SESSION: &str = "bench";

/// The text in [`BenchSpec::cmd`] each round replaces with the tool's own
/// filter for the benchmarks still undecided (before anything is decided:
/// a filter that selects them all). A decided benchmark's e-value is read
/// where it stopped, which is as valid as reading it later (its test may
/// stop at any time), so rounds spent on it buy nothing.
pub const UNDECIDED: &str = "{undecided}";

/// The tool's filter selecting `undecided` (every benchmark when `None`),
/// as the text that replaces [`UNDECIDED`]; `None` for a tool that cannot
/// run only some of its benchmarks (hyperfine's commands are the user's
/// own words; a BMF file is whatever wrote it).
///
/// * Google Benchmark (`--benchmark_filter={undecided}`): an anchored
///   regular expression of the names, escaped.
/// * go test (`-bench {undecided}`): an anchored expression of the
///   top-level benchmark names (go splits `-bench` at `/` into levels, so a
///   sub-benchmark runs with all its siblings); the package and the
///   `-GOMAXPROCS` suffix are not part of what `-bench` matches.
/// * pytest-benchmark (`-k {undecided}`): the test functions joined by
///   `or` (a parametrised test runs all its cases); before anything is
///   decided the empty expression, which pytest reads as no filter.
pub fn harness_filter(
    format: ratchet_scorers::Format,
    undecided: Option<&BTreeSet<String>>,
) -> Option<String> {
    use ratchet_scorers::Format;
    let names = |f: &dyn Fn(&str) -> String| -> Vec<String> {
        let set: BTreeSet<String> = undecided.into_iter().flatten().map(|n| f(n)).collect();
        set.into_iter().collect()
    };
    match format {
        Format::GoogleBenchmark => Some(match undecided {
            None => ".".to_string(),
            Some(_) => format!("^({})$", names(&|n| regex_escape(n)).join("|")),
        }),
        Format::GoBench => Some(match undecided {
            None => ".".to_string(),
            Some(_) => format!(
                "^({})$",
                names(&|n| regex_escape(go_top_level(n))).join("|")
            ),
        }),
        Format::PytestBenchmark => Some(match undecided {
            None => String::new(),
            Some(_) => names(&|n| pytest_function(n).to_string()).join(" or "),
        }),
        _ => None,
    }
}

/// `pkg.BenchmarkSort/n=10-8` → `BenchmarkSort`.
fn go_top_level(task: &str) -> &str {
    let name = task
        .rfind(".Benchmark")
        .map_or(task, |at| &task[at.saturating_add(1)..]);
    let name = name.split('/').next().unwrap_or(name);
    match name.rsplit_once('-') {
        Some((head, procs)) if !procs.is_empty() && procs.bytes().all(|b| b.is_ascii_digit()) => {
            head
        }
        _ => name,
    }
}

/// `tests/test_x.py::TestSort::test_sort[100]` → `test_sort`.
fn pytest_function(task: &str) -> &str {
    let last = task.rsplit("::").next().unwrap_or(task);
    last.split('[').next().unwrap_or(last)
}

/// Every character a regular expression (ECMAScript, POSIX extended,
/// RE2) reads as an operator, escaped.
fn regex_escape(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    for c in name.chars() {
        if "\\.+*?()|[]{}^$".contains(c) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// Whether a benchmark's name may go into a command line: the names are
/// the gate's rows, which are the baseline's benchmarks (nothing only the
/// candidate prints), but a program's output is still no place to take
/// shell syntax from, and the filter goes into both sides' commands. Letters, digits
/// and `_ . / : - = + ,` only: nothing a shell or a quoted `-k` expression
/// reads as syntax (the filter's own `^ ( | ) $ \` are safe inside single
/// quotes). A name outside them leaves the round unfiltered.
fn plain_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "_./:-=+,".contains(c))
}

/// The benchmarks a verdict leaves undecided, once some are decided
/// (`None`: none is, there is no benchmark table, or a name is not plain
/// enough to be written into a command, [`plain_name`]).
fn undecided_in(verdict: &Verdict) -> Option<BTreeSet<String>> {
    verdict.stages.iter().find_map(|s| match &s.details {
        ratchet_gate::StageDetails::Benchmarks(d) => {
            // The chosen runner's rows (another runner's can only flag).
            let chosen: Vec<_> = d.benchmarks.iter().filter(|b| b.runner.is_none()).collect();
            let open: BTreeSet<String> = chosen
                .iter()
                .filter(|b| b.verdict == ratchet_gate::benchmarks::BenchVerdict::Undecided)
                .map(|b| b.benchmark.clone())
                .collect();
            (open.len() < chosen.len() && open.iter().all(|n| plain_name(n))).then_some(open)
        }
        _ => None,
    })
}

/// The gate a bench asks after each round.
#[derive(Debug, Clone)]
pub struct BenchGate {
    /// The class to decide (its policy's `test = "benchmarks"`).
    pub class: String,
    /// The policy file's contents (`None`: the class's pin in the trace).
    pub policy: Option<Policy>,
}

/// How to bench.
#[derive(Debug, Clone)]
pub struct BenchSpec {
    /// The repository (any path inside its work tree).
    pub repo: PathBuf,
    /// The commit running now (side A).
    pub baseline: CommitId,
    /// The commit proposed (side B).
    pub candidate: CommitId,
    /// The build command, run once in each work directory (an argv list).
    pub build: Vec<String>,
    /// The benchmark command, run once per side per round (an argv list);
    /// it writes [`BenchSpec::out`]. [`UNDECIDED`] in it is replaced, each
    /// round, by the tool's filter for the benchmarks still undecided
    /// ([`harness_filter`]).
    pub cmd: Vec<String>,
    /// The file the benchmark command writes, relative to the work directory.
    pub out: PathBuf,
    /// The tool that writes it (a benchmark format: hyperfine,
    /// pytest-benchmark, google-benchmark, go-bench, bmf).
    pub format: ratchet_scorers::Format,
    /// The gate, if any: without one every round runs.
    pub gate: Option<BenchGate>,
    /// The most rounds (each one run of either side).
    pub rounds: u64,
    /// Stop after the round that ends past this much time.
    pub max_time: Option<Duration>,
    /// Limits on each command.
    pub limits: Limits,
    /// The environment each command sees.
    pub env: EnvPolicy,
}

/// Which revision a run measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum BenchSide {
    /// The baseline (A).
    Baseline,
    /// The candidate (B).
    Candidate,
}

/// One run of the benchmark command.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BenchRun {
    /// Which side.
    pub side: BenchSide,
    /// The command as it ran.
    pub command: CommandReport,
    /// Summary scores recorded from its output.
    pub scores: usize,
    /// `samples` events recorded from its output.
    pub samples: usize,
    /// Seq of the last event recorded.
    pub last_seq: Option<u64>,
}

/// One side's build.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BenchBuild {
    /// Which side.
    pub side: BenchSide,
    /// The build command as it ran.
    pub command: CommandReport,
}

/// One paired round: A then B when even, B then A when odd.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BenchRound {
    /// The round, from 0.
    pub round: u64,
    /// The benchmarks it ran when the command filters them
    /// ([`UNDECIDED`]): those the verdict before it left undecided; `None`
    /// for all.
    pub only: Option<Vec<String>>,
    /// Its runs, in the order they ran.
    pub runs: Vec<BenchRun>,
    /// The gate's verdict after it (not recorded), with a class.
    pub verdict: Option<Verdict>,
}

/// Everything a bench did.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BenchReport {
    /// The baseline.
    pub baseline: CommitId,
    /// The candidate.
    pub candidate: CommitId,
    /// The sandbox backend.
    pub backend: &'static str,
    /// The build, baseline's then candidate's (absent for a side whose
    /// build did not run because the other's failed first).
    pub builds: Vec<BenchBuild>,
    /// The rounds run.
    pub rounds: Vec<BenchRound>,
    /// Why the bench stopped short of a verdict, if it did: a build or a
    /// benchmark run failed, or its output could not be read.
    pub failure: Option<String>,
    /// The final verdict, recorded, with a class.
    pub verdict: Option<Verdict>,
    /// Seq of the `decision` event recording it.
    pub decision_seq: Option<u64>,
}

impl BenchReport {
    /// The answer on the gate's scale: reject when something failed; the
    /// verdict's status with a class; promote otherwise.
    pub fn status(&self) -> GateStatus {
        match (&self.failure, &self.verdict) {
            (Some(_), _) => GateStatus::Reject,
            (None, Some(v)) => v.outcome.status(),
            (None, None) => GateStatus::Promote,
        }
    }
}

/// [`bench_with`] without progress.
///
/// # Errors
/// As [`bench_with`].
pub fn bench(
    store: &mut Store,
    sandboxes: [&mut dyn Sandbox; 2],
    spec: &BenchSpec,
) -> Result<BenchReport> {
    bench_with(store, sandboxes, spec, &mut |_| {})
}

/// Benches `spec.candidate` against `spec.baseline`: both revisions are
/// read from the repository's object database into a sandbox each
/// (`sandboxes[0]` the baseline's, `sandboxes[1]` the candidate's), built
/// there once, then measured in rounds: round `r` runs the benchmark
/// command for the baseline then the candidate when `r` is even, the other
/// way round when odd (ABBA, so a drift of the machine cancels in pairs).
/// After each run, [`BenchSpec::out`] is read with the format's importer
/// and stored in one transaction under session [`BENCH_SESSION`]: the
/// summary scores and a `samples` event per benchmark with its `round`.
/// With a gate, the class is decided (unrecorded) after each round, and
/// the bench stops as soon as the verdict is not continue; the final
/// verdict is recorded. `progress` sees each round as it ends. Both
/// sandboxes are destroyed afterwards, whatever happened.
///
/// # Errors
/// [`Error::SameCommit`]; [`Error::NotABenchmarkFormat`]; [`Error::NoCommands`]/[`Error::EmptyCommand`]
/// for an empty command; [`Error::InvalidPath`] for an `out` outside the
/// work directory; [`Error::Git`]/[`Error::UnknownCommit`] reading a
/// revision; [`Error::Sandbox`]; [`Error::Trace`], [`Error::Scorers`] (a
/// direction conflict), [`Error::Gate`] (a class's policy cannot be
/// resolved). A failing build or run, or an unreadable output, is a report
/// ([`BenchReport::failure`]), not an error.
pub fn bench_with(
    store: &mut Store,
    sandboxes: [&mut dyn Sandbox; 2],
    spec: &BenchSpec,
    progress: &mut dyn FnMut(&BenchRound),
) -> Result<BenchReport> {
    if spec.baseline == spec.candidate {
        return Err(Error::SameCommit {
            commit: spec.candidate.clone(),
        });
    }
    use ratchet_scorers::Format;
    // One file a benchmark tool writes (criterion writes a directory).
    if !matches!(
        spec.format,
        Format::Hyperfine
            | Format::PytestBenchmark
            | Format::GoogleBenchmark
            | Format::GoBench
            | Format::Bmf
    ) {
        return Err(Error::NotABenchmarkFormat {
            format: spec.format,
        });
    }
    check_commands(&[spec.build.clone(), spec.cmd.clone()])?;
    if spec.cmd.iter().any(|w| w.contains(UNDECIDED)) && harness_filter(spec.format, None).is_none()
    {
        return Err(Error::CannotFilter {
            format: spec.format,
        });
    }
    checked_relative(&spec.out)?;
    let policy = match &spec.gate {
        Some(g) => {
            let (_, view) = store.verify_and_fold(&ratchet_trace::VerifyOptions::default())?;
            let (policy, _) =
                ratchet_gate::resolve_policy(view.as_ref(), &g.class, g.policy.as_ref())?;
            Some((g.class.as_str(), policy))
        }
        None => None,
    };
    let loaded = [
        load_commit(spec, &spec.baseline)?,
        load_commit(spec, &spec.candidate)?,
    ];
    let [a, b] = sandboxes;
    let mut boxes: [&mut dyn Sandbox; 2] = [a, b];
    let mut result = Ok(());
    for (sandbox, l) in boxes.iter_mut().zip(&loaded) {
        result = sandbox
            .prepare()
            .and_then(|()| write_snapshot(&mut **sandbox, &l.files));
        if result.is_err() {
            break;
        }
    }
    let report = result.and_then(|()| {
        let question = policy.as_ref().map(|(class, policy)| Question {
            class,
            policy,
            baseline: &spec.baseline,
            candidate: &spec.candidate,
            checkpoint: None,
            allow_unpinned: false,
        });
        run_rounds(store, &mut boxes, spec, question.as_ref(), progress)
    });
    let mut destroyed = Ok(());
    for sandbox in boxes.iter_mut() {
        let destroyed_result = sandbox.destroy();
        if destroyed.is_ok() {
            destroyed = destroyed_result;
        }
    }
    let report = report?;
    destroyed?;
    Ok(report)
}

fn load_commit(spec: &BenchSpec, commit: &CommitId) -> Result<Loaded> {
    load(&Source::Revision {
        repo: &spec.repo,
        rev: commit.as_str(),
    })
}

fn side_index(side: BenchSide) -> usize {
    match side {
        BenchSide::Baseline => 0,
        BenchSide::Candidate => 1,
    }
}

/// One past the highest round of any `samples` event about `a` or `b`
/// (0 when there is none).
fn next_round(store: &Store, a: &CommitId, b: &CommitId) -> Result<u64> {
    let view = store.verified(&ratchet_trace::VerifyOptions::default())?;
    let mut next = 0;
    for e in view.events_of_kinds(&[ratchet_scorers::KIND_SAMPLES]) {
        if e.commit.as_ref().is_some_and(|c| c == a || c == b)
            && let Ok(s) = ratchet_scorers::Samples::from_payload(&e.payload)
            && let Some(r) = s.round
        {
            next = next.max(r.saturating_add(1));
        }
    }
    Ok(next)
}

fn run_rounds(
    store: &mut Store,
    boxes: &mut [&mut dyn Sandbox; 2],
    spec: &BenchSpec,
    question: Option<&Question<'_>>,
    progress: &mut dyn FnMut(&BenchRound),
) -> Result<BenchReport> {
    let started = Instant::now();
    let mut report = BenchReport {
        baseline: spec.baseline.clone(),
        candidate: spec.candidate.clone(),
        backend: boxes[0].backend(),
        builds: Vec::new(),
        rounds: Vec::new(),
        failure: None,
        verdict: None,
        decision_seq: None,
    };
    for side in [BenchSide::Baseline, BenchSide::Candidate] {
        let build = boxes[side_index(side)].exec(&spec.build, &spec.limits, &spec.env)?;
        let passed = build.passed;
        report.builds.push(BenchBuild {
            side,
            command: build,
        });
        if !passed {
            report.failure = Some(format!("the {} build failed", side_name(side)));
            return Ok(report);
        }
    }
    // Keys of this bench's batches: the store's size when it began names
    // it, so a second bench of the same commits records its own runs.
    let bench_id = store.head()?.size;
    // Rounds go on from the last one the trace holds for these commits: a
    // second bench adds pairs instead of pooling its round 0 with the
    // first one's (the gate pairs samples by round).
    let first_round = next_round(store, &spec.baseline, &spec.candidate)?;
    let local = tempfile::tempdir().map_err(io_err(&std::env::temp_dir()))?;
    let filters = spec.cmd.iter().any(|w| w.contains(UNDECIDED));
    let mut undecided: Option<BTreeSet<String>> = None;
    for round in first_round..first_round.saturating_add(spec.rounds) {
        let only = undecided.as_ref().filter(|_| filters);
        let cmd: Vec<String> = match harness_filter(spec.format, only).filter(|_| filters) {
            Some(f) => spec.cmd.iter().map(|w| w.replace(UNDECIDED, &f)).collect(),
            None => spec.cmd.clone(),
        };
        let order = if round % 2 == 0 {
            [BenchSide::Baseline, BenchSide::Candidate]
        } else {
            [BenchSide::Candidate, BenchSide::Baseline]
        };
        let mut runs = Vec::new();
        for side in order {
            let (run, failure) = run_once(
                store,
                &mut *boxes[side_index(side)],
                spec,
                &cmd,
                side,
                round,
                (bench_id, local.path()),
            )?;
            runs.push(run);
            if let Some(f) = failure {
                report.failure = Some(f);
                break;
            }
        }
        let verdict = match (question, &report.failure) {
            (Some(q), None) => {
                let head = store.head()?.size;
                Some(ratchet_gate::verdict_at(store, q, head)?)
            }
            _ => None,
        };
        let decided = verdict
            .as_ref()
            .is_some_and(|v| !matches!(v.outcome, Outcome::Continue { .. }));
        let done = BenchRound {
            round,
            only: only.map(|o| o.iter().cloned().collect()),
            runs,
            verdict,
        };
        if let Some(next) = done.verdict.as_ref().and_then(undecided_in) {
            undecided = Some(next);
        }
        progress(&done);
        report.rounds.push(done);
        if report.failure.is_some()
            || decided
            || spec.max_time.is_some_and(|t| started.elapsed() >= t)
        {
            break;
        }
    }
    if let (Some(q), None) = (question, &report.failure) {
        let (verdict, receipt) = ratchet_gate::decide_recorded(store, q)?;
        report.verdict = Some(verdict);
        report.decision_seq = receipt.map(|r| r.seq);
    }
    Ok(report)
}

fn side_name(side: BenchSide) -> &'static str {
    match side {
        BenchSide::Baseline => "baseline",
        BenchSide::Candidate => "candidate",
    }
}

/// One run of the benchmark command on one side, its output stored; a
/// failure in words when it failed or wrote nothing readable.
fn run_once(
    store: &mut Store,
    sandbox: &mut dyn Sandbox,
    spec: &BenchSpec,
    cmd: &[String],
    side: BenchSide,
    round: u64,
    // This bench's id (its batches' keys) and its scratch directory.
    (bench_id, local): (u64, &std::path::Path),
) -> Result<(BenchRun, Option<String>)> {
    let command = sandbox.exec(cmd, &spec.limits, &spec.env)?;
    let mut run = BenchRun {
        side,
        command,
        scores: 0,
        samples: 0,
        last_seq: None,
    };
    let name = side_name(side);
    if !run.command.passed {
        return Ok((
            run,
            Some(format!("round {round}: the {name} benchmark run failed")),
        ));
    }
    let bytes = match sandbox.read_file(&spec.out) {
        Ok(b) => b,
        Err(Error::Sandbox { source, .. }) => {
            let why = format!(
                "round {round}: the {name} run did not write {}: {source}",
                spec.out.display()
            );
            return Ok((run, Some(why)));
        }
        Err(Error::InvalidPath { reason, .. }) => {
            let why = format!("round {round}: {} refused: {reason}", spec.out.display());
            return Ok((run, Some(why)));
        }
        Err(other) => return Err(other),
    };
    let copy = local
        .join(format!("{name}-{round}"))
        .join(checked_relative(&spec.out)?);
    if let Some(parent) = copy.parent() {
        std::fs::create_dir_all(parent).map_err(io_err(parent))?;
    }
    std::fs::write(&copy, &bytes).map_err(io_err(&copy))?;
    let commit = match side {
        BenchSide::Baseline => &spec.baseline,
        BenchSide::Candidate => &spec.candidate,
    };
    // The caller chose the format, and a benchmark format names its
    // timing scorers itself (`hyperfine_s`…): what the format implies
    // (times improve downwards) is declared as `ratchet ingest` declares
    // it, and nothing the file could choose is (no direction is given).
    // Undeclared, the gate would read a time scorer it does not know as
    // higher-is-better.
    let options = ratchet_scorers::IngestOptions {
        commit: Some(commit.clone()),
        session: Some(BENCH_SESSION.to_string()),
        ..ratchet_scorers::IngestOptions::default()
    };
    let read = match ratchet_scorers::read_reports(spec.format, &[copy], &options) {
        Ok(r) => r,
        Err(ratchet_scorers::Error::Malformed {
            location, reason, ..
        }) => {
            let why = format!("round {round}: the {name} output refused: {location}: {reason}");
            return Ok((run, Some(why)));
        }
        Err(other) => return Err(other.into()),
    };
    let key = format!(
        "bench:{bench_id}:{}:{}:{round}:{name}",
        spec.baseline, spec.candidate
    );
    let stored = ratchet_scorers::store_reports_in(store, read.in_round(round).keyed(key))?;
    run.scores = stored.scores;
    run.samples = stored.samples;
    run.last_seq = stored.last_seq;
    Ok((run, None))
}
