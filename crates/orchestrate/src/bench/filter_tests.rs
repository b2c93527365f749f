//! The filters `{undecided}` becomes, per tool.

use std::collections::BTreeSet;

use ratchet_scorers::Format;

use super::{harness_filter, plain_name};

fn set(names: &[&str]) -> BTreeSet<String> {
    names.iter().map(|n| (*n).to_string()).collect()
}

#[test]
fn before_anything_is_decided_each_filter_selects_every_benchmark() {
    assert_eq!(
        harness_filter(Format::GoogleBenchmark, None).as_deref(),
        Some(".")
    );
    assert_eq!(harness_filter(Format::GoBench, None).as_deref(), Some("."));
    assert_eq!(
        harness_filter(Format::PytestBenchmark, None).as_deref(),
        Some("")
    );
}

#[test]
fn google_benchmark_names_are_anchored_and_escaped() {
    let filter = harness_filter(
        Format::GoogleBenchmark,
        Some(&set(&["BM_sort/1024", "BM_copy<int>/8/real_time"])),
    );
    assert_eq!(
        filter.as_deref(),
        Some("^(BM_copy<int>/8/real_time|BM_sort/1024)$")
    );
    let filter = harness_filter(Format::GoogleBenchmark, Some(&set(&["BM_a.b(x)+"])));
    assert_eq!(filter.as_deref(), Some(r"^(BM_a\.b\(x\)\+)$"));
}

#[test]
fn go_filters_top_level_names_without_package_or_procs_suffix() {
    let filter = harness_filter(
        Format::GoBench,
        Some(&set(&[
            "example.com/m/pkg.BenchmarkSort/n=10-8",
            "example.com/m/pkg.BenchmarkSort/n=100-8",
            "example.com/m/pkg.BenchmarkHash-8",
            "BenchmarkPlain",
        ])),
    );
    assert_eq!(
        filter.as_deref(),
        Some("^(BenchmarkHash|BenchmarkPlain|BenchmarkSort)$")
    );
}

#[test]
fn pytest_filters_test_functions_joined_by_or() {
    let filter = harness_filter(
        Format::PytestBenchmark,
        Some(&set(&[
            "tests/test_sort.py::test_sort[100]",
            "tests/test_sort.py::test_sort[1000]",
            "tests/test_x.py::TestHash::test_hash",
        ])),
    );
    assert_eq!(filter.as_deref(), Some("test_hash or test_sort"));
}

#[test]
fn tools_that_cannot_filter_have_no_filter() {
    assert_eq!(harness_filter(Format::Hyperfine, None), None);
    assert_eq!(harness_filter(Format::Bmf, Some(&set(&["a"]))), None);
}

/// Names come from what the benchmark programs printed, the candidate's
/// among them, and the filter goes into the baseline's command too: a name
/// with anything a shell or a `-k` expression reads leaves the round
/// unfiltered.
#[test]
fn only_plain_names_go_into_a_command() {
    for plain in [
        "BM_sort/1024",
        "pkg.BenchmarkX-8",
        "tests/t.py::test_a",
        "b=1,c=2+x",
    ] {
        assert!(plain_name(plain), "{plain}");
    }
    for hostile in [
        "x'; sleep 5; '",
        "a or not b",
        "$(touch pwned)",
        "BM_copy<int>",
        "t[1]",
        "a\nb",
        "",
    ] {
        assert!(!plain_name(hostile), "{hostile:?}");
    }
}
