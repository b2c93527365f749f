//! `ratchet verify` and `ratchet merge` as a person runs them.

use crate::common;

use std::path::Path;

use common::{ratchet, text};
use git2::Repository;
use ratchet_testkit::git::repo_with_branches;

/// A repository on `main` (a.txt x=1, b.txt y=1) with branches `a` (x=2)
/// and `b` (y=2), and a store in `.ratchet` (ignored).
fn repo(dir: &Path) -> Repository {
    let repo = repo_with_branches(
        dir,
        &[
            ("a.txt", Some("x=1\n")),
            ("b.txt", Some("y=1\n")),
            (".gitignore", Some(".ratchet\n")),
        ],
        &[("a", "a.txt", "x=2\n"), ("b", "b.txt", "y=2\n")],
    );
    assert!(ratchet(dir, &["init"], "").status.success());
    repo
}

const BUILD: &str = r#"sh -c 'test "$(cat a.txt)$(cat b.txt)" != x=2y=2'"#;

#[test]
fn verify_reports_each_command_and_exits_as_the_gate_does() {
    let d = tempfile::tempdir().expect("tempdir");
    repo(d.path());
    let ok = ratchet(d.path(), &["verify", "--cmd", "cat a.txt"], "");
    assert_eq!(ok.status.code(), Some(0), "{}", text(&ok));
    assert!(
        text(&ok).contains("ok   cat a.txt: exit 0"),
        "{}",
        text(&ok)
    );
    // The store directory is not part of what is verified.
    let ls = ratchet(
        d.path(),
        &["verify", "--cmd", "sh -c 'test ! -e .ratchet'"],
        "",
    );
    assert_eq!(ls.status.code(), Some(0), "{}", text(&ls));
    let bad = ratchet(
        d.path(),
        &["verify", "branch-a-does-not-exist", "--cmd", "true"],
        "",
    );
    assert_eq!(bad.status.code(), Some(2), "{}", text(&bad));
    let fail = ratchet(
        d.path(),
        &[
            "--json",
            "verify",
            "a",
            "--cmd",
            "sh -c 'echo boom >&2; exit 7'",
        ],
        "",
    );
    assert_eq!(fail.status.code(), Some(1), "{}", text(&fail));
    let v: serde_json::Value = serde_json::from_slice(&fail.stdout).expect("one JSON document");
    assert_eq!(v["verification"]["commands"][0]["exit"]["code"], 7);
    assert_eq!(v["verification"]["commands"][0]["stderr_tail"], "boom\n");
    assert_eq!(v["verification"]["passed"], false);
    let unbalanced = ratchet(d.path(), &["verify", "--cmd", "sh -c 'oops"], "");
    assert_eq!(unbalanced.status.code(), Some(2));
    assert!(
        text(&unbalanced).contains("unbalanced quotes"),
        "{}",
        text(&unbalanced)
    );
    let timeout = ratchet(
        d.path(),
        &["verify", "--timeout", "1", "--cmd", "sleep 30"],
        "",
    );
    assert_eq!(timeout.status.code(), Some(1));
    assert!(text(&timeout).contains("timed out"), "{}", text(&timeout));
}

#[test]
fn merge_lands_what_passes_and_names_a_semantic_conflict() {
    let d = tempfile::tempdir().expect("tempdir");
    let repo = repo(d.path());
    let before = repo.refname_to_id("refs/heads/main").expect("main");
    let out = ratchet(d.path(), &["merge", "a", "b", "--cmd", BUILD], "");
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let t = text(&out);
    assert!(t.contains("a: landed on main"), "{t}");
    assert!(t.contains("b: SEMANTIC CONFLICT"), "{t}");
    let tip = repo
        .find_commit(repo.refname_to_id("refs/heads/main").expect("main"))
        .expect("tip");
    assert_eq!(tip.parent_id(0).expect("parent"), before);
    let log = ratchet(d.path(), &["--json", "log", "--kind", "merge"], "");
    let v: serde_json::Value = serde_json::from_slice(&log.stdout).expect("json");
    assert_eq!(v["events"].as_array().map(Vec::len), Some(2), "{v}");
    // A dirty work tree is refused with a hint.
    std::fs::write(d.path().join("a.txt"), "by hand\n").expect("edit");
    let dirty = ratchet(d.path(), &["merge", "b", "--cmd", "true"], "");
    assert_eq!(dirty.status.code(), Some(2));
    assert!(
        text(&dirty).contains("uncommitted changes") && text(&dirty).contains("stash"),
        "{}",
        text(&dirty)
    );
}

/// A benchmark script: each run appends to a counter file in its work
/// directory and writes a hyperfine export of five times around 0.1 s
/// (deterministic variation from the counter), scaled by `factor.txt` (%).
const BENCH_SH: &str = r#"#!/bin/sh
n=$(cat n 2>/dev/null || echo 0); n=$((n + 1)); echo "$n" > n
f=$(cat factor.txt)
times=""; sum=0
for i in 1 2 3 4 5; do
  v=$(( (100000 + ((n * 37 + i * 11) % 50) * 60) * f / 100 ))
  sum=$((sum + v))
  t=$(printf '%d.%06d' $((v / 1000000)) $((v % 1000000)))
  times="$times${times:+,}$t"
done
m=$(printf '%d.%06d' $((sum / 5000000)) $((sum / 5 % 1000000)))
printf '{"results":[{"command":"work","mean":%s,"times":[%s],"exit_codes":[0,0,0,0,0]}]}\n' "$m" "$times" > out.json
"#;

const BENCH_POLICY: &str = r#"[class.perf]
scorer = "hyperfine_s"
test = "benchmarks"
alpha = 0.05
beta = 0.1
max_n = 100
regression = 0.05
equivalence = 0.01
"#;

/// `main` runs at 100 %; branch `slow` at 130 %, branch `same` at 100 %
/// (another commit, the same speed). A store in `.ratchet` with the policy.
fn bench_repo(dir: &Path) {
    repo_with_branches(
        dir,
        &[
            ("bench.sh", Some(BENCH_SH)),
            ("factor.txt", Some("100\n")),
            (".gitignore", Some(".ratchet\n")),
        ],
        &[
            ("slow", "factor.txt", "130\n"),
            ("same", "note.txt", "same speed\n"),
        ],
    );
    assert!(ratchet(dir, &["init"], "").status.success());
    std::fs::write(dir.join(".ratchet/policy.toml"), BENCH_POLICY).expect("policy");
}

fn bench(dir: &Path, candidate: &str) -> std::process::Output {
    ratchet(
        dir,
        &[
            "bench",
            "--baseline",
            "main",
            "--candidate",
            candidate,
            "--build",
            "chmod +x bench.sh",
            "--cmd",
            "sh bench.sh",
            "--out",
            "out.json",
            "--format",
            "hyperfine",
            "--class",
            "perf",
        ],
        "",
    )
}

#[test]
fn bench_rejects_a_slower_candidate_in_paired_rounds() {
    let d = tempfile::tempdir().expect("tempdir");
    bench_repo(d.path());
    let out = bench(d.path(), "slow");
    let said = text(&out);
    println!("{said}");
    assert_eq!(out.status.code(), Some(1), "{said}");
    // ABBA: even rounds run the baseline first, odd rounds the candidate.
    assert!(said.contains("round 0: baseline"), "{said}");
    assert!(said.contains("round 1: candidate"), "{said}");
    assert!(said.contains("REJECT"), "{said}");
    assert!(said.contains("work: slower"), "{said}");
    // Every run's samples are recorded with their round, under `bench`.
    let log = ratchet(
        d.path(),
        &["--json", "log", "--kind", "samples", "--limit", "1000"],
        "",
    );
    let log: serde_json::Value = serde_json::from_slice(&log.stdout).expect("one JSON document");
    let events = log["events"].as_array().expect("events");
    let rounds = said.matches("round ").count() as u64;
    assert!(rounds >= 2, "{said}");
    // One samples event per run: two per round.
    assert_eq!(events.len() as u64, 2 * rounds, "{log}");
    for e in events {
        assert_eq!(e["session"], "bench");
        assert!(
            e["payload"]["round"].as_u64().is_some_and(|r| r < rounds),
            "{e}"
        );
        assert_eq!(e["payload"]["values"].as_array().map(Vec::len), Some(5));
    }
}

#[test]
fn bench_promotes_an_unchanged_candidate() {
    let d = tempfile::tempdir().expect("tempdir");
    bench_repo(d.path());
    let out = bench(d.path(), "same");
    let said = text(&out);
    println!("{said}");
    assert_eq!(out.status.code(), Some(0), "{said}");
    assert!(said.contains("PROMOTE"), "{said}");
}

#[test]
fn bench_refuses_a_format_it_cannot_read_and_rejects_a_failed_build() {
    let d = tempfile::tempdir().expect("tempdir");
    bench_repo(d.path());
    let args = |format: &'static str, build: &'static str| {
        [
            "bench",
            "--baseline",
            "main",
            "--candidate",
            "same",
            "--build",
            build,
            "--cmd",
            "sh bench.sh",
            "--out",
            "out.json",
            "--format",
            format,
        ]
    };
    let junit = ratchet(d.path(), &args("junit", "true"), "");
    assert_eq!(junit.status.code(), Some(2), "{}", text(&junit));
    assert!(
        text(&junit).contains("not a format bench reads"),
        "{}",
        text(&junit)
    );
    let broken = ratchet(d.path(), &args("hyperfine", "sh -c 'exit 3'"), "");
    assert_eq!(broken.status.code(), Some(1), "{}", text(&broken));
    assert!(
        text(&broken).contains("FAILED: the baseline build failed"),
        "{}",
        text(&broken)
    );
    // Without a class every round runs and the exit is 0.
    let mut plain = args("hyperfine", "true").to_vec();
    plain.extend(["--rounds", "3"]);
    let plain = ratchet(d.path(), &plain, "");
    assert_eq!(plain.status.code(), Some(0), "{}", text(&plain));
    assert!(
        text(&plain).contains("round 2: baseline"),
        "{}",
        text(&plain)
    );
}

/// A Google Benchmark stand-in honouring `--benchmark_filter=REGEX` as the
/// library does (a name runs when the expression matches it): `BM_same`
/// takes 1,000 ns on both sides; `BM_wobbly` 1,000 ns on the baseline
/// and, on the candidate (which holds `note.txt`), 1,200 and 850 ns in
/// turn, so its pairs never show anything.
const GBENCH_SH: &str = r#"#!/bin/sh
filter=.
for a in "$@"; do case "$a" in --benchmark_filter=*) filter="${a#--benchmark_filter=}";; esac; done
n=$(cat n 2>/dev/null || echo 0); n=$((n + 1)); echo "$n" > n
echo "$filter" >> filters.log
wobbly=1000
if [ -f note.txt ]; then if [ $((n % 2)) -eq 1 ]; then wobbly=1200; else wobbly=850; fi; fi
rows=""
for pair in "BM_same 1000" "BM_wobbly $wobbly"; do
  set -- $pair
  if echo "$1" | grep -Eq "$filter"; then
    rows="$rows${rows:+,}{\"name\":\"$1\",\"run_name\":\"$1\",\"run_type\":\"iteration\",\"iterations\":1000,\"real_time\":$2,\"cpu_time\":$2,\"time_unit\":\"ns\"}"
  fi
done
printf '{"context":{"host_name":"h","num_cpus":2,"mhz_per_cpu":1000,"library_build_type":"release"},"benchmarks":[%s]}\n' "$rows" > out.json
"#;

/// Later rounds run only the benchmarks still undecided, through the
/// harness's own filter: `BM_same` is shown unchanged within a few rounds
/// and is not run again; `BM_wobbly` runs every round.
#[test]
fn bench_runs_only_the_undecided_benchmarks_in_later_rounds() {
    let d = tempfile::tempdir().expect("tempdir");
    repo_with_branches(
        d.path(),
        &[
            ("gbench.sh", Some(GBENCH_SH)),
            (".gitignore", Some(".ratchet\n")),
        ],
        &[("other", "note.txt", "the candidate\n")],
    );
    assert!(ratchet(d.path(), &["init"], "").status.success());
    std::fs::write(
        d.path().join(".ratchet/policy.toml"),
        BENCH_POLICY.replace("hyperfine_s", "gbench_real_ns"),
    )
    .expect("policy");
    let out = ratchet(
        d.path(),
        &[
            "bench",
            "--baseline",
            "main",
            "--candidate",
            "other",
            "--build",
            "true",
            "--cmd",
            "sh gbench.sh --benchmark_filter={undecided}",
            "--out",
            "out.json",
            "--format",
            "google-benchmark",
            "--class",
            "perf",
            "--rounds",
            "10",
        ],
        "",
    );
    let said = text(&out);
    println!("{said}");
    // BM_wobbly never decides: the bench ends undecided after its rounds.
    assert_eq!(out.status.code(), Some(3), "{said}");
    assert!(said.contains("round 0: baseline"), "{said}");
    assert!(said.contains("round 9 [only the 1 undecided]"), "{said}");
    assert!(said.contains("BM_same: unchanged"), "{said}");
    let log = ratchet(
        d.path(),
        &["--json", "log", "--kind", "samples", "--limit", "1000"],
        "",
    );
    let log: serde_json::Value = serde_json::from_slice(&log.stdout).expect("one JSON document");
    let rounds_of = |name: &str| -> Vec<u64> {
        let mut r: Vec<u64> = log["events"]
            .as_array()
            .expect("events")
            .iter()
            .filter(|e| e["payload"]["benchmark"] == name)
            .filter_map(|e| e["payload"]["round"].as_u64())
            .collect();
        r.dedup();
        r
    };
    let same = rounds_of("BM_same");
    assert_eq!(rounds_of("BM_wobbly"), (0..10).collect::<Vec<_>>());
    assert!(
        same.len() < 10 && same == (0..same.len() as u64).collect::<Vec<_>>(),
        "BM_same ran in rounds {same:?}"
    );
}

#[test]
fn bench_refuses_a_filter_for_a_tool_that_cannot_filter() {
    let d = tempfile::tempdir().expect("tempdir");
    bench_repo(d.path());
    let out = ratchet(
        d.path(),
        &[
            "bench",
            "--baseline",
            "main",
            "--candidate",
            "same",
            "--build",
            "true",
            "--cmd",
            "sh bench.sh {undecided}",
            "--out",
            "out.json",
            "--format",
            "hyperfine",
        ],
        "",
    );
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        text(&out).contains("hyperfine cannot run only some of its benchmarks"),
        "{}",
        text(&out)
    );
}

/// `verify --junit F --suite unit` records the report the commands just
/// wrote under the suite the policy requires: pytest names its suite
/// `pytest`, and without `--suite` the class's required `unit` is missing
/// (or, worse, satisfied by an older manual ingest) — with it, the run
/// just verified is the one that counts.
#[test]
fn verify_records_the_report_under_the_suite_the_policy_requires() {
    let d = tempfile::tempdir().expect("tempdir");
    let report = r#"<?xml version="1.0"?><testsuites><testsuite name="pytest" tests="2" failures="0" errors="0" skipped="0"><testcase classname="t" name="a"/><testcase classname="t" name="b"/></testsuite></testsuites>"#;
    repo_with_branches(
        d.path(),
        &[
            ("report.xml.in", Some(report)),
            (".gitignore", Some(".ratchet\n")),
        ],
        &[("b", "note.txt", "the candidate\n")],
    );
    assert!(ratchet(d.path(), &["init"], "").status.success());
    std::fs::write(
        d.path().join(".ratchet/policy.toml"),
        "[class.ci]\ntest = \"none\"\nrequired_suites = [\"unit\"]\n",
    )
    .expect("policy");
    let base = git_rev(d.path(), "main");
    let verify = |extra: &[&str]| {
        let mut args = vec![
            "verify",
            "b",
            "--cmd",
            "cp report.xml.in report.xml",
            "--junit",
            "report.xml",
            "--class",
            "ci",
            "--baseline",
            &base,
        ];
        args.extend_from_slice(extra);
        ratchet(d.path(), &args, "")
    };
    let unnamed = verify(&[]);
    assert_eq!(unnamed.status.code(), Some(4), "{}", text(&unnamed));
    let named = verify(&["--suite", "unit"]);
    assert_eq!(named.status.code(), Some(0), "{}", text(&named));
    let log = ratchet(d.path(), &["--json", "log", "--kind", "test_run"], "");
    let log: serde_json::Value = serde_json::from_slice(&log.stdout).expect("json");
    let suites: Vec<&str> = log["events"]
        .as_array()
        .expect("events")
        .iter()
        .filter_map(|e| e["payload"]["suite"].as_str())
        .collect();
    assert_eq!(suites, vec!["pytest", "unit"], "{log}");
}

fn git_rev(dir: &Path, rev: &str) -> String {
    let out = std::process::Command::new("git")
        .args(["rev-parse", rev])
        .current_dir(dir)
        .output()
        .expect("git");
    String::from_utf8(out.stdout)
        .expect("utf8")
        .trim()
        .to_string()
}
