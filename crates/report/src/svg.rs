//! The plots, drawn with plotters' SVG backend: each function returns one
//! `<svg>` element as text, with axes, units and a legend a person can read.
//!
//! Two rules hold for every plot. Lines are clipped to their chart
//! ([`clip_polyline`]) before plotters sees them: plotters does not clip,
//! and a statistic that leaves its range would be drawn over the axes and
//! the next chart. And each `<svg>` names its plotting rectangles in a
//! `data-plot-areas` attribute (`x0,y0,x1,y1;…`, pixels), so a test can
//! check that every drawn line lies inside one of them.

use std::ops::Range;

use plotters::prelude::*;

use crate::{Error, Result};

const SIZE: (u32, u32) = (760, 340);
const BLUE: RGBColor = RGBColor(31, 119, 180);
const ORANGE: RGBColor = RGBColor(255, 127, 14);
const GREEN: RGBColor = RGBColor(44, 160, 44);
const RED_: RGBColor = RGBColor(214, 39, 40);
const PURPLE: RGBColor = RGBColor(148, 103, 189);
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

/// A tick label for a count axis: integers only ("3", never "3.0"); a
/// tick between integers gets no label.
fn count_label(x: &f64) -> String {
    let i = x.round();
    if (x - i).abs() < 1e-9 {
        format!("{}", i as i64)
    } else {
        String::new()
    }
}

/// How many ticks a count axis over `lo..hi` asks for: never more than
/// there are integers in it, so plotters does not fall back to fractions.
fn count_ticks(lo: f64, hi: f64) -> usize {
    ((hi - lo).floor() as usize + 1).clamp(2, 10)
}

/// Splits the polyline `points` into the runs that lie inside the
/// rectangle `x × y`, cutting each segment that crosses its border at the
/// border (Liang–Barsky). What a chart draws of a line: never anything
/// outside its plotting area.
pub(crate) fn clip_polyline(
    points: &[(f64, f64)],
    x: (f64, f64),
    y: (f64, f64),
) -> Vec<Vec<(f64, f64)>> {
    let inside = |p: (f64, f64)| p.0 >= x.0 && p.0 <= x.1 && p.1 >= y.0 && p.1 <= y.1;
    let mut runs: Vec<Vec<(f64, f64)>> = Vec::new();
    let mut current: Vec<(f64, f64)> = Vec::new();
    if points.len() == 1 && inside(points[0]) {
        return vec![points.to_vec()];
    }
    for w in points.windows(2) {
        let (a, b) = (w[0], w[1]);
        if !(a.0.is_finite() && a.1.is_finite() && b.0.is_finite() && b.1.is_finite()) {
            if current.len() > 1 {
                runs.push(std::mem::take(&mut current));
            }
            current.clear();
            continue;
        }
        let (dx, dy) = (b.0 - a.0, b.1 - a.1);
        let (mut t0, mut t1) = (0.0f64, 1.0f64);
        let mut visible = true;
        for (p, q) in [
            (-dx, a.0 - x.0),
            (dx, x.1 - a.0),
            (-dy, a.1 - y.0),
            (dy, y.1 - a.1),
        ] {
            if p == 0.0 {
                if q < 0.0 {
                    visible = false;
                }
            } else {
                let r = q / p;
                if p < 0.0 {
                    t0 = t0.max(r);
                } else {
                    t1 = t1.min(r);
                }
            }
        }
        if !visible || t0 > t1 {
            if current.len() > 1 {
                runs.push(std::mem::take(&mut current));
            }
            current.clear();
            continue;
        }
        let at = |t: f64| {
            (
                (a.0 + t * dx).clamp(x.0, x.1),
                (a.1 + t * dy).clamp(y.0, y.1),
            )
        };
        let (start, end) = (at(t0), at(t1));
        if current.last() != Some(&start) {
            if current.len() > 1 {
                runs.push(std::mem::take(&mut current));
            }
            current.clear();
            current.push(start);
        }
        current.push(end);
        if t1 < 1.0 {
            runs.push(std::mem::take(&mut current));
        }
    }
    if current.len() > 1 {
        runs.push(current);
    }
    runs
}

/// Names the plotting rectangles in the `<svg>` element (see the module
/// docs).
fn annotate(svg: String, areas: &[(Range<i32>, Range<i32>)]) -> String {
    let list = areas
        .iter()
        .map(|(x, y)| format!("{},{},{},{}", x.start, y.start, x.end, y.end))
        .collect::<Vec<_>>()
        .join(";");
    svg.replacen("<svg ", &format!("<svg data-plot-areas=\"{list}\" "), 1)
}

type Chart<'a, 'b> = ChartContext<
    'a,
    SVGBackend<'b>,
    Cartesian2d<plotters::coord::types::RangedCoordf64, plotters::coord::types::RangedCoordf64>,
>;

/// The chart's data ranges.
fn ranges(chart: &Chart<'_, '_>) -> ((f64, f64), (f64, f64)) {
    let (x, y) = (chart.x_range(), chart.y_range());
    ((x.start, x.end), (y.start, y.end))
}

/// Draws `points` as a line clipped to the chart; `label` adds it to the
/// legend (once, even when clipping splits it).
fn line(
    chart: &mut Chart<'_, '_>,
    points: &[(f64, f64)],
    style: ShapeStyle,
    label: Option<&str>,
) -> Result<()> {
    let (x, y) = ranges(chart);
    let mut labelled = label.is_none();
    for run in clip_polyline(points, x, y) {
        let series = chart
            .draw_series(std::iter::once(PathElement::new(run, style)))
            .map_err(err)?;
        if !labelled && let Some(l) = label {
            series
                .label(l)
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 16, y)], style));
            labelled = true;
        }
    }
    if !labelled && let Some(l) = label {
        // Entirely outside (or empty): still in the legend, drawn nowhere.
        chart
            .draw_series(std::iter::empty::<PathElement<(f64, f64)>>())
            .map_err(err)?
            .label(l)
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 16, y)], style));
    }
    Ok(())
}

/// Points of `points` inside the chart's ranges (markers are not clipped
/// but dropped: a marker at the wrong place would mislead).
fn inside(chart: &Chart<'_, '_>, points: impl IntoIterator<Item = (f64, f64)>) -> Vec<(f64, f64)> {
    let (x, y) = ranges(chart);
    points
        .into_iter()
        .filter(|p| p.0 >= x.0 && p.0 <= x.1 && p.1 >= y.0 && p.1 <= y.1)
        .collect()
}

fn legend<'a, 'b: 'a>(chart: &mut Chart<'a, 'b>, position: SeriesLabelPosition) -> Result<()> {
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.9))
        .border_style(GREY)
        .position(position)
        .draw()
        .map_err(err)
}

/// What the trace says happened to a commit, for its mark on a ladder.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct Marks {
    /// Promoted (a `promotion` event).
    pub promoted: bool,
    /// A candidate the gate rejected (its latest final decision).
    pub rejected: bool,
    /// Checked out by a heal (a `checkout` event).
    pub healed: bool,
    /// Deployed now, according to the trace.
    pub deployed: bool,
}

/// One point of a ladder: a commit's mean with its interval.
#[derive(Debug, Clone)]
pub(crate) struct Rung {
    /// Short label (commit prefix).
    pub label: String,
    /// Mean.
    pub mean: f64,
    /// Interval low.
    pub low: f64,
    /// Interval high.
    pub high: f64,
    /// What happened to it.
    pub marks: Marks,
}

/// A legend entry of a ladder: its label, which rungs, their colour.
type Group = (&'static str, fn(&Marks) -> bool, RGBColor);

/// Per-commit means with 95 % intervals, in first-seen order: promoted
/// commits green, rejected red, the rest blue; a commit a heal checked
/// out carries an orange triangle, the deployed one a black ring.
pub(crate) fn ladder(
    title: &str,
    unit: &str,
    rungs: &[Rung],
    steps: &[(usize, f64)],
) -> Result<String> {
    let mut svg = String::new();
    let mut areas = Vec::new();
    {
        let root = SVGBackend::with_string(&mut svg, SIZE).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        let lo = rungs.iter().map(|r| r.low).fold(f64::INFINITY, f64::min);
        let hi = rungs
            .iter()
            .map(|r| r.high)
            .fold(f64::NEG_INFINITY, f64::max);
        let (lo, hi) = padded(lo, hi);
        // Head room for the legend above the highest interval.
        let hi = hi + (hi - lo) * 0.35;
        let n = rungs.len().max(1);
        let mut chart = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 18))
            .margin(12)
            .x_label_area_size(48)
            .y_label_area_size(64)
            .build_cartesian_2d(-0.5f64..(n as f64 - 0.5), lo..hi)
            .map_err(err)?;
        let labels: Vec<String> = rungs.iter().map(|r| r.label.clone()).collect();
        let label_of = |x: &f64| {
            let i = x.round();
            if (x - i).abs() < 1e-6 && i >= 0.0 {
                labels.get(i as usize).cloned().unwrap_or_default()
            } else {
                String::new()
            }
        };
        chart
            .configure_mesh()
            .x_desc("commit, in the order first measured")
            .y_desc(unit)
            .x_labels(n.min(12))
            .x_label_formatter(&label_of)
            .draw()
            .map_err(err)?;
        areas.push(chart.plotting_area().get_pixel_range());
        let color = |m: &Marks| {
            if m.promoted {
                GREEN
            } else if m.rejected {
                RED_
            } else {
                BLUE
            }
        };
        for (i, r) in rungs.iter().enumerate() {
            let x = i as f64;
            line(
                &mut chart,
                &[(x, r.low), (x, r.high)],
                color(&r.marks).stroke_width(2),
                None,
            )?;
        }
        let groups: [Group; 3] = [
            (
                "other commit: mean, 95 % interval",
                |m| !m.promoted && !m.rejected,
                BLUE,
            ),
            ("promoted", |m| m.promoted, GREEN),
            ("rejected by the gate", |m| m.rejected && !m.promoted, RED_),
        ];
        for (label, pick, c) in groups {
            let points = inside(
                &chart,
                rungs
                    .iter()
                    .enumerate()
                    .filter(|(_, r)| pick(&r.marks))
                    .map(|(i, r)| (i as f64, r.mean)),
            );
            if points.is_empty() {
                continue;
            }
            chart
                .draw_series(points.into_iter().map(|p| Circle::new(p, 4, c.filled())))
                .map_err(err)?
                .label(label)
                .legend(move |(x, y)| Circle::new((x + 8, y), 4, c.filled()));
        }
        let healed = inside(
            &chart,
            rungs
                .iter()
                .enumerate()
                .filter(|(_, r)| r.marks.healed)
                .map(|(i, r)| (i as f64, r.high)),
        );
        if !healed.is_empty() {
            chart
                .draw_series(
                    healed
                        .into_iter()
                        .map(|p| TriangleMarker::new(p, 7, ORANGE.filled())),
                )
                .map_err(err)?
                .label("checked out by a heal")
                .legend(|(x, y)| TriangleMarker::new((x + 8, y), 6, ORANGE.filled()));
        }
        let deployed = inside(
            &chart,
            rungs
                .iter()
                .enumerate()
                .filter(|(_, r)| r.marks.deployed)
                .map(|(i, r)| (i as f64, r.mean)),
        );
        if !deployed.is_empty() {
            chart
                .draw_series(
                    deployed
                        .into_iter()
                        .map(|p| Circle::new(p, 9, BLACK.stroke_width(2))),
                )
                .map_err(err)?
                .label("deployed now")
                .legend(|(x, y)| Circle::new((x + 8, y), 6, BLACK.stroke_width(2)));
        }
        for (i, (at, ratio)) in steps.iter().enumerate() {
            let x = *at as f64 - 0.5;
            let dashed = ShapeStyle::from(&BLACK.mix(0.6)).stroke_width(1);
            line(&mut chart, &[(x, lo), (x, hi)], dashed, None)?;
            chart
                .draw_series(std::iter::once(Text::new(
                    format!("×{ratio:.3}"),
                    (x, hi - (hi - lo) * (0.30 + 0.06 * (i % 3) as f64)),
                    ("sans-serif", 12).into_font(),
                )))
                .map_err(err)?;
        }
        legend(&mut chart, SeriesLabelPosition::UpperLeft)?;
        root.present().map_err(err)?;
    }
    Ok(annotate(svg, &areas))
}

/// A sequential test's path, for [`llr_path`].
pub(crate) struct PathPlot<'a> {
    /// Title.
    pub title: &'a str,
    /// What one observation is (the x axis).
    pub observation: &'a str,
    /// The statistic judged against `upper` after each observation.
    pub promote: &'a [f64],
    /// Betting: −ln K⁻ after each observation, judged against `lower`.
    pub reject: Option<&'a [f64]>,
    /// Reject boundary.
    pub lower: f64,
    /// Promote boundary.
    pub upper: f64,
    /// First observation the boundaries apply at (a warm-up before it).
    pub judged_from: u64,
    /// Observations at each earlier look ("continue" decisions).
    pub looks: &'a [u64],
    /// Whether the verdict promoted (the stop is marked green, else red).
    pub promoted: bool,
}

/// A sequential statistic after each observation, between its boundaries;
/// the earlier looks at the gate and the stop marked. The y range is the
/// boundaries' with a margin (a statistic far beyond them — a gaussian
/// test's warm-up — is clipped at the border, and the caption says the
/// range).
pub(crate) fn llr_path(p: &PathPlot<'_>) -> Result<String> {
    let mut svg = String::new();
    let mut areas = Vec::new();
    {
        let root = SVGBackend::with_string(&mut svg, SIZE).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        let width = (p.upper - p.lower).abs().max(1e-6);
        let all = p.promote.iter().chain(p.reject.into_iter().flatten());
        let (lo, hi) = all.fold((p.lower, p.upper), |(lo, hi), v| {
            if v.is_finite() {
                (lo.min(*v), hi.max(*v))
            } else {
                (lo, hi)
            }
        });
        let (lo, hi) = padded(lo.max(p.lower - width), hi.min(p.upper + width));
        // Room for the legend above the promote boundary.
        let hi = hi + (hi - lo) * 0.25;
        let n = p.promote.len().max(1) as f64;
        let mut chart = ChartBuilder::on(&root)
            .caption(p.title, ("sans-serif", 17))
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(56)
            .build_cartesian_2d(0f64..n, lo..hi)
            .map_err(err)?;
        let x_desc = format!(
            "observations (one per {}), in the baseline's task order",
            p.observation
        );
        chart
            .configure_mesh()
            .x_desc(x_desc)
            .y_desc(if p.reject.is_some() {
                "log capital"
            } else {
                "log-likelihood ratio"
            })
            .x_labels(count_ticks(0.0, n))
            .x_label_formatter(&count_label)
            .draw()
            .map_err(err)?;
        areas.push(chart.plotting_area().get_pixel_range());
        let series = |xs: &[f64]| -> Vec<(f64, f64)> {
            std::iter::once((0.0, 0.0))
                .chain(xs.iter().enumerate().map(|(i, v)| ((i + 1) as f64, *v)))
                .collect()
        };
        let (up_label, down_label) = if p.reject.is_some() {
            (
                "ln K⁺ (betting on an improvement)",
                "−ln K⁻ (betting on less than the gap)",
            )
        } else {
            ("LLR", "")
        };
        line(
            &mut chart,
            &series(p.promote),
            BLUE.stroke_width(2),
            Some(up_label),
        )?;
        if let Some(r) = p.reject {
            line(
                &mut chart,
                &series(r),
                PURPLE.stroke_width(2),
                Some(down_label),
            )?;
        }
        line(
            &mut chart,
            &[(0.0, p.upper), (n, p.upper)],
            GREEN.stroke_width(1),
            Some("promote boundary"),
        )?;
        line(
            &mut chart,
            &[(0.0, p.lower), (n, p.lower)],
            RED_.stroke_width(1),
            Some("reject boundary"),
        )?;
        if p.judged_from > 1 && (p.judged_from as f64) <= n {
            let x = p.judged_from as f64;
            line(
                &mut chart,
                &[(x, lo), (x, hi)],
                GREY.stroke_width(1),
                Some("warm-up ends (no decision before)"),
            )?;
        }
        let at = |k: u64| -> Option<(f64, f64)> {
            let i = usize::try_from(k).ok()?;
            if i == 0 {
                return Some((0.0, 0.0));
            }
            p.promote.get(i - 1).map(|v| (k as f64, *v))
        };
        let looks = inside(&chart, p.looks.iter().filter_map(|&k| at(k)));
        if !looks.is_empty() {
            chart
                .draw_series(looks.into_iter().map(|q| Circle::new(q, 4, GREY.filled())))
                .map_err(err)?
                .label("an earlier look: continue")
                .legend(|(x, y)| Circle::new((x + 8, y), 4, GREY.filled()));
        }
        let stop_color = if p.promoted { GREEN } else { RED_ };
        let stop = inside(&chart, at(p.promote.len() as u64));
        chart
            .draw_series(
                stop.into_iter()
                    .map(|q| Circle::new(q, 6, stop_color.filled())),
            )
            .map_err(err)?
            .label("the decision")
            .legend(move |(x, y)| Circle::new((x + 8, y), 5, stop_color.filled()));
        legend(&mut chart, SeriesLabelPosition::UpperLeft)?;
        root.present().map_err(err)?;
    }
    Ok(annotate(svg, &areas))
}

/// A monitored stream around its alarm, for [`alarm`].
pub(crate) struct AlarmPlot<'a> {
    /// Title.
    pub title: &'a str,
    /// (seq, score), thinned.
    pub scores: &'a [(f64, f64)],
    /// Its moving mean.
    pub moving: &'a [(f64, f64)],
    /// Window of the moving mean.
    pub window: usize,
    /// The in-control mean.
    pub mean: f64,
    /// (seq, statistic) of the detector, up to the alarm (empty: not drawn).
    pub statistic: &'a [(f64, f64)],
    /// The statistic's limit.
    pub limit: f64,
    /// Seq of the alarm and the statistic there.
    pub alarm: (f64, f64),
    /// Seq of the estimated start of the change.
    pub change: Option<f64>,
    /// Every k-th score shown.
    pub thinned: usize,
}

/// A monitored stream: the scores and their moving mean against the
/// in-control mean, and the detector's statistic against its limit, with
/// the change point and the alarm marked on both.
pub(crate) fn alarm(p: &AlarmPlot<'_>) -> Result<String> {
    let mut svg = String::new();
    let mut areas = Vec::new();
    {
        let root = SVGBackend::with_string(&mut svg, (SIZE.0, SIZE.1 + 160)).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        let (top, bottom) = root.split_vertically(SIZE.1 as i32 / 2 + 90);
        let xs = p.scores.iter().map(|q| q.0).chain([p.alarm.0]);
        let (x_lo, x_hi) = xs.fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), x| {
            (a.min(x), b.max(x))
        });
        let (x_lo, x_hi) = if x_hi > x_lo {
            (x_lo, x_hi)
        } else {
            (x_lo - 1.0, x_lo + 1.0)
        };
        let (ylo, yhi) = padded(
            p.scores.iter().map(|q| q.1).fold(p.mean, f64::min),
            p.scores.iter().map(|q| q.1).fold(p.mean, f64::max),
        );
        // Head room for the legend above the scores.
        let yhi = yhi + (yhi - ylo) * 0.6;
        let caption = if p.thinned > 1 {
            format!("{} (every {}th score shown)", p.title, p.thinned)
        } else {
            p.title.to_string()
        };
        let mut up = ChartBuilder::on(&top)
            .caption(caption, ("sans-serif", 17))
            .margin(10)
            .x_label_area_size(28)
            .y_label_area_size(56)
            .build_cartesian_2d(x_lo..x_hi, ylo..yhi)
            .map_err(err)?;
        up.configure_mesh()
            .y_desc("score")
            .x_labels(count_ticks(x_lo, x_hi))
            .x_label_formatter(&count_label)
            .draw()
            .map_err(err)?;
        areas.push(up.plotting_area().get_pixel_range());
        let dots = inside(&up, p.scores.iter().copied());
        up.draw_series(
            dots.into_iter()
                .map(|q| Circle::new(q, 2, BLUE.mix(0.35).filled())),
        )
        .map_err(err)?
        .label("live score")
        .legend(|(x, y)| Circle::new((x + 8, y), 3, BLUE.filled()));
        let moving = format!("moving mean of {} scores", p.window);
        line(&mut up, p.moving, BLUE.stroke_width(2), Some(&moving))?;
        line(
            &mut up,
            &[(x_lo, p.mean), (x_hi, p.mean)],
            GREY.stroke_width(1),
            Some("in-control mean"),
        )?;
        marks(&mut up, p, ylo, yhi, false)?;
        legend(&mut up, SeriesLabelPosition::UpperLeft)?;

        let (slo, shi) = padded(
            0.0,
            p.statistic
                .iter()
                .map(|q| q.1)
                .fold(p.limit.max(p.alarm.1), f64::max),
        );
        let shi = shi + (shi - slo) * 0.6;
        let mut down = ChartBuilder::on(&bottom)
            .margin(10)
            .x_label_area_size(36)
            .y_label_area_size(56)
            .build_cartesian_2d(x_lo..x_hi, slo..shi)
            .map_err(err)?;
        down.configure_mesh()
            .x_desc("trace seq")
            .y_desc("detector statistic")
            .x_labels(count_ticks(x_lo, x_hi))
            .x_label_formatter(&count_label)
            .draw()
            .map_err(err)?;
        areas.push(down.plotting_area().get_pixel_range());
        if !p.statistic.is_empty() {
            line(
                &mut down,
                p.statistic,
                ORANGE.stroke_width(2),
                Some("statistic"),
            )?;
        }
        line(
            &mut down,
            &[(x_lo, p.limit), (x_hi, p.limit)],
            RED_.stroke_width(1),
            Some("limit h"),
        )?;
        marks(&mut down, p, slo, shi, true)?;
        let at = inside(&down, [p.alarm]);
        down.draw_series(
            at.into_iter()
                .map(|q| Cross::new(q, 7, RED_.stroke_width(3))),
        )
        .map_err(err)?;
        legend(&mut down, SeriesLabelPosition::UpperLeft)?;
        root.present().map_err(err)?;
    }
    Ok(annotate(svg, &areas))
}

/// The change point and the alarm as vertical lines across a chart
/// (`labelled`: in its legend; one legend names them for both panels).
fn marks(
    chart: &mut Chart<'_, '_>,
    p: &AlarmPlot<'_>,
    lo: f64,
    hi: f64,
    labelled: bool,
) -> Result<()> {
    if let Some(c) = p.change {
        line(
            chart,
            &[(c, lo), (c, hi)],
            PURPLE.stroke_width(2),
            labelled.then_some("change point (estimated start)"),
        )?;
    }
    line(
        chart,
        &[(p.alarm.0, lo), (p.alarm.0, hi)],
        RED_.stroke_width(1),
        labelled.then_some("alarm"),
    )
}

/// The rows of the timeline.
pub(crate) const TIMELINE_ROWS: [&str; 4] = ["promotion", "rejection", "alarm", "heal"];

/// Promotions, rejections, alarms and heals by wall time: `events` are
/// (milliseconds since `start_ms`, row index into [`TIMELINE_ROWS`]);
/// `unit` names the time axis (its values are in `scale` ms).
pub(crate) fn timeline(
    events: &[(f64, usize)],
    span_ms: f64,
    scale: f64,
    unit: &str,
) -> Result<String> {
    let mut svg = String::new();
    let mut areas = Vec::new();
    {
        let root = SVGBackend::with_string(&mut svg, (SIZE.0, 220)).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        let hi = (span_ms / scale).max(1e-3) * 1.02;
        let mut chart = ChartBuilder::on(&root)
            .caption("What happened, when", ("sans-serif", 17))
            .margin(12)
            .x_label_area_size(36)
            .y_label_area_size(80)
            .build_cartesian_2d(0f64..hi, -0.5f64..3.5f64)
            .map_err(err)?;
        let row = |y: &f64| {
            let i = y.round();
            if (y - i).abs() < 1e-6 && (0.0..4.0).contains(&i) {
                TIMELINE_ROWS[i as usize].to_string()
            } else {
                String::new()
            }
        };
        chart
            .configure_mesh()
            .x_desc(unit)
            .y_labels(4)
            .y_label_formatter(&row)
            .draw()
            .map_err(err)?;
        areas.push(chart.plotting_area().get_pixel_range());
        for (i, color) in [GREEN, RED_, PURPLE, ORANGE].into_iter().enumerate() {
            let points = inside(
                &chart,
                events
                    .iter()
                    .filter(|(_, r)| *r == i)
                    .map(|(t, _)| (t / scale, i as f64)),
            );
            chart
                .draw_series(
                    points
                        .into_iter()
                        .map(|q| TriangleMarker::new(q, 7, color.filled())),
                )
                .map_err(err)?;
        }
        root.present().map_err(err)?;
    }
    Ok(annotate(svg, &areas))
}

/// A benchmark over commits: its level with a 95 % interval per commit,
/// verdicts marked, and a dashed line before each commit in `steps`
/// (index, ratio) where its level changed.
pub(crate) fn bench_history(
    title: &str,
    unit: &str,
    rungs: &[Rung],
    steps: &[(usize, f64)],
) -> Result<String> {
    ladder(title, &format!("time ({unit})"), rungs, steps)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_leaving_the_chart_is_cut_at_its_border() {
        let runs = clip_polyline(
            &[(0.0, 0.0), (1.0, 2.0), (2.0, 0.0), (3.0, 0.5)],
            (0.0, 3.0),
            (0.0, 1.0),
        );
        assert_eq!(runs.len(), 2, "{runs:?}");
        assert_eq!(runs[0], vec![(0.0, 0.0), (0.5, 1.0)]);
        assert_eq!(runs[1], vec![(1.5, 1.0), (2.0, 0.0), (3.0, 0.5)]);
        for p in runs.iter().flatten() {
            assert!((0.0..=3.0).contains(&p.0) && (0.0..=1.0).contains(&p.1));
        }
        // Entirely outside: nothing; a NaN breaks the line.
        assert!(clip_polyline(&[(0.0, 5.0), (1.0, 6.0)], (0.0, 1.0), (0.0, 1.0)).is_empty());
        let broken = clip_polyline(
            &[
                (0.0, 0.1),
                (0.2, 0.2),
                (0.3, f64::NAN),
                (0.4, 0.2),
                (0.5, 0.3),
            ],
            (0.0, 1.0),
            (0.0, 1.0),
        );
        assert_eq!(broken.len(), 2, "{broken:?}");
    }

    #[test]
    fn count_axes_are_labelled_with_integers_only() {
        assert_eq!(count_label(&2.0), "2");
        assert_eq!(count_label(&2.5), "");
        assert_eq!(count_ticks(0.0, 3.0), 4);
        assert_eq!(count_ticks(0.0, 500.0), 10);
    }
}
