//! The inputs of a decision other than the trace, attacked through the
//! binary on a keyed store verified with its key and a checkpoint held
//! elsewhere: the policy file beside the store, a commit heal may check
//! out, the promotion refs, a hostile cell's ids, and a crash between a
//! recorded move and git's.

mod common;

#[path = "../../trace/tests/common/mod.rs"]
#[allow(dead_code, unused_imports)]
mod trace_common;

use std::path::{Path, PathBuf};
use std::process::Output;

use common::{ratchet, text};
use git2::{Oid, Repository, Signature};

/// Higher is better, so a candidate that scores lower is rejected; one
/// line `direction = "lower"` would flip that.
const POLICY: &str = r#"
[class.prompt]
scorer = "accuracy"
test = "gaussian"
alpha = 0.05
beta = 0.1
gap = 0.05
max_n = 2000
"#;

/// A repository whose commits are built from trees (no work tree touched
/// until `checkout`), with a keyed store at `.ratchet` of its root.
struct World {
    dir: tempfile::TempDir,
    repo: Repository,
    key: PathBuf,
    checkpoint: PathBuf,
}

impl World {
    fn new() -> World {
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

    /// A commit of `files` (path → bytes) on top of HEAD, moving HEAD's
    /// branch but not the work tree.
    fn commit(&self, files: &[(&str, &[u8])], message: &str) -> String {
        let tree = self.repo.find_tree(self.tree(files)).expect("find tree");
        let sig = Signature::now("ratchet test", "test@example.invalid").expect("sig");
        let parent = self.repo.head().ok().and_then(|h| h.peel_to_commit().ok());
        let parents: Vec<&git2::Commit<'_>> = parent.iter().collect();
        self.repo
            .commit(Some("HEAD"), &sig, &sig, message, &tree, &parents)
            .expect("commit")
            .to_string()
    }

    /// A tree of `files` (paths with `/` make subtrees), written to the
    /// object database.
    fn tree(&self, files: &[(&str, &[u8])]) -> Oid {
        let mut b = self.repo.treebuilder(None).expect("builder");
        let mut dirs: std::collections::BTreeMap<&str, Vec<(&str, &[u8])>> = Default::default();
        for (path, bytes) in files {
            match path.split_once('/') {
                Some((dir, rest)) => dirs.entry(dir).or_default().push((rest, bytes)),
                None => {
                    let blob = self.repo.blob(bytes).expect("blob");
                    b.insert(path, blob, 0o100644).expect("insert");
                }
            }
        }
        for (dir, inner) in dirs {
            let sub = self.tree(&inner);
            b.insert(dir, sub, 0o040000).expect("insert dir");
        }
        b.write().expect("write tree")
    }

    /// The work tree and index at HEAD, by force (test setup only).
    fn checkout_head(&self) {
        self.repo
            .checkout_head(Some(git2::build::CheckoutBuilder::new().force()))
            .expect("checkout");
    }

    fn run(&self, args: &[&str], stdin: &str) -> Output {
        ratchet(&self.root(), args, stdin)
    }

    fn keyed(&self, args: &[&str], stdin: &str) -> Output {
        let key = self.key_s();
        let mut all: Vec<&str> = args.to_vec();
        all.extend(["--key-file", key.as_str()]);
        self.run(&all, stdin)
    }

    fn init(&self) {
        let o = self.run(&["init", "--keyed", "--key-file", &self.key_s()], "");
        assert!(o.status.success(), "{}", text(&o));
    }

    fn size(&self) -> u64 {
        let o = self.keyed(&["status", "--json"], "");
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
        v["overview"]["size"].as_u64().expect("size")
    }

    /// Writes the checkpoint elsewhere (the owner does after each session).
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

    /// `verify-chain` with the key and the checkpoint: exit code and text.
    fn verify_fully(&self, extra: &[&str]) -> Output {
        let cp = self.checkpoint.to_str().expect("utf8").to_string();
        let mut args = vec!["verify-chain", "--checkpoint", cp.as_str()];
        args.extend_from_slice(extra);
        self.keyed(&args, "")
    }

    fn head_commit(&self) -> String {
        self.repo
            .head()
            .expect("head")
            .target()
            .expect("target")
            .to_string()
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

/// Two commits, the candidate honestly worse than the baseline on 200
/// tasks, a keyed store with the policy file beside it.
fn gate_world() -> (World, String, String) {
    let w = World::new();
    let base = w.commit(&[("prompt.txt", b"v1")], "v1");
    let cand = w.commit(&[("prompt.txt", b"v2")], "v2");
    w.checkout_head();
    w.init();
    std::fs::write(w.store().join("policy.toml"), POLICY).expect("policy");
    let mut lines = score_lines(&base, "accuracy", 0..200, |t| {
        0.80 + f64::from(t % 7) * 0.01
    });
    lines.push_str(&score_lines(&cand, "accuracy", 0..200, |t| {
        0.70 + f64::from(t % 5) * 0.01
    }));
    let o = w.keyed(&["append"], &lines);
    assert!(o.status.success(), "{}", text(&o));
    (w, base, cand)
}

fn gate(w: &World, base: &str, cand: &str, extra: &[&str]) -> Output {
    let mut args = vec![
        "gate",
        "--baseline",
        base,
        "--candidate",
        cand,
        "--class",
        "prompt",
    ];
    args.extend_from_slice(extra);
    w.keyed(&args, "")
}

#[test]
fn an_edited_policy_file_cannot_flip_a_pinned_verdict() {
    let (w, base, cand) = gate_world();
    let policy_path = w.store().join("policy.toml");
    // Unpinned, status says so.
    let o = w.keyed(&["status"], "");
    assert!(text(&o).contains("policy not pinned"), "{}", text(&o));
    // Before pinning, the one-line edit flips the honest reject: the hole.
    std::fs::write(&policy_path, format!("{POLICY}direction = \"lower\"\n")).expect("edit");
    let o = gate(&w, &base, &cand, &["--dry-run"]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "unpinned, the edit promotes: {}",
        text(&o)
    );
    std::fs::write(&policy_path, POLICY).expect("restore");

    // The owner pins the policy, and keeps a checkpoint elsewhere.
    let o = w.keyed(&["policy", "pin", policy_path.to_str().expect("utf8")], "");
    assert!(o.status.success(), "{}", text(&o));
    assert!(text(&o).contains("pinned class prompt"), "{}", text(&o));
    let o = w.keyed(&["policy", "pin", policy_path.to_str().expect("utf8")], "");
    assert!(text(&o).contains("already pinned"), "{}", text(&o));
    let o = gate(&w, &base, &cand, &[]);
    assert_eq!(o.status.code(), Some(1), "honest reject: {}", text(&o));
    w.save_checkpoint();
    let size = w.size();

    // Each edit an attacker can make beside the store is refused, naming
    // the fields, and records nothing.
    let edits = [
        (format!("{POLICY}direction = \"lower\"\n"), "direction"),
        (POLICY.replace("alpha = 0.05", "alpha = 0.4"), "alpha"),
        (
            POLICY.replace("test = \"gaussian\"", "test = \"bernoulli\""),
            "test",
        ),
        (
            POLICY.replace("scorer = \"accuracy\"", "scorer = \"other\""),
            "scorer",
        ),
        (
            format!(
                "{POLICY}required_suites = []\n[[class.prompt.invariant]]\nscorer = \"accuracy\"\nminimum = 0.0\n"
            ),
            "invariant",
        ),
    ];
    for (edited, field) in &edits {
        std::fs::write(&policy_path, edited).expect("edit");
        let o = gate(&w, &base, &cand, &[]);
        assert_eq!(o.status.code(), Some(2), "{field}: {}", text(&o));
        let t = text(&o);
        assert!(
            t.contains("pinned") && t.contains(field) && t.contains("ratchet policy pin"),
            "{field}: {t}"
        );
        // The same file given explicitly, from anywhere, is refused too.
        let elsewhere = w.dir.path().join("attacker.toml");
        std::fs::write(&elsewhere, edited).expect("write");
        let o = gate(
            &w,
            &base,
            &cand,
            &["--policy", elsewhere.to_str().expect("utf8")],
        );
        assert_eq!(o.status.code(), Some(2), "{field}: {}", text(&o));
    }
    assert_eq!(w.size(), size, "no refused decision was recorded");
    // Without the file the pin decides: the honest reject.
    std::fs::remove_file(&policy_path).expect("remove");
    let o = gate(&w, &base, &cand, &["--json"]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
    assert_eq!(v["policy_source"], "pinned");
    // The store verifies with key and checkpoint, and no promote is in it.
    let o = w.verify_fully(&[]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let o = w.run(&["log", "--kind", "decision", "--json"], "");
    assert!(!text(&o).contains("\"promote\""), "{}", text(&o));
    let o = w.keyed(&["status"], "");
    assert!(!text(&o).contains("policy not pinned"), "{}", text(&o));
    assert!(
        text(&o).contains("policy of prompt: pinned"),
        "{}",
        text(&o)
    );
}

#[test]
fn a_pinned_rubric_refuses_an_edited_file() {
    let (w, base, _) = gate_world();
    let rubric = r#"
name = "answer"
[[item]]
id = "correct"
type = "boolean"
weight = 1.0
"#;
    let path = w.dir.path().join("answer.toml");
    std::fs::write(&path, rubric).expect("rubric");
    let o = w.keyed(&["rubric", "pin", path.to_str().expect("utf8")], "");
    assert!(o.status.success(), "{}", text(&o));
    let edited = w.dir.path().join("edited.toml");
    std::fs::write(&edited, rubric.replace("weight = 1.0", "weight = 2.0")).expect("edit");
    let lines = w.dir.path().join("obs.jsonl");
    std::fs::write(
        &lines,
        format!("{{\"task\":\"q1\",\"rubric\":\"answer\",\"observation\":{{\"correct\":true}},\"commit\":\"{base}\"}}\n"),
    )
    .expect("lines");
    let size = w.size();
    let o = w.keyed(
        &[
            "ingest",
            "jsonl",
            lines.to_str().expect("utf8"),
            "--rubric",
            edited.to_str().expect("utf8"),
        ],
        "",
    );
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("pinned at version"), "{}", text(&o));
    let o = w.keyed(&["score", "--rubric", edited.to_str().expect("utf8")], "");
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert_eq!(w.size(), size, "nothing stored");
    // The pinned file itself scores.
    let o = w.keyed(
        &[
            "ingest",
            "jsonl",
            lines.to_str().expect("utf8"),
            "--rubric",
            path.to_str().expect("utf8"),
        ],
        "",
    );
    assert!(o.status.success(), "{}", text(&o));
}

/// Three commits — v1 (0.85), a best-scored v2 authored by the attacker, v3
/// (deployed, 0.90, whose live scores then fall) — a keyed store, and a
/// recorded alarm on v3.
fn heal_world(v2_files: &[(&str, &[u8])]) -> (World, [String; 3]) {
    let w = World::new();
    let v1 = w.commit(
        &[("prompt.txt", b"v1"), (".gitignore", b"local.cfg\n")],
        "v1",
    );
    let v2 = w.commit(v2_files, "v2");
    let v3 = w.commit(
        &[("prompt.txt", b"v3"), (".gitignore", b"local.cfg\n")],
        "v3",
    );
    w.checkout_head();
    w.init();
    let mut lines = String::new();
    for (c, mean) in [(&v1, 0.85), (&v2, 0.95), (&v3, 0.90)] {
        lines.push_str(&score_lines(c, "quality", 0..100, |t| {
            mean + (f64::from(t % 11) - 5.0) * 0.004
        }));
    }
    let o = w.keyed(&["append"], &lines);
    assert!(o.status.success(), "{}", text(&o));
    let from = w.size();
    let live = score_lines(&v3, "quality", 100..160, |t| 0.60 + f64::from(t % 3) * 0.01);
    let o = w.keyed(&["append"], &live);
    assert!(o.status.success(), "{}", text(&o));
    let o = w.keyed(
        &[
            "watch",
            "--commit",
            &v3,
            "--scorer",
            "quality",
            "--from",
            &from.to_string(),
            "--record",
        ],
        "",
    );
    assert_eq!(o.status.code(), Some(1), "an alarm: {}", text(&o));
    w.save_checkpoint();
    (w, [v1, v2, v3])
}

fn heal_skips_a_commit_tracking(path: &str) {
    let (w, [v1, v2, _]) = heal_world(&[("prompt.txt", b"v2"), (path, b"attacker's bytes")]);
    let o = w.keyed(&["heal", "--json"], "");
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
    assert_eq!(v["chosen"], v1.as_str(), "{v:#}");
    let skipped = v["skipped"].to_string();
    assert!(
        skipped.contains(&v2) && skipped.contains("store directory"),
        "{skipped}"
    );
    assert_eq!(w.head_commit(), v1);
    assert_eq!(
        std::fs::read(w.root().join("prompt.txt")).expect("read"),
        b"v1"
    );
    // The store is whole: it verifies with key and checkpoint, holds the
    // checkout with the refusal, and no attacker file is in it.
    let o = w.verify_fully(&[]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(!w.root().join(path).exists() || path.ends_with("trace.db"));
    if path.ends_with("trace.db") {
        let bytes = std::fs::read(w.root().join(path)).expect("read");
        assert!(
            bytes.starts_with(b"SQLite format 3"),
            "the live store is still a database"
        );
    }
    let o = w.run(&["log", "--kind", "checkout", "--json"], "");
    assert!(
        text(&o).contains("store directory"),
        "the refusal is recorded: {}",
        text(&o)
    );
}

#[test]
fn heal_never_checks_out_a_commit_that_tracks_the_store_file() {
    heal_skips_a_commit_tracking(".ratchet/trace.db");
}

#[test]
fn heal_never_checks_out_a_commit_that_tracks_the_policy_beside_the_store() {
    heal_skips_a_commit_tracking(".ratchet/policy.toml");
}

#[test]
fn heal_never_overwrites_an_ignored_file() {
    let (w, [v1, v2, _]) =
        heal_world(&[("prompt.txt", b"v2"), ("local.cfg", b"attacker's config")]);
    std::fs::write(w.root().join("local.cfg"), b"mine").expect("local");
    let o = w.keyed(&["heal", "--json"], "");
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
    assert_eq!(v["chosen"], v1.as_str(), "{v:#}");
    assert!(v["skipped"].to_string().contains(&v2), "{v:#}");
    assert_eq!(
        std::fs::read(w.root().join("local.cfg")).expect("read"),
        b"mine"
    );
}

#[test]
fn a_promotion_ref_moved_outside_the_trace_is_a_fault_and_is_restored() {
    let (w, base, cand) = gate_world();
    let root = w.root();
    let repo_s = root.to_str().expect("utf8").to_string();
    // An initial deployment of the baseline, recorded through the library's
    // own path (a promote of the baseline over a worse commit is not
    // available here, so the honest promotion is of the baseline's class
    // by a gate that promotes: swap the roles).
    let o = gate(&w, &cand, &base, &["--record-promotion", &repo_s]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert_eq!(w.promotion_ref().as_deref(), Some(base.as_str()));
    let o = w.keyed(&["status"], "");
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    // Honest reject of the candidate; then the attacker moves the ref to it.
    let o = gate(&w, &base, &cand, &["--record-promotion", &repo_s]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    w.save_checkpoint();
    w.repo
        .reference(
            "refs/ratchet/promoted/prompt",
            Oid::from_str(&cand).expect("oid"),
            true,
            "attacker",
        )
        .expect("move ref");
    let o = w.keyed(&["status"], "");
    assert_eq!(o.status.code(), Some(6), "{}", text(&o));
    assert!(
        text(&o).contains("REF FAULT") && text(&o).contains(&cand),
        "{}",
        text(&o)
    );
    let o = w.verify_fully(&["--repo", &repo_s]);
    assert_eq!(o.status.code(), Some(6), "{}", text(&o));
    let o = w.keyed(&["status", "--json"], "");
    assert_eq!(o.status.code(), Some(6));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
    assert_eq!(v["deployed"]["prompt"]["commit"], base.as_str(), "{v:#}");
    // A ref of a class never promoted is a fault too.
    w.repo
        .reference(
            "refs/ratchet/promoted/other",
            Oid::from_str(&cand).expect("oid"),
            true,
            "attacker",
        )
        .expect("ref");
    let o = w.keyed(&["status"], "");
    assert_eq!(o.status.code(), Some(6));
    assert!(text(&o).contains("promoted/other"), "{}", text(&o));
    w.repo
        .find_reference("refs/ratchet/promoted/other")
        .expect("ref")
        .delete()
        .expect("delete");
    // The next command that touches the class restores the ref and says so
    // in the trace.
    let o = gate(&w, &base, &cand, &["--record-promotion", &repo_s]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert_eq!(w.promotion_ref().as_deref(), Some(base.as_str()));
    let o = w.run(&["log", "--kind", "promotion", "--json"], "");
    assert!(
        text(&o).contains("restores") && text(&o).contains(&cand),
        "{}",
        text(&o)
    );
    let o = w.keyed(&["status"], "");
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
}

/// Runs `args` with `RATCHET_CRASH_AT=step` and expects the process to die
/// there (SIGABRT, as a kill -9 would leave it: nothing cleaned up).
fn crash(w: &World, step: &str, args: &[&str]) {
    let key = w.key_s();
    let mut all: Vec<&str> = args.to_vec();
    all.extend(["--key-file", key.as_str()]);
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_ratchet"))
        .current_dir(w.root())
        .args(&all)
        .env("RATCHET_CRASH_AT", step)
        .env_remove("RATCHET_STORE")
        .output()
        .expect("spawn");
    assert!(
        !o.status.success(),
        "{step}: the crash point was reached: {}",
        text(&o)
    );
    assert_eq!(
        o.status.code(),
        None,
        "{step}: killed by a signal: {}",
        text(&o)
    );
}

#[test]
fn a_crash_at_any_step_of_a_promotion_is_recovered_by_the_next_command() {
    for step in ["gate:decided", "promotion:recorded", "promotion:ref-moved"] {
        let (w, base, cand) = gate_world();
        let repo_s = w.root().to_str().expect("utf8").to_string();
        // Promote the better commit (roles swapped: `base` wins).
        crash(
            &w,
            step,
            &[
                "gate",
                "--baseline",
                &cand,
                "--candidate",
                &base,
                "--class",
                "prompt",
                "--record-promotion",
                &repo_s,
            ],
        );
        // The ref never moved ahead of the trace: either both say promoted,
        // or the trace does and status names the ref as a fault.
        let o = w.keyed(&["status", "--json"], "");
        let v: serde_json::Value = serde_json::from_slice(&o.stdout)
            .unwrap_or_else(|e| panic!("{step}: {e}: {}", text(&o)));
        let deployed = v["deployed"]["prompt"]["commit"]
            .as_str()
            .map(str::to_string);
        match step {
            "gate:decided" => {
                assert_eq!(deployed, None, "{step}");
                assert_eq!(w.promotion_ref(), None, "{step}");
                assert_eq!(o.status.code(), Some(0), "{step}: {}", text(&o));
            }
            "promotion:recorded" => {
                assert_eq!(deployed.as_deref(), Some(base.as_str()), "{step}");
                assert_eq!(w.promotion_ref(), None, "{step}");
                assert_eq!(o.status.code(), Some(6), "{step}: {}", text(&o));
            }
            _ => {
                assert_eq!(deployed.as_deref(), Some(base.as_str()), "{step}");
                assert_eq!(w.promotion_ref().as_deref(), Some(base.as_str()), "{step}");
                assert_eq!(o.status.code(), Some(0), "{step}: {}", text(&o));
            }
        }
        // The next command on the class brings trace and refs together,
        // with nothing lost: the decision stays recorded.
        let o = gate(&w, &cand, &base, &["--record-promotion", &repo_s]);
        assert_eq!(o.status.code(), Some(0), "{step}: {}", text(&o));
        assert_eq!(w.promotion_ref().as_deref(), Some(base.as_str()), "{step}");
        let o = w.keyed(&["status"], "");
        assert_eq!(o.status.code(), Some(0), "{step}: {}", text(&o));
        let o = w.run(&["log", "--kind", "decision", "--json"], "");
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
        assert_eq!(
            v["events"].as_array().map(Vec::len),
            Some(2),
            "{step}: both decisions kept"
        );
        let o = w.keyed(&["verify-chain", "--repo", &repo_s], "");
        assert_eq!(o.status.code(), Some(0), "{step}: {}", text(&o));
    }
}

#[test]
fn a_crash_at_any_step_of_a_heal_is_recovered_by_the_next_heal() {
    for step in ["heal:recorded", "heal:checked-out"] {
        let (w, [v1, _, v3]) = heal_world(&[("prompt.txt", b"v2"), (".ratchet/trace.db", b"x")]);
        crash(&w, step, &["heal"]);
        let expected_head = if step == "heal:recorded" { &v3 } else { &v1 };
        assert_eq!(&w.head_commit(), expected_head, "{step}");
        // The next heal completes the recorded checkout (or finds the alarm
        // healed) and never heals twice.
        let o = w.keyed(&["heal", "--json"], "");
        assert_eq!(o.status.code(), Some(0), "{step}: {}", text(&o));
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
        assert!(
            v["stayed"]
                .as_str()
                .is_some_and(|s| s.contains("nothing to heal")),
            "{step}: {v:#}"
        );
        assert_eq!(w.head_commit(), v1, "{step}");
        assert_eq!(
            std::fs::read(w.root().join("prompt.txt")).expect("read"),
            b"v1"
        );
        let o = w.run(&["log", "--kind", "checkout", "--json"], "");
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
        let n = v["events"].as_array().map(Vec::len);
        assert_eq!(
            n,
            Some(if step == "heal:recorded" { 2 } else { 1 }),
            "{step}: {v:#}"
        );
        let o = w.verify_fully(&[]);
        assert_eq!(o.status.code(), Some(0), "{step}: {}", text(&o));
    }
}

/// A self-consistent unkeyed cell whose one note has `id`: its chain
/// rebuilt by someone who knows the documented layout.
fn hostile_cell(dir: &Path, id: u128) -> PathBuf {
    let cell = dir.join(format!("cell-{id:x}"));
    let o = ratchet(dir, &["--store", cell.to_str().expect("utf8"), "init"], "");
    assert!(o.status.success(), "{}", text(&o));
    let o = ratchet(
        dir,
        &["--store", cell.to_str().expect("utf8"), "append"],
        "{\"kind\":\"note\",\"payload\":{\"hello\":1}}\n",
    );
    assert!(o.status.success(), "{}", text(&o));
    let o = ratchet(
        dir,
        &["--store", cell.to_str().expect("utf8"), "status", "--json"],
        "",
    );
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
    let cell_id = v["store_id"].as_str().expect("id").to_string();
    {
        let a = trace_common::attacker(&cell);
        a.execute(
            "UPDATE events SET id = ?1 WHERE seq = 1",
            [&id.to_be_bytes()[..]],
        )
        .expect("edit id");
        trace_common::recompute_chain(&a, &cell_id, 1);
    }
    let o = ratchet(
        dir,
        &["--store", cell.to_str().expect("utf8"), "verify-chain"],
        "",
    );
    assert_eq!(
        o.status.code(),
        Some(0),
        "the cell is self-consistent: {}",
        text(&o)
    );
    cell
}

#[test]
fn a_cell_with_extreme_ids_cannot_brick_the_home() {
    let (w, base, cand) = gate_world();
    for id in [u128::MAX, 0] {
        let cell = hostile_cell(w.dir.path(), id);
        let o = w.keyed(&["merge-cells", cell.to_str().expect("utf8")], "");
        assert!(o.status.success(), "{}", text(&o));
    }
    // Every write of the home still works: append, record-score, a
    // recorded decision.
    let o = w.keyed(
        &["append"],
        "{\"kind\":\"note\",\"payload\":{\"after\":true}}\n",
    );
    assert!(o.status.success(), "{}", text(&o));
    let o = w.keyed(
        &[
            "record-score",
            "--commit",
            &cand,
            "--task",
            "zz-extra",
            "--scorer",
            "accuracy",
            "--value",
            "0.7",
        ],
        "",
    );
    assert!(o.status.success(), "{}", text(&o));
    let o = gate(&w, &base, &cand, &[]);
    assert_eq!(
        o.status.code(),
        Some(1),
        "a recorded decision: {}",
        text(&o)
    );
    for _ in 0..3 {
        let o = w.keyed(&["append"], "{\"kind\":\"note\",\"payload\":{}}\n");
        assert!(o.status.success(), "{}", text(&o));
    }
    let o = w.keyed(&["verify-chain"], "");
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
}

#[test]
fn a_crash_at_any_step_of_a_landing_is_completed_by_the_next_merge() {
    for step in [
        "merge:detached",
        "merge:ref-moved",
        "merge:checked-out",
        "merge:landed",
    ] {
        let w = World::new();
        let base = w.commit(&[("base.txt", b"base\n")], "base");
        let base_oid = Oid::from_str(&base).expect("oid");
        w.repo
            .reference("refs/heads/main", base_oid, true, "main")
            .expect("main");
        w.repo.set_head("refs/heads/main").expect("head");
        let feature = w.commit(
            &[("base.txt", b"base\n"), ("feature.txt", b"new\n")],
            "feature",
        );
        w.repo
            .reference(
                "refs/heads/feature",
                Oid::from_str(&feature).expect("oid"),
                true,
                "f",
            )
            .expect("feature");
        w.repo
            .reference("refs/heads/main", base_oid, true, "back")
            .expect("main back");
        w.checkout_head();
        let o = w.run(&["init"], "");
        assert!(o.status.success(), "{}", text(&o));
        let o = std::process::Command::new(env!("CARGO_BIN_EXE_ratchet"))
            .current_dir(w.root())
            .args(["merge", "feature", "--into", "main", "--cmd", "true"])
            .env("RATCHET_CRASH_AT", step)
            .env_remove("RATCHET_STORE")
            .output()
            .expect("spawn");
        assert_eq!(o.status.code(), None, "{step}: died there: {}", text(&o));
        // The next merge finishes the landing (or finds the branch in).
        let o = w.run(&["merge", "feature", "--into", "main", "--cmd", "true"], "");
        assert_eq!(o.status.code(), Some(0), "{step}: {}", text(&o));
        let head = w.repo.head().expect("head");
        assert_eq!(
            head.name().ok(),
            Some("refs/heads/main"),
            "{step}: HEAD attached again"
        );
        let tip = head.target().expect("tip");
        assert!(
            w.repo
                .graph_descendant_of(tip, Oid::from_str(&feature).expect("oid"))
                .expect("graph"),
            "{step}: main holds the feature"
        );
        assert_eq!(
            std::fs::read(w.root().join("feature.txt")).expect("read"),
            b"new\n",
            "{step}"
        );
        let mut opts = git2::StatusOptions::new();
        opts.include_untracked(true);
        let dirty = w.repo.statuses(Some(&mut opts)).expect("status").len();
        assert_eq!(dirty, 0, "{step}: the work tree matches main");
        assert!(
            !w.repo.commondir().join("ratchet-merge.pending").exists(),
            "{step}"
        );
        let o = w.run(&["log", "--kind", "merge", "--json"], "");
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
        assert!(
            !v["events"].as_array().expect("events").is_empty(),
            "{step}: recorded"
        );
        let o = w.run(&["verify-chain"], "");
        assert_eq!(o.status.code(), Some(0), "{step}: {}", text(&o));
    }
}
