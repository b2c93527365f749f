//! The one error type of `ratchet-drift`.

/// `Result` with this crate's [`Error`] as the default error.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong in drift detection.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A detector or ARL parameter is out of its domain.
    #[error("invalid parameter {name}: {reason}")]
    InvalidParameter {
        /// The parameter (`sigma`, `lambda`, `h`, …).
        name: &'static str,
        /// What is wrong with it.
        reason: String,
    },
    /// An observation cannot be used (NaN or infinite); it was not counted.
    #[error("invalid observation: {reason}")]
    InvalidObservation {
        /// What is wrong with it.
        reason: String,
    },
    /// The trace store failed.
    #[error(transparent)]
    Trace(#[from] ratchet_trace::Error),
    /// A numerical routine failed.
    #[error("numerical failure in {what}: {reason}")]
    Numerical {
        /// The routine.
        what: &'static str,
        /// Why.
        reason: String,
    },
}

impl Error {
    /// The trace store's error this one is, if it is one: a transparent
    /// wrapper forwards its `source()` past the wrapped error, so the
    /// chain alone does not show it.
    pub fn trace_error(&self) -> Option<&ratchet_trace::Error> {
        match self {
            Error::Trace(e) => Some(e),
            _ => None,
        }
    }
}

pub(crate) fn invalid(name: &'static str, reason: impl Into<String>) -> Error {
    Error::InvalidParameter {
        name,
        reason: reason.into(),
    }
}
