//! The command line as typed: every flag, its help and its raw type
//! (clap). Nothing here reads a file or a store; `main` turns these into
//! a validated plan in each command's file (`cmd::*::run`), which
//! makes one library call.

use std::path::PathBuf;

use clap::{Parser, Subcommand, ValueEnum};

use crate::{GLOBAL, cmd};

/// The `ratchet append` line format, shown by `ratchet append --help`.
pub const APPEND_FORMAT: &str = "Input: one JSON object per line, \
{\"kind\": \"...\", \"payload\": {...}} with optional \"session\" and \"commit\" (a full 40- or \
64-hex id). Unknown fields are refused; blank lines are skipped; reserved kinds (score, \
decision, alarm, …) are written only by their own commands.";

/// The `ratchet ingest jsonl` line format.
pub const INGEST_HELP: &str = "Formats: junit (any runner's JUnit XML; a directory: its *.xml), \
criterion (target/criterion), jsonl (lines: a score {\"task\", \"scorer\", \"value\"} with optional \
\"scorer_version\", \"cost\", \"latency_ms\", \"holdout\", \"commit\", \"direction\" (\"higher\"|\"lower\"), \
or an observation {\"task\", \"rubric\", \"observation\": {...}} with optional \"commit\"; unknown \
fields are refused by name), bmf (Bencher Metric Format), hyperfine (--export-json), \
google-benchmark (--benchmark_format=json), pytest-benchmark (--benchmark-json), go-bench \
(the text of go test -bench), inspect (Inspect AI .eval logs, zstd or deflate, or .json logs), \
lm-eval (lm-evaluation-harness: the --output_path directory, read one folder down, or its files: \
samples_*.jsonl per document, results_*.json as aggregate/<metric> scores per task, which a \
policy on the per-document metric never reads), promptfoo (promptfoo eval -o JSON, JSONL or XML; \
a test is its description and a hash of its vars and asserts). \
Nothing is stored unless every file is good; the same evidence ingested twice counts once.";

/// Which way a scorer improves, as typed.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum DirectionArg {
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
pub enum DetectorArg {
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
pub enum ArlDetector {
    /// Two-sided tabular CUSUM.
    Cusum,
    /// EWMA with steady-state limits.
    Ewma,
}

/// ratchet: decide from unforgeable evidence whether a candidate version is
/// better, and keep the trace that proves it.
#[derive(Debug, Parser)]
#[command(
    name = "ratchet",
    version,
    about,
    long_about = None,
)]
pub struct Cli {
    /// Store directory (default: .ratchet at the git root, or in the current directory outside git).
    #[arg(long, global = true, env = "RATCHET_STORE", help_heading = GLOBAL)]
    pub store: Option<PathBuf>,
    /// Print one JSON document (errors too) instead of words; see README, "JSON output".
    #[arg(long, global = true, help_heading = GLOBAL)]
    pub json: bool,
    /// Accept full commit ids the enclosing git repository does not have
    /// (commits measured elsewhere). Revisions (HEAD, main~2, short ids)
    /// are resolved in the repository either way.
    #[arg(long, global = true, help_heading = GLOBAL)]
    pub allow_unknown_commit: bool,
    /// Talk to `ratchet serve` at this Unix socket or http://127.0.0.1:PORT
    /// instead of opening the store's files (append, record-score, ingest,
    /// gate, status); needs --token-file.
    #[arg(long, global = true, env = "RATCHET_SERVER", help_heading = GLOBAL)]
    pub server: Option<String>,
    /// The capability token file for --server (from `ratchet token mint --out`).
    #[arg(long, global = true, env = "RATCHET_TOKEN_FILE", help_heading = GLOBAL)]
    pub token_file: Option<PathBuf>,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
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
    RecordScore(RecordScoreFlags),
    /// Show events after a seq, optionally only of a kind, a commit or a scorer.
    Log(LogFlags),
    /// What the store holds: whether it verifies, commits, scorers with
    /// their directions and versions, counts, the last decision and alarm.
    /// Exit codes: 0 the trace verifies and every promotion ref agrees
    /// with it; 1 the trace does not verify; 7 a promotion ref disagrees.
    Status(StatusFlags),
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell).
    Completions {
        /// The shell.
        shell: clap_complete::Shell,
    },
    /// Recompute every hash; exit 1 naming the first bad seq if the store was altered.
    VerifyChain(VerifyChainFlags),
    /// Print the current checkpoint, or write it atomically to --out.
    Checkpoint {
        /// File to write the checkpoint to.
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// Verify cell stores and merge their new events into this store.
    MergeCells(MergeCellsFlags),
    /// Decide whether the candidate commit is better than the baseline.
    ///
    /// Exit codes: 0 promote; 1 rejected on measured evidence (a failed
    /// test, a violated invariant, the sequential test, a guardrail);
    /// 3 continue (collect more evidence); 4 cannot decide: evidence missing
    /// or unknown (a suite never ran, a scorer never recorded); 5 cannot
    /// decide: the trace failed verification; 2 error. `--json` carries the
    /// same as `status` and `exit_code`.
    Gate(GateFlags),
    /// Show what a policy's test does for each true effect: P(promote), `E[N]`, N quantiles.
    Calibrate(CalibrateFlags),
    /// Follow a commit's live scores with a CUSUM and print (and record) alarms.
    Watch(WatchFlags),
    /// Heal after the latest recorded alarm: check out the best measured commit.
    Heal(HealFlags),
    /// Run commands against a directory or a git revision in a sandbox (and
    /// let the gate judge what they wrote); record the report. Exit codes as `gate`.
    Verify(VerifyFlags),
    /// Build two revisions side by side and run their benchmark in paired
    /// rounds (ABBA), recording every run's samples; with --class, stop as
    /// soon as the gate decides. Exit codes as `gate`.
    Bench(BenchFlags),
    /// Merge branches one by one, each verified as a whole on the tip that
    /// includes the ones before; land each that passes as one merge commit.
    Merge(MergeFlags),
    /// Rank commits by a lower confidence bound on their mean score.
    Best(BestFlags),
    /// Average run lengths of a CUSUM or EWMA chart, or the limit for a target ARL0.
    Arl(ArlFlags),
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
    /// feature (`cargo install --path crates/cli --features parquet`).
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
        what: cmd::token::TokenCommand,
    },
    /// Write the store's report: one self-contained HTML file with SVG plots
    /// (or, with --markdown, the latest decision as a pull-request comment).
    Report(ReportFlags),
    /// The whole law end to end, in seconds: proposals committed to a real
    /// repository, scored, judged by the gate, promoted or rejected; latent
    /// regressions caught in live traffic and healed; the chain verified and
    /// a tampered copy caught.
    Demo(DemoFlags),
}

/// What `ratchet ingest` reads and how it records it.
#[derive(Debug, clap::Args)]
#[command(after_help = INGEST_HELP)]
pub struct IngestArgs {
    /// The tool that wrote the files.
    #[arg(value_parser = parse_format)]
    pub format: ratchet_scorers::Format,
    /// The files (or directories of them) the tool wrote; all are stored in
    /// one transaction, or none.
    #[arg(required = true)]
    pub paths: Vec<PathBuf>,
    /// Commit (a git revision or full id) the results belong to (for
    /// jsonl: of the lines that name none).
    #[arg(long)]
    pub commit: Option<String>,
    /// junit: record every suite read as one suite of this name (what a
    /// policy's required_suites names).
    #[arg(long)]
    pub suite: Option<String>,
    /// Session name (default: the format's name).
    #[arg(long)]
    pub session: Option<String>,
    /// jsonl: rubric files (TOML or JSON) scoring observation lines.
    #[arg(long)]
    pub rubric: Vec<PathBuf>,
    /// Benchmarks: a runner label that must match for timings to be
    /// compared (e.g. the toolchain), part of the runner fingerprint.
    #[arg(long, default_value = "")]
    pub label: String,
    /// Benchmarks: the runner the timings were measured on, recorded as
    /// their runner instead of a fingerprint. hyperfine, criterion and BMF
    /// files (and go-bench output without its header) do not name their
    /// machine, so by default they are fingerprinted as the machine that
    /// ingests them; give the same NAME wherever one runner's timings are
    /// ingested, or the fingerprint its own ingestions show.
    #[arg(long, value_name = "NAME", conflicts_with = "label", value_parser = runner_name)]
    pub runner: Option<String>,
    /// The direction of metrics the format does not give one (a custom
    /// BMF measure or Go unit, a Google Benchmark user counter, an lm-eval
    /// metric not known here): `higher` or `lower` for all of them, or
    /// `NAME=higher|lower` for the one the file names so (`hit-ratio`,
    /// `widgets/op`, a counter `items`). Repeatable: each named metric
    /// takes its own, the others the plain one.
    #[arg(long, value_parser = parse_ingest_direction)]
    pub direction: Vec<IngestDirection>,
    /// Writer key file (keyed stores).
    #[arg(long)]
    pub key_file: Option<PathBuf>,
}

/// One `ingest --direction`: for every metric without a known direction,
/// or for the one named.
#[derive(Debug, Clone)]
pub enum IngestDirection {
    /// `higher` or `lower`.
    All(DirectionArg),
    /// `NAME=higher` or `NAME=lower`.
    Metric(String, DirectionArg),
}

fn parse_ingest_direction(s: &str) -> std::result::Result<IngestDirection, String> {
    let word = |w: &str| match w.trim().to_ascii_lowercase().as_str() {
        "higher" => Ok(DirectionArg::Higher),
        "lower" => Ok(DirectionArg::Lower),
        other => Err(format!(
            "{other:?} is not a direction: give higher or lower (or NAME=higher|lower for one metric)"
        )),
    };
    // The name is split at the last `=`: a unit may hold one, a direction
    // never does.
    match s.rsplit_once('=') {
        None => word(s).map(IngestDirection::All),
        Some((name, _)) if name.trim().is_empty() => Err(format!(
            "{s:?} names no metric before `=`: give NAME=higher|lower, e.g. hit-ratio=higher"
        )),
        Some((name, d)) => Ok(IngestDirection::Metric(name.trim().to_string(), word(d)?)),
    }
}

fn parse_format(s: &str) -> std::result::Result<ratchet_scorers::Format, String> {
    s.parse().map_err(|e: ratchet_scorers::Error| e.to_string())
}

#[derive(Debug, Subcommand)]
pub enum RubricCommand {
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
pub enum PolicyCommand {
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

/// The flags of `ratchet record-score`.
#[derive(Debug, clap::Args)]
pub struct RecordScoreFlags {
    /// Commit (a git revision or full id) the score measures.
    #[arg(long)]
    pub commit: String,
    /// Task name.
    #[arg(long)]
    pub task: String,
    /// Scorer name.
    #[arg(long)]
    pub scorer: String,
    /// The value (finite).
    #[arg(long, allow_hyphen_values = true)]
    pub value: f64,
    /// Scorer version.
    #[arg(long, default_value = "1")]
    pub scorer_version: String,
    /// Cost of the run (≥ 0).
    #[arg(long)]
    pub cost: Option<f64>,
    /// Latency in milliseconds (≥ 0).
    #[arg(long)]
    pub latency_ms: Option<f64>,
    /// Mark as a holdout score.
    #[arg(long)]
    pub holdout: bool,
    /// Which way the scorer improves, declared in the trace the first
    /// time the scorer appears (default: down for cost, latency_ms and
    /// criterion_ns, up otherwise); a later conflict is an error.
    #[arg(long)]
    pub direction: Option<DirectionArg>,
    /// Session name.
    #[arg(long, default_value = "")]
    pub session: String,
    /// Writer key file (keyed stores).
    #[arg(long)]
    pub key_file: Option<PathBuf>,
}

/// The flags of `ratchet log`.
#[derive(Debug, clap::Args)]
pub struct LogFlags {
    /// Show events after this seq.
    #[arg(long, default_value_t = 0)]
    pub from: u64,
    /// At most this many events.
    #[arg(long, default_value_t = 50)]
    pub limit: usize,
    /// The newest N events (matching the filters) instead.
    #[arg(long, conflicts_with_all = ["from", "limit"])]
    pub last: Option<usize>,
    /// Only events of this kind (score, test_run, decision, alarm, …);
    /// a kind the store has no event of and ratchet does not reserve is
    /// an error (a typo, not an empty answer).
    #[arg(long)]
    pub kind: Option<String>,
    /// Only events under this commit (a git revision or full id).
    #[arg(long)]
    pub commit: Option<String>,
    /// Only score events of this scorer.
    #[arg(long)]
    pub scorer: Option<String>,
    /// The writer key file of a keyed store (or `RATCHET_KEY_FILE`). The log
    /// lists the events as stored whether or not their MACs are checked;
    /// `verify-chain` checks them.
    #[arg(long)]
    pub key_file: Option<PathBuf>,
}

/// The flags of `ratchet status`.
#[derive(Debug, clap::Args)]
pub struct StatusFlags {
    /// Writer key file: also checks every MAC.
    #[arg(long)]
    pub key_file: Option<PathBuf>,
    /// Compare every refs/ratchet/promoted/* of this repository with
    /// the trace (default: the repository enclosing the store, if any);
    /// a ref that disagrees exits 7.
    #[arg(long)]
    pub repo: Option<PathBuf>,
}

/// The flags of `ratchet verify-chain`.
#[derive(Debug, clap::Args)]
pub struct VerifyChainFlags {
    /// A checkpoint held elsewhere: also detects truncation and rollback.
    #[arg(long)]
    pub checkpoint: Option<PathBuf>,
    /// Writer key file: also checks every event's MAC (required for a keyed store).
    #[arg(long)]
    pub key_file: Option<PathBuf>,
    /// Verify a keyed store's plain chain only, knowing its MACs go
    /// unchecked (anyone who can write the file can rebuild a plain chain).
    #[arg(long, conflicts_with = "key_file")]
    pub without_macs: bool,
    /// Also compare every refs/ratchet/promoted/* of this repository
    /// with the trace; a ref that disagrees exits 7.
    #[arg(long)]
    pub repo: Option<PathBuf>,
}

/// The flags of `ratchet merge-cells`.
#[derive(Debug, clap::Args)]
pub struct MergeCellsFlags {
    /// Cell store directories.
    #[arg(required = true)]
    pub cells: Vec<PathBuf>,
    /// Writer key of this (home) store, if keyed.
    #[arg(long)]
    pub key_file: Option<PathBuf>,
    /// Writer key of the cells, to check their MACs.
    #[arg(long)]
    pub cell_key_file: Option<PathBuf>,
}

/// The flags of `ratchet report`.
#[derive(Debug, clap::Args)]
pub struct ReportFlags {
    /// Where to write the HTML.
    #[arg(long, default_value = "report.html")]
    pub out: PathBuf,
    /// Print a Markdown summary of the latest decision instead.
    #[arg(long)]
    pub markdown: bool,
    /// With --markdown: only this class's decisions.
    #[arg(long, requires = "markdown")]
    pub class: Option<String>,
    /// With --markdown: only decisions about this candidate (a pull
    /// request's head), so that a later decision about another commit does
    /// not replace its comment.
    #[arg(long, requires = "markdown")]
    pub candidate: Option<String>,
    /// The scorer of the ladder (default: the one the latest decision
    /// judged; without a decision, the most-scored one).
    #[arg(long)]
    pub scorer: Option<String>,
    /// Writer key file (a keyed store is verified with its key).
    #[arg(long)]
    pub key_file: Option<PathBuf>,
}

/// The flags of `ratchet gate`.
#[derive(Debug, clap::Args)]
pub struct GateFlags {
    /// Commit (a git revision or full id) running now.
    #[arg(long)]
    pub baseline: String,
    /// Commit (a git revision or full id) proposed.
    #[arg(long)]
    pub candidate: String,
    /// Artifact class in the policy.
    #[arg(long)]
    pub class: String,
    /// Policy file (default: policy.toml in the store directory).
    #[arg(long)]
    pub policy: Option<PathBuf>,
    /// A checkpoint held elsewhere: the trace must still hold its events
    /// (catches truncation and rollback). The whole trace is verified regardless.
    #[arg(long)]
    pub checkpoint: Option<PathBuf>,
    /// On promote, move `refs/ratchet/promoted/<class>` in the git
    /// repository at this path to the candidate and record a promotion event.
    #[arg(long)]
    pub record_promotion: Option<PathBuf>,
    /// Writer key file (keyed stores).
    #[arg(long)]
    pub key_file: Option<PathBuf>,
    /// Decide without appending the verdict to the trace.
    #[arg(long, conflicts_with = "record_promotion")]
    pub dry_run: bool,
    /// On a keyed store, decide a class that is not pinned, from the policy
    /// file (an experiment: the verdict records `unpinned`). Without it a
    /// keyed store refuses an unpinned class.
    #[arg(long)]
    pub allow_unpinned: bool,
}

/// The flags of `ratchet calibrate`.
#[derive(Debug, clap::Args)]
pub struct CalibrateFlags {
    /// Policy file (default: policy.toml in the store directory).
    #[arg(long)]
    pub policy: Option<PathBuf>,
    /// Artifact class in the policy.
    #[arg(long)]
    pub class: String,
    /// Baseline pass rate (bernoulli and betting tests).
    #[arg(long, default_value_t = 0.5)]
    pub p0: f64,
    /// Standard deviation of a paired *difference* (candidate − baseline
    /// on one task), in the scorer's unit (gaussian tests) — not of a
    /// score: two independent scores of sd s differ with sd s·√2.
    /// `--from-store` measures it.
    #[arg(long, default_value_t = 1.0)]
    pub sigma: f64,
    /// Draw rate per task (paired tests).
    #[arg(long, default_value_t = 0.3)]
    pub draw: f64,
    /// Monte-Carlo runs per effect.
    #[arg(long, default_value_t = 2000)]
    pub runs: usize,
    /// Monte-Carlo seed.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Measure p0, σ and the draw ratio from this baseline's recorded
    /// scores (git revision or full id) instead of assuming them.
    #[arg(long, value_name = "BASELINE")]
    pub from_store: Option<String>,
    /// Writer key file (a keyed store is only read with its key).
    #[arg(long)]
    pub key_file: Option<PathBuf>,
}

/// The flags of `ratchet watch`.
#[derive(Debug, clap::Args)]
pub struct WatchFlags {
    /// Commit (a git revision or full id) of the deployed commit.
    #[arg(long)]
    pub commit: String,
    /// Scorer to follow.
    #[arg(long)]
    pub scorer: String,
    /// Trace seq of the deployment: the baseline is the commit's
    /// statistics up to here, and the scores after it are followed
    /// (default: the commit's latest promotion or checkout event).
    #[arg(long)]
    pub from: Option<u64>,
    /// The chart: `cusum` (two-sided tabular), `ewma`, `page-hinkley`,
    /// `bernoulli` (for 0/1 pass/fail scores, with an exact ARL), or
    /// `auto` (the default): bernoulli when the commit's scores so far
    /// are all 0 or 1 (and one direction is watched), else cusum.
    #[arg(long, value_enum, default_value_t = DetectorArg::Auto)]
    pub detector: DetectorArg,
    /// CUSUM reference k (σ units; k = shift/2 detects a shift of 2k fastest).
    #[arg(long, default_value_t = 0.5)]
    pub k: f64,
    /// EWMA smoothing λ.
    #[arg(long, default_value_t = 0.1)]
    pub ewma_lambda: f64,
    /// Page–Hinkley tolerance δ and threshold λ (σ units).
    #[arg(long, num_args = 2, value_names = ["DELTA", "LAMBDA"], default_values_t = [0.5, 50.0])]
    pub page_hinkley: Vec<f64>,
    /// Bernoulli chart: the change of pass rate to catch (absolute).
    #[arg(long, default_value_t = 0.1)]
    pub pass_shift: f64,
    /// CUSUM decision interval h (σ units); default: the h whose
    /// in-control ARL is --arl0 (Markov chain).
    #[arg(long)]
    pub h: Option<f64>,
    /// In-control average run length the chart is solved for (default
    /// 10,000): about one false alarm per this many in-control scores,
    /// on the sides that alarm (the harm only, unless --two-sided).
    /// Page–Hinkley has no ARL solved here and refuses it.
    #[arg(long)]
    pub arl0: Option<f64>,
    /// Alarm on improvements too (default: only the harmful direction —
    /// down for most scorers, up for cost and latency).
    #[arg(long)]
    pub two_sided: bool,
    /// Minimum baseline scores.
    #[arg(long, default_value_t = 30)]
    pub min_n: u64,
    /// Append each alarm to the trace.
    #[arg(long)]
    pub record: bool,
    /// Keep following, polling every --interval-ms.
    #[arg(long)]
    pub follow: bool,
    /// Poll interval with --follow.
    #[arg(long, default_value_t = 1000)]
    pub interval_ms: u64,
    /// Writer key file of a keyed store (or RATCHET_KEY_FILE): needed to
    /// read one at all — without it nothing in it is verified, so nothing is
    /// watched — and to --record.
    #[arg(long)]
    pub key_file: Option<PathBuf>,
    /// Producers whose scores count (repeatable): `key_holder`,
    /// `session:NAME`, `cell:STORE_ID` or `everyone` (default: the key
    /// holder's own scores only, as a class without `trust` reads).
    #[arg(long)]
    pub trust: Vec<String>,
}

/// The flags of `ratchet heal`.
#[derive(Debug, clap::Args)]
pub struct HealFlags {
    /// Only alarms on this commit (default: the latest alarm of any commit).
    #[arg(long)]
    pub commit: Option<String>,
    /// The git repository (default: the current directory).
    #[arg(long, default_value = ".")]
    pub repo: PathBuf,
    /// Minimum scores for a commit to be a candidate.
    #[arg(long, default_value_t = 30)]
    pub min_n: u64,
    /// Rank and report without touching the work tree or the trace.
    #[arg(long)]
    pub dry_run: bool,
    /// Writer key file (keyed stores).
    #[arg(long)]
    pub key_file: Option<PathBuf>,
    /// Producers whose scores count (repeatable): `key_holder`,
    /// `session:NAME`, `cell:STORE_ID` or `everyone` (default: the key
    /// holder's own scores only, as a class without `trust` reads).
    #[arg(long)]
    pub trust: Vec<String>,
}

/// The flags of `ratchet best`.
#[derive(Debug, clap::Args)]
pub struct BestFlags {
    /// The scorer.
    #[arg(long)]
    pub scorer: String,
    /// Minimum scores per commit.
    #[arg(long, default_value_t = 30)]
    pub min_n: u64,
    /// Confidence of the lower bound.
    #[arg(long, default_value_t = 0.95)]
    pub confidence: f64,
    /// Commits to leave out (e.g. the alarmed one).
    #[arg(long)]
    pub exclude: Vec<String>,
    /// Writer key file (a keyed store is only read with its key).
    #[arg(long)]
    pub key_file: Option<PathBuf>,
    /// Producers whose scores count (repeatable): `key_holder`,
    /// `session:NAME`, `cell:STORE_ID` or `everyone` (default: the key
    /// holder's own scores only, as a class without `trust` reads).
    #[arg(long)]
    pub trust: Vec<String>,
}

/// The flags of `ratchet arl`.
#[derive(Debug, clap::Args)]
pub struct ArlFlags {
    /// `cusum` or `ewma`.
    #[arg(long, value_enum, default_value_t = ArlDetector::Cusum)]
    pub detector: ArlDetector,
    /// CUSUM reference k.
    #[arg(long, default_value_t = 0.5)]
    pub k: f64,
    /// CUSUM decision interval h (solved for --target when absent).
    #[arg(long)]
    pub h: Option<f64>,
    /// EWMA smoothing λ.
    #[arg(long, default_value_t = 0.1)]
    pub lambda: f64,
    /// EWMA width L (solved for --target when absent).
    #[arg(long)]
    pub width: Option<f64>,
    /// Target in-control ARL, to solve for h or L.
    #[arg(long)]
    pub target: Option<f64>,
}

/// The flags of `ratchet verify`.
#[derive(Debug, clap::Args)]
pub struct VerifyFlags {
    /// A directory, or a git revision of the enclosing repository
    /// (default: the current directory).
    pub source: Option<String>,
    /// The commit the evidence is about, for a directory source with
    /// --class (a revision source is its own commit).
    #[arg(long)]
    pub candidate: Option<String>,
    #[command(flatten)]
    pub run: cmd::shared::sandbox::RunFlags,
}

/// The flags of `ratchet merge`.
#[derive(Debug, clap::Args)]
pub struct MergeFlags {
    /// The branches, in the order they land.
    #[arg(required = true)]
    pub branches: Vec<String>,
    /// The branch merged into.
    #[arg(long, default_value = "main")]
    pub into: String,
    /// The repository (default: the current directory).
    #[arg(long, default_value = ".")]
    pub repo: PathBuf,
    /// A command to run once after each landing (words, as --cmd).
    #[arg(long)]
    pub deploy: Option<String>,
    #[command(flatten)]
    pub run: cmd::shared::sandbox::RunFlags,
}

/// The flags of `ratchet demo`.
#[derive(Debug, clap::Args)]
pub struct DemoFlags {
    /// Make the demo's repository, store and report here (an empty or
    /// new directory; default: a new directory under the system's temp).
    #[arg(long, alias = "dir")]
    pub out: Option<PathBuf>,
    /// Seed of every random draw: the same seed gives the same run. The
    /// default shows the whole story: regressions that fire in live
    /// traffic, caught and healed (seed 7 had none).
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Proposals to judge.
    #[arg(long, default_value_t = 40)]
    pub proposals: usize,
}

/// The flags of `ratchet bench`.
#[derive(Debug, clap::Args)]
pub struct BenchFlags {
    /// The commit running now (side A; a git revision or full id).
    #[arg(long)]
    pub baseline: String,
    /// The commit proposed (side B).
    #[arg(long)]
    pub candidate: String,
    /// The build command, run once in each revision's work directory (its
    /// words, split as a shell splits them, never run by one).
    #[arg(long)]
    pub build: String,
    /// The benchmark command, run once per revision per round; it writes --out.
    /// `{undecided}` in it becomes the tool's filter for the benchmarks the
    /// gate has not decided yet, so later rounds run only those: Google
    /// Benchmark `--benchmark_filter={undecided}`, go `-bench {undecided}`,
    /// pytest `-k {undecided}`.
    #[arg(long)]
    pub cmd: String,
    /// The file the benchmark command writes, relative to the work
    /// directory (e.g. hyperfine's `--export-json out.json`).
    #[arg(long)]
    pub out: PathBuf,
    /// The tool that writes it: hyperfine, pytest-benchmark,
    /// google-benchmark, go-bench or bmf.
    #[arg(long, value_parser = parse_format)]
    pub format: ratchet_scorers::Format,
    /// Class to decide after each round (its policy's test = "benchmarks").
    #[arg(long)]
    pub class: Option<String>,
    /// Policy file (default: policy.toml in the store directory).
    #[arg(long, requires = "class")]
    pub policy: Option<PathBuf>,
    /// The most rounds.
    #[arg(long, default_value_t = 30)]
    pub rounds: u64,
    /// Stop after the round that ends past this many seconds.
    #[arg(long)]
    pub max_seconds: Option<f64>,
    /// Where the commands run.
    #[arg(long, value_enum, default_value_t = cmd::shared::sandbox::SandboxKind::Process)]
    pub sandbox: cmd::shared::sandbox::SandboxKind,
    /// Seconds a command may take before its process group is killed.
    #[arg(long, default_value_t = 600)]
    pub timeout: u64,
    /// An environment variable for the commands: `NAME` passes the
    /// caller's value through, `NAME=VALUE` sets it.
    #[arg(long = "env", value_name = "NAME[=VALUE]")]
    pub env: Vec<String>,
    /// Writer key file (keyed stores).
    #[arg(long)]
    pub key_file: Option<PathBuf>,
}

/// A runner name as `--runner` takes it: a scorer version, so printable
/// text of a reasonable length.
fn runner_name(text: &str) -> Result<String, String> {
    if text.trim().is_empty() || text.chars().any(char::is_control) || text.len() > 128 {
        return Err(format!(
            "{text:?} is not a runner name: give up to 128 printable characters (e.g. ci-linux-x64)"
        ));
    }
    Ok(text.to_string())
}
