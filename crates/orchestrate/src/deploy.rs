//! What is deployed, according to the trace, and the git state that
//! mirrors it.
//!
//! The trace is the source of truth; refs and the work tree are a cache of
//! it. Every move is recorded first and made second: a `promotion` event,
//! then `refs/ratchet/promoted/<class>`; a `checkout` event, then the work
//! tree. A crash (or a failure) between the two leaves the trace ahead of
//! git, never behind it, and the next command that touches the class or the
//! work tree brings git to what the trace says ([`sync_promotion_ref`],
//! [`recover_checkout`]) and records that it did. A ref moved by anyone
//! else is a fault [`check_promotion_refs`] names.
//!
//! Every checkout ratchet makes goes through `safe_checkout`: it never
//! overwrites an edited, untracked or ignored file, and [`store_paths_in`]
//! refuses a commit that tracks anything inside the store directory (a
//! commit that carries `.ratchet/trace.db` or `.ratchet/policy.toml` would
//! otherwise replace the store, or the policy, by checking it out).

use std::collections::BTreeMap;
use std::path::{Component, Path, PathBuf};

use git2::{ObjectType, Oid, Repository, build::CheckoutBuilder};
use serde::{Deserialize, Serialize};

pub use ratchet_records::{CheckoutRecord, Promoted, PromotionRecord};
/// What runs for each class — the latest promotion, or the heal that moved
/// away from it — is one reading of the trace, shared with the report and
/// drift: `ratchet-records` owns it.
pub use ratchet_records::{DeployedBy, Deployment, deployed, deployments};
use ratchet_trace::{CommitId, EventDraft, Ledger, Receipt, ReservedKind, Store, Verified};

use crate::{Error, Result};

/// Event kind recorded when a heal checks a commit out.
pub const KIND_CHECKOUT: &str = ReservedKind::Checkout.as_str();
/// Event kind recorded for a promotion.
pub const KIND_PROMOTION: &str = ReservedKind::Promotion.as_str();

/// The prefix of every promotion ref.
pub const PROMOTION_REF_PREFIX: &str = "refs/ratchet/promoted/";

/// Stops the process as `kill -9` would, when the environment variable
/// `RATCHET_CRASH_AT` names `step`: the crash tests' way to stop a command
/// between two of its steps. Nothing is flushed or cleaned up (SQLite's
/// committed transactions are durable; nothing else is in flight).
///
/// Only in builds with the `crash-hooks` feature (the test builds:
/// `scripts/test` builds with `--all-features`). Without it this does
/// nothing and the variable is never read: a release `ratchet` — `serve`
/// above all — cannot be made to abort by whoever sets its environment.
#[cfg(feature = "crash-hooks")]
pub(crate) fn crash_point(step: &str) {
    if std::env::var_os("RATCHET_CRASH_AT").is_some_and(|v| v == step) {
        tracing::warn!(step, "RATCHET_CRASH_AT: aborting here");
        std::process::abort();
    }
}

/// Without the `crash-hooks` feature: nothing (see the hooked version).
#[cfg(not(feature = "crash-hooks"))]
#[inline(always)]
pub(crate) fn crash_point(_step: &str) {}

/// The latest own promotion of every class in the verified trace: what
/// each promotion ref must name ([`ratchet_records::promotions`]). What
/// runs after a heal is [`ratchet_records::deployments`].
///
/// # Errors
/// [`Error::Trace`] if a promotion event does not parse.
pub fn promotions_in(view: &Verified) -> Result<BTreeMap<String, Promoted>> {
    Ok(ratchet_records::promotions(view)?)
}

/// A promotion ref that disagrees with the trace.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RefFault {
    /// The ref.
    #[serde(rename = "ref")]
    pub reference: String,
    /// What it points at (`None`: absent although the trace promoted).
    pub points_at: Option<String>,
    /// What the trace says it should (`None`: the trace promoted nothing
    /// for this class).
    pub trace_says: Option<CommitId>,
    /// The ref is symbolic (names another ref, not a commit): whatever it
    /// resolves to now, moving its target moves it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub symbolic: bool,
    /// Why git could not read the ref, when it could not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unreadable: Option<String>,
}

impl std::fmt::Display for RefFault {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if let Some(why) = &self.unreadable {
            return write!(f, "{} cannot be read by git ({why})", self.reference);
        }
        if self.symbolic {
            return write!(
                f,
                "{} is a symbolic ref (resolving to {}): a promotion ref names a commit",
                self.reference,
                self.points_at.as_deref().unwrap_or("nothing")
            );
        }
        match (&self.points_at, &self.trace_says) {
            (Some(at), Some(t)) => write!(
                f,
                "{} points at {at}, but the trace's latest promotion is {t}",
                self.reference
            ),
            (Some(at), None) => write!(
                f,
                "{} points at {at}, but the trace records no promotion of its class",
                self.reference
            ),
            (None, Some(t)) => write!(
                f,
                "{} is missing, but the trace promoted {t}",
                self.reference
            ),
            (None, None) => write!(
                f,
                "{} names no commit, and the trace records no promotion of its class",
                self.reference
            ),
        }
    }
}

/// Compares every `refs/ratchet/promoted/*` of the repository at
/// `repo_path` with the latest promotion of its class in `store`: each ref
/// that points elsewhere, each ref of a class never promoted, and each
/// promoted class whose ref is missing.
///
/// # Errors
/// [`Error::Git`] if the repository cannot be read; as [`promotions_in`].
pub fn check_promotion_refs(repo_path: &Path, view: &Verified) -> Result<Vec<RefFault>> {
    let repo = Repository::discover(repo_path)?;
    let mut trace = promotions_in(view)?;
    let mut faults = Vec::new();
    for name in promotion_ref_names(&repo)? {
        let class = name.trim_start_matches(PROMOTION_REF_PREFIX).to_string();
        let expected = trace.remove(&class).map(|d| d.commit);
        let found_ref = match repo.find_reference(&name) {
            Ok(r) => r,
            Err(e) => {
                faults.push(RefFault {
                    reference: name,
                    points_at: None,
                    trace_says: expected,
                    symbolic: false,
                    unreadable: Some(e.message().to_string()),
                });
                continue;
            }
        };
        let symbolic = found_ref.kind() == Some(git2::ReferenceType::Symbolic);
        let points_at = found_ref
            .resolve()
            .ok()
            .and_then(|resolved| resolved.target())
            .map(|o| o.to_string());
        // A ref of a class never promoted is a fault whatever it resolves
        // to (a dangling symbolic ref included: its target can be made later).
        if symbolic
            || expected.is_none()
            || points_at.as_deref() != expected.as_ref().map(CommitId::as_str)
        {
            faults.push(RefFault {
                reference: name,
                points_at,
                trace_says: expected,
                symbolic,
                unreadable: None,
            });
        }
    }
    if let Some(above) = blocking_ref(&repo, PROMOTION_REF_PREFIX.trim_end_matches('/')) {
        faults.push(RefFault {
            reference: above,
            points_at: None,
            trace_says: None,
            symbolic: false,
            unreadable: Some("a ref here blocks every promotion ref".into()),
        });
    }
    for (class, d) in trace {
        faults.push(RefFault {
            reference: format!("{PROMOTION_REF_PREFIX}{class}"),
            points_at: None,
            trace_says: Some(d.commit),
            symbolic: false,
            unreadable: None,
        });
    }
    Ok(faults)
}

/// Every ref under [`PROMOTION_REF_PREFIX`]: those git lists, and the loose
/// ones it does not (a symbolic ref whose target does not exist yet is
/// skipped by git's listing — and by `git for-each-ref` — but becomes live
/// when someone creates the target).
fn promotion_ref_names(repo: &Repository) -> Result<Vec<String>> {
    let mut names = std::collections::BTreeSet::new();
    for name in repo
        .references_glob(&format!("{PROMOTION_REF_PREFIX}*"))?
        .names()
    {
        names.insert(name?.to_string());
    }
    fn walk(dir: &Path, prefix: &str, out: &mut std::collections::BTreeSet<String>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for e in entries.flatten() {
            let name = format!("{prefix}{}", e.file_name().to_string_lossy());
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                walk(&e.path(), &format!("{name}/"), out);
            } else if !name.ends_with(".lock") {
                out.insert(name);
            }
        }
    }
    walk(
        &repo.commondir().join(PROMOTION_REF_PREFIX),
        PROMOTION_REF_PREFIX,
        &mut names,
    );
    Ok(names.into_iter().collect())
}

/// A promotion recorded: the `promotion` event, then the ref moved.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Promotion {
    /// The ref moved (`refs/ratchet/promoted/<class>`).
    pub reference: String,
    /// The `promotion` event.
    pub receipt: Receipt,
}

fn promotion_ref(class: &str) -> Result<String> {
    let name = format!("{PROMOTION_REF_PREFIX}{class}");
    if !git2::Reference::is_valid_name(&name) {
        return Err(Error::InvalidPath {
            path: PathBuf::from(name),
            reason: "the class does not make a valid git ref name",
        });
    }
    Ok(name)
}

/// Refuses a promotion ref git could not write: refs beneath its name
/// (`refs/ratchet/promoted/<class>/x`) block it, and an event recorded
/// before that is found would claim a move that cannot be made.
fn check_ref_writable(repo: &Repository, name: &str) -> Result<()> {
    let loose_dir = repo.commondir().join(name).is_dir();
    let beneath = repo
        .references_glob(&format!("{name}/*"))?
        .names()
        .next()
        .is_some();
    if loose_dir || beneath {
        return Err(Error::InvalidPath {
            path: PathBuf::from(name),
            reason: "refs exist beneath this promotion ref's name, and git cannot hold both: remove them (`git update-ref -d`), then run the command again",
        });
    }
    if let Some(above) = name
        .rsplit_once('/')
        .and_then(|(dir, _)| blocking_ref(repo, dir))
    {
        return Err(Error::InvalidPath {
            path: PathBuf::from(above),
            reason: "this ref stands where the promotion ref's directory must be, and git cannot hold both: remove it (`git update-ref -d`), then run the command again",
        });
    }
    Ok(())
}

/// A ref (a loose file, or one git knows) standing at `dir` or one of its
/// parents under `refs/`, where a directory of refs must be: it blocks
/// every ref below.
fn blocking_ref(repo: &Repository, dir: &str) -> Option<String> {
    let parts: Vec<&str> = dir.split('/').collect();
    (2..=parts.len())
        .map(|n| parts[..n].join("/"))
        .find(|at| repo.commondir().join(at).is_file() || repo.find_reference(at).is_ok())
}

fn append_promotion(ledger: &mut Ledger, commit: &CommitId, r: PromotionRecord) -> Result<Receipt> {
    Ok(ledger.append(
        EventDraft::reserved(ReservedKind::Promotion, &r)?
            .commit(commit.clone())
            .session("promote"),
    )?)
}

fn move_ref(repo: &Repository, name: &str, oid: Oid, class: &str) -> Result<()> {
    repo.reference(name, oid, true, &format!("ratchet: promoted for {class}"))?;
    Ok(())
}

/// Records a promotion: appends a `promotion` event naming the decision
/// that allowed it, then moves `refs/ratchet/promoted/<class>` to `commit`
/// (with a reflog message). The class's ref is first brought to what the
/// trace says ([`sync_promotion_ref`]), so a crash of an earlier promotion
/// is recovered before this one.
///
/// # Errors
/// [`Error::Git`] if the commit is not in the repository (nothing is
/// recorded) or the ref cannot be written (the trace then says promoted:
/// the next command on the class moves the ref); [`Error::Trace`] if the
/// append fails (the ref is not moved).
pub fn record_promotion(
    repo_path: &Path,
    ledger: &mut Ledger,
    commit: &CommitId,
    class: &str,
    decision_seq: Option<u64>,
) -> Result<Promotion> {
    let repo = Repository::discover(repo_path)?;
    let name = promotion_ref(class)?;
    let oid = Oid::from_str(commit.as_str())?;
    repo.find_commit(oid)?;
    check_ref_writable(&repo, &name)?;
    sync_promotion_ref(repo_path, ledger, class)?;
    let receipt = append_promotion(
        ledger,
        commit,
        PromotionRecord {
            reference: name.clone(),
            class: class.to_string(),
            decision_seq,
            restores: None,
            ref_was: None,
        },
    )?;

    crash_point("promotion:recorded");
    move_ref(&repo, &name, oid, class)?;
    crash_point("promotion:ref-moved");
    Ok(Promotion {
        reference: name,
        receipt,
    })
}

/// Brings `refs/ratchet/promoted/<class>` to the trace's latest promotion of
/// the class, when it points elsewhere (a crash between a promotion's event
/// and its ref, or a foreign move), and records the restoration as a
/// `promotion` event (`restores`: the promotion's seq; `ref_was`: what the
/// ref held). A class the trace never promoted is left alone (a ref of it
/// stays a fault [`check_promotion_refs`] reports).
///
/// # Errors
/// [`Error::Trace`] if the trace does not verify or cannot be written;
/// [`Error::Git`] if the ref cannot be read or written.
pub fn sync_promotion_ref(
    repo_path: &Path,
    ledger: &mut Ledger,
    class: &str,
) -> Result<Option<Receipt>> {
    let repo = Repository::discover(repo_path)?;
    let name = promotion_ref(class)?;
    ledger.refresh()?;
    let latest = promotions_in(ledger.view())?.remove(class);
    let Some(latest) = latest else {
        return Ok(None);
    };
    let now = repo
        .find_reference(&name)
        .ok()
        .and_then(|r| r.resolve().ok())
        .and_then(|r| r.target());
    if now.map(|o| o.to_string()).as_deref() == Some(latest.commit.as_str()) {
        return Ok(None);
    }
    let oid = Oid::from_str(latest.commit.as_str())?;
    repo.find_commit(oid)?;
    check_ref_writable(&repo, &name)?;
    let receipt = append_promotion(
        ledger,
        &latest.commit,
        PromotionRecord {
            reference: name.clone(),
            class: class.to_string(),
            decision_seq: latest.decision_seq,
            restores: Some(latest.seq),
            ref_was: now.map(|o| o.to_string()),
        },
    )?;

    move_ref(&repo, &name, oid, class)?;
    tracing::warn!(%name, to = %latest.commit, "promotion ref restored to what the trace says");
    Ok(Some(receipt))
}

/// The paths of `commit`'s tree that lie inside `store_dir` (or that are a
/// symbolic link into it, or the store directory itself): a checkout of
/// such a commit would write into the store. Empty when the store is
/// outside the repository's work tree.
///
/// # Errors
/// [`Error::Git`] if the commit or its tree cannot be read.
pub fn store_paths_in(repo: &Repository, commit: Oid, store_dir: &Path) -> Result<Vec<String>> {
    let Some(raw_workdir) = repo.workdir() else {
        return Ok(Vec::new());
    };
    let (Ok(workdir), Ok(store)) = (raw_workdir.canonicalize(), absolute(store_dir)) else {
        return Ok(Vec::new());
    };
    // The store's path inside the work tree, as the file system resolves it
    // and as it is written: a store reached through a tracked link (a
    // `.ratchet` link to a directory elsewhere) is inside the work tree by
    // the second, and a checkout that replaces the link re-points the store.
    let lexical = std::path::absolute(store_dir).ok();
    let mut store_rels: Vec<Vec<String>> = Vec::new();
    for (root, at) in [
        (Some(workdir.as_path()), Some(store.as_path())),
        (Some(workdir.as_path()), lexical.as_deref()),
        (Some(raw_workdir), lexical.as_deref()),
    ] {
        let (Some(root), Some(at)) = (root, at) else {
            continue;
        };
        if let Ok(relative) = at.strip_prefix(root) {
            let rel: Vec<String> = relative
                .components()
                .filter_map(|c| match c {
                    Component::Normal(s) => Some(s.to_string_lossy().into_owned()),
                    _ => None,
                })
                .collect();
            if rel.is_empty() {
                // The store is the work tree's root: every checkout writes into it.
                return Ok(vec!["(the store directory is the work tree's root)".into()]);
            }
            if !store_rels.contains(&rel) {
                store_rels.push(rel);
            }
        }
    }
    // Every entry first: a link is judged against the commit's other links.
    let tree = repo.find_commit(commit)?.tree()?;
    let mut entries: Vec<(String, Option<ObjectType>, i32, Oid)> = Vec::new();
    tree.walk(git2::TreeWalkMode::PreOrder, |root, entry| {
        let path = format!("{root}{}", entry.name().unwrap_or("<non-UTF-8>"));
        entries.push((path, entry.kind(), entry.filemode(), entry.id()));
        git2::TreeWalkResult::Ok
    })?;
    let links: std::collections::HashSet<&str> = entries
        .iter()
        .filter(|e| e.2 == 0o120000)
        .map(|e| e.0.as_str())
        .collect();
    let mut found = Vec::new();
    for (path, kind, mode, id) in &entries {
        let parts: Vec<&str> = path.split('/').collect();
        // Inside the store (or the store itself, or one of its parents as a
        // file or link: checking that out replaces the directory).
        let into_store = store_rels.iter().any(|store_rel| {
            let shared = parts
                .iter()
                .zip(store_rel)
                .take_while(|(a, b)| **a == b.as_str())
                .count();
            shared == store_rel.len() || (shared == parts.len() && *kind != Some(ObjectType::Tree))
        });
        let link_into_store = *mode == 0o120000
            && repo.find_blob(*id).ok().is_none_or(|b| {
                link_may_reach(&workdir, path, b.content(), &links, &store)
                    || lexical
                        .as_deref()
                        .is_some_and(|l| link_may_reach(&workdir, path, b.content(), &links, l))
            });
        if into_store {
            found.push(path.clone());
        } else if link_into_store {
            found.push(format!(
                "{path} (a symbolic link that reaches or may reach the store)"
            ));
        }
    }
    Ok(found)
}

fn absolute(path: &Path) -> std::io::Result<PathBuf> {
    match path.canonicalize() {
        Ok(p) => Ok(p),
        Err(_) => Ok(std::env::current_dir()?.join(path)),
    }
}

/// Whether the symbolic link at tree path `link` with target bytes
/// `target` reaches `store`, or cannot be judged and so may. The target is
/// followed one component at a time from where the system would start (the
/// link's directory, or `/`), as an absolute path, and refused when: it is
/// not UTF-8 or holds a NUL (git writes it as a C string: what follows the
/// NUL is not the link); a step lands on another link of the same commit
/// (inside the work tree: resolved as text it would point elsewhere than
/// the system resolves it), or on a symbolic link of this file system
/// outside it; a step lies under `/proc` or `/dev/fd` (their meaning
/// depends on the process); or the end is the store, or inside it,
/// lexically or as this file system resolves it.
fn link_may_reach(
    workdir: &Path,
    link: &str,
    target: &[u8],
    links: &std::collections::HashSet<&str>,
    store: &Path,
) -> bool {
    let Ok(text) = std::str::from_utf8(target) else {
        return true;
    };
    if text.contains('\0') {
        return true;
    }
    let target = Path::new(text);
    let mut at = if target.is_absolute() {
        PathBuf::from("/")
    } else {
        let mut dir = workdir.to_path_buf();
        dir.extend(link.split('/'));
        dir.pop();
        dir
    };
    // Whether the path reached so far is a link the system would follow
    // in a way the text does not say.
    let through_a_link = |at: &Path| match at.strip_prefix(workdir) {
        Ok(rel) if rel.as_os_str().is_empty() => false,
        Ok(rel) => links.contains(rel.to_string_lossy().as_ref()),
        Err(_) => std::fs::symlink_metadata(at).is_ok_and(|m| m.file_type().is_symlink()),
    };
    let special = |at: &Path| at.starts_with("/proc") || at.starts_with("/dev/fd");
    for c in target.components() {
        if through_a_link(&at) || special(&at) {
            return true;
        }
        match c {
            Component::ParentDir => {
                at.pop();
            }
            Component::Normal(n) => at.push(n),
            Component::RootDir | Component::CurDir | Component::Prefix(_) => {}
        }
    }
    special(&at)
        || at.starts_with(store)
        || at.canonicalize().is_ok_and(|real| real.starts_with(store))
}

/// The one checkout ratchet makes: the tree of `commit` into the work tree,
/// in safe mode against the current HEAD — nothing edited, untracked or
/// ignored is overwritten (git's safe mode alone overwrites ignored files),
/// and no checkout filter changes the bytes. `dry_run` checks without
/// writing anything.
///
/// # Errors
/// [`Error::Git`] naming the conflict if anything would be overwritten
/// (nothing was written: a safe checkout checks before it writes).
pub(crate) fn safe_checkout(
    repo: &Repository,
    tree: &git2::Object<'_>,
    dry_run: bool,
) -> Result<()> {
    let mut checkout = CheckoutBuilder::new();
    checkout
        .safe()
        .overwrite_ignored(false)
        .disable_filters(true);
    if dry_run {
        checkout.dry_run();
    }
    repo.checkout_tree(tree, Some(&mut checkout))?;
    Ok(())
}

/// Why `commit` may not be checked out into the work tree of `repo` (with
/// the store at `store_dir`), or `None` when it may: it tracks paths inside
/// the store, or checking it out would overwrite an untracked or ignored
/// file.
///
/// # Errors
/// [`Error::Git`] if the commit cannot be read.
pub fn checkout_refusal(
    repo: &Repository,
    commit: &CommitId,
    store_dir: &Path,
) -> Result<Option<String>> {
    let oid = Oid::from_str(commit.as_str())?;
    if let Some(why) = store_refusal(repo, leaving(repo), oid, store_dir)? {
        return Ok(Some(why));
    }
    let foreign = untracked_in_the_way(repo, oid)?;
    if !foreign.is_empty() {
        return Ok(Some(format!(
            "checking it out would overwrite files it did not write ({}: untracked or ignored)",
            foreign.join(", ")
        )));
    }
    let object = repo.find_object(oid, None)?;
    if let Err(Error::Git(e)) = safe_checkout(repo, &object, true) {
        return Ok(Some(format!(
            "checking it out would overwrite files it did not write ({})",
            e.message()
        )));
    }
    Ok(None)
}

/// The commit HEAD is at: the one a checkout leaves.
pub(crate) fn leaving(repo: &Repository) -> Option<Oid> {
    repo.head().ok().and_then(|h| h.target())
}

/// Why moving the work tree from `from` to `to` would touch the store, if
/// it would: `to` tracks paths inside it (a checkout writes them), or
/// `from` does (a checkout deletes every unmodified file the commit it
/// leaves tracks and the new one lacks — the store's own files included,
/// when a commit versions them).
pub(crate) fn store_refusal(
    repo: &Repository,
    from: Option<Oid>,
    to: Oid,
    store_dir: &Path,
) -> Result<Option<String>> {
    let inside = store_paths_in(repo, to, store_dir)?;
    if !inside.is_empty() {
        return Ok(Some(format!(
            "it tracks paths inside the store directory ({}): checking it out would overwrite the store",
            inside.join(", ")
        )));
    }
    if let Some(from) = from {
        let inside = store_paths_in(repo, from, store_dir)?;
        if !inside.is_empty() {
            return Ok(Some(format!(
                "the commit checked out now ({from}) tracks paths inside the store directory ({}): leaving it would delete or replace them",
                inside.join(", ")
            )));
        }
    }
    Ok(None)
}

/// The paths `commit` would write over that HEAD does not track but the
/// work tree holds (untracked or ignored files, or a file standing where
/// the commit has a directory). libgit2's dry run does not report ignored
/// files in the way, so they are looked for here, before anything moves.
fn untracked_in_the_way(repo: &Repository, commit: Oid) -> Result<Vec<String>> {
    let Some(workdir) = repo.workdir().map(Path::to_path_buf) else {
        return Ok(Vec::new());
    };
    let head_tree = repo.head().ok().and_then(|h| h.peel_to_tree().ok());
    let tracked = |path: &str| {
        head_tree
            .as_ref()
            .is_some_and(|t| t.get_path(Path::new(path)).is_ok())
    };
    let target = repo.find_commit(commit)?.tree()?;
    let mut found = Vec::new();
    target.walk(git2::TreeWalkMode::PreOrder, |root, entry| {
        let path = format!("{root}{}", entry.name().unwrap_or("<non-UTF-8>"));
        let on_disk = std::fs::symlink_metadata(workdir.join(&path));
        let in_the_way = match (entry.kind(), on_disk) {
            // A directory of the commit: only a non-directory is in the way.
            (Some(ObjectType::Tree), Ok(m)) => !m.is_dir() && !tracked(&path),
            (Some(ObjectType::Tree), Err(_)) => false,
            (_, Ok(_)) => !tracked(&path),
            (_, Err(_)) => false,
        };
        if in_the_way {
            found.push(path);
            return git2::TreeWalkResult::Skip;
        }
        git2::TreeWalkResult::Ok
    })?;
    Ok(found)
}

/// Checks `commit` out with a detached HEAD through `safe_checkout`: the
/// work tree first (against the current HEAD), then HEAD (moving HEAD first
/// would make the safe checkout see every file as edited). Refuses a commit
/// that tracks anything inside `store_dir`.
///
/// # Errors
/// [`Error::UnsafeCheckout`] with the reason (nothing was written);
/// [`Error::Git`] otherwise.
pub fn check_out_detached(repo: &Repository, commit: &CommitId, store_dir: &Path) -> Result<()> {
    if let Some(reason) = checkout_refusal(repo, commit, store_dir)? {
        return Err(Error::UnsafeCheckout {
            commit: commit.clone(),
            reason,
        });
    }
    let oid = Oid::from_str(commit.as_str())?;
    let object = repo.find_object(oid, None)?;
    safe_checkout(repo, &object, false)?;
    repo.set_head_detached(oid)?;
    Ok(())
}

/// The latest own `checkout` event, with its seq.
fn latest_checkout(view: &Verified) -> Result<Option<(u64, CheckoutRecord)>> {
    Ok(checkouts_in(view)?.pop())
}

/// This store's own `checkout` events, in trace order, with their seqs
/// ([`ratchet_records::checkouts`]).
///
/// # Errors
/// [`Error::Trace`] if the store cannot be read or an event does not parse.
pub(crate) fn checkouts_in(view: &Verified) -> Result<Vec<(u64, CheckoutRecord)>> {
    Ok(ratchet_records::checkouts(view)?)
}

/// Writes `value` as JSON to `path` and syncs it before returning: the
/// markers a move leaves in the git directory while it is under way.
pub(crate) fn write_synced_json<T: Serialize>(path: &Path, value: &T) -> Result<()> {
    use std::io::Write as _;
    let bytes = serde_json::to_vec(value).map_err(|e| Error::Io {
        path: path.to_path_buf(),
        source: std::io::Error::other(e),
    })?;
    let mut file = std::fs::File::create(path).map_err(crate::io_err(path))?;
    file.write_all(&bytes).map_err(crate::io_err(path))?;
    file.sync_all().map_err(crate::io_err(path))?;
    Ok(())
}

/// A heal's checkout under way: written (and synced) before its `checkout`
/// event is appended, removed once the work tree is moved. Only while it
/// exists does the next command complete a recorded checkout; a person
/// who moves HEAD back after a finished heal is left alone.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct PendingCheckout {
    /// The trace's size before the event: the event is the first checkout after it.
    pub after_seq: u64,
    /// What HEAD pointed at.
    pub head_was: Option<String>,
    /// The commit being checked out.
    pub to: CommitId,
    /// On a keyed store, a MAC of the fields above with the writer key:
    /// someone who can write `.git` but lacks the key cannot replay a
    /// finished heal by planting a marker.
    #[serde(default)]
    pub mac: Option<String>,
}

/// The context of [`PendingCheckout::mac`].
const CHECKOUT_MARKER_CONTEXT: &str = "ratchet 2026-12 pending checkout marker v1";

impl PendingCheckout {
    /// A marker for a checkout of `to` from `head_was` after `after_seq`,
    /// MACed with `store`'s writer key when it has one.
    pub(crate) fn new(
        store: &Store,
        after_seq: u64,
        head_was: Option<String>,
        to: CommitId,
    ) -> Self {
        let mut marker = PendingCheckout {
            after_seq,
            head_was,
            to,
            mac: None,
        };
        marker.mac = marker.expected_mac(store);
        marker
    }

    fn expected_mac(&self, store: &Store) -> Option<String> {
        let body =
            serde_json::json!([store.id(), self.after_seq, self.head_was, self.to]).to_string();
        store
            .authenticate(CHECKOUT_MARKER_CONTEXT, body.as_bytes())
            .map(|h| h.to_hex().to_string())
    }

    /// Whether the marker is one this store's writer left: on a keyed
    /// store its MAC must check (on an unkeyed one anyone can append
    /// anything, a marker adds nothing).
    fn genuine(&self, store: &Store) -> bool {
        match (store.writer_key_id(), self.expected_mac(store)) {
            (None, _) => true,
            (Some(_), Some(mac)) => self.mac.as_deref() == Some(mac.as_str()),
            (Some(_), None) => false,
        }
    }
}

/// In the work tree's own git directory (`repo.path()`, not the common
/// one): linked work trees each have their HEAD, their store and their
/// heals, and one must never act on another's marker.
pub(crate) fn pending_checkout_path(repo: &Repository) -> PathBuf {
    repo.path().join("ratchet-checkout.pending")
}

/// Completes a checkout the trace records but the work tree does not show:
/// when a heal's marker (`PendingCheckout`) is still in the git
/// directory, the latest `checkout` event is the one it announced, and
/// HEAD is still where it was (the checkout was recorded, then the process
/// died or the checkout failed), it checks `to` out and records a
/// `checkout` event that `completes` the first. Otherwise the marker is
/// stale and removed: a HEAD moved anywhere is a person's act.
///
/// # Errors
/// [`Error::Trace`] if the trace does not verify or cannot be written;
/// [`Error::DirtyWorkTree`], [`Error::UnsafeCheckout`], [`Error::Git`] if
/// the checkout cannot be made.
pub fn recover_checkout(repo_path: &Path, ledger: &mut Ledger) -> Result<Option<Receipt>> {
    let repo = Repository::discover(repo_path)?;
    let marker = pending_checkout_path(&repo);
    let Ok(bytes) = std::fs::read(&marker) else {
        return Ok(None);
    };
    let remove = || std::fs::remove_file(&marker).map_err(crate::io_err(&marker));
    let Ok(pending) = serde_json::from_slice::<PendingCheckout>(&bytes) else {
        remove()?;
        return Ok(None);
    };
    ledger.refresh()?;
    let latest = latest_checkout(ledger.view())?;
    let head = leaving(&repo).map(|o| o.to_string());
    if !pending.genuine(ledger.store()) {
        tracing::warn!(marker = %marker.display(), "a checkout marker without a valid MAC: ignored");
        remove()?;
        return Ok(None);
    }
    let announced = latest.filter(|(seq, r)| {
        *seq > pending.after_seq && r.to == pending.to && r.head_was == pending.head_was
    });
    let Some((seq, record)) = announced.filter(|_| {
        head.is_some() && head == pending.head_was && head.as_deref() != Some(pending.to.as_str())
    }) else {
        remove()?;
        return Ok(None);
    };
    crate::git::refuse_dirty(&repo)?;
    let store_dir = ledger.store().dir().to_path_buf();
    if let Some(reason) = checkout_refusal(&repo, &record.to, &store_dir)? {
        return Err(Error::UnsafeCheckout {
            commit: record.to.clone(),
            reason,
        });
    }
    let receipt = ledger.append(
        EventDraft::reserved(
            ReservedKind::Checkout,
            &CheckoutRecord {
                completes: Some(seq),
                reason: format!("completing the checkout recorded at seq {seq}"),
                skipped: Vec::new(),
                head_was: head.clone(),
                ..record.clone()
            },
        )?
        .commit(record.to.clone())
        .session("heal"),
    )?;
    check_out_detached(&repo, &record.to, &store_dir)?;
    remove()?;
    tracing::warn!(to = %record.to, seq, "completed a checkout the trace recorded");
    Ok(Some(receipt))
}

#[cfg(test)]
mod crash_hook_tests {
    /// The child's side of [`the_crash_hook_exists_only_with_its_feature`]:
    /// reaches a crash point whose step `RATCHET_CRASH_AT` names (set by the
    /// parent, never in a normal test run).
    #[test]
    fn crash_point_child_entry() {
        if std::env::var_os("RATCHET_CRASH_HOOK_CHILD").is_none() {
            return;
        }
        super::crash_point("test:step");
        println!("CRASH-POINT-PASSED");
    }

    /// `RATCHET_CRASH_AT` naming a step aborts the process there with the
    /// `crash-hooks` feature, and does nothing without it (a release build).
    /// The step is reached in a child (this test binary), so the variable
    /// is set in its environment only.
    #[test]
    fn the_crash_hook_exists_only_with_its_feature() {
        let out = std::process::Command::new(std::env::current_exe().expect("test binary"))
            .args([
                "deploy::crash_hook_tests::crash_point_child_entry",
                "--exact",
                "--nocapture",
                "--test-threads=1",
            ])
            .env("RATCHET_CRASH_HOOK_CHILD", "1")
            .env("RATCHET_CRASH_AT", "test:step")
            .output()
            .expect("run the child");
        let stdout = String::from_utf8_lossy(&out.stdout);
        if cfg!(feature = "crash-hooks") {
            assert_eq!(
                out.status.code(),
                None,
                "with crash-hooks the step aborts: {stdout}"
            );
            assert!(!stdout.contains("CRASH-POINT-PASSED"), "{stdout}");
        } else {
            assert!(
                out.status.success() && stdout.contains("CRASH-POINT-PASSED"),
                "without crash-hooks RATCHET_CRASH_AT does nothing: {stdout}\n{}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
    }
}
