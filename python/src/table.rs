//! `Table`: what ratchet computed, as Arrow out (the PyCapsule stream
//! interface), NumPy columns, pandas and polars frames, and its reprs.

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{Float64Type, Int64Type, UInt64Type};
use arrow_array::{Array, ArrayRef, RecordBatch, StructArray};
use arrow_schema::{ArrowError, DataType, Field, Schema};
use numpy::PyArray1;
use pyo3::exceptions::PyImportError;
use pyo3::prelude::*;
use pyo3::types::{PyCapsule, PyDict, PyList};

use crate::errors::{RatchetError, ToPyErr};

pub(crate) fn table(columns: Vec<(&str, ArrayRef)>) -> PyResult<Table> {
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
pub(crate) const REPR_ROWS: usize = 5;
/// Rows its HTML repr shows.
pub(crate) const HTML_ROWS: usize = 10;
/// Characters of a cell the text repr shows: commit ids and payloads are cut
/// so that a row of the scores table fits a terminal.
pub(crate) const REPR_CELL: usize = 14;
/// Characters of a cell the HTML repr shows.
pub(crate) const HTML_CELL: usize = 64;

/// A table ratchet computed (scores, events, statistics, an operating
/// characteristic). Arrow inside: polars and pyarrow read it without a copy
/// through the Arrow PyCapsule stream interface; pandas through
/// `to_pandas()` (no pyarrow needed) or `pandas.DataFrame(t)` (its rows).
#[pyclass(module = "ratchet._native", frozen)]
pub(crate) struct Table {
    pub(crate) batch: RecordBatch,
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
pub(crate) fn type_name(t: &DataType) -> String {
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
pub(crate) fn float_text(v: f64) -> String {
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
pub(crate) fn cell_text(a: &dyn Array, row: usize) -> String {
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
pub(crate) fn cut(text: &str, max: usize) -> String {
    let one_line: String = text
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    if one_line.chars().count() <= max {
        return one_line;
    }
    let mut truncated: String = one_line.chars().take(max.saturating_sub(1)).collect();
    truncated.push('…');
    truncated
}

pub(crate) fn html_escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// One cell as a Python value (a missing one as None).
pub(crate) fn cell_object<'py>(
    py: Python<'py>,
    a: &dyn Array,
    row: usize,
) -> PyResult<Bound<'py, PyAny>> {
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

pub(crate) fn unconvertible(t: &DataType) -> PyErr {
    RatchetError::new_err(format!(
        "a column of Arrow type {t} has no conversion here: read the table with pyarrow.table(t) or polars.DataFrame(t)"
    ))
}

/// One column as NumPy (numbers, and booleans without gaps) or a list (text,
/// booleans with gaps). A missing number is NaN, as in pandas (integers
/// with gaps become floats, as pyarrow's `to_pandas` makes them).
pub(crate) fn column_object<'py>(py: Python<'py>, a: &dyn Array) -> PyResult<Bound<'py, PyAny>> {
    let gaps = a.null_count() > 0;
    Ok(match a.data_type() {
        DataType::Float64 => {
            let values = a.as_primitive::<Float64Type>();
            if gaps {
                PyArray1::from_iter(py, values.iter().map(|v| v.unwrap_or(f64::NAN))).into_any()
            } else {
                PyArray1::from_slice(py, values.values()).into_any()
            }
        }
        DataType::UInt64 => {
            let values = a.as_primitive::<UInt64Type>();
            if gaps {
                PyArray1::from_iter(py, values.iter().map(|v| v.map_or(f64::NAN, |x| x as f64)))
                    .into_any()
            } else {
                PyArray1::from_slice(py, values.values()).into_any()
            }
        }
        DataType::Int64 => {
            let values = a.as_primitive::<Int64Type>();
            if gaps {
                PyArray1::from_iter(py, values.iter().map(|v| v.map_or(f64::NAN, |x| x as f64)))
                    .into_any()
            } else {
                PyArray1::from_slice(py, values.values()).into_any()
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
pub(crate) fn import_for<'py>(
    py: Python<'py>,
    module: &str,
    method: &str,
) -> PyResult<Bound<'py, PyModule>> {
    py.import(module).map_err(|e| {
        if !e.is_instance_of::<pyo3::exceptions::PyModuleNotFoundError>(py) {
            return e;
        }
        let err = PyImportError::new_err(format!(
            "Table.{method}() needs {module}: pip install {module} (or pip install './python[notebook]' from a clone of ratchet: the distribution is ratchet-gate)"
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
        let dict = PyDict::new(py);
        for (field, a) in self
            .batch
            .schema()
            .fields()
            .iter()
            .zip(self.batch.columns())
        {
            dict.set_item(field.name(), column_object(py, a.as_ref())?)?;
        }
        Ok(dict)
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
            let dict = PyDict::new(py);
            for (name, a) in names.iter().zip(self.batch.columns()) {
                dict.set_item(name, cell_object(py, a.as_ref(), row)?)?;
            }
            rows.push(dict);
        }
        PyList::new(py, rows)?.into_any().try_iter()
    }

    /// The size, the columns with their types, and the first rows.
    fn __repr__(&self) -> String {
        let rows = self.batch.num_rows();
        let shown = rows.min(REPR_ROWS);
        let schema = self.batch.schema();
        let mut out = format!(
            "ratchet.Table: {rows} row{} × {} column{}\n",
            if rows == 1 { "" } else { "s" },
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
        if rows > shown {
            out.push_str(&format!(
                "… {} more row{}",
                rows - shown,
                if rows - shown == 1 { "" } else { "s" }
            ));
        }
        out.trim_end().to_string()
    }

    /// The table's first rows as HTML, for notebooks.
    fn _repr_html_(&self) -> String {
        let rows = self.batch.num_rows();
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
        for row in 0..rows.min(HTML_ROWS) {
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
            "</tbody></table><p>ratchet.Table: {rows} rows × {} columns{}</p>",
            schema.fields().len(),
            if rows > HTML_ROWS {
                format!(" (first {HTML_ROWS} shown)")
            } else {
                String::new()
            }
        ));
        out
    }
}
