//! `ratchet._native`: the Python face of ratchet. Types in, types out: each
//! function converts its arguments, calls one library function (releasing
//! the GIL around anything that reads or writes a store), and converts the
//! result. Tables leave as Arrow (the PyCapsule stream interface), arrays
//! arrive as NumPy views (no copy).
//!
//! One module per role: `errors` (the exceptions), `convert` (arguments
//! in), `table` (tables out), `store`, `gate`, `drift`, `scorers`.

mod convert;
mod drift;
mod errors;
mod gate;
mod scorers;
mod store;
mod table;

use pyo3::prelude::*;

use crate::drift::{Cusum, Ewma, PageHinkley, cusum_arl, ewma_arl};
use crate::errors::{
    InvalidInputError, KeyRequiredError, NotFoundError, RatchetError, ReadOnlyError, TamperedError,
};
use crate::gate::{
    GateStatus, Policy, StageReport, Verdict, calibrate, decide, pin_policy, welch_non_inferiority,
};
use crate::scorers::{Rubric, ingest, ingest_jsonl, ingest_junit};
use crate::store::Store;
use crate::table::Table;

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
    m.add_class::<GateStatus>()?;
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
