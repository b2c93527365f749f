//! Ingestion with fixtures written as pytest, cargo-nextest and jest-junit
//! write them, and bad input that must store nothing.

use std::path::{Path, PathBuf};

use ratchet_scorers::{
    Error, PASS_RATE, Rubric, RubricSet, decode_xml, ingest_jsonl, ingest_junit, parse_junit,
};
mod real;
mod run_here;
mod samples;

use ratchet_trace::{AsOf, CommitId, Score, Store, StoreOptions, VerifyOptions};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

/// The verified view of `store` (every read goes through verification).
fn view(store: &Store) -> ratchet_trace::Verified {
    store.verified(&VerifyOptions::default()).expect("verifies")
}

/// `commit`'s scores by `scorer`, in seq order, as the verified view holds them.
fn scores(store: &Store, commit: &CommitId, scorer: &str) -> Vec<(u64, Score)> {
    view(store)
        .scores()
        .into_iter()
        .filter(|(_, s)| &s.commit == commit && s.scorer == scorer)
        .collect()
}

fn commit() -> CommitId {
    CommitId::parse(&"12".repeat(20)).expect("commit")
}

#[test]
fn junit_from_three_runners() {
    /// (suite, passed, failed, skipped)
    type Counts<'a> = (&'a str, u64, u64, u64);
    let cases: [(&str, Vec<Counts<'_>>); 3] = [
        ("pytest.xml", vec![("pytest", 2, 1, 1)]),
        (
            "nextest.xml",
            vec![
                ("ratchet-trace::store", 2, 0, 0),
                ("ratchet-trace::tamper", 1, 1, 0),
            ],
        ),
        ("jest-junit.xml", vec![("math", 2, 1, 0)]),
    ];
    for (file, want) in cases {
        let path = fixture(file);
        let xml = std::fs::read_to_string(&path).expect("fixture");
        let runs = parse_junit(&xml, &path, &commit()).unwrap_or_else(|e| panic!("{file}: {e}"));
        let got: Vec<Counts<'_>> = runs
            .iter()
            .map(|r| (r.suite.as_str(), r.passed, r.failed, r.skipped))
            .collect();
        assert_eq!(got, want, "{file}");
        assert!(
            runs.iter().all(|r| r.duration_ms > 0.0),
            "{file}: durations read"
        );
    }
}

#[test]
fn junit_from_surefire_and_gradle_with_a_bare_suite_root_in_any_declared_encoding() {
    /// (suite, passed, failed, skipped)
    type Counts = (String, u64, u64, u64);
    let cases: [(&str, Counts); 3] = [
        (
            "surefire.xml",
            ("com.example.CalculatorTest".into(), 1, 1, 1),
        ),
        ("gradle.xml", ("org.example.LibraryTest".into(), 2, 0, 0)),
        // Declared ISO-8859-1, with Latin-1 bytes: read as such, not refused.
        (
            "surefire-latin1.xml",
            ("com.example.CaféTest".into(), 2, 0, 0),
        ),
    ];
    for (file, want) in cases {
        let path = fixture(file);
        let bytes = std::fs::read(&path).expect("fixture");
        let xml = decode_xml(&bytes, &path).unwrap_or_else(|e| panic!("{file}: {e}"));
        let runs = parse_junit(&xml, &path, &commit()).unwrap_or_else(|e| panic!("{file}: {e}"));
        let got: Vec<Counts> = runs
            .iter()
            .map(|r| (r.suite.clone(), r.passed, r.failed, r.skipped))
            .collect();
        assert_eq!(got, vec![want], "{file}");
    }
    // Through ingestion too, from the file's bytes.
    let d = tempfile::tempdir().expect("tempdir");
    let mut store = Store::create(d.path().join("s"), StoreOptions::default()).expect("store");
    let r =
        ingest_junit(&mut store, &fixture("surefire-latin1.xml"), &commit(), "ci").expect("ingest");
    assert_eq!((r.test_runs, r.scores), (1, 1));
    let rates = scores(&store, &commit(), PASS_RATE);
    assert_eq!(rates[0].1.task, "com.example.CaféTest");

    // UTF-16 with a byte-order mark, as some Windows tools write.
    let text = std::fs::read_to_string(fixture("gradle.xml")).expect("fixture");
    let mut utf16 = vec![0xFF, 0xFE];
    utf16.extend(text.encode_utf16().flat_map(u16::to_le_bytes));
    let xml = decode_xml(&utf16, Path::new("utf16.xml")).expect("utf-16");
    assert_eq!(
        parse_junit(&xml, Path::new("utf16.xml"), &commit())
            .expect("parse")
            .len(),
        1
    );

    // An unknown encoding, and bytes invalid in the declared one, are named.
    let e = decode_xml(
        b"<?xml version=\"1.0\" encoding=\"klingon\"?><testsuites/>",
        Path::new("k.xml"),
    )
    .expect_err("unknown encoding");
    assert!(e.to_string().contains("klingon"), "{e}");
    let e = decode_xml(b"<testsuites name=\"\xff\"/>", Path::new("u.xml")).expect_err("bad UTF-8");
    assert!(e.to_string().contains("UTF-8"), "{e}");
}

#[test]
fn junit_ingestion_records_runs_and_pass_rates_atomically() {
    let d = tempfile::tempdir().expect("tempdir");
    let mut store = Store::create(d.path().join("s"), StoreOptions::default()).expect("store");
    let r = ingest_junit(&mut store, &fixture("nextest.xml"), &commit(), "ci").expect("ingest");
    assert_eq!((r.test_runs, r.scores), (2, 2));
    let rates = scores(&store, &commit(), PASS_RATE);
    let values: Vec<(String, f64)> = rates.into_iter().map(|(_, s)| (s.task, s.value)).collect();
    assert_eq!(
        values,
        vec![
            ("ratchet-trace::store".to_string(), 1.0),
            ("ratchet-trace::tamper".to_string(), 0.5)
        ]
    );

    let before = store.head().expect("head");
    let err =
        ingest_junit(&mut store, &fixture("broken.xml"), &commit(), "ci").expect_err("broken");
    assert!(matches!(err, Error::Malformed { .. }), "{err}");
    assert!(err.to_string().contains("broken.xml"), "{err}");
    assert_eq!(store.head().expect("head"), before, "nothing stored");
}

const RUBRIC: &str = r#"
name = "answer"
holdout = true
[[item]]
id = "correct"
type = "boolean"
weight = 1.0
"#;

#[test]
fn jsonl_scores_and_observations_with_line_numbered_errors() {
    let d = tempfile::tempdir().expect("tempdir");
    let mut store = Store::create(d.path().join("s"), StoreOptions::default()).expect("store");
    let rubrics = RubricSet::new(vec![Rubric::from_toml(RUBRIC).expect("rubric")]);
    let good = d.path().join("good.jsonl");
    std::fs::write(
        &good,
        "{\"task\":\"t1\",\"scorer\":\"latency\",\"value\":120.5,\"latency_ms\":120.5}\n\n{\"task\":\"t2\",\"rubric\":\"answer\",\"observation\":{\"correct\":true}}\n",
    )
    .expect("write");
    let r = ingest_jsonl(&mut store, &good, Some(&commit()), &rubrics, "judge").expect("ingest");
    assert_eq!(r.scores, 3, "two lines and the latency anchor of the first");
    let latency = scores(&store, &commit(), "latency_ms");
    assert_eq!(latency.len(), 1);
    let judged = scores(&store, &commit(), "answer");
    assert_eq!(judged.len(), 1);
    let (_, s) = &judged[0];
    assert!((s.value - 1.0).abs() < 1e-12);
    assert!(s.holdout, "holdout rubrics mark their scores");
    assert_eq!(
        s.scorer_version,
        rubrics.get("answer").expect("rubric").version()
    );

    let before = store.head().expect("head");
    for (body, needle) in [
        (
            "{\"task\":\"t\",\"scorer\":\"s\",\"value\":1}\n{not json\n",
            "line 2",
        ),
        (
            "{\"task\":\"t\",\"rubric\":\"answer\",\"observation\":{\"correct\":3}}\n",
            "correct",
        ),
        (
            "{\"task\":\"t\",\"rubric\":\"nope\",\"observation\":{}}\n",
            "unknown rubric",
        ),
        (
            "{\"task\":\"t\",\"scorer\":\"s\",\"value\":1,\"commit\":\"abc\"}\n",
            "full commit id",
        ),
        // A misspelled field is refused by name, never stored without it.
        (
            "{\"task\":\"t\",\"scorer\":\"s\",\"value\":1,\"holdot\":true}\n",
            "unknown field `holdot`",
        ),
        (
            "{\"task\":\"t\",\"rubric\":\"answer\",\"observation\":{},\"scorer\":\"x\"}\n",
            "unknown field `scorer`",
        ),
        (
            "{\"task\":\"t\",\"scorer\":\"s\"}\n",
            "missing field `value`",
        ),
        ("[1, 2]\n", "not a JSON object"),
        // An empty file is an error, not a success with nothing in it.
        ("", "holds no line"),
        ("\n  \n", "holds no line"),
    ] {
        let bad = d.path().join("bad.jsonl");
        std::fs::write(&bad, body).expect("write");
        let err =
            ingest_jsonl(&mut store, &bad, Some(&commit()), &rubrics, "judge").expect_err(body);
        let msg = err.to_string();
        assert!(msg.contains("bad.jsonl") && msg.contains(needle), "{msg}");
    }
    let bad = d.path().join("nocommit.jsonl");
    std::fs::write(&bad, "{\"task\":\"t\",\"scorer\":\"s\",\"value\":1}\n").expect("write");
    assert!(
        ingest_jsonl(&mut store, &bad, None, &rubrics, "judge")
            .expect_err("no commit")
            .to_string()
            .contains("no commit")
    );
    assert_eq!(store.head().expect("head"), before, "nothing stored");
    // A UTF-8 byte-order mark before the first line is not part of it.
    let bom = d.path().join("bom.jsonl");
    std::fs::write(
        &bom,
        "\u{feff}{\"task\":\"t9\",\"scorer\":\"s\",\"value\":1}\n",
    )
    .expect("write");
    let r = ingest_jsonl(&mut store, &bom, Some(&commit()), &rubrics, "judge").expect("BOM");
    assert_eq!(r.scores, 1);
}

#[test]
fn the_proposer_view_hides_holdouts() {
    let visible =
        Rubric::from_toml(&RUBRIC.replace("name = \"answer\"\nholdout = true", "name = \"style\""))
            .expect("rubric");
    let hidden = Rubric::from_toml(RUBRIC).expect("rubric");
    let set = RubricSet::new(vec![visible, hidden]);
    let view = set.proposer_view();
    let names: Vec<&str> = view.rubrics().map(|r| r.name.as_str()).collect();
    assert_eq!(names, vec!["style"]);
    assert!(matches!(view.rubric("answer"), Err(Error::Hidden(_))));
    let obs = serde_json::json!({"correct": true});
    assert!(matches!(
        view.item_results("answer", &obs),
        Err(Error::Hidden(_))
    ));
    let correct = view.item_results("style", &obs).expect("visible")["correct"];
    assert!((correct - 1.0).abs() < 1e-12);
    // Unknown names get the same answer as holdouts: nothing is revealed.
    assert_eq!(
        view.rubric("ghost").expect_err("unknown").to_string(),
        "rubric ghost is not available to the proposing side"
    );
    // The trusted side sees everything.
    assert!(set.get("answer").is_some());
}

#[test]
fn the_same_report_ingested_twice_is_counted_once() {
    let d = tempfile::tempdir().expect("tempdir");
    let mut store = Store::create(d.path().join("s"), StoreOptions::default()).expect("store");
    let other = CommitId::parse(&"34".repeat(20)).expect("commit");
    let first = ingest_junit(&mut store, &fixture("nextest.xml"), &commit(), "ci").expect("ingest");
    assert_eq!(first.already_ingested_at, None);
    let head = store.head().expect("head").size;
    let again = ingest_junit(&mut store, &fixture("nextest.xml"), &commit(), "ci").expect("again");
    assert_eq!((again.test_runs, again.scores), (0, 0));
    assert_eq!(
        again.already_ingested_at,
        Some(head),
        "points at the first ingestion"
    );
    assert_eq!(store.head().expect("head").size, head, "nothing stored");
    assert_eq!(view(&store).test_runs(&commit(), AsOf::Head).len(), 2);
    // The same report for another commit is other evidence.
    let elsewhere = ingest_junit(&mut store, &fixture("nextest.xml"), &other, "ci").expect("other");
    assert_eq!(
        (elsewhere.test_runs, elsewhere.already_ingested_at),
        (2, None)
    );

    // JSON Lines too, byte for byte; an edited file is new evidence.
    let jsonl = d.path().join("scores.jsonl");
    std::fs::write(
        &jsonl,
        "{\"task\":\"t1\",\"scorer\":\"acc\",\"value\":0.5}\n",
    )
    .expect("write");
    let rubrics = RubricSet::new(Vec::new());
    let a = ingest_jsonl(&mut store, &jsonl, Some(&commit()), &rubrics, "s").expect("jsonl");
    let b = ingest_jsonl(&mut store, &jsonl, Some(&commit()), &rubrics, "s").expect("jsonl again");
    assert_eq!((a.scores, b.scores), (1, 0));
    assert!(b.already_ingested_at.is_some());
    std::fs::write(
        &jsonl,
        "{\"task\":\"t1\",\"scorer\":\"acc\",\"value\":0.75}\n",
    )
    .expect("write");
    let c = ingest_jsonl(&mut store, &jsonl, Some(&commit()), &rubrics, "s").expect("edited");
    assert_eq!(c.scores, 1);
    assert_eq!(scores(&store, &commit(), "acc").len(), 2);
    assert!(store.verify().expect("verify").is_valid());
}

#[test]
fn a_rubric_file_is_read_by_its_extension_and_errors_say_where() {
    let d = tempfile::tempdir().expect("tempdir");
    let toml_path = d.path().join("answer.toml");
    std::fs::write(&toml_path, RUBRIC).expect("write");
    let r = Rubric::from_path(&toml_path).expect("toml");
    assert_eq!(r.name, "answer");
    let bad = d.path().join("bad.toml");
    std::fs::write(&bad, "name = \"x\"\nholdout = tru\n").expect("write");
    let e = Rubric::from_path(&bad).expect_err("syntax");
    assert!(e.to_string().contains("line 2, column"), "{e}");
    let bad_json = d.path().join("bad.JSON");
    std::fs::write(&bad_json, "{\"name\": \"x\",\n \"item\": [}").expect("write");
    let e = Rubric::from_path(&bad_json).expect_err("json");
    assert!(e.to_string().contains("line 2, column"), "{e}");
    assert!(matches!(
        Rubric::from_path(d.path().join("absent.toml")),
        Err(Error::Io { .. })
    ));
}

#[test]
fn one_score_is_recorded_with_its_scorer_declared_in_the_same_transaction() {
    use ratchet_scorers::{Direction, declared_direction, record_score};
    let d = tempfile::tempdir().expect("tempdir");
    let mut store = Store::create(d.path().join("s"), StoreOptions::default()).expect("store");
    let score = Score::new(commit(), "t1", "tokens", 10.0);
    let r = record_score(&mut store, &score, "s", Some(Direction::LowerIsBetter)).expect("record");
    assert_eq!(r.seq, 2, "declaration then score");
    let (dir, seq) = declared_direction(&view(&store), "tokens", u64::MAX)
        .expect("read")
        .expect("declared");
    assert_eq!((dir, seq), (Direction::LowerIsBetter, 1));
    // The same direction again (or none) declares nothing more.
    let r = record_score(&mut store, &score, "s", None).expect("again");
    assert_eq!(r.seq, 3);
    // A contradiction stores nothing.
    let head = store.head().expect("head");
    let e = record_score(&mut store, &score, "s", Some(Direction::HigherIsBetter))
        .expect_err("conflict");
    assert!(matches!(e, Error::DirectionConflict { .. }), "{e:?}");
    // An invalid score declares nothing either.
    let bad = Score::new(commit(), "t1", "fresh", f64::NAN);
    let e = record_score(&mut store, &bad, "s", Some(Direction::HigherIsBetter))
        .expect_err("a NaN score is refused");
    assert!(
        matches!(
            e,
            Error::Trace(ratchet_trace::Error::InvalidInput {
                field: "score.value",
                ..
            })
        ),
        "{e:?}"
    );
    assert_eq!(store.head().expect("head"), head, "nothing stored");
}
