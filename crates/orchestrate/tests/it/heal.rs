//! Healing against real temporary git repositories.

use crate::common::{self, record_versions_and_a_fall, three_versions};

use git2::Repository;
use ratchet_drift::{Alarm, Chart, Monitor, Shift, TraceAlarm, Watch, best_commit};
use ratchet_orchestrate::{
    Error, HealOptions, KIND_CHECKOUT, WatchPlan, check_recovery, heal, record_promotion,
    start_watch,
};
use ratchet_trace::{CommitId, Ledger, Score, Store, StoreOptions, VerifyOptions};

struct Setup {
    dir: tempfile::TempDir,
    repo: Repository,
    ledger: Ledger,
    commits: Vec<CommitId>,
}

/// A repository with three commits of `prompt.txt`, a store at `.ratchet`,
/// and 100 quality scores for each commit: means 0.80, 0.85, 0.90; then 20
/// live scores of v3 around 0.70.
fn setup() -> Setup {
    let dir = tempfile::tempdir().expect("tempdir");
    let (repo, commits) = three_versions(dir.path());
    let mut store =
        Store::create(dir.path().join(".ratchet"), StoreOptions::default()).expect("store");
    record_versions_and_a_fall(&mut store, &commits);
    Setup {
        dir,
        repo,
        ledger: Ledger::new(store, VerifyOptions::default()).expect("verifies"),
        commits,
    }
}

fn alarm_on(c: &CommitId, seq: u64) -> TraceAlarm {
    TraceAlarm {
        commit: c.clone(),
        scorer: "quality".into(),
        scorer_version: None,
        alarm: Alarm {
            detector: "cusum".into(),
            n: 12,
            statistic: 5.3,
            limit: 5.0,
            shift: Shift::Down,
            change_start: 4,
        },
        seq,
        change_seq: seq - 8,
        baseline_mean: 0.9,
        baseline_sd: 0.03,
        from_seq: None,
        chart: None,
        watch: None,
    }
}

#[test]
fn heal_checks_out_the_best_other_commit_and_recovery_is_checked() {
    let mut s = setup();
    let head = s.ledger.store().head().expect("head").size;
    let alarm = alarm_on(&s.commits[2], head);
    let (report, monitor) =
        heal(s.dir.path(), &mut s.ledger, &alarm, &HealOptions::default()).expect("heal");
    assert_eq!(report.chosen.as_ref(), Some(&s.commits[1]), "{report:#?}");
    assert!(report.checked_out);
    // The work tree and HEAD are at v2.
    assert_eq!(
        std::fs::read_to_string(s.dir.path().join("prompt.txt")).expect("read"),
        "v2"
    );
    assert!(s.repo.head_detached().expect("head"));
    assert_eq!(
        s.repo.head().expect("head").target().map(|o| o.to_string()),
        Some(s.commits[1].to_string())
    );
    // The checkout is in the trace.
    let seq = report.checkout_seq.expect("recorded");
    let e = s
        .ledger
        .store()
        .event_by_seq(seq)
        .expect("read")
        .expect("event");
    assert_eq!(e.kind, KIND_CHECKOUT);
    assert_eq!(e.commit.as_ref(), Some(&s.commits[1]));

    // Live scores of v2 after the heal, in control: recovered.
    let mut monitor: Monitor = monitor.expect("restarted monitor");
    let live = common::around(&s.commits[1], "live", 0.85, 40);
    s.ledger.record_scores(&live, "live").expect("live");
    let r = check_recovery(&mut s.ledger, &mut monitor, seq, 30).expect("recovery");
    assert!(r.recovered, "{r:?}");
    assert_eq!(r.n, 40);
}

#[test]
fn a_dirty_work_tree_is_refused_and_nothing_changes() {
    let mut s = setup();
    std::fs::write(s.dir.path().join("prompt.txt"), "edited by hand").expect("edit");
    std::fs::write(s.dir.path().join("notes.md"), "untracked").expect("untracked");
    let before = s.ledger.store().head().expect("head");
    let alarm = alarm_on(&s.commits[2], before.size);
    let err =
        heal(s.dir.path(), &mut s.ledger, &alarm, &HealOptions::default()).expect_err("refused");
    match &err {
        Error::DirtyWorkTree { paths } => {
            assert!(
                paths.contains(&"prompt.txt".to_string())
                    && paths.contains(&"notes.md".to_string()),
                "{paths:?}"
            );
        }
        other => panic!("expected a dirty work tree, got {other}"),
    }
    assert!(err.to_string().contains("prompt.txt"));
    assert_eq!(
        std::fs::read_to_string(s.dir.path().join("prompt.txt")).expect("read"),
        "edited by hand"
    );
    assert_eq!(
        s.ledger.store().head().expect("head"),
        before,
        "nothing recorded"
    );
}

#[test]
fn commits_gone_from_the_repository_are_skipped_with_a_note() {
    let mut s = setup();
    // A commit the trace knows, with the best scores, that git does not have.
    let ghost = CommitId::parse(&"ab".repeat(20)).expect("id");
    let scores: Vec<Score> = (0..100)
        .map(|i| Score::new(ghost.clone(), format!("t{i}"), "quality", 0.99))
        .collect();
    s.ledger.record_scores(&scores, "eval").expect("scores");
    let alarm = alarm_on(&s.commits[2], s.ledger.store().head().expect("head").size);
    let dry = HealOptions {
        dry_run: true,
        ..HealOptions::default()
    };
    let (report, monitor) = heal(s.dir.path(), &mut s.ledger, &alarm, &dry).expect("dry run");
    assert_eq!(report.ranking[0].commit, ghost);
    assert_eq!(report.skipped.len(), 1);
    assert!(report.skipped[0].1.contains("no longer exists"));
    assert_eq!(report.chosen.as_ref(), Some(&s.commits[1]));
    assert!(
        !report.checked_out && monitor.is_none(),
        "a dry run changes nothing"
    );
    assert_eq!(
        std::fs::read_to_string(s.dir.path().join("prompt.txt")).expect("read"),
        "v3"
    );
}

#[test]
fn promotions_are_refs_and_events() {
    let mut s = setup();
    let promotion = record_promotion(s.dir.path(), &mut s.ledger, &s.commits[2], "prompt", None)
        .expect("promote");
    assert_eq!(promotion.reference, "refs/ratchet/promoted/prompt");
    assert_eq!(
        promotion.receipt.seq,
        s.ledger.store().head().expect("head").size
    );
    let r = s.repo.find_reference(&promotion.reference).expect("ref");
    assert_eq!(
        r.target().map(|o| o.to_string()),
        Some(s.commits[2].to_string())
    );
    let last = s
        .ledger
        .store()
        .event_by_seq(s.ledger.store().head().expect("head").size)
        .expect("read")
        .expect("event");
    assert_eq!(last.kind, "promotion");
    let ghost = CommitId::parse(&"cd".repeat(20)).expect("id");
    assert!(matches!(
        record_promotion(s.dir.path(), &mut s.ledger, &ghost, "prompt", None),
        Err(Error::Git(_))
    ));
}

#[test]
fn an_alarm_about_an_improvement_heals_nothing() {
    let mut s = setup();
    let head = s.ledger.store().head().expect("head").size;
    let mut alarm = alarm_on(&s.commits[2], head);
    alarm.alarm.shift = Shift::Up;
    let (report, monitor) =
        heal(s.dir.path(), &mut s.ledger, &alarm, &HealOptions::default()).expect("heal");
    assert!(monitor.is_none() && !report.checked_out, "{report:#?}");
    assert!(report.chosen.is_none());
    assert!(
        report
            .stayed
            .as_deref()
            .is_some_and(|w| w.contains("improvement")),
        "{report:#?}"
    );
    assert_eq!(
        s.ledger.store().head().expect("head").size,
        head,
        "nothing recorded"
    );
    // For a lower-is-better scorer, an upward shift is the harm.
    let opts = HealOptions {
        lower_is_better: true,
        dry_run: true,
        ..HealOptions::default()
    };
    let (report, _) = heal(s.dir.path(), &mut s.ledger, &alarm, &opts).expect("heal");
    assert!(
        report
            .stayed
            .as_deref()
            .is_none_or(|w| !w.contains("improvement")),
        "{report:#?}"
    );
}

#[test]
fn heal_stays_when_no_measured_commit_surely_beats_the_deployed_one() {
    let mut s = setup();
    // The deployed v3 dipped only to about 0.88 since the change: v2's lower
    // bound (about 0.85) does not beat that.
    let dip = common::spread_about(&s.commits[2], "dip", 0.88, 0.001, 30);
    let first = s.ledger.record_scores(&dip, "live").expect("dip")[0].seq;
    let head = s.ledger.store().head().expect("head").size;
    let mut alarm = alarm_on(&s.commits[2], head);
    alarm.change_seq = first;
    let (report, monitor) =
        heal(s.dir.path(), &mut s.ledger, &alarm, &HealOptions::default()).expect("heal");
    assert!(monitor.is_none() && !report.checked_out, "{report:#?}");
    let why = report.stayed.as_deref().expect("says why it stays");
    assert!(why.contains("does not beat"), "{why}");
    assert!((report.deployed_estimate.expect("estimate") - 0.88).abs() < 0.01);
}

/// The class the scene's gate decides: `prompt`, a paired SPRT on
/// `quality` (elo 0 against 40, at most 1000 pairs).
fn policy() -> ratchet_gate::Policy {
    ratchet_gate::Policy::parse(&ratchet_testkit::paired_class(
        "prompt", "quality", 1000, "",
    ))
    .expect("policy")
}

/// The gate's question of the scene's `commits`: is v3 better than v1 under
/// `policy`'s `prompt` class (at the head)?
fn v3_against_v1<'a>(
    policy: &'a ratchet_gate::Policy,
    commits: &'a [CommitId],
) -> ratchet_gate::Question<'a> {
    ratchet_gate::Question {
        class: "prompt",
        policy: policy.class("prompt").expect("class"),
        baseline: &commits[0],
        candidate: &commits[2],
        checkpoint: None,
        allow_unpinned: false,
    }
}

#[test]
fn the_gate_promotes_naming_its_own_decision_and_refuses_a_commit_against_itself() {
    use ratchet_orchestrate::{GateOptions, gate};
    let mut s = setup();
    let policy = policy();
    let q = v3_against_v1(&policy, &s.commits);
    // A dry run appends nothing and promotes nothing.
    let head = s.ledger.store().head().expect("head");
    let dry = gate(
        &mut s.ledger,
        &q,
        &GateOptions {
            dry_run: true,
            promote_in: Some(s.dir.path()),
        },
    )
    .expect("dry run");
    assert_eq!(
        dry.verdict.outcome,
        ratchet_gate::Outcome::Promote,
        "{dry:#?}"
    );
    assert_eq!((dry.decision, dry.promotion.is_none()), (None, true));
    assert_eq!(s.ledger.store().head().expect("head"), head);

    let run = gate(
        &mut s.ledger,
        &q,
        &GateOptions {
            dry_run: false,
            promote_in: Some(s.dir.path()),
        },
    )
    .expect("gate");
    let decision = run.decision.expect("recorded");
    assert_eq!(decision.seq, head.size + 1);
    let promotion = run.promotion.expect("promoted");
    let event = s
        .ledger
        .store()
        .event_by_seq(promotion.receipt.seq)
        .expect("read")
        .expect("event");
    let payload: serde_json::Value = serde_json::from_slice(&event.payload).expect("json");
    assert_eq!(
        payload["decision_seq"], decision.seq,
        "the decision's own seq"
    );

    let same = ratchet_gate::Question {
        candidate: &s.commits[0],
        ..q
    };
    let head = s.ledger.store().head().expect("head");
    assert!(matches!(
        gate(&mut s.ledger, &same, &GateOptions::default()),
        Err(Error::SameCommit { .. })
    ));
    assert_eq!(
        s.ledger.store().head().expect("head"),
        head,
        "nothing recorded"
    );
}

#[test]
fn heal_latest_acts_on_the_latest_recorded_alarm_or_says_there_is_none() {
    use ratchet_orchestrate::heal_latest;
    let mut s = setup();
    let dry = HealOptions {
        dry_run: true,
        ..HealOptions::default()
    };
    assert!(matches!(
        heal_latest(s.dir.path(), &mut s.ledger, None, &dry),
        Err(Error::NoAlarm)
    ));
    let head = s.ledger.store().head().expect("head").size;
    ratchet_drift::record_alarm(&mut s.ledger, &alarm_on(&s.commits[2], head)).expect("record");
    let (report, _) = heal_latest(s.dir.path(), &mut s.ledger, None, &dry).expect("heal");
    assert_eq!(report.alarmed, s.commits[2]);
    assert_eq!(report.chosen.as_ref(), Some(&s.commits[1]), "{report:#?}");
    assert!(!report.checked_out, "dry run");
    // Alarms of another commit only: none to act on.
    assert!(matches!(
        heal_latest(s.dir.path(), &mut s.ledger, Some(&s.commits[0]), &dry),
        Err(Error::NoAlarm)
    ));
}

#[test]
fn status_counts_what_the_store_holds_and_names_the_last_decision_and_alarm() {
    use ratchet_orchestrate::{GateOptions, gate, status};
    let mut s = setup();
    let before = status(s.ledger.store_mut(), None).expect("status");
    assert!(before.verification.is_valid());
    assert_eq!(before.overview.commits.len(), 3);
    let v3 = &before.overview.commits[2];
    assert_eq!(
        (v3.commit.as_str(), v3.scores),
        (s.commits[2].as_str(), 120)
    );
    assert_eq!(before.overview.scorers.len(), 1);
    assert_eq!(before.overview.scorers[0].commits, 3);
    assert_eq!(
        before.directions.get("quality"),
        Some(&ratchet_scorers::Direction::HigherIsBetter)
    );
    assert_eq!(before.overview.kinds.get("score"), Some(&320));
    assert!(before.last_decision.is_none() && before.last_alarm.is_none());

    let policy = policy();
    let q = v3_against_v1(&policy, &s.commits);
    let run = gate(&mut s.ledger, &q, &GateOptions::default()).expect("gate");
    let head = s.ledger.store().head().expect("head").size;
    ratchet_drift::record_alarm(&mut s.ledger, &alarm_on(&s.commits[2], head)).expect("alarm");
    let after = status(s.ledger.store_mut(), None).expect("status");
    let d = after.last_decision.expect("decision");
    assert_eq!(d.seq, run.decision.expect("recorded").seq);
    assert_eq!(
        (d.class.as_str(), d.outcome.verdict.as_str()),
        ("prompt", "promote")
    );
    assert_eq!(after.last_alarm.expect("alarm").commit, s.commits[2]);
}

#[test]
fn a_watch_starts_at_the_deployment_with_the_declared_harm_and_sees_a_drop() {
    let mut s = setup();
    let plan = WatchPlan {
        commit: s.commits[2].clone(),
        scorer: "quality".into(),
        from: None,
        chart: Some(Chart::Cusum { k: 0.5, h: 5.0 }),
        auto: (
            Chart::Cusum { k: 0.5, h: 5.0 },
            Chart::Cusum { k: 0.5, h: 5.0 },
        ),
        two_sided: false,
        min_n: 30,
        trust: ratchet_trace::Sources::key_holder(),
    };
    // Nothing says when v3 was deployed: the library says so in its terms.
    assert!(matches!(
        start_watch(&mut s.ledger, &plan),
        Err(Error::NoDeployment { commit }) if commit == s.commits[2]
    ));
    let promotion = record_promotion(s.dir.path(), &mut s.ledger, &s.commits[2], "prompt", None)
        .expect("promote");
    let mut monitor = start_watch(&mut s.ledger, &plan).expect("start");
    assert_eq!(monitor.position(), promotion.receipt.seq);
    assert_eq!(monitor.watch(), Watch::harm(false));
    // Live scores fall far below the baseline: the chart alarms on them.
    let fallen: Vec<Score> = (0..40)
        .map(|i| Score::new(s.commits[2].clone(), format!("after{i}"), "quality", 0.2))
        .collect();
    s.ledger.record_scores(&fallen, "live").expect("scores");
    let alarms = monitor.poll(s.ledger.view()).expect("poll");
    assert!(!alarms.is_empty(), "a drop of 0.6 raised no alarm");
    assert!(alarms.iter().all(|a| a.seq > promotion.receipt.seq));

    // An explicit start needs no deployment record.
    let mut fresh = setup();
    let at = fresh.ledger.store().head().expect("head").size;
    // (The fresh repository's commits: their ids carry the time they were
    // made, so they equal `s`'s only when both fall in the same second.)
    let explicit = WatchPlan {
        commit: fresh.commits[2].clone(),
        from: Some(at),
        ..plan
    };
    let m = start_watch(&mut fresh.ledger, &explicit).expect("start");
    assert_eq!(m.position(), at);
}

#[test]
fn commits_are_ranked_on_the_verified_view_warm_or_cold_alike() {
    let s = setup();
    // The warm owner's view ranks as a fresh verification's view does.
    let cold = s
        .ledger
        .store()
        .verified(&VerifyOptions::default())
        .expect("verifies");
    let direct = best_commit(&cold, &common::ranking("quality", 30, &[])).expect("rank");
    let ranked = best_commit(s.ledger.view(), &common::ranking("quality", 30, &[])).expect("rank");
    assert_eq!(ranked, direct);
    assert_eq!(ranked.len(), 3);
    let without = best_commit(
        s.ledger.view(),
        &common::ranking("quality", 30, &s.commits[..1]),
    )
    .expect("rank");
    assert_eq!(without.len(), 2);
    assert!(without.iter().all(|r| r.commit != s.commits[0]));
    // A keyed store opened without its key cannot have its MACs checked:
    // no view is folded from it, so nothing is ranked from it.
    let dir = tempfile::tempdir().expect("tempdir");
    let (key, _) = ratchet_trace::WriterKey::generate().expect("key");
    let mut keyed = Store::create(
        dir.path().join("s"),
        StoreOptions::default().writer_key(key),
    )
    .expect("store");
    keyed
        .record_score(&Score::new(s.commits[0].clone(), "t", "quality", 1.0), "x")
        .expect("score");
    drop(keyed);
    let unkeyed = Store::open(dir.path().join("s"), StoreOptions::default()).expect("open");
    assert!(matches!(
        unkeyed.verified(&VerifyOptions::default()),
        Err(ratchet_trace::Error::MacsUnchecked { .. })
    ));
    assert!(matches!(
        Ledger::new(unkeyed, VerifyOptions::default()),
        Err(ratchet_trace::Error::MacsUnchecked { .. })
    ));
}

#[test]
fn heal_never_checks_out_a_commit_the_gate_rejected_and_says_why_it_skipped_it() {
    use ratchet_orchestrate::{GateOptions, gate, heal_latest};
    let mut s = setup();
    let policy = policy();
    // v2 (0.85) asked against the deployed v3 (0.90 on the same tasks): rejected.
    let run = gate(
        &mut s.ledger,
        &ratchet_gate::Question {
            class: "prompt",
            policy: policy.class("prompt").expect("class"),
            baseline: &s.commits[2],
            candidate: &s.commits[1],
            checkpoint: None,
            allow_unpinned: false,
        },
        &GateOptions::default(),
    )
    .expect("gate");
    assert!(
        matches!(run.verdict.outcome, ratchet_gate::Outcome::Reject { .. }),
        "{:?}",
        run.verdict.outcome
    );
    let decision_seq = run.decision.expect("recorded").seq;
    let head = s.ledger.store().head().expect("head").size;
    ratchet_drift::record_alarm(&mut s.ledger, &alarm_on(&s.commits[2], head)).expect("record");
    let dry = HealOptions {
        dry_run: true,
        ..HealOptions::default()
    };
    let (report, _) = heal_latest(s.dir.path(), &mut s.ledger, None, &dry).expect("heal");
    // v2 ranks first on its scores, but the gate turned it down: v1 is chosen.
    assert_eq!(
        report.ranking.first().map(|r| &r.commit),
        Some(&s.commits[1])
    );
    assert_eq!(report.chosen.as_ref(), Some(&s.commits[0]), "{report:#?}");
    let (skipped, why) = report.skipped.first().expect("a skip");
    assert_eq!(skipped, &s.commits[1]);
    assert!(
        why.contains("gate rejected") && why.contains(&format!("seq {decision_seq}")),
        "{why}"
    );
}
