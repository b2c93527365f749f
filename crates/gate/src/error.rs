//! The one error type of `ratchet-gate`.

/// `Result` with this crate's [`Error`] as the default error.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong in the gate's statistics.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A test parameter is out of its domain; the message names it and why.
    #[error("invalid parameter {name}: {reason}")]
    InvalidParameter {
        /// The parameter (`alpha`, `p1`, `elo1`, …).
        name: &'static str,
        /// What is wrong with it.
        reason: String,
    },
    /// An observation cannot be used (NaN, infinite, or out of range).
    #[error("invalid observation: {reason}")]
    InvalidObservation {
        /// What is wrong with it.
        reason: String,
    },
    /// A policy is invalid: where (`class.NAME.alpha`, or a line and
    /// column of a syntax error) and why.
    #[error("policy: {field}: {reason}")]
    Policy {
        /// The field's path.
        field: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A policy file could not be read or is invalid (the reason says which).
    #[error("policy file {}: {reason}", path.display())]
    PolicyFile {
        /// The file.
        path: std::path::PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// A verdict was asked for at a trace size the trace does not reach.
    #[error("the trace has no event {seq} (it holds {size}): nothing to decide at")]
    BeyondHead {
        /// The size asked for.
        seq: u64,
        /// The trace's size.
        size: u64,
    },
    /// Bytes that were to be a recorded verdict are not one (or name a law
    /// this gate does not know).
    #[error("not a verdict this gate can read: {reason}")]
    UnreadableVerdict {
        /// What serde_json said, naming the field.
        reason: String,
    },
    /// A verdict could not be written as JSON.
    #[error("cannot serialize the verdict: {reason}")]
    Serialize {
        /// What serde_json said.
        reason: String,
    },
    /// The class is pinned in the trace to another policy than the one
    /// given: nothing was decided under it.
    #[error(
        "class {class} is pinned to policy {pinned_hash} (seq {seq}); the policy given ({given_hash}) differs in {}: decide under the pinned policy (omit --policy), or pin the new one first (`ratchet policy pin FILE --class {class}`, a recorded act)",
        fields.join(", ")
    )]
    PolicyNotPinned {
        /// The class.
        class: String,
        /// Seq of the pin in force.
        seq: u64,
        /// Hash of the pinned policy.
        pinned_hash: String,
        /// Hash of the policy given.
        given_hash: String,
        /// The fields that differ.
        fields: Vec<String>,
    },
    /// A keyed store was asked to decide a class that is not pinned in its
    /// trace: the policy file beside the store is writable by anyone who
    /// can write the directory, so it is not the key holder's word.
    #[error(
        "class {class} is not pinned in this keyed store: a policy file beside the store can be edited by anyone who can write its directory. Pin it (`ratchet policy pin FILE --class {class} --key-file KEY`), or pass --allow-unpinned for an experiment (the verdict records that it was unpinned)"
    )]
    Unpinned {
        /// The class.
        class: String,
    },
    /// A class is neither pinned in the trace nor given by a policy file.
    #[error(
        "class {class} is not pinned in the trace and no policy file was given: give one, or pin one (`ratchet policy pin FILE`)"
    )]
    NoPolicy {
        /// The class.
        class: String,
    },
    /// The trace store failed; `decide` fails closed.
    #[error(transparent)]
    Trace(#[from] ratchet_trace::Error),
    /// A numerical routine failed to converge; the inputs are degenerate.
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

/// Checks that a probability lies strictly inside (0, 1).
pub(crate) fn open_unit(name: &'static str, p: f64) -> Result<f64> {
    if p.is_finite() && p > 0.0 && p < 1.0 {
        Ok(p)
    } else {
        Err(invalid(
            name,
            format!("{p} is not strictly between 0 and 1"),
        ))
    }
}
