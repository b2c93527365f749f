//! What a new user meets at the shell: help that shows formats, errors that
//! say where and what to type next (as JSON under `--json`), `status`,
//! `log` filters, completions, JUnit from Java build tools, strict JSONL.

use crate::common;

use common::{assert_says, ratchet, ratchet_ok, text};

const A: &str = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
const B: &str = "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb";

fn json(o: &std::process::Output) -> serde_json::Value {
    serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("stdout is one JSON document ({e}): {}", text(o)))
}

/// A store in `dir/s` with a few scores of two commits.
fn store_with_scores(dir: &std::path::Path) -> String {
    let st = dir.join("s").to_string_lossy().into_owned();
    common::in_store_ok(dir, &st, &["init"]);
    for (commit, task, value) in [(A, "t1", "0.5"), (A, "t2", "0.7"), (B, "t1", "0.9")] {
        common::in_store_ok(
            dir,
            &st,
            &[
                "record-score",
                "--commit",
                commit,
                "--task",
                task,
                "--scorer",
                "acc",
                "--value",
                value,
            ],
        );
    }
    st
}

#[test]
fn help_shows_the_line_formats() {
    let d = tempfile::tempdir().expect("tempdir");
    let o = ratchet(d.path(), &["append", "--help"], "");
    assert!(
        text(&o).contains("\"kind\"") && text(&o).contains("\"payload\""),
        "{}",
        text(&o)
    );
    let o = ratchet(d.path(), &["ingest", "jsonl", "--help"], "");
    for field in [
        "\"task\"",
        "\"scorer\"",
        "\"value\"",
        "\"rubric\"",
        "\"observation\"",
    ] {
        assert!(text(&o).contains(field), "{field}: {}", text(&o));
    }
}

#[test]
fn errors_are_one_json_document_under_json_and_carry_a_hint() {
    let d = tempfile::tempdir().expect("tempdir");
    let missing = d.path().join("nowhere").to_string_lossy().into_owned();
    let o = common::in_store(d.path(), &missing, &["--json", "status"]);
    assert_eq!(o.status.code(), Some(2));
    let v = json(&o);
    assert_eq!(v["exit_code"], 2);
    assert!(
        v["error"]["message"]
            .as_str()
            .expect("message")
            .contains("no ratchet store")
    );
    assert!(
        v["error"]["hint"]
            .as_str()
            .expect("hint")
            .contains("ratchet init")
    );
    // In words: one message, and the hint on its own line.
    let o = common::in_store(d.path(), &missing, &["status"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(err.matches("no ratchet store").count(), 1, "{err}");
    assert!(
        err.contains("hint: create one with `ratchet init`"),
        "{err}"
    );
}

#[test]
fn status_and_log_filters() {
    let d = tempfile::tempdir().expect("tempdir");
    let st = store_with_scores(d.path());
    let o = common::in_store_ok(d.path(), &st, &["--json", "status"]);
    let v = json(&o);
    assert_eq!(v["verification"]["fault"], serde_json::Value::Null);
    assert_eq!(v["overview"]["commits"].as_array().map(Vec::len), Some(2));
    assert_eq!(v["overview"]["scorers"][0]["scorer"], "acc");
    assert_eq!(v["directions"]["acc"], "higher_is_better");
    assert_eq!(v["store_id"], v["verification"]["store_id"]);
    let o = common::in_store(d.path(), &st, &["status"]);
    let t = text(&o);
    assert!(
        t.contains("verifies") && t.contains("acc") && t.contains("higher is better"),
        "{t}"
    );
    assert!(!t.contains("HigherIsBetter"), "no Debug names: {t}");

    let ids = |args: &[&str]| -> Vec<u64> {
        let mut all = vec!["--store", st.as_str(), "--json", "log"];
        all.extend_from_slice(args);
        let o = ratchet_ok(d.path(), &all, "");
        json(&o)["events"]
            .as_array()
            .expect("events")
            .iter()
            .map(|e| e["seq"].as_u64().expect("seq"))
            .collect()
    };
    // seq 1 declares acc, then three scores.
    assert_eq!(ids(&[]), [1, 2, 3, 4]);
    assert_eq!(ids(&["--kind", "score"]), [2, 3, 4]);
    assert_eq!(ids(&["--commit", B]), [4]);
    assert_eq!(ids(&["--scorer", "acc", "--commit", A]), [2, 3]);
    assert_eq!(ids(&["--scorer", "other"]), Vec::<u64>::new());
}

#[test]
fn completions_are_printed_for_each_shell() {
    let d = tempfile::tempdir().expect("tempdir");
    for shell in ["bash", "zsh", "fish"] {
        let o = ratchet_ok(d.path(), &["completions", shell], "");
        let t = String::from_utf8_lossy(&o.stdout);
        assert!(
            t.contains("verify-chain") && t.contains("record-score"),
            "{shell}"
        );
    }
}

#[test]
fn jsonl_and_junit_files_as_tools_write_them() {
    let d = tempfile::tempdir().expect("tempdir");
    let st = store_with_scores(d.path());
    let head = |d: &std::path::Path| {
        json(&common::in_store(d, &st, &["--json", "status"]))["overview"]["size"].clone()
    };
    let before = head(d.path());
    for (body, says) in [
        (
            format!(
                "{{\"task\":\"t\",\"scorer\":\"acc\",\"value\":1,\"holdot\":true,\"commit\":\"{A}\"}}\n"
            ),
            "unknown field `holdot`",
        ),
        (String::new(), "holds no line"),
        (
            format!("{{\"task\":\"t\",\"scorer\":\"acc\",\"commit\":\"{A}\"}}\n"),
            "missing field `value`",
        ),
    ] {
        let f = d.path().join("in.jsonl");
        std::fs::write(&f, &body).expect("write");
        let o = common::in_store(d.path(), &st, &["ingest", "jsonl", &f.to_string_lossy()]);
        assert_eq!(o.status.code(), Some(2), "{body}: {}", text(&o));
        assert!(
            text(&o).contains(says) && text(&o).contains("in.jsonl"),
            "{}",
            text(&o)
        );
    }
    assert_eq!(head(d.path()), before, "nothing stored");
    let f = d.path().join("bom.jsonl");
    std::fs::write(
        &f,
        format!("\u{feff}{{\"task\":\"t9\",\"scorer\":\"acc\",\"value\":1,\"commit\":\"{A}\"}}\n"),
    )
    .expect("write");
    let o = common::in_store(d.path(), &st, &["ingest", "jsonl", &f.to_string_lossy()]);
    assert!(o.status.success(), "BOM: {}", text(&o));

    // A Surefire report: a bare <testsuite> root, declared ISO-8859-1.
    let xml = d.path().join("TEST-CafeTest.xml");
    let mut bytes = b"<?xml version=\"1.0\" encoding=\"ISO-8859-1\"?>\n<testsuite name=\"Caf\xe9Test\" tests=\"2\" failures=\"1\" time=\"0.2\">\n".to_vec();
    bytes.extend_from_slice(b"<testcase name=\"a\" classname=\"C\" time=\"0.1\"/>\n<testcase name=\"b\" classname=\"C\" time=\"0.1\"><failure message=\"x\"/></testcase>\n</testsuite>\n");
    std::fs::write(&xml, bytes).expect("write");
    let o = common::in_store_ok(
        d.path(),
        &st,
        &["ingest", "junit", &xml.to_string_lossy(), "--commit", A],
    );
    assert_says(&o, "recorded 1 test run(s) and 1 score(s)");
}

#[test]
fn policy_errors_say_the_line_and_column() {
    let d = tempfile::tempdir().expect("tempdir");
    let st = store_with_scores(d.path());
    let policy = d.path().join("policy.toml");
    std::fs::write(
        &policy,
        "[class.c]\nscorer = \"acc\"\ntest = \"paired\"\nalpha = 0.05\nbeta = \n",
    )
    .expect("write");
    let o = common::gate(
        d.path(),
        &st,
        A,
        B,
        "c",
        &["--policy", &policy.to_string_lossy()],
    );
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert_says(&o, "line 5, column");
    assert_says(&o, "policy.toml");
    assert!(!text(&o).contains("bytes"), "{}", text(&o));
}

/// `log --kind decison` (a typo) is an error naming the kinds the store
/// has, not an empty table with exit 0; a reserved kind not yet recorded is
/// an empty answer; `--last N` shows the newest.
#[test]
fn log_refuses_a_mistyped_kind_and_shows_the_newest_with_last() {
    let (d, st) = common::fresh_store();
    let st = st.as_str();
    let c = "0123456789abcdef0123456789abcdef01234567";
    let lines: String = (0..60)
        .map(|i| format!("{{\"kind\":\"score\",\"commit\":\"{c}\",\"payload\":{{\"task\":\"t{i}\",\"scorer\":\"acc\",\"scorer_version\":\"1\",\"value\":1}}}}\n"))
        .collect();
    common::append(d.path(), st, &lines);
    let o = common::in_store(d.path(), st, &["log", "--kind", "decison"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        text(&o).contains("\"decison\"") && text(&o).contains("score"),
        "{}",
        text(&o)
    );
    let o = common::in_store(d.path(), st, &["log", "--kind", "decision"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let o = common::in_store_ok(d.path(), st, &["--json", "log", "--last", "3"]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
    let seqs: Vec<u64> = v["events"]
        .as_array()
        .expect("events")
        .iter()
        .filter_map(|e| e["seq"].as_u64())
        .collect();
    assert_eq!(seqs, vec![58, 59, 60]);
}

/// `verify --junit F` without a class would run the commands and read
/// nothing: it is a usage error naming what is missing.
#[test]
fn verify_with_a_report_but_no_class_is_refused_before_running() {
    let d = tempfile::tempdir().expect("tempdir");
    let marker = d.path().join("ran");
    let cmd = format!("touch {}", marker.display());
    let o = common::in_store(
        d.path(),
        "s",
        &["verify", "--cmd", &cmd, "--junit", "report.xml"],
    );
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert_says(&o, "--class");
    assert!(!marker.exists(), "nothing ran");
}

#[test]
fn a_mistyped_flag_under_json_is_a_json_error_naming_the_flag() {
    let d = tempfile::tempdir().expect("tempdir");
    let st = store_with_scores(d.path());
    let o = common::in_store(d.path(), &st, &["--json", "log", "--lsat", "3"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let v = json(&o);
    assert_eq!(v["exit_code"], 2);
    assert_eq!(v["error"]["kind"], "usage");
    let message = v["error"]["message"].as_str().expect("message");
    assert!(message.contains("--lsat"), "{v}");
    assert!(
        v["error"]["hint"]
            .as_str()
            .is_some_and(|h| h.contains("Usage")),
        "{v}"
    );
    // A missing subcommand and a bad value are usage errors too.
    let o = ratchet(d.path(), &["--json", "log", "--last"], "");
    assert_eq!(json(&o)["error"]["kind"], "usage", "{}", text(&o));
    // Without --json, clap's words on stderr and nothing on stdout.
    let o = ratchet(d.path(), &["log", "--lsat", "3"], "");
    assert_eq!(o.status.code(), Some(2));
    assert!(o.stdout.is_empty(), "{}", text(&o));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--lsat"));
    // --help is help, --json or not.
    let o = ratchet_ok(d.path(), &["--json", "log", "--help"], "");
    assert!(String::from_utf8_lossy(&o.stdout).contains("Usage"));
}

#[test]
fn help_groups_the_global_options_apart() {
    let d = tempfile::tempdir().expect("tempdir");
    let o = ratchet(d.path(), &["record-score", "--help"], "");
    let help = String::from_utf8_lossy(&o.stdout).into_owned();
    let global = help
        .find("Global options:")
        .expect("a Global options heading");
    let own = help.find("--scorer").expect("the command's own option");
    assert!(own < global, "{help}");
    for flag in ["--store", "--json", "--allow-unknown-commit"] {
        let at = help
            .find(flag)
            .unwrap_or_else(|| panic!("{flag} in {help}"));
        assert!(
            at > global,
            "{flag} is listed among the command's own: {help}"
        );
    }
}

#[test]
fn every_writing_command_answers_with_the_same_receipt_shape() {
    let d = tempfile::tempdir().expect("tempdir");
    // A relative --store: the documents still carry absolute paths.
    let st = "rel-store";
    let check = |v: &serde_json::Value, appended: usize, what: &str| -> String {
        let id = v["store_id"]
            .as_str()
            .unwrap_or_else(|| panic!("{what}: store_id in {v}"));
        let dir = v["store_dir"]
            .as_str()
            .unwrap_or_else(|| panic!("{what}: store_dir in {v}"));
        assert!(std::path::Path::new(dir).is_absolute(), "{what}: {dir}");
        assert!(dir.ends_with("rel-store"), "{what}: {dir}");
        let receipts = v["receipts"]
            .as_array()
            .unwrap_or_else(|| panic!("{what}: receipts in {v}"));
        assert_eq!(receipts.len(), appended, "{what}: {v}");
        for r in receipts {
            assert!(
                r["seq"].is_u64() && r["id"].is_string() && r["hash"].is_string(),
                "{what}: {r}"
            );
        }
        id.to_string()
    };
    let init = json(&common::in_store(d.path(), st, &["--json", "init"]));
    let id = check(&init, 0, "init");
    let appended = json(&ratchet(
        d.path(),
        &["--store", st, "--json", "append"],
        "{\"kind\":\"note\",\"payload\":{}}\n{\"kind\":\"note\",\"payload\":{\"n\":2}}\n",
    ));
    assert_eq!(check(&appended, 2, "append"), id);
    let scored = json(&common::in_store(
        d.path(),
        st,
        &[
            "--json",
            "record-score",
            "--commit",
            A,
            "--task",
            "t",
            "--scorer",
            "acc",
            "--value",
            "1",
        ],
    ));
    assert!(check(&scored, 1, "record-score") == id);
    let lines = d.path().join("s.jsonl");
    std::fs::write(
        &lines,
        "{\"task\":\"t1\",\"scorer\":\"acc\",\"value\":0.5}\n{\"task\":\"t2\",\"scorer\":\"acc\",\"value\":0.7}\n",
    )
    .expect("write");
    let lines = lines.display().to_string();
    let ingest_args = [
        "--store", st, "--json", "ingest", "jsonl", &lines, "--commit", B,
    ];
    let ingested = json(&ratchet(d.path(), &ingest_args, ""));
    // Two scores and the ingestion's own record.
    let n = ingested["receipts"].as_array().map_or(0, Vec::len);
    assert!(n >= 2, "{ingested}");
    assert_eq!(check(&ingested, n, "ingest"), id);
    assert_eq!(ingested["ingest"]["scores"], 2, "{ingested}");
    // Once more: nothing appended, the same shape.
    let again = json(&ratchet(d.path(), &ingest_args, ""));
    assert_eq!(check(&again, 0, "ingest again"), id);
    // Reading commands name the store too.
    let best = json(&common::in_store(
        d.path(),
        st,
        &["--json", "best", "--scorer", "acc", "--min-n", "2"],
    ));
    assert_eq!(best["store_id"], id.as_str(), "{best}");
}

#[test]
fn an_error_and_its_cause_are_each_said_once() {
    let d = tempfile::tempdir().expect("tempdir");
    let st = store_with_scores(d.path());
    // A file ingestion cannot read: the scorers' I/O error, wrapped by
    // nothing but the CLI's own words, names the OS's reason once.
    let o = common::in_store(
        d.path(),
        &st,
        &["ingest", "junit", "--commit", A, "missing.xml"],
    );
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let said = text(&o);
    assert_eq!(
        said.matches("No such file or directory").count(),
        1,
        "{said}"
    );
    assert!(said.contains("missing.xml"), "{said}");
    // A store that is not there, through the gate's and the orchestrator's
    // transparent wrappers: one message, no "trace store: " prefixes.
    let o = common::in_store(d.path(), "nowhere", &["--json", "status"]);
    let doc = json(&o);
    let message = doc["error"]["message"].as_str().expect("message");
    assert!(!message.contains("trace store: "), "{message}");
    let first = message.split(": ").next().expect("a part");
    assert_eq!(message.matches(first).count(), 1, "{message}");
}

/// `watch` with too short a baseline says how many scores it found, up to
/// which seq, and the two ways out (`--from`, `--min-n`), instead of
/// "fewer than 30 … to take a baseline from".
#[test]
fn watch_with_too_short_a_baseline_names_what_it_found_and_the_way_out() {
    let (d, st) = common::fresh_store();
    let c = "3333333333333333333333333333333333333333";
    let lines: String = (0..5)
        .map(|i| {
            format!("{{\"task\":\"t{i}\",\"scorer\":\"acc\",\"value\":0.{i},\"commit\":\"{c}\"}}\n")
        })
        .collect();
    std::fs::write(d.path().join("s.jsonl"), lines).expect("lines");
    common::in_store_ok(
        d.path(),
        &st,
        &[
            "ingest",
            "jsonl",
            d.path().join("s.jsonl").to_str().expect("utf8"),
        ],
    );
    let o = common::in_store(
        d.path(),
        &st,
        &["watch", "--commit", c, "--scorer", "acc", "--from", "5"],
    );
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let said = text(&o);
    assert!(
        said.contains("has 5 acc score(s) up to seq 5")
            && said.contains("--from SEQ")
            && said.contains("--min-n"),
        "{said}"
    );
}

/// A betting class's line shows its statistic once — ln capital against
/// its bounds — not an LLR and Wald's boundaries beside it as well.
#[test]
fn a_betting_line_shows_its_capital_not_an_llr_beside_it() {
    let (d, st) = common::fresh_store();
    let (a, b) = (
        "1111111111111111111111111111111111111111",
        "2222222222222222222222222222222222222222",
    );
    let lines: String = (0..60)
        .flat_map(|i| {
            [
                format!(
                    "{{\"task\":\"t{i}\",\"scorer\":\"acc\",\"value\":0.5,\"commit\":\"{a}\"}}\n"
                ),
                format!(
                    "{{\"task\":\"t{i}\",\"scorer\":\"acc\",\"value\":0.9,\"commit\":\"{b}\"}}\n"
                ),
            ]
        })
        .collect();
    std::fs::write(d.path().join("s.jsonl"), lines).expect("lines");
    common::in_store_ok(
        d.path(),
        &st,
        &[
            "ingest",
            "jsonl",
            d.path().join("s.jsonl").to_str().expect("utf8"),
        ],
    );
    std::fs::write(
        d.path().join("s/policy.toml"),
        "[class.bet]\nscorer = \"acc\"\ntest = \"betting\"\nalpha = 0.05\nbeta = 0.1\ngap = 0.1\nmax_n = 200\n",
    )
    .expect("policy");
    let o = common::gate(
        d.path(),
        &st,
        a,
        b,
        "bet",
        &["--dry-run", "--allow-unpinned"],
    );
    let said = text(&o);
    let line = said
        .lines()
        .find(|l| l.contains("sequential test"))
        .unwrap_or_else(|| panic!("{said}"));
    assert!(line.contains("ln capital for"), "{line}");
    assert!(!line.contains("LLR") && !line.contains("Wald"), "{line}");
}
