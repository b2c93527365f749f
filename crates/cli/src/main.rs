//! `ratchet`: the command line over ratchet's store, gate, drift detection
//! and scorers.
//!
//! Exit codes: 0 success; 1 a negative finding (`verify-chain`: tampering
//! found; `gate`: rejected on measured evidence; `watch`: an alarm; `best`:
//! no qualifying commit); 2 an error (bad input, missing store, unreadable
//! file, usage); `gate` only: 3 continue (collect more evidence), 4 cannot
//! decide — evidence missing or unknown, 5 cannot decide — the trace failed
//! verification.

use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result, anyhow};
use clap::{Parser, Subcommand};
use ratchet_trace::{
    Checkpoint, CommitId, EventDraft, MergeOptions, Score, Store, StoreOptions, VerifyOptions,
    WriterKey,
};
use serde::Deserialize;

mod calibrate;
mod demo;

/// Exit code when verification finds the store altered.
const EXIT_TAMPERED: u8 = 1;
/// Exit code for every error.
const EXIT_ERROR: u8 = 2;
/// A negative finding (`watch`: an alarm; `best`: no qualifying commit).
const EXIT_REJECT: u8 = 1;

/// ratchet: decide from unforgeable evidence whether a candidate version is
/// better, and keep the trace that proves it.
#[derive(Debug, Parser)]
#[command(name = "ratchet", version, about, long_about = None)]
struct Cli {
    /// Store directory (default: .ratchet at the git root, or in the current directory outside git).
    #[arg(long, global = true, env = "RATCHET_STORE")]
    store: Option<PathBuf>,
    /// Print machine-readable JSON instead of tables.
    #[arg(long, global = true)]
    json: bool,
    /// Accept full commit ids the enclosing git repository does not have
    /// (commits measured elsewhere). Revisions (HEAD, main~2, short ids)
    /// are resolved in the repository either way.
    #[arg(long, global = true)]
    allow_unknown_commit: bool,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Create a store.
    Init {
        /// Make a keyed store: generate a writer key into --key-file (which must not exist).
        #[arg(long, requires = "key_file")]
        keyed: bool,
        /// Where to write the new writer key.
        #[arg(long)]
        key_file: Option<PathBuf>,
    },
    /// Append events given as JSON Lines on stdin, all in one transaction:
    /// `{"kind": "...", "session": "...", "commit": "<full sha>", "payload": {...}}`.
    Append {
        /// Writer key file (keyed stores).
        #[arg(long)]
        key_file: Option<PathBuf>,
    },
    /// Record one score.
    RecordScore {
        /// Full commit id the score measures.
        #[arg(long)]
        commit: String,
        /// Task name.
        #[arg(long)]
        task: String,
        /// Scorer name.
        #[arg(long)]
        scorer: String,
        /// The value (finite).
        #[arg(long, allow_hyphen_values = true)]
        value: f64,
        /// Scorer version.
        #[arg(long, default_value = "1")]
        scorer_version: String,
        /// Cost of the run (≥ 0).
        #[arg(long)]
        cost: Option<f64>,
        /// Latency in milliseconds (≥ 0).
        #[arg(long)]
        latency_ms: Option<f64>,
        /// Mark as a holdout score.
        #[arg(long)]
        holdout: bool,
        /// Which way the scorer improves, declared in the trace the first
        /// time the scorer appears (default: down for cost, latency_ms and
        /// criterion_ns, up otherwise); a later conflict is an error.
        #[arg(long, value_parser = ["higher", "lower"])]
        direction: Option<String>,
        /// Session name.
        #[arg(long, default_value = "")]
        session: String,
        /// Writer key file (keyed stores).
        #[arg(long)]
        key_file: Option<PathBuf>,
    },
    /// Show events after a seq.
    Log {
        /// Show events after this seq.
        #[arg(long, default_value_t = 0)]
        from: u64,
        /// At most this many events.
        #[arg(long, default_value_t = 50)]
        limit: usize,
    },
    /// Recompute every hash; exit 1 naming the first bad seq if the store was altered.
    VerifyChain {
        /// A checkpoint held elsewhere: also detects truncation and rollback.
        #[arg(long)]
        checkpoint: Option<PathBuf>,
        /// Writer key file: also checks every event's MAC (required for a keyed store).
        #[arg(long)]
        key_file: Option<PathBuf>,
        /// Verify a keyed store's plain chain only, knowing its MACs go
        /// unchecked (anyone who can write the file can rebuild a plain chain).
        #[arg(long, conflicts_with = "key_file")]
        without_macs: bool,
    },
    /// Print the current checkpoint, or write it atomically to --out.
    Checkpoint {
        /// File to write the checkpoint to.
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// Verify cell stores and merge their new events into this store.
    MergeCells {
        /// Cell store directories.
        #[arg(required = true)]
        cells: Vec<PathBuf>,
        /// Writer key of this (home) store, if keyed.
        #[arg(long)]
        key_file: Option<PathBuf>,
        /// Writer key of the cells, to check their MACs.
        #[arg(long)]
        cell_key_file: Option<PathBuf>,
    },
    /// Decide whether the candidate commit is better than the baseline.
    ///
    /// Exit codes: 0 promote; 1 rejected on measured evidence (a failed
    /// test, a violated invariant, the sequential test, a guardrail);
    /// 3 continue (collect more evidence); 4 cannot decide: evidence missing
    /// or unknown (a suite never ran, a scorer never recorded); 5 cannot
    /// decide: the trace failed verification; 2 error. `--json` carries the
    /// same as `status` and `exit_code`.
    Gate {
        /// Full commit id running now.
        #[arg(long)]
        baseline: String,
        /// Full commit id proposed.
        #[arg(long)]
        candidate: String,
        /// Artifact class in the policy.
        #[arg(long)]
        class: String,
        /// Policy file (default: policy.toml in the store directory).
        #[arg(long)]
        policy: Option<PathBuf>,
        /// A checkpoint held elsewhere: the trace must still hold its events
        /// (catches truncation and rollback). The whole trace is verified regardless.
        #[arg(long)]
        checkpoint: Option<PathBuf>,
        /// On promote, move `refs/ratchet/promoted/<class>` in the git
        /// repository at this path to the candidate and record a promotion event.
        #[arg(long)]
        record_promotion: Option<PathBuf>,
        /// Writer key file (keyed stores).
        #[arg(long)]
        key_file: Option<PathBuf>,
        /// Decide without appending the verdict to the trace.
        #[arg(long, conflicts_with = "record_promotion")]
        dry_run: bool,
    },
    /// Show what a policy's test does for each true effect: P(promote), `E[N]`, N quantiles.
    Calibrate {
        /// Policy file (default: policy.toml in the store directory).
        #[arg(long)]
        policy: Option<PathBuf>,
        /// Artifact class in the policy.
        #[arg(long)]
        class: String,
        /// Baseline pass rate (bernoulli tests).
        #[arg(long, default_value_t = 0.5)]
        p0: f64,
        /// Score standard deviation, in the scorer's unit (gaussian tests).
        #[arg(long, default_value_t = 1.0)]
        sigma: f64,
        /// Draw rate per task (paired tests).
        #[arg(long, default_value_t = 0.3)]
        draw: f64,
        /// Monte-Carlo runs per effect.
        #[arg(long, default_value_t = 2000)]
        runs: usize,
        /// Monte-Carlo seed.
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// Measure p0, σ and the draw ratio from this baseline's recorded
        /// scores (git revision or full id) instead of assuming them.
        #[arg(long, value_name = "BASELINE")]
        from_store: Option<String>,
        /// Writer key file (a keyed store is only read with its key).
        #[arg(long)]
        key_file: Option<PathBuf>,
    },
    /// Follow a commit's live scores with a CUSUM and print (and record) alarms.
    Watch {
        /// Full commit id of the deployed commit.
        #[arg(long)]
        commit: String,
        /// Scorer to follow.
        #[arg(long)]
        scorer: String,
        /// Trace seq of the deployment: the baseline is the commit's
        /// statistics up to here, and the scores after it are followed
        /// (default: the commit's latest promotion or checkout event).
        #[arg(long)]
        from: Option<u64>,
        /// The chart: `cusum` (two-sided tabular), `ewma`, `page-hinkley`,
        /// `bernoulli` (for 0/1 pass/fail scores, with an exact ARL), or
        /// `auto` (the default): bernoulli when the commit's scores so far
        /// are all 0 or 1 (and one direction is watched), else cusum.
        #[arg(long, default_value = "auto", value_parser = ["auto", "cusum", "ewma", "page-hinkley", "bernoulli"])]
        detector: String,
        /// CUSUM reference k (σ units; k = shift/2 detects a shift of 2k fastest).
        #[arg(long, default_value_t = 0.5)]
        k: f64,
        /// EWMA smoothing λ.
        #[arg(long, default_value_t = 0.1)]
        ewma_lambda: f64,
        /// Page–Hinkley tolerance δ and threshold λ (σ units).
        #[arg(long, num_args = 2, value_names = ["DELTA", "LAMBDA"], default_values_t = [0.5, 50.0])]
        page_hinkley: Vec<f64>,
        /// Bernoulli chart: the change of pass rate to catch (absolute).
        #[arg(long, default_value_t = 0.1)]
        pass_shift: f64,
        /// CUSUM decision interval h (σ units); default: the h whose
        /// in-control ARL is --arl0 (Markov chain).
        #[arg(long)]
        h: Option<f64>,
        /// In-control average run length the default h is solved for: about
        /// one false alarm per this many in-control scores (normal data).
        #[arg(long, default_value_t = 10_000.0)]
        arl0: f64,
        /// Alarm on improvements too (default: only the harmful direction —
        /// down for most scorers, up for cost and latency).
        #[arg(long)]
        two_sided: bool,
        /// Minimum baseline scores.
        #[arg(long, default_value_t = 30)]
        min_n: u64,
        /// Append each alarm to the trace.
        #[arg(long)]
        record: bool,
        /// Keep following, polling every --interval-ms.
        #[arg(long)]
        follow: bool,
        /// Poll interval with --follow.
        #[arg(long, default_value_t = 1000)]
        interval_ms: u64,
        /// Writer key file (keyed stores, with --record).
        #[arg(long)]
        key_file: Option<PathBuf>,
    },
    /// Heal after the latest recorded alarm: check out the best measured commit.
    Heal {
        /// Only alarms on this commit (default: the latest alarm of any commit).
        #[arg(long)]
        commit: Option<String>,
        /// The git repository (default: the current directory).
        #[arg(long, default_value = ".")]
        repo: PathBuf,
        /// Minimum scores for a commit to be a candidate.
        #[arg(long, default_value_t = 30)]
        min_n: u64,
        /// Rank and report without touching the work tree or the trace.
        #[arg(long)]
        dry_run: bool,
        /// Writer key file (keyed stores).
        #[arg(long)]
        key_file: Option<PathBuf>,
    },
    /// Rank commits by a lower confidence bound on their mean score.
    Best {
        /// The scorer.
        #[arg(long)]
        scorer: String,
        /// Minimum scores per commit.
        #[arg(long, default_value_t = 30)]
        min_n: u64,
        /// Confidence of the lower bound.
        #[arg(long, default_value_t = 0.95)]
        confidence: f64,
        /// Commits to leave out (e.g. the alarmed one).
        #[arg(long)]
        exclude: Vec<String>,
        /// Writer key file (a keyed store is only read with its key).
        #[arg(long)]
        key_file: Option<PathBuf>,
    },
    /// Average run lengths of a CUSUM or EWMA chart, or the limit for a target ARL0.
    Arl {
        /// `cusum` or `ewma`.
        #[arg(long, default_value = "cusum")]
        detector: String,
        /// CUSUM reference k.
        #[arg(long, default_value_t = 0.5)]
        k: f64,
        /// CUSUM decision interval h (solved for --target when absent).
        #[arg(long)]
        h: Option<f64>,
        /// EWMA smoothing λ.
        #[arg(long, default_value_t = 0.1)]
        lambda: f64,
        /// EWMA width L (solved for --target when absent).
        #[arg(long)]
        width: Option<f64>,
        /// Target in-control ARL, to solve for h or L.
        #[arg(long)]
        target: Option<f64>,
    },
    /// Record what tools already write: JUnit XML, or JSON Lines of scores
    /// and rubric observations (all or nothing).
    Ingest {
        #[command(subcommand)]
        what: IngestKind,
    },
    /// Score every recorded observation that has no score for its rubric's
    /// current version (the batch "sleep phase"; idempotent).
    Score {
        /// Rubric files (TOML, or JSON by extension).
        #[arg(long, required = true)]
        rubric: Vec<PathBuf>,
        /// Writer key file (keyed stores).
        #[arg(long)]
        key_file: Option<PathBuf>,
    },
    /// Write scores and events as Parquet partitioned by commit (DuckDB,
    /// Spark and Polars read the directory directly). Needs the `parquet`
    /// feature (`cargo install ratchet --features parquet`).
    Export {
        /// New or empty output directory.
        #[arg(long)]
        parquet: PathBuf,
        /// Writer key file (a keyed store is only exported with its key).
        #[arg(long)]
        key_file: Option<PathBuf>,
    },
    /// Rubric files.
    Rubric {
        #[command(subcommand)]
        what: RubricCommand,
    },
    /// Run the store end to end in a scratch directory: record, verify,
    /// checkpoint, then tamper and watch verification catch it.
    Demo {
        /// Keep the demo store here instead of a temporary directory.
        #[arg(long)]
        dir: Option<PathBuf>,
    },
}

#[derive(Debug, Subcommand)]
enum IngestKind {
    /// A JUnit XML report: a test run and a pass_rate score per suite.
    Junit {
        /// The report.
        path: PathBuf,
        /// Full commit id the tests ran under.
        #[arg(long)]
        commit: String,
        /// Session name.
        #[arg(long, default_value = "junit")]
        session: String,
        /// Writer key file (keyed stores).
        #[arg(long)]
        key_file: Option<PathBuf>,
    },
    /// criterion results: one time score per benchmark, keyed to this runner.
    Criterion(CriterionArgs),
    /// JSON Lines of scores or rubric observations.
    Jsonl {
        /// The file.
        path: PathBuf,
        /// Commit for lines that do not name one.
        #[arg(long)]
        commit: Option<String>,
        /// Rubric files (TOML or JSON) scoring observation lines.
        #[arg(long)]
        rubric: Vec<PathBuf>,
        /// Session name.
        #[arg(long, default_value = "jsonl")]
        session: String,
        /// Writer key file (keyed stores).
        #[arg(long)]
        key_file: Option<PathBuf>,
    },
}

/// Benchmark results from criterion (the `Criterion` arm of `ratchet ingest`).
#[derive(Debug, clap::Args)]
struct CriterionArgs {
    /// criterion's output directory (usually target/criterion).
    path: PathBuf,
    /// Full commit id the benchmarks ran under.
    #[arg(long)]
    commit: String,
    /// Runner label that must match for timings to be compared (e.g. the toolchain).
    #[arg(long, default_value = "")]
    label: String,
    /// Writer key file (keyed stores).
    #[arg(long)]
    key_file: Option<PathBuf>,
}

#[derive(Debug, Subcommand)]
enum RubricCommand {
    /// Validate a rubric file and print its version and items.
    Check {
        /// The rubric (TOML, or JSON by extension).
        path: PathBuf,
    },
}

fn read_rubric(path: &Path) -> Result<ratchet_scorers::Rubric> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("reading rubric {}", path.display()))?;
    let rubric = if path.extension().is_some_and(|e| e == "json") {
        ratchet_scorers::Rubric::from_json(&text)
    } else {
        ratchet_scorers::Rubric::from_toml(&text)
    };
    rubric.with_context(|| format!("rubric {}", path.display()))
}

fn main() -> ExitCode {
    // A closed pipe (`ratchet log | head`) ends the program quietly, as
    // `println!` would otherwise panic on it.
    let default_hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let text = info
            .payload()
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| info.payload().downcast_ref::<&str>().copied())
            .unwrap_or("");
        if text.contains("Broken pipe") {
            std::process::exit(0);
        }
        default_hook(info);
    }));
    let cli = Cli::parse();
    match run(cli) {
        Ok(code) => ExitCode::from(code),
        Err(e)
            if e.chain().any(|c| {
                c.downcast_ref::<std::io::Error>()
                    .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
            }) =>
        {
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {}", error_text(&e));
            ExitCode::from(EXIT_ERROR)
        }
    }
}

/// The error and its causes, each said once: library errors often carry
/// their source in their own message, and anyhow's chain would repeat it.
fn error_text(e: &anyhow::Error) -> String {
    let mut text = e.to_string();
    for cause in e.chain().skip(1) {
        let c = cause.to_string();
        if !text.contains(&c) {
            text.push_str(": ");
            text.push_str(&c);
        }
    }
    text
}

/// A commit as typed (revision or id), resolved in the enclosing git repository.
fn commit_arg(rev: &str, allow_unknown: bool) -> Result<CommitId> {
    let cwd = std::env::current_dir().context("reading the current directory")?;
    Ok(ratchet_orchestrate::resolve_commit(
        &cwd,
        rev,
        allow_unknown,
    )?)
}

/// `.ratchet` at the root of the enclosing git work tree, else in the current directory.
fn default_store_dir() -> Result<PathBuf> {
    let cwd = std::env::current_dir().context("reading the current directory")?;
    let root = cwd
        .ancestors()
        .find(|d| d.join(".git").exists())
        .unwrap_or(&cwd)
        .to_path_buf();
    Ok(root.join(".ratchet"))
}

fn read_key(path: &Path) -> Result<WriterKey> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("reading key file {}", path.display()))?;
    WriterKey::from_hex(&text).with_context(|| format!("key file {}", path.display()))
}

fn options(key_file: Option<&Path>) -> Result<StoreOptions> {
    let mut o = StoreOptions::default();
    if let Some(p) = key_file {
        o = o.writer_key(read_key(p)?);
    }
    Ok(o)
}

fn print_json<T: serde::Serialize>(v: &T) -> Result<()> {
    let mut out = std::io::stdout().lock();
    serde_json::to_writer_pretty(&mut out, v)?;
    writeln!(out)?;
    Ok(())
}

/// One line of `ratchet append` input.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct AppendLine {
    kind: String,
    #[serde(default)]
    session: String,
    #[serde(default)]
    commit: Option<String>,
    payload: Box<serde_json::value::RawValue>,
}

fn run(cli: Cli) -> Result<u8> {
    let store_dir = match &cli.store {
        Some(d) => d.clone(),
        None => default_store_dir()?,
    };
    let json = cli.json;
    let allow_unknown = cli.allow_unknown_commit;
    match cli.command {
        Command::Init { keyed, key_file } => {
            let mut o = StoreOptions::default();
            if keyed {
                let path = key_file.ok_or_else(|| anyhow!("--keyed needs --key-file"))?;
                let (key, hex) = WriterKey::generate()?;
                write_new_secret(&path, &hex)?;
                o = o.writer_key(key);
            }
            let store = Store::create(&store_dir, o)?;
            if json {
                print_json(&serde_json::json!({
                    "store": store.dir(), "id": store.id(), "writer_key_id": store.writer_key_id()
                }))?;
            } else {
                println!("created store {} at {}", store.id(), store.dir().display());
                if let Some(k) = store.writer_key_id() {
                    println!(
                        "keyed: writer key id {k}; keep the key file secret and pass it with --key-file"
                    );
                }
            }
            Ok(0)
        }
        Command::Append { key_file } => {
            let mut store = Store::open(&store_dir, options(key_file.as_deref())?)?;
            let stdin = std::io::stdin().lock();
            let mut drafts = Vec::new();
            for (i, line) in stdin.lines().enumerate() {
                let line = line.context("reading stdin")?;
                if line.trim().is_empty() {
                    continue;
                }
                let draft =
                    parse_append_line(&line).with_context(|| format!("stdin line {}", i + 1))?;
                store
                    .validate_draft(&draft)
                    .with_context(|| format!("stdin line {}", i + 1))?;
                drafts.push(draft);
            }
            let receipts = store.append_batch(drafts)?;
            if json {
                print_json(&receipts)?;
            } else {
                match (receipts.first(), receipts.last()) {
                    (Some(a), Some(b)) => println!(
                        "appended {} events: seq {}..={}",
                        receipts.len(),
                        a.seq,
                        b.seq
                    ),
                    _ => println!("no events on stdin; nothing appended"),
                }
            }
            Ok(0)
        }
        Command::RecordScore {
            commit,
            task,
            scorer,
            value,
            scorer_version,
            cost,
            latency_ms,
            holdout,
            direction,
            session,
            key_file,
        } => {
            let mut store = Store::open(&store_dir, options(key_file.as_deref())?)?;
            let direction = match direction.as_deref() {
                Some("lower") => ratchet_scorers::Direction::LowerIsBetter,
                Some(_) => ratchet_scorers::Direction::HigherIsBetter,
                None => ratchet_scorers::direction_in(&store, &scorer)?,
            };
            // Validate the score before declaring anything about its scorer.
            let score = Score {
                commit: commit_arg(&commit, allow_unknown)?,
                task,
                scorer,
                scorer_version,
                value,
                cost,
                latency_ms,
                holdout,
            };
            store.validate_draft(&score.to_draft()?)?;
            ratchet_scorers::declare_scorer(&mut store, &score.scorer, direction)?;
            let r = store.record_score(&score, &session)?;
            if json {
                print_json(&r)?;
            } else {
                println!("recorded score at seq {} ({})", r.seq, r.id);
            }
            Ok(0)
        }
        Command::Log { from, limit } => {
            let store = Store::open(&store_dir, StoreOptions::default())?;
            let events = store.events_after(from, limit)?;
            if json {
                print_json(&events)?;
            } else {
                let mut out = std::io::stdout().lock();
                writeln!(
                    out,
                    "{:>8}  {:<26}  {:<10}  {:<12}  payload",
                    "seq", "id", "kind", "commit"
                )?;
                for e in events {
                    let commit = e.commit.as_ref().map(|c| &c.as_str()[..12]).unwrap_or("-");
                    let payload = String::from_utf8_lossy(&e.payload);
                    let short: String = payload.chars().take(60).collect();
                    let ell = if payload.chars().count() > 60 {
                        "…"
                    } else {
                        ""
                    };
                    writeln!(
                        out,
                        "{:>8}  {}  {:<10}  {:<12}  {short}{ell}",
                        e.seq, e.id, e.kind, commit
                    )?;
                }
            }
            Ok(0)
        }
        Command::VerifyChain {
            checkpoint,
            key_file,
            without_macs,
        } => {
            let store = Store::open(&store_dir, StoreOptions::default())?;
            if let (Some(key_id), None, false) = (store.writer_key_id(), &key_file, without_macs) {
                return Err(anyhow!(
                    "this store is keyed (key id {key_id}): pass --key-file to check its MACs, or --without-macs to verify the plain chain only (which anyone who can write the file can rebuild)"
                ));
            }
            let mut o = VerifyOptions::default();
            if let Some(p) = &key_file {
                o = o.key(read_key(p)?);
            }
            if let Some(p) = &checkpoint {
                o = o.checkpoint(
                    Checkpoint::read(p).with_context(|| format!("checkpoint {}", p.display()))?,
                );
            }
            let report = store.verify_with(&o)?;
            if json {
                print_json(&report)?;
            } else if let Some(f) = &report.fault {
                println!(
                    "TAMPERED: store {} fails verification at {f}",
                    report.store_id
                );
            } else if report.macs_unchecked() {
                println!(
                    "plain chain ok, MACs NOT checked: {} events, head {} (a keyed store: only --key-file shows that its writer wrote them)",
                    report.size,
                    report.head.to_hex()
                );
            } else {
                println!(
                    "ok: {} events verified{}{}, head {}",
                    report.size,
                    if report.macs_checked {
                        ", MACs checked"
                    } else {
                        ""
                    },
                    if report.checkpoint_checked {
                        ", consistent with the checkpoint"
                    } else {
                        ""
                    },
                    report.head.to_hex()
                );
            }
            Ok(if report.is_valid() { 0 } else { EXIT_TAMPERED })
        }
        Command::Checkpoint { out } => {
            let store = Store::open(&store_dir, StoreOptions::default())?;
            let cp = store.checkpoint()?;
            if let Some(p) = &out {
                cp.write_atomic(p)?;
            }
            if json {
                print_json(&cp)?;
            } else if out.is_none() {
                print!("{cp}");
            } else {
                println!("checkpoint at size {} written", cp.size);
            }
            Ok(0)
        }
        Command::MergeCells {
            cells,
            key_file,
            cell_key_file,
        } => {
            let mut home = Store::open(&store_dir, options(key_file.as_deref())?)?;
            let mut mo = MergeOptions::default();
            if let Some(p) = &cell_key_file {
                mo = mo.cell_key(read_key(p)?);
            }
            let mut reports = Vec::new();
            for cell in &cells {
                let r = home
                    .merge_cell(cell, &mo)
                    .with_context(|| format!("merging cell {}", cell.display()))?;
                if !json {
                    println!(
                        "{}: {} new events ingested ({} already present), cell merged through seq {}",
                        cell.display(),
                        r.ingested,
                        r.already_present,
                        r.high_water_after
                    );
                }
                reports.push(r);
            }
            if json {
                print_json(&reports)?;
            }
            Ok(0)
        }
        Command::Demo { dir } => demo::run(dir, json),
        Command::Ingest { what } => {
            let report = match what {
                IngestKind::Junit {
                    path,
                    commit,
                    session,
                    key_file,
                } => {
                    let mut store = Store::open(&store_dir, options(key_file.as_deref())?)?;
                    ratchet_scorers::ingest_junit(
                        &mut store,
                        &path,
                        &commit_arg(&commit, allow_unknown)?,
                        &session,
                    )?
                }
                IngestKind::Criterion(a) => {
                    let mut store = Store::open(&store_dir, options(a.key_file.as_deref())?)?;
                    let env = ratchet_scorers::Environment::current(&a.label);
                    if !json {
                        println!(
                            "scorer {} (lower is better), version = runner fingerprint {}",
                            ratchet_scorers::CRITERION_NS,
                            env.fingerprint()
                        );
                    }
                    ratchet_scorers::ingest_criterion(
                        &mut store,
                        &a.path,
                        &commit_arg(&a.commit, allow_unknown)?,
                        &env,
                        "criterion",
                    )?
                }
                IngestKind::Jsonl {
                    path,
                    commit,
                    rubric,
                    session,
                    key_file,
                } => {
                    let mut store = Store::open(&store_dir, options(key_file.as_deref())?)?;
                    let rubrics = ratchet_scorers::RubricSet::new(
                        rubric
                            .iter()
                            .map(|p| read_rubric(p))
                            .collect::<Result<_>>()?,
                    );
                    let commit = commit.map(|c| commit_arg(&c, allow_unknown)).transpose()?;
                    ratchet_scorers::ingest_jsonl(
                        &mut store,
                        &path,
                        commit.as_ref(),
                        &rubrics,
                        &session,
                    )?
                }
            };
            if json {
                print_json(&report)?;
            } else if let Some(seq) = report.already_ingested_at {
                println!(
                    "already ingested for this commit (ingest event at seq {seq}); nothing stored, nothing counted twice"
                );
            } else {
                println!(
                    "recorded {} test run(s) and {} score(s)",
                    report.test_runs, report.scores
                );
            }
            Ok(0)
        }
        Command::Export { parquet, key_file } => {
            export(&store_dir, &parquet, key_file.as_deref(), json)
        }
        Command::Score { rubric, key_file } => {
            let mut store = Store::open(&store_dir, options(key_file.as_deref())?)?;
            let rubrics = ratchet_scorers::RubricSet::new(
                rubric
                    .iter()
                    .map(|p| read_rubric(p))
                    .collect::<Result<_>>()?,
            );
            let r = ratchet_scorers::score_pending(&mut store, &rubrics)?;
            if json {
                print_json(&r)?;
            } else {
                println!(
                    "{} observation(s): {} scored now, {} already scored, {} with an unknown rubric, {} invalid",
                    r.observations,
                    r.scored,
                    r.already_scored,
                    r.unknown_rubric,
                    r.invalid.len()
                );
                for (seq, why) in &r.invalid {
                    println!("  seq {seq}: {why}");
                }
            }
            Ok(0)
        }
        Command::Rubric {
            what: RubricCommand::Check { path },
        } => {
            let r = read_rubric(&path)?;
            if json {
                print_json(
                    &serde_json::json!({ "name": r.name, "version": r.version(), "holdout": r.holdout, "items": r.items }),
                )?;
            } else {
                println!(
                    "rubric {} ok, version {}{}",
                    r.name,
                    r.version(),
                    if r.holdout { " (holdout)" } else { "" }
                );
                for it in &r.items {
                    println!(
                        "  {:<24} {:?} weight {}{}",
                        it.id,
                        it.kind,
                        it.weight,
                        if it.must { " must" } else { "" }
                    );
                }
            }
            Ok(0)
        }
        Command::Watch {
            commit,
            scorer,
            from,
            detector,
            k,
            ewma_lambda,
            page_hinkley,
            pass_shift,
            h,
            arl0,
            two_sided,
            min_n,
            record,
            follow,
            interval_ms,
            key_file,
        } => {
            let mut store = Store::open(&store_dir, options(key_file.as_deref())?)?;
            let commit = commit_arg(&commit, allow_unknown)?;
            let cusum = match h {
                Some(h) => ratchet_drift::Chart::Cusum { k, h },
                None => ratchet_drift::Chart::Cusum {
                    k,
                    h: ratchet_drift::cusum_h_for_arl0(k, arl0, ratchet_drift::DEFAULT_STATES)?,
                },
            };
            let bernoulli = ratchet_drift::Chart::Bernoulli {
                shift: pass_shift,
                arl0,
            };
            let chart = match detector.as_str() {
                "ewma" => ratchet_drift::Chart::Ewma {
                    lambda: ewma_lambda,
                    l: ratchet_drift::ewma_l_for_arl0(
                        ewma_lambda,
                        arl0,
                        ratchet_drift::DEFAULT_STATES,
                    )?,
                },
                "page-hinkley" => ratchet_drift::Chart::PageHinkley {
                    delta: page_hinkley.first().copied().unwrap_or(0.5),
                    lambda: page_hinkley.get(1).copied().unwrap_or(50.0),
                },
                "bernoulli" => bernoulli,
                // `auto` is settled below, once the trace is verified.
                _ => cusum,
            };
            let watch = if two_sided {
                ratchet_drift::Watch::Both
            } else {
                ratchet_drift::Watch::harm(
                    ratchet_scorers::direction_in(&store, &scorer)?
                        == ratchet_scorers::Direction::LowerIsBetter,
                )
            };
            // Each read of the trace happens in a read transaction that
            // verified it first (the whole chain: new scores are read only
            // once they are covered).
            let mut monitor = {
                let snapshot = store.snapshot()?;
                snapshot.verified(&VerifyOptions::default())?;
                let from = match from {
                    Some(f) => f,
                    None => ratchet_drift::deployment_start(&snapshot, &commit)?.ok_or_else(|| {
                        anyhow!(
                            "the trace holds no promotion or checkout of {commit}: pass --from SEQ (where its deployment began)"
                        )
                    })?,
                };
                let chart = if detector == "auto" && !two_sided {
                    let pass_fail = snapshot
                        .score_stream(&commit, scorer.as_str(), 0, usize::MAX)?
                        .iter()
                        .filter(|(seq, _)| *seq <= from)
                        .all(|(_, v)| {
                            v.to_bits() == 0f64.to_bits() || v.to_bits() == 1f64.to_bits()
                        });
                    if pass_fail { bernoulli } else { cusum }
                } else {
                    chart
                };
                ratchet_drift::Monitor::start_chart(
                    &snapshot, &commit, &scorer, from, chart, watch, min_n,
                )?
            };
            if !json {
                println!(
                    "following {commit} {scorer} after seq {}: {:?}, watching {:?}",
                    monitor.position(),
                    monitor.chart(),
                    watch
                );
            }
            let mut total = 0usize;
            loop {
                let alarms = {
                    let snapshot = store.snapshot()?;
                    snapshot.verified(&VerifyOptions::default())?;
                    monitor.poll(&snapshot)?
                };
                for a in alarms {
                    total += 1;
                    if record && ratchet_drift::record_alarm(&mut store, &a)?.is_none() && !json {
                        println!("(alarm at seq {} was recorded before)", a.seq);
                    }
                    if json {
                        let mut out = std::io::stdout().lock();
                        serde_json::to_writer(&mut out, &a)?;
                        writeln!(out)?;
                    } else {
                        println!(
                            "ALARM {} {}: {:?} shift at seq {} (change from seq {}), statistic {:.3} > {:.3}",
                            a.commit,
                            a.scorer,
                            a.alarm.shift,
                            a.seq,
                            a.change_seq,
                            a.alarm.statistic,
                            a.alarm.limit
                        );
                    }
                }
                if !follow {
                    break;
                }
                std::thread::sleep(std::time::Duration::from_millis(interval_ms));
            }
            if !json {
                println!("followed to seq {}: {total} alarm(s)", monitor.position());
            }
            Ok(if total > 0 { EXIT_REJECT } else { 0 })
        }
        Command::Heal {
            commit,
            repo,
            min_n,
            dry_run,
            key_file,
        } => {
            let mut store = Store::open(&store_dir, options(key_file.as_deref())?)?;
            let only = commit.map(|c| commit_arg(&c, allow_unknown)).transpose()?;
            let latest = {
                let snapshot = store.snapshot()?;
                snapshot.verified(&VerifyOptions::default())?;
                ratchet_drift::latest_alarm(&snapshot, only.as_ref())?
            };
            let alarm = latest.ok_or_else(|| {
                anyhow!("no recorded alarm to heal from (record one with `ratchet watch --record`)")
            })?;
            let opts = ratchet_orchestrate::HealOptions {
                min_n,
                dry_run,
                lower_is_better: ratchet_scorers::direction_in(&store, &alarm.scorer)?
                    == ratchet_scorers::Direction::LowerIsBetter,
                ..Default::default()
            };
            let (report, _) = ratchet_orchestrate::heal(&repo, &mut store, &alarm, &opts)?;
            if json {
                print_json(&report)?;
            } else {
                for (c, why) in &report.skipped {
                    println!("skipped {c}: {why}");
                }
                if let Some(why) = &report.stayed {
                    println!("staying on {}: {why}", report.alarmed);
                }
                match (&report.chosen, report.checked_out) {
                    (Some(c), true) => println!("healed: checked out {c} (was {})", report.alarmed),
                    (Some(c), false) => {
                        println!("dry run: would check out {c} (was {})", report.alarmed)
                    }
                    (None, _) if report.stayed.is_some() => {}
                    (None, _) => println!("no commit to heal to"),
                }
            }
            Ok(0)
        }
        Command::Best {
            scorer,
            min_n,
            confidence,
            exclude,
            key_file,
        } => {
            let store = Store::open(&store_dir, options(key_file.as_deref())?)?;
            let snapshot = store.snapshot()?;
            snapshot.verified(&VerifyOptions::default())?;
            let exclude = exclude
                .iter()
                .map(|c| commit_arg(c, allow_unknown))
                .collect::<Result<Vec<_>, _>>()?;
            let ranking =
                ratchet_drift::best_commit(&snapshot, &scorer, min_n, confidence, &exclude)?;
            if json {
                print_json(&ranking)?;
            } else {
                println!(
                    "{:<42} {:>7} {:>9} {:>9} {:>11}",
                    "commit", "n", "mean", "sd", "lower bound"
                );
                for r in &ranking {
                    println!(
                        "{:<42} {:>7} {:>9.4} {:>9.4} {:>11.4}",
                        r.commit, r.n, r.mean, r.sd, r.lower_bound
                    );
                }
            }
            Ok(if ranking.is_empty() { EXIT_REJECT } else { 0 })
        }
        Command::Arl {
            detector,
            k,
            h,
            lambda,
            width,
            target,
        } => arl_table(&detector, k, h, lambda, width, target, json),
        Command::Gate {
            baseline,
            candidate,
            class,
            policy,
            checkpoint,
            record_promotion,
            key_file,
            dry_run,
        } => {
            let policy = read_policy(policy.unwrap_or_else(|| store_dir.join("policy.toml")))?;
            let class_policy = policy.class(&class)?;
            let mut store = Store::open(&store_dir, options(key_file.as_deref())?)?;
            let checkpoint = match &checkpoint {
                Some(p) => Some(
                    Checkpoint::read(p).with_context(|| format!("checkpoint {}", p.display()))?,
                ),
                None => None,
            };
            let (baseline, candidate) = (
                commit_arg(&baseline, allow_unknown)?,
                commit_arg(&candidate, allow_unknown)?,
            );
            if baseline == candidate {
                return Err(anyhow!(
                    "--baseline and --candidate are the same commit ({baseline}): nothing to compare"
                ));
            }
            let q = ratchet_gate::Question {
                class: &class,
                policy: class_policy,
                baseline: &baseline,
                candidate: &candidate,
                checkpoint: checkpoint.as_ref(),
            };
            let verdict = if dry_run {
                let head = store.head()?.size;
                ratchet_gate::decide_at(&store, &q, head)?
            } else {
                ratchet_gate::decide(&mut store, &q)?
            };
            let status = verdict.outcome.status();
            if json {
                #[derive(serde::Serialize)]
                struct GateJson<'a> {
                    status: ratchet_gate::GateStatus,
                    exit_code: u8,
                    recorded: bool,
                    #[serde(flatten)]
                    verdict: &'a ratchet_gate::Verdict,
                }
                print_json(&GateJson {
                    status,
                    exit_code: status.exit_code(),
                    recorded: !dry_run && status != ratchet_gate::GateStatus::UnverifiedTrace,
                    verdict: &verdict,
                })?;
            } else {
                gate_table(&verdict)?;
                if dry_run {
                    println!("(dry run: the verdict was not recorded)");
                }
            }
            if let (ratchet_gate::Outcome::Promote, Some(repo)) =
                (&verdict.outcome, &record_promotion)
            {
                let decision_seq = store.head()?.size;
                let name = ratchet_orchestrate::record_promotion(
                    repo,
                    &mut store,
                    &candidate,
                    &class,
                    Some(decision_seq),
                )?;
                if !json {
                    println!("{name} -> {candidate}");
                }
            }
            Ok(status.exit_code())
        }
        Command::Calibrate {
            policy,
            class,
            p0,
            sigma,
            draw,
            runs,
            seed,
            from_store,
            key_file,
        } => {
            let policy = read_policy(policy.unwrap_or_else(|| store_dir.join("policy.toml")))?;
            let class_policy = policy.class(&class)?;
            let mut assumptions = calibrate::Assumptions {
                p0,
                sigma,
                draw,
                runs,
                seed,
            };
            if let Some(baseline) = &from_store {
                let store = Store::open(&store_dir, options(key_file.as_deref())?)?;
                let world = ratchet_gate::baseline_world(
                    &store,
                    class_policy,
                    &commit_arg(baseline, allow_unknown)?,
                )?;
                assumptions.p0 = world.p0;
                assumptions.sigma = world.sigma.unwrap_or(assumptions.sigma);
                assumptions.draw = world.draw.unwrap_or(assumptions.draw);
                if !json {
                    println!(
                        "measured from {} task(s) of {} version {}: p0 {:.4}, σ of a difference {}, draw ratio {}",
                        world.tasks,
                        world.scorer,
                        world.scorer_version,
                        world.p0,
                        world
                            .sigma
                            .map_or("n/a (one task)".into(), |s| format!("{s:.4}")),
                        world
                            .draw
                            .map_or(format!("{draw} (assumed: no task ran twice)"), |d| format!(
                                "{d:.4}"
                            ))
                    );
                }
            }
            let progress =
                indicatif::ProgressBar::new(calibrate::ROWS as u64).with_message("effects");
            let rows = calibrate::table(class_policy, &assumptions, &|| progress.inc(1))?;
            progress.finish_and_clear();
            if json {
                print_json(&rows)?;
            } else {
                calibrate::print(&rows)?;
            }
            Ok(0)
        }
    }
}

fn arl_table(
    detector: &str,
    k: f64,
    h: Option<f64>,
    lambda: f64,
    width: Option<f64>,
    target: Option<f64>,
    json: bool,
) -> Result<u8> {
    use ratchet_drift::{
        DEFAULT_STATES, cusum_arl, cusum_h_for_arl0, ewma_arl, ewma_l_for_arl0, siegmund,
    };
    const SHIFTS: [f64; 9] = [0.0, 0.25, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0, 4.0];
    let (limit, rows): (f64, Vec<(f64, f64, Option<f64>)>) = match detector {
        "cusum" => {
            let h = match (h, target) {
                (Some(h), _) => h,
                (None, Some(t)) => cusum_h_for_arl0(k, t, DEFAULT_STATES)?,
                (None, None) => anyhow::bail!("give --h, or --target to solve for it"),
            };
            let rows = SHIFTS
                .iter()
                .map(|&d| {
                    Ok((
                        d,
                        cusum_arl(k, h, d, false, DEFAULT_STATES)?,
                        Some(siegmund(k, h, d)),
                    ))
                })
                .collect::<Result<Vec<_>>>()?;
            (h, rows)
        }
        "ewma" => {
            let l = match (width, target) {
                (Some(l), _) => l,
                (None, Some(t)) => ewma_l_for_arl0(lambda, t, DEFAULT_STATES)?,
                (None, None) => anyhow::bail!("give --width, or --target to solve for it"),
            };
            let rows = SHIFTS
                .iter()
                .map(|&d| Ok((d, ewma_arl(lambda, l, d, DEFAULT_STATES)?, None)))
                .collect::<Result<Vec<_>>>()?;
            (l, rows)
        }
        other => anyhow::bail!("unknown detector {other:?}: use cusum or ewma"),
    };
    if json {
        let rows: Vec<_> = rows
            .iter()
            .map(|(d, a, s)| serde_json::json!({ "shift": d, "arl": a, "siegmund": s }))
            .collect();
        print_json(&serde_json::json!({ "detector": detector, "limit": limit, "rows": rows }))?;
    } else {
        let name = if detector == "cusum" { "h" } else { "L" };
        println!("{detector}: {name} = {limit:.4}");
        println!("{:>8} {:>12} {:>12}", "shift σ", "ARL (chain)", "Siegmund");
        for (d, a, s) in rows {
            let s = s.map(|v| format!("{v:.2}")).unwrap_or_else(|| "-".into());
            println!("{d:>8.2} {a:>12.2} {s:>12}");
        }
    }
    Ok(0)
}

#[cfg(feature = "parquet")]
fn export(store_dir: &Path, out: &Path, key_file: Option<&Path>, json: bool) -> Result<u8> {
    let store = Store::open(store_dir, options(key_file)?)?;
    let report = ratchet_export::export_parquet(&store, out)?;
    if json {
        print_json(&report)?;
    } else {
        println!(
            "wrote {} score row(s) and {} event(s) in {} Parquet file(s) under {}",
            report.scores,
            report.events,
            report.files.len(),
            out.display()
        );
        println!("{}", ratchet_export::summary(&store)?);
    }
    Ok(0)
}

#[cfg(not(feature = "parquet"))]
fn export(_store_dir: &Path, _out: &Path, _key_file: Option<&Path>, _json: bool) -> Result<u8> {
    anyhow::bail!(
        "this ratchet was built without Parquet export; rebuild with `--features parquet`"
    )
}

fn read_policy(path: PathBuf) -> Result<ratchet_gate::Policy> {
    let text = std::fs::read_to_string(&path)
        .with_context(|| format!("reading policy {}", path.display()))?;
    ratchet_gate::Policy::parse(&text).with_context(|| format!("policy {}", path.display()))
}

fn stage_name(stage: &ratchet_gate::Stage) -> String {
    use ratchet_gate::Stage;
    match stage {
        Stage::TraceVerification => "trace verification".into(),
        Stage::Tests => "required tests".into(),
        Stage::Invariants => "invariants".into(),
        Stage::Sequential => "sequential test".into(),
        Stage::Guardrail(g) => format!("guardrail {g}"),
    }
}

/// One line per stage: what was measured, and against what.
fn describe_stage(s: &ratchet_gate::StageReport) -> String {
    use ratchet_gate::Stage;
    let d = &s.details;
    let num = |k: &str| d[k].as_f64().unwrap_or(f64::NAN);
    match &s.stage {
        Stage::TraceVerification => match d["fault"].as_object() {
            Some(_) => format!("fault: {}", d["fault"]),
            None => format!(
                "{} events recomputed{}{}",
                d["size"],
                if d["macs_checked"] == true {
                    ", MACs checked"
                } else if d["keyed"] == true {
                    ", MACs NOT checked"
                } else {
                    ""
                },
                if d["checkpoint_checked"] == true {
                    ", consistent with the checkpoint"
                } else {
                    ""
                }
            ),
        },
        Stage::Tests => {
            let suites = d["suites"].as_array().cloned().unwrap_or_default();
            if suites.is_empty() {
                return "no required suite".into();
            }
            suites
                .iter()
                .map(|x| {
                    let runs = x["runs"].as_array().map_or(0, Vec::len);
                    let failed: u64 = x["runs"]
                        .as_array()
                        .map(|r| r.iter().filter_map(|r| r["failed"].as_u64()).sum())
                        .unwrap_or(0);
                    format!(
                        "{}: {runs} run(s), {failed} failed test(s)",
                        x["suite"].as_str().unwrap_or("?")
                    )
                })
                .collect::<Vec<_>>()
                .join("; ")
        }
        Stage::Invariants => {
            let inv = d["invariants"].as_array().map_or(0, Vec::len);
            format!(
                "{inv} invariant(s){}",
                if d["canaries"].is_null() {
                    ""
                } else {
                    ", canaries checked"
                }
            )
        }
        Stage::Sequential => {
            let test = d["test"].as_str().unwrap_or("?");
            let hyp = match test {
                "bernoulli" => format!(
                    "discordant pairs, θ0 {} vs θ1 {}: candidate alone passed {}, baseline alone {}, both or neither {}",
                    num("theta0"),
                    num("theta1"),
                    d["candidate_only_passed"],
                    d["baseline_only_passed"],
                    d["both_or_neither"]
                ),
                "gaussian" => format!(
                    "paired differences, mean 0 vs {} (variance {:.4})",
                    num("mu1"),
                    num("variance")
                ),
                "paired" => {
                    let counts = d["counts"]
                        .as_object()
                        .map(|m| {
                            m.iter()
                                .map(|(k, v)| format!("{k} {v}"))
                                .collect::<Vec<_>>()
                                .join(", ")
                        })
                        .unwrap_or_default();
                    format!("GSPRT, Elo {} vs {}: {counts}", num("elo0"), num("elo1"))
                }
                _ => String::new(),
            };
            let effect = match d["effect"].as_object() {
                Some(e) => format!(
                    "; effect {:+.4} [{:+.4}, {:+.4}] ({}; 95 % interval, shown only)",
                    e["estimate"].as_f64().unwrap_or(f64::NAN),
                    e["ci_low"].as_f64().unwrap_or(f64::NAN),
                    e["ci_high"].as_f64().unwrap_or(f64::NAN),
                    d["effect_measure"].as_str().unwrap_or("")
                ),
                None => String::new(),
            };
            if d["llr"].is_null() {
                return format!("{test}: {hyp}");
            }
            format!(
                "{test} ({hyp}); LLR {:.3} after {} observation(s), boundaries [{:.3}, {:.3}] as applied (Wald [{:.3}, {:.3}]){effect}",
                num("llr"),
                d["n"],
                num("lower"),
                num("upper"),
                num("wald_lower"),
                num("wald_upper")
            )
        }
        Stage::Guardrail(_) => {
            let r = &d["result"];
            if r.is_null() {
                return format!("{} task(s) on both sides", d["tasks"]);
            }
            // `excess` is how far the candidate is worse than the baseline
            // allows (margin included): non-inferior means shown below 0.
            let shown = match d["method"].as_str() {
                Some("welch") => format!("p = {:.4}", r["p_value"].as_f64().unwrap_or(f64::NAN)),
                _ => format!(
                    "upper bound {:+.4}",
                    r["upper_bound"].as_f64().unwrap_or(f64::NAN)
                ),
            };
            format!(
                "{}: excess over the margin {:+.4} ({shown}); {}",
                d["method"].as_str().unwrap_or("?"),
                r["excess"].as_f64().unwrap_or(f64::NAN),
                if s.passed == Some(true) {
                    "non-inferior"
                } else {
                    "not shown non-inferior"
                }
            )
        }
    }
}

fn gate_table(v: &ratchet_gate::Verdict) -> Result<()> {
    let mut out = std::io::stdout().lock();
    match &v.outcome {
        ratchet_gate::Outcome::Promote => writeln!(
            out,
            "PROMOTE {} over {} ({})",
            v.candidate, v.baseline, v.class
        )?,
        ratchet_gate::Outcome::Reject {
            stage,
            reason,
            cause,
        } => {
            let what = match cause {
                ratchet_gate::RejectCause::Measured => "REJECT",
                ratchet_gate::RejectCause::MissingEvidence => "CANNOT DECIDE (evidence missing)",
                ratchet_gate::RejectCause::UnverifiedTrace => {
                    "CANNOT DECIDE (trace does not verify)"
                }
            };
            writeln!(out, "{what} at {}: {reason}", stage_name(stage))?
        }
        ratchet_gate::Outcome::Continue {
            expected_more,
            reason,
        } => writeln!(
            out,
            "CONTINUE: about {expected_more} more tasks needed ({reason})"
        )?,
    }
    for s in &v.stages {
        let mark = match s.passed {
            Some(true) => "pass",
            Some(false) => "FAIL",
            None => "open",
        };
        writeln!(
            out,
            "  {mark:<4}  {:<20} {}",
            stage_name(&s.stage),
            describe_stage(s)
        )?;
    }
    writeln!(
        out,
        "policy {} at trace size {} ({})",
        &v.policy_hash[..12],
        v.trace.size,
        &v.trace.hash[..12]
    )?;
    Ok(())
}

fn parse_append_line(line: &str) -> Result<EventDraft> {
    let l: AppendLine = serde_json::from_str(line).map_err(|e| {
        anyhow!(
            "not an event object ({{\"kind\", \"payload\", optional \"session\", \"commit\"}}): {e}"
        )
    })?;
    let mut d = EventDraft::raw(l.kind, l.payload.get().as_bytes().to_vec()).session(l.session);
    if let Some(c) = l.commit {
        d = d.commit(CommitId::parse(&c)?);
    }
    Ok(d)
}

/// Writes a secret to a new file readable only by its owner.
fn write_new_secret(path: &Path, text: &str) -> Result<()> {
    let mut o = std::fs::OpenOptions::new();
    o.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        o.mode(0o600);
    }
    let mut f = o.open(path).map_err(|e| {
        if e.kind() == std::io::ErrorKind::AlreadyExists {
            anyhow!(
                "key file {} already exists; refusing to overwrite a key",
                path.display()
            )
        } else {
            anyhow!("creating key file {}: {e}", path.display())
        }
    })?;
    writeln!(f, "{text}")?;
    f.sync_all()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn append_lines_parse_and_refuse_bad_shapes() {
        let d = parse_append_line(r#"{"kind":"note","payload":{"a": [1, 2]}}"#).expect("ok");
        assert_eq!(d.kind(), "note");
        for bad in [
            r#"{"payload":{}}"#,
            r#"{"kind":"note"}"#,
            r#"{"kind":"note","payload":{},"extra":1}"#,
            r#"{"kind":"note","payload":{},"commit":"abc"}"#,
            "not json",
        ] {
            assert!(parse_append_line(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn secrets_are_never_overwritten() {
        let d = tempfile::tempdir().expect("tempdir");
        let p = d.path().join("k");
        write_new_secret(&p, "aa").expect("first");
        let e = write_new_secret(&p, "bb").expect_err("second");
        assert!(e.to_string().contains("already exists"));
        assert_eq!(std::fs::read_to_string(&p).expect("read"), "aa\n");
    }
}
