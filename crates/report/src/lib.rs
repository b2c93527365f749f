//! `ratchet-report`: what a store holds, for people — one self-contained
//! HTML file (inline CSS, SVG plots drawn by plotters, no script, nothing
//! fetched: it opens offline) and a short Markdown summary fit for a
//! pull-request comment.
//!
//! The report leads with the verdict. At the top, one banner per class:
//! its latest *final* decision in words, the effect with its interval, and
//! what is deployed according to the trace (promotions and heals); under
//! each, the results per metric (primary, guardrails, invariants, required
//! tests: estimate, interval, criterion, pass or fail) and the failed
//! tests of the commits those decisions judged. Then the figures: the
//! per-commit score ladder with 95 % intervals (deployed, promoted,
//! rejected and healed commits marked); the path of each recent final
//! decision's sequential statistic between its boundaries, for every test
//! kind (LLR, or the betting test's two log capitals), recomputed from the
//! trace as of the decision by the gate's own code, its earlier looks
//! marked; each alarm's stream with its detector's statistic, the limit,
//! the change point and the alarm; a timeline in wall time; benchmark
//! history per runner fingerprint; and every decision, its interim
//! "continue" looks folded under the decision that ended them. Long series
//! are thinned to at most [`ReportOptions::max_points`] points, and the
//! plot says so.
//!
//! ```no_run
//! let mut store = ratchet_trace::Store::open(".ratchet", ratchet_trace::StoreOptions::default())?;
//! let html = ratchet_report::html(&mut store, &ratchet_report::ReportOptions::default())?;
//! std::fs::write("report.html", html)?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![deny(missing_docs)]

mod changes;
mod markdown;
mod read;
mod svg;

use ratchet_trace::ReservedKind;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use ratchet_drift::{NotDrawn, PathFrom, Shift, TraceAlarm};
use ratchet_gate::shown::{EffectShown, Scale, Unit, number, sig, signed};
use ratchet_gate::{
    GuardrailResult, Margin, Outcome, Stage, StageDetails, StageState, SuiteRun, TestFigures,
    TestKind,
};
use ratchet_trace::{AsOf, CommitId, Event, ScorerRef, Verified};

pub use markdown::{Summary, markdown, markdown_of};
pub use svg::thin;

use ratchet_records::{DeployedBy, Deployment};
use read::{Decision, Episode, short, utc};

/// What can go wrong making a report.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The store could not be read.
    #[error(transparent)]
    Trace(#[from] ratchet_trace::Error),
    /// A plot could not be drawn.
    #[error("plot: {0}")]
    Plot(String),
    /// A formatting failure (never expected: writing to a string).
    #[error(transparent)]
    Fmt(#[from] std::fmt::Error),
}

impl Error {
    /// The trace store's error this one is, if it is one: a transparent
    /// wrapper forwards its `source()` past the wrapped error, so the
    /// chain alone does not show it.
    pub fn trace_error(&self) -> Option<&ratchet_trace::Error> {
        match self {
            Error::Trace(e) => Some(e),
            _ => None,
        }
    }
}

/// Result alias.
pub type Result<T> = std::result::Result<T, Error>;

/// What to show.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReportOptions {
    /// The scorer of the ladder (default: the primary scorer of the
    /// latest final decision, the one the gate judged; with no decision,
    /// the scorer with the most scores, anchors and benchmarks aside).
    pub scorer: Option<String>,
    /// Points a plotted series keeps at most (longer ones are thinned).
    pub max_points: usize,
    /// Final decisions whose sequential path is drawn (the latest ones).
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

/// Text made safe inside HTML.
fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// The scorer a ladder shows when none is asked for.
fn primary_scorer(view: &Verified) -> Option<String> {
    view.overview()
        .scorers
        .iter()
        .filter(|s| {
            ratchet_scorers::Anchor::from_scorer(&s.scorer).is_none()
                && s.scorer != ratchet_scorers::CRITERION_NS
        })
        .max_by_key(|s| s.versions.iter().map(|v| v.n).sum::<u64>())
        .map(|s| s.scorer.clone())
}

fn interval(mean: f64, variance: Option<f64>, n: u64) -> (f64, f64) {
    let half = variance.map_or(0.0, |v| 1.96 * (v / n.max(1) as f64).sqrt());
    (mean - half, mean + half)
}

/// The report as one HTML document.
///
/// # Errors
/// [`Error::Trace`] if the store cannot be read; [`Error::Plot`] if a plot
/// cannot be drawn. A store that fails verification is reported (in red),
/// not refused — and nothing of it is drawn: every figure comes from the
/// verified view.
pub fn html(store: &mut ratchet_trace::Store, options: &ReportOptions) -> Result<String> {
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

/// What the sections share: the trace read once.
struct Page<'v> {
    view: &'v Verified,
    options: &'v ReportOptions,
    decisions: &'v [Decision],
    /// Decisions this gate cannot read (a later law's), by seq, and why.
    unreadable: Vec<(u64, String)>,
    episodes: BTreeMap<String, Vec<Episode<'v>>>,
    /// What runs for each class: the one reading `status`, `serve` and
    /// Python give ([`ratchet_records::deployments`]).
    deployed: BTreeMap<String, Deployment>,
    events: Vec<&'v Event>,
    body: String,
    plots: usize,
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
    let events = view.events_of_kinds(&[
        ReservedKind::Decision.as_str(),
        ReservedKind::Promotion.as_str(),
        ReservedKind::Alarm.as_str(),
        ReservedKind::Checkout.as_str(),
    ]);
    let (decisions, unreadable) = Decision::read_all(&events);
    let mut page = Page {
        view,
        options,
        decisions: &decisions,
        unreadable,
        episodes: read::episodes(&decisions),
        deployed: ratchet_records::deployments(view)?,
        events,
        body: String::new(),
        plots: 0,
    };
    page.header(verification)?;
    page.banners()?;
    page.failed_tests()?;
    page.ladder()?;
    page.paths()?;
    page.alarms()?;
    page.timeline()?;
    page.benchmarks()?;
    page.decisions_table()?;
    let Page { body, plots, .. } = page;
    Ok(format!(
        "<!DOCTYPE html>\n<html lang=en><head><meta charset=utf-8><title>ratchet report</title>\
         <meta name=ratchet-plots content={plots}><style>{CSS}</style></head><body>{body}</body></html>\n"
    ))
}

/// The latest final episode of each class.
fn latest_finals<'a, 'v>(
    episodes: &'a BTreeMap<String, Vec<Episode<'v>>>,
) -> impl Iterator<Item = (&'a str, &'a Episode<'v>)> {
    episodes.iter().filter_map(|(class, eps)| {
        eps.iter()
            .rev()
            .find(|e| e.is_final())
            .map(|e| (class.as_str(), e))
    })
}

/// The class policy a decision was taken under, when it is pinned in the
/// trace (the pin in force at the decision, with the decision's hash).
fn pinned_policy_of(view: &Verified, d: &Decision) -> Option<ratchet_gate::ClassPolicy> {
    let pin = ratchet_gate::pinned_policy(view, d.class(), d.at()).ok()??;
    (d.v.policy_hash == pin.hash).then_some(pin.policy)
}

/// A decision's α and β: its pinned policy's, else read back from the
/// Wald boundaries it recorded.
fn alpha_beta(view: &Verified, d: &Decision) -> Option<(f64, f64)> {
    match pinned_policy_of(view, d) {
        // A class without a sequential test has no error rates to show.
        Some(p) if p.test == TestKind::None => None,
        Some(p) => Some((p.alpha, p.beta)),
        None => read::alpha_beta(d.sequential()?),
    }
}

/// How a decision reads its primary scorer: the scorer (its pinned
/// policy's, else the one it read that no guardrail or invariant names),
/// which way it improves and its unit ([`ratchet_gate::shown::Scale`]).
pub(crate) fn scale_of(view: &Verified, d: &Decision) -> Scale {
    Scale::of_verdict(Some(view), &d.v, None)
}

/// The primary scorer of a decision ([`scale_of`]).
fn decision_scorer(view: &Verified, d: &Decision) -> Option<String> {
    scale_of(view, d).scorer
}

/// A decision's effect as a person reads it: candidate − baseline in the
/// scorer's unit, with the word for its direction.
pub(crate) fn effect_of(view: &Verified, d: &Decision) -> Option<EffectShown> {
    scale_of(view, d).verdict_effect(&d.v)
}

/// Whether a decision's class runs no sequential test (`test = "none"`):
/// its pinned policy says so, or it promoted with no stage of a test (a
/// promotion under any test reports the test's stage).
fn decided_without_test(view: &Verified, d: &Decision) -> bool {
    match pinned_policy_of(view, d) {
        Some(p) => p.test == TestKind::None,
        None => {
            d.promoted()
                && !d.stages().any(|s| {
                    matches!(
                        s.details,
                        StageDetails::Sequential(_)
                            | StageDetails::TooFewTasks(_)
                            | StageDetails::Refused(_)
                            | StageDetails::Benchmarks(_)
                    )
                })
        }
    }
}

/// A sequential path as the report draws it.
struct Drawn {
    promote: Vec<f64>,
    reject: Option<Vec<f64>>,
    lower: f64,
    upper: f64,
    judged_from: u64,
    observation: &'static str,
    test: TestKind,
}

/// The recomputed path of a decision, or why there is none.
fn path_of(view: &Verified, d: &Decision) -> std::result::Result<Drawn, String> {
    let fig = d.sequential().ok_or("its sequential test did not run")?;
    let test = fig.test.test();
    if let Some(policy) = pinned_policy_of(view, d) {
        let path = ratchet_gate::recorded_path(view, &d.v, &policy)
            .map_err(|e| e.to_string())?
            .ok_or("its sequential test did not run")?;
        return Ok(Drawn {
            promote: path.promote,
            reject: path.reject,
            lower: path.lower,
            upper: path.upper,
            judged_from: path.judged_from,
            observation: path.observation,
            test,
        });
    }
    // Unpinned: a bernoulli verdict records all its test needs.
    let scorer = decision_scorer(view, d).ok_or("it names no primary scorer")?;
    let path = ratchet_gate::recorded_bernoulli_path(view, &d.v, &scorer)
        .map_err(|e| e.to_string())?
        .ok_or("the class's policy is not pinned in the trace, and only a bernoulli verdict records every parameter of its test")?;
    Ok(Drawn {
        promote: path,
        reject: None,
        lower: fig.lower,
        upper: fig.upper,
        judged_from: 1,
        observation: "discordant pair",
        test,
    })
}

fn verdict_words(d: &Decision) -> &'static str {
    match &d.v.outcome {
        Outcome::Promote => "PROMOTED",
        Outcome::Reject { .. } if d.truncated() => "NOT PROMOTED (truncated)",
        Outcome::Reject { .. } if !d.measured_reject() => match d.v.outcome.status() {
            ratchet_gate::GateStatus::UnverifiedTrace => "CANNOT DECIDE (trace does not verify)",
            _ => "CANNOT DECIDE (evidence missing)",
        },
        Outcome::Reject { .. } => "REJECTED",
        Outcome::Continue { .. } => "STILL OPEN",
    }
}

fn css_class(d: &Decision) -> &'static str {
    match &d.v.outcome {
        Outcome::Promote => "promote",
        Outcome::Continue { .. } => "open",
        // A refusal or a truncation is not a measured reject: not red.
        Outcome::Reject { .. } if !d.measured_reject() => "open",
        Outcome::Reject { .. } => "reject",
    }
}

/// "candidate − baseline: -40.7 µs [-45.1 µs, -36.2 µs] (an improvement:
/// lower is better)".
fn effect_text(view: &Verified, d: &Decision) -> Option<String> {
    effect_of(view, d).map(|e| e.text)
}

/// A stage's state as the page's CSS class.
fn state(passed: StageState) -> &'static str {
    match passed {
        StageState::Passed => "pass",
        StageState::Failed => "fail",
        StageState::Open => "open",
    }
}

impl Page<'_> {
    fn header(&mut self, verification: &ratchet_trace::VerifyReport) -> Result<()> {
        let overview = self.view.overview();
        let span = match (self.view.events().first(), self.view.events().last()) {
            (Some(a), Some(b)) => format!(" · {} to {} UTC", utc(a.ts_ms), utc(b.ts_ms)),
            _ => String::new(),
        };
        writeln!(
            self.body,
            "<h1>ratchet report</h1><p class=meta>store <code>{}</code> · {} events · {} commits · {} decisions{span}</p>",
            esc(self.view.store_id()),
            overview.size,
            overview.commits.len(),
            self.decisions.len()
        )?;
        match &verification.fault {
            None => writeln!(
                self.body,
                "<p class=ok>The chain verifies: {} events, every hash{} recomputed.</p>",
                verification.size,
                if verification.keyed { " and MAC" } else { "" }
            )?,
            Some(f) => writeln!(
                self.body,
                "<p class=bad>The chain does NOT verify: {}. Nothing below can be relied on.</p>",
                esc(&f.to_string())
            )?,
        }
        for (seq, why) in &self.unreadable {
            writeln!(
                self.body,
                "<p class=bad>The decision at seq {seq} is not shown: {} (a ratchet that knows its law reads it).</p>",
                esc(why)
            )?;
        }
        Ok(())
    }

    /// One banner per class, with its results table.
    fn banners(&mut self) -> Result<()> {
        let mut classes: BTreeSet<String> = self.episodes.keys().cloned().collect();
        classes.extend(self.deployed.keys().cloned());
        if classes.is_empty() {
            writeln!(
                self.body,
                "<section class=\"banner open\" id=verdicts><h2>No decision recorded</h2><p>The gate has not decided anything in this store yet.</p></section>"
            )?;
            return Ok(());
        }
        writeln!(self.body, "<div id=verdicts>")?;
        for class in classes {
            let eps = self.episodes.get(&class);
            let last_final = eps.and_then(|e| e.iter().rev().find(|e| e.is_final()));
            let open = eps
                .and_then(|e| e.last())
                .filter(|e| !e.is_final())
                .map(|e| e.last);
            let mut text = String::new();
            let look = match last_final {
                Some(ep) => {
                    let last = ep.last;
                    writeln!(
                        text,
                        "<h2>{}: {} <code>{}</code> over <code>{}</code></h2>",
                        esc(&class),
                        verdict_words(last),
                        esc(short(last.candidate())),
                        esc(short(last.baseline()))
                    )?;
                    let mut facts = Vec::new();
                    match last.effect() {
                        Some((tasks, iv)) => facts.push(format!(
                            "Effect <b>{}</b>, on {tasks} tasks (95 % {})",
                            esc(&effect_text(self.view, last).unwrap_or_default()),
                            esc(iv)
                        )),
                        None if decided_without_test(self.view, last) => facts.push(
                            "No sequential test: the class is decided by its required suites and invariants alone".into(),
                        ),
                        None => facts.push(format!(
                            "No effect measured: the decision stopped at {}",
                            esc(&last.outcome())
                        )),
                    }
                    if let Some((a, b)) = alpha_beta(self.view, last) {
                        facts.push(format!("α = {}, β = {}", sig(a), sig(b)));
                    }
                    writeln!(
                        text,
                        "<p class=effect>{}.</p><p>Decided at seq {} ({} UTC) after {} look{} at the gate{}.</p>",
                        facts.join("; "),
                        last.seq,
                        utc(last.ts_ms),
                        ep.interim.len() + 1,
                        if ep.interim.is_empty() { "" } else { "s" },
                        last.reason()
                            .map(|r| format!(": {}", esc(r)))
                            .unwrap_or_default()
                    )?;
                    css_class(last)
                }
                None => {
                    writeln!(text, "<h2>{}: no final decision yet</h2>", esc(&class))?;
                    "open"
                }
            };
            match self.deployed.get(&class) {
                Some(dep) => writeln!(
                    text,
                    "<p class=deployed>Deployed: <code>{}</code> — {} at seq {} ({} UTC){}.</p>",
                    esc(short(dep.commit.as_str())),
                    match dep.how {
                        DeployedBy::Heal { .. } => "checked out by a heal",
                        DeployedBy::Promotion => "promoted",
                    },
                    dep.seq,
                    utc(dep.ts_ms),
                    match &dep.how {
                        DeployedBy::Heal {
                            alarm_seq: Some(a), ..
                        } => format!(" after the alarm at seq {a}"),
                        _ => String::new(),
                    }
                )?,
                // A promote decision is not a deployment: only `gate
                // --record-promotion` (or `merge --deploy`) records one. Said
                // where the two would otherwise read as a contradiction.
                None if last_final.is_some_and(|ep| ep.last.promoted()) => writeln!(
                    text,
                    "<p class=deployed>Deployed: nothing — the gate decided promote, but no promotion was recorded for this class (<code>ratchet gate … --record-promotion REPO</code> records it and moves <code>refs/ratchet/promoted/{}</code>).</p>",
                    esc(&class)
                )?,
                None => writeln!(
                    text,
                    "<p class=deployed>Deployed: nothing — the trace holds no promotion for this class.</p>"
                )?,
            }
            if let Some(d) = open {
                let fig = d.sequential();
                writeln!(
                    text,
                    "<p class=pending>In progress: <code>{}</code> against <code>{}</code> — continue{}.</p>",
                    esc(short(d.candidate())),
                    esc(short(d.baseline())),
                    fig.map(|f| format!(
                        " after {} observations (statistic {:+.3}, boundaries {:+.3} and {:+.3})",
                        f.n, f.llr, f.lower, f.upper
                    ))
                    .unwrap_or_default()
                )?;
            }
            writeln!(
                self.body,
                "<section class=\"banner {look}\" id=\"banner-{}\">{text}</section>",
                esc(&class)
            )?;
            if let Some(ep) = last_final {
                self.results(&class, ep.last)?;
            }
        }
        self.alarms_in_brief()?;
        writeln!(self.body, "</div>")?;
        Ok(())
    }

    /// The top box's word on live quality: how many alarms the trace
    /// records and the latest (a verdict on top of a regression caught
    /// live read as if all were well). Their charts are further down.
    fn alarms_in_brief(&mut self) -> Result<()> {
        let recorded: Vec<(&Event, TraceAlarm)> = self
            .events
            .iter()
            .copied()
            .filter(|e| e.reserved_kind() == Some(ReservedKind::Alarm) && e.origin.is_none())
            .filter_map(|e| Some((e, serde_json::from_slice::<TraceAlarm>(&e.payload).ok()?)))
            .collect();
        let Some((latest, a)) = recorded.last() else {
            return writeln!(self.body, "<p class=live>Live: no alarm recorded.</p>")
                .map_err(Error::from);
        };
        writeln!(
            self.body,
            "<p class=live>Live: <b>{} alarm{} recorded</b>, the latest at seq {} ({} UTC): {} shift of <code>{}</code> on <code>{}</code> ({}; charts under “Live quality and alarms”).</p>",
            recorded.len(),
            if recorded.len() == 1 { "" } else { "s" },
            latest.seq,
            utc(latest.ts_ms),
            if a.alarm.shift == Shift::Up {
                "an upward"
            } else {
                "a downward"
            },
            esc(&a.scorer),
            esc(short(a.commit.as_str())),
            esc(a.alarm.detector.as_ref())
        )?;
        Ok(())
    }

    /// The per-metric results of one decision.
    fn results(&mut self, class: &str, d: &Decision) -> Result<()> {
        let policy = pinned_policy_of(self.view, d);
        let scorer = decision_scorer(self.view, d).unwrap_or_else(|| "primary".into());
        // A benchmarks class: each benchmark first, regressions first; then
        // the primary test, the guardrails, the invariants and the suites.
        let mut rows = benchmark_rows(d, &scorer);
        rows.extend(primary_rows(self.view, d, &scorer));
        rows.extend(guardrail_rows(d, policy.as_ref()));
        rows.extend(invariant_rows(d, policy.as_ref()));
        rows.extend(suite_rows(d));
        writeln!(
            self.body,
            "<table class=results id=\"results-{}\"><caption>Results of the decision at seq {} (class {}), per metric</caption>\
             <tr><th>metric</th><th>role</th><th>estimate</th><th>interval / evidence</th><th>criterion</th><th>result</th></tr>",
            esc(class),
            d.seq,
            esc(class)
        )?;
        for [metric, role, est, iv, crit, c, result] in rows {
            writeln!(
                self.body,
                "<tr><td>{metric}</td><td>{role}</td><td>{est}</td><td>{iv}</td><td>{crit}</td><td class={c}>{result}</td></tr>"
            )?;
        }
        writeln!(self.body, "</table>")?;
        Ok(())
    }

    /// The failed tests of the commits the latest decisions judged, and of
    /// the deployed ones.
    fn failed_tests(&mut self) -> Result<()> {
        let mut commits: Vec<(String, String)> = Vec::new();
        let mut add = |c: &str, why: String| {
            if !c.is_empty() && !commits.iter().any(|(x, _)| x == c) {
                commits.push((c.to_string(), why));
            }
        };
        for (class, ep) in latest_finals(&self.episodes) {
            add(
                ep.last.candidate(),
                format!("candidate of {class}'s latest decision"),
            );
            add(
                ep.last.baseline(),
                format!("baseline of {class}'s latest decision"),
            );
        }
        for (class, d) in &self.deployed {
            add(d.commit.as_str(), format!("deployed for {class}"));
        }
        writeln!(self.body, "<section id=failed-tests><h2>Failed tests</h2>")?;
        if commits.is_empty() {
            writeln!(
                self.body,
                "<p>No decision or deployment to show tests for.</p></section>"
            )?;
            return Ok(());
        }
        let mut failed_rows = String::new();
        let mut green = Vec::new();
        for (commit, why) in &commits {
            let Ok(id) = CommitId::parse(commit) else {
                continue;
            };
            // The key holder's runs (a class's default trust): a failing run
            // from a token or a merged cell is not the commit's to show.
            let (runs, aside) = self.view.test_runs_from(
                &id,
                AsOf::Head,
                &ratchet_trace::Sources::key_holder(),
                ratchet_trace::Side::Candidate,
            );
            let untrusted: u64 = aside.iter().map(|a| a.test_runs).sum();
            if untrusted > 0 {
                green.push(format!(
                    "<code>{}</code>: {untrusted} run(s) by other producers (tokens, merged cells) not shown",
                    esc(short(commit))
                ));
            }
            let failing: Vec<_> = runs.iter().filter(|(_, r)| r.failed > 0).collect();
            if failing.is_empty() {
                green.push(format!(
                    "<code>{}</code> ({}): {}",
                    esc(short(commit)),
                    esc(why),
                    if runs.is_empty() {
                        "no test run recorded".to_string()
                    } else {
                        format!(
                            "{} run{}, all green",
                            runs.len(),
                            if runs.len() == 1 { "" } else { "s" }
                        )
                    }
                ));
            }
            for (seq, r) in failing {
                let named = r.failures.len() as u64;
                let names = if r.failures.is_empty() {
                    "<i>no names recorded</i>".to_string()
                } else {
                    format!(
                        "<ul class=failures>{}</ul>{}",
                        r.failures
                            .iter()
                            .map(|f| format!("<li><code>{}</code></li>", esc(f)))
                            .collect::<String>(),
                        if named < r.failed {
                            format!("<small>and {} more not named</small>", r.failed - named)
                        } else {
                            String::new()
                        }
                    )
                };
                writeln!(
                    failed_rows,
                    "<tr><td><code>{}</code><br><small>{}</small></td><td>{}</td><td>{seq}</td><td class=fail>{} of {}</td><td>{names}</td></tr>",
                    esc(short(commit)),
                    esc(why),
                    esc(&r.suite),
                    r.failed,
                    r.passed + r.failed + r.skipped
                )?;
            }
        }
        if failed_rows.is_empty() {
            writeln!(
                self.body,
                "<p class=ok>No failed test in the recorded runs of these commits.</p>"
            )?;
        } else {
            writeln!(
                self.body,
                "<table class=failed><tr><th>commit</th><th>suite</th><th>run (seq)</th><th>failed</th><th>tests that failed</th></tr>{failed_rows}</table>"
            )?;
        }
        if !green.is_empty() {
            writeln!(self.body, "<p class=meta>{}.</p>", green.join("; "))?;
        }
        writeln!(self.body, "</section>")?;
        Ok(())
    }

    /// What the trace says happened to each commit.
    fn marks(&self) -> BTreeMap<String, svg::Marks> {
        let mut marks: BTreeMap<String, svg::Marks> = BTreeMap::new();
        for e in self.events.iter().filter(|e| e.origin.is_none()) {
            match e.reserved_kind() {
                Some(ReservedKind::Promotion) => {
                    if let Some(c) = &e.commit {
                        marks.entry(c.to_string()).or_default().promoted = true;
                    }
                }
                Some(ReservedKind::Checkout) => {
                    // A heal checks out the event's commit (its payload's `to`).
                    if let Some(to) = &e.commit {
                        marks.entry(to.to_string()).or_default().healed = true;
                    }
                }
                _ => {}
            }
        }
        for eps in self.episodes.values() {
            for ep in eps.iter().filter(|e| e.is_final()) {
                marks
                    .entry(ep.last.candidate().to_string())
                    .or_default()
                    .rejected = !ep.last.promoted();
            }
        }
        for d in self.deployed.values() {
            marks.entry(d.commit.to_string()).or_default().deployed = true;
        }
        marks
    }

    fn ladder(&mut self) -> Result<()> {
        writeln!(self.body, "<h2>Score ladder</h2>")?;
        // The gate's scorer first: a store with hundreds of benchmark or
        // cost scores beside the few the gate decides on drew those, under
        // a verdict about another scorer.
        let scorer = match &self.options.scorer {
            Some(s) => Some(s.clone()),
            None => latest_finals(&self.episodes)
                .map(|(_, ep)| ep.last)
                .max_by_key(|d| d.seq)
                .and_then(|d| decision_scorer(self.view, d))
                .or_else(|| primary_scorer(self.view)),
        };
        let Some(scorer) = scorer else {
            writeln!(self.body, "<p>No scores in this store.</p>")?;
            return Ok(());
        };
        let overview = self.view.overview();
        let version = self
            .view
            .scorer_versions(&scorer, AsOf::Head)
            .into_iter()
            .next()
            .map(|v| v.version)
            .unwrap_or_default();
        let stats: BTreeMap<String, ratchet_trace::CommitStats> = self
            .view
            .commit_stats(ScorerRef::at_version(&scorer, &version), AsOf::Head)
            .into_iter()
            .map(|s| (s.commit.to_string(), s))
            .collect();
        let ordered: Vec<&ratchet_trace::CommitStats> = overview
            .commits
            .iter()
            .filter_map(|c| stats.get(&c.commit))
            .collect();
        let shown = &ordered[ordered.len().saturating_sub(60)..];
        let marks = self.marks();
        let rungs: Vec<svg::Rung> = shown
            .iter()
            .map(|s| {
                let (low, high) = interval(s.mean, s.variance, s.n);
                svg::Rung {
                    label: short(s.commit.as_str()).to_string(),
                    mean: s.mean,
                    low,
                    high,
                    marks: marks.get(s.commit.as_str()).copied().unwrap_or_default(),
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
            self.body,
            "<figure id=ladder>{}<figcaption>Mean {} per commit (scorer version <code>{}</code>) with a 95 % normal interval. Green: promoted; red: rejected by the gate; orange triangle: checked out by a heal; black ring: deployed now (by the trace). Live traffic counts toward a commit's mean.</figcaption></figure>",
            svg::ladder(&title, &format!("{scorer} (mean)"), &rungs, &[])?,
            esc(&scorer),
            esc(short(&version))
        )?;
        self.plots += 1;
        Ok(())
    }

    /// The sequential path of each recent final decision.
    fn paths(&mut self) -> Result<()> {
        writeln!(self.body, "<h2>Sequential decisions</h2>")?;
        let mut finals: Vec<&Episode<'_>> = self
            .episodes
            .values()
            .flatten()
            .filter(|e| e.is_final())
            // A class without a sequential test has no path to draw.
            .filter(|e| !decided_without_test(self.view, e.last))
            .collect();
        finals.sort_by_key(|e| std::cmp::Reverse(e.last.seq));
        if finals.is_empty() {
            writeln!(self.body, "<p>No final decision to draw a path for.</p>")?;
        }
        let mut figures = String::new();
        let mut plots = 0;
        for ep in finals.iter().take(self.options.max_paths) {
            let last = ep.last;
            let title = format!(
                "{}: {} vs {} — {}",
                last.class(),
                short(last.candidate()),
                short(last.baseline()),
                last.outcome()
            );
            let drawn = match path_of(self.view, last) {
                Ok(p) => p,
                Err(why) => {
                    writeln!(
                        figures,
                        "<p class=note>{} (seq {}): no path drawn — {}.</p>",
                        esc(&title),
                        last.seq,
                        esc(&why)
                    )?;
                    continue;
                }
            };
            let looks: Vec<u64> = ep
                .interim
                .iter()
                .filter_map(|i| Some(i.sequential()?.n))
                .collect();
            let what = match drawn.test {
                TestKind::Bernoulli => "Log-likelihood ratio of the discordant-pair SPRT",
                TestKind::Gaussian => {
                    "Log-likelihood ratio of the SPRT on paired differences (variance estimated; no decision during the warm-up)"
                }
                TestKind::Paired => {
                    "Log-likelihood ratio of the GSPRT on game outcomes (fishtest's)"
                }
                TestKind::Betting => {
                    "Log capitals of the betting e-process: ln K⁺ promotes at ln(1/α), −ln K⁻ rejects at −ln(1/β)"
                }
                // `recorded_path` draws no path for a benchmarks class,
                // nor for a class without a test.
                TestKind::Benchmarks => "Per-benchmark sign e-processes",
                TestKind::None => "No sequential test",
            };
            writeln!(
                figures,
                "<figure class=llr data-test=\"{}\">{}<figcaption>{what}, after each {}, recomputed from the trace as of seq {} by the gate's own test; {}.</figcaption></figure>",
                drawn.test.as_str(),
                svg::llr_path(&svg::PathPlot {
                    title: &title,
                    observation: drawn.observation,
                    promote: &drawn.promote,
                    reject: drawn.reject.as_deref(),
                    lower: drawn.lower,
                    upper: drawn.upper,
                    judged_from: drawn.judged_from,
                    looks: &looks,
                    promoted: last.promoted(),
                })?,
                drawn.observation,
                last.at(),
                match looks.len() {
                    0 => "decided at its first look at the gate".to_string(),
                    1 => "grey dot: the earlier look at the gate (continue)".to_string(),
                    k => format!("grey dots: the {k} earlier looks at the gate (continue)"),
                }
            )?;
            plots += 1;
        }
        self.body.push_str(&figures);
        self.plots += plots;
        Ok(())
    }

    /// Each alarm: its stream, its detector's statistic, the change point.
    fn alarms(&mut self) -> Result<()> {
        writeln!(self.body, "<h2>Live quality and alarms</h2>")?;
        let alarms: Vec<&Event> = self
            .events
            .iter()
            .copied()
            .filter(|e| e.reserved_kind() == Some(ReservedKind::Alarm) && e.origin.is_none())
            .collect();
        if alarms.is_empty() {
            writeln!(self.body, "<p>No alarm recorded.</p>")?;
        }
        // A watch restarts its chart after each alarm, so a lasting drop
        // alarms again and again: one chart per watch (commit, scorer,
        // version, the seq it started after), of its latest alarm, the
        // earlier ones named in its caption — not a row of near-identical
        // charts. Alarms recorded before `from_seq` was are drawn each.
        type WatchKey = (String, String, Option<String>, u64);
        let watch_of = |a: &TraceAlarm| -> Option<WatchKey> {
            a.from_seq.map(|from| {
                (
                    a.commit.to_string(),
                    a.scorer.clone(),
                    a.scorer_version.clone(),
                    from,
                )
            })
        };
        let mut of_watch: BTreeMap<WatchKey, Vec<u64>> = BTreeMap::new();
        for e in &alarms {
            if let Ok(a) = serde_json::from_slice::<TraceAlarm>(&e.payload)
                && let Some(key) = watch_of(&a)
            {
                of_watch.entry(key).or_default().push(a.seq);
            }
        }
        let mut drawn: BTreeSet<WatchKey> = BTreeSet::new();
        let mut charts = 0;
        for e in alarms.iter().rev() {
            if charts >= self.options.max_paths {
                break;
            }
            let recorded_alarm: TraceAlarm = match serde_json::from_slice(&e.payload) {
                Ok(a) => a,
                Err(why) => {
                    writeln!(
                        self.body,
                        "<p class=note>The alarm at seq {} is not shown: {}.</p>",
                        e.seq,
                        esc(&why.to_string())
                    )?;
                    continue;
                }
            };
            let earlier: Vec<u64> = match watch_of(&recorded_alarm) {
                Some(key) if !drawn.insert(key.clone()) => continue,
                Some(key) => of_watch
                    .get(&key)
                    .map(|seqs| {
                        seqs.iter()
                            .copied()
                            .filter(|s| *s < recorded_alarm.seq)
                            .collect()
                    })
                    .unwrap_or_default(),
                None => Vec::new(),
            };
            charts += 1;
            let (commit, scorer, seq) = (
                &recorded_alarm.commit,
                recorded_alarm.scorer.as_str(),
                recorded_alarm.seq,
            );
            let mu = recorded_alarm.baseline_mean;
            let sd = recorded_alarm.baseline_sd.max(1e-12);
            let al = &recorded_alarm.alarm;
            let (limit, recorded) = (al.limit, al.statistic);
            let down = al.shift != Shift::Up;
            let detector = al.detector.as_ref();
            // Where the watch began following the stream, as it recorded
            // it (its deployment, or `watch --from`); for an alarm recorded
            // before that, where the monitor that raised it started:
            // drift's own rule.
            let start = match recorded_alarm.from_seq {
                Some(from) => from,
                None => ratchet_records::deployment_start(self.view, commit, seq)?.unwrap_or(0),
            };
            let scorer_ref = match &recorded_alarm.scorer_version {
                Some(v) => ScorerRef::at_version(scorer, v),
                None => ScorerRef::from(scorer),
            };
            let stream = self
                .view
                .score_stream(commit, scorer_ref, start, usize::MAX);
            let end = seq + (seq - start) / 4;
            let shown: Vec<(f64, f64)> = stream
                .iter()
                .filter(|(s, _)| *s <= end)
                .map(|(s, v)| (*s as f64, *v))
                .collect();
            // The detector's own statistic and k (drift's, the decider's):
            // never re-derived here.
            let (statistic, k, how) = match recorded_alarm.path(self.view, &stream) {
                Ok(path) => (
                    path.points
                        .iter()
                        .map(|(s, v)| (*s as f64, *v))
                        .collect::<Vec<_>>(),
                    Some(path.k),
                    match path.from {
                        PathFrom::Replayed => {
                            "The statistic is the watch's own: its monitor started again where and as the alarm records, run over the trace to the alarm, where it reaches the recorded value."
                        }
                        PathFrom::Solved => {
                            "The statistic is recomputed from the stream over the detector's window; it reaches the recorded value at the alarm."
                        }
                    },
                ),
                Err(why) => (Vec::new(), None, not_drawn(why)),
            };
            let window = 25usize;
            let moving: Vec<(f64, f64)> = shown
                .iter()
                .enumerate()
                .skip(window.saturating_sub(1))
                .map(|(i, (s, _))| {
                    let from = i + 1 - window;
                    (
                        *s,
                        shown[from..=i].iter().map(|p| p.1).sum::<f64>() / window as f64,
                    )
                })
                .collect();
            let (scores, k_scores) = thin(&shown, self.options.max_points);
            let (moving, _) = thin(&moving, self.options.max_points);
            let (statistic, _) = thin(&statistic, self.options.max_points);
            let title = format!(
                "{scorer} under {} {} seq {start}",
                short(commit.as_str()),
                if recorded_alarm.from_seq.is_some() {
                    "watched after"
                } else {
                    "after its deployment at"
                }
            );
            let change = Some(recorded_alarm.change_seq as f64);
            writeln!(
                self.body,
                "<figure class=cusum>{}<figcaption>Alarm at seq {seq} ({} UTC): {detector}, {} shift (in-control mean {}, σ {}); statistic {recorded:.3} reached the limit h = {limit:.3}; the change is estimated to start at seq {}. {how}{}</figcaption></figure>",
                svg::alarm(&svg::AlarmPlot {
                    title: &title,
                    scores: &scores,
                    moving: &moving,
                    window,
                    mean: mu,
                    statistic: &statistic,
                    limit,
                    alarm: (seq as f64, recorded),
                    change,
                    thinned: k_scores,
                })?,
                utc(e.ts_ms),
                if down { "downward" } else { "upward" },
                esc(&number(mu, Unit::of_scorer(scorer))),
                esc(&number(sd, Unit::of_scorer(scorer))),
                recorded_alarm.change_seq,
                {
                    let reference_note = k
                        .map(|k| format!(" (reference k = {k:.3})"))
                        .unwrap_or_default();
                    match earlier.as_slice() {
                        [] => reference_note,
                        seqs => format!(
                            "{reference_note}. The same watch alarmed {} time{} before, at seq {}{}: its chart restarts after each alarm, so they are one lasting shift, drawn once",
                            seqs.len(),
                            if seqs.len() == 1 { "" } else { "s" },
                            seqs.iter()
                                .take(10)
                                .map(u64::to_string)
                                .collect::<Vec<_>>()
                                .join(", "),
                            if seqs.len() > 10 { ", …" } else { "" }
                        ),
                    }
                }
            )?;
            self.plots += 1;
        }
        Ok(())
    }

    fn timeline(&mut self) -> Result<()> {
        let t0 = self.view.events().first().map_or(0, |e| e.ts_ms);
        let t1 = self.view.events().last().map_or(0, |e| e.ts_ms);
        let mut marks: Vec<(f64, usize)> = Vec::new();
        for e in self.events.iter().filter(|e| e.origin.is_none()) {
            let row = match e.reserved_kind() {
                Some(ReservedKind::Promotion) => 0,
                Some(ReservedKind::Decision) => {
                    // Decisions are read in trace order: found by seq.
                    let rejected = self
                        .decisions
                        .binary_search_by_key(&e.seq, |d| d.seq)
                        .is_ok_and(|i| self.decisions[i].measured_reject());
                    if !rejected {
                        continue;
                    }
                    1
                }
                Some(ReservedKind::Alarm) => 2,
                Some(ReservedKind::Checkout) => 3,
                _ => continue,
            };
            marks.push(((e.ts_ms - t0) as f64, row));
        }
        let span = (t1 - t0) as f64;
        let (scale, unit) = if span < 120_000.0 {
            (1000.0, "seconds since the first event")
        } else if span < 7_200_000.0 {
            (60_000.0, "minutes since the first event")
        } else if span < 172_800_000.0 {
            (3_600_000.0, "hours since the first event")
        } else {
            (86_400_000.0, "days since the first event")
        };
        writeln!(
            self.body,
            "<h2>Timeline</h2><figure id=timeline>{}<figcaption>Each promotion, rejection, alarm and heal (checkout) by wall time, from {} to {} UTC.</figcaption></figure>",
            svg::timeline(&marks, span, scale, unit)?,
            utc(t0),
            utc(t1)
        )?;
        self.plots += 1;
        Ok(())
    }

    /// Each benchmark's level per commit, from its kept samples (every
    /// benchmark importer keeps them): the geometric mean of its runs'
    /// medians with a 95 % interval over runs, per scorer and runner, and
    /// the change points along the main line marked.
    fn benchmarks(&mut self) -> Result<()> {
        writeln!(self.body, "<h2>Benchmark history</h2>")?;
        let order: BTreeMap<String, usize> = self
            .view
            .overview()
            .commits
            .iter()
            .enumerate()
            .map(|(i, c)| (c.commit.to_string(), i))
            .collect();
        // (scorer, runner, unit) → benchmark → commit → each run's median.
        type Runs = BTreeMap<String, Vec<f64>>;
        let mut found: BTreeMap<(String, String, String), BTreeMap<String, Runs>> = BTreeMap::new();
        // A run too large for one event is split over consecutive seqs:
        // each run, pooled, with the seq of its last event.
        let mut runs: Vec<(u64, ratchet_scorers::Samples)> = Vec::new();
        for e in self.view.events_of_kinds(&[ratchet_scorers::KIND_SAMPLES]) {
            let Ok(s) = ratchet_scorers::Samples::from_payload(&e.payload) else {
                continue;
            };
            match runs.last_mut() {
                Some((seq, run)) if run.continued_by(*seq, &s, e.seq) => {
                    run.values.extend(s.values);
                    *seq = e.seq;
                }
                _ => runs.push((e.seq, s)),
            }
        }
        // Runs whose median is not a positive number (a 0 ns timing
        // ingests) have no place on a log scale: one of them made its
        // commit's level 0, and that one run hid every change point of the
        // benchmark's history. They are left out, and counted.
        let mut left_out: BTreeMap<(String, String, String, String), usize> = BTreeMap::new();
        for (_, s) in runs {
            let median = ratchet_gate::benchmarks::median(&s.values);
            if !(median.is_finite() && median > 0.0) {
                *left_out
                    .entry((s.scorer, s.scorer_version, s.unit, s.benchmark))
                    .or_default() += 1;
                continue;
            }
            found
                .entry((s.scorer, s.scorer_version, s.unit))
                .or_default()
                .entry(s.benchmark)
                .or_default()
                .entry(s.commit.to_string())
                .or_default()
                .push(median);
        }
        let marks = self.marks();
        // The main line: commits promoted or deployed, and the baselines
        // they were promoted over — what ran, in the order first measured.
        // A store of plain per-commit ingestion (no decision) is all main line.
        let mut main_line: BTreeSet<String> = marks
            .iter()
            .filter(|(_, m)| m.promoted || m.deployed)
            .map(|(c, _)| c.clone())
            .collect();
        for eps in self.episodes.values() {
            for ep in eps.iter().filter(|e| e.is_final() && e.last.promoted()) {
                main_line.insert(ep.last.baseline().to_string());
            }
        }
        let mut benches = 0;
        let mut changes_total = 0;
        for ((scorer, runner, unit), by_bench) in found {
            for (bench, by_commit) in by_bench {
                if benches >= 24 {
                    break;
                }
                let mut commits: Vec<(&String, &Vec<f64>)> = by_commit.iter().collect();
                commits.sort_by_key(|(c, _)| order.get(c.as_str()).copied().unwrap_or(usize::MAX));
                let mut rungs = Vec::new();
                for (c, medians) in &commits {
                    let logs: Vec<f64> = medians.iter().map(|x| x.ln()).collect();
                    let n = logs.len() as f64;
                    let mean = logs.iter().sum::<f64>() / n;
                    let var = (logs.len() > 1)
                        .then(|| logs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0));
                    let (low, high) = interval(mean, var, logs.len() as u64);
                    rungs.push(svg::Rung {
                        label: short(c).to_string(),
                        mean: mean.exp(),
                        low: low.exp(),
                        high: high.exp(),
                        marks: marks.get(c.as_str()).copied().unwrap_or_default(),
                    });
                }
                let on_line: Vec<usize> = if main_line.is_empty() {
                    (0..rungs.len()).collect()
                } else {
                    (0..rungs.len())
                        .filter(|&i| main_line.contains(commits[i].0.as_str()))
                        .collect()
                };
                let levels: Vec<f64> = on_line.iter().map(|&i| rungs[i].mean).collect();
                let steps: Vec<(usize, f64)> = changes::change_points(&levels, 0.05, 0.01)
                    .into_iter()
                    .map(|c| (on_line[c.at], c.ratio))
                    .collect();
                changes_total += steps.len();
                let said: Vec<String> = steps
                    .iter()
                    .map(|(i, r)| format!("×{r:.3} at <code>{}</code>", esc(&rungs[*i].label)))
                    .collect();
                writeln!(
                    self.body,
                    "<figure class=bench>{}<figcaption><code>{}</code> (<code>{}</code>, runner <code>{}</code>): per commit the geometric mean of its runs' medians with a 95 % interval over runs; marks as on the ladder; grey lines: change points along the main line ({} commits){}.</figcaption></figure>",
                    svg::bench_history(&bench, &unit, &rungs, &steps)?,
                    esc(&bench),
                    esc(&scorer),
                    esc(short(&runner)),
                    on_line.len(),
                    {
                        let shown = if said.is_empty() {
                            ": none".to_string()
                        } else {
                            format!(": {}", said.join(", "))
                        };
                        match left_out.get(&(
                            scorer.clone(),
                            runner.clone(),
                            unit.clone(),
                            bench.clone(),
                        )) {
                            Some(n) => format!(
                                "{shown}; {n} run(s) whose median is not a positive number left out"
                            ),
                            None => shown,
                        }
                    }
                )?;
                self.plots += 1;
                benches += 1;
            }
        }
        if benches == 0 {
            writeln!(
                self.body,
                "<p>No benchmark samples in this store (<code>ratchet ingest</code> hyperfine, criterion, pytest-benchmark, google-benchmark or go-bench output, or run <code>ratchet bench</code>).</p>"
            )?;
        } else {
            writeln!(
                self.body,
                "<p class=meta>Change points: binary segmentation of each benchmark's log level along the main line, Bonferroni over the places a step could be (α 0.05), steps within ±1 % ignored; {changes_total} found. Descriptive: the gate decides on samples, not on these.</p>"
            )?;
        }
        Ok(())
    }

    /// Every decision: one row per final decision (or open comparison),
    /// its interim looks folded under it.
    fn decisions_table(&mut self) -> Result<()> {
        writeln!(self.body, "<h2>Decisions</h2>")?;
        if self.episodes.is_empty() {
            writeln!(self.body, "<p>No decision recorded.</p>")?;
            return Ok(());
        }
        for (class, eps) in &self.episodes {
            writeln!(
                self.body,
                "<table class=decisions data-class=\"{}\"><caption>Class {}: {} comparisons, {} looks at the gate</caption>\
                 <tr><th>time (UTC)</th><th>seq</th><th>candidate</th><th>baseline</th><th>outcome</th><th>looks</th><th>n</th><th>effect (95 % CI)</th></tr>",
                esc(class),
                esc(class),
                eps.len(),
                eps.iter().map(|e| e.interim.len() + 1).sum::<usize>()
            )?;
            for ep in eps.iter().rev() {
                let last = ep.last;
                writeln!(
                    self.body,
                    "<tr class=episode><td>{}</td><td>{}</td><td><code>{}</code></td><td><code>{}</code></td><td class={}>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                    utc(last.ts_ms),
                    last.seq,
                    esc(short(last.candidate())),
                    esc(short(last.baseline())),
                    css_class(last),
                    esc(&last.outcome()),
                    ep.interim.len() + 1,
                    n_of(last),
                    esc(&effect_text(self.view, last).unwrap_or_else(|| "—".into()))
                )?;
                if !ep.interim.is_empty() {
                    let mut inner = String::new();
                    for i in &ep.interim {
                        writeln!(
                            inner,
                            "<tr class=interim><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                            utc(i.ts_ms),
                            i.seq,
                            n_of(i),
                            esc(&effect_text(self.view, i).unwrap_or_else(|| "—".into())),
                            esc(i.reason().unwrap_or(""))
                        )?;
                    }
                    writeln!(
                        self.body,
                        "<tr class=folded><td colspan=8><details><summary>{} interim look{} (continue) before this decision</summary>\
                         <table><tr><th>time (UTC)</th><th>seq</th><th>n</th><th>effect (95 % CI)</th><th>why it continued</th></tr>{inner}</table></details></td></tr>",
                        ep.interim.len(),
                        if ep.interim.len() == 1 { "" } else { "s" }
                    )?;
                }
            }
            writeln!(self.body, "</table>")?;
        }
        Ok(())
    }
}

/// One row of a decision's results table: metric, role, estimate,
/// interval or evidence, criterion, result class, result.
type Row = [String; 7];

/// The primary (sequential) test's row, if the class has one.
fn primary_rows(view: &Verified, d: &Decision, scorer: &str) -> Vec<Row> {
    let mut rows = Vec::new();
    match (d.stage(&Stage::Sequential), d.sequential()) {
        (Some(stage), Some(f)) => {
            let word = state(stage.passed);
            let (est, iv) = match effect_of(view, d) {
                Some(e) => (
                    format!(
                        "{} <small>{}, {}: {}; on {} tasks</small>",
                        esc(&signed(e.value, e.unit)),
                        esc(e.measure),
                        e.reads_as,
                        e.better,
                        e.n
                    ),
                    esc(&format!(
                        "[{}, {}]",
                        signed(e.low, e.unit),
                        signed(e.high, e.unit)
                    )),
                ),
                None => ("—".into(), "—".into()),
            };
            let ab = alpha_beta(view, d)
                .map(|(a, b)| format!("; α {a}, β {b}", a = sig(a), b = sig(b)))
                .unwrap_or_default();
            let decision = f.decision.as_str();
            // The betting test decides on two capitals, each against
            // its own bound: its "llr" (their difference) is not what
            // it judged.
            let (criterion, result) = match &f.test {
                TestFigures::Betting {
                    log_capital_promote,
                    log_capital_reject,
                    promote_bound,
                    reject_bound,
                    ..
                } => (
                    format!(
                        "promote when ln K⁺ ≥ ln(1/α) = {promote_bound:.3}, reject when ln K⁻ ≥ ln(1/β) = {reject_bound:.3}{ab}"
                    ),
                    format!(
                        "{word}: {decision}, ln K⁺ {log_capital_promote:.3}, ln K⁻ {log_capital_reject:.3} after {} observations",
                        f.n
                    ),
                ),
                _ => (
                    format!(
                        "promote at LLR ≥ {:.3}, reject at ≤ {:.3}{ab}",
                        f.upper, f.lower
                    ),
                    format!(
                        "{word}: {decision}, LLR {:+.3} after {} observations",
                        f.llr, f.n
                    ),
                ),
            };
            rows.push([
                esc(scorer),
                format!("primary ({})", f.test.test().as_str()),
                est,
                iv,
                criterion,
                word.into(),
                result,
            ]);
        }
        (Some(stage), None) => {
            let word = state(stage.passed);
            rows.push([
                esc(scorer),
                "primary".into(),
                "—".into(),
                "—".into(),
                "—".into(),
                word.into(),
                format!("{word}: {}", esc(d.reason().unwrap_or("no test ran"))),
            ]);
        }
        // A class without a sequential test has no primary row.
        (None, _) if decided_without_test(view, d) => {}
        (None, _) => rows.push(not_reached(scorer, "primary")),
    }
    rows
}

/// A benchmarks class's rows, one per benchmark, in the gate's order.
fn benchmark_rows(d: &Decision, scorer: &str) -> Vec<Row> {
    let mut rows: Vec<Row> = Vec::new();
    for s in d.stages() {
        if let StageDetails::Benchmarks(b) = &s.details {
            for r in &b.benchmarks {
                let word = match r.verdict {
                    ratchet_gate::benchmarks::BenchVerdict::Slower => "fail",
                    v if v.not_slower() => "pass",
                    _ => "open",
                };
                rows.push([
                    esc(&r.label()),
                    format!(
                        "benchmark ({})",
                        if b.paired {
                            "paired by round"
                        } else {
                            "unpaired"
                        }
                    ),
                    format!(
                        "×{:.3} ({} → {})",
                        r.ratio,
                        esc(&number(r.baseline, Unit::of_scorer(scorer))),
                        esc(&number(r.candidate, Unit::of_scorer(scorer)))
                    ),
                    format!(
                        "[{:.3}, {:.3}] over {} pair{}",
                        r.low,
                        r.high,
                        r.n,
                        if r.n == 1 { "" } else { "s" }
                    ),
                    format!(
                        "not slower than +{:.1} %; slower than +{:.1} % rejects",
                        b.regression * 100.0,
                        b.equivalence * 100.0
                    ),
                    word.into(),
                    r.verdict.as_str().into(),
                ]);
            }
        }
    }
    rows
}

/// Each guardrail's row; a guardrail of the policy the verdict never
/// reached, as not reached.
fn guardrail_rows(d: &Decision, policy: Option<&ratchet_gate::ClassPolicy>) -> Vec<Row> {
    let mut rows = Vec::new();
    let mut seen = BTreeSet::new();
    for s in d.stages() {
        let (Stage::Guardrail(name), StageDetails::Guardrail(det)) = (&s.stage, &s.details) else {
            continue;
        };
        seen.insert(name.clone());
        let word = state(s.passed);
        let unit = Unit::of_scorer(name);
        let margin = match det.margin {
            Margin::Relative(x) => format!("{} of the baseline", number(x, Unit::Percent)),
            Margin::Absolute(x) => format!("{} (absolute)", number(x, unit)),
        };
        let (est, iv) = match det.result {
            GuardrailResult::Welch(w) => (
                format!("excess D̂ {}", signed(w.excess, unit)),
                format!(
                    "se {}, one-sided p = {}",
                    number(w.se, unit),
                    sig(w.p_value)
                ),
            ),
            GuardrailResult::Sequence(q) => (
                format!("excess D̂ {}", signed(q.excess, unit)),
                format!("D ≤ {} (always valid)", signed(q.upper_bound, unit)),
            ),
        };
        rows.push([
            esc(name),
            format!("guardrail ({})", det.method.as_str()),
            est,
            iv,
            format!("worse by less than {}: D &lt; 0", esc(&margin)),
            word.into(),
            if word == "pass" {
                "pass: non-inferior".into()
            } else {
                word.into()
            },
        ]);
    }
    for g in policy.iter().flat_map(|p| &p.guardrails) {
        if !seen.contains(&g.scorer) {
            rows.push(not_reached(&g.scorer, "guardrail"));
        }
    }
    rows
}

/// Each invariant's row and the canaries'; the policy's invariants as not
/// reached when the stage never ran.
fn invariant_rows(d: &Decision, policy: Option<&ratchet_gate::ClassPolicy>) -> Vec<Row> {
    let mut rows = Vec::new();
    match d.stage(&Stage::Invariants).map(|s| &s.details) {
        Some(StageDetails::Invariants(inv)) => {
            for i in &inv.invariants {
                rows.push([
                    esc(&i.scorer),
                    "invariant".into(),
                    format!("{} violations on {} tasks", i.violations.len(), i.tasks),
                    format!(
                        "violation rate ≤ {:.3} ({:.0} %)",
                        i.failure_rate_upper_bound,
                        inv.confidence * 100.0
                    ),
                    format!("≥ {} on every task", serde_json::Value::from(i.minimum)),
                    if i.holds { "pass" } else { "fail" }.into(),
                    if i.holds {
                        "pass: holds".into()
                    } else {
                        format!(
                            "fail: violated on {}",
                            esc(&serde_json::to_string(&i.violations).unwrap_or_default())
                        )
                    },
                ]);
            }
            if let Some(c) = &inv.canaries {
                let word = if c.holds { "pass" } else { "fail" };
                rows.push([
                    "canaries".into(),
                    "invariant".into(),
                    format!("failed {}, missing {}", c.failed.len(), c.missing.len()),
                    "—".into(),
                    "every canary passes".into(),
                    word.into(),
                    word.into(),
                ]);
            }
        }
        Some(_) => {}
        None => {
            for i in policy.iter().flat_map(|p| &p.invariants) {
                rows.push(not_reached(&i.scorer, "invariant"));
            }
        }
    }
    rows
}

/// Each required suite's row.
fn suite_rows(d: &Decision) -> Vec<Row> {
    let mut rows = Vec::new();
    if let Some(StageDetails::Tests(tests)) = d.stage(&Stage::Tests).map(|s| &s.details) {
        for suite in &tests.suites {
            let runs = &suite.runs;
            let sum = |count: fn(&SuiteRun) -> u64| runs.iter().map(count).sum::<u64>();
            let ok = suite.passed;
            rows.push([
                format!("suite {}", esc(&suite.suite)),
                "required tests".into(),
                format!(
                    "{} passed, {} failed, {} skipped",
                    sum(|r| r.passed),
                    sum(|r| r.failed),
                    sum(|r| r.skipped)
                ),
                format!(
                    "{} run{}",
                    runs.len(),
                    if runs.len() == 1 { "" } else { "s" }
                ),
                "every recorded run green".into(),
                if ok { "pass" } else { "fail" }.into(),
                if ok { "pass" } else { "fail" }.into(),
            ]);
        }
    }
    rows
}

fn not_reached(metric: &str, role: &str) -> [String; 7] {
    [
        esc(metric),
        role.into(),
        "—".into(),
        "—".into(),
        "—".into(),
        "skipped".into(),
        "not reached (an earlier stage decided)".into(),
    ]
}

fn n_of(d: &Decision) -> String {
    d.sequential()
        .map_or_else(|| "—".into(), |f| f.n.to_string())
}

/// Why an alarm's chart draws no statistic, in a sentence.
fn not_drawn(why: NotDrawn) -> &'static str {
    match why {
        NotDrawn::WindowOutOfRange => {
            "The detector's statistic is not drawn: its window is out of range."
        }
        NotDrawn::WindowNotInStream => {
            "The detector's statistic is not drawn: its window is not in the stream."
        }
        NotDrawn::NotCusum => "The statistic of this detector is not recomputed by the report.",
        NotDrawn::DoesNotReach => {
            "The detector's statistic is not drawn: recomputed from the stream it does not reach the recorded value (the detector may have restarted in its window)."
        }
        NotDrawn::DoesNotReplay => {
            "The detector's statistic is not drawn: started again where and as the alarm records, the watch does not raise this alarm on this trace (it read another scorer version, or trusted producers other than the key holder)."
        }
        _ => "The detector's statistic is not drawn.",
    }
}

const CSS: &str = "body{font-family:system-ui,sans-serif;max-width:1040px;margin:2em auto;padding:0 1em;color:#222}\
h1{margin-bottom:.2em}.meta{color:#666}.ok{color:#2c7a2c}.bad{color:#b00;font-weight:bold}.note{color:#666;font-style:italic}\
.banner{border-left:8px solid #999;background:#f6f6f6;padding:.6em 1em;margin:1em 0 .5em}.banner h2{margin:.1em 0 .3em}\
.banner.promote{border-color:#2c7a2c;background:#eef8ee}.banner.reject{border-color:#c62828;background:#fcefef}\
.banner.open{border-color:#999}.banner p{margin:.3em 0}.effect{font-size:1.1em}.deployed{font-weight:600}.pending{color:#7a5a00}\
figure{margin:1.5em 0}figcaption{color:#555;font-size:.9em}figure>svg{width:100%;height:auto}\
table{border-collapse:collapse;width:100%;font-size:.9em;margin:.5em 0 1.2em}caption{text-align:left;color:#555;padding:.2em 0}\
td,th{border-bottom:1px solid #ddd;padding:.3em .5em;text-align:left;vertical-align:top}\
td.promote,td.pass{color:#2c7a2c;font-weight:bold}td.reject,td.fail{color:#c62828;font-weight:bold}td.open,td.skipped{color:#777}\
tr.folded>td{border-bottom:1px solid #ddd;padding-top:0}details summary{cursor:pointer;color:#555}details table{font-size:.95em}\
ul.failures{margin:0;padding-left:1.2em}code{font-size:.95em}";
