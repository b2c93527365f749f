//! Non-inferiority against an independent implementation (SciPy, fixtures
//! made by tests/fixtures/noninferiority.py) and, for the always-valid
//! sequence, against its promise under repeated looks, by seeded simulation.

use rand::SeedableRng;
use rand::rngs::StdRng;
use rand_distr::{Distribution, Normal};
use ratchet_gate::{ConfidenceSequence, Direction, Margin, NonInferiority, SampleStats};
use serde_json::Value;

fn fixture() -> Value {
    let text = include_str!("../fixtures/noninferiority.json");
    serde_json::from_str(text).expect("fixture is JSON")
}

fn close(a: f64, b: f64, rel: f64) -> bool {
    (a - b).abs() <= rel * a.abs().max(b.abs()).max(1e-300)
}

#[test]
fn welch_matches_scipy() {
    let f = fixture();
    let cases = f["welch"].as_array().expect("cases");
    assert_eq!(cases.len(), 8);
    for (i, c) in cases.iter().enumerate() {
        let direction = match c["direction"].as_str() {
            Some("lower_is_better") => Direction::LowerIsBetter,
            _ => Direction::HigherIsBetter,
        };
        let m = c["margin"].as_f64().expect("margin");
        let margin = match c["margin_kind"].as_str() {
            Some("absolute") => Margin::Absolute(m),
            _ => Margin::Relative(m),
        };
        let values = |k: &str| -> Vec<f64> {
            c[k].as_array()
                .expect("values")
                .iter()
                .map(|v| v.as_f64().expect("number"))
                .collect()
        };
        let b = SampleStats::from_values(&values("baseline")).expect("stats");
        let cand = SampleStats::from_values(&values("candidate")).expect("stats");
        let test = NonInferiority::new(direction, margin, 0.05).expect("valid");
        let r = test.welch(&b, &cand).expect("welch");
        let (t, df, p) = (
            c["t"].as_f64().expect("t"),
            c["df"].as_f64().expect("df"),
            c["p_value"].as_f64().expect("p"),
        );
        assert!(close(r.t, t, 1e-10), "case {i}: t {} vs scipy {t}", r.t);
        assert!(
            close(r.df, df, 1e-10),
            "case {i}: df {} vs scipy {df}",
            r.df
        );
        // statrs' t CDF (regularized incomplete beta) agrees with SciPy's to ~1e-10.
        assert!(
            (r.p_value - p).abs() <= 1e-9 + 1e-7 * p,
            "case {i}: p {} vs scipy {p}",
            r.p_value
        );
        assert_eq!(r.non_inferior, p < 0.05, "case {i}");
    }
}

#[test]
fn confidence_sequence_half_width_matches_the_reference() {
    let f = fixture();
    for s in f["sequence"].as_array().expect("sequences") {
        let alpha = s["alpha"].as_f64().expect("alpha");
        let planned = s["planned_n"].as_u64().expect("planned");
        let n = s["n"].as_u64().expect("n");
        let sd = s["sd"].as_f64().expect("sd");
        let want = s["half_width"].as_f64().expect("w");
        let got = ConfidenceSequence::new(alpha, planned)
            .expect("valid")
            .half_width(n, sd);
        assert!(
            close(got, want, 1e-12),
            "α={alpha} n*={planned} n={n}: {got} vs {want}"
        );
    }
}

/// Looks after every task, at the boundary of H0 (the candidate exactly at
/// the margin): the always-valid test must declare non-inferiority in at most
/// α of the runs (to three Monte-Carlo standard errors); the fixed-horizon
/// Welch test, peeked at the same way, must be shown to inflate.
#[test]
fn repeated_looks_keep_the_sequence_valid_and_break_welch() {
    const RUNS: usize = 1000;
    const LOOKS: usize = 300;
    let alpha = 0.05;
    let test =
        NonInferiority::new(Direction::LowerIsBetter, Margin::Absolute(1.0), alpha).expect("valid");
    let mut rng = StdRng::seed_from_u64(424242);
    let base = Normal::new(10.0, 2.0).expect("normal");
    let cand = Normal::new(11.0, 2.0).expect("normal"); // exactly the margin worse
    let (mut cs_false, mut welch_false) = (0usize, 0usize);
    for _ in 0..RUNS {
        let (mut b, mut c) = (Vec::with_capacity(LOOKS), Vec::with_capacity(LOOKS));
        let (mut cs_hit, mut welch_hit) = (false, false);
        for n in 1..=LOOKS {
            b.push(base.sample(&mut rng));
            c.push(cand.sample(&mut rng));
            if n < 5 {
                continue;
            }
            if !cs_hit
                && test
                    .sequential(&b, &c, LOOKS as u64)
                    .expect("cs")
                    .non_inferior
            {
                cs_hit = true;
            }
            if !welch_hit {
                let sb = SampleStats::from_values(&b).expect("stats");
                let sc = SampleStats::from_values(&c).expect("stats");
                welch_hit = test.welch(&sb, &sc).expect("welch").non_inferior;
            }
        }
        cs_false += usize::from(cs_hit);
        welch_false += usize::from(welch_hit);
    }
    let se = (alpha * (1.0 - alpha) / RUNS as f64).sqrt();
    let cs_rate = cs_false as f64 / RUNS as f64;
    let welch_rate = welch_false as f64 / RUNS as f64;
    assert!(
        cs_rate <= alpha + 3.0 * se,
        "always-valid test: false non-inferiority {cs_rate}"
    );
    assert!(
        welch_rate > alpha + 3.0 * se,
        "peeking at Welch should inflate: {welch_rate}"
    );
}

#[test]
fn clopper_pearson_matches_scipy() {
    let f = fixture();
    for b in f["clopper_pearson"].as_array().expect("bounds") {
        let failures = b["failures"].as_u64().expect("f");
        let n = b["n"].as_u64().expect("n");
        let conf = b["confidence"].as_f64().expect("conf");
        let want = b["upper_bound"].as_f64().expect("ub");
        let got = ratchet_gate::failure_rate_upper_bound(failures, n, conf).expect("valid");
        // statrs inverts the Beta CDF numerically; agreement to 1e-8 relative.
        assert!(
            close(got, want, 1e-8),
            "f={failures} n={n} conf={conf}: {got} vs scipy {want}"
        );
    }
}
