//! Verification: recompute every hash from the columns and check every
//! projection row against its event. Never trusts a stored hash.

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, mpsc};

use rusqlite::types::ValueRef;
use rusqlite::{Connection, OptionalExtension, Rows, params};
use serde::Serialize;

use crate::checkpoint::Checkpoint;
use crate::encoding::{
    ChainHasher, HashInput, OriginRef, WriterKey, genesis_hash, is_canonical_commit,
};
use crate::error::{Error, Result};
use crate::event::{CommitId, Event, Origin};
use crate::projection::{
    KIND_SCORE, KIND_TEST_RUN, Projection, SCORE_COLUMNS, TEST_RUN_COLUMNS, same_projection,
    score_from_row, test_run_from_row,
};
use crate::store::{EVENT_COLUMNS, Head, Store};
use crate::view::Verified;

/// What verification found wrong, at which seq.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Fault {
    /// The first seq at which the store is wrong.
    pub seq: u64,
    /// What is wrong there.
    pub kind: FaultKind,
}

/// The kinds of damage verification detects.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "fault", rename_all = "snake_case")]
#[non_exhaustive]
pub enum FaultKind {
    /// No event at this seq although later ones exist: a row was deleted.
    Missing {
        /// The next seq present.
        next_present: u64,
    },
    /// The row's `prev_hash` is not the hash of the event before it: rows were
    /// reordered, removed or inserted.
    BrokenLink,
    /// The row's content does not hash to its stored hash: it was edited.
    HashMismatch,
    /// Another event already carries this id: ids are unique by
    /// construction, so a second one was inserted by hand (or by a merge
    /// misled by a forged index).
    DuplicateId {
        /// The seq of the first event with the id.
        first_seq: u64,
    },
    /// A keyed store's row has no MAC.
    MacMissing,
    /// The MAC does not match: the row was written without the writer key.
    MacMismatch,
    /// A column does not have the shape the schema promises.
    MalformedRow {
        /// The column.
        column: &'static str,
    },
    /// The payload of a reserved kind does not parse as that kind.
    InvalidPayload {
        /// The parse error.
        reason: String,
    },
    /// A projection row disagrees with its event.
    ProjectionMismatch {
        /// The projection table.
        table: &'static str,
    },
    /// An event of a reserved kind has no projection row.
    ProjectionMissing {
        /// The projection table.
        table: &'static str,
    },
    /// A projection row has no event of its kind at its seq.
    ProjectionOrphan {
        /// The projection table.
        table: &'static str,
    },
    /// The store holds fewer events than a checkpoint says it had: truncated
    /// or rolled back to an older copy.
    Truncated {
        /// Size in the checkpoint.
        checkpoint_size: u64,
        /// Size found.
        store_size: u64,
    },
    /// The event at the checkpoint's size does not have the checkpoint's
    /// hash: the history was rewritten or rolled back and regrown.
    CheckpointMismatch,
    /// The database's schema is not the one ratchet created: a trigger,
    /// view, table or index was added, dropped or altered, or the metadata
    /// was edited. Reported at seq 0: it concerns the store as a whole.
    SchemaAltered {
        /// What differs, in words.
        what: String,
    },
    /// SQLite's own structural check (`PRAGMA quick_check`) fails: pages out
    /// of order, a subtree grafted under a wrong divider, pages nothing
    /// refers to. Queries that seek could then see other rows than a scan.
    /// Reported at seq 0.
    Structure {
        /// SQLite's first message.
        what: String,
    },
    /// A row sits at a seq outside the chain (`seq < 1`), where no event
    /// can vouch for it. Reported at seq 0.
    OutsideChain {
        /// The table holding the row.
        table: &'static str,
        /// The row's seq.
        row_seq: i64,
    },
    /// The per-commit statistics kept on append (`commit_stats`) disagree
    /// with the verified scores: a row was edited, added or removed. Checked
    /// when verification reaches the head; reported at seq 0.
    SummaryMismatch {
        /// The scorer of the first row that differs.
        scorer: String,
        /// Its scorer version.
        scorer_version: String,
        /// Its commit.
        commit: String,
    },
}

impl fmt::Display for Fault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.seq == 0 {
            f.write_str("store: ")?;
        } else {
            write!(f, "seq {}: ", self.seq)?;
        }
        match &self.kind {
            FaultKind::Missing { next_present } => {
                write!(f, "event missing (deleted row; next present is seq {next_present})")
            }
            FaultKind::BrokenLink => f.write_str("prev_hash does not link to the previous event (rows reordered, removed or inserted)"),
            FaultKind::HashMismatch => f.write_str("content does not match its hash (row edited)"),
            FaultKind::DuplicateId { first_seq } => {
                write!(f, "event id already used by seq {first_seq} (ids are unique)")
            }
            FaultKind::MacMissing => f.write_str("no MAC in a keyed store"),
            FaultKind::MacMismatch => f.write_str("MAC does not match (written without the writer key)"),
            FaultKind::MalformedRow { column } => write!(f, "malformed column {column}"),
            FaultKind::InvalidPayload { reason } => write!(f, "invalid payload: {reason}"),
            FaultKind::ProjectionMismatch { table } => write!(f, "{table} row disagrees with its event"),
            FaultKind::ProjectionMissing { table } => write!(f, "{table} row missing for its event"),
            FaultKind::ProjectionOrphan { table } => write!(f, "{table} row has no matching event"),
            FaultKind::Truncated { checkpoint_size, store_size } => write!(
                f,
                "store holds {store_size} events but the checkpoint saw {checkpoint_size} (truncated or rolled back)"
            ),
            FaultKind::CheckpointMismatch => f.write_str(
                "event hash differs from the checkpoint's head (history rewritten or rolled back)",
            ),
            FaultKind::SchemaAltered { what } => {
                write!(f, "the database schema was altered: {what}")
            }
            FaultKind::Structure { what } => write!(
                f,
                "the database file's structure is damaged or was edited (quick_check: {what})"
            ),
            FaultKind::OutsideChain { table, row_seq } => write!(
                f,
                "{table} holds a row at seq {row_seq}, outside the chain (no event vouches for it)"
            ),
            FaultKind::SummaryMismatch {
                scorer,
                scorer_version,
                commit,
            } => write!(
                f,
                "the per-commit statistics of scorer {scorer:?} version {scorer_version:?} \
                 for commit {commit} disagree with its verified scores"
            ),
        }
    }
}

/// Settings of a verification; [`VerifyOptions::default`] recomputes the
/// whole chain, every projection row and the schema.
///
/// There is deliberately no way to skip a prefix: a file writer can edit rows
/// inside any prefix without touching the stored hashes, so a prefix that is
/// not recomputed is a prefix nobody checked (see ARCHITECTURE.md, threat
/// model). A checkpoint adds the rollback check; it never replaces work.
#[derive(Debug, Clone, Default)]
pub struct VerifyOptions {
    key: Option<WriterKey>,
    checkpoint: Option<Checkpoint>,
    up_to: Option<u64>,
    keep_all_events: bool,
}

impl VerifyOptions {
    /// Also check every row's MAC with the writer key. A store opened with
    /// its writer key ([`crate::StoreOptions::writer_key`]) uses that key
    /// without being told.
    pub fn key(mut self, key: WriterKey) -> Self {
        self.key = Some(key);
        self
    }

    /// Also check the store against a checkpoint held elsewhere: it must
    /// still hold the checkpoint's events, ending in the checkpoint's head.
    pub fn checkpoint(mut self, cp: Checkpoint) -> Self {
        self.checkpoint = Some(cp);
        self
    }

    /// Verify the chain only up to and including `seq`: the trace as it
    /// stood when an earlier decision was taken.
    pub fn up_to(mut self, seq: u64) -> Self {
        self.up_to = Some(seq);
        self
    }

    /// Keep every event whole in the [`Verified`] view, score events too
    /// (by default a score is kept as its numbers only): for exports that
    /// write every event out.
    pub fn keep_all_events(mut self) -> Self {
        self.keep_all_events = true;
        self
    }

    /// The checkpoint given, if any.
    pub(crate) fn checkpoint_given(&self) -> Option<&Checkpoint> {
        self.checkpoint.as_ref()
    }

    /// The key given, if any.
    pub(crate) fn key_given(&self) -> Option<&WriterKey> {
        self.key.as_ref()
    }
}

/// The outcome of a verification.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct VerifyReport {
    /// The store verified.
    pub store_id: String,
    /// Seq of the last event recomputed (the chain size if valid).
    pub size: u64,
    /// Hash of the last valid event.
    #[serde(serialize_with = "crate::store::ser_hash")]
    pub head: blake3::Hash,
    /// Whether the store declares a writer key (its events should carry MACs).
    pub keyed: bool,
    /// Whether MACs were checked (a key was given or the store was opened with it).
    pub macs_checked: bool,
    /// Whether a checkpoint was compared.
    pub checkpoint_checked: bool,
    /// The first fault, if any.
    pub fault: Option<Fault>,
}

impl VerifyReport {
    /// True when nothing was found wrong.
    pub fn is_valid(&self) -> bool {
        self.fault.is_none()
    }

    /// True when the store is keyed but its MACs were not checked: the plain
    /// chain verified, which anyone who can write the file can rebuild. A
    /// caller that decides from the trace must treat this as unverified.
    pub fn macs_unchecked(&self) -> bool {
        self.keyed && !self.macs_checked
    }

    /// The report if valid.
    ///
    /// # Errors
    /// [`Error::Tampered`] with the first fault.
    pub fn into_result(self) -> Result<VerifyReport> {
        match self.fault {
            None => Ok(self),
            Some(fault) => Err(Error::Tampered { fault }),
        }
    }
}

impl Store {
    /// Recomputes the whole chain and every projection row.
    ///
    /// # Errors
    /// Only for failures to read ([`Error::Sqlite`]); damage is reported in
    /// [`VerifyReport::fault`].
    pub fn verify(&self) -> Result<VerifyReport> {
        self.verify_with(&VerifyOptions::default())
    }

    /// Verifies before acting on the trace and returns what it read, folded
    /// into a [`Verified`] view — the only input of a decision (gate,
    /// monitor, best commit, heal, report, export, batch scoring). The view
    /// holds no connection: bytes written to the file after this returns
    /// cannot reach it.
    ///
    /// # Errors
    /// [`Error::Tampered`] with the first fault; [`Error::MacsUnchecked`] if
    /// the store is keyed and no key was given (in `options` or when opening);
    /// as [`Store::verify_with`] otherwise.
    pub fn verified(&self, options: &VerifyOptions) -> Result<Verified> {
        let (report, view) = self.verify_and_fold(options)?;
        let report = report.into_result()?;
        match view {
            Some(view) => Ok(view),
            None => Err(Error::MacsUnchecked {
                key_id: self.key_id.clone().unwrap_or(report.store_id),
            }),
        }
    }

    /// [`Store::verify_with`], also folding what it read into a
    /// [`Verified`] view — `Some` only when the trace is sound and, if
    /// keyed, its MACs were checked: for callers (the gate) that report a
    /// failed verification rather than stop at it.
    ///
    /// # Errors
    /// As [`Store::verify_with`].
    pub fn verify_and_fold(
        &self,
        options: &VerifyOptions,
    ) -> Result<(VerifyReport, Option<Verified>)> {
        let mut view = Verified::empty(
            VerifyReport {
                store_id: self.store_id.clone(),
                size: 0,
                head: genesis_hash(&self.store_id),
                keyed: self.key_id.is_some(),
                macs_checked: false,
                checkpoint_checked: false,
                fault: None,
            },
            genesis_hash(&self.store_id),
            options.keep_all_events,
        );
        let report = self.verify_inner(options, Some(&mut |e, p| view.fold(e, p)))?;
        if !report.is_valid() || report.macs_unchecked() {
            return Ok((report, None));
        }
        view.report = report.clone();
        Ok((report, Some(view)))
    }

    /// Verifies with a key, a checkpoint or a limit. The store's own writer
    /// key, if it was opened with one, is used when `options` has none.
    ///
    /// # Errors
    /// [`Error::CheckpointOrigin`] if a checkpoint is for another store;
    /// [`Error::Sqlite`] for failures to read.
    #[tracing::instrument(name = "trace.verify", skip_all, fields(store = %self.store_id))]
    pub fn verify_with(&self, options: &VerifyOptions) -> Result<VerifyReport> {
        self.verify_inner(options, None)
    }

    fn verify_inner(
        &self,
        options: &VerifyOptions,
        fold: Option<&mut dyn FnMut(Event, Option<Projection>)>,
    ) -> Result<VerifyReport> {
        let with_key;
        let mut options = options;
        if options.key.is_none()
            && let Some(k) = &self.options.writer_key
        {
            with_key = options.clone().key(k.clone());
            options = &with_key;
        }
        if let Some(cp) = &options.checkpoint
            && cp.origin != self.store_id
        {
            return Err(Error::CheckpointOrigin {
                checkpoint_origin: cp.origin.clone(),
                store_origin: self.store_id.clone(),
            });
        }
        // One read transaction: a consistent snapshot while writers go on
        // (or the caller's, inside a `Snapshot`).
        let tx = if self.conn.is_autocommit() {
            Some(
                self.conn
                    .unchecked_transaction()
                    .map_err(Error::sqlite("starting a read transaction"))?,
            )
        } else {
            None
        };
        let mut report = walk(
            &self.conn,
            &self.store_id,
            options,
            Walk::Whole,
            fold,
            &mut |_| Ok(()),
        )?;
        report.keyed = self.key_id.is_some();
        drop(tx);
        match &report.fault {
            None => tracing::debug!(size = report.size, "chain verified"),
            Some(f) => tracing::warn!(fault = %f, "chain verification failed"),
        }
        Ok(report)
    }
}

struct Cursor<'s> {
    table: &'static str,
    rows: Rows<'s>,
    peeked: Option<(u64, std::result::Result<Projection, &'static str>)>,
    parse: fn(&rusqlite::Row<'_>) -> rusqlite::Result<Projection>,
}

impl Cursor<'_> {
    fn advance(&mut self) -> Result<()> {
        self.peeked = match self
            .rows
            .next()
            .map_err(Error::sqlite("reading projection rows"))?
        {
            None => None,
            Some(row) => {
                let seq = match row.get_ref(0) {
                    Ok(ValueRef::Integer(s)) if s > 0 => s as u64,
                    _ => 0,
                };
                Some((seq, (self.parse)(row).map_err(|_| "projection row")))
            }
        };
        Ok(())
    }

    fn peek_seq(&self) -> Option<u64> {
        self.peeked.as_ref().map(|p| p.0)
    }
}

/// A TEXT value as `&str`; `None` for any other type or invalid UTF-8.
pub(crate) fn text(v: ValueRef<'_>) -> Option<&str> {
    match v {
        ValueRef::Text(t) => std::str::from_utf8(t).ok(),
        _ => None,
    }
}

fn table_of(p: &Projection) -> &'static str {
    match p {
        Projection::Score(_) => "scores",
        Projection::TestRun(_) => "test_runs",
    }
}

/// Rows a worker checks at once.
const BATCH_ROWS: usize = 2048;

/// A byte range in a batch's arena.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Span(u32, u32);

/// One event row copied out of SQLite.
#[derive(Debug)]
pub(crate) struct OwnedRow {
    pub seq: u64,
    pub id: u128,
    pub ts_ms: i64,
    pub cell: Span,
    pub session: Span,
    pub kind: Span,
    pub commit: Option<Span>,
    pub payload: Span,
    pub origin: Option<(Span, u64, [u8; 32])>,
    pub prev: [u8; 32],
    pub stored: [u8; 32],
    mac: Option<[u8; 32]>,
    /// The projection rows stored at this seq, per table (scores, test_runs).
    pub projections: [Option<std::result::Result<Projection, &'static str>>; 2],
}

/// Consecutive rows and the bytes of their variable-length columns.
#[derive(Debug)]
pub(crate) struct Batch {
    arena: Vec<u8>,
    pub rows: Vec<OwnedRow>,
    /// Stored hash of the row before the first (or the chain start).
    prev_stored: blake3::Hash,
}

impl Batch {
    fn new(prev_stored: blake3::Hash) -> Self {
        Batch {
            arena: Vec::with_capacity(BATCH_ROWS * 192),
            rows: Vec::with_capacity(BATCH_ROWS),
            prev_stored,
        }
    }

    fn put(&mut self, bytes: &[u8]) -> Span {
        let start = self.arena.len() as u32;
        self.arena.extend_from_slice(bytes);
        Span(start, bytes.len() as u32)
    }

    pub fn bytes(&self, s: Span) -> &[u8] {
        &self.arena[s.0 as usize..(s.0 + s.1) as usize]
    }

    pub fn str(&self, s: Span) -> &str {
        // Only UTF-8 checked by the reader is stored as a text span.
        std::str::from_utf8(self.bytes(s)).unwrap_or_default()
    }

    /// One row as an [`Event`] (the bytes verification checked).
    pub fn event(&self, r: &OwnedRow) -> Event {
        Event {
            seq: r.seq,
            id: ulid::Ulid(r.id),
            ts_ms: r.ts_ms,
            cell: self.str(r.cell).to_string(),
            session: self.str(r.session).to_string(),
            kind: self.str(r.kind).to_string(),
            // The reader admits only canonical commits.
            commit: r.commit.and_then(|c| CommitId::parse(self.str(c)).ok()),
            payload: self.bytes(r.payload).to_vec(),
            origin: r.origin.as_ref().map(|(store, seq, hash)| Origin {
                store: self.str(*store).to_string(),
                seq: *seq,
                hash: blake3::Hash::from(*hash),
            }),
            prev_hash: blake3::Hash::from(r.prev),
            hash: blake3::Hash::from(r.stored),
            mac: r.mac.map(blake3::Hash::from),
        }
    }
}

/// The per-row checks that need no other row: run on worker threads.
struct RowCheck<'a> {
    store_id: &'a str,
    key: Option<&'a WriterKey>,
}

impl RowCheck<'_> {
    /// The first fault in the batch, with the stored hash of the row before
    /// it; and each row's projection, derived from its payload.
    fn check_batch(
        &self,
        b: &Batch,
        hasher: &mut ChainHasher,
    ) -> (Option<(Fault, blake3::Hash)>, Vec<Option<Projection>>) {
        let mut before = b.prev_stored;
        let mut projections = Vec::with_capacity(b.rows.len());
        for r in &b.rows {
            match self.check_row(b, r, hasher) {
                Err(kind) => return (Some((Fault { seq: r.seq, kind }, before)), projections),
                Ok(p) => projections.push(p),
            }
            before = blake3::Hash::from(r.stored);
        }
        (None, projections)
    }

    fn check_row(
        &self,
        b: &Batch,
        r: &OwnedRow,
        hasher: &mut ChainHasher,
    ) -> std::result::Result<Option<Projection>, FaultKind> {
        let kind = b.str(r.kind);
        let commit = r.commit.map(|c| b.str(c));
        let hash = hasher.hash(&HashInput {
            seq: r.seq,
            prev_hash: &r.prev,
            id: r.id,
            ts_ms: r.ts_ms,
            cell: b.str(r.cell),
            session: b.str(r.session),
            kind,
            commit,
            origin: r.origin.as_ref().map(|(store, seq, hash)| OriginRef {
                store: b.str(*store),
                seq: *seq,
                hash,
            }),
            payload: b.bytes(r.payload),
        });
        if hash != blake3::Hash::from(r.stored) {
            return Err(FaultKind::HashMismatch);
        }
        if let Some(key) = self.key {
            match r.mac {
                None => return Err(FaultKind::MacMissing),
                // blake3::Hash equality is constant-time.
                Some(mac) if key.mac(&hash) != blake3::Hash::from(mac) => {
                    return Err(FaultKind::MacMismatch);
                }
                Some(_) => {}
            }
        }
        // Projections: derived from the payload exactly as on append.
        let projection = if kind == KIND_SCORE || kind == KIND_TEST_RUN {
            let commit_id = match commit.map(CommitId::parse).transpose() {
                Ok(c) => c,
                Err(_) => {
                    return Err(FaultKind::MalformedRow {
                        column: "commit_id",
                    });
                }
            };
            match Projection::from_event(kind, commit_id.as_ref(), b.bytes(r.payload)) {
                Ok(p) => p,
                Err(e) => {
                    return Err(FaultKind::InvalidPayload {
                        reason: e.to_string(),
                    });
                }
            }
        } else {
            None
        };
        for (table, stored) in PROJECTION_TABLES.iter().zip(&r.projections) {
            let mine = projection.as_ref().filter(|p| table_of(p) == *table);
            match (stored, mine) {
                (Some(row), Some(p)) => {
                    if !matches!(row, Ok(row) if same_projection(row, p)) {
                        return Err(FaultKind::ProjectionMismatch { table });
                    }
                }
                (Some(_), None) => return Err(FaultKind::ProjectionOrphan { table }),
                (None, Some(_)) => return Err(FaultKind::ProjectionMissing { table }),
                (None, None) => {}
            }
        }
        Ok(projection)
    }
}

const PROJECTION_TABLES: [&str; 2] = ["scores", "test_runs"];

/// The reading side of verification: copies rows into batches and checks
/// what depends on row order.
struct Reader {
    expected: u64,
    last_stored: blake3::Hash,
    checkpoint_size: Option<u64>,
    checkpoint_hash: Option<blake3::Hash>,
    /// A fault found by the reader, with the stored hash before it.
    fault: Option<(Fault, blake3::Hash)>,
    /// The ids of a refresh's new events, with their seqs (a whole walk
    /// checks ids in SQLite afterwards: see [`duplicate_id`]).
    new_ids: Option<HashMap<u128, u64>>,
    /// The stored score rows folded in seq order, to check `commit_stats`.
    summaries: crate::summary::Summaries,
}

impl Reader {
    /// Reads up to a batch of rows; false once there is nothing more to read
    /// (end of table, or a fault that makes later rows irrelevant).
    fn fill(
        &mut self,
        rows: &mut Rows<'_>,
        cursors: &mut [Cursor<'_>; 2],
        batch: &mut Batch,
        lowest: &AtomicU64,
    ) -> Result<bool> {
        while batch.rows.len() < BATCH_ROWS {
            if self.expected > lowest.load(Ordering::Relaxed) {
                return Ok(false);
            }
            let Some(row) = rows.next().map_err(Error::sqlite("reading events"))? else {
                return Ok(false);
            };
            if let Some(fault) = self.copy_row(row, cursors, batch)? {
                self.fault = Some((fault, self.last_stored));
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// Copies one row into the batch, or names what is wrong (at `self.expected`
    /// unless a projection row below it is orphaned).
    fn copy_row(
        &mut self,
        row: &rusqlite::Row<'_>,
        cursors: &mut [Cursor<'_>; 2],
        batch: &mut Batch,
    ) -> Result<Option<Fault>> {
        let get = |i: usize| {
            row.get_ref(i)
                .map_err(Error::sqlite("reading an event column"))
        };
        let at = self.expected;
        let malformed = |column| {
            Ok(Some(Fault {
                seq: at,
                kind: FaultKind::MalformedRow { column },
            }))
        };
        let seq = match get(0)? {
            ValueRef::Integer(s) if s > 0 => s as u64,
            _ => return malformed("seq"),
        };
        if seq != self.expected {
            return Ok(Some(Fault {
                seq: at,
                kind: FaultKind::Missing { next_present: seq },
            }));
        }
        let Some(id) = blob::<16>(get(1)?) else {
            return malformed("id");
        };
        let ValueRef::Integer(ts_ms) = get(2)? else {
            return malformed("ts_ms");
        };
        let Some(cell) = text(get(3)?) else {
            return malformed("cell");
        };
        let Some(session) = text(get(4)?) else {
            return malformed("session");
        };
        let Some(kind) = text(get(5)?) else {
            return malformed("kind");
        };
        let commit = match get(6)? {
            ValueRef::Null => None,
            v => match text(v) {
                Some(c) if is_canonical_commit(c) => Some(c),
                _ => return malformed("commit_id"),
            },
        };
        let ValueRef::Blob(payload) = get(7)? else {
            return malformed("payload");
        };
        let origin = match get(8)? {
            ValueRef::Null => None,
            v => {
                let Some(store) = text(v) else {
                    return malformed("origin_store");
                };
                let oseq = match get(9)? {
                    ValueRef::Integer(s) if s > 0 => s as u64,
                    _ => return malformed("origin_seq"),
                };
                let Some(ohash) = blob::<32>(get(10)?) else {
                    return malformed("origin_hash");
                };
                Some((store, oseq, ohash))
            }
        };
        let Some(prev) = blob::<32>(get(11)?) else {
            return malformed("prev_hash");
        };
        let Some(stored) = blob::<32>(get(12)?) else {
            return malformed("hash");
        };
        let mac = match get(13)? {
            ValueRef::Null => None,
            v => match blob::<32>(v) {
                Some(m) => Some(m),
                None => return malformed("mac"),
            },
        };
        if blake3::Hash::from(prev) != self.last_stored {
            return Ok(Some(Fault {
                seq,
                kind: FaultKind::BrokenLink,
            }));
        }
        let id = u128::from_be_bytes(id);
        if let Some(ids) = &mut self.new_ids {
            if let Some(&first_seq) = ids.get(&id) {
                return Ok(Some(Fault {
                    seq,
                    kind: FaultKind::DuplicateId { first_seq },
                }));
            }
            ids.insert(id, seq);
        }
        let mut projections = [None, None];
        for (c, slot) in cursors.iter_mut().zip(&mut projections) {
            // Rows at earlier seqs were taken with their events: one left
            // behind has no event (only a malformed seq can get here).
            if let Some(s) = c.peek_seq().filter(|&s| s < seq) {
                return Ok(Some(Fault {
                    seq: s,
                    kind: FaultKind::ProjectionOrphan { table: c.table },
                }));
            }
            if c.peek_seq() == Some(seq) {
                *slot = c.peeked.take().map(|(_, p)| p);
                c.advance()?;
            }
        }
        // A stored score row that disagrees with its payload is a fault the
        // workers report at its seq; folding it here changes nothing then.
        for p in projections.iter().flatten() {
            if let Ok(Projection::Score(s)) = p {
                self.summaries.push(
                    &s.scorer,
                    &s.scorer_version,
                    s.commit.as_str(),
                    s.value,
                    seq,
                );
            }
        }
        let owned = OwnedRow {
            seq,
            id,
            ts_ms,
            cell: batch.put(cell.as_bytes()),
            session: batch.put(session.as_bytes()),
            kind: batch.put(kind.as_bytes()),
            commit: commit.map(|c| batch.put(c.as_bytes())),
            payload: batch.put(payload),
            origin: origin.map(|(s, q, h)| (batch.put(s.as_bytes()), q, h)),
            prev,
            stored,
            mac,
            projections,
        };
        batch.rows.push(owned);
        if self.checkpoint_size == Some(seq) {
            self.checkpoint_hash = Some(blake3::Hash::from(stored));
        }
        self.last_stored = blake3::Hash::from(stored);
        self.expected = seq + 1;
        Ok(None)
    }
}

fn blob<const N: usize>(v: ValueRef<'_>) -> Option<[u8; N]> {
    match v {
        ValueRef::Blob(b) => b.try_into().ok(),
        _ => None,
    }
}

/// What is wrong with the store as a whole, if anything: an altered schema
/// (see [`crate::schema::schema_difference`]), edited metadata, or rows at a
/// seq below 1 in any table (verification walks seqs from 1, so such rows
/// would otherwise never be looked at, while a query with only an upper
/// bound would read them).
fn whole_store_fault(conn: &Connection, store_id: &str, whole: bool) -> Result<Option<FaultKind>> {
    if let Some(what) = crate::schema::schema_difference(conn)? {
        return Ok(Some(FaultKind::SchemaAltered { what }));
    }
    if !whole {
        return meta_fault(conn, store_id);
    }
    // Every b-tree in order, within its parents' bounds, every page used
    // once: what makes a seek and a scan see the same rows, so that the rows
    // verification scans are the rows any query can reach.
    let structure: String = conn
        .query_row("PRAGMA quick_check(1)", [], |r| r.get(0))
        .map_err(Error::sqlite("checking the database structure"))?;
    if structure != "ok" {
        return Ok(Some(FaultKind::Structure { what: structure }));
    }
    if let Some(kind) = meta_fault(conn, store_id)? {
        return Ok(Some(kind));
    }
    for table in ["events", "scores", "test_runs"] {
        let below: Option<i64> = conn
            .query_row(
                &format!("SELECT seq FROM {table} WHERE seq < 1 ORDER BY seq LIMIT 1"),
                [],
                |r| r.get(0),
            )
            .optional()
            .map_err(Error::sqlite("looking for rows outside the chain"))?;
        if let Some(row_seq) = below {
            return Ok(Some(FaultKind::OutsideChain { table, row_seq }));
        }
    }
    Ok(None)
}

/// Metadata that is not what ratchet wrote, if any.
fn meta_fault(conn: &Connection, store_id: &str) -> Result<Option<FaultKind>> {
    let meta: Vec<(String, String)> = conn
        .prepare("SELECT key, value FROM meta")
        .and_then(|mut st| st.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?.collect())
        .map_err(Error::sqlite("reading store metadata"))?;
    for (key, value) in &meta {
        let altered = match key.as_str() {
            "format" => value != "ratchet-trace",
            "store_id" => value != store_id,
            k => !crate::schema::META_KEYS.contains(&k),
        };
        if altered {
            return Ok(Some(FaultKind::SchemaAltered {
                what: format!("metadata {key:?} = {value:?} is not what ratchet wrote"),
            }));
        }
    }
    Ok(None)
}

/// Where a walk starts.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Walk {
    /// From the genesis, with every whole-store check (schema, structure,
    /// rows outside the chain, kept statistics, duplicate ids).
    Whole,
    /// After a head the caller holds in memory (a warm owner's refresh):
    /// only the events after it are read, and the first must chain from it.
    After(Head),
}

/// [`walk`] from the genesis, handing every batch of rows to `on_batch` as
/// it is read (before its rows are checked: a consumer must discard its
/// work if the report comes back with a fault). A merge ingests from it,
/// so the cell is read once.
pub(crate) fn verify_conn_each(
    conn: &Connection,
    store_id: &str,
    options: &VerifyOptions,
    on_batch: &mut dyn FnMut(&Arc<Batch>) -> Result<()>,
) -> Result<VerifyReport> {
    walk(conn, store_id, options, Walk::Whole, None, on_batch)
}

/// One batch's result from a worker: its number, its first fault, and the
/// projection derived from each row's payload (what the view folds).
type Checked = (
    usize,
    Option<(Fault, blake3::Hash)>,
    Vec<Option<Projection>>,
);

/// Folds checked batches into the view in batch order (workers finish out
/// of order), holding each batch until its result arrives.
struct Folder<'v> {
    view: Option<&'v mut dyn FnMut(Event, Option<Projection>)>,
    in_flight: BTreeMap<usize, Arc<Batch>>,
    done: BTreeMap<usize, Vec<Option<Projection>>>,
    next: usize,
    faulted: bool,
}

impl Folder<'_> {
    fn sent(&mut self, index: usize, batch: &Arc<Batch>) {
        if self.view.is_some() {
            self.in_flight.insert(index, Arc::clone(batch));
        }
    }

    fn checked(&mut self, (index, fault, projections): Checked) {
        if fault.is_some() {
            self.faulted = true;
        }
        let Some(view) = self.view.as_mut() else {
            return;
        };
        if self.faulted {
            self.in_flight.clear();
            self.done.clear();
            return;
        }
        self.done.insert(index, projections);
        while let Some(projections) = self.done.remove(&self.next) {
            if let Some(batch) = self.in_flight.remove(&self.next) {
                for (row, projection) in batch.rows.iter().zip(projections) {
                    view(batch.event(row), projection);
                }
            }
            self.next += 1;
        }
    }
}

/// Walks the chain in one read transaction (the caller's): copies each
/// row out of SQLite once, recomputes its hash, MAC and projection, and —
/// given a view — folds the same bytes into it. The report names the
/// first fault; a view folded from a walk that found one is the caller's
/// to discard.
pub(crate) fn walk(
    conn: &Connection,
    store_id: &str,
    options: &VerifyOptions,
    from: Walk,
    fold: Option<&mut dyn FnMut(Event, Option<Projection>)>,
    on_batch: &mut dyn FnMut(&Arc<Batch>) -> Result<()>,
) -> Result<VerifyReport> {
    let genesis = genesis_hash(store_id);
    let (start, running) = match from {
        Walk::Whole => (1u64, genesis),
        Walk::After(head) => (head.size + 1, head.hash),
    };
    let whole = matches!(from, Walk::Whole);
    let mut report = VerifyReport {
        store_id: store_id.to_string(),
        size: start - 1,
        head: running,
        keyed: false,
        macs_checked: options.key.is_some(),
        checkpoint_checked: options.checkpoint.is_some() && whole,
        fault: None,
    };
    let fault = |report: &mut VerifyReport, seq: u64, kind: FaultKind| {
        report.fault = Some(Fault { seq, kind });
    };

    // The store as a whole first: its schema, its metadata, and rows at seqs
    // no event can vouch for. Each is a fault at seq 0. A refresh reads
    // only rows after a head it holds, so it checks the schema and the
    // metadata (what the rows it reads mean) and not the structure.
    if let Some(kind) = whole_store_fault(conn, store_id, whole)? {
        fault(&mut report, 0, kind);
        return Ok(report);
    }

    let end = options.up_to.unwrap_or(u64::MAX).min(i64::MAX as u64) as i64;

    let mut ev_stmt = conn
        .prepare(&format!(
            "SELECT {EVENT_COLUMNS} FROM events WHERE seq >= ?1 AND seq <= ?2 ORDER BY seq"
        ))
        .map_err(Error::sqlite("preparing verification"))?;
    let mut sc_stmt = conn
        .prepare(&format!(
            "SELECT {SCORE_COLUMNS} FROM scores WHERE seq >= ?1 AND seq <= ?2 ORDER BY seq"
        ))
        .map_err(Error::sqlite("preparing verification"))?;
    let mut tr_stmt = conn
        .prepare(&format!(
            "SELECT {TEST_RUN_COLUMNS} FROM test_runs WHERE seq >= ?1 AND seq <= ?2 ORDER BY seq"
        ))
        .map_err(Error::sqlite("preparing verification"))?;
    let mut cursors = [
        Cursor {
            table: "scores",
            rows: sc_stmt
                .query([start as i64, end])
                .map_err(Error::sqlite("reading scores"))?,
            peeked: None,
            parse: |r| score_from_row(r).map(|(_, s)| Projection::Score(s)),
        },
        Cursor {
            table: "test_runs",
            rows: tr_stmt
                .query([start as i64, end])
                .map_err(Error::sqlite("reading test runs"))?,
            peeked: None,
            parse: |r| test_run_from_row(r).map(|(_, t)| Projection::TestRun(t)),
        },
    ];
    for c in &mut cursors {
        c.advance()?;
    }
    let mut rows = ev_stmt
        .query([start as i64, end])
        .map_err(Error::sqlite("reading events"))?;

    // The reader (this thread) copies rows out of SQLite and checks what needs
    // order: seq continuity, links between stored hashes, row shapes, orphan
    // projection rows. Workers recompute hashes, MACs and projections, which
    // depend on one row only. The first fault is the lowest seq either finds.
    let ctx = RowCheck {
        store_id,
        key: options.key.as_ref(),
    };
    let lowest = AtomicU64::new(u64::MAX);
    let workers = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
        .clamp(1, 4);
    let mut reader = Reader {
        expected: start,
        last_stored: running,
        checkpoint_size: options.checkpoint.as_ref().map(|c| c.size),
        checkpoint_hash: None,
        fault: None,
        new_ids: (!whole).then(HashMap::new),
        summaries: crate::summary::Summaries::default(),
    };
    let mut folder = Folder {
        view: fold,
        in_flight: BTreeMap::new(),
        done: BTreeMap::new(),
        next: 0,
        faulted: false,
    };
    let worker_fault = std::thread::scope(|scope| -> Result<Option<(Fault, blake3::Hash)>> {
        let (result_tx, result_rx) = mpsc::channel::<Checked>();
        let mut senders = Vec::new();
        if workers > 1 {
            for _ in 0..workers {
                let (tx, rx) = mpsc::sync_channel::<(usize, Arc<Batch>)>(2);
                let result_tx = result_tx.clone();
                let (ctx, lowest) = (&ctx, &lowest);
                scope.spawn(move || {
                    let mut hasher = ChainHasher::new(ctx.store_id);
                    for (index, batch) in rx {
                        let (found, projections) = ctx.check_batch(&batch, &mut hasher);
                        if let Some((f, _)) = &found {
                            lowest.fetch_min(f.seq, Ordering::Relaxed);
                        }
                        if result_tx.send((index, found, projections)).is_err() {
                            break;
                        }
                    }
                });
                senders.push(tx);
            }
        }
        drop(result_tx);
        let mut inline_hasher = ChainHasher::new(store_id);
        let mut first: Option<(Fault, blake3::Hash)> = None;
        let mut note = |found: Checked, folder: &mut Folder<'_>| {
            if let Some(f) = &found.1
                && first.as_ref().is_none_or(|g| f.0.seq < g.0.seq)
            {
                first = Some(f.clone());
            }
            folder.checked(found);
        };
        let mut sent = 0usize;
        let mut batch = Batch::new(reader.last_stored);
        loop {
            let more = reader.fill(&mut rows, &mut cursors, &mut batch, &lowest)?;
            if !batch.rows.is_empty() {
                let full = Arc::new(std::mem::replace(
                    &mut batch,
                    Batch::new(reader.last_stored),
                ));
                on_batch(&full)?;
                folder.sent(sent, &full);
                if senders.is_empty() {
                    let (found, projections) = ctx.check_batch(&full, &mut inline_hasher);
                    if let Some((f, _)) = &found {
                        lowest.fetch_min(f.seq, Ordering::Relaxed);
                    }
                    note((sent, found, projections), &mut folder);
                } else if senders[sent % senders.len()]
                    .send((sent, Arc::clone(&full)))
                    .is_err()
                {
                    break;
                }
                sent += 1;
                // Fold what the workers have finished, so batches held for
                // folding stay few.
                while let Ok(found) = result_rx.try_recv() {
                    note(found, &mut folder);
                }
            }
            if !more || (senders.is_empty() && lowest.load(Ordering::Relaxed) != u64::MAX) {
                break;
            }
        }
        drop(senders);
        for found in result_rx.iter() {
            note(found, &mut folder);
        }
        Ok(first)
    })?;
    drop(rows);

    // The lower seq wins; at the same seq the reader's finding (shape, link)
    // comes first, as it would in a row-by-row check.
    let mut chosen = match (reader.fault.take(), worker_fault) {
        (Some(r), Some(w)) if w.0.seq < r.0.seq => Some(w),
        (Some(r), _) => Some(r),
        (None, w) => w,
    };
    let valid_to = chosen
        .as_ref()
        .map_or(reader.expected.saturating_sub(1), |(f, _)| f.seq - 1);
    if let Some(dup) = duplicate_id(conn, whole, valid_to, reader.new_ids.as_ref())?
        && chosen.as_ref().is_none_or(|(f, _)| dup.0.seq < f.seq)
    {
        chosen = Some(dup);
    }
    if let Some((f, head_before)) = chosen {
        report.size = f.seq - 1;
        report.head = head_before;
        report.fault = Some(f);
        return Ok(report);
    }
    if reader.expected > start {
        report.size = reader.expected - 1;
        report.head = reader.last_stored;
    }
    for c in &cursors {
        if let Some(s) = c.peek_seq() {
            fault(
                &mut report,
                s,
                FaultKind::ProjectionOrphan { table: c.table },
            );
            return Ok(report);
        }
    }
    if !whole {
        return Ok(report);
    }
    let checkpoint_hash = reader.checkpoint_hash;
    let summaries = std::mem::take(&mut reader.summaries);
    if let Some(cp) = &options.checkpoint {
        let size = report.size;
        if cp.size > size {
            fault(
                &mut report,
                size + 1,
                FaultKind::Truncated {
                    checkpoint_size: cp.size,
                    store_size: size,
                },
            );
        } else if cp.size > 0 {
            if checkpoint_hash != Some(cp.head) {
                fault(&mut report, cp.size, FaultKind::CheckpointMismatch);
            }
        } else if cp.size == 0 && cp.head != genesis {
            fault(&mut report, 1, FaultKind::CheckpointMismatch);
        }
    }
    if report.fault.is_none()
        && let Some(kind) = summary_fault(conn, report.size, summaries)?
    {
        report.size = 0;
        report.head = genesis;
        fault(&mut report, 0, kind);
    }
    Ok(report)
}

/// The first event (at or below `valid_to`) whose id an earlier event
/// already has, with the stored hash before it.
///
/// A whole walk asks SQLite to group the ids of the table's own b-tree
/// (`NOT INDEXED`: an index made to disagree cannot hide one): the sort
/// spills to temporary files, so memory stays bounded however long the
/// trace (a map of every id cost ~60 B per event). A refresh checks only
/// its new ids: among themselves in memory, against the earlier ones by
/// the id index.
fn duplicate_id(
    conn: &Connection,
    whole: bool,
    valid_to: u64,
    new_ids: Option<&HashMap<u128, u64>>,
) -> Result<Option<(Fault, blake3::Hash)>> {
    const CONTEXT: &str = "looking for duplicate event ids";
    let valid_to = valid_to.min(i64::MAX as u64) as i64;
    // (seq of the repeat, seq of the first)
    let mut found: Option<(u64, u64)> = None;
    let mut consider = |repeat: u64, first: u64| {
        if found.is_none_or(|(r, _)| repeat < r) {
            found = Some((repeat, first));
        }
    };
    let seqs_of = |id: &[u8]| -> Result<Vec<u64>> {
        conn.prepare_cached(
            "SELECT seq FROM events NOT INDEXED WHERE id = ?1 AND seq >= 1 AND seq <= ?2 ORDER BY seq LIMIT 2",
        )
        .and_then(|mut st| {
            st.query_map(params![id, valid_to], |r| r.get::<_, i64>(0))?
                .map(|r| r.map(|s| s as u64))
                .collect()
        })
        .map_err(Error::sqlite(CONTEXT))
    };
    if whole {
        let repeated: Vec<Vec<u8>> = conn
            .prepare(
                "SELECT id FROM events NOT INDEXED WHERE seq >= 1 AND seq <= ?1
                  GROUP BY id HAVING count(*) > 1",
            )
            .and_then(|mut st| st.query_map([valid_to], |r| r.get(0))?.collect())
            .map_err(Error::sqlite(CONTEXT))?;
        for id in repeated {
            if let [first, repeat, ..] = seqs_of(&id)?[..] {
                consider(repeat, first);
            }
        }
    } else if let Some(new_ids) = new_ids {
        for (&id, &seq) in new_ids {
            if seq as i64 > valid_to {
                continue;
            }
            let earlier: Option<i64> = conn
                .prepare_cached(
                    "SELECT seq FROM events WHERE id = ?1 AND seq < ?2 ORDER BY seq LIMIT 1",
                )
                .and_then(|mut st| {
                    st.query_row(params![&id.to_be_bytes()[..], seq as i64], |r| r.get(0))
                        .optional()
                })
                .map_err(Error::sqlite(CONTEXT))?;
            if let Some(first) = earlier {
                consider(seq, first as u64);
            }
        }
    }
    let Some((repeat, first_seq)) = found else {
        return Ok(None);
    };
    let before: Option<Vec<u8>> = conn
        .query_row(
            "SELECT hash FROM events WHERE seq = ?1",
            [(repeat - 1) as i64],
            |r| r.get(0),
        )
        .optional()
        .map_err(Error::sqlite(CONTEXT))?;
    let before = before
        .and_then(|b| <[u8; 32]>::try_from(b).ok())
        .map(blake3::Hash::from)
        .unwrap_or(blake3::Hash::from([0; 32]));
    Ok(Some((
        Fault {
            seq: repeat,
            kind: FaultKind::DuplicateId { first_seq },
        },
        before,
    )))
}

/// Checks the kept per-commit statistics against `folded` (the verified
/// score rows up to `size`), when the store keeps them and `size` is its
/// head: a verification that stopped short of the head (`up_to`) has not
/// read every score the table sums.
fn summary_fault(
    conn: &Connection,
    size: u64,
    folded: crate::summary::Summaries,
) -> Result<Option<FaultKind>> {
    let version: i64 = conn
        .pragma_query_value(None, "user_version", |r| r.get(0))
        .map_err(Error::sqlite("reading the schema version"))?;
    if version < 2 {
        return Ok(None);
    }
    let beyond: Option<i64> = conn
        .query_row(
            "SELECT seq FROM events WHERE seq > ?1 LIMIT 1",
            [size.min(i64::MAX as u64) as i64],
            |r| r.get(0),
        )
        .optional()
        .map_err(Error::sqlite("looking for events after the verified ones"))?;
    if beyond.is_some() {
        return Ok(None);
    }
    Ok(folded
        .difference(conn)?
        .map(
            |(scorer, scorer_version, commit)| FaultKind::SummaryMismatch {
                scorer,
                scorer_version,
                commit,
            },
        ))
}
