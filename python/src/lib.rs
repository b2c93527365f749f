//! `ratchet._native`: the Python face of ratchet. Types in, types out: each
//! function converts its arguments, calls one library function (releasing
//! the GIL around anything that reads or writes a store), and converts the
//! result. Tables leave as Arrow (the PyCapsule stream interface), arrays
//! arrive as NumPy views (no copy).

use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard};

use arrow_array::cast::AsArray;
use arrow_array::types::{Float64Type, Int64Type, UInt64Type};
use arrow_array::{
    Array, ArrayRef, Float64Array, RecordBatch, StringArray, StructArray, UInt64Array,
};
use arrow_schema::{ArrowError, DataType, Field, Schema};
use numpy::{PyArray1, PyReadonlyArray1, PyUntypedArrayMethods};
use pyo3::create_exception;
use pyo3::exceptions::{PyException, PyImportError};
use pyo3::prelude::*;
use pyo3::types::{PyCapsule, PyDict, PyList};

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
            | ratchet_gate::Error::InvalidObservation { .. }
            | ratchet_gate::Error::UnreadableVerdict { .. } => {
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

impl ToPyErr for ratchet_export::Error {
    fn py(self) -> PyErr {
        match self {
            ratchet_export::Error::Trace(e) => e.py(),
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

impl ToPyErr for ratchet_orchestrate::Error {
    fn py(self) -> PyErr {
        use ratchet_orchestrate::Error as E;
        match self {
            E::Trace(e) => e.py(),
            E::Gate(e) => e.py(),
            E::Scorers(e) => e.py(),
            E::UnknownCommit { .. } => InvalidInputError::new_err(self.to_string()),
            other => RatchetError::new_err(other.to_string()),
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

fn table(columns: Vec<(&str, ArrayRef)>) -> PyResult<Table> {
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
    let batch = RecordBatch::try_new(schema, columns.into_iter().map(|(_, a)| a).collect())
        .map_err(ToPyErr::py)?;
    Ok(Table { batch })
}

/// Rows a table's text repr shows (a notebook cell's glance, not a dump).
const REPR_ROWS: usize = 5;
/// Rows its HTML repr shows.
const HTML_ROWS: usize = 10;
/// Characters of a cell the text repr shows: commit ids and payloads are cut
/// so that a row of the scores table fits a terminal.
const REPR_CELL: usize = 14;
/// Characters of a cell the HTML repr shows.
const HTML_CELL: usize = 64;

/// A table ratchet computed (scores, events, statistics, an operating
/// characteristic). Arrow inside: polars and pyarrow read it without a copy
/// through the Arrow PyCapsule stream interface; pandas through
/// `to_pandas()` (no pyarrow needed) or `pandas.DataFrame(t)` (its rows).
#[pyclass(module = "ratchet._native", frozen)]
struct Table {
    batch: RecordBatch,
}

impl Table {
    fn names(&self) -> Vec<String> {
        self.batch
            .schema()
            .fields()
            .iter()
            .map(|f| f.name().clone())
            .collect()
    }
}

/// A short name of a column's type, for the reprs.
fn type_name(t: &DataType) -> String {
    match t {
        DataType::Utf8 => "str".into(),
        DataType::Float64 => "f64".into(),
        DataType::UInt64 => "u64".into(),
        DataType::Int64 => "i64".into(),
        DataType::Boolean => "bool".into(),
        other => other.to_string(),
    }
}

/// A float as a person reads it: the shortest exact form when it is short,
/// else six decimals (or an exponent for large values).
fn float_text(v: f64) -> String {
    let short = format!("{v}");
    if short.len() <= 10 {
        short
    } else if v.abs() >= 1e6 {
        format!("{v:.4e}")
    } else {
        // Six decimals, without the zeros that say nothing (0.622500 → 0.6225).
        let fixed = format!("{v:.6}");
        let trimmed = fixed.trim_end_matches('0').trim_end_matches('.');
        if trimmed.is_empty() || trimmed == "-" {
            "0".into()
        } else {
            trimmed.to_string()
        }
    }
}

/// One cell as text, for the reprs (missing values as `None`, as Python
/// would print them).
fn cell_text(a: &dyn Array, row: usize) -> String {
    if a.is_null(row) {
        return "None".into();
    }
    match a.data_type() {
        DataType::Utf8 => a.as_string::<i32>().value(row).to_string(),
        DataType::Float64 => float_text(a.as_primitive::<Float64Type>().value(row)),
        DataType::UInt64 => a.as_primitive::<UInt64Type>().value(row).to_string(),
        DataType::Int64 => a.as_primitive::<Int64Type>().value(row).to_string(),
        DataType::Boolean => if a.as_boolean().value(row) {
            "True"
        } else {
            "False"
        }
        .into(),
        other => format!("<{other}>"),
    }
}

/// `text` on one line and at most `max` characters (an ellipsis says it was cut).
fn cut(text: &str, max: usize) -> String {
    let one_line: String = text
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    if one_line.chars().count() <= max {
        return one_line;
    }
    let mut t: String = one_line.chars().take(max.saturating_sub(1)).collect();
    t.push('…');
    t
}

fn html_escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// One cell as a Python value (a missing one as None).
fn cell_object<'py>(py: Python<'py>, a: &dyn Array, row: usize) -> PyResult<Bound<'py, PyAny>> {
    use pyo3::IntoPyObjectExt;
    if a.is_null(row) {
        return Ok(py.None().into_bound(py));
    }
    match a.data_type() {
        DataType::Utf8 => a.as_string::<i32>().value(row).into_bound_py_any(py),
        DataType::Float64 => a
            .as_primitive::<Float64Type>()
            .value(row)
            .into_bound_py_any(py),
        DataType::UInt64 => a
            .as_primitive::<UInt64Type>()
            .value(row)
            .into_bound_py_any(py),
        DataType::Int64 => a
            .as_primitive::<Int64Type>()
            .value(row)
            .into_bound_py_any(py),
        DataType::Boolean => a.as_boolean().value(row).into_bound_py_any(py),
        other => Err(unconvertible(other)),
    }
}

fn unconvertible(t: &DataType) -> PyErr {
    RatchetError::new_err(format!(
        "a column of Arrow type {t} has no conversion here: read the table with pyarrow.table(t) or polars.DataFrame(t)"
    ))
}

/// One column as NumPy (numbers, and booleans without gaps) or a list (text,
/// booleans with gaps). A missing number is NaN, as in pandas (integers
/// with gaps become floats, as pyarrow's `to_pandas` makes them).
fn column_object<'py>(py: Python<'py>, a: &dyn Array) -> PyResult<Bound<'py, PyAny>> {
    let gaps = a.null_count() > 0;
    Ok(match a.data_type() {
        DataType::Float64 => {
            let p = a.as_primitive::<Float64Type>();
            if gaps {
                PyArray1::from_iter(py, p.iter().map(|v| v.unwrap_or(f64::NAN))).into_any()
            } else {
                PyArray1::from_slice(py, p.values()).into_any()
            }
        }
        DataType::UInt64 => {
            let p = a.as_primitive::<UInt64Type>();
            if gaps {
                PyArray1::from_iter(py, p.iter().map(|v| v.map_or(f64::NAN, |x| x as f64)))
                    .into_any()
            } else {
                PyArray1::from_slice(py, p.values()).into_any()
            }
        }
        DataType::Int64 => {
            let p = a.as_primitive::<Int64Type>();
            if gaps {
                PyArray1::from_iter(py, p.iter().map(|v| v.map_or(f64::NAN, |x| x as f64)))
                    .into_any()
            } else {
                PyArray1::from_slice(py, p.values()).into_any()
            }
        }
        DataType::Boolean if !gaps => {
            PyArray1::from_iter(py, a.as_boolean().values().iter()).into_any()
        }
        DataType::Boolean => PyList::new(py, a.as_boolean().iter())?.into_any(),
        DataType::Utf8 => PyList::new(py, a.as_string::<i32>().iter())?.into_any(),
        other => return Err(unconvertible(other)),
    })
}

/// Imports the module a conversion needs, or says how to install it.
fn import_for<'py>(py: Python<'py>, module: &str, method: &str) -> PyResult<Bound<'py, PyModule>> {
    py.import(module).map_err(|e| {
        if !e.is_instance_of::<pyo3::exceptions::PyModuleNotFoundError>(py) {
            return e;
        }
        let err = PyImportError::new_err(format!(
            "Table.{method}() needs {module}: pip install {module} (or pip install 'ratchet[notebook]')"
        ));
        err.set_cause(py, Some(e));
        err
    })
}

#[pymethods]
impl Table {
    /// The table as an Arrow C stream (the PyCapsule interface): what
    /// `polars.DataFrame(t)`, `pyarrow.table(t)` and DuckDB read.
    #[pyo3(signature = (requested_schema=None))]
    fn __arrow_c_stream__<'py>(
        &self,
        py: Python<'py>,
        requested_schema: Option<Bound<'py, PyCapsule>>,
    ) -> PyResult<Bound<'py, PyCapsule>> {
        let schema = self.batch.schema();
        let field = Field::new_struct("", schema.fields().clone(), false)
            .with_metadata(schema.metadata().clone());
        let array: ArrayRef = Arc::new(StructArray::from(self.batch.clone()));
        let reader = Box::new(pyo3_arrow::ffi::ArrayIterator::new(
            std::iter::once(Ok::<_, ArrowError>(array)),
            Arc::new(field),
        ));
        pyo3_arrow::ffi::to_stream_pycapsule(py, reader, requested_schema).map_err(PyErr::from)
    }

    /// The columns' names, in order.
    #[getter]
    fn columns(&self) -> Vec<String> {
        self.names()
    }

    /// Rows in the table.
    #[getter]
    fn num_rows(&self) -> usize {
        self.batch.num_rows()
    }

    fn __len__(&self) -> usize {
        self.batch.num_rows()
    }

    /// One column: a NumPy array (numbers, booleans) or a list (text).
    fn column<'py>(&self, py: Python<'py>, name: &str) -> PyResult<Bound<'py, PyAny>> {
        match self.batch.column_by_name(name) {
            Some(a) => column_object(py, a.as_ref()),
            None => Err(pyo3::exceptions::PyKeyError::new_err(format!(
                "no column {name:?}; the columns are {}",
                self.names().join(", ")
            ))),
        }
    }

    /// Every column by name (see `column`).
    fn to_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new(py);
        for (field, a) in self
            .batch
            .schema()
            .fields()
            .iter()
            .zip(self.batch.columns())
        {
            d.set_item(field.name(), column_object(py, a.as_ref())?)?;
        }
        Ok(d)
    }

    /// A pandas DataFrame (built from NumPy columns: pyarrow is not needed).
    fn to_pandas<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let pd = import_for(py, "pandas", "to_pandas")?;
        let kwargs = PyDict::new(py);
        // Named, so that an empty table keeps its columns.
        kwargs.set_item("columns", self.names())?;
        pd.getattr("DataFrame")?
            .call((self.to_dict(py)?,), Some(&kwargs))
    }

    /// A polars DataFrame (zero-copy, through the Arrow stream).
    fn to_polars<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyAny>> {
        let pl = import_for(slf.py(), "polars", "to_polars")?;
        pl.getattr("DataFrame")?.call1((slf,))
    }

    /// A pyarrow Table (zero-copy, through the Arrow stream).
    fn to_pyarrow<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyAny>> {
        let pa = import_for(slf.py(), "pyarrow", "to_pyarrow")?;
        pa.getattr("table")?.call1((slf,))
    }

    /// The rows, each a dict of column name to value (what lets
    /// `pandas.DataFrame(t)` read the table as records).
    fn __iter__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, pyo3::types::PyIterator>> {
        let names = self.names();
        let mut rows = Vec::with_capacity(self.batch.num_rows());
        for row in 0..self.batch.num_rows() {
            let d = PyDict::new(py);
            for (name, a) in names.iter().zip(self.batch.columns()) {
                d.set_item(name, cell_object(py, a.as_ref(), row)?)?;
            }
            rows.push(d);
        }
        PyList::new(py, rows)?.into_any().try_iter()
    }

    /// The size, the columns with their types, and the first rows.
    fn __repr__(&self) -> String {
        let n = self.batch.num_rows();
        let shown = n.min(REPR_ROWS);
        let schema = self.batch.schema();
        let mut out = format!(
            "ratchet.Table: {n} row{} × {} column{}\n",
            if n == 1 { "" } else { "s" },
            schema.fields().len(),
            if schema.fields().len() == 1 { "" } else { "s" },
        );
        // Each column's lines (name, type, cells), padded to its widest.
        let cols: Vec<(bool, Vec<String>)> = schema
            .fields()
            .iter()
            .zip(self.batch.columns())
            .map(|(f, a)| {
                let numeric = f.data_type().is_numeric();
                let mut lines = vec![cut(f.name(), REPR_CELL), type_name(f.data_type())];
                lines.extend((0..shown).map(|r| cut(&cell_text(a.as_ref(), r), REPR_CELL)));
                (numeric, lines)
            })
            .collect();
        for line in 0..shown + 2 {
            let cells: Vec<String> = cols
                .iter()
                .map(|(numeric, lines)| {
                    let width = lines.iter().map(|l| l.chars().count()).max().unwrap_or(0);
                    let text = &lines[line];
                    let pad = " ".repeat(width - text.chars().count());
                    // Numbers are right-aligned (their digits line up), text left.
                    if *numeric && line >= 2 {
                        format!("{pad}{text}")
                    } else {
                        format!("{text}{pad}")
                    }
                })
                .collect();
            out.push_str(cells.join("  ").trim_end());
            out.push('\n');
        }
        if n > shown {
            out.push_str(&format!(
                "… {} more row{}",
                n - shown,
                if n - shown == 1 { "" } else { "s" }
            ));
        }
        out.trim_end().to_string()
    }

    /// The table's first rows as HTML, for notebooks.
    fn _repr_html_(&self) -> String {
        let n = self.batch.num_rows();
        let schema = self.batch.schema();
        let mut out = String::from("<table><thead><tr>");
        for f in schema.fields() {
            out.push_str(&format!(
                "<th>{}<br><small>{}</small></th>",
                html_escape(f.name()),
                html_escape(&type_name(f.data_type()))
            ));
        }
        out.push_str("</tr></thead><tbody>");
        for row in 0..n.min(HTML_ROWS) {
            out.push_str("<tr>");
            for a in self.batch.columns() {
                out.push_str(&format!(
                    "<td>{}</td>",
                    html_escape(&cut(&cell_text(a.as_ref(), row), HTML_CELL))
                ));
            }
            out.push_str("</tr>");
        }
        out.push_str(&format!(
            "</tbody></table><p>ratchet.Table: {n} rows × {} columns{}</p>",
            schema.fields().len(),
            if n > HTML_ROWS {
                format!(" (first {HTML_ROWS} shown)")
            } else {
                String::new()
            }
        ));
        out
    }
}

/// `values` as a one-dimensional, contiguous float64 NumPy array: read in
/// place when it is one already, else converted the way
/// `numpy.ascontiguousarray(numpy.asarray(values, dtype=numpy.float64))`
/// converts (float32 and integer arrays, strided views, lists, pandas and
/// polars Series). `what` names the argument in errors.
fn float_array<'py>(
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
fn resolve_commit(rev: &str, repo: Option<PathBuf>, allow_unknown: bool) -> PyResult<CommitId> {
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
fn direction(text: &str) -> PyResult<ratchet_scorers::Direction> {
    match text {
        "higher" => Ok(ratchet_scorers::Direction::HigherIsBetter),
        "lower" => Ok(ratchet_scorers::Direction::LowerIsBetter),
        other => Err(InvalidInputError::new_err(format!(
            "direction {other:?}: expected \"higher\" (larger is better) or \"lower\" (smaller is better)"
        ))),
    }
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
struct Verdict {
    inner: ratchet_gate::Verdict,
    decision_seq: Option<u64>,
    /// How the verdict reads its primary scorer (unit, direction): its
    /// stages' figures are shown on it.
    scale: ratchet_gate::shown::Scale,
}

#[pymethods]
impl Verdict {
    /// `promote`, `reject`, `continue`, `missing_evidence` or `unverified_trace`.
    #[getter]
    fn status(&self) -> PyResult<String> {
        Ok(self.inner.outcome.status().as_str().to_string())
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
            self.status()?,
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
struct StageReport {
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
        let name = match &r.stage {
            Stage::TraceVerification => "trace verification".to_string(),
            Stage::Tests => "tests".to_string(),
            Stage::Invariants => "invariants".to_string(),
            Stage::Sequential => "sequential test".to_string(),
            Stage::Guardrail(scorer) => format!("guardrail {scorer}"),
        };
        let mut s = StageReport {
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
                s.n = Some(d.size);
                s.n_of = Some("events".into());
            }
            // No suite required: no count to show (0 runs would read as missing).
            StageDetails::Tests(d) if !d.suites.is_empty() => {
                s.n = Some(d.suites.iter().map(|x| x.runs.len() as u64).sum());
                s.n_of = Some("runs".into());
            }
            StageDetails::Tests(_) => {}
            StageDetails::Invariants(d) => {
                // The least-evidenced invariant: what the stage rests on.
                s.n = d.invariants.iter().map(|i| i.tasks).min();
                s.n_of = s.n.map(|_| "tasks".into());
            }
            StageDetails::Sequential(d) => {
                // Shown as read (candidate − baseline in the scorer's
                // direction), never on the gate's judged scale.
                match (&d.effect, scale.effect(d)) {
                    (Some(e), Some(read)) => {
                        unit = read.unit;
                        s.measure = Some(format!("{} ({})", read.measure, read.better));
                        s.estimate = Some(read.value);
                        s.ci_low = Some(read.low);
                        s.ci_high = Some(read.high);
                        s.interval = e.interval.map(|i| i.as_str().to_string());
                        s.n = Some(count(e.n));
                        if let Some(b) = read.bound {
                            s.bound = Some(b.improvement);
                            s.bound_side = Some(
                                match b.side {
                                    ratchet_gate::BoundSide::Lower => "lower",
                                    ratchet_gate::BoundSide::Upper => "upper",
                                }
                                .into(),
                            );
                            s.bound_level = Some(b.level);
                            s.bound_text = Some(b.text);
                        }
                        s.effect_shown = Some(read.text);
                    }
                    _ => {
                        s.measure = Some(d.test.effect_measure().to_string());
                        s.n = Some(count(d.tasks_available));
                    }
                }
                s.n_of = Some("pairs".into());
            }
            StageDetails::Guardrail(d) => {
                if let Stage::Guardrail(scorer) = &r.stage {
                    unit = Unit::of_scorer(scorer);
                }
                s.measure = Some("excess over the margin (below 0: non-inferior)".into());
                match d.result {
                    GuardrailResult::Welch(w) => {
                        // Welch's test is one-sided and reports no N.
                        s.estimate = Some(w.excess);
                    }
                    GuardrailResult::Sequence(q) => {
                        s.estimate = Some(q.excess);
                        s.ci_high = Some(q.upper_bound);
                        s.interval = Some("confidence sequence, upper bound".into());
                        s.n = Some(q.n);
                        s.n_of = Some("pairs".into());
                    }
                }
            }
            StageDetails::TooFewTasks(d) => {
                s.n = Some(count(d.tasks));
                s.n_of = Some("pairs".into());
            }
            // The slowest benchmark first: the one the stage turns on.
            StageDetails::Benchmarks(d) => {
                if let Some(first) = d.benchmarks.first() {
                    s.measure = Some(format!(
                        "ratio candidate / baseline of {} (above 1: slower)",
                        first.benchmark
                    ));
                    s.estimate = Some(first.ratio);
                    s.ci_low = Some(first.low);
                    s.ci_high = Some(first.high);
                    s.n = Some(count(first.n));
                    s.n_of = Some("pairs".into());
                }
            }
        }
        if s.measure.is_some() {
            s.unit = Some(unit.as_str().to_string()).filter(|u| !u.is_empty());
            let shown = |v: f64| {
                if s.n_of.is_some() && matches!(r.details, StageDetails::Benchmarks(_)) {
                    ratchet_gate::shown::sig(v)
                } else {
                    signed(v, unit)
                }
            };
            s.estimate_text = s.estimate.map(shown);
            if s.ci_low.is_some() || s.ci_high.is_some() {
                s.interval_text = Some(format!(
                    "[{}, {}]",
                    s.ci_low.map_or_else(|| "−∞".to_string(), shown),
                    s.ci_high.map_or_else(|| "+∞".to_string(), shown)
                ));
            }
        }
        s
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
fn decide(
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
            let path = store.lock()?.store().dir().join("policy.toml");
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
            allow_unpinned: false,
        };
        let verified = warm.is_some();
        let (verdict, receipt) = match warm {
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
) -> PyResult<Table> {
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
fn welch_non_inferiority<'py>(
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
            /// Runs the values, restarting after each alarm: the indices of
            /// the values that alarmed. Any float array-like: a contiguous
            /// float64 array is read in place, anything else (float32,
            /// strided, a list, a pandas or polars Series) converted first.
            fn run<'py>(
                &mut self,
                py: Python<'py>,
                values: &Bound<'py, PyAny>,
            ) -> PyResult<Vec<usize>> {
                let values = float_array(py, values, "values")?;
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

/// Ingests what a tool wrote (`ratchet ingest FORMAT PATH…`): `format` is
/// one of the CLI's names (`junit`, `criterion`, `jsonl`, `bmf`,
/// `hyperfine`, `google-benchmark`, `pytest-benchmark`, `go-bench`,
/// `inspect`, `lm-eval`, `promptfoo`); `paths` files or directories; the
/// commit a revision or full id, resolved as the CLI resolves it.
#[pyfunction]
#[pyo3(signature = (store, format, paths, commit=None, session=None, suite=None, label="", direction=None, repo=None, allow_unknown_commit=true))]
#[allow(clippy::too_many_arguments)]
fn ingest<'py>(
    py: Python<'py>,
    store: &Store,
    format: &str,
    paths: Vec<PathBuf>,
    commit: Option<&str>,
    session: Option<String>,
    suite: Option<String>,
    label: &str,
    direction: Option<&str>,
    repo: Option<PathBuf>,
    allow_unknown_commit: bool,
) -> PyResult<Bound<'py, PyAny>> {
    let format: ratchet_scorers::Format = format.parse().map_err(ToPyErr::py)?;
    let options = ratchet_scorers::IngestOptions {
        commit: commit
            .map(|c| resolve_commit(c, repo.clone(), allow_unknown_commit))
            .transpose()?,
        session,
        suite,
        runner_label: label.to_string(),
        direction: direction.map(self::direction).transpose()?,
        ..ratchet_scorers::IngestOptions::default()
    };
    let r = store.with(py, |s| {
        ratchet_scorers::ingest(s, format, &paths, &options).map_err(ToPyErr::py)
    })?;
    ingest_dict(py, &r)
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
    m.add_class::<StageReport>()?;
    m.add_class::<Table>()?;
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
    m.add_function(wrap_pyfunction!(ingest, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
