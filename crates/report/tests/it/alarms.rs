//! An alarm's chart is drawn from the detector that raised it: its k, its
//! h and its path are the monitor's, never solved again by the report.

use ratchet_drift::{Chart, Monitor, Watch, record_alarm};
use ratchet_report::{ReportOptions, html};
use ratchet_trace::{CommitId, Ledger, Score, Store, StoreOptions, VerifyOptions};

fn commit(i: u8) -> CommitId {
    CommitId::parse(&format!("{i:02x}").repeat(20)).expect("commit")
}

/// `n` scores around `mean`, spread by a fixed sequence (±0.05): a
/// stream with a spread and no generator to seed.
fn scores(c: &CommitId, mean: f64, n: usize, tag: &str) -> Vec<Score> {
    (0..n)
        .map(|i| {
            let wobble = ((i * 37 + 11) % 23) as f64 / 22.0 - 0.5;
            Score::new(
                c.clone(),
                format!("{tag}-{i}"),
                "quality",
                mean + 0.1 * wobble,
            )
        })
        .collect()
}

#[test]
fn an_alarms_chart_shows_the_k_and_h_of_the_detector_that_raised_it() {
    let a = commit(1);
    let d = tempfile::tempdir().expect("tempdir");
    let mut store = Store::create(d.path().join("s"), StoreOptions::default()).expect("store");
    store
        .record_scores(&scores(&a, 0.8, 60, "warm"), "eval")
        .expect("warm-up");
    let from = store.head().expect("head").size;
    let mut ledger = Ledger::new(store, VerifyOptions::default()).expect("verifies");
    // k = 0.3 and h = 6.5: what no rule of thumb would solve to, so a
    // report that derived its own would not print them.
    let chart = Chart::Cusum { k: 0.3, h: 6.5 };
    let mut monitor = Monitor::start_chart(
        ledger.view(),
        &a,
        "quality",
        from,
        chart,
        Watch::Decreases,
        30,
    )
    .expect("monitor");
    ledger
        .record_scores(&scores(&a, 0.8, 100, "live"), "live")
        .expect("live");
    ledger
        .record_scores(&scores(&a, 0.72, 60, "drop"), "live")
        .expect("drop");
    let alarms = monitor.poll(ledger.view()).expect("poll");
    let alarm = alarms.first().expect("the drop is caught");
    record_alarm(&mut ledger, alarm).expect("record");
    let mut store = ledger.into_store();
    let page = html(&mut store, &ReportOptions::default()).expect("report");
    let caption = page
        .split("<figure class=cusum>")
        .nth(1)
        .and_then(|f| f.split("<figcaption>").nth(1))
        .and_then(|f| f.split("</figcaption>").next())
        .expect("the alarm's chart and its caption");
    assert!(caption.contains("limit h = 6.500"), "{caption}");
    assert!(caption.contains("(reference k = 0.300)"), "{caption}");
    assert!(
        caption.contains("The statistic is the watch's own"),
        "the path is the monitor's, replayed: {caption}"
    );
}
