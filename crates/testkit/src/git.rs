//! Repositories for the tests of verify, merge and heal, built through
//! libgit2 (no git binary, no user configuration).

use std::path::Path;

use git2::{Oid, Repository, RepositoryInitOptions, Signature};

/// A regular file's git mode.
pub const FILE: i32 = 0o100644;

/// The author and committer of every test commit.
pub fn signature() -> Signature<'static> {
    Signature::now("ratchet test", "test@example.invalid").expect("signature")
}

/// A new repository at `path` whose first branch is `main`.
pub fn init_on_main(path: &Path) -> Repository {
    let mut opts = RepositoryInitOptions::new();
    opts.initial_head("main");
    Repository::init_opts(path, &opts).expect("init")
}

/// Commits `files` (name, content or `None` to delete) on `refname`,
/// parented on its tip if it has one.
pub fn commit_files(
    repo: &Repository,
    refname: &str,
    files: &[(&str, Option<&str>)],
    msg: &str,
) -> Oid {
    let entries: Vec<(&str, Option<&str>, i32)> =
        files.iter().map(|&(n, c)| (n, c, FILE)).collect();
    commit_entries(repo, refname, &entries, msg)
}

/// Commits `files` (path, content or `None` to delete, git mode) on
/// `refname`, parented on its tip if it has one. Paths may have
/// directories.
pub fn commit_entries(
    repo: &Repository,
    refname: &str,
    files: &[(&str, Option<&str>, i32)],
    msg: &str,
) -> Oid {
    let parent = repo
        .refname_to_id(refname)
        .ok()
        .map(|id| repo.find_commit(id).expect("parent"));
    let mut index = git2::Index::new().expect("index");
    if let Some(p) = &parent {
        index
            .read_tree(&p.tree().expect("tree"))
            .expect("read tree");
    }
    for (name, content, mode) in files {
        match content {
            Some(c) => {
                let blob = repo.blob(c.as_bytes()).expect("blob");
                let entry = git2::IndexEntry {
                    ctime: git2::IndexTime::new(0, 0),
                    mtime: git2::IndexTime::new(0, 0),
                    dev: 0,
                    ino: 0,
                    mode: *mode as u32,
                    uid: 0,
                    gid: 0,
                    file_size: c.len() as u32,
                    id: blob,
                    flags: 0,
                    flags_extended: 0,
                    path: name.as_bytes().to_vec(),
                };
                index.add(&entry).expect("add");
            }
            None => index.remove_path(Path::new(name)).expect("remove"),
        }
    }
    let tree = index.write_tree_to(repo).expect("tree");
    commit_tree(repo, refname, tree, parent.as_ref(), msg)
}

/// Points the new branch `name` at `at`.
pub fn branch(repo: &Repository, name: &str, at: Oid) {
    repo.reference(&format!("refs/heads/{name}"), at, false, "branch")
        .expect("branch");
}

/// Makes the work tree and the index HEAD's, whatever they held.
pub fn force_checkout_head(repo: &Repository) {
    repo.checkout_head(Some(git2::build::CheckoutBuilder::new().force()))
        .expect("checkout");
}

/// A repository at `path` with `main` checked out holding `base`, and
/// each `(branch, file, content)` a branch off it with one commit that
/// writes `file`.
pub fn repo_with_branches(
    path: &Path,
    base: &[(&str, Option<&str>)],
    branches: &[(&str, &str, &str)],
) -> Repository {
    let repo = init_on_main(path);
    let tip = commit_files(&repo, "refs/heads/main", base, "base");
    for &(name, file, content) in branches {
        branch(&repo, name, tip);
        commit_files(
            &repo,
            &format!("refs/heads/{name}"),
            &[(file, Some(content))],
            name,
        );
    }
    force_checkout_head(&repo);
    repo
}

/// Writes `content` to `file` in the work tree, stages it and commits it on
/// HEAD (parented on HEAD's commit if there is one).
pub fn commit_work_file(repo: &Repository, file: &str, content: &str, msg: &str) -> Oid {
    let root = repo.workdir().expect("work tree");
    std::fs::write(root.join(file), content).expect("write");
    let mut index = repo.index().expect("index");
    index.add_path(Path::new(file)).expect("add");
    index.write().expect("write index");
    let tree = index.write_tree().expect("tree");
    let parent = repo.head().ok().and_then(|h| h.peel_to_commit().ok());
    commit_tree(repo, "HEAD", tree, parent.as_ref(), msg)
}

/// Commits `tree` on `refname` with `parent` (none: a root commit).
fn commit_tree(
    repo: &Repository,
    refname: &str,
    tree: Oid,
    parent: Option<&git2::Commit<'_>>,
    msg: &str,
) -> Oid {
    let tree = repo.find_tree(tree).expect("find tree");
    let parents: Vec<&git2::Commit<'_>> = parent.into_iter().collect();
    repo.commit(
        Some(refname),
        &signature(),
        &signature(),
        msg,
        &tree,
        &parents,
    )
    .expect("commit")
}
