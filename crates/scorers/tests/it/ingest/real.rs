//! Every format on real files that real tools wrote (origins in
//! `fixtures/real/ORIGIN.md`), through the one entry users call:
//! `ingest(store, format, paths, options)`, then read back from the
//! verified view. Expected JUnit counts were computed with Python's
//! `xml.etree.ElementTree` (an independent parser) over the same files;
//! expected benchmark and eval values are read off the files by hand.

use std::path::{Path, PathBuf};

use ratchet_scorers::{Direction, Error, Format, IngestOptions, PASS_RATE, ingest};
use ratchet_trace::{AsOf, CommitId, Score, Store, StoreOptions, TestRun, VerifyOptions};

/// A real tool's file under `fixtures/real` (shared with `samples`).
pub(super) fn real(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/real")
        .join(path)
}

pub(super) fn commit() -> CommitId {
    CommitId::parse(&"ab".repeat(20)).expect("commit")
}

pub(super) fn store() -> (tempfile::TempDir, Store) {
    let d = tempfile::tempdir().expect("tempdir");
    let s = Store::create(d.path().join("s"), StoreOptions::default()).expect("store");
    (d, s)
}

pub(super) fn options() -> IngestOptions {
    IngestOptions {
        commit: Some(commit()),
        ..IngestOptions::default()
    }
}

fn runs(store: &Store) -> Vec<TestRun> {
    let view = store.verified(&VerifyOptions::default()).expect("verifies");
    view.test_runs(&commit(), AsOf::Head)
        .into_iter()
        .map(|(_, r)| r)
        .collect()
}

fn scores(store: &Store, scorer: &str) -> Vec<Score> {
    let view = store.verified(&VerifyOptions::default()).expect("verifies");
    view.scores()
        .into_iter()
        .map(|(_, s)| s)
        .filter(|s| s.scorer == scorer)
        .collect()
}

fn value(scores: &[Score], task: &str) -> f64 {
    scores
        .iter()
        .find(|s| s.task == task)
        .unwrap_or_else(|| {
            let tasks: Vec<&str> = scores.iter().map(|s| s.task.as_str()).collect();
            panic!("no score for task {task:?}; tasks: {tasks:?}")
        })
        .value
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * b.abs().max(1.0)
}

/// (tests, failed, skipped) summed over the runs.
fn totals(runs: &[TestRun]) -> (u64, u64, u64) {
    runs.iter().fold((0, 0, 0), |(t, f, s), r| {
        (
            t + r.passed + r.failed + r.skipped,
            f + r.failed,
            s + r.skipped,
        )
    })
}

#[test]
fn every_runner_s_junit_is_read_whole() {
    // (directory, tests, failed, skipped) by ElementTree.
    let cases = [
        ("junit-gotestsum", 61, 13, 5),
        ("junit-go-junit-report", 27, 5, 4),
        ("junit-testng", 9, 3, 1),
        ("junit-surefire-dir", 14, 0, 0),
        ("junit-surefire-failing", 2, 2, 0),
        ("junit-phpunit", 19, 3, 0),
        ("junit-pytest", 2, 1, 0),
        ("junit-jest", 8, 6, 1),
        ("junit-nextest", 7, 2, 0),
        ("junit-gradle", 6, 0, 0),
    ];
    for (dir, tests, failed, skipped) in cases {
        let (_d, mut s) = store();
        let r = ingest(&mut s, Format::Junit, &[real(dir)], &options())
            .unwrap_or_else(|e| panic!("{dir}: {e}"));
        let got = runs(&s);
        assert_eq!(r.test_runs, got.len(), "{dir}");
        assert_eq!(totals(&got), (tests, failed, skipped), "{dir}: {got:?}");
        // Every failure is named, and the names are what the runner called them.
        let named: usize = got.iter().map(|r| r.failures.len()).sum();
        assert_eq!(named as u64, failed, "{dir}: failures named");
        assert!(
            got.iter()
                .all(|r| r.duration_ms >= 0.0 && !r.suite.is_empty()),
            "{dir}"
        );
        // One transaction: one ingest event, and a repeat stores nothing.
        let again = ingest(&mut s, Format::Junit, &[real(dir)], &options()).expect("again");
        assert!(again.already_ingested_at.is_some(), "{dir}: counted once");
        assert_eq!(runs(&s).len(), got.len(), "{dir}");
    }
}

#[test]
fn go_failures_with_numeric_character_references_are_named() {
    let (_d, mut s) = store();
    let f = real("junit-gotestsum/junitxml-report.xml");
    ingest(&mut s, Format::Junit, &[f], &options()).expect("gotestsum");
    let failures: Vec<String> = runs(&s).into_iter().flat_map(|r| r.failures).collect();
    assert!(
        failures.iter().any(|n| n.contains("TestFailed")),
        "{failures:?}"
    );
    assert!(failures.iter().all(|n| !n.contains('\n')), "{failures:?}");
}

#[test]
fn testng_timestamps_no_runner_can_parse_do_not_refuse_the_file() {
    let (_d, mut s) = store();
    let f = real("junit-testng/TEST-com.crm.qa.testcases.ContactsPageTest.xml");
    let r = ingest(&mut s, Format::Junit, &[f], &options()).expect("timestamp ignored");
    assert_eq!(r.test_runs, 1);
    assert_eq!(totals(&runs(&s)), (6, 1, 0));
}

#[test]
fn phpunit_s_nested_suites_are_counted_under_their_configured_suite() {
    let (_d, mut s) = store();
    let f = real("junit-phpunit/phpunit-legacy-dataprovider-nested.xml");
    ingest(&mut s, Format::Junit, &[f], &options()).expect("phpunit");
    let names: Vec<String> = runs(&s).into_iter().map(|r| r.suite).collect();
    // The unnamed wrapper is not a suite; its configured suites are.
    assert!(names.contains(&"Unit".to_string()), "{names:?}");
}

#[test]
fn a_directory_renamed_to_one_suite_is_what_a_policy_requires() {
    let (_d, mut s) = store();
    let o = IngestOptions {
        suite: Some("unit".into()),
        ..options()
    };
    let r = ingest(&mut s, Format::Junit, &[real("junit-surefire-dir")], &o).expect("dir");
    assert_eq!((r.files.len(), r.test_runs, r.scores), (3, 1, 1));
    let got = runs(&s);
    assert_eq!(got[0].suite, "unit");
    assert_eq!(totals(&got), (14, 0, 0));
    assert!(close(value(&scores(&s, PASS_RATE), "unit"), 1.0));
}

#[test]
fn a_directory_s_other_xml_is_skipped_but_a_named_file_must_be_junit() {
    let d = tempfile::tempdir().expect("dir");
    let reports = d.path().join("surefire-reports");
    std::fs::create_dir(&reports).expect("mkdir");
    std::fs::copy(
        real("junit-surefire-failing/TEST-org.apache.maven.surefire.test.FailingTest.xml"),
        reports.join("TEST-Failing.xml"),
    )
    .expect("copy");
    let summary = reports.join("failsafe-summary.xml");
    std::fs::write(&summary, "<failsafe-summary result=\"255\"/>").expect("write");
    let (_s, mut s) = store();
    let r = ingest(
        &mut s,
        Format::Junit,
        std::slice::from_ref(&reports),
        &options(),
    )
    .expect("dir");
    assert_eq!(r.test_runs, 1);
    assert!(
        r.notes.iter().any(|n| n.contains("failsafe-summary.xml")),
        "{:?}",
        r.notes
    );
    let head = s.head().expect("head").size;
    match ingest(&mut s, Format::Junit, &[summary], &options()) {
        Err(Error::Malformed { reason, .. }) => {
            assert!(reason.contains("not a JUnit report"), "{reason}")
        }
        other => panic!("a named non-JUnit file is refused, got {other:?}"),
    }
    assert_eq!(s.head().expect("head").size, head, "nothing stored");
}

#[test]
fn one_bad_file_among_many_stores_nothing() {
    let d = tempfile::tempdir().expect("dir");
    let bad = d.path().join("TEST-broken.xml");
    std::fs::write(&bad, "<testsuite name=\"x\"><testcase name=\"a\">").expect("write");
    let (_s, mut s) = store();
    let paths = [real("junit-gradle"), bad.clone()];
    match ingest(&mut s, Format::Junit, &paths, &options()) {
        Err(Error::Malformed { file, .. }) => assert_eq!(file, bad),
        other => panic!("expected Malformed naming the file, got {other:?}"),
    }
    assert_eq!(s.head().expect("head").size, 0, "nothing stored");
}

#[test]
fn benchmarks_are_recorded_with_their_units_directions_and_runner() {
    let (_d, mut s) = store();
    // hyperfine: the mean wall time in seconds.
    let r = ingest(
        &mut s,
        Format::Hyperfine,
        &[real("hyperfine/1brc-two-commands-3-runs.json")],
        &options(),
    )
    .expect("hyperfine");
    assert_eq!(r.scorers[0].direction, Some(Direction::LowerIsBetter));
    let h = scores(&s, "hyperfine_s");
    assert!(close(
        value(
            &h,
            "cargo run --release --bin 1brc measurements_1000000000.txt"
        ),
        11.61481411152
    ));
    // Google Benchmark: real and CPU time in ns, fingerprinted by the file's host.
    ingest(
        &mut s,
        Format::GoogleBenchmark,
        &[real("google-benchmark")],
        &options(),
    )
    .expect("gbench");
    assert!(close(
        value(&scores(&s, "gbench_real_ns"), "fib_10"),
        214.98980114547953
    ));
    assert!(close(
        value(&scores(&s, "gbench_cpu_ns"), "fib_20"),
        27_364.903_204_272_36
    ));
    // pytest-benchmark: the mean in seconds, under the test's full name.
    ingest(
        &mut s,
        Format::PytestBenchmark,
        &[real(
            "pytest-benchmark/pytest-benchmark-3.2.2-fib-data-elided.json",
        )],
        &options(),
    )
    .expect("pytest-benchmark");
    assert!(close(
        value(&scores(&s, "pytest_benchmark_s"), "bench.py::test_fib_10"),
        2.408868133322941e-05
    ));
    // criterion: the slope criterion prints, not the mean (0.3.0's capitalized keys).
    ingest(
        &mut s,
        Format::Criterion,
        &[real("criterion/rdd-0.3.0-capitalized/target/criterion")],
        &options(),
    )
    .expect("criterion");
    assert!(close(
        value(
            &scores(&s, "criterion_ns"),
            "hash_vs_btree_memoization/BTree/10"
        ),
        91931444.46233766
    ));
    // go test -bench: -count repeats averaged per unit, GOMAXPROCS kept in the task.
    ingest(
        &mut s,
        Format::GoBench,
        &[real(
            "go-bench/json-experiment-bench-time-count-mbps-benchmem.txt",
        )],
        &options(),
    )
    .expect("go-bench");
    let task = "github.com/33TU/json-experiment/bench.BenchmarkMarshalTime/encoding_json-32";
    assert!(close(value(&scores(&s, "go_bytes_per_op"), task), 96.0));
    let mbps = scores(&s, "go_mb_per_s");
    assert!(!mbps.is_empty());
    let view = s.verified(&VerifyOptions::default()).expect("verifies");
    assert_eq!(
        ratchet_scorers::direction_in(&view, "go_mb_per_s").expect("direction"),
        Direction::HigherIsBetter
    );
    assert_eq!(
        ratchet_scorers::direction_in(&view, "go_ns_per_op").expect("direction"),
        Direction::LowerIsBetter
    );
    // Timings of different runners are never one version.
    let gb = &scores(&s, "gbench_real_ns")[0].scorer_version;
    assert_ne!(gb, &h[0].scorer_version, "the file's host is the runner");
}

#[test]
fn bencher_metric_format_needs_a_direction_for_custom_measures() {
    let (_d, mut s) = store();
    let dhat = real("bmf/bencher-adapter-report_dhat.json");
    match ingest(&mut s, Format::Bmf, std::slice::from_ref(&dhat), &options()) {
        Err(Error::Malformed { reason, .. }) => assert!(reason.contains("--direction"), "{reason}"),
        other => panic!("custom measures without a direction record nothing, got {other:?}"),
    }
    assert_eq!(s.head().expect("head").size, 0);
    let o = IngestOptions {
        direction: Some(Direction::LowerIsBetter),
        ..options()
    };
    let r = ingest(&mut s, Format::Bmf, &[dhat], &o).expect("with a direction");
    assert_eq!(r.scores, 6);
    assert!(close(
        value(&scores(&s, "max-bytes"), "bench_play_game"),
        9.0
    ));
    let r = ingest(
        &mut s,
        Format::Bmf,
        &[real("bmf/bencher-adapter-report_latency.json")],
        &options(),
    )
    .expect("latency is known");
    assert_eq!(r.scorers[0].direction, Some(Direction::LowerIsBetter));
    assert!(close(
        value(&scores(&s, "latency"), "tests::benchmark_a"),
        3247.0
    ));
}

#[test]
fn llm_eval_outputs_become_one_score_per_sample_and_metric() {
    let (_d, mut s) = store();
    // Inspect: the same log as .json and as .eval is the same evidence.
    let r = ingest(
        &mut s,
        Format::Inspect,
        &[real("inspect/log_formats.json")],
        &options(),
    )
    .expect("json log");
    assert_eq!(r.scores, 1);
    let again = ingest(
        &mut s,
        Format::Inspect,
        &[real("inspect/log_formats.eval")],
        &options(),
    )
    .expect("eval log");
    assert!(
        again.already_ingested_at.is_some(),
        "the .eval of the same run counts once"
    );
    // Epochs of one sample are averaged: 2 samples x 2 epochs, accuracy 0.75.
    ingest(
        &mut s,
        Format::Inspect,
        &[real("inspect/log_streaming.eval")],
        &options(),
    )
    .expect("streaming");
    // (Both logs ran the task `popularity`: the streaming log's scores are the last two.)
    let m = scores(&s, "match");
    assert_eq!(m.len(), 3, "{m:?}");
    let streaming: Vec<f64> = m[1..].iter().map(|x| x.value).collect();
    assert!(
        close(streaming.iter().sum::<f64>() / 2.0, 0.75),
        "{streaming:?}"
    );
    // lm-eval: per document, Python's Infinity is a value not recorded, not a refused file.
    let r = ingest(&mut s, Format::LmEval, &[real("lm-eval")], &options()).expect("lm-eval");
    assert!(r.notes.iter().any(|n| n.contains("mae")), "{:?}", r.notes);
    assert_eq!(scores(&s, "acc").len(), 8);
    assert_eq!(scores(&s, "mae").len(), 24 - 17);
    assert!(
        scores(&s, "acc")
            .iter()
            .all(|x| x.task.starts_with("asdiv/"))
    );
    // promptfoo: score, pass, and the cost and latency it measured.
    ingest(
        &mut s,
        Format::Promptfoo,
        &[real(
            "promptfoo/prompt-eval-workbench-results-3tests-1fail.json",
        )],
        &options(),
    )
    .expect("promptfoo");
    let pass = scores(&s, "promptfoo_pass");
    assert!(close(test_value(&pass, "Multiplication 7×8"), 0.0));
    assert!(close(test_value(&pass, "Capital of France"), 1.0));
    assert!(close(
        test_value(&scores(&s, "latency_ms"), "Home planet"),
        907.0
    ));
    let versions: std::collections::BTreeSet<String> =
        pass.iter().map(|x| x.scorer_version.clone()).collect();
    assert_eq!(
        versions.len(),
        1,
        "one version per eval, so the gate pairs every test"
    );
}

/// The value of the promptfoo test described `description`: its task is
/// the description and a hash of what the test is (`Home planet #1a2b…`).
fn test_value(scores: &[Score], description: &str) -> f64 {
    let prefix = format!("{description} #");
    let found: Vec<&Score> = scores
        .iter()
        .filter(|s| s.task.starts_with(&prefix))
        .collect();
    match found.as_slice() {
        [one] => one.value,
        _ => {
            let tasks: Vec<&str> = scores.iter().map(|s| s.task.as_str()).collect();
            panic!("not one score for test {description:?}; tasks: {tasks:?}")
        }
    }
}

#[test]
fn format_names_and_missing_commits_are_clear_errors() {
    match "junitt".parse::<Format>() {
        Err(Error::UnknownFormat { known, .. }) => assert!(known.contains("google-benchmark")),
        other => panic!("{other:?}"),
    }
    assert_eq!(
        "Google_Benchmark".parse::<Format>().expect("alias"),
        Format::GoogleBenchmark
    );
    let (_d, mut s) = store();
    match ingest(
        &mut s,
        Format::Hyperfine,
        &[real("hyperfine")],
        &IngestOptions::default(),
    ) {
        Err(Error::NeedsCommit { format }) => assert_eq!(format, "hyperfine"),
        other => panic!("{other:?}"),
    }
    match ingest(&mut s, Format::Hyperfine, &[], &options()) {
        Err(Error::NoInput { .. }) => {}
        other => panic!("{other:?}"),
    }
}

#[test]
fn json_lines_take_a_direction() {
    let d = tempfile::tempdir().expect("dir");
    let f = d.path().join("t.jsonl");
    std::fs::write(
        &f,
        "{\"task\":\"a\",\"scorer\":\"wall_s\",\"value\":1.5,\"direction\":\"lower\"}\n",
    )
    .expect("write");
    let (_s, mut s) = store();
    let o = IngestOptions {
        commit: Some(commit()),
        ..IngestOptions::default()
    };
    ingest(&mut s, Format::Jsonl, std::slice::from_ref(&f), &o).expect("jsonl");
    let view = s.verified(&VerifyOptions::default()).expect("verifies");
    assert_eq!(
        ratchet_scorers::direction_in(&view, "wall_s").expect("d"),
        Direction::LowerIsBetter
    );
    // A line contradicting the trace is refused, naming the declaration.
    std::fs::write(
        &f,
        "{\"task\":\"b\",\"scorer\":\"wall_s\",\"value\":2,\"direction\":\"higher\"}\n",
    )
    .expect("write");
    match ingest(&mut s, Format::Jsonl, &[f], &o) {
        Err(Error::DirectionConflict { scorer, .. }) => assert_eq!(scorer, "wall_s"),
        other => panic!("{other:?}"),
    }
}

/// An `.eval` archive whose one sample deflates 64 MiB of spaces into a few
/// kilobytes: its headers may say anything, what counts is what it inflates
/// to as it is read.
fn zip_bomb(dir: &Path) -> PathBuf {
    use std::io::Write;
    let path = dir.join("bomb.eval");
    let file = std::fs::File::create(&path).expect("create");
    let mut zip = zip::ZipWriter::new(file);
    let deflated = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Deflated)
        .large_file(true);
    zip.start_file("header.json", deflated).expect("entry");
    zip.write_all(br#"{"eval": {"task": "bomb"}, "status": "success"}"#)
        .expect("header");
    zip.start_file("samples/1_epoch_1.json", deflated)
        .expect("entry");
    let spaces = vec![b' '; 1 << 20];
    for _ in 0..64 {
        zip.write_all(&spaces).expect("spaces");
    }
    zip.write_all(b"{}").expect("end");
    zip.finish().expect("finish");
    path
}

#[test]
fn an_archive_that_inflates_past_the_limit_is_refused_and_nothing_is_stored() {
    let (d, mut s) = store();
    let bomb = zip_bomb(d.path());
    let on_disk = std::fs::metadata(&bomb).expect("metadata").len();
    assert!(on_disk < 1 << 20, "the bomb is small on disk: {on_disk}");
    let head = s.head().expect("head");
    let limited = IngestOptions {
        max_inflated_bytes: Some(8 << 20),
        ..options()
    };
    match ingest(
        &mut s,
        Format::Inspect,
        std::slice::from_ref(&bomb),
        &limited,
    ) {
        Err(Error::Malformed {
            file,
            location,
            reason,
        }) => {
            assert_eq!(file, bomb);
            assert_eq!(location, "samples/1_epoch_1.json");
            assert!(reason.contains("inflates past 8388608 bytes"), "{reason}");
        }
        other => panic!("expected the archive refused as malformed, got {other:?}"),
    }
    assert_eq!(s.head().expect("head"), head, "nothing stored");
}

/// The `.eval` logs inspect-ai 0.3.285 wrote here (see ORIGIN.md): every
/// entry zstd-compressed, zip method 93.
const INSPECT_RUN: &str = "inspect-0.3.285";
const INSPECT_TINY: &str =
    "inspect-0.3.285/2026-12-05T01-10-26-00-00_tiny_9UqAUvKkx9QaaN7LSHZjyJ.eval";
const INSPECT_ERROR: &str =
    "inspect-0.3.285/2026-12-05T01-10-37-00-00_tiny-error_LbVLexPbDVDdvNgQGGYkx5.eval";
const INSPECT_ERROR_ALL: &str =
    "inspect-0.3.285/2026-12-05T01-10-46-00-00_tiny-error-all_jrmxUjCpK2DZkADR8FNA68.eval";

#[test]
fn inspect_s_default_zstd_eval_logs_are_read_sample_by_sample() {
    let (_d, mut s) = store();
    let r = ingest(&mut s, Format::Inspect, &[real(INSPECT_TINY)], &options())
        .expect("a zstd .eval is read");
    assert!(r.notes.is_empty(), "{:?}", r.notes);
    // mockllm answered s2 "no" for the target "mockllm": incorrect under
    // both scorers; the other three correct (accuracy 0.75, as Inspect said).
    for scorer in ["includes", "match"] {
        let got = scores(&s, scorer);
        assert_eq!(got.len(), 4, "{scorer}: {got:?}");
        for (task, want) in [
            ("tiny/s1", 1.0),
            ("tiny/s2", 0.0),
            ("tiny/s3", 1.0),
            ("tiny/s4", 1.0),
        ] {
            assert!(close(value(&got, task), want), "{scorer} {task}");
        }
    }
}

#[test]
fn a_logs_folder_with_finished_and_stopped_runs_records_every_scored_sample() {
    let (_d, mut s) = store();
    let r = ingest(&mut s, Format::Inspect, &[real(INSPECT_RUN)], &options())
        .expect("the folder is read whole");
    assert_eq!(r.files.len(), 3);
    let includes = scores(&s, "includes");
    assert_eq!(includes.len(), 5, "{includes:?}");
    assert!(close(value(&includes, "tiny_error/e1"), 1.0));
    let said = r.notes.join("\n");
    assert!(
        said.contains(r#"the log's status is "error" (RuntimeError('this solver raises on e2"#),
        "{said}"
    );
    assert!(
        said.contains("1 of the 2 sample(s) it holds are recorded"),
        "{said}"
    );
    assert!(
        said.contains(r#"sample "e2" ended in an error; not recorded"#),
        "{said}"
    );
}

#[test]
fn a_stopped_run_that_scored_nothing_says_so_once_and_stores_nothing() {
    let (_d, mut s) = store();
    let head = s.head().expect("head");
    match ingest(
        &mut s,
        Format::Inspect,
        &[real(INSPECT_ERROR_ALL)],
        &options(),
    ) {
        Err(Error::Malformed { reason, .. }) => {
            assert!(
                reason.contains(r#"the log's status is "error""#),
                "{reason}"
            );
            assert!(
                reason.contains("none of the 1 sample(s) it holds has a score to record"),
                "{reason}"
            );
            assert!(!reason.contains("are recorded"), "{reason}");
        }
        other => panic!("expected nothing recorded, got {other:?}"),
    }
    assert_eq!(s.head().expect("head"), head, "nothing stored");
    let r = ingest(&mut s, Format::Inspect, &[real(INSPECT_ERROR)], &options()).expect("e1");
    assert_eq!(r.scores, 1);
}

#[test]
fn json_that_is_not_an_inspect_log_is_called_that() {
    let (_d, mut s) = store();
    match ingest(
        &mut s,
        Format::Inspect,
        &[real("promptfoo-0.121.20/results.json")],
        &options(),
    ) {
        Err(Error::Malformed { reason, .. }) => {
            assert!(reason.contains("not an Inspect log"), "{reason}");
            assert!(!reason.contains("--no-log-samples"), "{reason}");
        }
        other => panic!("expected the file refused, got {other:?}"),
    }
}

#[test]
fn a_zstd_archive_is_held_to_the_same_inflation_limit_as_deflate() {
    let (_d, mut s) = store();
    let limited = IngestOptions {
        max_inflated_bytes: Some(4096),
        ..options()
    };
    match ingest(&mut s, Format::Inspect, &[real(INSPECT_TINY)], &limited) {
        Err(Error::Malformed {
            location, reason, ..
        }) => {
            // header.json (3,391 bytes) fits; the first sample does not.
            assert_eq!(location, "samples/s1_epoch_1.json");
            assert!(reason.contains("inflates past 4096 bytes"), "{reason}");
        }
        other => panic!("expected the archive refused, got {other:?}"),
    }
}

/// What `lm_eval --output_path <dir> --log_samples` wrote (lm_eval 0.4.13,
/// run here: see ORIGIN.md), under the model folder it chose.
const LM_EVAL_RUN: &str = "lm-eval-0.4.13";
const LM_EVAL_RESULTS: &str = "lm-eval-0.4.13/qdpv68r5/results_2026-12-05T01-18-47.385195.json";

#[test]
fn lm_eval_s_output_path_is_read_through_its_model_folder() {
    let (_d, mut s) = store();
    let r = ingest(&mut s, Format::LmEval, &[real(LM_EVAL_RUN)], &options())
        .expect("the directory lm-eval was told to write");
    assert_eq!(r.files.len(), 2, "{:?}", r.files);
    // Per document: the dummy model's random log-likelihoods chose right
    // on documents 0 and 2 (the samples file says so, line by line).
    let acc = scores(&s, "acc");
    assert_eq!(acc.len(), 4, "{acc:?}");
    for (task, want) in [
        ("tinymc/0", 1.0),
        ("tinymc/1", 0.0),
        ("tinymc/2", 1.0),
        ("tinymc/3", 0.0),
    ] {
        assert!(close(value(&acc, task), want), "{task}");
    }
    assert_eq!(scores(&s, "acc_norm").len(), 4);
}

#[test]
fn lm_eval_s_results_json_is_recorded_as_aggregates_the_gate_does_not_pair() {
    let (_d, mut s) = store();
    let r = ingest(&mut s, Format::LmEval, &[real(LM_EVAL_RESULTS)], &options())
        .expect("results_*.json is JSON, read whole");
    assert_eq!(r.scores, 2, "acc and acc_norm of tinymc");
    assert!(
        r.notes.iter().any(|n| n.contains("standard errors")),
        "{:?}",
        r.notes
    );
    // One number per lm-eval task, under a scorer of its own: a policy
    // naming `acc` reads the per-document scores only.
    let aggregate = scores(&s, "aggregate/acc");
    assert_eq!(aggregate.len(), 1);
    assert!(close(value(&aggregate, "tinymc"), 0.5));
    assert!(close(
        value(&scores(&s, "aggregate/acc_norm"), "tinymc"),
        0.5
    ));
    assert!(scores(&s, "acc").is_empty());
    let view = s.verified(&VerifyOptions::default()).expect("verifies");
    assert_eq!(
        ratchet_scorers::direction_in(&view, "aggregate/acc").expect("declared"),
        Direction::HigherIsBetter
    );
}

/// One promptfoo run (0.121.20, echo provider; see ORIGIN.md) written with
/// `-o results.xml -o results.json -o results.jsonl`.
const PROMPTFOO_RUN: &str = "promptfoo-0.121.20";

#[test]
fn promptfoo_s_xml_json_and_jsonl_of_one_run_are_the_same_evidence() {
    let (_d, mut s) = store();
    let r = ingest(
        &mut s,
        Format::Promptfoo,
        &[real(&format!("{PROMPTFOO_RUN}/results.xml"))],
        &options(),
    )
    .expect("promptfoo's XML, each row a repeated <results>");
    assert!(r.notes.is_empty(), "{:?}", r.notes);
    let pass = scores(&s, "promptfoo_pass");
    assert_eq!(pass.len(), 4, "{pass:?}");
    // The echo provider answers "Answer: 54" to the test expecting 56.
    for (test, want) in [
        ("Capital of France", 1.0),
        ("Multiplication 7x8", 0.0),
        ("Greeting", 1.0),
        ("Home planet", 1.0),
    ] {
        assert!(close(test_value(&pass, test), want), "{test}");
    }
    for other in ["results.json", "results.jsonl"] {
        let again = ingest(
            &mut s,
            Format::Promptfoo,
            &[real(&format!("{PROMPTFOO_RUN}/{other}"))],
            &options(),
        )
        .expect(other);
        assert!(
            again.already_ingested_at.is_some(),
            "{other} of the same run is the same evidence: {again:?}"
        );
    }
}
