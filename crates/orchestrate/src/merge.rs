//! Git merges of branches — `merge_branch` and `merge_branches` — made in
//! memory, checked as a whole (`run_checks`) before they land as one
//! commit, one at a time per repository. Not the trace's cell merge
//! (`ratchet_trace::Store::merge_cell`, `ratchet merge-cells`), which folds
//! another store's events into this one.

use std::path::{Path, PathBuf};

use git2::{Oid, Repository};
use serde::Serialize;

use ratchet_trace::{CommitId, EventDraft, ReservedKind, Store};

use crate::checks::{
    CheckReport, CheckSpec, Loaded, check_commands, run_checks_loaded, tree_files,
};
use crate::sandbox::{CommandReport, EnvPolicy, Limits, Sandbox};
use crate::{Error, Result, io_err};

/// How many times a merge is retried when `into` moves while it is being
/// verified (each retry merges and verifies again on the new tip).
pub const MERGE_ATTEMPTS: u32 = 3;

/// How to merge.
#[derive(Debug, Clone)]
pub struct MergeRequest {
    /// The branch merged into (`main`): a name under `refs/heads/`.
    pub into: String,
    /// How each merge result is verified (commands, limits, gate).
    pub verify: CheckSpec,
    /// Attempts when `into` moves meanwhile (default [`MERGE_ATTEMPTS`]).
    pub attempts: u32,
    /// Run once after a landing, in the repository's work tree (or its git
    /// directory when bare), with `verify`'s environment and limits.
    pub deploy: Option<Vec<String>>,
}

impl MergeRequest {
    /// A request to merge into `into`, verified by `verify`.
    pub fn new(into: impl Into<String>, verify: CheckSpec) -> Self {
        MergeRequest {
            into: into.into(),
            verify,
            attempts: MERGE_ATTEMPTS,
            deploy: None,
        }
    }
}

/// One conflicting path, for a resolver.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ConflictFile {
    /// The path.
    pub path: String,
    /// The conflict hunks of the merged text, markers included (diff3
    /// style: ours, base, theirs). Empty when one side deleted the file.
    pub hunks: Vec<String>,
    /// `into`'s change to the file against the merge base (unified diff).
    pub ours_diff: String,
    /// The branch's change to the file against the merge base.
    pub theirs_diff: String,
}

/// A merge git cannot make by itself: nothing was changed.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ConflictReport {
    /// The merge base.
    pub base: Option<String>,
    /// `into`'s tip.
    pub ours: String,
    /// The branch's tip.
    pub theirs: String,
    /// The conflicting files.
    pub files: Vec<ConflictFile>,
}

/// How a merge ended. Every outcome is appended to the trace as a `merge`
/// event.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum MergeOutcome {
    /// The merge passed verification and `into` now points at it.
    Landed {
        /// The branch merged.
        branch: String,
        /// The branch merged into.
        into: String,
        /// The merge commit.
        commit: String,
        /// `into`'s tip before.
        previous: String,
        /// Attempts used (more than 1 when `into` moved meanwhile).
        attempts: u32,
        /// The verification of the merge commit.
        verification: Box<CheckReport>,
        /// The deploy hook's run, if one was given.
        deploy: Option<CommandReport>,
    },
    /// `into` already contains the branch: nothing to do.
    UpToDate {
        /// The branch.
        branch: String,
        /// The branch merged into.
        into: String,
        /// `into`'s tip.
        tip: String,
    },
    /// git found conflicting changes: nothing changed.
    Conflict {
        /// The branch.
        branch: String,
        /// The branch merged into.
        into: String,
        /// What conflicts, for a resolver.
        report: ConflictReport,
    },
    /// The merge is clean as text but failed verification: a semantic
    /// conflict. Nothing landed.
    SemanticConflict {
        /// The branch.
        branch: String,
        /// The branch merged into.
        into: String,
        /// The merge commit that was verified (not on any branch).
        commit: String,
        /// Why it failed.
        verification: Box<CheckReport>,
    },
    /// `into` kept moving: every attempt found it moved before the merge
    /// could land. Nothing landed.
    Refused {
        /// The branch.
        branch: String,
        /// The branch merged into.
        into: String,
        /// Why.
        reason: String,
    },
}

impl MergeOutcome {
    /// The merge landed or there was nothing to land.
    pub fn succeeded(&self) -> bool {
        matches!(
            self,
            MergeOutcome::Landed { .. } | MergeOutcome::UpToDate { .. }
        )
    }

    /// The outcome in one word.
    pub fn word(&self) -> &'static str {
        match self {
            MergeOutcome::Landed { .. } => "landed",
            MergeOutcome::UpToDate { .. } => "up to date",
            MergeOutcome::Conflict { .. } => "conflict",
            MergeOutcome::SemanticConflict { .. } => "semantic conflict",
            MergeOutcome::Refused { .. } => "refused",
        }
    }
}

/// The repository's merge lock: one merge at a time. An advisory `flock`
/// on `ratchet-merge.lock` in the repository's common git directory (shared
/// by its linked work trees), which the kernel releases when its
/// holder exits — a crashed merge never leaves it held.
#[derive(Debug)]
pub struct MergeLock {
    _file: std::fs::File,
}

impl MergeLock {
    /// Waits for, then holds, the lock of the repository whose common git
    /// directory is `git_dir` (`Repository::commondir`).
    ///
    /// # Errors
    /// [`Error::Io`] if the lock file cannot be opened or locked.
    pub fn acquire(git_dir: &Path) -> Result<MergeLock> {
        let path = git_dir.join("ratchet-merge.lock");
        let file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .map_err(io_err(&path))?;
        file.lock().map_err(io_err(&path))?;
        Ok(MergeLock { _file: file })
    }
}

fn branch_ref(name: &str) -> String {
    if name.starts_with("refs/") {
        name.to_string()
    } else {
        format!("refs/heads/{name}")
    }
}

/// Merges `branch` into `request.into` in the repository at `repo_path`:
/// git's three-way merge in memory; a conflict is reported and changes
/// nothing; a clean merge becomes a merge commit (not yet on any branch),
/// is verified as a whole in `sandbox`, and only if that passes does `into`
/// move to it, by compare-and-swap. If `into` moved meanwhile the merge is
/// made and verified again on the new tip, up to `request.attempts` times.
/// When `into` is checked out, its work tree must be clean and is updated
/// after the landing. Holds the repository's [`MergeLock`] throughout.
///
/// # Examples
///
/// ```
/// use git2::{Commit, Repository, Signature};
/// use ratchet_orchestrate::checks::CheckSpec;
/// use ratchet_orchestrate::merge::{MergeOutcome, MergeRequest, merge_branch};
/// use ratchet_orchestrate::sandbox::ProcessSandbox;
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let dir = tempfile::tempdir()?;
/// let repo = Repository::init_bare(dir.path().join("repo.git"))?;
/// let sig = Signature::now("dev", "dev@example.invalid")?;
/// let commit_on = |refname: &str, file: &str, parents: &[&Commit<'_>]| -> Result<git2::Oid, git2::Error> {
///     let mut tree = repo.treebuilder(parents.first().map(|p| p.tree()).transpose()?.as_ref())?;
///     tree.insert(file, repo.blob(b"text\n")?, 0o100644)?;
///     repo.commit(Some(refname), &sig, &sig, file, &repo.find_tree(tree.write()?)?, parents)
/// };
/// // `main` and `feature` each add a file to a common base.
/// let base = repo.find_commit(commit_on("refs/heads/main", "a.txt", &[])?)?;
/// commit_on("refs/heads/main", "b.txt", &[&base])?;
/// commit_on("refs/heads/feature", "c.txt", &[&base])?;
///
/// let mut store = ratchet_trace::Store::create(dir.path().join("store"), Default::default())?;
/// // The merge commit is verified as a whole before `main` moves to it.
/// let both = vec!["sh".into(), "-c".into(), "test -f b.txt && test -f c.txt".into()];
/// let check = CheckSpec { commands: vec![both], ..Default::default() };
/// let request = MergeRequest::new("main", check);
/// let outcome = merge_branch(&dir.path().join("repo.git"), &mut store, &mut ProcessSandbox::new(), "feature", &request)?;
/// let MergeOutcome::Landed { commit, .. } = &outcome else { panic!("{}", outcome.word()) };
/// assert_eq!(repo.refname_to_id("refs/heads/main")?.to_string(), *commit);
/// # Ok(()) }
/// ```
///
/// # Errors
/// [`Error::NoCommands`]/[`Error::EmptyCommand`] before anything;
/// [`Error::UnknownCommit`] for a branch or `into` that does not exist;
/// [`Error::DirtyWorkTree`] if `into` is checked out with uncommitted
/// changes; [`Error::Git`], [`Error::Sandbox`], [`Error::Trace`] underneath.
/// Conflicts, semantic conflicts and refusals are outcomes, not errors.
pub fn merge_branch(
    repo_path: &Path,
    store: &mut Store,
    sandbox: &mut dyn Sandbox,
    branch: &str,
    request: &MergeRequest,
) -> Result<MergeOutcome> {
    check_commands(&request.verify.commands)?;
    let repo = Repository::discover(repo_path)?;
    // The common directory: every linked work tree of a repository shares it,
    // so they share one lock too.
    let _lock = MergeLock::acquire(repo.commondir())?;
    let store_dir = store.dir().to_path_buf();
    recover_interrupted_landing(&repo, &store_dir)?;
    let outcome = merge_locked(&repo, store, sandbox, branch, request)?;
    let mut draft = EventDraft::reserved(ReservedKind::Merge, &outcome)?.session("merge");
    if let MergeOutcome::Landed { commit, .. } | MergeOutcome::SemanticConflict { commit, .. } =
        &outcome
    {
        draft = draft.commit(CommitId::parse(commit)?);
    }
    crate::deploy::crash_point("merge:landed");
    store.append(draft)?;
    Ok(outcome)
}

/// A landing into a checked-out branch, between detaching HEAD and
/// re-attaching it: written (and synced) before HEAD is detached, removed
/// once it is attached again. Its presence under the merge lock means an
/// earlier merge died in between.
#[derive(Debug, Serialize, serde::Deserialize)]
struct PendingLanding {
    into_ref: String,
    previous: String,
    commit: String,
}

/// In the work tree's own git directory: the landing detached *this* work
/// tree's HEAD, and only this work tree may finish it.
fn pending_path(repo: &Repository) -> PathBuf {
    repo.path().join("ratchet-merge.pending")
}

/// Finishes what a merge that died mid-landing left: HEAD detached at the
/// old tip (the ref not moved, or moved with the work tree not yet
/// updated) or at the merge (checked out, not re-attached). The work tree
/// is brought to the branch's tip with the one safe checkout and HEAD
/// re-attached; a branch someone else moved meanwhile is left alone and
/// said (an error: a person decides).
fn recover_interrupted_landing(repo: &Repository, store_dir: &Path) -> Result<()> {
    let path = pending_path(repo);
    let Ok(bytes) = std::fs::read(&path) else {
        return Ok(());
    };
    let Ok(p) = serde_json::from_slice::<PendingLanding>(&bytes) else {
        // Torn before its sync: HEAD was not detached yet.
        std::fs::remove_file(&path).map_err(io_err(&path))?;
        return Ok(());
    };
    let head = repo.head().ok();
    let attached = head
        .as_ref()
        .and_then(|h| h.name().ok().map(str::to_string))
        .is_some_and(|n| n == p.into_ref);
    if !attached {
        let at = head
            .as_ref()
            .and_then(|h| h.target())
            .map(|o| o.to_string());
        let tip = resolve_ref(repo, &p.into_ref)?.to_string();
        match (at.as_deref(), tip.as_str()) {
            (Some(a), t) if a == t => {}
            (Some(a), t) if a == p.previous && t == p.commit => {
                // The checkout writes the index last: an index already at
                // the merge's tree means the work tree was updated.
                let merged = repo.find_commit(Oid::from_str(&p.commit)?)?;
                let index_tree = repo.index()?.write_tree()?;
                if index_tree != merged.tree_id() {
                    let previous = Oid::from_str(&p.previous)?;
                    if let Some(reason) =
                        crate::deploy::store_refusal(repo, Some(previous), merged.id(), store_dir)?
                    {
                        return Err(Error::UnsafeCheckout {
                            commit: CommitId::parse(&p.commit)?,
                            reason,
                        });
                    }
                    crate::deploy::safe_checkout(repo, merged.as_object(), false)?;
                }
            }
            _ => {
                return Err(Error::InterruptedMerge {
                    reason: format!(
                        "an interrupted landing into {} left HEAD at {}, and the branch is now at {tip}; check the branch out by hand, then delete {}",
                        p.into_ref,
                        at.as_deref().unwrap_or("nothing"),
                        path.display()
                    ),
                });
            }
        }
        repo.set_head(&p.into_ref)?;
        tracing::warn!(into = %p.into_ref, "completed an interrupted landing");
    }
    std::fs::remove_file(&path).map_err(io_err(&path))?;
    Ok(())
}

/// Lands `branches` one by one, in the order given, each merged into and
/// verified on the tip that includes the landings before it (a branch
/// that passes alone but breaks with an earlier one is a semantic
/// conflict, and the queue goes on without it).
///
/// # Errors
/// As [`merge_branch`], for the first branch that errs (the outcomes before it
/// stand, and are in the trace).
pub fn merge_branches(
    repo_path: &Path,
    store: &mut Store,
    sandbox: &mut dyn Sandbox,
    branches: &[String],
    request: &MergeRequest,
) -> Result<Vec<MergeOutcome>> {
    branches
        .iter()
        .map(|b| merge_branch(repo_path, store, sandbox, b, request))
        .collect()
}

/// The commit a reference points at.
fn resolve_ref(repo: &Repository, refname: &str) -> Result<Oid> {
    repo.refname_to_id(refname)
        .and_then(|id| repo.find_commit(id))
        .map(|c| c.id())
        .map_err(|e| Error::UnknownCommit {
            rev: refname.to_string(),
            reason: e.message().to_string(),
        })
}

/// What `merge` takes for a branch: a branch name (`refs/heads/<name>`), a
/// full reference name, or a full commit id — never a revision expression
/// (`x~3`, a tag, an id prefix), which could name something else than the
/// caller meant once a branch is gone.
fn resolve_branch(repo: &Repository, name: &str) -> Result<Oid> {
    let is_full_id = matches!(name.len(), 40 | 64) && name.bytes().all(|b| b.is_ascii_hexdigit());
    if is_full_id {
        let id = Oid::from_str(name)?;
        return repo
            .find_commit(id)
            .map(|c| c.id())
            .map_err(|e| Error::UnknownCommit {
                rev: name.to_string(),
                reason: e.message().to_string(),
            });
    }
    resolve_ref(repo, &branch_ref(name)).map_err(|_| Error::UnknownCommit {
        rev: name.to_string(),
        reason: format!(
            "no branch {} (merge takes branch names, full reference names or full commit ids)",
            branch_ref(name)
        ),
    })
}

/// The work tree, other than `repo`'s own, where `refname` is checked out
/// (moving a branch checked out elsewhere would leave that work tree
/// showing the merge reverted, as `git branch -f` refuses to).
fn checked_out_elsewhere(repo: &Repository, refname: &str) -> Result<Option<PathBuf>> {
    let own = repo.workdir().and_then(|w| w.canonicalize().ok());
    let common = Repository::open(repo.commondir())?;
    let mut trees: Vec<(PathBuf, Repository)> = Vec::new();
    if let Some(w) = common.workdir() {
        trees.push((w.to_path_buf(), Repository::open(common.path())?));
    }
    for name in common.worktrees()?.iter().flatten().flatten() {
        let wt = common.find_worktree(name)?;
        trees.push((
            wt.path().to_path_buf(),
            Repository::open_from_worktree(&wt)?,
        ));
    }
    for (path, r) in trees {
        if path.canonicalize().ok() == own && own.is_some() {
            continue;
        }
        let head = r
            .find_reference("HEAD")
            .ok()
            .and_then(|h| h.symbolic_target().ok().flatten().map(str::to_string));
        if head.as_deref() == Some(refname) {
            return Ok(Some(path));
        }
    }
    Ok(None)
}

fn merge_locked(
    repo: &Repository,
    store: &mut Store,
    sandbox: &mut dyn Sandbox,
    branch: &str,
    request: &MergeRequest,
) -> Result<MergeOutcome> {
    let into_ref = branch_ref(&request.into);
    let (into, branch_name) = (request.into.clone(), branch.to_string());
    let checked_out = attached_to(repo, &into_ref);
    let theirs = resolve_branch(repo, branch)?;
    if let Some(path) = checked_out_elsewhere(repo, &into_ref)? {
        return Err(Error::CheckedOutElsewhere { branch: into, path });
    }
    for attempt in 1..=request.attempts.max(1) {
        if checked_out {
            crate::git::refuse_dirty(repo)?;
        }
        let ours = resolve_ref(repo, &into_ref)?;
        if ours == theirs || repo.graph_descendant_of(ours, theirs)? {
            return Ok(MergeOutcome::UpToDate {
                branch: branch_name,
                into,
                tip: ours.to_string(),
            });
        }
        let (commit, tree) = match write_merge_commit(repo, (ours, theirs), &branch_name, &into)? {
            Ok(merged) => merged,
            Err(report) => {
                return Ok(MergeOutcome::Conflict {
                    report,
                    branch: branch_name,
                    into,
                });
            }
        };
        let commit_id = CommitId::parse(&commit.to_string())?;
        // A checked-out `into` gets the merged tree in its work tree: a
        // tree that would write into the store never lands there.
        if checked_out
            && let Some(why) = crate::deploy::store_refusal(repo, Some(ours), commit, store.dir())?
        {
            return Ok(MergeOutcome::Refused {
                reason: format!("the merge cannot be checked out: {why}; nothing landed"),
                branch: branch_name,
                into,
            });
        }

        let verification = run_merge_checks(
            repo,
            (store, &mut *sandbox),
            &tree,
            &commit_id,
            &format!("merge of {branch_name} into {into}"),
            &request.verify,
        )?;
        if !verification.passed {
            return Ok(MergeOutcome::SemanticConflict {
                branch: branch_name,
                into,
                commit: commit.to_string(),
                verification: Box::new(verification),
            });
        }
        let log = format!("ratchet merge: {branch_name} (verified)");
        let landing = if checked_out {
            land_checked_out(repo, (&into_ref, &into), ours, commit, &tree, &log)?
        } else {
            Landing::of(repo.reference_matching(&into_ref, commit, true, ours, &log))?
        };
        match landing {
            Landing::Moved => {}
            Landing::TargetMoved => {
                tracing::info!(attempt, %into, "the target moved while verifying; merging again");
                continue;
            }
            Landing::Refused(why) => {
                return Ok(MergeOutcome::Refused {
                    reason: why,
                    branch: branch_name,
                    into,
                });
            }
        }
        let deploy = request
            .deploy
            .as_ref()
            .map(|argv| run_deploy(repo, argv, &request.verify.limits, &request.verify.env))
            .transpose()?;
        return Ok(MergeOutcome::Landed {
            branch: branch_name,
            into,
            commit: commit.to_string(),
            previous: ours.to_string(),
            attempts: attempt,
            verification: Box::new(verification),
            deploy,
        });
    }
    Ok(MergeOutcome::Refused {
        reason: format!(
            "{into} moved during each of {} attempts; nothing landed",
            request.attempts.max(1)
        ),
        branch: branch_name,
        into,
    })
}

/// Verifies the merge's tree — the bytes that will land, read from the
/// object database — as the candidate `commit` (its evaluation's evidence
/// recorded for the merge commit).
fn run_merge_checks(
    repo: &Repository,
    (store, sandbox): (&mut Store, &mut dyn Sandbox),
    tree: &git2::Tree<'_>,
    commit: &CommitId,
    name: &str,
    spec: &CheckSpec,
) -> Result<CheckReport> {
    let mut loaded = Loaded {
        files: Vec::new(),
        skipped: Vec::new(),
        commit: Some(commit.clone()),
        name: name.to_string(),
    };
    tree_files(repo, tree, &mut loaded)?;
    let mut spec = spec.clone();
    if let Some(e) = &mut spec.evaluation {
        e.candidate = Some(commit.clone());
    }
    Ok(run_checks_loaded(store, sandbox, loaded, &spec)?.0)
}

/// The merge of `theirs` into `ours` as a commit on no branch (its id and
/// tree), or the conflicts that stop it.
fn write_merge_commit<'r>(
    repo: &'r Repository,
    (ours, theirs): (Oid, Oid),
    branch_name: &str,
    into: &str,
) -> Result<std::result::Result<(Oid, git2::Tree<'r>), ConflictReport>> {
    let (our_commit, their_commit) = (repo.find_commit(ours)?, repo.find_commit(theirs)?);
    let mut index = repo.merge_commits(&our_commit, &their_commit, None)?;
    if index.has_conflicts() {
        return Ok(Err(conflict_report(
            repo,
            &index,
            ours,
            theirs,
            into,
            branch_name,
        )?));
    }
    let tree = repo.find_tree(index.write_tree_to(repo)?)?;
    let sig = repo
        .signature()
        .or_else(|_| git2::Signature::now("ratchet", "ratchet@localhost"))?;
    let message =
        format!("Merge {branch_name} into {into}\n\nVerified by ratchet before landing.\n");
    let parents = [&our_commit, &their_commit];
    let commit = repo.commit(None, &sig, &sig, &message, &tree, &parents)?;
    Ok(Ok((commit, tree)))
}

/// Whether `repo`'s work tree has HEAD attached to `refname` (a landing
/// there updates the work tree too).
fn attached_to(repo: &Repository, refname: &str) -> bool {
    !repo.is_bare()
        && repo
            .head()
            .ok()
            .and_then(|h| h.name().ok().map(str::to_string))
            .as_deref()
            == Some(refname)
}

/// How moving `into` to a verified merge ended.
enum Landing {
    /// `into` names the merge (and its work tree shows it, when checked out).
    Moved,
    /// `into` moved since it was read: merge again on its new tip.
    TargetMoved,
    /// Nothing landed, for this reason.
    Refused(String),
}

impl Landing {
    /// The compare-and-swap's result read: moved, raced, or failed.
    fn of<T>(moved: std::result::Result<T, git2::Error>) -> Result<Landing> {
        match moved {
            Ok(_) => Ok(Landing::Moved),
            Err(e) if e.code() == git2::ErrorCode::Modified => Ok(Landing::TargetMoved),
            Err(e) => Err(e.into()),
        }
    }
}

/// Lands `commit` (tree `tree`) on a checked-out `into_ref` at `ours`: the
/// work tree checked clean once more (verification took its time), HEAD
/// detached at the old tip under a synced marker (the next merge finishes
/// a landing cut short), the ref moved by compare-and-swap, the verified
/// bytes checked out safely — or the ref put back when they cannot be —
/// and HEAD attached again.
fn land_checked_out(
    repo: &Repository,
    (into_ref, into): (&str, &str),
    ours: Oid,
    commit: Oid,
    tree: &git2::Tree<'_>,
    log: &str,
) -> Result<Landing> {
    let paths = crate::dirty_paths(repo)?;
    if !paths.is_empty() {
        return Ok(Landing::Refused(format!(
            "the work tree of {into} changed during verification ({}); nothing landed",
            paths.join(", ")
        )));
    }
    // libgit2 checks a work tree out against HEAD's tree: HEAD is
    // detached at the old tip while the ref moves, so a safe checkout of
    // the merge sees the work tree as clean and updates it, refusing to
    // overwrite anything edited meanwhile (ignored files included).
    crate::deploy::write_synced_json(
        &pending_path(repo),
        &PendingLanding {
            into_ref: into_ref.to_string(),
            previous: ours.to_string(),
            commit: commit.to_string(),
        },
    )?;
    repo.set_head_detached(ours)?;
    crate::deploy::crash_point("merge:detached");
    let moved = repo.reference_matching(into_ref, commit, true, ours, log);
    crate::deploy::crash_point("merge:ref-moved");
    let mut undone = None;
    if moved.is_ok() {
        // The verified bytes, exactly (no checkout filter), never over an
        // edited, untracked or ignored file.
        if let Err(e) = crate::deploy::safe_checkout(repo, tree.as_object(), false) {
            // Nothing was written (a safe checkout checks before it
            // writes): put the ref back, so `into` and its work tree agree
            // again, and say so.
            repo.reference_matching(
                into_ref,
                ours,
                true,
                commit,
                "ratchet merge: undone, the work tree could not be updated",
            )?;
            undone = Some(e);
        }
        crate::deploy::crash_point("merge:checked-out");
    }
    repo.set_head(into_ref)?;
    let pending = pending_path(repo);
    std::fs::remove_file(&pending).map_err(io_err(&pending))?;
    if let Some(e) = undone {
        return Ok(Landing::Refused(format!(
            "the work tree could not be updated ({e}); {into} was put back"
        )));
    }
    Landing::of(moved)
}

/// Runs the deploy hook once, as a process in the repository's directory.
fn run_deploy(
    repo: &Repository,
    argv: &[String],
    limits: &Limits,
    env: &EnvPolicy,
) -> Result<CommandReport> {
    let dir: PathBuf = repo.workdir().unwrap_or(repo.path()).to_path_buf();
    crate::sandbox::run_in_dir(argv, &dir, env, limits)
}

fn conflict_report(
    repo: &Repository,
    index: &git2::Index,
    ours: Oid,
    theirs: Oid,
    into: &str,
    branch: &str,
) -> Result<ConflictReport> {
    let base = repo.merge_base(ours, theirs).ok();
    let blob_bytes = |e: &Option<git2::IndexEntry>| -> Result<Vec<u8>> {
        Ok(match e {
            Some(e) => repo.find_blob(e.id)?.content().to_vec(),
            None => Vec::new(),
        })
    };
    let mut files = Vec::new();
    for conflict in index.conflicts()? {
        let found = conflict?;
        let path = [&found.our, &found.their, &found.ancestor]
            .into_iter()
            .flatten()
            .next()
            .map(|e| String::from_utf8_lossy(&e.path).into_owned())
            .unwrap_or_default();
        let (a, o, t) = (
            blob_bytes(&found.ancestor)?,
            blob_bytes(&found.our)?,
            blob_bytes(&found.their)?,
        );
        let diff = |old: &[u8], new: &[u8]| -> Result<String> {
            let file_path = Path::new(&path);
            let mut patch =
                git2::Patch::from_buffers(old, Some(file_path), new, Some(file_path), None)?;
            Ok(String::from_utf8_lossy(&patch.to_buf()?).into_owned())
        };
        let hunks = if found.our.is_some() && found.their.is_some() {
            let (ia, io, it) = (
                merge_input(&a, &path),
                merge_input(&o, &path),
                merge_input(&t, &path),
            );
            let mut opts = git2::MergeFileOptions::new();
            opts.our_label(into)
                .their_label(branch)
                .ancestor_label("base")
                .style_diff3(true);
            let merged = git2::merge_file(&ia, &io, &it, Some(&mut opts))?;
            conflict_hunks(&String::from_utf8_lossy(merged.content()))
        } else {
            Vec::new()
        };
        files.push(ConflictFile {
            ours_diff: diff(&a, &o)?,
            theirs_diff: diff(&a, &t)?,
            hunks,
            path,
        });
    }
    Ok(ConflictReport {
        base: base.map(|b| b.to_string()),
        ours: ours.to_string(),
        theirs: theirs.to_string(),
        files,
    })
}

fn merge_input<'a>(bytes: &'a [u8], path: &str) -> git2::MergeFileInput<'a> {
    let mut input = git2::MergeFileInput::new();
    input.content(bytes).path(path);
    input
}

/// The `<<<<<<< … >>>>>>>` blocks of a merged text, markers included.
fn conflict_hunks(merged: &str) -> Vec<String> {
    let mut hunks = Vec::new();
    let mut current: Option<String> = None;
    for line in merged.split_inclusive('\n') {
        if line.starts_with("<<<<<<<") {
            current = Some(String::new());
        }
        if let Some(h) = &mut current {
            h.push_str(line);
            if line.starts_with(">>>>>>>") {
                hunks.extend(current.take());
            }
        }
    }
    hunks
}

#[cfg(test)]
mod tests {
    use super::conflict_hunks;

    #[test]
    fn hunks_are_the_marked_blocks() {
        let text = "a\n<<<<<<< main\nx\n||||||| base\nb\n=======\ny\n>>>>>>> topic\nc\n<<<<<<< main\n1\n=======\n2\n>>>>>>> topic\n";
        let hunks = conflict_hunks(text);
        assert_eq!(hunks.len(), 2);
        assert!(hunks[0].starts_with("<<<<<<< main\nx\n") && hunks[0].ends_with(">>>>>>> topic\n"));
        assert_eq!(hunks[1], "<<<<<<< main\n1\n=======\n2\n>>>>>>> topic\n");
    }
}
