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
    let r = ingest(&mut s, Format::Junit, std::slice::from_ref(&file), &options())
        .expect("ctest");
    // The file: tests="11" failures="1" disabled="2".
    assert_eq!(one_run(&s), ("(empty)".into(), 8, 1, 2, vec!["fails".into()]));
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
    assert!(!r.notes.iter().any(|n| n.contains("--suite")), "{:?}", r.notes);
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
    assert_eq!((suite.as_str(), passed, failed, skipped), ("mayfail_test", 2, 3, 2));
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
        &[real("junit-boost-test/boost-1.74-nested-expected-failures.xml")],
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
