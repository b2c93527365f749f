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
    /// Uploads parsed at once (the rest wait their turn): what parsing
    /// holds in memory is about the upload's inflated text, so this bounds
    /// the server's memory to a few times `8 × max_body_bytes`.
    pub max_parsing: usize,
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
    failures: Mutex<Bucket>,
    parsing: Slots,
    spool: tempfile::TempDir,
    pub(crate) options: ServeOptions,
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

/// A counting semaphore for blocking threads: `take` waits for a slot,
/// the guard gives it back.
#[derive(Debug)]
struct Slots {
    free: Mutex<usize>,
    freed: std::sync::Condvar,
}

struct Slot<'a>(&'a Slots);

impl Slots {
    fn new(n: usize) -> Slots {
        Slots {
            free: Mutex::new(n),
            freed: std::sync::Condvar::new(),
        }
    }

    fn take(&self) -> Result<Slot<'_>> {
        let poisoned = |_| Error::Internal("the parse slots' lock was poisoned".into());
        let mut free = self.free.lock().map_err(poisoned)?;
        while *free == 0 {
            free = self.freed.wait(free).map_err(poisoned)?;
        }
        *free -= 1;
        Ok(Slot(self))
    }
}

impl Drop for Slot<'_> {
    fn drop(&mut self) {
        if let Ok(mut free) = self.0.free.lock() {
            *free += 1;
            self.0.freed.notify_one();
        }
    }
}

/// The prefix of the server's spool directories, `<prefix><pid>-<random>`.
const SPOOL_PREFIX: &str = "ratchet-serve-";

/// A private (0700) spool directory for uploads, after removing those of
/// servers that are gone (a `kill -9` leaves its spool behind).
fn make_spool() -> Result<tempfile::TempDir> {
    use std::os::unix::fs::PermissionsExt;
    remove_stale_spools(&std::env::temp_dir());
    tempfile::Builder::new()
        .prefix(&format!("{SPOOL_PREFIX}{}-", std::process::id()))
        .permissions(std::fs::Permissions::from_mode(0o700))
        .tempdir()
        .map_err(|source| Error::Io {
            what: "making the upload spool directory".into(),
            source,
        })
}

/// Removes the spool directories under `tmp` whose server process is no
/// longer running (on Linux, no `/proc/<pid>`; elsewhere nothing is removed).
fn remove_stale_spools(tmp: &std::path::Path) {
    if !std::path::Path::new("/proc/self").exists() {
        return;
    }
    let Ok(entries) = std::fs::read_dir(tmp) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.strip_prefix(SPOOL_PREFIX))
            .and_then(|rest| rest.split_once('-'))
            .and_then(|(pid, _)| pid.parse::<u32>().ok())
        else {
            continue;
        };
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

impl Owner {
    /// Takes ownership of `store` (opened with its writer key, if keyed)
    /// and verifies it once.
    ///
    /// # Errors
    /// [`Error::Trace`] if the trace does not verify (a server never serves
    /// an altered trace); [`Error::Io`] if the spool directory cannot be made.
    pub fn new(store: Store, options: ServeOptions) -> Result<Owner> {
        let ledger = Ledger::new(store, VerifyOptions::default())?;
        let spool = make_spool()?;
        Ok(Owner {
            ledger: Mutex::new(ledger),
            limits: Mutex::new(HashMap::new()),
            failures: Mutex::new(Bucket::full(options.failed_auth_burst)),
            parsing: Slots::new(options.max_parsing.max(1)),
            spool,
            options,
        })
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
        let b = limits
            .entry(token.id.clone())
            .or_insert_with(|| Bucket::full(burst));
        if !b.take(rate, burst) {
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
        let mut drafts = Vec::new();
        for (i, line) in text.lines().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            let d = EventDraft::from_json_line(line)
                .map_err(|e| Error::BadRequest(format!("line {}: {e}", i + 1)))?;
            own_session(who, d.session_name())?;
            drafts.push(d.session(who.spec.session.clone()));
        }
        if drafts.is_empty() {
            return Err(Error::BadRequest("no events in the body".into()));
        }
        let mut ledger = self.write_lock(who, in_flight)?;
        let receipts = match request_id {
            Some(id) => match ledger
                .append_once(&request_key(who, "events", id, &[text.as_bytes()])?, drafts)
                .map_err(Error::from)
                .map_err(Error::classify)?
            {
                ratchet_trace::AppendOnce::Appended(r) => r,
                ratchet_trace::AppendOnce::AlreadyAppended { .. } => Vec::new(),
            },
            None => ledger
                .append_batch(drafts)
                .map_err(Error::from)
                .map_err(Error::classify)?,
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
                let described = serde_json::to_vec(&(
                    format.name(),
                    &query.commit,
                    &query.suite,
                    &query.direction,
                    &query.label,
                    &query.name,
                ))
                .map_err(|e| Error::Internal(e.to_string()))?;
                request_key(who, "ingest", id, &[&described, body])
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
        // hostile upload holds up no other client's request.
        let slot = self.parsing.take()?;
        let reports = ratchet_scorers::read_reports(format, std::slice::from_ref(&path), &options)
            .map_err(hide)?;
        drop(slot);
        let reports = if query.request_id.is_some() {
            reports
        } else {
            // Content alone would let one writer's upload stand for
            // another's: the same evidence counts once per session.
            let key = format!("serve:session:{}:{}", who.spec.session, reports.key());
            reports.keyed(key)
        };
        let mut ledger = self.write_lock(who, in_flight)?;
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
        let q = ratchet_gate::Question {
            class: &request.class,
            policy: &policy,
            baseline: &baseline,
            candidate: &candidate,
            checkpoint: None,
            allow_unpinned: false,
        };
        ratchet_orchestrate::gate(
            &mut ledger,
            &q,
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
        let mut status = ratchet_orchestrate::status_warm(&mut ledger, None)?;
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

    /// The Markdown summary (what a pull request shows).
    pub(crate) fn markdown(&self, who: &Capability) -> Result<String> {
        need(who, Scope::Read)?;
        let mut ledger = self.lock()?;
        ledger.refresh()?;
        Ok(ratchet_report::markdown(ledger.view())?)
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
        let r = tokens::revoke_token(ledger.store_mut(), id);
        ledger.refresh()?;
        r
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
            let p = policy.class(c)?;
            let pinned = ratchet_gate::pin_policy(ledger.store_mut(), c, p)
                .map_err(Error::from)
                .map_err(Error::classify)?;
            if let ratchet_gate::Pinned::Appended { receipt } = &pinned {
                receipts.push(*receipt);
            }
            pins.push(serde_json::json!({ "class": c, "policy_hash": p.hash().to_string(), "pin": pinned }));
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
fn request_key(who: &Capability, route: &str, id: &str, parts: &[&[u8]]) -> Result<String> {
    if id.is_empty() || id.len() > 64 || !id.bytes().all(|b| b.is_ascii_graphic()) {
        return Err(Error::BadRequest(
            "request_id must be 1 to 64 visible ASCII characters".into(),
        ));
    }
    // Every part length-prefixed: ("ab", "c") and ("a", "bc") differ.
    let mut h = blake3::Hasher::new();
    for part in parts {
        h.update(&(part.len() as u64).to_le_bytes());
        h.update(part);
    }
    let digest = h.finalize().to_hex();
    Ok(format!("serve:{}:{route}:{id}:{}", who.id, &digest[..16]))
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
        assert_eq!(size(&owner), before + 1);
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
        // pid_max is at most 2^22 on Linux: this pid never runs.
        let dead = tmp.path().join(format!("{SPOOL_PREFIX}99999999-abc"));
        let alive = tmp
            .path()
            .join(format!("{SPOOL_PREFIX}{}-abc", std::process::id()));
        let other = tmp.path().join("ratchet-serve-notapid-abc");
        for d in [&dead, &alive, &other] {
            std::fs::create_dir(d).expect("dir");
            std::fs::write(d.join("upload.json"), b"{}").expect("file");
        }
        remove_stale_spools(tmp.path());
        assert!(!dead.exists(), "the spool of a server that is gone");
        assert!(alive.exists(), "a running server's spool is kept");
        assert!(other.exists(), "a directory not named as a spool is kept");
    }
}
