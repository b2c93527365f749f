//! Files that real tools wrote when run on this machine (issue 37: every
//! real file read right), each with the tiny program that made it beside
//! it (`fixtures/real/<dir>/src`, origins in `fixtures/real/ORIGIN.md`):
//! read as the runner itself counts them.

use ratchet_scorers::{Direction, Format, IngestOptions, ingest};
use ratchet_trace::{AsOf, Score, Store, TestRun, VerifyOptions};

use super::real::{commit, options, real, store};

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

fn direction(store: &Store, scorer: &str) -> Direction {
    let view = store.verified(&VerifyOptions::default()).expect("verifies");
    ratchet_scorers::direction_in(&view, scorer).expect("direction")
}

/// The one run a file recorded, as (suite, passed, failed, skipped, failures).
fn one_run(store: &Store) -> (String, u64, u64, u64, Vec<String>) {
    let runs = runs(store);
    assert_eq!(runs.len(), 1, "{runs:?}");
    let r = runs.into_iter().next().expect("one run");
    (r.suite, r.passed, r.failed, r.skipped, r.failures)
}

#[test]
fn a_disabled_google_test_is_skipped_not_passed() {
    let (_d, mut s) = store();
    ingest(
        &mut s,
        Format::Junit,
        &[real("junit-gtest/gtest-1.12.1-disabled.xml")],
        &options(),
    )
    .expect("gtest");
    // The file: tests="4" failures="1" disabled="1".
    assert_eq!(
        one_run(&s),
        ("Arith".into(), 2, 1, 1, vec!["Arith.Divides".into()])
    );
}

#[test]
fn ctest_s_disabled_tests_are_skipped_and_its_made_up_suite_name_is_pointed_out() {
    let (_d, mut s) = store();
    let file = real("junit-ctest/ctest-3.25.1-disabled.xml");
    let r = ingest(
        &mut s,
        Format::Junit,
        std::slice::from_ref(&file),
        &options(),
    )
    .expect("ctest");
    // The file: tests="11" failures="1" disabled="2".
    assert_eq!(
        one_run(&s),
        ("(empty)".into(), 8, 1, 2, vec!["fails".into()])
    );
    assert!(
        r.notes
            .iter()
            .any(|n| n.contains("\"(empty)\"") && n.contains("--suite NAME")),
        "{:?}",
        r.notes
    );
    let (_d, mut s) = store();
    let named = IngestOptions {
        suite: Some("ctest".into()),
        ..options()
    };
    let r = ingest(&mut s, Format::Junit, &[file], &named).expect("renamed");
    assert_eq!(one_run(&s).0, "ctest");
    assert!(
        !r.notes.iter().any(|n| n.contains("--suite")),
        "{:?}",
        r.notes
    );
}

#[test]
fn catch2_s_allowed_failures_are_counted_as_catch2_counts_them() {
    let (_d, mut s) = store();
    ingest(
        &mut s,
        Format::Junit,
        &[real("junit-catch2/catch2-2.13.10-mayfail-shouldfail.xml")],
        &options(),
    )
    .expect("catch2");
    // The file says failures="2" errors="1": `fails`, `throws`, and the
    // [!shouldfail] test that passed (which no <failure> marks). The
    // [!mayfail]/[!shouldfail] tests that failed are <skipped>.
    let (suite, passed, failed, skipped, failures) = one_run(&s);
    assert_eq!(
        (suite.as_str(), passed, failed, skipped),
        ("mayfail_test", 2, 3, 2)
    );
    assert_eq!(
        failures,
        vec!["mayfail_test.global.fails", "mayfail_test.global.throws"]
    );
}

#[test]
fn boost_test_s_expected_failures_pass_and_a_failure_keeps_its_outer_suite() {
    let (_d, mut s) = store();
    let r = ingest(
        &mut s,
        Format::Junit,
        &[real(
            "junit-boost-test/boost-1.74-nested-expected-failures.xml",
        )],
        &options(),
    )
    .expect("boost");
    // The file: tests="5" failures="1".
    assert_eq!(
        one_run(&s),
        (
            "nested".into(),
            4,
            1,
            0,
            vec!["outer.inner.inner_fails".into()]
        )
    );
    assert!(
        r.notes.iter().any(|n| n.contains("expected_failures")),
        "{:?}",
        r.notes
    );
}

#[test]
fn a_go_benchmark_that_failed_is_a_failed_test_run_of_its_package() {
    let (_d, mut s) = store();
    let o = IngestOptions {
        direction: Some(Direction::HigherIsBetter),
        ..options()
    };
    let r = ingest(
        &mut s,
        Format::GoBench,
        &[real(
            "go-bench-run-here/go-1.19-bench-fatal-two-metrics.txt",
        )],
        &o,
    )
    .expect("go bench");
    // `BenchmarkBroken` called b.Fatal: no result line, `--- FAIL` and `FAIL`.
    let run = (
        "example.com/benchfail".to_string(),
        2,
        1,
        0,
        vec!["example.com/benchfail.BenchmarkBroken".to_string()],
    );
    assert_eq!(one_run(&s), run);
    assert_eq!(r.failed_runs.len(), 1);
    assert!(
        r.notes
            .iter()
            .any(|n| n.contains("BenchmarkBroken") && n.contains("failed test run")),
        "{:?}",
        r.notes
    );
    // The benchmarks that ran are recorded as before.
    assert_eq!(scores(&s, "go_ns_per_op").len(), 2);
}

#[test]
fn one_direction_serves_every_custom_go_unit_and_each_unit_may_have_its_own() {
    let file = real("go-bench-run-here/go-1.19-bench-fatal-two-metrics.txt");
    let task = "example.com/benchfail.BenchmarkCache-2";
    let (_d, mut s) = store();
    let one = IngestOptions {
        direction: Some(Direction::LowerIsBetter),
        ..options()
    };
    ingest(&mut s, Format::GoBench, std::slice::from_ref(&file), &one).expect("one direction");
    for scorer in ["go_hit-ratio", "go_widgets-per-op"] {
        assert_eq!(scores(&s, scorer).len(), 1, "{scorer}");
        assert_eq!(direction(&s, scorer), Direction::LowerIsBetter, "{scorer}");
    }
    let (_d, mut s) = store();
    let each = IngestOptions {
        directions: [
            ("hit-ratio".to_string(), Direction::HigherIsBetter),
            ("widgets/op".to_string(), Direction::LowerIsBetter),
        ]
        .into(),
        ..options()
    };
    ingest(&mut s, Format::GoBench, &[file], &each).expect("a direction per unit");
    assert_eq!(direction(&s, "go_hit-ratio"), Direction::HigherIsBetter);
    assert_eq!(direction(&s, "go_widgets-per-op"), Direction::LowerIsBetter);
    let hits = scores(&s, "go_hit-ratio");
    assert_eq!(hits[0].task, task);
    assert!((hits[0].value - 0.75).abs() < 1e-12);
    assert!((scores(&s, "go_widgets-per-op")[0].value - 3.0).abs() < 1e-12);
    // Time units keep the direction they have.
    assert_eq!(direction(&s, "go_ns_per_op"), Direction::LowerIsBetter);
    assert_eq!(direction(&s, "go_allocs_per_op"), Direction::LowerIsBetter);
}

#[test]
fn google_benchmark_user_counters_are_recorded_or_said_never_dropped() {
    let file = real("google-benchmark-counters/gbench-1.7.1-user-counters.json");
    // Without a direction: the times are recorded, each counter is named in a note.
    let (_d, mut s) = store();
    let r = ingest(
        &mut s,
        Format::GoogleBenchmark,
        std::slice::from_ref(&file),
        &options(),
    )
    .expect("times");
    assert!(
        r.notes
            .iter()
            .any(|n| n.contains("counter") && n.contains("--direction") && n.contains("=higher")),
        "{:?}",
        r.notes
    );
    assert!(scores(&s, "gbench_items").is_empty());
    assert_eq!(scores(&s, "gbench_real_ns").len(), 1);
    // A direction per counter: each its own scorer, under its own name.
    let (_d, mut s) = store();
    let each = IngestOptions {
        directions: [
            ("items".to_string(), Direction::HigherIsBetter),
            ("size".to_string(), Direction::LowerIsBetter),
        ]
        .into(),
        ..options()
    };
    let r = ingest(
        &mut s,
        Format::GoogleBenchmark,
        std::slice::from_ref(&file),
        &each,
    )
    .expect("counters");
    let items = scores(&s, "gbench_items");
    assert_eq!(items.len(), 1);
    assert_eq!(items[0].task, "BM_Sum/256");
    assert!((items[0].value - 2.380_881_506_697_691e9).abs() < 1.0);
    assert_eq!(direction(&s, "gbench_items"), Direction::HigherIsBetter);
    assert!((scores(&s, "gbench_size")[0].value - 256.0).abs() < 1e-12);
    assert_eq!(direction(&s, "gbench_size"), Direction::LowerIsBetter);
    assert!(
        !r.notes.iter().any(|n| n.contains("counter")),
        "{:?}",
        r.notes
    );
    // One direction serves every counter.
    let (_d, mut s) = store();
    let one = IngestOptions {
        direction: Some(Direction::HigherIsBetter),
        ..options()
    };
    ingest(&mut s, Format::GoogleBenchmark, &[file], &one).expect("one direction");
    assert_eq!(direction(&s, "gbench_size"), Direction::HigherIsBetter);
    assert_eq!(direction(&s, "gbench_real_ns"), Direction::LowerIsBetter);
}

#[test]
fn a_direction_named_for_a_metric_the_file_does_not_have_is_said() {
    let (_d, mut s) = store();
    let typo = IngestOptions {
        directions: [("hit_ratio".to_string(), Direction::HigherIsBetter)].into(),
        ..options()
    };
    let r = ingest(
        &mut s,
        Format::GoBench,
        &[real(
            "go-bench-run-here/go-1.19-bench-fatal-two-metrics.txt",
        )],
        &typo,
    )
    .expect("the times are recorded");
    assert!(
        r.notes.iter().any(|n| n.contains("--direction hit_ratio=")),
        "{:?}",
        r.notes
    );
    // The units it has are named with the flag that would record them.
    assert!(
        r.notes.iter().any(
            |n| n.contains("\"hit-ratio\"") && n.contains("--direction hit-ratio=higher|lower")
        ),
        "{:?}",
        r.notes
    );
    assert!(scores(&s, "go_hit-ratio").is_empty());
}
