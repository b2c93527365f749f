//! Evidence has an author: a class counts only what the producers it
//! trusts wrote (issue 35). Each attack is run through the binary on a
//! keyed store whose policy is pinned; the writer the class does not trust
//! is a capability token's session — what `ratchet serve` stamps on every
//! event a token records — written here by `ingest --session` after `token
//! mint` made the session a token's (the server's own path is in
//! `serve.rs`).

use std::path::{Path, PathBuf};
use std::process::Output;

use rand::{Rng, SeedableRng, rngs::StdRng};

use crate::common::{ratchet, text};

/// A keyed store `s` in a fresh directory, its key `writer.key`, with a
/// record token minted for session `evil` (the producer no class below
/// trusts unless it says so).
struct Keyed {
    dir: tempfile::TempDir,
}

impl Keyed {
    fn new() -> Keyed {
        let k = Keyed {
            dir: tempfile::tempdir().expect("tempdir"),
        };
        k.ok(&["init", "--keyed", "--key-file", &k.key()], "");
        let tok = k.path("evil.tok");
        k.ok(
            &[
                "token",
                "mint",
                "--can",
                "record",
                "--session",
                "evil",
                "--out",
                &tok,
                "--key-file",
                &k.key(),
            ],
            "",
        );
        k
    }

    fn path(&self, name: &str) -> String {
        self.dir.path().join(name).display().to_string()
    }

    fn key(&self) -> String {
        self.path("writer.key")
    }

    fn run(&self, args: &[&str], stdin: &str) -> Output {
        let store = self.path("s");
        let mut all = vec!["--store", store.as_str()];
        all.extend_from_slice(args);
        ratchet(self.dir.path(), &all, stdin)
    }

    #[track_caller]
    fn ok(&self, args: &[&str], stdin: &str) -> Output {
        let o = self.run(args, stdin);
        assert!(o.status.success(), "{args:?}: {}", text(&o));
        o
    }

    /// Pins `policy` (TOML) with the key.
    fn pin(&self, policy: &str) {
        let file = self.path("policy.toml");
        std::fs::write(&file, policy).expect("policy");
        self.ok(&["policy", "pin", &file, "--key-file", &self.key()], "");
    }

    /// Ingests JSON Lines as `session` (the key holder writes; a token's
    /// session makes them the token's).
    #[track_caller]
    fn ingest(&self, session: &str, lines: &str) -> Output {
        let file = self.dir.path().join(format!("{session}.jsonl"));
        std::fs::write(&file, lines).expect("lines");
        let file = file.display().to_string();
        let key = self.key();
        self.ok(
            &[
                "ingest",
                "jsonl",
                &file,
                "--session",
                session,
                "--key-file",
                &key,
            ],
            "",
        )
    }

    /// `gate --json` of `class`, with the key: the verdict's JSON and the
    /// exit code.
    fn gate(&self, base: &str, cand: &str, class: &str) -> (serde_json::Value, Option<i32>) {
        let key = self.key();
        let o = self.run(
            &[
                "--json",
                "gate",
                "--baseline",
                base,
                "--candidate",
                cand,
                "--class",
                class,
                "--key-file",
                &key,
            ],
            "",
        );
        let v = serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", text(&o)));
        (v, o.status.code())
    }
}

fn commit(i: u32) -> String {
    format!("{i:040x}")
}

fn line(commit: &str, task: &str, scorer: &str, version: &str, value: f64) -> String {
    format!(
        "{{\"task\":\"{task}\",\"scorer\":\"{scorer}\",\"scorer_version\":\"{version}\",\"value\":{value},\"commit\":\"{commit}\"}}\n"
    )
}

/// The producers a verdict set aside, as `gate --json` says them.
fn set_aside(v: &serde_json::Value) -> String {
    v["set_aside"].to_string()
}

/// Attack 2: trusted CI's 240 scores reject the candidate; a record token
/// names a new scorer version for the baseline (and then scores both sides
/// under it), and — the pin covering only the primary scorer — a cost
/// guardrail under a version of its own. Nothing the token wrote is read:
/// the verdict stays the trusted evidence's, and says what it set aside.
#[test]
fn a_token_cannot_switch_the_version_the_gate_reads_for_any_scorer() {
    let k = Keyed::new();
    k.pin(
        "[class.prompt]\nscorer = \"acc\"\ntest = \"betting\"\nalpha = 0.05\nbeta = 0.1\ngap = 0.2\nmax_n = 400\n\
         [[class.prompt.guardrail]]\nscorer = \"cost\"\ndirection = \"lower\"\nmargin = 0.05\nmargin_kind = \"relative\"\n",
    );
    let (b, c) = (commit(1), commit(2));
    let mut trusted = String::new();
    for t in 0..120 {
        let task = format!("t{t:03}");
        // The candidate is worse: the honest verdict is a reject.
        trusted.push_str(&line(&b, &task, "acc", "1", 0.9));
        trusted.push_str(&line(&c, &task, "acc", "1", 0.3));
        trusted.push_str(&line(&b, &task, "cost", "1", 1.0));
        trusted.push_str(&line(&c, &task, "cost", "1", 2.0 + f64::from(t % 3) * 0.01));
    }
    k.ingest("ci", &trusted);
    let (honest, code) = k.gate(&b, &c, "prompt");
    assert_eq!(code, Some(1), "{honest:#}");
    assert_eq!(honest["outcome"]["stage"], "sequential", "{honest:#}");

    let mut evil = String::new();
    for t in 0..120 {
        let task = format!("t{t:03}");
        evil.push_str(&line(&b, &task, "acc", "2", 0.0));
        evil.push_str(&line(&c, &task, "acc", "2", 1.0));
        evil.push_str(&line(&b, &task, "cost", "2", 2.0));
        evil.push_str(&line(&c, &task, "cost", "2", 1.0));
    }
    k.ingest("evil", &evil);
    let (v, code) = k.gate(&b, &c, "prompt");
    assert_eq!(code, Some(1), "still the trusted reject: {v:#}");
    assert_eq!(v["outcome"], honest["outcome"], "{v:#}");
    assert_eq!(v["scorer_versions"]["acc"], "1", "{v:#}");

    // The guardrail: the candidate is better on acc, doubles cost (trusted);
    // the token's cost lines under version 2 say it costs less.
    let (b2, c2) = (commit(3), commit(4));
    let mut trusted = String::new();
    let mut evil = String::new();
    for t in 0..120 {
        let task = format!("t{t:03}");
        trusted.push_str(&line(&b2, &task, "acc", "1", 0.3));
        trusted.push_str(&line(&c2, &task, "acc", "1", 0.9));
        trusted.push_str(&line(
            &b2,
            &task,
            "cost",
            "1",
            1.0 + f64::from(t % 3) * 0.01,
        ));
        trusted.push_str(&line(
            &c2,
            &task,
            "cost",
            "1",
            2.0 + f64::from(t % 5) * 0.01,
        ));
        evil.push_str(&line(
            &b2,
            &task,
            "cost",
            "2",
            2.0 + f64::from(t % 3) * 0.01,
        ));
        evil.push_str(&line(
            &c2,
            &task,
            "cost",
            "2",
            1.0 + f64::from(t % 5) * 0.01,
        ));
    }
    k.ingest("ci", &trusted);
    k.ingest("evil", &evil);
    let (v, code) = k.gate(&b2, &c2, "prompt");
    assert_eq!(code, Some(1), "a doubled cost is not promoted: {v:#}");
    assert_eq!(v["outcome"]["stage"]["guardrail"], "cost", "{v:#}");
    assert_eq!(v["scorer_versions"]["cost"], "1", "{v:#}");
}

/// Attack 5: a token writes first — the candidate's first score of every
/// task, a perfect one, before trusted CI measured it — and records a
/// failing required suite for the candidate (a veto). Neither is read.
#[test]
fn a_token_can_neither_pre_empt_the_first_score_nor_veto_a_commit() {
    let k = Keyed::new();
    k.pin(
        "[class.prompt]\nscorer = \"acc\"\ntest = \"betting\"\nalpha = 0.05\nbeta = 0.1\ngap = 0.2\nmax_n = 400\nrequired_suites = [\"unit\"]\n",
    );
    let (b, c) = (commit(1), commit(2));
    let run = |commit: &str, failed: u32| {
        format!(
            "{{\"kind\":\"test_run\",\"commit\":\"{commit}\",\"payload\":{{\"suite\":\"unit\",\"passed\":10,\"failed\":{failed},\"skipped\":0,\"duration_ms\":1.0,\"failures\":[]}}}}\n"
        )
    };
    // The token, first: a failing suite and a perfect score on every task.
    let mut evil = String::new();
    for t in 0..120 {
        evil.push_str(&line(&c, &format!("t{t:03}"), "acc", "1", 1.0));
    }
    k.ingest("evil", &evil);
    let key = k.key();
    k.ok(
        &["append", "--key-file", &key],
        &run(&c, 3).replace("\"kind\"", "\"session\":\"evil\",\"kind\""),
    );
    // Then trusted CI: the suite green, the candidate worse.
    k.ok(&["append", "--key-file", &key], &run(&c, 0));
    let mut trusted = String::new();
    for t in 0..120 {
        let task = format!("t{t:03}");
        trusted.push_str(&line(&b, &task, "acc", "1", 0.9));
        trusted.push_str(&line(&c, &task, "acc", "1", 0.3));
    }
    k.ingest("ci", &trusted);
    let (v, code) = k.gate(&b, &c, "prompt");
    assert_eq!(code, Some(1), "{v:#}");
    assert_eq!(
        v["outcome"]["stage"], "sequential",
        "the token's failing suite is no veto, its perfect firsts no pre-emption: {v:#}"
    );
    let aside = set_aside(&v);
    assert!(
        aside.contains("\"test_runs\":1") && aside.contains("\"scores\":120"),
        "{aside}"
    );
    // Trusted the other way round (the policy naming the token's session
    // for the candidate), its evidence counts: the veto is the class's choice.
    k.pin(
        "[class.prompt]\nscorer = \"acc\"\ntest = \"betting\"\nalpha = 0.05\nbeta = 0.1\ngap = 0.2\nmax_n = 400\nrequired_suites = [\"unit\"]\n\
         trust = { candidate = [\"key_holder\", \"session:evil\"] }\n",
    );
    let (v, code) = k.gate(&b, &c, "prompt");
    assert_eq!(code, Some(1), "{v:#}");
    assert_eq!(v["outcome"]["stage"], "tests", "{v:#}");
}

/// Attack 3, as measured in the issue: a null world (both sides pass with
/// probability ½), every value honest; the writer of the baseline's lines
/// — a token — sees the outcomes and writes the baseline's first scores
/// candidate-wins-first, ahead of trusted CI's lines (in random order).
/// Read as everyone's evidence (`trust = everyone`), that promoted almost
/// always while the baseline's trace order was read (laws 2–4), and since
/// the name sweep (law 5) it orders nothing; read as the class's trusted producers', the
/// false-promote rate is the test's α: the order the test sees is the
/// trusted evidence's, fixed by whoever the class trusts, and the token's
/// pre-emptive firsts are never read. The gate is polled after each of
/// two trusted batches.
#[test]
fn a_writer_of_baseline_lines_cannot_choose_the_order_the_test_sees() {
    const RUNS: u32 = 60;
    const TASKS: u32 = 150;
    let k = Keyed::new();
    let class = |name: &str, trust: &str| {
        format!(
            "[class.{name}]\nscorer = \"pass\"\ntest = \"bernoulli\"\nalpha = 0.05\nbeta = 0.1\ngap = 0.3\nmax_n = 400\n{trust}"
        )
    };
    k.pin(&format!(
        "{}{}",
        class("trusted", ""),
        class(
            "everyone",
            "trust = { baseline = [\"everyone\"], candidate = [\"everyone\"] }\n"
        )
    ));
    let mut rng = StdRng::seed_from_u64(35);
    let mut promotes = [0u32; 2];
    let control_runs = 10;
    for run in 0..RUNS {
        let (b, c) = (commit(2 * run + 1), commit(2 * run + 2));
        let outcomes: Vec<(f64, f64)> = (0..TASKS)
            .map(|_| {
                (
                    f64::from(u8::from(rng.random_bool(0.5))),
                    f64::from(u8::from(rng.random_bool(0.5))),
                )
            })
            .collect();
        // The token, seeing the outcomes: tasks the candidate wins first.
        let mut order: Vec<u32> = (0..TASKS).collect();
        order.sort_by_key(|&t| {
            // Outcomes are 0 or 1: the candidate's wins, then ties, then losses.
            let (bv, cv) = outcomes[t as usize];
            match (bv < cv, cv < bv) {
                (true, _) => 0,
                (false, false) => 1,
                (false, true) => 2,
            }
        });
        let evil: String = order
            .iter()
            .map(|&t| line(&b, &format!("t{t:03}"), "pass", "1", outcomes[t as usize].0))
            .collect();
        k.ingest("evil", &evil);
        // Trusted CI, in random order, in two batches.
        let mut shuffled: Vec<u32> = (0..TASKS).collect();
        for i in (1..shuffled.len()).rev() {
            shuffled.swap(i, rng.random_range(0..=i));
        }
        let classes: &[&str] = if run < control_runs {
            &["trusted", "everyone"]
        } else {
            &["trusted"]
        };
        let mut stopped = [false; 2];
        for half in shuffled.chunks(TASKS as usize / 2) {
            let batch: String = half
                .iter()
                .flat_map(|&t| {
                    let (bv, cv) = outcomes[t as usize];
                    let task = format!("t{t:03}");
                    [
                        line(&b, &task, "pass", "1", bv),
                        line(&c, &task, "pass", "1", cv),
                    ]
                })
                .collect();
            k.ingest("ci", &batch);
            for (i, name) in classes.iter().enumerate() {
                if stopped[i] {
                    continue;
                }
                let (v, code) = k.gate(&b, &c, name);
                match code {
                    Some(0) => {
                        promotes[i] += 1;
                        stopped[i] = true;
                    }
                    // Waiting (3), or at the first look no pair yet (4).
                    Some(3 | 4) => {}
                    Some(1 | 6) => stopped[i] = true,
                    other => panic!("{other:?}: {v:#}"),
                }
            }
        }
    }
    eprintln!(
        "false promotes: trusted {}/{RUNS}, everyone {}/{control_runs}",
        promotes[0], promotes[1]
    );
    // Read as everyone's, the token's order promoted 9–10 of 10 under the
    // fourth law (the baseline's trace order was the token's). Since the
    // fifth the name sweep reads names in name order, whoever recorded
    // first: the token orders nothing even where its lines count. At most
    // 3 of 10 (P(X ≥ 4) for Binomial(10, 0.05) is 0.001).
    assert!(
        promotes[1] <= 3,
        "everyone's evidence: {}/{control_runs} false promotes",
        promotes[1]
    );
    // Trusted only: at most α = 0.05 in expectation (3 of 60). P(X ≥ 9)
    // for Binomial(60, 0.05) is below 0.001: a bound the honest test
    // cannot fail by chance, and the attack (≈ 60) cannot pass.
    assert!(
        promotes[0] <= 8,
        "trusted evidence: {}/{RUNS} false promotes",
        promotes[0]
    );
}

/// A repository on `main` whose `eval.sh` scores honestly, and a branch
/// `x` whose `eval.sh` writes five lines about itself declaring `quality`
/// lower-is-better, with a store (unkeyed, the README's CI recipe) at
/// `.ratchet`.
fn hostile_branch(dir: &Path) -> PathBuf {
    let honest = "mkdir -p out; for t in 1 2 3 4 5; do echo \"{\\\"task\\\":\\\"t$t\\\",\\\"scorer\\\":\\\"quality\\\",\\\"value\\\":0.5}\"; done > out/s.jsonl\n";
    let hostile = "mkdir -p out; for t in 1 2 3 4 5; do echo \"{\\\"task\\\":\\\"t$t\\\",\\\"scorer\\\":\\\"quality\\\",\\\"value\\\":0.9,\\\"direction\\\":\\\"lower\\\"}\"; done > out/s.jsonl\n";
    ratchet_testkit::git::repo_with_branches(
        dir,
        &[
            ("eval.sh", Some(honest)),
            (".gitignore", Some(".ratchet\n")),
        ],
        &[("x", "eval.sh", hostile)],
    );
    assert!(ratchet(dir, &["init"], "").status.success());
    std::fs::write(
        dir.join(".ratchet/policy.toml"),
        "[class.prompt]\nscorer = \"quality\"\ntest = \"betting\"\nalpha = 0.05\nbeta = 0.1\ngap = 0.2\nmax_n = 400\n",
    )
    .expect("policy");
    dir.join(".ratchet")
}

/// Attack 1: a hostile branch's evaluation declares the primary scorer
/// lower-is-better. `verify` ingests the commands' output declaring
/// nothing: the file is refused (the line names a direction), no
/// declaration reaches the trace, and later verdicts read the scorer as
/// before.
#[test]
fn a_branch_that_verify_runs_cannot_declare_how_a_scorer_is_read() {
    let d = tempfile::tempdir().expect("tempdir");
    hostile_branch(d.path());
    let o = ratchet(
        d.path(),
        &[
            "--json",
            "verify",
            "x",
            "--cmd",
            "sh eval.sh",
            "--jsonl",
            "out/s.jsonl",
            "--class",
            "prompt",
            "--baseline",
            "main",
        ],
        "",
    );
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
    let said = v.to_string();
    assert!(
        said.contains("refused") && said.contains("may not declare"),
        "{said}"
    );
    let o = ratchet(d.path(), &["--json", "log", "--kind", "scorer"], "");
    let log: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
    assert_eq!(
        log["events"].as_array().map(Vec::len),
        Some(0),
        "no declaration: {log:#}"
    );
    // The honest branch's output (no direction) is ingested, and still
    // declares nothing: how `quality` is read is the policy's.
    let o = ratchet(
        d.path(),
        &[
            "--json",
            "verify",
            "main",
            "--cmd",
            "sh eval.sh",
            "--jsonl",
            "out/s.jsonl",
            "--class",
            "prompt",
            "--baseline",
            "x",
        ],
        "",
    );
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
    assert_eq!(
        v["verification"]["evaluation"]["ingested"][0]["scores"],
        5,
        "{}",
        text(&o)
    );
    let o = ratchet(d.path(), &["--json", "log", "--kind", "scorer"], "");
    let log: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
    assert_eq!(log["events"].as_array().map(Vec::len), Some(0), "{log:#}");
}

/// A keyed store whose trace was edited answers the gate with exit 5 and
/// says the trace failed — before any pin is looked up (it used to say
/// "class is not pinned … pin one", exit 2, sending the operator to re-pin).
#[test]
fn a_tampered_pinned_store_exits_5_before_any_pin_lookup() {
    let k = Keyed::new();
    k.pin("[class.prompt]\nscorer = \"acc\"\ntest = \"betting\"\nalpha = 0.05\nbeta = 0.1\ngap = 0.2\nmax_n = 400\n");
    let (b, c) = (commit(1), commit(2));
    let mut lines = String::new();
    for t in 0..20 {
        lines.push_str(&line(&b, &format!("t{t}"), "acc", "1", 0.5));
        lines.push_str(&line(&c, &format!("t{t}"), "acc", "1", 0.5));
    }
    k.ingest("ci", &lines);
    // One byte of a stored score changed in the file.
    let db = k.dir.path().join("s").join("trace.db");
    let mut bytes = std::fs::read(&db).expect("read");
    let at = bytes
        .windows(3)
        .rposition(|w| w == b"0.5")
        .expect("a stored value");
    bytes[at + 2] = b'9';
    std::fs::write(&db, bytes).expect("write");
    let (v, code) = k.gate(&b, &c, "prompt");
    assert_eq!(code, Some(5), "{v:#}");
    let said = v.to_string();
    assert!(
        said.contains("verification") && !said.contains("pin one"),
        "{said}"
    );
}
