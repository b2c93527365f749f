//! Peak resident memory of a cold verify + decide (open, verify, fold the
//! view, decide) on a store of `RATCHET_RSS_EVENTS` score events (default
//! 1M; the issue-21 figure is at 10M). Not a criterion bench: one run, the
//! kernel's peak-RSS mark reset after the store is built.
//!
//! ```sh
//! RATCHET_RSS_EVENTS=10000000 scripts/bench ledger_rss
//! ```

use std::time::Instant;

use ratchet_benches::paired_store;
use ratchet_trace::{Store, StoreOptions};

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

fn main() {
    // `cargo bench` passes `--bench`; nothing else is read.
    let n: usize = std::env::var("RATCHET_RSS_EVENTS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1_000_000);
    let dir = tempfile::tempdir().expect("tempdir");
    let t = Instant::now();
    let (store, base, cand) = paired_store(dir.path(), n / 2);
    drop(store);
    println!(
        "built {n} score events in {:.1} s",
        t.elapsed().as_secs_f64()
    );
    let policy = ratchet_gate::Policy::parse(
        "[class.bench]\nscorer = \"accuracy\"\ntest = \"bernoulli\"\nalpha = 0.05\nbeta = 0.05\ngap = 0.1\nmax_n = 100000000\n",
    )
    .expect("policy")
    .class("bench")
    .expect("class")
    .clone();
    let q = ratchet_gate::Question {
        class: "bench",
        policy: &policy,
        baseline: &base,
        candidate: &cand,
        checkpoint: None,
        allow_unpinned: true,
    };
    // Reset the peak mark (Linux ≥ 4.0): what follows is the decision's.
    let _ = std::fs::write("/proc/self/clear_refs", "5");
    let before = peak_mib();
    let t = Instant::now();
    let mut store = Store::open(dir.path(), StoreOptions::default()).expect("open");
    let head = store.head().expect("head").size;
    let verdict = ratchet_gate::verdict_at(&mut store, &q, head).expect("decide");
    println!(
        "cold verify + decide of {n} score events: {:.2} s, peak RSS {:.0} MiB (was {before:.0} MiB before), {:.1} bytes/event, verdict {:?}",
        t.elapsed().as_secs_f64(),
        peak_mib(),
        (peak_mib() - before).max(0.0) * 1024.0 * 1024.0 / n as f64,
        verdict.outcome.status()
    );
}
