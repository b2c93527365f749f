//! The plots, drawn with plotters' SVG backend: each function returns one
//! `<svg>` element as text, with axes, units and a legend a person can read.

use plotters::prelude::*;

use crate::{Error, Result};

const SIZE: (u32, u32) = (760, 340);
const BLUE: RGBColor = RGBColor(31, 119, 180);
const ORANGE: RGBColor = RGBColor(255, 127, 14);
const GREEN: RGBColor = RGBColor(44, 160, 44);
const RED_: RGBColor = RGBColor(214, 39, 40);
const GREY: RGBColor = RGBColor(127, 127, 127);

fn err<E: std::fmt::Display>(e: E) -> Error {
    Error::Plot(e.to_string())
}

/// Every `k`-th point of a long series (and the last), with `k`: long
/// series are thinned honestly and the plot says so.
pub fn thin<T: Clone>(points: &[T], max: usize) -> (Vec<T>, usize) {
    if points.len() <= max || max == 0 {
        return (points.to_vec(), 1);
    }
    let k = points.len().div_ceil(max);
    let mut out: Vec<T> = points.iter().step_by(k).cloned().collect();
    if !(points.len() - 1).is_multiple_of(k) {
        out.extend(points.last().cloned());
    }
    (out, k)
}

fn padded(lo: f64, hi: f64) -> (f64, f64) {
    let (lo, hi) = if lo.is_finite() && hi.is_finite() {
        (lo, hi)
    } else {
        (0.0, 1.0)
    };
    let pad = ((hi - lo).abs() * 0.08).max(1e-9);
    (lo - pad, hi + pad)
}

/// One point of a ladder: a commit's mean with its interval.
#[derive(Debug, Clone)]
pub struct Rung {
    /// Short label (commit prefix).
    pub label: String,
    /// Mean.
    pub mean: f64,
    /// Interval low.
    pub low: f64,
    /// Interval high.
    pub high: f64,
    /// Marked (promoted, or a verdict).
    pub marked: bool,
}

/// Per-commit means with 95 % intervals, in first-seen order; marked
/// commits (promoted) drawn in green.
pub fn ladder(title: &str, unit: &str, rungs: &[Rung], marked_label: &str) -> Result<String> {
    let mut s = String::new();
    {
        let root = SVGBackend::with_string(&mut s, SIZE).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        let lo = rungs.iter().map(|r| r.low).fold(f64::INFINITY, f64::min);
        let hi = rungs
            .iter()
            .map(|r| r.high)
            .fold(f64::NEG_INFINITY, f64::max);
        let (lo, hi) = padded(lo, hi);
        let n = rungs.len().max(1);
        let mut chart = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 18))
            .margin(12)
            .x_label_area_size(48)
            .y_label_area_size(64)
            .build_cartesian_2d(-0.5f64..(n as f64 - 0.5), lo..hi)
            .map_err(err)?;
        let labels: Vec<String> = rungs.iter().map(|r| r.label.clone()).collect();
        chart
            .configure_mesh()
            .x_desc("commit, in the order first measured")
            .y_desc(unit)
            .x_labels(n.min(20))
            .x_label_formatter(&|x| {
                let i = x.round();
                if (x - i).abs() < 1e-6 && i >= 0.0 {
                    labels.get(i as usize).cloned().unwrap_or_default()
                } else {
                    String::new()
                }
            })
            .draw()
            .map_err(err)?;
        for (i, r) in rungs.iter().enumerate() {
            let color = if r.marked { GREEN } else { BLUE };
            let x = i as f64;
            chart
                .draw_series(std::iter::once(PathElement::new(
                    vec![(x, r.low), (x, r.high)],
                    color.stroke_width(2),
                )))
                .map_err(err)?;
        }
        chart
            .draw_series(
                rungs
                    .iter()
                    .enumerate()
                    .filter(|(_, r)| !r.marked)
                    .map(|(i, r)| Circle::new((i as f64, r.mean), 4, BLUE.filled())),
            )
            .map_err(err)?
            .label("commit: mean, 95 % interval")
            .legend(|(x, y)| Circle::new((x + 8, y), 4, BLUE.filled()));
        chart
            .draw_series(
                rungs
                    .iter()
                    .enumerate()
                    .filter(|(_, r)| r.marked)
                    .map(|(i, r)| Circle::new((i as f64, r.mean), 5, GREEN.filled())),
            )
            .map_err(err)?
            .label(marked_label)
            .legend(|(x, y)| Circle::new((x + 8, y), 5, GREEN.filled()));
        chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.9))
            .border_style(GREY)
            .position(SeriesLabelPosition::LowerRight)
            .draw()
            .map_err(err)?;
        root.present().map_err(err)?;
    }
    Ok(s)
}

/// A sequential test's log-likelihood ratio after each observation,
/// between its boundaries.
pub fn llr_path(title: &str, path: &[f64], lower: f64, upper: f64) -> Result<String> {
    let mut s = String::new();
    {
        let root = SVGBackend::with_string(&mut s, SIZE).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        let lo = path.iter().copied().fold(lower, f64::min);
        let hi = path.iter().copied().fold(upper, f64::max);
        let (lo, hi) = padded(lo, hi);
        let n = path.len().max(1) as f64;
        let mut chart = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 18))
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(56)
            .build_cartesian_2d(0f64..n, lo..hi)
            .map_err(err)?;
        chart
            .configure_mesh()
            .x_desc("observations (discordant pairs), in task order")
            .y_desc("log-likelihood ratio")
            .draw()
            .map_err(err)?;
        chart
            .draw_series(LineSeries::new(
                std::iter::once((0.0, 0.0))
                    .chain(path.iter().enumerate().map(|(i, v)| ((i + 1) as f64, *v))),
                BLUE.stroke_width(2),
            ))
            .map_err(err)?
            .label("LLR")
            .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 16, y)], BLUE.stroke_width(2)));
        for (bound, color, label) in [
            (upper, GREEN, "promote boundary"),
            (lower, RED_, "reject boundary"),
        ] {
            chart
                .draw_series(LineSeries::new(
                    vec![(0.0, bound), (n, bound)],
                    color.stroke_width(1),
                ))
                .map_err(err)?
                .label(label)
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 16, y)], color));
        }
        chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.9))
            .border_style(GREY)
            .position(SeriesLabelPosition::UpperLeft)
            .draw()
            .map_err(err)?;
        root.present().map_err(err)?;
    }
    Ok(s)
}

/// A monitored stream: the scores (thinned if long), the in-control mean,
/// and the CUSUM statistic against its limit, with the alarm marked.
pub fn cusum(
    title: &str,
    scores: &[(f64, f64)],
    statistic: &[(f64, f64)],
    limit: f64,
    alarm_at: Option<f64>,
    thinned: usize,
) -> Result<String> {
    let mut s = String::new();
    {
        let root = SVGBackend::with_string(&mut s, (SIZE.0, SIZE.1 + 80)).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        let (top, bottom) = root.split_vertically(SIZE.1 as i32 / 2 + 40);
        let x_hi = scores.iter().map(|p| p.0).fold(1.0, f64::max);
        let x_lo = scores.iter().map(|p| p.0).fold(x_hi, f64::min);
        let (ylo, yhi) = padded(
            scores.iter().map(|p| p.1).fold(f64::INFINITY, f64::min),
            scores.iter().map(|p| p.1).fold(f64::NEG_INFINITY, f64::max),
        );
        let caption = if thinned > 1 {
            format!("{title} (every {thinned}th score shown)")
        } else {
            title.to_string()
        };
        let mut up = ChartBuilder::on(&top)
            .caption(caption, ("sans-serif", 18))
            .margin(10)
            .x_label_area_size(28)
            .y_label_area_size(56)
            .build_cartesian_2d(x_lo..x_hi, ylo..yhi)
            .map_err(err)?;
        up.configure_mesh().y_desc("score").draw().map_err(err)?;
        up.draw_series(
            scores
                .iter()
                .map(|p| Circle::new(*p, 2, BLUE.mix(0.6).filled())),
        )
        .map_err(err)?
        .label("live score")
        .legend(|(x, y)| Circle::new((x + 8, y), 3, BLUE.filled()));
        let (slo, shi) = padded(0.0, statistic.iter().map(|p| p.1).fold(limit, f64::max));
        let mut down = ChartBuilder::on(&bottom)
            .margin(10)
            .x_label_area_size(36)
            .y_label_area_size(56)
            .build_cartesian_2d(x_lo..x_hi, slo..shi)
            .map_err(err)?;
        down.configure_mesh()
            .x_desc("trace seq")
            .y_desc("CUSUM (σ units)")
            .draw()
            .map_err(err)?;
        down.draw_series(LineSeries::new(
            statistic.iter().copied(),
            ORANGE.stroke_width(2),
        ))
        .map_err(err)?
        .label("CUSUM statistic")
        .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 16, y)], ORANGE.stroke_width(2)));
        down.draw_series(LineSeries::new(vec![(x_lo, limit), (x_hi, limit)], RED_))
            .map_err(err)?
            .label("limit h")
            .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 16, y)], RED_));
        if let Some(a) = alarm_at {
            down.draw_series(std::iter::once(Cross::new(
                (a, limit),
                8,
                RED_.stroke_width(3),
            )))
            .map_err(err)?
            .label("alarm")
            .legend(|(x, y)| Cross::new((x + 8, y), 5, RED_.stroke_width(2)));
        }
        down.configure_series_labels()
            .background_style(WHITE.mix(0.9))
            .border_style(GREY)
            .position(SeriesLabelPosition::UpperLeft)
            .draw()
            .map_err(err)?;
        root.present().map_err(err)?;
    }
    Ok(s)
}

/// Promotions, alarms and heals along the trace.
pub fn timeline(events: &[(u64, &'static str)], size: u64) -> Result<String> {
    let mut s = String::new();
    {
        let root = SVGBackend::with_string(&mut s, (SIZE.0, 200)).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        let rows = ["promotion", "alarm", "heal"];
        let mut chart = ChartBuilder::on(&root)
            .caption("Promotions, alarms and heals", ("sans-serif", 18))
            .margin(12)
            .x_label_area_size(36)
            .y_label_area_size(80)
            .build_cartesian_2d(0f64..(size.max(1) as f64), -0.5f64..2.5f64)
            .map_err(err)?;
        chart
            .configure_mesh()
            .x_desc("trace seq")
            .y_labels(3)
            .y_label_formatter(&|y| {
                let i = y.round();
                if (y - i).abs() < 1e-6 && (0.0..3.0).contains(&i) {
                    rows[i as usize].to_string()
                } else {
                    String::new()
                }
            })
            .draw()
            .map_err(err)?;
        for (row, color) in rows.iter().zip([GREEN, RED_, ORANGE]) {
            let y = rows.iter().position(|r| r == row).unwrap_or_default() as f64;
            chart
                .draw_series(
                    events
                        .iter()
                        .filter(|(_, k)| k == row)
                        .map(|(seq, _)| TriangleMarker::new((*seq as f64, y), 7, color.filled())),
                )
                .map_err(err)?;
        }
        root.present().map_err(err)?;
    }
    Ok(s)
}

/// A benchmark over commits: mean time with a 95 % interval per commit,
/// verdicts marked.
pub fn bench_history(title: &str, rungs: &[Rung]) -> Result<String> {
    ladder(
        title,
        "time per iteration (ns)",
        rungs,
        "candidate the gate promoted",
    )
}
