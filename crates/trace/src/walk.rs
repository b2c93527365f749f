//! The walk: one pass over the chain in a read transaction, pipelined
//! across threads, that checks every row and folds the checked bytes into
//! the verified view.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, mpsc};

use rusqlite::{Connection, OptionalExtension, params};

use crate::encoding::{ChainHasher, genesis_hash};
use crate::error::{Error, Result};
use crate::projection::{
    Projection, SCORE_COLUMNS, TEST_RUN_COLUMNS, score_from_row, test_run_from_row,
};
use crate::rows::{Batch, Cursor, Reader, RowCheck, Sink};
use crate::store::{EVENT_COLUMNS, Head};
use crate::verify::{Fault, FaultKind, VerifyOptions, VerifyReport};

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
struct Folder<'v, 's> {
    view: Option<&'v mut Sink<'s>>,
    in_flight: BTreeMap<usize, Arc<Batch>>,
    done: BTreeMap<usize, Vec<Option<Projection>>>,
    next: usize,
    faulted: bool,
}

impl Folder<'_, '_> {
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
                    view(&batch, row, projection);
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
    fold: Option<&mut Sink<'_>>,
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
        let mut note = |found: Checked, folder: &mut Folder<'_, '_>| {
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
    // The row at a fault's seq was read too; at that seq a repeated id
    // comes after what the reader checks first (seq, shape, link) and
    // before the rest, as in a row-by-row check.
    let reader_first = |k: &FaultKind| {
        matches!(
            k,
            FaultKind::Missing { .. } | FaultKind::MalformedRow { .. } | FaultKind::BrokenLink
        )
    };
    let valid_to = chosen
        .as_ref()
        .map_or(reader.expected.saturating_sub(1), |(f, _)| {
            if reader_first(&f.kind) {
                f.seq - 1
            } else {
                f.seq
            }
        });
    if let Some(dup) = duplicate_id(conn, whole, valid_to, reader.new_ids.as_ref())?
        && chosen.as_ref().is_none_or(|(f, _)| dup.0.seq <= f.seq)
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
