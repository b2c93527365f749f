//! Durability and concurrency with real processes.
//!
//! The test binary re-executes itself as the child: `child_process_entry`
//! does nothing unless `RATCHET_CHILD_MODE` is set, in which case it is the
//! writer process the parent kills or races.

use crate::common;

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::time::Duration;

use rand::{Rng, SeedableRng, rngs::StdRng};
use ratchet_trace::{EventDraft, Store, StoreOptions, Ulid};

const MODE: &str = "RATCHET_CHILD_MODE";
const DIR: &str = "RATCHET_CHILD_DIR";
const SEED: &str = "RATCHET_CHILD_SEED";
const WRITER: &str = "RATCHET_CHILD_WRITER";
const EVENTS_PER_WRITER: usize = 5000;

/// Entry point of the child processes (a no-op in a normal test run).
#[test]
fn child_process_entry() {
    let Ok(mode) = std::env::var(MODE) else {
        return;
    };
    let dir = std::env::var(DIR).expect("child needs a store dir");
    let seed: u64 = std::env::var(SEED)
        .expect("seed")
        .parse()
        .expect("numeric seed");
    let mut rng = StdRng::seed_from_u64(seed);
    let mut store = Store::open(&dir, StoreOptions::default()).expect("child opens store");
    let out = std::io::stdout();
    match mode.as_str() {
        // Append batches forever, reporting each committed event after its commit.
        "crash" => loop {
            let n = rng.random_range(1..=20);
            let drafts = (0..n).map(|i| common::mixed_draft(i + seed as usize));
            let receipts = store.append_batch(drafts).expect("append");
            let mut lock = out.lock();
            for r in receipts {
                writeln!(lock, "COMMITTED {} {}", r.seq, r.id).expect("report");
            }
            lock.flush().expect("flush");
        },
        // Append EVENTS_PER_WRITER tagged events in random-size batches, racing others.
        "race" => {
            let writer: u64 = std::env::var(WRITER)
                .expect("writer")
                .parse()
                .expect("numeric");
            let mut i = 0;
            while i < EVENTS_PER_WRITER {
                let n = rng.random_range(1..=16).min(EVENTS_PER_WRITER - i);
                let drafts = (i..i + n).map(|k| {
                    EventDraft::json("race", &serde_json::json!({"writer": writer, "k": k}))
                        .expect("json")
                });
                store.append_batch(drafts).expect("append under contention");
                i += n;
            }
            writeln!(out.lock(), "DONE {writer}").expect("report");
        }
        other => panic!("unknown child mode {other}"),
    }
}

fn child(mode: &str, dir: &std::path::Path, seed: u64) -> Command {
    let mut c = Command::new(std::env::current_exe().expect("test binary path"));
    c.args([
        "durability::child_process_entry",
        "--exact",
        "--nocapture",
        "--test-threads=1",
    ])
    .env(MODE, mode)
    .env(DIR, dir)
    .env(SEED, seed.to_string())
    .stdout(Stdio::piped())
    .stderr(Stdio::null());
    c
}

#[test]
fn committed_appends_survive_kill_9() {
    const CYCLES: u64 = 60;
    let d = tempfile::tempdir().expect("tempdir");
    let dir = d.path().join("store");
    drop(Store::create(&dir, StoreOptions::default()).expect("create"));
    let mut rng = StdRng::seed_from_u64(20261130);
    let mut reported: Vec<(u64, Ulid)> = Vec::new();
    let mut killed_mid_run = 0;
    for cycle in 0..CYCLES {
        let mut proc = child("crash", &dir, cycle).spawn().expect("spawn child");
        let stdout = proc.stdout.take().expect("stdout");
        let mut lines = BufReader::new(stdout).lines();
        // Wait for a random number of commits (so the child is mid-stream),
        // then kill after a random delay: the kill lands anywhere in a batch.
        let wait_for = rng.random_range(1..=30);
        let mut seen = 0;
        while seen < wait_for {
            match lines.next() {
                Some(Ok(l)) if l.starts_with("COMMITTED ") => {
                    seen += 1;
                    reported.push(parse(&l));
                }
                Some(Ok(_)) => {}
                _ => break,
            }
        }
        std::thread::sleep(Duration::from_micros(rng.random_range(0..4000)));
        proc.kill().expect("kill -9");
        // Lines already written before the kill are commits that happened.
        for l in lines.map_while(Result::ok) {
            if l.starts_with("COMMITTED ") {
                reported.push(parse(&l));
            }
        }
        let status = proc.wait().expect("wait");
        if status.code().is_none() {
            killed_mid_run += 1;
        }

        let store = Store::open(&dir, StoreOptions::default()).expect("reopen after kill");
        let report = store.verify().expect("verify");
        assert!(report.is_valid(), "cycle {cycle}: {report:?}");
        let ok: String = rusqlite::Connection::open(common::db_path(&dir))
            .expect("raw")
            .query_row("PRAGMA integrity_check", [], |r| r.get(0))
            .expect("integrity_check");
        assert_eq!(ok, "ok", "cycle {cycle}");
        let max = reported.iter().map(|r| r.0).max().unwrap_or(0);
        assert!(
            report.size >= max,
            "cycle {cycle}: reported seq {max} lost (size {})",
            report.size
        );
        for (seq, id) in reported.iter().rev().take(64) {
            let e = store
                .event_by_seq(*seq)
                .expect("read")
                .expect("reported event present");
            assert_eq!(e.id, *id, "cycle {cycle}: seq {seq}");
        }
    }
    assert_eq!(
        killed_mid_run, CYCLES,
        "every child was killed, not finished"
    );
    // Every event ever reported is present, and appending continues.
    let mut store = Store::open(&dir, StoreOptions::default()).expect("reopen");
    for (seq, id) in &reported {
        assert_eq!(
            store.event_by_seq(*seq).expect("read").map(|e| e.id),
            Some(*id)
        );
    }
    let r = store
        .append(common::mixed_draft(0))
        .expect("append after crashes");
    assert_eq!(r.seq, store.head().expect("head").size);
    assert!(store.verify().expect("verify").is_valid());
}

fn parse(line: &str) -> (u64, Ulid) {
    let mut it = line.split_whitespace().skip(1);
    let seq = it.next().and_then(|s| s.parse().ok()).expect("seq");
    let id = it
        .next()
        .and_then(|s| Ulid::from_string(s).ok())
        .expect("id");
    (seq, id)
}

#[test]
fn concurrent_writers_lose_nothing_and_keep_one_chain() {
    const WRITERS: u64 = 4;
    let d = tempfile::tempdir().expect("tempdir");
    let dir = d.path().join("store");
    drop(Store::create(&dir, StoreOptions::default()).expect("create"));
    let procs: Vec<_> = (0..WRITERS)
        .map(|w| {
            child("race", &dir, 100 + w)
                .env(WRITER, w.to_string())
                .spawn()
                .expect("spawn")
        })
        .collect();
    for p in procs {
        let out = p.wait_with_output().expect("wait");
        assert!(out.status.success(), "writer failed: {out:?}");
        assert!(
            String::from_utf8_lossy(&out.stdout).contains("DONE"),
            "writer did not finish"
        );
    }
    let store = Store::open(&dir, StoreOptions::default()).expect("open");
    let report = store.verify().expect("verify");
    assert!(report.is_valid(), "{report:?}");
    assert_eq!(report.size, WRITERS * EVENTS_PER_WRITER as u64);
    let mut seen = vec![vec![false; EVENTS_PER_WRITER]; WRITERS as usize];
    let mut interleaved = false;
    let mut last_writer = None;
    for e in store.tail(0) {
        let e = e.expect("event");
        let v = e.payload_json().expect("json");
        let (w, k) = (
            v["writer"].as_u64().expect("w") as usize,
            v["k"].as_u64().expect("k") as usize,
        );
        assert!(!seen[w][k], "event ({w},{k}) stored twice");
        seen[w][k] = true;
        if last_writer.is_some_and(|l| l != w) {
            interleaved = true;
        }
        last_writer = Some(w);
    }
    assert!(seen.iter().flatten().all(|&s| s), "every event present");
    assert!(interleaved, "writers really ran at once");
}
