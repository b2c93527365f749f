//! JUnit XML, as every runner writes it: pytest, jest-junit, cargo-nextest,
//! Maven Surefire and Gradle (one bare `<testsuite>` per file), TestNG's
//! `junitreports`, gotestsum and go-junit-report (numeric character
//! references in failure text), PHPUnit and Ant (nested suites), and the
//! C++ runners as they count themselves: Google Test and ctest (disabled
//! tests skipped), Catch2 (`[!mayfail]` failures allowed), Boost.Test
//! (expected failures passed).
//!
//! Read with roxmltree rather than a JUnit schema: only what a verdict
//! needs is read (suite names, test case outcomes, times), so an attribute
//! nobody here reads (`timestamp="11 Apr. 2023 09:56:22 GMT"`, a
//! `hostname`, a runner's own extensions) can never refuse a report.

use std::path::Path;

use ratchet_trace::{CommitId, MAX_FAILURES_NAMED, MAX_NAME_LEN, TestRun};

use super::{Notes, malformed};
use crate::error::Result;

/// The outcome of one `<testcase>`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Outcome {
    Passed,
    Failed,
    Skipped,
}

/// A test case's outcome from its children. A test that failed and passed
/// on a rerun failed (Surefire's `<flakyFailure>`/`<flakyError>`): every run
/// counts. A failure wins over a skip, except where the runner itself says
/// the failure was allowed: Catch2 writes a `[!mayfail]`/`[!shouldfail]`
/// test that failed as a `<skipped message="TEST_CASE tagged with
/// !mayfail"/>` beside its `<failure>`, and leaves it out of its own
/// failure count. A test the runner did not run, with no child to say so,
/// is skipped: Google Test's disabled tests (`status="notrun"`), ctest's
/// `DISABLED` ones (`status="disabled"`).
fn outcome(case: roxmltree::Node<'_, '_>) -> Outcome {
    let (mut failed, mut skipped, mut allowed) = (false, false, false);
    for child in case.children().filter(roxmltree::Node::is_element) {
        match child.tag_name().name() {
            "failure" | "error" | "flakyFailure" | "flakyError" => failed = true,
            "skipped" => {
                skipped = true;
                allowed |= child
                    .attribute("message")
                    .is_some_and(|m| m.contains("!mayfail"));
            }
            _ => {}
        }
    }
    if failed && !allowed {
        Outcome::Failed
    } else if skipped
        || matches!(
            case.attribute("status").map(str::trim),
            Some("notrun" | "disabled")
        )
    {
        Outcome::Skipped
    } else {
        Outcome::Passed
    }
}

/// Whether Boost.Test judged a test case with a `<failure>` failed: it
/// writes `Failures detected in:` in the case's `<system-err>` then, and
/// not for a case whose failures it expected
/// (`BOOST_TEST_DECORATOR(*expected_failures(n))`), which passed.
fn boost_judged_failed(case: roxmltree::Node<'_, '_>) -> bool {
    case.children()
        .filter(|n| n.is_element() && n.tag_name().name() == "system-err")
        .any(|n| {
            n.text()
                .is_some_and(|t| t.trim_start().starts_with("Failures detected in:"))
        })
}

/// Whether a failed case is in Boost.Test's own words (its `<failure>`
/// text opens with `ASSERTION FAILURE:`, or its `<system-err>` with
/// `Failures detected in:`).
fn boost_wrote(case: roxmltree::Node<'_, '_>) -> bool {
    boost_judged_failed(case)
        || case
            .children()
            .filter(|n| n.is_element() && matches!(n.tag_name().name(), "failure" | "error"))
            .any(|n| {
                n.text()
                    .is_some_and(|t| t.trim_start().starts_with("ASSERTION FAILURE:"))
            })
}

/// A `time` attribute in seconds. Surefire formats times with the JVM's
/// locale (`1,234.5`): a comma beside a point, or before exactly three
/// digits, groups thousands; a lone comma otherwise is a decimal comma.
fn seconds(text: &str) -> Option<f64> {
    let trimmed = text.trim();
    let normalized = if trimmed.contains(',') && trimmed.contains('.') {
        trimmed.replace(',', "")
    } else if let Some((_, after)) = trimmed.rsplit_once(',') {
        if after.len() == 3 && after.bytes().all(|b| b.is_ascii_digit()) {
            trimmed.replace(',', "")
        } else {
            trimmed.replace(',', ".")
        }
    } else {
        trimmed.to_string()
    };
    normalized
        .parse::<f64>()
        .ok()
        .filter(|s| s.is_finite() && *s >= 0.0)
}

/// A name fit for the trace: control characters (a newline in a
/// parametrized test id) become spaces, and a name over the store's limit
/// is cut at a character boundary.
pub(super) fn storable_name(name: &str) -> String {
    let mut out: String = name
        .trim()
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    if out.len() > MAX_NAME_LEN {
        let mut end = MAX_NAME_LEN;
        while !out.is_char_boundary(end) {
            end -= 1;
        }
        out.truncate(end);
    }
    out
}

/// The name a failed test is listed under: `classname.name`, unless the
/// runner already put the class in the name (or wrote no class).
fn case_name(case: roxmltree::Node<'_, '_>) -> String {
    let name = case.attribute("name").unwrap_or("").trim();
    let class = case.attribute("classname").unwrap_or("").trim();
    let full = if class.is_empty() || name.starts_with(class) {
        name.to_string()
    } else if name.is_empty() {
        class.to_string()
    } else {
        format!("{class}.{name}")
    };
    storable_name(if full.is_empty() {
        "(unnamed test)"
    } else {
        &full
    })
}

fn is_suite(node: &roxmltree::Node<'_, '_>) -> bool {
    node.is_element() && node.tag_name().name() == "testsuite"
}

/// The sum of the declared `failures` and `errors` of a suite, when both
/// that it has parse.
fn declared_failures(suite: roxmltree::Node<'_, '_>) -> Option<u64> {
    let count = |attr: &str| suite.attribute(attr).map(|v| v.trim().parse::<u64>().ok());
    match (count("failures"), count("errors")) {
        (None, None) => None,
        (Some(Some(f)), None) => Some(f),
        (None, Some(Some(e))) => Some(e),
        (Some(Some(f)), Some(Some(e))) => f.checked_add(e),
        _ => None,
    }
}

/// Parses a JUnit XML document into one [`TestRun`] per top-level suite,
/// counting every `<testcase>` beneath it, nested suites included (PHPUnit,
/// Ant). Errors count as failures; failed tests are named (the first
/// [`MAX_FAILURES_NAMED`]). A suite's time is its `time`, else the sum of
/// its cases' times. A suite that declares more failures than its cases
/// show keeps the larger count (a truncated report never reads greener than
/// it says it is). What could not be read is said in `notes`, once per
/// kind, and never refuses the report.
///
/// # Errors
/// [`crate::Error::Malformed`] naming the file: not XML (with the line and
/// column), a root that is neither `<testsuites>` nor `<testsuite>`, no suite.
pub(super) fn parse(
    xml: &str,
    file: &Path,
    commit: &CommitId,
    notes: &mut Notes,
) -> Result<Vec<TestRun>> {
    let options = roxmltree::ParsingOptions {
        allow_dtd: true,
        ..roxmltree::ParsingOptions::default()
    };
    let doc = roxmltree::Document::parse_with_options(xml, options)
        .map_err(|e| malformed(file, "XML", e.to_string()))?;
    let root = doc.root_element();
    let top: Vec<roxmltree::Node<'_, '_>> = match root.tag_name().name() {
        "testsuites" => root.children().filter(is_suite).collect(),
        "testsuite" => vec![root],
        other => {
            return Err(malformed(
                file,
                format!("<{other}>"),
                "is not a JUnit report (its root is neither <testsuites> nor <testsuite>)",
            ));
        }
    };
    // PHPUnit wraps its configured suites (`Unit`, `Feature`) in one
    // unnamed suite: the wrapper is not a suite anybody names, its children
    // are.
    let suites: Vec<roxmltree::Node<'_, '_>> = top
        .into_iter()
        .flat_map(|suite| {
            let unnamed = suite.attribute("name").unwrap_or("").trim().is_empty();
            let children: Vec<_> = suite.children().filter(is_suite).collect();
            let only_suites = !suite
                .children()
                .any(|n| n.is_element() && n.tag_name().name() == "testcase");
            if unnamed && only_suites && !children.is_empty() {
                children
            } else {
                vec![suite]
            }
        })
        .collect();
    if suites.is_empty() {
        return Err(malformed(file, "<testsuites>", "holds no <testsuite>"));
    }
    if root.tag_name().name() == "testsuites"
        && root
            .children()
            .any(|n| n.is_element() && n.tag_name().name() == "testcase")
    {
        notes.say(
            "testcase outside a suite",
            format!(
                "{}: <testcase> elements directly under <testsuites> belong to no suite and were not counted",
                file.display()
            ),
        );
    }
    let stem = file
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "junit".into());
    let mut runs = Vec::with_capacity(suites.len());
    for suite in suites {
        let mut name = storable_name(suite.attribute("name").unwrap_or(""));
        if name.is_empty() {
            name = storable_name(&stem);
            notes.say(
                "unnamed suite",
                format!(
                    "{}: a <testsuite> has no name; recorded under the file's name {name:?}",
                    file.display()
                ),
            );
        }
        let (mut passed, mut skipped) = (0u64, 0u64);
        let mut failed_cases = Vec::new();
        let mut case_seconds = 0.0;
        for case in suite
            .descendants()
            .filter(|n| n.is_element() && n.tag_name().name() == "testcase")
        {
            match outcome(case) {
                Outcome::Passed => passed += 1,
                Outcome::Skipped => skipped += 1,
                Outcome::Failed => failed_cases.push(case),
            }
            if let Some(t) = case.attribute("time") {
                match seconds(t) {
                    Some(s) => case_seconds += s,
                    None => notes.say(
                        "unreadable time",
                        format!(
                            "{}: ignored a time attribute that is not a number of seconds ({t:?})",
                            file.display()
                        ),
                    ),
                }
            }
        }
        let declared = declared_failures(suite);
        // Boost.Test lists an expected failure as a <failure> but counts
        // the case passed (and says so in the suite's `failures`): where
        // every failed case is Boost's and the ones it judged failed are
        // exactly the suite's count, the others passed, as Boost counts
        // them. Anything less certain keeps every listed failure.
        if let Some(d) = declared
            && d < failed_cases.len() as u64
            && failed_cases.iter().all(|c| boost_wrote(*c))
            && failed_cases
                .iter()
                .filter(|c| boost_judged_failed(**c))
                .count() as u64
                == d
        {
            let before = failed_cases.len();
            failed_cases.retain(|c| boost_judged_failed(*c));
            passed += (before - failed_cases.len()) as u64;
            notes.say(
                "expected failures",
                format!(
                    "{}: suite {name:?} lists {before} failed test cases, {} of them failures Boost.Test expected (expected_failures) and counted as passed; recorded as Boost counts them",
                    file.display(),
                    before - failed_cases.len()
                ),
            );
        }
        let mut failed = failed_cases.len() as u64;
        let failures: Vec<String> = failed_cases
            .iter()
            .take(MAX_FAILURES_NAMED)
            .map(|c| case_name(*c))
            .collect();
        if let Some(declared) = declared
            && declared > failed
        {
            notes.say(
                "declared failures",
                format!(
                    "{}: suite {name:?} declares {declared} failures and errors but its test cases show {failed}; the declared count is recorded",
                    file.display()
                ),
            );
            let missing = declared - failed;
            failed = declared;
            passed = passed.saturating_sub(missing);
        }
        let suite_seconds = suite.attribute("time").and_then(|t| {
            let duration = seconds(t);
            if duration.is_none() {
                notes.say(
                    "unreadable time",
                    format!(
                        "{}: ignored a time attribute that is not a number of seconds ({t:?})",
                        file.display()
                    ),
                );
            }
            duration
        });
        runs.push(TestRun {
            commit: commit.clone(),
            suite: name,
            passed,
            failed,
            skipped,
            duration_ms: suite_seconds.unwrap_or(case_seconds) * 1000.0,
            failures,
        });
    }
    Ok(runs)
}

/// Whether `xml` looks like a JUnit report (its root element is
/// `<testsuites>` or `<testsuite>`): how a directory's other XML files
/// (Failsafe's summary, TestNG's own results) are told apart and skipped.
pub(super) fn looks_like_junit(xml: &str) -> bool {
    let mut rest = xml.trim_start();
    loop {
        if let Some(r) = rest.strip_prefix("<?") {
            match r.find("?>") {
                Some(end) => rest = r[end + 2..].trim_start(),
                None => return false,
            }
        } else if let Some(r) = rest.strip_prefix("<!--") {
            match r.find("-->") {
                Some(end) => rest = r[end + 3..].trim_start(),
                None => return false,
            }
        } else if let Some(r) = rest.strip_prefix("<!") {
            match r.find('>') {
                Some(end) => rest = r[end + 1..].trim_start(),
                None => return false,
            }
        } else {
            break;
        }
    }
    ["<testsuites", "<testsuite"].iter().any(|tag| {
        rest.strip_prefix(tag)
            .and_then(|r| r.chars().next())
            .is_some_and(|c| c == '>' || c == '/' || c.is_whitespace())
    })
}

/// Why a suite name a runner wrote is no name a policy can require, if it
/// is not: ctest's `(empty)` (no build name configured), a file's absolute
/// path (PHPUnit run without a configuration file), mocha's `Root Suite`
/// (its describes are each a suite of their own beside it).
pub fn unnameable_suite(name: &str) -> Option<&'static str> {
    let name = name.trim();
    let bytes = name.as_bytes();
    let windows_path = bytes.len() > 2
        && bytes[0].is_ascii_alphabetic()
        && bytes[1] == b':'
        && matches!(bytes[2], b'\\' | b'/');
    if name == "(empty)" {
        Some("the name ctest writes when no build name is configured")
    } else if name.starts_with('/') || windows_path {
        Some("a file's path (PHPUnit without a configuration file names a suite after its file)")
    } else if name == "Root Suite" {
        Some("mocha's root suite (each describe is a suite of its own)")
    } else {
        None
    }
}

/// Several runs recorded as one suite (`--suite NAME`): counts and times
/// summed, failures listed in order up to the limit.
pub(super) fn merged(runs: Vec<TestRun>, suite: &str, commit: &CommitId) -> TestRun {
    let mut out = TestRun {
        commit: commit.clone(),
        suite: suite.to_string(),
        passed: 0,
        failed: 0,
        skipped: 0,
        duration_ms: 0.0,
        failures: Vec::new(),
    };
    for run in runs {
        out.passed += run.passed;
        out.failed += run.failed;
        out.skipped += run.skipped;
        out.duration_ms += run.duration_ms;
        let room = MAX_FAILURES_NAMED - out.failures.len();
        out.failures.extend(run.failures.into_iter().take(room));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_in_any_locale_surefire_writes() {
        assert_eq!(seconds("1.5"), Some(1.5));
        assert_eq!(seconds("1,234.5"), Some(1234.5));
        assert_eq!(seconds("1,234"), Some(1234.0));
        assert_eq!(seconds("0,25"), Some(0.25));
        assert_eq!(seconds(" 2 "), Some(2.0));
        assert_eq!(seconds("-1"), None);
        assert_eq!(seconds("NaN"), None);
        assert_eq!(seconds("11 Apr. 2023"), None);
    }

    #[test]
    fn names_are_made_storable() {
        assert_eq!(storable_name("a\nb"), "a b");
        let long = "é".repeat(200);
        let cut = storable_name(&long);
        assert!(cut.len() <= MAX_NAME_LEN && cut.chars().all(|c| c == 'é'));
    }

    #[test]
    fn a_directory_s_other_xml_is_told_apart() {
        assert!(looks_like_junit(
            "<?xml version=\"1.0\"?>\n<!-- x --><testsuite name=\"a\"/>"
        ));
        assert!(looks_like_junit("<testsuites>"));
        assert!(!looks_like_junit(
            "<?xml version=\"1.0\"?><failsafe-summary/>"
        ));
        assert!(!looks_like_junit("<testsuitesX>"));
    }
}
