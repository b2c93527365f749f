//! Verification: recompute every hash from the columns and check every
//! projection row against its event. Never trusts a stored hash.

use std::fmt;

use rusqlite::types::ValueRef;
use rusqlite::{Connection, OptionalExtension, Rows};
use serde::Serialize;

use crate::checkpoint::Checkpoint;
use crate::encoding::{ChainHasher, HashInput, OriginRef, WriterKey, genesis_hash};
use crate::error::{Error, Result};
use crate::event::CommitId;
use crate::projection::{
    Projection, SCORE_COLUMNS, TEST_RUN_COLUMNS, same_projection, score_from_row, test_run_from_row,
};
use crate::store::{EVENT_COLUMNS, Store};

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
}

impl fmt::Display for Fault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "seq {}: ", self.seq)?;
        match &self.kind {
            FaultKind::Missing { next_present } => {
                write!(f, "event missing (deleted row; next present is seq {next_present})")
            }
            FaultKind::BrokenLink => f.write_str("prev_hash does not link to the previous event (rows reordered, removed or inserted)"),
            FaultKind::HashMismatch => f.write_str("content does not match its hash (row edited)"),
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
        }
    }
}

/// Settings of a verification; [`VerifyOptions::default`] recomputes the whole chain.
#[derive(Debug, Clone, Default)]
pub struct VerifyOptions {
    key: Option<WriterKey>,
    checkpoint: Option<Checkpoint>,
    trusted: Option<Checkpoint>,
}

impl VerifyOptions {
    /// Also check every row's MAC with the writer key.
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

    /// Trust everything up to this checkpoint (verified before) and recompute
    /// only what came after; the stored hash at the checkpoint must still be
    /// the checkpoint's head.
    pub fn trusted_prefix(mut self, cp: Checkpoint) -> Self {
        self.trusted = Some(cp);
        self
    }
}

/// The outcome of a verification.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct VerifyReport {
    /// The store verified.
    pub store_id: String,
    /// Seq of the last event recomputed (the chain size if valid).
    pub size: u64,
    /// First seq recomputed (1 unless a trusted prefix was given).
    pub checked_from: u64,
    /// Hash of the last valid event.
    #[serde(serialize_with = "crate::store::ser_hash")]
    pub head: blake3::Hash,
    /// Whether MACs were checked.
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

    /// Verifies with a key, a checkpoint or a trusted prefix.
    ///
    /// # Errors
    /// [`Error::CheckpointOrigin`] if a checkpoint is for another store;
    /// [`Error::Sqlite`] for failures to read.
    #[tracing::instrument(name = "trace.verify", skip_all, fields(store = %self.store_id))]
    pub fn verify_with(&self, options: &VerifyOptions) -> Result<VerifyReport> {
        for cp in [&options.checkpoint, &options.trusted]
            .into_iter()
            .flatten()
        {
            if cp.origin != self.store_id {
                return Err(Error::CheckpointOrigin {
                    checkpoint_origin: cp.origin.clone(),
                    store_origin: self.store_id.clone(),
                });
            }
        }
        // One read transaction: a consistent snapshot while writers go on.
        let tx = self
            .conn
            .unchecked_transaction()
            .map_err(Error::sqlite("starting a read transaction"))?;
        let report = verify_conn(&tx, &self.store_id, options)?;
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

fn blob32(v: ValueRef<'_>) -> Option<[u8; 32]> {
    match v {
        ValueRef::Blob(b) => b.try_into().ok(),
        _ => None,
    }
}

fn text(v: ValueRef<'_>) -> Option<&str> {
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

/// Verifies the store behind `conn` (already inside a read transaction).
pub(crate) fn verify_conn(
    conn: &Connection,
    store_id: &str,
    options: &VerifyOptions,
) -> Result<VerifyReport> {
    let genesis = genesis_hash(store_id);
    let mut report = VerifyReport {
        store_id: store_id.to_string(),
        size: 0,
        checked_from: 1,
        head: genesis,
        macs_checked: options.key.is_some(),
        checkpoint_checked: options.checkpoint.is_some(),
        fault: None,
    };
    let fault = |report: &mut VerifyReport, seq: u64, kind: FaultKind| {
        report.fault = Some(Fault { seq, kind });
    };

    let mut running = genesis;
    if let Some(cp) = &options.trusted {
        let stored: Option<Option<[u8; 32]>> = conn
            .query_row(
                "SELECT hash FROM events WHERE seq = ?1",
                [cp.size as i64],
                |r| Ok(blob32(r.get_ref(0)?)),
            )
            .optional()
            .map_err(Error::sqlite("reading the trusted checkpoint row"))?;
        if cp.size > 0 {
            match stored {
                None => {
                    let size: i64 = conn
                        .query_row("SELECT coalesce(max(seq), 0) FROM events", [], |r| r.get(0))
                        .map_err(Error::sqlite("reading the chain size"))?;
                    fault(
                        &mut report,
                        size as u64 + 1,
                        FaultKind::Truncated {
                            checkpoint_size: cp.size,
                            store_size: size as u64,
                        },
                    );
                    return Ok(report);
                }
                Some(h) if h.map(blake3::Hash::from) != Some(cp.head) => {
                    fault(&mut report, cp.size, FaultKind::CheckpointMismatch);
                    return Ok(report);
                }
                Some(_) => {}
            }
        }
        running = if cp.size == 0 { genesis } else { cp.head };
        report.size = cp.size;
        report.head = running;
        report.checked_from = cp.size + 1;
    }
    let start = report.checked_from;

    let mut ev_stmt = conn
        .prepare(&format!(
            "SELECT {EVENT_COLUMNS} FROM events WHERE seq >= ?1 ORDER BY seq"
        ))
        .map_err(Error::sqlite("preparing verification"))?;
    let mut sc_stmt = conn
        .prepare(&format!(
            "SELECT {SCORE_COLUMNS} FROM scores WHERE seq >= ?1 ORDER BY seq"
        ))
        .map_err(Error::sqlite("preparing verification"))?;
    let mut tr_stmt = conn
        .prepare(&format!(
            "SELECT {TEST_RUN_COLUMNS} FROM test_runs WHERE seq >= ?1 ORDER BY seq"
        ))
        .map_err(Error::sqlite("preparing verification"))?;
    let mut cursors = [
        Cursor {
            table: "scores",
            rows: sc_stmt
                .query([start as i64])
                .map_err(Error::sqlite("reading scores"))?,
            peeked: None,
            parse: |r| score_from_row(r).map(|(_, s)| Projection::Score(s)),
        },
        Cursor {
            table: "test_runs",
            rows: tr_stmt
                .query([start as i64])
                .map_err(Error::sqlite("reading test runs"))?,
            peeked: None,
            parse: |r| test_run_from_row(r).map(|(_, t)| Projection::TestRun(t)),
        },
    ];
    for c in &mut cursors {
        c.advance()?;
    }
    let mut rows = ev_stmt
        .query([start as i64])
        .map_err(Error::sqlite("reading events"))?;
    let mut hasher = ChainHasher::new();
    let mut expected = start;
    let mut checkpoint_hash: Option<blake3::Hash> = None;

    while let Some(row) = rows.next().map_err(Error::sqlite("reading events"))? {
        let get = |i: usize| {
            row.get_ref(i)
                .map_err(Error::sqlite("reading an event column"))
        };
        let seq = match get(0)? {
            ValueRef::Integer(s) if s > 0 => s as u64,
            _ => {
                fault(
                    &mut report,
                    expected,
                    FaultKind::MalformedRow { column: "seq" },
                );
                return Ok(report);
            }
        };
        if seq != expected {
            fault(
                &mut report,
                expected,
                FaultKind::Missing { next_present: seq },
            );
            return Ok(report);
        }
        macro_rules! col {
            ($e:expr, $name:literal) => {
                match $e {
                    Some(v) => v,
                    None => {
                        fault(&mut report, seq, FaultKind::MalformedRow { column: $name });
                        return Ok(report);
                    }
                }
            };
        }
        let id: [u8; 16] = col!(
            match get(1)? {
                ValueRef::Blob(b) => <[u8; 16]>::try_from(b).ok(),
                _ => None,
            },
            "id"
        );
        let ts_ms = col!(
            match get(2)? {
                ValueRef::Integer(t) => Some(t),
                _ => None,
            },
            "ts_ms"
        );
        let cell = col!(text(get(3)?), "cell");
        let session = col!(text(get(4)?), "session");
        let kind = col!(text(get(5)?), "kind");
        let commit = match get(6)? {
            ValueRef::Null => None,
            v => Some(col!(text(v), "commit_id")),
        };
        let payload = col!(
            match get(7)? {
                ValueRef::Blob(b) => Some(b),
                _ => None,
            },
            "payload"
        );
        let origin_hash_bytes;
        let origin = match get(8)? {
            ValueRef::Null => None,
            v => {
                let store = col!(text(v), "origin_store");
                let oseq = col!(
                    match get(9)? {
                        ValueRef::Integer(s) if s > 0 => Some(s as u64),
                        _ => None,
                    },
                    "origin_seq"
                );
                origin_hash_bytes = col!(blob32(get(10)?), "origin_hash");
                Some(OriginRef {
                    store,
                    seq: oseq,
                    hash: &origin_hash_bytes,
                })
            }
        };
        let prev = col!(blob32(get(11)?), "prev_hash");
        let stored = col!(blob32(get(12)?), "hash");
        if blake3::Hash::from(prev) != running {
            fault(&mut report, seq, FaultKind::BrokenLink);
            return Ok(report);
        }
        let hash = hasher.hash(&HashInput {
            store_id,
            seq,
            prev_hash: &prev,
            id: u128::from_be_bytes(id),
            ts_ms,
            cell,
            session,
            kind,
            commit,
            origin,
            payload,
        });
        if hash != blake3::Hash::from(stored) {
            fault(&mut report, seq, FaultKind::HashMismatch);
            return Ok(report);
        }
        if let Some(key) = &options.key {
            let mac = match get(13)? {
                ValueRef::Null => {
                    fault(&mut report, seq, FaultKind::MacMissing);
                    return Ok(report);
                }
                v => col!(blob32(v), "mac"),
            };
            // blake3::Hash equality is constant-time.
            if key.mac(&hash) != blake3::Hash::from(mac) {
                fault(&mut report, seq, FaultKind::MacMismatch);
                return Ok(report);
            }
        }

        // Projections: derived from the payload exactly as on append.
        let projection =
            if kind == crate::projection::KIND_SCORE || kind == crate::projection::KIND_TEST_RUN {
                let commit_id = match commit.map(CommitId::parse).transpose() {
                    Ok(c) => c,
                    Err(_) => {
                        fault(
                            &mut report,
                            seq,
                            FaultKind::MalformedRow {
                                column: "commit_id",
                            },
                        );
                        return Ok(report);
                    }
                };
                match Projection::from_event(kind, commit_id.as_ref(), payload) {
                    Ok(p) => p,
                    Err(e) => {
                        fault(
                            &mut report,
                            seq,
                            FaultKind::InvalidPayload {
                                reason: e.to_string(),
                            },
                        );
                        return Ok(report);
                    }
                }
            } else {
                None
            };
        for c in &mut cursors {
            if let Some(s) = c.peek_seq().filter(|&s| s < seq) {
                fault(
                    &mut report,
                    s,
                    FaultKind::ProjectionOrphan { table: c.table },
                );
                return Ok(report);
            }
            let mine = projection.as_ref().filter(|p| table_of(p) == c.table);
            match (c.peek_seq() == Some(seq), mine) {
                (true, Some(p)) => {
                    let same = matches!(&c.peeked, Some((_, Ok(row))) if same_projection(row, p));
                    if !same {
                        fault(
                            &mut report,
                            seq,
                            FaultKind::ProjectionMismatch { table: c.table },
                        );
                        return Ok(report);
                    }
                    c.advance()?;
                }
                (true, None) => {
                    fault(
                        &mut report,
                        seq,
                        FaultKind::ProjectionOrphan { table: c.table },
                    );
                    return Ok(report);
                }
                (false, Some(_)) => {
                    fault(
                        &mut report,
                        seq,
                        FaultKind::ProjectionMissing { table: c.table },
                    );
                    return Ok(report);
                }
                (false, None) => {}
            }
        }
        if options.checkpoint.as_ref().is_some_and(|cp| cp.size == seq) {
            checkpoint_hash = Some(hash);
        }
        running = hash;
        report.size = seq;
        report.head = hash;
        expected = seq + 1;
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
        } else if cp.size > 0 && cp.size >= start {
            if checkpoint_hash != Some(cp.head) {
                fault(&mut report, cp.size, FaultKind::CheckpointMismatch);
            }
        } else if cp.size == 0 && cp.head != genesis {
            fault(&mut report, 1, FaultKind::CheckpointMismatch);
        }
    }
    Ok(report)
}
