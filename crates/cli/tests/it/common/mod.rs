//! Running the `ratchet` binary as a user would, for every CLI test file.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};

/// Runs `ratchet args…` in `cwd` with `stdin`, `RATCHET_STORE` unset.
pub fn ratchet(cwd: &Path, args: &[&str], stdin: &str) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_ratchet"))
        .current_dir(cwd)
        .args(args)
        .env_remove("RATCHET_STORE")
        .env_remove("RATCHET_SERVER")
        .env_remove("RATCHET_TOKEN_FILE")
        .env_remove("RATCHET_KEY_FILE")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn ratchet");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(stdin.as_bytes())
        .expect("write stdin");
    child.wait_with_output().expect("wait")
}

/// Standard output and standard error together.
pub fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// Runs `ratchet args…` as [`ratchet`] does and asserts it succeeded, so the
/// many steps that must simply work say so in one line.
#[track_caller]
pub fn ratchet_ok(cwd: &Path, args: &[&str], stdin: &str) -> Output {
    let o = ratchet(cwd, args, stdin);
    assert!(o.status.success(), "{}", text(&o));
    o
}

/// `ratchet --store <store> init` in `cwd`, which must succeed.
pub fn init(cwd: &Path, store: &str) {
    let o = ratchet(cwd, &["--store", store, "init"], "");
    assert!(o.status.success(), "init: {}", text(&o));
}

/// A new temporary directory holding an initialised store at `<dir>/s`, and
/// that store's path as text: the start of most single-store CLI tests.
pub fn fresh_store() -> (tempfile::TempDir, String) {
    let d = tempfile::tempdir().expect("tempdir");
    let st = d.path().join("s").to_str().expect("utf8").to_owned();
    init(d.path(), &st);
    (d, st)
}

/// The recorded sequential stage of `gate --json`'s verdict.
#[track_caller]
pub fn sequential_stage(verdict: &serde_json::Value) -> &serde_json::Value {
    verdict["stages"]
        .as_array()
        .expect("stages")
        .iter()
        .find(|s| s["stage"] == "sequential")
        .expect("the sequential stage")
}

/// Asserts that `o`'s output (either stream) contains `needle`, showing all
/// of it when not: the check most CLI steps end with.
#[track_caller]
pub fn assert_says(o: &Output, needle: &str) {
    assert!(text(o).contains(needle), "{}", text(o));
}

/// `gate --baseline <base> --candidate <cand> --class <class>`: the argument
/// list of the one command that decides, as every CLI gate test starts it
/// (extend it with the flags a test is about).
pub fn gate_args<'a>(base: &'a str, cand: &'a str, class: &'a str) -> Vec<&'a str> {
    vec![
        "gate",
        "--baseline",
        base,
        "--candidate",
        cand,
        "--class",
        class,
    ]
}

/// Runs `ratchet --store <store> gate --baseline <base> --candidate <cand>
/// --class <class> extra…` in `cwd` with no input, as [`ratchet`] does: the
/// gate over a store the test filled, the step most gate tests repeat.
pub fn gate(
    cwd: &Path,
    store: &str,
    base: &str,
    cand: &str,
    class: &str,
    extra: &[&str],
) -> Output {
    let mut args = gate_args(base, cand, class);
    args.extend_from_slice(extra);
    in_store(cwd, store, &args)
}

/// `ratchet --store <store> append` fed `lines` (JSON lines), which must
/// succeed: how a test fills a store with the events it decides over.
#[track_caller]
pub fn append(cwd: &Path, store: &str, lines: &str) -> Output {
    ratchet_ok(cwd, &["--store", store, "append"], lines)
}

/// The lines of `jsonl` that are not `test_run` events, each ending in a
/// newline: scores without the suite run a policy may require.
pub fn without_test_runs(jsonl: &str) -> String {
    jsonl
        .lines()
        .filter(|l| !l.contains("test_run"))
        .map(|l| format!("{l}\n"))
        .collect()
}

/// Runs `ratchet --store <store> args…` in `cwd` with no input, as
/// [`ratchet`] does: a command over the store a test made.
pub fn in_store(cwd: &Path, store: &str, args: &[&str]) -> Output {
    let mut all = vec!["--store", store];
    all.extend_from_slice(args);
    ratchet(cwd, &all, "")
}

/// [`in_store`], asserting the command succeeded.
#[track_caller]
pub fn in_store_ok(cwd: &Path, store: &str, args: &[&str]) -> Output {
    let o = in_store(cwd, store, args);
    assert!(o.status.success(), "{}", text(&o));
    o
}
