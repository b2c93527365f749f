//! Capability tokens: minted and revoked by the store's owner as reserved
//! `capability` events (MAC'd in a keyed store, so nobody without the key
//! can add one), held by clients as bearer strings, stored only as the
//! hash of their secret.

use std::collections::BTreeMap;

use ratchet_trace::{EventDraft, Receipt, ReservedKind, Store, Verified};
use serde::{Deserialize, Serialize};

use crate::{Error, Result};

/// What a token lets its holder do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Scope {
    /// Append scores, test runs, reports and plain events, all under the
    /// token's own session; never a reserved kind.
    Record,
    /// Ask for a verdict; the server computes and records it.
    Decide,
    /// Read status, verdicts, the report and the Markdown summary.
    Read,
    /// Mint and revoke tokens.
    Admin,
}

impl Scope {
    /// The scope's name, as typed (`record`, `decide`, `read`, `admin`).
    pub const fn as_str(self) -> &'static str {
        match self {
            Scope::Record => "record",
            Scope::Decide => "decide",
            Scope::Read => "read",
            Scope::Admin => "admin",
        }
    }
}

impl std::fmt::Display for Scope {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for Scope {
    type Err = Error;
    fn from_str(s: &str) -> Result<Scope> {
        match s {
            "record" => Ok(Scope::Record),
            "decide" => Ok(Scope::Decide),
            "read" => Ok(Scope::Read),
            "admin" => Ok(Scope::Admin),
            other => Err(Error::BadRequest(format!(
                "unknown scope {other:?}: one of record, decide, read, admin"
            ))),
        }
    }
}

/// What a record token may store, counted from the trace (each batch's
/// `ingest` marker names its token, its events and its bytes): events and
/// bytes in total, and in any hour (a sliding window over the markers'
/// timestamps). A request that would pass one stores nothing and is
/// refused 429 `over_quota`, naming the quota. A token minted before
/// quotas existed reads as minted with the defaults.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Quota {
    /// Events it may store in all (`ratchet token mint --max-events`).
    pub max_events: u64,
    /// Bytes it may send to be stored in all: event lines and uploads as
    /// sent (`--max-bytes`).
    pub max_bytes: u64,
    /// Events it may store in any hour (`--events-per-hour`).
    pub events_per_hour: u64,
    /// Bytes it may send in any hour (`--bytes-per-hour`).
    pub bytes_per_hour: u64,
}

impl Quota {
    /// Defaults: 1,000,000 events and 1 GiB in all; 100,000 events and
    /// 64 MiB in any hour.
    pub const DEFAULT: Quota = Quota {
        max_events: 1_000_000,
        max_bytes: 1 << 30,
        events_per_hour: 100_000,
        bytes_per_hour: 64 << 20,
    };
}

impl Default for Quota {
    fn default() -> Self {
        Quota::DEFAULT
    }
}

/// What a token is minted for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TokenSpec {
    /// Its scopes (at least one).
    pub can: Vec<Scope>,
    /// The session every event it records is recorded under.
    pub session: String,
    /// The cell (fleet member, CI job) it speaks for, recorded with its events.
    #[serde(default)]
    pub cell: Option<String>,
    /// When it stops working, in Unix milliseconds (`None`: until revoked).
    #[serde(default)]
    pub expires_at_ms: Option<i64>,
    /// What it may store (a record token); the defaults when not given.
    #[serde(default)]
    pub quota: Quota,
}

/// The payload of a `capability` event.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "lowercase", deny_unknown_fields)]
enum CapabilityEvent {
    Mint {
        id: String,
        secret_hash: String,
        #[serde(flatten)]
        spec: TokenSpec,
    },
    Revoke {
        id: String,
    },
}

/// A token as the trace knows it (never its secret).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Capability {
    /// Its id (the public part of the bearer string).
    pub id: String,
    /// What it was minted for.
    #[serde(flatten)]
    pub spec: TokenSpec,
    /// Seq of the mint.
    pub minted_seq: u64,
    /// Seq of its revocation, if revoked.
    pub revoked_seq: Option<u64>,
    #[serde(skip)]
    secret_hash: String,
}

impl Capability {
    /// Whether it can be used at `now_ms` (not revoked, not expired).
    pub fn live(&self, now_ms: i64) -> bool {
        self.revoked_seq.is_none() && self.spec.expires_at_ms.is_none_or(|t| now_ms < t)
    }
}

/// A freshly minted token: the bearer string is shown once and never stored.
#[derive(Debug, Clone, Serialize)]
pub struct Minted {
    /// `rtk_<id>_<secret>`: what the client sends as `Authorization: Bearer …`.
    pub token: String,
    /// Its id (for revocation).
    pub id: String,
    /// The `capability` event.
    pub receipt: Receipt,
}

const PREFIX: &str = "rtk_";

/// The longest cell name a token may be minted with.
pub const MAX_CELL_LEN: usize = 64;

/// Every token minted in `view`'s own trace, by id.
///
/// # Errors
/// [`Error::Trace`] if a `capability` payload does not parse.
pub fn tokens_in(view: &Verified) -> Result<BTreeMap<String, Capability>> {
    let mut out: BTreeMap<String, Capability> = BTreeMap::new();
    for (e, c) in view.own_control_events::<CapabilityEvent>(ReservedKind::Capability, u64::MAX)? {
        match c {
            CapabilityEvent::Mint {
                id,
                secret_hash,
                spec,
            } => {
                // An id minted twice keeps its first mint: a later one
                // cannot replace the secret of a token already handed out.
                out.entry(id.clone()).or_insert(Capability {
                    id,
                    spec,
                    minted_seq: e.seq,
                    revoked_seq: None,
                    secret_hash,
                });
            }
            CapabilityEvent::Revoke { id } => {
                if let Some(t) = out.get_mut(&id) {
                    t.revoked_seq.get_or_insert(e.seq);
                }
            }
        }
    }
    Ok(out)
}

/// Mints a token: a random id and secret, the secret's hash and `spec`
/// recorded as a `capability` event (MAC'd by a keyed store's writer).
///
/// # Errors
/// [`Error::BadRequest`] for an empty scope list or an invalid session;
/// [`Error::Trace`] if the append fails.
pub fn mint_token(store: &mut Store, spec: &TokenSpec) -> Result<Minted> {
    if spec.can.is_empty() {
        return Err(Error::BadRequest(
            "a token needs at least one scope (--can record|decide|read|admin)".into(),
        ));
    }
    if spec.expires_at_ms.is_some_and(|t| t <= now_ms()) {
        return Err(Error::BadRequest(
            "expires_at_ms is in the past: the token would never work".into(),
        ));
    }
    if let Some(cell) = &spec.cell
        && (cell.is_empty()
            || cell.len() > MAX_CELL_LEN
            || !cell.bytes().all(|b| b.is_ascii_graphic() && b != b':'))
    {
        return Err(Error::BadRequest(format!(
            "cell {cell:?}: 1 to {MAX_CELL_LEN} visible ASCII characters without ':' (it is stamped on every batch the token writes)"
        )));
    }
    // A token's session names whose evidence is the token's: it must not
    // be empty, collide with ratchet's own `prefix:` sessions, or take over
    // a session the key holder already wrote under (that evidence would
    // become the token's, and be set aside by every class).
    let session = &spec.session;
    if session.is_empty()
        || session.len() > ratchet_trace::MAX_NAME_LEN
        || session.contains(':')
        || session.chars().any(char::is_control)
    {
        return Err(Error::BadRequest(format!(
            "session {session:?}: a token's session is 1 to {} characters, no ':' (ratchet's own sessions use it) and no control characters",
            ratchet_trace::MAX_NAME_LEN
        )));
    }
    // The sessions the key holder's own commands write under by default
    // (`ratchet ingest FORMAT`, `ratchet bench`): a token minted for one
    // would take over the key holder's later evidence.
    if ratchet_scorers::Format::ALL
        .iter()
        .any(|f| f.name() == session.as_str())
        || session == "bench"
    {
        return Err(Error::BadRequest(format!(
            "session {session:?} is one the key holder's own commands write under (`ratchet ingest`, `ratchet bench`): a token minted for it would take over that evidence. Choose another session"
        )));
    }
    let view = store.verified(&ratchet_trace::VerifyOptions::default())?;
    let tokens = view.token_session_names(u64::MAX);
    if !tokens.contains(session.as_str()) {
        let mut used = view.events().iter().any(|e| {
            e.origin.is_none()
                && e.session == *session
                && e.reserved_kind() != Some(ReservedKind::Capability)
        });
        view.each_score(0, &mut |r| {
            used |= r.origin_store.is_none() && r.session == session.as_str();
        });
        if used {
            return Err(Error::BadRequest(format!(
                "session {session:?} already holds the key holder's own evidence: a token minted for it would make that evidence the token's. Choose another session"
            )));
        }
    }
    drop(view);
    let id = random_hex(8)?;
    let secret = random_hex(32)?;
    let event = CapabilityEvent::Mint {
        id: id.clone(),
        secret_hash: blake3::hash(secret.as_bytes()).to_hex().to_string(),
        spec: spec.clone(),
    };
    let draft = EventDraft::reserved(ReservedKind::Capability, &event)?.session(&spec.session);
    let receipt = store.append(draft)?;
    Ok(Minted {
        token: format!("{PREFIX}{id}_{secret}"),
        id,
        receipt,
    })
}

/// Revokes the token `id`: refused at once by every server that refreshes
/// its view (each request does).
///
/// # Errors
/// [`Error::UnknownToken`] if no such token was minted here;
/// [`Error::AlreadyRevoked`] if it was revoked before (nothing appended);
/// [`Error::Trace`] if the store cannot be read or written.
pub fn revoke_token(store: &mut Store, id: &str) -> Result<Receipt> {
    let view = store.verified(&ratchet_trace::VerifyOptions::default())?;
    let tokens = tokens_in(&view)?;
    let Some(t) = tokens.get(id) else {
        return Err(Error::UnknownToken { id: id.to_string() });
    };
    if let Some(seq) = t.revoked_seq {
        return Err(Error::AlreadyRevoked {
            id: id.to_string(),
            seq,
        });
    }
    let draft = EventDraft::reserved(
        ReservedKind::Capability,
        &CapabilityEvent::Revoke { id: id.to_string() },
    )?
    .session(&t.spec.session);
    Ok(store.append(draft)?)
}

/// The token a bearer string names, if it is one of `tokens` and its
/// secret matches (compared as hashes, in constant time).
///
/// # Errors
/// [`Error::Unauthorized`] for a malformed string, an unknown id or a wrong
/// secret; [`Error::Forbidden`] for a revoked or expired token.
pub fn authenticate<'a>(
    tokens: &'a BTreeMap<String, Capability>,
    bearer: &str,
    now_ms: i64,
) -> Result<&'a Capability> {
    let rest = bearer.strip_prefix(PREFIX).ok_or_else(|| {
        Error::Unauthorized("the bearer token is not a ratchet token (rtk_…)".into())
    })?;
    let (id, secret) = rest
        .split_once('_')
        .ok_or_else(|| Error::Unauthorized("the bearer token is malformed".into()))?;
    let token = tokens
        .get(id)
        .ok_or_else(|| Error::Unauthorized(format!("no token {id} was minted for this store")))?;
    let given = blake3::hash(secret.as_bytes());
    let stored = blake3::Hash::from_hex(&token.secret_hash)
        .map_err(|_| Error::Unauthorized(format!("token {id} has an unreadable hash")))?;
    // blake3::Hash compares in constant time.
    if given != stored {
        return Err(Error::Unauthorized(format!("wrong secret for token {id}")));
    }
    if let Some(seq) = token.revoked_seq {
        return Err(Error::Forbidden(format!(
            "token {id} was revoked (seq {seq})"
        )));
    }
    if !token.live(now_ms) {
        return Err(Error::Forbidden(format!("token {id} has expired")));
    }
    Ok(token)
}

fn random_hex(bytes: usize) -> Result<String> {
    let mut buf = vec![0u8; bytes];
    getrandom::fill(&mut buf).map_err(|e| Error::Internal(format!("no randomness: {e}")))?;
    Ok(buf.iter().map(|b| format!("{b:02x}")).collect())
}

/// A token's lifetime as written by a person: `90s`, `30m`, `12h`, `7d`
/// (and `500ms`; a bare number is seconds). The one reading of it: the
/// CLI's `token mint --expires`, the mint route's `expires` (what
/// Python's and JavaScript's `mint_token(expires="12h")` send) and
/// `serve --reverify-every` all parse it here.
///
/// # Errors
/// [`Error::BadRequest`] for text that is not a number and one of those
/// units, or a lifetime too long to count in milliseconds.
pub fn parse_duration(text: &str) -> Result<std::time::Duration> {
    let trimmed = text.trim();
    let split = trimmed
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(trimmed.len());
    let (digits, unit) = trimmed.split_at(split);
    let amount: u64 = digits.parse().map_err(|_| {
        Error::BadRequest(format!("{text:?}: a number and a unit (90s, 30m, 12h, 7d)"))
    })?;
    let millis = match unit {
        "ms" => Some(amount),
        "s" | "" => amount.checked_mul(1000),
        "m" => amount.checked_mul(60_000),
        "h" => amount.checked_mul(3_600_000),
        "d" => amount.checked_mul(86_400_000),
        _ => {
            return Err(Error::BadRequest(format!(
                "{text:?}: the unit is ms, s, m, h or d"
            )));
        }
    };
    let millis = millis.ok_or_else(|| Error::BadRequest(format!("{text:?}: too long")))?;
    Ok(std::time::Duration::from_millis(millis))
}

/// When a token minted now for `lifetime` ([`parse_duration`]'s text)
/// stops working, in Unix milliseconds (a [`TokenSpec::expires_at_ms`]).
///
/// # Errors
/// As [`parse_duration`].
pub fn expires_in(lifetime: &str) -> Result<i64> {
    let duration = parse_duration(lifetime)?;
    Ok(now_ms().saturating_add(i64::try_from(duration.as_millis()).unwrap_or(i64::MAX / 2)))
}

/// Unix time in milliseconds: the clock token expiry is read against.
pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_minted_before_quotas_reads_with_the_default_quota() {
        let old = serde_json::json!({
            "op": "mint", "id": "0123456789abcdef", "secret_hash": "00",
            "can": ["record"], "session": "s", "cell": null, "expires_at_ms": null,
        });
        let parsed: CapabilityEvent = serde_json::from_value(old).expect("parses");
        let CapabilityEvent::Mint { spec, .. } = parsed else {
            panic!("a mint")
        };
        assert_eq!(spec.quota, Quota::DEFAULT);
        let partial = serde_json::json!({
            "op": "mint", "id": "0123456789abcdef", "secret_hash": "00",
            "can": ["record"], "session": "s", "quota": { "max_events": 7 },
        });
        let CapabilityEvent::Mint { spec, .. } =
            serde_json::from_value::<CapabilityEvent>(partial).expect("parses")
        else {
            panic!("a mint")
        };
        assert_eq!(spec.quota.max_events, 7);
        assert_eq!(spec.quota.events_per_hour, Quota::DEFAULT.events_per_hour);
    }
}
