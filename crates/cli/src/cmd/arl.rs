//! `ratchet arl`: a chart's average run length at each shift.

use anyhow::Result;
use ratchet_drift::Chart;

use crate::flags::{ArlDetector, ArlFlags};
use crate::{Ctx, out};

/// The chart as flagged (its limit given, or solved for `--target`), and
/// its run-length profile: Brook–Evans chain, and Siegmund's approximation
/// for a CUSUM.
pub fn run(ctx: &Ctx, flags: ArlFlags) -> Result<u8> {
    let ArlFlags {
        detector,
        k,
        h,
        lambda,
        width,
        target,
    } = flags;
    let chart = match (detector, h, width, target) {
        (ArlDetector::Cusum, Some(h), _, _) => Chart::Cusum { k, h },
        (ArlDetector::Cusum, None, _, Some(t)) => Chart::cusum_for_arl0(k, t)?,
        (ArlDetector::Ewma, _, Some(l), _) => Chart::Ewma { lambda, l },
        (ArlDetector::Ewma, _, None, Some(t)) => Chart::ewma_for_arl0(lambda, t)?,
        (ArlDetector::Cusum, None, _, None) => {
            anyhow::bail!("give --h, or --target to solve for it")
        }
        (ArlDetector::Ewma, _, None, None) => {
            anyhow::bail!("give --width, or --target to solve for it")
        }
    };
    let profile = ratchet_drift::arl_profile(chart)?;
    if ctx.json {
        out::json(&profile)?;
        return Ok(0);
    }
    outln!("{}", profile.chart);
    outln!("{:>8} {:>12} {:>12}", "shift σ", "ARL (chain)", "Siegmund");
    for r in &profile.rows {
        let siegmund = r.siegmund.map_or_else(|| "-".into(), |v| format!("{v:.2}"));
        outln!("{:>8.2} {:>12.2} {siegmund:>12}", r.shift, r.arl);
    }
    Ok(0)
}
