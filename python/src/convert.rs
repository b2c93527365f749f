//! Arguments in: commits and revisions, JSON through Python's own `json`,
//! float array-likes as NumPy views, a scorer's direction.

use std::path::PathBuf;

use numpy::{PyReadonlyArray1, PyUntypedArrayMethods};
use pyo3::prelude::*;
use pyo3::types::PyDict;

use ratchet_trace::CommitId;

use crate::errors::{InvalidInputError, RatchetError, ToPyErr};

pub(crate) fn commit(text: &str) -> PyResult<CommitId> {
    CommitId::parse(text).map_err(ToPyErr::py)
}

/// Python object → JSON (through Python's own `json`, so what it accepts
/// is exactly what `json.dumps` accepts).
pub(crate) fn to_json(py: Python<'_>, obj: &Bound<'_, PyAny>) -> PyResult<serde_json::Value> {
    let text: String = py
        .import("json")?
        .call_method1("dumps", (obj,))?
        .extract()?;
    serde_json::from_str(&text).map_err(|e| InvalidInputError::new_err(e.to_string()))
}

/// JSON → Python object.
pub(crate) fn from_json<'py>(
    py: Python<'py>,
    value: &impl serde::Serialize,
) -> PyResult<Bound<'py, PyAny>> {
    let text = serde_json::to_string(value).map_err(|e| RatchetError::new_err(e.to_string()))?;
    py.import("json")?.call_method1("loads", (text,))
}

/// `values` as a one-dimensional, contiguous float64 NumPy array: read in
/// place when it is one already, else converted the way
/// `numpy.ascontiguousarray(numpy.asarray(values, dtype=numpy.float64))`
/// converts (float32 and integer arrays, strided views, lists, pandas and
/// polars Series). `what` names the argument in errors.
pub(crate) fn float_array<'py>(
    py: Python<'py>,
    values: &Bound<'py, PyAny>,
    what: &str,
) -> PyResult<PyReadonlyArray1<'py, f64>> {
    if let Ok(a) = values.extract::<PyReadonlyArray1<'py, f64>>()
        && a.is_c_contiguous()
    {
        return Ok(a);
    }
    let np = py.import("numpy")?;
    let kwargs = PyDict::new(py);
    kwargs.set_item("dtype", np.getattr("float64")?)?;
    let arr = np
        .call_method("asarray", (values,), Some(&kwargs))
        .map_err(|e| {
            let err = InvalidInputError::new_err(format!(
                "{what}: not an array of numbers (numpy.asarray(…, dtype=float64) says: {e})"
            ));
            err.set_cause(py, Some(e));
            err
        })?;
    // Checked before `ascontiguousarray`, which would make a scalar an array of one.
    let ndim: usize = arr.getattr("ndim")?.extract()?;
    if ndim != 1 {
        let shape = arr.getattr("shape")?.repr()?.to_string();
        return Err(InvalidInputError::new_err(format!(
            "{what}: a one-dimensional array of numbers is needed, not one of shape {shape}"
        )));
    }
    np.call_method1("ascontiguousarray", (arr,))?
        .extract::<PyReadonlyArray1<'py, f64>>()
}

/// A commit as typed — a revision (`main`, `HEAD~2`, a short id) or a full
/// id — resolved by the function the CLI resolves it with
/// (`ratchet_orchestrate::resolve_commit`), in the git repository
/// enclosing `repo` (by default the current directory, as the CLI does).
pub(crate) fn resolve_commit(
    rev: &str,
    repo: Option<PathBuf>,
    allow_unknown: bool,
) -> PyResult<CommitId> {
    let dir = match repo {
        Some(d) => d,
        None => std::env::current_dir().map_err(|e| {
            RatchetError::new_err(format!(
                "reading the current directory (to resolve the commit {rev:?} in its repository): {e}"
            ))
        })?,
    };
    ratchet_orchestrate::resolve_commit(&dir, rev, allow_unknown).map_err(ToPyErr::py)
}

/// The direction a scorer improves in, as the CLI's `--direction` takes it.
pub(crate) fn direction(text: &str) -> PyResult<ratchet_scorers::Direction> {
    match text {
        "higher" => Ok(ratchet_scorers::Direction::HigherIsBetter),
        "lower" => Ok(ratchet_scorers::Direction::LowerIsBetter),
        other => Err(InvalidInputError::new_err(format!(
            "direction {other:?}: expected \"higher\" (larger is better) or \"lower\" (smaller is better)"
        ))),
    }
}
