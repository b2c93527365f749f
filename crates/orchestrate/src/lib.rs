//! `ratchet-orchestrate`: the only crate with side effects outside the
//! store — it moves git. Healing checks out the best measured commit when a
//! monitor alarms; promotions are recorded as git refs and trace events.
//!
//! # Brief overview
//!
//! * [`heal`] — rank commits by a lower confidence bound ([`ratchet_drift::best_commit`]),
//!   skip those the repository no longer has, refuse to touch a work tree
//!   with uncommitted changes (listing them), check the winner out (detached
//!   HEAD, safe mode) and record a `checkout` event; returns a
//!   [`HealReport`] and a [`ratchet_drift::Monitor`] restarted on
//!   the new commit's baseline.
//! * [`check_recovery`] — after a heal, whether the new commit's live scores
//!   stayed in control.
//! * [`record_promotion`] — `refs/ratchet/promoted/<class>` and a
//!   `promotion` event.
//! * [`gate`] — the gate as a command runs it: decide, record, and on
//!   promote move the ref naming the decision's own seq; [`heal_latest`] —
//!   heal after the latest recorded alarm.
//! * [`resolve_commit`] — what a person types for a commit (`HEAD`,
//!   `main~2`, a short id) to a full id.
//!
//! ```no_run
//! use ratchet_orchestrate::{HealOptions, heal};
//! # fn demo(store: ratchet_trace::Store, alarm: &ratchet_drift::TraceAlarm) -> Result<(), Box<dyn std::error::Error>> {
//! // Verified once; heal refreshes the view and reads nothing else.
//! let mut ledger = ratchet_trace::Ledger::new(store, Default::default())?;
//! let (report, _monitor) = heal(std::path::Path::new("."), &mut ledger, alarm, &HealOptions::default())?;
//! println!("checked out {:?}", report.chosen);
//! # Ok(()) }
//! ```
#![deny(missing_docs)]

mod bench;
mod deploy;
mod merge;
mod sandbox;
mod sys;
mod verify;

pub use bench::{
    BENCH_SESSION, BenchBuild, BenchGate, BenchReport, BenchRound, BenchRun, BenchSide, BenchSpec,
    UNDECIDED, bench, bench_with, harness_filter,
};
pub use deploy::{
    CheckoutRecord, PROMOTION_REF_PREFIX, Promoted, Promotion, PromotionRecord, RefFault,
    check_out_detached, check_promotion_refs, checkout_refusal, promotions_in, record_promotion,
    recover_checkout, store_paths_in, sync_promotion_ref,
};
pub use merge::{
    ConflictFile, ConflictReport, MERGE_ATTEMPTS, MergeLock, MergeOutcome, MergeRequest, merge,
    merge_all,
};
/// What runs for each class — the latest promotion, or the heal that moved
/// away from it — is one reading of the trace, shared with the report and
/// drift: `ratchet-records` owns it.
pub use ratchet_records::{DeployedBy, Deployment, deployed, deployments};
pub use sandbox::{
    CommandReport, EnvPolicy, Exit, FileMode, Limits, NamespaceSandbox, ProcessSandbox, Sandbox,
};
pub use verify::{
    Evaluation, EvaluationReport, IngestedFile, Source, SourceFile, VerificationReport, VerifySpec,
    snapshot_hash, verify,
};

use std::path::Path;

use git2::{Oid, Repository, StatusOptions};
use serde::Serialize;

use ratchet_drift::{Chart, Monitor, RankedCommit, Ranking, TraceAlarm, Watch, best_commit};
use ratchet_gate::{Outcome, Question, Verdict};
use ratchet_trace::{CommitId, EventDraft, Ledger, Receipt, Store, Verified};

/// Event kind recorded when a heal checks a commit out.
pub const KIND_CHECKOUT: &str = ratchet_trace::ReservedKind::Checkout.as_str();
/// Event kind recorded for a promotion.
pub const KIND_PROMOTION: &str = ratchet_trace::ReservedKind::Promotion.as_str();

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

/// How to heal.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HealOptions {
    /// Minimum scores for a commit to be a candidate.
    pub min_n: u64,
    /// Confidence of the lower bound used for ranking.
    pub confidence: f64,
    /// Rank and report, but do not touch the work tree or the trace.
    pub dry_run: bool,
    /// CUSUM reference k for the restarted monitor.
    pub k: f64,
    /// CUSUM interval h for the restarted monitor.
    pub h: f64,
    /// The scorer improves downwards (cost, latency): harm is an increase,
    /// and commits are ranked by their upper confidence bound.
    pub lower_is_better: bool,
    /// Whose scores rank the commits and estimate the deployed one
    /// (default: the key holder's): no other producer picks what heal
    /// checks out.
    #[serde(skip)]
    pub trust: ratchet_trace::Sources,
}

impl Default for HealOptions {
    fn default() -> Self {
        HealOptions {
            min_n: 30,
            confidence: 0.95,
            dry_run: false,
            k: 0.5,
            h: 5.0,
            lower_is_better: false,
            trust: ratchet_trace::Sources::key_holder(),
        }
    }
}

/// What a heal did.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HealReport {
    /// The alarmed commit.
    pub alarmed: CommitId,
    /// The ranking considered (alarmed commit excluded).
    pub ranking: Vec<RankedCommit>,
    /// Commits passed over because the repository no longer has them.
    pub skipped: Vec<(CommitId, String)>,
    /// The commit healed to.
    pub chosen: Option<CommitId>,
    /// Whether the work tree was changed.
    pub checked_out: bool,
    /// Seq of the `checkout` event, if recorded.
    pub checkout_seq: Option<u64>,
    /// The alarmed commit's mean since the change the alarm dated: the
    /// estimate a target must beat.
    pub deployed_estimate: Option<f64>,
    /// Why the heal stayed on the deployed commit, when it did: the alarm
    /// was not harmful, or no measured commit is surely better, or an
    /// earlier heal already acted on the alarm.
    pub stayed: Option<String>,
    /// The deployed commit the heal stayed on, when it stayed: the alarmed
    /// commit, or the commit an earlier heal of the same alarm checked out.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub staying_on: Option<CommitId>,
    /// The commit the work tree had checked out (HEAD) when the heal ran —
    /// what a checkout leaves, which need not be the alarmed commit (the
    /// tree may be on another branch); `None`: an unborn HEAD.
    pub head: Option<String>,
    /// Seq of the `checkout` event with which this run first completed an
    /// earlier heal's interrupted checkout (the work tree moved then).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub completed: Option<u64>,
}

/// Resolves what a person types for a commit — `HEAD`, `main~2`, a short
/// or full id — to a full commit id, in the git repository enclosing
/// `dir`. Outside a repository only a full id is accepted (nothing can
/// resolve the rest). Inside one, a full id the repository does not have is
/// an error unless `allow_unknown` (scores of a commit measured elsewhere).
///
/// # Errors
/// [`Error::UnknownCommit`] naming the revision and why.
pub fn resolve_commit(dir: &Path, rev: &str, allow_unknown: bool) -> Result<CommitId> {
    let full = CommitId::parse(rev).ok();
    let repo = match Repository::discover(dir) {
        Ok(r) => r,
        Err(_) => {
            return full.ok_or_else(|| Error::UnknownCommit {
                rev: rev.to_string(),
                reason: "not a full commit id, and there is no git repository here to resolve it"
                    .into(),
            });
        }
    };
    let found = repo
        .revparse_single(rev)
        .and_then(|o| o.peel_to_commit())
        .map(|c| c.id().to_string());
    match (found, full) {
        (Ok(id), _) => CommitId::parse(&id).map_err(|e| Error::UnknownCommit {
            rev: rev.to_string(),
            reason: e.to_string(),
        }),
        (Err(_), Some(id)) if allow_unknown => Ok(id),
        (Err(e), Some(_)) => Err(Error::UnknownCommit {
            rev: rev.to_string(),
            reason: format!(
                "the repository has no such commit ({}); pass --allow-unknown-commit for a commit measured elsewhere",
                e.message()
            ),
        }),
        (Err(e), None) => Err(Error::UnknownCommit {
            rev: rev.to_string(),
            reason: e.message().to_string(),
        }),
    }
}

/// The work tree of the git repository enclosing `dir` (or its parent, when
/// `dir` does not exist yet), if there is one.
pub fn repository_of(dir: &Path) -> Option<std::path::PathBuf> {
    let start = if dir.exists() { dir } else { dir.parent()? };
    Repository::discover(start)
        .ok()?
        .workdir()
        .map(Path::to_path_buf)
}

/// Refuses a work tree with uncommitted changes ([`dirty_paths`]): nothing
/// ratchet moves may overwrite them.
///
/// # Errors
/// [`Error::DirtyWorkTree`] listing the paths; [`Error::Git`] if the
/// status cannot be read.
pub(crate) fn refuse_dirty(repo: &Repository) -> Result<()> {
    let paths = dirty_paths(repo)?;
    if paths.is_empty() {
        Ok(())
    } else {
        Err(Error::DirtyWorkTree { paths })
    }
}

/// Paths with uncommitted changes (untracked included, ignored excluded).
///
/// # Errors
/// [`Error::Git`] if the status cannot be read.
pub fn dirty_paths(repo: &Repository) -> Result<Vec<String>> {
    let mut opts = StatusOptions::new();
    opts.include_untracked(true)
        .include_ignored(false)
        .recurse_untracked_dirs(true);
    let statuses = repo.statuses(Some(&mut opts))?;
    Ok(statuses
        .iter()
        .filter(|s| !s.status().is_ignored())
        .map(|s| s.path().unwrap_or("<non-UTF-8 path>").to_string())
        .collect())
}

/// The candidates the gate rejected on measured evidence (a failing
/// required suite, a broken invariant, worse scores, a guardrail) in some
/// class and that class has not *deployed* since, each with the words a
/// heal report gives for skipping it. Only a recorded promotion of the
/// commit in the class that rejected it (`gate --record-promotion`, the key
/// holder's act) lifts a reject: a decision in another class, a reject for
/// missing evidence, a truncation, a "continue" — or a promote decision
/// alone, which a `decide` token can obtain against a baseline of its
/// choosing — is no finding that the commit got better.
fn gate_rejected(view: &Verified) -> Result<std::collections::BTreeMap<CommitId, String>> {
    // Per (candidate, class): the seq of a measured reject not lifted since.
    let mut open: std::collections::BTreeMap<(CommitId, String), u64> =
        std::collections::BTreeMap::new();
    let decisions = view
        .own_control_events::<DecisionSummary>(ratchet_trace::ReservedKind::Decision, u64::MAX)?;
    let promotions = view.own_control_events::<deploy::PromotionRecord>(
        ratchet_trace::ReservedKind::Promotion,
        u64::MAX,
    )?;
    // (seq, (candidate, class), true for a measured reject / false for a
    // promotion that deploys it), in trace order.
    let mut moves: Vec<(u64, (CommitId, String), bool)> = Vec::new();
    for (e, d) in decisions {
        if d.outcome.status() == Some(ratchet_gate::GateStatus::Reject) {
            moves.push((e.seq, (d.candidate.clone(), d.class.clone()), true));
        }
    }
    for (e, p) in promotions {
        if let Some(c) = &e.commit {
            moves.push((e.seq, (c.clone(), p.class.clone()), false));
        }
    }
    moves.sort_by_key(|m| m.0);
    for (seq, key, rejected) in moves {
        if rejected {
            open.entry(key).or_insert(seq);
        } else {
            open.remove(&key);
        }
    }
    let mut out = std::collections::BTreeMap::new();
    for ((commit, class), seq) in open {
        out.entry(commit).or_insert_with(|| {
            format!("the gate rejected it (class {class}, decision at seq {seq})")
        });
    }
    Ok(out)
}

/// `Error::Io` for `path`, as a `map_err` argument.
pub(crate) fn io_err(path: &Path) -> impl FnOnce(std::io::Error) -> Error + '_ {
    move |source| Error::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// Heals after `alarm`: checks out the best measured commit other than the
/// alarmed one in the repository at `repo_path`, records a `checkout` event,
/// and returns the report with a monitor restarted on the new commit.
///
/// # Errors
/// [`Error::Trace`] if the trace does not verify (or is keyed and the store
/// was opened without its key), before anything changes;
/// [`Error::DirtyWorkTree`] listing the paths, before anything changes;
/// [`Error::NoCandidate`] when no commit qualifies; [`Error::Git`],
/// [`Error::Trace`] or [`Error::Drift`] for failures underneath.
pub fn heal(
    repo_path: &Path,
    ledger: &mut Ledger,
    alarm: &TraceAlarm,
    options: &HealOptions,
) -> Result<(HealReport, Option<Monitor>)> {
    // Nothing moves on a trace that does not verify: the ranking and the
    // deployed commit's estimate are read from the owner's verified view,
    // refreshed first.
    ledger.refresh()?;
    let HealInputs {
        ranking,
        deployed,
        rejected,
    } = heal_inputs(ledger.view(), alarm, options)?;
    let repo = Repository::discover(repo_path)?;
    let store_dir = ledger.store().dir().to_path_buf();
    let (chosen, skipped) = choose_target(&repo, &ranking, &rejected, &store_dir)?;
    let mut report = HealReport {
        alarmed: alarm.commit.clone(),
        ranking,
        skipped,
        chosen: chosen.clone(),
        checked_out: false,
        checkout_seq: None,
        deployed_estimate: deployed,
        stayed: None,
        staying_on: None,
        head: deploy::leaving(&repo).map(|o| o.to_string()),
        completed: None,
    };
    if let Some(why) = stay_reason(&report, alarm, options) {
        report.chosen = None;
        report.stayed = Some(why);
        report.staying_on = Some(alarm.commit.clone());
        return Ok((report, None));
    }
    let Some(target) = chosen else {
        return Err(Error::NoCandidate {
            reason: format!(
                "{} ranked commit(s) with at least {} {} scores, none safe to check out{}",
                report.ranking.len(),
                options.min_n,
                alarm.scorer,
                report
                    .skipped
                    .iter()
                    .map(|(c, why)| format!("; {c}: {why}"))
                    .collect::<String>()
            ),
        });
    };
    if options.dry_run {
        return Ok((report, None));
    }
    let seq = record_and_check_out(&repo, ledger, alarm, &target, &report.skipped)?;
    report.checked_out = true;
    report.checkout_seq = Some(seq);
    tracing::info!(from = %alarm.commit, to = %target, "healed by checkout");
    // The restarted monitor's baseline is read from the verified view too,
    // from the producers the heal trusts, and it reads only theirs.
    let monitor = Monitor::start(
        &ledger.view().restricted_to(&options.trust),
        &target,
        &alarm.scorer,
        seq,
        options.k,
        options.h,
        options.min_n,
    )?
    .watching(Watch::harm(options.lower_is_better))?
    .reading(options.trust.clone());
    Ok((report, Some(monitor)))
}

/// What a heal weighs, read from the verified view: the trusted producers'
/// ranking of every other commit, the alarmed commit's mean since the
/// change (the estimate a target must beat), and the commits the gate
/// rejected on measured evidence (never healed to).
fn heal_inputs(all: &Verified, alarm: &TraceAlarm, options: &HealOptions) -> Result<HealInputs> {
    let view = &all.restricted_to(&options.trust);
    let ranking = best_commit(
        view,
        &Ranking {
            scorer: &alarm.scorer,
            version: alarm.scorer_version.as_deref(),
            min_n: options.min_n,
            confidence: options.confidence,
            exclude: std::slice::from_ref(&alarm.commit),
            lower_is_better: options.lower_is_better,
        },
    )?;
    let scorer = match &alarm.scorer_version {
        Some(v) => ratchet_trace::ScorerRef::at_version(&alarm.scorer, v),
        None => alarm.scorer.as_str().into(),
    };
    let since = view.score_stream(
        &alarm.commit,
        scorer,
        alarm.change_seq.saturating_sub(1),
        usize::MAX,
    );
    let deployed =
        (!since.is_empty()).then(|| since.iter().map(|(_, v)| v).sum::<f64>() / since.len() as f64);
    Ok(HealInputs {
        ranking,
        deployed,
        rejected: gate_rejected(all)?,
    })
}

/// What [`heal_inputs`] reads.
struct HealInputs {
    ranking: Vec<RankedCommit>,
    /// The alarmed commit's mean since the change.
    deployed: Option<f64>,
    /// Commits never healed to, with why.
    rejected: std::collections::BTreeMap<CommitId, String>,
}

/// Commits passed over, each with why.
type Passed = Vec<(CommitId, String)>;

/// The best-ranked commit heal may check out, and every better one passed
/// over with why: gone from the repository, rejected by the gate on
/// measured evidence, or unsafe to check out (paths in the store, files it
/// would overwrite).
fn choose_target(
    repo: &Repository,
    ranking: &[RankedCommit],
    rejected: &std::collections::BTreeMap<CommitId, String>,
    store_dir: &Path,
) -> Result<(Option<CommitId>, Passed)> {
    let mut skipped = Vec::new();
    for r in ranking {
        let present = Oid::from_str(r.commit.as_str())
            .ok()
            .and_then(|oid| repo.find_commit(oid).ok());
        if present.is_none() {
            skipped.push((
                r.commit.clone(),
                "no longer exists in the repository".to_string(),
            ));
            continue;
        }
        // The best measured commit is not always one the gate let through:
        // a candidate it rejected on measured evidence (a failing required
        // suite, a broken invariant, worse scores) is never healed to.
        if let Some(why) = rejected.get(&r.commit) {
            skipped.push((r.commit.clone(), why.clone()));
            continue;
        }
        // A commit that would write into the store, or over files it did
        // not write, is never checked out: the next best safe one is.
        match deploy::checkout_refusal(repo, &r.commit, store_dir)? {
            Some(why) => skipped.push((r.commit.clone(), why)),
            None => return Ok((Some(r.commit.clone()), skipped)),
        }
    }
    Ok((None, skipped))
}

/// Why the heal stays on the deployed commit, if it does: heal only on
/// harm, and only towards a commit surely better than what runs now (its
/// pessimistic bound must beat the deployed commit's estimate since the
/// change).
fn stay_reason(report: &HealReport, alarm: &TraceAlarm, options: &HealOptions) -> Option<String> {
    if !Watch::harm(options.lower_is_better).reports(alarm.alarm.shift) {
        return Some(format!(
            "the alarm is a {:?} shift of {}, an improvement for this scorer: nothing to heal",
            alarm.alarm.shift, alarm.scorer
        ));
    }
    let best = report
        .chosen
        .as_ref()
        .and_then(|c| report.ranking.iter().find(|r| &r.commit == c))?;
    let now = report.deployed_estimate?;
    let beats = if options.lower_is_better {
        best.lower_bound < now
    } else {
        best.lower_bound > now
    };
    (!beats).then(|| {
        format!(
            "the best measured commit {} has a confidence bound of {:.4}, which does not beat the deployed commit's {:.4} since the change",
            best.commit, best.lower_bound, now
        )
    })
}

/// Recorded first, checked out second: a crash between the two leaves the
/// trace ahead of the work tree, and the next heal completes it
/// (`recover_checkout`, told by the synced marker). Returns the `checkout`
/// event's seq.
fn record_and_check_out(
    repo: &Repository,
    ledger: &mut Ledger,
    alarm: &TraceAlarm,
    target: &CommitId,
    skipped: &[(CommitId, String)],
) -> Result<u64> {
    refuse_dirty(repo)?;
    let store_dir = ledger.store().dir().to_path_buf();
    let head_was = deploy::leaving(repo).map(|o| o.to_string());
    let marker = deploy::pending_checkout_path(repo);
    deploy::write_synced_json(
        &marker,
        &deploy::PendingCheckout::new(
            ledger.store(),
            ledger.view().head().size,
            head_was.clone(),
            target.clone(),
        ),
    )?;
    let receipt = ledger.append(
        EventDraft::reserved(
            ratchet_trace::ReservedKind::Checkout,
            &CheckoutRecord {
                from: alarm.commit.clone(),
                to: target.clone(),
                alarm_seq: Some(alarm.seq),
                scorer: Some(alarm.scorer.clone()),
                reason: "monitor alarm: best measured commit by lower confidence bound".into(),
                skipped: skipped.to_vec(),
                head_was,
                completes: None,
            },
        )?
        .commit(target.clone())
        .session("heal"),
    )?;
    deploy::crash_point("heal:recorded");
    deploy::check_out_detached(repo, target, &store_dir)?;
    std::fs::remove_file(&marker).map_err(io_err(&marker))?;
    deploy::crash_point("heal:checked-out");
    Ok(receipt.seq)
}

/// Whether the commit healed to stayed in control after the heal.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Recovery {
    /// Live scores seen since the heal.
    pub n: u64,
    /// Their mean (`None` before the first).
    pub mean: Option<f64>,
    /// Alarms raised on the new commit since the heal.
    pub alarms: usize,
    /// True once at least `min_n` live scores arrived without an alarm.
    pub recovered: bool,
}

/// Polls the restarted monitor and says whether scores recovered, reading
/// inside a read transaction that verified the trace first.
///
/// # Errors
/// [`Error::Trace`] if the trace does not verify (or is keyed and was opened
/// without its key); [`Error::Drift`] or [`Error::Trace`] if the store
/// cannot be read.
pub fn check_recovery(
    ledger: &mut Ledger,
    monitor: &mut Monitor,
    since_seq: u64,
    min_n: u64,
) -> Result<Recovery> {
    ledger.refresh()?;
    let view = ledger.view();
    let alarms = monitor.poll(view)?;
    let (commit, scorer) = monitor.stream();
    // The live scores of the producers the monitor reads.
    let live = view.score_stream_from(
        commit,
        ratchet_trace::ScorerRef::at_version(scorer, monitor.scorer_version()),
        since_seq,
        usize::MAX,
        monitor.sources(),
    );
    let n = live.len() as u64;
    let mean = (n > 0).then(|| live.iter().map(|(_, v)| v).sum::<f64>() / n as f64);
    Ok(Recovery {
        n,
        mean,
        alarms: alarms.len(),
        recovered: alarms.is_empty() && n >= min_n,
    })
}

/// How [`gate`] runs.
#[derive(Debug, Clone, Copy, Default)]
pub struct GateOptions<'a> {
    /// Decide without appending the verdict (nor promoting).
    pub dry_run: bool,
    /// On promote, record the promotion in the git repository here.
    pub promote_in: Option<&'a Path>,
}

/// What [`gate`] did.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GateRun {
    /// The verdict.
    pub verdict: Verdict,
    /// The `decision` event appended (`None` on a dry run, or when the
    /// trace failed verification and nothing was written).
    pub decision: Option<Receipt>,
    /// The promotion, when the verdict promoted and a repository was given.
    pub promotion: Option<Promotion>,
}

/// The gate as a command runs it: refuses to compare a commit with itself,
/// decides (at the head, appending the verdict unless `dry_run`), and on
/// promote records the promotion naming the decision's own seq (taken from
/// its receipt, so another writer appending meanwhile cannot be named).
/// With a repository, any recorded decision also brings the class's
/// promotion ref back to what the trace says ([`sync_promotion_ref`]).
///
/// # Errors
/// [`Error::SameCommit`] if baseline and candidate are one commit;
/// [`Error::Gate`] if the gate fails (a policy contradicting the trace, a
/// store that cannot be read); [`Error::Git`] / [`Error::Trace`] if the
/// promotion cannot be recorded (the decision stays recorded).
pub fn gate(ledger: &mut Ledger, q: &Question<'_>, options: &GateOptions<'_>) -> Result<GateRun> {
    if q.baseline == q.candidate {
        return Err(Error::SameCommit {
            commit: q.baseline.clone(),
        });
    }
    let (verdict, decision) = if options.dry_run {
        (ratchet_gate::verdict_in(ledger, q)?, None)
    } else {
        ratchet_gate::decide_in(ledger, q)?
    };
    deploy::crash_point("gate:decided");
    // After a recorded decision the class's ref agrees with the trace again
    // (a crash between an earlier promotion's event and its ref, or a
    // foreign move): `record_promotion` brings it back first, and so does
    // any other outcome. A dry run, or a trace that failed verification,
    // writes nothing.
    let promotion = match (&verdict.outcome, options.promote_in, &decision) {
        (Outcome::Promote, Some(repo), Some(receipt)) => Some(record_promotion(
            repo,
            ledger,
            q.candidate,
            q.class,
            Some(receipt.seq),
        )?),
        (_, Some(repo), Some(_)) => {
            sync_promotion_ref(repo, ledger, q.class)?;
            None
        }
        _ => None,
    };
    Ok(GateRun {
        verdict,
        decision,
        promotion,
    })
}

/// What a one-shot [`gate_once`] decides: the class, its policy file (a
/// pinned class needs none, and a file that differs from the pin is
/// refused), the two commits and a checkpoint held elsewhere.
#[derive(Debug, Clone, Copy)]
pub struct GateRequest<'a> {
    /// The class.
    pub class: &'a str,
    /// The policy file given, if any.
    pub policy_file: Option<&'a ratchet_gate::Policy>,
    /// The commit running now.
    pub baseline: &'a CommitId,
    /// The commit proposed.
    pub candidate: &'a CommitId,
    /// A checkpoint held where the store's writers cannot reach.
    pub checkpoint: Option<&'a ratchet_trace::Checkpoint>,
    /// Decide an unpinned class of a keyed store from the file
    /// ([`Question::allow_unpinned`]).
    pub allow_unpinned: bool,
}

/// [`gate`] for a one-shot command: one verification of `store` folds the
/// view that both the policy resolution (the pin in force) and the
/// decision read; a trace that does not verify gets its unverified
/// verdict, recorded nowhere.
///
/// # Errors
/// As [`gate`]; [`Error::Gate`] if the class's policy cannot be resolved
/// ([`ratchet_gate::resolve_policy`]).
pub fn gate_once(
    mut store: Store,
    request: &GateRequest<'_>,
    options: &GateOptions<'_>,
) -> Result<(GateRun, ratchet_gate::PolicySource)> {
    let mut verify = ratchet_trace::VerifyOptions::default();
    if let Some(cp) = request.checkpoint {
        verify = verify.checkpoint(cp.clone());
    }
    let (report, view) = store.verify_and_fold(&verify)?;
    // A trace that does not verify is said to be so before anything is
    // read from it: the pin a policy is checked against is part of it.
    let (policy, source) =
        match ratchet_gate::resolve_policy(view.as_ref(), request.class, request.policy_file) {
            Ok(resolved) => resolved,
            Err(e) => match (view.is_none(), report.fault) {
                (true, Some(fault)) => return Err(Error::UnverifiedTrace { fault }),
                _ => return Err(e.into()),
            },
        };
    let q = Question {
        class: request.class,
        policy: &policy,
        baseline: request.baseline,
        candidate: request.candidate,
        checkpoint: request.checkpoint,
        allow_unpinned: request.allow_unpinned,
    };
    let run = match view {
        Some(view) => {
            let mut ledger = Ledger::with_view(store, view, verify)?;
            gate(&mut ledger, &q, options)?
        }
        None => {
            if q.baseline == q.candidate {
                return Err(Error::SameCommit {
                    commit: q.baseline.clone(),
                });
            }
            let head = store.head()?.size;
            GateRun {
                verdict: ratchet_gate::verdict_at(&mut store, &q, head)?,
                decision: None,
                promotion: None,
            }
        }
    };
    Ok((run, source))
}

/// Heals after the latest alarm this store's monitor recorded (of `only`,
/// if given): finds it on a verified trace, takes the alarmed scorer's
/// direction from the trace, and runs [`heal`] with `options` (whose
/// `lower_is_better` is set from that direction).
///
/// # Errors
/// [`Error::NoAlarm`] if no alarm was recorded; as [`heal`] otherwise.
pub fn heal_latest(
    repo_path: &Path,
    ledger: &mut Ledger,
    only: Option<&CommitId>,
    options: &HealOptions,
) -> Result<(HealReport, Option<Monitor>)> {
    // A checkout the trace records but the work tree does not show (a
    // crash between the two) is completed first.
    let completed = if options.dry_run {
        None
    } else {
        recover_checkout(repo_path, ledger)?.map(|r| r.seq)
    };
    ledger.refresh()?;
    let (alarm, healed) = {
        let view = ledger.view();
        let alarm = ratchet_drift::latest_alarm(view, only)?.ok_or(Error::NoAlarm)?;
        let healed = deploy::checkouts_in(view)?
            .into_iter()
            .rfind(|(_, c)| c.alarm_seq == Some(alarm.seq));
        (alarm, healed)
    };
    if let Some((seq, c)) = healed {
        // What stays deployed is what that heal checked out (not the
        // alarmed commit it left), and "was" is the tree's own HEAD.
        let head = deploy::leaving(&Repository::discover(repo_path)?).map(|o| o.to_string());
        return Ok((
            HealReport {
                alarmed: alarm.commit.clone(),
                ranking: Vec::new(),
                skipped: Vec::new(),
                chosen: None,
                checked_out: completed.is_some(),
                checkout_seq: completed,
                deployed_estimate: None,
                staying_on: Some(c.to.clone()),
                head,
                stayed: Some(format!(
                    "nothing to heal: the alarm at seq {} was healed at seq {seq} (checked out {}){}",
                    alarm.seq,
                    c.to,
                    completed.map_or(String::new(), |s| format!(
                        "; its interrupted checkout was completed now (seq {s})"
                    ))
                )),
                completed,
            },
            None,
        ));
    }
    let direction = ratchet_scorers::direction_in(ledger.view(), &alarm.scorer)?;
    let options = HealOptions {
        lower_is_better: direction == ratchet_scorers::Direction::LowerIsBetter,
        ..options.clone()
    };
    let (mut report, monitor) = heal(repo_path, ledger, &alarm, &options)?;
    report.completed = completed;
    Ok((report, monitor))
}

/// Where and how a watch over one commit's live scores starts.
#[derive(Debug, Clone, PartialEq)]
pub struct WatchPlan {
    /// The deployed commit.
    pub commit: CommitId,
    /// The scorer whose stream is watched.
    pub scorer: String,
    /// The seq after which its live scores begin; `None`: its latest
    /// promotion or checkout in the trace.
    pub from: Option<u64>,
    /// The chart; `None`: chosen for the stream by [`Chart::for_stream`],
    /// from `auto` (pass/fail streams, other streams).
    pub chart: Option<Chart>,
    /// The charts `None` chooses between.
    pub auto: (Chart, Chart),
    /// Watch both directions, not only harm (harm follows the scorer's
    /// declared direction).
    pub two_sided: bool,
    /// Scores the in-control baseline needs before the start.
    pub min_n: u64,
    /// Whose scores the watch reads (default in the CLI: the key holder's).
    pub trust: ratchet_trace::Sources,
}

/// Starts a monitor as `ratchet watch` does: on a verified trace (one read
/// transaction), from the commit's deployment or `plan.from`, with the
/// scorer's declared direction as the harm watched.
///
/// # Errors
/// [`Error::NoDeployment`] without `from` when the trace records no
/// deployment of the commit; [`Error::Trace`] if the trace does not verify;
/// [`Error::Drift`] if the baseline is too short or the chart invalid.
pub fn start_watch(ledger: &mut Ledger, plan: &WatchPlan) -> Result<Monitor> {
    ledger.refresh()?;
    let view = ledger.view();
    let watch = if plan.two_sided {
        Watch::Both
    } else {
        Watch::harm(
            ratchet_scorers::direction_in(view, &plan.scorer)?
                == ratchet_scorers::Direction::LowerIsBetter,
        )
    };
    let from = match plan.from {
        Some(f) => f,
        None => ratchet_drift::deployment_start(view, &plan.commit)?.ok_or_else(|| {
            Error::NoDeployment {
                commit: plan.commit.clone(),
            }
        })?,
    };
    // Only the producers the watch trusts (the key holder's by default):
    // nobody else's scores make its baseline or raise its alarms.
    let trusted = view.restricted_to(&plan.trust);
    let chart = match plan.chart {
        Some(c) => c,
        None => Chart::for_stream(
            &trusted,
            &plan.commit,
            &plan.scorer,
            from,
            plan.auto.0,
            plan.auto.1,
        )?,
    };
    Ok(Monitor::start_chart(
        &trusted,
        &plan.commit,
        &plan.scorer,
        from,
        chart,
        watch,
        plan.min_n,
    )?
    .reading(plan.trust.clone()))
}

/// What `ratchet status` shows: the store, whether it verifies, what it
/// holds, each scorer's direction, the last decision and the last alarm.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Status {
    /// The store's id.
    pub store_id: String,
    /// The store directory.
    pub store_dir: std::path::PathBuf,
    /// The writer key id, if the store is keyed.
    pub writer_key_id: Option<String>,
    /// Verification of the whole trace (with the key the store was opened
    /// with, if any).
    pub verification: ratchet_trace::VerifyReport,
    /// What the trace holds.
    pub overview: ratchet_trace::Overview,
    /// Each scorer's direction: declared in the trace, else the default.
    pub directions: std::collections::BTreeMap<String, ratchet_scorers::Direction>,
    /// The scorers whose direction nothing in the trace declares: theirs is
    /// the built-in default, which a class's policy may state otherwise.
    #[serde(skip_serializing_if = "std::collections::BTreeSet::is_empty")]
    pub undeclared: std::collections::BTreeSet<String>,
    /// The newest `decision` event.
    pub last_decision: Option<DecisionSummary>,
    /// The newest alarm this store's monitor recorded.
    pub last_alarm: Option<TraceAlarm>,
    /// Each class's pinned policy (hash and seq); empty: no class is
    /// pinned, and a policy file beside the store decides (see README).
    pub pinned_policies: std::collections::BTreeMap<String, PinSummary>,
    /// Classes this store decided or promoted that have no pinned policy.
    pub unpinned_classes: Vec<String>,
    /// Each pinned rubric's version and the pin's seq.
    pub pinned_rubrics: std::collections::BTreeMap<String, PinSummary>,
    /// What the trace says is deployed, per class: the latest promotion,
    /// or the heal that moved away from it ([`deployments`]; the same
    /// answer the report, `serve` and Python give).
    pub deployed: std::collections::BTreeMap<String, Deployment>,
    /// The commit the repository's work tree has checked out (HEAD), when
    /// a repository was compared: it can differ from what the trace says
    /// is deployed (a person moved it, or a branch is checked out), and
    /// `status` says so.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub checked_out: Option<String>,
    /// Promotion refs that disagree with the trace (`None`: no repository
    /// was compared).
    pub ref_faults: Option<Vec<RefFault>>,
    /// The newest test runs that had failures (at most
    /// [`FAILING_RUNS_SHOWN`]), oldest first, with the tests they name.
    pub failing_runs: Vec<FailingRun>,
}

/// How many failing test runs [`Status`] lists.
pub const FAILING_RUNS_SHOWN: usize = 10;

/// A recorded test run with failures.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FailingRun {
    /// Seq of its `test_run` event.
    pub seq: u64,
    /// The commit tested.
    pub commit: CommitId,
    /// The suite.
    pub suite: String,
    /// Tests failed.
    pub failed: u64,
    /// The failed tests it names (the first of them, if many).
    pub failures: Vec<String>,
}

fn failing_runs(view: &Verified, commits: &[ratchet_trace::CommitCounts]) -> Vec<FailingRun> {
    let mut runs: Vec<FailingRun> = commits
        .iter()
        .filter_map(|c| CommitId::parse(&c.commit).ok())
        .flat_map(|c| view.test_runs(&c, ratchet_trace::AsOf::Head))
        .filter(|(_, r)| r.failed > 0)
        .map(|(seq, r)| FailingRun {
            seq,
            commit: r.commit,
            suite: r.suite,
            failed: r.failed,
            failures: r.failures,
        })
        .collect();
    runs.sort_by_key(|r| r.seq);
    let from = runs.len().saturating_sub(FAILING_RUNS_SHOWN);
    runs.split_off(from)
}

/// A pin in force: what it fixes (a policy's hash, a rubric's version) and
/// the seq of its `policy` event.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PinSummary {
    /// The policy hash or rubric version.
    pub hash: String,
    /// Seq of the pin.
    pub seq: u64,
}

/// A recorded verdict, in brief: the fields every law's verdict has (read
/// so that a verdict of a later law than this gate knows still shows in
/// a status; [`ratchet_gate::Verdict::from_json`] reads the whole).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct DecisionSummary {
    /// Seq of the `decision` event.
    #[serde(default)]
    pub seq: u64,
    /// The class.
    pub class: String,
    /// The baseline commit.
    pub baseline: CommitId,
    /// The candidate commit.
    pub candidate: CommitId,
    /// The outcome.
    pub outcome: OutcomeSummary,
}

/// A recorded outcome, in brief.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct OutcomeSummary {
    /// `promote`, `reject` or `continue` (the tag of
    /// [`ratchet_gate::Outcome`]).
    pub verdict: VerdictWord,
    /// For a reject: why (`measured`, `missing_evidence`, …).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cause: Option<ratchet_gate::RejectCause>,
}

impl OutcomeSummary {
    /// The gate's one-word status of this outcome, as
    /// [`ratchet_gate::Outcome::status`] gives it; `None` for a verdict word
    /// of a later law, or a reject that names no cause (neither is
    /// anything this build may act on).
    pub fn status(&self) -> Option<ratchet_gate::GateStatus> {
        use ratchet_gate::{GateStatus, RejectCause};
        match (self.verdict, self.cause) {
            (VerdictWord::Promote, _) => Some(GateStatus::Promote),
            (VerdictWord::Continue, _) => Some(GateStatus::Continue),
            (VerdictWord::Reject, Some(RejectCause::Measured)) => Some(GateStatus::Reject),
            (VerdictWord::Reject, Some(RejectCause::MissingEvidence)) => {
                Some(GateStatus::MissingEvidence)
            }
            (VerdictWord::Reject, Some(RejectCause::UnverifiedTrace)) => {
                Some(GateStatus::UnverifiedTrace)
            }
            (VerdictWord::Reject, Some(RejectCause::Truncated)) => Some(GateStatus::Truncated),
            (VerdictWord::Reject, None) | (VerdictWord::Later, _) => None,
        }
    }
}

/// The verdict word a recorded decision carries (the `verdict` tag of
/// [`ratchet_gate::Outcome`]), typed so that no reader compares strings.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum VerdictWord {
    /// Promote.
    Promote,
    /// Reject (its cause says of what kind).
    Reject,
    /// Collect more evidence.
    Continue,
    /// A word of a later law than this build knows: shown, never acted on.
    #[serde(other)]
    Later,
}

impl VerdictWord {
    /// The word as recorded (`promote`, `reject`, `continue`; `later` for
    /// one this build does not know).
    pub fn as_str(self) -> &'static str {
        match self {
            VerdictWord::Promote => "promote",
            VerdictWord::Reject => "reject",
            VerdictWord::Continue => "continue",
            VerdictWord::Later => "later",
        }
    }
}

impl std::fmt::Display for VerdictWord {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The store's [`Status`]. A trace that fails verification is reported as
/// such (in `verification`), not as an error; the figures beside it are
/// then empty (nothing of an altered trace is read as fact).
///
/// With `repo`, every promotion ref of that repository is compared with
/// the trace ([`check_promotion_refs`]).
///
/// # Errors
/// [`Error::Trace`] if the store cannot be read; [`Error::Scorers`] /
/// [`Error::Drift`] if a declaration or an alarm in it does not parse;
/// [`Error::Git`] if `repo` cannot be read.
pub fn status(store: &mut Store, repo: Option<&Path>) -> Result<Status> {
    let (verification, view) = store.verify_and_fold(&ratchet_trace::VerifyOptions::default())?;
    let Some(view) = view else {
        return Ok(Status {
            store_id: store.id().to_string(),
            store_dir: store.dir().to_path_buf(),
            writer_key_id: store.writer_key_id().map(str::to_string),
            overview: ratchet_trace::Overview {
                size: store.head()?.size,
                kinds: Default::default(),
                commits: Vec::new(),
                scorers: Vec::new(),
            },
            verification,
            directions: Default::default(),
            undeclared: Default::default(),
            last_decision: None,
            last_alarm: None,
            pinned_policies: Default::default(),
            unpinned_classes: Vec::new(),
            pinned_rubrics: Default::default(),
            deployed: Default::default(),
            checked_out: None,
            ref_faults: None,
            failing_runs: Vec::new(),
        });
    };
    status_of(store, verification, &view, repo)
}

/// [`status`] of a long-lived owner's verified view (refreshed first): no
/// re-verification of the whole trace, so it costs what is new.
///
/// # Errors
/// As [`status`].
pub fn status_warm(ledger: &mut Ledger, repo: Option<&Path>) -> Result<Status> {
    ledger.refresh()?;
    let verification = ledger.view().report().clone();
    status_of(ledger.store(), verification, ledger.view(), repo)
}

fn status_of(
    store: &Store,
    verification: ratchet_trace::VerifyReport,
    view: &Verified,
    repo: Option<&Path>,
) -> Result<Status> {
    let overview = view.overview();
    let failing = failing_runs(view, &overview.commits);
    let mut directions = std::collections::BTreeMap::new();
    let mut undeclared = std::collections::BTreeSet::new();
    for s in &overview.scorers {
        // `direction_in`'s rule, read once: the declared direction, else
        // the default (and then it is said to be the default).
        let direction = match ratchet_records::declared_direction(view, &s.scorer, u64::MAX)? {
            Some((declared, _)) => declared,
            None => {
                undeclared.insert(s.scorer.clone());
                ratchet_records::direction_of(&s.scorer)
            }
        };
        directions.insert(s.scorer.clone(), direction);
    }
    let decisions = view
        .own_control_events::<DecisionSummary>(ratchet_trace::ReservedKind::Decision, u64::MAX)?;
    let decided: Vec<String> = decisions.iter().map(|(_, d)| d.class.clone()).collect();
    let last_decision = decisions.into_iter().next_back().map(|(e, mut d)| {
        d.seq = e.seq;
        d
    });
    let pinned = ratchet_gate::pinned_policies(view, u64::MAX)?;
    let deployed = deployments(view)?;
    let unpinned_classes: Vec<String> = decided
        .into_iter()
        .chain(deployed.keys().cloned())
        .filter(|c| !pinned.contains_key(c))
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect();
    Ok(Status {
        store_id: store.id().to_string(),
        store_dir: store.dir().to_path_buf(),
        writer_key_id: store.writer_key_id().map(str::to_string),
        verification,
        overview,
        directions,
        undeclared,
        last_decision,
        last_alarm: ratchet_drift::latest_alarm(view, None)?,
        pinned_policies: pinned
            .into_iter()
            .map(|(class, p)| {
                (
                    class,
                    PinSummary {
                        hash: p.hash.to_string(),
                        seq: p.seq,
                    },
                )
            })
            .collect(),
        unpinned_classes,
        pinned_rubrics: pinned_rubrics(view)?,
        deployed,
        checked_out: repo
            .map(|r| Ok::<_, Error>(deploy::leaving(&Repository::discover(r)?)))
            .transpose()?
            .flatten()
            .map(|o| o.to_string()),
        ref_faults: repo.map(|r| check_promotion_refs(r, view)).transpose()?,
        failing_runs: failing,
    })
}

fn pinned_rubrics(view: &Verified) -> Result<std::collections::BTreeMap<String, PinSummary>> {
    let mut out = std::collections::BTreeMap::new();
    for (seq, pin) in ratchet_scorers::pins(view, u64::MAX)? {
        if let ratchet_scorers::Pin::Rubric { rubric, version } = pin {
            out.insert(rubric, PinSummary { hash: version, seq });
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use ratchet_gate::GateStatus;

    fn outcome(json: &str) -> OutcomeSummary {
        serde_json::from_str(json).expect("an outcome reads")
    }

    /// Heal lifts or keeps a reject by the typed status, never by the
    /// word: a truncation or a refusal is recorded as `reject` too, and a
    /// later law's word is shown but never acted on.
    #[test]
    fn a_recorded_outcome_reads_typed_and_a_later_laws_word_is_never_acted_on() {
        let cases = [
            (
                r#"{"verdict":"reject","cause":"measured"}"#,
                Some(GateStatus::Reject),
            ),
            (
                r#"{"verdict":"reject","cause":"truncated"}"#,
                Some(GateStatus::Truncated),
            ),
            (
                r#"{"verdict":"reject","cause":"missing_evidence"}"#,
                Some(GateStatus::MissingEvidence),
            ),
            (r#"{"verdict":"reject"}"#, None),
            (r#"{"verdict":"promote"}"#, Some(GateStatus::Promote)),
            (r#"{"verdict":"continue"}"#, Some(GateStatus::Continue)),
            (r#"{"verdict":"abstain"}"#, None),
        ];
        for (json, status) in cases {
            assert_eq!(outcome(json).status(), status, "{json}");
        }
        assert_eq!(
            outcome(r#"{"verdict":"abstain"}"#).verdict,
            VerdictWord::Later
        );
        // `status --json` still shows the word as recorded.
        assert_eq!(
            serde_json::to_string(&outcome(r#"{"verdict":"reject","cause":"measured"}"#))
                .expect("json"),
            r#"{"verdict":"reject","cause":"measured"}"#
        );
    }
}
