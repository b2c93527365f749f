//! `ratchet calibrate`: a policy's operating characteristic and sample size
//! over a grid of true effects, exact where the lattice allows, otherwise
//! by seeded Monte Carlo.

use std::io::Write;

use anyhow::Result;
use rand::Rng;
use rand_distr::{Distribution, Normal};
use ratchet_gate::{
    ClassPolicy, EloModel, TestKind, exact_bernoulli, game_probabilities, monte_carlo,
};
use serde::Serialize;

/// What the calibration assumes about the world.
#[derive(Debug)]
pub struct Assumptions {
    pub p0: f64,
    pub sigma: f64,
    pub draw: f64,
    pub runs: usize,
    pub seed: u64,
}

/// One row of the table.
#[derive(Debug, Serialize)]
pub struct Row {
    /// The true effect, in the test's unit.
    effect: String,
    p_promote: f64,
    expected_n: f64,
    n_quantiles: [u64; 3],
    method: &'static str,
}

/// Effects (rows) a table has at most: the grid k = −2..=6.
pub const ROWS: usize = 9;

/// The table; `done_row` is called after each effect (a progress bar).
pub fn table(p: &ClassPolicy, a: &Assumptions, done_row: &dyn Fn()) -> Result<Vec<Row>> {
    let mut rows = Vec::new();
    match p.test {
        TestKind::Bernoulli => {
            // The test sees discordant pairs only. With the baseline passing
            // a task with probability p0 and the candidate with r,
            // independently, a pair is discordant with probability d and
            // the candidate is the one that passed with probability θ; the
            // OC is exact in θ, and tasks needed = pairs needed / d.
            let gap = p.gap.unwrap_or_default();
            let t = p.bernoulli_test()?;
            for k in -2i32..=6 {
                let rate = a.p0 + f64::from(k) * gap / 4.0;
                if !(rate > 0.0 && rate < 1.0) {
                    continue;
                }
                let (won, lost) = (rate * (1.0 - a.p0), a.p0 * (1.0 - rate));
                let d = won + lost;
                let e = exact_bernoulli(&t, won / d)?;
                let tasks = |pairs: u64| (pairs as f64 / d).ceil() as u64;
                done_row();
                rows.push(Row {
                    effect: format!("pass rate {rate:.4} (θ {:.4})", won / d),
                    p_promote: e.p_promote,
                    expected_n: e.expected_n / d,
                    n_quantiles: e.n_quantiles.map(tasks),
                    method: "exact",
                });
            }
        }
        TestKind::Gaussian => {
            let gap = p.gap.unwrap_or_default();
            let t = p.gaussian_test()?;
            for k in -2i32..=6 {
                let shift = f64::from(k) * gap / 4.0;
                let normal = Normal::new(shift, a.sigma)?;
                let m = monte_carlo(&t, a.runs, p.max_n, a.seed.wrapping_add(k as u64), |rng| {
                    normal.sample(rng)
                })?;
                done_row();
                rows.push(Row {
                    effect: format!("mean shift {shift:+.4}"),
                    p_promote: m.point.p_promote,
                    expected_n: m.point.expected_n,
                    n_quantiles: m.point.n_quantiles,
                    method: "monte carlo",
                });
            }
        }
        TestKind::Paired => {
            let t = p.paired_test()?;
            let elo = t.elo();
            let step = (elo.elo1 - elo.elo0) / 4.0;
            for k in -2i32..=6 {
                let e = elo.elo0 + f64::from(k) * step;
                let Some((win, draw)) = game_probabilities(elo.model, e, a.draw) else {
                    continue;
                };
                let game = |rng: &mut rand::rngs::StdRng| {
                    let u: f64 = rng.random();
                    if u < win {
                        2
                    } else if u < win + draw {
                        1
                    } else {
                        0
                    }
                };
                let pentanomial = t.pairing() == ratchet_gate::Pairing::Pentanomial;
                let m = monte_carlo(&t, a.runs, p.max_n, a.seed.wrapping_add(k as u64), |rng| {
                    if pentanomial {
                        game(rng) + game(rng)
                    } else {
                        game(rng)
                    }
                })?;
                done_row();
                rows.push(Row {
                    effect: format!("{} Elo {e:+.1}", elo_unit(elo.model)),
                    p_promote: m.point.p_promote,
                    expected_n: m.point.expected_n,
                    n_quantiles: m.point.n_quantiles,
                    method: "monte carlo",
                });
            }
        }
    }
    Ok(rows)
}

fn elo_unit(model: EloModel) -> &'static str {
    match model {
        EloModel::Logistic => "logistic",
        EloModel::Normalized => "normalized",
        EloModel::BayesElo => "BayesElo",
    }
}

pub fn print(rows: &[Row]) -> Result<()> {
    let mut out = std::io::stdout().lock();
    writeln!(
        out,
        "{:<22} {:>10} {:>9} {:>8} {:>8} {:>8}  method",
        "true effect", "P(promote)", "E[N]", "N10", "N50", "N90"
    )?;
    for r in rows {
        writeln!(
            out,
            "{:<22} {:>10.4} {:>9.1} {:>8} {:>8} {:>8}  {}",
            r.effect,
            r.p_promote,
            r.expected_n,
            r.n_quantiles[0],
            r.n_quantiles[1],
            r.n_quantiles[2],
            r.method
        )?;
    }
    Ok(())
}
