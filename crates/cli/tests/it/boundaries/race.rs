//! The verify-then-read window, raced through the binary: a writer without
//! the key rewrites the candidate's score values in `trace.db` in place
//! while `ratchet gate` runs — before, during and after its verification —
//! and puts them back. The gate decides from the view verification folded
//! from the bytes it checked, so the forged values either fail verification
//! (an unverified trace: nothing recorded) or never reach the decision; an
//! honest reject is never turned into a promote.

use std::os::unix::fs::FileExt as _;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use super::*;

/// The candidate's score values (`record_honest_scores`: 0.70 … 0.74) as
/// SQLite stores a REAL: 8 bytes, big-endian.
fn candidate_values() -> Vec<[u8; 8]> {
    (0..5)
        .map(|i| (0.70 + f64::from(i) * 0.01).to_be_bytes())
        .collect()
}

/// Every offset in the file where one of `patterns` occurs.
fn offsets_of(bytes: &[u8], patterns: &[[u8; 8]]) -> Vec<(u64, [u8; 8])> {
    bytes
        .windows(8)
        .enumerate()
        .filter_map(|(i, w)| {
            patterns
                .iter()
                .find(|p| w == p.as_slice())
                .map(|p| (i as u64, *p))
        })
        .collect()
}

#[test]
fn a_raw_writer_racing_the_gate_never_turns_a_reject_into_a_promote() {
    let (w, base, cand) = gate_world();
    let o = w.cmd(&["policy", "pin", ".ratchet/policy.toml"], "");
    assert!(o.status.success(), "{}", text(&o));
    w.save_checkpoint();
    let honest = gate(&w, &base, &cand, &["--dry-run", "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&honest.stdout).expect("json");
    assert_eq!(
        v["status"],
        "reject",
        "the honest verdict: {}",
        text(&honest)
    );

    let db = w.store().join("trace.db");
    let found = offsets_of(&std::fs::read(&db).expect("read db"), &candidate_values());
    assert!(
        found.len() >= 200,
        "the candidate's 200 values are in the file's score rows ({} found)",
        found.len()
    );
    // The forgery: every candidate value 0.99, which would promote it.
    let forged = 0.99f64.to_be_bytes();
    let file = std::fs::OpenOptions::new()
        .write(true)
        .open(&db)
        .expect("open trace.db for raw writes");
    let stop = Arc::new(AtomicBool::new(false));
    let flips = Arc::new(AtomicU64::new(0));
    let racer = {
        let (stop, flips, found) = (Arc::clone(&stop), Arc::clone(&flips), found.clone());
        std::thread::spawn(move || {
            let write_all = |forge: bool| {
                for (at, value) in &found {
                    let bytes = if forge { &forged } else { value };
                    let _ = file.write_at(bytes, *at);
                }
            };
            while !stop.load(Ordering::Relaxed) {
                write_all(true);
                std::thread::sleep(std::time::Duration::from_micros(300));
                write_all(false);
                std::thread::sleep(std::time::Duration::from_micros(100));
                flips.fetch_add(1, Ordering::Relaxed);
            }
            // Restored: afterwards the file is what the writer wrote.
            write_all(false);
        })
    };

    const RUNS: usize = 20;
    let mut outcomes = Vec::new();
    for _ in 0..RUNS {
        let cp = w.checkpoint.to_str().expect("utf8").to_string();
        let o = gate(&w, &base, &cand, &["--checkpoint", cp.as_str(), "--json"]);
        let status = serde_json::from_slice::<serde_json::Value>(&o.stdout)
            .ok()
            .and_then(|v| v["status"].as_str().map(str::to_string))
            .unwrap_or_else(|| format!("error: {}", text(&o)));
        outcomes.push(status);
    }
    stop.store(true, Ordering::Relaxed);
    racer.join().expect("racer");
    assert!(
        flips.load(Ordering::Relaxed) > RUNS as u64,
        "the racer kept writing while the gates ran"
    );
    assert!(
        outcomes.iter().all(|s| s != "promote"),
        "a forged value reached a decision: {outcomes:?}"
    );
    assert!(
        outcomes
            .iter()
            .all(|s| s == "reject" || s == "unverified_trace"),
        "every run is the honest reject or a refusal of the altered file: {outcomes:?}"
    );
    // The store is whole again and no promote was ever recorded.
    let o = w.verify_fully(&[]);
    assert!(o.status.success(), "{}", text(&o));
    let o = w.run(&["log", "--kind", "decision", "--json"], "");
    assert!(o.status.success(), "{}", text(&o));
    assert!(
        !String::from_utf8_lossy(&o.stdout).contains("\"verdict\":\"promote\""),
        "no promote in the trace: {}",
        text(&o)
    );
}
