//! How each path scales with the size of the trace: 100k, 1M and (opt-in)
//! 10M events. Not a criterion bench — one timed run per path and size
//! (the 10M stores take minutes to build), with the peak memory of the
//! process during that run — and not a target: the shape of the curve.
//!
//! ```sh
//! scripts/bench scaling                                  # 100k and 1M
//! RATCHET_SCALING_SIZES=100000,1000000,10000000 scripts/bench scaling
//! ```
//!
//! Figures and their reading are in benches/README.md.

use std::path::Path;
use std::time::{Duration, Instant};

use ratchet_benches::{note, note_store, paired_store, score_store};
use ratchet_trace::{AsOf, MergeOptions, Store, StoreOptions, Ulid, VerifyOptions};

/// Resets the kernel's peak-RSS mark of this process (Linux ≥ 4.0), so the
/// next reading is the peak of what ran since.
fn reset_peak() {
    // Best effort: without it the figure is the process's peak so far.
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}

/// Peak resident memory since the last reset, in MiB.
fn peak_mib() -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|kb| kb.parse::<f64>().ok())
        })
        .map_or(f64::NAN, |kb| kb / 1024.0)
}

fn dir_mib(dir: &Path) -> f64 {
    fn walk(p: &Path) -> u64 {
        std::fs::read_dir(p)
            .map(|rd| {
                rd.flatten()
                    .map(|e| match e.metadata() {
                        Ok(m) if m.is_dir() => walk(&e.path()),
                        Ok(m) => m.len(),
                        Err(_) => 0,
                    })
                    .sum()
            })
            .unwrap_or(0)
    }
    walk(dir) as f64 / (1024.0 * 1024.0)
}

/// Times `f` once and prints a row: path, store size in events, time, time
/// per operation (`ops` of them: the events appended or verified, the
/// reads made), peak memory.
fn row<T>(path: &str, n: usize, ops: usize, f: impl FnOnce() -> T) -> T {
    reset_peak();
    let t = Instant::now();
    let out = f();
    let took = t.elapsed();
    println!(
        "| {path} | {n} | {} | {} | {:.0} MiB |",
        human(took),
        human(took / ops.max(1) as u32),
        peak_mib()
    );
    out
}

fn human(d: Duration) -> String {
    let s = d.as_secs_f64();
    if s >= 1.0 {
        format!("{s:.2} s")
    } else if s >= 1e-3 {
        format!("{:.2} ms", s * 1e3)
    } else {
        format!("{:.2} µs", s * 1e6)
    }
}

fn main() {
    let sizes: Vec<usize> = std::env::var("RATCHET_SCALING_SIZES")
        .ok()
        .map(|s| s.split(',').filter_map(|x| x.trim().parse().ok()).collect())
        .unwrap_or_else(|| vec![100_000, 1_000_000]);
    // `cargo bench` passes `--bench`; a filter argument is not supported.
    println!("| path | events in the store | time | per operation | peak RSS |");
    println!("|---|---|---|---|---|");
    for &n in &sizes {
        let dir = tempfile::tempdir().expect("tempdir");
        // Appends of notes in batches of 10,000 (the store every read below
        // of notes uses).
        let notes = row("append notes (batches of 10k)", n, n, || {
            note_store(&dir.path().join("notes"), n)
        });
        let stride = (n / 10_000).max(1);
        let ids: Vec<Ulid> = (0..n)
            .step_by(stride)
            .filter_map(|seq| notes.event_by_seq(seq as u64 + 1).ok().flatten())
            .map(|e| e.id)
            .collect();
        row("point read by id (10k reads)", n, ids.len(), || {
            for id in &ids {
                std::hint::black_box(notes.event_by_id(*id).expect("read"));
            }
        });
        row("verify notes", n, n, || {
            assert!(notes.verify().expect("verify").is_valid())
        });
        drop(notes);
        // Scores over 100 commits.
        let scores = row("append scores (batches of 10k, 100 commits)", n, n, || {
            score_store(&dir.path().join("scores"), n, 100)
        });
        row("verify scores", n, n, || {
            assert!(scores.verify().expect("verify").is_valid())
        });
        // Decisions query the view verification folds (built untimed).
        let view = scores
            .verified(&VerifyOptions::default())
            .expect("verifies");
        row(
            "commit_stats at the head (kept folds), 100 commits",
            n,
            100,
            || std::hint::black_box(view.commit_stats("accuracy", AsOf::Head)),
        );
        // As of a seq before each commit's last score (the rows are
        // round-robin over the 100 commits): every value is folded again.
        let before_last = view.head().size - 100;
        row(
            "commit_stats by scan (as of an earlier seq), per row",
            n,
            n,
            || std::hint::black_box(view.commit_stats("accuracy", AsOf::Seq(before_last))),
        );
        drop(view);
        let raw = ratchet_benches::raw_connection(&scores);
        row("SQLite GROUP BY commit (yardstick), per row", n, n, || {
            std::hint::black_box(ratchet_benches::group_by_commit(&raw, "scores", "accuracy"))
        });
        drop(raw);
        println!(
            "| (score store on disk) | {n} | {:.0} MiB | {:.0} bytes per event | |",
            dir_mib(&dir.path().join("scores")),
            dir_mib(&dir.path().join("scores")) * 1024.0 * 1024.0 / n as f64
        );
        drop(scores);
        std::fs::remove_dir_all(dir.path().join("scores")).expect("cleanup");
        // decide's read: per-task means of two commits, n/2 tasks each.
        let (paired, base, cand) = paired_store(&dir.path().join("paired"), n / 2);
        let view = paired
            .verified(&VerifyOptions::default())
            .expect("verifies");
        row(
            "paired_scores (decide's read; n/2 tasks x 2 commits)",
            n,
            n,
            || {
                std::hint::black_box(
                    view.paired_scores(&base, &cand, "accuracy", AsOf::Head)
                        .len(),
                )
            },
        );
        drop(view);
        drop(paired);
        std::fs::remove_dir_all(dir.path().join("paired")).expect("cleanup");
        // A merge of a cell of n notes into an empty home.
        std::fs::rename(dir.path().join("notes"), dir.path().join("cell")).expect("rename");
        let mut home =
            Store::create(dir.path().join("home"), StoreOptions::default()).expect("home");
        row("merge a cell of notes into an empty home", n, n, || {
            let r = home
                .merge_cell(dir.path().join("cell"), &MergeOptions::default())
                .expect("merge");
            assert_eq!(r.ingested, n as u64);
        });
        // One more batch on top: the append cost at this size.
        row("append 10k notes onto the merged store", n, 10_000, || {
            home.append_batch((0..10_000).map(note)).expect("append")
        });
    }
}
