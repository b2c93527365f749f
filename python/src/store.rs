//! `Store`: a trace store and its owner (cold, or warm once a call needed
//! the verified view), with the GIL released around every store call.

use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard};

use arrow_array::{Float64Array, StringArray, UInt64Array};
use pyo3::prelude::*;
use pyo3::types::PyDict;

use ratchet_trace::{AsOf, EventDraft, ScorerRef, StoreOptions, WriterKey};

use crate::convert::{commit, direction, to_json};
use crate::errors::{RatchetError, ToPyErr};
use crate::table::{Table, table};

/// A trace store (`ratchet_trace::Store`).
#[pyclass(module = "ratchet._native")]
pub(crate) struct Store {
    inner: Mutex<Owner>,
}

/// The store and, once a call needed it, its verified view kept warm: a
/// notebook verifies the trace once and each later call reads only what
/// was appended since ([`ratchet_trace::Ledger::refresh`]).
// One owner per `Store` object, behind its mutex: the variants' sizes cost
// nothing worth a box.
#[allow(clippy::large_enum_variant)]
pub(crate) enum Owner {
    /// The store alone: no call has needed the verified view yet, or the
    /// trace did not verify (the store is kept so that plain reads and an
    /// unverified verdict still work).
    Cold(ratchet_trace::Store),
    /// The store inside its ledger, verified once and refreshed per call.
    Warm(ratchet_trace::Ledger),
    /// Neither: the switch to warm failed after the store had been handed
    /// to the ledger (only a view of another store fails it, which a view
    /// just verified from this store is not). Every call then raises
    /// instead of panicking.
    Lost,
}

/// Why the owner could not hand out its warm ledger.
pub(crate) enum Unwarmed {
    /// The library's error (a trace that does not verify among them).
    Trace(ratchet_trace::Error),
    /// The owner lost its store ([`Owner::Lost`]).
    Lost,
}

impl From<ratchet_trace::Error> for Unwarmed {
    fn from(e: ratchet_trace::Error) -> Self {
        Unwarmed::Trace(e)
    }
}

impl ToPyErr for Unwarmed {
    fn py(self) -> PyErr {
        match self {
            Unwarmed::Trace(e) => e.py(),
            Unwarmed::Lost => lost(),
        }
    }
}

fn lost() -> PyErr {
    RatchetError::new_err(
        "this Store lost its store in a failed call: open it again with Store.open",
    )
}

impl Owner {
    /// The store, cold or inside the ledger.
    pub(crate) fn store(&mut self) -> PyResult<&mut ratchet_trace::Store> {
        match self {
            Owner::Cold(s) => Ok(s),
            Owner::Warm(l) => Ok(l.store_mut()),
            Owner::Lost => Err(lost()),
        }
    }

    /// The warm ledger, verified now if it was not yet (the store is kept
    /// if it does not verify), and refreshed.
    pub(crate) fn ledger(&mut self) -> Result<&mut ratchet_trace::Ledger, Unwarmed> {
        if let Owner::Cold(store) = self {
            // Verified on a borrow: a trace that does not verify leaves
            // the owner cold, its store in hand.
            let view = store.verified(&ratchet_trace::VerifyOptions::default())?;
            if let Owner::Cold(store) = std::mem::replace(self, Owner::Lost) {
                *self = Owner::Warm(ratchet_trace::Ledger::with_view(
                    store,
                    view,
                    ratchet_trace::VerifyOptions::default(),
                )?);
            }
        }
        match self {
            Owner::Warm(ledger) => {
                ledger.refresh()?;
                Ok(ledger)
            }
            Owner::Cold(_) | Owner::Lost => Err(Unwarmed::Lost),
        }
    }
}

pub(crate) fn options(key: Option<PathBuf>) -> PyResult<StoreOptions> {
    let mut options = StoreOptions::default();
    if let Some(k) = key {
        options = options.writer_key(WriterKey::read_file(&k).map_err(ToPyErr::py)?);
    }
    Ok(options)
}

impl Store {
    pub(crate) fn lock(&self) -> PyResult<MutexGuard<'_, Owner>> {
        self.inner
            .lock()
            .map_err(|_| RatchetError::new_err("the store's lock was poisoned by a failed call"))
    }

    /// Runs `f` on the store with the GIL released (other Python threads
    /// run meanwhile; this one waits for the store's lock).
    pub(crate) fn with<T: Send>(
        &self,
        py: Python<'_>,
        f: impl FnOnce(&mut ratchet_trace::Store) -> PyResult<T> + Send,
    ) -> PyResult<T> {
        py.detach(|| f(self.lock()?.store()?))
    }

    /// Runs `f` on the warm owner (verified once, refreshed each call)
    /// with the GIL released.
    pub(crate) fn warm<T: Send>(
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
        let store_options = options(key)?;
        let store = py
            .detach(|| ratchet_trace::Store::open(&path, store_options))
            .map_err(ToPyErr::py)?;
        Ok(Store {
            inner: Mutex::new(Owner::Cold(store)),
        })
    }

    /// Creates a store at `path` (keyed by the writer key file `key`, if given).
    #[staticmethod]
    #[pyo3(signature = (path, key=None))]
    fn create(py: Python<'_>, path: PathBuf, key: Option<PathBuf>) -> PyResult<Self> {
        let store_options = options(key)?;
        let store = py
            .detach(|| ratchet_trace::Store::create(&path, store_options))
            .map_err(ToPyErr::py)?;
        Ok(Store {
            inner: Mutex::new(Owner::Cold(store)),
        })
    }

    /// The store's id.
    #[getter]
    fn id(&self) -> PyResult<String> {
        Ok(self.lock()?.store()?.id().to_string())
    }

    /// Events in the trace.
    #[getter]
    fn size(&self) -> PyResult<u64> {
        Ok(self.lock()?.store()?.head().map_err(ToPyErr::py)?.size)
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
        let mut draft = EventDraft::json(kind, &to_json(py, payload)?).map_err(ToPyErr::py)?;
        if let Some(s) = session {
            draft = draft.session(s);
        }
        if let Some(c) = commit {
            draft = draft.commit(self::commit(c)?);
        }
        Ok(self
            .with(py, move |s| s.append(draft).map_err(ToPyErr::py))?
            .seq)
    }

    /// Records a score; its seq. `holdout=True` marks a holdout score (the
    /// gate counts it, proposers never see it). `direction` (`"higher"` or
    /// `"lower"`) declares which way the scorer improves the first time it
    /// appears in the trace (without it: down for cost, latency_ms and
    /// criterion_ns, up otherwise); a direction that contradicts the
    /// scorer's declaration is refused.
    #[pyo3(signature = (commit, task, scorer, value, scorer_version=None, cost=None, latency_ms=None, session="python", holdout=false, direction=None))]
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
        holdout: bool,
        direction: Option<&str>,
    ) -> PyResult<u64> {
        let direction = direction.map(self::direction).transpose()?;
        let mut score = ratchet_trace::Score::new(self::commit(commit)?, task, scorer, value);
        if let Some(v) = scorer_version {
            score.scorer_version = v;
        }
        score.cost = cost;
        score.latency_ms = latency_ms;
        score.holdout = holdout;
        Ok(self
            .with(py, |s| {
                ratchet_scorers::record_score(s, &score, session, direction).map_err(ToPyErr::py)
            })?
            .seq)
    }

    /// Recomputes the chain: a dict (`size`, `head`, `keyed`,
    /// `macs_checked`, `fault`); `raise_on_fault=True` raises `TamperedError`.
    #[pyo3(signature = (raise_on_fault=false))]
    fn verify<'py>(&self, py: Python<'py>, raise_on_fault: bool) -> PyResult<Bound<'py, PyAny>> {
        let report = self.with(py, |s| s.verify().map_err(ToPyErr::py))?;
        if raise_on_fault && report.fault.is_some() {
            let result = report.into_result().map_err(ToPyErr::py);
            result?;
            unreachable!("a report with a fault is an error");
        }
        let dict = PyDict::new(py);
        dict.set_item("size", report.size)?;
        dict.set_item("head", report.head.to_hex().to_string())?;
        dict.set_item("keyed", report.keyed)?;
        dict.set_item("macs_checked", report.macs_checked)?;
        dict.set_item("valid", report.fault.is_none())?;
        dict.set_item("fault", report.fault.as_ref().map(|f| f.to_string()))?;
        Ok(dict.into_any())
    }

    /// The chain head as a checkpoint (`origin`, `size`, `head`).
    fn checkpoint<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let cp = self.lock()?.store()?.checkpoint().map_err(ToPyErr::py)?;
        let dict = PyDict::new(py);
        dict.set_item("origin", cp.origin)?;
        dict.set_item("size", cp.size)?;
        dict.set_item("head", cp.head.to_hex().to_string())?;
        Ok(dict.into_any())
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
        let report = self.with(py, |s| s.merge_cell(&path, &opts).map_err(ToPyErr::py))?;
        let dict = PyDict::new(py);
        dict.set_item("cell_id", report.cell_id)?;
        dict.set_item("ingested", report.ingested)?;
        dict.set_item("already_present", report.already_present)?;
        Ok(dict.into_any())
    }

    /// Every score of the verified trace as an Arrow table: seq, commit,
    /// task, scorer, scorer_version, value, cost, latency_ms, holdout (the
    /// first call verifies the trace; later ones read only what is new).
    fn scores(&self, py: Python<'_>) -> PyResult<Table> {
        // The export's own batch: a notebook's table and an exported file
        // hold the same columns, built by the same code.
        let batch = self.warm(py, |l| {
            ratchet_export::scores_batch(l.view()).map_err(ToPyErr::py)
        })?;
        Ok(Table { batch })
    }

    /// Every event as an Arrow table: seq, id, ts_ms, cell, session, kind,
    /// commit, payload (JSON text), hash — as the file holds them (a
    /// listing: call `verify()` to know whether they are the trace's).
    fn events(&self, py: Python<'_>) -> PyResult<Table> {
        let rows = self.with(py, |s| {
            s.tail(0)
                .collect::<ratchet_trace::Result<Vec<_>>>()
                .map_err(ToPyErr::py)
        })?;
        let batch = ratchet_export::events_batch(&rows).map_err(ToPyErr::py)?;
        Ok(Table { batch })
    }

    /// Per-commit statistics of `scorer` (its newest version unless
    /// `version`): commit, n, mean, variance, min, max.
    #[pyo3(signature = (scorer, version=None))]
    fn commit_stats(
        &self,
        py: Python<'_>,
        scorer: &str,
        version: Option<String>,
    ) -> PyResult<Table> {
        let rows = self.warm(py, |l| {
            let view = l.view();
            let chosen_version = match version {
                Some(v) => Some(v),
                None => view
                    .scorer_versions(scorer, AsOf::Head)
                    .into_iter()
                    .next()
                    .map(|v| v.version),
            };
            Ok(match &chosen_version {
                Some(chosen) => {
                    view.commit_stats(ScorerRef::at_version(scorer, chosen), AsOf::Head)
                }
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
        Ok(self.lock()?.store()?.dir().to_path_buf())
    }
}
