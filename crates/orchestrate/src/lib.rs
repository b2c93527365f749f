//! `ratchet-orchestrate`: the only crate with side effects outside the
//! store — it moves git and runs processes. Healing checks out the best
//! measured commit when a monitor alarms; promotions are recorded as git
//! refs and trace events; a branch's commands run in a sandbox before it
//! lands.
//!
//! ```
//! use ratchet_orchestrate::{checks, sandbox, status};
//!
//! let dir = tempfile::tempdir()?;
//! let mut store = ratchet_trace::Store::create(dir.path().join(".ratchet"), Default::default())?;
//! // Run a command against a snapshot of files; the report is recorded as a
//! // `verification` event.
//! let files = [checks::SourceFile {
//!     path: "answer.txt".into(),
//!     bytes: b"42\n".to_vec(),
//!     mode: sandbox::FileMode::Regular,
//! }];
//! let spec = checks::CheckSpec {
//!     commands: vec![vec!["grep".into(), "-qx".into(), "42".into(), "answer.txt".into()]],
//!     ..Default::default()
//! };
//! let mut local = sandbox::ProcessSandbox::new();
//! let (report, _receipt) = checks::run_checks(&mut store, &mut local, &checks::Source::Files(&files), &spec)?;
//! assert!(report.passed);
//! // What the store now holds: one verified event, nothing deployed.
//! let held = status::status(&mut store, None)?;
//! assert!(held.verification.is_valid());
//! assert!(held.deployed.is_empty());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # The map
//!
//! Each module is one role; a word means one thing across them.
//!
//! * [`checks`](mod@checks) — [`checks::run_checks`]: a branch's (or a set of files')
//!   commands run in a [`sandbox`], what they wrote judged by the gate if
//!   asked, the report recorded as a `verification` event (the CLI's
//!   `ratchet verify`). Not the trace's chain check, which is
//!   `ratchet_trace::Store::verify` (`ratchet verify-chain`).
//! * [`merge`](mod@merge) — [`merge::merge_branch`] and [`merge::merge_branches`]:
//!   git merges made in memory, checked as a whole, landed one at a time
//!   per repository. Not the trace's cell merge, which is
//!   `ratchet_trace::Store::merge_cell` (`ratchet merge-cells`).
//! * [`bench`](mod@bench) — two revisions built side by side, their benchmarks run in
//!   paired rounds, the gate asked after each round.
//! * [`sandbox`](mod@sandbox) — where commands run: the [`sandbox::Sandbox`] trait,
//!   [`sandbox::ProcessSandbox`], [`sandbox::NamespaceSandbox`], limits and
//!   environment.
//! * [`gate`](mod@gate) — [`gate::gate`] and [`gate::gate_once`]: decide, record,
//!   and on promote move the class's promotion ref, naming the decision's
//!   own seq.
//! * [`deploy`](mod@deploy) — what is deployed according to the trace
//!   ([`deploy::deployments`]), promotions and their refs
//!   ([`deploy::record_promotion`], [`deploy::check_promotion_refs`]),
//!   safe checkouts and their crash recovery.
//! * [`heal`](mod@heal) — [`heal::start_watch`] on a deployed commit, [`heal::heal`]
//!   after an alarm (rank by a lower confidence bound, refuse a dirty work
//!   tree, check the winner out detached, record a `checkout` event),
//!   [`heal::heal_latest`], [`heal::check_recovery`].
//! * [`status`](mod@status) — [`status::status`]: what a store holds, as `ratchet
//!   status` shows it.
//! * [`git`](mod@git) — [`git::resolve_commit`] (`HEAD`, `main~2`, a short id to a
//!   full id), the repository around a directory, uncommitted paths.
//!
//! [`Error`] and [`Result`] are the crate's, at the root.
//!
//! Every name these modules hold is also at the crate root, hidden from
//! these docs: kept for callers written before the modules; new code uses
//! the modules. The old names of renamed items (`verify`, `VerifySpec`,
//! `VerificationReport`, `merge`, `merge_all`) are deprecated aliases of
//! the new ones.
#![deny(missing_docs)]

pub mod bench;
pub mod checks;
pub mod deploy;
pub mod gate;
pub mod git;
pub mod heal;
pub mod merge;
pub mod sandbox;
pub mod status;
mod sys;

// The root as it was before the modules, hidden: callers written against
// it still compile; new code names the module.
#[doc(hidden)]
pub use bench::{
    BENCH_SESSION, BenchBuild, BenchGate, BenchReport, BenchRound, BenchRun, BenchSide, BenchSpec,
    UNDECIDED, bench, bench_with, harness_filter,
};
#[doc(hidden)]
pub use checks::{
    CheckReport, CheckSpec, Evaluation, EvaluationReport, IngestedFile, Source, SourceFile,
    run_checks, snapshot_hash,
};
#[doc(hidden)]
pub use deploy::{
    CheckoutRecord, DeployedBy, Deployment, KIND_CHECKOUT, KIND_PROMOTION, PROMOTION_REF_PREFIX,
    Promoted, Promotion, PromotionRecord, RefFault, check_out_detached, check_promotion_refs,
    checkout_refusal, deployed, deployments, promotions_in, record_promotion, recover_checkout,
    store_paths_in, sync_promotion_ref,
};
#[doc(hidden)]
pub use gate::{GateOptions, GateRequest, GateRun, gate, gate_once};
#[doc(hidden)]
pub use git::{dirty_paths, repository_of, resolve_commit};
#[doc(hidden)]
pub use heal::{
    HealOptions, HealReport, Recovery, WatchPlan, check_recovery, heal, heal_latest, start_watch,
};
#[doc(hidden)]
pub use merge::{
    ConflictFile, ConflictReport, MERGE_ATTEMPTS, MergeLock, MergeOutcome, MergeRequest,
    merge_branch, merge_branches,
};
#[doc(hidden)]
pub use sandbox::{
    CommandReport, EnvPolicy, Exit, FileMode, Limits, NamespaceSandbox, ProcessSandbox, Sandbox,
};
#[doc(hidden)]
#[allow(deprecated)]
pub use status::status_warm;
#[doc(hidden)]
pub use status::{
    DecisionSummary, FAILING_RUNS_SHOWN, FailingRun, OutcomeSummary, PinSummary, Status,
    VerdictWord, status, status_in,
};

/// Renamed to [`checks::CheckSpec`]: what `verify` ran was a branch's
/// checks, not the chain check `ratchet_trace::Store::verify`.
#[doc(hidden)]
#[deprecated(note = "renamed to `ratchet_orchestrate::checks::CheckSpec`")]
pub type VerifySpec = checks::CheckSpec;

/// Renamed to [`checks::CheckReport`].
#[doc(hidden)]
#[deprecated(note = "renamed to `ratchet_orchestrate::checks::CheckReport`")]
pub type VerificationReport = checks::CheckReport;

/// Renamed to [`checks::run_checks`]: it runs a branch's commands in a
/// sandbox, it does not check the trace's chain (`Store::verify`).
///
/// # Errors
/// As [`checks::run_checks`].
#[doc(hidden)]
#[deprecated(note = "renamed to `ratchet_orchestrate::checks::run_checks`")]
pub fn verify(
    store: &mut ratchet_trace::Store,
    sandbox: &mut dyn Sandbox,
    source: &Source<'_>,
    spec: &CheckSpec,
) -> Result<(CheckReport, ratchet_trace::Receipt)> {
    checks::run_checks(store, sandbox, source, spec)
}

/// Renamed to [`merge::merge_branch`]: a git merge of a branch, not the
/// trace's cell merge (`Store::merge_cell`).
///
/// # Errors
/// As [`merge::merge_branch`].
#[doc(hidden)]
#[deprecated(note = "renamed to `ratchet_orchestrate::merge::merge_branch`")]
pub fn merge(
    repo_path: &Path,
    store: &mut ratchet_trace::Store,
    sandbox: &mut dyn Sandbox,
    branch: &str,
    request: &MergeRequest,
) -> Result<MergeOutcome> {
    merge::merge_branch(repo_path, store, sandbox, branch, request)
}

/// Renamed to [`merge::merge_branches`].
///
/// # Errors
/// As [`merge::merge_branches`].
#[doc(hidden)]
#[deprecated(note = "renamed to `ratchet_orchestrate::merge::merge_branches`")]
pub fn merge_all(
    repo_path: &Path,
    store: &mut ratchet_trace::Store,
    sandbox: &mut dyn Sandbox,
    branches: &[String],
    request: &MergeRequest,
) -> Result<Vec<MergeOutcome>> {
    merge::merge_branches(repo_path, store, sandbox, branches, request)
}

use std::path::Path;

use ratchet_trace::CommitId;

/// `Result` with this crate's [`Error`] as the default error.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong when ratchet moves git.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The work tree has uncommitted changes; nothing was checked out.
    #[error("the work tree has uncommitted changes, refusing to check out over them: {}", paths.join(", "))]
    DirtyWorkTree {
        /// The changed or untracked paths.
        paths: Vec<String>,
    },
    /// No commit qualifies (too few scores, all excluded, or none left in the repository).
    #[error("no commit to heal to: {reason}")]
    NoCandidate {
        /// Why.
        reason: String,
    },
    /// A revision does not name a commit.
    #[error("commit {rev:?}: {reason}")]
    UnknownCommit {
        /// The revision as given.
        rev: String,
        /// Why it does not resolve.
        reason: String,
    },
    /// The trace failed verification before the class's policy could be
    /// read from it (a pin cannot be read from an altered trace): nothing
    /// was decided.
    #[error(
        "cannot decide: the trace failed verification ({fault}); nothing of an altered trace is read, pins included. Find the fault with `ratchet verify-chain`, restore the store from a good copy"
    )]
    UnverifiedTrace {
        /// The first fault verification found.
        fault: ratchet_trace::Fault,
    },
    /// Baseline and candidate are the same commit: there is nothing to compare.
    #[error("baseline and candidate are the same commit ({commit}): nothing to compare")]
    SameCommit {
        /// The commit.
        commit: CommitId,
    },
    /// A watch was asked to start at the commit's deployment, but the trace
    /// records none (no promotion or checkout of it).
    #[error(
        "the trace holds no promotion or checkout of {commit}: where its deployment began is unknown"
    )]
    NoDeployment {
        /// The commit.
        commit: CommitId,
    },
    /// The branch to merge into is checked out in another work tree: moving
    /// it would leave that work tree showing the merge reverted.
    #[error("{branch} is checked out in the work tree {}: merge from there, or check another branch out there", path.display())]
    CheckedOutElsewhere {
        /// The branch.
        branch: String,
        /// The other work tree.
        path: std::path::PathBuf,
    },
    /// A commit may not be checked out: it tracks paths inside the store
    /// directory, or checking it out would overwrite files it did not write.
    #[error("refusing to check out {commit}: {reason}")]
    UnsafeCheckout {
        /// The commit.
        commit: CommitId,
        /// Why.
        reason: String,
    },
    /// An earlier merge died mid-landing and the branch moved since: the
    /// work tree is left for a person to put right.
    #[error("{reason}")]
    InterruptedMerge {
        /// What was found, and what to do.
        reason: String,
    },
    /// A heal was asked for, but this store's monitor recorded no alarm.
    #[error("no recorded alarm to heal from (a monitor records alarms as it follows the trace)")]
    NoAlarm,
    /// A path for a sandbox is absolute or leaves the work directory.
    #[error("path {}: {reason}", path.display())]
    InvalidPath {
        /// The path as given.
        path: std::path::PathBuf,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// The sandbox itself failed (not a command in it: a failing command is a report).
    #[error("sandbox: {what}: {source}")]
    Sandbox {
        /// What it was doing.
        what: String,
        /// The operating system's error.
        source: std::io::Error,
    },
    /// A sandbox backend cannot run on this machine.
    #[error("the {backend} sandbox is unavailable: {reason}")]
    SandboxUnavailable {
        /// The backend.
        backend: &'static str,
        /// Why, and what to install.
        reason: String,
    },
    /// `bench` was given a format that is not a benchmark tool's single
    /// output file.
    #[error(
        "{format} is not a format bench reads: give hyperfine, pytest-benchmark, google-benchmark, go-bench or bmf"
    )]
    NotABenchmarkFormat {
        /// The format given.
        format: ratchet_scorers::Format,
    },
    /// `bench`'s command holds `{undecided}` for a tool that cannot run
    /// some of its benchmarks only.
    #[error(
        "{format} cannot run only some of its benchmarks: remove {{undecided}} from --cmd (every round runs all of them)"
    )]
    CannotFilter {
        /// The format given.
        format: ratchet_scorers::Format,
    },
    /// A verification was asked for with no command to run.
    #[error("no command to run: a verification needs at least one")]
    NoCommands,
    /// A command is an empty argv list (or starts with an empty program name).
    #[error("a command is empty: each command is a program and its arguments")]
    EmptyCommand,
    /// An evaluation of files that are not a git revision does not say which
    /// commit the evidence is about.
    #[error("the evaluation names no candidate commit, and the source is not a git revision")]
    MissingCandidate,
    /// A file or directory could not be read or written.
    #[error("{}: {source}", path.display())]
    Io {
        /// The path.
        path: std::path::PathBuf,
        /// The operating system's error.
        source: std::io::Error,
    },
    /// The gate failed (not a verdict: a verdict is never an error).
    #[error(transparent)]
    Gate(#[from] ratchet_gate::Error),
    /// A scorer's direction could not be read.
    #[error(transparent)]
    Scorers(#[from] ratchet_scorers::Error),
    /// A git operation failed.
    #[error(transparent)]
    Git(#[from] git2::Error),
    /// The trace store failed.
    #[error(transparent)]
    Trace(#[from] ratchet_trace::Error),
    /// Ranking or monitoring failed.
    #[error(transparent)]
    Drift(#[from] ratchet_drift::Error),
}

impl Error {
    /// The trace store's error this one is, if it is one: a transparent
    /// wrapper forwards its `source()` past the wrapped error, so the
    /// chain alone does not show it.
    pub fn trace_error(&self) -> Option<&ratchet_trace::Error> {
        match self {
            Error::Trace(e) => Some(e),
            Error::Gate(e) => e.trace_error(),
            Error::Scorers(e) => e.trace_error(),
            Error::Drift(e) => e.trace_error(),
            _ => None,
        }
    }
}

/// `Error::Io` for `path`, as a `map_err` argument.
pub(crate) fn io_err(path: &Path) -> impl FnOnce(std::io::Error) -> Error + '_ {
    move |source| Error::Io {
        path: path.to_path_buf(),
        source,
    }
}
