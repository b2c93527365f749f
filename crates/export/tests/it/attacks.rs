//! Red team of the export: odd values, odd names and payloads, many
//! commits, scorer versions, merged cells, empty and events-only stores,
//! tampered and keyed stores, and targets that are not an empty directory.
//! Every export is read back with arrow-rs's Parquet reader and compared,
//! row by row, with the verified view (not with the batches the export
//! built), and every file under the target is accounted for.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use arrow_array::{
    Array, BooleanArray, Float64Array, Int64Array, RecordBatch, StringArray, UInt64Array,
};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use ratchet_export::{Error, ExportReport};
use ratchet_testkit::{attacker, commit, new_store, new_store_with, writer_key};
use ratchet_trace::{
    AsOf, CommitId, EventDraft, FaultKind, Ledger, MergeOptions, Score, ScorerRef, Store,
    StoreOptions, TestRun, Verified, VerifyOptions,
};

// ---- the reader's side ---------------------------------------------------

/// A score row as a reader compares it: floats by their bits.
#[derive(Debug, Clone, PartialEq, Eq)]
struct ScoreRec {
    seq: u64,
    commit: String,
    task: String,
    scorer: String,
    version: String,
    value: u64,
    cost: Option<u64>,
    latency: Option<u64>,
    holdout: bool,
}

/// An event row as a reader compares it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct EventRec {
    seq: u64,
    id: String,
    ts_ms: i64,
    cell: String,
    session: String,
    kind: String,
    commit: Option<String>,
    payload: String,
    hash: String,
}

fn full_view(store: &Store) -> Verified {
    store
        .verified(&VerifyOptions::default().keep_all_events())
        .expect("the store verifies")
}

/// What the store holds, from the verified view itself.
fn expected_scores(view: &Verified) -> BTreeMap<u64, ScoreRec> {
    let mut out = BTreeMap::new();
    view.each_score(0, &mut |r| {
        let rec = ScoreRec {
            seq: r.seq,
            commit: r.commit.to_string(),
            task: r.task.to_string(),
            scorer: r.scorer.to_string(),
            version: r.scorer_version.to_string(),
            value: r.value.to_bits(),
            cost: r.cost.map(f64::to_bits),
            latency: r.latency_ms.map(f64::to_bits),
            holdout: r.holdout,
        };
        assert!(out.insert(r.seq, rec).is_none(), "one score per seq");
    });
    out
}

fn expected_events(view: &Verified) -> BTreeMap<u64, EventRec> {
    view.events()
        .iter()
        .map(|e| {
            let rec = EventRec {
                seq: e.seq,
                id: e.id.to_string(),
                ts_ms: e.ts_ms,
                cell: e.cell.clone(),
                session: e.session.clone(),
                kind: e.kind.clone(),
                commit: e.commit.as_ref().map(|c| c.to_string()),
                payload: String::from_utf8(e.payload.clone()).expect("a UTF-8 payload"),
                hash: e.hash.to_hex().to_string(),
            };
            (e.seq, rec)
        })
        .collect()
}

fn read_parquet(path: &Path) -> RecordBatch {
    let file = std::fs::File::open(path).expect("open");
    let builder = ParquetRecordBatchReaderBuilder::try_new(file).expect("a Parquet file");
    let rows_in_footer = builder.metadata().file_metadata().num_rows();
    let schema = builder.schema().clone();
    let reader = builder.build().expect("reader");
    let batches: Vec<RecordBatch> = reader.map(|b| b.expect("batch")).collect();
    let b = arrow_select::concat::concat_batches(&schema, &batches).expect("concat");
    assert_eq!(b.num_rows() as i64, rows_in_footer, "{}", path.display());
    b
}

fn col<'a, T: 'static>(b: &'a RecordBatch, name: &str) -> &'a T {
    b.column_by_name(name)
        .unwrap_or_else(|| panic!("no column {name}"))
        .as_any()
        .downcast_ref::<T>()
        .unwrap_or_else(|| panic!("column {name} of another type"))
}

fn opt_str(a: &StringArray, i: usize) -> Option<String> {
    a.is_valid(i).then(|| a.value(i).to_string())
}

fn opt_bits(a: &Float64Array, i: usize) -> Option<u64> {
    a.is_valid(i).then(|| a.value(i).to_bits())
}

fn score_recs(b: &RecordBatch) -> Vec<ScoreRec> {
    let (seq, commit, task, scorer, version) = (
        col::<UInt64Array>(b, "seq"),
        col::<StringArray>(b, "commit"),
        col::<StringArray>(b, "task"),
        col::<StringArray>(b, "scorer"),
        col::<StringArray>(b, "scorer_version"),
    );
    let (value, cost, latency, holdout) = (
        col::<Float64Array>(b, "value"),
        col::<Float64Array>(b, "cost"),
        col::<Float64Array>(b, "latency_ms"),
        col::<BooleanArray>(b, "holdout"),
    );
    (0..b.num_rows())
        .map(|i| {
            assert!(
                value.is_valid(i) && holdout.is_valid(i) && commit.is_valid(i),
                "row {i}"
            );
            ScoreRec {
                seq: seq.value(i),
                commit: commit.value(i).to_string(),
                task: task.value(i).to_string(),
                scorer: scorer.value(i).to_string(),
                version: version.value(i).to_string(),
                value: value.value(i).to_bits(),
                cost: opt_bits(cost, i),
                latency: opt_bits(latency, i),
                holdout: holdout.value(i),
            }
        })
        .collect()
}

fn event_recs(b: &RecordBatch) -> Vec<EventRec> {
    let (seq, id, ts, cell, session) = (
        col::<UInt64Array>(b, "seq"),
        col::<StringArray>(b, "id"),
        col::<Int64Array>(b, "ts_ms"),
        col::<StringArray>(b, "cell"),
        col::<StringArray>(b, "session"),
    );
    let (kind, commit, payload, hash) = (
        col::<StringArray>(b, "kind"),
        col::<StringArray>(b, "commit"),
        col::<StringArray>(b, "payload"),
        col::<StringArray>(b, "hash"),
    );
    (0..b.num_rows())
        .map(|i| EventRec {
            seq: seq.value(i),
            id: id.value(i).to_string(),
            ts_ms: ts.value(i),
            cell: cell.value(i).to_string(),
            session: session.value(i).to_string(),
            kind: kind.value(i).to_string(),
            commit: opt_str(commit, i),
            payload: payload.value(i).to_string(),
            hash: hash.value(i).to_string(),
        })
        .collect()
}

/// Every file under `dir`, recursively.
fn files_under(dir: &Path) -> BTreeSet<PathBuf> {
    let mut out = BTreeSet::new();
    if !dir.exists() {
        return out;
    }
    for entry in std::fs::read_dir(dir).expect("read dir") {
        let p = entry.expect("entry").path();
        if p.is_dir() {
            out.extend(files_under(&p));
        } else {
            out.insert(p);
        }
    }
    out
}

/// What an export read back: score and event rows by seq.
struct ReadBack {
    scores: BTreeMap<u64, ScoreRec>,
    events: BTreeMap<u64, EventRec>,
    /// Partition key → rows, per table.
    score_parts: BTreeMap<String, usize>,
    event_parts: BTreeMap<String, usize>,
}

/// Reads every file under `out` and checks it against the store: the files
/// are the report's and only those, each in `<table>/commit=<key>/part-0.parquet`
/// holding only rows of that key (null commit as `none`), with the batches'
/// schema; every row is the view's row of its seq, none lost, none twice.
fn check_export(store: &Store, out: &Path, report: &ExportReport) -> ReadBack {
    let view = full_view(store);
    let want_scores = expected_scores(&view);
    let want_events = expected_events(&view);
    let score_schema = ratchet_export::scores_batch(&view)
        .expect("scores")
        .schema();
    let event_schema = ratchet_export::events_batch(view.events())
        .expect("events")
        .schema();

    let on_disk = files_under(out);
    let reported: BTreeSet<PathBuf> = report.files.iter().cloned().collect();
    assert_eq!(reported.len(), report.files.len(), "a file reported twice");
    assert_eq!(
        on_disk, reported,
        "the files written are the files reported"
    );

    let mut back = ReadBack {
        scores: BTreeMap::new(),
        events: BTreeMap::new(),
        score_parts: BTreeMap::new(),
        event_parts: BTreeMap::new(),
    };
    for f in &on_disk {
        let rel = f.strip_prefix(out).expect("under out");
        let parts: Vec<String> = rel
            .components()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect();
        assert_eq!(parts.len(), 3, "{}", rel.display());
        assert_eq!(parts[2], "part-0.parquet", "{}", rel.display());
        let key = parts[1]
            .strip_prefix("commit=")
            .unwrap_or_else(|| panic!("a hive folder: {}", rel.display()))
            .to_string();
        let b = read_parquet(f);
        assert!(b.num_rows() > 0, "no empty partition: {}", rel.display());
        match parts[0].as_str() {
            "scores" => {
                assert_eq!(b.schema(), score_schema, "{}", rel.display());
                for r in score_recs(&b) {
                    assert_eq!(r.commit, key, "seq {} in {}", r.seq, rel.display());
                    let seq = r.seq;
                    assert!(back.scores.insert(seq, r).is_none(), "seq {seq} twice");
                }
                assert!(back.score_parts.insert(key, b.num_rows()).is_none());
            }
            "events" => {
                assert_eq!(b.schema(), event_schema, "{}", rel.display());
                let recs = event_recs(&b);
                assert!(
                    recs.windows(2).all(|w| w[0].seq < w[1].seq),
                    "a partition keeps seq order: {}",
                    rel.display()
                );
                for r in recs {
                    let want_key = r.commit.clone().unwrap_or_else(|| "none".to_string());
                    assert_eq!(want_key, key, "seq {} in {}", r.seq, rel.display());
                    let seq = r.seq;
                    assert!(back.events.insert(seq, r).is_none(), "seq {seq} twice");
                }
                assert!(back.event_parts.insert(key, b.num_rows()).is_none());
            }
            other => panic!("a table no one asked for: {other}"),
        }
    }
    assert_eq!(back.scores, want_scores, "the scores, row by row");
    assert_eq!(back.events, want_events, "the events, row by row");
    assert_eq!(report.scores, want_scores.len());
    assert_eq!(report.events, want_events.len());
    // Every event of the trace is in the events table, score events too.
    assert_eq!(want_events.len() as u64, view.head().size);
    back
}

fn export_new(store: &mut Store, base: &Path) -> (PathBuf, ExportReport, ReadBack) {
    let out = base.join("parquet");
    let report = ratchet_export::export_parquet(store, &out).expect("export");
    let back = check_export(store, &out, &report);
    (out, report, back)
}

/// The summary equals the trace's own statistics to the bit, row for row,
/// and has a row for each commit × scorer × version with scores, no other.
fn check_summary(view: &Verified) -> ratchet_export::Summary {
    let summary = ratchet_export::summary(view);
    let mut groups: BTreeMap<(String, String, String), Vec<f64>> = BTreeMap::new();
    view.each_score(0, &mut |r| {
        groups
            .entry((
                r.commit.to_string(),
                r.scorer.to_string(),
                r.scorer_version.to_string(),
            ))
            .or_default()
            .push(r.value);
    });
    let keys: Vec<_> = summary
        .rows
        .iter()
        .map(|r| (r.commit.clone(), r.scorer.clone(), r.scorer_version.clone()))
        .collect();
    assert_eq!(
        keys,
        groups.keys().cloned().collect::<Vec<_>>(),
        "one row per commit × scorer × version, sorted"
    );
    let bits = |x: Option<f64>| x.map(f64::to_bits);
    for row in &summary.rows {
        let c = CommitId::parse(&row.commit).expect("commit");
        let s = view
            .commit_stats_for(
                &c,
                ScorerRef::at_version(&row.scorer, &row.scorer_version),
                AsOf::Head,
            )
            .expect("stats");
        assert_eq!(row.n, s.n, "{row:?}");
        assert_eq!(row.mean.to_bits(), s.mean.to_bits(), "{row:?}");
        assert_eq!(bits(row.sd), bits(s.variance.map(f64::sqrt)), "{row:?}");
        assert_eq!(row.min.to_bits(), s.min.to_bits(), "{row:?}");
        assert_eq!(row.max.to_bits(), s.max.to_bits(), "{row:?}");
        let values = &groups[&(
            row.commit.clone(),
            row.scorer.clone(),
            row.scorer_version.clone(),
        )];
        assert_eq!(row.n, values.len() as u64, "{row:?}");
    }
    let text = summary.to_string();
    assert_eq!(
        text.lines().count(),
        summary.rows.len() + 2,
        "a header, a line per row, a count: {text}"
    );
    assert!(
        text.ends_with(&format!("({} row(s))", summary.rows.len())),
        "{text}"
    );
    summary
}

fn invalid_field(r: ratchet_trace::Result<impl std::fmt::Debug>) -> &'static str {
    match r {
        Err(ratchet_trace::Error::InvalidInput { field, .. }) => field,
        other => panic!("expected InvalidInput, got {other:?}"),
    }
}

// ---- values ----------------------------------------------------------------

#[test]
fn non_finite_values_are_refused_and_odd_finite_ones_read_back_bit_for_bit() {
    let (d, mut s) = new_store();
    let c = commit(1);
    // What the store even accepts: no NaN, no infinity, no negative cost.
    for v in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY, -f64::NAN] {
        let sc = Score::new(c.clone(), "t", "acc", v);
        assert_eq!(invalid_field(s.record_score(&sc, "eval")), "score.value");
        let mut sc = Score::new(c.clone(), "t", "acc", 1.0);
        sc.cost = Some(v);
        assert_eq!(invalid_field(s.record_score(&sc, "eval")), "score.cost");
        let mut sc = Score::new(c.clone(), "t", "acc", 1.0);
        sc.latency_ms = Some(v);
        assert_eq!(
            invalid_field(s.record_score(&sc, "eval")),
            "score.latency_ms"
        );
    }
    let mut sc = Score::new(c.clone(), "t", "acc", 1.0);
    sc.cost = Some(-1.0);
    assert_eq!(invalid_field(s.record_score(&sc, "eval")), "score.cost");
    assert_eq!(s.head().expect("head").size, 0, "nothing refused was kept");

    // Odd finite values, each alone under its own commit (so each summary
    // row is that value), and all together under one more.
    let odd = [
        -0.0,
        0.0,
        5e-324,
        -5e-324,
        f64::MIN_POSITIVE,
        f64::MAX,
        f64::MIN,
        0.1 + 0.2,
        1e-300,
        -1e300,
        std::f64::consts::PI,
    ];
    let mut scores = Vec::new();
    for (i, &v) in odd.iter().enumerate() {
        let mut one = Score::new(commit(10 + i as u8), "t", "acc", v);
        one.cost = Some(if i % 2 == 0 { -0.0 } else { 5e-324 });
        one.latency_ms = (i % 3 == 0).then_some(f64::MAX);
        scores.push(one);
        let mut all = Score::new(commit(2), format!("t{i}"), "acc", v);
        all.holdout = i % 2 == 1;
        scores.push(all);
    }
    s.record_scores(&scores, "eval")
        .expect("finite values are kept");
    let (_out, report, back) = export_new(&mut s, d.path());
    assert_eq!(report.scores, 2 * odd.len());
    // The store's own reading of -0.0 is what readers see, whatever it is.
    let view = full_view(&s);
    let mut stored = BTreeMap::new();
    view.each_score(0, &mut |r| {
        stored.insert(r.seq, r.value.to_bits());
    });
    for (seq, r) in &back.scores {
        assert_eq!(r.value, stored[seq], "seq {seq}");
    }
    check_summary(&view);
}

// ---- names and payloads ---------------------------------------------------

#[test]
fn unicode_and_longest_names_and_huge_payloads_read_back_exactly() {
    let (d, mut s) = new_store_with(StoreOptions::default().max_inline_payload(8 * 1024 * 1024));
    let names = [
        "é".repeat(128),                  // 256 bytes, the limit
        "😀".repeat(64),                  // 256 bytes of 4-byte characters
        "שלום עולם".to_string(),          // right to left
        "e\u{301}\u{200d}👩‍👩‍👧".to_string(), // combining, joiners
        "\u{feff}bom".to_string(),
        r#"quote " backslash \ slash / commit=none"#.to_string(),
        "../../etc/passwd".to_string(),
        "a".repeat(256),
    ];
    let mut scores = Vec::new();
    for (i, n) in names.iter().enumerate() {
        let mut sc = Score::new(commit(1 + (i % 3) as u8), n.clone(), n.clone(), i as f64);
        sc.scorer_version = n.clone();
        scores.push(sc);
    }
    s.record_scores(&scores, &"ß".repeat(128))
        .expect("256-byte names");
    // One byte over the limit is refused by name.
    let long = Score::new(commit(1), "a".repeat(257), "acc", 1.0);
    assert_eq!(invalid_field(s.record_score(&long, "eval")), "score.task");

    // Payloads stored as given: spacing, escapes, exponents, big text.
    let big = format!(
        r#"{{"text": "{}", "n": 1}}"#,
        "漢字 and ascii \\u0000 \\ud83d\\ude00 ".repeat(100_000)
    );
    assert!(big.len() > 3 * 1024 * 1024);
    let payloads = [
        r#"  { "a" :  1.0e+2 ,"b":[ ] , "c" : "\u0000\ud83d\ude00\n\"" }  "#.to_string(),
        "null".to_string(),
        "[]".to_string(),
        "-0".to_string(),
        "\"ünïcödé\"".to_string(),
        big,
    ];
    for (i, p) in payloads.iter().enumerate() {
        let mut draft = EventDraft::raw("note.odd", p.clone()).session("会话");
        if i % 2 == 0 {
            draft = draft.commit(commit(9));
        }
        s.append(draft).expect("a JSON payload");
    }
    let (_out, _report, back) = export_new(&mut s, d.path());
    let exported: Vec<&str> = back
        .events
        .values()
        .filter(|e| e.kind == "note.odd")
        .map(|e| e.payload.as_str())
        .collect();
    let given: Vec<&str> = payloads.iter().map(String::as_str).collect();
    assert_eq!(exported, given, "payload text byte for byte");
    let tasks: BTreeSet<&str> = back.scores.values().map(|r| r.task.as_str()).collect();
    assert_eq!(tasks, names.iter().map(String::as_str).collect());
    check_summary(&full_view(&s));
}

// ---- many commits, versions --------------------------------------------

#[test]
fn many_commits_each_in_a_partition_of_its_own() {
    let (d, mut s) = new_store();
    let commits: Vec<CommitId> = (0..300u32)
        .map(|i| CommitId::parse(&format!("{i:08x}").repeat(5)).expect("id"))
        .collect();
    // Interleaved: commit i's rows are spread over the whole trace.
    let mut scores = Vec::new();
    for round in 0..3 {
        for (i, c) in commits.iter().enumerate() {
            let mut sc = Score::new(c.clone(), format!("t{round}"), "acc", (i * round) as f64);
            sc.latency_ms = (i % 2 == 0).then_some(i as f64);
            scores.push(sc);
        }
    }
    s.record_scores(&scores, "eval").expect("scores");
    for c in commits.iter().step_by(7) {
        s.record_test_run(
            &TestRun {
                commit: c.clone(),
                suite: "unit".into(),
                passed: 3,
                failed: 0,
                skipped: 0,
                duration_ms: 1.0,
                failures: Vec::new(),
            },
            "ci",
        )
        .expect("test run");
    }
    s.append(EventDraft::raw("note", "{}")).expect("note");
    let (_out, report, back) = export_new(&mut s, d.path());
    assert_eq!(report.scores, 900);
    assert_eq!(back.score_parts.len(), 300);
    assert!(back.score_parts.values().all(|&n| n == 3));
    assert_eq!(back.event_parts.len(), 301, "300 commits and none");
    assert_eq!(back.event_parts["none"], 1);
    check_summary(&full_view(&s));
}

#[test]
fn scorer_versions_are_never_pooled_and_equal_the_trace_fold() {
    let (d, mut s) = new_store();
    let mut scores = Vec::new();
    // Versions interleaved in the trace, one name being another scorer's
    // name, and a version that sorts before another by text, not number.
    for i in 0..40u32 {
        let version = ["1", "2", "10", "v1.0"][(i % 4) as usize];
        let mut sc = Score::new(commit(1 + (i / 4 % 2) as u8), format!("t{i}"), "acc", 0.0);
        sc.value = f64::from(i) * if version == "10" { 1000.0 } else { 0.01 };
        sc.scorer_version = version.into();
        sc.holdout = i % 5 == 0;
        scores.push(sc);
        let mut other = Score::new(commit(1), format!("t{i}"), "2", f64::from(i % 3));
        other.scorer_version = "acc".into();
        scores.push(other);
    }
    s.record_scores(&scores, "eval").expect("scores");
    let (_out, _report, _back) = export_new(&mut s, d.path());
    let view = full_view(&s);
    let summary = check_summary(&view);
    // 2 commits × 4 versions of acc, and one commit of scorer "2".
    assert_eq!(summary.rows.len(), 9);
    let v10 = summary
        .rows
        .iter()
        .filter(|r| r.scorer == "acc" && r.scorer_version == "10")
        .map(|r| r.max)
        .fold(f64::NEG_INFINITY, f64::max);
    let v1 = summary
        .rows
        .iter()
        .filter(|r| r.scorer == "acc" && r.scorer_version == "1")
        .map(|r| r.max)
        .fold(f64::NEG_INFINITY, f64::max);
    assert!(v10 > 1000.0 && v1 < 1.0, "versions apart: {v10} {v1}");
}

#[test]
fn commits_sharing_a_short_prefix_are_told_apart_in_the_table() {
    let (_d, mut s) = new_store();
    let a = CommitId::parse(&format!("0123456789ab{}", "0".repeat(28))).expect("a");
    let b = CommitId::parse(&format!("0123456789ab{}", "1".repeat(28))).expect("b");
    s.record_scores(
        &[
            Score::new(a.clone(), "t", "acc", 0.0),
            Score::new(b.clone(), "t", "acc", 1.0),
        ],
        "eval",
    )
    .expect("scores");
    let view = full_view(&s);
    let summary = check_summary(&view);
    let text = summary.to_string();
    let labels: BTreeSet<&str> = text
        .lines()
        .skip(1)
        .take(summary.rows.len())
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    assert_eq!(labels.len(), 2, "two commits, two names: {text}");
    for (label, c) in labels.iter().zip([&a, &b]) {
        assert!(c.as_str().starts_with(label), "{label} names {c}: {text}");
    }

    // A SHA-256 commit whose first 40 digits are a SHA-1 commit: two
    // partitions, two names.
    let (d, mut s) = new_store();
    let sha1 = CommitId::parse(&"ab".repeat(20)).expect("sha1");
    let sha256 = CommitId::parse(&"ab".repeat(32)).expect("sha256");
    s.record_scores(
        &[
            Score::new(sha1.clone(), "t", "acc", 0.0),
            Score::new(sha256.clone(), "t", "acc", 1.0),
        ],
        "eval",
    )
    .expect("scores");
    let (_out, _report, back) = export_new(&mut s, d.path());
    assert_eq!(
        back.score_parts.keys().cloned().collect::<Vec<_>>(),
        vec![sha1.to_string(), sha256.to_string()]
    );
    let summary = check_summary(&full_view(&s));
    let text = summary.to_string();
    let labels: Vec<&str> = text
        .lines()
        .skip(1)
        .take(2)
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    assert_eq!(labels.len(), 2, "{text}");
    assert_ne!(labels[0], labels[1], "{text}");
}

// ---- merged cells ---------------------------------------------------------

#[test]
fn merged_cells_are_exported_whole_under_their_own_cell() {
    let (d, mut home) = new_store();
    let (_c1, mut cell1) = new_store();
    let (_c2, mut cell2) = new_store_with(StoreOptions::default().writer_key(writer_key()));
    home.record_scores(&[Score::new(commit(1), "t0", "acc", 0.5)], "home")
        .expect("home");
    for (k, cell) in [&mut cell1, &mut cell2].into_iter().enumerate() {
        let scores: Vec<Score> = (0..5)
            .map(|t| {
                let mut sc = Score::new(commit(1 + (t % 2) as u8), format!("t{t}"), "acc", 0.1);
                sc.value = f64::from(t) + k as f64;
                sc.scorer_version = format!("{}", k + 1);
                sc
            })
            .collect();
        cell.record_scores(&scores, "cell").expect("cell scores");
        cell.append(EventDraft::raw("note", r#"{"from":"cell"}"#))
            .expect("cell note");
    }
    home.merge_cell(cell1.dir(), &MergeOptions::default())
        .expect("merge cell 1");
    home.merge_cell(cell2.dir(), &MergeOptions::default().cell_key(writer_key()))
        .expect("merge keyed cell 2");
    // Merging again ingests nothing: no row may be exported twice.
    home.merge_cell(cell1.dir(), &MergeOptions::default())
        .expect("merge again");
    let (_out, report, back) = export_new(&mut home, d.path());
    assert_eq!(report.scores, 11);
    for cell in [&cell1, &cell2] {
        let from_cell = back.events.values().filter(|e| e.cell == cell.id()).count();
        assert_eq!(from_cell, 6, "every event of cell {}", cell.id());
    }
    let own = back.events.values().filter(|e| e.cell == home.id()).count();
    assert_eq!(own + 12, report.events, "the rest are home's own");
    let view = full_view(&home);
    let summary = check_summary(&view);
    assert!(summary.rows.iter().any(|r| r.scorer_version == "2"));
}

// ---- empty and events-only stores -----------------------------------------

#[test]
fn a_store_without_scores_exports_its_events_and_no_scores() {
    // A fresh store: whatever it holds, the export holds.
    let (d, mut fresh) = new_store();
    let (out, report, back) = export_new(&mut fresh, d.path());
    assert_eq!(report.scores, 0);
    assert!(back.scores.is_empty() && !out.join("scores").exists());
    let text = check_summary(&full_view(&fresh)).to_string();
    assert!(
        text.starts_with("commit") && text.ends_with("(0 row(s))"),
        "{text}"
    );

    // Events only: notes with and without a commit, test runs.
    let (d, mut s) = new_store();
    for i in 0..5u8 {
        s.append(EventDraft::raw("note", format!(r#"{{"i":{i}}}"#)).commit(commit(i % 2)))
            .expect("note");
        s.append(EventDraft::raw("obs", "{}").session("s"))
            .expect("obs");
    }
    s.record_test_run(
        &TestRun {
            commit: commit(7),
            suite: "unit".into(),
            passed: 1,
            failed: 1,
            skipped: 0,
            duration_ms: 0.0,
            failures: vec!["ünit::fails".into()],
        },
        "ci",
    )
    .expect("run");
    let (out, report, back) = export_new(&mut s, d.path());
    assert_eq!((report.scores, report.events), (0, 11));
    assert!(!out.join("scores").exists());
    assert_eq!(
        back.event_parts.keys().cloned().collect::<Vec<_>>(),
        vec![
            commit(0).to_string(),
            commit(1).to_string(),
            commit(7).to_string(),
            "none".to_string()
        ]
    );
    assert_eq!(ratchet_export::summary(&full_view(&s)).rows.len(), 0);
}

// ---- tampered and keyed stores --------------------------------------------

fn filled(options: StoreOptions) -> (tempfile::TempDir, PathBuf) {
    let (d, mut s) = new_store_with(options);
    let scores: Vec<Score> = (0..6)
        .map(|t| {
            Score::new(
                commit(1 + (t % 2) as u8),
                format!("t{t}"),
                "acc",
                f64::from(t),
            )
        })
        .collect();
    s.record_scores(&scores, "eval").expect("scores");
    s.append(EventDraft::raw("note", r#"{"x":1}"#))
        .expect("note");
    s.record_scores(&[Score::new(commit(3), "t9", "acc", 9.0)], "eval")
        .expect("more");
    let dir = s.dir().to_path_buf();
    drop(s);
    (d, dir)
}

/// Exports `store` into a target that does not exist and into one that is
/// an empty directory: both refuse with the trace's error, and neither
/// target holds anything afterwards.
fn refuses_without_writing(store: &mut Store, base: &Path) -> Vec<ratchet_trace::Error> {
    refuses_any(store, base)
        .into_iter()
        .map(|e| match e {
            Error::Trace(t) => t,
            other => panic!("not a trace error: {other:?}"),
        })
        .collect()
}

/// [`refuses_without_writing`], whatever the error.
fn refuses_any(store: &mut Store, base: &Path) -> Vec<Error> {
    std::fs::create_dir_all(base).expect("base");
    let missing = base.join("missing");
    let empty = base.join("empty");
    std::fs::create_dir(&empty).expect("empty dir");
    let mut errors = Vec::new();
    for out in [&missing, &empty] {
        errors.push(ratchet_export::export_parquet(store, out).expect_err("refused"));
    }
    assert!(!missing.exists(), "nothing written");
    assert!(files_under(&empty).is_empty(), "nothing written");
    assert_eq!(
        std::fs::read_dir(&empty).expect("read").count(),
        0,
        "no directory either"
    );
    errors
}

#[test]
fn tampered_traces_export_nothing() {
    type Edit = fn(&Path);
    let edits: [(&str, Edit); 4] = [
        // A careful attacker: the projection row and its kept statistics
        // agree with each other, not with the event.
        ("score row and its statistics", |dir| {
            let a = attacker(dir);
            a.execute_batch("UPDATE scores SET value = 100.0 WHERE seq = 2")
                .expect("edit");
            ratchet_testkit::refold_commit_stats(&a);
        }),
        ("payload edited in place", |dir| {
            attacker(dir)
                .execute_batch(
                    "UPDATE events SET payload = CAST('{\"x\":2}' AS BLOB) WHERE kind = 'note'",
                )
                .expect("edit");
        }),
        ("an event deleted", |dir| {
            let a = attacker(dir);
            a.execute_batch("DELETE FROM scores WHERE seq = 3; DELETE FROM events WHERE seq = 3")
                .expect("edit");
            ratchet_testkit::refold_commit_stats(&a);
        }),
        ("the last score re-pointed to another commit", |dir| {
            let a = attacker(dir);
            a.execute_batch(&format!(
                "UPDATE scores SET commit_id = '{}' WHERE seq = (SELECT MAX(seq) FROM scores)",
                commit(1)
            ))
            .expect("edit");
            ratchet_testkit::refold_commit_stats(&a);
        }),
    ];
    for (what, edit) in edits {
        let (d, dir) = filled(StoreOptions::default());
        edit(&dir);
        let mut s = Store::open(&dir, StoreOptions::default()).expect("opens");
        for e in refuses_without_writing(&mut s, d.path()) {
            assert!(
                matches!(e, ratchet_trace::Error::Tampered { .. }),
                "{what}: {e}"
            );
        }
    }

    // A keyed store whose plain chain the attacker re-linked after editing
    // a payload: the MACs give it away.
    let (d, dir) = filled(StoreOptions::default().writer_key(writer_key()));
    let id = ratchet_testkit::reopen(&dir).id().to_string();
    {
        let a = attacker(&dir);
        a.execute_batch(
            "UPDATE events SET payload = CAST('{\"x\":2}' AS BLOB) WHERE kind = 'note'",
        )
        .expect("edit");
        ratchet_testkit::recompute_chain(&a, &id, 1);
    }
    let mut s = Store::open(&dir, StoreOptions::default().writer_key(writer_key())).expect("opens");
    for e in refuses_without_writing(&mut s, d.path()) {
        match e {
            ratchet_trace::Error::Tampered { fault } => assert!(
                matches!(fault.kind, FaultKind::MacMismatch | FaultKind::MacMissing),
                "{fault:?}"
            ),
            other => panic!("not tampered: {other}"),
        }
    }
}

#[test]
fn a_keyed_store_opened_without_its_key_exports_nothing() {
    let (d, dir) = filled(StoreOptions::default().writer_key(writer_key()));
    let mut plain = Store::open(&dir, StoreOptions::default()).expect("opens");
    for e in refuses_without_writing(&mut plain, d.path()) {
        assert!(
            matches!(e, ratchet_trace::Error::MacsUnchecked { .. }),
            "{e}"
        );
    }
    drop(plain);
    // The wrong key: every MAC fails, nothing is written.
    let wrong = ratchet_trace::WriterKey::from_secret(&[0x11; 32]).expect("key");
    let mut wrong = Store::open(&dir, StoreOptions::default().writer_key(wrong)).expect("opens");
    for e in refuses_without_writing(&mut wrong, &d.path().join("wrong")) {
        match e {
            ratchet_trace::Error::Tampered { fault } => {
                assert!(matches!(fault.kind, FaultKind::MacMismatch), "{fault:?}")
            }
            other => panic!("not tampered: {other}"),
        }
    }
    drop(wrong);
    let mut ro = Store::open_read_only(&dir, StoreOptions::default()).expect("opens read-only");
    let out = d.path().join("ro");
    let e = ratchet_export::export_parquet(&mut ro, &out).expect_err("refused");
    assert!(
        matches!(
            e.trace_error(),
            Some(ratchet_trace::Error::MacsUnchecked { .. })
        ),
        "{e}"
    );
    assert!(!out.exists());
    drop(ro);
    // With its key, the same store exports whole.
    let mut keyed =
        Store::open(&dir, StoreOptions::default().writer_key(writer_key())).expect("opens");
    let (_out, report, _back) = export_new(&mut keyed, d.path());
    assert_eq!(report.scores, 7);
}

// ---- targets ----------------------------------------------------------------

fn listing(dir: &Path) -> BTreeSet<PathBuf> {
    std::fs::read_dir(dir)
        .expect("read")
        .map(|e| e.expect("entry").path())
        .collect()
}

#[test]
fn a_target_that_is_not_a_new_or_empty_directory_is_left_as_it_was() {
    let (d, dir) = filled(StoreOptions::default());
    let mut s = Store::open(&dir, StoreOptions::default()).expect("opens");
    let base = d.path().join("targets");
    std::fs::create_dir(&base).expect("base");

    // A file, and a path under a file.
    let file = base.join("a-file");
    std::fs::write(&file, b"precious").expect("file");
    for out in [file.clone(), file.join("sub")] {
        let before = listing(&base);
        let e = ratchet_export::export_parquet(&mut s, &out).expect_err("a file");
        assert!(matches!(e, Error::Io { .. }), "{}: {e:?}", out.display());
        assert_eq!(listing(&base), before, "nothing beside it");
        assert_eq!(std::fs::read(&file).expect("read"), b"precious");
    }

    // Directories holding only a hidden file, or an empty directory.
    let hidden = base.join("hidden");
    std::fs::create_dir(&hidden).expect("dir");
    std::fs::write(hidden.join(".keep"), b"").expect("keep");
    let nested = base.join("nested");
    std::fs::create_dir_all(nested.join("scores")).expect("dir");
    for out in [&hidden, &nested] {
        let before = files_under(out);
        let dirs_before = listing(out);
        let e = ratchet_export::export_parquet(&mut s, out).expect_err("not empty");
        assert!(matches!(e, Error::NotEmpty(ref p) if p == out), "{e:?}");
        assert_eq!(files_under(out), before);
        assert_eq!(listing(out), dirs_before);
    }
    assert!(listing(&nested.join("scores")).is_empty(), "nothing inside");

    #[cfg(unix)]
    {
        // A link to a non-empty directory is that directory; a dangling
        // link is no directory to write into.
        let link = base.join("link");
        std::os::unix::fs::symlink(&hidden, &link).expect("symlink");
        let e = ratchet_export::export_parquet(&mut s, &link).expect_err("not empty");
        assert!(matches!(e, Error::NotEmpty(_)), "{e:?}");
        let dangling = base.join("dangling");
        std::os::unix::fs::symlink(base.join("nowhere"), &dangling).expect("symlink");
        let e = ratchet_export::export_parquet(&mut s, &dangling).expect_err("dangling");
        assert!(matches!(e, Error::Io { .. }), "{e:?}");
        assert!(
            !base.join("nowhere").exists(),
            "not created through the link"
        );
        assert_eq!(files_under(&hidden).len(), 1);
    }
}

/// The empty path names the current directory (the crate's, under cargo):
/// not empty, so refused — never a way to write into it past the check.
#[test]
fn the_empty_path_is_the_current_directory_and_is_refused() {
    let (_d, dir) = filled(StoreOptions::default());
    let mut s = Store::open(&dir, StoreOptions::default()).expect("opens");
    let cwd = std::env::current_dir().expect("cwd");
    let before = listing(&cwd);
    assert!(!before.is_empty(), "the crate's directory");
    let r = ratchet_export::export_parquet(&mut s, Path::new(""));
    // Undo whatever a broken export wrote before judging it.
    for stray in listing(&cwd).difference(&before) {
        std::fs::remove_dir_all(stray).expect("remove a stray");
    }
    let e = r.expect_err("the current directory is not empty");
    assert!(matches!(e, Error::NotEmpty(_)), "{e:?}");
}

/// The child of the unwritable-target test: runs only when the parent sets
/// [`UNWRITABLE_TARGET`] (to the target; its store is in the directory
/// beside it, which the child may write).
const UNWRITABLE_TARGET: &str = "RATCHET_EXPORT_TEST_UNWRITABLE_TARGET";

#[test]
fn unwritable_target_child_entry() {
    let Some(target) = std::env::var_os(UNWRITABLE_TARGET) else {
        return;
    };
    let target = PathBuf::from(target);
    let work = target.parent().expect("parent").join("child-work");
    let mut s = Store::create(work.join("store"), StoreOptions::default()).expect("create");
    s.record_scores(&[Score::new(commit(1), "t", "acc", 1.0)], "eval")
        .expect("score");
    for out in [target.clone(), target.join("deeper")] {
        let e = ratchet_export::export_parquet(&mut s, &out).expect_err("unwritable");
        assert!(matches!(e, Error::Io { .. }), "{e:?}");
    }
    println!("UNWRITABLE-OK");
}

/// An empty directory its user may not write: an I/O error, and it stays
/// empty. Root ignores file modes, so as root the child (this test binary,
/// copied) runs as `nobody` (setpriv, util-linux).
#[cfg(unix)]
#[test]
fn an_unwritable_target_directory_is_an_io_error_and_stays_empty() {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    use std::process::Command;
    let mode = |p: &Path, m: u32| {
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(m)).expect("chmod");
    };
    let root = tempfile::tempdir().expect("tempdir");
    mode(root.path(), 0o755);
    let probe = root.path().join("probe");
    std::fs::write(&probe, b"").expect("probe");
    let as_root = std::fs::metadata(&probe).expect("meta").uid() == 0;
    let exe = root.path().join("child");
    std::fs::copy(std::env::current_exe().expect("test binary"), &exe).expect("copy");
    mode(&exe, 0o755);
    let work = root.path().join("child-work");
    std::fs::create_dir(&work).expect("work");
    mode(&work, 0o777);
    let target = root.path().join("target");
    std::fs::create_dir(&target).expect("target");
    mode(&target, 0o555);

    let args = [
        "attacks::unwritable_target_child_entry",
        "--exact",
        "--nocapture",
        "--test-threads=1",
    ];
    let mut child = if as_root {
        let mut c = Command::new("setpriv");
        c.args(["--reuid=65534", "--regid=65534", "--clear-groups"])
            .arg(&exe)
            .args(args);
        c
    } else {
        let mut c = Command::new(&exe);
        c.args(args);
        c
    };
    let out = child
        .env(UNWRITABLE_TARGET, &target)
        .env("TMPDIR", &work)
        .output()
        .expect("run the child (as root this needs setpriv from util-linux)");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains("UNWRITABLE-OK"),
        "child failed: {stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    mode(&target, 0o755);
    assert!(listing(&target).is_empty(), "the target stays empty");
}

// ---- the Python binding's tables ------------------------------------------

/// `Store.scores()` is `scores_batch` of the warm ledger's view, and
/// `Store.events()` is `events_batch` of the file's listing: on a sound
/// trace both are the batches the export wrote, after every refresh.
#[test]
fn the_warm_tables_are_the_cold_export_batches() {
    let (_d, dir) = filled(StoreOptions::default());
    let store = Store::open(&dir, StoreOptions::default()).expect("opens");
    let mut ledger = Ledger::new(store, VerifyOptions::default()).expect("ledger");
    for round in 0..3u8 {
        let mut sc = Score::new(commit(round), "t", "acc", f64::from(round));
        sc.cost = Some(0.5);
        ledger
            .record_score(&sc, "eval")
            .expect("score through the ledger");
        ledger
            .append(EventDraft::raw("note", "{}").commit(commit(round)))
            .expect("note");
        ledger.refresh().expect("refresh");
        let warm = ratchet_export::scores_batch(ledger.view()).expect("warm");
        let cold_view = full_view(ledger.store());
        let cold = ratchet_export::scores_batch(&cold_view).expect("cold");
        assert_eq!(warm, cold, "round {round}");
        let listing: Vec<_> = ledger
            .store()
            .tail(0)
            .collect::<ratchet_trace::Result<Vec<_>>>()
            .expect("listing");
        assert_eq!(
            ratchet_export::events_batch(&listing).expect("listing batch"),
            ratchet_export::events_batch(cold_view.events()).expect("view batch"),
            "round {round}"
        );
    }
}

/// Bytes that are not UTF-8 in a payload: an unkeyed store whose plain
/// chain was re-linked after the edit verifies (a home refuses to merge it:
/// the trace's merge tests). The payload column is text: the export refuses
/// (naming the event) rather than replace the bytes, and writes nothing.
#[test]
fn a_payload_that_is_not_utf8_is_refused_not_rewritten() {
    let (c, cell_dir) = filled(StoreOptions::default());
    let cell_id = ratchet_testkit::reopen(&cell_dir).id().to_string();
    {
        let a = attacker(&cell_dir);
        a.execute_batch("UPDATE events SET payload = X'7B2261223A22FF227D' WHERE kind = 'note'")
            .expect("edit");
        ratchet_testkit::recompute_chain(&a, &cell_id, 1);
    }
    let (_h, mut home) = new_store_with(StoreOptions::default().writer_key(writer_key()));
    let e = home
        .merge_cell(&cell_dir, &MergeOptions::default())
        .expect_err("no home stores what no append would");
    assert!(
        matches!(e, ratchet_trace::Error::InvalidInput { field: "merge", .. }),
        "{e}"
    );
    let mut cell = ratchet_testkit::reopen(&cell_dir);
    let seq = full_view(&cell)
        .events()
        .iter()
        .find(|e| e.kind == "note")
        .map(|e| e.seq)
        .expect("the note");
    for e in refuses_any(&mut cell, &c.path().join("out")) {
        assert!(matches!(e, Error::NotText { seq: s } if s == seq), "{e:?}");
    }
    let view = full_view(&cell);
    let e = ratchet_export::events_batch(view.events()).expect_err("not text");
    assert!(matches!(e, Error::NotText { .. }), "{e:?}");
    // The scores are text the store parsed: they still make a batch.
    assert_eq!(
        ratchet_export::scores_batch(&view)
            .expect("scores")
            .num_rows(),
        7
    );
}

/// Figures of any finite size keep the table a terminal's width, and a
/// small value is not shown as zero.
#[test]
fn the_table_stays_readable_for_extreme_figures() {
    let (_d, mut s) = new_store();
    let mut scores = vec![
        Score::new(commit(1), "a", "acc", f64::MAX),
        Score::new(commit(1), "b", "acc", f64::MAX / 2.0),
        Score::new(commit(2), "a", "acc", f64::MIN),
        Score::new(commit(3), "a", "acc", 1e-7),
        Score::new(commit(3), "b", "acc", 3e-7),
        Score::new(commit(4), "a", "acc", 5e-324),
    ];
    scores.push(Score::new(commit(5), "a", "acc", 0.25));
    s.record_scores(&scores, "eval").expect("scores");
    let summary = check_summary(&full_view(&s));
    let text = summary.to_string();
    for line in text.lines() {
        assert!(line.chars().count() <= 120, "{} wide: {line}", line.len());
    }
    let small = text
        .lines()
        .find(|l| l.starts_with(&commit(3).as_str()[..12]))
        .expect("commit 3's row");
    assert!(
        !small.contains("0.0000 "),
        "2e-7 is not zero on a terminal: {small}"
    );
    let plain = text
        .lines()
        .find(|l| l.starts_with(&commit(5).as_str()[..12]))
        .expect("commit 5's row");
    assert!(plain.contains("0.2500"), "{plain}");
}
