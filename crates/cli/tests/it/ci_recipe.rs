//! The README's CI recipe ("Using ratchet in CI"), run as written: its `sh`
//! block is read out of README.md and run by `sh` on a keyed store — the
//! ingest lines on main's CI, then the whole block on a pull request.

use std::path::{Path, PathBuf};
use std::process::Command;

use ratchet_testkit::git::repo_with_branches;

use crate::common::{ratchet, text};

/// The first `sh` block under "## Using ratchet in CI".
fn recipe() -> String {
    let readme = include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/../../README.md"));
    let section = readme
        .split("## Using ratchet in CI")
        .nth(1)
        .expect("the README's CI section");
    let block = section
        .split("```sh\n")
        .nth(1)
        .and_then(|b| b.split("```").next())
        .expect("its sh block");
    block.to_string()
}

/// A JUnit report of `passed` green tests in a suite pytest would name.
fn green_junit(passed: usize) -> String {
    let cases: String = (0..passed)
        .map(|i| {
            format!("<testcase classname=\"tests.test_app\" name=\"test_{i}\" time=\"0.01\"/>")
        })
        .collect();
    format!(
        "<?xml version=\"1.0\"?><testsuites><testsuite name=\"pytest\" tests=\"{passed}\" failures=\"0\" errors=\"0\" skipped=\"0\">{cases}</testsuite></testsuites>"
    )
}

/// 120 tasks of `acc`, each `value(i)`.
fn scores(value: impl Fn(usize) -> f64) -> String {
    (0..120)
        .map(|i| {
            format!(
                "{{\"task\":\"t{i:03}\",\"scorer\":\"acc\",\"value\":{}}}\n",
                value(i)
            )
        })
        .collect()
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("mkdir");
    for entry in std::fs::read_dir(from).expect("read_dir") {
        let entry = entry.expect("entry");
        let target = to.join(entry.file_name());
        if entry.file_type().expect("type").is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).expect("copy");
        }
    }
}

/// Writes what a CI job's tools would have written in `repo`.
fn tool_outputs(repo: &Path, eval: &str) {
    let junit = repo.join("target/nextest/ci/junit.xml");
    std::fs::create_dir_all(junit.parent().expect("parent")).expect("mkdir");
    std::fs::write(&junit, green_junit(12)).expect("junit");
    let criterion = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../scorers/tests/fixtures/real/criterion/gettingstarted-0.3/target/criterion");
    let _ = std::fs::remove_dir_all(repo.join("target/criterion"));
    copy_dir(&criterion, &repo.join("target/criterion"));
    std::fs::create_dir_all(repo.join("eval")).expect("mkdir");
    std::fs::write(repo.join("eval/scores.jsonl"), eval).expect("scores");
}

/// Runs `script` with `sh` in `repo`, `ratchet` first on PATH and `KEY`
/// set, nothing of the developer's ratchet environment inherited.
fn run_sh(repo: &Path, key: &Path, script: &str) -> std::process::Output {
    let bin = Path::new(env!("CARGO_BIN_EXE_ratchet"))
        .parent()
        .expect("bin dir")
        .to_path_buf();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    Command::new("sh")
        .args(["-c", script])
        .current_dir(repo)
        .env("PATH", path)
        .env("KEY", key)
        .env_remove("RATCHET_STORE")
        .env_remove("RATCHET_SERVER")
        .env_remove("RATCHET_TOKEN_FILE")
        .env_remove("RATCHET_KEY_FILE")
        .output()
        .expect("sh")
}

fn git(repo: &Path, args: &[&str]) {
    let o = Command::new("git")
        .args(args)
        .current_dir(repo)
        .output()
        .expect("git");
    assert!(o.status.success(), "git {args:?}: {}", text(&o));
}

#[test]
fn the_readmes_ci_recipe_runs_as_written_on_a_keyed_store() {
    let d = tempfile::tempdir().expect("tempdir");
    let repo = d.path().join("repo");
    std::fs::create_dir_all(&repo).expect("repo dir");
    repo_with_branches(
        &repo,
        &[
            ("app.py", Some("print('hello')\n")),
            (
                ".gitignore",
                Some(".ratchet\ntarget\neval\npolicy.toml\ncomment.md\nreport.html\n"),
            ),
        ],
        &[("pr", "app.py", "print('hello, world')\n")],
    );
    git(&repo, &["update-ref", "refs/remotes/origin/main", "main"]);
    let key = d.path().join("writer.key");
    let o = ratchet(
        &repo,
        &["init", "--keyed", "--key-file", key.to_str().expect("utf8")],
        "",
    );
    assert!(o.status.success(), "{}", text(&o));
    std::fs::write(
        repo.join("policy.toml"),
        "[class.ci]\ntest = \"none\"\nrequired_suites = [\"unit\"]\n\n\
         [class.prompt]\nscorer = \"acc\"\ntest = \"betting\"\nalpha = 0.05\nbeta = 0.1\ngap = 0.2\nmax_n = 120\n",
    )
    .expect("policy");
    let block = recipe();
    // Main's CI: the block up to its first gate (what main keeps in the store).
    let main_part: String = block
        .lines()
        .take_while(|l| !l.starts_with("ratchet gate"))
        .map(|l| format!("{l}\n"))
        .collect::<String>()
        + "exit 0\n";
    git(&repo, &["checkout", "-q", "main"]);
    tool_outputs(&repo, &scores(|i| if i % 2 == 0 { 1.0 } else { 0.0 }));
    let o = run_sh(&repo, &key, &main_part);
    assert!(o.status.success(), "main's CI: {}", text(&o));
    // The pull request's CI: the whole block, as written.
    git(&repo, &["checkout", "-q", "pr"]);
    tool_outputs(&repo, &scores(|i| if i % 10 == 0 { 0.0 } else { 1.0 }));
    let o = run_sh(&repo, &key, &block);
    let said = text(&o);
    assert_eq!(o.status.code(), Some(0), "the recipe's exit: {said}");
    let comment = std::fs::read_to_string(repo.join("comment.md")).expect("comment.md");
    assert!(
        comment.contains("prompt") && comment.to_lowercase().contains("promote"),
        "{comment}"
    );
    let html = std::fs::read_to_string(repo.join("report.html")).expect("report.html");
    assert!(html.contains("id=\"banner-ci\""), "the ci class's banner");
}
