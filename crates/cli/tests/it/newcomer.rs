//! The gate as a new user meets it (issue 37): a class decided on its test
//! suites alone, the README's own policies, `best` saying why nothing
//! ranks, hints that fit the situation, benchmark files from another
//! machine.

use std::path::Path;

use crate::common;

use common::{assert_says, in_store, in_store_ok, text};

const BASE: &str = "1111111111111111111111111111111111111111";
const CAND: &str = "2222222222222222222222222222222222222222";

/// A JUnit report of one suite with ten cases, the first `failures` of
/// them failing.
fn junit(suite: &str, failures: usize) -> String {
    let cases: String = (0..10)
        .map(|i| {
            if i < failures {
                format!("<testcase name=\"c{i}\" classname=\"{suite}\" time=\"0.1\"><failure message=\"boom\"/></testcase>")
            } else {
                format!("<testcase name=\"c{i}\" classname=\"{suite}\" time=\"0.1\"/>")
            }
        })
        .collect();
    format!(
        "<?xml version=\"1.0\"?><testsuites><testsuite name=\"{suite}\" tests=\"10\" failures=\"{failures}\" errors=\"0\" skipped=\"0\" time=\"1.0\">{cases}</testsuite></testsuites>"
    )
}

/// `ratchet ingest junit FILE --commit COMMIT [--suite NAME]` of `xml`,
/// which must succeed.
fn ingest_junit(dir: &Path, st: &str, name: &str, xml: &str, commit: &str, suite: Option<&str>) {
    let file = dir.join(name);
    std::fs::write(&file, xml).expect("junit file");
    let file = file.to_str().expect("utf8");
    let mut args = vec!["ingest", "junit", file, "--commit", commit];
    if let Some(s) = suite {
        args.extend(["--suite", s]);
    }
    in_store_ok(dir, st, &args);
}

/// The README's CI class: the `unit` suite must be green, nothing else.
const SUITES_ONLY: &str = "[class.ci]\ntest = \"none\"\nrequired_suites = [\"unit\"]\n";

#[test]
fn a_class_with_test_none_promotes_an_all_green_candidate_on_its_suites_alone() {
    let (d, st) = common::fresh_store();
    let (dir, st) = (d.path(), st.as_str());
    std::fs::write(dir.join("s/policy.toml"), SUITES_ONLY).expect("policy");
    // `policy pin` takes a class with no scorer, and shows no reading.
    let o = in_store_ok(dir, st, &["policy", "pin", "s/policy.toml"]);
    assert_says(&o, "pinned class ci");
    // No run yet: evidence missing, as for any class.
    let o = common::gate(dir, st, BASE, CAND, "ci", &["--dry-run"]);
    assert_eq!(o.status.code(), Some(4), "{}", text(&o));
    ingest_junit(dir, st, "green.xml", &junit("unit", 0), CAND, None);
    let o = common::gate(dir, st, BASE, CAND, "ci", &[]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert_says(&o, "PROMOTE");
    assert_says(&o, "no sequential test");
    assert!(!text(&o).contains("CONTINUE"), "{}", text(&o));
    let o = common::gate(dir, st, BASE, CAND, "ci", &["--json", "--dry-run"]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json verdict");
    assert_eq!(v["status"], "promote", "{v}");
    // The comment says what decided, not that a test stopped early.
    let o = in_store_ok(dir, st, &["report", "--markdown"]);
    assert_says(&o, "decided by its required suites and invariants alone");
    assert!(!text(&o).contains("α ="), "{}", text(&o));
    // And so does the HTML report: no primary metric "not reached".
    in_store_ok(dir, st, &["report", "--out", "r.html"]);
    let html = std::fs::read_to_string(dir.join("r.html")).expect("report");
    assert!(
        html.contains("decided by its required suites and invariants alone")
            && !html.contains("not reached"),
        "{html}"
    );
}

#[test]
fn a_class_with_test_none_rejects_a_failing_suite_by_name() {
    let (d, st) = common::fresh_store();
    let (dir, st) = (d.path(), st.as_str());
    std::fs::write(dir.join("s/policy.toml"), SUITES_ONLY).expect("policy");
    ingest_junit(dir, st, "red.xml", &junit("unit", 2), CAND, None);
    let o = common::gate(dir, st, BASE, CAND, "ci", &["--dry-run"]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert_says(&o, "REJECT at required tests");
    assert_says(&o, "unit.c0, unit.c1");
}

#[test]
fn a_class_with_test_none_refuses_what_it_would_not_read() {
    let (d, st) = common::fresh_store();
    let (dir, st) = (d.path(), st.as_str());
    for (policy, field) in [
        (
            "[class.ci]\ntest = \"none\"\nscorer = \"pass_rate\"\nrequired_suites = [\"unit\"]\n",
            "class.ci.scorer",
        ),
        (
            "[class.ci]\ntest = \"none\"\nalpha = 0.05\nrequired_suites = [\"unit\"]\n",
            "class.ci.alpha",
        ),
        ("[class.ci]\ntest = \"none\"\n", "class.ci.required_suites"),
        // And a class with a test still needs its scorer and parameters.
        (
            "[class.ci]\nalpha = 0.05\nbeta = 0.1\nmax_n = 10\ngap = 0.1\n",
            "test = \"none\"",
        ),
    ] {
        std::fs::write(dir.join("p.toml"), policy).expect("policy");
        let o = in_store(dir, st, &["policy", "pin", "p.toml"]);
        assert_eq!(o.status.code(), Some(2), "{policy}: {}", text(&o));
        assert_says(&o, field);
    }
}

#[test]
fn a_missing_suite_is_named_with_the_side_that_lacks_it_and_how_to_name_a_report() {
    let (d, st) = common::fresh_store();
    let (dir, st) = (d.path(), st.as_str());
    std::fs::write(dir.join("s/policy.toml"), SUITES_ONLY).expect("policy");
    // The baseline's report was ingested as `unit`, the candidate's under
    // the name its runner gave it.
    ingest_junit(dir, st, "base.xml", &junit("unit", 0), BASE, None);
    ingest_junit(dir, st, "cand.xml", &junit("pytest", 0), CAND, None);
    let o = common::gate(dir, st, BASE, CAND, "ci", &["--dry-run"]);
    assert_eq!(o.status.code(), Some(4), "{}", text(&o));
    assert_says(&o, "suite unit has no run on the candidate");
    assert_says(&o, "the baseline has 1 run(s) of it");
    assert_says(&o, "the candidate has runs of: pytest");
    assert_says(&o, "--suite unit");
    // A suite that is named and ran, but failed, gets no hint to name it.
    ingest_junit(dir, st, "red.xml", &junit("unit", 1), CAND, None);
    let o = common::gate(dir, st, BASE, CAND, "ci", &["--dry-run"]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(
        !text(&o).contains("required_suites") && !text(&o).contains("has no run"),
        "{}",
        text(&o)
    );
    assert_says(&o, "unit.c0");
}

#[test]
fn a_missing_suite_beside_suites_already_required_gets_no_hint_to_require_them() {
    let (d, st) = common::fresh_store();
    let (dir, st) = (d.path(), st.as_str());
    std::fs::write(
        dir.join("s/policy.toml"),
        "[class.ci]\ntest = \"none\"\nrequired_suites = [\"unit\", \"integration\"]\n",
    )
    .expect("policy");
    ingest_junit(dir, st, "base.xml", &junit("unit", 0), BASE, None);
    ingest_junit(dir, st, "cand.xml", &junit("integration", 0), CAND, None);
    let o = common::gate(dir, st, BASE, CAND, "ci", &["--dry-run"]);
    assert_eq!(o.status.code(), Some(4), "{}", text(&o));
    assert_says(&o, "suite unit has no run on the candidate");
    // `integration` is named in required_suites already: naming it there
    // is no way out, recording a run of unit is.
    assert_says(
        &o,
        "the candidate has runs of: integration (each required already)",
    );
    assert_says(&o, "--suite unit");
    assert!(!text(&o).contains("in required_suites"), "{}", text(&o));
    // A suite the policy does not name still gets the hint.
    ingest_junit(dir, st, "more.xml", &junit("pytest", 0), CAND, None);
    let o = common::gate(dir, st, BASE, CAND, "ci", &["--dry-run"]);
    assert_says(&o, "or name that suite in required_suites");
}

/// A store with five timings in seconds, tens of microseconds each, of
/// one commit.
fn store_with_small_timings() -> (tempfile::TempDir, String) {
    let (d, st) = common::fresh_store();
    for (i, v) in ["0.00001", "0.00002", "0.00003", "0.00004", "0.00005"]
        .iter()
        .enumerate()
    {
        let task = format!("t{i}");
        in_store_ok(
            d.path(),
            &st,
            &[
                "record-score",
                "--commit",
                CAND,
                "--task",
                &task,
                "--scorer",
                "hyperfine_s",
                "--value",
                v,
            ],
        );
    }
    (d, st)
}

#[test]
fn best_says_why_no_commit_ranks_under_the_default_min_n() {
    let (d, st) = store_with_small_timings();
    let o = in_store(d.path(), &st, &["best", "--scorer", "hyperfine_s"]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert_says(&o, "1 commit(s) have scores of hyperfine_s");
    assert_says(&o, "the most any has is 5");
    assert_says(&o, "--min-n 30");
    let o = in_store(
        d.path(),
        &st,
        &["--json", "best", "--scorer", "hyperfine_s"],
    );
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
    assert!(
        v["reason"]
            .as_str()
            .is_some_and(|r| r.contains("--min-n 30")),
        "{v}"
    );
}

#[test]
fn best_names_an_unknown_scorer_and_the_known_ones() {
    let (d, st) = store_with_small_timings();
    let o = in_store(d.path(), &st, &["best", "--scorer", "hyperfine_ms"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert_says(&o, "unknown scorer \"hyperfine_ms\"");
    assert_says(&o, "its scorers are hyperfine_s");
}

#[test]
fn best_prints_small_timings_with_significant_digits() {
    let (d, st) = store_with_small_timings();
    let o = in_store_ok(
        d.path(),
        &st,
        &["best", "--scorer", "hyperfine_s", "--min-n", "3"],
    );
    assert_says(&o, "30 µs");
    assert!(!text(&o).contains("0.0000"), "{}", text(&o));
}

/// A real hyperfine export (two commands, three runs each).
fn hyperfine_file() -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../scorers/tests/fixtures/real/hyperfine/1brc-two-commands-3-runs.json")
        .to_str()
        .expect("utf8")
        .to_string()
}

#[test]
fn hyperfine_timings_fingerprinted_as_this_machine_say_so_and_take_a_runner_name() {
    let (d, st) = common::fresh_store();
    let (dir, st) = (d.path(), st.as_str());
    let file = hyperfine_file();
    // By default: this machine's fingerprint, and a warning on stderr
    // (standard output stays the one JSON document).
    let o = in_store_ok(
        dir,
        st,
        &["--json", "ingest", "hyperfine", &file, "--commit", BASE],
    );
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
    let here = v["ingest"]["runner_from_here"]
        .as_str()
        .expect("the fingerprint of this machine")
        .to_string();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(
        stderr.contains("do not name the machine") && stderr.contains("--runner NAME"),
        "{stderr}"
    );
    // Named: recorded under that runner, nothing to warn of.
    let o = in_store_ok(
        dir,
        st,
        &[
            "ingest",
            "hyperfine",
            &file,
            "--commit",
            CAND,
            "--runner",
            "ci-linux-x64",
        ],
    );
    assert_says(&o, "ci-linux-x64");
    assert!(o.stderr.is_empty(), "{}", text(&o));
    assert!(!text(&o).contains(&here), "{}", text(&o));
    // A runner name is printable text, and replaces --label.
    let o = in_store(
        dir,
        st,
        &[
            "ingest",
            "hyperfine",
            &file,
            "--commit",
            CAND,
            "--runner",
            "",
        ],
    );
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let o = in_store(
        dir,
        st,
        &[
            "ingest",
            "hyperfine",
            &file,
            "--commit",
            CAND,
            "--runner",
            "a",
            "--label",
            "b",
        ],
    );
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
}

/// Every policy the README shows, as a file: its ```toml blocks (a block
/// of sub-tables only, like `[class.prompt.trust]`, joined to the block
/// that defines its class) and the policies written as comments in its
/// shell recipes after a `# .ratchet/policy.toml` line.
fn readme_policies() -> Vec<String> {
    let readme =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../README.md"))
            .expect("README.md");
    let mut blocks: Vec<String> = Vec::new();
    let mut fragments: Vec<String> = Vec::new();
    let mut lines = readme.lines();
    while let Some(line) = lines.next() {
        if line.trim_start() == "```toml" {
            let block: String = lines
                .by_ref()
                .take_while(|l| !l.starts_with("```"))
                .map(|l| format!("{l}\n"))
                .collect();
            let defines_a_class = block.lines().any(|l| {
                l.starts_with("[class.")
                    && l.trim_end().ends_with(']')
                    && l.matches('.').count() == 1
            });
            if defines_a_class {
                blocks.push(block);
            } else {
                fragments.push(block);
            }
        } else if line.trim() == "# .ratchet/policy.toml" {
            let block: String = lines
                .by_ref()
                .take_while(|l| l.starts_with("# "))
                .map(|l| format!("{}\n", &l[2..]))
                .collect();
            blocks.push(block);
        }
    }
    for fragment in fragments {
        let class = fragment
            .lines()
            .find_map(|l| l.strip_prefix("[class.")?.split('.').next())
            .expect("a fragment names its class")
            .to_string();
        let home = blocks
            .iter_mut()
            .find(|b| b.contains(&format!("[class.{class}]")))
            .unwrap_or_else(|| panic!("no README policy defines class {class}"));
        home.push_str(&fragment);
    }
    blocks
}

#[test]
fn every_policy_in_the_readme_parses_pins_and_reaches_the_evidence() {
    let policies = readme_policies();
    assert!(policies.len() >= 4, "{policies:#?}");
    for policy in &policies {
        let (d, st) = common::fresh_store();
        let (dir, st) = (d.path(), st.as_str());
        std::fs::write(dir.join("p.toml"), policy).expect("policy");
        let o = in_store(dir, st, &["policy", "pin", "p.toml"]);
        assert!(o.status.success(), "{policy}\n{}", text(&o));
        // Every class decides under its pin: with no evidence yet, each
        // says evidence is missing (4), never that the policy is wrong (2).
        let classes: Vec<&str> = policy
            .lines()
            .filter_map(|l| l.strip_prefix("[class.")?.strip_suffix(']'))
            .filter(|c| !c.contains('.'))
            .collect();
        assert!(!classes.is_empty(), "{policy}");
        for class in classes {
            let o = common::gate(dir, st, BASE, CAND, class, &["--dry-run"]);
            assert_eq!(o.status.code(), Some(4), "{policy}\n{}", text(&o));
        }
    }
}
