//! Every number read right (issue 39): a timing effect of ~40 µs prints
//! with its significant digits in its unit, and the effect of a
//! lower-is-better scorer reads as candidate − baseline (negative: faster,
//! an improvement), in `gate`, `gate --json`, `calibrate` and the pull
//! request comment (`report --markdown`) — while the recorded verdict
//! keeps the gate's judged scale (positive = better), byte for byte.

use crate::common;

use common::{append, fresh_store, gate, in_store_ok, text};

const BASE: &str = "3333333333333333333333333333333333333333";
const CAND: &str = "4444444444444444444444444444444444444444";

/// Class `perf` on `latency_s`, lower is better, a gaussian test with a
/// gap of 10 µs.
const POLICY: &str = "[class.perf]\nscorer = \"latency_s\"\ndirection = \"lower\"\ntest = \"gaussian\"\nalpha = 0.05\nbeta = 0.1\ngap = 0.00001\nmax_n = 500\n";

/// 60 tasks timed at about 1 ms; the candidate about 40.7 µs faster.
fn timings() -> String {
    let mut out = String::new();
    for t in 0..60 {
        let base = 1e-3 + 2e-5 * ((t * 7 % 13) as f64 / 13.0);
        let cand = base - 4.07e-5 + 3e-6 * ((t as f64) * 1.3).sin();
        for (c, v) in [(BASE, base), (CAND, cand)] {
            out.push_str(&format!(
                "{{\"kind\":\"score\",\"commit\":\"{c}\",\"payload\":{{\"task\":\"t{t:03}\",\"scorer\":\"latency_s\",\"scorer_version\":\"1\",\"value\":{v}}}}}\n"
            ));
        }
    }
    out
}

#[test]
fn a_faster_candidate_reads_as_a_negative_difference_in_microseconds() {
    let (d, st) = fresh_store();
    let policy = d.path().join("policy.toml");
    std::fs::write(&policy, POLICY).expect("policy");
    let policy = policy.to_str().expect("utf8");
    append(d.path(), &st, &timings());
    in_store_ok(d.path(), &st, &["policy", "pin", policy]);

    let o = gate(d.path(), &st, BASE, CAND, "perf", &["--dry-run"]);
    let words = text(&o);
    assert!(words.starts_with("PROMOTE"), "{words}");
    assert!(!words.contains("0.0000"), "zeros for a timing:\n{words}");
    assert!(
        words.contains("candidate − baseline: -40.")
            && words.contains("two-sided 95 % interval [-4")
            && words.contains("(an improvement: lower is better)"),
        "{words}"
    );
    // The promote's own bound, said both ways for a lower-is-better timing.
    assert!(
        words.contains("promoted: improvement ≥ +")
            && words.contains(" µs, i.e. candidate − baseline ≤ -"),
        "{words}"
    );

    let o = gate(d.path(), &st, BASE, CAND, "perf", &["--dry-run", "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
    let shown = &v["effect_as_read"];
    assert_eq!(shown["unit"], "s", "{v}");
    assert_eq!(shown["reads_as"], "an improvement", "{v}");
    assert_eq!(shown["better"], "lower is better", "{v}");
    let value = shown["value"].as_f64().expect("value");
    assert!((-4.2e-5..-3.9e-5).contains(&value), "{v}");
    assert!(shown["low"].as_f64() <= Some(value) && Some(value) <= shown["high"].as_f64());
    assert!(shown["text"].as_str().expect("text").contains("µs"), "{v}");
    // The recorded verdict is the gate's, unchanged: judged on negated
    // times, its estimate is positive (better).
    let recorded = common::sequential_stage(&v);
    let estimate = recorded["details"]["effect"]["estimate"]
        .as_f64()
        .expect("estimate");
    assert!((value + estimate).abs() < 1e-12, "{recorded}");

    // The decision recorded, the pull-request comment reads it the same way.
    gate(d.path(), &st, BASE, CAND, "perf", &[]);
    let o = in_store_ok(d.path(), &st, &["report", "--markdown"]);
    let comment = text(&o);
    assert!(
        comment.contains("Effect, candidate − baseline: **-40.")
            && comment.contains(" µs** — an improvement: lower is better")
            && !comment.contains("0.0000"),
        "{comment}"
    );

    // Calibration's true effects in the scorer's unit, not +0.0000.
    let o = in_store_ok(
        d.path(),
        &st,
        &[
            "calibrate",
            "--class",
            "perf",
            "--sigma",
            "0.00002",
            "--runs",
            "50",
        ],
    );
    let table = text(&o);
    assert!(
        table.contains("mean shift +10 µs") && !table.contains("+0.0000"),
        "{table}"
    );
}

/// A pull request's comment is its candidate's verdict (issue 39 item 7):
/// `report --markdown --candidate` keeps it after a later decision about
/// another commit, `--class` narrows to a class.
#[test]
fn the_comment_of_a_candidate_stays_its_own_after_a_later_decision() {
    const WORSE: &str = "5555555555555555555555555555555555555555";
    let (d, st) = fresh_store();
    let policy = d.path().join("policy.toml");
    std::fs::write(&policy, POLICY).expect("policy");
    let policy = policy.to_str().expect("utf8");
    let mut lines = timings();
    for t in 0..60 {
        // Half a millisecond slower than the baseline: rejected.
        let v = 1.5e-3 + 1e-6 * (t % 5) as f64;
        lines.push_str(&format!(
            "{{\"kind\":\"score\",\"commit\":\"{WORSE}\",\"payload\":{{\"task\":\"t{t:03}\",\"scorer\":\"latency_s\",\"scorer_version\":\"1\",\"value\":{v}}}}}\n"
        ));
    }
    append(d.path(), &st, &lines);
    in_store_ok(d.path(), &st, &["policy", "pin", policy]);
    let o = gate(d.path(), &st, BASE, CAND, "perf", &[]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let o = gate(d.path(), &st, BASE, WORSE, "perf", &[]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));

    let latest = text(&in_store_ok(d.path(), &st, &["report", "--markdown"]));
    assert!(latest.contains("candidate ` 55555555 `"), "{latest}");
    let mine = text(&in_store_ok(
        d.path(),
        &st,
        &["report", "--markdown", "--candidate", CAND],
    ));
    assert!(
        mine.contains("candidate ` 44444444 `") && !mine.contains("55555555"),
        "{mine}"
    );
    assert!(mine.to_lowercase().contains("promote"), "{mine}");
    let none = text(&in_store_ok(
        d.path(),
        &st,
        &["report", "--markdown", "--class", "other"],
    ));
    assert!(
        none.contains("no decision recorded in this store for class ` other `"),
        "{none}"
    );
    let o = common::in_store(d.path(), &st, &["report", "--candidate", CAND]);
    assert_eq!(o.status.code(), Some(2), "--candidate is of --markdown");
}

/// An alarm's chart starts where the watch did (issue 39 item 7): a watch
/// started with `--from` is drawn after that seq, and its title says so,
/// not after an earlier deployment (here: none, which read as seq 0).
#[test]
fn an_alarm_chart_is_titled_with_the_seq_the_watch_started_after() {
    let (d, st) = fresh_store();
    let line = |i: usize, v: f64| {
        format!(
            "{{\"kind\":\"score\",\"commit\":\"{CAND}\",\"payload\":{{\"task\":\"live{i:04}\",\"scorer\":\"answer\",\"scorer_version\":\"1\",\"value\":{v}}}}}\n"
        )
    };
    // In control at 0.8 (a deterministic wobble of ±0.05), then a drop to 0.5.
    let before: String = (0..80)
        .map(|i| line(i, 0.8 + 0.05 * (i as f64 * 1.7).sin()))
        .collect();
    append(d.path(), &st, &before);
    let from = 80;
    let after: String = (80..200)
        .map(|i| line(i, 0.5 + 0.05 * (i as f64 * 1.7).sin()))
        .collect();
    append(d.path(), &st, &after);
    let o = common::in_store(
        d.path(),
        &st,
        &[
            "watch",
            "--commit",
            CAND,
            "--scorer",
            "answer",
            "--from",
            &from.to_string(),
            "--record",
        ],
    );
    assert_eq!(o.status.code(), Some(1), "an alarm: {}", text(&o));
    assert!(text(&o).contains("ALARM"), "{}", text(&o));
    let html = report_html(d.path(), &st);
    assert!(
        html.contains(&format!("answer under 44444444 watched after seq {from}")),
        "{}",
        html.lines()
            .filter(|l| l.contains("answer under"))
            .collect::<Vec<_>>()
            .join("\n")
    );
    // The drop lasts: the watch alarmed again after each restart. One
    // chart of the watch, the earlier alarms named under it.
    let alarms = text(&o).matches("ALARM").count();
    assert!(alarms > 2, "{}", text(&o));
    assert_eq!(
        html.matches("<figure class=cusum>").count(),
        1,
        "one chart per watch"
    );
    assert!(
        html.contains(&format!(
            "The same watch alarmed {} times before",
            alarms - 1
        )),
        "{}",
        html.lines()
            .filter(|l| l.contains("The same watch"))
            .collect::<Vec<_>>()
            .join("\n")
    );
}

/// pytest-benchmark scores ingested by `ratchet ingest` have a history in
/// the report, not "No benchmark samples" beside them (issue 39 item 7):
/// even a file saved without its data keeps each run's mean as its sample.
#[test]
fn pytest_benchmark_scores_have_a_benchmark_history_in_the_report() {
    let (d, st) = fresh_store();
    let real = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../scorers/tests/fixtures/real/pytest-benchmark");
    for (file, commit) in [
        ("pytest-benchmark-5.3.1-sort-data.json", BASE),
        ("pytest-benchmark-3.2.2-fib-data-elided.json", CAND),
    ] {
        let path = real.join(file);
        in_store_ok(
            d.path(),
            &st,
            &[
                "ingest",
                "pytest-benchmark",
                path.to_str().expect("utf8"),
                "--commit",
                commit,
            ],
        );
    }
    let html = report_html(d.path(), &st);
    let history = &html[html
        .find("<h2>Benchmark history</h2>")
        .expect("the section")..];
    assert!(
        !history.contains("No benchmark samples") && history.contains("pytest_benchmark_s"),
        "{}",
        &history[..history.len().min(600)]
    );
}

/// `ratchet report` of the store, as the page it writes.
fn report_html(dir: &std::path::Path, store: &str) -> String {
    let page = dir.join("report.html");
    in_store_ok(
        dir,
        store,
        &["report", "--out", page.to_str().expect("utf8")],
    );
    std::fs::read_to_string(&page).expect("report")
}
