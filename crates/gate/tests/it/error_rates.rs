//! Error rates of `decide` itself, as wired: every run writes a fresh store
//! through the library, scores a baseline and a candidate on the same
//! tasks, and asks the gate. The rates are compared with what the gate's
//! docs promise, within three Monte-Carlo standard errors of the bound
//! (sqrt(b(1-b)/R)), with fixed seeds.
//!
//! Promises checked (α = β = 0.05 throughout):
//! * bernoulli (discordant pairs, a simple null): P(promote | no
//!   difference) ≤ α — it is an exact binomial SPRT whose truncated OC is
//!   below α (checked on the lattice) — and P(reject | θ = θ1) ≤ β / (1 − α)
//!   (Wald); and `calibrate`'s exact OC predicts the simulated rate.
//! * gaussian (paired differences, variance estimated) and paired (the
//!   GSPRT): Wald's bounds α / (1 − β) and β / (1 − α), which is what their
//!   docs promise for tests with estimated nuisance parameters.
//! * **as a control plane calls it** ([`simulate_polled`]): scores recorded
//!   in batches of ten as tasks complete, the gate asked after every batch
//!   through a warm [`Ledger`] until it stops saying "continue", with task
//!   names in arrival order, arbitrary, or the candidate's score arriving a
//!   batch before the baseline's for half the tasks: the same bounds.
//! * skewed differences (+0.05 on 90 % of tasks, −0.45 on 10 %, mean 0):
//!   betting holds α polled; gaussian never promotes beyond its bound (it
//!   refuses to judge such differences).

use rand::{Rng, SeedableRng, rngs::StdRng};
use rand_distr::{Distribution, Normal};
use ratchet_gate::{
    Outcome, Policy, Question, exact_bernoulli, logistic_score, monte_carlo, verdict_at, verdict_in,
};
use ratchet_testkit::{gap_class, gap_class_with_beta, paired_class_to};
use ratchet_trace::{CommitId, Durability, Ledger, Score, Store, StoreOptions, VerifyOptions};

/// One class per test kind, all on the scorer `s`, bounded far above any
/// simulated run (the elo class's hypotheses, 0 against 80, are wider than
/// the shared one).
fn policy_text() -> String {
    [
        gap_class("pass", "bernoulli", "s", 0.2, 100_000, ""),
        gap_class("cont", "gaussian", "s", 0.1, 100_000, ""),
        gap_class("bounded", "betting", "s", 0.1, 100_000, ""),
        // The issue 40 setting of `price.rs`: α 0.05, β 0.10, gap 0.2.
        gap_class_with_beta(
            "coin",
            "betting",
            "s",
            crate::price::BETA,
            crate::price::Data::PassFail.gap(),
            100_000,
            "",
        ),
        paired_class_to("elo", "s", 80.0, 100_000, ""),
    ]
    .concat()
}

const ALPHA: f64 = 0.05;
const BETA: f64 = 0.05;

#[derive(Debug, Default)]
struct Tally {
    promote: usize,
    reject: usize,
    open: usize,
    /// Observations the sequential test had read at the decisions (polled
    /// runs), summed.
    read: u64,
}

impl Tally {
    fn runs(&self) -> usize {
        self.promote + self.reject + self.open
    }
    fn rate(k: usize, n: usize) -> f64 {
        k as f64 / n as f64
    }
}

/// Three Monte-Carlo standard errors of a rate near `bound` over `runs`.
fn tolerance(bound: f64, runs: usize) -> f64 {
    3.0 * (bound * (1.0 - bound) / runs as f64).sqrt()
}

/// What every simulated run of a test shares: the policy and the two
/// commits it compares.
struct Scene {
    policy: Policy,
    base: CommitId,
    cand: CommitId,
}

impl Scene {
    fn new() -> Self {
        Scene {
            policy: Policy::parse(&policy_text()).expect("policy"),
            base: CommitId::parse(&"aa".repeat(20)).expect("commit"),
            cand: CommitId::parse(&"bb".repeat(20)).expect("commit"),
        }
    }

    /// The gate's question for `class`: the candidate against the baseline.
    fn question<'a>(&'a self, class: &'a str) -> Question<'a> {
        crate::common::question(
            class,
            self.policy.class(class).expect("class"),
            &self.base,
            &self.cand,
        )
    }
}

/// A fresh store for one simulated run (synchronous=NORMAL: a run measures
/// the gate, not power-loss durability).
fn run_store() -> (tempfile::TempDir, Store) {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = Store::create(
        dir.path().join("s"),
        StoreOptions::default().durability(Durability::Normal),
    )
    .expect("store");
    (dir, store)
}

/// `runs` gate decisions, each on a fresh store holding `tasks` tasks whose
/// (baseline, candidate) scores come from `draw`.
fn simulate(
    class: &str,
    runs: usize,
    tasks: usize,
    seed: u64,
    mut draw: impl FnMut(&mut StdRng) -> (f64, f64),
) -> Tally {
    let scene = Scene::new();
    let q = scene.question(class);
    let (base, cand) = (q.baseline, q.candidate);
    let mut rng = StdRng::seed_from_u64(seed);
    let mut tally = Tally::default();
    for _ in 0..runs {
        let (_dir, mut store) = run_store();
        let mut scores = Vec::with_capacity(2 * tasks);
        for t in 0..tasks {
            let (b, c) = draw(&mut rng);
            let task = format!("t{t:05}");
            scores.push(Score::new(base.clone(), task.clone(), "s", b));
            scores.push(Score::new(cand.clone(), task, "s", c));
        }
        store.record_scores(&scores, "sim").expect("scores");
        let head = store.head().expect("head").size;
        match verdict_at(&mut store, &q, head).expect("decide").outcome {
            Outcome::Promote => tally.promote += 1,
            Outcome::Reject { .. } => tally.reject += 1,
            Outcome::Continue { .. } => tally.open += 1,
        }
    }
    // The table in the gate's docs comes from these lines (--nocapture).
    eprintln!("{class} seed {seed}, {tasks} tasks: {tally:?}");
    tally
}

fn bernoulli_pair(rng: &mut StdRng, p_base: f64, p_cand: f64) -> (f64, f64) {
    (
        f64::from(u8::from(rng.random_bool(p_base))),
        f64::from(u8::from(rng.random_bool(p_cand))),
    )
}

#[test]
fn bernoulli_holds_alpha_at_the_null_and_beta_at_the_alternative() {
    let policy = Policy::parse(&policy_text()).expect("policy");
    let p = policy.class("pass").expect("class");
    let test = p.bernoulli_test().expect("test");

    // The null: both sides pass 70 % of tasks (the measured 9.4 % of the
    // old design came from this case).
    let runs = 600;
    let null = simulate("pass", runs, 300, 11, |r| bernoulli_pair(r, 0.7, 0.7));
    let promoted = Tally::rate(null.promote, runs);
    let exact = exact_bernoulli(&test, 0.5).expect("exact").p_promote;
    assert!(exact <= ALPHA, "the lattice OC at θ = ½ is {exact}");
    assert!(
        promoted <= ALPHA + tolerance(ALPHA, runs),
        "false promotes {promoted} over {runs} runs: {null:?}"
    );
    // calibrate's exact OC predicts the rate (runs still open can only have
    // lowered the simulated one).
    let open = Tally::rate(null.open, runs);
    assert!(
        (promoted - exact).abs() <= tolerance(exact, runs) + open,
        "simulated {promoted}, exact {exact}, open {open}"
    );

    // The alternative, exactly θ = θ1 = 0.6: a third of the pairs
    // discordant, and in those the candidate passed with probability 0.6.
    let (_, theta1) = p.discordant_hypotheses();
    let runs = 300;
    let alt = simulate("pass", runs, 1500, 12, |r| {
        if r.random_bool(1.0 / 3.0) {
            if r.random_bool(theta1) {
                (0.0, 1.0)
            } else {
                (1.0, 0.0)
            }
        } else {
            let both = f64::from(u8::from(r.random_bool(0.5)));
            (both, both)
        }
    });
    let bound = BETA / (1.0 - ALPHA);
    let rejected = Tally::rate(alt.reject, runs);
    assert!(
        rejected <= bound + tolerance(bound, runs),
        "false rejects {rejected}: {alt:?}"
    );
    assert!(alt.open * 20 < runs, "enough tasks to finish: {alt:?}");
    let exact_alt = exact_bernoulli(&test, theta1).expect("exact").p_promote;
    let promoted = Tally::rate(alt.promote, runs);
    assert!(
        (promoted - exact_alt).abs() <= tolerance(exact_alt, runs) + Tally::rate(alt.open, runs),
        "simulated {promoted}, exact {exact_alt}"
    );
}

#[test]
fn gaussian_holds_walds_bounds_at_the_null_and_the_alternative() {
    let sd = Normal::new(0.0, 0.2).expect("normal");
    let runs = 600;
    let null = simulate("cont", runs, 300, 21, |r| {
        (0.7 + sd.sample(r), 0.7 + sd.sample(r))
    });
    let bound = ALPHA / (1.0 - BETA);
    let promoted = Tally::rate(null.promote, runs);
    assert!(
        promoted <= bound + tolerance(bound, runs),
        "false promotes {promoted}: {null:?}"
    );
    // calibrate's Monte Carlo of the same test (differences N(0, 0.2·√2),
    // capped at the same 300 tasks) predicts decide's rate: the two
    // estimates agree within three standard errors of their difference.
    let policy = Policy::parse(&policy_text()).expect("policy");
    let test = policy
        .class("cont")
        .expect("class")
        .gaussian_test(ratchet_gate::Law::CURRENT)
        .expect("test");
    let diff = Normal::new(0.0, 0.2 * std::f64::consts::SQRT_2).expect("normal");
    let predicted = monte_carlo(&test, 20_000, 300, 23, |r| diff.sample(r))
        .expect("monte carlo")
        .point
        .p_promote;
    let se = (predicted * (1.0 - predicted) / 20_000.0
        + predicted * (1.0 - predicted) / runs as f64)
        .sqrt();
    assert!(
        (promoted - predicted).abs() <= 3.0 * se,
        "decide {promoted} vs calibrate {predicted}"
    );
    let runs = 300;
    let alt = simulate("cont", runs, 300, 22, |r| {
        (0.7 + sd.sample(r), 0.8 + sd.sample(r))
    });
    let bound = BETA / (1.0 - ALPHA);
    let rejected = Tally::rate(alt.reject, runs);
    assert!(
        rejected <= bound + tolerance(bound, runs),
        "false rejects {rejected}: {alt:?}"
    );
    assert!(alt.open * 20 < alt.runs(), "{alt:?}");
}

#[test]
fn paired_gsprt_holds_walds_bounds_at_the_null_and_the_alternative() {
    // Per task the candidate wins (1 vs 0.5) or loses (0 vs 0.5).
    let runs = 600;
    let null = simulate("elo", runs, 400, 31, |r| {
        (0.5, if r.random_bool(0.5) { 1.0 } else { 0.0 })
    });
    let bound = ALPHA / (1.0 - BETA);
    let promoted = Tally::rate(null.promote, runs);
    assert!(
        promoted <= bound + tolerance(bound, runs),
        "false promotes {promoted}: {null:?}"
    );
    let win = logistic_score(80.0);
    let runs = 300;
    let alt = simulate("elo", runs, 800, 32, |r| {
        (0.5, if r.random_bool(win) { 1.0 } else { 0.0 })
    });
    let bound = BETA / (1.0 - ALPHA);
    let rejected = Tally::rate(alt.reject, runs);
    assert!(
        rejected <= bound + tolerance(bound, runs),
        "false rejects {rejected}: {alt:?}"
    );
    assert!(alt.open * 20 < alt.runs(), "{alt:?}");
}

/// How the tasks of a polled run arrive.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Arrival {
    /// Task names in arrival order (`t00000`, `t00001`, …).
    Ordered,
    /// Arbitrary names (a random hex word per task).
    Arbitrary,
    /// Arbitrary names, and for half the tasks the candidate's score is
    /// recorded a batch before the baseline's.
    CandidateFirst,
}

/// `runs` control-plane runs: each on a fresh store, `tasks` tasks in
/// batches of `batch`, the gate asked through a warm ledger after every
/// batch until it decides. Returns the tally of the first decision (or
/// `open` when it never decided).
fn simulate_polled(
    class: &str,
    runs: usize,
    tasks: usize,
    batch: usize,
    arrival: Arrival,
    seed: u64,
    mut draw: impl FnMut(&mut StdRng) -> (f64, f64),
) -> Tally {
    let scene = Scene::new();
    let q = scene.question(class);
    let (base, cand) = (q.baseline, q.candidate);
    let mut rng = StdRng::seed_from_u64(seed);
    let mut tally = Tally::default();
    for _ in 0..runs {
        let (_dir, store) = run_store();
        let mut ledger = Ledger::new(store, VerifyOptions::default()).expect("ledger");
        let mut held_back: Vec<Score> = Vec::new();
        let mut outcome = None;
        for start in (0..tasks).step_by(batch) {
            let mut scores = std::mem::take(&mut held_back);
            for t in start..(start + batch).min(tasks) {
                let (b, c) = draw(&mut rng);
                let task = match arrival {
                    Arrival::Ordered => format!("t{t:05}"),
                    _ => format!("{:016x}", rng.random::<u64>()),
                };
                let b = Score::new(base.clone(), task.clone(), "s", b);
                let c = Score::new(cand.clone(), task, "s", c);
                if arrival == Arrival::CandidateFirst && rng.random_bool(0.5) {
                    scores.push(c);
                    held_back.push(b);
                } else {
                    scores.push(b);
                    scores.push(c);
                }
            }
            ledger.record_scores(&scores, "sim").expect("scores");
            let verdict = verdict_in(&mut ledger, &q).expect("decide");
            let read = verdict.sequential().map_or(0, |f| f.n);
            match verdict.outcome {
                Outcome::Continue { .. } => {}
                other => {
                    tally.read += read;
                    outcome = Some(other);
                    break;
                }
            }
        }
        if outcome.is_none() && !held_back.is_empty() {
            ledger.record_scores(&held_back, "sim").expect("scores");
            if let o @ (Outcome::Promote | Outcome::Reject { .. }) =
                verdict_in(&mut ledger, &q).expect("decide").outcome
            {
                outcome = Some(o);
            }
        }
        match outcome {
            Some(Outcome::Promote) => tally.promote += 1,
            Some(Outcome::Reject { .. }) => tally.reject += 1,
            _ => tally.open += 1,
        }
    }
    eprintln!(
        "{class} polled ({arrival:?}, batches of {batch}) seed {seed}, {tasks} tasks: {tally:?}"
    );
    tally
}

/// Differences of +0.05 on 90 % of tasks and −0.45 on 10 % (mean 0):
/// scores in [0, 1] whose rare large losses a plug-in variance misses.
fn skewed_null(r: &mut StdRng) -> (f64, f64) {
    let b = 0.5;
    (
        b,
        if r.random_bool(0.9) {
            b + 0.05
        } else {
            b - 0.45
        },
    )
}

#[test]
fn polling_after_every_batch_holds_alpha_whatever_the_names_and_arrival() {
    let sd = Normal::new(0.0, 0.2).expect("normal");
    let bound = ALPHA / (1.0 - BETA);
    let runs = 400;
    for (arrival, seed) in [
        (Arrival::Ordered, 41),
        (Arrival::Arbitrary, 42),
        (Arrival::CandidateFirst, 43),
    ] {
        let null = simulate_polled("cont", runs, 300, 10, arrival, seed, |r| {
            (0.5 + sd.sample(r), 0.5 + sd.sample(r))
        });
        let promoted = Tally::rate(null.promote, runs);
        assert!(
            promoted <= bound + tolerance(bound, runs),
            "gaussian, {arrival:?}: false promotes {promoted}: {null:?}"
        );
    }
    let null = simulate_polled("pass", runs, 300, 10, Arrival::Arbitrary, 44, |r| {
        bernoulli_pair(r, 0.7, 0.7)
    });
    let promoted = Tally::rate(null.promote, runs);
    assert!(
        promoted <= ALPHA + tolerance(ALPHA, runs),
        "bernoulli, arbitrary names: false promotes {promoted}: {null:?}"
    );
    let null = simulate_polled("elo", runs, 400, 10, Arrival::CandidateFirst, 45, |r| {
        (0.5, if r.random_bool(0.5) { 1.0 } else { 0.0 })
    });
    let promoted = Tally::rate(null.promote, runs);
    assert!(
        promoted <= bound + tolerance(bound, runs),
        "paired, candidate first: false promotes {promoted}: {null:?}"
    );
}

#[test]
fn skewed_differences_promote_at_most_alpha_with_betting_and_never_beyond_the_bound_with_gaussian()
{
    let runs = 400;
    // Betting: valid for any bounded scores, polled after every batch.
    let polled = simulate_polled(
        "bounded",
        runs,
        300,
        10,
        Arrival::Arbitrary,
        51,
        skewed_null,
    );
    let promoted = Tally::rate(polled.promote, runs);
    assert!(
        promoted <= ALPHA + tolerance(ALPHA, runs),
        "betting, skewed null, polled: {promoted}: {polled:?}"
    );
    // Gaussian, one look at all 200 tasks (the issue measured 0.170): it
    // refuses the skewed differences instead of promoting on them.
    let once = simulate("cont", runs, 200, 52, skewed_null);
    let promoted = Tally::rate(once.promote, runs);
    let bound = ALPHA / (1.0 - BETA);
    assert!(
        promoted <= bound + tolerance(bound, runs),
        "gaussian, skewed null, one look: {promoted}: {once:?}"
    );
    // And betting still finds a real improvement on such scores.
    let runs = 100;
    let better = simulate_polled("bounded", runs, 2000, 50, Arrival::Arbitrary, 53, |r| {
        let (b, c) = skewed_null(r);
        (b, (c + 0.15).min(1.0))
    });
    assert!(
        better.promote * 10 >= runs * 9,
        "betting's power at a 0.15 improvement: {better:?}"
    );
}

/// Issue 40, item 4, through `decide` as a control plane asks it (batches
/// of ten, arbitrary names, the gate asked after every batch): the default
/// kind on pass/fail scores, every pair discordant, α 0.05 and β 0.10 at
/// gap 0.2 (θ₁ 0.6). At no effect it promotes at most α of the time, at the
/// gap it rejects at most β (three Monte-Carlo standard errors over 300
/// runs: 0.038 and 0.052), and at the gap the tasks it read to decide are
/// at most 1.2× Wald's exact ASN plus three standard errors of their mean
/// (sd(N) ≤ ASN, so ≤ 3·ASN/√runs; the earlier laws' bets read 1.97×).
#[test]
fn the_default_test_polled_after_every_batch_holds_alpha_and_beta_at_about_walds_price() {
    use crate::price::{BETA as DESIGN_BETA, Data, wald};
    let runs = 300;
    let data = Data::PassFail;
    let pair = |r: &mut StdRng, effect: f64| {
        if data.draw(r, effect) > 0.0 {
            (0.0, 1.0)
        } else {
            (1.0, 0.0)
        }
    };
    let null = simulate_polled("coin", runs, 3000, 10, Arrival::Arbitrary, 61, |r| {
        pair(r, 0.0)
    });
    let promoted = Tally::rate(null.promote, runs);
    assert!(
        promoted <= ALPHA + tolerance(ALPHA, runs),
        "false promotes {promoted}: {null:?}"
    );
    let gap = data.gap();
    let design = simulate_polled("coin", runs, 3000, 10, Arrival::Arbitrary, 62, |r| {
        pair(r, gap)
    });
    let rejected = Tally::rate(design.reject, runs);
    assert!(
        rejected <= DESIGN_BETA + tolerance(DESIGN_BETA, runs),
        "false rejects {rejected}: {design:?}"
    );
    assert_eq!(design.open + null.open, 0, "every run decided");
    let (wald_n, _) = wald(data, gap, 0, 0).expect("exact");
    let asn = design.read as f64 / runs as f64;
    eprintln!("coin at the gap, polled: {asn:.1} tasks against Wald's {wald_n:.1}");
    assert!(
        asn <= 1.2 * wald_n + 3.0 * asn / (runs as f64).sqrt(),
        "{asn:.1} tasks to a decision against Wald's {wald_n:.1}"
    );
}
