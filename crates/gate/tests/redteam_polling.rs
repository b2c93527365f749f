//! Red-team of the gate as it is polled ("Error rates, as the gate is
//! really called"; ARCHITECTURE.md, "the law as used"): an agent that
//! writes the candidate's evidence — any order, any task names, repeats,
//! extra tasks, out-of-range values, other scorer versions — but never the
//! baseline's. Every simulation is seeded.

use rand::{Rng, SeedableRng, rngs::StdRng};
use rand_distr::{Distribution, Normal};
use ratchet_gate::{
    GateStatus, Outcome, Policy, Question, RejectCause, SequentialDetails, StageDetails, Verdict,
    verdict_in,
};
use ratchet_trace::{CommitId, Durability, Ledger, Score, Store, StoreOptions, VerifyOptions};

const POLICY: &str = r#"
[class.bounded]
scorer = "s"
test = "betting"
alpha = 0.05
beta = 0.05
gap = 0.1
max_n = 100000

[class.short]
scorer = "s"
test = "betting"
alpha = 0.05
beta = 0.05
gap = 0.1
max_n = 5

[class.cont]
scorer = "s"
test = "gaussian"
alpha = 0.05
beta = 0.05
gap = 0.1
max_n = 100000

[class.guarded]
scorer = "s"
test = "betting"
alpha = 0.05
beta = 0.05
gap = 0.1
max_n = 100000

[[class.guarded.guardrail]]
scorer = "cost"
direction = "lower"
margin = 0.05
margin_kind = "relative"
method = "welch"

[class.guarded_seq]
scorer = "s"
test = "betting"
alpha = 0.05
beta = 0.05
gap = 0.1
max_n = 100000

[[class.guarded_seq.guardrail]]
scorer = "cost"
direction = "lower"
margin = 0.05
margin_kind = "relative"
method = "sequence"
"#;

fn base() -> CommitId {
    CommitId::parse(&"aa".repeat(20)).expect("commit")
}
fn cand() -> CommitId {
    CommitId::parse(&"bb".repeat(20)).expect("commit")
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
    let q = Question {
        class,
        policy: policy.class(class).expect("class"),
        baseline: &b,
        candidate: &c,
        checkpoint: None,
    };
    verdict_in(ledger, &q).expect("verdict")
}

fn sequential(v: &Verdict) -> Option<&SequentialDetails> {
    v.stages.iter().find_map(|s| match &s.details {
        StageDetails::Sequential(d) => Some(d),
        _ => None,
    })
}

fn policy() -> Policy {
    Policy::parse(POLICY).expect("policy")
}

// ---------------------------------------------------------------------------
// Attack A: the scorer version is chosen by the newest score of either side,
// so a candidate re-running ONE task under another version the baseline was
// also scored at switches the sequence the gate reads.
// ---------------------------------------------------------------------------

/// Baseline scored at two versions (a rubric change re-scored it); the
/// candidate's scores under each differ. A repeat of an already-scored task
/// under the other version (its value is never read: only first scores
/// count) must not change what the gate reads.
#[test]
fn attack_a_a_repeat_under_another_scorer_version_does_not_switch_the_sequence() {
    let p = policy();
    let (_d, mut l) = ledger();
    let (b, c) = (base(), cand());
    let mut scores = Vec::new();
    for t in 0..60 {
        let task = format!("t{t:03}");
        for v in ["v1", "v2"] {
            scores.push(score(&b, &task, "s", v, 0.5));
        }
        // Under v1 the candidate is no better; under v2 it looks far better.
        scores.push(score(&c, &task, "s", "v2", 0.9));
        scores.push(score(&c, &task, "s", "v1", 0.5));
    }
    l.record_scores(&scores, "sim").expect("scores");
    let first = ask(&mut l, &p, "bounded");
    // A re-run of task t000 under v2 (ignored as a value: not its first).
    l.record_scores(&[score(&c, "t000", "s", "v2", 0.0)], "rerun")
        .expect("rerun");
    let second = ask(&mut l, &p, "bounded");
    eprintln!(
        "attack A: before the re-run {:?} {:?} n={:?}; after {:?} {:?} n={:?}",
        first.scorer_versions,
        first.outcome.status(),
        sequential(&first).map(|s| s.n),
        second.scorer_versions,
        second.outcome.status(),
        sequential(&second).map(|s| s.n),
    );
    assert_eq!(
        first.scorer_versions, second.scorer_versions,
        "a repeated task switched the scorer version the gate reads"
    );
    assert_eq!(first.outcome.status(), second.outcome.status());
}

/// The statistical form: a null candidate (same score distribution as the
/// baseline at every version), `k` versions on both sides, independent
/// re-scores per version. The adversary, before each poll, re-runs one
/// task under whichever version gives it the best verdict. The promise:
/// polling still holds α.
#[test]
fn attack_a_version_shopping_under_polling_holds_alpha() {
    let p = policy();
    let versions = ["v1", "v2", "v3", "v4"];
    let (runs, tasks, batch) = (150, 200, 10);
    let sd = Normal::new(0.0, 0.1).expect("normal");
    let mut rng = StdRng::seed_from_u64(7101);
    let (b, c) = (base(), cand());
    let (mut promoted, mut honest_promoted) = (0, 0);
    for _ in 0..runs {
        let (_d, mut l) = ledger();
        let mut honest: Option<GateStatus> = None;
        let mut shopped: Option<GateStatus> = None;
        for start in (0..tasks).step_by(batch) {
            let mut scores = Vec::new();
            for t in start..start + batch {
                let task = format!("t{t:04}");
                for v in versions {
                    let x = |r: &mut StdRng| (0.5 + sd.sample(r)).clamp(0.0, 1.0);
                    scores.push(score(&b, &task, "s", v, x(&mut rng)));
                    scores.push(score(&c, &task, "s", v, x(&mut rng)));
                }
            }
            l.record_scores(&scores, "sim").expect("scores");
            // The honest reading: whatever version was written last (v4).
            if honest.is_none() {
                let s = ask(&mut l, &p, "bounded").outcome.status();
                if s != GateStatus::Continue {
                    honest = Some(s);
                }
            }
            if shopped.is_none() {
                let mut best = None;
                for v in versions {
                    // Re-run the batch's first task under v: never read.
                    let task = format!("t{start:04}");
                    l.record_scores(&[score(&c, &task, "s", v, 0.0)], "rerun")
                        .expect("rerun");
                    let s = ask(&mut l, &p, "bounded").outcome.status();
                    let rank = match s {
                        GateStatus::Promote => 2,
                        GateStatus::Continue => 1,
                        _ => 0,
                    };
                    if best.is_none_or(|(r, _, _)| rank > r) {
                        best = Some((rank, v, s));
                    }
                }
                let (_, v, s) = best.expect("a version");
                let task = format!("t{start:04}");
                l.record_scores(&[score(&c, &task, "s", v, 0.0)], "rerun")
                    .expect("rerun");
                let official = ask(&mut l, &p, "bounded").outcome.status();
                assert_eq!(official, s);
                if official != GateStatus::Continue {
                    shopped = Some(official);
                }
            }
            if honest.is_some() && shopped.is_some() {
                break;
            }
        }
        honest_promoted += usize::from(honest == Some(GateStatus::Promote));
        promoted += usize::from(shopped == Some(GateStatus::Promote));
    }
    let rate = promoted as f64 / runs as f64;
    let honest_rate = honest_promoted as f64 / runs as f64;
    eprintln!("attack A polled: honest {honest_rate}, version-shopping {rate} over {runs} runs");
    let tol = 3.0 * (0.05f64 * 0.95 / runs as f64).sqrt();
    assert!(rate <= 0.05 + tol, "false promotes {rate} > α");
}

// ---------------------------------------------------------------------------
// Attack B: a skipped guardrail task. The primary sequence waits at a gap;
// does the guardrail?
// ---------------------------------------------------------------------------

fn guardrail_world(record_all_costs: bool) -> (tempfile::TempDir, Ledger) {
    let (d, mut l) = ledger();
    let (b, c) = (base(), cand());
    let mut scores = Vec::new();
    for t in 0..60 {
        let task = format!("t{t:03}");
        scores.push(score(&b, &task, "s", "1", 0.2));
        scores.push(score(&c, &task, "s", "1", 0.9));
        scores.push(score(&b, &task, "cost", "1", 1.0 + 0.01 * f64::from(t % 2)));
        // The candidate costs the same on the first ten tasks, triple after.
        let cost = if t < 10 {
            1.0 + 0.01 * f64::from(t % 2)
        } else {
            3.0
        };
        if record_all_costs || t < 10 {
            scores.push(score(&c, &task, "cost", "1", cost));
        }
    }
    l.record_scores(&scores, "sim").expect("scores");
    (d, l)
}

#[test]
fn attack_b_skipping_guardrail_tasks_never_promotes_a_costlier_candidate() {
    let p = policy();
    for class in ["guarded", "guarded_seq"] {
        let (_d, mut honest) = guardrail_world(true);
        let h = ask(&mut honest, &p, class);
        assert_ne!(h.outcome.status(), GateStatus::Promote, "{class}: {h:#?}");
        let (_d, mut skip) = guardrail_world(false);
        let s = ask(&mut skip, &p, class);
        eprintln!(
            "attack B {class}: all costs recorded -> {:?}; costs of tasks 10.. withheld -> {:?}",
            h.outcome.status(),
            s.outcome.status()
        );
        assert_ne!(
            s.outcome.status(),
            GateStatus::Promote,
            "{class}: withholding the guardrail's hard tasks promoted: {:?}",
            s.outcome
        );
    }
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
