//! `ratchet-records`: the recorded payloads the gate and every reader
//! read besides scores and test runs, and the functions that read and
//! append them — nothing
//! that parses any tool's format. The importers (`ratchet-scorers`) write
//! these payloads; the gate (`ratchet-gate`) reads them through this crate
//! alone, so the gate's dependency closure holds no parser.
//!
//! # Brief overview
//!
//! * Directions: [`Direction`], the `scorer` event's payload
//!   ([`ScorerDeclaration`]), the first own declaration of a scorer
//!   ([`declared_direction`]) and the built-in default when there is none
//!   ([`direction_of`]: the [`Anchor`]s' own, the benchmark importers'
//!   timings downwards, otherwise upwards); [`direction_in`] is the two
//!   together.
//! * Pins: a `policy` event's payload ([`Pin`]: a class's policy or a
//!   rubric's version), this store's own pins at a seq ([`pins`]), the one
//!   in force for a rubric ([`rubric_pin_in`]), and [`append_pin`].
//! * Deployments: the `promotion` and `checkout` payloads
//!   ([`PromotionRecord`], [`CheckoutRecord`]) and the one reading of them
//!   every face shares: what runs for each class ([`deployments`],
//!   [`deployed`]: the latest promotion, or the heal that moved away from
//!   it), what each promotion ref must name ([`promotions`]), and where a
//!   deployment starts ([`deployment_start`]).
//! * Benchmark samples: every measurement of one run of one benchmark
//!   ([`Samples`], an event of kind [`KIND_SAMPLES`]), beside its summary
//!   score.
//!
//! The payloads' JSON is a compatibility promise: old verdicts are
//! recomputed from the bytes these types wrote. Every function returns the
//! trace store's own [`ratchet_trace::Error`] (a record that does not
//! parse is an edited trace, and the error says so).
//!
//! ```
//! use ratchet_records::{Direction, Pin, Pinned, append_pin, direction_in, pins, rubric_pin_in};
//! use ratchet_trace::{Store, StoreOptions};
//!
//! let dir = tempfile::tempdir()?;
//! let mut store = Store::create(dir.path().join(".ratchet"), StoreOptions::default())?;
//! let pin = Pin::Rubric { rubric: "helpfulness".into(), version: "v1".into() };
//! let pinned = append_pin(&mut store, &pin, None)?;
//! assert!(matches!(pinned, Pinned::Appended { .. }));
//!
//! let view = store.verified(&Default::default())?;
//! let all = pins(&view, u64::MAX)?;
//! assert_eq!(rubric_pin_in(&all, "helpfulness"), Some(("v1", pinned.seq())));
//! // No declaration in the trace: the built-in default.
//! assert_eq!(direction_in(&view, "latency_ms")?, Direction::LowerIsBetter);
//! assert_eq!(direction_in(&view, "accuracy")?, Direction::HigherIsBetter);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![deny(missing_docs)]

mod deployment;
mod direction;
mod pins;
mod samples;

pub use deployment::{
    CheckoutRecord, DeployedBy, Deployment, Promoted, PromotionRecord, checkouts, deployed,
    deployment_start, deployments, promotions,
};
pub use direction::{
    Anchor, CRITERION_NS, Direction, GBENCH_CPU_NS, GBENCH_REAL_NS, HYPERFINE_S, PASS_RATE,
    PYTEST_BENCHMARK_S, ScorerDeclaration, declared_direction, declared_direction_among,
    direction_in, direction_of,
};
pub use pins::{Pin, Pinned, append_pin, pinned_rubric_version, pins, pins_among, rubric_pin_in};
pub use samples::{KIND_SAMPLES, Samples};
