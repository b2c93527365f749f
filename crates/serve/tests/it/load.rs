//! Sixteen recording clients at once: every acknowledged event is in the
//! trace exactly once, no batch is half stored, and the chain verifies.

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use ratchet_serve::ServeOptions;

use crate::{A, Server, score_line};

/// Seconds of load (the figure; `RATCHET_LOAD_SECONDS` shortens it
/// for a quick local run).
fn seconds() -> u64 {
    std::env::var("RATCHET_LOAD_SECONDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(60)
}

#[test]
fn sixteen_concurrent_writers_lose_nothing_and_store_nothing_twice() {
    const CLIENTS: usize = 16;
    const PER_BATCH: usize = 10;
    let s = Server::start_unmetered(ServeOptions {
        rate_per_second: 1e9,
        burst: 1e9,
        ..ServeOptions::default()
    });
    let deadline = Instant::now() + Duration::from_secs(seconds());
    let acked: Vec<Vec<String>> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..CLIENTS)
            .map(|c| {
                let client = s.client(&s.record);
                scope.spawn(move || {
                    let mut acked = Vec::new();
                    let mut n = 0usize;
                    while Instant::now() < deadline {
                        let batch = format!("c{c}-b{n}");
                        let body: String = (0..PER_BATCH)
                            .map(|k| score_line(A, &format!("{batch}-{k}"), 0.5))
                            .collect();
                        let r = client
                            .request(
                                "POST",
                                &format!("/v1/ingest/jsonl?request_id={batch}"),
                                "application/octet-stream",
                                body.as_bytes(),
                            )
                            .expect("the server answers");
                        assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
                        acked.push(batch);
                        n += 1;
                    }
                    acked
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("client thread"))
            .collect()
    });
    let batches: BTreeSet<String> = acked.into_iter().flatten().collect();
    assert!(
        batches.len() >= CLIENTS,
        "every client got through at least once"
    );
    let store = s.reopen();
    let report = store.verify().expect("verify");
    assert!(report.fault.is_none(), "{report:?}");
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    for e in store.events_of_kinds(&["score"]).expect("scores") {
        let p: serde_json::Value = serde_json::from_slice(&e.payload).expect("payload");
        let task = p["task"].as_str().expect("task").to_string();
        *seen.entry(task).or_default() += 1;
    }
    let mut per_batch: BTreeMap<String, usize> = BTreeMap::new();
    for (task, n) in &seen {
        assert_eq!(*n, 1, "task {task} stored {n} times");
        let batch = task.rsplit_once('-').map_or(task.as_str(), |(b, _)| b);
        *per_batch.entry(batch.to_string()).or_default() += 1;
    }
    for b in &batches {
        assert_eq!(per_batch.get(b), Some(&PER_BATCH), "acknowledged batch {b}");
    }
    for (b, n) in &per_batch {
        assert_eq!(*n, PER_BATCH, "batch {b} is whole");
        assert!(
            batches.contains(b),
            "batch {b} stored but never acknowledged"
        );
    }
    eprintln!(
        "{} batches of {PER_BATCH} from {CLIENTS} clients in {} s",
        batches.len(),
        seconds()
    );
}
