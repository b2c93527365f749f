//! Drift detectors over any float array-like (`Cusum`, `Ewma`,
//! `PageHinkley`) and their average run lengths.

use pyo3::prelude::*;

use ratchet_drift::Detector;

use crate::convert::{float_array, from_json};
use crate::errors::ToPyErr;

/// Wraps a detector for Python.
macro_rules! detector {
    ($name:ident, $inner:ty, $doc:literal) => {
        #[doc = $doc]
        #[pyclass(module = "ratchet._native")]
        pub(crate) struct $name {
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
    /// A Page–Hinkley test with tolerance `delta` and threshold `lam` in
    /// σ units of `sigma` (the in-control standard deviation), as `ratchet
    /// watch --page-hinkley DELTA LAMBDA` takes them, with its defaults;
    /// `sigma=1.0` reads them in the data's own units.
    #[new]
    #[pyo3(signature = (delta=0.5, lam=50.0, sigma=1.0))]
    fn new(delta: f64, lam: f64, sigma: f64) -> PyResult<Self> {
        if !(sigma.is_finite() && sigma > 0.0) {
            return Err(crate::errors::InvalidInputError::new_err(format!(
                "sigma {sigma}: the in-control standard deviation must be a finite number > 0"
            )));
        }
        // Scaled as the CLI's live chart scales them (`delta * sd`,
        // `lambda * sd`): one detector, one unit.
        Ok(PageHinkley {
            inner: ratchet_drift::PageHinkley::new(delta * sigma, lam * sigma)
                .map_err(ToPyErr::py)?,
        })
    }
}

/// Average run length of a two-sided CUSUM (Markov chain, `ratchet_drift::cusum_arl`)
/// for a mean shift of `shift` σ.
#[pyfunction]
#[pyo3(signature = (k, h, shift=0.0))]
pub(crate) fn cusum_arl(k: f64, h: f64, shift: f64) -> PyResult<f64> {
    ratchet_drift::cusum_arl(k, h, shift, false, 200).map_err(ToPyErr::py)
}

/// Average run length of an EWMA chart (steady-state limits; `ratchet_drift::ewma_arl`).
#[pyfunction]
#[pyo3(signature = (lam, width, shift=0.0))]
pub(crate) fn ewma_arl(lam: f64, width: f64, shift: f64) -> PyResult<f64> {
    ratchet_drift::ewma_arl(lam, width, shift, 200).map_err(ToPyErr::py)
}
