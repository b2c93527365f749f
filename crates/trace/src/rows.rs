//! The rows a walk reads: copied out of SQLite in batches (`Reader`,
//! the ordered checks) and checked row by row on worker threads
//! (`RowCheck`: hash, MAC, projection).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};

use rusqlite::Rows;
use rusqlite::types::ValueRef;

use crate::encoding::{ChainHasher, HashInput, OriginRef, WriterKey, is_canonical_commit};
use crate::error::{Error, Result};
use crate::event::{CommitId, Event, Origin};
use crate::projection::{KIND_SCORE, KIND_TEST_RUN, Projection, same_projection};
use crate::verify::{Fault, FaultKind};

pub(crate) struct Cursor<'s> {
    pub(crate) table: &'static str,
    pub(crate) rows: Rows<'s>,
    pub(crate) peeked: Option<(u64, std::result::Result<Projection, &'static str>)>,
    pub(crate) parse: fn(&rusqlite::Row<'_>) -> rusqlite::Result<Projection>,
}

impl Cursor<'_> {
    pub(crate) fn advance(&mut self) -> Result<()> {
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

    pub(crate) fn peek_seq(&self) -> Option<u64> {
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

pub(crate) fn table_of(p: &Projection) -> &'static str {
    match p {
        Projection::Score(_) => "scores",
        Projection::TestRun(_) => "test_runs",
    }
}

/// Where a walk hands each checked row (in seq order) with the projection
/// derived from its payload: the verified view's fold, or a refresh's list.
pub(crate) type Sink<'a> = dyn FnMut(&Batch, &OwnedRow, Option<Projection>) + 'a;

/// Rows a worker checks at once.
pub(crate) const BATCH_ROWS: usize = 2048;

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
    pub(crate) mac: Option<[u8; 32]>,
    /// The projection rows stored at this seq, per table (scores, test_runs).
    pub projections: [Option<std::result::Result<Projection, &'static str>>; 2],
}

/// Consecutive rows and the bytes of their variable-length columns.
#[derive(Debug)]
pub(crate) struct Batch {
    pub(crate) arena: Vec<u8>,
    pub rows: Vec<OwnedRow>,
    /// Stored hash of the row before the first (or the chain start).
    pub(crate) prev_stored: blake3::Hash,
}

impl Batch {
    pub(crate) fn new(prev_stored: blake3::Hash) -> Self {
        Batch {
            arena: Vec::with_capacity(BATCH_ROWS * 192),
            rows: Vec::with_capacity(BATCH_ROWS),
            prev_stored,
        }
    }

    pub(crate) fn put(&mut self, bytes: &[u8]) -> Span {
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
pub(crate) struct RowCheck<'a> {
    pub(crate) store_id: &'a str,
    pub(crate) key: Option<&'a WriterKey>,
}

impl RowCheck<'_> {
    /// The first fault in the batch, with the stored hash of the row before
    /// it; and each row's projection, derived from its payload.
    pub(crate) fn check_batch(
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

    pub(crate) fn check_row(
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

pub(crate) const PROJECTION_TABLES: [&str; 2] = ["scores", "test_runs"];

/// The reading side of verification: copies rows into batches and checks
/// what depends on row order.
pub(crate) struct Reader {
    pub(crate) expected: u64,
    pub(crate) last_stored: blake3::Hash,
    pub(crate) checkpoint_size: Option<u64>,
    pub(crate) checkpoint_hash: Option<blake3::Hash>,
    /// A fault found by the reader, with the stored hash before it.
    pub(crate) fault: Option<(Fault, blake3::Hash)>,
    /// The ids of a refresh's new events, with their seqs (a whole walk
    /// checks ids in SQLite afterwards: see [`duplicate_id`]).
    pub(crate) new_ids: Option<HashMap<u128, u64>>,
    /// The stored score rows folded in seq order, to check `commit_stats`.
    pub(crate) summaries: crate::summary::Summaries,
}

impl Reader {
    /// Reads up to a batch of rows; false once there is nothing more to read
    /// (end of table, or a fault that makes later rows irrelevant).
    pub(crate) fn fill(
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
    pub(crate) fn copy_row(
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

pub(crate) fn blob<const N: usize>(v: ValueRef<'_>) -> Option<[u8; N]> {
    match v {
        ValueRef::Blob(b) => b.try_into().ok(),
        _ => None,
    }
}
