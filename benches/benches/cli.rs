//! `ratchet append` (the release binary, a process per run, lines on its
//! standard input) against the library path on the same lines
//! (`Store::append_json_lines` in this process). Figures and the command
//! that produced them are in benches/README.md.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use ratchet_trace::{Store, StoreOptions};

/// The release `ratchet` binary beside this bench's own executable
/// (`target/release/deps/cli-…` → `target/release/ratchet`), built first so
/// the comparison never runs a stale or debug build.
fn ratchet_binary() -> PathBuf {
    let status = Command::new(env!("CARGO"))
        .args([
            "build",
            "--release",
            "--quiet",
            "-p",
            "ratchet",
            "--bin",
            "ratchet",
        ])
        .status()
        .expect("running cargo build");
    assert!(status.success(), "building the ratchet binary failed");
    let exe = std::env::current_exe().expect("bench path");
    let bin = exe
        .parent()
        .and_then(Path::parent)
        .expect("target/release")
        .join("ratchet");
    assert!(bin.is_file(), "{} is missing", bin.display());
    bin
}

/// `n` JSON lines of the note events the trace benches append.
fn lines(n: usize) -> String {
    (0..n)
        .map(|i| {
            format!(
                "{{\"kind\":\"note\",\"session\":\"bench\",\"payload\":{{\"step\":{i},\"tool\":\"search\",\"ok\":true,\"tokens\":{}}}}}\n",
                i % 977
            )
        })
        .collect()
}

fn cli_run(bin: &Path, store: &Path, input: &Path) -> Duration {
    Store::create(store, StoreOptions::default()).expect("store");
    let stdin = std::fs::File::open(input).expect("input");
    let t = Instant::now();
    let out = Command::new(bin)
        .arg("--store")
        .arg(store)
        .arg("append")
        .stdin(stdin)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .output()
        .expect("running ratchet append");
    let took = t.elapsed();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    std::fs::remove_dir_all(store).expect("cleanup");
    took
}

fn library_run(store: &Path, input: &Path, n: usize) -> Duration {
    let mut s = Store::create(store, StoreOptions::default()).expect("store");
    let t = Instant::now();
    let text = std::fs::read_to_string(input).expect("input");
    let receipts = s.append_json_lines(&text).expect("append");
    let took = t.elapsed();
    assert_eq!(receipts.len(), n);
    drop(s);
    std::fs::remove_dir_all(store).expect("cleanup");
    took
}

fn cli_append(c: &mut Criterion) {
    let bin = ratchet_binary();
    let dir = tempfile::tempdir().expect("tempdir");
    for (name, n) in [("100k", 100_000usize), ("1m", 1_000_000)] {
        let input = dir.path().join(format!("{name}.jsonl"));
        std::fs::write(&input, lines(n)).expect("write input");
        let store = dir.path().join("store");
        let mut g = c.benchmark_group(format!("cli_append_{name}"));
        g.throughput(Throughput::Elements(n as u64));
        g.sample_size(10)
            .warm_up_time(Duration::from_millis(500))
            .measurement_time(Duration::from_secs(if n > 100_000 { 60 } else { 10 }));
        // Interleaved: each timed run of one side follows an untimed run of
        // the other, so both see the same disk and page-cache state.
        g.bench_function("cli", |b| {
            b.iter_custom(|iters| {
                (0..iters)
                    .map(|_| {
                        library_run(&store, &input, n);
                        cli_run(&bin, &store, &input)
                    })
                    .sum()
            })
        });
        g.bench_function("library", |b| {
            b.iter_custom(|iters| {
                (0..iters)
                    .map(|_| {
                        cli_run(&bin, &store, &input);
                        library_run(&store, &input, n)
                    })
                    .sum()
            })
        });
        g.finish();
    }
}

criterion_group!(benches, cli_append);
criterion_main!(benches);
