//! Events: what callers hand in ([`EventDraft`]) and what the chain holds ([`Event`]).

use std::fmt;

use serde::{Deserialize, Serialize};
use ulid::Ulid;

use crate::error::{Error, Result};

/// Default limit on an inline payload; larger data goes to the blob store.
pub const DEFAULT_MAX_INLINE_PAYLOAD: usize = 64 * 1024;
/// Longest accepted kind, session, task, scorer or suite name, in bytes.
pub const MAX_NAME_LEN: usize = 256;

/// A full git object id: 40 (SHA-1) or 64 (SHA-256) hex digits, stored lower-case.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct CommitId(String);

impl CommitId {
    /// Parses a full commit id. Abbreviated ids are refused: a store must join
    /// on exact commits, and an abbreviation can become ambiguous later.
    ///
    /// # Errors
    /// [`Error::InvalidInput`] naming `commit` if the text is not 40 or 64 hex digits.
    pub fn parse(text: &str) -> Result<Self> {
        let ok_len = text.len() == 40 || text.len() == 64;
        if !ok_len || !text.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(Error::invalid(
                "commit",
                format!(
                    "{text:?} is not a full commit id (40 or 64 hex digits); resolve it with `git rev-parse`"
                ),
            ));
        }
        Ok(CommitId(text.to_ascii_lowercase()))
    }

    /// The id as lower-case hex.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for CommitId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl TryFrom<String> for CommitId {
    type Error = Error;
    fn try_from(s: String) -> Result<Self> {
        CommitId::parse(&s)
    }
}

impl From<CommitId> for String {
    fn from(c: CommitId) -> String {
        c.0
    }
}

impl std::str::FromStr for CommitId {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        CommitId::parse(s)
    }
}

/// Event kinds whose meaning the rest of ratchet acts on (a heal follows an
/// alarm, a promotion moves a ref): only the typed API that owns a kind
/// writes it. [`EventDraft::json`] and [`EventDraft::raw`] refuse these
/// names, so `ratchet append` (or any generic writer) cannot forge them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum ReservedKind {
    /// A gate verdict (`ratchet_gate::decide`).
    Decision,
    /// A drift alarm (`ratchet_drift::record_alarm`).
    Alarm,
    /// A heal's checkout (`ratchet_orchestrate::heal`).
    Checkout,
    /// A promotion ref move (`ratchet_orchestrate::record_promotion`).
    Promotion,
    /// An idempotent batch's marker: a file ingested, an alarm recorded
    /// ([`crate::Store::append_once`]).
    Ingest,
    /// A scorer's declaration: the direction in which it improves
    /// (`ratchet_scorers::declare_scorer`).
    Scorer,
    /// A verification run's report: commands run in a sandbox, their
    /// outcomes, the verdict if a policy judged them
    /// (`ratchet_orchestrate::checks::run_checks`, `ratchet verify`).
    Verification,
    /// A merge's outcome: landed, conflict, semantic conflict or refused
    /// (`ratchet_orchestrate::merge::merge_branch`, `ratchet merge`).
    Merge,
    /// A pin: the policy a class decides under, or the version a rubric
    /// scores with, fixed in the trace by its writer
    /// (`ratchet_gate::pin_policy`, `ratchet_scorers::pin_rubric`).
    Policy,
    /// A capability token minted or revoked by the store's owner: its id,
    /// the hash of its secret, its scopes, session and expiry
    /// (`ratchet_serve::mint_token`, `ratchet_serve::revoke_token`).
    Capability,
}

impl ReservedKind {
    /// Every reserved kind.
    pub const ALL: [ReservedKind; 10] = [
        ReservedKind::Decision,
        ReservedKind::Alarm,
        ReservedKind::Checkout,
        ReservedKind::Promotion,
        ReservedKind::Ingest,
        ReservedKind::Scorer,
        ReservedKind::Verification,
        ReservedKind::Merge,
        ReservedKind::Policy,
        ReservedKind::Capability,
    ];

    /// The kind as stored.
    pub const fn as_str(self) -> &'static str {
        match self {
            ReservedKind::Decision => "decision",
            ReservedKind::Alarm => "alarm",
            ReservedKind::Checkout => "checkout",
            ReservedKind::Promotion => "promotion",
            ReservedKind::Ingest => "ingest",
            ReservedKind::Scorer => "scorer",
            ReservedKind::Verification => "verification",
            ReservedKind::Merge => "merge",
            ReservedKind::Policy => "policy",
            ReservedKind::Capability => "capability",
        }
    }

    /// The API that owns the kind, in words.
    pub fn owner(self) -> &'static str {
        match self {
            ReservedKind::Decision => "the gate (ratchet_gate::decide)",
            ReservedKind::Alarm => "the drift monitor (ratchet_drift::record_alarm)",
            ReservedKind::Checkout => "heal (ratchet_orchestrate::heal)",
            ReservedKind::Promotion => "ratchet_orchestrate::record_promotion",
            ReservedKind::Ingest => "Store::append_once (ingestion, recorded alarms)",
            ReservedKind::Scorer => "ratchet_scorers::declare_scorer",
            ReservedKind::Verification => {
                "ratchet_orchestrate::checks::run_checks (ratchet verify)"
            }
            ReservedKind::Merge => "ratchet_orchestrate::merge::merge_branch (ratchet merge)",
            ReservedKind::Policy => "ratchet_gate::pin_policy (ratchet policy pin)",
            ReservedKind::Capability => "ratchet_serve::mint_token (ratchet token mint)",
        }
    }

    /// The reserved kind with this name, if it is one.
    pub fn of(kind: &str) -> Option<ReservedKind> {
        ReservedKind::ALL.into_iter().find(|k| k.as_str() == kind)
    }
}

/// An event to append: the store fills in seq, id, time, cell and hashes.
#[derive(Debug, Clone, PartialEq)]
pub struct EventDraft {
    pub(crate) kind: String,
    pub(crate) session: String,
    pub(crate) commit: Option<CommitId>,
    pub(crate) payload: Vec<u8>,
    /// Built by [`EventDraft::reserved`]: may carry a reserved kind.
    pub(crate) reserved: bool,
}

impl EventDraft {
    /// A draft of `kind` whose payload is `payload` serialized as JSON.
    ///
    /// # Errors
    /// [`Error::InvalidInput`] if `payload` cannot be serialized (e.g. a NaN float).
    pub fn json<T: Serialize + ?Sized>(kind: impl Into<String>, payload: &T) -> Result<Self> {
        let bytes = serde_json::to_vec(payload)
            .map_err(|e| Error::invalid("payload", format!("cannot serialize: {e}")))?;
        Ok(Self::raw(kind, bytes))
    }

    /// A draft whose payload is the given JSON bytes, stored exactly as given
    /// (validated at append time; a [`ReservedKind`] name is refused then).
    pub fn raw(kind: impl Into<String>, payload: impl Into<Vec<u8>>) -> Self {
        EventDraft {
            kind: kind.into(),
            session: String::new(),
            commit: None,
            payload: payload.into(),
            reserved: false,
        }
    }

    /// A draft of a reserved kind, for the typed API that owns it (see
    /// [`ReservedKind::owner`]); its payload is `payload` serialized as JSON.
    ///
    /// # Errors
    /// [`Error::InvalidInput`] if `payload` cannot be serialized.
    pub fn reserved<T: Serialize + ?Sized>(kind: ReservedKind, payload: &T) -> Result<Self> {
        let mut draft = Self::json(kind.as_str(), payload)?;
        draft.reserved = true;
        Ok(draft)
    }

    /// Parses one line of the append format (JSON Lines, one event per line):
    /// `{"kind": "...", "payload": {...}}` with optional `"session"` and
    /// `"commit"` (a full 40- or 64-hex commit id). Unknown fields are
    /// refused; the payload is stored exactly as written. A reserved kind
    /// parses but is refused when appended.
    ///
    /// ```
    /// let draft = ratchet_trace::EventDraft::from_json_line(
    ///     r#"{"kind": "note", "session": "s1", "payload": {"text": "hi"}}"#,
    /// )?;
    /// assert_eq!(draft.kind(), "note");
    /// # Ok::<(), ratchet_trace::Error>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::InvalidInput`] naming what is wrong: not JSON, a missing
    /// `kind` or `payload`, an unknown field, or a malformed commit id.
    pub fn from_json_line(line: &str) -> Result<Self> {
        /// One line of the append format.
        #[derive(Deserialize)]
        #[serde(deny_unknown_fields)]
        struct Line {
            kind: String,
            #[serde(default)]
            session: String,
            #[serde(default)]
            commit: Option<String>,
            payload: Box<serde_json::value::RawValue>,
        }
        let line = line.strip_prefix('\u{feff}').unwrap_or(line);
        let parsed: Line = serde_json::from_str(line).map_err(|e| {
            Error::invalid(
                "event line",
                format!(
                    "{e} (expected {{\"kind\": ..., \"payload\": {{...}}}} with optional \"session\" and \"commit\")"
                ),
            )
        })?;
        let mut draft = Self::raw(parsed.kind, parsed.payload.get().as_bytes().to_vec())
            .session(parsed.session);
        if let Some(c) = parsed.commit {
            draft = draft.commit(CommitId::parse(&c)?);
        }
        Ok(draft)
    }

    /// Sets the session (a free-form name of the run that produced the event).
    pub fn session(mut self, session: impl Into<String>) -> Self {
        self.session = session.into();
        self
    }

    /// Sets the git commit the work ran under.
    pub fn commit(mut self, commit: CommitId) -> Self {
        self.commit = Some(commit);
        self
    }

    /// The event kind.
    pub fn kind(&self) -> &str {
        &self.kind
    }

    /// The session it names (empty when none was set).
    pub fn session_name(&self) -> &str {
        &self.session
    }

    /// Checks everything that does not depend on the store.
    pub(crate) fn validate(&self, max_payload: usize) -> Result<()> {
        validate_name("kind", &self.kind)?;
        if let Some(k) = ReservedKind::of(&self.kind).filter(|_| !self.reserved) {
            return Err(Error::ReservedKind {
                kind: self.kind.clone(),
                owner: k.owner(),
            });
        }
        if !self.kind.bytes().all(|b| {
            b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_' || b == b'.' || b == b'-'
        }) {
            return Err(Error::invalid(
                "kind",
                format!("{:?} may hold only a-z, 0-9, '_', '.' and '-'", self.kind),
            ));
        }
        if self.session.len() > MAX_NAME_LEN {
            return Err(Error::invalid(
                "session",
                format!(
                    "{} bytes, over the limit of {MAX_NAME_LEN}",
                    self.session.len()
                ),
            ));
        }
        validate_payload(&self.payload, max_payload)
    }
}

pub(crate) fn validate_name(field: &'static str, value: &str) -> Result<()> {
    if value.is_empty() {
        return Err(Error::invalid(field, "must not be empty"));
    }
    if value.len() > MAX_NAME_LEN {
        return Err(Error::invalid(
            field,
            format!("{} bytes, over the limit of {MAX_NAME_LEN}", value.len()),
        ));
    }
    if value.chars().any(char::is_control) {
        return Err(Error::invalid(
            field,
            format!("{value:?} holds control characters"),
        ));
    }
    Ok(())
}

pub(crate) fn validate_payload(payload: &[u8], max_payload: usize) -> Result<()> {
    if payload.len() > max_payload {
        return Err(Error::PayloadTooLarge {
            size: payload.len(),
            limit: max_payload,
        });
    }
    // Parsed into values, not skipped over: skipping accepts a number no
    // reader can hold (`1e999`), which every later read would fail on.
    serde_json::from_slice::<serde_json::Value>(payload)
        .map(|_| ())
        .map_err(|e| Error::invalid("payload", format!("not valid JSON: {e}")))
}

/// Provenance of an event merged from a cell: where it was first appended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Origin {
    /// The store id of the cell that appended the event first.
    pub store: String,
    /// Its seq in that cell.
    pub seq: u64,
    /// Its hash in that cell's chain.
    #[serde(serialize_with = "crate::hex_hash::serialize")]
    pub hash: blake3::Hash,
}

/// One event of the chain, as stored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Event {
    /// Position in this store's chain, from 1, without gaps.
    pub seq: u64,
    /// Globally unique, time-sortable id.
    #[serde(serialize_with = "ser_ulid")]
    pub id: Ulid,
    /// Milliseconds since the Unix epoch when the producing store appended it.
    pub ts_ms: i64,
    /// Store id of the cell that produced the event.
    pub cell: String,
    /// Session name (may be empty).
    pub session: String,
    /// Event kind (`score`, `test_run`, or any caller kind).
    pub kind: String,
    /// The commit the work ran under.
    pub commit: Option<CommitId>,
    /// JSON payload bytes, exactly as hashed.
    #[serde(serialize_with = "ser_payload")]
    pub payload: Vec<u8>,
    /// Where the event came from when it was merged from a cell.
    pub origin: Option<Origin>,
    /// Hash of the previous event (or the genesis hash).
    #[serde(serialize_with = "crate::hex_hash::serialize")]
    pub prev_hash: blake3::Hash,
    /// This event's chain hash.
    #[serde(serialize_with = "crate::hex_hash::serialize")]
    pub hash: blake3::Hash,
    /// Keyed MAC over `hash`, in a keyed store.
    #[serde(serialize_with = "ser_opt_hash")]
    pub mac: Option<blake3::Hash>,
}

impl Event {
    /// The reserved kind this event is, if it is one (`None` for a
    /// caller's own kind): match on it rather than on kind strings.
    pub fn reserved_kind(&self) -> Option<ReservedKind> {
        ReservedKind::of(&self.kind)
    }

    /// The payload parsed as JSON.
    ///
    /// # Errors
    /// [`Error::InvalidInput`] if the stored payload is not JSON (only possible in a tampered store).
    pub fn payload_json(&self) -> Result<serde_json::Value> {
        serde_json::from_slice(&self.payload)
            .map_err(|e| Error::invalid("payload", format!("stored payload is not JSON: {e}")))
    }
}

/// What the store returns for each appended event.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Receipt {
    /// The seq given to the event.
    pub seq: u64,
    /// Its id.
    #[serde(serialize_with = "ser_ulid")]
    pub id: Ulid,
    /// Its chain hash.
    #[serde(serialize_with = "crate::hex_hash::serialize")]
    pub hash: blake3::Hash,
}

fn ser_opt_hash<S: serde::Serializer>(
    h: &Option<blake3::Hash>,
    s: S,
) -> std::result::Result<S::Ok, S::Error> {
    match h {
        Some(h) => s.serialize_str(h.to_hex().as_str()),
        None => s.serialize_none(),
    }
}

fn ser_ulid<S: serde::Serializer>(id: &Ulid, s: S) -> std::result::Result<S::Ok, S::Error> {
    s.serialize_str(&id.to_string())
}

fn ser_payload<S: serde::Serializer>(p: &[u8], s: S) -> std::result::Result<S::Ok, S::Error> {
    match serde_json::from_slice::<&serde_json::value::RawValue>(p) {
        Ok(raw) => raw.serialize(s),
        Err(_) => s.serialize_str(&String::from_utf8_lossy(p)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_payload_number_no_reader_can_hold_is_refused() {
        for bad in ["1e999", "{\"x\": -1e400}", "[1, 2e308]"] {
            match validate_payload(bad.as_bytes(), 1 << 20) {
                Err(Error::InvalidInput { field, reason }) => {
                    assert_eq!(field, "payload");
                    assert!(reason.contains("out of range"), "{bad}: {reason}");
                }
                other => panic!("{bad}: expected InvalidInput, got {other:?}"),
            }
        }
        validate_payload(b"{\"x\": 1.7976931348623157e308}", 1 << 20).expect("f64::MAX holds");
    }

    #[test]
    fn commit_ids_must_be_full_hex() {
        let ok = CommitId::parse("0123456789ABCDEF0123456789abcdef01234567").expect("40 hex");
        assert_eq!(ok.as_str(), "0123456789abcdef0123456789abcdef01234567");
        assert!(CommitId::parse(&"a".repeat(64)).is_ok());
        for bad in ["", "abc1234", &"g".repeat(40), &"a".repeat(41), "HEAD"] {
            let err = CommitId::parse(bad).expect_err(bad);
            assert!(
                matches!(
                    err,
                    Error::InvalidInput {
                        field: "commit",
                        ..
                    }
                ),
                "{err}"
            );
        }
    }

    #[test]
    fn drafts_are_validated() {
        let lim = DEFAULT_MAX_INLINE_PAYLOAD;
        assert!(EventDraft::raw("note", "{}").validate(lim).is_ok());
        let bad_json = EventDraft::raw("note", "{nope")
            .validate(lim)
            .expect_err("json");
        assert!(matches!(
            bad_json,
            Error::InvalidInput {
                field: "payload",
                ..
            }
        ));
        let big = EventDraft::raw("note", format!("\"{}\"", "x".repeat(lim))).validate(lim);
        assert!(matches!(big, Err(Error::PayloadTooLarge { .. })));
        assert!(big.expect_err("big").to_string().contains("put_blob"));
        for kind in ["", "Has Space", "UPPER"] {
            let refused = EventDraft::raw(kind, "1").validate(lim).expect_err(kind);
            assert!(matches!(refused, Error::InvalidInput { field: "kind", .. }));
        }
        let long = EventDraft::raw("note", "1").session("s".repeat(MAX_NAME_LEN + 1));
        assert!(matches!(
            long.validate(lim),
            Err(Error::InvalidInput {
                field: "session",
                ..
            })
        ));
    }

    #[test]
    fn json_drafts_refuse_nan() {
        // serde_json serializes NaN as null; f64 NaN must not sneak in as a number.
        let draft = EventDraft::json("note", &serde_json::json!({"x": 1.5})).expect("json");
        assert_eq!(draft.payload, br#"{"x":1.5}"#);
    }
}
