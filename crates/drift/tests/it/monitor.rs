//! The live side over a real store: the monitor, alarms in the trace,
//! replay, best-commit ranking, and the honest warm-up.

use rand::{SeedableRng, rngs::StdRng};
use rand_distr::{Distribution, Normal};
use ratchet_drift::{
    KIND_ALARM, Monitor, RankedCommit, Ranking, Shift, Watch, best_commit, deployment_start,
    latest_alarm, record_alarm, size_warmup, warmup_false_alarms,
};
use ratchet_testkit::commit;
use ratchet_trace::{CommitId, Ledger, Score, Store, StoreOptions, Verified, VerifyOptions};

/// The verified view of `store` as it stands: what every read decides on.
fn view(store: &Store) -> Verified {
    store.verified(&VerifyOptions::default()).expect("verifies")
}

/// Commits of `scorer` ranked on its newest version, higher is better.
fn ranked(
    view: &Verified,
    scorer: &str,
    min_n: u64,
    confidence: f64,
    exclude: &[CommitId],
) -> ratchet_drift::Result<Vec<RankedCommit>> {
    best_commit(
        view,
        &Ranking {
            scorer,
            version: None,
            min_n,
            confidence,
            exclude,
            lower_is_better: false,
        },
    )
}

/// A store holding `n` quality scores of `c` drawn from N(`mean`, `sd`)
/// as [`scores`] tagged `tag`, the generator (seeded `seed`) that drew
/// them and goes on drawing, and the store's size after them.
fn measured(
    c: &CommitId,
    mean: f64,
    sd: f64,
    n: usize,
    tag: &str,
    seed: u64,
) -> (tempfile::TempDir, Store, StdRng, u64) {
    let d = tempfile::tempdir().expect("tempdir");
    let mut store = Store::create(d.path().join("s"), StoreOptions::default()).expect("store");
    let mut rng = StdRng::seed_from_u64(seed);
    store
        .record_scores(&scores(c, mean, sd, n, &mut rng, tag), "eval")
        .expect("baseline");
    let size = store.head().expect("head").size;
    (d, store, rng, size)
}

/// `n` quality scores of `c` drawn from N(`mean`, `sd`), tasks `tag-i`.
pub(crate) fn scores(
    c: &CommitId,
    mean: f64,
    sd: f64,
    n: usize,
    rng: &mut StdRng,
    tag: &str,
) -> Vec<Score> {
    let normal = Normal::new(mean, sd).expect("normal");
    (0..n)
        .map(|i| {
            Score::new(
                c.clone(),
                format!("{tag}-{i}"),
                "quality",
                normal.sample(rng),
            )
        })
        .collect()
}

#[test]
fn the_monitor_catches_a_drop_and_dates_it() {
    let a = commit(1);
    let (_d, store, mut rng, deployed_at) = measured(&a, 0.8, 0.05, 200, "measured", 3);
    let mut ledger = Ledger::new(store, VerifyOptions::default()).expect("verifies");
    // h = 8: in-control ARL in the tens of thousands, so 150 in-control
    // scores raise no false alarm, while a 2σ drop is caught in a few.
    let mut monitor =
        Monitor::start(ledger.view(), &a, "quality", deployed_at, 0.5, 8.0, 30).expect("monitor");

    ledger
        .record_scores(&scores(&a, 0.8, 0.05, 150, &mut rng, "live"), "live")
        .expect("live");
    assert!(
        monitor.poll(ledger.view()).expect("poll").is_empty(),
        "no alarm while in control"
    );
    let drop_starts = ledger.view().head().size + 1;
    ledger
        .record_scores(&scores(&a, 0.70, 0.05, 100, &mut rng, "drift"), "live")
        .expect("drift");
    let alarms = monitor.poll(ledger.view()).expect("poll");
    let first = alarms.first().expect("the drop is caught");
    assert_eq!(first.alarm.shift, Shift::Down);
    assert!(
        first.seq >= drop_starts && first.seq < drop_starts + 30,
        "caught within 30 scores: {}",
        first.seq
    );
    assert!(
        first.change_seq + 15 >= drop_starts && first.change_seq <= first.seq,
        "dated near the drop: {} vs {drop_starts}",
        first.change_seq
    );

    let r = record_alarm(&mut ledger, first)
        .expect("append")
        .expect("recorded the first time");
    let e = ledger
        .store()
        .event_by_seq(r.seq)
        .expect("read")
        .expect("alarm event");
    assert_eq!(e.kind, KIND_ALARM);
    assert_eq!(e.commit.as_ref(), Some(&a));
    // Folded into the ledger's view as it was written (with its `ingest` marker).
    assert_eq!(
        ledger.view().head(),
        ledger.store().head().expect("head"),
        "folded into the view"
    );
    assert!(
        ledger
            .view()
            .events_of_kinds(&[KIND_ALARM])
            .iter()
            .any(|e| e.seq == r.seq)
    );
    // Re-running `watch --record` over the same stretch records nothing new.
    let head = ledger.store().head().expect("head").size;
    assert_eq!(record_alarm(&mut ledger, first).expect("append"), None);
    assert_eq!(ledger.store().head().expect("head").size, head);
    assert_eq!(
        latest_alarm(ledger.view(), Some(&a))
            .expect("read")
            .as_ref(),
        Some(first)
    );
    // A cold reader (a full verification of the file) sees the same alarm.
    let store = ledger.into_store();
    assert_eq!(
        latest_alarm(&view(&store), Some(&a))
            .expect("read")
            .as_ref(),
        Some(first)
    );
    assert!(store.verify().expect("verify").is_valid());
}

#[test]
fn the_monitor_watches_the_harmful_direction_and_starts_at_the_deployment() {
    let d = tempfile::tempdir().expect("tempdir");
    let mut store = Store::create(d.path().join("s"), StoreOptions::default()).expect("store");
    let mut rng = StdRng::seed_from_u64(5);
    let a = commit(1);
    store
        .record_scores(&scores(&a, 0.8, 0.05, 200, &mut rng, "measured"), "eval")
        .expect("baseline");
    assert_eq!(deployment_start(&view(&store), &a).expect("read"), None);
    // A promotion of `a`, recorded as its owner records it (the payload
    // `ratchet_orchestrate::record_promotion` writes).
    let promoted = store
        .append(
            ratchet_trace::EventDraft::reserved(
                ratchet_trace::ReservedKind::Promotion,
                &ratchet_records::PromotionRecord {
                    reference: "refs/ratchet/promoted/prompt".into(),
                    class: "prompt".into(),
                    decision_seq: None,
                    restores: None,
                    ref_was: None,
                },
            )
            .expect("draft")
            .commit(a.clone()),
        )
        .expect("promotion");
    assert_eq!(
        deployment_start(&view(&store), &a).expect("read"),
        Some(promoted.seq)
    );
    // Live scores go UP by 2σ: an improvement.
    store
        .record_scores(&scores(&a, 0.9, 0.05, 100, &mut rng, "better"), "live")
        .expect("live");
    let now = view(&store);
    let start = |w: Watch| {
        Monitor::start(&now, &a, "quality", promoted.seq, 0.5, 5.0, 30)
            .expect("monitor")
            .watching(w)
            .expect("a CUSUM watches any direction")
    };
    let mut harm_only = start(Watch::default());
    assert_eq!(harm_only.watch(), Watch::Decreases);
    assert!(
        harm_only.poll(&now).expect("poll").is_empty(),
        "an improvement is no incident"
    );
    let mut both = start(Watch::Both);
    let up = both.poll(&now).expect("poll");
    assert!(!up.is_empty() && up.iter().all(|x| x.alarm.shift == Shift::Up));
    // For a lower-is-better scorer the same rise is the harm.
    let mut costs = start(Watch::harm(true));
    assert!(!costs.poll(&now).expect("poll").is_empty());
}

#[test]
fn monitor_state_is_rebuilt_by_replaying_the_trace() {
    let (a, b) = (commit(1), commit(2));
    let (_d, mut store, mut rng, start) = measured(&a, 0.8, 0.05, 100, "m", 4);
    let mut incremental =
        Monitor::start(&view(&store), &a, "quality", start, 0.5, 5.0, 30).expect("monitor");
    for round in 0..5 {
        store
            .record_scores(
                &scores(&a, 0.79, 0.05, 40, &mut rng, &format!("r{round}")),
                "live",
            )
            .expect("live");
        store
            .record_scores(
                &scores(&b, 0.5, 0.05, 10, &mut rng, &format!("o{round}")),
                "other",
            )
            .expect("other");
        incremental.poll(&view(&store)).expect("poll");
    }
    let now = view(&store);
    let mut replayed = Monitor::start(&now, &a, "quality", start, 0.5, 5.0, 30).expect("monitor");
    replayed.poll(&now).expect("poll");
    assert_eq!(incremental, replayed);
    // The comparison means something only if the monitor moved: it read
    // every live score of its commit (200) and none of the other's, and
    // its self-starting chart learned from them (the baseline's 100 scores
    // and the live ones it passed).
    assert_eq!(
        incremental.position(),
        store.head().expect("head").size - 10
    );
    let learned = incremental.live_chart().in_control().n;
    assert!(learned > 100 && learned <= 300, "{learned}");
}

#[test]
fn best_commit_ranks_by_a_lower_bound_not_a_lucky_mean() {
    let d = tempfile::tempdir().expect("tempdir");
    let mut store = Store::create(d.path().join("s"), StoreOptions::default()).expect("store");
    let mut rng = StdRng::seed_from_u64(5);
    let (steady, lucky, bad, alarmed) = (commit(1), commit(2), commit(3), commit(4));
    store
        .record_scores(&scores(&steady, 0.80, 0.1, 400, &mut rng, "s"), "e")
        .expect("s");
    // Five draws with a higher mean (0.91) but a wide interval.
    store
        .record_scores(
            &[0.99, 0.6, 0.99, 0.98, 0.99].map(|v| Score::new(lucky.clone(), "l", "quality", v)),
            "e",
        )
        .expect("l");
    store
        .record_scores(&scores(&bad, 0.6, 0.1, 400, &mut rng, "b"), "e")
        .expect("b");
    store
        .record_scores(&scores(&alarmed, 0.9, 0.1, 400, &mut rng, "a"), "e")
        .expect("a");
    let now = view(&store);
    let ranking = ranked(&now, "quality", 5, 0.95, std::slice::from_ref(&alarmed)).expect("rank");
    let order: Vec<&CommitId> = ranking.iter().map(|r| &r.commit).collect();
    assert_eq!(order, vec![&steady, &lucky, &bad], "{ranking:#?}");
    assert!(
        ranking[1].mean > ranking[0].mean,
        "the lucky commit has the higher raw mean"
    );
    // A minimum sample size drops it entirely.
    let strict = ranked(&now, "quality", 30, 0.95, &[alarmed]).expect("rank");
    assert!(strict.iter().all(|r| r.commit != lucky));
    assert!(matches!(
        ranked(&now, "quality", 1, 0.95, &[]),
        Err(ratchet_drift::Error::InvalidParameter { .. })
    ));
}

#[test]
fn estimated_parameters_raise_false_alarms_and_warmup_is_sized() {
    const RUNS: usize = 3000;
    // CUSUM k = 1/2, h = 5 (ARL0 465): over 200 in-control observations.
    let small = warmup_false_alarms(0.5, 5.0, 10, 200, RUNS, 7).expect("sim");
    let se = (small.se.powi(2)
        + small.p_false_alarm_known * (1.0 - small.p_false_alarm_known) / RUNS as f64)
        .sqrt();
    assert!(
        small.p_false_alarm > small.p_false_alarm_known + 3.0 * se,
        "m = 10: {} vs known {}",
        small.p_false_alarm,
        small.p_false_alarm_known
    );
    // Sized for a target between the known-parameter rate and the m = 10 rate.
    let target = (small.p_false_alarm + small.p_false_alarm_known) / 2.0;
    let sized = size_warmup(
        0.5,
        5.0,
        target,
        200,
        &[10, 25, 50, 100, 200, 400, 800],
        RUNS,
        7,
    )
    .expect("sim")
    .expect("a warm-up reaches the target");
    assert!(sized.m > 10 && sized.p_false_alarm <= target, "{sized:?}");
}

#[test]
fn a_monitor_follows_one_scorer_version() {
    let a = commit(1);
    let (_d, mut store, mut rng, start) = measured(&a, 0.8, 0.05, 200, "measured", 9);
    let mut monitor =
        Monitor::start(&view(&store), &a, "quality", start, 0.5, 5.0, 30).expect("monitor");
    assert_eq!(monitor.scorer_version(), "1");
    // A new rubric version scores on another scale (about 0.3): not a drop.
    let rescored: Vec<Score> = scores(&a, 0.3, 0.05, 100, &mut rng, "v2")
        .into_iter()
        .map(|mut s| {
            s.scorer_version = "2".into();
            s
        })
        .collect();
    store.record_scores(&rescored, "eval").expect("v2");
    let now = view(&store);
    assert!(
        monitor.poll(&now).expect("poll").is_empty(),
        "versions never mix"
    );
    // best_commit ranks on the newest version only.
    let newest = ranked(&now, "quality", 30, 0.95, &[]).expect("rank");
    assert!((newest[0].mean - 0.3).abs() < 0.05, "{newest:?}");
    // A real drop in the followed version alarms, and says which version.
    store
        .record_scores(&scores(&a, 0.6, 0.05, 60, &mut rng, "drop"), "live")
        .expect("drop");
    let alarms = monitor.poll(&view(&store)).expect("poll");
    let first = alarms.first().expect("caught");
    assert_eq!(first.scorer_version.as_deref(), Some("1"));
}

#[test]
fn a_pass_fail_stream_gets_the_bernoulli_chart() {
    use rand::Rng;
    let d = tempfile::tempdir().expect("tempdir");
    let mut store = Store::create(d.path().join("s"), StoreOptions::default()).expect("store");
    let mut rng = StdRng::seed_from_u64(21);
    let a = commit(1);
    let pass_fail = |n: usize, p: f64, tag: &str, rng: &mut StdRng| -> Vec<Score> {
        (0..n)
            .map(|i| {
                Score::new(
                    a.clone(),
                    format!("{tag}-{i}"),
                    "passed",
                    f64::from(u8::from(rng.random_bool(p))),
                )
            })
            .collect()
    };
    store
        .record_scores(&pass_fail(400, 0.7, "measured", &mut rng), "eval")
        .expect("baseline");
    let start = store.head().expect("head").size;
    let chart = ratchet_drift::Chart::Bernoulli {
        shift: 0.15,
        arl0: 10_000.0,
    };
    let mut monitor = Monitor::start_chart(
        &view(&store),
        &a,
        "passed",
        start,
        chart,
        Watch::Decreases,
        30,
    )
    .expect("monitor");
    store
        .record_scores(&pass_fail(1000, 0.7, "live", &mut rng), "live")
        .expect("live");
    assert!(
        monitor.poll(&view(&store)).expect("poll").is_empty(),
        "in control"
    );
    store
        .record_scores(&pass_fail(300, 0.45, "drop", &mut rng), "live")
        .expect("drop");
    let alarms = monitor.poll(&view(&store)).expect("poll");
    let first = alarms.first().expect("the drop is caught");
    assert_eq!(first.alarm.detector, "bernoulli_cusum");
    assert_eq!(first.alarm.shift, Shift::Down);
    // One-sided: both directions at once is refused, by name.
    let err = Monitor::start_chart(&view(&store), &a, "passed", start, chart, Watch::Both, 30)
        .expect_err("one-sided");
    assert!(err.to_string().contains("one-sided"), "{err}");
}

#[test]
fn follow_verifies_records_each_alarm_once_and_reports() {
    use ratchet_drift::{Chart, Follow, Watch};
    let a = commit(1);
    let (_d, mut store, mut rng, start) = measured(&a, 0.8, 0.05, 100, "m", 9);
    store
        .record_scores(&scores(&a, 0.6, 0.05, 60, &mut rng, "bad"), "live")
        .expect("drop");
    let chart = Chart::cusum_for_arl0(0.5, 1000.0).expect("chart");
    let how = Follow {
        record: true,
        ..Follow::default()
    };
    let mut seen = Vec::new();
    let mut ledger = Ledger::new(store, VerifyOptions::default()).expect("verifies");
    // A monitor of `a`'s quality from `start` on, watching for a fall: the
    // same watch each follow below starts afresh.
    let start_watching = |ledger: &Ledger| {
        Monitor::start_chart(
            ledger.view(),
            &a,
            "quality",
            start,
            chart,
            Watch::Decreases,
            30,
        )
        .expect("monitor")
    };
    let mut monitor = start_watching(&ledger);
    let report = monitor
        .follow(&mut ledger, &how, &mut |alarm, appended| {
            seen.push((alarm.seq, appended));
            std::ops::ControlFlow::Continue(())
        })
        .expect("follow");
    assert!(report.alarms >= 1, "a 4σ drop alarms: {report:?}");
    assert_eq!(report.recorded, report.alarms);
    assert!(seen.iter().all(|&(_, appended)| appended));
    assert_eq!(report.position, start + 60);
    // Following the same stretch again records nothing twice.
    let mut again = start_watching(&ledger);
    let head = ledger.store().head().expect("head");
    let second = again
        .follow(&mut ledger, &how, &mut |_, appended| {
            assert!(!appended, "recorded before");
            std::ops::ControlFlow::Continue(())
        })
        .expect("follow");
    assert_eq!(second.alarms, report.alarms);
    assert_eq!(second.recorded, 0);
    assert_eq!(ledger.store().head().expect("head"), head);
    // The callback can stop the follow at the first alarm.
    let mut third = start_watching(&ledger);
    let stopped = third
        .follow(
            &mut ledger,
            &Follow {
                keep_following: true,
                ..how
            },
            &mut |_, _| std::ops::ControlFlow::Break(()),
        )
        .expect("follow");
    assert_eq!(stopped.alarms, 1);
}

#[test]
fn arl_profile_reproduces_the_published_cusum_row() {
    use ratchet_drift::{Chart, arl_profile};
    // Montgomery Table 9.3, h = 4: ARL 168 in control, 8.38 at a 1σ shift.
    let p = arl_profile(Chart::Cusum { k: 0.5, h: 4.0 }).expect("profile");
    assert_eq!(p.rows.len(), ratchet_drift::ARL_SHIFTS.len());
    assert!((p.rows[0].arl - 168.0).abs() < 1.0, "{:?}", p.rows[0]);
    let one = p
        .rows
        .iter()
        .find(|r| (r.shift - 1.0).abs() < 1e-12)
        .expect("1σ row");
    assert!((one.arl - 8.38).abs() < 0.05, "{one:?}");
    assert!(one.siegmund.is_some());
    let solved = Chart::ewma_for_arl0(0.1, 500.0).expect("ewma");
    let e = arl_profile(solved).expect("profile");
    assert!((e.rows[0].arl - 500.0).abs() < 1.0, "{:?}", e.rows[0]);
    // Page–Hinkley has no Markov-chain ARL: refused by name.
    assert!(matches!(
        arl_profile(Chart::PageHinkley {
            delta: 0.5,
            lambda: 50.0
        }),
        Err(ratchet_drift::Error::InvalidParameter { .. })
    ));
}

/// Scores near ±f64::MAX overflow the store's kept statistics, which are
/// then marked +∞: such a commit has no usable bound and is not ranked
/// (an infinite or NaN bound would otherwise sort first).
#[test]
fn overflowed_statistics_never_rank_a_commit_first() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut store = Store::create(dir.path().join("s"), StoreOptions::default()).expect("store");
    let (wild, tame) = (
        CommitId::parse(&"a".repeat(40)).expect("commit"),
        CommitId::parse(&"b".repeat(40)).expect("commit"),
    );
    let mut scores = vec![
        Score::new(wild.clone(), "a", "acc", 1e308),
        Score::new(wild.clone(), "b", "acc", -1e308),
        Score::new(wild, "c", "acc", 0.5),
    ];
    scores.extend((0..5).map(|i| {
        Score::new(
            tame.clone(),
            format!("t{i}"),
            "acc",
            0.5 + f64::from(i) * 0.01,
        )
    }));
    store.record_scores(&scores, "s").expect("scores");
    let ranking = ranked(&view(&store), "acc", 2, 0.95, &[]).expect("rank");
    assert_eq!(ranking.len(), 1, "{ranking:?}");
    assert_eq!(ranking[0].commit, tame);
}

/// Alarms of a monitor watching one side of an in-control stream, over a
/// long stream: the chart restarts after each, so their mean spacing is
/// the in-control ARL as wired (μ and σ from a long baseline, so nearly
/// known).
fn mean_run_length(
    chart: ratchet_drift::Chart,
    watch: Watch,
    live: usize,
    seed: u64,
) -> (f64, usize) {
    let a = commit(7);
    let (_d, mut store, mut rng, from) = measured(&a, 0.0, 1.0, 20_000, "base", seed);
    for chunk in 0..(live / 10_000) {
        store
            .record_scores(
                &scores(&a, 0.0, 1.0, 10_000, &mut rng, &format!("live{chunk}")),
                "live",
            )
            .expect("live");
    }
    let v = view(&store);
    let mut m = Monitor::start_chart(&v, &a, "quality", from, chart, watch, 30).expect("monitor");
    let alarms = m.poll(&v).expect("poll").len();
    (live as f64 / alarms.max(1) as f64, alarms)
}

/// `watch --arl0 A` keeps its promise on the side it watches: the CUSUM's
/// h is solved on the one-sided chain (solved two-sided, the harm side
/// alone ran about 2A between false alarms), and the EWMA's for half the
/// two-sided rate. Tolerance: the mean of ~n exponential-like run lengths
/// has relative sd ≈ 1/√n; three of them.
#[test]
fn a_one_sided_watch_holds_its_arl0() {
    use ratchet_drift::Chart;
    let arl0 = 200.0;
    for (name, chart) in [
        (
            "cusum",
            Chart::cusum_for_arl0_watching(0.5, arl0, Watch::Decreases).expect("chart"),
        ),
        (
            "ewma",
            Chart::ewma_for_arl0_watching(0.2, arl0, Watch::Decreases).expect("chart"),
        ),
    ] {
        let (arl, alarms) = mean_run_length(chart, Watch::Decreases, 100_000, 71);
        let tol = 3.0 / (alarms as f64).sqrt();
        assert!(
            (arl / arl0 - 1.0).abs() <= tol,
            "{name}: mean run length {arl:.1} over {alarms} alarms vs ARL0 {arl0} (±{:.0} %)",
            100.0 * tol
        );
    }
    // The two-sided solution on one watched side: about twice as long.
    let two = Chart::cusum_for_arl0(0.5, arl0).expect("chart");
    let (arl, _) = mean_run_length(two, Watch::Decreases, 100_000, 72);
    assert!(arl > 1.5 * arl0, "two-sided h on one side: {arl:.1}");
}

/// Issue 40 (c): a 95 %-pass service's 30 warm-up scores are all passes
/// about one deployment in five (0.95³⁰ = 0.21); `watch` refused them with
/// "σ cannot be 0". A Bernoulli chart needs no spread: it starts at the
/// rate 30.5/31 and follows the stream. A normal chart on the same scores
/// says how many it has and what it needs instead.
#[test]
fn a_warm_up_of_all_passes_starts_a_bernoulli_chart_and_a_normal_chart_says_what_it_lacks() {
    let d = tempfile::tempdir().expect("tempdir");
    let mut store = Store::create(d.path().join("s"), StoreOptions::default()).expect("store");
    let a = commit(1);
    let pass_fail = |from: usize, to: usize, pass: &dyn Fn(usize) -> bool| -> Vec<Score> {
        (from..to)
            .map(|i| {
                Score::new(
                    a.clone(),
                    format!("t{i}"),
                    "passed",
                    f64::from(u8::from(pass(i))),
                )
            })
            .collect()
    };
    store
        .record_scores(&pass_fail(0, 30, &|_| true), "eval")
        .expect("warm-up");
    let start = store.head().expect("head").size;
    let chart = ratchet_drift::Chart::Bernoulli {
        shift: 0.1,
        arl0: 10_000.0,
    };
    let mut monitor = Monitor::start_chart(
        &view(&store),
        &a,
        "passed",
        start,
        chart,
        Watch::Decreases,
        30,
    )
    .expect("a Bernoulli chart starts from 30 passes");
    let rate = monitor.live_chart().in_control_rate().expect("bernoulli");
    assert!(
        (rate - 0.985).abs() < 1e-9,
        "30.5/31 on the 0.005 grid: {rate}"
    );
    // 400 live requests at 95 %: in control (the chart learns the rate).
    store
        .record_scores(&pass_fail(30, 430, &|i| i % 20 != 0), "live")
        .expect("live");
    assert!(
        monitor.poll(&view(&store)).expect("poll").is_empty(),
        "in control"
    );
    assert!(
        (monitor.live_chart().in_control_rate().expect("bernoulli") - 0.95).abs() < 0.011,
        "learned the rate: {:?}",
        monitor.live_chart().in_control_rate()
    );
    // Then every other request fails: caught.
    store
        .record_scores(&pass_fail(430, 530, &|i| i % 2 == 0), "live")
        .expect("drop");
    let alarms = monitor.poll(&view(&store)).expect("poll");
    assert_eq!(alarms.first().map(|a| a.alarm.shift), Some(Shift::Down));
    // A CUSUM on the same warm-up: refused, saying why and what to use.
    let cusum = ratchet_drift::Chart::cusum_for_arl0(0.5, 500.0).expect("chart");
    let err = Monitor::start_chart(
        &view(&store),
        &a,
        "passed",
        start,
        cusum,
        Watch::Decreases,
        30,
    )
    .expect_err("no spread");
    let said = err.to_string();
    for want in [
        "30 score(s), all 1",
        "needs at least 2 that differ",
        "--detector bernoulli",
    ] {
        assert!(said.contains(want), "{want:?} in {said}");
    }
    assert!(!said.contains("σ cannot be 0"), "{said}");
}
