//! The law, applied to the store: `decide` reads the trace itself (never a
//! number from its caller), verifies it first, runs the stages in order —
//! required tests → invariants → sequential test → guardrails — and returns
//! a [`Verdict`] that it appends to the trace as a `decision` event.
//! [`verdict_at`] recomputes any past verdict from the trace as it stood,
//! byte for byte.
//!
//! # Error rates as wired
//!
//! Every test kind is paired task by task (see [`TestKind`]). Measured by
//! `tests/it/error_rates.rs` — `decide` itself on a fresh store per run,
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

use std::borrow::Cow;

use serde::{Deserialize, Serialize};

use ratchet_trace::{
    AsOf, Checkpoint, CommitId, EventDraft, Hash, Ledger, Receipt, ReservedKind, ScorerRef, Store,
    Verified, VerifyOptions,
};

use crate::error::{Error, Result};
use crate::gsprt::Pairing;
use crate::invariants::{CanaryReport, MinimumReport};
use crate::noninferiority::{Margin, SequenceOutcome, WelchOutcome};
use crate::policy::{ClassPolicy, GuardrailMethod, TestKind};
use crate::sprt::TestState;

/// Event kind of an appended verdict.
pub const KIND_DECISION: &str = ReservedKind::Decision.as_str();

/// A stage of the law, in the order they run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
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

/// The stage's name as every face shows it: "trace verification",
/// "required tests", "invariants", "sequential test", "guardrail cost".
impl std::fmt::Display for Stage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // `pad`, so that a table's `{:<20}` aligns it.
        match self {
            Stage::TraceVerification => f.pad("trace verification"),
            Stage::Tests => f.pad("required tests"),
            Stage::Invariants => f.pad("invariants"),
            Stage::Sequential => f.pad("sequential test"),
            Stage::Guardrail(scorer) => f.pad(&format!("guardrail {scorer}")),
        }
    }
}

/// The gate's answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
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
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
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
    /// The sequential test reached `max_n` without deciding: not shown
    /// better, and not shown worse either. Never a promote. (Verdicts of
    /// the first law recorded this as `measured`.)
    Truncated,
}

impl RejectCause {
    /// The word recorded (`measured`, `missing_evidence`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            RejectCause::Measured => "measured",
            RejectCause::MissingEvidence => "missing_evidence",
            RejectCause::UnverifiedTrace => "unverified_trace",
            RejectCause::Truncated => "truncated",
        }
    }
}

/// The gate's answer in one word, with the CLI's exit code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
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
    /// The sequential test reached `max_n` undecided (exit 6): not
    /// promoted, not shown worse; raise `max_n` or the effect to detect
    /// (`ratchet calibrate` shows P(truncated)).
    Truncated,
}

impl GateStatus {
    /// The word as serialized (`promote`, `missing_evidence`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            GateStatus::Promote => "promote",
            GateStatus::Reject => "reject",
            GateStatus::Continue => "continue",
            GateStatus::MissingEvidence => "missing_evidence",
            GateStatus::UnverifiedTrace => "unverified_trace",
            GateStatus::Truncated => "truncated",
        }
    }

    /// The outcome as a person reads it, the same words wherever it is
    /// shown (the CLI's headline, the report, the comment): `promote`,
    /// `reject`, `continue`, `cannot decide (evidence missing)`, `cannot
    /// decide (trace does not verify)`, `truncated (max_n reached
    /// undecided; not promoted)`. A refusal is recorded as a reject with
    /// its cause; it reads as what it is.
    pub fn words(self) -> &'static str {
        match self {
            GateStatus::Promote => "promote",
            GateStatus::Reject => "reject",
            GateStatus::Continue => "continue",
            GateStatus::MissingEvidence => "cannot decide (evidence missing)",
            GateStatus::UnverifiedTrace => "cannot decide (trace does not verify)",
            GateStatus::Truncated => "truncated (max_n reached undecided; not promoted)",
        }
    }

    /// [`GateStatus::words`] as a headline: the outcome in capitals, its
    /// reason in brackets as it is (`CANNOT DECIDE (evidence missing)`).
    pub fn headline(self) -> String {
        let words = self.words();
        match words.split_once(" (") {
            Some((head, rest)) => format!("{} ({rest}", head.to_uppercase()),
            None => words.to_uppercase(),
        }
    }

    /// The exit code `ratchet gate` uses (2 is reserved for errors).
    pub fn exit_code(self) -> u8 {
        match self {
            GateStatus::Promote => 0,
            GateStatus::Reject => 1,
            GateStatus::Continue => 3,
            GateStatus::MissingEvidence => 4,
            GateStatus::UnverifiedTrace => 5,
            GateStatus::Truncated => 6,
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
                RejectCause::Truncated => GateStatus::Truncated,
            },
        }
    }
}

/// Where a stage ended up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StageState {
    /// It passed.
    Passed,
    /// It failed (the verdict stops here).
    Failed,
    /// Still open: more evidence is needed (the verdict continues).
    Open,
}

impl From<bool> for StageState {
    fn from(passed: bool) -> StageState {
        if passed {
            StageState::Passed
        } else {
            StageState::Failed
        }
    }
}

impl StageState {
    /// `Some(true)` passed, `Some(false)` failed, `None` open: the form
    /// recorded in the trace.
    pub fn as_option(self) -> Option<bool> {
        match self {
            StageState::Passed => Some(true),
            StageState::Failed => Some(false),
            StageState::Open => None,
        }
    }
}

impl From<Option<bool>> for StageState {
    fn from(passed: Option<bool>) -> StageState {
        passed.map_or(StageState::Open, StageState::from)
    }
}

impl Serialize for StageState {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        self.as_option().serialize(s)
    }
}

impl<'de> Deserialize<'de> for StageState {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        Option::<bool>::deserialize(d).map(StageState::from)
    }
}

/// One stage's figures: what it computed, against what, from which inputs.
/// Deserialized by the stage it names: each stage's details have one shape
/// (or, for the tests that need paired tasks, [`TooFewTasks`]).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StageReport {
    /// The stage.
    pub stage: Stage,
    /// Whether it passed (serialized `true` / `false` / `null` for open).
    pub passed: StageState,
    /// The stage's statistics and inputs.
    #[serde(serialize_with = "canonical")]
    pub details: StageDetails,
}

/// What a stage computed, one shape per stage. Serialized with every
/// object's keys in sorted order: the canonical form recorded in the trace
/// (stable under reordering fields here, and the form verdicts recorded
/// before these types existed have). Read back by [`StageReport`]'s
/// deserializer, which picks the shape from the stage named beside it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum StageDetails {
    /// Trace verification.
    Verification(VerificationDetails),
    /// Required test suites.
    Tests(TestsDetails),
    /// Invariants and canaries.
    Invariants(InvariantsDetails),
    /// The sequential test.
    Sequential(SequentialDetails),
    /// A guardrail's non-inferiority test.
    Guardrail(GuardrailDetails),
    /// Too few tasks scored on both sides for the stage's test to run.
    TooFewTasks(TooFewTasks),
    /// The sequential stage refused its test on the scores it had (since
    /// [`Law::NameSweep`]; earlier laws recorded these as [`TooFewTasks`]).
    Refused(Refused),
    /// A `benchmarks` class's sequential stage: every benchmark's verdict.
    Benchmarks(crate::bench_stage::BenchmarksDetails),
}

impl<'de> Deserialize<'de> for StageReport {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        #[derive(Deserialize)]
        struct Raw {
            stage: Stage,
            passed: StageState,
            details: serde_json::Value,
        }
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum OrTooFew<T> {
            Ran(T),
            // Before `TooFew`: a refusal also names its test and tasks.
            Refused(Refused),
            TooFew(TooFewTasks),
        }
        fn shape<T: serde::de::DeserializeOwned, E: serde::de::Error>(
            stage: &Stage,
            details: serde_json::Value,
            wrap: fn(T) -> StageDetails,
        ) -> std::result::Result<StageDetails, E> {
            match serde_json::from_value::<OrTooFew<T>>(details) {
                Ok(OrTooFew::Ran(t)) => Ok(wrap(t)),
                Ok(OrTooFew::Refused(refused)) => Ok(StageDetails::Refused(refused)),
                Ok(OrTooFew::TooFew(few)) => Ok(StageDetails::TooFewTasks(few)),
                Err(e) => Err(E::custom(format!("the details of stage {stage:?}: {e}"))),
            }
        }
        let raw = Raw::deserialize(d)?;
        let details = match &raw.stage {
            Stage::TraceVerification => shape(&raw.stage, raw.details, StageDetails::Verification)?,
            Stage::Tests => shape(&raw.stage, raw.details, StageDetails::Tests)?,
            Stage::Invariants => shape(&raw.stage, raw.details, StageDetails::Invariants)?,
            // A benchmarks class's table has its own shape (a `benchmarks` list).
            Stage::Sequential if raw.details.get("benchmarks").is_some() => {
                shape(&raw.stage, raw.details, StageDetails::Benchmarks)?
            }
            Stage::Sequential => shape(&raw.stage, raw.details, StageDetails::Sequential)?,
            Stage::Guardrail(_) => shape(&raw.stage, raw.details, StageDetails::Guardrail)?,
        };
        Ok(StageReport {
            stage: raw.stage,
            passed: raw.passed,
            details,
        })
    }
}

/// A figure as recorded: serde_json writes a number that is not finite
/// (the infinite t of a Welch test on exact data) as `null`, which reads
/// back as NaN — and NaN writes `null` again, so the bytes round-trip.
pub(crate) fn recorded_f64<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> std::result::Result<f64, D::Error> {
    Ok(Option::<f64>::deserialize(d)?.unwrap_or(f64::NAN))
}

/// Serializes `value` as JSON with the keys of every object sorted.
fn canonical<T: Serialize, S: serde::Serializer>(
    value: &T,
    s: S,
) -> std::result::Result<S::Ok, S::Error> {
    fn sorted(v: serde_json::Value) -> serde_json::Value {
        match v {
            serde_json::Value::Object(map) => {
                let mut entries: Vec<_> = map.into_iter().collect();
                entries.sort_by(|a, b| a.0.cmp(&b.0));
                serde_json::Value::Object(
                    entries.into_iter().map(|(k, v)| (k, sorted(v))).collect(),
                )
            }
            serde_json::Value::Array(items) => {
                serde_json::Value::Array(items.into_iter().map(sorted).collect())
            }
            other => other,
        }
    }
    let v = serde_json::to_value(value).map_err(serde::ser::Error::custom)?;
    sorted(v).serialize(s)
}

/// What trace verification found.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct VerificationDetails {
    /// Events recomputed.
    pub size: u64,
    /// Whether the store is keyed.
    pub keyed: bool,
    /// Whether every MAC was checked.
    pub macs_checked: bool,
    /// Whether a checkpoint held elsewhere was checked.
    pub checkpoint_checked: bool,
    /// The first fault, if any.
    pub fault: Option<ratchet_trace::Fault>,
}

/// The required suites.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TestsDetails {
    /// One per required suite, in the policy's order.
    pub suites: Vec<SuiteReport>,
}

/// One required suite: every recorded run of it for the candidate.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SuiteReport {
    /// The suite.
    pub suite: String,
    /// Whether it counts as green (runs exist, none failed, each ran a test).
    pub passed: bool,
    /// Its runs.
    pub runs: Vec<SuiteRun>,
}

/// One recorded run of a suite.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct SuiteRun {
    /// The run's trace seq.
    pub seq: u64,
    /// Tests passed.
    pub passed: u64,
    /// Tests failed (errors included).
    pub failed: u64,
    /// Tests skipped.
    pub skipped: u64,
}

/// Invariants and canaries.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InvariantsDetails {
    /// One per invariant, in the policy's order.
    pub invariants: Vec<MinimumReport>,
    /// The canaries, if the policy has any.
    pub canaries: Option<CanaryReport>,
    /// Confidence of the failure-rate bounds.
    #[serde(deserialize_with = "crate::decide::recorded_f64")]
    pub confidence: f64,
}

/// The sequential test's state when the verdict was taken.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SequentialDetails {
    /// The test's own figures.
    #[serde(flatten)]
    pub test: TestFigures,
    /// Log-likelihood ratio.
    #[serde(deserialize_with = "crate::decide::recorded_f64")]
    pub llr: f64,
    /// Observations used.
    pub n: u64,
    /// Lower boundary as applied (after any overshoot correction).
    #[serde(deserialize_with = "crate::decide::recorded_f64")]
    pub lower: f64,
    /// Upper boundary as applied.
    #[serde(deserialize_with = "crate::decide::recorded_f64")]
    pub upper: f64,
    /// Wald's lower boundary.
    #[serde(deserialize_with = "crate::decide::recorded_f64")]
    pub wald_lower: f64,
    /// Wald's upper boundary.
    #[serde(deserialize_with = "crate::decide::recorded_f64")]
    pub wald_upper: f64,
    /// The effect seen, with a 95 % interval (shown, never used to decide).
    pub effect: Option<EffectEstimate>,
    /// Truncation limit.
    pub max_n: u64,
    /// The test's decision.
    pub decision: TestState,
    /// Tasks scored on both sides (before the first gap).
    pub tasks_available: usize,
    /// The first task the baseline has and the candidate lacks: the
    /// sequence waits there.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stopped_at_missing_task: Option<String>,
}

/// The figures particular to each kind of sequential test.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "test", rename_all = "snake_case")]
pub enum TestFigures {
    /// The discordant-pair SPRT.
    Bernoulli {
        /// The design.
        design: Cow<'static, str>,
        /// What the effect estimate measures.
        effect_measure: Cow<'static, str>,
        /// θ under "no difference" (½).
        #[serde(deserialize_with = "crate::decide::recorded_f64")]
        theta0: f64,
        /// θ under "better by the gap".
        #[serde(deserialize_with = "crate::decide::recorded_f64")]
        theta1: f64,
        /// Pass threshold, on the judged (sign-adjusted) scale.
        #[serde(deserialize_with = "crate::decide::recorded_f64")]
        pass_threshold: f64,
        /// Whether the scores were judged negated (a lower-is-better
        /// scorer). Absent in verdicts of the first law.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        lower_is_better: bool,
        /// Pairs where only the candidate passed.
        candidate_only_passed: u64,
        /// Pairs where only the baseline passed.
        baseline_only_passed: u64,
        /// Concordant pairs (no evidence).
        both_or_neither: u64,
    },
    /// The SPRT on paired differences.
    Gaussian {
        /// The design.
        design: Cow<'static, str>,
        /// What the effect estimate measures.
        effect_measure: Cow<'static, str>,
        /// Mean difference under the null.
        #[serde(deserialize_with = "crate::decide::recorded_f64")]
        mu0: f64,
        /// Mean difference under the alternative (the gap).
        #[serde(deserialize_with = "crate::decide::recorded_f64")]
        mu1: f64,
        /// Sample variance of the differences (`None` before two).
        variance: Option<f64>,
    },
    /// The betting e-process on bounded paired differences.
    Betting {
        /// The design.
        design: Cow<'static, str>,
        /// What the effect estimate measures.
        effect_measure: Cow<'static, str>,
        /// The range every score lies in.
        range: [f64; 2],
        /// The mean difference a reject is measured against.
        #[serde(deserialize_with = "crate::decide::recorded_f64")]
        gap: f64,
        /// ln of the capital betting on an improvement.
        #[serde(deserialize_with = "crate::decide::recorded_f64")]
        log_capital_promote: f64,
        /// ln of the capital betting on less than the gap.
        #[serde(deserialize_with = "crate::decide::recorded_f64")]
        log_capital_reject: f64,
        /// ln(1/α): the promote capital's bound.
        #[serde(deserialize_with = "crate::decide::recorded_f64")]
        promote_bound: f64,
        /// ln(1/β): the reject capital's bound.
        #[serde(deserialize_with = "crate::decide::recorded_f64")]
        reject_bound: f64,
    },
    /// The GSPRT on game outcomes.
    Paired {
        /// Trinomial or pentanomial.
        pairing: Pairing,
        /// What the effect estimate measures.
        effect_measure: Cow<'static, str>,
        /// The unit of `elo0`/`elo1`.
        elo_model: crate::EloModel,
        /// Null hypothesis.
        #[serde(deserialize_with = "crate::decide::recorded_f64")]
        elo0: f64,
        /// Alternative.
        #[serde(deserialize_with = "crate::decide::recorded_f64")]
        elo1: f64,
        /// Outcome counts by class.
        counts: BTreeMap<Cow<'static, str>, u64>,
    },
}

impl TestFigures {
    /// The test these are the figures of.
    pub fn test(&self) -> TestKind {
        match self {
            TestFigures::Bernoulli { .. } => TestKind::Bernoulli,
            TestFigures::Gaussian { .. } => TestKind::Gaussian,
            TestFigures::Betting { .. } => TestKind::Betting,
            TestFigures::Paired { .. } => TestKind::Paired,
        }
    }

    /// What the effect estimate beside these figures measures, as
    /// recorded (on the judged scale: see [`EffectEstimate`]; what a
    /// person reads is [`crate::shown::EffectShown::measure`]).
    pub fn effect_measure(&self) -> &str {
        match self {
            TestFigures::Bernoulli { effect_measure, .. }
            | TestFigures::Gaussian { effect_measure, .. }
            | TestFigures::Betting { effect_measure, .. }
            | TestFigures::Paired { effect_measure, .. } => effect_measure,
        }
    }
}

/// A guardrail's test and result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GuardrailDetails {
    /// The test.
    pub method: GuardrailMethod,
    /// The margin.
    pub margin: Margin,
    /// The result.
    pub result: GuardrailResult,
}

/// The result of a guardrail's test.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum GuardrailResult {
    /// Fixed-horizon Welch test.
    Welch(WelchOutcome),
    /// Always-valid confidence sequence.
    Sequence(SequenceOutcome),
}

/// A stage that could not run its test: too few tasks on both sides.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TooFewTasks {
    /// The test that would have run (when it waits rather than fails).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub test: Option<TestKind>,
    /// Tasks scored on both sides.
    pub tasks: usize,
}

/// A sequential stage that refused to run its test on the scores it had:
/// not too few tasks, but scores the test cannot judge (since
/// [`Law::NameSweep`]; earlier laws recorded these as [`TooFewTasks`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Refused {
    /// The test that refused.
    pub test: TestKind,
    /// Tasks scored on both sides.
    pub tasks: usize,
    /// Why it refused.
    pub because: Refusal,
}

/// Why a sequential test refused its scores ([`Refused`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum Refusal {
    /// A score outside the range the test's validity rests on (the
    /// betting test's, or a gaussian class's declared `range`).
    OutOfRange {
        /// The score.
        #[serde(deserialize_with = "crate::decide::recorded_f64")]
        score: f64,
        /// The range's lower end.
        #[serde(deserialize_with = "crate::decide::recorded_f64")]
        low: f64,
        /// The range's upper end.
        #[serde(deserialize_with = "crate::decide::recorded_f64")]
        high: f64,
    },
    /// Paired differences all equal: the gaussian test has no variance.
    NoSpread,
    /// Paired differences too skewed for the gaussian test's normal
    /// theory.
    Skewed {
        /// Their sample skewness.
        #[serde(deserialize_with = "crate::decide::recorded_f64")]
        skewness: f64,
        /// The largest |skewness| the gaussian test accepts.
        #[serde(deserialize_with = "crate::decide::recorded_f64")]
        limit: f64,
    },
}

/// The trace head a verdict was computed at.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TraceHead {
    /// Events in the trace.
    pub size: u64,
    /// Hash of the last event (the genesis hash at size 0).
    #[serde(with = "ratchet_trace::hex_hash")]
    pub hash: Hash,
}

/// A verdict with everything needed to check it. Read back from its
/// recorded JSON by [`Verdict::from_json`], which gives the same bytes
/// back through [`Verdict::to_json`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Verdict {
    /// The answer.
    pub outcome: Outcome,
    /// The artifact class.
    pub class: String,
    /// Content hash of the class policy ([`ClassPolicy::hash`]).
    #[serde(with = "ratchet_trace::hex_hash")]
    pub policy_hash: Hash,
    /// The trace head it was computed at.
    pub trace: TraceHead,
    /// The baseline commit.
    pub baseline: CommitId,
    /// The candidate commit.
    pub candidate: CommitId,
    /// The version of each scorer read (one per scorer: versions never mix).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub scorer_versions: BTreeMap<String, String>,
    /// The law the verdict was computed under (absent in the JSON of
    /// [`Law::NameOrder`] verdicts, which predate the field).
    #[serde(default = "Law::first", skip_serializing_if = "Law::is_first")]
    pub law: Law,
    /// Evidence the verdict did not read because its producer is not one
    /// the class trusts for that side ([`ClassPolicy::trust`]), counted
    /// per side and producer (absent when nothing was set aside).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub set_aside: Vec<ratchet_trace::SetAside>,
    /// The order the sequential test and the guardrails read tasks in
    /// (since [`Law::Tuned`], for a class with a sequential test; absent
    /// before, so older verdicts keep their bytes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub order: Option<TaskOrder>,
    /// Decided under a policy not pinned in the trace (since
    /// [`Law::Attributed`]; on a keyed store only when the caller allowed
    /// it, [`Question::allow_unpinned`]).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub unpinned: bool,
    /// Each stage that ran, in order.
    pub stages: Vec<StageReport>,
}

/// The order a verdict's sequential test and guardrails read tasks in.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "by", rename_all = "snake_case", deny_unknown_fields)]
pub enum TaskOrder {
    /// The class's declared task list ([`ClassPolicy::tasks`]), fixed
    /// before any outcome was known: each side's first trusted score of
    /// each listed task, in the list's order, waiting at the first listed
    /// task not yet scored on both sides.
    Declared {
        /// Tasks on the list.
        tasks: u64,
        /// Scores of tasks not on the list, per scorer read and side: not
        /// read (absent when there were none).
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        undeclared: Vec<Undeclared>,
    },
    /// The baseline's trusted trace order (the class declares no `tasks`):
    /// the order the baseline's first scores were recorded in. When a
    /// task's outcome changes how soon its score is recorded (failures
    /// finish sooner, or later), that order carries the outcomes' timing
    /// into the test (issue 40); a declared task list fixes it before any
    /// outcome is known.
    BaselineTrace,
    /// The name sweep of [`Law::NameSweep`] (the class declares no
    /// `tasks`): tasks in name order, fixed before any outcome, read in
    /// sweeps that wait at the first task scored on one side only; a task
    /// first seen after a sweep passed its name is read by the next sweep.
    NameSweep,
}

impl TaskOrder {
    /// The order in one sentence, as the CLI and the report print it.
    pub fn words(&self) -> String {
        match self {
            TaskOrder::Declared { tasks, undeclared } => {
                let mut s = format!(
                    "tasks read in the class's declared order ({tasks} listed), fixed before any outcome"
                );
                for u in undeclared {
                    s.push_str(&format!(
                        "; not read: {} score(s) of {} task(s) off the list ({}, {})",
                        u.scores, u.tasks, u.scorer, u.side
                    ));
                }
                s
            }
            TaskOrder::BaselineTrace => "tasks read in the baseline's trace order, which carries how soon each outcome was recorded: declare the class's `tasks` to fix the order before any outcome".into(),
            TaskOrder::NameSweep => "tasks read in name order, fixed before any outcome (a sweep that every look extends; run them in that order to decide sooner, or declare the class's `tasks`)".into(),
        }
    }
}

/// Scores a declared task list left unread: those of tasks not on it, for
/// one scorer and side.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Undeclared {
    /// The scorer read.
    pub scorer: String,
    /// The side the scores are about.
    pub side: ratchet_trace::Side,
    /// Tasks off the list with a score of this side.
    pub tasks: u64,
    /// Their scores (every run).
    pub scores: u64,
}

/// Which law a verdict was computed under: how the evidence is put in
/// sequence and summarised. A recorded verdict is recomputed under its own
/// law ([`recompute_at`]), so an audit of an old decision still reproduces
/// it byte for byte after the law improves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(into = "u32", try_from = "u32")]
pub enum Law {
    /// The gate of 2026-11: tasks in name order, each side's mean over its
    /// runs, a fixed-sample effect interval. Re-running the test from a new
    /// order at every call made polling a repeated significance test.
    NameOrder = 1,
    /// Tasks in the baseline's trace order, each side's first score of a
    /// task, the sequence waiting at the first task the candidate lacks;
    /// every look extends the same path (docs/design.md, "the law as
    /// used"). The effect interval is always valid (a confidence sequence).
    BaselineOrder = 2,
    /// [`Law::BaselineOrder`] reading only the evidence of producers the
    /// class trusts, per side ([`ClassPolicy::trust`]; default: the key
    /// holder's): the first *trusted* score of a task is read, the
    /// baseline's order is its trusted evidence's, required suites and
    /// invariants count only trusted runs and scores, and a scorer's
    /// direction is the policy's, else one declared no later than the
    /// class's pin — evidence recorded after the pin cannot declare it.
    Attributed = 3,
    /// [`Law::Attributed`] with the evidence's size put to use: the parts
    /// this law changes are listed in `docs/design.md`, "the law as used,
    /// round two" (issue 40), each behind `law >= Law::Tuned`:
    ///
    /// * a class that declares its `tasks` has its sequential test (every
    ///   kind) and guardrails read pairs in the declared order, waiting at
    ///   the first listed task not scored on both sides; scores of tasks
    ///   off the list are not read and are counted
    ///   ([`TaskOrder::Declared`]); before its first pair the declared
    ///   sequence waits (continue) where earlier laws fail closed; every
    ///   verdict of a class with a test records its [`TaskOrder`].
    /// * the effect estimate records the one-sided bound that matches the
    ///   sequential test's decision ([`DecisionBound`]), and a gaussian
    ///   class that declares its scores' `range` has its interval
    ///   intersected with the range the differences can take and with the
    ///   betting confidence sequence (each at α/2);
    /// * a `benchmarks` class that pins no runner judges every runner both
    ///   sides were measured on (the baseline's newest decides promotion,
    ///   a benchmark it lacks must be shown not slower where measured, any
    ///   runner's "slower" rejects), and a sample no ratio can be read of
    ///   is set aside and said after any regression the others show;
    /// * the betting kind bets for the design effect: each capital is a
    ///   fixed mixture, mostly bets sized for growth at the other
    ///   hypothesis (a mean difference of `gap`, or 0), the rest the
    ///   PrPl-EB bets of the earlier laws ([`crate::BettingTest::tuned`]);
    ///   about Wald's tasks at the design effect where those bets needed
    ///   twice as many on pass/fail data;
    /// * the gaussian kind's default warm-up is 30 tasks, not 20
    ///   ([`crate::ClassPolicy::gaussian_warmup`]).
    Tuned = 4,
    /// [`Law::Tuned`] with a class that declares no `tasks` read by the
    /// **name sweep** ([`TaskOrder::NameSweep`]), not in the baseline's
    /// trace order: tasks in name order (`t2` before `t10`), each sweep
    /// waiting at the first task either side has scored and the other not,
    /// the path built in trace order so that every look extends it. The
    /// baseline's trace order carried how soon each outcome finished into
    /// the test (issue 40: with failures finishing sooner, 0.13 false
    /// promotes at α 0.05 when the baseline ran first in a pool). Every
    /// reader of pairs takes it (each kind, guardrails, the pentanomial
    /// runs, the report's paths); before the first pair the sweep waits
    /// (continue) where laws 2–4 fail closed. A sequential stage that
    /// refused its scores records [`Refused`] and why, where laws 1–4
    /// recorded [`TooFewTasks`].
    NameSweep = 5,
}

impl Law {
    /// The law new verdicts are computed under.
    pub const CURRENT: Law = Law::NameSweep;

    fn is_first(&self) -> bool {
        *self == Law::NameOrder
    }

    fn first() -> Law {
        Law::NameOrder
    }

    /// The law a recorded verdict's JSON names (`law`, absent: the first).
    ///
    /// # Errors
    /// [`Error::InvalidObservation`] if the payload is not a verdict's JSON
    /// or names a law this gate does not know.
    pub fn of_recorded(payload: &[u8]) -> Result<Law> {
        #[derive(Deserialize)]
        struct Named {
            #[serde(default = "Law::first")]
            law: Law,
        }
        serde_json::from_slice::<Named>(payload)
            .map(|named| named.law)
            .map_err(|e| Error::InvalidObservation {
                reason: format!("a recorded verdict: {e}"),
            })
    }
}

impl From<Law> for u32 {
    fn from(l: Law) -> u32 {
        l as u32
    }
}

impl TryFrom<u32> for Law {
    type Error = String;
    fn try_from(n: u32) -> std::result::Result<Law, String> {
        match n {
            1 => Ok(Law::NameOrder),
            2 => Ok(Law::BaselineOrder),
            3 => Ok(Law::Attributed),
            4 => Ok(Law::Tuned),
            5 => Ok(Law::NameSweep),
            other => Err(format!(
                "law {other} is not one this gate knows (it knows 1 to 5): recompute the verdict with the ratchet that recorded it"
            )),
        }
    }
}

impl Verdict {
    /// The canonical JSON bytes (what is appended to the trace).
    ///
    /// # Errors
    /// [`Error::Serialize`] if a figure cannot be written as JSON.
    pub fn to_json(&self) -> Result<Vec<u8>> {
        serde_json::to_vec(self).map_err(|e| Error::Serialize {
            reason: e.to_string(),
        })
    }

    /// The report of `stage`, if it ran.
    pub fn stage(&self, stage: &Stage) -> Option<&StageReport> {
        self.stages.iter().find(|s| s.stage == *stage)
    }

    /// The sequential stage's figures, when its test ran (not when an
    /// earlier stage stopped the verdict, nor with too few tasks).
    pub fn sequential(&self) -> Option<&SequentialDetails> {
        match &self.stage(&Stage::Sequential)?.details {
            StageDetails::Sequential(fig) => Some(fig),
            _ => None,
        }
    }

    /// Reads a verdict back from its JSON (a `decision` event's payload),
    /// under the law it names: `to_json` of the result gives the same
    /// bytes back.
    ///
    /// # Examples
    ///
    /// ```
    /// use ratchet_gate::{GateStatus, Policy, Question, Verdict, decide};
    /// use ratchet_trace::{CommitId, Store};
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let dir = tempfile::tempdir()?;
    /// let mut store = Store::create(dir.path(), Default::default())?;
    /// let (a, b) = (CommitId::parse(&"a".repeat(40))?, CommitId::parse(&"b".repeat(40))?);
    /// let policy = Policy::parse("[class.c]\nscorer = \"acc\"\ntest = \"gaussian\"\nalpha = 0.05\nbeta = 0.1\ngap = 0.1\nmax_n = 500\n")?;
    /// let q = Question { class: "c", policy: policy.class("c")?, baseline: &a, candidate: &b, checkpoint: None, allow_unpinned: false };
    /// let verdict = decide(&mut store, &q)?;
    ///
    /// let recorded = store.head()?.size;
    /// let event = store.event_by_seq(recorded)?.expect("the decision");
    /// let read = Verdict::from_json(&event.payload)?;
    /// assert_eq!(read, verdict);
    /// assert_eq!(read.to_json()?, event.payload);
    /// assert_eq!(read.candidate, b);
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// [`Error::UnreadableVerdict`] if the bytes are not a verdict's JSON
    /// (the reason names the field), or name a law this gate does not know.
    pub fn from_json(payload: &[u8]) -> Result<Verdict> {
        serde_json::from_slice(payload).map_err(|e| Error::UnreadableVerdict {
            reason: e.to_string(),
        })
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
    /// Decide a class that is not pinned in a **keyed** store from the
    /// policy given (an experiment; the verdict records `unpinned`).
    /// Without it such a question is refused ([`Error::Unpinned`]): on a
    /// keyed store the pin is what makes a policy the key holder's.
    pub allow_unpinned: bool,
}

/// Decides at the current head and appends the verdict as a `decision` event
/// (unless the trace failed verification: then nothing is appended).
///
/// # Examples
///
/// ```
/// use ratchet_gate::{GateStatus, Policy, Question, decide};
/// use ratchet_trace::{CommitId, Score, Store};
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let dir = tempfile::tempdir()?;
/// let mut store = Store::create(dir.path(), Default::default())?;
/// let (a, b) = (CommitId::parse(&"a".repeat(40))?, CommitId::parse(&"b".repeat(40))?);
/// let mut scores = Vec::new();
/// for t in 0..40 {
///     let noise = f64::from(t % 5) * 0.02; // the candidate is ~0.2 better on every task
///     scores.push(Score::new(a.clone(), format!("task-{t}"), "quality", 0.5 + noise));
///     scores.push(Score::new(b.clone(), format!("task-{t}"), "quality", 0.7 + 1.5 * noise));
/// }
/// store.record_scores(&scores, "eval")?;
/// let policy = Policy::parse("[class.flow]\nscorer = \"quality\"\ntest = \"gaussian\"\nalpha = 0.05\nbeta = 0.05\ngap = 0.1\nmax_n = 1000\n")?;
/// let q = Question { class: "flow", policy: policy.class("flow")?, baseline: &a, candidate: &b, checkpoint: None, allow_unpinned: false };
/// let verdict = decide(&mut store, &q)?;
/// assert_eq!(verdict.outcome.status(), GateStatus::Promote);
/// assert_eq!(store.head()?.size, verdict.trace.size + 1); // the verdict is recorded
/// # Ok(()) }
/// ```
///
/// # Errors
/// [`Error::Trace`] if the store cannot be read or written. A trace that does
/// not verify, missing data and failed stages are verdicts (rejects), not errors.
pub fn decide(store: &mut Store, q: &Question<'_>) -> Result<Verdict> {
    Ok(decide_recorded(store, q)?.0)
}

/// [`decide`], returning also the receipt of the `decision` event it
/// appended (`None` when the trace failed verification and nothing was
/// appended): the seq that names this verdict, even when other writers
/// append right after it.
///
/// # Errors
/// As [`decide`].
pub fn decide_recorded(store: &mut Store, q: &Question<'_>) -> Result<(Verdict, Option<Receipt>)> {
    let head = store.head()?;
    let verdict = evaluate(store, q, head.size, Law::CURRENT)?;
    // A verdict about a trace that does not verify is not written into it:
    // the trace is not a record anyone can rely on any more (and a store
    // whose schema was altered refuses writes).
    if verdict.outcome.status() == GateStatus::UnverifiedTrace {
        return Ok((verdict, None));
    }
    let receipt = store.append(
        EventDraft::reserved(ReservedKind::Decision, &verdict)?
            .commit(q.candidate.clone())
            .session(format!("gate:{}", q.class)),
    )?;
    Ok((verdict, Some(receipt)))
}

/// Computes the verdict as of trace size `seq` and records nothing: equal,
/// byte for byte, to the verdict a [`decide`] at that head appended (under
/// the current law; a verdict recorded under an earlier one is recomputed
/// by [`recompute_at`]). The gate's entry points are named by effect:
/// `verdict_*` computes, `decide*` computes and records.
///
/// # Errors
/// As [`decide`].
pub fn verdict_at(store: &Store, q: &Question<'_>, seq: u64) -> Result<Verdict> {
    evaluate(store, q, seq, Law::CURRENT)
}

/// The name [`verdict_at`] had: it never decided anything into the trace.
///
/// # Errors
/// As [`decide`].
#[deprecated(note = "renamed to `verdict_at`: it computes a verdict and records nothing")]
pub fn decide_at(store: &mut Store, q: &Question<'_>, seq: u64) -> Result<Verdict> {
    verdict_at(store, q, seq)
}

/// Recomputes a recorded verdict: as of trace size `seq` (its `trace.size`)
/// under the law it names ([`Law::of_recorded`]), appending nothing. Equal,
/// byte for byte, to the verdict recorded then.
///
/// # Errors
/// As [`decide`].
pub fn recompute_at(store: &Store, q: &Question<'_>, seq: u64, law: Law) -> Result<Verdict> {
    evaluate(store, q, seq, law)
}

/// Decides at the head of a warm owner's view and records the verdict
/// through it: the view is refreshed first (only the events after the
/// head it holds are read, checked and folded), then the law runs on the
/// view alone. A refresh that finds a bad new event is a verdict on an
/// unverified trace (nothing appended), as in [`decide`].
///
/// # Examples
///
/// ```
/// use ratchet_gate::{GateStatus, Policy, Question, decide_in};
/// use ratchet_trace::{CommitId, Ledger, Store, VerifyOptions};
///
/// let dir = tempfile::tempdir()?;
/// let mut ledger = Ledger::new(Store::create(dir.path(), Default::default())?, VerifyOptions::default())?;
/// let (a, b) = (CommitId::parse(&"a".repeat(40))?, CommitId::parse(&"b".repeat(40))?);
/// let policy = Policy::parse("[class.c]\nscorer = \"acc\"\ntest = \"gaussian\"\nalpha = 0.05\nbeta = 0.1\ngap = 0.1\nmax_n = 500\n")?;
/// let q = Question { class: "c", policy: policy.class("c")?, baseline: &a, candidate: &b, checkpoint: None, allow_unpinned: false };
/// let (verdict, receipt) = decide_in(&mut ledger, &q)?;
/// assert_ne!(verdict.outcome.status(), GateStatus::Promote); // no evidence yet
/// assert_eq!(receipt.map(|r| r.seq), Some(ledger.view().head().size));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # Errors
/// As [`decide`].
pub fn decide_in(ledger: &mut Ledger, q: &Question<'_>) -> Result<(Verdict, Option<Receipt>)> {
    let verdict = verdict_in(ledger, q)?;
    if verdict.outcome.status() == GateStatus::UnverifiedTrace {
        return Ok((verdict, None));
    }
    let receipt = ledger.append(
        EventDraft::reserved(ReservedKind::Decision, &verdict)?
            .commit(q.candidate.clone())
            .session(format!("gate:{}", q.class)),
    )?;
    Ok((verdict, Some(receipt)))
}

/// [`decide_in`] without recording: the verdict at the refreshed head of a
/// warm owner's view (a dry run).
///
/// # Errors
/// As [`decide`].
pub fn verdict_in(ledger: &mut Ledger, q: &Question<'_>) -> Result<Verdict> {
    // The verdict names the head it judged. On a refresh that fails, as a
    // cold decision does: the file's head (size and the hash the file holds
    // there) — never a mix of the fault's seq and the held head's hash,
    // which names a head that never existed.
    let (report, fresh) = match ledger.refresh() {
        Ok(_) => (ledger.view().report().clone(), true),
        Err(ratchet_trace::Error::Tampered { fault }) => {
            let held = ledger.store().head()?;
            let mut report = ledger.view().report().clone();
            report.size = held.size;
            report.head = held.hash;
            report.fault = Some(fault);
            (report, false)
        }
        Err(e) => return Err(e.into()),
    };
    let mut report = report;
    if fresh && let Some(cp) = q.checkpoint {
        report.checkpoint_checked = true;
        match ledger.checkpoint_matches(cp) {
            Some(true) => {}
            // Unknown to the owner: a full verification with it decides.
            None => {
                let vo = VerifyOptions::default()
                    .checkpoint(cp.clone())
                    .up_to(report.size);
                report.fault = ledger.store().verify_with(&vo)?.fault;
            }
            Some(false) => {
                let size = report.size;
                report.fault = Some(ratchet_trace::Fault {
                    seq: cp.size.min(size + 1),
                    kind: if cp.size > size {
                        ratchet_trace::FaultKind::Truncated {
                            checkpoint_size: cp.size,
                            store_size: size,
                        }
                    } else {
                        ratchet_trace::FaultKind::CheckpointMismatch
                    },
                });
            }
        }
    }
    let at = report.size;
    let view = (report.fault.is_none()).then(|| ledger.view());
    verdict_of(&report, view, q, at, report.head, Law::CURRENT)
}

/// The effect the sequential test saw, for a person to read: the mean of
/// the per-observation effects with a 95 % interval. Shown, never used to
/// decide. Under [`Law::BaselineOrder`] the interval is **always valid**
/// (`interval` names the confidence sequence): it covers the true mean at
/// its level at any stop, the sequential test's included. Under
/// [`Law::NameOrder`] it was a fixed-sample normal interval (`interval`
/// absent), optimistic after optional stopping.
///
/// Recorded on the gate's *judged* scale: a lower-is-better scorer is
/// judged on negated scores, so for it `estimate` is positive when the
/// candidate is better — baseline − candidate in the scorer's own terms,
/// whatever the recorded `effect_measure` says. Never shown as such:
/// [`crate::shown::Scale::effect`] turns it back into candidate − baseline
/// in the scorer's unit and direction (the recorded form must stay, so
/// that a verdict recomputes byte for byte under its law).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct EffectEstimate {
    /// Observations.
    pub n: usize,
    /// Mean effect.
    #[serde(deserialize_with = "crate::decide::recorded_f64")]
    pub estimate: f64,
    /// Lower end of the 95 % interval.
    #[serde(deserialize_with = "crate::decide::recorded_f64")]
    pub ci_low: f64,
    /// Upper end of the 95 % interval.
    #[serde(deserialize_with = "crate::decide::recorded_f64")]
    pub ci_high: f64,
    /// The always-valid interval's method (absent: fixed-sample).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interval: Option<EffectInterval>,
    /// The one-sided always-valid bound that matches the test's decision
    /// (since [`Law::Tuned`]; absent before, and for a test still open or
    /// truncated): a two-sided 95 % interval through zero beside a
    /// promote reads as "maybe worse", though the test showed better.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bound: Option<DecisionBound>,
}

/// The one-sided bound on the effect that matches a sequential test's
/// decision, computed by inverting that test itself (the same statistic
/// and boundary, the hypotheses shifted), on the judged scale and in the
/// effect's measure like [`EffectEstimate::estimate`]:
///
/// * a **promote**: the lower bound at α — the largest effect the test
///   would still have rejected in favour of more. It is above
///   [`DecisionBound::against`] (0, the test's null) exactly when the test
///   promoted;
/// * a **reject**: the upper bound at β — below `against` (the design
///   gap) exactly when the test rejected.
///
/// Valid at any stop, at the rate the test itself holds: for betting by
/// Ville's inequality on the same capital; for the SPRT kinds by Ville on
/// the shifted likelihood ratio, which bounds the miss rate by Wald's
/// α/(1−β) (β/(1−α)), as it bounds the test's own error (variance
/// estimated for gaussian, the GSPRT's likelihood for paired: as
/// approximate as the test). Coverage at the stop is measured in
/// `tests/it/bounds.rs`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct DecisionBound {
    /// Lower (a promote) or upper (a reject).
    pub side: BoundSide,
    /// Its miss rate: the test's α for a lower bound, β for an upper one.
    #[serde(deserialize_with = "crate::decide::recorded_f64")]
    pub level: f64,
    /// The bound.
    #[serde(deserialize_with = "crate::decide::recorded_f64")]
    pub value: f64,
    /// What the bound is set against: 0 for a promote, the design gap for
    /// a reject (in the effect's measure: for bernoulli, the gap among
    /// discordant pairs times the share of pairs discordant).
    #[serde(deserialize_with = "crate::decide::recorded_f64")]
    pub against: f64,
}

/// Which side of the effect a [`DecisionBound`] bounds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BoundSide {
    /// The effect is at least the bound (a promote).
    Lower,
    /// The effect is at most the bound (a reject).
    Upper,
}

/// Which always-valid interval an [`EffectEstimate`] is (recorded by its
/// name).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum EffectInterval {
    /// The betting confidence sequence, for effects bounded by the scores'
    /// range.
    #[serde(rename = "confidence sequence, betting (Waudby-Smith & Ramdas 2024)")]
    Betting,
    /// The asymptotic confidence sequence tuned to `max_n`, for unbounded
    /// effects.
    #[serde(rename = "confidence sequence, asymptotic (Waudby-Smith et al. 2024)")]
    Asymptotic,
    /// Gaussian differences of scores in a declared range (since
    /// [`Law::Tuned`]): the asymptotic and the betting confidence
    /// sequences, each at α/2, intersected with each other and with the
    /// range the differences can take.
    #[serde(
        rename = "confidence sequences, asymptotic ∩ betting at α/2 each, within the scores' range"
    )]
    Bounded,
}

impl EffectInterval {
    /// The name recorded.
    pub fn as_str(self) -> &'static str {
        match self {
            EffectInterval::Betting => "confidence sequence, betting (Waudby-Smith & Ramdas 2024)",
            EffectInterval::Asymptotic => {
                "confidence sequence, asymptotic (Waudby-Smith et al. 2024)"
            }
            EffectInterval::Bounded => {
                "confidence sequences, asymptotic ∩ betting at α/2 each, within the scores' range"
            }
        }
    }
}

/// The verdict at `at` of a cold decision: one verification up to `at`
/// that folds what it read, then the law on that view alone.
fn evaluate(store: &Store, q: &Question<'_>, at: u64, law: Law) -> Result<Verdict> {
    let size = store.head()?.size;
    if at > size {
        return Err(Error::BeyondHead { seq: at, size });
    }
    let mut vo = VerifyOptions::default().up_to(at);
    if let Some(cp) = q.checkpoint {
        vo = vo.checkpoint(cp.clone());
    }
    let (report, view) = store.verify_and_fold(&vo)?;
    // The verdict names the head it judged: the verified one, or — for a
    // trace that failed (such a verdict is never recorded) — the hash the
    // file holds at `at`.
    let head_hash = match (&view, at) {
        (Some(v), _) => v.head().hash,
        (None, 0) => store.genesis(),
        (None, s) => store
            .event_by_seq(s)?
            .map_or_else(|| store.genesis(), |e| e.hash),
    };
    verdict_of(&report, view.as_ref(), q, at, head_hash, law)
}

fn verdict_of(
    report: &ratchet_trace::VerifyReport,
    view: Option<&Verified>,
    q: &Question<'_>,
    at: u64,
    head_hash: Hash,
    law: Law,
) -> Result<Verdict> {
    let mut verdict = Verdict {
        outcome: Outcome::Promote,
        class: q.class.to_string(),
        policy_hash: q.policy.hash(),
        trace: TraceHead {
            size: at,
            hash: head_hash,
        },
        baseline: q.baseline.clone(),
        candidate: q.candidate.clone(),
        scorer_versions: BTreeMap::new(),
        law,
        set_aside: Vec::new(),
        order: None,
        unpinned: false,
        stages: Vec::new(),
    };
    verdict.outcome = crate::stages::evaluate(report, view, q, at, &mut verdict)?;
    Ok(verdict)
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
    view: &Verified,
    policy: &ClassPolicy,
    baseline: &CommitId,
) -> Result<BaselineWorld> {
    if policy.test == crate::TestKind::None {
        return Err(Error::InvalidObservation {
            reason: "the class runs no sequential test (test = \"none\"): there is no scorer to measure the baseline on".into(),
        });
    }
    let scorer = policy.scorer.as_str();
    let version = match &policy.scorer_version {
        Some(v) => v.clone(),
        None => view
            .shared_scorer_version(scorer, baseline, baseline, AsOf::Head)
            .ok_or_else(|| Error::InvalidObservation {
                reason: format!("baseline {baseline} has no score of {scorer}"),
            })?,
    };
    let tasks = view.paired_scores(
        baseline,
        baseline,
        ScorerRef::at_version(scorer, &version),
        AsOf::Head,
    );
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
        .map(|t| t.baseline)
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
