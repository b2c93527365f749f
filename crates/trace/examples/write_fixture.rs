//! Writes the compatibility fixture `tests/fixtures/v1/`: a keyed home store
//! holding notes, scores, test runs and events merged from a cell, with its
//! writer key and a checkpoint. Run once per layout version:
//!
//! ```text
//! cargo run -p ratchet-trace --example write_fixture -- crates/trace/tests/fixtures/v1
//! ```
//! Later versions must open and verify what this wrote (tests/it/fixture.rs).

use ratchet_trace::{
    CommitId, EventDraft, MergeOptions, Score, Store, StoreOptions, TestRun, WriterKey,
};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let out = std::path::PathBuf::from(
        std::env::args()
            .nth(1)
            .ok_or("usage: write_fixture OUT_DIR")?,
    );
    if out.exists() {
        return Err(format!("{} exists; remove it first", out.display()).into());
    }
    let (key, key_hex) = WriterKey::generate()?;
    let scratch = tempfile::tempdir()?;
    let mut cell = Store::create(scratch.path().join("cell"), StoreOptions::default())?;
    let mut home = Store::create(out.join("store"), StoreOptions::default().writer_key(key))?;
    let a = CommitId::parse("1111111111111111111111111111111111111111")?;
    let b = CommitId::parse("2222222222222222222222222222222222222222")?;
    home.append(
        EventDraft::json(
            "note",
            &serde_json::json!({"fixture": "v1", "text": "naïve ✓"}),
        )?
        .session("fixture"),
    )?;
    for (i, v) in [0.5, 0.75, 1.0].into_iter().enumerate() {
        let mut s = Score::new(a.clone(), format!("task-{i}"), "accuracy", v);
        s.cost = Some(0.001 * i as f64);
        s.latency_ms = Some(100.0 + i as f64);
        home.record_score(&s, "fixture")?;
    }
    home.record_test_run(
        &TestRun {
            commit: a.clone(),
            suite: "unit".into(),
            passed: 41,
            failed: 1,
            skipped: 2,
            duration_ms: 1234.5,
            failures: Vec::new(),
        },
        "fixture",
    )?;
    for (i, v) in [0.25, 0.5].into_iter().enumerate() {
        let mut s = Score::new(b.clone(), format!("task-{i}"), "accuracy", v);
        s.holdout = true;
        cell.record_score(&s, "cell-run")?;
    }
    cell.append(EventDraft::raw("note", r#"{"from":"cell"}"#))?;
    home.merge_cell(cell.dir(), &MergeOptions::default())?;
    std::fs::write(out.join("writer.key"), format!("{key_hex}\n"))?;
    home.checkpoint()?.write_atomic(out.join("checkpoint"))?;
    drop(home);
    println!("wrote {}", out.display());
    Ok(())
}
