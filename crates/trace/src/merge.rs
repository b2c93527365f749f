//! Cells → home: ingest a cell store's new events into the home chain.

use std::path::Path;
use std::sync::Arc;

use rusqlite::types::ValueRef;
use rusqlite::{OptionalExtension, params};
use serde::Serialize;
use ulid::Ulid;

use crate::encoding::{OriginRef, WriterKey, genesis_hash};
use crate::error::{Error, Result};
use crate::rows::{Batch, OwnedRow};
use crate::store::{Head, Store, StoreOptions};
use crate::verify::{VerifyOptions, VerifyReport};
use crate::walk::verify_conn_each;
use crate::write::{ChainWriter, Pending, Prepared};

/// Page cache during a merge, in KiB (negative: SQLite's size-in-KiB form).
const MERGE_CACHE_KIB: i64 = -65536;
/// SQLite's default page cache, restored after a merge.
const DEFAULT_CACHE_KIB: i64 = -2000;

/// An event of a cell passes what the home's own append checks of any
/// draft: a kind without control characters, and a payload that is JSON
/// whose numbers a reader can hold. (The size limit is the cell's own;
/// reserved kinds are merged as evidence, never acted on.)
fn admissible(batch: &Batch, r: &OwnedRow) -> Result<()> {
    crate::event::validate_name("kind", batch.str(r.kind))?;
    crate::event::validate_payload(batch.bytes(r.payload), usize::MAX)
}

/// Settings of [`Store::merge_cell`].
#[derive(Debug, Clone, Default)]
pub struct MergeOptions {
    cell_key: Option<WriterKey>,
}

impl MergeOptions {
    /// The cell's writer key: its MACs are checked before anything is ingested.
    pub fn cell_key(mut self, key: WriterKey) -> Self {
        self.cell_key = Some(key);
        self
    }
}

/// What a merge did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MergeReport {
    /// The cell's store id.
    pub cell_id: String,
    /// Events in the cell (all verified).
    pub cell_size: u64,
    /// Cell seq already merged before this call.
    pub high_water_before: u64,
    /// Cell seq merged after this call.
    pub high_water_after: u64,
    /// Events appended to the home chain.
    pub ingested: u64,
    /// Events skipped because the home already held them, identical, by id.
    pub already_present: u64,
    /// The home head after the merge.
    pub home_head: Head,
}

impl Store {
    /// Verifies the cell store at `cell_dir` and ingests, in one transaction,
    /// the events after the cell's high-water mark. Each ingested event keeps
    /// its id, time, cell, session, kind, commit and payload, gets a new seq
    /// and hash in the home chain, and records its cell seq and cell hash as
    /// provenance (hashed too). Merging again ingests nothing new.
    ///
    /// # Errors
    /// Nothing is ingested on any error: [`Error::CellTampered`] if the cell
    /// does not verify; [`Error::CellRewritten`] if its history changed since
    /// the last merge; [`Error::BrokenBatch`] if the new events do not link to
    /// the recorded head; [`Error::Equivocation`] if an id the home holds
    /// arrives with other content; [`Error::MergeSelf`]; and the errors of
    /// [`Store::open`] for the cell.
    #[tracing::instrument(name = "trace.merge_cell", skip_all, fields(home = %self.store_id, cell = %cell_dir.as_ref().display()))]
    pub fn merge_cell(
        &mut self,
        cell_dir: impl AsRef<Path>,
        options: &MergeOptions,
    ) -> Result<MergeReport> {
        let cell_dir = cell_dir.as_ref();
        // Read-only: a merge never writes its cell (not even to upgrade a
        // version-1 cell in place).
        let cell = Store::open_read_only(cell_dir, StoreOptions::default())?;
        let cell_id = cell.store_id.clone();
        if cell_id == self.store_id {
            return Err(Error::MergeSelf { store_id: cell_id });
        }
        if let (Some(key_id), None) = (&cell.key_id, &options.cell_key) {
            return Err(Error::CellKeyRequired {
                cell_id,
                key_id: key_id.clone(),
            });
        }
        match (&self.key_id, &self.options.writer_key) {
            (Some(_), None) => return Err(Error::KeyRequired),
            (Some(expected), Some(k)) if *expected != k.id_hex() => {
                return Err(Error::WrongKey {
                    expected: expected.clone(),
                    given: k.id_hex(),
                });
            }
            _ => {}
        }

        // A merge is one large transaction: a bigger page cache keeps it from
        // spilling to the WAL midway (measured: 1.4x faster merges). Small
        // appends are faster with the default cache, so it is restored after.
        self.conn
            .pragma_update(None, "cache_size", MERGE_CACHE_KIB)
            .map_err(Error::sqlite("enlarging the page cache for a merge"))?;
        let result = self.merge_from(cell_dir, cell, options);
        let restored = self
            .conn
            .pragma_update(None, "cache_size", DEFAULT_CACHE_KIB)
            .map_err(Error::sqlite("restoring the page cache"));
        let report = result?;
        restored?;
        tracing::info!(cell = %report.cell_id, ingested = report.ingested, already_present = report.already_present, "cell merged");
        Ok(report)
    }

    /// The single pass of [`Store::merge_cell`].
    ///
    /// Two sides on two threads: the cell's (a consistent snapshot of the
    /// cell, verified as it is read, on a thread of its own) hands batches
    /// of rows to the home's (this thread: checks, then inserts into the
    /// home transaction). Verification and ingestion share the one pass; the
    /// home transaction commits only if the cell verified whole, and rolls
    /// back on any error of either side.
    fn merge_from(
        &mut self,
        cell_dir: &Path,
        cell: Store,
        options: &MergeOptions,
    ) -> Result<MergeReport> {
        let cell_id = cell.store_id.clone();
        let cell_id = cell_id.as_str();
        let tx = crate::schema::begin_write(
            &mut self.conn,
            &mut self.schema_checked,
            self.read_only.then_some(&self.dir),
            "starting the merge transaction",
        )?;
        let high_water: Option<(u64, blake3::Hash)> = tx
            .prepare_cached(
                // Read from the table, not the origin index: an index made to
                // disagree with its table would move the high-water mark and
                // make a merge skip events that verification could not miss.
                "SELECT origin_seq, origin_hash FROM events NOT INDEXED
                 WHERE origin_store = ?1 AND seq >= 1 ORDER BY origin_seq DESC LIMIT 1",
            )
            .and_then(|mut st| {
                st.query_row([cell_id], |r| {
                    Ok((r.get::<_, i64>(0)? as u64, crate::store::hash_col(r, 1)?))
                })
                .optional()
            })
            .map_err(Error::sqlite("reading the cell's high-water mark"))?;
        let (hw_seq, hw_hash) = high_water.unwrap_or((0, genesis_hash(cell_id)));
        // Ids above every id the home holds cannot be there yet: a cell's own
        // ids rise, so the equivocation lookup is needed only for the rest.
        let mut max_id: Option<Ulid> = tx
            .query_row(
                "SELECT id FROM events WHERE seq >= 1 ORDER BY id DESC LIMIT 1",
                [],
                |r| crate::store::ulid_col(r, 0),
            )
            .optional()
            .map_err(Error::sqlite("reading the largest id"))?;
        let self_id = self.store_id.as_str();
        let mut writer = ChainWriter::new(
            &tx,
            &mut self.hasher,
            self.options.writer_key.as_ref(),
            self_id,
        )?;
        let (mut ingested, mut already_present) = (0u64, 0u64);
        let mut link = hw_hash;
        let mut vopts = VerifyOptions::default();
        if let Some(k) = &options.cell_key {
            vopts = vopts.key(k.clone());
        }
        let mut ingest = |batch: &Batch| -> Result<()> {
            // The batch's new events are inserted together (hashed on a
            // second thread while rows go in: `ChainWriter::insert_all`);
            // anything that must see the home as it stands first flushes
            // what is queued.
            let mut queued: Vec<Pending<'_>> = Vec::with_capacity(batch.rows.len());
            let flush = |writer: &mut ChainWriter<'_>, queued: &mut Vec<Pending<'_>>| {
                writer
                    .insert_all(queued, &|_, p| {
                        Ok(Prepared {
                            event: *p,
                            projection: None,
                        })
                    })
                    .map(|_| queued.clear())
            };
            for r in batch.rows.iter().filter(|r| r.seq > hw_seq) {
                // The producer is what the merge verified: the cell itself for
                // its own events. A relayed event keeps the producer its relay
                // recorded, but may not pass for one of the home's own.
                let claimed = batch.str(r.cell);
                if (r.origin.is_none() && claimed != cell_id) || claimed == self_id {
                    let id = Ulid(r.id);
                    flush(&mut writer, &mut queued)?;
                    let home_has_it = existing_with_id(writer.conn(), id)?
                        .is_some_and(|e| e.same_content(batch, r));
                    if !home_has_it {
                        return Err(Error::ForgedProducer {
                            cell_id: cell_id.to_string(),
                            seq: r.seq,
                            claimed: claimed.to_string(),
                        });
                    }
                }
                if blake3::Hash::from(r.prev) != link {
                    return Err(Error::BrokenBatch {
                        cell_id: cell_id.to_string(),
                        seq: r.seq,
                        reason: if r.seq == hw_seq + 1 {
                            "first event does not link to the recorded head".into()
                        } else {
                            "prev_hash does not link to the previous event".into()
                        },
                    });
                }
                let id = Ulid(r.id);
                let existing = if max_id.is_some_and(|m| id <= m) {
                    flush(&mut writer, &mut queued)?;
                    existing_with_id(writer.conn(), id)?
                } else {
                    max_id = Some(id);
                    None
                };
                match existing {
                    None => {
                        // What the home would have refused at append, it
                        // refuses at merge: an honest cell cannot hold it
                        // (its own append checked), so only a cell edited
                        // and re-linked can, and every reader of the home
                        // would trip over it later (the export, `log`).
                        admissible(batch, r).map_err(|e| {
                            Error::invalid(
                                "merge",
                                format!("event {} of cell {cell_id} cannot be stored: {e}", r.seq),
                            )
                        })?;
                        // The cell's own projection row, which verification
                        // checks against the payload (a mismatch rolls back).
                        let projection =
                            r.projections.iter().flatten().find_map(|p| p.as_ref().ok());
                        queued.push(Pending {
                            id,
                            ts_ms: r.ts_ms,
                            cell: batch.str(r.cell),
                            session: batch.str(r.session),
                            kind: batch.str(r.kind),
                            commit: r.commit.map(|c| batch.str(c)),
                            payload: batch.bytes(r.payload),
                            origin: Some(OriginRef {
                                store: cell_id,
                                seq: r.seq,
                                hash: &r.stored,
                            }),
                            projection,
                        });
                        ingested += 1;
                    }
                    Some(e) if e.same_content(batch, r) => already_present += 1,
                    Some(e) => {
                        return Err(Error::Equivocation {
                            id: id.to_string(),
                            cell_id: cell_id.to_string(),
                            existing_seq: e.seq,
                        });
                    }
                }
                link = blake3::Hash::from(r.stored);
            }
            flush(&mut writer, &mut queued)
        };
        let verified = std::thread::scope(|scope| -> Result<VerifyReport> {
            let (send, batches) = std::sync::mpsc::sync_channel::<Arc<Batch>>(4);
            let cell_side = scope.spawn(move || -> Result<VerifyReport> {
                let cell_tx = cell
                    .conn
                    .unchecked_transaction()
                    .map_err(Error::sqlite("starting a read transaction on the cell"))?;
                if hw_seq > 0 {
                    let in_cell: Option<blake3::Hash> = cell_tx
                        .query_row(
                            "SELECT hash FROM events WHERE seq = ?1",
                            [hw_seq as i64],
                            |r| crate::store::hash_col(r, 0),
                        )
                        .optional()
                        .map_err(Error::sqlite("reading the cell at the high-water mark"))?;
                    if in_cell != Some(hw_hash) {
                        return Err(Error::CellRewritten {
                            cell_id: cell_id.to_string(),
                            seq: hw_seq,
                        });
                    }
                }
                verify_conn_each(&cell_tx, cell_id, &vopts, &mut |batch| {
                    // A closed channel: the home side stopped on an error of
                    // its own, which is the one reported.
                    send.send(Arc::clone(batch))
                        .map_err(|_| Error::invalid("merge", "the home side stopped"))
                })
            });
            let mut home_side = Ok(());
            for batch in batches.iter() {
                home_side = ingest(&batch);
                if home_side.is_err() {
                    break;
                }
            }
            drop(batches);
            let cell_side = cell_side
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
            home_side.and(cell_side)
        })?;
        if let Some(fault) = verified.fault {
            return Err(Error::CellTampered {
                cell: cell_dir.to_path_buf(),
                fault,
            });
        }
        let head = writer.finish()?;
        tx.commit().map_err(Error::sqlite("committing the merge"))?;
        Ok(MergeReport {
            cell_id: cell_id.to_string(),
            cell_size: verified.size,
            high_water_before: hw_seq,
            high_water_after: verified.size.max(hw_seq),
            ingested,
            already_present,
            home_head: head,
        })
    }
}

struct Existing {
    seq: u64,
    ts_ms: i64,
    cell: String,
    session: String,
    kind: String,
    commit: Option<String>,
    payload: Vec<u8>,
}

impl Existing {
    fn same_content(&self, b: &Batch, r: &OwnedRow) -> bool {
        self.ts_ms == r.ts_ms
            && self.cell == b.str(r.cell)
            && self.session == b.str(r.session)
            && self.kind == b.str(r.kind)
            && self.commit.as_deref() == r.commit.map(|c| b.str(c))
            && self.payload == b.bytes(r.payload)
    }
}

fn existing_with_id(conn: &rusqlite::Connection, id: Ulid) -> Result<Option<Existing>> {
    conn.prepare_cached(
        // Only rows inside the chain: a row planted at seq ≤ 0 must not make a
        // cell's event look "already present" (rows inside the chain are
        // what verification covers before anything decides from them).
        "SELECT seq, ts_ms, cell, session, kind, commit_id, payload FROM events WHERE id = ?1 AND seq >= 1",
    )
    .and_then(|mut st| {
        st.query_row(params![&id.0.to_be_bytes()[..]], |r| {
            Ok(Existing {
                seq: r.get::<_, i64>(0)? as u64,
                ts_ms: r.get(1)?,
                cell: r.get(2)?,
                session: r.get(3)?,
                kind: r.get(4)?,
                commit: r.get(5)?,
                payload: match r.get_ref(6)? {
                    ValueRef::Blob(b) => b.to_vec(),
                    other => other.as_bytes().map(<[u8]>::to_vec).unwrap_or_default(),
                },
            })
        })
        .optional()
    })
    .map_err(Error::sqlite("looking up an event id"))
}
