//! Verify and merge: what a sandbox costs per command, and an in-memory
//! merge of two branches over 1,000 files.
//!
//! `cargo bench -p ratchet-benches --bench orchestrate -- --noplot`

use std::hint::black_box;
use std::process::{Command, Stdio};

use criterion::{Criterion, criterion_group, criterion_main};
use git2::{Oid, Repository, Signature};
use ratchet_orchestrate::{EnvPolicy, Limits, NamespaceSandbox, ProcessSandbox, Sandbox};

/// `true` through a bare `std::process::Command` (the baseline), the process
/// sandbox and the namespace sandbox: the ratios are the sandboxes' overhead.
fn sandbox_overhead(c: &mut Criterion) {
    let argv = vec!["true".to_string()];
    let (limits, env) = (Limits::default(), EnvPolicy::default());
    let mut g = c.benchmark_group("exec_true");
    g.bench_function("bare_command", |b| {
        b.iter(|| {
            let s = Command::new("true")
                .stdin(Stdio::null())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .output()
                .expect("run");
            assert!(s.status.success());
        })
    });
    let mut process = ProcessSandbox::new();
    process.prepare().expect("prepare");
    g.bench_function("process_sandbox", |b| {
        b.iter(|| assert!(process.exec(&argv, &limits, &env).expect("exec").passed))
    });
    process.destroy().expect("destroy");
    match NamespaceSandbox::new() {
        Ok(mut ns) => {
            ns.prepare().expect("prepare");
            g.bench_function("namespace_sandbox", |b| {
                b.iter(|| assert!(ns.exec(&argv, &limits, &env).expect("exec").passed))
            });
            ns.destroy().expect("destroy");
        }
        Err(e) => eprintln!("namespace sandbox skipped: {e}"),
    }
    g.finish();
}

fn commit_tree(
    repo: &Repository,
    parent: Option<Oid>,
    files: &[(String, String)],
    msg: &str,
) -> Oid {
    let sig = Signature::now("bench", "bench@example.invalid").expect("sig");
    let parent = parent.map(|p| repo.find_commit(p).expect("parent"));
    let mut builder = repo
        .treebuilder(parent.as_ref().map(|p| p.tree().expect("tree")).as_ref())
        .expect("builder");
    for (name, content) in files {
        let blob = repo.blob(content.as_bytes()).expect("blob");
        builder.insert(name, blob, 0o100644).expect("insert");
    }
    let tree = repo
        .find_tree(builder.write().expect("write"))
        .expect("tree");
    let parents: Vec<&git2::Commit<'_>> = parent.iter().collect();
    repo.commit(None, &sig, &sig, msg, &tree, &parents)
        .expect("commit")
}

/// Two branches that each change 500 of 1,000 files (disjoint halves):
/// git2's three-way merge in memory and the merged tree written, which is
/// what `merge` does before verifying.
fn in_memory_merge(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("tempdir");
    let repo = Repository::init_bare(dir.path()).expect("init");
    let files = |tag: &str, range: std::ops::Range<usize>| -> Vec<(String, String)> {
        range
            .map(|i| {
                (
                    format!("f{i:04}.txt"),
                    format!("{tag} {i}\nline two\nline three\n"),
                )
            })
            .collect()
    };
    let base = commit_tree(&repo, None, &files("base", 0..1000), "base");
    let ours = commit_tree(&repo, Some(base), &files("ours", 0..500), "ours");
    let theirs = commit_tree(&repo, Some(base), &files("theirs", 500..1000), "theirs");
    let (ours, theirs) = (
        repo.find_commit(ours).expect("ours"),
        repo.find_commit(theirs).expect("theirs"),
    );
    let mut g = c.benchmark_group("merge_1000_files");
    g.bench_function("merge_commits_and_write_tree", |b| {
        b.iter(|| {
            let mut index = repo.merge_commits(&ours, &theirs, None).expect("merge");
            assert!(!index.has_conflicts());
            black_box(index.write_tree_to(&repo).expect("tree"))
        })
    });
    g.finish();
}

criterion_group!(benches, sandbox_overhead, in_memory_merge);
criterion_main!(benches);
