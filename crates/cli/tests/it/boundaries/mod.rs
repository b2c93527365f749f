//! The inputs of a decision other than the trace, attacked through the
//! binary on a keyed store in a real git repository, verified with its key
//! and a checkpoint held elsewhere: the policy and rubric files beside the
//! store (`policy`), a commit heal may check out (`heal`), the promotion
//! refs (`refs`), a crash between a recorded move and git's (`crash`), a
//! hostile cell's ids (`ids`). Every test asserts the secure behaviour.

use crate::common;
#[path = "../../../../trace/tests/it/common/mod.rs"]
#[allow(unused_imports)]
mod trace_common;

// `RATCHET_CRASH_AT` is only in builds with the `crash-hooks` feature
// (`cargo test --all-features`, as scripts/test runs).
#[cfg(feature = "crash-hooks")]
mod crash;
mod deployed;
mod heal;
mod ids;
mod merge;
mod outside;
mod policy;
mod race;
mod refs;

use std::path::{Path, PathBuf};
use std::process::Output;

use common::{gate_args, ratchet, text};
use git2::{Oid, Repository, Signature};

/// The text of `policy.toml` in these tests: class `prompt`, a gaussian
/// test on `accuracy` (β = 0.1, a gap of 0.05). Higher is better, so a
/// candidate that scores lower is rejected; one line `direction = "lower"`
/// would flip that.
fn policy_text() -> String {
    ratchet_testkit::gap_class_with_beta("prompt", "gaussian", "accuracy", 0.1, 0.05, 2000, "")
}

/// A repository whose commits are built from trees, with a keyed store at
/// `.ratchet` of its root.
struct World {
    dir: tempfile::TempDir,
    repo: Repository,
    key: PathBuf,
    checkpoint: PathBuf,
    /// The store is made keyed (`init --keyed`) and every command gets the key.
    keyed: bool,
}

/// One file of a commit: path, bytes, git file mode.
type Entry<'a> = (&'a str, &'a [u8], i32);

const BLOB: i32 = 0o100644;
const LINK: i32 = 0o120000;

impl World {
    /// A world whose store is keyed.
    fn new() -> World {
        World::with_key(true)
    }

    /// A world whose store is not keyed.
    fn unkeyed() -> World {
        World::with_key(false)
    }

    fn with_key(keyed: bool) -> World {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path().join("repo");
        std::fs::create_dir(&root).expect("repo dir");
        let repo = Repository::init(&root).expect("init");
        let key = dir.path().join("writer.key");
        let checkpoint = dir.path().join("elsewhere.checkpoint");
        World {
            dir,
            repo,
            key,
            checkpoint,
            keyed,
        }
    }

    fn root(&self) -> PathBuf {
        self.repo.workdir().expect("work tree").to_path_buf()
    }

    fn store(&self) -> PathBuf {
        self.root().join(".ratchet")
    }

    fn key_s(&self) -> String {
        self.key.to_str().expect("utf8").to_string()
    }

    /// A commit of regular files (path → bytes) on top of HEAD, moving
    /// HEAD's branch but not the work tree.
    fn commit(&self, files: &[(&str, &[u8])], message: &str) -> String {
        let entries: Vec<Entry<'_>> = files.iter().map(|&(p, b)| (p, b, BLOB)).collect();
        self.commit_entries(&entries, message)
    }

    /// A commit of `files` with their git modes (links, executables).
    fn commit_entries(&self, files: &[Entry<'_>], message: &str) -> String {
        let tree = self.repo.find_tree(self.tree(files)).expect("find tree");
        let sig = Signature::now("ratchet test", "test@example.invalid").expect("sig");
        let parent = self.repo.head().ok().and_then(|h| h.peel_to_commit().ok());
        let parents: Vec<&git2::Commit<'_>> = parent.iter().collect();
        self.repo
            .commit(Some("HEAD"), &sig, &sig, message, &tree, &parents)
            .expect("commit")
            .to_string()
    }

    fn tree(&self, files: &[Entry<'_>]) -> Oid {
        let mut b = self.repo.treebuilder(None).expect("builder");
        let mut dirs: std::collections::BTreeMap<&str, Vec<Entry<'_>>> = Default::default();
        for &(path, bytes, mode) in files {
            match path.split_once('/') {
                Some((dir, rest)) => dirs.entry(dir).or_default().push((rest, bytes, mode)),
                None => {
                    let blob = self.repo.blob(bytes).expect("blob");
                    b.insert(path, blob, mode).expect("insert");
                }
            }
        }
        for (dir, inner) in dirs {
            let sub = self.tree(&inner);
            b.insert(dir, sub, 0o040000).expect("insert dir");
        }
        b.write().expect("write tree")
    }

    fn checkout_head(&self) {
        self.repo
            .checkout_head(Some(git2::build::CheckoutBuilder::new().force()))
            .expect("checkout");
    }

    fn run(&self, args: &[&str], stdin: &str) -> Output {
        ratchet(&self.root(), args, stdin)
    }

    /// `ratchet args…` in `cwd`, with the writer key when the store is keyed.
    fn cmd_in(&self, cwd: &Path, args: &[&str], stdin: &str) -> Output {
        let key = self.key_s();
        let mut all: Vec<&str> = args.to_vec();
        if self.keyed {
            all.extend(["--key-file", key.as_str()]);
        }
        ratchet(cwd, &all, stdin)
    }

    /// [`World::cmd_in`] at the work tree's root.
    fn cmd(&self, args: &[&str], stdin: &str) -> Output {
        self.cmd_in(&self.root(), args, stdin)
    }

    /// The ref HEAD names (`None`: detached).
    fn head_name(&self) -> Option<String> {
        self.repo
            .find_reference("HEAD")
            .ok()
            .and_then(|h| h.symbolic_target().ok().flatten().map(str::to_string))
    }

    fn init(&self) {
        let o = if self.keyed {
            self.run(&["init", "--keyed", "--key-file", &self.key_s()], "")
        } else {
            self.run(&["init"], "")
        };
        assert!(o.status.success(), "{}", text(&o));
    }

    /// A commit not on any branch.
    fn loose_commit(&self, files: &[Entry<'_>], parent: &str, message: &str) -> String {
        let tree = self.repo.find_tree(self.tree(files)).expect("find tree");
        let sig = Signature::now("attacker", "attacker@example.invalid").expect("sig");
        let parent = self
            .repo
            .find_commit(Oid::from_str(parent).expect("oid"))
            .expect("parent");
        self.repo
            .commit(None, &sig, &sig, message, &tree, &[&parent])
            .expect("commit")
            .to_string()
    }

    /// The index as HEAD's tree (what `git reset` leaves).
    fn reset_index_to_head(&self) {
        let tree = self
            .repo
            .head()
            .expect("head")
            .peel_to_tree()
            .expect("tree");
        let mut index = self.repo.index().expect("index");
        index.read_tree(&tree).expect("read tree");
        index.write().expect("write index");
    }

    /// The events of `kind`, as `log --json` lists them.
    fn events(&self, kind: &str) -> Vec<serde_json::Value> {
        let o = self.run(&["log", "--kind", kind, "--json"], "");
        let v: serde_json::Value =
            serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", text(&o)));
        v["events"].as_array().cloned().unwrap_or_default()
    }

    fn size(&self) -> u64 {
        let o = self.cmd(&["status", "--json"], "");
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
        v["overview"]["size"].as_u64().expect("size")
    }

    fn save_checkpoint(&self) {
        let o = self.run(
            &[
                "checkpoint",
                "--out",
                self.checkpoint.to_str().expect("utf8"),
            ],
            "",
        );
        assert!(o.status.success(), "{}", text(&o));
    }

    fn verify_fully(&self, extra: &[&str]) -> Output {
        let cp = self.checkpoint.to_str().expect("utf8").to_string();
        let mut args = vec!["verify-chain", "--checkpoint", cp.as_str()];
        args.extend_from_slice(extra);
        self.cmd(&args, "")
    }

    fn head_commit(&self) -> String {
        self.repo
            .head()
            .expect("head")
            .target()
            .expect("target")
            .to_string()
    }

    /// The store opened in-process with its writer key (what a program
    /// using the library does).
    fn open_keyed(&self) -> ratchet_trace::Store {
        let key = ratchet_trace::WriterKey::read_file(&self.key).expect("key");
        ratchet_trace::Store::open(
            self.store(),
            ratchet_trace::StoreOptions::default().writer_key(key),
        )
        .expect("open")
    }

    /// `main` at a commit of `base` (checked out, HEAD attached) and a
    /// branch `feature` one commit ahead with `feature`'s files: what a
    /// landing starts from. Returns both commits.
    fn main_and_feature(&self, base: &[Entry<'_>], feature: &[Entry<'_>]) -> (String, String) {
        let base_id = self.commit_entries(base, "base");
        self.point_ref("refs/heads/main", &base_id);
        self.repo.set_head("refs/heads/main").expect("head");
        let feature_id = self.commit_entries(feature, "feature");
        self.point_ref("refs/heads/feature", &feature_id);
        self.point_ref("refs/heads/main", &base_id);
        self.checkout_head();
        (base_id, feature_id)
    }

    /// Points `name` at `commit` as anyone with git access can.
    fn point_ref(&self, name: &str, commit: &str) {
        self.repo
            .reference(name, Oid::from_str(commit).expect("oid"), true, "attacker")
            .expect("move ref");
    }

    fn promotion_ref(&self) -> Option<String> {
        self.repo
            .find_reference("refs/ratchet/promoted/prompt")
            .ok()
            .and_then(|r| r.target())
            .map(|o| o.to_string())
    }
}

fn score_lines(
    commit: &str,
    scorer: &str,
    tasks: std::ops::Range<u32>,
    value: impl Fn(u32) -> f64,
) -> String {
    tasks
        .map(|t| {
            format!(
                "{{\"kind\":\"score\",\"commit\":\"{commit}\",\"payload\":{{\"task\":\"t{t:04}\",\"scorer\":\"{scorer}\",\"scorer_version\":\"1\",\"value\":{}}}}}\n",
                value(t)
            )
        })
        .collect()
}

/// A new world whose repository holds two commits of `file`, "v1" then
/// "v2", with HEAD checked out at the second; their ids (base, candidate).
/// No store yet.
fn two_versions(file: &str) -> (World, String, String) {
    let w = World::new();
    let base = w.commit(&[(file, b"v1")], "v1");
    let cand = w.commit(&[(file, b"v2")], "v2");
    w.checkout_head();
    (w, base, cand)
}

/// Two commits, the candidate honestly worse than the baseline on 200
/// tasks, a keyed store with the policy file beside it.
fn gate_world() -> (World, String, String) {
    let (w, base, cand) = two_versions("prompt.txt");
    w.init();
    std::fs::write(w.store().join("policy.toml"), policy_text()).expect("policy");
    record_honest_scores(&w, &base, &cand);
    (w, base, cand)
}

/// 200 tasks of `accuracy`: the baseline about 0.83, the candidate about
/// 0.72 (an honest reject of the candidate; an honest promote the other
/// way round).
fn record_honest_scores(w: &World, base: &str, cand: &str) {
    let mut lines = score_lines(base, "accuracy", 0..200, |t| 0.80 + f64::from(t % 7) * 0.01);
    lines.push_str(&score_lines(cand, "accuracy", 0..200, |t| {
        0.70 + f64::from(t % 5) * 0.01
    }));
    let o = w.cmd(&["append"], &lines);
    assert!(o.status.success(), "{}", text(&o));
}

/// The gate on `w`'s keyed store, whose class may be unpinned.
fn gate(w: &World, base: &str, cand: &str, extra: &[&str]) -> Output {
    let mut args = gate_args(base, cand, "prompt");
    args.push("--allow-unpinned");
    args.extend_from_slice(extra);
    w.cmd(&args, "")
}

/// 100 `quality` scores for each of `means` (commit, mean), then 60 live
/// scores of `deployed` around 0.61, and the alarm `watch --record` raises
/// on them.
fn record_alarm(w: &World, means: &[(&str, f64)], deployed: &str) {
    let mut lines = String::new();
    for &(c, mean) in means {
        lines.push_str(&score_lines(c, "quality", 0..100, |t| {
            mean + (f64::from(t % 11) - 5.0) * 0.004
        }));
    }
    let o = w.cmd(&["append"], &lines);
    assert!(o.status.success(), "{}", text(&o));
    let o = w.cmd(&["status", "--json"], "");
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
    let from = v["overview"]["size"].as_u64().expect("size").to_string();
    let live = score_lines(deployed, "quality", 100..160, |t| {
        0.60 + f64::from(t % 3) * 0.01
    });
    let o = w.cmd(&["append"], &live);
    assert!(o.status.success(), "{}", text(&o));
    let o = w.cmd(
        &[
            "watch", "--commit", deployed, "--scorer", "quality", "--from", &from, "--record",
        ],
        "",
    );
    assert_eq!(o.status.code(), Some(1), "an alarm: {}", text(&o));
}
