//! `ratchet-report`: what a store holds, for people — one self-contained
//! HTML file (inline CSS, SVG plots drawn by plotters, no script, nothing
//! fetched: it opens offline) and a short Markdown summary fit for a
//! pull-request comment.
//!
//! The report shows: the per-commit score ladder with 95 % intervals
//! (promoted commits marked); each recent decision's log-likelihood path
//! between its boundaries (bernoulli tests; recomputed from the trace as of
//! the decision); each alarm's stream with its CUSUM statistic and limit;
//! the timeline of promotions, alarms and heals; benchmark history per
//! runner fingerprint; and a table of every decision with its evidence.
//! Long series are thinned to at most [`ReportOptions::max_points`] points,
//! and the plot says so.
//!
//! ```no_run
//! let mut store = ratchet_trace::Store::open(".ratchet", ratchet_trace::StoreOptions::default())?;
//! let html = ratchet_report::html(&mut store, &ratchet_report::ReportOptions::default())?;
//! std::fs::write("report.html", html)?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![deny(missing_docs)]

mod svg;

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use ratchet_trace::{AsOf, CommitId, Event, ScorerRef, Store, Verified};
use serde_json::Value;

pub use svg::thin;

/// What can go wrong making a report.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The store could not be read.
    #[error("trace store: {0}")]
    Trace(#[from] ratchet_trace::Error),
    /// A plot could not be drawn.
    #[error("plot: {0}")]
    Plot(String),
    /// A formatting failure (never expected: writing to a string).
    #[error("formatting: {0}")]
    Fmt(#[from] std::fmt::Error),
}

/// Result alias.
pub type Result<T> = std::result::Result<T, Error>;

/// What to show.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReportOptions {
    /// The scorer of the ladder (default: the scorer with the most scores,
    /// anchors and benchmarks aside).
    pub scorer: Option<String>,
    /// Points a plotted series keeps at most (longer ones are thinned).
    pub max_points: usize,
    /// Decisions whose LLR path is drawn (the latest ones).
    pub max_paths: usize,
}

impl Default for ReportOptions {
    fn default() -> Self {
        ReportOptions {
            scorer: None,
            max_points: 2000,
            max_paths: 12,
        }
    }
}

fn short(c: &str) -> &str {
    &c[..c.len().min(8)]
}

/// Text made safe inside HTML.
fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

fn payload(e: &Event) -> Value {
    serde_json::from_slice(&e.payload).unwrap_or(Value::Null)
}

/// A decision event, read for people.
struct Decision {
    seq: u64,
    v: Value,
}

impl Decision {
    fn outcome(&self) -> String {
        let o = &self.v["outcome"];
        let word = o["verdict"].as_str().unwrap_or("?");
        match o.get("stage") {
            Some(stage) => format!("{word} at {}", stage_name(stage)),
            None => word.to_string(),
        }
    }
    fn sequential(&self) -> Option<&Value> {
        self.v["stages"]
            .as_array()?
            .iter()
            .find(|s| s["stage"] == "sequential")
            .map(|s| &s["details"])
    }
}

fn stage_name(stage: &Value) -> String {
    match stage {
        Value::String(s) => s.replace('_', " "),
        Value::Object(m) => m
            .iter()
            .map(|(k, v)| format!("{k} {}", v.as_str().unwrap_or("")))
            .collect::<Vec<_>>()
            .join(" "),
        other => other.to_string(),
    }
}

/// The scorer a ladder shows when none is asked for.
fn primary_scorer(view: &Verified) -> Result<Option<String>> {
    let overview = view.overview();
    Ok(overview
        .scorers
        .iter()
        .filter(|s| {
            ratchet_scorers::Anchor::from_scorer(&s.scorer).is_none()
                && s.scorer != ratchet_scorers::CRITERION_NS
        })
        .max_by_key(|s| s.versions.iter().map(|v| v.n).sum::<u64>())
        .map(|s| s.scorer.clone()))
}

fn interval(mean: f64, variance: Option<f64>, n: u64) -> (f64, f64) {
    let half = variance.map_or(0.0, |v| 1.96 * (v / n.max(1) as f64).sqrt());
    (mean - half, mean + half)
}

/// The LLR path of a bernoulli decision, recomputed from the trace as it
/// stood by the gate's own code ([`ratchet_gate::recorded_bernoulli_path`]:
/// its pairs, its order, its orientation).
fn bernoulli_path(view: &Verified, d: &Decision, scorer: &str) -> Result<Option<Vec<f64>>> {
    ratchet_gate::recorded_bernoulli_path(view, &d.v, scorer)
        .map_err(|e| Error::Plot(e.to_string()))
}

/// The report as one HTML document.
///
/// # Errors
/// [`Error::Trace`] if the store cannot be read; [`Error::Plot`] if a plot
/// cannot be drawn. A store that fails verification is reported (in red),
/// not refused — and nothing of it is drawn: every figure comes from the
/// verified view.
pub fn html(store: &mut Store, options: &ReportOptions) -> Result<String> {
    let (verification, view) = store.verify_and_fold(&ratchet_trace::VerifyOptions::default())?;
    match view {
        Some(view) => html_of(&view, &verification, options),
        None => {
            let why = verification.fault.as_ref().map_or_else(
                || "the store is keyed and was opened without its writer key, so its MACs were not checked".to_string(),
                |f| f.to_string(),
            );
            Ok(format!(
                "<!DOCTYPE html>\n<html lang=en><head><meta charset=utf-8><title>ratchet report</title>\
                 <meta name=ratchet-plots content=0><style>{CSS}</style></head><body>\
                 <h1>ratchet report</h1><p class=meta>store <code>{}</code></p>\
                 <p class=bad>The chain does NOT verify: {}. Nothing of it is shown: a figure drawn from an altered trace would be the alteration's.</p>\
                 </body></html>\n",
                esc(store.id()),
                esc(&why)
            ))
        }
    }
}

/// The report of a verified view.
///
/// # Errors
/// As [`html`].
pub fn html_of(
    view: &Verified,
    verification: &ratchet_trace::VerifyReport,
    options: &ReportOptions,
) -> Result<String> {
    let overview = view.overview();
    let scorer = match &options.scorer {
        Some(s) => Some(s.clone()),
        None => primary_scorer(view)?,
    };
    let events = view.events_of_kinds(&["decision", "promotion", "alarm", "checkout"]);
    let decisions: Vec<Decision> = events
        .iter()
        .filter(|e| e.kind == "decision")
        .map(|e| Decision {
            seq: e.seq,
            v: payload(e),
        })
        .collect();
    let promoted: BTreeSet<String> = events
        .iter()
        .filter(|e| e.kind == "promotion" && e.origin.is_none())
        .filter_map(|e| e.commit.as_ref().map(|c| c.to_string()))
        .collect();

    let mut body = String::new();
    let mut plots = 0usize;
    writeln!(
        body,
        "<h1>ratchet report</h1><p class=meta>store <code>{}</code> · {} events · {} commits · {} decisions</p>",
        esc(view.store_id()),
        overview.size,
        overview.commits.len(),
        decisions.len()
    )?;
    match &verification.fault {
        None => writeln!(
            body,
            "<p class=ok>The chain verifies: {} events, every hash{} recomputed.</p>",
            verification.size,
            if verification.keyed { " and MAC" } else { "" }
        )?,
        Some(f) => writeln!(
            body,
            "<p class=bad>The chain does NOT verify: {}. Nothing below can be relied on.</p>",
            esc(&f.to_string())
        )?,
    }

    // The ladder.
    writeln!(body, "<h2>Score ladder</h2>")?;
    match &scorer {
        None => writeln!(body, "<p>No scores in this store.</p>")?,
        Some(scorer) => {
            let version = view
                .scorer_versions(scorer, AsOf::Head)
                .into_iter()
                .next()
                .map(|v| v.version)
                .unwrap_or_default();
            let stats: BTreeMap<String, ratchet_trace::CommitStats> = view
                .commit_stats(ScorerRef::at_version(scorer, &version), AsOf::Head)
                .into_iter()
                .map(|s| (s.commit.to_string(), s))
                .collect();
            let ordered: Vec<&ratchet_trace::CommitStats> = overview
                .commits
                .iter()
                .filter_map(|c| stats.get(&c.commit))
                .collect();
            let shown = &ordered[ordered.len().saturating_sub(60)..];
            let rungs: Vec<svg::Rung> = shown
                .iter()
                .map(|s| {
                    let (low, high) = interval(s.mean, s.variance, s.n);
                    svg::Rung {
                        label: short(s.commit.as_str()).to_string(),
                        mean: s.mean,
                        low,
                        high,
                        marked: promoted.contains(s.commit.as_str()),
                    }
                })
                .collect();
            let title = if shown.len() < ordered.len() {
                format!(
                    "{scorer}: the latest {} of {} commits",
                    shown.len(),
                    ordered.len()
                )
            } else {
                format!("{scorer} per commit")
            };
            writeln!(
                body,
                "<figure id=ladder>{}<figcaption>Mean {scorer} per commit (scorer version <code>{}</code>) with a 95 % normal interval; promoted commits in green. Live traffic counts toward a commit's mean.</figcaption></figure>",
                svg::ladder(&title, &format!("{scorer} (mean)"), &rungs, "promoted")?,
                esc(short(&version))
            )?;
            plots += 1;
        }
    }

    // Decisions: LLR paths.
    writeln!(body, "<h2>Sequential decisions</h2>")?;
    // The last decision of each comparison (earlier ones said "continue"
    // on a prefix of the same path), the latest first.
    let mut seen = BTreeSet::new();
    let finals: Vec<&Decision> = decisions
        .iter()
        .rev()
        .filter(|d| seen.insert((d.v["baseline"].to_string(), d.v["candidate"].to_string())))
        .take(options.max_paths)
        .collect();
    let mut drawn = 0;
    for d in finals {
        let Some(scorer) = d.v["scorer_versions"].as_object().and_then(|m| {
            m.keys()
                .find(|k| Some(k.as_str()) == scorer.as_deref())
                .cloned()
        }) else {
            continue;
        };
        let Some(path) = bernoulli_path(view, d, &scorer)? else {
            continue;
        };
        let fig = d.sequential().cloned().unwrap_or(Value::Null);
        let (lower, upper) = (
            fig["lower"].as_f64().unwrap_or(-3.0),
            fig["upper"].as_f64().unwrap_or(3.0),
        );
        let title = format!(
            "seq {}: {} vs {} — {}",
            d.seq,
            short(d.v["candidate"].as_str().unwrap_or("")),
            short(d.v["baseline"].as_str().unwrap_or("")),
            d.outcome()
        );
        writeln!(
            body,
            "<figure class=llr>{}<figcaption>Log-likelihood ratio of the discordant-pair SPRT (θ₀ {}, θ₁ {}) after each pair, recomputed from the trace as of seq {}.</figcaption></figure>",
            svg::llr_path(&title, &path, lower, upper)?,
            fig["theta0"],
            fig["theta1"],
            d.v["trace"]["size"]
        )?;
        plots += 1;
        drawn += 1;
    }
    if drawn == 0 {
        writeln!(body, "<p>No bernoulli decision to draw a path for.</p>")?;
    }

    // Alarms: streams and CUSUM.
    writeln!(body, "<h2>Live quality and alarms</h2>")?;
    let alarms: Vec<&Event> = events
        .iter()
        .copied()
        .filter(|e| e.kind == "alarm" && e.origin.is_none())
        .collect();
    if alarms.is_empty() {
        writeln!(body, "<p>No alarm recorded.</p>")?;
    }
    for e in alarms.iter().rev().take(options.max_paths) {
        let a = payload(e);
        let (Some(commit), Some(scorer), Some(seq)) = (
            a["commit"].as_str(),
            a["scorer"].as_str(),
            a["seq"].as_u64(),
        ) else {
            continue;
        };
        let commit = CommitId::parse(commit)?;
        let (mu, sd) = (
            a["baseline_mean"].as_f64().unwrap_or(0.0),
            a["baseline_sd"].as_f64().unwrap_or(1.0).max(1e-12),
        );
        let limit = a["alarm"]["limit"].as_f64().unwrap_or(5.0);
        let down = a["alarm"]["shift"] != "up";
        let start = events
            .iter()
            .filter(|x| {
                (x.kind == "promotion" || x.kind == "checkout")
                    && x.seq < seq
                    && x.commit.as_ref() == Some(&commit)
            })
            .map(|x| x.seq)
            .max()
            .unwrap_or(0);
        let version = a["scorer_version"].as_str().map(str::to_string);
        let scorer_ref = match &version {
            Some(v) => ScorerRef::at_version(scorer, v),
            None => ScorerRef::from(scorer),
        };
        let stream = view.score_stream(&commit, scorer_ref, start, usize::MAX);
        let end = seq + (seq - start) / 4;
        let stream: Vec<(f64, f64)> = stream
            .into_iter()
            .filter(|(s, _)| *s <= end)
            .map(|(s, v)| (s as f64, v))
            .collect();
        let k = 0.5;
        let mut stat = 0.0;
        let statistic: Vec<(f64, f64)> = stream
            .iter()
            .map(|(s, v)| {
                let z = (v - mu) / sd;
                stat = (stat + if down { -z } else { z } - k).max(0.0);
                (*s, stat)
            })
            .collect();
        let (scores, k_scores) = thin(&stream, options.max_points);
        let (statistic, _) = thin(&statistic, options.max_points);
        let title = format!(
            "{scorer} under {} after seq {start}",
            short(commit.as_str())
        );
        writeln!(
            body,
            "<figure class=cusum>{}<figcaption>Alarm at seq {seq} ({} shift; in-control mean {mu:.3}, σ {sd:.3}); one-sided CUSUM with k = {k} recomputed from the stream, limit h = {limit:.2}.</figcaption></figure>",
            svg::cusum(
                &title,
                &scores,
                &statistic,
                limit,
                Some(seq as f64),
                k_scores
            )?,
            if down { "downward" } else { "upward" }
        )?;
        plots += 1;
    }

    // Timeline.
    let marks: Vec<(u64, &'static str)> = events
        .iter()
        .filter(|e| e.origin.is_none())
        .filter_map(|e| match e.kind.as_str() {
            "promotion" => Some((e.seq, "promotion")),
            "alarm" => Some((e.seq, "alarm")),
            "checkout" => Some((e.seq, "heal")),
            _ => None,
        })
        .collect();
    writeln!(
        body,
        "<h2>Timeline</h2><figure id=timeline>{}<figcaption>Each promotion, alarm and heal (checkout) by its position in the trace.</figcaption></figure>",
        svg::timeline(&marks, overview.size)?
    )?;
    plots += 1;

    // Benchmark history.
    writeln!(body, "<h2>Benchmark history</h2>")?;
    let promoted_by_gate: BTreeSet<String> = decisions
        .iter()
        .filter(|d| d.v["outcome"]["verdict"] == "promote")
        .filter_map(|d| d.v["candidate"].as_str().map(str::to_string))
        .collect();
    let mut benches = 0;
    for fp in view.scorer_versions(ratchet_scorers::CRITERION_NS, AsOf::Head) {
        let mut by_bench: BTreeMap<String, Vec<svg::Rung>> = BTreeMap::new();
        for c in &overview.commits {
            let commit = CommitId::parse(&c.commit)?;
            let mut per: BTreeMap<String, Vec<f64>> = BTreeMap::new();
            view.each_score(0, &mut |s| {
                if s.commit == commit.as_str()
                    && s.scorer == ratchet_scorers::CRITERION_NS
                    && s.scorer_version == fp.version
                {
                    per.entry(s.task.to_string()).or_default().push(s.value);
                }
            });
            for (bench, xs) in per {
                let n = xs.len() as f64;
                let mean = xs.iter().sum::<f64>() / n;
                let var = (xs.len() > 1)
                    .then(|| xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0));
                let (low, high) = interval(mean, var, xs.len() as u64);
                by_bench.entry(bench).or_default().push(svg::Rung {
                    label: short(&c.commit).to_string(),
                    mean,
                    low,
                    high,
                    marked: promoted_by_gate.contains(&c.commit),
                });
            }
        }
        for (bench, rungs) in by_bench.into_iter().take(12) {
            writeln!(
                body,
                "<figure class=bench>{}<figcaption>Runner <code>{}</code>: mean time per iteration per commit with a 95 % interval over its recorded runs; commits the gate promoted in green.</figcaption></figure>",
                svg::bench_history(&bench, &rungs)?,
                esc(short(&fp.version))
            )?;
            plots += 1;
            benches += 1;
        }
    }
    if benches == 0 {
        writeln!(
            body,
            "<p>No benchmark results in this store (ingest criterion's output with <code>ratchet ingest criterion</code>).</p>"
        )?;
    }

    // Decisions table.
    writeln!(
        body,
        "<h2>Decisions</h2><table><tr><th>seq</th><th>class</th><th>candidate</th><th>baseline</th><th>outcome</th><th>n</th><th>effect (95 % CI)</th></tr>"
    )?;
    for d in decisions.iter().rev() {
        let fig = d.sequential();
        let effect = fig
            .and_then(|f| {
                let e = &f["effect"];
                Some(format!(
                    "{:+.3} ({:+.3}, {:+.3})",
                    e["estimate"].as_f64()?,
                    e["ci_low"].as_f64()?,
                    e["ci_high"].as_f64()?
                ))
            })
            .unwrap_or_else(|| "—".into());
        let outcome = d.outcome();
        let class = if outcome.starts_with("promote") {
            "promote"
        } else {
            "other"
        };
        writeln!(
            body,
            "<tr><td>{}</td><td>{}</td><td><code>{}</code></td><td><code>{}</code></td><td class={class}>{}</td><td>{}</td><td>{}</td></tr>",
            d.seq,
            esc(d.v["class"].as_str().unwrap_or("")),
            esc(short(d.v["candidate"].as_str().unwrap_or(""))),
            esc(short(d.v["baseline"].as_str().unwrap_or(""))),
            esc(&outcome),
            fig.and_then(|f| f["n"].as_u64())
                .map_or_else(|| "—".into(), |n| n.to_string()),
            effect
        )?;
    }
    writeln!(body, "</table>")?;
    Ok(format!(
        "<!DOCTYPE html>\n<html lang=en><head><meta charset=utf-8><title>ratchet report</title>\
         <meta name=ratchet-plots content={plots}><style>{CSS}</style></head><body>{body}</body></html>\n"
    ))
}

const CSS: &str = "body{font-family:system-ui,sans-serif;max-width:820px;margin:2em auto;padding:0 1em;color:#222}\
h1{margin-bottom:.2em}.meta{color:#666}.ok{color:#2c7a2c}.bad{color:#b00;font-weight:bold}\
figure{margin:1.5em 0}figcaption{color:#555;font-size:.9em}svg{max-width:100%;height:auto}\
table{border-collapse:collapse;width:100%;font-size:.9em}td,th{border-bottom:1px solid #ddd;padding:.3em .5em;text-align:left}\
td.promote{color:#2c7a2c;font-weight:bold}code{font-size:.95em}";

/// A short Markdown summary of the latest decision, fit for a pull-request
/// comment: the verdict, the effect with its interval, N, each stage.
///
/// # Errors
/// [`Error::Trace`] if the store cannot be read.
pub fn markdown(view: &Verified) -> Result<String> {
    let decisions = view.events_of_kinds(&["decision"]);
    let Some(e) = decisions.iter().rev().find(|e| e.origin.is_none()) else {
        return Ok("**ratchet**: no decision recorded in this store.\n".into());
    };
    let d = Decision {
        seq: e.seq,
        v: payload(e),
    };
    let mut out = String::new();
    writeln!(
        out,
        "### ratchet gate: **{}**\n\nClass `{}`: candidate `{}` against baseline `{}` (decision at seq {}, trace head `{}`).\n",
        d.outcome().to_uppercase(),
        d.v["class"].as_str().unwrap_or(""),
        short(d.v["candidate"].as_str().unwrap_or("")),
        short(d.v["baseline"].as_str().unwrap_or("")),
        d.seq,
        short(d.v["trace"]["hash"].as_str().unwrap_or(""))
    )?;
    if let Some(f) = d.sequential() {
        let e = &f["effect"];
        if let (Some(est), Some(lo), Some(hi)) = (
            e["estimate"].as_f64(),
            e["ci_low"].as_f64(),
            e["ci_high"].as_f64(),
        ) {
            writeln!(
                out,
                "Effect: **{est:+.4}** (95 % CI {lo:+.4} to {hi:+.4}; {}), sequential test `{}` over N = {}.\n",
                f["effect_measure"]
                    .as_str()
                    .unwrap_or("candidate − baseline"),
                f["test"].as_str().unwrap_or("?"),
                f["n"]
            )?;
        }
    }
    writeln!(out, "| stage | result |\n|---|---|")?;
    for s in d.v["stages"].as_array().into_iter().flatten() {
        let result = match &s["passed"] {
            Value::Bool(true) => "passed",
            Value::Bool(false) => "**failed**",
            _ => "not decided",
        };
        writeln!(out, "| {} | {result} |", stage_name(&s["stage"]))?;
    }
    Ok(out)
}
