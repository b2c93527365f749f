//! The demo's default run, and the report on a store of 1M events against
//! verifying that store (the floor every report pays: it verifies first).
//!
//! `cargo bench -p ratchet-benches --bench report -- --noplot`

use std::hint::black_box;
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use ratchet_benches::paired_store;
use ratchet_demo::{DemoOptions, run_demo};
use ratchet_gate::{Policy, Question};
use ratchet_report::{ReportOptions, html};

const POLICY: &str = r#"
[class.perf]
scorer = "accuracy"
test = "bernoulli"
alpha = 0.05
beta = 0.05
gap = 0.2
max_n = 100000
"#;

fn demo_default(c: &mut Criterion) {
    let mut g = c.benchmark_group("demo");
    g.sample_size(10).measurement_time(Duration::from_secs(60));
    g.bench_function("default_40_proposals", |b| {
        b.iter(|| {
            let dir = tempfile::tempdir().expect("tempdir");
            let s = run_demo(
                &DemoOptions {
                    seed: 7,
                    proposals: 40,
                    dir: dir.path().to_path_buf(),
                },
                &mut |_| {},
            )
            .expect("demo");
            black_box(s.events)
        })
    });
    g.finish();
}

fn report_1m(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("tempdir");
    // 500,000 tasks scored for two commits: 1M score events, and three
    // decisions on them (each draws an LLR path in the report).
    let (mut store, base, cand) = paired_store(&dir.path().join("s"), 500_000);
    let policy = Policy::parse(POLICY).expect("policy");
    for _ in 0..3 {
        let q = Question {
            class: "perf",
            policy: policy.class("perf").expect("class"),
            baseline: &base,
            candidate: &cand,
            checkpoint: None,
            allow_unpinned: true,
        };
        ratchet_gate::decide(&mut store, &q).expect("decide");
    }
    let page = html(&mut store, &ReportOptions::default()).expect("report");
    eprintln!(
        "report on {} events: {} bytes of HTML",
        store.head().expect("head").size,
        page.len()
    );
    let mut g = c.benchmark_group("report_1m");
    g.sample_size(10).measurement_time(Duration::from_secs(40));
    g.bench_function("verify_baseline", |b| {
        b.iter(|| assert!(store.verify().expect("verify").is_valid()))
    });
    g.bench_function("html", |b| {
        b.iter(|| {
            black_box(
                html(&mut store, &ReportOptions::default())
                    .expect("report")
                    .len(),
            )
        })
    });
    g.finish();
}

criterion_group!(benches, demo_default, report_1m);
criterion_main!(benches);
