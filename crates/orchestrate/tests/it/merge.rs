//! Merges on real repositories: conflicts, semantic conflicts, the queue,
//! the lock, the compare-and-swap retry, the deploy hook.
//!
//! The test binary doubles as a helper process: `child_entry` does nothing
//! unless `RATCHET_MERGE_CHILD` names a mode.

use crate::common::{argv, last_event, request, sandboxed_merge};

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Duration;

use git2::{Oid, Repository};
use ratchet_orchestrate::Error;
use ratchet_orchestrate::merge::{MergeLock, MergeOutcome, merge_branch, merge_branches};
use ratchet_orchestrate::sandbox::{EnvPolicy, ProcessSandbox};
use ratchet_testkit::git::{commit_files, repo_with_branches};
use ratchet_trace::{Store, StoreOptions};

const MODE: &str = "RATCHET_MERGE_CHILD";
const REPO: &str = "RATCHET_MERGE_REPO";
const MARKER: &str = "RATCHET_MERGE_MARKER";

/// Entry point of helper processes (a no-op in a normal run).
#[test]
fn child_entry() {
    let Ok(mode) = std::env::var(MODE) else {
        return;
    };
    let repo_path = PathBuf::from(std::env::var(REPO).expect("repo"));
    match mode.as_str() {
        // Holds the repository's merge lock until killed.
        "hold-lock" => {
            let repo = Repository::open(&repo_path).expect("repo");
            let _lock = MergeLock::acquire(repo.path()).expect("lock");
            println!("LOCKED");
            loop {
                std::thread::sleep(Duration::from_secs(60));
            }
        }
        // The first time only: a commit lands on main behind the merge's back.
        "advance" => {
            let marker = PathBuf::from(std::env::var(MARKER).expect("marker"));
            if !marker.exists() {
                std::fs::write(&marker, b"done").expect("marker");
                let repo = Repository::open(&repo_path).expect("repo");
                commit_files(
                    &repo,
                    "refs/heads/main",
                    &[("late.txt", Some("late\n"))],
                    "late",
                );
            }
        }
        other => panic!("unknown mode {other}"),
    }
}

struct World {
    dir: tempfile::TempDir,
    repo: Repository,
    store: Store,
}

/// A repository with `main` checked out: a.txt = "x=1", b.txt = "y=1";
/// branch `a` sets x=2, branch `b` sets y=2, branch `c` sets x=3.
fn world() -> World {
    let dir = tempfile::tempdir().expect("tempdir");
    let repo = repo_with_branches(
        &dir.path().join("repo"),
        &[("a.txt", Some("x=1\n")), ("b.txt", Some("y=1\n"))],
        &[
            ("a", "a.txt", "x=2\n"),
            ("b", "b.txt", "y=2\n"),
            ("c", "a.txt", "x=3\n"),
        ],
    );
    let store = Store::create(dir.path().join("store"), StoreOptions::default()).expect("store");
    World { dir, repo, store }
}

fn check_out(repo: &Repository, refname: &str) {
    repo.set_head(refname).expect("set head");
    repo.checkout_head(Some(git2::build::CheckoutBuilder::new().force()))
        .expect("checkout");
}

/// Passes unless both changes are present: each branch alone is fine,
/// the two together break "the build".
fn build_check() -> Vec<String> {
    argv(&[
        "sh",
        "-c",
        "test \"$(cat a.txt)$(cat b.txt)\" != \"x=2y=2\"",
    ])
}

fn tip(repo: &Repository) -> Oid {
    repo.refname_to_id("refs/heads/main").expect("main")
}

#[test]
fn a_clean_merge_lands_exactly_one_commit_and_updates_the_work_tree() {
    let mut w = world();
    let before = tip(&w.repo);
    let branch = w.repo.refname_to_id("refs/heads/a").expect("a");
    let repo_path = w.repo.workdir().expect("work tree").to_path_buf();
    let out = sandboxed_merge(&repo_path, &mut w.store, "a", &request(vec![build_check()]))
        .expect("merge");
    let MergeOutcome::Landed {
        commit,
        previous,
        attempts,
        verification,
        ..
    } = &out
    else {
        panic!("{out:#?}");
    };
    assert_eq!(
        (previous.as_str(), *attempts),
        (before.to_string().as_str(), 1)
    );
    assert!(verification.passed);
    let after = w.repo.find_commit(tip(&w.repo)).expect("tip");
    assert_eq!(after.id().to_string(), *commit);
    assert_eq!(
        after.parent_ids().collect::<Vec<_>>(),
        vec![before, branch],
        "one merge commit"
    );
    assert_eq!(
        std::fs::read_to_string(repo_path.join("a.txt")).expect("read"),
        "x=2\n"
    );
    let last = last_event(&w.store);
    assert_eq!(last.kind, "merge");
    assert_eq!(last.commit.map(|c| c.to_string()), Some(commit.clone()));
    // Merging it again: nothing to do, recorded too.
    let again = sandboxed_merge(&repo_path, &mut w.store, "a", &request(vec![build_check()]))
        .expect("merge");
    assert!(matches!(again, MergeOutcome::UpToDate { .. }), "{again:#?}");
    assert_eq!(tip(&w.repo), after.id());
}

#[test]
fn a_conflict_changes_nothing_and_reports_its_hunks() {
    let mut w = world();
    let repo_path = w.repo.workdir().expect("work tree").to_path_buf();
    sandboxed_merge(
        &repo_path,
        &mut w.store,
        "a",
        &request(vec![argv(&["true"])]),
    )
    .expect("merge a");
    let before = tip(&w.repo);
    let out = sandboxed_merge(
        &repo_path,
        &mut w.store,
        "c",
        &request(vec![argv(&["true"])]),
    )
    .expect("merge c");
    let MergeOutcome::Conflict { report, .. } = &out else {
        panic!("{out:#?}");
    };
    assert_eq!(tip(&w.repo), before, "into untouched");
    assert_eq!(report.files.len(), 1);
    let f = &report.files[0];
    assert_eq!(f.path, "a.txt");
    assert_eq!(f.hunks.len(), 1);
    assert!(
        f.hunks[0].contains("x=2") && f.hunks[0].contains("x=3") && f.hunks[0].contains("x=1"),
        "{f:#?}"
    );
    assert!(
        f.ours_diff.contains("+x=2") && f.theirs_diff.contains("+x=3"),
        "{f:#?}"
    );
    assert_eq!(
        std::fs::read_to_string(repo_path.join("a.txt")).expect("read"),
        "x=2\n"
    );
    let last = last_event(&w.store);
    let payload: serde_json::Value = serde_json::from_slice(&last.payload).expect("json");
    assert_eq!(payload["outcome"], "conflict");
}

#[test]
fn two_branches_that_break_together_are_a_semantic_conflict_in_the_queue() {
    let mut w = world();
    let repo_path = w.repo.workdir().expect("work tree").to_path_buf();
    // Each passes alone.
    for b in ["a", "b"] {
        let alone = ratchet_orchestrate::checks::run_checks(
            &mut w.store,
            &mut ProcessSandbox::new(),
            &ratchet_orchestrate::Source::Revision {
                repo: &repo_path,
                rev: b,
            },
            &request(vec![build_check()]).verify,
        )
        .expect("verify");
        assert!(alone.0.passed, "{b} alone: {:#?}", alone.0);
    }
    let outcomes = merge_branches(
        &repo_path,
        &mut w.store,
        &mut ProcessSandbox::new(),
        &["a".to_string(), "b".to_string()],
        &request(vec![build_check()]),
    )
    .expect("queue");
    assert!(
        matches!(outcomes[0], MergeOutcome::Landed { .. }),
        "{:#?}",
        outcomes[0]
    );
    let MergeOutcome::SemanticConflict {
        verification,
        commit,
        ..
    } = &outcomes[1]
    else {
        panic!("{:#?}", outcomes[1]);
    };
    assert!(!verification.passed);
    let landed = match &outcomes[0] {
        MergeOutcome::Landed { commit, .. } => commit.clone(),
        _ => unreachable!(),
    };
    assert_eq!(tip(&w.repo).to_string(), landed, "b did not land");
    assert_ne!(&landed, commit);
    assert_eq!(
        std::fs::read_to_string(repo_path.join("b.txt")).expect("read"),
        "y=1\n"
    );
}

#[test]
fn concurrent_merges_are_serialized() {
    let w = world();
    let repo_path = w.repo.workdir().expect("work tree").to_path_buf();
    let store_dir = w.store.dir().to_path_buf();
    let log = w.dir.path().join("log");
    let script = format!(
        "echo start >> {0}; sleep 0.4; echo end >> {0}",
        log.display()
    );
    let handles: Vec<_> = ["a", "b"]
        .into_iter()
        .map(|b| {
            let (repo_path, store_dir, script) =
                (repo_path.clone(), store_dir.clone(), script.clone());
            std::thread::spawn(move || {
                let mut store = Store::open(&store_dir, StoreOptions::default()).expect("store");
                merge_branch(
                    &repo_path,
                    &mut store,
                    &mut ProcessSandbox::new(),
                    b,
                    &request(vec![argv(&["sh", "-c", &script])]),
                )
                .expect("merge")
            })
        })
        .collect();
    let outcomes: Vec<MergeOutcome> = handles
        .into_iter()
        .map(|h| h.join().expect("thread"))
        .collect();
    assert!(
        outcomes
            .iter()
            .all(|o| matches!(o, MergeOutcome::Landed { .. })),
        "{outcomes:#?}"
    );
    assert_eq!(
        std::fs::read_to_string(&log).expect("log"),
        "start\nend\nstart\nend\n"
    );
    // The second landed on the first: main has both changes, two merge commits.
    let head = w.repo.find_commit(tip(&w.repo)).expect("tip");
    let first = head.parent(0).expect("first merge");
    assert_eq!(first.parent_count(), 2);
}

#[test]
fn a_lock_held_by_a_killed_process_is_released() {
    let w = world();
    let git_dir = w.repo.path().to_path_buf();
    let mut child = Command::new(std::env::current_exe().expect("exe"))
        .args([
            "merge::child_entry",
            "--exact",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(MODE, "hold-lock")
        .env(REPO, w.repo.workdir().expect("work tree"))
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn");
    let mut lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
    loop {
        match lines.next() {
            Some(Ok(l)) if l.contains("LOCKED") => break,
            Some(Ok(_)) => {}
            other => panic!("the child never took the lock: {other:?}"),
        }
    }
    let lock_file = std::fs::OpenOptions::new()
        .write(true)
        .open(git_dir.join("ratchet-merge.lock"))
        .expect("open");
    assert!(lock_file.try_lock().is_err(), "the child holds it");
    child.kill().expect("kill -9");
    child.wait().expect("reap");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let got = MergeLock::acquire(&git_dir).map(|_| ());
        let _ = tx.send(got);
    });
    rx.recv_timeout(Duration::from_secs(60))
        .expect("the lock was left held by a dead process")
        .expect("acquire");
}

#[test]
fn when_main_moves_during_verification_the_merge_is_made_again_on_the_new_tip() {
    let mut w = world();
    let repo_path = w.repo.workdir().expect("work tree").to_path_buf();
    let marker = w.dir.path().join("marker");
    let mut req = request(vec![argv(&[
        &std::env::current_exe().expect("exe").display().to_string(),
        "merge::child_entry",
        "--exact",
        "--test-threads=1",
    ])]);
    let mut env = EnvPolicy::default();
    env.set.insert(MODE.into(), "advance".into());
    env.set.insert(REPO.into(), repo_path.display().to_string());
    env.set.insert(MARKER.into(), marker.display().to_string());
    req.verify.env = env;
    // The late commit lands on main behind the work tree's back; with main
    // checked out that is a stale (dirty) work tree, so `b` is checked out.
    check_out(&w.repo, "refs/heads/b");
    let out = sandboxed_merge(&repo_path, &mut w.store, "a", &req).expect("merge");
    let MergeOutcome::Landed {
        attempts, previous, ..
    } = &out
    else {
        panic!("{out:#?}");
    };
    assert_eq!(*attempts, 2, "{out:#?}");
    let head = w.repo.find_commit(tip(&w.repo)).expect("tip");
    assert_eq!(head.parent_id(0).expect("parent").to_string(), *previous);
    let late = w
        .repo
        .find_commit(head.parent_id(0).expect("parent"))
        .expect("late");
    assert_eq!(
        late.summary().ok().flatten(),
        Some("late"),
        "merged on the moved tip"
    );

    // With one attempt the same race refuses, and nothing lands.
    let mut w = world();
    check_out(&w.repo, "refs/heads/b");
    std::fs::remove_file(&marker).expect("rm marker");
    req.verify.env.set.insert(
        REPO.into(),
        w.repo.workdir().expect("wt").display().to_string(),
    );
    req.attempts = 1;
    let before_late = tip(&w.repo);
    let out = sandboxed_merge(w.repo.path(), &mut w.store, "a", &req).expect("merge");
    assert!(matches!(out, MergeOutcome::Refused { .. }), "{out:#?}");
    let now = w.repo.find_commit(tip(&w.repo)).expect("tip");
    assert_eq!(
        now.parent_id(0).expect("parent"),
        before_late,
        "only the late commit moved main"
    );
}

#[test]
fn the_deploy_hook_runs_once_after_a_landing_and_never_otherwise() {
    let mut w = world();
    let repo_path = w.repo.workdir().expect("work tree").to_path_buf();
    let log = w.dir.path().join("deploys");
    let mut req = request(vec![build_check()]);
    req.deploy = Some(argv(&[
        "sh",
        "-c",
        &format!("echo deployed >> {}", log.display()),
    ]));
    let out = sandboxed_merge(&repo_path, &mut w.store, "a", &req).expect("merge");
    let MergeOutcome::Landed { deploy, .. } = &out else {
        panic!("{out:#?}")
    };
    assert!(deploy.as_ref().is_some_and(|d| d.passed));
    let out = sandboxed_merge(&repo_path, &mut w.store, "b", &req).expect("merge");
    assert!(
        matches!(out, MergeOutcome::SemanticConflict { .. }),
        "{out:#?}"
    );
    assert_eq!(std::fs::read_to_string(&log).expect("log"), "deployed\n");
}

#[test]
fn bad_requests_are_clear_errors_and_change_nothing() {
    let mut w = world();
    let repo_path = w.repo.workdir().expect("work tree").to_path_buf();
    let before = tip(&w.repo);
    assert!(matches!(
        sandboxed_merge(&repo_path, &mut w.store, "a", &request(vec![])),
        Err(Error::NoCommands)
    ));
    assert!(matches!(
        sandboxed_merge(
            &repo_path,
            &mut w.store,
            "no-such-branch",
            &request(vec![argv(&["true"])])
        ),
        Err(Error::UnknownCommit { .. })
    ));
    let mut wrong_into = request(vec![argv(&["true"])]);
    wrong_into.into = "trunk".into();
    assert!(matches!(
        sandboxed_merge(&repo_path, &mut w.store, "a", &wrong_into),
        Err(Error::UnknownCommit { .. })
    ));
    std::fs::write(repo_path.join("a.txt"), "edited by hand\n").expect("edit");
    match sandboxed_merge(
        &repo_path,
        &mut w.store,
        "a",
        &request(vec![argv(&["true"])]),
    ) {
        Err(Error::DirtyWorkTree { paths }) => assert_eq!(paths, vec!["a.txt".to_string()]),
        other => panic!("{other:?}"),
    }
    assert_eq!(tip(&w.repo), before);
    assert_eq!(
        std::fs::read_to_string(repo_path.join("a.txt")).expect("read"),
        "edited by hand\n"
    );
    assert_eq!(w.store.head().expect("head").size, 0, "nothing recorded");
}
