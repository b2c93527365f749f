//! The stages of the law, one function each, in the order [`evaluate`]
//! runs them. Each reads the trace as of `at`, pushes its [`StageReport`]
//! and returns `Some(outcome)` to stop there, `None` to go on.

use std::borrow::Cow;
use std::cell::RefCell;
use std::collections::BTreeMap;

use ratchet_trace::{
    PairedScores, PairedTask, ScorerRef, SetAside, Side, Sources, Verified, VerifyReport,
};

use crate::decide::{
    BoundSide, DecisionBound, EffectEstimate, EffectInterval, GuardrailDetails, GuardrailResult,
    InvariantsDetails, Law, Outcome, Question, Refusal, Refused, RejectCause, SequentialDetails,
    Stage, StageDetails, StageReport, StageState, SuiteReport, SuiteRun, TaskOrder, TestFigures,
    TestsDetails, TooFewTasks, Undeclared, Verdict, VerificationDetails,
};
use crate::error::{Error, Result};
use crate::gsprt::Pairing;
use crate::invariants::{check_canaries, check_minimum};
use crate::noninferiority::{Margin, NonInferiority, SampleStats};
use crate::order::{SweepTask, name_sweep};
use crate::policy::{Guardrail, GuardrailMethod, MarginKind, TestKind};
use crate::sprt::{GaussianSprt, SequentialTest as _, TestState};

/// Confidence of the bounds reported with invariants.
const INVARIANT_CONFIDENCE: f64 = 0.95;

/// What a stage says: `Some(outcome)` ends the verdict there.
pub(crate) type Step = Result<Option<Outcome>>;

/// Runs every stage on a verdict whose identity (class, commits, head) is
/// filled in, and returns the outcome.
pub(crate) fn evaluate(
    checked: &VerifyReport,
    view: Option<&Verified>,
    q: &Question<'_>,
    at: u64,
    v: &mut Verdict,
) -> Result<Outcome> {
    if let Some(o) = verification(checked, &mut v.stages) {
        return Ok(o);
    }
    // A view exists only for a trace that verified with its MACs checked.
    let Some(view) = view else {
        return Ok(unverified("the trace was not verified"));
    };
    // Read from the verified trace, once: a class pinned at `at` decides
    // under its pin and nothing else (a file edited beside the store is
    // refused), and a pinned rubric's version is the one read.
    let pins = ratchet_records::pins(view, at)?;
    let pin = crate::pin::class_pins(&pins)?.remove(q.class);
    if let Some(pinned) = &pin
        && !pinned.admits(q.policy)
    {
        return Err(crate::pin::not_pinned(q.class, pinned, q.policy));
    }
    let law = v.law;
    let attributed = law >= Law::Attributed;
    if attributed && pin.is_none() {
        // On a keyed store the pin is what makes a policy the key
        // holder's; a file beside the store is anyone's who can write it.
        if checked.keyed && !q.allow_unpinned {
            return Err(Error::Unpinned {
                class: q.class.to_string(),
            });
        }
        v.unpinned = true;
    }
    // Whose evidence counts: since the third law, the producers the class
    // trusts per side; before it, everyone's (so old verdicts recompute).
    let sources = if attributed {
        q.policy.sources(q.class)?
    } else {
        [Sources::everyone(), Sources::everyone()]
    };
    // A scorer's direction is fixed by the key holder: the policy's, else
    // a declaration this store made no later than the class's pin.
    let declared_until = match (&pin, attributed) {
        (Some(p), true) => p.seq,
        _ => at,
    };
    let set_aside = RefCell::new(Vec::new());
    let undeclared = RefCell::new(Vec::new());
    let look = Look {
        view,
        q,
        at,
        versions: &BTreeMap::new(),
        law,
        sources: &sources,
        declared_until,
        set_aside: &set_aside,
        undeclared: &undeclared,
    };
    let mut versions = BTreeMap::new();
    let outcome = stages_in_order(look, &pins, &mut versions, &mut v.stages);
    v.scorer_versions = versions;
    v.set_aside = set_aside.into_inner();
    // Since the fourth law every verdict of a class whose test reads tasks
    // in an order says which order (a benchmarks class reads samples per
    // benchmark, a class without a test reads none).
    if law >= Law::Tuned && !matches!(q.policy.test, TestKind::Benchmarks | TestKind::None) {
        v.order = Some(match q.policy.declared_tasks() {
            Some(ids) => TaskOrder::Declared {
                tasks: ids.len() as u64,
                undeclared: undeclared.into_inner(),
            },
            None if law >= Law::NameSweep => TaskOrder::NameSweep,
            None => TaskOrder::BaselineTrace,
        });
    }
    Ok(outcome?.unwrap_or(Outcome::Promote))
}

/// Required tests → versions → invariants → sequential → guardrails.
fn stages_in_order(
    look: Look<'_>,
    pins: &[(u64, ratchet_records::Pin)],
    versions: &mut BTreeMap<String, String>,
    stages: &mut Vec<StageReport>,
) -> Step {
    if let Some(o) = required_tests(look, stages)? {
        return Ok(Some(o));
    }
    if let Some(o) = choose_versions(look, pins, versions)? {
        return Ok(Some(o));
    }
    let look = Look {
        versions: &*versions,
        ..look
    };
    if let Some(o) = invariants(look, stages)? {
        return Ok(Some(o));
    }
    if let Some(o) = sequential(look, stages)? {
        return Ok(Some(o));
    }
    guardrails(look, stages)
}

/// Stage 4, every guardrail after the sequential test has passed.
fn guardrails(look: Look<'_>, stages: &mut Vec<StageReport>) -> Step {
    // The tasks the primary scorer pairs (at least those the sequential
    // test read): a guardrail must have the candidate's score on each.
    let used = stages
        .iter()
        .find_map(|r| match &r.details {
            StageDetails::Sequential(d) => Some(
                d.effect
                    .map_or(d.n as usize, |e| e.n)
                    .max(d.tasks_available),
            ),
            _ => None,
        })
        .unwrap_or(0);
    for g in &look.q.policy.guardrails {
        if let Some(o) = guardrail(look, g, used, stages)? {
            return Ok(Some(o));
        }
    }
    Ok(None)
}

/// What the stages read: the view as of `at`, the scorer versions chosen,
/// the law that puts the evidence in order, whose evidence counts per side
/// (and where what was set aside is counted), the last seq at which a
/// scorer's declared direction counts, and where the scores a declared
/// task list leaves unread are counted.
#[derive(Clone, Copy)]
pub(crate) struct Look<'a> {
    pub(crate) view: &'a Verified,
    pub(crate) q: &'a Question<'a>,
    pub(crate) at: u64,
    pub(crate) versions: &'a BTreeMap<String, String>,
    pub(crate) law: Law,
    pub(crate) sources: &'a [Sources; 2],
    pub(crate) declared_until: u64,
    pub(crate) set_aside: &'a RefCell<Vec<SetAside>>,
    pub(crate) undeclared: &'a RefCell<Vec<Undeclared>>,
}

impl Look<'_> {
    /// Counts `aside` into the verdict's set-aside evidence.
    pub(crate) fn set_aside(&self, aside: Vec<SetAside>) {
        if !aside.is_empty() {
            ratchet_trace::merge_set_aside(&mut self.set_aside.borrow_mut(), aside);
        }
    }

    /// The class's declared task order, when the law reads one (since
    /// [`Law::Tuned`]).
    fn declared(&self) -> Option<&[String]> {
        (self.law >= Law::Tuned)
            .then(|| self.q.policy.declared_tasks())
            .flatten()
    }

    /// The name of the order the law reads when it was fixed before any
    /// outcome (a declared list, or since [`Law::NameSweep`] the name
    /// sweep), as a wait says it; `None` for the baseline's trace order.
    fn fixed_order(&self) -> Option<&'static str> {
        if self.declared().is_some() {
            Some("the declared order")
        } else if self.law >= Law::NameSweep {
            Some("name order")
        } else {
            None
        }
    }

    /// Counts the scores of `scorer` on tasks off the list `ids` (per side;
    /// a scorer read twice is counted once).
    fn count_undeclared(&self, scorer: &str, scores: &PairedScores<'_>, ids: &[String]) {
        let listed: std::collections::HashSet<&str> = ids.iter().map(String::as_str).collect();
        let mut counts = [(0u64, 0u64); 2];
        for t in scores.iter().filter(|t| !listed.contains(t.task)) {
            for (slot, values) in counts.iter_mut().zip([t.baseline, t.candidate]) {
                if !values.is_empty() {
                    slot.0 += 1;
                    slot.1 += values.len() as u64;
                }
            }
        }
        let mut all = self.undeclared.borrow_mut();
        all.retain(|u| u.scorer != scorer);
        for (side, (tasks, scores)) in [Side::Baseline, Side::Candidate].into_iter().zip(counts) {
            if tasks > 0 {
                all.push(Undeclared {
                    scorer: scorer.to_string(),
                    side,
                    tasks,
                    scores,
                });
            }
        }
    }

    /// The scores of `scorer` under both commits, from the producers each
    /// side trusts (what was set aside is counted).
    fn paired(&self, scorer: ScorerRef<'_>) -> PairedScores<'_> {
        let (scores, aside) = self.view.paired_scores_from(
            self.q.baseline,
            self.q.candidate,
            scorer,
            self.at,
            [&self.sources[0], &self.sources[1]],
        );
        self.set_aside(aside);
        scores
    }
}

pub(crate) fn reject(stage: Stage, cause: RejectCause, reason: impl Into<String>) -> Step {
    Ok(Some(Outcome::Reject {
        stage,
        cause,
        reason: reason.into(),
    }))
}

pub(crate) fn push(
    stages: &mut Vec<StageReport>,
    stage: Stage,
    state: StageState,
    details: StageDetails,
) {
    stages.push(StageReport {
        stage,
        passed: state,
        details,
    });
}

/// Stage 0, the trace itself, before any number is read from it: the whole trace
/// up to `at` is recomputed (hashes, MACs with the key the store was opened
/// with, projection rows, schema), so every row read later is one this
/// pass covered.
fn verification(report: &VerifyReport, stages: &mut Vec<StageReport>) -> Option<Outcome> {
    let report = report.clone();
    let unchecked_macs = report.macs_unchecked();
    let fault = report.fault.clone();
    push(
        stages,
        Stage::TraceVerification,
        StageState::from(report.is_valid() && !unchecked_macs),
        StageDetails::Verification(VerificationDetails {
            size: report.size,
            keyed: report.keyed,
            macs_checked: report.macs_checked,
            checkpoint_checked: report.checkpoint_checked,
            fault: report.fault,
        }),
    );
    if let Some(f) = fault {
        return Some(unverified(format!("the trace does not verify: {f}")));
    }
    if unchecked_macs {
        return Some(unverified(
            "the store is keyed but was opened without its writer key: its MACs cannot be checked, and a plain chain can be rebuilt by anyone who can write the file (fails closed)",
        ));
    }
    None
}

fn unverified(reason: impl Into<String>) -> Outcome {
    Outcome::Reject {
        stage: Stage::TraceVerification,
        cause: RejectCause::UnverifiedTrace,
        reason: reason.into(),
    }
}

/// Stage 1, required test suites: every recorded run of each counts. A failure is
/// not erased by a later green run (re-running until green would launder a
/// flaky or broken suite), and a run of no test is not a pass.
fn required_tests(look: Look<'_>, stages: &mut Vec<StageReport>) -> Step {
    let q = look.q;
    let (runs, aside) =
        look.view
            .test_runs_from(q.candidate, look.at, &look.sources[1], Side::Candidate);
    if !q.policy.required_suites.is_empty() {
        look.set_aside(aside);
    }
    let mut suites = Vec::new();
    let mut failure: Option<(RejectCause, String)> = None;
    for suite in &q.policy.required_suites {
        let of_suite: Vec<_> = runs.iter().filter(|(_, r)| &r.suite == suite).collect();
        let failed = of_suite.iter().find(|(_, r)| r.failed > 0);
        let empty = of_suite.iter().find(|(_, r)| r.passed == 0);
        let why = match (of_suite.is_empty(), failed, empty) {
            (true, _, _) => Some((
                RejectCause::MissingEvidence,
                format!("suite {suite} has no recorded run for the candidate"),
            )),
            (_, Some((seq, r)), _) => Some((
                RejectCause::Measured,
                format!(
                    "suite {suite}: {} failed in the run at seq {seq} (every recorded run counts)",
                    r.failed
                ),
            )),
            (_, None, Some((seq, _))) => Some((
                RejectCause::MissingEvidence,
                format!("suite {suite} ran no test in the run at seq {seq}"),
            )),
            (false, None, None) => None,
        };
        suites.push(SuiteReport {
            suite: suite.clone(),
            passed: why.is_none(),
            runs: of_suite
                .iter()
                .map(|(seq, r)| SuiteRun {
                    seq: *seq,
                    passed: r.passed,
                    failed: r.failed,
                    skipped: r.skipped,
                })
                .collect(),
        });
        if failure.is_none() {
            failure = why;
        }
    }
    push(
        stages,
        Stage::Tests,
        StageState::from(failure.is_none()),
        StageDetails::Tests(TestsDetails { suites }),
    );
    match failure {
        Some((cause, why)) => reject(Stage::Tests, cause, why),
        None => Ok(None),
    }
}

/// Every scorer the policy names must exist in the trace (a typo in a policy
/// must not read as "no violations" or "no evidence yet"), and each is read
/// at one version: the policy's pin for the primary scorer, else the newest
/// version both commits have scores of (else the newest at all, which then
/// finds no pairs and fails closed).
fn choose_versions(
    look: Look<'_>,
    pins: &[(u64, ratchet_records::Pin)],
    versions: &mut BTreeMap<String, String>,
) -> Step {
    let Look {
        view, q, at, law, ..
    } = look;
    let policy = q.policy;
    // A class without a sequential test names no primary scorer.
    let primary =
        (policy.test != TestKind::None).then_some((Stage::Sequential, policy.scorer.as_str()));
    let named = primary
        .into_iter()
        .chain(
            policy
                .invariants
                .iter()
                .map(|i| (Stage::Invariants, i.scorer.as_str())),
        )
        .chain(
            policy
                .canaries
                .iter()
                .filter_map(|c| c.scorer.as_deref().map(|s| (Stage::Invariants, s))),
        )
        .chain(
            policy
                .guardrails
                .iter()
                .map(|g| (Stage::Guardrail(g.scorer.clone()), g.scorer.as_str())),
        );
    for (stage, scorer) in named {
        if !view.has_scorer(scorer, at) {
            return reject(
                stage,
                RejectCause::MissingEvidence,
                format!("unknown scorer {scorer:?}: the trace holds no score of it"),
            );
        }
        if versions.contains_key(scorer) {
            continue;
        }
        // The policy's own version pin, else a rubric pinned in the trace.
        let rubric_pin = ratchet_records::rubric_pin_in(pins, scorer).map(|(v, _)| v.to_string());
        let stated = if scorer == policy.scorer {
            policy.scorer_version.clone()
        } else if law >= Law::Attributed {
            policy
                .guardrails
                .iter()
                .filter(|g| g.scorer == scorer)
                .find_map(|g| g.scorer_version.clone())
                .or_else(|| {
                    policy
                        .invariants
                        .iter()
                        .filter(|i| i.scorer == scorer)
                        .find_map(|i| i.scorer_version.clone())
                })
        } else {
            None
        };
        let pinned = stated.or(rubric_pin);
        let version = match pinned.as_deref() {
            Some(pin) => {
                if !view.has_scorer(ScorerRef::at_version(scorer, pin), at) {
                    return reject(
                        stage,
                        RejectCause::MissingEvidence,
                        format!("scorer {scorer:?} has no score of the pinned version {pin:?}"),
                    );
                }
                pin.to_string()
            }
            // Unpinned, the version is the baseline's newest: chosen by the
            // baseline's evidence alone. (The first law took the newest
            // version either side had, so a candidate re-running one task
            // under another version switched the sequence read.) A
            // candidate without scores of it leaves the test waiting.
            // Since the third law: the newest version among the baseline's
            // *trusted* evidence, so nobody the class does not trust can
            // switch the version read by recording under a new one.
            // (An invariant may be scored on candidates only: then the
            // candidate's trusted evidence chooses; nobody untrusted ever.)
            None if law >= Law::Attributed => {
                let trusted = view
                    .newest_version_from(scorer, q.baseline, at, &look.sources[0])
                    .or_else(|| {
                        view.newest_version_from(scorer, q.candidate, at, &look.sources[1])
                    });
                match trusted {
                    Some(v) => v,
                    // No trusted score on either side: whatever is read
                    // finds nothing trusted, and fails closed.
                    None => view
                        .scorer_versions(scorer, at)
                        .into_iter()
                        .next()
                        .map(|sv| sv.version)
                        .unwrap_or_default(),
                }
            }
            None => {
                let other = if law == Law::NameOrder {
                    q.candidate
                } else {
                    q.baseline
                };
                match view.shared_scorer_version(scorer, q.baseline, other, at) {
                    Some(shared) => shared,
                    None => view
                        .scorer_versions(scorer, at)
                        .into_iter()
                        .next()
                        .map(|sv| sv.version)
                        .unwrap_or_default(),
                }
            }
        };
        versions.insert(scorer.to_string(), version);
    }
    Ok(None)
}

/// `scorer` at the version chosen for it (every scorer read is chosen).
fn at_version<'a>(versions: &'a BTreeMap<String, String>, scorer: &'a str) -> ScorerRef<'a> {
    match versions.get(scorer) {
        Some(version) => ScorerRef::at_version(scorer, version),
        None => scorer.into(),
    }
}

/// Stage 2, invariants and canaries, on the candidate's own scores.
fn invariants(look: Look<'_>, stages: &mut Vec<StageReport>) -> Step {
    let Look { q, versions, .. } = look;
    let policy = q.policy;
    let mut reports = Vec::new();
    let mut failure: Option<(RejectCause, String)> = None;
    for inv in &policy.invariants {
        let tasks = look.paired(at_version(versions, &inv.scorer));
        // An invariant holds on every task: a task the baseline was checked
        // on and the candidate was not is missing evidence, not a pass.
        let uncovered: Vec<&str> = tasks
            .iter()
            .filter(|t| !t.baseline.is_empty() && t.candidate.is_empty())
            .map(|t| t.task)
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
            .iter()
            .filter(|t| !t.candidate.is_empty())
            .map(|t| {
                (
                    t.task.to_string(),
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
        reports.push(r);
    }
    let mut canaries = None;
    if let Some(c) = &policy.canaries {
        let scorer = c.scorer.as_deref().unwrap_or(&policy.scorer);
        let scores = look.paired(at_version(versions, scorer));
        let r = check_canaries(&c.tasks, |task| {
            scores
                .find(task)
                .filter(|t| !t.candidate.is_empty())
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
        canaries = Some(r);
    }
    push(
        stages,
        Stage::Invariants,
        StageState::from(failure.is_none()),
        StageDetails::Invariants(InvariantsDetails {
            invariants: reports,
            canaries,
            confidence: INVARIANT_CONFIDENCE,
        }),
    );
    match failure {
        Some((cause, why)) => reject(Stage::Invariants, cause, why),
        None => Ok(None),
    }
}

/// The pairs a sequential test reads. Since [`Law::Tuned`], when the class
/// declares its `tasks`: in the declared order, each side's first score of
/// each listed task, up to the first listed task not scored on both sides
/// (the order was fixed before any outcome, so nothing that finishes
/// sooner comes first); tasks off the list are not read (counted in the
/// verdict). Otherwise in the baseline's trace order (the
/// order its first score of each task was recorded in): each side's
/// *first* score of the task, up to the first task the baseline has a
/// score of and the candidate does not. Such a missing task ends the sequence (the
/// rest waits for it to be filled) instead of being skipped, so a candidate
/// cannot pick the tasks that count by leaving the hard ones out; nor can
/// it reorder them (the baseline's order was fixed before it ran) or re-run
/// a task until it passes (only the first score counts). Evidence arriving
/// later only extends the sequence, so every look at the gate continues the
/// same path and polling is one sequential test, not many. Tasks only the
/// candidate ran are not pairs. Returns the two sides and the task it waits at.
fn paired_firsts(look: Look<'_>, scorer: ScorerRef<'_>) -> (Vec<f64>, Vec<f64>, Option<String>) {
    let scores = look.paired(scorer);
    let declared = look.declared();
    if let Some(ids) = declared {
        look.count_undeclared(scorer.name, &scores, ids);
    }
    pairs_under(&scores, look.law, declared)
}

/// The pairs `law` reads from `scores` (see [`paired_firsts`]), in the
/// `declared` order when the class declares one (and the law reads it).
fn pairs_under(
    scores: &PairedScores<'_>,
    law: Law,
    declared: Option<&[String]>,
) -> (Vec<f64>, Vec<f64>, Option<String>) {
    if law == Law::NameOrder {
        return name_order_means(scores);
    }
    let (mut base, mut cand) = (Vec::new(), Vec::new());
    if law >= Law::NameSweep && declared.is_none() {
        let (read, waits_at) = name_swept(scores, 1);
        for t in read {
            base.push(t.baseline[0]);
            cand.push(t.candidate[0]);
        }
        return (base, cand, waits_at);
    }
    if let Some(ids) = declared {
        for (id, t) in ids.iter().zip(in_declared_order(scores, ids)) {
            match t.and_then(|t| Some((*t.baseline.first()?, *t.candidate.first()?))) {
                Some((b, c)) => {
                    base.push(b);
                    cand.push(c);
                }
                None => return (base, cand, Some(id.clone())),
            }
        }
        return (base, cand, None);
    }
    for t in scores.iter() {
        match (t.baseline.first(), t.candidate.first()) {
            (Some(_), None) => return (base, cand, Some(t.task.to_string())),
            (Some(&b), Some(&c)) => {
                base.push(b);
                cand.push(c);
            }
            // Candidate-only tasks come after every baseline task.
            (None, _) => break,
        }
    }
    (base, cand, None)
}

/// The tasks [`Law::NameSweep`]'s name sweep reads of `scores`, in order,
/// each complete once both sides have `runs` scores of it, and the task it
/// waits at ([`crate::order`]).
fn name_swept<'s>(
    scores: &'s PairedScores<'_>,
    runs: usize,
) -> (Vec<PairedTask<'s>>, Option<String>) {
    let tasks: Vec<PairedTask<'s>> = scores.iter().collect();
    let sweep: Vec<SweepTask<'_>> = tasks
        .iter()
        .zip(scores.seqs())
        .map(|(t, seqs)| SweepTask {
            name: t.task,
            baseline: seqs.baseline.first().copied(),
            candidate: seqs.candidate.first().copied(),
            complete: seqs
                .baseline
                .get(runs - 1)
                .zip(seqs.candidate.get(runs - 1))
                .map(|(&b, &c)| b.max(c)),
        })
        .collect();
    let path = name_sweep(&sweep);
    (
        path.read.iter().map(|&i| tasks[i]).collect(),
        path.waits_at.map(|i| tasks[i].task.to_string()),
    )
}

/// Each of `ids`' tasks among `scores`, in the list's order (`None`: no
/// score of it on either side yet).
fn in_declared_order<'s>(
    scores: &'s PairedScores<'_>,
    ids: &[String],
) -> Vec<Option<PairedTask<'s>>> {
    let by_name: std::collections::HashMap<&str, PairedTask<'s>> =
        scores.iter().map(|t| (t.task, t)).collect();
    ids.iter()
        .map(|id| by_name.get(id.as_str()).copied())
        .collect()
}

/// [`Law::NameOrder`]'s pairs, kept to recompute its verdicts: per-task
/// means in task-name order up to the first task the candidate lacks,
/// candidate-only tasks passed over.
fn name_order_means(scores: &PairedScores<'_>) -> (Vec<f64>, Vec<f64>, Option<String>) {
    let mut tasks: Vec<_> = scores.iter().collect();
    tasks.sort_unstable_by(|a, b| a.task.cmp(b.task));
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
    let (mut base, mut cand) = (Vec::new(), Vec::new());
    for t in tasks {
        match (t.baseline.is_empty(), t.candidate.is_empty()) {
            (false, true) => return (base, cand, Some(t.task.to_string())),
            (false, false) => {
                base.push(mean(t.baseline));
                cand.push(mean(t.candidate));
            }
            _ => {}
        }
    }
    (base, cand, None)
}

/// Whether `scorer` improves downwards: its direction as declared in the
/// trace (by ingestion, when it first appeared), which a policy may only
/// confirm; else the policy's; else the built-in default (anchors and
/// criterion timings down, everything else up).
///
/// # Errors
/// [`Error::Policy`] when the policy contradicts the trace's declaration.
pub(crate) fn lower_is_better(
    look: Look<'_>,
    scorer: &str,
    stated: Option<crate::Direction>,
) -> Result<bool> {
    use crate::Direction;
    let (view, q) = (look.view, look.q);
    let declared = ratchet_records::declared_direction(view, scorer, look.declared_until)?;
    Ok(match (declared, stated) {
        (Some((d, seq)), Some(b)) if d != b => {
            return Err(Error::Policy {
                field: format!("class.{}: direction of {scorer}", q.class),
                reason: format!(
                    "the policy says {b}, but the trace declared {scorer} {d} at seq {seq}; a policy can only confirm a scorer's direction"
                ),
            });
        }
        (Some((d, _)), _) => d == Direction::LowerIsBetter,
        (None, Some(b)) => b == Direction::LowerIsBetter,
        (None, None) => ratchet_records::direction_of(scorer) == Direction::LowerIsBetter,
    })
}

/// The effect estimate of a verdict ([`EffectEstimate`]): under the first
/// law a fixed-sample normal interval, as it was recorded; now an
/// always-valid one — the betting confidence sequence when the effects are
/// bounded in `[−width, width]` (`Bounded::Betting`), else the asymptotic
/// one tuned to `max_n`; under [`Law::Tuned`] a gaussian class that
/// declares its scores' range (`Bounded::Declared`) has the asymptotic one
/// cut to what the range allows (below), and the one-sided `bound` that
/// matches the decision is recorded beside the interval.
fn effect_estimate(
    xs: &[f64],
    law: Law,
    width: Bounded,
    max_n: u64,
    bound: Option<DecisionBound>,
) -> Result<Option<EffectEstimate>> {
    if xs.len() < 2 {
        return Ok(None);
    }
    let n = xs.len() as f64;
    let mean = xs.iter().sum::<f64>() / n;
    let var = xs.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / (n - 1.0);
    let betting = |w: f64, alpha: f64| -> Result<(f64, f64)> {
        let unit: Vec<f64> = xs
            .iter()
            .map(|d| ((d / w + 1.0) / 2.0).clamp(0.0, 1.0))
            .collect();
        let cs = crate::betting::betting_interval(&unit, alpha)?;
        Ok((w * (2.0 * cs.low - 1.0), w * (2.0 * cs.high - 1.0)))
    };
    let asymptotic = |alpha: f64| -> Result<(f64, f64)> {
        let cs = crate::noninferiority::ConfidenceSequence::new(alpha, max_n)?;
        let half = cs.half_width(xs.len() as u64, var.sqrt());
        Ok((mean - half, mean + half))
    };
    let (ci_low, ci_high, interval) = match (law, width) {
        (Law::NameOrder, _) => {
            let half = 1.959_963_984_540_054 * (var / n).sqrt();
            (mean - half, mean + half, None)
        }
        (_, Bounded::Betting(w)) => {
            let (low, high) = betting(w, EFFECT_ALPHA)?;
            (low, high, Some(EffectInterval::Betting))
        }
        // The asymptotic sequence knows nothing of a range: tuned to a
        // max_n of 20,000 it is 1.3–3.3 wide early on for differences that
        // cannot leave [−1, 1] (issue 40, finding 6). Scores in a declared
        // range make the betting sequence valid too. Taking whichever of
        // the two is narrower on the data would not be: the choice would
        // look at the outcomes, and the pair covers only at 1 − 2α by the
        // union bound. Each at α/2, both intersected, covers at 1 − α (the
        // union bound again, at every n at once), and the range itself
        // costs nothing: it holds surely.
        (law, Bounded::Declared(w)) if law >= Law::Tuned => {
            let (a_low, a_high) = asymptotic(EFFECT_ALPHA / 2.0)?;
            let (b_low, b_high) = betting(w, EFFECT_ALPHA / 2.0)?;
            let (low, high) = (a_low.max(b_low).max(-w), a_high.min(b_high).min(w));
            // Disjoint: one of the two missed (at most α of the time); the
            // betting one alone, which needs no asymptotics, is shown.
            let (low, high) = if low <= high {
                (low, high)
            } else {
                (b_low, b_high)
            };
            (low, high, Some(EffectInterval::Bounded))
        }
        (_, Bounded::Declared(_) | Bounded::No) => {
            let (low, high) = asymptotic(EFFECT_ALPHA)?;
            (low, high, Some(EffectInterval::Asymptotic))
        }
    };
    Ok(Some(EffectEstimate {
        n: xs.len(),
        estimate: mean,
        ci_low,
        ci_high,
        interval,
        bound: bound.filter(|_| law >= Law::Tuned),
    }))
}

/// What bounds the per-observation effects of a sequential test.
#[derive(Debug, Clone, Copy)]
enum Bounded {
    /// Bounded in `[−w, w]` by the test itself (pass-rate differences,
    /// game scores, betting's range): the betting confidence sequence.
    Betting(f64),
    /// Gaussian differences of scores in a range the policy declares,
    /// `[−w, w]` for its width `w` (since [`Law::Tuned`]).
    Declared(f64),
    /// Nothing known.
    No,
}

/// The effect interval's miss rate (a 95 % interval).
const EFFECT_ALPHA: f64 = 0.05;

/// What one sequential test made of the pairs.
struct Run {
    decision: TestState,
    llr: f64,
    n: u64,
    bounds: (f64, f64),
    /// The per-observation effect on the policy's scale, for the estimate.
    diffs: Vec<f64>,
    test: TestFigures,
    /// The one-sided bound that matches the decision ([`crate::bound`]).
    bound: Option<DecisionBound>,
}

/// Stage 3, the sequential test, fed the pairs in the order the law reads
/// ([`paired_firsts`]). Lower-is-better scorers are judged on negated
/// values, so "better" always means "larger" here.
fn sequential(look: Look<'_>, stages: &mut Vec<StageReport>) -> Step {
    let Look {
        q, versions, law, ..
    } = look;
    let policy = q.policy;
    match policy.test {
        TestKind::Benchmarks => return crate::bench_stage::benchmarks(look, stages),
        // Decided by the stages before: no stage of its own to report.
        TestKind::None => return Ok(None),
        _ => {}
    }
    let sign = if lower_is_better(look, &policy.scorer, policy.direction)? {
        -1.0
    } else {
        1.0
    };
    let (base, cand, mut waits_at) = paired_firsts(look, at_version(versions, &policy.scorer));
    if let Some(stop) = before_the_test(look, stages, &base, &cand, waits_at.as_deref())? {
        return Ok(Some(stop));
    }
    let (base, cand): (Vec<f64>, Vec<f64>) = (
        base.into_iter().map(|x| sign * x).collect(),
        cand.into_iter().map(|x| sign * x).collect(),
    );
    let run = match policy.test {
        TestKind::Bernoulli => bernoulli(q, sign, &base, &cand, law)?,
        TestKind::Gaussian => {
            // Paired differences need two pairs before a variance exists.
            if base.len() < 2 {
                push(
                    stages,
                    Stage::Sequential,
                    StageState::Open,
                    StageDetails::TooFewTasks(TooFewTasks {
                        test: Some(TestKind::Gaussian),
                        tasks: base.len(),
                    }),
                );
                return Ok(Some(Outcome::Continue {
                    expected_more: policy.gaussian_warmup(law),
                    reason: "fewer than two tasks scored on both sides".into(),
                }));
            }
            let run = gaussian(q, &base, &cand, law)?;
            if law != Law::NameOrder
                && run.decision == TestState::Promote
                && let Some((refusal, why)) = too_skewed_for_normal_theory(&run.diffs)
            {
                push(
                    stages,
                    Stage::Sequential,
                    StageState::Failed,
                    refused_or_too_few(law, TestKind::Gaussian, base.len(), refusal),
                );
                return reject(Stage::Sequential, RejectCause::MissingEvidence, why);
            }
            run
        }
        TestKind::Paired => paired(look, sign, &base, &cand, &mut waits_at)?,
        TestKind::Betting => betting(q, &base, &cand, law)?,
        // Judged above, before any pair of summaries is read.
        TestKind::Benchmarks | TestKind::None => return Ok(None),
    };
    what_the_run_says(look, stages, run, base.len(), waits_at)
}

/// What stops the sequential test before it reads a pair: no pair yet
/// (waiting, in an order fixed before outcomes; failing closed, in the
/// baseline's trace order), or a score outside the range the test's
/// validity rests on (refused).
fn before_the_test(
    look: Look<'_>,
    stages: &mut Vec<StageReport>,
    base: &[f64],
    cand: &[f64],
    waits_at: Option<&str>,
) -> Step {
    let (policy, law) = (look.q.policy, look.law);
    // A declared order waits at its first listed task until both sides
    // have scored it: no pair yet is the sequence not started, not
    // evidence missing (the earlier laws fail closed, as recorded).
    if base.is_empty()
        && let Some(order) = look.fixed_order()
        && let Some(task) = waits_at
    {
        push(
            stages,
            Stage::Sequential,
            StageState::Open,
            StageDetails::TooFewTasks(TooFewTasks {
                test: Some(policy.test),
                tasks: 0,
            }),
        );
        return Ok(Some(Outcome::Continue {
            expected_more: 1,
            reason: format!(
                "task {task}, first in {order}, is not yet scored on both sides, where the sequence waits"
            ),
        }));
    }
    if base.is_empty() {
        push(
            stages,
            Stage::Sequential,
            StageState::Failed,
            StageDetails::TooFewTasks(TooFewTasks {
                test: None,
                tasks: 0,
            }),
        );
        return reject(
            Stage::Sequential,
            RejectCause::MissingEvidence,
            format!(
                "no task of {} was scored on both sides (fails closed)",
                policy.scorer
            ),
        );
    }
    // A gaussian class's declared range (since the tuned law) bounds its
    // interval, so a score outside it is refused as betting refuses one.
    if policy.test == TestKind::Betting || (policy.range.is_some() && law >= Law::Tuned) {
        let [lo, hi] = policy.score_range();
        if let Some(&x) = base.iter().chain(cand).find(|x| !(lo..=hi).contains(*x)) {
            push(
                stages,
                Stage::Sequential,
                StageState::Failed,
                refused_or_too_few(
                    law,
                    policy.test,
                    base.len(),
                    Refusal::OutOfRange {
                        score: x,
                        low: lo,
                        high: hi,
                    },
                ),
            );
            let judge = if policy.test == TestKind::Betting {
                "the betting test cannot judge it"
            } else {
                "the interval it bounds would not hold"
            };
            return reject(
                Stage::Sequential,
                RejectCause::MissingEvidence,
                format!(
                    "a {} score of {x} is outside the policy's range [{lo}, {hi}]: {judge} (set `range` to the scores' true bounds, or choose another test)",
                    policy.scorer
                ),
            );
        }
    }
    Ok(None)
}

/// The sequential stage's report of a test that ran, and what it means:
/// reject, truncated, promote, or continue with the tasks it may still
/// need.
fn what_the_run_says(
    look: Look<'_>,
    stages: &mut Vec<StageReport>,
    run: Run,
    tasks_available: usize,
    waits_at: Option<String>,
) -> Step {
    let (policy, law) = (look.q.policy, look.law);
    let Run {
        decision,
        llr,
        n,
        bounds: (lower, upper),
        diffs,
        test,
        bound,
    } = run;
    // The per-observation effects are bounded for every kind but gaussian:
    // pass-rate differences and game scores in [−1, 1], betting's in the
    // range's width; gaussian's when the policy declares its range.
    let effect_width = match (policy.test, policy.range) {
        (TestKind::Gaussian, Some([lo, hi])) => Bounded::Declared(hi - lo),
        (TestKind::Gaussian | TestKind::Benchmarks | TestKind::None, _) => Bounded::No,
        (TestKind::Betting, _) => {
            let [lo, hi] = policy.score_range();
            Bounded::Betting(hi - lo)
        }
        (TestKind::Bernoulli | TestKind::Paired, _) => Bounded::Betting(1.0),
    };
    let wald = policy.boundaries()?;
    push(
        stages,
        Stage::Sequential,
        match decision {
            TestState::Promote => StageState::Passed,
            TestState::Continue => StageState::Open,
            _ => StageState::Failed,
        },
        StageDetails::Sequential(SequentialDetails {
            test,
            llr,
            n,
            lower,
            upper,
            wald_lower: wald.lower(),
            wald_upper: wald.upper(),
            effect: effect_estimate(&diffs, law, effect_width, policy.max_n, bound)?,
            max_n: policy.max_n,
            decision,
            tasks_available,
            stopped_at_missing_task: waits_at.clone(),
        }),
    );
    match decision {
        TestState::Reject => reject(
            Stage::Sequential,
            RejectCause::Measured,
            format!("LLR {llr:.3} reached the lower boundary {lower:.3} after {n} observations"),
        ),
        TestState::Truncated => reject(
            Stage::Sequential,
            if law == Law::NameOrder {
                RejectCause::Measured
            } else {
                RejectCause::Truncated
            },
            format!(
                "not shown better within {} observations (truncated at LLR {llr:.3})",
                policy.max_n
            ),
        ),
        TestState::Continue => {
            // Rough: tasks to reach the nearer boundary at the average drift so far.
            let drift = if n > 0 { llr / n as f64 } else { 0.0 };
            let to_go = if drift > 0.0 {
                (upper - llr) / drift
            } else if drift < 0.0 {
                (lower - llr) / drift
            } else {
                (policy.max_n - n) as f64
            };
            let expected_more =
                (to_go.ceil().max(1.0) as u64).min(policy.max_n.saturating_sub(n).max(1));
            Ok(Some(Outcome::Continue {
                expected_more,
                reason: match &waits_at {
                    Some(task) if let Some(order) = look.fixed_order() => format!(
                        "LLR {llr:.3} between {lower:.3} and {upper:.3} after {n} observations; task {task}, next in {order}, is not yet scored on both sides, where the sequence waits"
                    ),
                    Some(task) => format!(
                        "LLR {llr:.3} between {lower:.3} and {upper:.3} after {n} observations; the candidate has no score yet on task {task}, where the sequence waits"
                    ),
                    None => format!(
                        "LLR {llr:.3} between {lower:.3} and {upper:.3} after {n} observations"
                    ),
                },
            }))
        }
        TestState::Promote => Ok(None),
    }
}

/// Paired pass/fail: only discordant pairs carry evidence. Under "no
/// difference" the candidate is the one that passed with probability exactly
/// ½, whatever the pass rates: the null is simple, so Wald's bounds hold as
/// for a known p0.
fn bernoulli(q: &Question<'_>, sign: f64, base: &[f64], cand: &[f64], law: Law) -> Result<Run> {
    let policy = q.policy;
    let thr = sign * policy.pass_threshold.unwrap_or(1.0);
    let mut test = policy.bernoulli_test()?;
    let (theta0, theta1) = policy.discordant_hypotheses();
    let (mut cand_only, mut base_only, mut concordant) = (0u64, 0u64, 0u64);
    let mut diffs = Vec::new();
    for (&b, &c) in base.iter().zip(cand) {
        if test.decision().is_final() {
            break;
        }
        diffs.push(f64::from(u8::from(c >= thr)) - f64::from(u8::from(b >= thr)));
        // (`recorded_bernoulli_path` replays exactly this loop.)
        match (b >= thr, c >= thr) {
            (false, true) => {
                cand_only += 1;
                test.observe(true);
            }
            (true, false) => {
                base_only += 1;
                test.observe(false);
            }
            _ => concordant += 1,
        }
    }
    let b = test.boundaries();
    let bound = bernoulli_bound(&test, diffs.len(), policy);
    Ok(Run {
        decision: test.decision(),
        llr: test.llr(),
        n: test.n(),
        bounds: (b.lower(), b.upper()),
        diffs,
        bound,
        test: TestFigures::Bernoulli {
            design: "discordant pairs".into(),
            effect_measure: "pass-rate difference (candidate − baseline)".into(),
            theta0,
            theta1,
            pass_threshold: thr,
            lower_is_better: sign < 0.0 && law != Law::NameOrder,
            candidate_only_passed: cand_only,
            baseline_only_passed: base_only,
            both_or_neither: concordant,
        },
    })
}

/// The largest sample skewness |g1| of the paired differences at which the
/// gaussian test's promote is trusted. Its plug-in variance assumes
/// roughly normal differences; rare large losses (differences of +0.05 on
/// 90 % of tasks and −0.45 on 10 %, mean 0, g1 ≈ −2.7) make it promote at
/// 3× α, mostly before the first loss appears. Normal differences exceed
/// 1.5 at the sizes a promote happens at (≥ 20, sd of g1 ≈ √(6/n) ≤ 0.55)
/// in about 1 % of promotes; skewed ones, or constant ones, almost always.
const GAUSSIAN_MAX_SKEW: f64 = 1.5;

/// Why the gaussian test cannot judge these differences (`None`: it can):
/// they are constant (no variance to judge by) or skewed beyond
/// [`GAUSSIAN_MAX_SKEW`]. Its promote is then refused, and the reason says
/// which test can judge them.
fn too_skewed_for_normal_theory(diffs: &[f64]) -> Option<(Refusal, String)> {
    let n = diffs.len() as f64;
    let mean = diffs.iter().sum::<f64>() / n;
    let m2 = diffs.iter().map(|d| (d - mean).powi(2)).sum::<f64>() / n;
    let m3 = diffs.iter().map(|d| (d - mean).powi(3)).sum::<f64>() / n;
    let refuse = |refusal: Refusal, what: String| {
        Some((
            refusal,
            format!(
                "the gaussian test cannot judge these paired differences: {what} over {} tasks; its variance estimate assumes roughly normal differences. Use test = \"betting\" (valid for any bounded scores)",
                diffs.len()
            ),
        ))
    };
    if m2 <= 1e-12 * mean * mean {
        return refuse(Refusal::NoSpread, "they are all equal".into());
    }
    let skewness = m3 / m2.powf(1.5);
    (skewness.abs() > GAUSSIAN_MAX_SKEW)
        .then(|| {
            refuse(
                Refusal::Skewed {
                    skewness,
                    limit: GAUSSIAN_MAX_SKEW,
                },
                format!("their skewness is {skewness:+.2} (beyond ±{GAUSSIAN_MAX_SKEW})"),
            )
        })
        .flatten()
}

/// What a sequential stage that refused its scores records: since
/// [`Law::NameSweep`] the refusal and why ([`Refused`]); before, as those
/// laws recorded it, the count of tasks ([`TooFewTasks`]) — which said
/// "N tasks scored" of a stage that had tasks enough.
fn refused_or_too_few(law: Law, test: TestKind, tasks: usize, because: Refusal) -> StageDetails {
    if law >= Law::NameSweep {
        StageDetails::Refused(Refused {
            test,
            tasks,
            because,
        })
    } else {
        StageDetails::TooFewTasks(TooFewTasks {
            test: Some(test),
            tasks,
        })
    }
}

/// Feeds the paired differences `cand − base` to `t` until it stops;
/// returns the differences it read.
fn feed_differences(
    t: &mut impl crate::sprt::SequentialTest<Observation = f64>,
    base: &[f64],
    cand: &[f64],
) -> Result<Vec<f64>> {
    let mut diffs = Vec::new();
    for (&b, &c) in base.iter().zip(cand) {
        diffs.push(c - b);
        if t.update(c - b)?.is_final() {
            break;
        }
    }
    Ok(diffs)
}

/// Paired differences: the task's own difficulty cancels, and the null
/// (mean difference 0) does not depend on an estimated baseline mean.
fn gaussian(q: &Question<'_>, base: &[f64], cand: &[f64], law: Law) -> Result<Run> {
    let policy = q.policy;
    let mut test = policy.gaussian_test(law)?;
    let diffs = feed_differences(&mut test, base, cand)?;
    let bounds = test.boundaries();
    let bound = gaussian_bound(&test, policy);
    Ok(Run {
        decision: test.decision(),
        llr: test.llr(),
        n: test.n(),
        bounds: (bounds.lower(), bounds.upper()),
        diffs,
        bound,
        test: TestFigures::Gaussian {
            design: "paired differences".into(),
            effect_measure: "mean difference (candidate − baseline)".into(),
            mu0: 0.0,
            mu1: policy.gap.unwrap_or_default(),
            variance: test.variance(),
        },
    })
}

/// Bounded paired differences, judged by betting: valid for any
/// distribution of the scores in the policy's range, however often the gate
/// is asked.
fn betting(q: &Question<'_>, base: &[f64], cand: &[f64], law: Law) -> Result<Run> {
    let policy = q.policy;
    let mut test = policy.betting_test(law)?;
    let diffs = feed_differences(&mut test, base, cand)?;
    let bound = betting_bound(&test, &diffs, policy)?;
    Ok(Run {
        decision: test.decision(),
        llr: test.llr(),
        n: test.n(),
        bounds: (-test.reject_bound(), test.promote_bound()),
        diffs,
        bound,
        test: TestFigures::Betting {
            design: if law >= Law::Tuned {
                "paired differences, betting e-process with bets tuned to the gap (Waudby-Smith & Ramdas 2024)"
            } else {
                "paired differences, betting e-process (Waudby-Smith & Ramdas 2024)"
            }
            .into(),
            effect_measure: "mean difference (candidate − baseline)".into(),
            range: policy.score_range(),
            gap: test.gap(),
            log_capital_promote: test.log_capital_promote(),
            log_capital_reject: test.log_capital_reject(),
            promote_bound: test.promote_bound(),
            reject_bound: test.reject_bound(),
        },
    })
}

/// The bound matching a promote (lower, at α, against `null`) or a
/// reject (upper, at β, against `gap`) of a test run under `p`.
fn decision_bound(
    decision: TestState,
    p: &crate::ClassPolicy,
    value: f64,
    null: f64,
    gap: f64,
) -> Option<DecisionBound> {
    let (side, level, against) = match decision {
        TestState::Promote => (BoundSide::Lower, p.alpha, null),
        TestState::Reject => (BoundSide::Upper, p.beta, gap),
        TestState::Continue | TestState::Truncated => return None,
    };
    Some(DecisionBound {
        side,
        level,
        value,
        against,
    })
}

/// The discordant-pair test inverted ([`crate::bound::shifted`]): θ0 + m
/// against θ1 + m on the same wins and losses, read as a pass-rate
/// difference through the share of the `pairs` read that were discordant
/// (a bound on the difference *given* which tasks were discordant: the
/// test conditions on them, and `2θ − 1` times that share is the expected
/// difference over the pairs read).
fn bernoulli_bound(
    t: &crate::sprt::BernoulliSprt,
    pairs: usize,
    p: &crate::ClassPolicy,
) -> Option<DecisionBound> {
    let (theta0, theta1) = t.hypotheses();
    let (wins, losses) = (t.successes() as f64, (t.n() - t.successes()) as f64);
    let llr = |m: f64| {
        if m == 0.0 {
            return t.llr();
        }
        wins * ((theta1 + m) / (theta0 + m)).ln()
            + losses * ((1.0 - theta1 - m) / (1.0 - theta0 - m)).ln()
    };
    let bounds = t.boundaries();
    let span = (1e-9 - theta0, 1.0 - theta1 - 1e-9);
    let m = crate::bound::shifted(
        llr,
        t.decision(),
        (bounds.lower(), bounds.upper()),
        span,
        1e-3,
    )?;
    let share = t.n() as f64 / pairs.max(1) as f64;
    let theta = match t.decision() {
        TestState::Promote => theta0 + m,
        _ => theta1 + m,
    };
    decision_bound(
        t.decision(),
        p,
        share * (2.0 * theta - 1.0),
        share * (2.0 * theta0 - 1.0),
        share * (2.0 * theta1 - 1.0),
    )
}

/// The paired-difference SPRT inverted: its LLR `(gap/σ̂²)(S − n(m +
/// gap/2))` for means m against m + gap is linear in m, so the edge is
/// where it meets the boundary, in closed form.
fn gaussian_bound(t: &GaussianSprt, p: &crate::ClassPolicy) -> Option<DecisionBound> {
    let v = t.variance().filter(|v| *v > 0.0)?;
    let gap = p.gap.unwrap_or_default();
    let n = t.n() as f64;
    let bounds = t.boundaries();
    let value = match t.decision() {
        TestState::Promote => (t.llr() - bounds.upper()) * v / (gap * n),
        TestState::Reject => (t.llr() - bounds.lower()) * v / (gap * n) + gap,
        TestState::Continue | TestState::Truncated => return None,
    };
    decision_bound(t.decision(), p, value, 0.0, gap)
}

/// The betting test inverted: the same capitals at every hypothesised
/// mean ([`crate::betting_lower_bound`], [`crate::betting_upper_bound`]),
/// probed first at the test's own.
fn betting_bound(
    t: &crate::BettingTest,
    diffs: &[f64],
    p: &crate::ClassPolicy,
) -> Result<Option<DecisionBound>> {
    let w = t.width();
    let unit: Vec<f64> = diffs.iter().map(|&d| t.on_unit_scale(d)).collect();
    let value = match t.decision() {
        TestState::Promote => {
            crate::betting::betting_lower_bound(&unit, p.alpha, 0.5, t.tuned_shift())?
        }
        TestState::Reject => {
            let m1 = t.on_unit_scale(t.gap());
            crate::betting::betting_upper_bound(&unit, p.beta, m1, t.tuned_shift())?
        }
        TestState::Continue | TestState::Truncated => return Ok(None),
    };
    Ok(decision_bound(
        t.decision(),
        p,
        w * (2.0 * value - 1.0),
        0.0,
        t.gap(),
    ))
}

/// The paired GSPRT inverted: both Elo hypotheses shifted together, the
/// edge read as a score per game (`2s − 1`, the effect's measure) under
/// the GSPRT's own maximum-likelihood distribution at that Elo. Above the
/// null's score (0 for an Elo of 0) exactly when the test promoted.
fn paired_bound(t: &crate::PairedGsprt, p: &crate::ClassPolicy) -> Option<DecisionBound> {
    let elo = t.elo();
    let counts = t.counts();
    let llr = |m: f64| {
        if m == 0.0 {
            return t.llr();
        }
        crate::gsprt::llr_counts(
            counts,
            crate::EloBounds {
                model: elo.model,
                elo0: elo.elo0 + m,
                elo1: elo.elo1 + m,
            },
        )
    };
    let span = (-2000.0 - elo.elo0, 2000.0 - elo.elo1);
    let m = crate::bound::shifted(llr, t.decision(), t.effective_boundaries(), span, 1.0)?;
    let effect = |e: f64| 2.0 * crate::gsprt::expected_score(counts, elo.model, e) - 1.0;
    let at = match t.decision() {
        TestState::Promote => elo.elo0 + m,
        _ => elo.elo1 + m,
    };
    decision_bound(
        t.decision(),
        p,
        effect(at),
        effect(elo.elo0),
        effect(elo.elo1),
    )
}

/// A game's class from one side's score against the other's (judged
/// scale): 0 a loss for the candidate, 1 a draw, 2 a win.
fn class_of(b: f64, c: f64) -> usize {
    match c.partial_cmp(&b) {
        Some(std::cmp::Ordering::Greater) => 2,
        Some(std::cmp::Ordering::Equal) => 1,
        _ => 0,
    }
}

/// The outcome classes the paired GSPRT reads, in order: per task
/// (trinomial, from the pairs `base`/`cand` on the judged scale) or run i
/// against run i (pentanomial, read from the view).
fn game_classes(
    look: Look<'_>,
    pairing: Pairing,
    sign: f64,
    base: &[f64],
    cand: &[f64],
    waits_at: &mut Option<String>,
) -> Vec<usize> {
    let Look {
        q, versions, law, ..
    } = look;
    let policy = q.policy;
    match pairing {
        Pairing::Trinomial => base
            .iter()
            .zip(cand)
            .map(|(&b, &c)| class_of(b, c))
            .collect(),
        // Two runs per task: run i against run i, the pair's total 0..=4,
        // in the baseline's order (the declared order, when the class
        // declares one) and up to the first task either side has not yet
        // run twice (the path only ever extends).
        Pairing::Pentanomial => {
            // Run i against run i, the pair's total 0..=4.
            let pair_class = |t: PairedTask<'_>| {
                class_of(sign * t.baseline[0], sign * t.candidate[0])
                    + class_of(sign * t.baseline[1], sign * t.candidate[1])
            };
            let mut classes = Vec::new();
            let scores = look.paired(at_version(versions, &policy.scorer));
            if let Some(ids) = look.declared() {
                for (id, t) in ids.iter().zip(in_declared_order(&scores, ids)) {
                    match t.filter(|t| t.baseline.len() >= 2 && t.candidate.len() >= 2) {
                        Some(t) => classes.push(pair_class(t)),
                        None => {
                            *waits_at = Some(id.clone());
                            break;
                        }
                    }
                }
                return classes;
            }
            if law >= Law::NameSweep {
                let (read, waits) = name_swept(&scores, 2);
                classes.extend(read.into_iter().map(pair_class));
                *waits_at = waits;
                return classes;
            }
            let mut tasks: Vec<_> = scores.iter().collect();
            if law == Law::NameOrder {
                // The first law: name order, tasks lacking two runs skipped.
                tasks.sort_unstable_by(|a, b| a.task.cmp(b.task));
                tasks.retain(|t| t.baseline.len() >= 2 && t.candidate.len() >= 2);
            }
            for t in tasks {
                if t.baseline.is_empty() {
                    break;
                }
                if t.baseline.len() < 2 || t.candidate.len() < 2 {
                    *waits_at = Some(t.task.to_string());
                    break;
                }
                classes.push(pair_class(t));
            }
            classes
        }
    }
}

/// The GSPRT on game outcomes: per task (trinomial) or run i against run i
/// (pentanomial).
fn paired(
    look: Look<'_>,
    sign: f64,
    base: &[f64],
    cand: &[f64],
    waits_at: &mut Option<String>,
) -> Result<Run> {
    let q = look.q;
    let policy = q.policy;
    let mut test = policy.paired_test()?;
    let elo = test.elo();
    let pairs = game_classes(look, test.pairing(), sign, base, cand, waits_at);
    let half = (test.pairing().classes() - 1) as f64 / 2.0;
    let mut diffs = Vec::new();
    for class in pairs {
        // The pair's score minus a draw's, per game: −1 … +1.
        diffs.push((class as f64 - half) / half);
        if test.update(class)?.is_final() {
            break;
        }
    }
    let labels: &[&'static str] = match test.pairing() {
        Pairing::Trinomial => &["losses", "draws", "wins"],
        Pairing::Pentanomial => &["LL", "LD", "DD_or_WL", "WD", "WW"],
    };
    let counts = labels
        .iter()
        .map(|&label| Cow::Borrowed(label))
        .zip(test.counts().iter().copied())
        .collect();
    let bound = paired_bound(&test, policy);
    Ok(Run {
        decision: test.decision(),
        llr: test.llr(),
        n: test.n(),
        bounds: test.effective_boundaries(),
        diffs,
        bound,
        test: TestFigures::Paired {
            pairing: test.pairing(),
            effect_measure: "score − ½ per game (wins count +½, losses −½)".into(),
            elo_model: elo.model,
            elo0: elo.elo0,
            elo1: elo.elo1,
            counts,
        },
    })
}

/// Stage 4, one guardrail: shown non-inferior, or the verdict stops here
/// (intersection–union over all guardrails).
fn guardrail(look: Look<'_>, g: &Guardrail, used: usize, stages: &mut Vec<StageReport>) -> Step {
    let Look {
        q, versions, law, ..
    } = look;
    let policy = q.policy;
    let margin = match g.margin_kind {
        MarginKind::Absolute => Margin::Absolute(g.margin),
        MarginKind::Relative => Margin::Relative(g.margin),
    };
    // The guardrail's direction must agree with the scorer's declared one.
    lower_is_better(look, &g.scorer, Some(g.direction))?;
    let test = NonInferiority::new(g.direction, margin, policy.alpha)?;
    let (gb, gc, waits_at) = paired_firsts(look, at_version(versions, &g.scorer));
    let stage = Stage::Guardrail(g.scorer.clone());
    // A guardrail is judged on at least the tasks the primary scorer
    // pairs, in the same order: a task among them the candidate has no
    // score of makes it wait (a candidate that leaves out its costly tasks
    // is not judged on the cheap ones).
    if law != Law::NameOrder
        && gb.len() < used
        && let Some(task) = waits_at
    {
        push(
            stages,
            stage.clone(),
            StageState::Open,
            StageDetails::TooFewTasks(TooFewTasks {
                test: None,
                tasks: gb.len(),
            }),
        );
        // (The words of a verdict are its bytes: the wait of the earlier
        // laws is said as it always was.)
        let reason = if let Some(order) = look.fixed_order() {
            format!(
                "guardrail {}: task {task}, next in {order}, is not yet scored on both sides, where the guardrail waits",
                g.scorer
            )
        } else {
            format!(
                "guardrail {}: the candidate has no score yet on task {task}, where the guardrail waits",
                g.scorer
            )
        };
        return Ok(Some(Outcome::Continue {
            expected_more: 1,
            reason,
        }));
    }
    if gb.len() < 2 {
        push(
            stages,
            stage.clone(),
            StageState::Failed,
            StageDetails::TooFewTasks(TooFewTasks {
                test: None,
                tasks: gb.len(),
            }),
        );
        return reject(
            stage,
            RejectCause::MissingEvidence,
            format!(
                "guardrail {}: fewer than two tasks scored on both sides (fails closed)",
                g.scorer
            ),
        );
    }
    match g.method {
        GuardrailMethod::Welch => {
            let r = test.welch(
                &SampleStats::from_values(&gb)?,
                &SampleStats::from_values(&gc)?,
            )?;
            push(
                stages,
                stage.clone(),
                StageState::from(r.non_inferior),
                StageDetails::Guardrail(GuardrailDetails {
                    method: g.method,
                    margin,
                    result: GuardrailResult::Welch(r),
                }),
            );
            if !r.non_inferior {
                return reject(
                    stage,
                    RejectCause::Measured,
                    format!(
                        "guardrail {}: not shown non-inferior (p = {:.4} ≥ α = {})",
                        g.scorer, r.p_value, policy.alpha
                    ),
                );
            }
        }
        GuardrailMethod::Sequence => {
            let r = test.sequential(&gb, &gc, policy.max_n)?;
            push(
                stages,
                stage.clone(),
                if r.non_inferior {
                    StageState::Passed
                } else {
                    StageState::Open
                },
                StageDetails::Guardrail(GuardrailDetails {
                    method: g.method,
                    margin,
                    result: GuardrailResult::Sequence(r),
                }),
            );
            if !r.non_inferior {
                return Ok(Some(Outcome::Continue {
                    expected_more: (r.n).max(1),
                    reason: format!(
                        "guardrail {}: upper bound {:.4} not yet below 0",
                        g.scorer, r.upper_bound
                    ),
                }));
            }
        }
    }
    Ok(None)
}

/// The LLR after each discordant pair of a recorded bernoulli verdict
/// (`scorer` its class's primary scorer), recomputed from `view` by the
/// gate's own reading: the pairs of its law in its order, on the judged
/// scale (negated for a lower-is-better scorer), the SPRT's own
/// increments. What a report draws; `None` for a verdict whose sequential
/// stage is not a bernoulli test that ran.
///
/// # Errors
/// [`Error::Trace`] for a trace error; [`Error::InvalidParameter`] for
/// recorded θ's no SPRT takes.
pub fn recorded_bernoulli_path(
    view: &Verified,
    verdict: &Verdict,
    scorer: &str,
) -> Result<Option<Vec<f64>>> {
    let Some(fig) = verdict.sequential() else {
        return Ok(None);
    };
    let TestFigures::Bernoulli {
        theta0,
        theta1,
        pass_threshold: thr,
        lower_is_better,
        ..
    } = fig.test
    else {
        return Ok(None);
    };
    let (n, at, law) = (fig.n, verdict.trace.size, verdict.law);
    // Since the third law the pairs are the trusted producers' only, as
    // the class's pinned policy names them; a verdict taken under a policy
    // that is not the pin in force then is not redrawn from here.
    let pinned = if law >= Law::Attributed {
        crate::pin::pinned_policy(view, &verdict.class, at)?
            .filter(|p| p.hash == verdict.policy_hash)
    } else {
        None
    };
    let sources = match (&pinned, law >= Law::Attributed) {
        (Some(p), true) => p.policy.sources(&verdict.class)?,
        // A verdict that set nothing aside read everyone's evidence.
        (None, true) if !verdict.set_aside.is_empty() => return Ok(None),
        _ => [Sources::everyone(), Sources::everyone()],
    };
    // A declared order is the pinned policy's list: a verdict that read
    // one under a policy not pinned then is not redrawn from here.
    let declared = match (&verdict.order, &pinned) {
        (Some(TaskOrder::Declared { .. }), Some(p)) => p.policy.declared_tasks(),
        (Some(TaskOrder::Declared { .. }), None) => return Ok(None),
        _ => None,
    };
    let scorer = scorer.to_string();
    // The orientation the gate judged on: recorded since the second law
    // (`false` is written as nothing); before it, the scorer's declared
    // (or default) direction.
    let lower = if lower_is_better || law != Law::NameOrder {
        lower_is_better
    } else {
        ratchet_records::declared_direction(view, &scorer, at)?
            .map(|(d, _)| d)
            .unwrap_or_else(|| ratchet_records::direction_of(&scorer))
            == crate::Direction::LowerIsBetter
    };
    let sign = if lower { -1.0 } else { 1.0 };
    let question_scorer = at_version(&verdict.scorer_versions, &scorer);
    let (scores, _) = view.paired_scores_from(
        &verdict.baseline,
        &verdict.candidate,
        question_scorer,
        at,
        [&sources[0], &sources[1]],
    );
    let (base, cand, _) = pairs_under(&scores, law, declared);
    let mut t = crate::BernoulliSprt::new(theta0, theta1, crate::Boundaries::new(0.05, 0.05)?)?;
    let mut path = Vec::new();
    for (&b, &c) in base.iter().zip(&cand) {
        if t.n() >= n {
            break;
        }
        let (b, c) = (sign * b, sign * c);
        if (b >= thr) != (c >= thr) {
            t.observe(c >= thr);
            path.push(t.llr());
        }
    }
    Ok(Some(path))
}

/// A recorded verdict's sequential statistic after each observation,
/// recomputed by the gate's own test (what a report draws):
/// [`recorded_path`].
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct RecordedPath {
    /// The test that judged.
    pub test: TestKind,
    /// After each observation, the statistic judged against
    /// [`RecordedPath::upper`]: the log-likelihood ratio (bernoulli,
    /// gaussian, paired), which also meets [`RecordedPath::lower`] to
    /// reject; for betting, ln K⁺ — the log capital betting on an
    /// improvement, which promotes at ln(1/α).
    pub promote: Vec<f64>,
    /// Betting only: −ln K⁻ after each observation, the log capital betting
    /// on less than the gap, negated, so that it rejects on reaching
    /// [`RecordedPath::lower`] = −ln(1/β) as an LLR would.
    pub reject: Option<Vec<f64>>,
    /// The reject boundary as applied at the stop.
    pub lower: f64,
    /// The promote boundary as applied at the stop.
    pub upper: f64,
    /// The first observation (1-based) at which the boundaries apply: the
    /// gaussian test's warm-up, else 1.
    pub judged_from: u64,
    /// What one observation is (`"discordant pair"`, `"task"`, `"game
    /// pair"`, …), for an axis.
    pub observation: &'static str,
}

/// The path of the sequential statistic of a recorded verdict taken
/// under `policy`, recomputed from `view` as the trace stood at the
/// verdict: the pairs of its law in its order, on the judged scale
/// (negated for a lower-is-better scorer), fed to the test `policy`
/// builds, stopping where the verdict stopped. `None` when the verdict's
/// sequential stage ran no test (too few tasks, a score outside the
/// betting range, an earlier stage stopped it).
///
/// # Errors
/// [`Error::Policy`] if `policy` is not the one the verdict was taken
/// under (its hash differs from the recorded `policy_hash`);
/// [`Error::Trace`] for a trace error.
pub fn recorded_path(
    view: &Verified,
    verdict: &Verdict,
    policy: &crate::ClassPolicy,
) -> Result<Option<RecordedPath>> {
    let Some(fig) = verdict.sequential() else {
        return Ok(None);
    };
    let (n, lower, upper) = (fig.n, fig.lower, fig.upper);
    if verdict.policy_hash != policy.hash() {
        return Err(Error::Policy {
            field: "policy_hash".into(),
            reason: format!(
                "the verdict was taken under policy {}, not under the one given ({})",
                verdict.policy_hash,
                policy.hash()
            ),
        });
    }
    let (at, law, versions) = (verdict.trace.size, verdict.law, &verdict.scorer_versions);
    let q = Question {
        class: &verdict.class,
        policy,
        baseline: &verdict.baseline,
        candidate: &verdict.candidate,
        checkpoint: None,
        allow_unpinned: true,
    };
    let (sources, declared_until) = if law >= Law::Attributed {
        let pin = crate::pin::pinned_policy(view, &verdict.class, at)?;
        (policy.sources(&verdict.class)?, pin.map_or(at, |p| p.seq))
    } else {
        ([Sources::everyone(), Sources::everyone()], at)
    };
    let set_aside = RefCell::new(Vec::new());
    let undeclared = RefCell::new(Vec::new());
    let look = Look {
        view,
        q: &q,
        at,
        versions,
        law,
        sources: &sources,
        declared_until,
        set_aside: &set_aside,
        undeclared: &undeclared,
    };
    let p = policy;
    // The orientation the gate judged on: recorded by bernoulli verdicts
    // since the second law (absent: higher is better); else the scorer's
    // direction as `sequential` read it.
    let recorded_lower = matches!(
        fig.test,
        TestFigures::Bernoulli {
            lower_is_better: true,
            ..
        }
    );
    let lower_better = if recorded_lower {
        true
    } else if p.test == TestKind::Bernoulli && law != Law::NameOrder {
        false
    } else {
        lower_is_better(look, &p.scorer, p.direction)?
    };
    let sign = if lower_better { -1.0 } else { 1.0 };
    let (base, cand, _) = paired_firsts(look, at_version(versions, &p.scorer));
    let (base, cand): (Vec<f64>, Vec<f64>) = (
        base.into_iter().map(|x| sign * x).collect(),
        cand.into_iter().map(|x| sign * x).collect(),
    );
    let mut promote = Vec::new();
    let mut reject = None;
    let mut judged_from = 1;
    let observation = match p.test {
        // Each benchmark has its own path; no one statistic to draw (and a
        // class without a test has none at all).
        TestKind::Benchmarks | TestKind::None => return Ok(None),
        TestKind::Bernoulli => {
            // As `bernoulli`: only discordant pairs are observations.
            let thr = sign * p.pass_threshold.unwrap_or(1.0);
            let mut t = p.bernoulli_test()?;
            for (&b, &c) in base.iter().zip(&cand) {
                if t.decision().is_final() || t.n() >= n {
                    break;
                }
                if (b >= thr) != (c >= thr) {
                    t.observe(c >= thr);
                    promote.push(t.llr());
                }
            }
            "discordant pair"
        }
        TestKind::Gaussian => {
            let mut t = p.gaussian_test(law)?;
            judged_from = p.gaussian_warmup(law);
            for (&b, &c) in base.iter().zip(&cand) {
                if t.n() >= n {
                    break;
                }
                let d = t.update(c - b)?;
                promote.push(t.llr());
                if d.is_final() {
                    break;
                }
            }
            "task"
        }
        TestKind::Betting => {
            let mut t = p.betting_test(law)?;
            let mut against = Vec::new();
            for (&b, &c) in base.iter().zip(&cand) {
                if t.n() >= n {
                    break;
                }
                let d = t.update(c - b)?;
                promote.push(t.log_capital_promote());
                against.push(-t.log_capital_reject());
                if d.is_final() {
                    break;
                }
            }
            reject = Some(against);
            "task"
        }
        TestKind::Paired => {
            let mut t = p.paired_test()?;
            let mut waits = None;
            for class in game_classes(look, t.pairing(), sign, &base, &cand, &mut waits) {
                if t.n() >= n {
                    break;
                }
                let d = t.update(class)?;
                promote.push(t.llr());
                if d.is_final() {
                    break;
                }
            }
            match t.pairing() {
                Pairing::Trinomial => "task (one game)",
                Pairing::Pentanomial => "task (a pair of games)",
            }
        }
    };
    Ok(Some(RecordedPath {
        test: p.test,
        promote,
        reject,
        lower,
        upper,
        judged_from,
        observation,
    }))
}

#[cfg(test)]
mod tests {
    use rand::{Rng, SeedableRng, rngs::StdRng};
    use ratchet_trace::{CommitId, Score, Store, StoreOptions, VerifyOptions};

    use super::*;
    use crate::{Policy, Question};

    fn commit(i: u8) -> CommitId {
        CommitId::parse(&format!("{i:02x}").repeat(20)).expect("commit")
    }

    /// A path is the gate's own test replayed: for every kind it has one
    /// point per observation the verdict used and ends at the statistic the
    /// verdict recorded (betting: both capitals); and a policy other than
    /// the verdict's is refused rather than drawn.
    #[test]
    fn the_path_of_every_test_kind_ends_at_its_recorded_statistic() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut store =
            Store::create(dir.path().join("s"), StoreOptions::default()).expect("store");
        let (base, cand) = (commit(1), commit(2));
        let mut rng = StdRng::seed_from_u64(3);
        let mut scores = Vec::new();
        // Scores on a coarse grid (ties, wins and losses for the paired
        // test), the candidate better by about 0.1.
        for task in 0..1500 {
            let b = f64::from(rng.random_range(0u8..=10)) / 10.0;
            let c = (b + f64::from(rng.random_range(0u8..=4)) / 10.0 - 0.1).clamp(0.0, 1.0);
            for (commit, v) in [(&base, b), (&cand, c)] {
                scores.push(Score::new(commit.clone(), format!("t{task:05}"), "acc", v));
            }
        }
        store.record_scores(&scores, "test").expect("scores");
        let kinds = [
            ("bernoulli", "pass_threshold = 0.5\ngap = 0.3"),
            ("gaussian", "gap = 0.1"),
            ("betting", "gap = 0.1"),
            ("paired", "elo0 = 0.0\nelo1 = 30.0"),
        ];
        for (kind, extra) in kinds {
            let text = format!(
                "[class.c]\nscorer = \"acc\"\ntest = \"{kind}\"\nalpha = 0.05\nbeta = 0.1\nmax_n = 1400\n{extra}\n"
            );
            let policy = Policy::parse(&text).expect("policy");
            let class = policy.class("c").expect("class");
            let q = Question {
                class: "c",
                policy: class,
                baseline: &base,
                candidate: &cand,
                checkpoint: None,
                allow_unpinned: false,
            };
            let v = crate::decide(&mut store, &q).expect("decide");
            let view = store.verified(&VerifyOptions::default()).expect("view");
            let path = recorded_path(&view, &v, class)
                .expect("path")
                .expect("a sequential test ran");
            let fig = v.sequential().expect("sequential stage");
            assert_eq!(path.promote.len() as u64, fig.n, "{kind}: {fig:?}");
            let last = |xs: &[f64]| xs.last().copied().unwrap_or(f64::NAN);
            let close = |a: f64, b: f64| (a - b).abs() < 1e-9;
            match fig.test {
                TestFigures::Betting {
                    log_capital_promote,
                    log_capital_reject,
                    ..
                } => {
                    let reject = path.reject.as_deref().expect("betting has two capitals");
                    assert!(close(last(&path.promote), log_capital_promote));
                    assert!(close(last(reject), -log_capital_reject));
                }
                _ => assert!(
                    close(last(&path.promote), fig.llr),
                    "{kind}: {:?} vs {}",
                    path.promote.last(),
                    fig.llr
                ),
            }
            assert!(close(path.upper, fig.upper));
            assert_ne!(v.outcome.status(), crate::GateStatus::Continue, "{kind}");
            // Another class policy is not the one the verdict was taken under.
            let other = Policy::parse(&text.replace("beta = 0.1", "beta = 0.2")).expect("policy");
            assert!(matches!(
                recorded_path(&view, &v, other.class("c").expect("class")),
                Err(Error::Policy { .. })
            ));
        }
    }
}
