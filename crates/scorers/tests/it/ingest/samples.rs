//! Every sample a benchmark tool gave is kept (issue 36): beside each
//! summary score a `samples` event with the run's every measurement, in
//! the same batch, under the same session, task, scorer and version. The
//! expected values are read off the real files here, independently of the
//! importers (`serde_json::Value`, by hand).

use std::path::{Path, PathBuf};

use ratchet_scorers::{
    Format, IngestReport, KIND_SAMPLES, Samples, ingest, ingest_ledger, read_reports,
};
use ratchet_trace::{Ledger, Score, Store, StoreOptions, VerifyOptions};
use serde_json::Value;

use super::real::{commit, options, real, store};

fn json(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).expect("read")).expect("json")
}

fn numbers(v: &Value) -> Vec<f64> {
    v.as_array()
        .expect("array")
        .iter()
        .map(|x| x.as_f64().expect("number"))
        .collect()
}

/// The same number, to the bit.
fn same(a: f64, b: f64) -> bool {
    a.to_bits() == b.to_bits()
}

/// One stored samples event: its session, and what it holds.
struct Stored {
    session: String,
    samples: Samples,
}

/// Ingests `paths` as `format` into `s`, and checks what every ingestion
/// of a benchmark must hold: each summary score has its samples beside it
/// (same commit, session, task, scorer and version, stored in the same
/// batch), and nothing else is a samples event.
fn ingested(s: &mut Store, format: Format, paths: &[PathBuf]) -> (IngestReport, Vec<Stored>) {
    let r = ingest(s, format, paths, &options()).expect("ingests");
    assert_eq!(r.samples, r.scores, "one samples event per summary score");
    let view = s.verified(&VerifyOptions::default()).expect("verifies");
    let batch: Vec<u64> = r.receipts.iter().map(|x| x.seq).collect();
    let stored: Vec<Stored> = view
        .events_of_kinds(&[KIND_SAMPLES])
        .into_iter()
        .filter(|e| batch.contains(&e.seq))
        .map(|e| {
            let samples = Samples::from_payload(&e.payload).expect("parses");
            assert_eq!(
                e.commit.as_ref(),
                Some(&samples.commit),
                "the event's commit"
            );
            Stored {
                session: e.session.clone(),
                samples,
            }
        })
        .collect();
    assert_eq!(stored.len(), r.samples);
    let scores: Vec<(u64, Score)> = view
        .scores()
        .into_iter()
        .filter(|(seq, _)| batch.contains(seq))
        .collect();
    assert_eq!(scores.len(), r.scores);
    let score_events = s
        .events_of_kinds(&[ratchet_trace::KIND_SCORE])
        .expect("reads");
    for (seq, score) in &scores {
        let beside: Vec<&Stored> = stored
            .iter()
            .filter(|x| {
                x.samples.benchmark == score.task
                    && x.samples.scorer == score.scorer
                    && x.samples.scorer_version == score.scorer_version
            })
            .collect();
        assert_eq!(beside.len(), 1, "{} {}", score.task, score.scorer);
        let x = beside[0];
        assert_eq!(x.samples.commit, commit());
        assert_eq!(x.samples.round, None, "a plain ingestion pairs no rounds");
        assert!(!x.samples.values.is_empty());
        let session = &score_events
            .iter()
            .find(|e| e.seq == *seq)
            .expect("score event")
            .session;
        assert_eq!(&x.session, session, "the score's session");
        assert_eq!(x.session, format.name());
    }
    (r, stored)
}

fn of<'a>(stored: &'a [Stored], task: &str, scorer: &str) -> &'a Samples {
    stored
        .iter()
        .map(|x| &x.samples)
        .find(|x| x.benchmark == task && x.scorer == scorer)
        .unwrap_or_else(|| panic!("no samples of {task:?} {scorer}"))
}

#[test]
fn hyperfine_keeps_every_run_s_wall_time() {
    for file in [
        "hyperfine/1brc-two-commands-3-runs.json",
        "hyperfine/bencher-sleep-two-commands.json",
    ] {
        let (_d, mut s) = store();
        let (r, stored) = ingested(&mut s, Format::Hyperfine, &[real(file)]);
        let doc = json(&real(file));
        let results = doc["results"].as_array().expect("results");
        assert_eq!(r.scores, results.len(), "{file}");
        for result in results {
            let command = result["command"].as_str().expect("command");
            let x = of(&stored, command, "hyperfine_s");
            assert_eq!(x.unit, "s");
            assert_eq!(
                x.values,
                numbers(&result["times"]),
                "{file}: the times exactly"
            );
        }
    }
}

#[test]
fn criterion_keeps_the_time_per_iteration_of_every_sample() {
    for (dir, benchmarks) in [
        (
            "criterion/gettingstarted-0.3/target/criterion",
            &["fib 20 - fast", "fib 20 - slow"][..],
        ),
        (
            "criterion/rdd-0.3.0-capitalized/target/criterion",
            &["hash_vs_btree_memoization/BTree/10"][..],
        ),
    ] {
        let (_d, mut s) = store();
        let (r, stored) = ingested(&mut s, Format::Criterion, &[real(dir)]);
        assert_eq!(r.scores, benchmarks.len());
        assert!(r.notes.is_empty(), "{:?}", r.notes);
        for id in benchmarks {
            let sample = json(&real(dir).join(id).join("new/sample.json"));
            // 0.3.4 on: {"iters": [...], "times": [...]}; 0.3.0: [[iters], [times]].
            let (iters, times) = match &sample {
                Value::Object(o) => (numbers(&o["iters"]), numbers(&o["times"])),
                _ => (numbers(&sample[0]), numbers(&sample[1])),
            };
            let expected: Vec<f64> = times.iter().zip(&iters).map(|(t, n)| t / n).collect();
            let x = of(&stored, id, "criterion_ns");
            assert_eq!(x.unit, "ns");
            assert_eq!(x.values.len(), times.len());
            assert_eq!(x.values, expected, "{id}: times[i] / iters[i]");
        }
    }
    // The 0.3.0 benchmark's samples, read off the file by hand.
    let (_d, mut s) = store();
    let (_, stored) = ingested(
        &mut s,
        Format::Criterion,
        &[real("criterion/rdd-0.3.0-capitalized/target/criterion")],
    );
    let x = of(
        &stored,
        "hash_vs_btree_memoization/BTree/10",
        "criterion_ns",
    );
    assert!(same(x.values[0], 107_040_224.0));
    assert!(same(x.values[9], 880_200_613.0 / 10.0));
}

#[test]
fn pytest_benchmark_keeps_every_round_and_says_when_the_file_has_none() {
    let file = real("pytest-benchmark/pytest-benchmark-5.3.1-sort-data.json");
    let (_d, mut s) = store();
    let (r, stored) = ingested(&mut s, Format::PytestBenchmark, std::slice::from_ref(&file));
    assert!(r.notes.is_empty(), "{:?}", r.notes);
    let doc = json(&file);
    for b in doc["benchmarks"].as_array().expect("benchmarks") {
        let data = numbers(&b["stats"]["data"]);
        assert_eq!(
            data.len() as u64,
            b["stats"]["rounds"].as_u64().expect("rounds")
        );
        let x = of(
            &stored,
            b["fullname"].as_str().expect("name"),
            "pytest_benchmark_s",
        );
        assert_eq!(x.unit, "s");
        assert_eq!(x.values, data, "stats.data exactly");
    }
    assert_eq!(
        of(&stored, "test_sort.py::test_sort_100", "pytest_benchmark_s")
            .values
            .len(),
        184
    );
    // 3.2.2, its data cut to 4 times and a string by its committer: the
    // four are not the run, so the mean stands alone, and a note says why.
    // 2.5.0's storage file has no data at all: the same.
    for (file, task, mean) in [
        (
            "pytest-benchmark/pytest-benchmark-3.2.2-fib-data-elided.json",
            "bench.py::test_fib_10",
            2.408868133322941e-05,
        ),
        (
            "pytest-benchmark/pytest-benchmark-2.5.0-storage-0030.json",
            "tests/test_normal.py::test_xfast_parametrized[0]",
            2.61205074138546e-07,
        ),
    ] {
        let (_d, mut s) = store();
        let (r, stored) = ingested(&mut s, Format::PytestBenchmark, &[real(file)]);
        assert_eq!(of(&stored, task, "pytest_benchmark_s").values, vec![mean]);
        assert!(
            r.notes.iter().any(|n| n.contains("stats.data")),
            "{:?}",
            r.notes
        );
    }
}

#[test]
fn google_benchmark_keeps_each_repetition_and_no_aggregate() {
    let file = real("google-benchmark/libbenchmark-1.7.1-repetitions-3.json");
    let (_d, mut s) = store();
    let (r, stored) = ingested(&mut s, Format::GoogleBenchmark, std::slice::from_ref(&file));
    // Two benchmarks, each real, CPU time and bytes per second.
    assert_eq!(r.scores, 6);
    let doc = json(&file);
    let rows = doc["benchmarks"].as_array().expect("benchmarks");
    for name in ["BM_StringCopy/64", "BM_StringCopy/4096"] {
        let repetitions: Vec<&Value> = rows
            .iter()
            .filter(|b| b["run_name"] == name && b["run_type"] == "iteration")
            .collect();
        assert_eq!(repetitions.len(), 3);
        let mean = rows
            .iter()
            .find(|b| b["run_name"] == name && b["aggregate_name"] == "mean")
            .expect("mean");
        for (scorer, field, unit) in [
            ("gbench_real_ns", "real_time", "ns"),
            ("gbench_cpu_ns", "cpu_time", "ns"),
            ("gbench_bytes_per_second", "bytes_per_second", "bytes/s"),
        ] {
            let x = of(&stored, name, scorer);
            assert_eq!(x.unit, unit);
            let expected: Vec<f64> = repetitions
                .iter()
                .map(|b| b[field].as_f64().expect("number"))
                .collect();
            assert_eq!(
                x.values, expected,
                "{name} {scorer}: the repetitions, in order"
            );
            // The summary is still the `mean` aggregate.
            let view = s.verified(&VerifyOptions::default()).expect("verifies");
            let score = view
                .scores()
                .into_iter()
                .map(|(_, s)| s)
                .find(|s| s.task == name && s.scorer == scorer)
                .expect("score");
            assert!(same(score.value, mean[field].as_f64().expect("mean")));
        }
    }
    // A run without repetitions: its one figure is its one sample.
    let (_d, mut s) = store();
    let file = real("google-benchmark/fib-two-benchmarks.json");
    let (_, stored) = ingested(&mut s, Format::GoogleBenchmark, &[file]);
    assert_eq!(
        of(&stored, "fib_10", "gbench_real_ns").values,
        vec![2.1498980114547953e+02]
    );
    assert_eq!(
        of(&stored, "fib_20", "gbench_cpu_ns").values,
        vec![2.736_490_320_427_236e4]
    );
}

#[test]
fn go_bench_keeps_every_count_line_in_one_event_per_benchmark_and_unit() {
    let file = real("go-bench/json-experiment-bench-time-count-mbps-benchmem.txt");
    let (_d, mut s) = store();
    let (r, stored) = ingested(&mut s, Format::GoBench, std::slice::from_ref(&file));
    // Every result line, by hand: (benchmark, ns/op, MB/s, B/op, allocs/op).
    let text = std::fs::read_to_string(&file).expect("read");
    let mut lines: Vec<(String, [f64; 4])> = Vec::new();
    for line in text.lines().filter(|l| l.starts_with("Benchmark")) {
        let f: Vec<&str> = line.split_whitespace().collect();
        let n = |i: usize| f[i].parse::<f64>().expect("number");
        lines.push((f[0].to_string(), [n(2), n(4), n(6), n(8)]));
    }
    let mut names: Vec<&str> = lines.iter().map(|(n, _)| n.as_str()).collect();
    names.dedup();
    assert_eq!(r.scores, names.len() * 4, "four units per benchmark");
    for name in names {
        let task = format!("github.com/33TU/json-experiment/bench.{name}");
        for (k, (scorer, unit)) in [
            ("go_ns_per_op", "ns"),
            ("go_mb_per_s", "MB/s"),
            ("go_bytes_per_op", "B/op"),
            ("go_allocs_per_op", "allocs/op"),
        ]
        .into_iter()
        .enumerate()
        {
            let expected: Vec<f64> = lines
                .iter()
                .filter(|(n, _)| n == name)
                .map(|(_, v)| v[k])
                .collect();
            let x = of(&stored, &task, scorer);
            assert_eq!(x.unit, unit);
            assert_eq!(x.values, expected, "{task} {scorer}: each -count line");
        }
    }
    let x = of(
        &stored,
        "github.com/33TU/json-experiment/bench.BenchmarkMarshalTime/marshal_append-32",
        "go_ns_per_op",
    );
    assert_eq!(x.values, vec![36.57, 36.53, 36.57, 36.55, 36.69]);
    // One line per benchmark: one sample.
    let (_d, mut s) = store();
    let file = real("go-bench/go-junit-report-022-bench-with-test-logs.txt");
    let (_, stored) = ingested(&mut s, Format::GoBench, &[file]);
    assert_eq!(
        of(&stored, "package/bench.BenchmarkOne-8", "go_ns_per_op").values,
        vec![0.2642]
    );
}

#[test]
fn bencher_metric_format_has_one_sample_per_metric() {
    let file = real("bmf/bencher-adapter-report_latency.json");
    let (_d, mut s) = store();
    let (r, stored) = ingested(&mut s, Format::Bmf, std::slice::from_ref(&file));
    let doc = json(&file);
    let benchmarks = doc.as_object().expect("object");
    assert_eq!(r.scores, benchmarks.len());
    for (name, measures) in benchmarks {
        let x = of(&stored, name, "latency");
        assert_eq!(x.unit, "ns");
        assert_eq!(
            x.values,
            vec![measures["latency"]["value"].as_f64().expect("value")]
        );
    }
}

#[test]
fn the_same_file_twice_stores_nothing_but_other_samples_are_other_evidence() {
    let (d, mut s) = store();
    let file = real("hyperfine/1brc-two-commands-3-runs.json");
    let (first, _) = ingested(&mut s, Format::Hyperfine, std::slice::from_ref(&file));
    let size = s.head().expect("head").size;
    let again = ingest(
        &mut s,
        Format::Hyperfine,
        std::slice::from_ref(&file),
        &options(),
    )
    .expect("again");
    // The first ingestion's marker, after its last event.
    assert_eq!(again.already_ingested_at, first.last_seq.map(|s| s + 1));
    assert_eq!((again.scores, again.samples), (0, 0));
    assert_eq!(s.head().expect("head").size, size, "nothing stored");
    // The same means from other runs (the times in another order): the
    // summaries are equal, the evidence is not.
    let mut doc = json(&file);
    for result in doc["results"].as_array_mut().expect("results") {
        result["times"].as_array_mut().expect("times").reverse();
    }
    let other = d.path().join("reordered.json");
    std::fs::write(&other, serde_json::to_vec(&doc).expect("json")).expect("write");
    let (r, stored) = ingested(&mut s, Format::Hyperfine, &[other]);
    assert_eq!(r.already_ingested_at, None);
    let x = of(
        &stored,
        "cargo run --release --bin 1brc measurements_1000000000.txt",
        "hyperfine_s",
    );
    assert!(same(x.values[0], 9.877873458520002));
}

#[test]
fn a_run_too_long_for_one_event_is_kept_whole_over_several_in_one_batch() {
    let (d, mut s) = store();
    // A hyperfine export of 10,000 runs (the shape `hyperfine --runs 10000`
    // writes; times made up here: what is tested is that none is lost).
    let times: Vec<f64> = (0..10_000)
        .map(|i| 0.001 + f64::from(i) * 1.234_567_89e-9)
        .collect();
    let mean = times.iter().sum::<f64>() / times.len() as f64;
    let file = d.path().join("long.json");
    let doc = serde_json::json!({"results": [{
        "command": "true", "mean": mean, "times": times, "exit_codes": vec![0; 10_000],
    }]});
    std::fs::write(&file, serde_json::to_vec(&doc).expect("json")).expect("write");
    let read =
        read_reports(Format::Hyperfine, std::slice::from_ref(&file), &options()).expect("reads");
    let r = ingest(&mut s, Format::Hyperfine, &[file], &options()).expect("ingests");
    assert_eq!(r.scores, 1);
    assert!(r.samples > 1, "{} events", r.samples);
    // The quota a server checks counts them: a declaration, a score, the samples.
    assert_eq!(read.events_at_most(), 2 + r.samples as u64);
    let view = s.verified(&VerifyOptions::default()).expect("verifies");
    let parts: Vec<Samples> = view
        .events_of_kinds(&[KIND_SAMPLES])
        .into_iter()
        .map(|e| Samples::from_payload(&e.payload).expect("parses"))
        .collect();
    assert_eq!(parts.len(), r.samples);
    assert!(parts.iter().all(|p| p.benchmark == "true" && p.unit == "s"));
    let joined: Vec<f64> = parts.into_iter().flat_map(|p| p.values).collect();
    assert_eq!(joined, times, "every time, in order");
}

#[test]
fn a_warm_ledger_keeps_the_samples_it_stores() {
    let (_d, s) = store();
    let mut ledger = Ledger::new(s, VerifyOptions::default()).expect("ledger");
    let file = real("hyperfine/1brc-two-commands-3-runs.json");
    let r = ingest_ledger(&mut ledger, Format::Hyperfine, &[file], &options()).expect("ingests");
    assert_eq!(r.samples, 2);
    let kept = ledger.view().events_of_kinds(&[KIND_SAMPLES]);
    assert_eq!(kept.len(), 2, "samples are kept whole in the warm view");
    let x = Samples::from_payload(&kept[1].payload).expect("parses");
    assert_eq!(
        x.values,
        vec![12.04923320852, 12.36225804252, 10.25172425152]
    );
}

/// The storage cost of a sample, for `benches/README.md`: `trace.db`'s
/// size (the store closed, so its write-ahead log is checkpointed into it)
/// after ingesting one hyperfine export of N runs, against one of 10 runs;
/// (size(N) − size(10)) / (N − 10) is the bytes one more sample costs.
/// `RATCHET_HYPERFINE_EXPORTS=a.json:b.json:…` measures real exports (the
/// first one the baseline); without it, exports of 10, 1,000 and 10,000
/// runs are made here with times of hyperfine's precision (nanoseconds in
/// seconds: `0.001182127`). Run with
/// `cargo test -p ratchet-scorers --test it storage_cost -- --ignored --nocapture`.
#[test]
#[ignore = "a measurement, not a check: prints the bytes per stored sample"]
fn storage_cost_per_sample() {
    let d = tempfile::tempdir().expect("tempdir");
    let files: Vec<PathBuf> = match std::env::var("RATCHET_HYPERFINE_EXPORTS") {
        Ok(list) => list.split(':').map(PathBuf::from).collect(),
        Err(_) => [10usize, 1_000, 10_000]
            .into_iter()
            .map(|n| {
                let mut x: u64 = 0x2545_f491_4f6c_dd1d;
                let times: Vec<f64> = (0..n)
                    .map(|_| {
                        x ^= x << 13;
                        x ^= x >> 7;
                        x ^= x << 17;
                        // 0.5–2.5 ms in whole nanoseconds, as hyperfine writes them.
                        (500_000 + x % 2_000_000) as f64 / 1e9
                    })
                    .collect();
                let mean = times.iter().sum::<f64>() / n as f64;
                let file = d.path().join(format!("runs-{n}.json"));
                let doc = serde_json::json!({"results": [{
                    "command": "true", "mean": mean, "times": times, "exit_codes": vec![0; n],
                }]});
                std::fs::write(&file, serde_json::to_vec(&doc).expect("json")).expect("write");
                file
            })
            .collect(),
    };
    let mut base: Option<(usize, u64)> = None;
    for (i, file) in files.iter().enumerate() {
        let dir = d.path().join(format!("store-{i}"));
        let mut s = Store::create(&dir, StoreOptions::default()).expect("store");
        let r = ingest(
            &mut s,
            Format::Hyperfine,
            std::slice::from_ref(file),
            &options(),
        )
        .expect("ingests");
        let view = s.verified(&VerifyOptions::default()).expect("verifies");
        let n: usize = view
            .events_of_kinds(&[KIND_SAMPLES])
            .into_iter()
            .map(|e| {
                Samples::from_payload(&e.payload)
                    .expect("parses")
                    .values
                    .len()
            })
            .sum();
        drop(view);
        drop(s);
        let wal = dir.join("trace.db-wal");
        assert!(
            std::fs::metadata(&wal).map_or(0, |m| m.len()) == 0,
            "the log is checkpointed on close"
        );
        let bytes = std::fs::metadata(dir.join("trace.db")).expect("db").len();
        match base {
            None => {
                println!("{n} samples in {} event(s): trace.db {bytes} B", r.samples);
                base = Some((n, bytes));
            }
            Some((n0, b0)) => println!(
                "{n} samples in {} event(s): trace.db {bytes} B, {:.1} B per sample more than {n0}",
                r.samples,
                (bytes - b0) as f64 / (n - n0) as f64
            ),
        }
    }
}
