//! Red team, round 35: whose evidence counts — attacks on the promises of
//! README "Whose evidence counts" and ARCHITECTURE's rows "a producer the
//! class does not trust", "holder of a `record` token" and heal's promise.
//!
//! Each test states the promise and fails while the hole is open.

use crate::common;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use common::text;
use git2::{Repository, Signature};

/// A git repository whose root holds a keyed store at `.ratchet`, the
/// writer key kept outside it.
struct World {
    dir: tempfile::TempDir,
    repo: Repository,
}

impl World {
    fn new() -> World {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path().join("repo");
        std::fs::create_dir(&root).expect("repo dir");
        let repo = Repository::init(&root).expect("git init");
        World { dir, repo }
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

    fn socket(&self) -> PathBuf {
        self.path("serve.sock")
    }

    /// Creates the keyed store (after the commits: `init` in a repository).
    fn init(&self) {
        let o = common::ratchet(
            &self.root(),
            &["init", "--keyed", "--key-file", &self.key()],
            "",
        );
        assert!(o.status.success(), "{}", text(&o));
    }

    /// A commit of `prompt.txt` = `bytes` (and a `.gitignore`) on HEAD.
    fn commit(&self, bytes: &[u8], message: &str) -> String {
        let mut b = self.repo.treebuilder(None).expect("builder");
        let blob = self.repo.blob(bytes).expect("blob");
        b.insert("prompt.txt", blob, 0o100644).expect("insert");
        let ignore = self.repo.blob(b"local.cfg\n").expect("blob");
        b.insert(".gitignore", ignore, 0o100644).expect("insert");
        let tree = self.repo.find_tree(b.write().expect("tree")).expect("tree");
        let sig = Signature::now("red team", "red@example.invalid").expect("sig");
        let parent = self.repo.head().ok().and_then(|h| h.peel_to_commit().ok());
        let parents: Vec<&git2::Commit<'_>> = parent.iter().collect();
        self.repo
            .commit(Some("HEAD"), &sig, &sig, message, &tree, &parents)
            .expect("commit")
            .to_string()
    }

    fn checkout_head(&self) {
        self.repo
            .checkout_head(Some(git2::build::CheckoutBuilder::new().force()))
            .expect("checkout");
    }

    fn head_commit(&self) -> String {
        self.repo
            .head()
            .expect("head")
            .peel_to_commit()
            .expect("commit")
            .id()
            .to_string()
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

    /// Writes `text` to `name` beside the repository and returns its path.
    fn file(&self, name: &str, text: &str) -> String {
        let p = self.path(name);
        std::fs::write(&p, text).expect("write");
        p.display().to_string()
    }

    /// Mints a token (the key holder's `token mint`) into a file.
    fn mint(&self, name: &str, can: &[&str], session: &str) -> PathBuf {
        let file = self.path(name);
        let file_s = file.display().to_string();
        let mut args = vec!["token", "mint", "--session", session, "--out", &file_s];
        for c in can {
            args.extend_from_slice(&["--can", c]);
        }
        self.ok(&args, "");
        file
    }

    /// `policy pin` of `text` (the key holder's).
    fn pin(&self, text: &str) {
        let p = self.file("policy.toml", text);
        self.ok(&["policy", "pin", &p], "");
    }

    /// The trace's size now.
    fn size(&self) -> u64 {
        let o = self.ok(&["status", "--json"], "");
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
        v["overview"]["size"].as_u64().expect("size")
    }

    /// Starts `ratchet serve` on the socket (with the writer key: the
    /// server MACs every event) and waits for its ready line.
    fn serve(&self) -> Child {
        let exe = env!("CARGO_BIN_EXE_ratchet");
        let socket = self.socket().display().to_string();
        let key = self.key();
        let mut child = Command::new(exe)
            .args([
                "--json",
                "serve",
                "--socket",
                socket.as_str(),
                "--key-file",
                key.as_str(),
                "--rate",
                "1000000",
                "--burst",
                "1000000",
            ])
            .current_dir(self.root())
            .env_remove("RATCHET_STORE")
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn the server");
        let stdout = child.stdout.take().expect("stdout");
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut line = String::new();
            let _ = BufReader::new(stdout).read_line(&mut line);
            let _ = tx.send(line);
        });
        let line = rx
            .recv_timeout(Duration::from_secs(120))
            .expect("the server printed its ready line");
        assert!(line.contains("socket"), "{line}");
        child
    }

    /// A token holder's command through the server: it sees only the
    /// socket and its token (run from a directory of its own).
    fn remote(&self, token: &Path, args: &[&str], stdin: &str) -> Output {
        let sandbox = self.path("sandbox");
        std::fs::create_dir_all(&sandbox).expect("sandbox");
        let socket = self.socket().display().to_string();
        let token = token.display().to_string();
        let mut all = vec!["--server", socket.as_str(), "--token-file", token.as_str()];
        all.extend_from_slice(args);
        common::ratchet(&sandbox, &all, stdin)
    }
}

fn stop(mut child: Child) {
    let _ = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status();
    let deadline = Instant::now() + Duration::from_secs(60);
    while Instant::now() < deadline {
        if let Ok(Some(_)) = child.try_wait() {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = child.kill();
    let _ = child.wait();
}

const RUBRIC: &str =
    "name = \"answer\"\n[[item]]\nid = \"correct\"\ntype = \"boolean\"\nweight = 1.0\n";

/// Class `prompt` decided by rubric `answer` (a betting test), default
/// trust: the key holder's evidence only, on both sides.
const ANSWER_POLICY: &str = "[class.prompt]\nscorer = \"answer\"\ntest = \"betting\"\nalpha = 0.05\nbeta = 0.1\ngap = 0.1\nmax_n = 400\n";

/// Observation events (append format) of rubric `answer` on tasks
/// t0..t{n}, `correct` as `correct(i)` says.
fn observations(commit: &str, n: u32, correct: impl Fn(u32) -> bool) -> String {
    (0..n)
        .map(|i| {
            format!(
                "{{\"kind\":\"observation\",\"commit\":\"{commit}\",\"payload\":{{\"task\":\"t{i}\",\"rubric\":\"answer\",\"observation\":{{\"correct\":{}}}}}}}\n",
                correct(i)
            )
        })
        .collect()
}

/// `n` score events (append format) of `scorer` on tasks t{from}..,
/// version "1".
fn scores(commit: &str, scorer: &str, from: u32, n: u32, value: impl Fn(u32) -> f64) -> String {
    (from..from + n)
        .map(|t| {
            format!(
                "{{\"kind\":\"score\",\"commit\":\"{commit}\",\"payload\":{{\"task\":\"t{t:04}\",\"scorer\":\"{scorer}\",\"scorer_version\":\"1\",\"value\":{}}}}}\n",
                value(t)
            )
        })
        .collect()
}

fn verdict(o: &Output) -> serde_json::Value {
    serde_json::from_slice(&o.stdout).unwrap_or_else(|_| panic!("json: {}", text(o)))
}

/// The key holder's baseline: 100 observations of rubric `answer` on
/// `base`, half correct, scored by the key holder's own `ratchet score`.
fn answer_world() -> (World, String, String, String) {
    let w = World::new();
    let base = w.commit(b"v1", "v1");
    let cand = w.commit(b"v2", "v2");
    w.checkout_head();
    w.init();
    let rubric = w.file("answer.toml", RUBRIC);
    w.pin(ANSWER_POLICY);
    w.ok(&["append"], &observations(&base, 100, |i| i % 2 == 0));
    w.ok(&["score", "--rubric", &rubric], "");
    (w, base, cand, rubric)
}

/// HOLE (high). Promise: "A class reads, per side, only the producers its
/// policy's trust names (default: key holder only). Evidence from anyone
/// else is stored but never read." and a record token "cannot pre-empt a
/// task's first score … in any class that does not trust it".
///
/// A record token appends `observation` events (a plain kind, so the
/// server takes them) about the candidate. The key holder's routine batch
/// scoring (`ratchet score --rubric …`, the "sleep phase") turns every
/// observation in the trace into a score under session
/// `observation:<id>` — a session of the key holder's, since no token was
/// minted for it. The untrusted token's words are now the key holder's
/// scores: the gate reads them, sets nothing aside, and promotes a
/// candidate the key holder never measured.
#[test]
fn a_record_tokens_observations_are_laundered_into_key_holder_scores_by_ratchet_score() {
    let (w, base, cand, rubric) = answer_world();
    let token = w.mint("rec.tok", &["record"], "cell-7");
    let server = w.serve();
    let o = w.remote(&token, &["append"], &observations(&cand, 100, |_| true));
    assert!(o.status.success(), "{}", text(&o));
    stop(server);

    // Before the owner's batch scoring the class reads nothing of the
    // candidate: the token is not trusted.
    let o = w.cmd(
        &[
            "--json",
            "gate",
            "--baseline",
            &base,
            "--candidate",
            &cand,
            "--class",
            "prompt",
        ],
        "",
    );
    assert_ne!(verdict(&o)["status"], "promote", "{}", text(&o));

    // The key holder's routine `ratchet score`.
    w.ok(&["score", "--rubric", &rubric], "");

    // Promise: still nothing of the token's is read, so no promotion on
    // its word alone (and its evidence is counted in set_aside).
    let o = w.cmd(
        &[
            "--json",
            "gate",
            "--baseline",
            &base,
            "--candidate",
            &cand,
            "--class",
            "prompt",
        ],
        "",
    );
    let v = verdict(&o);
    assert_ne!(
        v["status"], "promote",
        "a candidate only an untrusted token measured was promoted (set_aside: {}): {v:#}",
        v["set_aside"]
    );
}

/// HOLE (high), the same laundering from a merged cell: "Events merged in
/// from a cell are evidence of what the cell saw … and evidence a class
/// reads only from the producers it trusts". The cell's observation is
/// merged (origin: the cell), but the home's `ratchet score` records its
/// score as the home's own, under `observation:<id>`: a key-holder score
/// the default trust reads.
#[test]
fn a_merged_cells_observations_become_the_homes_key_holder_scores() {
    let (w, base, cand, rubric) = answer_world();
    let cell = w.path("cell");
    let cell_s = cell.display().to_string();
    let o = common::ratchet(&w.root(), &["--store", &cell_s, "init"], "");
    assert!(o.status.success(), "{}", text(&o));
    let o = common::ratchet(
        &w.root(),
        &["--store", &cell_s, "append"],
        &observations(&cand, 100, |_| true),
    );
    assert!(o.status.success(), "{}", text(&o));
    w.ok(&["merge-cells", &cell_s], "");
    w.ok(&["score", "--rubric", &rubric], "");
    let o = w.cmd(
        &[
            "--json",
            "gate",
            "--baseline",
            &base,
            "--candidate",
            &cand,
            "--class",
            "prompt",
        ],
        "",
    );
    let v = verdict(&o);
    assert_ne!(
        v["status"], "promote",
        "a candidate only an untrusted cell measured was promoted (set_aside: {}): {v:#}",
        v["set_aside"]
    );
}

/// Three commits: v1 (0.85 on `quality`, the key holder's), v2 (the
/// attacker's favourite, never gated), v3 deployed (0.90, the key
/// holder's). Returns the world and the ids.
fn heal_world() -> (World, [String; 3]) {
    let w = World::new();
    let v1 = w.commit(b"v1", "v1");
    let v2 = w.commit(b"v2: the attacker's", "v2");
    let v3 = w.commit(b"v3", "v3");
    w.checkout_head();
    w.init();
    let mut lines = scores(&v1, "quality", 0, 100, |t| 0.85 + f64::from(t % 11) * 0.001);
    lines.push_str(&scores(&v3, "quality", 0, 100, |t| {
        0.90 + f64::from(t % 11) * 0.001
    }));
    w.ok(&["append"], &lines);
    (w, [v1, v2, v3])
}

/// HOLE (high). Promises: evidence from a producer nobody trusts "is
/// stored but never read"; the record token row: it "cannot … in any
/// class that does not trust it" and "declares no direction at all";
/// heal checks out "the best measured commit".
///
/// `watch`, `best` and `heal` read every producer's scores. A record
/// token (session cell-7, trusted by nothing) records 60 bad live scores
/// for the deployed commit — the key holder's `watch --record` raises an
/// alarm on them — and 100 perfect scores for a commit of its choosing
/// that no trusted producer ever measured and no gate ever judged. The
/// key holder's `heal` then checks that commit out.
#[test]
fn an_untrusted_record_token_makes_heal_check_out_its_favourite_commit() {
    let (w, [v1, v2, v3]) = heal_world();
    let token = w.mint("rec.tok", &["record"], "cell-7");
    let from = w.size().to_string();
    let server = w.serve();
    let mut lines = scores(&v2, "quality", 0, 100, |t| 0.99 - f64::from(t % 3) * 0.001);
    lines.push_str(&scores(&v3, "quality", 100, 60, |t| {
        0.30 + f64::from(t % 3) * 0.01
    }));
    let o = w.remote(&token, &["append"], &lines);
    assert!(o.status.success(), "{}", text(&o));
    stop(server);

    // The key holder's routine watch and heal.
    let o = w.cmd(
        &[
            "watch", "--commit", &v3, "--scorer", "quality", "--from", &from, "--record",
        ],
        "",
    );
    let alarmed = o.status.code() == Some(1);
    let o = w.cmd(&["--json", "heal"], "");
    let out = text(&o);
    assert_ne!(
        w.head_commit(),
        v2,
        "heal checked out the commit only an untrusted token measured \
         (alarm raised on the token's scores alone: {alarmed}): {out}"
    );
    // (v1 is what the trusted evidence would rank first, had there been a
    // trusted alarm at all.)
    let _ = v1;
}

/// Class `prompt` on `accuracy` (gaussian, gap 0.05), default trust.
fn accuracy_policy() -> String {
    ratchet_testkit::gap_class_with_beta("prompt", "gaussian", "accuracy", 0.1, 0.05, 2000, "")
}

/// HOLE (medium). Promise (README): "Heal never checks out a commit the
/// gate rejected on measured evidence until that class promotes it", and
/// `gate_rejected`'s own words: a later decision lifts a reject only as
/// "a finding that the commit got better" — "a `decide` token asking
/// about the commit in another class cannot launder it for heal".
///
/// In the *same* class it can: a promote of the rejected commit against
/// any baseline lifts the reject, whatever baseline rejected it. A
/// `decide` token (through the server, pinned policy, recorded) asks
/// about the rejected commit against an old, weak commit; the gate
/// promotes (it is better than *that*), and heal now checks out the
/// commit the class rejected against the baseline that matters.
#[test]
fn a_decide_token_lifts_a_measured_reject_for_heal_by_choosing_a_weak_baseline() {
    let w = World::new();
    let weak = w.commit(b"v0: old and weak", "v0");
    let base = w.commit(b"v1", "v1");
    let rejected = w.commit(b"v2: worse than v1", "v2");
    let deployed = w.commit(b"v3", "v3");
    w.checkout_head();
    w.init();
    w.pin(&accuracy_policy());
    // accuracy: the baseline ≈ 0.83, the rejected commit ≈ 0.72, the weak
    // commit ≈ 0.50 (200 tasks each, the key holder's).
    let mut lines = scores(&base, "accuracy", 0, 200, |t| {
        0.80 + f64::from(t % 7) * 0.01
    });
    lines.push_str(&scores(&rejected, "accuracy", 0, 200, |t| {
        0.70 + f64::from(t % 5) * 0.01
    }));
    lines.push_str(&scores(&weak, "accuracy", 0, 200, |t| {
        0.48 + f64::from(t % 3) * 0.01
    }));
    // quality (what live traffic measures): the rejected commit best.
    lines.push_str(&scores(&base, "quality", 0, 100, |t| {
        0.85 + f64::from(t % 11) * 0.001
    }));
    lines.push_str(&scores(&rejected, "quality", 0, 100, |t| {
        0.95 + f64::from(t % 11) * 0.001
    }));
    lines.push_str(&scores(&deployed, "quality", 0, 100, |t| {
        0.90 + f64::from(t % 11) * 0.001
    }));
    w.ok(&["append"], &lines);
    // The gate rejects it on measured evidence against the baseline.
    let o = w.cmd(
        &[
            "--json",
            "gate",
            "--baseline",
            &base,
            "--candidate",
            &rejected,
            "--class",
            "prompt",
        ],
        "",
    );
    let v = verdict(&o);
    assert_eq!(v["status"], "reject", "{v:#}");
    // Live scores of the deployed commit drop: the key holder's alarm.
    let from = w.size().to_string();
    w.ok(
        &["append"],
        &scores(&deployed, "quality", 100, 60, |t| {
            0.60 + f64::from(t % 3) * 0.01
        }),
    );
    let o = w.cmd(
        &[
            "watch", "--commit", &deployed, "--scorer", "quality", "--from", &from, "--record",
        ],
        "",
    );
    assert_eq!(o.status.code(), Some(1), "an alarm: {}", text(&o));
    let o = w.ok(&["--json", "heal", "--dry-run"], "");
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
    assert_eq!(
        v["chosen"],
        base.as_str(),
        "control: the reject holds: {v:#}"
    );

    // A decide token asks about the rejected commit against the weak one.
    let token = w.mint("dec.tok", &["decide"], "ci");
    let server = w.serve();
    let o = w.remote(
        &token,
        &[
            "--json",
            "gate",
            "--baseline",
            &weak,
            "--candidate",
            &rejected,
            "--class",
            "prompt",
        ],
        "",
    );
    stop(server);
    assert_eq!(verdict(&o)["status"], "promote", "{}", text(&o));

    let o = w.cmd(&["--json", "heal"], "");
    assert_ne!(
        w.head_commit(),
        rejected,
        "heal checked out the commit the class rejected against its baseline, after a promote against a baseline of the decider's choosing: {}",
        text(&o)
    );
}

/// HOLE (medium). Promise: an untrusted producer cannot "switch the
/// scorer version read (for primary, guardrails, invariants)": "a version
/// is the policy's …, else the newest in the baseline's trusted evidence".
///
/// When the baseline has no trusted score of an invariant's scorer (an
/// invariant checked on candidates only — a new safety check), the
/// version read falls back to the newest version *anyone* recorded
/// (`scorer_versions`, every producer, every commit). One score of a new
/// version from an untrusted token, about any commit, switches the
/// version: the candidate's trusted, failing safety scores are no longer
/// read, and a measured reject (a violated invariant, which keeps heal
/// away from the commit) becomes "the candidate has no scores" — missing
/// evidence, which heal does not honour.
#[test]
fn an_untrusted_token_switches_the_invariant_version_when_the_baseline_has_none() {
    let w = World::new();
    let base = w.commit(b"v1", "v1");
    let cand = w.commit(b"v2", "v2");
    w.checkout_head();
    w.init();
    let mut policy = accuracy_policy();
    policy.push_str("\n[[class.prompt.invariant]]\nscorer = \"safety\"\nminimum = 1.0\n");
    w.pin(&policy);
    // The key holder's evidence: the candidate is more accurate, but
    // unsafe on one task (version "1").
    let mut lines = scores(&base, "accuracy", 0, 200, |t| {
        0.70 + f64::from(t % 5) * 0.01
    });
    lines.push_str(&scores(&cand, "accuracy", 0, 200, |t| {
        0.80 + f64::from(t % 7) * 0.01
    }));
    lines.push_str(&scores(&cand, "safety", 0, 50, |t| {
        if t == 7 { 0.0 } else { 1.0 }
    }));
    w.ok(&["append"], &lines);
    let gate = |w: &World| {
        let o = w.cmd(
            &[
                "--json",
                "gate",
                "--baseline",
                &base,
                "--candidate",
                &cand,
                "--class",
                "prompt",
                "--dry-run",
            ],
            "",
        );
        verdict(&o)
    };
    let v = gate(&w);
    assert_eq!(v["outcome"]["cause"], "measured", "control: {v:#}");
    assert_eq!(v["scorer_versions"]["safety"], "1", "control: {v:#}");

    // One safety score of a new version, from a token nobody trusts,
    // about a commit that is neither side.
    let token = w.mint("rec.tok", &["record"], "cell-7");
    let server = w.serve();
    let elsewhere = "e".repeat(40);
    let o = w.remote(
        &token,
        &["append"],
        &scores(&elsewhere, "safety", 0, 1, |_| 1.0)
            .replace("\"scorer_version\":\"1\"", "\"scorer_version\":\"2\""),
    );
    stop(server);
    assert!(o.status.success(), "{}", text(&o));

    let v = gate(&w);
    assert_eq!(
        v["scorer_versions"]["safety"], "1",
        "an untrusted token chose the invariant's version read: {v:#}"
    );
    assert_eq!(v["outcome"]["cause"], "measured", "{v:#}");
}

/// HOLE (low). `mint_token`'s contract: "[Error::BadRequest] for an empty
/// scope list or an invalid session". An empty session is minted without
/// a word — and since a producer is "a token's session" by session name
/// (at any time, before or after the mint), every event the key holder
/// wrote without a session (`ratchet append` lines that name none) turns
/// into that token's: a class's default trust then sets the key holder's
/// own evidence aside and cannot decide.
#[test]
fn a_token_minted_for_the_empty_session_is_refused() {
    let (_d, store) = common::fresh_store();
    let cwd = _d.path();
    let a = "a".repeat(40);
    let b = "b".repeat(40);
    let lines: String = (0..150)
        .flat_map(|i| {
            [(a.as_str(), 0.5), (b.as_str(), 0.95)].map(|(c, v)| {
                format!(
                    "{{\"kind\":\"score\",\"commit\":\"{c}\",\"payload\":{{\"task\":\"t{i}\",\"scorer\":\"acc\",\"scorer_version\":\"1\",\"value\":{v}}}}}\n"
                )
            })
        })
        .collect();
    common::ratchet_ok(
        cwd,
        &["--store", &store, "--allow-unknown-commit", "append"],
        &lines,
    );
    let policy = cwd.join("policy.toml");
    std::fs::write(
        &policy,
        "[class.p]\nscorer = \"acc\"\ntest = \"betting\"\nalpha = 0.05\nbeta = 0.1\ngap = 0.1\nmax_n = 400\n",
    )
    .expect("policy");
    let policy = policy.display().to_string();
    let gate = || {
        let o = common::ratchet(
            cwd,
            &[
                "--store",
                &store,
                "--allow-unknown-commit",
                "--json",
                "gate",
                "--baseline",
                &a,
                "--candidate",
                &b,
                "--class",
                "p",
                "--policy",
                &policy,
                "--dry-run",
            ],
            "",
        );
        verdict(&o)
    };
    assert_eq!(gate()["status"], "promote", "control");
    let out = cwd.join("t.tok").display().to_string();
    let o = common::ratchet(
        cwd,
        &[
            "--store",
            &store,
            "token",
            "mint",
            "--can",
            "record",
            "--session",
            "",
            "--out",
            &out,
        ],
        "",
    );
    let v = gate();
    assert!(
        !o.status.success(),
        "a token was minted for the empty session; the key holder's own evidence is now set aside: {}",
        v["set_aside"]
    );
}
