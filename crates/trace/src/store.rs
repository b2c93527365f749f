//! [`Store`]: opening, appending and querying.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use rusqlite::types::ValueRef;
use rusqlite::{Connection, OpenFlags, OptionalExtension, Row, TransactionBehavior, params};
use serde::Serialize;
use ulid::Ulid;

use crate::encoding::{ChainHasher, HashInput, OriginRef, WriterKey, genesis_hash};
use crate::error::{Error, Result};
use crate::event::{
    CommitId, DEFAULT_MAX_INLINE_PAYLOAD, Event, EventDraft, Origin, Receipt, validate_name,
};
use crate::projection::{Projection, Score, TestRun};
use crate::schema::{self, Durability};

/// File name of the SQLite database inside a store directory.
pub const DB_FILE: &str = "trace.db";

/// How to open a store. Build with [`StoreOptions::default`] and the setters.
#[derive(Debug, Clone)]
pub struct StoreOptions {
    pub(crate) durability: Durability,
    pub(crate) busy_timeout: Duration,
    pub(crate) max_inline_payload: usize,
    pub(crate) writer_key: Option<WriterKey>,
}

impl Default for StoreOptions {
    fn default() -> Self {
        StoreOptions {
            durability: Durability::Full,
            busy_timeout: Duration::from_secs(60),
            max_inline_payload: DEFAULT_MAX_INLINE_PAYLOAD,
            writer_key: None,
        }
    }
}

impl StoreOptions {
    /// Sets the durability of commits (default [`Durability::Full`]).
    pub fn durability(mut self, d: Durability) -> Self {
        self.durability = d;
        self
    }

    /// How long a write waits for another writer's lock (default 60 s).
    pub fn busy_timeout(mut self, t: Duration) -> Self {
        self.busy_timeout = t;
        self
    }

    /// Largest inline payload accepted, in bytes (default 64 KiB).
    pub fn max_inline_payload(mut self, bytes: usize) -> Self {
        self.max_inline_payload = bytes;
        self
    }

    /// The writer key: required to append to a keyed store, and makes
    /// [`Store::create`] create a keyed store.
    pub fn writer_key(mut self, key: WriterKey) -> Self {
        self.writer_key = Some(key);
        self
    }
}

/// The chain head: how many events the store holds and the hash of the last.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Head {
    /// Number of events (the seq of the last one).
    pub size: u64,
    /// Hash of the last event, or the genesis hash of an empty store.
    #[serde(serialize_with = "crate::store::ser_hash")]
    pub hash: blake3::Hash,
}

pub(crate) fn ser_hash<S: serde::Serializer>(
    h: &blake3::Hash,
    s: S,
) -> std::result::Result<S::Ok, S::Error> {
    s.serialize_str(h.to_hex().as_str())
}

/// Which events [`Store::events_matching`] returns: every condition set
/// must hold.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EventFilter {
    /// Only events of this kind.
    pub kind: Option<String>,
    /// Only events under this commit.
    pub commit: Option<CommitId>,
    /// Only score events of this scorer.
    pub scorer: Option<String>,
}

/// What [`Store::append_once`] did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum AppendOnce {
    /// The batch was appended (receipts of the batch's own events).
    Appended(Vec<Receipt>),
    /// A batch with the same key was appended before; nothing was stored.
    AlreadyAppended {
        /// Seq of the earlier batch's `ingest` event.
        seq: u64,
    },
}

/// A ratchet trace store: a directory holding `trace.db` and `blobs/`.
///
/// A `Store` owns one SQLite connection. Open one per thread or process;
/// readers never block the writer (WAL), and writers queue on `busy_timeout`.
///
/// **Read rule.** Every query reads the tables themselves, by seq or in seq
/// order, and never through a secondary index (`NOT INDEXED`): verification
/// scans exactly those b-trees, so an index made to disagree with its table
/// (possible with `writable_schema`) cannot change what a decision reads.
#[derive(Debug)]
pub struct Store {
    pub(crate) dir: PathBuf,
    pub(crate) conn: Connection,
    pub(crate) store_id: String,
    pub(crate) key_id: Option<String>,
    pub(crate) options: StoreOptions,
    pub(crate) hasher: ChainHasher,
    /// SQLite's schema cookie when the schema was last found unaltered.
    pub(crate) schema_checked: Option<i64>,
    /// Opened read-only: every write is refused before it starts.
    pub(crate) read_only: bool,
}

/// Columns read for an event, in this order, by [`event_from_row`] (a macro
/// so hot queries are `concat!`ed at compile time, not formatted per call).
macro_rules! event_columns {
    () => {
        "seq, id, ts_ms, cell, session, kind, commit_id, payload, \
         origin_store, origin_seq, origin_hash, prev_hash, hash, mac"
    };
}
pub(crate) const EVENT_COLUMNS: &str = event_columns!();

pub(crate) fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

pub(crate) fn conv_err(i: usize, what: &str) -> rusqlite::Error {
    rusqlite::Error::FromSqlConversionFailure(
        i,
        rusqlite::types::Type::Blob,
        format!("malformed {what}").into(),
    )
}

pub(crate) fn hash_col(row: &Row<'_>, i: usize) -> rusqlite::Result<blake3::Hash> {
    let b: [u8; 32] = match row.get_ref(i)? {
        ValueRef::Blob(b) => b.try_into().map_err(|_| conv_err(i, "hash"))?,
        _ => return Err(conv_err(i, "hash")),
    };
    Ok(blake3::Hash::from(b))
}

pub(crate) fn ulid_col(row: &Row<'_>, i: usize) -> rusqlite::Result<Ulid> {
    let b: [u8; 16] = match row.get_ref(i)? {
        ValueRef::Blob(b) => b.try_into().map_err(|_| conv_err(i, "id"))?,
        _ => return Err(conv_err(i, "id")),
    };
    Ok(Ulid(u128::from_be_bytes(b)))
}

/// Reads an [`Event`] from a row selected with [`EVENT_COLUMNS`].
pub(crate) fn event_from_row(row: &Row<'_>) -> rusqlite::Result<Event> {
    let commit: Option<String> = row.get(6)?;
    let commit = commit
        .map(|c| CommitId::parse(&c))
        .transpose()
        .map_err(|e| {
            rusqlite::Error::FromSqlConversionFailure(6, rusqlite::types::Type::Text, Box::new(e))
        })?;
    let origin_store: Option<String> = row.get(8)?;
    let origin = match origin_store {
        None => None,
        Some(store) => Some(Origin {
            store,
            seq: row.get::<_, i64>(9)? as u64,
            hash: hash_col(row, 10)?,
        }),
    };
    let mac = match row.get_ref(13)? {
        ValueRef::Null => None,
        _ => Some(hash_col(row, 13)?),
    };
    Ok(Event {
        seq: row.get::<_, i64>(0)? as u64,
        id: ulid_col(row, 1)?,
        ts_ms: row.get(2)?,
        cell: row.get(3)?,
        session: row.get(4)?,
        kind: row.get(5)?,
        commit,
        payload: row.get(7)?,
        origin,
        prev_hash: hash_col(row, 11)?,
        hash: hash_col(row, 12)?,
        mac,
    })
}

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
    /// Creates a new store in `dir` (made if missing). With a writer key in
    /// `options`, the store is keyed: every event carries a MAC and appending
    /// needs the key.
    ///
    /// # Errors
    /// [`Error::StoreExists`] if `dir` already holds a store; [`Error::Io`] or
    /// [`Error::Sqlite`] if the files cannot be made.
    pub fn create(dir: impl AsRef<Path>, options: StoreOptions) -> Result<Store> {
        let dir = dir.as_ref().to_path_buf();
        let db = dir.join(DB_FILE);
        if db.exists() {
            return Err(Error::StoreExists { path: dir });
        }
        std::fs::create_dir_all(&dir).map_err(Error::io(&dir))?;
        // A store usually lives inside the repository it measures: keep git
        // from ever seeing it as an uncommitted change (this file ignores
        // everything in the directory, itself included).
        let ignore = dir.join(".gitignore");
        if !ignore.exists() {
            std::fs::write(&ignore, "*\n").map_err(Error::io(&ignore))?;
        }
        let mut conn = Connection::open_with_flags(
            &db,
            OpenFlags::SQLITE_OPEN_READ_WRITE
                | OpenFlags::SQLITE_OPEN_CREATE
                | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )
        .map_err(Error::sqlite("creating the database file"))?;
        schema::configure(&conn, options.durability, options.busy_timeout, false)?;
        let store_id = Ulid::new().to_string();
        let key_id = options.writer_key.as_ref().map(WriterKey::id_hex);
        {
            let tx = conn
                .transaction_with_behavior(TransactionBehavior::Immediate)
                .map_err(Error::sqlite("starting the creation transaction"))?;
            let app: i64 = tx
                .pragma_query_value(None, "application_id", |r| r.get(0))
                .map_err(Error::sqlite("reading the header"))?;
            if app != 0 {
                return Err(Error::StoreExists { path: dir });
            }
            tx.execute_batch(schema::DDL)
                .and_then(|_| tx.execute_batch(crate::summary::DDL))
                .and_then(|_| tx.execute_batch(&schema::all_triggers()))
                .map_err(Error::sqlite("creating the schema"))?;
            let mut meta = vec![
                ("format", "ratchet-trace".to_string()),
                ("store_id", store_id.clone()),
                ("created_ms", now_ms().to_string()),
            ];
            if let Some(k) = &key_id {
                meta.push(("writer_key_id", k.clone()));
            }
            for (k, v) in meta {
                tx.execute(
                    "INSERT INTO meta (key, value) VALUES (?1, ?2)",
                    params![k, v],
                )
                .map_err(Error::sqlite("writing store metadata"))?;
            }
            tx.execute_batch(&format!(
                "PRAGMA application_id = {}; PRAGMA user_version = {};",
                schema::APPLICATION_ID,
                schema::SCHEMA_VERSION
            ))
            .map_err(Error::sqlite("writing the header"))?;
            tx.commit()
                .map_err(Error::sqlite("committing the new store"))?;
        }
        tracing::info!(store = %store_id, dir = %dir.display(), keyed = key_id.is_some(), "created trace store");
        Ok(Store {
            dir,
            conn,
            hasher: ChainHasher::new(&store_id),
            store_id,
            key_id,
            options,
            schema_checked: None,
            read_only: false,
        })
    }

    /// Opens an existing store.
    ///
    /// # Errors
    /// [`Error::StoreMissing`] if there is none at `dir`; [`Error::NotAStore`] if
    /// the file is not a ratchet store; [`Error::SchemaTooNew`] if a newer
    /// ratchet wrote it.
    pub fn open(dir: impl AsRef<Path>, options: StoreOptions) -> Result<Store> {
        Self::open_mode(dir.as_ref(), options, false)
    }

    /// Opens an existing store for reading only: every query, verification
    /// and checkpoint works, every write fails with [`Error::ReadOnly`].
    /// Works on a store whose file or directory is not writable (a copy
    /// handed to an auditor, a mounted snapshot); [`Store::open`] falls back
    /// to this by itself when the file cannot be written.
    ///
    /// # Errors
    /// As [`Store::open`].
    pub fn open_read_only(dir: impl AsRef<Path>, options: StoreOptions) -> Result<Store> {
        Self::open_mode(dir.as_ref(), options, true)
    }

    fn open_mode(dir: &Path, options: StoreOptions, read_only: bool) -> Result<Store> {
        let dir = dir.to_path_buf();
        let db = dir.join(DB_FILE);
        if !db.is_file() {
            return Err(Error::StoreMissing { path: dir });
        }
        let mode = if read_only {
            OpenFlags::SQLITE_OPEN_READ_ONLY
        } else {
            OpenFlags::SQLITE_OPEN_READ_WRITE
        };
        let mut conn = Connection::open_with_flags(&db, mode | OpenFlags::SQLITE_OPEN_NO_MUTEX)
            .map_err(|e| schema::not_a_store(&db, e))?;
        // SQLite opens a write-protected file read-only without saying so.
        let read_only = read_only
            || conn
                .is_readonly(rusqlite::MAIN_DB)
                .map_err(Error::sqlite("opening the store"))?;
        match schema::check_header(&conn, &db) {
            // A WAL database in a directory nobody may write cannot get its
            // shared-memory file: read it as immutable (nothing can change
            // it while this process reads, for nobody can write there).
            Err(_) if read_only => {
                conn = schema::open_immutable(&db)?;
                schema::check_header(&conn, &db)?;
            }
            header => header?,
        }
        schema::configure(&conn, options.durability, options.busy_timeout, read_only).map_err(
            |e| match e {
                Error::Sqlite { source, .. } => schema::not_a_store(&db, source),
                e => e,
            },
        )?;
        let meta = |key: &str| -> Result<Option<String>> {
            conn.query_row("SELECT value FROM meta WHERE key = ?1", [key], |r| r.get(0))
                .optional()
                .map_err(Error::sqlite("reading store metadata"))
        };
        let store_id = meta("store_id")?.ok_or_else(|| Error::NotAStore {
            path: db.clone(),
            reason: "the meta table has no store_id".into(),
        })?;
        let key_id = meta("writer_key_id")?;
        // A version-1 store is upgraded on its first writable open (the
        // version is read again inside the write transaction: another
        // process may have upgraded it meanwhile).
        let version: i64 = conn
            .pragma_query_value(None, "user_version", |r| r.get(0))
            .map_err(Error::sqlite("reading the schema version"))?;
        if !read_only && version < schema::SCHEMA_VERSION {
            let tx = conn
                .transaction_with_behavior(TransactionBehavior::Immediate)
                .map_err(Error::sqlite("upgrading the schema"))?;
            if schema::upgrade_in_place(&tx)? {
                tx.commit().map_err(Error::sqlite("upgrading the schema"))?;
                tracing::info!(store = %store_id, version = schema::SCHEMA_VERSION, "upgraded the store's schema");
            }
        }
        Ok(Store {
            dir,
            conn,
            hasher: ChainHasher::new(&store_id),
            store_id,
            key_id,
            options,
            schema_checked: None,
            read_only,
        })
    }

    /// Where the store of work done in `start` lives by convention: `.ratchet`
    /// in the root of the enclosing git work tree (the nearest ancestor of
    /// `start` holding `.git`), else `.ratchet` in `start` itself. Nothing
    /// is opened or created; a path relative to the process's working
    /// directory stays relative.
    ///
    /// ```
    /// let dir = tempfile::tempdir()?;
    /// std::fs::create_dir_all(dir.path().join(".git"))?;
    /// std::fs::create_dir_all(dir.path().join("src/deep"))?;
    /// let found = ratchet_trace::Store::discover(dir.path().join("src/deep"));
    /// assert_eq!(found, dir.path().join(".ratchet"));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn discover(start: impl AsRef<Path>) -> PathBuf {
        let start = start.as_ref();
        start
            .ancestors()
            .find(|d| d.join(".git").exists())
            .unwrap_or(start)
            .join(".ratchet")
    }

    /// Whether this store was opened for reading only.
    pub fn is_read_only(&self) -> bool {
        self.read_only
    }

    /// Opens the store at `dir`, creating it if there is none.
    ///
    /// # Errors
    /// As [`Store::open`] and [`Store::create`].
    pub fn open_or_create(dir: impl AsRef<Path>, options: StoreOptions) -> Result<Store> {
        match Store::create(dir.as_ref(), options.clone()) {
            Err(Error::StoreExists { .. }) => Store::open(dir, options),
            other => other,
        }
    }

    /// The store's id (a ULID); also its cell id and its checkpoint origin.
    pub fn id(&self) -> &str {
        &self.store_id
    }

    /// The store directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// [`WriterKey::authenticate`] with the writer key this store was opened
    /// with (`None` when it was opened without one).
    pub fn authenticate(&self, context: &'static str, bytes: &[u8]) -> Option<blake3::Hash> {
        self.options
            .writer_key
            .as_ref()
            .map(|k| k.authenticate(context, bytes))
    }

    /// The id of the writer key, if the store is keyed.
    pub fn writer_key_id(&self) -> Option<&str> {
        self.key_id.as_deref()
    }

    /// The hash the first event chains from.
    pub fn genesis(&self) -> blake3::Hash {
        genesis_hash(&self.store_id)
    }

    /// Checks a draft the way [`Store::append`] would, without writing: lets a
    /// caller report every bad record of an input before storing any.
    ///
    /// # Errors
    /// [`Error::InvalidInput`] or [`Error::PayloadTooLarge`], as `append` would.
    pub fn validate_draft(&self, draft: &EventDraft) -> Result<()> {
        draft.validate(self.options.max_inline_payload)?;
        Projection::from_event(&draft.kind, draft.commit.as_ref(), &draft.payload).map(|_| ())
    }

    fn check_writer(&self) -> Result<()> {
        match (&self.key_id, &self.options.writer_key) {
            (None, None) => Ok(()),
            (Some(_), None) => Err(Error::KeyRequired),
            (None, Some(_)) => Err(Error::InvalidKey {
                reason: "this store was created without a writer key; open it without one".into(),
            }),
            (Some(expected), Some(k)) if *expected != k.id_hex() => Err(Error::WrongKey {
                expected: expected.clone(),
                given: k.id_hex(),
            }),
            _ => Ok(()),
        }
    }

    /// Appends one event.
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
        match self.append_inner(drafts, None, &position, None)? {
            AppendOnce::Appended(receipts) => Ok(receipts),
            AppendOnce::AlreadyAppended { .. } => Ok(Vec::new()),
        }
    }

    /// Appends (once, with a key) and returns also every event written,
    /// the `ingest` marker included, as stored: what a [`crate::Ledger`]
    /// folds without reading it back.
    pub(crate) fn append_events(
        &mut self,
        drafts: Vec<EventDraft>,
        once: Option<&str>,
    ) -> Result<(AppendOnce, Vec<Event>)> {
        if let Some(key) = once {
            validate_name("idempotency key", key)?;
        }
        let many = drafts.len() > 1;
        let position = |i: usize| many.then(|| format!("event #{i} of the batch"));
        let mut written = Vec::new();
        let outcome = self.append_inner(drafts, once, &position, Some(&mut written))?;
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
        match self.append_inner(drafts, None, &position, None)? {
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
        self.append_inner(drafts, Some(key), &position, None)
    }

    #[tracing::instrument(name = "trace.append", skip_all, fields(store = %self.store_id))]
    /// `position(i)` names the i-th draft in an error (`None`: the error
    /// goes out as it is).
    fn append_inner(
        &mut self,
        mut drafts: Vec<EventDraft>,
        once: Option<&str>,
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
                    "SELECT seq FROM events NOT INDEXED WHERE kind = ?1 AND session = ?2 AND seq >= 1
                       AND origin_store IS NULL ORDER BY seq LIMIT 1",
                )
                .and_then(|mut st| {
                    st.query_row(
                        params![crate::event::ReservedKind::Ingest.as_str(), session],
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

    /// The current chain head.
    ///
    /// # Errors
    /// [`Error::Sqlite`] if the read fails.
    pub fn head(&self) -> Result<Head> {
        read_head(&self.conn, &self.store_id)
    }

    /// The event with this id (ids are unique; were a forged duplicate ever
    /// stored, the one with the lowest seq, which index order yields first).
    ///
    /// # Errors
    /// [`Error::Sqlite`] if the read fails or the row is malformed.
    pub fn event_by_id(&self, id: Ulid) -> Result<Option<Event>> {
        self.conn
            .prepare_cached(concat!(
                "SELECT ",
                event_columns!(),
                " FROM events WHERE id = ?1"
            ))
            .and_then(|mut st| {
                st.query_row([&id.0.to_be_bytes()[..]], event_from_row)
                    .optional()
            })
            .map_err(Error::sqlite("reading an event by id"))
    }

    /// The event at this seq.
    ///
    /// # Errors
    /// [`Error::Sqlite`] if the read fails or the row is malformed.
    pub fn event_by_seq(&self, seq: u64) -> Result<Option<Event>> {
        self.conn
            .prepare_cached(concat!(
                "SELECT ",
                event_columns!(),
                " FROM events WHERE seq = ?1"
            ))
            .and_then(|mut st| st.query_row([seq as i64], event_from_row).optional())
            .map_err(Error::sqlite("reading an event by seq"))
    }

    /// Up to `limit` events with seq greater than `after`, in seq order.
    ///
    /// # Errors
    /// [`Error::Sqlite`] if the read fails or a row is malformed.
    pub fn events_after(&self, after: u64, limit: usize) -> Result<Vec<Event>> {
        self.conn
            .prepare_cached(concat!(
                "SELECT ",
                event_columns!(),
                " FROM events WHERE seq > ?1 ORDER BY seq LIMIT ?2"
            ))
            .and_then(|mut st| {
                st.query_map(
                    params![after as i64, limit.min(i64::MAX as usize) as i64],
                    event_from_row,
                )?
                .collect()
            })
            .map_err(Error::sqlite("reading events"))
    }

    /// Up to `limit` events with seq greater than `after` that match
    /// `filter` (every condition given must hold), in seq order: what
    /// `ratchet log --kind/--commit/--scorer` shows.
    ///
    /// # Errors
    /// [`Error::Sqlite`] if the read fails or a row is malformed.
    pub fn events_matching(
        &self,
        after: u64,
        limit: usize,
        filter: &EventFilter,
    ) -> Result<Vec<Event>> {
        self.conn
            .prepare_cached(concat!(
                "SELECT ",
                event_columns!(),
                " FROM events WHERE seq > ?1
                   AND (?3 IS NULL OR kind = ?3)
                   AND (?4 IS NULL OR commit_id = ?4)
                   AND (?5 IS NULL OR seq IN (SELECT seq FROM scores NOT INDEXED WHERE scorer = ?5))
                 ORDER BY seq LIMIT ?2"
            ))
            .and_then(|mut st| {
                st.query_map(
                    params![
                        after as i64,
                        limit.min(i64::MAX as usize) as i64,
                        filter.kind,
                        filter.commit.as_ref().map(CommitId::as_str),
                        filter.scorer
                    ],
                    event_from_row,
                )?
                .collect()
            })
            .map_err(Error::sqlite("reading events"))
    }

    /// Every event of the given kinds, in seq order (a plain scan of the
    /// events table, not verified): for listings and for a writer checking
    /// what it is about to append. A decision reads
    /// [`crate::Verified::events_of_kinds`].
    ///
    /// # Errors
    /// [`Error::Sqlite`] if the read fails or a row is malformed.
    pub fn events_of_kinds(&self, kinds: &[&str]) -> Result<Vec<Event>> {
        let list =
            serde_json::to_string(kinds).map_err(|e| Error::invalid("kinds", e.to_string()))?;
        self.conn
            .prepare_cached(concat!(
                "SELECT ",
                event_columns!(),
                " FROM events NOT INDEXED WHERE seq >= 1 AND kind IN (SELECT value FROM json_each(?1)) ORDER BY seq"
            ))
            .and_then(|mut st| st.query_map([list], event_from_row)?.collect())
            .map_err(Error::sqlite("reading events by kind"))
    }

    /// Follows the chain from `after` (exclusive): an iterator that reads pages
    /// of events and, once exhausted, can be resumed with [`Tail::position`].
    pub fn tail(&self, after: u64) -> Tail<'_> {
        Tail {
            store: self,
            position: after,
            page: Vec::new().into_iter(),
            done: false,
        }
    }
}

/// A REAL column's value (SQLite may hand back an integral REAL as INTEGER).
pub(crate) fn real(row: &Row<'_>, i: usize) -> rusqlite::Result<f64> {
    match row.get_ref(i)? {
        ValueRef::Real(v) => Ok(v),
        ValueRef::Integer(v) => Ok(v as f64),
        _ => Err(conv_err(i, "value")),
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
    let mut r = [0u8; 16];
    getrandom::fill(&mut r).map_err(|e| Error::Randomness {
        reason: e.to_string(),
    })?;
    let random = u128::from_le_bytes(r);
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

pub(crate) fn read_head(conn: &Connection, store_id: &str) -> Result<Head> {
    let row: Option<(i64, blake3::Hash)> = conn
        .prepare_cached("SELECT seq, hash FROM events ORDER BY seq DESC LIMIT 1")
        .and_then(|mut st| {
            st.query_row([], |r| Ok((r.get(0)?, hash_col(r, 1)?)))
                .optional()
        })
        .map_err(Error::sqlite("reading the chain head"))?;
    Ok(match row {
        Some((seq, hash)) => Head {
            size: seq as u64,
            hash,
        },
        None => Head {
            size: 0,
            hash: genesis_hash(store_id),
        },
    })
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
                let mut i = 0;
                for chunk in sources.chunks(CHUNK) {
                    let mut out = Vec::with_capacity(chunk.len());
                    for source in chunk {
                        let prepared = match prepare(i, source) {
                            Ok(p) => p,
                            Err(e) => {
                                let _ = send.send(Ok(out)).and_then(|_| send.send(Err(e)));
                                return;
                            }
                        };
                        i += 1;
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

/// Iterator returned by [`Store::tail`].
#[derive(Debug)]
pub struct Tail<'s> {
    store: &'s Store,
    position: u64,
    page: std::vec::IntoIter<Event>,
    done: bool,
}

impl Tail<'_> {
    const PAGE: usize = 1024;

    /// The seq of the last event yielded (or the starting point).
    pub fn position(&self) -> u64 {
        self.position
    }
}

impl Iterator for Tail<'_> {
    type Item = Result<Event>;

    fn next(&mut self) -> Option<Self::Item> {
        if let Some(e) = self.page.next() {
            self.position = e.seq;
            return Some(Ok(e));
        }
        if self.done {
            return None;
        }
        match self.store.events_after(self.position, Self::PAGE) {
            Ok(page) => {
                if page.len() < Self::PAGE {
                    self.done = true;
                }
                self.page = page.into_iter();
                let e = self.page.next()?;
                self.position = e.seq;
                Some(Ok(e))
            }
            Err(e) => {
                self.done = true;
                Some(Err(e))
            }
        }
    }
}
