//! `ratchet`: the command line over ratchet's libraries. Each command
//! parses its flags, makes one library call (or a few, in order) and
//! formats the answer: every capability lives in a library crate, so the
//! Python package and a control plane get it too.
//!
//! Exit codes: 0 success; 1 a negative finding (`verify-chain`: tampering
//! found; `gate`: rejected on measured evidence; `watch`: an alarm; `best`:
//! no qualifying commit); 2 an error (bad input, missing store, unreadable
//! file, usage); `gate` only: 3 continue (collect more evidence), 4 cannot
//! decide — evidence missing or unknown, 5 cannot decide — the trace failed
//! verification.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::{CommandFactory, Parser, Subcommand, ValueEnum};
use ratchet_trace::{CommitId, Store, StoreOptions, WriterKey};

/// `println!` that hands the write's error back instead of panicking: a
/// closed pipe (`ratchet log | head`) ends the command quietly through
/// `main`, which treats `BrokenPipe` as the reader having had enough.
macro_rules! outln {
    () => {
        std::io::Write::write_all(&mut std::io::stdout().lock(), b"\n")?
    };
    ($($arg:tt)*) => {
        std::io::Write::write_fmt(
            &mut std::io::stdout().lock(),
            format_args!("{}\n", format_args!($($arg)*)),
        )?
    };
}

/// `print!` as [`outln!`] is `println!`.
macro_rules! out {
    ($($arg:tt)*) => {
        std::io::Write::write_fmt(&mut std::io::stdout().lock(), format_args!($($arg)*))?
    };
}

mod cmd;
mod demo;
mod out;

/// Exit code for every error.
const EXIT_ERROR: u8 = 2;
/// The `--help` heading of the options every command takes.
const GLOBAL: &str = "Global options";
/// A negative finding (`verify-chain`: tampered; `watch`: an alarm; `best`: no commit).
const EXIT_NEGATIVE: u8 = 1;
/// `status` and `verify-chain --repo`: a promotion ref disagrees with the
/// trace (the trace itself verified).
const EXIT_REF_FAULT: u8 = 6;

/// The `ratchet append` line format, shown by `ratchet append --help`.
const APPEND_FORMAT: &str = "Input: one JSON object per line, \
{\"kind\": \"...\", \"payload\": {...}} with optional \"session\" and \"commit\" (a full 40- or \
64-hex id). Unknown fields are refused; blank lines are skipped; reserved kinds (score, \
decision, alarm, …) are written only by their own commands.";

/// The `ratchet ingest jsonl` line format.
const INGEST_HELP: &str = "Formats: junit (any runner's JUnit XML; a directory: its *.xml), \
criterion (target/criterion), jsonl (lines: a score {\"task\", \"scorer\", \"value\"} with optional \
\"scorer_version\", \"cost\", \"latency_ms\", \"holdout\", \"commit\", \"direction\" (\"higher\"|\"lower\"), \
or an observation {\"task\", \"rubric\", \"observation\": {...}} with optional \"commit\"; unknown \
fields are refused by name), bmf (Bencher Metric Format), hyperfine (--export-json), \
google-benchmark (--benchmark_format=json), pytest-benchmark (--benchmark-json), go-bench \
(the text of go test -bench), inspect (Inspect AI .eval or .json logs), lm-eval \
(lm-evaluation-harness samples_*.jsonl), promptfoo (promptfoo eval -o JSON, JSONL or XML). \
Nothing is stored unless every file is good; the same evidence ingested twice counts once.";

/// Which way a scorer improves, as typed.
#[derive(Debug, Clone, Copy, ValueEnum)]
enum DirectionArg {
    /// Larger is better.
    Higher,
    /// Smaller is better.
    Lower,
}

impl From<DirectionArg> for ratchet_scorers::Direction {
    fn from(d: DirectionArg) -> Self {
        match d {
            DirectionArg::Higher => ratchet_scorers::Direction::HigherIsBetter,
            DirectionArg::Lower => ratchet_scorers::Direction::LowerIsBetter,
        }
    }
}

/// The chart `watch` runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum DetectorArg {
    /// Bernoulli for pass/fail streams, CUSUM otherwise.
    Auto,
    /// Two-sided tabular CUSUM.
    Cusum,
    /// EWMA with steady-state limits.
    Ewma,
    /// Page–Hinkley.
    PageHinkley,
    /// Bernoulli CUSUM (0/1 scores, exact ARL).
    Bernoulli,
}

/// The charts `arl` computes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum ArlDetector {
    /// Two-sided tabular CUSUM.
    Cusum,
    /// EWMA with steady-state limits.
    Ewma,
}

/// ratchet: decide from unforgeable evidence whether a candidate version is
/// better, and keep the trace that proves it.
#[derive(Debug, Parser)]
#[command(name = "ratchet", version, about, long_about = None)]
struct Cli {
    /// Store directory (default: .ratchet at the git root, or in the current directory outside git).
    #[arg(long, global = true, env = "RATCHET_STORE", help_heading = GLOBAL)]
    store: Option<PathBuf>,
    /// Print one JSON document (errors too) instead of words; see README, "JSON output".
    #[arg(long, global = true, help_heading = GLOBAL)]
    json: bool,
    /// Accept full commit ids the enclosing git repository does not have
    /// (commits measured elsewhere). Revisions (HEAD, main~2, short ids)
    /// are resolved in the repository either way.
    #[arg(long, global = true, help_heading = GLOBAL)]
    allow_unknown_commit: bool,
    /// Talk to `ratchet serve` at this Unix socket or http://127.0.0.1:PORT
    /// instead of opening the store's files (append, record-score, ingest,
    /// gate, status); needs --token-file.
    #[arg(long, global = true, env = "RATCHET_SERVER", help_heading = GLOBAL)]
    server: Option<String>,
    /// The capability token file for --server (from `ratchet token mint --out`).
    #[arg(long, global = true, env = "RATCHET_TOKEN_FILE", help_heading = GLOBAL)]
    token_file: Option<PathBuf>,
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
    /// Append events given as JSON Lines on stdin, all in one transaction.
    #[command(after_help = APPEND_FORMAT)]
    Append {
        /// Writer key file (keyed stores).
        #[arg(long)]
        key_file: Option<PathBuf>,
    },
    /// Record one score.
    RecordScore {
        /// Commit (a git revision or full id) the score measures.
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
        #[arg(long)]
        direction: Option<DirectionArg>,
        /// Session name.
        #[arg(long, default_value = "")]
        session: String,
        /// Writer key file (keyed stores).
        #[arg(long)]
        key_file: Option<PathBuf>,
    },
    /// Show events after a seq, optionally only of a kind, a commit or a scorer.
    Log {
        /// Show events after this seq.
        #[arg(long, default_value_t = 0)]
        from: u64,
        /// At most this many events.
        #[arg(long, default_value_t = 50)]
        limit: usize,
        /// The newest N events (matching the filters) instead.
        #[arg(long, conflicts_with_all = ["from", "limit"])]
        last: Option<usize>,
        /// Only events of this kind (score, test_run, decision, alarm, …);
        /// a kind the store has no event of and ratchet does not reserve is
        /// an error (a typo, not an empty answer).
        #[arg(long)]
        kind: Option<String>,
        /// Only events under this commit (a git revision or full id).
        #[arg(long)]
        commit: Option<String>,
        /// Only score events of this scorer.
        #[arg(long)]
        scorer: Option<String>,
    },
    /// What the store holds: whether it verifies, commits, scorers with
    /// their directions and versions, counts, the last decision and alarm.
    /// Exit codes: 0 the trace verifies and every promotion ref agrees
    /// with it; 1 the trace does not verify; 6 a promotion ref disagrees.
    Status {
        /// Writer key file: also checks every MAC.
        #[arg(long)]
        key_file: Option<PathBuf>,
        /// Compare every refs/ratchet/promoted/* of this repository with
        /// the trace (default: the repository enclosing the store, if any);
        /// a ref that disagrees exits 6.
        #[arg(long)]
        repo: Option<PathBuf>,
    },
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell).
    Completions {
        /// The shell.
        shell: clap_complete::Shell,
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
        /// Also compare every refs/ratchet/promoted/* of this repository
        /// with the trace; a ref that disagrees exits 6.
        #[arg(long)]
        repo: Option<PathBuf>,
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
        /// Commit (a git revision or full id) running now.
        #[arg(long)]
        baseline: String,
        /// Commit (a git revision or full id) proposed.
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
        /// Baseline pass rate (bernoulli and betting tests).
        #[arg(long, default_value_t = 0.5)]
        p0: f64,
        /// Standard deviation of a paired *difference* (candidate − baseline
        /// on one task), in the scorer's unit (gaussian tests) — not of a
        /// score: two independent scores of sd s differ with sd s·√2.
        /// `--from-store` measures it.
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
        /// Commit (a git revision or full id) of the deployed commit.
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
        #[arg(long, value_enum, default_value_t = DetectorArg::Auto)]
        detector: DetectorArg,
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
        /// In-control average run length the chart is solved for (default
        /// 10,000): about one false alarm per this many in-control scores,
        /// on the sides that alarm (the harm only, unless --two-sided).
        /// Page–Hinkley has no ARL solved here and refuses it.
        #[arg(long)]
        arl0: Option<f64>,
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
    /// Run commands against a directory or a git revision in a sandbox (and
    /// let the gate judge what they wrote); record the report. Exit codes as `gate`.
    Verify {
        /// A directory, or a git revision of the enclosing repository
        /// (default: the current directory).
        source: Option<String>,
        /// The commit the evidence is about, for a directory source with
        /// --class (a revision source is its own commit).
        #[arg(long)]
        candidate: Option<String>,
        #[command(flatten)]
        run: cmd::work::RunFlags,
    },
    /// Merge branches one by one, each verified as a whole on the tip that
    /// includes the ones before; land each that passes as one merge commit.
    Merge {
        /// The branches, in the order they land.
        #[arg(required = true)]
        branches: Vec<String>,
        /// The branch merged into.
        #[arg(long, default_value = "main")]
        into: String,
        /// The repository (default: the current directory).
        #[arg(long, default_value = ".")]
        repo: PathBuf,
        /// A command to run once after each landing (words, as --cmd).
        #[arg(long)]
        deploy: Option<String>,
        #[command(flatten)]
        run: cmd::work::RunFlags,
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
        #[arg(long, value_enum, default_value_t = ArlDetector::Cusum)]
        detector: ArlDetector,
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
    /// Record what tools already write: test reports, benchmark and
    /// LLM-eval outputs, JSON Lines of scores (all or nothing).
    Ingest(IngestArgs),
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
    /// Policies pinned in the trace: the policy a class decides under.
    Policy {
        #[command(subcommand)]
        what: PolicyCommand,
    },
    /// Serve the store to token holders over a Unix socket (and loopback
    /// TCP): the trusted side that keeps the files and the key to itself.
    Serve(cmd::serve::ServeArgs),
    /// Mint, revoke and list the capability tokens of `ratchet serve`.
    Token {
        #[command(subcommand)]
        what: cmd::serve::TokenCommand,
    },
    /// Write the store's report: one self-contained HTML file with SVG plots
    /// (or, with --markdown, the latest decision as a pull-request comment).
    Report {
        /// Where to write the HTML.
        #[arg(long, default_value = "report.html")]
        out: PathBuf,
        /// Print a Markdown summary of the latest decision instead.
        #[arg(long)]
        markdown: bool,
        /// The scorer of the ladder (default: the most-scored one).
        #[arg(long)]
        scorer: Option<String>,
        /// Writer key file (a keyed store is verified with its key).
        #[arg(long)]
        key_file: Option<PathBuf>,
    },
    /// The whole law end to end, in seconds: proposals committed to a real
    /// repository, scored, judged by the gate, promoted or rejected; latent
    /// regressions caught in live traffic and healed; the chain verified and
    /// a tampered copy caught.
    Demo {
        /// Make the demo's repository, store and report here (an empty or
        /// new directory; default: a new directory under the system's temp).
        #[arg(long, alias = "dir")]
        out: Option<PathBuf>,
        /// Seed of every random draw: the same seed gives the same run.
        #[arg(long, default_value_t = 7)]
        seed: u64,
        /// Proposals to judge.
        #[arg(long, default_value_t = 40)]
        proposals: usize,
    },
}

/// What `ratchet ingest` reads and how it records it.
#[derive(Debug, clap::Args)]
#[command(after_help = INGEST_HELP)]
struct IngestArgs {
    /// The tool that wrote the files.
    #[arg(value_parser = parse_format)]
    format: ratchet_scorers::Format,
    /// The files (or directories of them) the tool wrote; all are stored in
    /// one transaction, or none.
    #[arg(required = true)]
    paths: Vec<PathBuf>,
    /// Commit (a git revision or full id) the results belong to (for
    /// jsonl: of the lines that name none).
    #[arg(long)]
    commit: Option<String>,
    /// junit: record every suite read as one suite of this name (what a
    /// policy's required_suites names).
    #[arg(long)]
    suite: Option<String>,
    /// Session name (default: the format's name).
    #[arg(long)]
    session: Option<String>,
    /// jsonl: rubric files (TOML or JSON) scoring observation lines.
    #[arg(long)]
    rubric: Vec<PathBuf>,
    /// Benchmarks: a runner label that must match for timings to be
    /// compared (e.g. the toolchain), part of the runner fingerprint.
    #[arg(long, default_value = "")]
    label: String,
    /// The direction of metrics the format does not give one (a custom
    /// BMF measure or Go unit, an lm-eval metric not known here).
    #[arg(long, value_enum)]
    direction: Option<DirectionArg>,
    /// Writer key file (keyed stores).
    #[arg(long)]
    key_file: Option<PathBuf>,
}

fn parse_format(s: &str) -> std::result::Result<ratchet_scorers::Format, String> {
    s.parse().map_err(|e: ratchet_scorers::Error| e.to_string())
}

#[derive(Debug, Subcommand)]
enum RubricCommand {
    /// Validate a rubric file and print its version and items.
    Check {
        /// The rubric (TOML, or JSON by extension).
        path: PathBuf,
    },
    /// Pin the rubric's current version in the trace: scoring with another
    /// version of it is refused from then on, and the gate reads the
    /// pinned version's scores.
    Pin {
        /// The rubric (TOML, or JSON by extension).
        path: PathBuf,
        /// Writer key file (keyed stores).
        #[arg(long)]
        key_file: Option<PathBuf>,
    },
}

#[derive(Debug, Subcommand)]
enum PolicyCommand {
    /// Pin a policy file's classes in the trace: `gate`, `calibrate` and
    /// `verify --class` then decide under the pin, and refuse a policy
    /// file that differs from it. Pinning again is how a policy changes.
    Pin {
        /// The policy file (TOML).
        path: PathBuf,
        /// Pin only this class (default: every class in the file).
        #[arg(long)]
        class: Option<String>,
        /// Writer key file (keyed stores).
        #[arg(long)]
        key_file: Option<PathBuf>,
    },
}

/// What every command needs: where the store is, how to answer, how to
/// read commits.
#[derive(Debug)]
struct Ctx {
    store_dir: PathBuf,
    json: bool,
    allow_unknown: bool,
    server: Option<String>,
    token_file: Option<PathBuf>,
}

impl Ctx {
    /// The server client when `--server` was given (the files are then
    /// never opened).
    fn client(&self) -> Result<Option<ratchet_serve::Client>> {
        let Some(server) = &self.server else {
            return Ok(None);
        };
        let path = self
            .token_file
            .as_deref()
            .ok_or_else(|| anyhow::anyhow!("--server needs --token-file (RATCHET_TOKEN_FILE)"))?;
        let token = std::fs::read_to_string(path)
            .with_context(|| format!("reading the token file {}", path.display()))?;
        Ok(Some(ratchet_serve::Client::new(
            ratchet_serve::Endpoint::parse(server),
            token,
        )))
    }

    /// Opens the store for writing (read-only when its file cannot be written).
    fn open(&self, key_file: Option<&Path>) -> Result<Store> {
        Ok(Store::open(&self.store_dir, options(key_file)?)?)
    }

    /// Opens the store for reading only.
    fn open_read(&self, key_file: Option<&Path>) -> Result<Store> {
        Ok(Store::open_read_only(&self.store_dir, options(key_file)?)?)
    }

    /// Opens the store and verifies it once: a ledger whose view is what
    /// every decision of the command reads (refused if the trace does not
    /// verify, or is keyed and no key was given).
    fn ledger(&self, key_file: Option<&Path>) -> Result<ratchet_trace::Ledger> {
        let store = self.open(key_file)?;
        Ok(ratchet_trace::Ledger::new(
            store,
            ratchet_trace::VerifyOptions::default(),
        )?)
    }

    /// [`Ctx::ledger`] on a store opened for reading only.
    fn ledger_read(&self, key_file: Option<&Path>) -> Result<ratchet_trace::Ledger> {
        let store = self.open_read(key_file)?;
        Ok(ratchet_trace::Ledger::new(
            store,
            ratchet_trace::VerifyOptions::default(),
        )?)
    }

    /// A commit as typed (revision or id), resolved in the enclosing git repository.
    fn commit(&self, rev: &str) -> Result<CommitId> {
        let cwd = std::env::current_dir().context("reading the current directory")?;
        Ok(ratchet_orchestrate::resolve_commit(
            &cwd,
            rev,
            self.allow_unknown,
        )?)
    }
}

fn options(key_file: Option<&Path>) -> Result<StoreOptions> {
    let mut o = StoreOptions::default();
    if let Some(p) = key_file {
        o = o.writer_key(WriterKey::read_file(p)?);
    }
    Ok(o)
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => return usage_error(&e),
    };
    let json = cli.json;
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
            let message = error_text(&e);
            let hint = hint(&e);
            if json {
                let doc = serde_json::json!({
                    "error": { "message": message, "hint": hint },
                    "exit_code": EXIT_ERROR,
                });
                // Nowhere left to say it if stdout is closed: the exit code says it.
                let _ = writeln!(std::io::stdout().lock(), "{doc:#}");
            } else {
                eprintln!("error: {message}");
                if let Some(h) = hint {
                    eprintln!("hint: {h}");
                }
            }
            ExitCode::from(EXIT_ERROR)
        }
    }
}

/// A command line clap refused: under `--json` (looked for in the raw
/// arguments, since they did not parse) the same error document as every
/// other error, with clap's usage line as the hint; clap's own words
/// otherwise. `--help` and `--version` print as clap prints them.
fn usage_error(e: &clap::Error) -> ExitCode {
    use clap::error::ErrorKind;
    let json = std::env::args_os().skip(1).any(|a| a == "--json");
    if !json
        || matches!(
            e.kind(),
            ErrorKind::DisplayHelp
                | ErrorKind::DisplayVersion
                | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
        )
    {
        e.exit();
    }
    let text = e.render().to_string();
    let mut lines = text.lines().map(str::trim).filter(|l| !l.is_empty());
    let message = lines
        .next()
        .map_or("the command line did not parse", |l| {
            l.strip_prefix("error: ").unwrap_or(l)
        })
        .to_string();
    let rest: Vec<&str> = lines.collect();
    let hint = (!rest.is_empty()).then(|| rest.join("; "));
    let doc = serde_json::json!({
        "error": { "message": message, "hint": hint, "kind": "usage" },
        "exit_code": EXIT_ERROR,
    });
    let _ = writeln!(std::io::stdout().lock(), "{doc:#}");
    ExitCode::from(EXIT_ERROR)
}

/// The error and its causes, each said once. The walk follows the context
/// the CLI added down to the first error of a ratchet library and stops
/// there: by the house rule a library error's message is whole — a variant
/// wrapping another crate's error is `#[error(transparent)]`, and one that
/// names an I/O or SQLite failure says it in its own words.
fn error_text(e: &anyhow::Error) -> String {
    let mut parts = Vec::new();
    for cause in e.chain() {
        parts.push(cause.to_string());
        if is_library_error(cause) {
            break;
        }
    }
    parts.join(": ")
}

fn is_library_error(e: &(dyn std::error::Error + 'static)) -> bool {
    e.is::<ratchet_trace::Error>()
        || e.is::<ratchet_gate::Error>()
        || e.is::<ratchet_drift::Error>()
        || e.is::<ratchet_scorers::Error>()
        || e.is::<ratchet_orchestrate::Error>()
        || e.is::<ratchet_report::Error>()
        || e.is::<ratchet_serve::Error>()
}

/// What to type next: library errors speak in library terms; the flags
/// that fix them are the CLI's to name.
fn hint(e: &anyhow::Error) -> Option<&'static str> {
    use ratchet_trace::Error as T;
    e.chain().find_map(|c| {
        if let Some(t) = c.downcast_ref::<T>() {
            return match t {
                T::KeyRequired | T::MacsUnchecked { .. } => {
                    Some("pass the store's writer key with --key-file")
                }
                T::WrongKey { .. } => Some("--key-file names a key of another store"),
                T::CellKeyRequired { .. } => Some("pass the cells' writer key with --cell-key-file"),
                T::StoreMissing { .. } => {
                    Some("create one with `ratchet init`, or point --store (RATCHET_STORE) at it")
                }
                T::SchemaAltered { .. } | T::Tampered { .. } => {
                    Some("run `ratchet verify-chain` to see where, and restore the store from a trusted copy")
                }
                T::ReadOnly { .. } => Some("copy the store somewhere writable to write to it"),
                _ => None,
            };
        }
        if let Some(ratchet_orchestrate::Error::UnknownCommit { .. }) = c.downcast_ref() {
            return Some(
                "pass --allow-unknown-commit for a full id measured outside this repository",
            );
        }
        if let Some(ratchet_orchestrate::Error::NoDeployment { .. }) = c.downcast_ref() {
            return Some("pass --from SEQ, the seq after which its deployment began");
        }
        if let Some(ratchet_orchestrate::Error::SandboxUnavailable { .. }) = c.downcast_ref() {
            return Some("install bubblewrap (apt-get install bubblewrap), or use --sandbox process");
        }
        if let Some(ratchet_orchestrate::Error::DirtyWorkTree { .. }) = c.downcast_ref() {
            return Some("commit or stash the changes first");
        }
        if let Some(ratchet_orchestrate::Error::NoAlarm) = c.downcast_ref() {
            return Some("record alarms with `ratchet watch --record`");
        }
        None
    })
}

fn run(cli: Cli) -> Result<u8> {
    let store_dir = match &cli.store {
        Some(d) => d.clone(),
        None => Store::discover(std::env::current_dir().context("reading the current directory")?),
    };
    let ctx = Ctx {
        store_dir,
        json: cli.json,
        allow_unknown: cli.allow_unknown_commit,
        server: cli.server.clone(),
        token_file: cli.token_file.clone(),
    };
    match cli.command {
        Command::Completions { shell } => {
            clap_complete::generate(
                shell,
                &mut Cli::command(),
                "ratchet",
                &mut std::io::stdout(),
            );
            Ok(0)
        }
        Command::Demo {
            out,
            seed,
            proposals,
        } => demo::run(out, seed, proposals, ctx.json),
        Command::Report {
            out,
            markdown,
            scorer,
            key_file,
        } => cmd::store::report(&ctx, &out, markdown, scorer, key_file.as_deref()),
        Command::Init { keyed, key_file } => cmd::store::init(&ctx, keyed, key_file.as_deref()),
        Command::Append { key_file } => match ctx.client()? {
            Some(client) => cmd::serve::append_remote(&ctx, &client),
            None => cmd::store::append(&ctx, key_file.as_deref()),
        },
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
            let score = ratchet_trace::Score {
                commit: ctx.commit(&commit)?,
                task,
                scorer,
                scorer_version,
                value,
                cost,
                latency_ms,
                holdout,
            };
            if let Some(client) = ctx.client()? {
                return cmd::serve::record_score_remote(
                    &ctx,
                    &client,
                    &score,
                    direction.map(Into::into),
                );
            }
            cmd::store::record_score(
                &ctx,
                &score,
                &session,
                direction.map(Into::into),
                key_file.as_deref(),
            )
        }
        Command::Log {
            from,
            limit,
            last,
            kind,
            commit,
            scorer,
        } => {
            let filter = ratchet_trace::EventFilter {
                kind,
                commit: commit.map(|c| ctx.commit(&c)).transpose()?,
                scorer,
            };
            cmd::store::log(&ctx, from, limit, last, &filter)
        }
        Command::Status { key_file, repo } => {
            if let Some(client) = ctx.client()? {
                return cmd::serve::status_remote(&ctx, &client);
            }
            // The repository of the store, else of the current directory
            // (a store kept outside the repository it promotes in).
            let repo = repo
                .or_else(|| ratchet_orchestrate::repository_of(&ctx.store_dir))
                .or_else(|| {
                    std::env::current_dir()
                        .ok()
                        .and_then(|d| ratchet_orchestrate::repository_of(&d))
                });
            cmd::store::status(&ctx, key_file.as_deref(), repo.as_deref())
        }
        Command::VerifyChain {
            checkpoint,
            key_file,
            without_macs,
            repo,
        } => cmd::store::verify_chain(
            &ctx,
            checkpoint.as_deref(),
            key_file.as_deref(),
            without_macs,
            repo.as_deref(),
        ),
        Command::Checkpoint { out } => cmd::store::checkpoint(&ctx, out.as_deref()),
        Command::MergeCells {
            cells,
            key_file,
            cell_key_file,
        } => cmd::store::merge_cells(&ctx, &cells, key_file.as_deref(), cell_key_file.as_deref()),
        Command::Export { parquet, key_file } => {
            cmd::store::export(&ctx, &parquet, key_file.as_deref())
        }
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
            if let Some(client) = ctx.client()? {
                if policy.is_some() || record_promotion.is_some() || checkpoint.is_some() {
                    anyhow::bail!(
                        "with --server the gate decides under the class's pinned policy, in the server: --policy, --checkpoint and --record-promotion are for local stores"
                    );
                }
                return cmd::serve::gate_remote(
                    &ctx,
                    &client,
                    &class,
                    &ctx.commit(&baseline)?,
                    &ctx.commit(&candidate)?,
                    dry_run,
                );
            }
            cmd::gate::gate(
                &ctx,
                &cmd::gate::GateArgs {
                    baseline: ctx.commit(&baseline)?,
                    candidate: ctx.commit(&candidate)?,
                    class,
                    policy,
                    checkpoint,
                    record_promotion,
                    key_file,
                    dry_run,
                },
            )
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
            let assumptions = ratchet_gate::Assumptions {
                p0,
                sigma,
                draw,
                runs,
                seed,
            };
            let baseline = from_store.map(|b| ctx.commit(&b)).transpose()?;
            cmd::gate::calibrate(
                &ctx,
                policy,
                &class,
                assumptions,
                baseline.as_ref(),
                key_file.as_deref(),
            )
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
            if detector == DetectorArg::PageHinkley && arl0.is_some() {
                anyhow::bail!(
                    "--arl0 cannot be honoured by Page–Hinkley: its statistic runs about the running mean, and no run-length computation for its threshold exists here; set its threshold with --page-hinkley DELTA LAMBDA (σ units), or use --detector cusum or ewma, whose limits are solved for --arl0"
                );
            }
            let arl0 = arl0.unwrap_or(10_000.0);
            // The sides that alarm: the harm only (symmetric, so either
            // one-sided solution), or both.
            let sides = if two_sided {
                ratchet_drift::Watch::Both
            } else {
                ratchet_drift::Watch::Decreases
            };
            let cusum = match h {
                Some(h) => ratchet_drift::Chart::Cusum { k, h },
                None => ratchet_drift::Chart::cusum_for_arl0_watching(k, arl0, sides)?,
            };
            let bernoulli = ratchet_drift::Chart::Bernoulli {
                shift: pass_shift,
                arl0,
            };
            let chart = match detector {
                DetectorArg::Ewma => Some(ratchet_drift::Chart::ewma_for_arl0_watching(
                    ewma_lambda,
                    arl0,
                    sides,
                )?),
                DetectorArg::PageHinkley => Some(ratchet_drift::Chart::PageHinkley {
                    delta: page_hinkley.first().copied().unwrap_or(0.5),
                    lambda: page_hinkley.get(1).copied().unwrap_or(50.0),
                }),
                DetectorArg::Bernoulli => Some(bernoulli),
                DetectorArg::Cusum => Some(cusum),
                // Settled on the verified trace: bernoulli for 0/1 streams.
                DetectorArg::Auto if two_sided => Some(cusum),
                DetectorArg::Auto => None,
            };
            cmd::drift::watch(
                &ctx,
                &cmd::drift::WatchArgs {
                    plan: ratchet_orchestrate::WatchPlan {
                        commit: ctx.commit(&commit)?,
                        scorer,
                        from,
                        chart,
                        auto: (bernoulli, cusum),
                        two_sided,
                        min_n,
                    },
                    follow: ratchet_drift::Follow {
                        record,
                        keep_following: follow,
                        interval: std::time::Duration::from_millis(interval_ms),
                    },
                    key_file,
                },
            )
        }
        Command::Heal {
            commit,
            repo,
            min_n,
            dry_run,
            key_file,
        } => {
            let only = commit.map(|c| ctx.commit(&c)).transpose()?;
            let options = ratchet_orchestrate::HealOptions {
                min_n,
                dry_run,
                ..Default::default()
            };
            cmd::drift::heal(&ctx, &repo, only.as_ref(), &options, key_file.as_deref())
        }
        Command::Verify {
            source,
            candidate,
            run,
        } => cmd::work::verify(&ctx, source.as_deref(), candidate.as_deref(), &run),
        Command::Merge {
            branches,
            into,
            repo,
            deploy,
            run,
        } => cmd::work::merge(&ctx, &repo, &branches, &into, deploy.as_deref(), &run),
        Command::Best {
            scorer,
            min_n,
            confidence,
            exclude,
            key_file,
        } => {
            let exclude = exclude
                .iter()
                .map(|c| ctx.commit(c))
                .collect::<Result<Vec<_>>>()?;
            cmd::drift::best(
                &ctx,
                &scorer,
                min_n,
                confidence,
                &exclude,
                key_file.as_deref(),
            )
        }
        Command::Arl {
            detector,
            k,
            h,
            lambda,
            width,
            target,
        } => {
            use ratchet_drift::Chart;
            let chart = match (detector, h, width, target) {
                (ArlDetector::Cusum, Some(h), _, _) => Chart::Cusum { k, h },
                (ArlDetector::Cusum, None, _, Some(t)) => Chart::cusum_for_arl0(k, t)?,
                (ArlDetector::Ewma, _, Some(l), _) => Chart::Ewma { lambda, l },
                (ArlDetector::Ewma, _, None, Some(t)) => Chart::ewma_for_arl0(lambda, t)?,
                (ArlDetector::Cusum, None, _, None) => {
                    anyhow::bail!("give --h, or --target to solve for it")
                }
                (ArlDetector::Ewma, _, None, None) => {
                    anyhow::bail!("give --width, or --target to solve for it")
                }
            };
            cmd::drift::arl(&ctx, chart)
        }
        Command::Ingest(args) => cmd::ingest::ingest(&ctx, args),
        Command::Score { rubric, key_file } => {
            cmd::ingest::score(&ctx, &rubric, key_file.as_deref())
        }
        Command::Rubric {
            what: RubricCommand::Check { path },
        } => cmd::ingest::rubric_check(&ctx, &path),
        Command::Rubric {
            what: RubricCommand::Pin { path, key_file },
        } => cmd::ingest::rubric_pin(&ctx, &path, key_file.as_deref()),
        Command::Serve(args) => cmd::serve::serve(&ctx, &args),
        Command::Token { what } => cmd::serve::token(&ctx, &what),
        Command::Policy {
            what:
                PolicyCommand::Pin {
                    path,
                    class,
                    key_file,
                },
        } => cmd::gate::policy_pin(&ctx, &path, class.as_deref(), key_file.as_deref()),
    }
}
