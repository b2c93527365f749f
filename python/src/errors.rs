//! The exceptions ratchet raises and the mapping of each library error
//! to the one of its kind (`ToPyErr`), message intact.

use pyo3::create_exception;
use pyo3::exceptions::PyException;
use pyo3::prelude::*;

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
pub(crate) trait ToPyErr {
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
