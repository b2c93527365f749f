//! `ratchet-gate`: the statistics of ratchet's promotion gate — sequential
//! tests that decide promote / reject / continue with bounded error rates,
//! and the calibration that shows what a test will do before it is trusted.
//!
//! # The map
//!
//! At the root, the law over a store: a [`Policy`] (TOML, per artifact
//! class), a [`Question`] and the entry points, named by effect —
//! [`verdict_at`] and [`verdict_in`] compute a [`Verdict`] and record
//! nothing; [`decide`], [`decide_recorded`] and [`decide_in`] compute it
//! and append it as a `decision` event; [`recompute_at`] recomputes a
//! recorded one under the [`Law`] it names. Its [`Outcome`] and
//! [`GateStatus`] say what it decided.
//!
//! The rest is grouped by role, as the modules hold it:
//!
//! * [`sprt`] — Wald's [`sprt::Boundaries`], the [`sprt::SequentialTest`]
//!   interface (`update`, `llr`, `n`, `decision`), [`sprt::BernoulliSprt`]
//!   (pass/fail per task), [`sprt::GaussianSprt`] (continuous scores) and
//!   [`sprt::TestState`] (`Continue`, `Promote`, `Reject`, `Truncated`: a
//!   truncated test fails closed).
//! * [`betting`] — [`betting::BettingTest`] (bounded scores, any
//!   distribution: a betting e-process valid under any stopping rule — the
//!   default kind) and its always-valid intervals.
//! * [`gsprt`] — [`gsprt::PairedGsprt`], fishtest's generalized SPRT on
//!   paired win/draw/loss or pentanomial outcomes, and its Elo models.
//! * [`benchmarks`] — the per-benchmark sign e-processes of a `benchmarks`
//!   class.
//! * [`noninferiority`] — guardrails (cost, latency) within an absolute or
//!   relative margin: a fixed-horizon Welch test and an always-valid
//!   [`noninferiority::ConfidenceSequence`].
//! * [`invariants`] — [`invariants::check_minimum`] (safety pinned on every
//!   task), canaries, and the Clopper–Pearson bound that comes with "all n
//!   passed".
//! * [`calibrate`] — what a test does before it is trusted: Wald's
//!   approximations, exact lattice dynamic programming, seeded Monte Carlo.
//! * [`policy`] and [`pin`] — a class's policy, and the pin that makes it
//!   the one a class decides under.
//! * [`verdict`] — the figures a verdict records, stage by stage, and the
//!   paths a report draws from them.
//! * [`shown`] — every measured figure as a person reads it, for the CLI,
//!   the report and the Python bindings alike.
//!
//! The names these modules hold were all re-exported at the root before;
//! they still are, hidden from these docs, for callers written then.
//!
//! The statistics are pure (numbers in, numbers out); only `decide` reads a
//! store, through `ratchet-trace`.
//!
//! ```
//! use ratchet_gate::calibrate::exact_bernoulli;
//! use ratchet_gate::sprt::{BernoulliSprt, Boundaries, SequentialTest, TestState};
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
pub mod betting;
mod bound;
pub mod calibrate;
mod decide;
mod describe;
mod error;
pub mod gsprt;
pub mod invariants;
pub mod noninferiority;
mod order;
pub mod pin;
pub mod policy;
pub mod shown;
pub mod sprt;
mod stages;

pub use decide::{
    GateStatus, KIND_DECISION, Law, Outcome, Question, RejectCause, Stage, Verdict, decide,
    decide_in, decide_recorded, recompute_at, verdict_at, verdict_in,
};
pub use error::{Error, Result};
pub use policy::{ClassPolicy, Policy};
pub use ratchet_records::Direction;

/// The figures a [`Verdict`] records, stage by stage, and the paths a
/// report draws from a recorded one.
pub mod verdict {
    pub use crate::bench_stage::{BenchmarkRow, BenchmarksDetails};
    pub use crate::decide::{
        BaselineWorld, BoundSide, DecisionBound, EffectEstimate, EffectInterval, GuardrailDetails,
        GuardrailResult, InvariantsDetails, Refusal, Refused, SequentialDetails, StageDetails,
        StageReport, StageState, SuiteReport, SuiteRun, TaskOrder, TestFigures, TestsDetails,
        TooFewTasks, TraceHead, Undeclared, VerificationDetails, baseline_world,
    };
    pub use crate::stages::{RecordedPath, recorded_bernoulli_path, recorded_path};
}

// Every name the modules hold, at the root as before (hidden: new code
// names the module).
#[doc(hidden)]
pub use betting::{
    BettingCapital, BettingTest, ValidInterval, betting_interval, betting_lower_bound,
    betting_upper_bound,
};
#[doc(hidden)]
pub use calibrate::{
    Assumptions, CALIBRATION_ROWS, CalibrationMethod, CalibrationRow, Effect, MonteCarloEstimate,
    OperatingPoint, WaldApproximation, calibration_table, exact_bernoulli, monte_carlo,
    power_warning, sample_game, wald_bernoulli,
};
// The name `verdict_at` had.
#[doc(hidden)]
#[allow(deprecated)]
pub use decide::decide_at;
#[doc(hidden)]
pub use gsprt::{
    EloBounds, EloModel, LogisticElo, NELO_PER_T, PairedGsprt, Pairing, game_probabilities,
    llr_counts, logistic_score,
};
#[doc(hidden)]
pub use invariants::{
    CanaryReport, MinimumReport, check_canaries, check_minimum, failure_rate_upper_bound,
};
#[doc(hidden)]
pub use noninferiority::{
    ConfidenceSequence, Margin, NonInferiority, SampleStats, SequenceOutcome, WelchOutcome,
};
#[doc(hidden)]
pub use pin::{
    PinnedPolicy, PolicySource, Reading, pin_policy, pinned_policies, pinned_policy,
    policy_differences, readings, resolve_policy,
};
#[doc(hidden)]
pub use policy::{
    Canaries, Guardrail, GuardrailMethod, Invariant, MarginKind, Tasks, TestKind, Trust,
};
#[doc(hidden)]
pub use ratchet_records::Pinned;
#[doc(hidden)]
pub use sprt::{BernoulliSprt, Boundaries, Decision, GaussianSprt, SequentialTest, TestState};
#[doc(hidden)]
pub use verdict::*;
