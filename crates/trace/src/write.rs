//! Writing: the append doors of [`Store`] and the [`ChainWriter`] every
//! write (appends, merges) goes through.

use rusqlite::{Connection, OptionalExtension, params};
use ulid::Ulid;

use crate::encoding::{ChainHasher, HashInput, OriginRef, WriterKey};
use crate::error::{Error, Result};
use crate::event::{CommitId, Event, EventDraft, Receipt, validate_name};
use crate::projection::{Projection, Score, TestRun};
use crate::read::read_head;
use crate::schema;
use crate::store::{AppendOnce, Head, Store, now_ms, ulid_col};

/// One event ready to insert: everything but the chain position.
#[derive(Clone, Copy)]
pub(crate) struct Pending<'a> {
    pub id: Ulid,
    pub ts_ms: i64,
    pub cell: &'a str,
    pub session: &'a str,
    pub kind: &'a str,
    /// Canonical commit text (validated by `CommitId` or by verification).
    pub commit: Option<&'a str>,
    pub payload: &'a [u8],
    pub origin: Option<OriginRef<'a>>,
    pub projection: Option<&'a Projection>,
}

impl Pending<'_> {
    /// What the chain hash covers, for this event at `seq` after `prev_hash`.
    fn hash_input<'s>(&'s self, seq: u64, prev_hash: &'s [u8; 32]) -> HashInput<'s> {
        HashInput {
            seq,
            prev_hash,
            id: self.id.0,
            ts_ms: self.ts_ms,
            cell: self.cell,
            session: self.session,
            kind: self.kind,
            commit: self.commit,
            origin: self.origin,
            payload: self.payload,
        }
    }
}

impl Store {
    /// Appends one event.
    ///
    /// # Examples
    ///
    /// ```
    /// use ratchet_trace::{EventDraft, Store};
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let dir = tempfile::tempdir()?;
    /// let mut store = Store::create(dir.path(), Default::default())?;
    /// let draft = EventDraft::json("note", &serde_json::json!({"msg": "hello"}))?.session("s1");
    /// let receipt = store.append(draft)?;
    /// assert_eq!(receipt.seq, 1); // seqs count from 1
    ///
    /// let event = store.event_by_seq(1)?.expect("stored");
    /// assert_eq!((event.kind.as_str(), event.hash), ("note", receipt.hash));
    /// assert_eq!(event.payload_json()?["msg"], "hello");
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// As [`Store::append_batch`].
    pub fn append(&mut self, draft: EventDraft) -> Result<Receipt> {
        let mut receipts = self.append_batch([draft])?;
        receipts
            .pop()
            .ok_or_else(|| Error::invalid("batch", "internal: no receipt for the event"))
    }

    /// Appends events in one transaction: all of them or none.
    ///
    /// # Examples
    ///
    /// ```
    /// use ratchet_trace::{EventDraft, Store};
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let dir = tempfile::tempdir()?;
    /// let mut store = Store::create(dir.path(), Default::default())?;
    /// let drafts = (1..=3).map(|i| EventDraft::json("step", &i)).collect::<Result<Vec<_>, _>>()?;
    /// let receipts = store.append_batch(drafts)?;
    /// assert_eq!(receipts.iter().map(|r| r.seq).collect::<Vec<_>>(), [1, 2, 3]);
    ///
    /// // One bad draft (its payload is not JSON) and none of the batch is stored.
    /// let bad = vec![EventDraft::json("step", &4)?, EventDraft::raw("step", "not json")];
    /// assert!(store.append_batch(bad).is_err());
    /// assert_eq!(store.head()?.size, 3);
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// [`Error::InvalidInput`] (the reason names the batch position) or
    /// [`Error::PayloadTooLarge`] for a bad event; [`Error::KeyRequired`] or
    /// [`Error::WrongKey`] in a keyed store; [`Error::Sqlite`] if the write
    /// fails. Nothing is stored on any error.
    pub fn append_batch(
        &mut self,
        drafts: impl IntoIterator<Item = EventDraft>,
    ) -> Result<Vec<Receipt>> {
        let drafts: Vec<EventDraft> = drafts.into_iter().collect();
        let many = drafts.len() > 1;
        let position = |i: usize| many.then(|| format!("event #{i} of the batch"));
        match self.append_inner(drafts, None, 0, &position, None)? {
            AppendOnce::Appended(receipts) => Ok(receipts),
            AppendOnce::AlreadyAppended { .. } => Ok(Vec::new()),
        }
    }

    /// Appends (once, with a key) and returns also every event written,
    /// the `ingest` marker included, as stored: what a [`crate::Ledger`]
    /// folds without reading it back.
    ///
    /// `known_through`: the seq up to which the caller has already looked
    /// for the idempotency key (a ledger's verified view); the write
    /// transaction looks only past it, so a warm owner's check costs the
    /// events it has not seen, not the whole trace.
    pub(crate) fn append_events(
        &mut self,
        drafts: Vec<EventDraft>,
        once: Option<&str>,
        known_through: u64,
    ) -> Result<(AppendOnce, Vec<Event>)> {
        if let Some(key) = once {
            validate_name("idempotency key", key)?;
        }
        let many = drafts.len() > 1;
        let position = |i: usize| many.then(|| format!("event #{i} of the batch"));
        let mut written = Vec::new();
        let outcome =
            self.append_inner(drafts, once, known_through, &position, Some(&mut written))?;
        Ok((outcome, written))
    }

    /// Rebuilds the per-commit statistics kept on append (`commit_stats`)
    /// from the stored score rows, in one write transaction: the way out
    /// for a store whose statistics table was damaged (verification reports
    /// [`crate::FaultKind::SummaryMismatch`]) while its events are intact.
    /// No event or projection row is touched, and nothing is trusted that
    /// was not before: verification still re-derives every score row from
    /// its hashed event, so a rebuild from edited score rows still fails
    /// verification at the edited seq.
    ///
    /// # Errors
    /// [`Error::ReadOnly`], [`Error::SchemaAltered`], or [`Error::Sqlite`].
    pub fn rebuild_commit_stats(&mut self) -> Result<()> {
        let tx = schema::begin_write(
            &mut self.conn,
            &mut self.schema_checked,
            self.read_only.then_some(&self.dir),
            "starting to rebuild per-commit statistics",
        )?;
        tx.execute("DELETE FROM commit_stats", [])
            .map_err(Error::sqlite("clearing per-commit statistics"))?;
        crate::summary::rebuild(&tx)?;
        tx.commit()
            .map_err(Error::sqlite("committing rebuilt per-commit statistics"))
    }

    /// Appends the events of a JSON Lines text (one
    /// [`EventDraft::from_json_line`] per line; blank lines are skipped) in
    /// one transaction: all of them or none. What `ratchet append` does with
    /// its standard input.
    ///
    /// ```
    /// # let dir = tempfile::tempdir()?;
    /// let mut store = ratchet_trace::Store::create(dir.path(), Default::default())?;
    /// let lines = "{\"kind\": \"note\", \"payload\": {\"step\": 1}}\n\n\
    ///              {\"kind\": \"note\", \"session\": \"s\", \"payload\": [2]}\n";
    /// assert_eq!(store.append_json_lines(lines)?.len(), 2);
    /// let err = store.append_json_lines("{\"kind\": \"note\", \"payload\": 1}\n{\"kind\": \"note\"}").unwrap_err();
    /// assert!(err.to_string().contains("line 2"), "{err}");
    /// assert_eq!(store.head()?.size, 2, "nothing of the bad text was stored");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::InvalidInput`] naming the line (counted from 1) of the first
    /// line that is not an event or whose event is invalid; otherwise as
    /// [`Store::append_batch`]. Nothing is stored on any error.
    pub fn append_json_lines(&mut self, text: &str) -> Result<Vec<Receipt>> {
        let mut drafts = Vec::new();
        let mut line_of = Vec::new();
        for (i, line) in text.lines().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            let draft = EventDraft::from_json_line(line)
                .map_err(|e| at_position(e, &format!("line {}", i + 1)))?;
            drafts.push(draft);
            line_of.push(i + 1);
        }
        let position = |i: usize| line_of.get(i).map(|n| format!("line {n}"));
        match self.append_inner(drafts, None, 0, &position, None)? {
            AppendOnce::Appended(receipts) => Ok(receipts),
            AppendOnce::AlreadyAppended { .. } => Ok(Vec::new()),
        }
    }

    /// Appends `drafts` in one transaction unless a batch with the same
    /// idempotency `key` was appended before by this store (by any process:
    /// the check runs inside the write transaction; a marker merged in from
    /// a cell says nothing about what this store holds and is ignored). The batch is followed by a reserved
    /// `ingest` event whose session is `ingest:<key>`, which is how a second
    /// attempt recognizes the first: a report ingested twice is counted once.
    ///
    /// # Errors
    /// As [`Store::append_batch`]; [`Error::InvalidInput`] for an empty or
    /// over-long key.
    pub fn append_once(&mut self, key: &str, drafts: Vec<EventDraft>) -> Result<AppendOnce> {
        validate_name("idempotency key", key)?;
        let many = drafts.len() > 1;
        let position = |i: usize| many.then(|| format!("event #{i} of the batch"));
        self.append_inner(drafts, Some(key), 0, &position, None)
    }

    #[tracing::instrument(name = "trace.append", skip_all, fields(store = %self.store_id))]
    /// `position(i)` names the i-th draft in an error (`None`: the error
    /// goes out as it is).
    fn append_inner(
        &mut self,
        mut drafts: Vec<EventDraft>,
        once: Option<&str>,
        known_through: u64,
        position: &(dyn Fn(usize) -> Option<String> + Sync),
        written: Option<&mut Vec<Event>>,
    ) -> Result<AppendOnce> {
        self.check_writer()?;
        let once_session = once.map(|k| format!("ingest:{k}"));
        if let Some(session) = &once_session {
            drafts.push(
                EventDraft::reserved(
                    crate::event::ReservedKind::Ingest,
                    &serde_json::json!({ "key": once, "events": drafts.len() }),
                )?
                .session(session.clone()),
            );
        }
        if drafts.is_empty() {
            return Ok(AppendOnce::Appended(Vec::new()));
        }
        let ts_ms = now_ms();
        let cell = self.store_id.clone();
        let tx = schema::begin_write(
            &mut self.conn,
            &mut self.schema_checked,
            self.read_only.then_some(&self.dir),
            "starting an append transaction",
        )?;
        if let Some(session) = &once_session {
            let earlier: Option<i64> = tx
                .prepare_cached(
                    "SELECT seq FROM events WHERE seq > ?3 AND kind = ?1 AND session = ?2 AND seq >= 1
                       AND origin_store IS NULL ORDER BY seq LIMIT 1",
                )
                .and_then(|mut st| {
                    st.query_row(
                        params![
                            crate::event::ReservedKind::Ingest.as_str(),
                            session,
                            known_through as i64
                        ],
                        |r| r.get(0),
                    )
                    .optional()
                })
                .map_err(Error::sqlite("looking up an idempotency key"))?;
            if let Some(seq) = earlier {
                return Ok(AppendOnce::AlreadyAppended { seq: seq as u64 });
            }
        }
        let mut id = allocate_ids(&tx, ts_ms, drafts.len())?;
        let mut writer = ChainWriter::new(
            &tx,
            &mut self.hasher,
            self.options.writer_key.as_ref(),
            &cell,
        )?;
        let mut ids = Vec::with_capacity(drafts.len());
        for _ in &drafts {
            ids.push(id);
            id = id
                .increment()
                .ok_or_else(|| Error::invalid("id", "ULID space exhausted for this millisecond"))?;
        }
        // Each draft is validated and projected as it is prepared, on the
        // pipeline's hashing thread for a long batch; an invalid one stops
        // the batch and the transaction rolls back, so nothing is stored.
        let max_payload = self.options.max_inline_payload;
        let head_before = writer.head;
        let mut receipts = writer.insert_all(&drafts, &|i, d: &EventDraft| {
            let checked = d
                .validate(max_payload)
                .and_then(|_| Projection::from_event(&d.kind, d.commit.as_ref(), &d.payload));
            let projection = checked.map_err(|e| match position(i) {
                Some(at) => at_position(e, &at),
                None => e,
            })?;
            Ok(Prepared {
                event: Pending {
                    id: ids[i],
                    ts_ms,
                    cell: &cell,
                    session: &d.session,
                    kind: &d.kind,
                    commit: d.commit.as_ref().map(CommitId::as_str),
                    payload: &d.payload,
                    origin: None,
                    projection: None,
                },
                projection,
            })
        })?;
        let head = writer.finish()?;
        tx.commit().map_err(Error::sqlite("committing an append"))?;
        tracing::debug!(events = receipts.len(), head = head.size, "appended");
        if let Some(written) = written {
            let mut prev = head_before.hash;
            for (d, r) in drafts.into_iter().zip(&receipts) {
                written.push(Event {
                    seq: r.seq,
                    id: r.id,
                    ts_ms,
                    cell: cell.clone(),
                    session: d.session,
                    kind: d.kind,
                    commit: d.commit,
                    payload: d.payload,
                    origin: None,
                    prev_hash: prev,
                    hash: r.hash,
                    mac: self.options.writer_key.as_ref().map(|k| k.mac(&r.hash)),
                });
                prev = r.hash;
            }
        }
        if once_session.is_some() {
            receipts.pop();
        }
        Ok(AppendOnce::Appended(receipts))
    }

    /// Records one score (event kind `score`, projected into the scores table).
    ///
    /// # Errors
    /// [`Error::InvalidInput`] naming the field for a NaN, infinite or negative
    /// value or a bad name; otherwise as [`Store::append_batch`].
    pub fn record_score(&mut self, score: &Score, session: &str) -> Result<Receipt> {
        self.append(score.to_draft()?.session(session))
    }

    /// Records several scores in one transaction.
    ///
    /// # Errors
    /// As [`Store::record_score`]; nothing is stored if any score is invalid.
    pub fn record_scores(&mut self, scores: &[Score], session: &str) -> Result<Vec<Receipt>> {
        let drafts = scores
            .iter()
            .map(|s| Ok(s.to_draft()?.session(session)))
            .collect::<Result<Vec<_>>>()?;
        self.append_batch(drafts)
    }

    /// Records one test run (event kind `test_run`, projected into the test_runs table).
    ///
    /// # Errors
    /// As [`Store::record_score`].
    pub fn record_test_run(&mut self, run: &TestRun, session: &str) -> Result<Receipt> {
        self.append(run.to_draft()?.session(session))
    }
}

/// The first of `n` consecutive ULIDs for this store's next events: the
/// current time with fresh randomness, or one past this store's own latest
/// id if the clock has not moved past it (the store's own ids stay strictly
/// increasing, across processes). Ids merged in from cells take no part:
/// a cell whose events carry the largest ULID (or any id it likes) cannot
/// exhaust or steer the home's ids; a drawn range that a merged id already
/// occupies is drawn again (ids are unique in a store).
fn allocate_ids(tx: &rusqlite::Transaction<'_>, ts_ms: i64, n: usize) -> Result<Ulid> {
    // Own events only, newest first by seq: the walk passes over merged
    // events appended since this store's last own one.
    let last_own: Option<Ulid> = tx
        .prepare_cached(
            "SELECT id FROM events WHERE seq >= 1 AND origin_store IS NULL ORDER BY seq DESC LIMIT 1",
        )
        .and_then(|mut st| st.query_row([], |r| ulid_col(r, 0)).optional())
        .map_err(Error::sqlite("reading this store's last id"))?;
    const DRAWS: usize = 16;
    for draw in 0..DRAWS {
        let first = fresh_ulid(ts_ms, last_own, draw > 0)?;
        let last = Ulid(
            first
                .0
                .checked_add(n.saturating_sub(1) as u128)
                .ok_or_else(|| Error::invalid("id", "ULID space exhausted for this millisecond"))?,
        );
        let taken: bool = tx
            .prepare_cached("SELECT EXISTS (SELECT 1 FROM events WHERE id BETWEEN ?1 AND ?2)")
            .and_then(|mut st| {
                st.query_row(
                    params![&first.0.to_be_bytes()[..], &last.0.to_be_bytes()[..]],
                    |r| r.get(0),
                )
            })
            .map_err(Error::sqlite("checking that new ids are free"))?;
        if !taken {
            return Ok(first);
        }
    }
    Err(Error::invalid(
        "id",
        format!("{DRAWS} fresh id ranges in a row were already taken by merged events"),
    ))
}

/// A ULID at `ts_ms` with fresh randomness, or past `last` (this store's
/// own latest id) if the clock has not moved past it; `redraw` adds fresh
/// randomness to that step too (a range already taken is drawn again).
fn fresh_ulid(ts_ms: i64, last: Option<Ulid>, redraw: bool) -> Result<Ulid> {
    let mut random_bytes = [0u8; 16];
    getrandom::fill(&mut random_bytes).map_err(|e| Error::Randomness {
        reason: e.to_string(),
    })?;
    let random = u128::from_le_bytes(random_bytes);
    let candidate = Ulid::from_parts(ts_ms.max(0) as u64, random);
    match last {
        Some(l) if candidate <= l => {
            let step = if redraw { 1 + (random >> 96) } else { 1 };
            l.0.checked_add(step)
                .map(Ulid)
                .ok_or_else(|| Error::invalid("id", "ULID space exhausted for this millisecond"))
        }
        _ => Ok(candidate),
    }
}

/// Appends events to the chain inside an open write transaction, holding the
/// prepared INSERT for the whole batch.
pub(crate) struct ChainWriter<'c> {
    conn: &'c Connection,
    insert: rusqlite::CachedStatement<'c>,
    hasher: &'c mut ChainHasher,
    key: Option<&'c WriterKey>,
    pub head: Head,
    /// Per-commit statistics touched by this transaction's scores, written
    /// by [`ChainWriter::finish`].
    summaries: crate::summary::Summaries,
}

impl<'c> ChainWriter<'c> {
    /// Reads the head (inside the caller's transaction) and prepares the insert.
    pub fn new(
        conn: &'c Connection,
        hasher: &'c mut ChainHasher,
        key: Option<&'c WriterKey>,
        store_id: &'c str,
    ) -> Result<Self> {
        let head = read_head(conn, store_id)?;
        let insert = conn
            .prepare_cached(
                "INSERT INTO events (seq, id, ts_ms, cell, session, kind, commit_id, payload,
                                     origin_store, origin_seq, origin_hash, prev_hash, hash, mac)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14)",
            )
            .map_err(Error::sqlite("preparing the event insert"))?;
        Ok(ChainWriter {
            conn,
            insert,
            hasher,
            key,
            head,
            summaries: crate::summary::Summaries::default(),
        })
    }

    /// Writes the per-commit statistics this writer's scores touched and
    /// returns the head; call it before the transaction commits.
    pub fn finish(self) -> Result<Head> {
        self.summaries.write(self.conn)?;
        Ok(self.head)
    }

    /// The connection (inside the write transaction).
    pub fn conn(&self) -> &'c Connection {
        self.conn
    }

    /// Inserts one event after the head (and its projection), advancing the head.
    pub fn insert(&mut self, e: &Pending<'_>) -> Result<Receipt> {
        let hash = self
            .hasher
            .hash(&e.hash_input(self.head.size + 1, self.head.hash.as_bytes()));
        let mac = self.key.map(|k| k.mac(&hash));
        self.insert_hashed(e, hash, mac)
    }

    /// Prepares each of `sources` (`prepare` checks it and names its row)
    /// and inserts it, in order, as [`ChainWriter::insert`] would one by
    /// one; the first error stops the run. A long run is pipelined: a second
    /// thread prepares and hashes ahead (chain hashes, MACs) while this one
    /// inserts rows, so on two cores validation and hashing — a third of an
    /// append's time on one — cost only the hand-over. The chain is the same
    /// either way: the hashes depend on the head and the events, never on
    /// SQLite.
    pub fn insert_all<'a, S: Sync>(
        &mut self,
        sources: &'a [S],
        prepare: &(dyn Fn(usize, &'a S) -> Result<Prepared<'a>> + Sync),
    ) -> Result<Vec<Receipt>> {
        /// Shorter runs are not worth a thread (spawning one costs about as
        /// much as preparing and hashing 50 events).
        const PIPELINE_MIN: usize = 256;
        /// Events handed over at a time.
        const CHUNK: usize = 128;
        if sources.len() < PIPELINE_MIN
            || std::thread::available_parallelism().map_or(1, usize::from) < 2
        {
            let mut receipts = Vec::with_capacity(sources.len());
            for (i, source) in sources.iter().enumerate() {
                let ready = prepare(i, source)?;
                receipts.push(self.insert(&ready.pending())?);
            }
            return Ok(receipts);
        }
        let start = self.head;
        let key = self.key;
        let mut hasher = self.hasher.clone();
        std::thread::scope(|scope| {
            let (send, ready) = std::sync::mpsc::sync_channel::<Result<Vec<Hashed<'a>>>>(16);
            scope.spawn(move || {
                let mut prev = start.hash;
                let mut seq = start.size;
                let mut index = 0;
                for chunk in sources.chunks(CHUNK) {
                    let mut out = Vec::with_capacity(chunk.len());
                    for source in chunk {
                        let prepared = match prepare(index, source) {
                            Ok(p) => p,
                            Err(e) => {
                                let _ = send.send(Ok(out)).and_then(|_| send.send(Err(e)));
                                return;
                            }
                        };
                        index += 1;
                        seq += 1;
                        let hash = hasher.hash(&prepared.event.hash_input(seq, prev.as_bytes()));
                        out.push(Hashed {
                            prepared,
                            hash,
                            mac: key.map(|k| k.mac(&hash)),
                        });
                        prev = hash;
                    }
                    // A closed channel means the inserting side stopped on
                    // an error: nothing more to do.
                    if send.send(Ok(out)).is_err() {
                        return;
                    }
                }
            });
            let mut receipts = Vec::with_capacity(sources.len());
            for chunk in ready {
                for h in chunk? {
                    receipts.push(self.insert_hashed(&h.prepared.pending(), h.hash, h.mac)?);
                }
            }
            if receipts.len() != sources.len() {
                return Err(Error::invalid(
                    "batch",
                    "internal: the preparing thread stopped early",
                ));
            }
            Ok(receipts)
        })
    }

    fn insert_hashed(
        &mut self,
        e: &Pending<'_>,
        hash: blake3::Hash,
        mac: Option<blake3::Hash>,
    ) -> Result<Receipt> {
        let seq = self.head.size + 1;
        self.insert
            .execute(params![
                seq as i64,
                &e.id.0.to_be_bytes()[..],
                e.ts_ms,
                e.cell,
                e.session,
                e.kind,
                e.commit,
                e.payload,
                e.origin.map(|o| o.store),
                e.origin.map(|o| o.seq as i64),
                e.origin.map(|o| &o.hash[..]),
                &self.head.hash.as_bytes()[..],
                &hash.as_bytes()[..],
                mac.as_ref().map(|m| &m.as_bytes()[..]),
            ])
            .map_err(Error::sqlite("inserting an event"))?;
        if let Some(p) = e.projection {
            p.insert(self.conn, seq)?;
            if let Projection::Score(s) = p {
                self.summaries.push_onto(
                    self.conn,
                    &s.scorer,
                    &s.scorer_version,
                    s.commit.as_str(),
                    s.value,
                    seq,
                )?;
            }
        }
        self.head = Head { size: seq, hash };
        Ok(Receipt {
            seq,
            id: e.id,
            hash,
        })
    }
}

/// Puts where a bad input was (`line 3`, `event #2 of the batch`) in front of
/// an [`Error::InvalidInput`]'s reason; other errors pass unchanged.
fn at_position(e: Error, at: &str) -> Error {
    match e {
        Error::InvalidInput { field, reason } => Error::InvalidInput {
            field,
            reason: format!("{at}: {reason}"),
        },
        e => e,
    }
}

/// One event ready to insert, with its projection row when the preparation
/// derived one (an event that borrows its row leaves this `None`).
pub(crate) struct Prepared<'a> {
    pub event: Pending<'a>,
    pub projection: Option<Projection>,
}

impl<'a> Prepared<'a> {
    fn pending(&self) -> Pending<'_> {
        Pending {
            projection: self.event.projection.or(self.projection.as_ref()),
            ..self.event
        }
    }
}

/// A prepared event with its chain hash and, in a keyed store, its MAC.
struct Hashed<'a> {
    prepared: Prepared<'a>,
    hash: blake3::Hash,
    mac: Option<blake3::Hash>,
}
