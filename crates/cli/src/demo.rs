//! `ratchet demo`: the store end to end on generated data, in seconds.
//!
//! Records a baseline and a candidate commit's scores and test runs, prints
//! their per-commit statistics, verifies the chain and writes a checkpoint,
//! then edits one byte of the database file behind the store's back and shows
//! verification naming the altered event.

use std::io::Write;
use std::path::PathBuf;

use anyhow::{Context, Result, bail};
use rand::{Rng, SeedableRng, rngs::StdRng};
use ratchet_trace::{
    CommitId, DB_FILE, EventDraft, Score, Store, StoreOptions, TestRun, VerifyOptions,
};

const TASKS: usize = 400;

fn fake_commit(name: &str) -> Result<CommitId> {
    let h = blake3::hash(name.as_bytes()).to_hex();
    Ok(CommitId::parse(&h[..40])?)
}

pub fn run(dir: Option<PathBuf>, json: bool) -> Result<u8> {
    let scratch = tempfile::tempdir().context("creating a scratch directory")?;
    let root = dir.unwrap_or_else(|| scratch.path().to_path_buf());
    let store_dir = root.join("store");
    let mut store = Store::create(&store_dir, StoreOptions::default())?;
    let mut out = std::io::stdout().lock();
    let mut rng = StdRng::seed_from_u64(7);

    let baseline = fake_commit("demo baseline")?;
    let candidate = fake_commit("demo candidate")?;
    store.append(
        EventDraft::json(
            "note",
            &serde_json::json!({"demo": "started", "tasks": TASKS}),
        )?
        .session("demo"),
    )?;
    // Pass/fail per task with true pass rates 0.70 and 0.78, plus a latency guardrail.
    for (commit, p, lat) in [(&baseline, 0.70, 120.0), (&candidate, 0.78, 125.0)] {
        let scores: Vec<Score> = (0..TASKS)
            .map(|t| {
                let mut s = Score::new(
                    commit.clone(),
                    format!("task-{t:03}"),
                    "pass",
                    f64::from(u8::from(rng.random_bool(p))),
                );
                s.latency_ms = Some(lat + rng.random_range(-20.0..20.0));
                s
            })
            .collect();
        store.record_scores(&scores, "demo")?;
        store.record_test_run(
            &TestRun {
                commit: commit.clone(),
                suite: "unit".into(),
                passed: 212,
                failed: 0,
                skipped: 3,
                duration_ms: 8400.0,
            },
            "demo",
        )?;
    }
    let marker_seq = store
        .append(EventDraft::json(
            "note",
            &serde_json::json!({"demo": "decision pending", "marker": "RATCHET-DEMO-MARKER"}),
        )?)?
        .seq;
    store.append(EventDraft::json(
        "note",
        &serde_json::json!({"demo": "finished"}),
    )?)?;

    let stats = store.commit_stats("pass", ratchet_trace::AsOf::Head)?;
    let report = store.verify()?;
    let cp = store.checkpoint()?;
    let cp_path = root.join("held-elsewhere.checkpoint");
    cp.write_atomic(&cp_path)?;

    if !json {
        writeln!(
            out,
            "ratchet demo — trace store at {}\n",
            store_dir.display()
        )?;
        writeln!(
            out,
            "{:<14} {:>6} {:>8} {:>10}",
            "commit", "n", "mean", "variance"
        )?;
        for s in &stats {
            let name = if s.commit == baseline {
                "baseline"
            } else {
                "candidate"
            };
            writeln!(
                out,
                "{:<14} {:>6} {:>8.4} {:>10.4}",
                format!("{name} {}", &s.commit.as_str()[..4]),
                s.n,
                s.mean,
                s.variance.unwrap_or(f64::NAN)
            )?;
        }
        writeln!(
            out,
            "\nverify: {} events, chain intact: {}",
            report.size,
            report.is_valid()
        )?;
        writeln!(out, "checkpoint written to {}:\n{cp}", cp_path.display())?;
    }

    // Someone with write access edits one byte of the file.
    drop(store);
    let db = store_dir.join(DB_FILE);
    let mut bytes = std::fs::read(&db).with_context(|| format!("reading {}", db.display()))?;
    let needle = b"RATCHET-DEMO-MARKER";
    let at = bytes
        .windows(needle.len())
        .position(|w| w == needle)
        .context("demo marker not found in the database file")?;
    bytes[at] = b'X';
    std::fs::write(&db, &bytes).with_context(|| format!("writing {}", db.display()))?;

    let store = Store::open(&store_dir, StoreOptions::default())?;
    let after = store.verify_with(&VerifyOptions::default().checkpoint(cp))?;
    let caught = after.fault.as_ref().map(|f| f.seq) == Some(marker_seq);
    if json {
        serde_json::to_writer_pretty(
            &mut out,
            &serde_json::json!({
                "store": store_dir, "stats": stats, "verified": report, "checkpoint": store.checkpoint()?,
                "after_tamper": after, "tamper_seq": marker_seq, "caught": caught,
            }),
        )?;
        writeln!(out)?;
    } else {
        writeln!(
            out,
            "edited one byte of event {marker_seq} directly in {}",
            db.display()
        )?;
        match &after.fault {
            Some(f) => writeln!(out, "verify: TAMPERED at {f}")?,
            None => writeln!(out, "verify: no fault found")?,
        }
    }
    if !caught {
        bail!(
            "the demo's tampering was not caught at seq {marker_seq}: {:?}",
            after.fault
        );
    }
    Ok(0)
}
