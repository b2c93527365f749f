//! Red team, round 35b: whose evidence counts, again — after the fixes of
//! round 35 (`red_team_35.rs`). Attacks on README "Whose evidence counts"
//! and ARCHITECTURE's row "a producer the class does not trust": a class
//! reads, per side, only the producers its `[class.C.trust]` names;
//! evidence from anyone else is stored, counted in `set_aside`, never read.
//!
//! Each test states the promise; those here pass since their holes were
//! closed. Three holes this round found are written into ARCHITECTURE.md's
//! threat model instead (a cell id claimed by an unkeyed store merged
//! before the real cell, a trusted cell relaying others' evidence, a
//! `decide` token recording measured rejects that keep commits out of
//! heal); their failing tests are on branch h-red2.

use crate::common;

use std::path::PathBuf;
use std::process::Output;

use common::text;
use git2::{Repository, Signature};

/// A git repository (two commits, `base` then `cand`) whose root holds a
/// keyed store at `.ratchet`, the writer key kept outside it.
struct World {
    dir: tempfile::TempDir,
    repo: Repository,
    base: String,
    cand: String,
}

impl World {
    fn new() -> World {
        World::with(&["v1", "v2"]).0
    }

    /// A world of these commits in order (`base` the first, `cand` the
    /// second), with their ids.
    fn with(contents: &[&str]) -> (World, Vec<String>) {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path().join("repo");
        std::fs::create_dir(&root).expect("repo dir");
        let repo = Repository::init(&root).expect("git init");
        let mut w = World {
            dir,
            repo,
            base: String::new(),
            cand: String::new(),
        };
        let ids: Vec<String> = contents.iter().map(|c| w.commit(c.as_bytes(), c)).collect();
        w.base = ids[0].clone();
        w.cand = ids[1].clone();
        w.repo
            .checkout_head(Some(git2::build::CheckoutBuilder::new().force()))
            .expect("checkout");
        let key = w.key();
        let o = common::ratchet(&w.root(), &["init", "--keyed", "--key-file", &key], "");
        assert!(o.status.success(), "{}", text(&o));
        (w, ids)
    }

    fn commit(&self, bytes: &[u8], message: &str) -> String {
        let mut b = self.repo.treebuilder(None).expect("builder");
        let blob = self.repo.blob(bytes).expect("blob");
        b.insert("prompt.txt", blob, 0o100644).expect("insert");
        let tree = self.repo.find_tree(b.write().expect("tree")).expect("tree");
        let sig = Signature::now("red team", "red@example.invalid").expect("sig");
        let parent = self.repo.head().ok().and_then(|h| h.peel_to_commit().ok());
        let parents: Vec<&git2::Commit<'_>> = parent.iter().collect();
        self.repo
            .commit(Some("HEAD"), &sig, &sig, message, &tree, &parents)
            .expect("commit")
            .to_string()
    }

    fn root(&self) -> PathBuf {
        self.repo.workdir().expect("work tree").to_path_buf()
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    fn key(&self) -> String {
        self.path("writer.key").display().to_string()
    }

    /// The key holder's own command, at the repository's root.
    fn cmd(&self, args: &[&str], stdin: &str) -> Output {
        let key = self.key();
        let mut all: Vec<&str> = args.to_vec();
        all.extend(["--key-file", key.as_str()]);
        common::ratchet(&self.root(), &all, stdin)
    }

    #[track_caller]
    fn ok(&self, args: &[&str], stdin: &str) -> Output {
        let o = self.cmd(args, stdin);
        assert!(o.status.success(), "{args:?}: {}", text(&o));
        o
    }

    /// `policy pin` of `text` (the key holder's).
    fn pin(&self, text: &str) {
        let p = self.path("policy.toml");
        std::fs::write(&p, text).expect("policy");
        self.ok(&["policy", "pin", &p.display().to_string()], "");
    }

    /// A plain (unkeyed) store at `name` beside the repository: a cell.
    fn cell(&self, name: &str) -> String {
        let cell = self.path(name).display().to_string();
        let o = common::ratchet(&self.root(), &["--store", &cell, "init"], "");
        assert!(o.status.success(), "{}", text(&o));
        cell
    }

    /// A command on another store (a cell's owner's, no key).
    #[track_caller]
    fn on(&self, store: &str, args: &[&str], stdin: &str) -> Output {
        let mut all = vec!["--store", store];
        all.extend_from_slice(args);
        let o = common::ratchet(&self.root(), &all, stdin);
        assert!(o.status.success(), "{all:?}: {}", text(&o));
        o
    }
}

/// `n` score events (append format) of scorer `quality` on tasks t0..,
/// version "1", each `value`.
fn scores(commit: &str, n: u32, value: f64) -> String {
    (0..n)
        .map(|t| {
            format!(
                "{{\"kind\":\"score\",\"commit\":\"{commit}\",\"payload\":{{\"task\":\"t{t}\",\"scorer\":\"quality\",\"scorer_version\":\"1\",\"value\":{value}}}}}\n"
            )
        })
        .collect()
}

/// Class `q` with the default trust (the key holder's evidence only).
const DEFAULT_TRUST_POLICY: &str = "[class.q]\nscorer = \"quality\"\ntest = \"betting\"\nalpha = 0.05\nbeta = 0.1\ngap = 0.1\nmax_n = 400\n";

/// The key holder's promoted decision (recorded) of a candidate whose
/// only failing test run is an untrusted cell's.
fn promoted_with_an_untrusted_failing_run() -> World {
    let w = World::new();
    w.pin(DEFAULT_TRUST_POLICY);
    w.ok(&["append"], &scores(&w.base, 100, 0.5));
    w.ok(&["append"], &scores(&w.cand, 100, 1.0));
    let cell = w.cell("cell");
    let junit = w.path("junit.xml");
    std::fs::write(
        &junit,
        "<testsuite name=\"security\" tests=\"1\" failures=\"1\"><testcase name=\"test_auth_bypass_blocked\" classname=\"sec\"><failure message=\"x\">boom</failure></testcase></testsuite>\n",
    )
    .expect("junit");
    w.on(
        &cell,
        &[
            "ingest",
            "junit",
            &junit.display().to_string(),
            "--commit",
            &w.cand,
        ],
        "",
    );
    w.ok(&["merge-cells", &cell], "");
    let o = w.ok(
        &[
            "--json",
            "gate",
            "--baseline",
            &w.base,
            "--candidate",
            &w.cand,
            "--class",
            "q",
        ],
        "",
    );
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
    assert_eq!(v["outcome"]["verdict"], "promote", "{v:#}");
    w
}

/// HOLE (low-medium). Promise: untrusted evidence is "stored, counted in
/// `set_aside`, never read". The pull-request comment (`report
/// --markdown`, README "Using ratchet in CI") says under the key holder's
/// PROMOTE "Failed tests of the candidate: … security … failed —
/// sec.test_auth_bypass_blocked", next to "tests | passed": it reads every
/// producer's test runs, here a merged cell's that the class set aside.
/// (Conversely an untrusted passing run is counted in "no failure in the
/// candidate's N recorded runs".)
#[test]
fn the_pr_comment_shows_an_untrusted_cells_failing_run_as_the_candidates() {
    let w = promoted_with_an_untrusted_failing_run();
    let o = w.ok(&["report", "--markdown"], "");
    let md = String::from_utf8_lossy(&o.stdout).to_string();
    assert!(md.contains("PROMOTE"), "{md}");
    assert!(
        !md.contains("test_auth_bypass_blocked"),
        "the comment presents a set-aside cell's failing run as the candidate's:\n{md}"
    );
}

/// HOLE (low-medium), the same in the HTML report's "Failed tests"
/// section (the candidate of the latest decision, every producer's runs).
#[test]
fn the_html_report_shows_an_untrusted_cells_failing_run_as_the_candidates() {
    let w = promoted_with_an_untrusted_failing_run();
    let out = w.path("report.html");
    w.ok(&["report", "--out", &out.display().to_string()], "");
    let html = std::fs::read_to_string(&out).expect("report");
    assert!(
        !html.contains("test_auth_bypass_blocked"),
        "the report lists a set-aside cell's failing run among the candidate's failed tests"
    );
}

/// Was a HOLE (low): a token minted for a session the key holder's own
/// commands write under *later* (`ratchet ingest junit` writes under
/// `junit`, `ratchet bench` under `bench`) made the key holder's later
/// evidence the token's. Such a mint is now refused, naming why.
#[test]
fn a_token_minted_for_a_format_session_takes_the_key_holders_later_ingests() {
    let w = World::new();
    for session in ["junit", "jsonl", "hyperfine", "bench"] {
        let token = w.path("ci.tok").display().to_string();
        let o = w.cmd(
            &[
                "token",
                "mint",
                "--session",
                session,
                "--can",
                "record",
                "--out",
                &token,
            ],
            "",
        );
        assert_eq!(o.status.code(), Some(2), "{session}: {}", text(&o));
        assert!(
            text(&o).contains("key holder's own commands write under"),
            "{}",
            text(&o)
        );
    }
}

/// HOLE (medium, library: `ratchet_orchestrate::{heal, heal_latest,
/// check_recovery}`; the binary's `heal` drops the monitor). Promise
/// (HealOptions::trust): "no other producer picks what heal checks out",
/// and WatchPlan/Monitor::reading: "no producer it does not trust can
/// raise an alarm". But the monitor `heal` returns, restarted on the
/// commit healed to, is `Monitor::start` on the whole view (sources:
/// everyone), and `check_recovery` counts everyone's live scores: after a
/// heal with the default (key holder) trust, a merged cell's 40 in-control
/// scores of the healed commit — and no live score of the key holder's —
/// read as "recovered" (and its out-of-control scores would alarm).
#[test]
fn heals_restarted_monitor_and_recovery_read_an_untrusted_cells_scores() {
    use ratchet_trace::{
        CommitId, Ledger, MergeOptions, Score, Store, StoreOptions, VerifyOptions,
    };
    let around = |c: &CommitId, prefix: &str, mean: f64, n: u32| -> Vec<Score> {
        (0..n)
            .map(|i| {
                Score::new(
                    c.clone(),
                    format!("{prefix}{i}"),
                    "quality",
                    mean + (f64::from(i % 11) - 5.0) * 0.01,
                )
            })
            .collect()
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let repo = Repository::init(dir.path()).expect("init");
    let commits: Vec<CommitId> = ["v1", "v2", "v3"]
        .iter()
        .map(|v| {
            let oid = ratchet_testkit::git::commit_work_file(&repo, "prompt.txt", v, v);
            CommitId::parse(&oid.to_string()).expect("id")
        })
        .collect();
    let mut store =
        Store::create(dir.path().join(".ratchet"), StoreOptions::default()).expect("store");
    for (c, mean) in commits.iter().zip([0.80, 0.85, 0.90]) {
        store
            .record_scores(&around(c, "t", mean, 100), "eval")
            .expect("scores");
    }
    store
        .record_scores(&around(&commits[2], "live", 0.70, 20), "live")
        .expect("live");
    let mut ledger = Ledger::new(store, VerifyOptions::default()).expect("ledger");
    let head = ledger.store().head().expect("head").size;
    let alarm = ratchet_drift::TraceAlarm {
        commit: commits[2].clone(),
        scorer: "quality".into(),
        scorer_version: None,
        alarm: ratchet_drift::Alarm {
            detector: "cusum".into(),
            n: 12,
            statistic: 5.3,
            limit: 5.0,
            shift: ratchet_drift::Shift::Down,
            change_start: 4,
        },
        seq: head,
        change_seq: head - 8,
        baseline_mean: 0.9,
        baseline_sd: 0.03,
        from_seq: None,
        chart: None,
        watch: None,
    };
    let options = ratchet_orchestrate::HealOptions::default();
    let (report, monitor) =
        ratchet_orchestrate::heal(dir.path(), &mut ledger, &alarm, &options).expect("heal");
    assert_eq!(report.chosen.as_ref(), Some(&commits[1]), "{report:#?}");
    let seq = report.checkout_seq.expect("checked out");
    let mut monitor = monitor.expect("restarted monitor");

    // A cell nobody trusts reports 40 in-control live scores of v2.
    let cell_dir = tempfile::tempdir().expect("cell");
    let mut cell = Store::create(cell_dir.path().join("c"), StoreOptions::default()).expect("cell");
    cell.record_scores(&around(&commits[1], "live", 0.85, 40), "live")
        .expect("cell scores");
    drop(cell);
    ledger
        .store_mut()
        .merge_cell(cell_dir.path().join("c"), &MergeOptions::default())
        .expect("merge");
    let r =
        ratchet_orchestrate::check_recovery(&mut ledger, &mut monitor, seq, 30).expect("recovery");
    assert!(
        !r.recovered && r.n == 0,
        "recovery after a key-holder-trusting heal was read from an untrusted cell's scores: {r:?}"
    );
}
