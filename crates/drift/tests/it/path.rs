//! A recorded alarm's chart is the detector's own: the path, k and h a
//! report draws come from the monitor that raised the alarm, replayed.

use rand::{Rng, SeedableRng, rngs::StdRng};
use ratchet_drift::{
    Chart, Cusum, Detector, Monitor, NotDrawn, PathFrom, Shift, TraceAlarm, Watch, latest_alarm,
    record_alarm,
};
use ratchet_testkit::commit;

use crate::monitor::scores;
use ratchet_trace::{Ledger, Score, Store, StoreOptions, VerifyOptions};

/// A ledger whose commit has 60 warm-up scores of N(0.8, 0.05), then 150
/// in control and a 2σ drop under `chart`, the first alarm recorded:
/// the ledger, the alarm as read back, and the watch's start.
fn recorded_alarm(chart: Chart, seed: u64) -> (tempfile::TempDir, Ledger, TraceAlarm, u64) {
    let a = commit(1);
    let d = tempfile::tempdir().expect("tempdir");
    let mut store = Store::create(d.path().join("s"), StoreOptions::default()).expect("store");
    let mut rng = StdRng::seed_from_u64(seed);
    store
        .record_scores(&scores(&a, 0.8, 0.05, 60, &mut rng, "warm"), "eval")
        .expect("warm-up");
    let from = store.head().expect("head").size;
    let mut ledger = Ledger::new(store, VerifyOptions::default()).expect("verifies");
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
        .record_scores(&scores(&a, 0.8, 0.05, 150, &mut rng, "live"), "live")
        .expect("live");
    ledger
        .record_scores(&scores(&a, 0.7, 0.05, 100, &mut rng, "drop"), "live")
        .expect("drop");
    let alarms = monitor.poll(ledger.view()).expect("poll");
    let alarm = alarms.last().expect("the drop is caught").clone();
    record_alarm(&mut ledger, &alarm).expect("record");
    let read = latest_alarm(ledger.view(), Some(&a))
        .expect("read")
        .expect("recorded");
    assert_eq!(read, alarm, "read back as recorded");
    (d, ledger, read, from)
}

#[test]
fn an_alarms_chart_is_the_monitors_own_statistic_with_its_k_and_h() {
    let (_d, ledger, alarm, from) = recorded_alarm(Chart::Cusum { k: 0.5, h: 8.0 }, 5);
    let path = alarm.path(ledger.view(), &[]).expect("drawn");
    assert_eq!(path.from, PathFrom::Replayed);
    // The chart's k and h are the detector's, not solved from the stream.
    assert!((path.k - 0.5).abs() < 1e-15, "k = {}", path.k);
    assert!((path.h - 8.0).abs() < 1e-15, "h = {}", path.h);
    assert!((alarm.alarm.limit - path.h).abs() < 1e-15);
    // It ends at the alarm, on the recorded statistic, past h.
    let &(seq, last) = path.points.last().expect("points");
    assert_eq!(seq, alarm.seq);
    assert!((last - alarm.alarm.statistic).abs() < 1e-12, "{last}");
    assert!(last > path.h);
    // A CUSUM: never below zero, below h until the alarm, in seq order
    // after the watch's start.
    assert!(path.points.first().expect("points").0 > from);
    assert!(path.points.windows(2).all(|w| w[0].0 < w[1].0));
    assert!(
        path.points[..path.points.len() - 1]
            .iter()
            .all(|(_, s)| (0.0..=path.h).contains(s))
    );
    // The window is the detector's: as long as it says it was.
    assert_eq!(path.points.len() as u64, alarm.alarm.n);
}

#[test]
fn a_bernoulli_alarms_chart_is_replayed_with_the_k_it_ran_at() {
    let a = commit(1);
    let d = tempfile::tempdir().expect("tempdir");
    let mut store = Store::create(d.path().join("s"), StoreOptions::default()).expect("store");
    let mut rng = StdRng::seed_from_u64(21);
    let mut pass_fail = |n: usize, p: f64, tag: &str| -> Vec<Score> {
        (0..n)
            .map(|i| {
                let pass = f64::from(u8::from(rng.random_bool(p)));
                Score::new(a.clone(), format!("{tag}-{i}"), "passed", pass)
            })
            .collect()
    };
    let (warm, live, drop) = (
        pass_fail(400, 0.7, "warm"),
        pass_fail(600, 0.7, "live"),
        pass_fail(300, 0.45, "drop"),
    );
    store.record_scores(&warm, "eval").expect("warm-up");
    let from = store.head().expect("head").size;
    let mut ledger = Ledger::new(store, VerifyOptions::default()).expect("verifies");
    let chart = Chart::Bernoulli {
        shift: 0.15,
        arl0: 10_000.0,
    };
    let mut monitor = Monitor::start_chart(
        ledger.view(),
        &a,
        "passed",
        from,
        chart,
        Watch::Decreases,
        30,
    )
    .expect("monitor");
    ledger.record_scores(&live, "live").expect("live");
    ledger.record_scores(&drop, "live").expect("drop");
    let alarms = monitor.poll(ledger.view()).expect("poll");
    let alarm = alarms.first().expect("the drop is caught");
    assert_eq!(alarm.alarm.detector, "bernoulli_cusum");
    let path = alarm.path(ledger.view(), &[]).expect("drawn");
    assert_eq!(path.from, PathFrom::Replayed);
    let &(seq, last) = path.points.last().expect("points");
    assert_eq!(seq, alarm.seq);
    assert!((last - alarm.alarm.statistic).abs() < 1e-12, "{last}");
    // k in counts of failures: between the two failure rates it separates.
    assert!(path.k > 0.3 && path.k < 0.55, "k = {}", path.k);
}

#[test]
fn an_alarm_its_monitor_does_not_raise_again_draws_nothing() {
    let (_d, ledger, alarm, _) = recorded_alarm(Chart::Cusum { k: 0.5, h: 8.0 }, 5);
    // Another statistic, another k: neither is what the monitor computed.
    let mut other = alarm.clone();
    other.alarm.statistic += 0.25;
    assert_eq!(other.path(ledger.view(), &[]), Err(NotDrawn::DoesNotReplay));
    let mut other = alarm.clone();
    other.chart = Some(Chart::Cusum { k: 0.25, h: 8.0 });
    assert_eq!(other.path(ledger.view(), &[]), Err(NotDrawn::DoesNotReplay));
    let mut other = alarm;
    other.chart = Some(Chart::Ewma {
        lambda: 0.2,
        l: 3.0,
    });
    assert_eq!(other.path(ledger.view(), &[]), Err(NotDrawn::NotCusum));
}

#[test]
fn an_alarm_recorded_before_its_chart_is_solved_on_its_window() {
    // A fixed-parameter CUSUM (the monitor before issue 40) over a stream
    // of seqs 11, 12, …: the alarm it raised, recorded without its chart.
    let (mu, sd, k, h) = (0.8, 0.05, 0.5, 4.0);
    let mut rng = StdRng::seed_from_u64(9);
    let values: Vec<f64> = scores(&commit(1), 0.8, 0.05, 40, &mut rng, "in")
        .into_iter()
        .chain(scores(&commit(1), 0.7, 0.05, 40, &mut rng, "out"))
        .map(|s| s.value)
        .collect();
    let stream: Vec<(u64, f64)> = (11..).zip(values).collect();
    let mut cusum = Cusum::new(mu, sd, k, h).expect("cusum");
    let (seq, raised) = stream
        .iter()
        .find_map(|(seq, x)| {
            cusum
                .update(*x)
                .expect("finite")
                .filter(|a| a.shift == Shift::Down)
                .map(|a| (*seq, a))
        })
        .expect("the drop is caught");
    let alarm = TraceAlarm {
        commit: commit(1),
        scorer: "quality".into(),
        scorer_version: None,
        alarm: raised,
        seq,
        change_seq: seq,
        baseline_mean: mu,
        baseline_sd: sd,
        from_seq: None,
        chart: None,
        watch: None,
    };
    let d = tempfile::tempdir().expect("tempdir");
    let store = Store::create(d.path().join("s"), StoreOptions::default()).expect("store");
    let view = store.verified(&VerifyOptions::default()).expect("verifies");
    let path = alarm.path(&view, &stream).expect("drawn");
    assert_eq!(path.from, PathFrom::Solved);
    // Solved from the evidence since the change: the detector's k, to
    // rounding (the sum of a few dozen standardised scores).
    assert!((path.k - k).abs() < 1e-9, "k = {}", path.k);
    let &(at, last) = path.points.last().expect("points");
    assert_eq!(at, seq);
    assert!((last - alarm.alarm.statistic).abs() < 1e-6);
}

#[test]
fn a_watch_that_read_only_the_key_holders_scores_is_replayed_on_them() {
    // A merged cell's scores of the same stream: everyone's replay reads
    // them (and alarms at once on their 0.2s), the key holder's does not.
    let a = commit(1);
    let d = tempfile::tempdir().expect("tempdir");
    let mut home = Store::create(d.path().join("home"), StoreOptions::default()).expect("store");
    let mut rng = StdRng::seed_from_u64(8);
    home.record_scores(&scores(&a, 0.8, 0.05, 60, &mut rng, "warm"), "eval")
        .expect("warm-up");
    let from = home.head().expect("head").size;
    let mut cell = Store::create(d.path().join("cell"), StoreOptions::default()).expect("cell");
    cell.record_scores(&scores(&a, 0.2, 0.05, 40, &mut rng, "cell"), "cell")
        .expect("cell scores");
    home.merge_cell(cell.dir(), &ratchet_trace::MergeOptions::default())
        .expect("merge");
    let mut ledger = Ledger::new(home, VerifyOptions::default()).expect("verifies");
    let key_holder = ratchet_trace::Sources::key_holder();
    let trusted = ledger.view().restricted_to(&key_holder);
    let chart = Chart::Cusum { k: 0.5, h: 8.0 };
    let mut monitor =
        Monitor::start_chart(&trusted, &a, "quality", from, chart, Watch::Decreases, 30)
            .expect("monitor")
            .reading(key_holder);
    ledger
        .record_scores(&scores(&a, 0.8, 0.05, 150, &mut rng, "live"), "live")
        .expect("live");
    ledger
        .record_scores(&scores(&a, 0.7, 0.05, 100, &mut rng, "drop"), "live")
        .expect("drop");
    let alarms = monitor.poll(ledger.view()).expect("poll");
    let alarm = alarms.first().expect("the drop is caught");
    let path = alarm.path(ledger.view(), &[]).expect("drawn");
    assert_eq!(path.from, PathFrom::Replayed);
    assert_eq!(path.points.last().map(|p| p.0), Some(alarm.seq));
    // Everyone's monitor alarms on the cell's scores, before the drop.
    let mut everyone = Monitor::start_chart(
        ledger.view(),
        &a,
        "quality",
        from,
        chart,
        Watch::Decreases,
        30,
    )
    .expect("monitor");
    let first = everyone.poll(ledger.view()).expect("poll");
    assert!(
        first.first().is_some_and(|f| f.seq < alarm.seq),
        "the cell's scores alarm a watch that reads them"
    );
}
