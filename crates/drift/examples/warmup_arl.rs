//! Issue 40's measurements: each deployment's in-control ARL when its chart
//! starts from a short warm-up, plug-in (the charts before issue 40) against
//! the monitor's self-starting [`LiveChart`], and the Bernoulli chart's ARL0
//! and ARL1 at a true pass rate of 0.7.
//!
//! `cargo run -p ratchet-drift --example warmup_arl -- [deployments] [runs]`
//! (seeded; the drift crate is built at opt-level 2 even in dev).

use ratchet_drift::{
    BernoulliCusum, Chart, Cusum, Detector, Ewma, EwmaLimits, LiveChart, Scores, Warmup, Watch,
    deployment_arl0s,
};

/// The Wilson bound the Bernoulli chart used to start at (before issue 40).
fn wilson_lower(p: f64, n: u64, z: f64) -> f64 {
    let n = n as f64;
    let z2 = z * z;
    let centre = p + z2 / (2.0 * n);
    let spread = z * (p * (1.0 - p) / n + z2 / (4.0 * n * n)).sqrt();
    ((centre - spread) / (1.0 + z2 / n)).clamp(0.0, 1.0)
}

fn summary(name: &str, arls: &[f64]) {
    // A deployment all of whose runs alarmed before the onset has no delay.
    let mut s: Vec<f64> = arls.iter().copied().filter(|a| !a.is_nan()).collect();
    s.sort_by(f64::total_cmp);
    let d = s.len() as f64;
    let below = |x: f64| s.iter().filter(|&&a| a < x).count() as f64 / d;
    let mean = s.iter().sum::<f64>() / d;
    println!(
        "| {name} | {:.3} | {:.3} | {:.0} | {:.0} | {:.0} | {mean:.0} |",
        below(250.0),
        below(100.0),
        s[(0.1 * d) as usize],
        s[(0.5 * d) as usize],
        s[(0.9 * d) as usize],
    );
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<usize> = std::env::args()
        .skip(1)
        .map(|a| a.parse())
        .collect::<Result<_, _>>()?;
    let deployments = args.first().copied().unwrap_or(400);
    let runs = args.get(1).copied().unwrap_or(40);
    let arl0 = 500.0;
    let cap = 20_000;
    let cusum = Chart::cusum_for_arl0_watching(0.5, arl0, Watch::Decreases)?;
    let ewma = Chart::ewma_for_arl0(0.1, arl0)?;
    println!("deployments {deployments}, runs each {runs}, ARL0 asked {arl0}, cap {cap}");
    println!("| chart, warm-up | P(ARL0 < 250) | P(ARL0 < 100) | 10 % | median | 90 % | mean |");
    println!("|---|---|---|---|---|---|---|");
    // SHIFT=-1 ONSET=100: the same table for a 1σ drop from live score 100.
    let env = |k: &str| std::env::var(k).ok().and_then(|v| v.parse::<f64>().ok());
    let shift = env("SHIFT").unwrap_or(0.0);
    let onset = env("ONSET").unwrap_or(0.0) as u64;
    for m in [30u64, 100] {
        let (Chart::Cusum { k, h }, Chart::Ewma { lambda, l }) = (cusum, ewma) else {
            unreachable!()
        };
        let t = std::time::Instant::now();
        let plug = deployment_arl0s(
            &mut |w: &Warmup| Cusum::new(w.mean, w.sd, k, h),
            Watch::Decreases,
            Scores::Normal { shift, onset },
            m,
            deployments,
            runs,
            cap,
            40 + m,
        )?;
        summary(&format!("CUSUM one-sided, plug-in, m = {m}"), &plug);
        let live = deployment_arl0s(
            &mut |w: &Warmup| LiveChart::start(cusum, w, Watch::Decreases),
            Watch::Decreases,
            Scores::Normal { shift, onset },
            m,
            deployments,
            runs,
            cap,
            40 + m,
        )?;
        summary(&format!("CUSUM one-sided, self-starting, m = {m}"), &live);
        let plug = deployment_arl0s(
            &mut |w: &Warmup| Ewma::new(w.mean, w.sd, lambda, l, EwmaLimits::SteadyState),
            Watch::Both,
            Scores::Normal { shift, onset },
            m,
            deployments,
            runs,
            cap,
            50 + m,
        )?;
        summary(&format!("EWMA two-sided, plug-in, m = {m}"), &plug);
        let live = deployment_arl0s(
            &mut |w: &Warmup| LiveChart::start(ewma, w, Watch::Both),
            Watch::Both,
            Scores::Normal { shift, onset },
            m,
            deployments,
            runs,
            cap,
            50 + m,
        )?;
        summary(&format!("EWMA two-sided, self-starting, m = {m}"), &live);
        eprintln!("m = {m}: {:.1} s", t.elapsed().as_secs_f64());
    }
    exact_bernoulli(arl0)?;
    // Bernoulli at a true 0.7, tuned to a drop of 0.1, ARL0 500, 30 warm-up scores.
    let bern = Chart::Bernoulli { shift: 0.1, arl0 };
    let wilson = |w: &Warmup| {
        let p0 = wilson_lower(w.mean, w.n, 1.281_551_565_544_600_5);
        BernoulliCusum::for_arl0(p0, p0 - 0.1, arl0)
    };
    println!();
    println!(
        "| Bernoulli chart, m = 30, true 0.7 | P(ARL0 < 250) | P(ARL0 < 100) | 10 % | median | 90 % | mean |"
    );
    println!("|---|---|---|---|---|---|---|");
    for (name, live) in [("Wilson bound (before)", false), ("self-starting", true)] {
        let make = |w: &Warmup| -> ratchet_drift::Result<Box<dyn DetectorClone>> {
            Ok(if live {
                Box::new(LiveChart::start(bern, w, Watch::Decreases)?)
            } else {
                Box::new(wilson(w)?)
            })
        };
        let arl0s = deployment_arl0s(
            &mut |w: &Warmup| make(w).map(Boxed),
            Watch::Decreases,
            Scores::PassFail {
                warmup: 0.7,
                live: 0.7,
                onset: 0,
            },
            30,
            deployments,
            runs,
            200_000,
            70,
        )?;
        summary(&format!("{name}, ARL0"), &arl0s);
        for onset in [0u64, 100, 300] {
            if shift != 0.0 {
                break;
            }
            let arl1s = deployment_arl0s(
                &mut |w: &Warmup| make(w).map(Boxed),
                Watch::Decreases,
                Scores::PassFail {
                    warmup: 0.7,
                    live: 0.6,
                    onset,
                },
                30,
                deployments,
                runs,
                200_000,
                71,
            )?;
            summary(
                &format!("{name}, ARL1 at 0.6 from live score {onset}"),
                &arl1s,
            );
        }
    }
    Ok(())
}

/// A fixed Bernoulli chart's ARLs are exact given its warm-up (its chain),
/// so their distribution over the 31 warm-up counts at a true 0.7 is exact:
/// the Wilson-bound start (before issue 40) and a fixed start at the
/// measured rate (x + ½)/(n + 1) without self-starting.
fn exact_bernoulli(arl0: f64) -> Result<(), Box<dyn std::error::Error>> {
    use ratchet_drift::bernoulli_cusum_arl;
    let n = 30u64;
    println!();
    println!(
        "| fixed Bernoulli chart, m = 30, true 0.7, exact | P(ARL0 < 250) | P(ARL0 < 100) | median ARL0 | mean ARL0 | median ARL1 (0.6) | mean ARL1 |"
    );
    println!("|---|---|---|---|---|---|---|");
    for (name, wilson) in [
        ("Wilson 90 % lower bound (before)", true),
        ("measured rate, not self-starting", false),
    ] {
        let mut rows = Vec::new();
        for x in 0..=n {
            let pmf = statrs::distribution::Discrete::pmf(
                &statrs::distribution::Binomial::new(0.7, n)?,
                x,
            );
            let p = x as f64 / n as f64;
            let p0 = if wilson {
                wilson_lower(p, n, 1.281_551_565_544_600_5)
            } else {
                (x as f64 + 0.5) / (n as f64 + 1.0)
            };
            if p0 - 0.1 <= 0.0 || p0 >= 1.0 {
                continue; // the chart cannot start (probability < 1e-9 here)
            }
            let c = BernoulliCusum::for_arl0(p0, p0 - 0.1, arl0)?;
            rows.push((
                pmf,
                bernoulli_cusum_arl(&c, 0.7)?,
                bernoulli_cusum_arl(&c, 0.6)?,
            ));
        }
        let total: f64 = rows.iter().map(|r| r.0).sum();
        let share = |f: &dyn Fn(&(f64, f64, f64)) -> bool| {
            rows.iter().filter(|r| f(r)).map(|r| r.0).sum::<f64>() / total
        };
        let median = |i: usize| {
            let mut v: Vec<(f64, f64)> = rows
                .iter()
                .map(|r| (if i == 1 { r.1 } else { r.2 }, r.0))
                .collect();
            v.sort_by(|a, b| a.0.total_cmp(&b.0));
            let mut acc = 0.0;
            v.iter()
                .find(|(_, w)| {
                    acc += w / total;
                    acc >= 0.5
                })
                .map_or(f64::NAN, |x| x.0)
        };
        let mean = |i: usize| {
            rows.iter()
                .map(|r| r.0 * if i == 1 { r.1 } else { r.2 })
                .sum::<f64>()
                / total
        };
        println!(
            "| {name} | {:.3} | {:.3} | {:.0} | {:.0} | {:.0} | {:.0} |",
            share(&|r| r.1 < 250.0),
            share(&|r| r.1 < 100.0),
            median(1),
            mean(1),
            median(2),
            mean(2)
        );
    }
    Ok(())
}

/// A boxed detector that clones (the two Bernoulli charts differ in type).
trait DetectorClone: Detector {
    fn boxed(&self) -> Box<dyn DetectorClone>;
}

impl<T: Detector + Clone + 'static> DetectorClone for T {
    fn boxed(&self) -> Box<dyn DetectorClone> {
        Box::new(self.clone())
    }
}

struct Boxed(Box<dyn DetectorClone>);

impl Clone for Boxed {
    fn clone(&self) -> Self {
        Boxed(self.0.boxed())
    }
}

impl Detector for Boxed {
    fn update(&mut self, x: f64) -> ratchet_drift::Result<Option<ratchet_drift::Alarm>> {
        self.0.update(x)
    }
    fn reset(&mut self) {
        self.0.reset()
    }
    fn n(&self) -> u64 {
        self.0.n()
    }
}
