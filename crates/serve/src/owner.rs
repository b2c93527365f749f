//! The owner: one store, its key and its verified view, behind one lock.
//! Every request authenticates against the view as refreshed at that
//! moment (a token revoked a millisecond ago is refused), then does one
//! library call under its token's scope and session.

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use ratchet_trace::{CommitId, EventDraft, Ledger, Receipt, Store, VerifyOptions};
use serde::{Deserialize, Serialize};

use crate::tokens::{self, Capability, Scope, TokenSpec};
use crate::{Error, Result};

/// How the server treats its clients.
#[derive(Debug, Clone)]
pub struct ServeOptions {
    /// The largest request body accepted (413 above it).
    pub max_body_bytes: usize,
    /// Requests per second a token may make on average (429 beyond it).
    pub rate_per_second: f64,
    /// Requests a token may make in a burst.
    pub burst: f64,
    /// The longest a request may take, its body's upload included (408).
    pub request_timeout: Duration,
    /// The longest a client may take to send its request's headers.
    pub header_timeout: Duration,
    /// Connections served at once; the next waits in the socket's backlog.
    pub max_connections: usize,
    /// Failed authentications per second, all clients together, before
    /// each further failure is answered 429 after a pause.
    pub failed_auth_per_second: f64,
    /// Failed authentications allowed in a burst.
    pub failed_auth_burst: f64,
    /// Uploads read and parsed at once: a request with a body waits for
    /// one of these slots *before* its body is read off the socket, so at
    /// most this many bodies are in memory at once (the rest wait, unread,
    /// in their connections) and what parsing holds — about the upload's
    /// inflated text — is bounded too: a few times `8 × max_body_bytes`
    /// per slot.
    pub max_parsing: usize,
    /// A checkpoint held elsewhere: the trace must still hold its events
    /// at start and at each re-verification (a rollback of the file under
    /// the server is a fault).
    pub checkpoint: Option<ratchet_trace::Checkpoint>,
    /// How often the whole file is verified again in the background
    /// (`None`: never). A fault stops decisions and writes until restart.
    pub reverify_every: Option<Duration>,
}

impl Default for ServeOptions {
    fn default() -> Self {
        ServeOptions {
            max_body_bytes: 16 << 20,
            rate_per_second: 200.0,
            burst: 400.0,
            request_timeout: Duration::from_secs(30),
            header_timeout: Duration::from_secs(10),
            max_connections: 256,
            failed_auth_per_second: 10.0,
            failed_auth_burst: 100.0,
            max_parsing: 2,
            checkpoint: None,
            reverify_every: Some(Duration::from_secs(600)),
        }
    }
}

/// A question for the gate, as a `decide` client asks it.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct DecideRequest {
    /// The class (its policy must be pinned in the trace: a server decides
    /// only under pinned policies, never under a file).
    pub class: String,
    /// The commit running now (a full id).
    pub baseline: String,
    /// The commit proposed (a full id).
    pub candidate: String,
    /// Decide without recording.
    #[serde(default)]
    pub dry_run: bool,
}

/// Where an upload is read from, and under which options.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct IngestQuery {
    pub commit: Option<String>,
    pub suite: Option<String>,
    pub direction: Option<String>,
    pub label: Option<String>,
    /// Benchmarks: the runner the timings were measured on
    /// ([`ratchet_scorers::IngestOptions::runner`]).
    pub runner: Option<String>,
    /// The file name the report had (its extension tells `.eval` from `.json`).
    pub name: Option<String>,
    /// A client-chosen id: a retried upload with the same id counts once.
    pub request_id: Option<String>,
}

/// Whether a request may still write: a request the server has already
/// answered 408 must store nothing, and one whose write has begun is
/// answered with that write's outcome, never 408 (the timeout waits for it).
#[derive(Debug, Clone, Default)]
pub(crate) struct InFlight(std::sync::Arc<std::sync::atomic::AtomicU8>);

impl InFlight {
    const PENDING: u8 = 0;
    const WRITING: u8 = 1;
    const ANSWERED: u8 = 2;

    /// Claims the right to write; `false` once the request was answered.
    fn begin_write(&self) -> bool {
        use std::sync::atomic::Ordering;
        self.0
            .compare_exchange(
                Self::PENDING,
                Self::WRITING,
                Ordering::AcqRel,
                Ordering::Acquire,
            )
            .is_ok()
    }

    /// Answers the request as timed out; `false` if its write has begun.
    pub(crate) fn time_out(&self) -> bool {
        use std::sync::atomic::Ordering;
        self.0
            .compare_exchange(
                Self::PENDING,
                Self::ANSWERED,
                Ordering::AcqRel,
                Ordering::Acquire,
            )
            .is_ok()
    }
}

/// The store's owner.
#[derive(Debug)]
pub struct Owner {
    ledger: Mutex<Ledger>,
    limits: Mutex<HashMap<String, Bucket>>,
    accounts: Mutex<Accounts>,
    failures: Mutex<Bucket>,
    /// A permit per body read and parsed at once ([`ServeOptions::max_parsing`]).
    pub(crate) parsing: std::sync::Arc<tokio::sync::Semaphore>,
    pub(crate) bodies: Bodies,
    health: Mutex<Health>,
    spool: tempfile::TempDir,
    pub(crate) options: ServeOptions,
}

/// The last full verification of the served file (`GET /v1/status`'s
/// `reverification`).
#[derive(Debug, Clone, Serialize)]
pub struct Health {
    /// When the last full verification ended, in Unix milliseconds.
    pub last_full_ms: Option<i64>,
    /// The size of the trace it vouched for.
    pub checked_through: u64,
    /// Full verifications run (the one at start included).
    pub runs: u64,
    /// What it found wrong, if anything: decisions and writes are refused
    /// from then on, until the server is restarted on a sound file.
    pub fault: Option<String>,
}

#[derive(Debug, Clone, Copy)]
struct Bucket {
    tokens: f64,
    at: Instant,
}

impl Bucket {
    fn full(burst: f64) -> Bucket {
        Bucket {
            tokens: burst,
            at: Instant::now(),
        }
    }

    /// Takes one token if there is one (refilled at `rate` up to `burst`).
    fn take(&mut self, rate: f64, burst: f64) -> bool {
        let now = Instant::now();
        self.tokens = (self.tokens + now.duration_since(self.at).as_secs_f64() * rate).min(burst);
        self.at = now;
        if self.tokens < 1.0 {
            return false;
        }
        self.tokens -= 1.0;
        true
    }
}

/// Counts the request bodies held in memory, and the most held at once.
#[derive(Debug, Default)]
pub(crate) struct Bodies {
    now: std::sync::atomic::AtomicUsize,
    peak: std::sync::atomic::AtomicUsize,
}

/// One body held in memory, until dropped.
pub(crate) struct BodyHeld<'a>(&'a Bodies);

impl Bodies {
    pub(crate) fn hold(&self) -> BodyHeld<'_> {
        use std::sync::atomic::Ordering;
        let tick = self.now.fetch_add(1, Ordering::AcqRel) + 1;
        self.peak.fetch_max(tick, Ordering::AcqRel);
        BodyHeld(self)
    }
}

impl Drop for BodyHeld<'_> {
    fn drop(&mut self) {
        self.0.now.fetch_sub(1, std::sync::atomic::Ordering::AcqRel);
    }
}

/// The prefix of the server's spool directories,
/// `<prefix><pid namespace>-<pid>-<random>`.
const SPOOL_PREFIX: &str = "ratchet-serve-";

/// This process's PID namespace (the inode `/proc/self/ns/pid` names):
/// a pid means a process only within its namespace, and servers in other
/// namespaces (containers, sandboxes) may share `/tmp`. `None` where
/// `/proc` does not say.
fn pid_namespace() -> Option<u64> {
    let link = std::fs::read_link("/proc/self/ns/pid").ok()?;
    link.to_str()?
        .strip_prefix("pid:[")?
        .strip_suffix(']')?
        .parse()
        .ok()
}

/// A private (0700) spool directory for uploads, after removing those of
/// servers that are gone (a `kill -9` leaves its spool behind).
fn make_spool() -> Result<tempfile::TempDir> {
    use std::os::unix::fs::PermissionsExt;
    let namespace = pid_namespace();
    if let Some(ns) = namespace {
        remove_stale_spools(&std::env::temp_dir(), ns);
    }
    tempfile::Builder::new()
        .prefix(&format!(
            "{SPOOL_PREFIX}{}-{}-",
            namespace.unwrap_or(0),
            std::process::id()
        ))
        .permissions(std::fs::Permissions::from_mode(0o700))
        .tempdir()
        .map_err(|source| Error::Io {
            what: "making the upload spool directory".into(),
            source,
        })
}

/// Removes the spool directories under `tmp` of servers in PID namespace
/// `namespace` (this one's) that are no longer running (no `/proc/<pid>`).
/// A spool of another namespace is never removed: its pid means nothing
/// here, and the server that owns it may well be running.
fn remove_stale_spools(tmp: &std::path::Path, namespace: u64) {
    let Ok(entries) = std::fs::read_dir(tmp) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some((ns, pid)) = name
            .to_str()
            .and_then(|n| n.strip_prefix(SPOOL_PREFIX))
            .and_then(|rest| {
                let mut parts = rest.splitn(3, '-');
                let ns = parts.next()?.parse::<u64>().ok()?;
                let pid = parts.next()?.parse::<u32>().ok()?;
                parts.next()?;
                Some((ns, pid))
            })
        else {
            continue;
        };
        if ns != namespace {
            continue;
        }
        let dead = !std::path::Path::new("/proc").join(pid.to_string()).exists();
        if dead && entry.file_type().is_ok_and(|t| t.is_dir()) {
            match std::fs::remove_dir_all(entry.path()) {
                Ok(()) => {
                    tracing::info!(path = %entry.path().display(), "removed the spool of a server that is gone")
                }
                Err(e) => {
                    tracing::debug!(error = %e, path = %entry.path().display(), "cannot remove a stale spool")
                }
            }
        }
    }
}

/// What each token stored, read from the batches' `ingest` markers in the
/// verified view (so a restart, which verifies the trace again, finds the
/// same totals), caught up incrementally: only markers past `upto` are read.
#[derive(Debug, Default)]
struct Accounts {
    upto: u64,
    by_token: HashMap<String, Usage>,
}

/// One token's usage: totals, and the last hour's batches (ts, events, bytes).
#[derive(Debug, Default)]
struct Usage {
    events: u64,
    bytes: u64,
    recent: std::collections::VecDeque<(i64, u64, u64)>,
}

const HOUR_MS: i64 = 3_600_000;

/// The prefix of every key the server writes a batch under; the marker's
/// session is `ingest:` and the key.
const BATCH_PREFIX: &str = "serve:";

/// What a batch's `ingest` marker says of its author, read back from its
/// session `ingest:serve:<token id>:<bytes>:<cell>:<route>:…` and its
/// payload's `events`: `(token id, cell, events, bytes)`. `None` for a
/// marker not written by this server's record routes (an owner's own
/// ingestion, or a marker of a server older than quotas).
pub(crate) fn batch_author(e: &ratchet_trace::Event) -> Option<(&str, &str, u64, u64)> {
    if e.kind != ratchet_trace::ReservedKind::Ingest.as_str() || e.origin.is_some() {
        return None;
    }
    let key = e
        .session
        .strip_prefix("ingest:")?
        .strip_prefix(BATCH_PREFIX)?;
    let mut parts = key.splitn(4, ':');
    let id = parts.next()?;
    let bytes: u64 = parts.next()?.parse().ok()?;
    let cell = parts.next()?;
    parts.next()?;
    if id.len() != 16 || !id.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    #[derive(Deserialize)]
    struct Marker {
        events: u64,
    }
    let events = serde_json::from_slice::<Marker>(&e.payload).ok()?.events;
    Some((id, cell, events, bytes))
}

impl Accounts {
    fn catch_up(&mut self, view: &ratchet_trace::Verified) {
        let events = view.events();
        let start = events.partition_point(|e| e.seq <= self.upto);
        for e in &events[start..] {
            if let Some((id, _, n, bytes)) = batch_author(e) {
                let usage = self.by_token.entry(id.to_string()).or_default();
                usage.events = usage.events.saturating_add(n);
                usage.bytes = usage.bytes.saturating_add(bytes);
                usage.recent.push_back((e.ts_ms, n, bytes));
            }
        }
        self.upto = view.head().size;
    }

    /// Refuses a batch of `events` and `bytes` by `who` that would pass
    /// one of its quotas at `now`.
    fn check(&mut self, who: &Capability, events: u64, bytes: u64, now: i64) -> Result<()> {
        let token_quota = who.spec.quota;
        let usage = self.by_token.entry(who.id.clone()).or_default();
        while usage
            .recent
            .front()
            .is_some_and(|&(ts, _, _)| ts <= now - HOUR_MS)
        {
            usage.recent.pop_front();
        }
        let (hour_events, hour_bytes) = usage
            .recent
            .iter()
            .fold((0u64, 0u64), |(e, b), &(_, n, by)| {
                (e.saturating_add(n), b.saturating_add(by))
            });
        let frees = |usage: &Usage| {
            usage.recent.front().map_or(String::new(), |&(ts, _, _)| {
                format!(
                    "; the oldest batch of the hour leaves it in {} s",
                    ((ts + HOUR_MS - now).max(0) + 999) / 1000
                )
            })
        };
        let over = |quota: &'static str,
                    used: u64,
                    adding: u64,
                    limit: u64,
                    what: &str,
                    later: String| {
            Error::OverQuota {
                quota,
                message: format!(
                    "token {} is over its {quota} quota: it has stored {used} {what}, this request would add {adding}, the limit is {limit}; nothing was stored{later}",
                    who.id
                ),
            }
        };
        let renew = "; the store's owner can mint a token with a larger quota (ratchet token mint --max-events/--max-bytes)".to_string();
        if usage.events.saturating_add(events) > token_quota.max_events {
            return Err(over(
                "max_events",
                usage.events,
                events,
                token_quota.max_events,
                "events in all",
                renew,
            ));
        }
        if usage.bytes.saturating_add(bytes) > token_quota.max_bytes {
            return Err(over(
                "max_bytes",
                usage.bytes,
                bytes,
                token_quota.max_bytes,
                "bytes in all",
                renew,
            ));
        }
        if hour_events.saturating_add(events) > token_quota.events_per_hour {
            return Err(over(
                "events_per_hour",
                hour_events,
                events,
                token_quota.events_per_hour,
                "events in the last hour",
                frees(usage),
            ));
        }
        if hour_bytes.saturating_add(bytes) > token_quota.bytes_per_hour {
            return Err(over(
                "bytes_per_hour",
                hour_bytes,
                bytes,
                token_quota.bytes_per_hour,
                "bytes in the last hour",
                frees(usage),
            ));
        }
        Ok(())
    }
}

impl Owner {
    /// Refuses a batch of `events` and `bytes` that would pass `who`'s
    /// quota, counted from the trace as `ledger` holds it (refreshed).
    fn charge(&self, ledger: &Ledger, who: &Capability, events: u64, bytes: u64) -> Result<()> {
        let mut accounts = self
            .accounts
            .lock()
            .map_err(|_| Error::Internal("the quota table's lock was poisoned".into()))?;
        accounts.catch_up(ledger.view());
        accounts.check(who, events, bytes, tokens::now_ms())
    }

    /// Takes ownership of `store` (opened with its writer key, if keyed)
    /// and verifies it once.
    ///
    /// # Errors
    /// [`Error::Trace`] if the trace does not verify (a server never serves
    /// an altered trace); [`Error::Io`] if the spool directory cannot be made.
    pub fn new(store: Store, options: ServeOptions) -> Result<Owner> {
        let mut verify = VerifyOptions::default();
        if let Some(cp) = &options.checkpoint {
            verify = verify.checkpoint(cp.clone());
        }
        let ledger = Ledger::new(store, verify)?;
        let head = ledger.view().head().size;
        let spool = make_spool()?;
        Ok(Owner {
            ledger: Mutex::new(ledger),
            limits: Mutex::new(HashMap::new()),
            accounts: Mutex::new(Accounts::default()),
            failures: Mutex::new(Bucket::full(options.failed_auth_burst)),
            parsing: std::sync::Arc::new(tokio::sync::Semaphore::new(options.max_parsing.max(1))),
            bodies: Bodies::default(),
            health: Mutex::new(Health {
                last_full_ms: Some(tokens::now_ms()),
                checked_through: head,
                runs: 1,
                fault: None,
            }),
            spool,
            options,
        })
    }

    /// The last full verification's outcome.
    ///
    /// # Errors
    /// [`Error::Internal`] if its lock is poisoned.
    pub fn health(&self) -> Result<Health> {
        self.health
            .lock()
            .map(|h| h.clone())
            .map_err(|_| Error::Internal("the health record's lock was poisoned".into()))
    }

    /// Refuses when a re-verification found the file altered.
    fn sound(&self) -> Result<()> {
        match self.health()?.fault {
            None => Ok(()),
            Some(f) => Err(Error::Faulted(format!(
                "the served trace failed its re-verification ({f}); decisions and writes are refused until the file is restored (or the damage investigated with `ratchet verify`) and the server restarted"
            ))),
        }
    }

    /// Verifies the whole file again, from a second read-only handle (the
    /// store's lock is held only to read the head it holds): every event
    /// re-hashed from genesis, and the file must still hold, at the size
    /// the server has verified and served, the very head it holds (an
    /// edit, a truncation or a rollback of the file under the server is a
    /// fault) — and the `checkpoint` given at start. The outcome is kept
    /// for `GET /v1/status`; a fault stops decisions and writes until
    /// restart. Run by [`crate::serve`] every
    /// [`ServeOptions::reverify_every`].
    ///
    /// # Errors
    /// [`Error::Internal`] if a lock is poisoned. A file that cannot be
    /// read is a fault, not an error.
    pub fn reverify(&self) -> Result<Health> {
        let (dir, store_id, held, checkpoint_ok) = {
            let ledger = self.lock()?;
            let checkpoint_ok = self
                .options
                .checkpoint
                .as_ref()
                .map(|cp| (cp.clone(), ledger.checkpoint_matches(cp)));
            (
                ledger.store().dir().to_path_buf(),
                ledger.store().id().to_string(),
                ledger.view().head(),
                checkpoint_ok,
            )
        };
        let held_cp = ratchet_trace::Checkpoint {
            origin: store_id,
            size: held.size,
            head: held.hash,
        };
        let check = |cp: ratchet_trace::Checkpoint| -> Option<String> {
            let store = match ratchet_trace::Store::open_read_only(
                &dir,
                ratchet_trace::StoreOptions::default(),
            ) {
                Ok(s) => s,
                Err(e) => return Some(format!("the file cannot be opened: {e}")),
            };
            match store.verify_with(&VerifyOptions::default().checkpoint(cp)) {
                Ok(r) => r.fault.map(|f| f.to_string()),
                Err(e) => Some(e.to_string()),
            }
        };
        let mut fault = check(held_cp).map(|f| {
            format!(
                "{f} (the server holds {} events ending in {})",
                held.size,
                held.hash.to_hex()
            )
        });
        if fault.is_none()
            && let Some((cp, matched)) = checkpoint_ok
        {
            fault = match matched {
                Some(true) => None,
                Some(false) => Some(format!(
                    "the trace no longer holds the checkpoint's event {} ({})",
                    cp.size,
                    cp.head.to_hex()
                )),
                None => check(cp.clone()).map(|f| format!("checkpoint at {}: {f}", cp.size)),
            };
        }
        let mut health = self
            .health
            .lock()
            .map_err(|_| Error::Internal("the health record's lock was poisoned".into()))?;
        health.runs += 1;
        health.last_full_ms = Some(tokens::now_ms());
        if fault.is_none() {
            health.checked_through = held.size;
        }
        if let Some(f) = fault {
            tracing::error!(fault = %f, "the served trace failed its re-verification: decisions and writes are refused until restart");
            // The first fault stands: a later run does not clear it.
            health.fault.get_or_insert(f);
        }
        Ok(health.clone())
    }

    /// The most request bodies held in memory at once since the server
    /// started (at most [`ServeOptions::max_parsing`]: a body is read only
    /// under a parse permit).
    pub fn bodies_peak(&self) -> usize {
        self.bodies.peak.load(std::sync::atomic::Ordering::Acquire)
    }

    /// The store's lock for a write by `who`: the view refreshed, the token
    /// checked again (revoked while its request was being read or waited
    /// for the lock: refused), and the write claimed from the request's
    /// timeout.
    fn write_lock(
        &self,
        who: &Capability,
        in_flight: &InFlight,
    ) -> Result<std::sync::MutexGuard<'_, Ledger>> {
        self.sound()?;
        let mut ledger = self.lock()?;
        ledger.refresh()?;
        let now = tokens::now_ms();
        match tokens::tokens_in(ledger.view())?.get(&who.id) {
            Some(t) if t.live(now) => {}
            _ => {
                return Err(Error::Forbidden(format!(
                    "token {} was revoked or expired while its request was in flight; nothing was stored",
                    who.id
                )));
            }
        }
        if !in_flight.begin_write() {
            return Err(Error::Timeout(
                "the request was answered as timed out before its write began; nothing was stored"
                    .into(),
            ));
        }
        Ok(ledger)
    }

    fn lock(&self) -> Result<std::sync::MutexGuard<'_, Ledger>> {
        self.ledger.lock().map_err(|_| {
            Error::Internal("the store's lock was poisoned by a failed request".into())
        })
    }

    /// The id of the store served.
    ///
    /// # Errors
    /// [`Error::Internal`] if the lock is poisoned.
    pub fn store_id(&self) -> Result<String> {
        Ok(self.lock()?.store().id().to_string())
    }

    /// The token `bearer` names, checked against the trace as it is now.
    ///
    /// # Errors
    /// As [`tokens::authenticate`]; [`Error::Trace`] if the refresh fails.
    pub fn authenticate(&self, bearer: &str) -> Result<Capability> {
        let mut ledger = self.lock()?;
        ledger.refresh()?;
        let all = tokens::tokens_in(ledger.view())?;
        Ok(tokens::authenticate(&all, bearer, tokens::now_ms())?.clone())
    }

    /// Counts a request of `token` against its rate.
    pub(crate) fn admit(&self, token: &Capability) -> Result<()> {
        let mut limits = self
            .limits
            .lock()
            .map_err(|_| Error::Internal("the rate table's lock was poisoned".into()))?;
        let (rate, burst) = (self.options.rate_per_second, self.options.burst);
        let bucket = limits
            .entry(token.id.clone())
            .or_insert_with(|| Bucket::full(burst));
        if !bucket.take(rate, burst) {
            return Err(Error::RateLimited(format!(
                "token {} is over its rate of {rate} requests per second; retry later",
                token.id
            )));
        }
        Ok(())
    }

    /// Counts a failed authentication; `false` once failures are over
    /// their rate (someone guessing tokens), when the caller slows down.
    pub(crate) fn failed_authentication(&self) -> bool {
        let (rate, burst) = (
            self.options.failed_auth_per_second,
            self.options.failed_auth_burst,
        );
        self.failures
            .lock()
            .map(|mut b| b.take(rate, burst))
            .unwrap_or(false)
    }

    /// Appends plain events (the `ratchet append` line format) under the
    /// token's session, in one transaction, once per `request_id`.
    pub(crate) fn record_events(
        &self,
        who: &Capability,
        in_flight: &InFlight,
        request_id: Option<&str>,
        text: &str,
    ) -> Result<Vec<Receipt>> {
        need(who, Scope::Record)?;
        let bytes = text.len() as u64;
        // Every batch goes under a key naming its token, its cell and its
        // size: the marker is how the trace says who wrote it, and what the
        // token's quota is counted from.
        let key = match request_id {
            Some(id) => request_key(who, bytes, "events", id, &[text.as_bytes()])?,
            None => batch_key(who, bytes, "events", &format!("~{}", ulid::Ulid::new())),
        };
        // A batch past the quota as last counted is refused before a line
        // is parsed (parsing is what a batch costs) — unless it is a retry
        // of one stored already; the count is checked again, up to date,
        // under the store's lock.
        let lines = text.lines().filter(|l| !l.trim().is_empty()).count() as u64;
        let early = self
            .accounts
            .lock()
            .map_err(|_| Error::Internal("the quota table's lock was poisoned".into()))?
            .check(who, lines, bytes, tokens::now_ms());
        if let Err(e) = early {
            let mut ledger = self.lock()?;
            ledger.refresh()?;
            if already_stored(&ledger, &key).is_some() {
                return Ok(Vec::new());
            }
            return Err(e);
        }
        let mut drafts = Vec::new();
        for (i, line) in text.lines().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            let draft = EventDraft::from_json_line(line)
                .map_err(|e| Error::BadRequest(format!("line {}: {e}", i + 1)))?;
            own_session(who, draft.session_name())?;
            drafts.push(draft.session(who.spec.session.clone()));
        }
        if drafts.is_empty() {
            return Err(Error::BadRequest("no events in the body".into()));
        }
        let events = drafts.len() as u64;
        let mut ledger = self.write_lock(who, in_flight)?;
        // A retry of a batch already stored is answered as stored, whatever
        // the quota says now; anything new is charged first.
        if already_stored(&ledger, &key).is_some() {
            return Ok(Vec::new());
        }
        self.charge(&ledger, who, events, bytes)?;
        let receipts = match ledger
            .append_once(&key, drafts)
            .map_err(Error::from)
            .map_err(Error::classify)?
        {
            ratchet_trace::AppendOnce::Appended(r) => r,
            ratchet_trace::AppendOnce::AlreadyAppended { .. } => Vec::new(),
        };
        Ok(receipts)
    }

    /// Ingests one uploaded report (any `ratchet ingest` format) under the
    /// token's session.
    pub(crate) fn ingest(
        &self,
        who: &Capability,
        in_flight: &InFlight,
        format: &str,
        query: &IngestQuery,
        body: &[u8],
    ) -> Result<ratchet_scorers::IngestReport> {
        need(who, Scope::Record)?;
        let format: ratchet_scorers::Format = format
            .parse()
            .map_err(|e: ratchet_scorers::Error| Error::BadRequest(e.to_string()))?;
        if format == ratchet_scorers::Format::Criterion {
            return Err(Error::BadRequest(
                "criterion reads a target/criterion directory, which one upload is not: ingest it where it was written, or convert it to bmf".into(),
            ));
        }
        let commit = query
            .commit
            .as_deref()
            .map(|c| {
                CommitId::parse(c).map_err(|e| {
                    Error::BadRequest(format!(
                        "commit {c:?}: {e} (send a full id; revisions are resolved by the client)"
                    ))
                })
            })
            .transpose()?;
        let direction = match query.direction.as_deref() {
            None => None,
            Some("higher") => Some(ratchet_scorers::Direction::HigherIsBetter),
            Some("lower") => Some(ratchet_scorers::Direction::LowerIsBetter),
            Some(other) => {
                return Err(Error::BadRequest(format!(
                    "direction {other:?}: higher or lower"
                )));
            }
        };
        let idempotency_key = query
            .request_id
            .as_deref()
            .map(|id| {
                let fields = (
                    format.name(),
                    &query.commit,
                    &query.suite,
                    &query.direction,
                    &query.label,
                    &query.name,
                );
                // A runner is described only when given, so that the key
                // of every request without one is what it was before.
                let described = match &query.runner {
                    None => serde_json::to_vec(&fields),
                    Some(runner) => serde_json::to_vec(&(fields, runner)),
                }
                .map_err(|e| Error::Internal(e.to_string()))?;
                request_key(who, body.len() as u64, "ingest", id, &[&described, body])
            })
            .transpose()?;
        // The upload goes to the server's own spool directory under a name
        // it chooses (only the extension is the client's), is read by the
        // same importers the CLI uses, and is gone when the request is.
        let dir = tempfile::Builder::new()
            .prefix("upload-")
            .tempdir_in(self.spool.path())
            .map_err(|source| Error::Io {
                what: "making an upload directory".into(),
                source,
            })?;
        let path = dir.path().join(upload_name(format, query.name.as_deref()));
        std::fs::write(&path, body).map_err(|source| Error::Io {
            what: "spooling the upload".into(),
            source,
        })?;
        let options = ratchet_scorers::IngestOptions {
            commit,
            session: Some(who.spec.session.clone()),
            suite: query.suite.clone(),
            runner_label: query.label.clone().unwrap_or_default(),
            runner: query.runner.clone(),
            direction,
            idempotency_key,
            // Only the owner sets how a new scorer's scores are read.
            no_new_directions: !who.spec.can.contains(&Scope::Admin),
            // An archive may inflate to a few times what the server would
            // have accepted unpacked, no more.
            max_inflated_bytes: Some(8 * self.options.max_body_bytes as u64),
            ..ratchet_scorers::IngestOptions::default()
        };
        let shown = query.name.as_deref().unwrap_or("the upload");
        // The spool path is the server's business: the client is told
        // about its own file.
        let hide = |e: ratchet_scorers::Error| match Error::from(e).classify() {
            Error::Scorers(e) => {
                Error::BadRequest(e.to_string().replace(&path.display().to_string(), shown))
            }
            other => other,
        };
        // Read and parsed before the store's lock is taken: one large or
        // hostile upload holds up no other client's request. (The request
        // holds a parse permit since before its body was read.)
        let reports = ratchet_scorers::read_reports(format, std::slice::from_ref(&path), &options)
            .map_err(hide)?;
        let reports = if query.request_id.is_some() {
            reports
        } else {
            // Content alone would let one writer's upload stand for
            // another's: the same evidence counts once per token (and
            // upload size), and the key names its author.
            let key = batch_key(
                who,
                body.len() as u64,
                "ingest",
                &format!("content:{}", reports.key()),
            );
            reports.keyed(key)
        };
        let events = reports.events_at_most();
        let mut ledger = self.write_lock(who, in_flight)?;
        // A retry of what is stored is answered as stored, whatever the
        // quota says now; anything new is charged first.
        if already_stored(&ledger, reports.key()).is_none() {
            self.charge(&ledger, who, events, body.len() as u64)?;
        }
        // Declarations and the request id are looked up in the warm view;
        // what is stored is folded into it.
        let mut report = ratchet_scorers::store_reports(&mut ledger, reports).map_err(hide)?;
        drop(ledger);
        report.files = Vec::new();
        report.notes = report
            .notes
            .iter()
            .map(|n| n.replace(&path.display().to_string(), shown))
            .collect();
        Ok(report)
    }

    /// Decides (and records, unless a dry run) under the class's pinned policy.
    pub(crate) fn decide(
        &self,
        who: &Capability,
        in_flight: &InFlight,
        request: &DecideRequest,
    ) -> Result<ratchet_orchestrate::GateRun> {
        need(who, Scope::Decide)?;
        let parse = |what: &str, c: &str| {
            CommitId::parse(c).map_err(|e| Error::BadRequest(format!("{what} {c:?}: {e}")))
        };
        let baseline = parse("baseline", &request.baseline)?;
        let candidate = parse("candidate", &request.candidate)?;
        let mut ledger = self.write_lock(who, in_flight)?;
        ledger.refresh()?;
        // Only a pinned policy: no file beside the server decides.
        let (policy, _) = ratchet_gate::resolve_policy(Some(ledger.view()), &request.class, None)?;
        let question = ratchet_gate::Question {
            class: &request.class,
            policy: &policy,
            baseline: &baseline,
            candidate: &candidate,
            checkpoint: None,
            allow_unpinned: false,
        };
        ratchet_orchestrate::gate(
            &mut ledger,
            &question,
            &ratchet_orchestrate::GateOptions {
                dry_run: request.dry_run,
                promote_in: None,
            },
        )
        .map_err(Error::from)
        .map_err(Error::classify)
    }

    /// The store's status, from the warm view.
    pub(crate) fn status(&self, who: &Capability) -> Result<ratchet_orchestrate::Status> {
        need(who, Scope::Read)?;
        let mut ledger = self.lock()?;
        let mut status = ratchet_orchestrate::status::status_in(&mut ledger, None)?;
        status.store_dir = std::path::absolute(&status.store_dir).unwrap_or(status.store_dir);
        Ok(status)
    }

    /// The newest `last` decisions, oldest first.
    pub(crate) fn decisions(
        &self,
        who: &Capability,
        last: usize,
    ) -> Result<Vec<serde_json::Value>> {
        need(who, Scope::Read)?;
        let mut ledger = self.lock()?;
        ledger.refresh()?;
        let events = ledger
            .view()
            .events_of_kinds(&[ratchet_trace::ReservedKind::Decision.as_str()]);
        let start = events.len().saturating_sub(last);
        Ok(events[start..]
            .iter()
            .map(|e| {
                serde_json::json!({
                    "seq": e.seq,
                    "ts_ms": e.ts_ms,
                    "verdict": serde_json::from_slice::<serde_json::Value>(&e.payload)
                        .unwrap_or(serde_json::Value::Null),
                })
            })
            .collect())
    }

    /// The Markdown summary (what a pull request shows) of the decisions
    /// `which` names.
    pub(crate) fn markdown(
        &self,
        who: &Capability,
        which: &ratchet_report::Summary,
    ) -> Result<String> {
        need(who, Scope::Read)?;
        let mut ledger = self.lock()?;
        ledger.refresh()?;
        Ok(ratchet_report::markdown_of(ledger.view(), which)?)
    }

    /// The HTML report.
    pub(crate) fn html(&self, who: &Capability) -> Result<String> {
        need(who, Scope::Read)?;
        let mut ledger = self.lock()?;
        ledger.refresh()?;
        let verification = ledger.view().report().clone();
        Ok(ratchet_report::html_of(
            ledger.view(),
            &verification,
            &ratchet_report::ReportOptions::default(),
        )?)
    }

    /// Mints a token (the caller needs `admin`).
    pub(crate) fn mint(
        &self,
        who: &Capability,
        in_flight: &InFlight,
        spec: &TokenSpec,
    ) -> Result<tokens::Minted> {
        need(who, Scope::Admin)?;
        let mut ledger = self.write_lock(who, in_flight)?;
        let minted = tokens::mint_token(ledger.store_mut(), spec);
        ledger.refresh()?;
        minted
    }

    /// Revokes a token (the caller needs `admin`).
    pub(crate) fn revoke(
        &self,
        who: &Capability,
        in_flight: &InFlight,
        id: &str,
    ) -> Result<Receipt> {
        need(who, Scope::Admin)?;
        let mut ledger = self.write_lock(who, in_flight)?;
        if !tokens::tokens_in(ledger.view())?.contains_key(id) {
            return Err(Error::UnknownToken { id: id.to_string() });
        }
        let revoked = tokens::revoke_token(ledger.store_mut(), id);
        ledger.refresh()?;
        revoked
    }

    /// Pins the classes of a policy file (TOML text), or only `class`.
    pub(crate) fn pin(
        &self,
        who: &Capability,
        in_flight: &InFlight,
        text: &str,
        class: Option<&str>,
    ) -> Result<(Vec<serde_json::Value>, Vec<Receipt>)> {
        need(who, Scope::Admin)?;
        let policy = ratchet_gate::Policy::parse(text)?;
        let classes: Vec<String> = match class {
            Some(c) => {
                policy.class(c)?;
                vec![c.to_string()]
            }
            None => policy.class.keys().cloned().collect(),
        };
        let mut ledger = self.write_lock(who, in_flight)?;
        let mut pins = Vec::new();
        let mut receipts = Vec::new();
        for c in &classes {
            let class_policy = policy.class(c)?;
            let pinned = ratchet_gate::pin_policy(ledger.store_mut(), c, class_policy)
                .map_err(Error::from)
                .map_err(Error::classify)?;
            if let ratchet_gate::Pinned::Appended { receipt } = &pinned {
                receipts.push(*receipt);
            }
            pins.push(serde_json::json!({ "class": c, "policy_hash": class_policy.hash().to_string(), "pin": pinned }));
        }
        ledger.refresh()?;
        Ok((pins, receipts))
    }

    /// Every token minted here (ids and scopes, never secrets).
    pub(crate) fn list_tokens(&self, who: &Capability) -> Result<BTreeMap<String, Capability>> {
        need(who, Scope::Admin)?;
        let mut ledger = self.lock()?;
        ledger.refresh()?;
        tokens::tokens_in(ledger.view())
    }
}

pub(crate) fn need(who: &Capability, scope: Scope) -> Result<()> {
    if who.spec.can.contains(&scope) {
        Ok(())
    } else {
        Err(Error::Forbidden(format!(
            "token {} may {} but not {scope}",
            who.id,
            who.spec
                .can
                .iter()
                .map(|s| s.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        )))
    }
}

/// A line may name its session only if it is the token's own.
fn own_session(who: &Capability, named: &str) -> Result<()> {
    if named.is_empty() || named == who.spec.session {
        Ok(())
    } else {
        Err(Error::Forbidden(format!(
            "token {} records under session {:?}, not {named:?}",
            who.id, who.spec.session
        )))
    }
}

/// The idempotency key of a client's request id: per token (one client
/// cannot make another's batch look already stored), per route, and per
/// request — its body and, for an upload, the format and every query
/// parameter — so a retry sends the same and counts once, while an id
/// reused by mistake for other evidence (another commit, another suite)
/// stores it rather than dropping it.
fn request_key(
    who: &Capability,
    bytes: u64,
    route: &str,
    id: &str,
    parts: &[&[u8]],
) -> Result<String> {
    if id.is_empty() || id.len() > 64 || !id.bytes().all(|b| b.is_ascii_graphic()) {
        return Err(Error::BadRequest(
            "request_id must be 1 to 64 visible ASCII characters".into(),
        ));
    }
    // Every part length-prefixed: ("ab", "c") and ("a", "bc") differ.
    let mut hasher = blake3::Hasher::new();
    for part in parts {
        hasher.update(&(part.len() as u64).to_le_bytes());
        hasher.update(part);
    }
    let digest = hasher.finalize().to_hex();
    Ok(batch_key(
        who,
        bytes,
        route,
        &format!("{id}:{}", &digest[..16]),
    ))
}

/// The key a batch of `who` is stored under:
/// `serve:<token id>:<bytes sent>:<cell>:<route>:<rest>` — its `ingest`
/// marker (session `ingest:<key>`, payload `{key, events}`) then says
/// which token wrote the batch, for which cell, how many events and how
/// many bytes, without any change to the events' own layout.
fn batch_key(who: &Capability, bytes: u64, route: &str, rest: &str) -> String {
    // A cell is checked at mint (visible ASCII, no ':', at most 64); one
    // minted before that check is stamped made safe.
    let cell: String = who
        .spec
        .cell
        .as_deref()
        .unwrap_or("")
        .chars()
        .take(tokens::MAX_CELL_LEN)
        .map(|c| {
            if c.is_ascii_graphic() && c != ':' {
                c
            } else {
                '_'
            }
        })
        .collect();
    format!("{BATCH_PREFIX}{}:{bytes}:{cell}:{route}:{rest}", who.id)
}

/// The seq of the marker of a batch already stored under `key`, as the
/// view holds it (the write transaction checks again for newer ones).
fn already_stored(ledger: &Ledger, key: &str) -> Option<u64> {
    let session = format!("ingest:{key}");
    ledger
        .view()
        .events_of_kinds(&[ratchet_trace::ReservedKind::Ingest.as_str()])
        .into_iter()
        .find(|e| e.origin.is_none() && e.session == session)
        .map(|e| e.seq)
}

/// The spooled file's name: the format's usual extension, or the one the
/// client's file had (Inspect tells `.eval` zips from `.json` by it).
fn upload_name(format: ratchet_scorers::Format, given: Option<&str>) -> PathBuf {
    let ext = given
        .and_then(|n| std::path::Path::new(n).extension())
        .and_then(|e| e.to_str())
        .filter(|e| e.len() <= 8 && e.bytes().all(|b| b.is_ascii_alphanumeric()))
        .map(str::to_string);
    let default = match format {
        ratchet_scorers::Format::Junit => "xml",
        ratchet_scorers::Format::Jsonl | ratchet_scorers::Format::LmEval => "jsonl",
        ratchet_scorers::Format::GoBench => "txt",
        ratchet_scorers::Format::Criterion => "json",
        _ => "json",
    };
    let base = if format == ratchet_scorers::Format::LmEval {
        "samples_upload"
    } else {
        "upload"
    };
    PathBuf::from(format!("{base}.{}", ext.as_deref().unwrap_or(default)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn owner_and_record_token() -> (tempfile::TempDir, Owner, Capability, String) {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut store = Store::create(dir.path().join("s"), Default::default()).expect("store");
        let minted = tokens::mint_token(
            &mut store,
            &TokenSpec {
                can: vec![Scope::Record],
                session: "cell-1".into(),
                cell: None,
                expires_at_ms: None,
                quota: Default::default(),
            },
        )
        .expect("mint");
        let owner = Owner::new(store, ServeOptions::default()).expect("owner");
        let who = owner.authenticate(&minted.token).expect("authenticates");
        (dir, owner, who, minted.id)
    }

    const LINE: &str = "{\"kind\":\"note\",\"payload\":{\"n\":1}}\n";

    fn size(owner: &Owner) -> u64 {
        owner.lock().expect("lock").view().head().size
    }

    #[test]
    fn a_request_answered_as_timed_out_stores_nothing_and_one_writing_is_not_timed_out() {
        let (_d, owner, who, _) = owner_and_record_token();
        let before = size(&owner);
        let late = InFlight::default();
        assert!(late.time_out(), "answered 408 before its write began");
        match owner.record_events(&who, &late, None, LINE) {
            Err(Error::Timeout(m)) => assert!(m.contains("nothing was stored"), "{m}"),
            other => panic!("expected a timeout, got {other:?}"),
        }
        assert_eq!(size(&owner), before);
        let on_time = InFlight::default();
        owner
            .record_events(&who, &on_time, None, LINE)
            .expect("stored");
        assert!(
            !on_time.time_out(),
            "a request whose write began is answered with the write, not 408"
        );
        assert_eq!(size(&owner), before + 2, "the event and its batch's marker");
    }

    #[test]
    fn a_token_revoked_while_its_request_is_in_flight_writes_nothing() {
        let (_d, owner, who, id) = owner_and_record_token();
        // Authenticated (as from the headers), then revoked by the owner
        // before the body was in.
        tokens::revoke_token(owner.lock().expect("lock").store_mut(), &id).expect("revoke");
        let before = owner
            .lock()
            .expect("lock")
            .store()
            .head()
            .expect("head")
            .size;
        match owner.record_events(&who, &InFlight::default(), None, LINE) {
            Err(Error::Forbidden(m)) => assert!(m.contains("revoked"), "{m}"),
            other => panic!("expected the write refused, got {other:?}"),
        }
        let after = owner
            .lock()
            .expect("lock")
            .store()
            .head()
            .expect("head")
            .size;
        assert_eq!(after, before, "nothing stored");
    }

    #[test]
    fn the_spool_is_private_and_a_dead_server_s_spool_is_removed() {
        use std::os::unix::fs::PermissionsExt;
        let spool = make_spool().expect("spool");
        let mode = std::fs::metadata(spool.path())
            .expect("metadata")
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o700, "{mode:o}");
        let tmp = tempfile::tempdir().expect("tempdir");
        let ns = pid_namespace().expect("Linux names its PID namespace");
        // pid_max is at most 2^22 on Linux: this pid never runs.
        let dead = tmp.path().join(format!("{SPOOL_PREFIX}{ns}-99999999-abc"));
        let alive = tmp
            .path()
            .join(format!("{SPOOL_PREFIX}{ns}-{}-abc", std::process::id()));
        // A server in another PID namespace sharing /tmp: its pid is not
        // running here, and it is none of this server's business.
        let elsewhere = tmp
            .path()
            .join(format!("{SPOOL_PREFIX}{}-99999999-abc", ns + 1));
        let other = tmp.path().join("ratchet-serve-notapid-abc");
        for d in [&dead, &alive, &elsewhere, &other] {
            std::fs::create_dir(d).expect("dir");
            std::fs::write(d.join("upload.json"), b"{}").expect("file");
        }
        remove_stale_spools(tmp.path(), ns);
        assert!(!dead.exists(), "the spool of a server that is gone");
        assert!(alive.exists(), "a running server's spool is kept");
        assert!(
            elsewhere.exists(),
            "another namespace's spool is kept whatever its pid"
        );
        assert!(other.exists(), "a directory not named as a spool is kept");
    }
}
