//! Error rates checked by seeded simulation against theory: the exact
//! Bernoulli lattice, Wald's bounds, and fishtest's GSPRT. Every tolerance is
//! three Monte-Carlo standard errors, computed from the number of runs.

use rand::Rng;
use rand_distr::{Distribution, Normal};
use ratchet_gate::{
    BernoulliSprt, Boundaries, GaussianSprt, LogisticElo, PairedGsprt, Pairing, exact_bernoulli,
    logistic_score, monte_carlo, wald_bernoulli,
};

fn bounds(alpha: f64, beta: f64) -> Boundaries {
    Boundaries::new(alpha, beta).expect("valid boundaries")
}

/// Binomial standard error of a proportion `p` estimated from `runs` trials.
fn se(p: f64, runs: usize) -> f64 {
    (p * (1.0 - p) / runs as f64).sqrt()
}

#[test]
fn bernoulli_monte_carlo_agrees_with_the_exact_lattice() {
    const RUNS: usize = 4000;
    let test = BernoulliSprt::new(0.5, 0.6, bounds(0.05, 0.1))
        .expect("valid")
        .with_truncation(600)
        .expect("valid");
    for (i, p) in [0.45, 0.5, 0.55, 0.6, 0.65].into_iter().enumerate() {
        let exact = exact_bernoulli(&test, p).expect("exact");
        let mc = monte_carlo(&test, RUNS, 10_000, 1000 + i as u64, |rng| {
            rng.random_bool(p)
        })
        .expect("mc");
        let tol = 3.0 * se(exact.p_promote, RUNS);
        assert!(
            (mc.point.p_promote - exact.p_promote).abs() <= tol,
            "p = {p}: MC P(promote) {} vs exact {} (±{tol})",
            mc.point.p_promote,
            exact.p_promote
        );
        let tol_n = 3.0 * mc.se_expected_n;
        assert!(
            (mc.point.expected_n - exact.expected_n).abs() <= tol_n,
            "p = {p}: MC E[N] {} vs exact {} (±{tol_n})",
            mc.point.expected_n,
            exact.expected_n
        );
        let tol_t = 3.0 * se(exact.p_truncated, RUNS).max(1.0 / RUNS as f64);
        assert!((mc.point.p_truncated - exact.p_truncated).abs() <= tol_t);
    }
}

#[test]
fn bernoulli_error_rates_are_within_alpha_and_beta() {
    // Exact computation: no Monte-Carlo error at all. The truncation limit is
    // far past the expected sample size, so truncation mass is negligible,
    // and counting it as a false reject is the conservative choice.
    for (p0, p1, alpha, beta) in [
        (0.5, 0.6, 0.05, 0.05),
        (0.7, 0.8, 0.05, 0.2),
        (0.9, 0.95, 0.01, 0.1),
    ] {
        let test = BernoulliSprt::new(p0, p1, bounds(alpha, beta))
            .expect("valid")
            .with_truncation(20_000)
            .expect("valid");
        let at_null = exact_bernoulli(&test, p0).expect("exact");
        let at_alt = exact_bernoulli(&test, p1).expect("exact");
        assert!(
            at_null.p_promote <= alpha,
            "({p0},{p1}): false promote {} > α = {alpha}",
            at_null.p_promote
        );
        let false_reject = at_alt.p_reject + at_alt.p_truncated;
        assert!(
            false_reject <= beta,
            "({p0},{p1}): false reject {false_reject} > β = {beta}"
        );
        // Wald's approximation is close to, and above, the exact rate
        // (overshoot of the discrete LLR only lowers the true rate).
        let wald = wald_bernoulli(&test, p0).expect("wald");
        assert!(wald.p_promote >= at_null.p_promote);
        assert!(
            wald.p_promote <= alpha / (1.0 - beta) + 1e-12,
            "Wald's inequality"
        );
    }
}

#[test]
fn gaussian_sprt_error_rates_by_simulation() {
    // σ is estimated, so only Wald's weaker bounds α/(1−β) and β/(1−α) are
    // promised (GaussianSprt's docs), checked to three standard errors.
    const RUNS: usize = 4000;
    let (alpha, beta) = (0.05, 0.1);
    let test = GaussianSprt::new(0.0, 0.5, bounds(alpha, beta))
        .expect("valid")
        .with_warmup(10)
        .expect("valid")
        .with_truncation(5000)
        .expect("valid");
    for (mu, seed) in [(0.0, 7), (0.5, 8)] {
        let normal = Normal::new(mu, 1.0).expect("normal");
        let mc = monte_carlo(&test, RUNS, 5000, seed, |rng| normal.sample(rng)).expect("mc");
        if mu == 0.0 {
            let bound = alpha / (1.0 - beta);
            let p = mc.point.p_promote;
            assert!(
                p <= bound + 3.0 * se(bound, RUNS),
                "false promote {p} > {bound}"
            );
        } else {
            let bound = beta / (1.0 - alpha);
            let p = mc.point.p_reject + mc.point.p_truncated;
            assert!(
                p <= bound + 3.0 * se(bound, RUNS),
                "false reject {p} > {bound}"
            );
        }
    }
}

/// Outcome classes of a trinomial game at logistic Elo `elo` with draw rate `draw`.
fn trinomial_draw(rng: &mut impl Rng, elo: f64, draw: f64) -> usize {
    let s = logistic_score(elo);
    let win = s - draw / 2.0;
    let u: f64 = rng.random();
    if u < win {
        2
    } else if u < win + draw {
        1
    } else {
        0
    }
}

#[test]
fn paired_gsprt_error_rates_by_simulation() {
    // fishtest's GSPRT with the overshoot correction promises Wald's bounds
    // α/(1−β) and β/(1−α) (PairedGsprt's docs; 20,000 runs of this design
    // measured 0.0525 and 0.0527 against 0.0526), checked to three standard errors.
    const RUNS: usize = 2000;
    let (alpha, beta) = (0.05, 0.05);
    let elo = LogisticElo {
        elo0: 0.0,
        elo1: 40.0,
    };
    let test = PairedGsprt::new(Pairing::Trinomial, elo, bounds(alpha, beta))
        .expect("valid")
        .with_overshoot_correction()
        .with_truncation(20_000)
        .expect("valid");
    let at_null = monte_carlo(&test, RUNS, 20_000, 11, |rng| {
        trinomial_draw(rng, elo.elo0, 0.4)
    })
    .expect("mc");
    let promise = alpha / (1.0 - beta);
    assert!(
        at_null.point.p_promote <= promise + 3.0 * se(promise, RUNS),
        "false promote {}",
        at_null.point.p_promote
    );
    let at_alt = monte_carlo(&test, RUNS, 20_000, 12, |rng| {
        trinomial_draw(rng, elo.elo1, 0.4)
    })
    .expect("mc");
    let false_reject = at_alt.point.p_reject + at_alt.point.p_truncated;
    let promise = beta / (1.0 - alpha);
    assert!(
        false_reject <= promise + 3.0 * se(promise, RUNS),
        "false reject {false_reject}"
    );
    // Pentanomial (two games per task, summed): the same promise.
    let penta = PairedGsprt::new(Pairing::Pentanomial, elo, bounds(alpha, beta))
        .expect("valid")
        .with_overshoot_correction()
        .with_truncation(20_000)
        .expect("valid");
    let pair = |rng: &mut rand::rngs::StdRng, e: f64| {
        trinomial_draw(rng, e, 0.4) + trinomial_draw(rng, e, 0.4)
    };
    let at_null = monte_carlo(&penta, RUNS, 20_000, 14, |rng| pair(rng, elo.elo0)).expect("mc");
    let promise = alpha / (1.0 - beta);
    assert!(
        at_null.point.p_promote <= promise + 3.0 * se(promise, RUNS),
        "pentanomial false promote {}",
        at_null.point.p_promote
    );
    let at_alt = monte_carlo(&penta, RUNS, 20_000, 15, |rng| pair(rng, elo.elo1)).expect("mc");
    let false_reject = at_alt.point.p_reject + at_alt.point.p_truncated;
    assert!(
        false_reject <= promise + 3.0 * se(promise, RUNS),
        "pentanomial false reject {false_reject}"
    );

    // And it discriminates: far above elo1 it almost always promotes.
    let strong =
        monte_carlo(&test, 500, 20_000, 13, |rng| trinomial_draw(rng, 80.0, 0.4)).expect("mc");
    assert!(strong.point.p_promote > 0.99);
}
