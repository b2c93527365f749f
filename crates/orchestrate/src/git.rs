//! What a person types for a commit, the repository around a directory,
//! and the work tree's uncommitted changes.

use std::path::Path;

use git2::{Repository, StatusOptions};

use ratchet_trace::CommitId;

use crate::{Error, Result};

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
