//! Red team, round 35b: whose evidence counts, again — after the fixes of
//! round 35 (`red_team_35.rs`). Attacks on README "Whose evidence counts"
//! and ARCHITECTURE's row "a producer the class does not trust": a class
//! reads, per side, only the producers its `[class.C.trust]` names;
//! evidence from anyone else is stored, counted in `set_aside`, never read.
//!
//! Each test states the promise and fails while the hole is open.

use crate::common;

use std::path::{Path, PathBuf};
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

    /// The key holder's dry-run gate of class `q`, as JSON.
    fn gate(&self) -> serde_json::Value {
        let o = self.cmd(
            &[
                "--json",
                "gate",
                "--baseline",
                &self.base,
                "--candidate",
                &self.cand,
                "--class",
                "q",
                "--dry-run",
            ],
            "",
        );
        serde_json::from_slice(&o.stdout).unwrap_or_else(|_| panic!("json: {}", text(&o)))
    }
}

/// A store's id, as its `meta` table holds it.
fn store_id(store: &str) -> String {
    let db = Path::new(store).join("trace.db");
    let c = rusqlite::Connection::open(db).expect("open");
    c.query_row("SELECT value FROM meta WHERE key = 'store_id'", [], |r| {
        r.get(0)
    })
    .expect("store id")
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

/// Class `q` on scorer `quality` (betting), the candidate side trusting
/// the key holder and the cell `trusted_cell` (a fleet machine, as README
/// shows: `candidate = ["key_holder", "cell:STORE_ID"]`).
fn policy_trusting_cell(trusted_cell: &str) -> String {
    format!(
        "[class.q]\nscorer = \"quality\"\ntest = \"betting\"\nalpha = 0.05\nbeta = 0.1\ngap = 0.1\nmax_n = 400\n\
         [class.q.trust]\nbaseline = [\"key_holder\"]\ncandidate = [\"key_holder\", \"cell:{trusted_cell}\"]\n"
    )
}

/// Class `q` with the default trust (the key holder's evidence only).
const DEFAULT_TRUST_POLICY: &str = "[class.q]\nscorer = \"quality\"\ntest = \"betting\"\nalpha = 0.05\nbeta = 0.1\ngap = 0.1\nmax_n = 400\n";

/// HOLE (high). Promise: a class reads only the producers its trust
/// names; "a merged cell" it does not trust is set aside. A cell's
/// identity in the home is `cell:STORE_ID`, and the store id is whatever
/// the cell's own file says: nothing binds it to the trusted cell (not its
/// key — the trusted cell here is keyed, the forgery is not and merges
/// without one). An attacker's cell whose `meta.store_id` is rewritten to
/// the trusted cell's id (before its first event; the file is the
/// attacker's own, the append-only trigger put back) is merged, and its
/// scores are read as the trusted cell's: a candidate only the attacker
/// measured is promoted, nothing set aside.
#[test]
fn a_cell_that_claims_a_trusted_cells_store_id_is_read_as_that_cell() {
    let w = World::new();
    // The cell the class trusts: a keyed fleet machine.
    let trusted = w.path("fleet-7").display().to_string();
    let cell_key = w.path("fleet-7.key").display().to_string();
    let o = common::ratchet(
        &w.root(),
        &[
            "--store",
            &trusted,
            "init",
            "--keyed",
            "--key-file",
            &cell_key,
        ],
        "",
    );
    assert!(o.status.success(), "{}", text(&o));
    let trusted_id = store_id(&trusted);
    w.pin(&policy_trusting_cell(&trusted_id));
    w.ok(&["append"], &scores(&w.base, 100, 0.5));

    // The attacker's cell, claiming the fleet machine's id.
    let forged = w.cell("attacker");
    {
        let c = rusqlite::Connection::open(Path::new(&forged).join("trace.db")).expect("open");
        let trigger: String = c
            .query_row(
                "SELECT sql FROM sqlite_master WHERE name = 'meta_no_update'",
                [],
                |r| r.get(0),
            )
            .expect("trigger");
        c.execute_batch("DROP TRIGGER meta_no_update")
            .expect("drop");
        c.execute(
            "UPDATE meta SET value = ?1 WHERE key = 'store_id'",
            [&trusted_id],
        )
        .expect("update");
        c.execute_batch(&trigger).expect("trigger back");
    }
    w.on(&forged, &["append"], &scores(&w.cand, 100, 1.0));
    let merged = w.cmd(&["merge-cells", &forged], "");

    let v = w.gate();
    assert!(
        !merged.status.success() || v["outcome"]["verdict"] != "promote",
        "a cell that only claimed the trusted cell's id ({trusted_id}) got its candidate promoted: {v:#}"
    );
}

/// HOLE (medium). Promise: evidence of a merged cell the class does not
/// trust is never read — and ARCHITECTURE: a record token's evidence
/// "counts in a class only if the pinned policy names its session". The
/// home knows an event only by the cell it was merged from: a class that
/// trusts cell A (`cell:A`) reads everything A relayed — here the scores
/// of cell B, which nobody trusts, merged into A (the same holds for the
/// evidence of A's record tokens, which A's own classes set aside). B
/// promotes a candidate only B measured.
#[test]
fn a_trusted_cell_relays_an_untrusted_cells_evidence_as_its_own() {
    let w = World::new();
    let relay = w.cell("relay-a");
    w.pin(&policy_trusting_cell(&store_id(&relay)));
    w.ok(&["append"], &scores(&w.base, 100, 0.5));
    let stranger = w.cell("stranger-b");
    w.on(&stranger, &["append"], &scores(&w.cand, 100, 1.0));
    w.on(&relay, &["merge-cells", &stranger], "");
    w.ok(&["merge-cells", &relay], "");
    let v = w.gate();
    assert_ne!(
        v["outcome"]["verdict"], "promote",
        "cell B's scores, relayed by trusted cell A, promoted a candidate only B measured: {v:#}"
    );
}

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

/// HOLE (low). Promise: the key holder is "this store's own events under
/// any session no capability token was minted for", and a token may not
/// take a session that already holds key-holder evidence. But nothing
/// stops a mint for a session the key holder's own commands write under
/// *later*: `ratchet ingest` writes under the format's name (`junit`,
/// `jsonl`, `hyperfine`…), `ratchet bench` under `bench`. After a record
/// token is minted for `junit` (the natural name of a CI job that uploads
/// JUnit), the key holder's own `ratchet ingest junit` of a failing
/// required suite is a token's run, set aside: the measured reject
/// (which holds heal off the commit) becomes "no recorded run" (missing
/// evidence, which does not).
#[test]
fn a_token_minted_for_a_format_session_takes_the_key_holders_later_ingests() {
    let w = World::new();
    w.pin(&DEFAULT_TRUST_POLICY.replace(
        "max_n = 400\n",
        "max_n = 400\nrequired_suites = [\"security\"]\n",
    ));
    w.ok(&["append"], &scores(&w.base, 100, 0.5));
    w.ok(&["append"], &scores(&w.cand, 100, 1.0));
    let token = w.path("ci.tok").display().to_string();
    w.ok(
        &[
            "token",
            "mint",
            "--session",
            "junit",
            "--can",
            "record",
            "--out",
            &token,
        ],
        "",
    );
    let junit = w.path("junit.xml");
    std::fs::write(
        &junit,
        "<testsuite name=\"security\" tests=\"1\" failures=\"1\"><testcase name=\"test_auth\" classname=\"sec\"><failure message=\"x\">boom</failure></testcase></testsuite>\n",
    )
    .expect("junit");
    // The key holder's own ingestion, with the key, no server involved.
    w.ok(
        &[
            "ingest",
            "junit",
            &junit.display().to_string(),
            "--commit",
            &w.cand,
        ],
        "",
    );
    let v = w.gate();
    assert_eq!(
        v["outcome"]["cause"], "measured",
        "the key holder's own failing required suite was set aside as token session `junit`'s: {v:#}"
    );
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

/// Starts `ratchet serve` on a socket beside the repository (with the
/// writer key) and waits for its ready line.
fn serve(w: &World) -> std::process::Child {
    use std::io::BufRead;
    let socket = w.path("serve.sock").display().to_string();
    let key = w.key();
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_ratchet"))
        .args([
            "--json",
            "serve",
            "--socket",
            &socket,
            "--key-file",
            &key,
            "--rate",
            "1000000",
            "--burst",
            "1000000",
        ])
        .current_dir(w.root())
        .env_remove("RATCHET_STORE")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("spawn the server");
    let stdout = child.stdout.take().expect("stdout");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut line = String::new();
        let _ = std::io::BufReader::new(stdout).read_line(&mut line);
        let _ = tx.send(line);
    });
    let line = rx
        .recv_timeout(std::time::Duration::from_secs(120))
        .expect("the server printed its ready line");
    assert!(line.contains("socket"), "{line}");
    child
}

fn stop(mut child: std::process::Child) {
    let _ = std::process::Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while std::time::Instant::now() < deadline {
        if let Ok(Some(_)) = child.try_wait() {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let _ = child.kill();
    let _ = child.wait();
}

/// `n` scores of `scorer` on tasks t{from}.., version "1", `value(t)`.
fn scores_of(commit: &str, scorer: &str, from: u32, n: u32, value: impl Fn(u32) -> f64) -> String {
    (from..from + n)
        .map(|t| {
            format!(
                "{{\"kind\":\"score\",\"commit\":\"{commit}\",\"payload\":{{\"task\":\"t{t:04}\",\"scorer\":\"{scorer}\",\"scorer_version\":\"1\",\"value\":{}}}}}\n",
                value(t)
            )
        })
        .collect()
}

/// HOLE (medium). Promise: an untrusted producer cannot "pick what heal
/// checks out"; heal skips a commit "the gate rejected on measured
/// evidence" — round 35 closed the way a `decide` token *lifts* such a
/// reject (a promote against a weak baseline of its choosing), not the
/// mirror: a `decide` token *imposes* one. It asks the gate (through the
/// server, pinned policy, key-holder evidence only, recorded) about
/// heal's best commit v1 against a rival v2 of the same accuracy: v1 is
/// not better by the gap, a measured reject. Heal then passes v1 over and
/// checks out the decider's favourite v2 (lower on the very scorer heal
/// ranks by). Every commit but its favourite can be struck out the same
/// way.
#[test]
fn a_decide_token_strikes_heals_best_commit_by_choosing_an_equal_baseline() {
    let (w, ids) = World::with(&["v1: best", "v2: the decider's favourite", "v3: deployed"]);
    let (v1, v2, v3) = (&ids[0], &ids[1], &ids[2]);
    w.pin(&ratchet_testkit::gap_class_with_beta(
        "q", "gaussian", "accuracy", 0.1, 0.05, 2000, "",
    ));
    // accuracy: v1 and v2 alike (≈ 0.83); quality (what live traffic
    // measures, what heal ranks): v1 0.95, v2 0.88, v3 0.90.
    let mut lines = scores_of(v1, "accuracy", 0, 200, |t| 0.80 + f64::from(t % 7) * 0.01);
    lines.push_str(&scores_of(v2, "accuracy", 0, 200, |t| {
        0.80 + f64::from((t + 3) % 7) * 0.01
    }));
    lines.push_str(&scores_of(v1, "quality", 0, 100, |t| {
        0.95 + f64::from(t % 11) * 0.001
    }));
    lines.push_str(&scores_of(v2, "quality", 0, 100, |t| {
        0.88 + f64::from(t % 11) * 0.001
    }));
    lines.push_str(&scores_of(v3, "quality", 0, 100, |t| {
        0.90 + f64::from(t % 11) * 0.001
    }));
    w.ok(&["append"], &lines);
    // The deployed commit's live quality drops: the key holder's alarm.
    let o = w.ok(&["status", "--json"], "");
    let st: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
    let from = st["overview"]["size"].as_u64().expect("size").to_string();
    w.ok(
        &["append"],
        &scores_of(v3, "quality", 100, 60, |t| 0.60 + f64::from(t % 3) * 0.01),
    );
    let o = w.cmd(
        &[
            "watch", "--commit", v3, "--scorer", "quality", "--from", &from, "--record",
        ],
        "",
    );
    assert_eq!(o.status.code(), Some(1), "an alarm: {}", text(&o));
    let o = w.ok(&["--json", "heal", "--dry-run"], "");
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
    assert_eq!(v["chosen"], v1.as_str(), "control: heal picks v1: {v:#}");

    // A decide token asks about v1 against v2.
    let token = w.path("dec.tok").display().to_string();
    w.ok(
        &[
            "token",
            "mint",
            "--session",
            "ci",
            "--can",
            "decide",
            "--out",
            &token,
        ],
        "",
    );
    let server = serve(&w);
    let sandbox = w.path("sandbox");
    std::fs::create_dir_all(&sandbox).expect("sandbox");
    let socket = w.path("serve.sock").display().to_string();
    let o = common::ratchet(
        &sandbox,
        &[
            "--server",
            &socket,
            "--token-file",
            &token,
            "--json",
            "gate",
            "--baseline",
            v2,
            "--candidate",
            v1,
            "--class",
            "q",
        ],
        "",
    );
    stop(server);
    let d: serde_json::Value =
        serde_json::from_slice(&o.stdout).unwrap_or_else(|_| panic!("json: {}", text(&o)));
    assert_eq!(d["outcome"]["cause"], "measured", "{d:#}");

    let o = w.ok(&["--json", "heal", "--dry-run"], "");
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
    assert_eq!(
        v["chosen"],
        v1.as_str(),
        "a decide token's recorded reject of v1 (against a baseline of its choosing) made heal pick {}: {v:#}",
        v["chosen"]
    );
}
