//! Export round trips: what Parquet readers see is what the store holds.

use polars::prelude::*;
use ratchet_trace::{AsOf, CommitId, EventDraft, Score, Store, StoreOptions, VerifyOptions};

fn store_with_data() -> (tempfile::TempDir, Store) {
    let d = tempfile::tempdir().expect("tempdir");
    let mut s = Store::create(d.path().join("s"), StoreOptions::default()).expect("store");
    let commits: Vec<CommitId> = (1..=3u8)
        .map(|i| CommitId::parse(&format!("{i:02x}").repeat(20)).expect("id"))
        .collect();
    let mut scores = Vec::new();
    for (k, c) in commits.iter().enumerate() {
        for t in 0..(10 * (k + 1)) {
            let mut sc = Score::new(c.clone(), format!("t{t}"), "acc", (t % 4) as f64 / 4.0);
            sc.latency_ms = (t % 2 == 0).then_some(100.0 + t as f64);
            scores.push(sc);
        }
    }
    s.record_scores(&scores, "eval").expect("scores");
    s.append(EventDraft::raw("note", r#"{"no":"commit"}"#))
        .expect("note");
    (d, s)
}

#[test]
fn summary_matches_the_stores_own_statistics() {
    let (_d, s) = store_with_data();
    let view = s.verified(&VerifyOptions::default()).expect("verifies");
    let df = ratchet_export::summary(&view).expect("summary");
    assert_eq!(df.height(), 3);
    let stats = view.commit_stats("acc", AsOf::Head);
    let n = df
        .column("n")
        .expect("n")
        .cast(&DataType::UInt64)
        .expect("cast");
    let n = n.u64().expect("u64");
    let mean = df.column("mean").expect("mean").f64().expect("f64").clone();
    let sd = df.column("sd").expect("sd").f64().expect("f64").clone();
    for (i, st) in stats.iter().enumerate() {
        assert_eq!(n.get(i), Some(st.n));
        assert!((mean.get(i).expect("mean") - st.mean).abs() < 1e-12);
        assert!((sd.get(i).expect("sd") - st.variance.expect("var").sqrt()).abs() < 1e-12);
    }
}

#[test]
fn parquet_partitions_read_back_whole() {
    let (d, mut s) = store_with_data();
    let out = d.path().join("parquet");
    let r = ratchet_export::export_parquet(&mut s, &out).expect("export");
    assert_eq!((r.scores, r.events), (60, 61));
    let score_files: Vec<_> = r
        .files
        .iter()
        .filter(|f| f.to_string_lossy().contains("/scores/"))
        .collect();
    assert_eq!(score_files.len(), 3, "one partition per commit");
    let mut rows = 0;
    for f in &score_files {
        let df = ParquetReader::new(std::fs::File::open(f).expect("open"))
            .finish()
            .expect("read parquet");
        let commit_dir = f
            .parent()
            .and_then(|p| p.file_name())
            .expect("dir")
            .to_string_lossy()
            .to_string();
        let commits = df
            .column("commit")
            .expect("commit")
            .str()
            .expect("str")
            .clone();
        assert!(
            commits
                .iter()
                .all(|c| c.is_some_and(|c| commit_dir == format!("commit={c}")))
        );
        rows += df.height();
    }
    assert_eq!(rows, 60);
    assert!(
        r.files
            .iter()
            .any(|f| f.to_string_lossy().contains("events/commit=none"))
    );
    // Refuses to write into a non-empty directory.
    assert!(matches!(
        ratchet_export::export_parquet(&mut s, &out),
        Err(ratchet_export::Error::NotEmpty(_))
    ));
}
