//! The verified ledger (issue 21): what a decision costs cold and warm, a
//! follow poll's cost by trace size, the demo against appending and
//! verifying its events, and the view's memory.
//!
//! ```sh
//! scripts/bench ledger                          # all groups
//! scripts/bench ledger -- ledger/cold           # one group
//! RATCHET_LEDGER_EVENTS=200000 scripts/bench ledger   # smaller stores
//! ```
//!
//! Every target is a ratio of two figures measured in the same run; the
//! figures and their reading are in benches/README.md ("Issue 21").

use std::time::Duration;

use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use ratchet_benches::{commit, paired_store};
use ratchet_trace::{Ledger, Score, Store, StoreOptions, VerifyOptions};

/// Score events of the cold and warm stores (default 1M: 500k tasks × 2).
fn events() -> usize {
    std::env::var("RATCHET_LEDGER_EVENTS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1_000_000)
}

fn policy() -> ratchet_gate::ClassPolicy {
    ratchet_gate::Policy::parse(
        r#"
[class.bench]
scorer = "accuracy"
test = "bernoulli"
alpha = 0.05
beta = 0.05
gap = 0.1
max_n = 100000000
"#,
    )
    .expect("bench policy")
    .class("bench")
    .expect("class")
    .clone()
}

/// Cold decide (open, verify, decide) against verifying the same store;
/// warm decide (refresh after 1,000 new events, then decide) against the
/// cold decide.
fn cold_and_warm(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("tempdir");
    let n = events();
    let (store, base, cand) = paired_store(dir.path(), n / 2);
    drop(store);
    let policy = policy();
    let q = ratchet_gate::Question {
        class: "bench",
        policy: &policy,
        baseline: &base,
        candidate: &cand,
        checkpoint: None,
        allow_unpinned: true,
    };
    let mut g = c.benchmark_group("ledger/cold");
    g.sample_size(10);
    g.measurement_time(Duration::from_secs(30));
    g.bench_function("verify", |b| {
        b.iter(|| {
            let store = Store::open(dir.path(), StoreOptions::default()).expect("open");
            let report = store.verify().expect("verify");
            assert!(report.is_valid());
        })
    });
    g.bench_function("decide", |b| {
        b.iter(|| {
            let mut store = Store::open(dir.path(), StoreOptions::default()).expect("open");
            let head = store.head().expect("head").size;
            ratchet_gate::verdict_at(&mut store, &q, head).expect("decide")
        })
    });
    g.finish();

    let mut ledger = Ledger::new(
        Store::open(dir.path(), StoreOptions::default()).expect("open"),
        VerifyOptions::default(),
    )
    .expect("ledger");
    let view = ledger.view();
    println!(
        "view: {} score events, {:.1} bytes per score event on the heap",
        view.score_count(),
        view.heap_bytes() as f64 / view.score_count().max(1) as f64
    );
    let mut other = Store::open(dir.path(), StoreOptions::default()).expect("open");
    let mut task = n;
    let mut g = c.benchmark_group("ledger/warm");
    g.sample_size(20);
    g.bench_function("decide_after_1000_new_events", |b| {
        b.iter_batched(
            || {
                // 1,000 new events by another writer: 500 tasks of each side.
                let mut scores = Vec::with_capacity(1000);
                for _ in 0..500 {
                    for (c, v) in [(&base, 0.0), (&cand, 1.0)] {
                        scores.push(Score::new(
                            c.clone(),
                            format!("task-{task:08}"),
                            "accuracy",
                            v,
                        ));
                    }
                    task += 1;
                }
                other.record_scores(&scores, "bench").expect("append");
            },
            |()| ratchet_gate::verdict_in(&mut ledger, &q).expect("decide"),
            BatchSize::PerIteration,
        )
    });
    g.finish();
}

/// One `watch --follow` poll (refresh, then the monitor's poll) after 100
/// new live scores, at two trace sizes: its cost follows what is new, not
/// the trace.
fn follow_poll(c: &mut Criterion) {
    let mut g = c.benchmark_group("ledger/follow_poll");
    g.sample_size(20);
    for n in [events() / 10, events()] {
        let dir = tempfile::tempdir().expect("tempdir");
        let (store, base, _) = paired_store(dir.path(), n / 2);
        drop(store);
        let mut ledger = Ledger::new(
            Store::open(dir.path(), StoreOptions::default()).expect("open"),
            VerifyOptions::default(),
        )
        .expect("ledger");
        let mut monitor =
            ratchet_drift::Monitor::start(ledger.view(), &base, "accuracy", n as u64, 0.5, 5.0, 30)
                .expect("monitor");
        let mut other = Store::open(dir.path(), StoreOptions::default()).expect("open");
        let mut i = 0usize;
        g.bench_function(format!("{n}_events"), |b| {
            b.iter_batched(
                || {
                    let live: Vec<Score> = (0..100)
                        .map(|k| {
                            i += 1;
                            Score::new(
                                base.clone(),
                                format!("live-{i}"),
                                "accuracy",
                                f64::from((k % 2) as u8),
                            )
                        })
                        .collect();
                    other.record_scores(&live, "live").expect("append");
                },
                |()| {
                    ledger.refresh().expect("refresh");
                    monitor.poll(ledger.view()).expect("poll")
                },
                BatchSize::PerIteration,
            )
        });
    }
    g.finish();
}

/// The default `ratchet demo` against appending as many events as it
/// records (notes of the demo's mean payload size) and verifying them once.
fn demo(c: &mut Criterion) {
    let mut g = c.benchmark_group("ledger/demo");
    g.sample_size(10);
    g.measurement_time(Duration::from_secs(60));
    let mut events = 0u64;
    g.bench_function("demo_default", |b| {
        b.iter_batched(
            || tempfile::tempdir().expect("tempdir"),
            |dir| {
                let summary = ratchet_demo::run_demo(
                    &ratchet_demo::DemoOptions {
                        seed: 7,
                        proposals: 40,
                        dir: dir.path().to_path_buf(),
                    },
                    &mut |_| {},
                )
                .expect("demo");
                events = summary.events;
                dir
            },
            BatchSize::PerIteration,
        )
    });
    let n = events.max(1) as usize;
    g.bench_function("append_and_verify_as_many_events", |b| {
        b.iter_batched(
            || tempfile::tempdir().expect("tempdir"),
            |dir| {
                let mut store = Store::create(dir.path(), StoreOptions::default()).expect("create");
                for start in (0..n).step_by(1000) {
                    let scores: Vec<Score> = (start..(start + 1000).min(n))
                        .map(|i| Score::new(commit(i % 50), format!("task-{i}"), "answer", 0.5))
                        .collect();
                    store.record_scores(&scores, "bench").expect("append");
                }
                assert!(store.verify().expect("verify").is_valid());
                dir
            },
            BatchSize::PerIteration,
        )
    });
    g.finish();
    println!("demo events: {n}");
}

criterion_group!(benches, cold_and_warm, follow_poll, demo);
criterion_main!(benches);
