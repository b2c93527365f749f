//! Export round trips: what Parquet readers see is what the store holds.

use arrow_array::{Array, BooleanArray, Float64Array, RecordBatch, StringArray, UInt64Array};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
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
    // A second version of the scorer on the first commit: another scale,
    // summarised apart.
    for t in 0..4 {
        let mut sc = Score::new(commits[0].clone(), format!("t{t}"), "acc", 10.0 * t as f64);
        sc.scorer_version = "2".into();
        scores.push(sc);
    }
    s.record_scores(&scores, "eval").expect("scores");
    s.append(EventDraft::raw("note", r#"{"no":"commit"}"#))
        .expect("note");
    (d, s)
}

fn read_parquet(path: &std::path::Path) -> RecordBatch {
    let file = std::fs::File::open(path).expect("open");
    let reader = ParquetRecordBatchReaderBuilder::try_new(file)
        .expect("a Parquet file")
        .build()
        .expect("reader");
    let batches: Vec<RecordBatch> = reader.map(|b| b.expect("batch")).collect();
    let schema = batches.first().expect("one batch at least").schema();
    arrow_select::concat::concat_batches(&schema, &batches).expect("concat")
}

fn column<'a, T: 'static>(b: &'a RecordBatch, name: &str) -> &'a T {
    b.column_by_name(name)
        .unwrap_or_else(|| panic!("no column {name}"))
        .as_any()
        .downcast_ref::<T>()
        .unwrap_or_else(|| panic!("column {name} of another type"))
}

#[test]
fn summary_is_the_trace_s_own_statistics_per_scorer_version() {
    let (_d, s) = store_with_data();
    let view = s.verified(&VerifyOptions::default()).expect("verifies");
    let summary = ratchet_export::summary(&view);
    assert_eq!(summary.rows.len(), 4, "three commits of v1, one of v2");
    for row in &summary.rows {
        let stats = view
            .commit_stats_for(
                &CommitId::parse(&row.commit).expect("commit"),
                ratchet_trace::ScorerRef::at_version("acc", &row.scorer_version),
                AsOf::Head,
            )
            .expect("stats");
        assert_eq!(row.n, stats.n);
        assert_eq!(row.mean.to_bits(), stats.mean.to_bits());
        assert_eq!(row.sd, stats.variance.map(f64::sqrt));
        assert_eq!((row.min, row.max), (stats.min, stats.max), "{row:?}");
    }
    let v2 = summary
        .rows
        .iter()
        .find(|r| r.scorer_version == "2")
        .expect("v2 row");
    assert_eq!((v2.n, v2.mean, v2.max), (4, 15.0, 30.0), "v2 is not pooled");
    let text = summary.to_string();
    assert!(text.starts_with("commit"), "{text}");
    assert!(text.ends_with("(4 row(s))"), "{text}");
    assert!(text.contains("010101010101  acc"), "{text}");
}

#[test]
fn parquet_partitions_read_back_whole() {
    let (d, mut s) = store_with_data();
    let out = d.path().join("parquet");
    let r = ratchet_export::export_parquet(&mut s, &out).expect("export");
    assert_eq!((r.scores, r.events), (64, 65));
    let view = s
        .verified(&VerifyOptions::default().keep_all_events())
        .expect("verifies");
    let all_scores = ratchet_export::scores_batch(&view).expect("scores");
    let score_files: Vec<_> = r
        .files
        .iter()
        .filter(|f| f.to_string_lossy().contains("/scores/"))
        .collect();
    assert_eq!(score_files.len(), 3, "one partition per commit");
    let mut rows = 0;
    for f in &score_files {
        let b = read_parquet(f);
        assert_eq!(b.schema(), all_scores.schema(), "the batch's own schema");
        let commit_dir = f
            .parent()
            .and_then(|p| p.file_name())
            .expect("dir")
            .to_string_lossy()
            .to_string();
        let commits = column::<StringArray>(&b, "commit");
        assert!(
            commits
                .iter()
                .all(|c| c.is_some_and(|c| commit_dir == format!("commit={c}")))
        );
        // Each row is the store's row of that seq, null latencies included.
        let seqs = column::<UInt64Array>(&b, "seq");
        let all_seqs = column::<UInt64Array>(&all_scores, "seq");
        for i in 0..b.num_rows() {
            let at = all_seqs
                .iter()
                .position(|s| s == Some(seqs.value(i)))
                .expect("a stored seq");
            for name in ["value", "latency_ms", "cost"] {
                let (x, y) = (
                    column::<Float64Array>(&b, name),
                    column::<Float64Array>(&all_scores, name),
                );
                // The bits under a null slot are no value: compare options.
                let bits = |a: &Float64Array, k: usize| a.is_valid(k).then(|| a.value(k).to_bits());
                assert_eq!(bits(x, i), bits(y, at), "{name} of seq {}", seqs.value(i));
            }
            assert_eq!(
                column::<BooleanArray>(&b, "holdout").value(i),
                column::<BooleanArray>(&all_scores, "holdout").value(at)
            );
        }
        rows += b.num_rows();
    }
    assert_eq!(rows, 64);
    let none = r
        .files
        .iter()
        .find(|f| f.to_string_lossy().contains("events/commit=none"))
        .expect("the note's partition");
    let note = read_parquet(none);
    assert_eq!(note.num_rows(), 1);
    assert_eq!(column::<StringArray>(&note, "kind").value(0), "note");
    assert!(column::<StringArray>(&note, "commit").is_null(0));
    assert_eq!(
        column::<StringArray>(&note, "payload").value(0),
        r#"{"no":"commit"}"#
    );
    // Refuses to write into a non-empty directory.
    assert!(matches!(
        ratchet_export::export_parquet(&mut s, &out),
        Err(ratchet_export::Error::NotEmpty(_))
    ));
}

#[test]
fn a_tampered_trace_is_not_exported() {
    let (d, s) = store_with_data();
    drop(s);
    ratchet_testkit::attacker(&d.path().join("s"))
        .execute_batch("UPDATE events SET ts_ms = ts_ms + 1 WHERE seq = 3")
        .expect("edit");
    let mut s = Store::open(d.path().join("s"), StoreOptions::default()).expect("opens");
    let out = d.path().join("parquet");
    let e = ratchet_export::export_parquet(&mut s, &out).expect_err("tampered");
    assert!(
        matches!(e.trace_error(), Some(ratchet_trace::Error::Tampered { .. })),
        "{e}"
    );
    assert!(!out.exists(), "nothing written");
}
