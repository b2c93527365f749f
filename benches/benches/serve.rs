//! `ratchet serve` (issue 24): recording over the Unix socket against the
//! library's own append of the same events, a warm `decide` through the
//! server against a cold gate on the same 1M-event store, and the server's
//! resident memory idle and per million events held.
//!
//! ```sh
//! scripts/bench serve
//! RATCHET_SERVE_EVENTS=200000 scripts/bench serve   # a smaller store
//! ```
//!
//! Figures and their reading: benches/README.md ("Issue 24").

use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use ratchet_benches::paired_store;
use ratchet_serve::{Client, Endpoint, Listen, Owner, Scope, ServeOptions, TokenSpec};
use ratchet_trace::{Score, Store, StoreOptions};

fn events() -> usize {
    std::env::var("RATCHET_SERVE_EVENTS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1_000_000)
}

fn rss_mib() -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|kb| kb.parse::<f64>().ok())
        })
        .map_or(f64::NAN, |kb| kb / 1024.0)
}

/// A server on `store` in a background thread; returns its socket, tokens
/// (record, decide) and the thread's stop handle.
struct Running {
    socket: std::path::PathBuf,
    record: String,
    decide: String,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
    _dir: tempfile::TempDir,
}

impl Drop for Running {
    fn drop(&mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn start(mut store: Store) -> Running {
    let mut mint = |can: Vec<Scope>, session: &str| {
        ratchet_serve::mint_token(
            &mut store,
            &TokenSpec {
                can,
                session: session.into(),
                cell: None,
                expires_at_ms: None,
                // A benchmark of throughput, not of the quotas.
                quota: ratchet_serve::Quota {
                    max_events: u64::MAX,
                    max_bytes: u64::MAX,
                    events_per_hour: u64::MAX,
                    bytes_per_hour: u64::MAX,
                },
            },
        )
        .expect("mint")
        .token
    };
    let record = mint(vec![Scope::Record], "bench");
    let decide = mint(vec![Scope::Decide], "bench");
    let dir = tempfile::tempdir().expect("socket dir");
    let socket = dir.path().join("s.sock");
    let owner = Arc::new(
        Owner::new(
            store,
            ServeOptions {
                rate_per_second: 1e12,
                burst: 1e12,
                max_body_bytes: 64 << 20,
                ..ServeOptions::default()
            },
        )
        .expect("owner"),
    );
    let (ready_tx, ready_rx) = std::sync::mpsc::channel();
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let listen = vec![Listen::Unix(socket.clone())];
    let thread = std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("runtime");
        rt.block_on(ratchet_serve::serve(
            owner,
            &listen,
            Duration::from_secs(5),
            |_| {
                let _ = ready_tx.send(());
            },
            async {
                let _ = stop_rx.await;
            },
        ))
        .expect("serve");
    });
    ready_rx.recv().expect("ready");
    Running {
        socket,
        record,
        decide,
        stop: Some(stop_tx),
        thread: Some(thread),
        _dir: dir,
    }
}

fn scores(batch: usize, n: usize) -> Vec<Score> {
    let c = ratchet_benches::commit(7);
    (0..n)
        .map(|i| {
            Score::new(
                c.clone(),
                format!("b{batch}-t{i}"),
                "accuracy",
                (i % 2) as f64,
            )
        })
        .collect()
}

fn lines(scores: &[Score]) -> String {
    scores
        .iter()
        .map(|s| {
            format!(
                "{{\"task\":\"{}\",\"scorer\":\"accuracy\",\"value\":{},\"commit\":\"{}\"}}\n",
                s.task, s.value, s.commit
            )
        })
        .collect()
}

/// Batches of 1,000 scores: the library's append, the library's ingestion
/// of the same JSON Lines, and the same lines sent to the server.
fn record(c: &mut Criterion) {
    let lib_dir = tempfile::tempdir().expect("tempdir");
    let mut lib = Store::create(lib_dir.path(), StoreOptions::default()).expect("store");
    let ingest_dir = tempfile::tempdir().expect("tempdir");
    let mut ingest_store =
        Store::create(ingest_dir.path().join("s"), StoreOptions::default()).expect("store");
    let served_dir = tempfile::tempdir().expect("tempdir");
    let served = start(Store::create(served_dir.path(), StoreOptions::default()).expect("store"));
    let client = Client::new(Endpoint::Unix(served.socket.clone()), served.record.clone());
    let mut g = c.benchmark_group("serve/record_1000");
    g.sample_size(20);
    g.measurement_time(Duration::from_secs(15));
    let mut n = 0usize;
    g.bench_function("library_record_scores", |b| {
        b.iter_batched(
            || {
                n += 1;
                scores(n, 1000)
            },
            |s| lib.record_scores(&s, "bench").expect("append"),
            BatchSize::SmallInput,
        )
    });
    g.bench_function("library_ingest_jsonl", |b| {
        b.iter_batched(
            || {
                n += 1;
                let f = ingest_dir.path().join(format!("b{n}.jsonl"));
                std::fs::write(&f, lines(&scores(n, 1000))).expect("write");
                f
            },
            |f| {
                ratchet_scorers::ingest(
                    &mut ingest_store,
                    ratchet_scorers::Format::Jsonl,
                    &[f],
                    &ratchet_scorers::IngestOptions::default(),
                )
                .expect("ingest")
            },
            BatchSize::SmallInput,
        )
    });
    g.bench_function("server_unix_socket", |b| {
        b.iter_batched(
            || {
                n += 1;
                lines(&scores(n, 1000))
            },
            |body| {
                client
                    .ingest("jsonl", &[], body.as_bytes())
                    .expect("record")
            },
            BatchSize::SmallInput,
        )
    });
    g.finish();
}

/// A warm decide through the server against a cold gate (open, verify,
/// decide) on the same store of `events()` score events; memory beside.
fn decide(c: &mut Criterion) {
    let n = events();
    let dir = tempfile::tempdir().expect("tempdir");
    let (mut store, base, cand) = paired_store(dir.path(), n / 2);
    let policy_text = "[class.bench]\nscorer = \"accuracy\"\ntest = \"bernoulli\"\nalpha = 0.05\nbeta = 0.05\ngap = 0.1\nmax_n = 100000000\n";
    let policy = ratchet_gate::Policy::parse(policy_text).expect("policy");
    let class = policy.class("bench").expect("class").clone();
    ratchet_gate::pin_policy(&mut store, "bench", &class).expect("pin");
    drop(store);

    let idle_before = rss_mib();
    let empty_dir = tempfile::tempdir().expect("tempdir");
    let idle = start(Store::create(empty_dir.path(), StoreOptions::default()).expect("store"));
    let idle_rss = rss_mib() - idle_before;
    drop(idle);
    let before = rss_mib();
    let t = Instant::now();
    let served = start(Store::open(dir.path(), StoreOptions::default()).expect("open"));
    let started = t.elapsed();
    let held = rss_mib() - before;
    println!(
        "serve: idle server {idle_rss:.1} MiB; {n} events held: +{held:.1} MiB ({:.1} MiB per million), started (verified) in {:.2} s",
        held / (n as f64 / 1e6),
        started.as_secs_f64()
    );
    let client = Client::new(Endpoint::Unix(served.socket.clone()), served.decide.clone());
    let ask = serde_json::json!({
        "class": "bench", "baseline": base.as_str(), "candidate": cand.as_str(), "dry_run": true
    });
    // p50 / p99 of the warm decide, from 200 timed calls.
    let mut times: Vec<f64> = (0..200)
        .map(|_| {
            let t = Instant::now();
            client.post_json("/v1/decide", &ask).expect("decide");
            t.elapsed().as_secs_f64() * 1e3
        })
        .collect();
    times.sort_by(f64::total_cmp);
    println!(
        "serve: warm decide at {n} events: p50 {:.2} ms, p99 {:.2} ms",
        times[times.len() / 2],
        times[times.len() * 99 / 100]
    );
    let mut g = c.benchmark_group("serve/decide");
    g.sample_size(10);
    g.measurement_time(Duration::from_secs(20));
    g.bench_function("cold_gate", |b| {
        // What `ratchet gate --dry-run` does: open, verify and fold, decide
        // under the pinned policy.
        b.iter(|| {
            let store = Store::open(dir.path(), StoreOptions::default()).expect("open");
            ratchet_orchestrate::gate_once(
                store,
                &ratchet_orchestrate::GateRequest {
                    class: "bench",
                    policy_file: None,
                    baseline: &base,
                    candidate: &cand,
                    checkpoint: None,
                    allow_unpinned: false,
                },
                &ratchet_orchestrate::GateOptions {
                    dry_run: true,
                    promote_in: None,
                },
            )
            .expect("decide")
        })
    });
    g.bench_function("warm_server", |b| {
        b.iter(|| client.post_json("/v1/decide", &ask).expect("decide"))
    });
    g.finish();
}

criterion_group!(benches, record, decide);
criterion_main!(benches);
