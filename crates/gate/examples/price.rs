//! The table of `benches/README.md`, "Issue 40: the default test's price":
//! tasks to a decision (ASN) of the betting test under the earlier laws'
//! bets and under `Law::Tuned`'s, beside Wald's SPRT and the fixed-horizon
//! n, for pass/fail and rubric differences at no effect, the design effect
//! and twice it. The model is `tests/it/price.rs` (the same file, so the
//! table and the tests measure one thing).
//!
//! ```text
//! cargo run --release -p ratchet-gate --example price [runs]
//! ```

#[path = "../tests/it/price.rs"]
mod price;

use price::{Data, betting, fixed_horizon_n, wald};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let runs: usize = match std::env::args().nth(1) {
        Some(a) => a.parse()?,
        None => 20_000,
    };
    println!(
        "runs per cell {runs}; α {}, β {}; ASN ± one standard error",
        price::ALPHA,
        price::BETA
    );
    println!(
        "| data | effect | Wald's SPRT | betting, laws 1–3 | × Wald | betting, law 4 (tuned) | × Wald | × fixed n | P(promote), law 4 | fixed-horizon n |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|");
    for (d, data) in [Data::PassFail, Data::PassFailTies, Data::Rubric]
        .into_iter()
        .enumerate()
    {
        let fixed = fixed_horizon_n(data);
        for (k, scale) in [0.0, 1.0, 2.0].into_iter().enumerate() {
            let effect = scale * data.gap();
            let seed = 1000 * d as u64 + 10 * k as u64;
            let (wald_n, wald_se) = wald(data, effect, runs, seed)?;
            let old = betting(data, false, effect, runs, seed + 1)?;
            let new = betting(data, true, effect, runs, seed + 2)?;
            let wald_shown = if wald_se == 0.0 {
                format!("{wald_n:.1} (exact)")
            } else {
                format!("{wald_n:.1} ± {wald_se:.1}")
            };
            println!(
                "| {} | {effect} | {wald_shown} | {:.1} ± {:.1} | {:.2} | {:.1} ± {:.1} | {:.2} | {:.2} | {:.3} | {fixed} |",
                data.name(),
                old.point.expected_n,
                old.se_expected_n,
                old.point.expected_n / wald_n,
                new.point.expected_n,
                new.se_expected_n,
                new.point.expected_n / wald_n,
                new.point.expected_n / fixed,
                new.point.p_promote,
            );
        }
    }
    Ok(())
}
