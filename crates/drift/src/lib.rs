//! `ratchet-drift`: detectors that watch a deployed commit's live scores,
//! and the average-run-length (ARL) arithmetic that calibrates them.
//!
//! # Brief overview
//!
//! * [`Detector`] — `update(x) -> Option<Alarm>`, `reset`, `n`; implemented
//!   by [`Cusum`] (two-sided tabular, optional fast initial response),
//!   [`Ewma`] (time-varying or steady-state limits, [`EwmaLimits`]) and
//!   [`PageHinkley`] (both directions). An [`Alarm`] carries the statistic,
//!   the limit, the direction and the estimated start of the change.
//! * ARL: [`cusum_arl`] and [`ewma_arl`] (Brook–Evans / Lucas–Saccucci
//!   Markov chains, reproducing the published tables), [`siegmund`] (quick
//!   guess), [`monte_carlo_arl`] (seeded cross-check), and the solvers
//!   [`cusum_h_for_arl0`] and [`ewma_l_for_arl0`].
//!
//! * Live: [`Monitor`] follows one commit's score stream in the trace
//!   (started from that commit's measured statistics, then self-starting:
//!   [`LiveChart`]; [`deployment_arl0s`] measures what each deployment's
//!   in-control ARL is from a short warm-up), [`record_alarm`]
//!   appends an alarm event, [`best_commit`] ranks commits by a lower
//!   confidence bound, and [`warmup_false_alarms`] / [`size_warmup`] report
//!   what estimated μ and σ do to a plug-in chart's false alarms (the
//!   reason the monitor's charts self-start).
//!
//! The detectors and ARL arithmetic are pure; the monitor and the ranking
//! read the store through `ratchet-trace`.
//!
//! ```
//! use ratchet_drift::{Cusum, Detector, cusum_arl, cusum_h_for_arl0, DEFAULT_STATES};
//!
//! // Montgomery's two-sided CUSUM with k = 1/2, h = 4: ARL0 ≈ 168.
//! let arl0 = cusum_arl(0.5, 4.0, 0.0, false, DEFAULT_STATES)?;
//! assert!((arl0 - 168.0).abs() < 1.0);
//! // The h for a target in-control ARL of 500:
//! let h = cusum_h_for_arl0(0.5, 500.0, DEFAULT_STATES)?;
//!
//! let mut cusum = Cusum::new(0.80, 0.05, 0.5, h)?; // mean score 0.80, sd 0.05
//! let mut alarm = None;
//! for x in [0.81, 0.79, 0.80, 0.74, 0.73, 0.74, 0.72, 0.73, 0.74, 0.73] {
//!     alarm = alarm.or(cusum.update(x)?);
//! }
//! assert!(alarm.is_some()); // a drop of more than 1σ is caught
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![deny(missing_docs)]

mod arl;
mod bernoulli;
mod detectors;
mod error;
mod live;
mod monitor;
mod path;

pub use arl::{
    ARL_SHIFTS, ArlProfile, ArlRow, DEFAULT_STATES, RunLengthEstimate, arl_profile, cusum_arl,
    cusum_arl_one_sided, cusum_h_for_arl0, cusum_h_for_arl0_one_sided, ewma_arl, ewma_l_for_arl0,
    monte_carlo_arl, siegmund, siegmund_one_sided,
};
pub use bernoulli::{BernoulliCusum, bernoulli_cusum_arl};
pub use detectors::{Alarm, Cusum, Detector, Ewma, EwmaLimits, PageHinkley, Shift, alarms_in};
pub use error::{Error, Result};
pub use live::{LiveChart, Scores, Warmup, deployment_arl0s};
pub use monitor::{
    Chart, Follow, FollowReport, KIND_ALARM, Monitor, RankedCommit, Ranking, TraceAlarm,
    WarmupReport, Watch, best_commit, deployment_start, latest_alarm, record_alarm, size_warmup,
    warmup_false_alarms,
};
pub use path::{AlarmPath, NotDrawn, PathFrom};
