//! `ratchet._native`: the Python face of ratchet. Types in, types out: each
//! function converts its arguments, calls one library function (releasing
//! the GIL around anything that reads or writes a store), and converts the
//! result. Tables leave as Arrow (the PyCapsule stream interface), arrays
//! arrive as NumPy views (no copy).

use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard};

use arrow_array::{ArrayRef, Float64Array, Int64Array, RecordBatch, StringArray, UInt64Array};
use arrow_schema::{DataType, Field, Schema};
use numpy::PyReadonlyArray1;
use pyo3::create_exception;
use pyo3::exceptions::PyException;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use pyo3_arrow::PyTable;

use ratchet_drift::Detector;
use ratchet_trace::{AsOf, CommitId, EventDraft, ScorerRef, StoreOptions, WriterKey};

create_exception!(
    _native,
    RatchetError,
    PyException,
    "Every error ratchet raises."
);
create_exception!(
    _native,
    TamperedError,
    RatchetError,
    "The store does not verify, or its schema was altered."
);
create_exception!(
    _native,
    InvalidInputError,
    RatchetError,
    "An argument, a file or a policy is malformed."
);
create_exception!(
    _native,
    NotFoundError,
    RatchetError,
    "No store (or file) where one was named."
);
create_exception!(
    _native,
    KeyRequiredError,
    RatchetError,
    "A keyed store needs its writer key (or was given another store's)."
);
create_exception!(
    _native,
    ReadOnlyError,
    RatchetError,
    "The store was opened read-only."
);

/// A library error as the Python exception of its kind, message intact.
trait ToPyErr {
    fn py(self) -> PyErr;
}

impl ToPyErr for ratchet_trace::Error {
    fn py(self) -> PyErr {
        use ratchet_trace::Error as E;
        let msg = self.to_string();
        match self {
            E::Tampered { .. } | E::SchemaAltered { .. } => TamperedError::new_err(msg),
            E::StoreMissing { .. } => NotFoundError::new_err(msg),
            E::KeyRequired | E::WrongKey { .. } | E::MacsUnchecked { .. } => {
                KeyRequiredError::new_err(msg)
            }
            E::ReadOnly { .. } => ReadOnlyError::new_err(msg),
            E::InvalidInput { .. } | E::ReservedKind { .. } => InvalidInputError::new_err(msg),
            _ => RatchetError::new_err(msg),
        }
    }
}

impl ToPyErr for ratchet_gate::Error {
    fn py(self) -> PyErr {
        match self {
            ratchet_gate::Error::Trace(e) => e.py(),
            ratchet_gate::Error::Policy { .. }
            | ratchet_gate::Error::PolicyFile { .. }
            | ratchet_gate::Error::PolicyNotPinned { .. }
            | ratchet_gate::Error::NoPolicy { .. }
            | ratchet_gate::Error::InvalidParameter { .. }
            | ratchet_gate::Error::InvalidObservation { .. } => {
                InvalidInputError::new_err(self.to_string())
            }
            other => RatchetError::new_err(other.to_string()),
        }
    }
}

impl ToPyErr for ratchet_drift::Error {
    fn py(self) -> PyErr {
        match self {
            ratchet_drift::Error::Trace(e) => e.py(),
            ratchet_drift::Error::InvalidParameter { .. }
            | ratchet_drift::Error::InvalidObservation { .. } => {
                InvalidInputError::new_err(self.to_string())
            }
            other => RatchetError::new_err(other.to_string()),
        }
    }
}

impl ToPyErr for ratchet_scorers::Error {
    fn py(self) -> PyErr {
        match self {
            ratchet_scorers::Error::Trace(e) => e.py(),
            ratchet_scorers::Error::Io { .. } => NotFoundError::new_err(self.to_string()),
            other => InvalidInputError::new_err(other.to_string()),
        }
    }
}

impl ToPyErr for arrow_schema::ArrowError {
    fn py(self) -> PyErr {
        RatchetError::new_err(format!("arrow: {self}"))
    }
}

fn commit(text: &str) -> PyResult<CommitId> {
    CommitId::parse(text).map_err(ToPyErr::py)
}

/// Python object → JSON (through Python's own `json`, so what it accepts
/// is exactly what `json.dumps` accepts).
fn to_json(py: Python<'_>, obj: &Bound<'_, PyAny>) -> PyResult<serde_json::Value> {
    let text: String = py
        .import("json")?
        .call_method1("dumps", (obj,))?
        .extract()?;
    serde_json::from_str(&text).map_err(|e| InvalidInputError::new_err(e.to_string()))
}

/// JSON → Python object.
fn from_json<'py>(py: Python<'py>, value: &impl serde::Serialize) -> PyResult<Bound<'py, PyAny>> {
    let text = serde_json::to_string(value).map_err(|e| RatchetError::new_err(e.to_string()))?;
    py.import("json")?.call_method1("loads", (text,))
}

fn table(columns: Vec<(&str, ArrayRef)>) -> PyResult<PyTable> {
    let fields: Vec<Field> = columns
        .iter()
        .map(|(name, a)| {
            Field::new(
                *name,
                a.data_type().clone(),
                a.null_count() > 0 || matches!(a.data_type(), DataType::Null),
            )
        })
        .collect();
    let schema = Arc::new(Schema::new(fields));
    let batch = RecordBatch::try_new(
        schema.clone(),
        columns.into_iter().map(|(_, a)| a).collect(),
    )
    .map_err(ToPyErr::py)?;
    PyTable::try_new(vec![batch], schema).map_err(|e| RatchetError::new_err(e.to_string()))
}

/// A trace store (`ratchet_trace::Store`).
#[pyclass(module = "ratchet._native")]
struct Store {
    inner: Mutex<Owner>,
}

/// The store and, once a call needed it, its verified view kept warm: a
/// notebook verifies the trace once and each later call reads only what
/// was appended since ([`ratchet_trace::Ledger::refresh`]).
struct Owner {
    cold: Option<ratchet_trace::Store>,
    warm: Option<ratchet_trace::Ledger>,
}

impl Owner {
    fn new(store: ratchet_trace::Store) -> Self {
        Owner {
            cold: Some(store),
            warm: None,
        }
    }

    fn store(&mut self) -> &mut ratchet_trace::Store {
        match (&mut self.cold, &mut self.warm) {
            (_, Some(l)) => l.store_mut(),
            (Some(s), None) => s,
            // Exactly one of the two is always held.
            (None, None) => unreachable!("a store owner holds its store"),
        }
    }

    /// The warm ledger, verified now if it was not yet (the store is kept
    /// if it does not verify), and refreshed.
    fn ledger(&mut self) -> ratchet_trace::Result<&mut ratchet_trace::Ledger> {
        if self.warm.is_none() {
            let Some(store) = self.cold.take() else {
                unreachable!("a store owner holds its store")
            };
            match store.verified(&ratchet_trace::VerifyOptions::default()) {
                Ok(view) => {
                    self.warm = Some(ratchet_trace::Ledger::with_view(
                        store,
                        view,
                        ratchet_trace::VerifyOptions::default(),
                    )?);
                }
                Err(e) => {
                    self.cold = Some(store);
                    return Err(e);
                }
            }
        }
        let Some(ledger) = self.warm.as_mut() else {
            unreachable!("set above")
        };
        ledger.refresh()?;
        Ok(ledger)
    }
}

fn options(key: Option<PathBuf>) -> PyResult<StoreOptions> {
    let mut o = StoreOptions::default();
    if let Some(k) = key {
        o = o.writer_key(WriterKey::read_file(&k).map_err(ToPyErr::py)?);
    }
    Ok(o)
}

impl Store {
    fn lock(&self) -> PyResult<MutexGuard<'_, Owner>> {
        self.inner
            .lock()
            .map_err(|_| RatchetError::new_err("the store's lock was poisoned by a failed call"))
    }

    /// Runs `f` on the store with the GIL released (other Python threads
    /// run meanwhile; this one waits for the store's lock).
    fn with<T: Send>(
        &self,
        py: Python<'_>,
        f: impl FnOnce(&mut ratchet_trace::Store) -> PyResult<T> + Send,
    ) -> PyResult<T> {
        py.detach(|| f(self.lock()?.store()))
    }

    /// Runs `f` on the warm owner (verified once, refreshed each call)
    /// with the GIL released.
    fn warm<T: Send>(
        &self,
        py: Python<'_>,
        f: impl FnOnce(&mut ratchet_trace::Ledger) -> PyResult<T> + Send,
    ) -> PyResult<T> {
        py.detach(|| f(self.lock()?.ledger().map_err(ToPyErr::py)?))
    }
}

#[pymethods]
impl Store {
    /// Opens the store at `path` (with the writer key file `key` for a keyed store).
    #[staticmethod]
    #[pyo3(signature = (path, key=None))]
    fn open(py: Python<'_>, path: PathBuf, key: Option<PathBuf>) -> PyResult<Self> {
        let o = options(key)?;
        let s = py
            .detach(|| ratchet_trace::Store::open(&path, o))
            .map_err(ToPyErr::py)?;
        Ok(Store {
            inner: Mutex::new(Owner::new(s)),
        })
    }

    /// Creates a store at `path` (keyed by the writer key file `key`, if given).
    #[staticmethod]
    #[pyo3(signature = (path, key=None))]
    fn create(py: Python<'_>, path: PathBuf, key: Option<PathBuf>) -> PyResult<Self> {
        let o = options(key)?;
        let s = py
            .detach(|| ratchet_trace::Store::create(&path, o))
            .map_err(ToPyErr::py)?;
        Ok(Store {
            inner: Mutex::new(Owner::new(s)),
        })
    }

    /// The store's id.
    #[getter]
    fn id(&self) -> PyResult<String> {
        Ok(self.lock()?.store().id().to_string())
    }

    /// Events in the trace.
    #[getter]
    fn size(&self) -> PyResult<u64> {
        Ok(self.lock()?.store().head().map_err(ToPyErr::py)?.size)
    }

    /// Appends an event of `kind` with a JSON-serializable `payload`; its seq.
    #[pyo3(signature = (kind, payload, session=None, commit=None))]
    fn append(
        &self,
        py: Python<'_>,
        kind: &str,
        payload: &Bound<'_, PyAny>,
        session: Option<String>,
        commit: Option<&str>,
    ) -> PyResult<u64> {
        let mut d = EventDraft::json(kind, &to_json(py, payload)?).map_err(ToPyErr::py)?;
        if let Some(s) = session {
            d = d.session(s);
        }
        if let Some(c) = commit {
            d = d.commit(self::commit(c)?);
        }
        Ok(self
            .with(py, move |s| s.append(d).map_err(ToPyErr::py))?
            .seq)
    }

    /// Records a score; its seq.
    #[pyo3(signature = (commit, task, scorer, value, scorer_version=None, cost=None, latency_ms=None, session="python"))]
    #[allow(clippy::too_many_arguments)]
    fn record_score(
        &self,
        py: Python<'_>,
        commit: &str,
        task: &str,
        scorer: &str,
        value: f64,
        scorer_version: Option<String>,
        cost: Option<f64>,
        latency_ms: Option<f64>,
        session: &str,
    ) -> PyResult<u64> {
        let mut score = ratchet_trace::Score::new(self::commit(commit)?, task, scorer, value);
        if let Some(v) = scorer_version {
            score.scorer_version = v;
        }
        score.cost = cost;
        score.latency_ms = latency_ms;
        Ok(self
            .with(py, |s| {
                ratchet_scorers::record_score(s, &score, session, None).map_err(ToPyErr::py)
            })?
            .seq)
    }

    /// Recomputes the chain: a dict (`size`, `head`, `keyed`,
    /// `macs_checked`, `fault`); `raise_on_fault=True` raises `TamperedError`.
    #[pyo3(signature = (raise_on_fault=false))]
    fn verify<'py>(&self, py: Python<'py>, raise_on_fault: bool) -> PyResult<Bound<'py, PyAny>> {
        let report = self.with(py, |s| s.verify().map_err(ToPyErr::py))?;
        if raise_on_fault && report.fault.is_some() {
            let r = report.into_result().map_err(ToPyErr::py);
            r?;
            unreachable!("a report with a fault is an error");
        }
        let d = PyDict::new(py);
        d.set_item("size", report.size)?;
        d.set_item("head", report.head.to_hex().to_string())?;
        d.set_item("keyed", report.keyed)?;
        d.set_item("macs_checked", report.macs_checked)?;
        d.set_item("valid", report.fault.is_none())?;
        d.set_item("fault", report.fault.as_ref().map(|f| f.to_string()))?;
        Ok(d.into_any())
    }

    /// The chain head as a checkpoint (`origin`, `size`, `head`).
    fn checkpoint<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let cp = self.lock()?.store().checkpoint().map_err(ToPyErr::py)?;
        let d = PyDict::new(py);
        d.set_item("origin", cp.origin)?;
        d.set_item("size", cp.size)?;
        d.set_item("head", cp.head.to_hex().to_string())?;
        Ok(d.into_any())
    }

    /// Merges the cell store at `path` into this one (`cell_key`: its writer key file).
    #[pyo3(signature = (path, cell_key=None))]
    fn merge_cell<'py>(
        &self,
        py: Python<'py>,
        path: PathBuf,
        cell_key: Option<PathBuf>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let mut opts = ratchet_trace::MergeOptions::default();
        if let Some(k) = cell_key {
            opts = opts.cell_key(WriterKey::read_file(&k).map_err(ToPyErr::py)?);
        }
        let r = self.with(py, |s| s.merge_cell(&path, &opts).map_err(ToPyErr::py))?;
        let d = PyDict::new(py);
        d.set_item("cell_id", r.cell_id)?;
        d.set_item("ingested", r.ingested)?;
        d.set_item("already_present", r.already_present)?;
        Ok(d.into_any())
    }

    /// Every score of the verified trace as an Arrow table: seq, commit,
    /// task, scorer, scorer_version, value, cost, latency_ms, holdout (the
    /// first call verifies the trace; later ones read only what is new).
    fn scores(&self, py: Python<'_>) -> PyResult<PyTable> {
        use arrow_array::builder::{BooleanBuilder, Float64Builder, StringBuilder, UInt64Builder};
        // Built column by column from the rows as the store lends them: no
        // row becomes owned strings on the way.
        #[derive(Default)]
        struct Columns {
            seq: UInt64Builder,
            commit: StringBuilder,
            task: StringBuilder,
            scorer: StringBuilder,
            version: StringBuilder,
            value: Float64Builder,
            cost: Float64Builder,
            latency: Float64Builder,
            holdout: BooleanBuilder,
        }
        let mut c = self.warm(py, |l| {
            let mut c = Columns::default();
            l.view().each_score(0, &mut |r| {
                c.seq.append_value(r.seq);
                c.commit.append_value(r.commit);
                c.task.append_value(r.task);
                c.scorer.append_value(r.scorer);
                c.version.append_value(r.scorer_version);
                c.value.append_value(r.value);
                c.cost.append_option(r.cost);
                c.latency.append_option(r.latency_ms);
                c.holdout.append_value(r.holdout);
            });
            Ok(c)
        })?;
        table(vec![
            ("seq", Arc::new(c.seq.finish())),
            ("commit", Arc::new(c.commit.finish())),
            ("task", Arc::new(c.task.finish())),
            ("scorer", Arc::new(c.scorer.finish())),
            ("scorer_version", Arc::new(c.version.finish())),
            ("value", Arc::new(c.value.finish())),
            ("cost", Arc::new(c.cost.finish())),
            ("latency_ms", Arc::new(c.latency.finish())),
            ("holdout", Arc::new(c.holdout.finish())),
        ])
    }

    /// Every event as an Arrow table: seq, id, ts_ms, cell, session, kind,
    /// commit, payload (JSON text), hash — as the file holds them (a
    /// listing: call `verify()` to know whether they are the trace's).
    fn events(&self, py: Python<'_>) -> PyResult<PyTable> {
        let rows = self.with(py, |s| {
            s.tail(0)
                .collect::<ratchet_trace::Result<Vec<_>>>()
                .map_err(ToPyErr::py)
        })?;
        let text = |f: &dyn Fn(&ratchet_trace::Event) -> String| -> ArrayRef {
            Arc::new(StringArray::from_iter_values(rows.iter().map(f)))
        };
        table(vec![
            (
                "seq",
                Arc::new(UInt64Array::from_iter_values(rows.iter().map(|e| e.seq))),
            ),
            ("id", text(&|e| e.id.to_string())),
            (
                "ts_ms",
                Arc::new(Int64Array::from_iter_values(rows.iter().map(|e| e.ts_ms))),
            ),
            ("cell", text(&|e| e.cell.clone())),
            ("session", text(&|e| e.session.clone())),
            ("kind", text(&|e| e.kind.clone())),
            (
                "commit",
                Arc::new(StringArray::from_iter(
                    rows.iter()
                        .map(|e| e.commit.as_ref().map(|c| c.to_string())),
                )),
            ),
            (
                "payload",
                text(&|e| String::from_utf8_lossy(&e.payload).into_owned()),
            ),
            ("hash", text(&|e| e.hash.to_hex().to_string())),
        ])
    }

    /// Per-commit statistics of `scorer` (its newest version unless
    /// `version`): commit, n, mean, variance, min, max.
    #[pyo3(signature = (scorer, version=None))]
    fn commit_stats(
        &self,
        py: Python<'_>,
        scorer: &str,
        version: Option<String>,
    ) -> PyResult<PyTable> {
        let rows = self.warm(py, |l| {
            let view = l.view();
            let v = match version {
                Some(v) => Some(v),
                None => view
                    .scorer_versions(scorer, AsOf::Head)
                    .into_iter()
                    .next()
                    .map(|v| v.version),
            };
            Ok(match &v {
                Some(v) => view.commit_stats(ScorerRef::at_version(scorer, v), AsOf::Head),
                None => Vec::new(),
            })
        })?;
        table(vec![
            (
                "commit",
                Arc::new(StringArray::from_iter_values(
                    rows.iter().map(|r| r.commit.as_str()),
                )),
            ),
            (
                "n",
                Arc::new(UInt64Array::from_iter_values(rows.iter().map(|r| r.n))),
            ),
            (
                "mean",
                Arc::new(Float64Array::from_iter_values(rows.iter().map(|r| r.mean))),
            ),
            (
                "variance",
                Arc::new(Float64Array::from_iter(rows.iter().map(|r| r.variance))),
            ),
            (
                "min",
                Arc::new(Float64Array::from_iter_values(rows.iter().map(|r| r.min))),
            ),
            (
                "max",
                Arc::new(Float64Array::from_iter_values(rows.iter().map(|r| r.max))),
            ),
        ])
    }

    /// The store's directory.
    #[getter]
    fn path(&self) -> PyResult<PathBuf> {
        Ok(self.lock()?.store().dir().to_path_buf())
    }
}

/// A policy file (`ratchet_gate::Policy`).
#[pyclass(module = "ratchet._native", frozen)]
struct Policy {
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
        Ok(self.inner.class(cls).map_err(ToPyErr::py)?.hash())
    }
}

/// A verdict (`ratchet_gate::Verdict`).
#[pyclass(module = "ratchet._native", frozen)]
struct Verdict {
    inner: ratchet_gate::Verdict,
    decision_seq: Option<u64>,
}

#[pymethods]
impl Verdict {
    /// `promote`, `reject`, `continue`, `missing_evidence` or `unverified_trace`.
    #[getter]
    fn status(&self) -> PyResult<String> {
        let v = serde_json::to_value(self.inner.outcome.status())
            .map_err(|e| RatchetError::new_err(e.to_string()))?;
        Ok(v.as_str().unwrap_or_default().to_string())
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
        self.inner.baseline.clone()
    }
    /// The candidate commit.
    #[getter]
    fn candidate(&self) -> String {
        self.inner.candidate.clone()
    }
    /// Seq of the recorded `decision` event (None when nothing was recorded).
    #[getter]
    fn decision_seq(&self) -> Option<u64> {
        self.decision_seq
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
    fn __repr__(&self) -> PyResult<String> {
        Ok(format!(
            "Verdict(status={:?}, class={:?}, candidate={:?}, baseline={:?})",
            self.status()?,
            self.inner.class,
            self.inner.candidate,
            self.inner.baseline
        ))
    }
}

/// Decides `cls` for `candidate` against `baseline` and records the
/// verdict (`record=False`: recomputes at the head, appending nothing).
/// `policy`: a `Policy`; default: `policy.toml` in the store's directory
/// when it exists. A class pinned in the trace decides under its pin (a
/// policy given must then be identical, or it is refused).
#[pyfunction]
#[pyo3(signature = (store, baseline, candidate, cls, policy=None, record=true))]
fn decide(
    py: Python<'_>,
    store: &Store,
    baseline: &str,
    candidate: &str,
    cls: &str,
    policy: Option<&Policy>,
    record: bool,
) -> PyResult<Verdict> {
    let (b, c) = (commit(baseline)?, commit(candidate)?);
    let file = match policy {
        Some(p) => Some(p.inner.clone()),
        None => {
            let path = store.lock()?.store().dir().join("policy.toml");
            path.exists()
                .then(|| ratchet_gate::Policy::from_path(&path))
                .transpose()
                .map_err(ToPyErr::py)?
        }
    };
    let (inner, receipt) = py.detach(|| {
        let mut owner = store.lock()?;
        let warm = match owner.ledger() {
            Ok(l) => Some(l),
            // A trace that does not verify gets its unverified verdict.
            Err(
                ratchet_trace::Error::Tampered { .. } | ratchet_trace::Error::MacsUnchecked { .. },
            ) => None,
            Err(e) => return Err(ToPyErr::py(e)),
        };
        let (class, _) =
            ratchet_gate::resolve_policy(warm.as_ref().map(|l| l.view()), cls, file.as_ref())
                .map_err(ToPyErr::py)?;
        let q = ratchet_gate::Question {
            class: cls,
            policy: &class,
            baseline: &b,
            candidate: &c,
            checkpoint: None,
        };
        match warm {
            Some(l) if record => ratchet_gate::decide_in(l, &q),
            Some(l) => ratchet_gate::verdict_in(l, &q).map(|v| (v, None)),
            None => {
                let s = owner.store();
                s.head()
                    .map_err(ratchet_gate::Error::from)
                    .and_then(|h| ratchet_gate::decide_at(s, &q, h.size))
                    .map(|v| (v, None))
            }
        }
        .map_err(ToPyErr::py)
    })?;
    Ok(Verdict {
        inner,
        decision_seq: receipt.map(|r| r.seq),
    })
}

/// Pins `policy`'s class `cls` in the trace: from then on every decision
/// of the class is taken under it. Returns the seq of the pin in force
/// (appended now, or already there).
#[pyfunction]
fn pin_policy(py: Python<'_>, store: &Store, policy: &Policy, cls: &str) -> PyResult<u64> {
    let class = policy.inner.class(cls).map_err(ToPyErr::py)?.clone();
    store.with(py, |s| {
        ratchet_gate::pin_policy(s, cls, &class)
            .map(|p| p.seq())
            .map_err(ToPyErr::py)
    })
}

/// The operating characteristic of a class's test: an Arrow table of
/// effect_unit, effect, p_promote, expected_n, n_p10, n_p50, n_p90, method.
#[pyfunction]
#[pyo3(signature = (policy, cls, p0=0.5, sigma=1.0, draw=0.3, runs=2000, seed=1))]
#[allow(clippy::too_many_arguments)]
fn calibrate(
    py: Python<'_>,
    policy: &Policy,
    cls: &str,
    p0: f64,
    sigma: f64,
    draw: f64,
    runs: usize,
    seed: u64,
) -> PyResult<PyTable> {
    let class = policy.inner.class(cls).map_err(ToPyErr::py)?;
    let a = ratchet_gate::Assumptions {
        p0,
        sigma,
        draw,
        runs,
        seed,
    };
    let rows = py
        .detach(|| ratchet_gate::calibration_table(class, &a, &mut || {}))
        .map_err(ToPyErr::py)?;
    // The effect as its unit and its value (a pass rate, a mean shift, an Elo).
    let effects: Vec<serde_json::Value> = rows
        .iter()
        .map(|r| serde_json::to_value(r.effect).unwrap_or_default())
        .collect();
    let unit: Vec<String> = effects
        .iter()
        .map(|e| e["unit"].as_str().unwrap_or_default().to_string())
        .collect();
    let effect: Vec<f64> = effects
        .iter()
        .map(|e| {
            ["rate", "shift", "elo"]
                .iter()
                .find_map(|k| e[*k].as_f64())
                .unwrap_or(f64::NAN)
        })
        .collect();
    let method: Vec<String> = rows
        .iter()
        .map(|r| {
            serde_json::to_value(r.method)
                .ok()
                .and_then(|v| v.as_str().map(str::to_string))
                .unwrap_or_default()
        })
        .collect();
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
/// a dict of excess, se, t, df, p_value, non_inferior.
#[pyfunction]
#[pyo3(signature = (baseline, candidate, margin, relative=false, lower_is_better=true, alpha=0.05))]
fn welch_non_inferiority<'py>(
    py: Python<'py>,
    baseline: PyReadonlyArray1<'py, f64>,
    candidate: PyReadonlyArray1<'py, f64>,
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
    let b = ratchet_gate::SampleStats::from_values(baseline.as_slice()?).map_err(ToPyErr::py)?;
    let c = ratchet_gate::SampleStats::from_values(candidate.as_slice()?).map_err(ToPyErr::py)?;
    let out = test.welch(&b, &c).map_err(ToPyErr::py)?;
    from_json(py, &out)
}

/// Wraps a detector for Python.
macro_rules! detector {
    ($name:ident, $inner:ty, $doc:literal) => {
        #[doc = $doc]
        #[pyclass(module = "ratchet._native")]
        struct $name {
            inner: $inner,
        }

        #[pymethods]
        impl $name {
            /// Adds one observation: the alarm (a dict) when a limit is crossed, else None.
            fn update<'py>(
                &mut self,
                py: Python<'py>,
                x: f64,
            ) -> PyResult<Option<Bound<'py, PyAny>>> {
                match self.inner.update(x).map_err(ToPyErr::py)? {
                    Some(a) => Ok(Some(from_json(py, &a)?)),
                    None => Ok(None),
                }
            }
            /// Runs a float64 array (read in place, not copied), restarting
            /// after each alarm: the indices of the values that alarmed.
            fn run(
                &mut self,
                py: Python<'_>,
                values: PyReadonlyArray1<'_, f64>,
            ) -> PyResult<Vec<usize>> {
                let xs = values.as_slice()?;
                let inner = &mut self.inner;
                let alarms = py
                    .detach(|| ratchet_drift::alarms_in(inner, xs))
                    .map_err(ToPyErr::py)?;
                Ok(alarms.into_iter().map(|(i, _)| i).collect())
            }
            /// Forgets everything seen.
            fn reset(&mut self) {
                self.inner.reset();
            }
            /// Observations since the last reset.
            #[getter]
            fn n(&self) -> u64 {
                self.inner.n()
            }
        }
    };
}

detector!(
    Cusum,
    ratchet_drift::Cusum,
    "Two-sided tabular CUSUM (`ratchet_drift::Cusum`)."
);
detector!(
    Ewma,
    ratchet_drift::Ewma,
    "EWMA chart (`ratchet_drift::Ewma`)."
);
detector!(
    PageHinkley,
    ratchet_drift::PageHinkley,
    "Page–Hinkley test (`ratchet_drift::PageHinkley`)."
);

#[pymethods]
impl Cusum {
    /// A CUSUM for in-control mean `mu0` and sd `sigma`, reference `k` and interval `h` (in σ).
    #[new]
    #[pyo3(signature = (mu0=0.0, sigma=1.0, k=0.5, h=5.0))]
    fn new(mu0: f64, sigma: f64, k: f64, h: f64) -> PyResult<Self> {
        Ok(Cusum {
            inner: ratchet_drift::Cusum::new(mu0, sigma, k, h).map_err(ToPyErr::py)?,
        })
    }
}

#[pymethods]
impl Ewma {
    /// An EWMA chart for `mu0`, `sigma`, smoothing `lam` and width `width`
    /// (`steady_state=True`: the limits of the published ARL tables).
    #[new]
    #[pyo3(signature = (mu0=0.0, sigma=1.0, lam=0.1, width=2.7, steady_state=false))]
    fn new(mu0: f64, sigma: f64, lam: f64, width: f64, steady_state: bool) -> PyResult<Self> {
        let limits = if steady_state {
            ratchet_drift::EwmaLimits::SteadyState
        } else {
            ratchet_drift::EwmaLimits::TimeVarying
        };
        Ok(Ewma {
            inner: ratchet_drift::Ewma::new(mu0, sigma, lam, width, limits).map_err(ToPyErr::py)?,
        })
    }
}

#[pymethods]
impl PageHinkley {
    /// A Page–Hinkley test with tolerance `delta` and threshold `lam`.
    #[new]
    #[pyo3(signature = (delta=0.005, lam=50.0))]
    fn new(delta: f64, lam: f64) -> PyResult<Self> {
        Ok(PageHinkley {
            inner: ratchet_drift::PageHinkley::new(delta, lam).map_err(ToPyErr::py)?,
        })
    }
}

/// Average run length of a two-sided CUSUM (Markov chain, `ratchet_drift::cusum_arl`)
/// for a mean shift of `shift` σ.
#[pyfunction]
#[pyo3(signature = (k, h, shift=0.0))]
fn cusum_arl(k: f64, h: f64, shift: f64) -> PyResult<f64> {
    ratchet_drift::cusum_arl(k, h, shift, false, 200).map_err(ToPyErr::py)
}

/// Average run length of an EWMA chart (steady-state limits; `ratchet_drift::ewma_arl`).
#[pyfunction]
#[pyo3(signature = (lam, width, shift=0.0))]
fn ewma_arl(lam: f64, width: f64, shift: f64) -> PyResult<f64> {
    ratchet_drift::ewma_arl(lam, width, shift, 200).map_err(ToPyErr::py)
}

/// A rubric (`ratchet_scorers::Rubric`): a judge's checklist, scored by arithmetic.
#[pyclass(module = "ratchet._native", frozen)]
struct Rubric {
    inner: ratchet_scorers::Rubric,
}

#[pymethods]
impl Rubric {
    /// Parses a rubric's TOML text.
    #[staticmethod]
    fn from_toml(text: &str) -> PyResult<Self> {
        Ok(Rubric {
            inner: ratchet_scorers::Rubric::from_toml(text).map_err(ToPyErr::py)?,
        })
    }
    /// The rubric's name.
    #[getter]
    fn name(&self) -> String {
        self.inner.name.clone()
    }
    /// Its version (a content hash): what its scores are recorded under.
    #[getter]
    fn version(&self) -> String {
        self.inner.version()
    }
    /// The score of an observation (a dict of item values).
    fn score(&self, py: Python<'_>, observation: &Bound<'_, PyAny>) -> PyResult<f64> {
        self.inner
            .score_json(&to_json(py, observation)?)
            .map_err(ToPyErr::py)
    }
}

fn ingest_dict<'py>(
    py: Python<'py>,
    r: &ratchet_scorers::IngestReport,
) -> PyResult<Bound<'py, PyAny>> {
    from_json(py, r)
}

/// Ingests a JUnit XML file for `commit`: a dict of test_runs, scores, already_ingested_at.
#[pyfunction]
#[pyo3(signature = (store, path, commit, session="python"))]
fn ingest_junit<'py>(
    py: Python<'py>,
    store: &Store,
    path: PathBuf,
    commit: &str,
    session: &str,
) -> PyResult<Bound<'py, PyAny>> {
    let c = self::commit(commit)?;
    let r = store.with(py, |s| {
        ratchet_scorers::ingest_junit(s, &path, &c, session).map_err(ToPyErr::py)
    })?;
    ingest_dict(py, &r)
}

/// Ingests a JSON Lines score file (lines may name their commit; `commit`
/// is the default).
#[pyfunction]
#[pyo3(signature = (store, path, commit=None, session="python"))]
fn ingest_jsonl<'py>(
    py: Python<'py>,
    store: &Store,
    path: PathBuf,
    commit: Option<&str>,
    session: &str,
) -> PyResult<Bound<'py, PyAny>> {
    let c = commit.map(self::commit).transpose()?;
    let r = store.with(py, |s| {
        ratchet_scorers::ingest_jsonl(
            s,
            &path,
            c.as_ref(),
            &ratchet_scorers::RubricSet::default(),
            session,
        )
        .map_err(ToPyErr::py)
    })?;
    ingest_dict(py, &r)
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("RatchetError", py.get_type::<RatchetError>())?;
    m.add("TamperedError", py.get_type::<TamperedError>())?;
    m.add("InvalidInputError", py.get_type::<InvalidInputError>())?;
    m.add("NotFoundError", py.get_type::<NotFoundError>())?;
    m.add("KeyRequiredError", py.get_type::<KeyRequiredError>())?;
    m.add("ReadOnlyError", py.get_type::<ReadOnlyError>())?;
    m.add_class::<Store>()?;
    m.add_class::<Policy>()?;
    m.add_class::<Verdict>()?;
    m.add_class::<Cusum>()?;
    m.add_class::<Ewma>()?;
    m.add_class::<PageHinkley>()?;
    m.add_class::<Rubric>()?;
    m.add_function(wrap_pyfunction!(decide, m)?)?;
    m.add_function(wrap_pyfunction!(pin_policy, m)?)?;
    m.add_function(wrap_pyfunction!(calibrate, m)?)?;
    m.add_function(wrap_pyfunction!(welch_non_inferiority, m)?)?;
    m.add_function(wrap_pyfunction!(cusum_arl, m)?)?;
    m.add_function(wrap_pyfunction!(ewma_arl, m)?)?;
    m.add_function(wrap_pyfunction!(ingest_junit, m)?)?;
    m.add_function(wrap_pyfunction!(ingest_jsonl, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
