//! `ratchet serve` as a process: a sandboxed writer that records and asks
//! through the socket alone, `kill -9` of the server under load, and a
//! disk that fills mid-load.

use crate::common;

use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::{assert_says, ratchet, text};
use ratchet_serve::{Client, Endpoint};

const A: &str = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
const B: &str = "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb";

struct World {
    dir: tempfile::TempDir,
}

impl World {
    fn new() -> World {
        let w = World {
            dir: tempfile::tempdir().expect("tempdir"),
        };
        let o = w.run(&["init"], "");
        assert!(o.status.success(), "{}", text(&o));
        w
    }
    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }
    fn store(&self) -> String {
        self.path("store").display().to_string()
    }
    fn socket(&self) -> PathBuf {
        self.path("serve.sock")
    }
    fn run(&self, args: &[&str], stdin: &str) -> std::process::Output {
        let store = self.store();
        let mut all = vec!["--store", store.as_str()];
        all.extend_from_slice(args);
        ratchet(self.dir.path(), &all, stdin)
    }
    /// Mints a token into `name` and returns its path.
    fn mint(&self, name: &str, can: &[&str], session: &str) -> PathBuf {
        let file = self.path(name);
        let file_s = file.display().to_string();
        let mut args = vec![
            "token",
            "mint",
            "--session",
            session,
            "--out",
            file_s.as_str(),
        ];
        for c in can {
            args.extend_from_slice(&["--can", c]);
        }
        let o = self.run(&args, "");
        assert!(o.status.success(), "{}", text(&o));
        file
    }
    /// Starts the server and waits for its ready line.
    fn serve(&self, wrap: &[&str]) -> Child {
        self.serve_with(wrap, &[])
    }
    /// Starts the server with `extra` flags and waits for its ready line.
    fn serve_with(&self, wrap: &[&str], extra: &[&str]) -> Child {
        let exe = env!("CARGO_BIN_EXE_ratchet");
        let socket = self.socket().display().to_string();
        let store = self.store();
        let args = [
            "--store",
            store.as_str(),
            "--json",
            "serve",
            "--socket",
            socket.as_str(),
            "--rate",
            "1000000",
            "--burst",
            "1000000",
        ];
        let mut command = match wrap.split_first() {
            Some((first, rest)) => {
                let mut c = Command::new(first);
                c.args(rest).arg(exe).args(args).args(extra);
                c
            }
            None => {
                let mut c = Command::new(exe);
                c.args(args).args(extra);
                c
            }
        };
        let mut child = command
            .current_dir(self.dir.path())
            .env_remove("RATCHET_STORE")
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn the server");
        let stdout = child.stdout.take().expect("stdout");
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut line = String::new();
            let _ = BufReader::new(stdout).read_line(&mut line);
            let _ = tx.send(line);
        });
        let line = rx
            .recv_timeout(Duration::from_secs(120))
            .expect("the server printed its ready line");
        let v: serde_json::Value = serde_json::from_str(&line).expect("ready line is JSON");
        assert_eq!(v["socket"], socket.as_str(), "{line}");
        child
    }
    fn client(&self, token_file: &Path) -> Client {
        let token = std::fs::read_to_string(token_file).expect("token");
        let mut c = Client::new(Endpoint::Unix(self.socket()), token);
        c.timeout = Duration::from_secs(120);
        c
    }
    fn score_tasks(&self) -> BTreeMap<String, usize> {
        let o = self.run(
            &["log", "--kind", "score", "--limit", "1000000", "--json"],
            "",
        );
        assert!(o.status.success(), "{}", text(&o));
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
        let mut seen = BTreeMap::new();
        for e in v["events"].as_array().expect("events") {
            let task = e["payload"]["task"].as_str().expect("task").to_string();
            *seen.entry(task).or_insert(0usize) += 1;
        }
        seen
    }
    fn verifies(&self) {
        let o = self.run(&["verify-chain"], "");
        assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    }
}

fn stop(mut child: Child) {
    // SIGTERM: a graceful end.
    let _ = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status();
    let deadline = Instant::now() + Duration::from_secs(60);
    while Instant::now() < deadline {
        if let Ok(Some(_)) = child.try_wait() {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = child.kill();
    let _ = child.wait();
}

fn batch_body(batch: &str, n: usize) -> String {
    (0..n)
        .map(|k| {
            format!(
                "{{\"task\":\"{batch}-{k}\",\"scorer\":\"acc\",\"value\":0.5,\"commit\":\"{A}\"}}\n"
            )
        })
        .collect()
}

#[test]
fn a_sandboxed_writer_records_and_asks_through_the_socket_alone() {
    let w = World::new();
    let rec = w.mint("rec.tok", &["record"], "cell-1");
    let dec = w.mint("dec.tok", &["decide", "read"], "ci");
    let policy = w.path("policy.toml");
    std::fs::write(
        &policy,
        "[class.prompt]\nscorer = \"acc\"\ntest = \"betting\"\nalpha = 0.05\nbeta = 0.1\ngap = 0.1\nmax_n = 400\n\
         trust = { baseline = [\"key_holder\", \"session:cell-1\"], candidate = [\"key_holder\", \"session:cell-1\"] }\n",
    )
    .expect("policy");
    let o = w.run(&["policy", "pin", &policy.display().to_string()], "");
    assert!(o.status.success(), "{}", text(&o));
    let server = w.serve(&[]);
    // The writer's side: a directory holding only its token and its files,
    // with the store named nowhere (RATCHET_STORE points at nothing real).
    let sandbox = tempfile::tempdir().expect("sandbox");
    let lines: String = (0..150)
        .flat_map(|i| {
            [
                format!(
                    "{{\"task\":\"t{i}\",\"scorer\":\"acc\",\"value\":0.5,\"commit\":\"{A}\"}}\n"
                ),
                format!(
                    "{{\"task\":\"t{i}\",\"scorer\":\"acc\",\"value\":0.95,\"commit\":\"{B}\"}}\n"
                ),
            ]
        })
        .collect();
    std::fs::write(sandbox.path().join("scores.jsonl"), lines).expect("write");
    let socket = w.socket().display().to_string();
    let sandboxed = |token: &Path, args: &[&str]| {
        let token = token.display().to_string();
        let mut all = vec![
            "--server",
            socket.as_str(),
            "--token-file",
            token.as_str(),
            "--json",
        ];
        all.extend_from_slice(args);
        let mut c = Command::new(env!("CARGO_BIN_EXE_ratchet"));
        c.current_dir(sandbox.path())
            .args(&all)
            .env("RATCHET_STORE", "/nonexistent/store")
            .stdin(Stdio::null());
        c.output().expect("run")
    };
    let o = sandboxed(&rec, &["ingest", "jsonl", "scores.jsonl"]);
    assert!(o.status.success(), "{}", text(&o));
    let o = sandboxed(
        &rec,
        &[
            "record-score",
            "--commit",
            B,
            "--task",
            "extra",
            "--scorer",
            "acc",
            "--value",
            "1",
        ],
    );
    assert!(o.status.success(), "{}", text(&o));
    // The record token cannot decide; the decide token can, and the verdict is recorded.
    let o = sandboxed(&rec, &common::gate_args(A, B, "prompt"));
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert_says(&o, "403");
    let o = sandboxed(&dec, &common::gate_args(A, B, "prompt"));
    assert_eq!(o.status.code(), Some(0), "promote: {}", text(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
    assert_eq!(v["status"], "promote", "{v:#}");
    // In words, the server's verdict reads as a local one: the outcome with
    // its commits and every stage, not "PROMOTE: " alone.
    let mut words = vec![
        "--server".to_string(),
        socket.clone(),
        "--token-file".to_string(),
        dec.display().to_string(),
    ];
    words.extend(
        common::gate_args(A, B, "prompt")
            .iter()
            .map(|a| (*a).to_string()),
    );
    words.push("--dry-run".into());
    let o = Command::new(env!("CARGO_BIN_EXE_ratchet"))
        .current_dir(sandbox.path())
        .args(&words)
        .env("RATCHET_STORE", "/nonexistent/store")
        .stdin(Stdio::null())
        .output()
        .expect("run");
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let said = text(&o);
    assert!(
        said.contains("PROMOTE") && said.contains(B) && said.contains("sequential test"),
        "{said}"
    );
    let o = sandboxed(&dec, &["status"]);
    assert!(o.status.success(), "{}", text(&o));
    stop(server);
    assert!(!w.socket().exists(), "a graceful stop removes its socket");
    let o = w.run(&["log", "--kind", "decision", "--json"], "");
    assert_says(&o, "promote");
    w.verifies();
}

#[test]
fn kill_dash_nine_under_load_loses_nothing_acknowledged_and_half_stores_nothing() {
    const CYCLES: usize = 20;
    const PER_BATCH: usize = 8;
    let w = World::new();
    let rec = w.mint("rec.tok", &["record"], "cell-1");
    let mut acked: BTreeSet<String> = BTreeSet::new();
    let mut pending: Vec<String> = Vec::new();
    let mut retried = 0usize;
    for cycle in 0..CYCLES {
        let mut server = w.serve(&[]);
        let mut client = w.client(&rec);
        client.attempts = 1;
        // What was in flight when the last server died is retried first,
        // under its own request id: it must count once.
        let mut retry_client = w.client(&rec);
        retry_client.attempts = 20;
        for batch in pending.drain(..) {
            retried += 1;
            let r = retry_client
                .request(
                    "POST",
                    &format!("/v1/ingest/jsonl?request_id={batch}"),
                    "application/octet-stream",
                    batch_body(&batch, PER_BATCH).as_bytes(),
                )
                .expect("the restarted server answers");
            assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
            acked.insert(batch);
        }
        // Load, then kill -9 at a point that moves from cycle to cycle.
        let kill_after = Duration::from_millis(80 + (cycle as u64 * 53) % 250);
        let stop_at = Instant::now() + kill_after;
        let (tx, rx) = std::sync::mpsc::channel::<(String, bool)>();
        let writer = std::thread::spawn(move || {
            let mut n = 0;
            loop {
                let batch = format!("k{cycle}-{n}");
                let r = client.request(
                    "POST",
                    &format!("/v1/ingest/jsonl?request_id={batch}"),
                    "application/octet-stream",
                    batch_body(&batch, PER_BATCH).as_bytes(),
                );
                let ok = matches!(&r, Ok(resp) if resp.status == 200);
                let _ = tx.send((batch, ok));
                if !ok {
                    break;
                }
                n += 1;
            }
        });
        while Instant::now() < stop_at {
            std::thread::sleep(Duration::from_millis(5));
        }
        let _ = server.kill(); // SIGKILL
        let _ = server.wait();
        writer.join().expect("writer");
        for (batch, ok) in rx.try_iter() {
            if ok {
                acked.insert(batch);
            } else {
                pending.push(batch);
            }
        }
    }
    // Whatever was in flight at the last kill: either whole or absent now.
    let seen = w.score_tasks();
    let mut per_batch: BTreeMap<String, usize> = BTreeMap::new();
    for (task, n) in &seen {
        assert_eq!(*n, 1, "task {task} stored {n} times");
        let batch = task.rsplit_once('-').map_or(task.as_str(), |(b, _)| b);
        *per_batch.entry(batch.to_string()).or_default() += 1;
    }
    for (b, n) in &per_batch {
        assert_eq!(*n, PER_BATCH, "batch {b} is whole");
    }
    for b in &acked {
        assert_eq!(
            per_batch.get(b),
            Some(&PER_BATCH),
            "acknowledged batch {b} survived"
        );
    }
    assert!(
        acked.len() >= CYCLES,
        "{} batches acknowledged",
        acked.len()
    );
    eprintln!(
        "{CYCLES} kills: {} batches acknowledged, {retried} in flight at a kill and retried",
        acked.len()
    );
    w.verifies();
}

#[test]
fn a_full_disk_refuses_writes_keeps_what_was_acknowledged_and_keeps_serving_reads() {
    let w = World::new();
    let rec = w.mint("rec.tok", &["record"], "cell-1");
    let read = w.mint("read.tok", &["read"], "viewer");
    // Files the server writes may grow this much past the store's size now:
    // the write that would cross it fails as on a full disk (SIGXFSZ ignored,
    // as a shell's `trap '' XFSZ` leaves it for the exec'd server).
    let db = w.path("store").join("trace.db");
    let size = std::fs::metadata(&db).map_or(0, |m| m.len());
    let limit = (size + (512 << 10)).to_string();
    let script = format!("trap '' XFSZ; exec prlimit --fsize={limit} \"$@\"");
    let server = w.serve(&["sh", "-c", &script, "sh"]);
    let client = w.client(&rec);
    let mut acked = Vec::new();
    let mut refused = None;
    for n in 0..2000 {
        let batch = format!("f-{n}");
        let r = client
            .request(
                "POST",
                &format!("/v1/ingest/jsonl?request_id={batch}"),
                "application/octet-stream",
                batch_body(&batch, 20).as_bytes(),
            )
            .expect("the server answers");
        if r.status == 200 {
            acked.push(batch);
        } else {
            refused = Some((batch, r));
            break;
        }
    }
    let (refused_batch, r) = refused.expect("the file-size limit was reached");
    assert_eq!(r.status, 507, "{}", String::from_utf8_lossy(&r.body));
    let v = r.json().expect("json error");
    assert_eq!(v["error"]["kind"], "storage_full", "{v}");
    // Reads go on.
    let status = w
        .client(&read)
        .get_json("/v1/status")
        .expect("reads still served");
    assert!(status["store_id"].is_string());
    stop(server);
    // Without the limit: everything acknowledged is there, the refused batch is not.
    let seen = w.score_tasks();
    for b in &acked {
        for k in 0..20 {
            assert_eq!(seen.get(&format!("{b}-{k}")), Some(&1), "acknowledged {b}");
        }
    }
    assert!(
        (0..20).all(|k| !seen.contains_key(&format!("{refused_batch}-{k}"))),
        "the refused batch left nothing behind"
    );
    assert!(!acked.is_empty());
    w.verifies();
}

#[test]
fn a_writer_in_a_namespace_sandbox_sees_only_the_socket_and_its_token() {
    let w = World::new();
    let rec = w.mint("rec.tok", &["record"], "cell-1");
    let server = w.serve(&[]);
    let dir = w.dir.path().display().to_string();
    let socket = w.socket().display().to_string();
    let token = rec.display().to_string();
    // The whole world directory (store, key, other tokens) replaced by an
    // empty tmpfs; only the socket and this token bound back in.
    let in_sandbox = |argv: &[&str]| {
        let mut c = Command::new("bwrap");
        c.args(["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"])
            .args([
                "--unshare-user",
                "--unshare-pid",
                "--unshare-ipc",
                "--die-with-parent",
            ])
            .args(["--tmpfs", dir.as_str()])
            .args(["--bind", socket.as_str(), socket.as_str()])
            .args(["--ro-bind", token.as_str(), token.as_str()])
            .args(["--chdir", dir.as_str(), "--"])
            .args(argv)
            .env_remove("RATCHET_STORE")
            .stdin(Stdio::null());
        c.output().expect("bwrap is installed by scripts/test")
    };
    let o = in_sandbox(&["sh", "-c", "test -e store/trace.db || test -e store"]);
    assert_eq!(
        o.status.code(),
        Some(1),
        "the store is out of sight: {}",
        text(&o)
    );
    let exe = env!("CARGO_BIN_EXE_ratchet");
    let o = in_sandbox(&[
        exe,
        "--server",
        &socket,
        "--token-file",
        &token,
        "--json",
        "record-score",
        "--commit",
        A,
        "--task",
        "boxed",
        "--scorer",
        "acc",
        "--value",
        "0.5",
    ]);
    assert!(o.status.success(), "{}", text(&o));
    // Local access fails there: no store to open.
    let o = in_sandbox(&[exe, "--store", "store", "status"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    stop(server);
    assert_eq!(w.score_tasks().get("boxed"), Some(&1));
    w.verifies();
}

/// Issue 35 through the binary: `token mint --max-events --cell` bounds a
/// writer across restarts and stamps its batches; `serve --checkpoint`
/// refuses a file rolled back behind the checkpoint.
#[test]
fn a_minted_quota_holds_across_restarts_and_a_rolled_back_file_is_refused_at_start() {
    let w = World::new();
    let tok = w.path("q.tok");
    let o = w.run(
        &[
            "token",
            "mint",
            "--can",
            "record",
            "--session",
            "q",
            "--cell",
            "runner-1",
            "--max-events",
            "3",
            "--out",
            &tok.display().to_string(),
        ],
        "",
    );
    assert!(o.status.success(), "{}", text(&o));
    let note = |i: usize| format!("{{\"kind\":\"note\",\"payload\":{{\"i\":{i}}}}}\n");
    let server = w.serve(&[]);
    let c = w.client(&tok);
    c.record_events(&(note(1) + &note(2))).expect("two events");
    stop(server);
    // A copy of the store as it was, to roll back to.
    let copy = w.path("store-then");
    let o = Command::new("cp")
        .args(["-a", &w.store(), &copy.display().to_string()])
        .status()
        .expect("cp");
    assert!(o.success());

    let server = w.serve(&[]);
    let err = c
        .record_events(&(note(3) + &note(4)))
        .expect_err("past the quota");
    assert!(
        err.to_string().contains("max_events") && err.to_string().contains("nothing was stored"),
        "{err}"
    );
    c.record_events(&note(3)).expect("up to the quota");
    stop(server);
    // The marker names the token's cell.
    let o = w.run(&["log", "--kind", "ingest", "--json"], "");
    assert!(o.status.success(), "{}", text(&o));
    assert!(text(&o).contains(":runner-1:events:"), "{}", text(&o));

    let cp = w.path("cp.txt");
    let o = w.run(&["checkpoint", "--out", &cp.display().to_string()], "");
    assert!(o.status.success(), "{}", text(&o));
    let cp_s = cp.display().to_string();
    let server = w.serve_with(&[], &["--checkpoint", &cp_s, "--reverify-every", "1s"]);
    let err = c
        .record_events(&note(5))
        .expect_err("the quota holds after a restart");
    assert!(err.to_string().contains("max_events"), "{err}");
    stop(server);

    // Rolled back behind the checkpoint: the server does not start.
    std::fs::remove_dir_all(w.store()).expect("rm");
    let o = Command::new("cp")
        .args(["-a", &copy.display().to_string(), &w.store()])
        .status()
        .expect("cp");
    assert!(o.success());
    let socket = w.socket().display().to_string();
    let o = w.run(&["serve", "--socket", &socket, "--checkpoint", &cp_s], "");
    assert!(!o.status.success(), "a rolled-back store is not served");
    assert_says(&o, "checkpoint");
}

/// `ingest --server` of a file that names no machine: the server
/// fingerprints it as its own machine unless the writer names the runner,
/// and the writer is told which (issue 37).
#[test]
fn a_benchmark_file_ingested_through_the_server_takes_a_runner_name() {
    let w = World::new();
    let rec = w.mint("rec.tok", &["record"], "cell-1");
    let server = w.serve(&[]);
    let file = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../scorers/tests/fixtures/real/hyperfine/1brc-two-commands-3-runs.json")
        .display()
        .to_string();
    let socket = w.socket().display().to_string();
    let token = rec.display().to_string();
    let remote = |extra: &[&str]| {
        let mut args = vec![
            "--server",
            socket.as_str(),
            "--token-file",
            token.as_str(),
            "ingest",
            "hyperfine",
            file.as_str(),
        ];
        args.extend_from_slice(extra);
        ratchet(w.dir.path(), &args, "")
    };
    let o = remote(&["--commit", A]);
    assert!(o.status.success(), "{}", text(&o));
    assert_says(&o, "the server's");
    let o = remote(&["--commit", B, "--runner", "ci-linux-x64"]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(o.stderr.is_empty(), "{}", text(&o));
    stop(server);
    let o = w.run(&["log", "--kind", "score", "--commit", B, "--json"], "");
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
    let events = v["events"].as_array().expect("events");
    assert!(!events.is_empty(), "{v}");
    for e in events {
        assert_eq!(e["payload"]["scorer_version"], "ci-linux-x64", "{e}");
    }
}

/// `--server` (or `RATCHET_SERVER`) is a promise that nothing local is
/// touched: a command that does not speak to a server refuses instead of
/// running on a local store — `RATCHET_SERVER=… ratchet init` used to
/// create one.
#[test]
fn a_command_that_does_not_speak_to_a_server_refuses_server() {
    let d = tempfile::tempdir().expect("tempdir");
    let st = d.path().join("s").display().to_string();
    let init = Command::new(env!("CARGO_BIN_EXE_ratchet"))
        .args(["--store", &st, "init"])
        .env("RATCHET_SERVER", "unix:/nowhere.sock")
        .current_dir(d.path())
        .output()
        .expect("ratchet");
    assert_eq!(init.status.code(), Some(2), "{}", text(&init));
    assert_says(&init, "`ratchet init` does not speak to a server");
    assert!(!d.path().join("s").exists(), "no local store was created");
    let log = ratchet(
        d.path(),
        &["--server", "unix:/nowhere.sock", "--store", &st, "log"],
        "",
    );
    assert_eq!(log.status.code(), Some(2), "{}", text(&log));
    assert_says(&log, "`ratchet log` does not speak to a server");
}
