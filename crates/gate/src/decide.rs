//! The law, applied to the store: `decide` reads the trace itself (never a
//! number from its caller), verifies it first, runs the stages in order —
//! required tests → invariants → sequential test → guardrails — and returns
//! a [`Verdict`] that it appends to the trace as a `decision` event.
//! [`decide_at`] recomputes any past verdict from the trace as it stood,
//! byte for byte.
//!
//! # Error rates as wired
//!
//! Every test kind is paired task by task (see [`TestKind`]). Measured by
//! `tests/error_rates.rs` — `decide` itself on a fresh store per run,
//! α = β = 0.05, seeded — with the promise each kind makes:
//!
//! | kind | world | runs | promoted | rejected | open | promise |
//! |---|---|---|---|---|---|---|
//! | bernoulli (gap 0.2) | both sides pass 70 %, 300 tasks | 600 | 2.8 % | 56.8 % | 40.3 % | P(promote) ≤ α (exact lattice OC at θ = ½: ≤ α) |
//! | bernoulli | θ = θ1 = 0.6, ⅓ of pairs discordant, 1,500 tasks | 300 | 95.7 % | 3.0 % | 1.3 % | P(reject) ≤ β/(1−α) = 5.26 % |
//! | gaussian (gap 0.1) | both N(0.7, 0.2), 300 tasks | 600 | 4.3 % | 95.7 % | 0 | α/(1−β) = 5.26 % (variance estimated) |
//! | gaussian | candidate N(0.8, 0.2) | 300 | 92.3 % | 7.7 % | 0 | β/(1−α) = 5.26 % |
//! | paired GSPRT (Elo 0 vs 80) | win ½, 400 tasks | 600 | 4.5 % | 94.8 % | 0.7 % | α/(1−β) |
//! | paired GSPRT | win at Elo 80, 800 tasks | 300 | 92.3 % | 7.7 % | 0 | β/(1−α) |
//!
//! The tests assert each rate is within three Monte-Carlo standard errors of
//! its bound (the two 7.7 % figures are 1.6 SE above 5.26 %), and that
//! `calibrate`'s predictions (exact lattice for bernoulli, Monte Carlo of the
//! same state machine for gaussian) agree with the simulated `decide`. The
//! old designs (a one-sample SPRT against the baseline's estimated p0 or
//! μ0) promoted 9.4 % and 10.2 % at the null.

use std::collections::BTreeMap;

use serde::Serialize;

use ratchet_trace::{
    Checkpoint, CommitId, EventDraft, ReservedKind, ScorerRef, Store, VerifyOptions,
};

use crate::error::{Error, Result};
use crate::gsprt::Pairing;
use crate::invariants::{check_canaries, check_minimum};
use crate::noninferiority::{Margin, NonInferiority, SampleStats};
use crate::policy::{ClassPolicy, GuardrailMethod, MarginKind, TestKind};
use crate::sprt::{Decision, GaussianSprt, SequentialTest};

/// Event kind of an appended verdict.
pub const KIND_DECISION: &str = ReservedKind::Decision.as_str();

/// Confidence of the bounds reported with invariants.
const INVARIANT_CONFIDENCE: f64 = 0.95;

/// A stage of the law, in the order they run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Stage {
    /// Recomputing the trace's hashes before anything else.
    TraceVerification,
    /// Required test suites.
    Tests,
    /// Hard invariants and canaries.
    Invariants,
    /// The sequential test on the primary scorer.
    Sequential,
    /// Non-inferiority of one guardrail scorer.
    Guardrail(String),
}

/// The gate's answer.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "verdict", rename_all = "snake_case")]
pub enum Outcome {
    /// Every stage passed and the sequential test crossed its upper boundary.
    Promote,
    /// A stage failed (the first that did).
    Reject {
        /// Which stage.
        stage: Stage,
        /// What kind of reject: measured evidence against the candidate,
        /// evidence missing, or a trace that does not verify.
        cause: RejectCause,
        /// Why, in words.
        reason: String,
    },
    /// Between the boundaries: collect more evidence.
    Continue {
        /// A rough estimate of the paired tasks still needed.
        expected_more: u64,
        /// What is still open.
        reason: String,
    },
}

/// Why a verdict rejects: CI must tell a regression from missing data and
/// from tampering (each has its own exit code in the CLI).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RejectCause {
    /// The evidence was measured and speaks against the candidate: a failed
    /// test run, a violated invariant, the sequential test's lower boundary
    /// (or its truncation), a guardrail not shown non-inferior.
    Measured,
    /// The evidence needed is not in the trace: a required suite never ran
    /// (or ran no test), a scorer the policy names was never recorded, too
    /// few tasks scored on both sides for a guardrail.
    MissingEvidence,
    /// The trace failed verification (or a keyed store was read without its
    /// key): nothing in it was used.
    UnverifiedTrace,
}

/// The gate's answer in one word, with the CLI's exit code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum GateStatus {
    /// Promote (exit 0).
    Promote,
    /// Rejected on measured evidence (exit 1).
    Reject,
    /// Collect more evidence (exit 3).
    Continue,
    /// Cannot decide: evidence missing or unknown (exit 4).
    MissingEvidence,
    /// Cannot decide: the trace failed verification (exit 5).
    UnverifiedTrace,
}

impl GateStatus {
    /// The exit code `ratchet gate` uses (2 is reserved for errors).
    pub fn exit_code(self) -> u8 {
        match self {
            GateStatus::Promote => 0,
            GateStatus::Reject => 1,
            GateStatus::Continue => 3,
            GateStatus::MissingEvidence => 4,
            GateStatus::UnverifiedTrace => 5,
        }
    }
}

impl Outcome {
    /// The outcome in one word.
    pub fn status(&self) -> GateStatus {
        match self {
            Outcome::Promote => GateStatus::Promote,
            Outcome::Continue { .. } => GateStatus::Continue,
            Outcome::Reject { cause, .. } => match cause {
                RejectCause::Measured => GateStatus::Reject,
                RejectCause::MissingEvidence => GateStatus::MissingEvidence,
                RejectCause::UnverifiedTrace => GateStatus::UnverifiedTrace,
            },
        }
    }
}

/// One stage's figures: what it computed, against what, from which inputs.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StageReport {
    /// The stage.
    pub stage: Stage,
    /// Whether it passed (`None`: still open).
    pub passed: Option<bool>,
    /// The stage's statistics and inputs.
    pub details: serde_json::Value,
}

/// The trace head a verdict was computed at.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TraceHead {
    /// Events in the trace.
    pub size: u64,
    /// Hash of the last event.
    pub hash: String,
}

/// A verdict with everything needed to check it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Verdict {
    /// The answer.
    pub outcome: Outcome,
    /// The artifact class.
    pub class: String,
    /// Content hash of the class policy.
    pub policy_hash: String,
    /// The trace head it was computed at.
    pub trace: TraceHead,
    /// The baseline commit.
    pub baseline: String,
    /// The candidate commit.
    pub candidate: String,
    /// The version of each scorer read (one per scorer: versions never mix).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub scorer_versions: BTreeMap<String, String>,
    /// Each stage that ran, in order.
    pub stages: Vec<StageReport>,
}

impl Verdict {
    /// The canonical JSON bytes (what is appended to the trace).
    pub fn to_json(&self) -> Vec<u8> {
        serde_json::to_vec(self).unwrap_or_default()
    }
}

/// What to decide: the policy, its class name, the two commits, and
/// optionally a checkpoint held elsewhere.
#[derive(Debug, Clone)]
pub struct Question<'a> {
    /// The class's name (recorded in the verdict).
    pub class: &'a str,
    /// The class's policy.
    pub policy: &'a ClassPolicy,
    /// The commit running now.
    pub baseline: &'a CommitId,
    /// The commit proposed.
    pub candidate: &'a CommitId,
    /// A checkpoint held where the store's writers cannot reach: the trace
    /// must still hold its events, ending in its head (catches truncation and
    /// rollback to an older copy). It never lets verification skip anything.
    pub checkpoint: Option<&'a Checkpoint>,
}

/// Decides at the current head and appends the verdict as a `decision` event
/// (unless the trace failed verification: then nothing is appended).
///
/// # Errors
/// [`Error::Trace`] if the store cannot be read or written. A trace that does
/// not verify, missing data and failed stages are verdicts (rejects), not errors.
pub fn decide(store: &mut Store, q: &Question<'_>) -> Result<Verdict> {
    let verdict = {
        let snap = store.snapshot()?;
        let head = snap.head()?;
        evaluate(&snap, q, head.size)?
    };
    // A verdict about a trace that does not verify is not written into it:
    // the trace is not a record anyone can rely on any more (and a store
    // whose schema was altered refuses writes).
    if verdict.outcome.status() == GateStatus::UnverifiedTrace {
        return Ok(verdict);
    }
    store.append(
        EventDraft::reserved(ReservedKind::Decision, &verdict)?
            .commit(q.candidate.clone())
            .session(format!("gate:{}", q.class)),
    )?;
    Ok(verdict)
}

/// Recomputes the verdict as of trace size `seq` without appending anything:
/// equal, byte for byte, to the verdict a `decide` at that head appended.
///
/// # Errors
/// As [`decide`].
pub fn decide_at(store: &Store, q: &Question<'_>, seq: u64) -> Result<Verdict> {
    let snap = store.snapshot()?;
    evaluate(&snap, q, seq)
}

/// Per-task means of the two sides, for tasks both ran, in task order.
/// Per-task means of both sides in task-name order, up to the first task
/// the baseline has a score of but the candidate does not: such a gap ends
/// the sequence (the rest waits for it to be filled) instead of being
/// skipped, so a candidate cannot pick the tasks that count by leaving the
/// hard ones out. Tasks only the candidate ran are not pairs and are passed
/// over. Returns the two sides and the first gap, if any.
fn paired_means(
    store: &Store,
    q: &Question<'_>,
    scorer: ScorerRef<'_>,
    at: u64,
) -> Result<(Vec<f64>, Vec<f64>, Option<String>)> {
    let (mut base, mut cand) = (Vec::new(), Vec::new());
    for t in store.task_means_upto(q.baseline, q.candidate, scorer, at)? {
        match (t.baseline, t.candidate) {
            (Some(_), None) => return Ok((base, cand, Some(t.task))),
            (Some(b), Some(c)) => {
                base.push(b);
                cand.push(c);
            }
            _ => {}
        }
    }
    Ok((base, cand, None))
}

/// Whether `scorer` improves downwards: its direction as declared in the
/// trace (by ingestion, when it first appeared), which a policy may only
/// confirm; else the policy's; else the built-in default (anchors and
/// criterion timings down, everything else up).
///
/// # Errors
/// [`Error::Policy`] when the policy contradicts the trace's declaration.
fn lower_is_better(
    store: &Store,
    q: &Question<'_>,
    scorer: &str,
    stated: Option<crate::policy::Better>,
    at: u64,
) -> Result<bool> {
    use crate::policy::Better;
    use ratchet_scorers::Direction;
    let declared = ratchet_scorers::declared_direction(store, scorer, at).map_err(|e| match e {
        ratchet_scorers::Error::Trace(t) => Error::Trace(t),
        other => Error::InvalidObservation {
            reason: other.to_string(),
        },
    })?;
    let lower = |b: Better| b == Better::Lower;
    Ok(match (declared, stated) {
        (Some((d, seq)), Some(b)) if (d == Direction::LowerIsBetter) != lower(b) => {
            return Err(Error::Policy {
                field: format!("class.{}: direction of {scorer}", q.class),
                reason: format!(
                    "the policy says {b:?} is better, but the trace declared {scorer} {d:?} at seq {seq}; a policy can only confirm a scorer's direction"
                ),
            });
        }
        (Some((d, _)), _) => d == Direction::LowerIsBetter,
        (None, Some(b)) => lower(b),
        (None, None) => ratchet_scorers::direction_of(scorer) == Direction::LowerIsBetter,
    })
}

/// `scorer` at the version chosen for it (every scorer read is chosen).
fn at_version<'a>(versions: &'a BTreeMap<String, String>, scorer: &'a str) -> ScorerRef<'a> {
    match versions.get(scorer) {
        Some(version) => ScorerRef::at_version(scorer, version),
        None => scorer.into(),
    }
}

fn reject(stage: Stage, cause: RejectCause, reason: impl Into<String>) -> Outcome {
    Outcome::Reject {
        stage,
        cause,
        reason: reason.into(),
    }
}

/// The effect the sequential test saw, for a person to read: the mean of
/// the per-observation effects with a fixed-sample 95 % normal interval.
/// Shown, never used to decide (after optional stopping a fixed-sample
/// interval is optimistic; the decision's guarantee is the SPRT's).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct EffectEstimate {
    /// Observations.
    pub n: usize,
    /// Mean effect.
    pub estimate: f64,
    /// Lower end of the 95 % interval.
    pub ci_low: f64,
    /// Upper end of the 95 % interval.
    pub ci_high: f64,
}

fn effect_estimate(xs: &[f64]) -> Option<EffectEstimate> {
    if xs.len() < 2 {
        return None;
    }
    let n = xs.len() as f64;
    let mean = xs.iter().sum::<f64>() / n;
    let var = xs.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / (n - 1.0);
    let half = 1.959_963_984_540_054 * (var / n).sqrt();
    Some(EffectEstimate {
        n: xs.len(),
        estimate: mean,
        ci_low: mean - half,
        ci_high: mean + half,
    })
}

fn evaluate(store: &Store, q: &Question<'_>, at: u64) -> Result<Verdict> {
    let p = q.policy;
    let head_hash = match at {
        0 => store.genesis().to_hex().to_string(),
        s => store
            .event_by_seq(s)?
            .map(|e| e.hash.to_hex().to_string())
            .ok_or_else(|| Error::InvalidObservation {
                reason: format!("the trace has no event {s}"),
            })?,
    };
    let mut v = Verdict {
        outcome: Outcome::Promote,
        class: q.class.to_string(),
        policy_hash: p.hash(),
        trace: TraceHead {
            size: at,
            hash: head_hash,
        },
        baseline: q.baseline.to_string(),
        candidate: q.candidate.to_string(),
        scorer_versions: BTreeMap::new(),
        stages: Vec::new(),
    };
    let done = |mut v: Verdict, outcome: Outcome| {
        v.outcome = outcome;
        Ok(v)
    };

    // 0. The trace itself, before any number is read from it.
    // The whole trace up to `at` is recomputed (hashes, MACs with the key
    // the store was opened with, projection rows, schema): every row read
    // below is one this pass covered.
    let mut vo = VerifyOptions::default().up_to(at);
    if let Some(cp) = q.checkpoint {
        vo = vo.checkpoint(cp.clone());
    }
    let report = store.verify_with(&vo)?;
    let unchecked_macs = report.macs_unchecked();
    v.stages.push(StageReport {
        stage: Stage::TraceVerification,
        passed: Some(report.is_valid() && !unchecked_macs),
        details: serde_json::json!({ "size": report.size, "keyed": report.keyed, "macs_checked": report.macs_checked, "checkpoint_checked": report.checkpoint_checked, "fault": report.fault }),
    });
    if let Some(f) = report.fault {
        return done(
            v,
            reject(
                Stage::TraceVerification,
                RejectCause::UnverifiedTrace,
                format!("the trace does not verify: {f}"),
            ),
        );
    }
    if unchecked_macs {
        return done(
            v,
            reject(
                Stage::TraceVerification,
                RejectCause::UnverifiedTrace,
                "the store is keyed but was opened without its writer key: its MACs cannot be checked, and a plain chain can be rebuilt by anyone who can write the file (fails closed)",
            ),
        );
    }

    // 1. Required test suites: every recorded run of each counts. A failure
    // is not erased by a later green run (re-running until green would
    // launder a flaky or broken suite), and a run of no test is not a pass.
    let runs = store.test_runs_upto(q.candidate, at)?;
    let mut suites = Vec::new();
    let mut failure: Option<(RejectCause, String)> = None;
    for suite in &p.required_suites {
        let of_suite: Vec<_> = runs.iter().filter(|(_, r)| &r.suite == suite).collect();
        let failed = of_suite.iter().find(|(_, r)| r.failed > 0);
        let empty = of_suite.iter().find(|(_, r)| r.passed == 0);
        let (ok, why) = match (of_suite.is_empty(), failed, empty) {
            (true, _, _) => (
                false,
                (
                    RejectCause::MissingEvidence,
                    format!("suite {suite} has no recorded run for the candidate"),
                ),
            ),
            (_, Some((seq, r)), _) => (
                false,
                (
                    RejectCause::Measured,
                    format!(
                        "suite {suite}: {} failed in the run at seq {seq} (every recorded run counts)",
                        r.failed
                    ),
                ),
            ),
            (_, None, Some((seq, _))) => (
                false,
                (
                    RejectCause::MissingEvidence,
                    format!("suite {suite} ran no test in the run at seq {seq}"),
                ),
            ),
            (false, None, None) => (true, (RejectCause::Measured, String::new())),
        };
        suites.push(serde_json::json!({ "suite": suite, "passed": ok, "runs": of_suite.iter().map(|(s, r)| serde_json::json!({"seq": s, "passed": r.passed, "failed": r.failed, "skipped": r.skipped})).collect::<Vec<_>>() }));
        if !ok && failure.is_none() {
            failure = Some(why);
        }
    }
    v.stages.push(StageReport {
        stage: Stage::Tests,
        passed: Some(failure.is_none()),
        details: serde_json::json!({ "suites": suites }),
    });
    if let Some((cause, why)) = failure {
        return done(v, reject(Stage::Tests, cause, why));
    }

    // Every scorer the policy names must exist in the trace: a typo in a
    // policy must not read as "no violations" or "no evidence yet".
    let named = std::iter::once((Stage::Sequential, p.scorer.as_str()))
        .chain(
            p.invariants
                .iter()
                .map(|i| (Stage::Invariants, i.scorer.as_str())),
        )
        .chain(
            p.canaries
                .iter()
                .filter_map(|c| c.scorer.as_deref().map(|s| (Stage::Invariants, s))),
        )
        .chain(
            p.guardrails
                .iter()
                .map(|g| (Stage::Guardrail(g.scorer.clone()), g.scorer.as_str())),
        );
    for (stage, scorer) in named {
        if !store.has_scorer(scorer, at)? {
            return done(
                v,
                reject(
                    stage,
                    RejectCause::MissingEvidence,
                    format!("unknown scorer {scorer:?}: the trace holds no score of it"),
                ),
            );
        }
        // One version per scorer: the policy's pin for the primary scorer,
        // else the newest version both commits have scores of (else the
        // newest at all, which then finds no pairs and fails closed).
        if v.scorer_versions.contains_key(scorer) {
            continue;
        }
        let pinned = p.scorer_version.as_deref().filter(|_| scorer == p.scorer);
        let version = match pinned {
            Some(pin) => {
                if !store.has_scorer(ScorerRef::at_version(scorer, pin), at)? {
                    return done(
                        v,
                        reject(
                            stage,
                            RejectCause::MissingEvidence,
                            format!("scorer {scorer:?} has no score of the pinned version {pin:?}"),
                        ),
                    );
                }
                pin.to_string()
            }
            None => match store.shared_scorer_version(scorer, q.baseline, q.candidate, at)? {
                Some(shared) => shared,
                None => store
                    .scorer_versions(scorer, at)?
                    .into_iter()
                    .next()
                    .map(|sv| sv.version)
                    .unwrap_or_default(),
            },
        };
        v.scorer_versions.insert(scorer.to_string(), version);
    }
    let versions = v.scorer_versions.clone();
    let at_version = |scorer| at_version(&versions, scorer);

    // 2. Invariants and canaries, on the candidate's own scores.
    let mut inv_reports = Vec::new();
    let mut failure: Option<(RejectCause, String)> = None;
    for inv in &p.invariants {
        let tasks =
            store.paired_scores_upto(q.baseline, q.candidate, at_version(&inv.scorer), at)?;
        // An invariant holds on every task: a task the baseline was checked
        // on and the candidate was not is missing evidence, not a pass.
        let uncovered: Vec<&str> = tasks
            .iter()
            .filter(|t| !t.baseline.is_empty() && t.candidate.is_empty())
            .map(|t| t.task.as_str())
            .collect();
        if !uncovered.is_empty() && failure.is_none() {
            failure = Some((
                RejectCause::MissingEvidence,
                format!(
                    "invariant {}: the candidate has no score on {} task(s) the baseline has (first: {}); fails closed",
                    inv.scorer,
                    uncovered.len(),
                    uncovered[0]
                ),
            ));
        }
        let per_task: Vec<(String, f64)> = tasks
            .into_iter()
            .filter(|t| !t.candidate.is_empty())
            .map(|t| {
                (
                    t.task,
                    t.candidate.iter().copied().fold(f64::INFINITY, f64::min),
                )
            })
            .collect();
        let r = check_minimum(&inv.scorer, &per_task, inv.minimum, INVARIANT_CONFIDENCE)?;
        if !r.holds && failure.is_none() {
            failure = Some(if r.tasks == 0 {
                (
                    RejectCause::MissingEvidence,
                    format!(
                        "invariant {}: the candidate has no scores (fails closed)",
                        inv.scorer
                    ),
                )
            } else {
                (
                    RejectCause::Measured,
                    format!(
                        "invariant {} ≥ {}: violated on {:?}",
                        inv.scorer, inv.minimum, r.violations
                    ),
                )
            });
        }
        inv_reports.push(serde_json::to_value(&r).unwrap_or_default());
    }
    let mut canary_report = serde_json::Value::Null;
    if let Some(c) = &p.canaries {
        let scorer = c.scorer.as_deref().unwrap_or(&p.scorer);
        let scores = store.paired_scores_upto(q.baseline, q.candidate, at_version(scorer), at)?;
        let r = check_canaries(&c.tasks, |task| {
            scores
                .iter()
                .find(|t| t.task == task && !t.candidate.is_empty())
                .map(|t| t.candidate.iter().all(|&x| x >= c.minimum))
        });
        if !r.holds && failure.is_none() {
            let cause = if r.failed.is_empty() {
                RejectCause::MissingEvidence
            } else {
                RejectCause::Measured
            };
            failure = Some((
                cause,
                format!("canaries: failed {:?}, missing {:?}", r.failed, r.missing),
            ));
        }
        canary_report = serde_json::to_value(&r).unwrap_or_default();
    }
    v.stages.push(StageReport {
        stage: Stage::Invariants,
        passed: Some(failure.is_none()),
        details: serde_json::json!({ "invariants": inv_reports, "canaries": canary_report, "confidence": INVARIANT_CONFIDENCE }),
    });
    if let Some((cause, why)) = failure {
        return done(v, reject(Stage::Invariants, cause, why));
    }

    // 3. The sequential test, fed the paired tasks in task-name order (an
    // order that does not depend on the outcomes).
    // Lower-is-better scorers (an anchor's own direction, or the policy's)
    // are judged on negated values, so "better" always means "larger" below.
    let sign = if lower_is_better(store, q, &p.scorer, p.direction, at)? {
        -1.0
    } else {
        1.0
    };
    let (base, cand, gap) = paired_means(store, q, at_version(&p.scorer), at)?;
    if base.is_empty() {
        v.stages.push(StageReport {
            stage: Stage::Sequential,
            passed: Some(false),
            details: serde_json::json!({ "tasks": 0 }),
        });
        return done(
            v,
            reject(
                Stage::Sequential,
                RejectCause::MissingEvidence,
                format!(
                    "no task of {} was scored on both sides (fails closed)",
                    p.scorer
                ),
            ),
        );
    }
    let (base, cand): (Vec<f64>, Vec<f64>) = (
        base.into_iter().map(|x| sign * x).collect(),
        cand.into_iter().map(|x| sign * x).collect(),
    );
    let bounds = p.boundaries()?;
    // Per test: the decision, the LLR, the observations used, the
    // boundaries actually applied, the per-observation effect on the
    // policy's scale (for the estimate shown with its interval), details.
    let (decision, llr, n, (lower, upper), diffs, details) = match p.test {
        TestKind::Bernoulli => {
            // Paired pass/fail: only discordant pairs carry evidence. Under
            // "no difference" the candidate is the one that passed with
            // probability exactly ½, whatever the pass rates: the null is
            // simple, so Wald's bounds hold as for a known p0.
            let thr = sign * p.pass_threshold.unwrap_or(1.0);
            let mut t = p.bernoulli_test()?;
            let (theta0, theta1) = p.discordant_hypotheses();
            let (mut cand_only, mut base_only, mut concordant) = (0u64, 0u64, 0u64);
            let mut diffs = Vec::new();
            for (&b, &c) in base.iter().zip(&cand) {
                if t.decision().is_final() {
                    break;
                }
                diffs.push(f64::from(u8::from(c >= thr)) - f64::from(u8::from(b >= thr)));
                match (b >= thr, c >= thr) {
                    (false, true) => {
                        cand_only += 1;
                        t.observe(true);
                    }
                    (true, false) => {
                        base_only += 1;
                        t.observe(false);
                    }
                    _ => concordant += 1,
                }
            }
            let d = serde_json::json!({ "test": "bernoulli", "design": "discordant pairs", "effect_measure": "pass-rate difference (candidate − baseline)", "theta0": theta0, "theta1": theta1, "pass_threshold": thr, "candidate_only_passed": cand_only, "baseline_only_passed": base_only, "both_or_neither": concordant });
            let b = t.boundaries();
            (
                t.decision(),
                t.llr(),
                t.n(),
                (b.lower(), b.upper()),
                diffs,
                d,
            )
        }
        TestKind::Gaussian => {
            // Paired differences: the task's own difficulty cancels, and the
            // null (mean difference 0) does not depend on an estimated
            // baseline mean.
            if base.len() < 2 {
                v.stages.push(StageReport {
                    stage: Stage::Sequential,
                    passed: None,
                    details: serde_json::json!({ "test": "gaussian", "tasks": base.len() }),
                });
                return done(
                    v,
                    Outcome::Continue {
                        expected_more: p.warmup.unwrap_or(GaussianSprt::DEFAULT_WARMUP),
                        reason: "fewer than two tasks scored on both sides".into(),
                    },
                );
            }
            let mut t = p.gaussian_test()?;
            let mut diffs = Vec::new();
            for (&b, &c) in base.iter().zip(&cand) {
                diffs.push(c - b);
                if t.update(c - b)?.is_final() {
                    break;
                }
            }
            let d = serde_json::json!({ "test": "gaussian", "design": "paired differences", "effect_measure": "mean difference (candidate − baseline)", "mu0": 0.0, "mu1": p.gap.unwrap_or_default(), "variance": t.variance() });
            let b = t.boundaries();
            (
                t.decision(),
                t.llr(),
                t.n(),
                (b.lower(), b.upper()),
                diffs,
                d,
            )
        }
        TestKind::Paired => {
            let mut t = p.paired_test()?;
            let elo = t.elo();
            let class_of = |b: f64, c: f64| match c.partial_cmp(&b) {
                Some(std::cmp::Ordering::Greater) => 2,
                Some(std::cmp::Ordering::Equal) => 1,
                _ => 0,
            };
            let pairs: Vec<usize> = match t.pairing() {
                // One outcome per task, from the per-task means.
                Pairing::Trinomial => base
                    .iter()
                    .zip(&cand)
                    .map(|(&b, &c)| class_of(b, c))
                    .collect(),
                // Two runs per task: run i against run i, the pair's total 0..=4.
                Pairing::Pentanomial => store
                    .paired_scores_upto(q.baseline, q.candidate, at_version(&p.scorer), at)?
                    .into_iter()
                    .filter(|t| t.baseline.len() >= 2 && t.candidate.len() >= 2)
                    .map(|t| {
                        class_of(sign * t.baseline[0], sign * t.candidate[0])
                            + class_of(sign * t.baseline[1], sign * t.candidate[1])
                    })
                    .collect(),
            };
            let half = (t.pairing().classes() - 1) as f64 / 2.0;
            let mut diffs = Vec::new();
            for class in pairs {
                // The pair's score minus a draw's, per game: −1 … +1.
                diffs.push((class as f64 - half) / half);
                if t.update(class)?.is_final() {
                    break;
                }
            }
            let labels: &[&str] = match t.pairing() {
                Pairing::Trinomial => &["losses", "draws", "wins"],
                Pairing::Pentanomial => &["LL", "LD", "DD_or_WL", "WD", "WW"],
            };
            let counts: serde_json::Map<String, serde_json::Value> = labels
                .iter()
                .zip(t.counts())
                .map(|(l, c)| ((*l).to_string(), serde_json::json!(c)))
                .collect();
            let d = serde_json::json!({ "test": "paired", "pairing": t.pairing(), "effect_measure": "score − ½ per game (wins count +½, losses −½)", "elo_model": elo.model, "elo0": elo.elo0, "elo1": elo.elo1, "counts": counts });
            (
                t.decision(),
                t.llr(),
                t.n(),
                t.effective_boundaries(),
                diffs,
                d,
            )
        }
    };
    let mut details = details;
    if let Some(obj) = details.as_object_mut() {
        obj.insert("llr".into(), serde_json::json!(llr));
        obj.insert("n".into(), serde_json::json!(n));
        obj.insert("lower".into(), serde_json::json!(lower));
        obj.insert("upper".into(), serde_json::json!(upper));
        obj.insert("wald_lower".into(), serde_json::json!(bounds.lower()));
        obj.insert("wald_upper".into(), serde_json::json!(bounds.upper()));
        obj.insert("effect".into(), serde_json::json!(effect_estimate(&diffs)));
        obj.insert("max_n".into(), serde_json::json!(p.max_n));
        obj.insert("decision".into(), serde_json::json!(decision));
        obj.insert("tasks_available".into(), serde_json::json!(base.len()));
        if let Some(task) = &gap {
            obj.insert("stopped_at_missing_task".into(), serde_json::json!(task));
        }
    }
    v.stages.push(StageReport {
        stage: Stage::Sequential,
        passed: match decision {
            Decision::Promote => Some(true),
            Decision::Continue => None,
            _ => Some(false),
        },
        details,
    });
    match decision {
        Decision::Reject => {
            return done(
                v,
                reject(
                    Stage::Sequential,
                    RejectCause::Measured,
                    format!(
                        "LLR {llr:.3} reached the lower boundary {lower:.3} after {n} observations"
                    ),
                ),
            );
        }
        Decision::Truncated => {
            return done(
                v,
                reject(
                    Stage::Sequential,
                    RejectCause::Measured,
                    format!(
                        "not shown better within {} observations (truncated at LLR {llr:.3})",
                        p.max_n
                    ),
                ),
            );
        }
        Decision::Continue => {
            // Rough: tasks to reach the nearer boundary at the average drift so far.
            let drift = if n > 0 { llr / n as f64 } else { 0.0 };
            let to_go = if drift > 0.0 {
                (upper - llr) / drift
            } else if drift < 0.0 {
                (lower - llr) / drift
            } else {
                (p.max_n - n) as f64
            };
            let expected_more =
                (to_go.ceil().max(1.0) as u64).min(p.max_n.saturating_sub(n).max(1));
            return done(
                v,
                Outcome::Continue {
                    expected_more,
                    reason: match &gap {
                        Some(task) => format!(
                            "LLR {llr:.3} between {lower:.3} and {upper:.3} after {n} observations; the candidate has no score yet on task {task}, where the sequence waits"
                        ),
                        None => format!(
                            "LLR {llr:.3} between {lower:.3} and {upper:.3} after {n} observations"
                        ),
                    },
                },
            );
        }
        Decision::Promote => {}
    }

    // 4. Guardrails: each must be shown non-inferior (intersection–union).
    for g in &p.guardrails {
        let margin = match g.margin_kind {
            MarginKind::Absolute => Margin::Absolute(g.margin),
            MarginKind::Relative => Margin::Relative(g.margin),
        };
        // The guardrail's direction must agree with the scorer's declared one.
        lower_is_better(store, q, &g.scorer, Some(g.direction), at)?;
        let test = NonInferiority::new(g.direction.into(), margin, p.alpha)?;
        let (gb, gc, _) = paired_means(store, q, at_version(&g.scorer), at)?;
        let stage = Stage::Guardrail(g.scorer.clone());
        if gb.len() < 2 {
            v.stages.push(StageReport {
                stage: stage.clone(),
                passed: Some(false),
                details: serde_json::json!({ "tasks": gb.len() }),
            });
            return done(
                v,
                reject(
                    stage,
                    RejectCause::MissingEvidence,
                    format!(
                        "guardrail {}: fewer than two tasks scored on both sides (fails closed)",
                        g.scorer
                    ),
                ),
            );
        }
        match g.method {
            GuardrailMethod::Welch => {
                let r = test.welch(
                    &SampleStats::from_values(&gb)?,
                    &SampleStats::from_values(&gc)?,
                )?;
                v.stages.push(StageReport { stage: stage.clone(), passed: Some(r.non_inferior), details: serde_json::json!({ "method": "welch", "result": r, "margin": margin }) });
                if !r.non_inferior {
                    return done(
                        v,
                        reject(
                            stage,
                            RejectCause::Measured,
                            format!(
                                "guardrail {}: not shown non-inferior (p = {:.4} ≥ α = {})",
                                g.scorer, r.p_value, p.alpha
                            ),
                        ),
                    );
                }
            }
            GuardrailMethod::Sequence => {
                let r = test.sequential(&gb, &gc, p.max_n)?;
                v.stages.push(StageReport { stage: stage.clone(), passed: r.non_inferior.then_some(true), details: serde_json::json!({ "method": "sequence", "result": r, "margin": margin }) });
                if !r.non_inferior {
                    return done(
                        v,
                        Outcome::Continue {
                            expected_more: (r.n).max(1),
                            reason: format!(
                                "guardrail {}: upper bound {:.4} not yet below 0",
                                g.scorer, r.upper_bound
                            ),
                        },
                    );
                }
            }
        }
    }
    done(v, Outcome::Promote)
}

/// What a baseline's recorded scores say about the world a class's test
/// will run in: the inputs `calibrate` needs, measured instead of assumed.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BaselineWorld {
    /// The scorer (the class's primary scorer).
    pub scorer: String,
    /// The version read (the baseline's newest).
    pub scorer_version: String,
    /// Tasks the baseline has scores of.
    pub tasks: u64,
    /// Share of tasks whose mean score reaches the pass threshold.
    pub p0: f64,
    /// Standard deviation of a paired difference, `√2 ×` the sd of the
    /// baseline's per-task means (two independent runs of equal quality).
    pub sigma: Option<f64>,
    /// Share of tasks the baseline ran twice whose two runs tie: the draw
    /// ratio of a paired comparison at no effect (`None` with no repeats).
    pub draw: Option<f64>,
}

/// Estimates [`BaselineWorld`] from `baseline`'s scores of the class's
/// scorer, on a verified trace (in one read transaction).
///
/// # Errors
/// [`Error::Trace`] if the trace does not verify or cannot be read;
/// [`Error::InvalidObservation`] if the baseline has no score of the scorer.
pub fn baseline_world(
    store: &Store,
    policy: &ClassPolicy,
    baseline: &CommitId,
) -> Result<BaselineWorld> {
    let snapshot = store.snapshot()?;
    snapshot.verified(&VerifyOptions::default())?;
    let scorer = policy.scorer.as_str();
    let version = match &policy.scorer_version {
        Some(v) => v.clone(),
        None => snapshot
            .shared_scorer_version(scorer, baseline, baseline, u64::MAX)?
            .ok_or_else(|| Error::InvalidObservation {
                reason: format!("baseline {baseline} has no score of {scorer}"),
            })?,
    };
    let tasks = snapshot.paired_scores_upto(
        baseline,
        baseline,
        ScorerRef::at_version(scorer, &version),
        u64::MAX,
    )?;
    let means: Vec<f64> = tasks
        .iter()
        .filter(|t| !t.baseline.is_empty())
        .map(|t| t.baseline.iter().sum::<f64>() / t.baseline.len() as f64)
        .collect();
    if means.is_empty() {
        return Err(Error::InvalidObservation {
            reason: format!("baseline {baseline} has no score of {scorer} version {version}"),
        });
    }
    let n = means.len() as f64;
    let threshold = policy.pass_threshold.unwrap_or(1.0);
    let p0 = means.iter().filter(|&&m| m >= threshold).count() as f64 / n;
    let mean = means.iter().sum::<f64>() / n;
    let sigma = (means.len() >= 2).then(|| {
        let var = means.iter().map(|m| (m - mean) * (m - mean)).sum::<f64>() / (n - 1.0);
        (2.0 * var).sqrt()
    });
    let repeated: Vec<&[f64]> = tasks
        .iter()
        .map(|t| t.baseline.as_slice())
        .filter(|runs| runs.len() >= 2)
        .collect();
    let draw = (!repeated.is_empty()).then(|| {
        let ties = repeated
            .iter()
            .filter(|runs| runs[0].total_cmp(&runs[1]).is_eq())
            .count();
        ties as f64 / repeated.len() as f64
    });
    Ok(BaselineWorld {
        scorer: scorer.to_string(),
        scorer_version: version,
        tasks: means.len() as u64,
        p0,
        sigma,
        draw,
    })
}
