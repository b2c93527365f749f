//! The gate: `Policy`, `Verdict` and its `StageReport`s, `decide`,
//! `pin_policy`, `calibrate` and Welch's non-inferiority test.

use std::path::PathBuf;
use std::sync::Arc;

use arrow_array::{Float64Array, StringArray, UInt64Array};
use pyo3::prelude::*;

use crate::convert::{float_array, from_json, resolve_commit};
use crate::errors::{RatchetError, ToPyErr};
use crate::store::{Store, Unwarmed};
use crate::table::{Table, table};

/// A policy file (`ratchet_gate::Policy`).
#[pyclass(module = "ratchet._native", frozen)]
pub(crate) struct Policy {
    inner: ratchet_gate::Policy,
}

#[pymethods]
impl Policy {
    /// Parses a policy's TOML text.
    #[staticmethod]
    fn from_toml(text: &str) -> PyResult<Self> {
        Ok(Policy {
            inner: ratchet_gate::Policy::parse(text).map_err(ToPyErr::py)?,
        })
    }

    /// Reads a policy file.
    #[staticmethod]
    fn from_path(path: PathBuf) -> PyResult<Self> {
        Ok(Policy {
            inner: ratchet_gate::Policy::from_path(path).map_err(ToPyErr::py)?,
        })
    }

    /// The classes' names.
    #[getter]
    fn classes(&self) -> Vec<String> {
        self.inner.class.keys().cloned().collect()
    }

    /// The hash of class `cls` (what its verdicts record as `policy_hash`).
    fn hash(&self, cls: &str) -> PyResult<String> {
        Ok(self
            .inner
            .class(cls)
            .map_err(ToPyErr::py)?
            .hash()
            .to_string())
    }
}

/// A verdict (`ratchet_gate::Verdict`).
#[pyclass(module = "ratchet._native", frozen)]
pub(crate) struct Verdict {
    inner: ratchet_gate::Verdict,
    decision_seq: Option<u64>,
    /// How the verdict reads its primary scorer (unit, direction): its
    /// stages' figures are shown on it.
    scale: ratchet_gate::shown::Scale,
}

/// A verdict's outcome (`ratchet_gate::GateStatus`): the one vocabulary the
/// CLI, its `--json`, the report and the comment read it with. Equal to
/// its name as text (`status == "promote"`), so code that compared the
/// text keeps working.
#[pyclass(module = "ratchet._native", frozen)]
pub(crate) struct GateStatus {
    inner: ratchet_gate::GateStatus,
}

#[pymethods]
impl GateStatus {
    /// The name as `--json` serializes it: `promote`, `reject`, `continue`,
    /// `missing_evidence`, `unverified_trace` or `truncated`.
    #[getter]
    fn name(&self) -> &'static str {
        self.inner.as_str()
    }
    /// The outcome as a person reads it, the CLI's words:
    /// `cannot decide (evidence missing)` for a refusal.
    #[getter]
    fn words(&self) -> &'static str {
        self.inner.words()
    }
    /// The words as the CLI's headline: `CANNOT DECIDE (evidence missing)`.
    #[getter]
    fn headline(&self) -> String {
        self.inner.headline()
    }
    /// The exit code `ratchet gate` uses for it.
    #[getter]
    fn exit_code(&self) -> u8 {
        self.inner.exit_code()
    }
    fn __str__(&self) -> &'static str {
        self.inner.as_str()
    }
    fn __repr__(&self) -> String {
        format!("GateStatus({:?})", self.inner.as_str())
    }
    /// Equal to another status of the same name, or to the name as text.
    fn __eq__(&self, other: &Bound<'_, PyAny>) -> bool {
        if let Ok(other) = other.cast::<GateStatus>() {
            return other.get().inner == self.inner;
        }
        other
            .extract::<&str>()
            .is_ok_and(|text| text == self.inner.as_str())
    }
    /// The hash of its name (equal objects hash alike: the status and its
    /// name as text).
    fn __hash__(&self, py: Python<'_>) -> PyResult<isize> {
        pyo3::types::PyString::new(py, self.inner.as_str()).hash()
    }
}

#[pymethods]
impl Verdict {
    /// The outcome ([`GateStatus`]): its name, words, headline and exit code.
    #[getter]
    fn status(&self) -> GateStatus {
        GateStatus {
            inner: self.inner.outcome.status(),
        }
    }
    /// The exit code `ratchet gate` would use.
    #[getter]
    fn exit_code(&self) -> u8 {
        self.inner.outcome.status().exit_code()
    }
    /// The class decided.
    #[getter]
    fn class_name(&self) -> String {
        self.inner.class.clone()
    }
    /// The baseline commit.
    #[getter]
    fn baseline(&self) -> String {
        self.inner.baseline.to_string()
    }
    /// The candidate commit.
    #[getter]
    fn candidate(&self) -> String {
        self.inner.candidate.to_string()
    }
    /// Seq of the recorded `decision` event (None when nothing was recorded).
    #[getter]
    fn decision_seq(&self) -> Option<u64> {
        self.decision_seq
    }
    /// Reads a verdict back from its JSON (a `decision` event's payload,
    /// or what `to_json` gave): `to_json` of the result is the same text.
    #[staticmethod]
    fn from_json(json: &str) -> PyResult<Verdict> {
        let inner = ratchet_gate::Verdict::from_json(json.as_bytes()).map_err(ToPyErr::py)?;
        // Read alone: the primary scorer and its direction as the verdict
        // itself names them (else the default for the scorer's name).
        let scale = ratchet_gate::shown::Scale::of_verdict(None, &inner, None);
        Ok(Verdict {
            inner,
            decision_seq: None,
            scale,
        })
    }
    /// The whole verdict as the `decision` event holds it (its canonical JSON).
    fn to_json(&self) -> PyResult<String> {
        let bytes = self.inner.to_json().map_err(ToPyErr::py)?;
        String::from_utf8(bytes).map_err(|e| RatchetError::new_err(e.to_string()))
    }
    /// The whole verdict as Python dicts and lists.
    fn to_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        py.import("json")?.call_method1("loads", (self.to_json()?,))
    }
    /// Why it rejects or continues, in words (None for a promote).
    #[getter]
    fn reason(&self) -> Option<String> {
        match &self.inner.outcome {
            ratchet_gate::Outcome::Promote => None,
            ratchet_gate::Outcome::Reject { reason, .. }
            | ratchet_gate::Outcome::Continue { reason, .. } => Some(reason.clone()),
        }
    }
    /// Each stage that ran, in order, with its effect estimate, interval
    /// and N where the stage has them.
    #[getter]
    fn stages(&self) -> Vec<StageReport> {
        self.inner
            .stages
            .iter()
            .map(|r| StageReport::of(r, &self.scale))
            .collect()
    }
    fn __repr__(&self) -> PyResult<String> {
        Ok(format!(
            "Verdict(status={:?}, class={:?}, candidate={:?}, baseline={:?})",
            self.inner.outcome.status().as_str(),
            self.inner.class,
            self.inner.candidate,
            self.inner.baseline
        ))
    }
}

/// One stage of a verdict as a notebook shows it: read from the gate's
/// typed report (`ratchet_gate::StageReport`); `Verdict.to_dict()` has
/// every figure.
#[pyclass(module = "ratchet._native", frozen, get_all)]
#[derive(Debug, Clone)]
pub(crate) struct StageReport {
    /// The stage: `trace verification`, `tests`, `invariants`,
    /// `sequential test` or `guardrail <scorer>`.
    name: String,
    /// True passed, False failed, None still open.
    passed: Option<bool>,
    /// What `estimate` measures and which way is better (None when the
    /// stage estimates nothing): for the sequential test `candidate −
    /// baseline` in the scorer's own direction (a faster candidate of a
    /// lower-is-better timing is negative), whatever scale the gate judged
    /// on.
    measure: Option<String>,
    /// The effect estimate, in `unit`.
    estimate: Option<f64>,
    /// Lower end of its 95 % interval (None: one-sided or no interval).
    ci_low: Option<f64>,
    /// Upper end of its 95 % interval.
    ci_high: Option<f64>,
    /// How the interval was computed (None: fixed-sample, or no interval).
    interval: Option<String>,
    /// How much evidence the stage read: a count of `n_of`.
    n: Option<u64>,
    /// What `n` counts: `pairs` (tasks scored on both sides), `tasks`,
    /// `runs` or `events`.
    n_of: Option<String>,
    /// The unit of `estimate` and its interval (`s`, `ns`, …; None: a
    /// plain number).
    unit: Option<String>,
    /// `estimate` as a person reads it, in its unit (`-40.7 µs`).
    estimate_text: Option<String>,
    /// The interval as a person reads it (`[-45.1 µs, -36.2 µs]`; `−∞`
    /// for an open end).
    interval_text: Option<String>,
    /// The effect in words: `candidate − baseline: -40.7 µs [-45.1 µs,
    /// -36.2 µs] (an improvement: lower is better)` (None: no effect).
    effect_shown: Option<String>,
    /// The one-sided bound that matches the sequential test's decision, on
    /// the improvement (positive is better, whatever the scorer's
    /// direction), in `unit`: a promote's lower bound (above 0 exactly
    /// when it promoted), a reject's upper bound (below the gap). None for
    /// verdicts before law 4, a test still open, and other stages.
    bound: Option<f64>,
    /// `lower` (the improvement is at least `bound`) or `upper` (at most).
    bound_side: Option<String>,
    /// The miss rate the bound holds at: the test's α (lower) or β (upper).
    bound_level: Option<f64>,
    /// The bound in words: `promoted: improvement ≥ +0.031 (one-sided, α =
    /// 0.05, always valid)`.
    bound_text: Option<String>,
    /// The stage in one line, as `ratchet gate` prints it.
    shown: String,
}

impl StageReport {
    fn of(r: &ratchet_gate::StageReport, scale: &ratchet_gate::shown::Scale) -> Self {
        use ratchet_gate::shown::{Unit, signed};
        use ratchet_gate::{GuardrailResult, Stage, StageDetails};
        let mut unit = Unit::Plain;
        let name = r.stage.to_string();
        let mut stage = StageReport {
            name,
            passed: r.passed.as_option(),
            measure: None,
            estimate: None,
            ci_low: None,
            ci_high: None,
            interval: None,
            n: None,
            n_of: None,
            unit: None,
            estimate_text: None,
            interval_text: None,
            effect_shown: None,
            bound: None,
            bound_side: None,
            bound_level: None,
            bound_text: None,
            shown: r.shown(scale),
        };
        let count = |n: usize| u64::try_from(n).unwrap_or(u64::MAX);
        match &r.details {
            StageDetails::Verification(d) => {
                stage.n = Some(d.size);
                stage.n_of = Some("events".into());
            }
            // No suite required: no count to show (0 runs would read as missing).
            StageDetails::Tests(d) if !d.suites.is_empty() => {
                stage.n = Some(d.suites.iter().map(|x| x.runs.len() as u64).sum());
                stage.n_of = Some("runs".into());
            }
            StageDetails::Tests(_) => {}
            StageDetails::Invariants(d) => {
                // The least-evidenced invariant: what the stage rests on.
                stage.n = d.invariants.iter().map(|i| i.tasks).min();
                stage.n_of = stage.n.map(|_| "tasks".into());
            }
            StageDetails::Sequential(d) => {
                // Shown as read (candidate − baseline in the scorer's
                // direction), never on the gate's judged scale.
                match (&d.effect, scale.effect(d)) {
                    (Some(e), Some(read)) => {
                        unit = read.unit;
                        stage.measure = Some(format!("{} ({})", read.measure, read.better));
                        stage.estimate = Some(read.value);
                        stage.ci_low = Some(read.low);
                        stage.ci_high = Some(read.high);
                        stage.interval = e.interval.map(|i| i.as_str().to_string());
                        stage.n = Some(count(e.n));
                        if let Some(b) = read.bound {
                            stage.bound = Some(b.improvement);
                            stage.bound_side = Some(
                                match b.side {
                                    ratchet_gate::BoundSide::Lower => "lower",
                                    ratchet_gate::BoundSide::Upper => "upper",
                                }
                                .into(),
                            );
                            stage.bound_level = Some(b.level);
                            stage.bound_text = Some(b.text);
                        }
                        stage.effect_shown = Some(read.text);
                    }
                    _ => {
                        stage.measure = Some(d.test.effect_measure().to_string());
                        stage.n = Some(count(d.tasks_available));
                    }
                }
                stage.n_of = Some("pairs".into());
            }
            StageDetails::Guardrail(d) => {
                if let Stage::Guardrail(scorer) = &r.stage {
                    unit = Unit::of_scorer(scorer);
                }
                stage.measure = Some("excess over the margin (below 0: non-inferior)".into());
                match d.result {
                    GuardrailResult::Welch(w) => {
                        // Welch's test is one-sided and reports no N.
                        stage.estimate = Some(w.excess);
                    }
                    GuardrailResult::Sequence(q) => {
                        stage.estimate = Some(q.excess);
                        stage.ci_high = Some(q.upper_bound);
                        stage.interval = Some("confidence sequence, upper bound".into());
                        stage.n = Some(q.n);
                        stage.n_of = Some("pairs".into());
                    }
                }
            }
            StageDetails::TooFewTasks(d) => {
                stage.n = Some(count(d.tasks));
                stage.n_of = Some("pairs".into());
            }
            StageDetails::Refused(d) => {
                stage.n = Some(count(d.tasks));
                stage.n_of = Some("pairs".into());
            }
            // The slowest benchmark first: the one the stage turns on.
            StageDetails::Benchmarks(d) => {
                if let Some(first) = d.benchmarks.first() {
                    stage.measure = Some(format!(
                        "ratio candidate / baseline of {} (above 1: slower)",
                        first.benchmark
                    ));
                    stage.estimate = Some(first.ratio);
                    stage.ci_low = Some(first.low);
                    stage.ci_high = Some(first.high);
                    stage.n = Some(count(first.n));
                    stage.n_of = Some("pairs".into());
                }
            }
        }
        if stage.measure.is_some() {
            stage.unit = Some(unit.as_str().to_string()).filter(|u| !u.is_empty());
            let shown = |v: f64| {
                if stage.n_of.is_some() && matches!(r.details, StageDetails::Benchmarks(_)) {
                    ratchet_gate::shown::sig(v)
                } else {
                    signed(v, unit)
                }
            };
            stage.estimate_text = stage.estimate.map(shown);
            if stage.ci_low.is_some() || stage.ci_high.is_some() {
                stage.interval_text = Some(format!(
                    "[{}, {}]",
                    stage.ci_low.map_or_else(|| "−∞".to_string(), shown),
                    stage.ci_high.map_or_else(|| "+∞".to_string(), shown)
                ));
            }
        }
        stage
    }
}

#[pymethods]
impl StageReport {
    fn __repr__(&self) -> String {
        let passed = match self.passed {
            Some(true) => "passed",
            Some(false) => "failed",
            None => "open",
        };
        let mut out = format!("StageReport({:?}, {passed}", self.name);
        if let Some(e) = &self.estimate_text {
            out.push_str(&format!(", estimate={e}"));
        }
        if let Some(ci) = &self.interval_text {
            out.push_str(&format!(", ci={ci}"));
        }
        if let (Some(n), Some(of)) = (self.n, &self.n_of) {
            out.push_str(&format!(", n={n} {of}"));
        }
        out.push(')');
        out
    }
}

/// Decides `cls` for `candidate` against `baseline` and records the
/// verdict (`record=False`: recomputes at the head, appending nothing).
/// `policy`: a `Policy`; default: `policy.toml` in the store's directory
/// when it exists. A class pinned in the trace decides under its pin (a
/// policy given must then be identical, or it is refused).
///
/// `baseline` and `candidate` are revisions as the CLI takes them (`main`,
/// `HEAD~1`, a short or full id), resolved in the git repository enclosing
/// `repo` (default: the current directory, as the CLI). A full id the
/// repository lacks (a commit measured elsewhere) is accepted unless
/// `allow_unknown_commit=False` (the CLI's default; Python's keeps the ids
/// it always took).
#[pyfunction]
#[pyo3(signature = (store, baseline, candidate, cls, policy=None, record=true, repo=None, allow_unknown_commit=true))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn decide(
    py: Python<'_>,
    store: &Store,
    baseline: &str,
    candidate: &str,
    cls: &str,
    policy: Option<&Policy>,
    record: bool,
    repo: Option<PathBuf>,
    allow_unknown_commit: bool,
) -> PyResult<Verdict> {
    let (b, c) = py.detach(|| {
        Ok::<_, PyErr>((
            resolve_commit(baseline, repo.clone(), allow_unknown_commit)?,
            resolve_commit(candidate, repo, allow_unknown_commit)?,
        ))
    })?;
    let file = match policy {
        Some(p) => Some(p.inner.clone()),
        None => {
            let path = store.lock()?.store()?.dir().join("policy.toml");
            path.exists()
                .then(|| ratchet_gate::Policy::from_path(&path))
                .transpose()
                .map_err(ToPyErr::py)?
        }
    };
    let (inner, receipt, scale) = py.detach(|| {
        let mut owner = store.lock()?;
        let warm = match owner.ledger() {
            Ok(l) => Some(l),
            // A trace that does not verify gets its unverified verdict.
            Err(Unwarmed::Trace(
                ratchet_trace::Error::Tampered { .. } | ratchet_trace::Error::MacsUnchecked { .. },
            )) => None,
            Err(e) => return Err(ToPyErr::py(e)),
        };
        let (class, _) =
            ratchet_gate::resolve_policy(warm.as_ref().map(|l| l.view()), cls, file.as_ref())
                .map_err(ToPyErr::py)?;
        let question = ratchet_gate::Question {
            class: cls,
            policy: &class,
            baseline: &b,
            candidate: &c,
            checkpoint: None,
            allow_unpinned: false,
        };
        let verified = warm.is_some();
        let (verdict, receipt) = match warm {
            Some(l) if record => ratchet_gate::decide_in(l, &question),
            Some(l) => ratchet_gate::verdict_in(l, &question).map(|v| (v, None)),
            None => {
                let store = owner.store()?;
                store
                    .head()
                    .map_err(ratchet_gate::Error::from)
                    .and_then(|h| ratchet_gate::verdict_at(store, &question, h.size))
                    .map(|v| (v, None))
            }
        }
        .map_err(ToPyErr::py)?;
        // How the verdict reads its primary scorer: from the trace the
        // gate read, when it verifies.
        let ledger = if verified { owner.ledger().ok() } else { None };
        let view = ledger.map(|l| &*l).map(ratchet_trace::Ledger::view);
        let scale = ratchet_gate::shown::Scale::of_verdict(view, &verdict, Some(&class));
        Ok((verdict, receipt, scale))
    })?;
    Ok(Verdict {
        inner,
        decision_seq: receipt.map(|r| r.seq),
        scale,
    })
}

/// Pins `policy`'s class `cls` in the trace: from then on every decision
/// of the class is taken under it. Returns the seq of the pin in force
/// (appended now, or already there).
#[pyfunction]
pub(crate) fn pin_policy(
    py: Python<'_>,
    store: &Store,
    policy: &Policy,
    cls: &str,
) -> PyResult<u64> {
    let class = policy.inner.class(cls).map_err(ToPyErr::py)?.clone();
    store.with(py, |s| {
        ratchet_gate::pin_policy(s, cls, &class)
            .map(|p| p.seq())
            .map_err(ToPyErr::py)
    })
}

/// The operating characteristic of a class's test: an Arrow table of
/// effect_unit, effect, p_promote, p_truncated (`max_n` reached
/// undecided), expected_n, n_p10, n_p50, n_p90, method.
#[pyfunction]
#[pyo3(signature = (policy, cls, p0=0.5, sigma=1.0, draw=0.3, runs=2000, seed=1))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn calibrate(
    py: Python<'_>,
    policy: &Policy,
    cls: &str,
    p0: f64,
    sigma: f64,
    draw: f64,
    runs: usize,
    seed: u64,
) -> PyResult<Table> {
    let class = policy.inner.class(cls).map_err(ToPyErr::py)?;
    let assumptions = ratchet_gate::Assumptions {
        p0,
        sigma,
        draw,
        runs,
        seed,
    };
    let rows = py
        .detach(|| ratchet_gate::calibration_table(class, &assumptions, &mut || {}))
        .map_err(ToPyErr::py)?;
    // The effect as its unit and its value (a pass rate, a mean shift, an Elo).
    let unit: Vec<&str> = rows.iter().map(|r| r.effect.unit()).collect();
    let effect: Vec<f64> = rows.iter().map(|r| r.effect.value()).collect();
    let method: Vec<&str> = rows.iter().map(|r| r.method.as_str()).collect();
    table(vec![
        ("effect_unit", Arc::new(StringArray::from_iter_values(unit))),
        ("effect", Arc::new(Float64Array::from_iter_values(effect))),
        (
            "p_promote",
            Arc::new(Float64Array::from_iter_values(
                rows.iter().map(|r| r.p_promote),
            )),
        ),
        (
            "p_truncated",
            Arc::new(Float64Array::from_iter_values(
                rows.iter().map(|r| r.p_truncated),
            )),
        ),
        (
            "expected_n",
            Arc::new(Float64Array::from_iter_values(
                rows.iter().map(|r| r.expected_n),
            )),
        ),
        (
            "n_p10",
            Arc::new(UInt64Array::from_iter_values(
                rows.iter().map(|r| r.n_quantiles[0]),
            )),
        ),
        (
            "n_p50",
            Arc::new(UInt64Array::from_iter_values(
                rows.iter().map(|r| r.n_quantiles[1]),
            )),
        ),
        (
            "n_p90",
            Arc::new(UInt64Array::from_iter_values(
                rows.iter().map(|r| r.n_quantiles[2]),
            )),
        ),
        ("method", Arc::new(StringArray::from_iter_values(method))),
    ])
}

/// Welch's non-inferiority test of a guardrail (`ratchet_gate::NonInferiority::welch`):
/// a dict of excess, se, t, df, p_value, non_inferior. The samples: any
/// float array-likes (as the detectors' `run` takes them).
#[pyfunction]
#[pyo3(signature = (baseline, candidate, margin, relative=false, lower_is_better=true, alpha=0.05))]
pub(crate) fn welch_non_inferiority<'py>(
    py: Python<'py>,
    baseline: &Bound<'py, PyAny>,
    candidate: &Bound<'py, PyAny>,
    margin: f64,
    relative: bool,
    lower_is_better: bool,
    alpha: f64,
) -> PyResult<Bound<'py, PyAny>> {
    let direction = if lower_is_better {
        ratchet_gate::Direction::LowerIsBetter
    } else {
        ratchet_gate::Direction::HigherIsBetter
    };
    let margin = if relative {
        ratchet_gate::Margin::Relative(margin)
    } else {
        ratchet_gate::Margin::Absolute(margin)
    };
    let test = ratchet_gate::NonInferiority::new(direction, margin, alpha).map_err(ToPyErr::py)?;
    let (baseline, candidate) = (
        float_array(py, baseline, "baseline")?,
        float_array(py, candidate, "candidate")?,
    );
    let baseline_stats =
        ratchet_gate::SampleStats::from_values(baseline.as_slice()?).map_err(ToPyErr::py)?;
    let candidate_stats =
        ratchet_gate::SampleStats::from_values(candidate.as_slice()?).map_err(ToPyErr::py)?;
    let out = test
        .welch(&baseline_stats, &candidate_stats)
        .map_err(ToPyErr::py)?;
    from_json(py, &out)
}
