//! What a request can fail with, and the HTTP status each failure is.

/// A failed request: each variant is one HTTP status and one JSON error
/// document `{"error": {"kind", "message"}}`.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The request is malformed (not JSON, a missing field, a bad commit id…): 400.
    #[error("{0}")]
    BadRequest(String),
    /// No token, a malformed one, an unknown id or a wrong secret: 401.
    #[error("{0}")]
    Unauthorized(String),
    /// A valid token that may not do this (scope, session, revoked, expired): 403.
    #[error("{0}")]
    Forbidden(String),
    /// No token with this id was minted for the store: 404.
    #[error("no token {id} was minted for this store")]
    UnknownToken {
        /// The id asked for.
        id: String,
    },
    /// The token was revoked already (by the event at `seq`): 409. Nothing
    /// was appended; the token stays refused.
    #[error("token {id} was revoked already, at seq {seq}")]
    AlreadyRevoked {
        /// The token's id.
        id: String,
        /// Seq of the revocation.
        seq: u64,
    },
    /// No such route: 404.
    #[error("{0}")]
    NotFound(String),
    /// The body is over the server's limit: 413.
    #[error("{0}")]
    TooLarge(String),
    /// The token sent more requests than its rate allows: 429.
    #[error("{0}")]
    RateLimited(String),
    /// A record token's quota (events or bytes, per hour or in total)
    /// would be passed: nothing of the request was stored (429).
    #[error("{message}")]
    OverQuota {
        /// Which quota: `max_events`, `max_bytes`, `events_per_hour`, `bytes_per_hour`.
        quota: &'static str,
        /// What is wrong and what to do.
        message: String,
    },
    /// The served file failed its re-verification: decisions and writes
    /// are refused until the server is restarted on a sound file (503).
    #[error("{0}")]
    Faulted(String),
    /// The request took longer than the server allows (a slow client): 408.
    #[error("{0}")]
    Timeout(String),
    /// The store refused a write it could not make durable (disk full,
    /// file-size limit): 507. Nothing of the request was stored.
    #[error("the store cannot write: {0}")]
    StorageFull(String),
    /// The trace store failed or refused.
    #[error(transparent)]
    Trace(#[from] ratchet_trace::Error),
    /// Ingestion refused the evidence.
    #[error(transparent)]
    Scorers(#[from] ratchet_scorers::Error),
    /// The gate could not decide as asked.
    #[error(transparent)]
    Orchestrate(#[from] ratchet_orchestrate::Error),
    /// The gate's policy could not be resolved.
    #[error(transparent)]
    Gate(#[from] ratchet_gate::Error),
    /// The report could not be drawn.
    #[error(transparent)]
    Report(#[from] ratchet_report::Error),
    /// Binding or accepting on a socket failed.
    #[error("{what}: {source}")]
    Io {
        /// What was being done.
        what: String,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },
    /// A fault of the server itself (a poisoned lock, a task that panicked).
    #[error("{0}")]
    Internal(String),
}

impl Error {
    /// The trace store's error this one is, if it is one: a transparent
    /// wrapper forwards its `source()` past the wrapped error, so the
    /// chain alone does not show it.
    pub fn trace_error(&self) -> Option<&ratchet_trace::Error> {
        match self {
            Error::Trace(e) => Some(e),
            Error::Scorers(e) => e.trace_error(),
            Error::Orchestrate(e) => e.trace_error(),
            Error::Gate(e) => e.trace_error(),
            Error::Report(e) => e.trace_error(),
            _ => None,
        }
    }
}

/// The crate's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// The HTTP status and the machine-readable kind of the error.
    pub fn status(&self) -> (u16, &'static str) {
        match self {
            Error::BadRequest(_) => (400, "bad_request"),
            Error::Unauthorized(_) => (401, "unauthorized"),
            Error::Forbidden(_) => (403, "forbidden"),
            Error::UnknownToken { .. } | Error::NotFound(_) => (404, "not_found"),
            Error::Timeout(_) => (408, "timeout"),
            Error::AlreadyRevoked { .. } => (409, "already_revoked"),
            Error::TooLarge(_) => (413, "too_large"),
            Error::RateLimited(_) => (429, "rate_limited"),
            Error::OverQuota { .. } => (429, "over_quota"),
            Error::Faulted(_) => (503, "faulted"),
            Error::StorageFull(_) => (507, "storage_full"),
            Error::Io { .. } | Error::Internal(_) => (500, "internal"),
            Error::Trace(e) => trace_status(e),
            // Input the libraries refused (a bad report, an unknown commit, an
            // unpinned class) is the caller's to fix, unless the store failed.
            other => match other.trace_error() {
                Some(e) => trace_status(e),
                None => (400, "bad_request"),
            },
        }
    }

    /// `e` as a storage-full error when the store failed for lack of space.
    pub(crate) fn classify(self) -> Error {
        let full = self.trace_error().is_some_and(is_full);
        if full {
            Error::StorageFull(self.to_string())
        } else {
            self
        }
    }
}

fn trace_status(e: &ratchet_trace::Error) -> (u16, &'static str) {
    use ratchet_trace::Error as T;
    match e {
        T::InvalidInput { .. } | T::ReservedKind { .. } | T::PayloadTooLarge { .. } => {
            (400, "bad_request")
        }
        e if is_full(e) => (507, "storage_full"),
        _ => (500, "internal"),
    }
}

/// Whether the store failed because the disk (or the file-size limit) is full.
fn is_full(e: &ratchet_trace::Error) -> bool {
    let text = e.to_string().to_ascii_lowercase();
    text.contains("database or disk is full")
        || text.contains("no space left")
        || text.contains("file too large")
        // A write the file-size limit cut short (EFBIG) is reported so.
        || text.contains("disk i/o error")
}
