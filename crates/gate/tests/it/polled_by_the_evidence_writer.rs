//! Red-team of the gate as it is polled ("Error rates, as the gate is
//! really called"; docs/design.md, "the law as used"): an agent that
//! writes the candidate's evidence — any order, any task names, repeats,
//! extra tasks, out-of-range values, other scorer versions — but never the
//! baseline's. Every simulation is seeded.

use crate::common;
use rand::{Rng, SeedableRng, rngs::StdRng};
use rand_distr::{Distribution, Normal};
use ratchet_gate::{
    GateStatus, Outcome, Policy, RejectCause, SequentialDetails, StageDetails, Verdict, verdict_in,
};
use ratchet_testkit::{commit, gap_class, guardrail};
use ratchet_trace::{CommitId, Durability, Ledger, Score, Store, StoreOptions, VerifyOptions};

/// Betting classes (one stopped at five observations, two guarded on cost
/// by each guardrail method) and a Gaussian one, all on the scorer `s`.
fn policy_text() -> String {
    let cost = |class: &str, method: &str| {
        guardrail(
            class,
            "cost",
            "lower",
            0.05,
            "relative",
            &format!("method = \"{method}\"\n"),
        )
    };
    [
        gap_class("bounded", "betting", "s", 0.1, 100_000, ""),
        gap_class("short", "betting", "s", 0.1, 5, ""),
        gap_class("cont", "gaussian", "s", 0.1, 100_000, ""),
        gap_class("guarded", "betting", "s", 0.1, 100_000, ""),
        cost("guarded", "welch"),
        gap_class("guarded_seq", "betting", "s", 0.1, 100_000, ""),
        cost("guarded_seq", "sequence"),
    ]
    .concat()
}

fn base() -> CommitId {
    commit(0xaa)
}
fn cand() -> CommitId {
    commit(0xbb)
}

fn score(commit: &CommitId, task: &str, scorer: &str, version: &str, value: f64) -> Score {
    let mut s = Score::new(commit.clone(), task, scorer, value);
    s.scorer_version = version.into();
    s
}

fn ledger() -> (tempfile::TempDir, Ledger) {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = Store::create(
        dir.path().join("s"),
        StoreOptions::default().durability(Durability::Normal),
    )
    .expect("store");
    let ledger = Ledger::new(store, VerifyOptions::default()).expect("ledger");
    (dir, ledger)
}

fn ask(ledger: &mut Ledger, policy: &Policy, class: &str) -> Verdict {
    let (b, c) = (base(), cand());
    let q = common::question(class, policy.class(class).expect("class"), &b, &c);
    verdict_in(ledger, &q).expect("verdict")
}

fn sequential(v: &Verdict) -> Option<&SequentialDetails> {
    v.stages.iter().find_map(|s| match &s.details {
        StageDetails::Sequential(d) => Some(d),
        _ => None,
    })
}

fn policy() -> Policy {
    Policy::parse(&policy_text()).expect("policy")
}

// ---------------------------------------------------------------------------
// Attack C: gaussian on strongly skewed differences whose skew does not show
// before the stop (noisy small gains, rare large losses, mean 0).
// ---------------------------------------------------------------------------

#[test]
fn attack_c_gaussian_never_promotes_noisy_gains_with_rare_large_losses_beyond_its_bound() {
    let p = policy();
    let (runs, tasks, batch) = (300, 300, 10);
    let noise = Normal::new(0.0, 0.02).expect("normal");
    let mut rng = StdRng::seed_from_u64(7301);
    let (b, c) = (base(), cand());
    let mut promoted = 0;
    for _ in 0..runs {
        let (_d, mut l) = ledger();
        for start in (0..tasks).step_by(batch) {
            let mut scores = Vec::new();
            for t in start..start + batch {
                let task = format!("t{t:04}");
                // Differences +0.05 + N(0, 0.02) on 90 %, −0.45 on 10 %: mean 0,
                // population skewness ≈ −2.6.
                let d = if rng.random_bool(0.9) {
                    0.05 + noise.sample(&mut rng)
                } else {
                    -0.45
                };
                scores.push(score(&b, &task, "s", "1", 0.5));
                scores.push(score(&c, &task, "s", "1", 0.5 + d));
            }
            l.record_scores(&scores, "sim").expect("scores");
            match ask(&mut l, &p, "cont").outcome.status() {
                GateStatus::Continue => {}
                s => {
                    promoted += usize::from(s == GateStatus::Promote);
                    break;
                }
            }
        }
    }
    let rate = promoted as f64 / runs as f64;
    let bound = 0.05 / 0.95;
    eprintln!("attack C: gaussian false promotes {rate} over {runs} runs (bound {bound:.4})");
    let tol = 3.0 * (bound * (1.0 - bound) / runs as f64).sqrt();
    assert!(rate <= bound + tol, "false promotes {rate}");
}

// ---------------------------------------------------------------------------
// Pins: what the candidate's writer cannot do.
// ---------------------------------------------------------------------------

/// Repeats under the chosen version, duplicates inside one batch, extra
/// candidate-only tasks and scores recorded before the baseline's change
/// nothing: the verdict after them equals the verdict without them.
#[test]
fn repeats_duplicates_extra_tasks_and_early_scores_change_nothing() {
    let p = policy();
    let mut rng = StdRng::seed_from_u64(7401);
    let (b, c) = (base(), cand());
    let draws: Vec<(f64, f64)> = (0..80)
        .map(|_| (rng.random::<f64>(), rng.random::<f64>()))
        .collect();
    // Plain: pairs in order.
    let (_d1, mut plain) = ledger();
    let scores: Vec<Score> = draws
        .iter()
        .enumerate()
        .flat_map(|(t, &(x, y))| {
            let task = format!("t{t:03}");
            [score(&b, &task, "s", "1", x), score(&c, &task, "s", "1", y)]
        })
        .collect();
    plain.record_scores(&scores, "sim").expect("scores");
    let want = ask(&mut plain, &p, "bounded");
    // Adversarial: the candidate writes first (before any baseline score),
    // in reverse order, each task twice in one batch (the second a perfect
    // 1.0), plus candidate-only tasks with perfect scores, then re-runs.
    let (_d2, mut adv) = ledger();
    let mut cand_scores = Vec::new();
    for (t, &(_, y)) in draws.iter().enumerate().rev() {
        let task = format!("t{t:03}");
        cand_scores.push(score(&c, &task, "s", "1", y));
        cand_scores.push(score(&c, &task, "s", "1", 1.0));
    }
    for extra in 0..50 {
        cand_scores.push(score(&c, &format!("zz{extra}"), "s", "1", 1.0));
    }
    adv.record_scores(&cand_scores, "cand").expect("scores");
    let base_scores: Vec<Score> = draws
        .iter()
        .enumerate()
        .map(|(t, &(x, _))| score(&b, &format!("t{t:03}"), "s", "1", x))
        .collect();
    adv.record_scores(&base_scores, "base").expect("scores");
    let reruns: Vec<Score> = (0..80)
        .map(|t| score(&c, &format!("t{t:03}"), "s", "1", 1.0))
        .collect();
    adv.record_scores(&reruns, "rerun").expect("scores");
    let got = ask(&mut adv, &p, "bounded");
    assert_eq!(got.outcome.status(), want.outcome.status());
    let (g, w) = (
        sequential(&got).expect("seq"),
        sequential(&want).expect("seq"),
    );
    assert_eq!((g.n, g.llr.to_bits()), (w.n, w.llr.to_bits()));
    assert_eq!(g.tasks_available, w.tasks_available);
}

/// A candidate score outside the betting range is refused, and a later
/// in-range re-run of the task does not launder it.
#[test]
fn an_out_of_range_candidate_score_is_refused_and_not_laundered_by_a_rerun() {
    let p = policy();
    let (b, c) = (base(), cand());
    for bad in [1.5, -0.25, 1e300, -1e300, 1.0 + f64::EPSILON] {
        let (_d, mut l) = ledger();
        let mut scores = Vec::new();
        for t in 0..40 {
            let task = format!("t{t:03}");
            scores.push(score(&b, &task, "s", "1", 0.0));
            scores.push(score(&c, &task, "s", "1", if t == 3 { bad } else { 1.0 }));
        }
        l.record_scores(&scores, "sim").expect("scores");
        let v = ask(&mut l, &p, "bounded");
        assert_eq!(v.outcome.status(), GateStatus::MissingEvidence, "{bad}");
        l.record_scores(&[score(&c, "t003", "s", "1", 1.0)], "rerun")
            .expect("rerun");
        let v = ask(&mut l, &p, "bounded");
        assert_eq!(v.outcome.status(), GateStatus::MissingEvidence, "{bad}");
    }
}

/// A version only the candidate wrote is never the one read.
#[test]
fn a_version_only_the_candidate_wrote_is_not_read() {
    let p = policy();
    let (b, c) = (base(), cand());
    let (_d, mut l) = ledger();
    let mut scores = Vec::new();
    for t in 0..30 {
        let task = format!("t{t:03}");
        scores.push(score(&b, &task, "s", "1", 0.5));
        scores.push(score(&c, &task, "s", "1", 0.5));
        scores.push(score(&c, &task, "s", "9", 1.0));
    }
    l.record_scores(&scores, "sim").expect("scores");
    let v = ask(&mut l, &p, "bounded");
    assert_eq!(v.scorer_versions.get("s").map(String::as_str), Some("1"));
    assert_ne!(v.outcome.status(), GateStatus::Promote);
}

/// Truncation: a test that reaches max_n undecided is `truncated`, never a
/// promote, at that poll and every later one.
#[test]
fn a_truncated_test_is_truncated_at_every_later_poll() {
    let p = policy();
    let (b, c) = (base(), cand());
    let (_d, mut l) = ledger();
    let mut scores = Vec::new();
    for t in 0..5 {
        let task = format!("t{t:03}");
        scores.push(score(&b, &task, "s", "1", 0.5));
        scores.push(score(&c, &task, "s", "1", 0.5));
    }
    l.record_scores(&scores, "sim").expect("scores");
    let v = ask(&mut l, &p, "short");
    assert_eq!(v.outcome.status(), GateStatus::Truncated, "{:?}", v.outcome);
    assert!(matches!(
        v.outcome,
        Outcome::Reject {
            cause: RejectCause::Truncated,
            ..
        }
    ));
    // Perfect candidate scores afterwards: still truncated.
    let more: Vec<Score> = (5..100)
        .flat_map(|t| {
            let task = format!("t{t:03}");
            [
                score(&b, &task, "s", "1", 0.0),
                score(&c, &task, "s", "1", 1.0),
            ]
        })
        .collect();
    l.record_scores(&more, "sim").expect("scores");
    let v = ask(&mut l, &p, "short");
    assert_eq!(v.outcome.status(), GateStatus::Truncated, "{:?}", v.outcome);
}

// ---------------------------------------------------------------------------
// Attack A (found, fixed): with the baseline scored under two versions, one
// candidate re-run under the other version used to switch the version read
// (the newest either side had) and so the sequence: reject under v1, then
// promote under v2. The version is now the baseline's newest alone.
// ---------------------------------------------------------------------------

#[test]
fn attack_a_a_rerun_under_another_version_does_not_switch_the_sequence() {
    let p = policy();
    let (b, c) = (base(), cand());
    let (_d, mut l) = ledger();
    let mut scores = Vec::new();
    for t in 0..60 {
        let task = format!("t{t:03}");
        scores.push(score(&b, &task, "s", "v1", 0.5));
        scores.push(score(&b, &task, "s", "v2", 0.5));
    }
    for t in 0..60 {
        let task = format!("t{t:03}");
        scores.push(score(&c, &task, "s", "v2", 0.9));
        scores.push(score(&c, &task, "s", "v1", 0.5));
    }
    l.record_scores(&scores, "sim").expect("scores");
    let before = ask(&mut l, &p, "bounded");
    l.record_scores(&[score(&c, "t000", "s", "v2", 0.0)], "sim")
        .expect("rerun");
    let after = ask(&mut l, &p, "bounded");
    assert_eq!(before.scorer_versions, after.scorer_versions);
    assert_eq!(
        before.outcome.status(),
        after.outcome.status(),
        "{after:#?}"
    );
    assert_eq!(
        sequential(&before).map(|d| d.n),
        sequential(&after).map(|d| d.n)
    );
}

// ---------------------------------------------------------------------------
// Attack B (found, fixed): a guardrail judged the prefix before the first
// task the candidate left without a cost score. It now waits there, among
// the tasks the sequential test read.
// ---------------------------------------------------------------------------

#[test]
fn attack_b_leaving_out_costly_tasks_does_not_pass_a_guardrail() {
    let p = policy();
    let (b, c) = (base(), cand());
    for class in ["guarded", "guarded_seq"] {
        let (_d, mut l) = ledger();
        let mut scores = Vec::new();
        for t in 0..60u32 {
            let task = format!("t{t:03}");
            scores.push(score(&b, &task, "s", "1", 0.2));
            scores.push(score(&c, &task, "s", "1", 0.9));
            scores.push(score(&b, &task, "cost", "1", 1.0 + 0.01 * f64::from(t % 2)));
            if t < 10 {
                scores.push(score(&c, &task, "cost", "1", 1.0 + 0.01 * f64::from(t % 2)));
            }
        }
        l.record_scores(&scores, "sim").expect("scores");
        let v = ask(&mut l, &p, class);
        assert_ne!(v.outcome.status(), GateStatus::Promote, "{class}: {v:#?}");
        // With every cost recorded (3.0 after task 10), it is rejected.
        let rest: Vec<Score> = (10..60)
            .map(|t| score(&c, &format!("t{t:03}"), "cost", "1", 3.0))
            .collect();
        l.record_scores(&rest, "sim").expect("scores");
        let v = ask(&mut l, &p, class);
        assert_ne!(v.outcome.status(), GateStatus::Promote, "{class}: {v:#?}");
    }
}
