//! Red team, issue 11: attacks on `verify` and `merge` by a hostile
//! command or branch, or a careless user. Each failed before its fix (a
//! root command remounting the system in the namespace sandbox, a FIFO that
//! hung ingestion, JSONL scoring the baseline, a ref left moved after a
//! failed checkout, `into` checked out in another work tree, a tag merged
//! for a missing branch, checkout filters making the landed bytes differ
//! from the verified ones, an ignored file overwritten by a landing).

use crate::common::{argv, last_event, request, sandboxed_merge};

use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::Duration;

use git2::{Oid, Repository};
use ratchet_orchestrate::Error;
use ratchet_orchestrate::checks::{CheckSpec, Evaluation, Source, SourceFile, run_checks};
use ratchet_orchestrate::merge::MergeOutcome;
use ratchet_orchestrate::sandbox::{Limits, NamespaceSandbox, Sandbox};
use ratchet_testkit::git::{
    FILE as F, branch, commit_entries as commit_files, force_checkout_head, init_on_main,
};
use ratchet_testkit::{commit as commit_id, gap_class};
use ratchet_trace::{Score, Store, StoreOptions};

fn namespace() -> NamespaceSandbox {
    NamespaceSandbox::new().expect("bubblewrap must work here")
}

fn new_store(dir: &Path) -> Store {
    Store::create(dir.join("store"), StoreOptions::default()).expect("store")
}

struct World {
    dir: tempfile::TempDir,
    repo: Repository,
    store: Store,
}

impl World {
    fn work(&self) -> PathBuf {
        self.repo.workdir().expect("work tree").to_path_buf()
    }
    fn tip(&self) -> Oid {
        self.repo.refname_to_id("refs/heads/main").expect("main")
    }
}

/// `main` checked out with `files`; `branch` at main's tip.
fn world(files: &[(&str, Option<&str>, i32)], branches: &[&str]) -> World {
    let dir = tempfile::tempdir().expect("tempdir");
    let repo = init_on_main(&dir.path().join("repo"));
    let base = commit_files(&repo, "refs/heads/main", files, "base");
    for b in branches {
        branch(&repo, b, base);
    }
    force_checkout_head(&repo);
    let store = new_store(dir.path());
    World { dir, repo, store }
}

// ---------------------------------------------------------------------
// 1. The namespace sandbox is not read-only for a root command.
// ---------------------------------------------------------------------

#[test]
fn namespace_command_cannot_remount_the_system_writable_and_write_the_host() {
    let outside = tempfile::tempdir().expect("dir");
    let target = outside.path().join("pwned.txt");
    let script = format!(
        "mount -o remount,bind,rw / && echo pwned > {}",
        target.display()
    );
    let mut ns = namespace();
    ns.prepare().expect("prepare");
    let r = ns
        .exec(
            &argv(&["sh", "-c", &script]),
            &Limits::default(),
            &ratchet_orchestrate::EnvPolicy::default(),
        )
        .expect("exec");
    ns.destroy().expect("destroy");
    assert!(
        !target.exists(),
        "the namespace sandbox wrote {} on the host (command {:?}, stderr {:?})",
        target.display(),
        r.exit,
        r.stderr_tail
    );
}

// ---------------------------------------------------------------------
// 2. Ingestion follows what the command left at the JUnit path: a FIFO
//    hangs the verifier forever.
// ---------------------------------------------------------------------

/// The verify tests' Bernoulli class, without its required suite.
fn policy_no_suites() -> String {
    gap_class("tool", "bernoulli", "accuracy", 0.15, 3000, "")
}

const FIFO_NAME: &str = "redteam11-fifo.xml";

#[test]
fn ingestion_of_a_fifo_left_by_the_command_does_not_hang_the_verifier() {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let d = tempfile::tempdir().expect("dir");
        let mut store = new_store(d.path());
        let files = vec![SourceFile {
            path: "README".into(),
            bytes: b"x\n".to_vec(),
            mode: ratchet_orchestrate::FileMode::Regular,
        }];
        let spec = CheckSpec {
            commands: vec![argv(&["mkfifo", FIFO_NAME])],
            evaluation: Some(Evaluation {
                suite: None,
                policy: Some(ratchet_gate::Policy::parse(&policy_no_suites()).expect("policy")),
                class: "tool".into(),
                baseline: commit_id(1),
                candidate: Some(commit_id(2)),
                junit: vec![PathBuf::from(FIFO_NAME)],
                jsonl: vec![],
            }),
            ..CheckSpec::default()
        };
        let mut sandbox = namespace();
        let r = run_checks(&mut store, &mut sandbox, &Source::Files(&files), &spec);
        let _ = tx.send(
            r.map(|(r, _)| {
                let notes: Vec<String> = r
                    .evaluation
                    .iter()
                    .flat_map(|e| e.ingested.iter().filter_map(|f| f.note.clone()))
                    .collect();
                (r.passed, notes)
            })
            .map_err(|e| e.to_string()),
        );
    });
    let got = rx.recv_timeout(Duration::from_secs(60));
    if got.is_err() {
        // Unblock the hung reader so the sandbox directory is cleaned up.
        if let Ok(entries) = std::fs::read_dir(std::env::temp_dir()) {
            for e in entries.flatten() {
                let fifo = e.path().join("work").join(FIFO_NAME);
                if e.file_name()
                    .to_string_lossy()
                    .starts_with("ratchet-sandbox-")
                    && fifo.exists()
                {
                    let _ = std::fs::OpenOptions::new().write(true).open(&fifo);
                }
            }
        }
        let _ = rx.recv_timeout(Duration::from_secs(10));
        panic!(
            "run_checks() still blocked 60 s after its command ended: reading the FIFO the command left at the JUnit path"
        );
    }
    // It ended, and for the right reason: the FIFO was refused as a report
    // (not read as an empty one), and nothing was promoted.
    match got {
        Ok(Ok((passed, notes))) => {
            assert!(!passed, "no evidence, no promotion");
            assert_eq!(notes, ["refused: is not a regular file"], "{notes:?}");
        }
        other => panic!("expected a finished verification, got {other:?}"),
    }
}

// ---------------------------------------------------------------------
// 3. A JSONL file the command writes may name any commit: the command
//    records scores for the baseline and flips the gate.
// ---------------------------------------------------------------------

#[test]
fn a_command_cannot_record_evidence_about_the_baseline_and_flip_the_gate() {
    let d = tempfile::tempdir().expect("dir");
    let mut store = new_store(d.path());
    let baseline = commit_id(1);
    // The baseline is perfect.
    let scores: Vec<Score> = (0..300)
        .map(|i| Score::new(baseline.clone(), format!("t{i:03}"), "accuracy", 1.0))
        .collect();
    store.record_scores(&scores, "eval").expect("baseline");
    // The candidate's honest scores: half the tasks fail.
    let honest: String = (0..300)
        .map(|i| {
            format!(
                "{{\"task\":\"t{i:03}\",\"scorer\":\"accuracy\",\"value\":{}}}\n",
                u8::from(i % 2 == 0)
            )
        })
        .collect();
    // The same, plus lines the command adds about the baseline.
    let mut poisoned = honest.clone();
    for _ in 0..20 {
        for i in 0..300 {
            poisoned.push_str(&format!(
                "{{\"task\":\"t{i:03}\",\"scorer\":\"accuracy\",\"value\":0,\"commit\":\"{baseline}\"}}\n"
            ));
        }
    }
    let files = vec![
        SourceFile {
            path: "honest.jsonl".into(),
            bytes: honest.into_bytes(),
            mode: ratchet_orchestrate::FileMode::Regular,
        },
        SourceFile {
            path: "poisoned.jsonl".into(),
            bytes: poisoned.into_bytes(),
            mode: ratchet_orchestrate::FileMode::Regular,
        },
    ];
    let spec = |src: &str, candidate: u8| CheckSpec {
        commands: vec![argv(&["cp", src, "scores.jsonl"])],
        evaluation: Some(Evaluation {
            suite: None,
            policy: Some(ratchet_gate::Policy::parse(&policy_no_suites()).expect("policy")),
            class: "tool".into(),
            baseline: baseline.clone(),
            candidate: Some(commit_id(candidate)),
            junit: vec![],
            jsonl: vec![PathBuf::from("scores.jsonl")],
        }),
        ..CheckSpec::default()
    };
    let mut sandbox = namespace();
    let (control, _) = run_checks(
        &mut store,
        &mut sandbox,
        &Source::Files(&files),
        &spec("honest.jsonl", 2),
    )
    .expect("verify");
    assert!(!control.passed, "control: the honest candidate is worse");
    let (attack, _) = run_checks(
        &mut store,
        &mut sandbox,
        &Source::Files(&files),
        &spec("poisoned.jsonl", 3),
    )
    .expect("verify");
    let e = attack.evaluation.as_ref().expect("evaluated");
    assert!(
        !attack.passed,
        "the same candidate scores passed once the command recorded {} scores, \
         6000 of them about the baseline {baseline}: verdict {:?}",
        e.ingested[0].scores, e.verdict.outcome
    );
}

// ---------------------------------------------------------------------
// 5. The checkout after the compare-and-swap can fail: `into` has moved,
//    the caller gets an error, no merge event, a stale index.
// ---------------------------------------------------------------------

#[test]
fn a_failed_work_tree_update_does_not_leave_into_moved_and_unrecorded() {
    let mut w = world(
        &[("a.txt", Some("x=1\n"), F), ("b.txt", Some("y=1\n"), F)],
        &["a"],
    );
    commit_files(&w.repo, "refs/heads/a", &[("a.txt", Some("x=2\n"), F)], "a");
    let before = w.tip();
    let work = w.work();
    // The verification is long; meanwhile the user edits a.txt (done here
    // by the command itself, which the process sandbox allows, so that the
    // timing is deterministic).
    let edit = format!("echo 'user edit' > {}", work.join("a.txt").display());
    let events_before = w.store.head().expect("head").size;
    let got = sandboxed_merge(
        &work,
        &mut w.store,
        "a",
        &request(vec![argv(&["sh", "-c", &edit])]),
    );
    let moved = w.tip() != before;
    let last = w
        .store
        .event_by_seq(w.store.head().expect("head").size)
        .expect("read")
        .map(|e| e.kind);
    let head_tree = w
        .repo
        .head()
        .expect("head")
        .peel_to_tree()
        .expect("tree")
        .id();
    let index_tree = w
        .repo
        .index()
        .expect("index")
        .write_tree()
        .expect("index tree");
    if let Err(e) = &got {
        assert!(
            !moved,
            "merge returned an error ({e}) but main moved {before} -> {}; events {} -> {}, \
             last event {last:?}; index tree == HEAD tree: {} (a `git commit` now reverts the merge)",
            w.tip(),
            events_before,
            w.store.head().expect("head").size,
            head_tree == index_tree
        );
    }
    assert_eq!(
        std::fs::read_to_string(work.join("a.txt")).expect("read"),
        "user edit\n",
        "the user's edit is kept"
    );
}

// ---------------------------------------------------------------------
// 6. Linked worktrees: `into` checked out (dirty) in another worktree is
//    moved under it.
// ---------------------------------------------------------------------

fn add_worktree(w: &World, name: &str) -> PathBuf {
    let head = w.tip();
    let r = w
        .repo
        .reference(&format!("refs/heads/{name}"), head, false, "wt")
        .expect("branch");
    let path = w.dir.path().join(name);
    let mut opts = git2::WorktreeAddOptions::new();
    opts.reference(Some(&r));
    w.repo.worktree(name, &path, Some(&opts)).expect("worktree");
    path
}

#[test]
fn into_checked_out_dirty_in_another_worktree_is_not_moved() {
    let mut w = world(
        &[("a.txt", Some("x=1\n"), F), ("b.txt", Some("y=1\n"), F)],
        &["a"],
    );
    commit_files(&w.repo, "refs/heads/a", &[("a.txt", Some("x=2\n"), F)], "a");
    let wt = add_worktree(&w, "wt");
    // `main` is checked out in the main work tree, with an uncommitted edit.
    std::fs::write(w.work().join("b.txt"), "y=local edit\n").expect("edit");
    let before = w.tip();
    let got = sandboxed_merge(&wt, &mut w.store, "a", &request(vec![argv(&["true"])]));
    let status = std::process::Command::new("git")
        .args(["status", "--short"])
        .current_dir(w.work())
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
        .unwrap_or_default();
    assert!(
        !matches!(got, Ok(MergeOutcome::Landed { .. })),
        "main ({before} -> {}) moved under its dirty checkout; `git status` there now shows \
         the merge reverted:\n{status}",
        w.tip()
    );
}

// ---------------------------------------------------------------------
// 8. An ignored file of the user's is overwritten by the landing.
// ---------------------------------------------------------------------

#[test]
fn a_landing_does_not_overwrite_a_users_ignored_file() {
    let mut w = world(&[(".gitignore", Some("local.env\n"), F)], &["evil"]);
    commit_files(
        &w.repo,
        "refs/heads/evil",
        &[("local.env", Some("TOKEN=attacker\n"), F)],
        "add local.env",
    );
    let work = w.work();
    std::fs::write(work.join("local.env"), "TOKEN=my-secret\n").expect("user file");
    let before = w.tip();
    let out = sandboxed_merge(&work, &mut w.store, "evil", &request(vec![argv(&["true"])]));
    let now = std::fs::read_to_string(work.join("local.env")).expect("read");
    assert_eq!(
        now,
        "TOKEN=my-secret\n",
        "the user's uncommitted (ignored) file was replaced; outcome {:?}",
        out.as_ref().map(|o| o.word())
    );
    // Refused and recorded, with main put back where it was.
    assert!(matches!(out, Ok(MergeOutcome::Refused { .. })), "{out:?}");
    assert_eq!(w.tip(), before);
    let last = last_event(&w.store);
    assert_eq!(last.kind, "merge");
}

// ---------------------------------------------------------------------
// 9. A branch that does not exist is resolved as any revision.
// ---------------------------------------------------------------------

#[test]
fn a_branch_that_does_not_exist_is_an_unknown_commit() {
    let mut w = world(&[("a.txt", Some("x=1\n"), F)], &["topic"]);
    let c = commit_files(
        &w.repo,
        "refs/heads/topic",
        &[("a.txt", Some("x=2\n"), F)],
        "t",
    );
    // `release` is a tag, not a branch; the branch is gone.
    w.repo
        .tag_lightweight("release", &w.repo.find_object(c, None).expect("obj"), false)
        .expect("tag");
    w.repo
        .find_reference("refs/heads/topic")
        .expect("ref")
        .delete()
        .expect("delete");
    let work = w.work();
    let got = sandboxed_merge(
        &work,
        &mut w.store,
        "release",
        &request(vec![argv(&["true"])]),
    );
    assert!(
        matches!(got, Err(Error::UnknownCommit { .. })),
        "merging the non-branch `release`: {:?}",
        got.map(|o| o.word())
    );
}

// ---------------------------------------------------------------------
// 9. The sandbox gets raw blobs; the landed work tree gets git's checkout
//    filters (.gitattributes eol): what is deployed is not what was verified.
// ---------------------------------------------------------------------

#[test]
fn the_deployed_work_tree_is_what_was_verified() {
    let mut w = world(&[("run.sh", Some("exit 0\n"), F)], &["evil"]);
    commit_files(
        &w.repo,
        "refs/heads/evil",
        &[
            (".gitattributes", Some("*.sh text eol=crlf\n"), F),
            ("run.sh", Some("true\n"), F),
        ],
        "tidy run.sh",
    );
    let work = w.work();
    let mut req = request(vec![argv(&["sh", "run.sh"])]);
    req.deploy = Some(argv(&["sh", "run.sh"]));
    let out = sandboxed_merge(&work, &mut w.store, "evil", &req).expect("merge");
    if let MergeOutcome::Landed {
        verification,
        deploy: Some(d),
        ..
    } = &out
    {
        assert!(
            d.passed,
            "verified `sh run.sh` passed ({}), the same command on the landed work tree fails: \
             {:?} {:?}; run.sh there is {:?}",
            verification.passed,
            d.exit,
            d.stderr_tail,
            std::fs::read_to_string(work.join("run.sh")).unwrap_or_default()
        );
    }
}
