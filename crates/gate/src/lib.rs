//! `ratchet-gate`: the statistics of ratchet's promotion gate — sequential
//! tests that decide promote / reject / continue with bounded error rates,
//! and the calibration that shows what a test will do before it is trusted.
//!
//! # Brief overview
//!
//! * [`Boundaries`] — Wald's boundaries `ln(β/(1−α))` and `ln((1−β)/α)`.
//! * [`SequentialTest`] — the state-machine interface (`update`, `llr`, `n`,
//!   `decision`) shared by [`BernoulliSprt`] (pass/fail per task),
//!   [`GaussianSprt`] (continuous scores, variance estimated after a
//!   warm-up) and [`PairedGsprt`] (paired win/draw/loss or pentanomial
//!   outcomes, fishtest's generalized SPRT) and [`BettingTest`] (bounded
//!   scores, any distribution: a betting e-process, valid under any
//!   stopping rule — the default kind).
//! * [`TestState`] — `Continue`, `Promote`, `Reject`, `Truncated` (a
//!   truncated test fails closed).
//! * [`NonInferiority`] — guardrails (cost, latency) within an absolute or
//!   relative margin: a fixed-horizon Welch test and an always-valid
//!   [`ConfidenceSequence`] that may be checked after every task.
//! * Invariants: [`check_minimum`] (safety pinned on every task),
//!   [`check_canaries`], and [`failure_rate_upper_bound`] — the honest
//!   Clopper–Pearson bound that comes with "all n passed".
//! * Calibration: [`wald_bernoulli`] (Wald's approximations),
//!   [`exact_bernoulli`] (exact lattice dynamic programming) and
//!   [`monte_carlo`] (seeded simulation of any test).
//!
//! * The law over a store: [`Policy`] (TOML, per artifact class) and
//!   [`decide`] / [`verdict_at`], which verify the trace, run the stages in
//!   order and return a [`Verdict`] appended as a `decision` event.
//!
//! * [`shown`] — every measured figure as a person reads it, for the CLI,
//!   the report and the Python bindings alike: significant digits in the
//!   scorer's unit ([`shown::number`]), and a verdict's effect turned back
//!   from the judged scale into candidate − baseline ([`shown::Scale`]).
//!
//! The statistics are pure (numbers in, numbers out); only `decide` reads a
//! store, through `ratchet-trace`.
//!
//! ```
//! use ratchet_gate::{BernoulliSprt, Boundaries, TestState, SequentialTest, exact_bernoulli};
//!
//! let bounds = Boundaries::new(0.05, 0.05)?;
//! let mut test = BernoulliSprt::new(0.70, 0.80, bounds)?.with_truncation(2000)?;
//! let mut decision = TestState::Continue;
//! for passed in [true, true, false, true, true, true, true, true] {
//!     decision = test.update(passed)?;
//! }
//! assert_eq!(decision, TestState::Continue); // eight tasks prove nothing yet
//!
//! // What the test does when the candidate is truly no better than p0:
//! let at_null = exact_bernoulli(&test, 0.70)?;
//! assert!(at_null.p_promote <= 0.05);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![deny(missing_docs)]

mod bench_stage;
pub mod benchmarks;
mod betting;
mod bound;
mod calibrate;
mod decide;
mod describe;
mod error;
mod gsprt;
mod invariants;
mod noninferiority;
mod order;
mod pin;
mod policy;
pub mod shown;
mod sprt;
mod stages;

pub use bench_stage::{BenchmarkRow, BenchmarksDetails};
pub use betting::{
    BettingCapital, BettingTest, ValidInterval, betting_interval, betting_lower_bound,
    betting_upper_bound,
};
pub use calibrate::{
    Assumptions, CALIBRATION_ROWS, CalibrationMethod, CalibrationRow, Effect, MonteCarloEstimate,
    OperatingPoint, WaldApproximation, calibration_table, exact_bernoulli, monte_carlo,
    power_warning, sample_game, wald_bernoulli,
};
pub use decide::{
    BaselineWorld, BoundSide, DecisionBound, EffectEstimate, EffectInterval, GateStatus,
    GuardrailDetails, GuardrailResult, InvariantsDetails, KIND_DECISION, Law, Outcome, Question,
    Refusal, Refused, RejectCause, SequentialDetails, Stage, StageDetails, StageReport, StageState,
    SuiteReport, SuiteRun, TaskOrder, TestFigures, TestsDetails, TooFewTasks, TraceHead,
    Undeclared, Verdict, VerificationDetails, baseline_world, decide, decide_in, decide_recorded,
    recompute_at, verdict_at, verdict_in,
};
// The name `verdict_at` had, kept for callers written before.
#[allow(deprecated)]
pub use decide::decide_at;
pub use error::{Error, Result};
pub use gsprt::{
    EloBounds, EloModel, LogisticElo, NELO_PER_T, PairedGsprt, Pairing, game_probabilities,
    llr_counts, logistic_score,
};
pub use invariants::{
    CanaryReport, MinimumReport, check_canaries, check_minimum, failure_rate_upper_bound,
};
pub use noninferiority::{
    ConfidenceSequence, Margin, NonInferiority, SampleStats, SequenceOutcome, WelchOutcome,
};
pub use pin::{
    PinnedPolicy, PolicySource, Reading, pin_policy, pinned_policies, pinned_policy,
    policy_differences, readings, resolve_policy,
};
pub use policy::{
    Canaries, ClassPolicy, Guardrail, GuardrailMethod, Invariant, MarginKind, Policy, Tasks,
    TestKind, Trust,
};
pub use ratchet_records::{Direction, Pinned};
pub use sprt::{BernoulliSprt, Boundaries, Decision, GaussianSprt, SequentialTest, TestState};
pub use stages::{RecordedPath, recorded_bernoulli_path, recorded_path};
