//! The betting test against Waudby-Smith & Ramdas's own implementation
//! (`confseq`, fixtures made by tests/fixtures/betting.py): the capital
//! processes step by step, and the confidence sequence's ends within its
//! grid; then its coverage at a sequential test's stop, by seeded
//! simulation. The capital tuned to the design effect
//! ([`BettingCapital::toward`], law 4) against Wald's likelihood ratio,
//! which it is on pass/fail differences.

use rand::{Rng, SeedableRng, rngs::StdRng};
use ratchet_gate::{
    BernoulliSprt, BettingCapital, BettingTest, Boundaries, SequentialTest, TestState,
    betting_interval,
};
use serde_json::Value;

fn fixture() -> Value {
    serde_json::from_str(include_str!("../fixtures/betting.json")).expect("fixture is JSON")
}

fn numbers(v: &Value) -> Vec<f64> {
    v.as_array()
        .expect("array")
        .iter()
        .map(|x| x.as_f64().expect("number"))
        .collect()
}

#[test]
fn the_capital_matches_confseq_at_every_step() {
    let f = fixture();
    let cases = f["capital"].as_array().expect("cases");
    assert_eq!(cases.len(), 30);
    for c in cases {
        let name = c["sequence"].as_str().expect("name");
        let xs = numbers(&f["sequences"][name]);
        let (m, alpha) = (
            c["m"].as_f64().expect("m"),
            c["alpha"].as_f64().expect("alpha"),
        );
        let mut k = match c["side"].as_str() {
            Some("above") => BettingCapital::above(m, alpha),
            _ => BettingCapital::below(m, alpha),
        }
        .expect("capital");
        let want = numbers(&c["log_capital"]);
        assert_eq!(want.len(), xs.len());
        for (t, (&x, &w)) in xs.iter().zip(&want).enumerate() {
            k.observe(x).expect("in range");
            let got = k.log_capital();
            assert!(
                (got - w).abs() <= 1e-9 * w.abs().max(1.0),
                "{name} m {m} α {alpha} {}: step {t}: {got} vs confseq {w}",
                c["side"]
            );
        }
    }
}

/// On pass/fail differences (x = 1 the candidate passed, 0 the baseline),
/// the capital tuned to θ₁ against ½ is Wald's likelihood ratio at every
/// step, to rounding: its bet is the constant 4(θ₁ − ½), so each factor is
/// θ₁/½ or (1 − θ₁)/½. A tie (a concordant pair, x = ½) leaves it as it was.
#[test]
fn on_pass_fail_differences_the_tuned_capital_is_walds_likelihood_ratio() {
    let mut rng = StdRng::seed_from_u64(40);
    for theta1 in [0.55, 0.6, 0.75] {
        let mut k = BettingCapital::toward(0.5, theta1).expect("capital");
        // The LLR at (pairs, wins) from the lattice formula: the state
        // machine itself stops moving once it crosses a boundary.
        let wald = BernoulliSprt::new(0.5, theta1, Boundaries::new(0.05, 0.1).expect("bounds"))
            .expect("sprt");
        let mut wins = 0;
        for t in 1..=2000 {
            let won = rng.random_bool(0.58);
            wins += u64::from(won);
            k.observe(f64::from(u8::from(won))).expect("in range");
            let (got, want) = (k.log_capital(), wald.llr_at(t, wins));
            assert!(
                (got - want).abs() <= 1e-9 * want.abs().max(1.0),
                "θ₁ {theta1}, step {t}: {got} vs Wald's {want}"
            );
        }
        let before = k.log_capital();
        k.observe(0.5).expect("a tie");
        assert_eq!(
            k.log_capital().to_bits(),
            before.to_bits(),
            "a concordant pair bets nothing"
        );
    }
}

/// The test of law 4 is the fixed mixture it says: its promote capital is
/// 0.95 × Wald's likelihood ratio + 0.05 × the capital of the earlier
/// laws' test (PrPl-EB, checked against confseq above), at every step of
/// pass/fail differences. (α and β of 10⁻⁶ keep both tests open for the
/// 300 steps: Wald's LLR would need ln 10⁶ ≈ 13.8 at a growth of 0.004.)
#[test]
fn the_tuned_test_mixes_walds_ratio_with_the_earlier_laws_capital() {
    let mut rng = StdRng::seed_from_u64(41);
    let (level, gap) = (1e-6, 0.2);
    let mut tuned = BettingTest::tuned(level, level, gap, 1.0).expect("test");
    let mut earlier = BettingTest::new(level, level, gap, 1.0).expect("test");
    let wald =
        BernoulliSprt::new(0.5, 0.6, Boundaries::new(0.05, 0.1).expect("bounds")).expect("sprt");
    let mut wins = 0;
    for t in 1..=300 {
        let won = rng.random_bool(0.53);
        wins += u64::from(won);
        let d = if won { 1.0 } else { -1.0 };
        assert_eq!(tuned.update(d).expect("in range"), TestState::Continue);
        assert_eq!(earlier.update(d).expect("in range"), TestState::Continue);
        let want =
            (0.95 * wald.llr_at(t, wins).exp() + 0.05 * earlier.log_capital_promote().exp()).ln();
        let got = tuned.log_capital_promote();
        assert!(
            (got - want).abs() <= 1e-9 * want.abs().max(1.0),
            "step {t}: {got} vs the mixture's {want}"
        );
    }
}

#[test]
fn the_confidence_sequence_matches_confseq_within_its_grid() {
    let f = fixture();
    for c in f["cs"].as_array().expect("cases") {
        let name = c["sequence"].as_str().expect("name");
        let xs = numbers(&f["sequences"][name]);
        let alpha = c["alpha"].as_f64().expect("alpha");
        let cs = betting_interval(&xs, alpha).expect("cs");
        // confseq reports grid points of 1/1000, widened by one step.
        for (got, want) in [(cs.low, c["low"].as_f64()), (cs.high, c["high"].as_f64())] {
            let want = want.expect("end");
            assert!(
                (got - want).abs() <= 2e-3,
                "{name} α {alpha}: {got} vs confseq {want}"
            );
        }
    }
}

/// At the stop of a betting test run on bounded differences of several
/// shapes, the always-valid interval covers the true mean at least 95 % of
/// the time (three Monte-Carlo standard errors below 0.95 at most).
#[test]
fn the_interval_read_at_the_tests_stop_covers_the_mean() {
    let runs = 1000;
    let mut rng = StdRng::seed_from_u64(61);
    for (shape, mean) in [
        ("skewed", 0.0),
        ("skewed", 0.1),
        ("coin", 0.2),
        ("coin", 0.0),
    ] {
        let mut covered = 0;
        for _ in 0..runs {
            let mut t = BettingTest::new(0.05, 0.05, 0.1, 1.0)
                .expect("test")
                .with_truncation(5000)
                .expect("test");
            let mut diffs = Vec::new();
            loop {
                let d: f64 = match shape {
                    "skewed" => {
                        let base = if rng.random_bool(0.9) { 0.05 } else { -0.45 };
                        base + mean
                    }
                    _ => {
                        // ±1 with the mean's bias.
                        if rng.random_bool((1.0 + mean) / 2.0) {
                            1.0
                        } else {
                            -1.0
                        }
                    }
                };
                diffs.push(d);
                if t.update(d).expect("in range") != TestState::Continue {
                    break;
                }
            }
            let unit: Vec<f64> = diffs.iter().map(|d| (d + 1.0) / 2.0).collect();
            let cs = betting_interval(&unit, 0.05).expect("cs");
            let m = (mean + 1.0) / 2.0;
            covered += usize::from(cs.low <= m && m <= cs.high);
        }
        let rate = covered as f64 / runs as f64;
        let se = (0.95 * 0.05 / runs as f64).sqrt();
        assert!(
            rate >= 0.95 - 3.0 * se,
            "{shape} mean {mean}: covered {rate} of {runs} stops"
        );
    }
}
