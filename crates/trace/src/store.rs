//! [`Store`]: opening, appending and querying.

use std::collections::BTreeMap;
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
use crate::projection::{
    Projection, SCORE_COLUMNS, Score, TEST_RUN_COLUMNS, TestRun, score_from_row, test_run_from_row,
};
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

/// A scorer as the queries read it: by name, and — since a scorer's
/// version (a rubric's content hash) changes what its numbers mean — pinned
/// to one version or not. `"accuracy".into()` reads every version; readers
/// that decide pin one ([`ScorerRef::at_version`]) so versions never mix.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ScorerRef<'a> {
    /// The scorer's name.
    pub name: &'a str,
    /// One version only, or every version.
    pub version: Option<&'a str>,
}

impl<'a> ScorerRef<'a> {
    /// `name`, at `version` only.
    pub fn at_version(name: &'a str, version: &'a str) -> Self {
        ScorerRef {
            name,
            version: Some(version),
        }
    }
}

impl<'a> From<&'a str> for ScorerRef<'a> {
    fn from(name: &'a str) -> Self {
        ScorerRef {
            name,
            version: None,
        }
    }
}

impl<'a> From<&'a String> for ScorerRef<'a> {
    fn from(name: &'a String) -> Self {
        name.as_str().into()
    }
}

/// One version of a scorer in the trace, from [`Store::scorer_versions`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ScorerVersion {
    /// The version.
    pub version: String,
    /// Score rows of it.
    pub n: u64,
    /// Seq of its newest score.
    pub last_seq: u64,
}

/// One score row as [`Store::each_score`] lends it: text borrowed from the
/// database row.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ScoreRow<'a> {
    /// Seq of the score event.
    pub seq: u64,
    /// The commit (canonical hex).
    pub commit: &'a str,
    /// The task.
    pub task: &'a str,
    /// The scorer.
    pub scorer: &'a str,
    /// The scorer's version.
    pub scorer_version: &'a str,
    /// The value.
    pub value: f64,
    /// Cost, if recorded.
    pub cost: Option<f64>,
    /// Latency in milliseconds, if recorded.
    pub latency_ms: Option<f64>,
    /// A holdout task.
    pub holdout: bool,
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

/// How much of the trace a query reads: all of it, or the trace as it stood
/// when it held `seq` events — what a decision recorded then saw. Every
/// aggregate query takes one, so a past verdict is recomputed with the same
/// query that made it. A bare `u64` converts to [`AsOf::Seq`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum AsOf {
    /// Every event (in a [`Snapshot`], every event when it was taken).
    #[default]
    Head,
    /// Events with seq at most this.
    Seq(u64),
}

impl AsOf {
    /// The largest seq read, as SQLite's integer.
    fn max_seq(self) -> i64 {
        match self {
            AsOf::Head => i64::MAX,
            AsOf::Seq(seq) => seq.min(i64::MAX as u64) as i64,
        }
    }
}

impl From<u64> for AsOf {
    fn from(seq: u64) -> AsOf {
        AsOf::Seq(seq)
    }
}

/// What a store holds, counted: from [`Store::overview`].
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Overview {
    /// Events in the trace.
    pub size: u64,
    /// Events by kind.
    pub kinds: BTreeMap<String, u64>,
    /// Each commit with scores or test runs, in first-seen order.
    pub commits: Vec<CommitCounts>,
    /// Each scorer with its versions, by name.
    pub scorers: Vec<ScorerCounts>,
}

/// One commit in an [`Overview`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CommitCounts {
    /// The commit.
    pub commit: String,
    /// Score rows.
    pub scores: u64,
    /// Test-run rows.
    pub test_runs: u64,
    /// Seq of its first score or test run.
    pub first_seq: u64,
}

/// One scorer in an [`Overview`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ScorerCounts {
    /// The scorer.
    pub scorer: String,
    /// Its versions, newest first.
    pub versions: Vec<ScorerVersion>,
    /// Commits it scored.
    pub commits: u64,
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

/// Sufficient statistics of one scorer's values under one commit.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CommitStats {
    /// The commit.
    pub commit: CommitId,
    /// Number of score rows.
    pub n: u64,
    /// Mean value.
    pub mean: f64,
    /// Sample variance (n − 1 denominator); `None` when n < 2.
    pub variance: Option<f64>,
    /// Smallest value.
    pub min: f64,
    /// Largest value.
    pub max: f64,
}

/// The scores of one task under a baseline and a candidate commit.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PairedTask {
    /// The task.
    pub task: String,
    /// Baseline values, in append order (empty if the baseline never ran it).
    pub baseline: Vec<f64>,
    /// Candidate values, in append order (empty if the candidate never ran it).
    pub candidate: Vec<f64>,
}

/// One task's mean scores under a baseline and a candidate (`None`: that
/// side has no score of it).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TaskMeans {
    /// The task.
    pub task: String,
    /// The baseline's mean.
    pub baseline: Option<f64>,
    /// The candidate's mean.
    pub candidate: Option<f64>,
}

/// Per-task mean scores of a baseline and a candidate, for tasks both ran.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct PairedMeans {
    /// The baseline's mean on the task.
    pub baseline: f64,
    /// The candidate's mean on the task.
    pub candidate: f64,
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
    /// The store keeps per-commit statistics (`commit_stats`, schema 2):
    /// false only for a version-1 store opened read-only.
    pub(crate) summary: bool,
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

/// The version filter of score queries, on parameter 3 (NULL: every version).
const VERSION_IS_3: &str = "(?3 IS NULL OR scorer_version = ?3)";

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
            summary: true,
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
        let mut version = version;
        if !read_only && version < schema::SCHEMA_VERSION {
            let tx = conn
                .transaction_with_behavior(TransactionBehavior::Immediate)
                .map_err(Error::sqlite("upgrading the schema"))?;
            if schema::upgrade_in_place(&tx)? {
                tx.commit().map_err(Error::sqlite("upgrading the schema"))?;
                version = schema::SCHEMA_VERSION;
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
            summary: version >= 2,
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

    /// Opens a consistent read view: every query made through it (it derefs to
    /// the store) sees the same committed state, and the read lock is taken
    /// once instead of per query. Writers in other processes go on meanwhile
    /// (WAL); this handle cannot write until the snapshot is dropped.
    ///
    /// Outside a snapshot each query is its own read transaction, which costs
    /// SQLite three system calls (file lock, unlock, stat) — most of a point
    /// read's time (see benches/README.md).
    ///
    /// The snapshot borrows the store exclusively, as a rusqlite
    /// `Transaction` borrows its `Connection`: while it lives the store can
    /// neither append nor open a second snapshot — both are compile errors,
    /// not runtime failures:
    ///
    /// ```compile_fail,E0499
    /// # fn nested(store: &mut ratchet_trace::Store) -> ratchet_trace::Result<()> {
    /// let outer = store.snapshot()?;
    /// let inner = store.snapshot()?; // error: `*store` is already borrowed
    /// # drop((outer, inner)); Ok(()) }
    /// ```
    ///
    /// ```compile_fail,E0499
    /// # fn append_inside(store: &mut ratchet_trace::Store) -> ratchet_trace::Result<()> {
    /// let snap = store.snapshot()?;
    /// store.append(ratchet_trace::EventDraft::json("note", &1)?)?; // error: already borrowed
    /// # drop(snap); Ok(()) }
    /// ```
    ///
    /// # Errors
    /// [`Error::Sqlite`] if the read transaction cannot start.
    pub fn snapshot(&mut self) -> Result<Snapshot<'_>> {
        // The exclusive borrow is what callers see; inside, a shared one is
        // all the read transaction needs, and nothing else can reach the
        // connection while the snapshot holds it.
        let store: &Store = self;
        let tx = store
            .conn
            .unchecked_transaction()
            .map_err(Error::sqlite("starting a read transaction"))?;
        // Take the read lock now, so the view is fixed from this point on.
        tx.query_row("SELECT count(*) FROM meta", [], |_| Ok(()))
            .map_err(Error::sqlite("starting a read transaction"))?;
        Ok(Snapshot { store, _tx: tx })
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
        match self.append_inner(drafts, None, &position)? {
            AppendOnce::Appended(receipts) => Ok(receipts),
            AppendOnce::AlreadyAppended { .. } => Ok(Vec::new()),
        }
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
        match self.append_inner(drafts, None, &position)? {
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
        self.append_inner(drafts, Some(key), &position)
    }

    #[tracing::instrument(name = "trace.append", skip_all, fields(store = %self.store_id))]
    /// `position(i)` names the i-th draft in an error (`None`: the error
    /// goes out as it is).
    fn append_inner(
        &mut self,
        mut drafts: Vec<EventDraft>,
        once: Option<&str>,
        position: &(dyn Fn(usize) -> Option<String> + Sync),
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

    /// This store's own events of `kind` at or before `max_seq`, in seq
    /// order, each with its payload parsed as `T`: how a control event is
    /// read for acting on it. Events merged in from cells are passed over
    /// (they are what a cell saw, never an instruction to this store), and
    /// a payload that does not parse is an error, never a skipped event.
    ///
    /// # Errors
    /// [`Error::InvalidInput`] naming the seq of a payload that does not
    /// parse; [`Error::Sqlite`] if the read fails.
    pub fn own_control_events<T: serde::de::DeserializeOwned>(
        &self,
        kind: crate::event::ReservedKind,
        max_seq: u64,
    ) -> Result<Vec<(Event, T)>> {
        let mut out = Vec::new();
        for e in self.events_of_kinds(&[kind.as_str()])? {
            if e.seq > max_seq {
                break;
            }
            if e.origin.is_some() {
                continue;
            }
            let parsed: T = serde_json::from_slice(&e.payload).map_err(|err| {
                Error::invalid(
                    "payload",
                    format!("{} event {} does not parse: {err}", kind.as_str(), e.seq),
                )
            })?;
            out.push((e, parsed));
        }
        Ok(out)
    }

    /// Every event of the given kinds, in seq order (a scan of the events
    /// table, within the chain): how the rare control events — alarms,
    /// promotions, checkouts — are found.
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

    /// The scores of `scorer` under `commit` as of `as_of`, in seq order,
    /// with their seqs.
    ///
    /// # Errors
    /// [`Error::Sqlite`] if the read fails.
    pub fn scores<'s>(
        &self,
        commit: &CommitId,
        scorer: impl Into<ScorerRef<'s>>,
        as_of: impl Into<AsOf>,
    ) -> Result<Vec<(u64, Score)>> {
        let scorer = scorer.into();
        self.conn
            .prepare_cached(&format!(
                "SELECT {SCORE_COLUMNS} FROM scores NOT INDEXED WHERE scorer = ?1 AND commit_id = ?2 AND {VERSION_IS_3} AND seq <= ?4 ORDER BY seq"
            ))
            .and_then(|mut st| st.query_map(params![scorer.name, commit.as_str(), scorer.version, as_of.into().max_seq()], score_from_row)?.collect())
            .map_err(Error::sqlite("reading scores"))
    }

    /// Up to `limit` score rows with seq greater than `after`, in seq order
    /// (for exports and bulk readers).
    ///
    /// # Errors
    /// [`Error::Sqlite`] if the read fails.
    pub fn scores_after(&self, after: u64, limit: usize) -> Result<Vec<(u64, Score)>> {
        self.conn
            .prepare_cached(&format!(
                "SELECT {SCORE_COLUMNS} FROM scores WHERE seq > ?1 ORDER BY seq LIMIT ?2"
            ))
            .and_then(|mut st| {
                st.query_map(
                    params![
                        after.min(i64::MAX as u64) as i64,
                        limit.min(i64::MAX as usize) as i64
                    ],
                    score_from_row,
                )?
                .collect()
            })
            .map_err(Error::sqlite("reading scores"))
    }

    /// Every score row with seq greater than `after`, in seq order, handed
    /// to `each` as borrowed text (no row is copied into owned strings):
    /// the column-wise scan behind bulk readers (Arrow tables, exports).
    ///
    /// # Errors
    /// [`Error::Sqlite`] if the read fails or a row is malformed (a commit
    /// not in canonical form included).
    pub fn each_score(&self, after: u64, each: &mut dyn FnMut(ScoreRow<'_>)) -> Result<()> {
        const CONTEXT: &str = "reading scores";
        let mut st = self
            .conn
            .prepare_cached(&format!(
                "SELECT {SCORE_COLUMNS} FROM scores WHERE seq > ?1 ORDER BY seq"
            ))
            .map_err(Error::sqlite(CONTEXT))?;
        let mut rows = st
            .query([after.min(i64::MAX as u64) as i64])
            .map_err(Error::sqlite(CONTEXT))?;
        while let Some(row) = rows.next().map_err(Error::sqlite(CONTEXT))? {
            let str_at = |i: usize| -> Result<&str> {
                match row.get_ref(i).map_err(Error::sqlite(CONTEXT))? {
                    ValueRef::Text(t) => std::str::from_utf8(t).map_err(|_| Error::Sqlite {
                        context: CONTEXT,
                        source: conv_err(i, "text"),
                    }),
                    _ => Err(Error::Sqlite {
                        context: CONTEXT,
                        source: conv_err(i, "text"),
                    }),
                }
            };
            let commit = str_at(1)?;
            if !crate::encoding::is_canonical_commit(commit) {
                return Err(Error::Sqlite {
                    context: CONTEXT,
                    source: conv_err(1, "commit"),
                });
            }
            let seq: i64 = row.get(0).map_err(Error::sqlite(CONTEXT))?;
            each(ScoreRow {
                seq: seq as u64,
                commit,
                task: str_at(2)?,
                scorer: str_at(3)?,
                scorer_version: str_at(4)?,
                value: real(row, 5).map_err(Error::sqlite(CONTEXT))?,
                cost: row.get(6).map_err(Error::sqlite(CONTEXT))?,
                latency_ms: row.get(7).map_err(Error::sqlite(CONTEXT))?,
                holdout: row.get(8).map_err(Error::sqlite(CONTEXT))?,
            });
        }
        Ok(())
    }

    /// The test runs under `commit` as of `as_of`, in seq order, with their
    /// seqs.
    ///
    /// # Errors
    /// [`Error::Sqlite`] if the read fails.
    pub fn test_runs(
        &self,
        commit: &CommitId,
        as_of: impl Into<AsOf>,
    ) -> Result<Vec<(u64, TestRun)>> {
        self.conn
            .prepare_cached(&format!(
                "SELECT {TEST_RUN_COLUMNS} FROM test_runs NOT INDEXED WHERE commit_id = ?1 AND seq <= ?2 ORDER BY seq"
            ))
            .and_then(|mut st| {
                st.query_map(params![commit.as_str(), as_of.into().max_seq()], test_run_from_row)?
                    .collect()
            })
            .map_err(Error::sqlite("reading test runs"))
    }

    /// Per-commit statistics of `scorer` as of `as_of`, ordered by commit id.
    ///
    /// At [`AsOf::Head`], read from the statistics kept on append (the
    /// `commit_stats` table: one row per scorer × version × commit, read whole: never the scores;
    /// see ARCHITECTURE.md); at an earlier seq, one pass over the scores
    /// table in seq order (never through a secondary index: see [`Store`]'s
    /// read rule). Both fold each version's values in seq order with
    /// Welford's update (no catastrophic cancellation) and combine a
    /// commit's versions in version order, so they agree to the bit.
    ///
    /// # Errors
    /// [`Error::Sqlite`] if the read fails.
    pub fn commit_stats<'s>(
        &self,
        scorer: impl Into<ScorerRef<'s>>,
        as_of: impl Into<AsOf>,
    ) -> Result<Vec<CommitStats>> {
        self.stats(scorer.into(), None, as_of.into())
    }

    /// The versions of `scorer` recorded as of `as_of`, newest (by its
    /// latest score) first.
    ///
    /// # Errors
    /// [`Error::Sqlite`] if the read fails.
    pub fn scorer_versions(
        &self,
        scorer: &str,
        as_of: impl Into<AsOf>,
    ) -> Result<Vec<ScorerVersion>> {
        let as_of = as_of.into();
        // At the head, the kept statistics hold each version's count and
        // last seq per commit: its rows instead of the scores, same answer.
        if self.summary && as_of == AsOf::Head {
            return Ok(crate::summary::versions(&self.conn, scorer)?
                .into_iter()
                .map(|(version, n, last_seq)| ScorerVersion {
                    version,
                    n,
                    last_seq,
                })
                .collect());
        }
        self.conn
            .prepare_cached(
                "SELECT scorer_version, count(*), max(seq) FROM scores NOT INDEXED
                 WHERE scorer = ?1 AND seq <= ?2 GROUP BY scorer_version ORDER BY max(seq) DESC",
            )
            .and_then(|mut st| {
                st.query_map(params![scorer, as_of.max_seq()], |r| {
                    Ok(ScorerVersion {
                        version: r.get(0)?,
                        n: r.get::<_, i64>(1)? as u64,
                        last_seq: r.get::<_, i64>(2)? as u64,
                    })
                })?
                .collect()
            })
            .map_err(Error::sqlite("listing scorer versions"))
    }

    /// The newest version of `scorer` (by its latest score as of `as_of`)
    /// that both commits have scores of: the version a paired comparison
    /// reads when none is pinned. One scan.
    ///
    /// # Errors
    /// [`Error::Sqlite`] if the read fails.
    pub fn shared_scorer_version(
        &self,
        scorer: &str,
        a: &CommitId,
        b: &CommitId,
        as_of: impl Into<AsOf>,
    ) -> Result<Option<String>> {
        let as_of = as_of.into();
        if self.summary && as_of == AsOf::Head {
            return crate::summary::shared_version(&self.conn, scorer, a.as_str(), b.as_str());
        }
        self.conn
            .prepare_cached(
                "SELECT scorer_version FROM scores NOT INDEXED
                 WHERE scorer = ?1 AND seq <= ?2 AND commit_id IN (?3, ?4)
                 GROUP BY scorer_version
                 HAVING sum(commit_id = ?3) > 0 AND sum(commit_id = ?4) > 0
                 ORDER BY max(seq) DESC LIMIT 1",
            )
            .and_then(|mut st| {
                st.query_row(
                    params![scorer, as_of.max_seq(), a.as_str(), b.as_str()],
                    |r| r.get(0),
                )
                .optional()
            })
            .map_err(Error::sqlite("choosing a scorer version"))
    }

    /// Statistics of `scorer` under one commit as of `as_of` (`None` if it
    /// has no scores then), read as [`Store::commit_stats`] reads.
    ///
    /// # Errors
    /// [`Error::Sqlite`] if the read fails.
    pub fn commit_stats_for<'s>(
        &self,
        commit: &CommitId,
        scorer: impl Into<ScorerRef<'s>>,
        as_of: impl Into<AsOf>,
    ) -> Result<Option<CommitStats>> {
        Ok(self.stats(scorer.into(), Some(commit), as_of.into())?.pop())
    }

    /// Per-commit statistics, from the kept table at the head of a store
    /// that has one, else by a scan that folds the same way.
    fn stats(
        &self,
        scorer: ScorerRef<'_>,
        commit: Option<&CommitId>,
        as_of: AsOf,
    ) -> Result<Vec<CommitStats>> {
        const CONTEXT: &str = "computing per-commit statistics";
        let commit = commit.map(CommitId::as_str);
        let folds = if self.summary && as_of == AsOf::Head {
            crate::summary::read(&self.conn, scorer.name, scorer.version, commit)?
        } else {
            let mut st = self
                .conn
                .prepare_cached(
                    "SELECT commit_id, scorer_version, value FROM scores NOT INDEXED
                      WHERE scorer = ?1 AND (?2 IS NULL OR scorer_version = ?2)
                        AND (?3 IS NULL OR commit_id = ?3) AND seq <= ?4",
                )
                .map_err(Error::sqlite(CONTEXT))?;
            let mut rows = st
                .query(params![
                    scorer.name,
                    scorer.version,
                    commit,
                    as_of.max_seq()
                ])
                .map_err(Error::sqlite(CONTEXT))?;
            let mut summaries = crate::summary::Summaries::default();
            while let Some(row) = rows.next().map_err(Error::sqlite(CONTEXT))? {
                let text = |i| row.get_ref(i).ok().and_then(crate::verify::text);
                let value = real(row, 2).map_err(Error::sqlite(CONTEXT))?;
                let (Some(c), Some(v)) = (text(0), text(1)) else {
                    return Err(Error::Sqlite {
                        context: CONTEXT,
                        source: conv_err(0, "commit_id or scorer_version"),
                    });
                };
                summaries.push(scorer.name, v, c, value, 0);
            }
            summaries.by_commit()
        };
        folds
            .into_iter()
            .map(|(c, w)| {
                Ok(CommitStats {
                    commit: CommitId::parse(&c)?,
                    n: w.n,
                    mean: w.mean,
                    variance: w.variance(),
                    min: w.min,
                    max: w.max,
                })
            })
            .collect()
    }

    /// Values of `scorer` under `commit` recorded after `after_seq`, in seq
    /// order, at most `limit` of them: a live score stream to follow (a
    /// range scan on seq, so following costs only what is new).
    ///
    /// # Errors
    /// [`Error::Sqlite`] if the read fails.
    pub fn score_stream<'s>(
        &self,
        commit: &CommitId,
        scorer: impl Into<ScorerRef<'s>>,
        after_seq: u64,
        limit: usize,
    ) -> Result<Vec<(u64, f64)>> {
        let scorer = scorer.into();
        self.conn
            .prepare_cached(
                // A seq-range scan of the table: following a stream costs only
                // what is new, and reads no secondary index.
                "SELECT seq, value FROM scores NOT INDEXED WHERE seq > ?1 AND commit_id = ?2 AND scorer = ?3
                   AND (?5 IS NULL OR scorer_version = ?5) ORDER BY seq LIMIT ?4",
            )
            .and_then(|mut st| {
                st.query_map(
                    params![
                        after_seq.min(i64::MAX as u64) as i64,
                        commit.as_str(),
                        scorer.name,
                        limit.min(i64::MAX as usize) as i64,
                        scorer.version
                    ],
                    |r| Ok((r.get::<_, i64>(0)? as u64, r.get(1)?)),
                )?
                .collect()
            })
            .map_err(Error::sqlite("reading a score stream"))
    }

    /// What the store holds, counted: events by kind, commits with their
    /// score and test-run counts, scorers with their versions. For people
    /// (`ratchet status`); read on a verified snapshot when it matters.
    ///
    /// # Errors
    /// [`Error::Sqlite`] if the read fails.
    pub fn overview(&self) -> Result<Overview> {
        let size = self.head()?.size;
        let mut kinds = BTreeMap::new();
        let mut st = self
            .conn
            .prepare("SELECT kind, count(*) FROM events NOT INDEXED WHERE seq >= 1 GROUP BY kind")
            .map_err(Error::sqlite("reading the overview"))?;
        let rows = st
            .query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?)))
            .map_err(Error::sqlite("reading the overview"))?;
        for row in rows {
            let (kind, n) = row.map_err(Error::sqlite("reading the overview"))?;
            kinds.insert(kind, n as u64);
        }
        let mut st = self
            .conn
            .prepare(
                "SELECT commit_id, sum(s), sum(t), min(first) FROM (
                    SELECT commit_id, count(*) AS s, 0 AS t, min(seq) AS first
                      FROM scores NOT INDEXED WHERE seq >= 1 GROUP BY commit_id
                    UNION ALL
                    SELECT commit_id, 0, count(*), min(seq)
                      FROM test_runs NOT INDEXED WHERE seq >= 1 GROUP BY commit_id)
                 GROUP BY commit_id ORDER BY min(first)",
            )
            .map_err(Error::sqlite("reading the overview"))?;
        let commits = st
            .query_map([], |r| {
                Ok(CommitCounts {
                    commit: r.get(0)?,
                    scores: r.get::<_, i64>(1)? as u64,
                    test_runs: r.get::<_, i64>(2)? as u64,
                    first_seq: r.get::<_, i64>(3)? as u64,
                })
            })
            .and_then(|rows| rows.collect::<rusqlite::Result<Vec<_>>>())
            .map_err(Error::sqlite("reading the overview"))?;
        let mut st = self
            .conn
            .prepare(
                "SELECT scorer, count(DISTINCT commit_id) FROM scores NOT INDEXED
                  WHERE seq >= 1 GROUP BY scorer ORDER BY scorer",
            )
            .map_err(Error::sqlite("reading the overview"))?;
        let names = st
            .query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?)))
            .and_then(|rows| rows.collect::<rusqlite::Result<Vec<_>>>())
            .map_err(Error::sqlite("reading the overview"))?;
        let mut scorers = Vec::with_capacity(names.len());
        for (scorer, commits) in names {
            scorers.push(ScorerCounts {
                versions: self.scorer_versions(scorer.as_str(), AsOf::Seq(size))?,
                scorer,
                commits: commits as u64,
            });
        }
        Ok(Overview {
            size,
            kinds,
            commits,
            scorers,
        })
    }

    /// Whether any score of `scorer` (under any commit) was recorded as of
    /// `as_of`: how the gate tells an unknown scorer from a known one with no
    /// data yet for a commit.
    ///
    /// # Errors
    /// [`Error::Sqlite`] if the read fails.
    pub fn has_scorer<'s>(
        &self,
        scorer: impl Into<ScorerRef<'s>>,
        as_of: impl Into<AsOf>,
    ) -> Result<bool> {
        let scorer = scorer.into();
        self.conn
            .prepare_cached(&format!(
                "SELECT EXISTS (SELECT 1 FROM scores NOT INDEXED WHERE scorer = ?1 AND seq <= ?2 AND {VERSION_IS_3})"
            ))
            .and_then(|mut st| {
                st.query_row(
                    params![scorer.name, as_of.into().max_seq(), scorer.version],
                    |r| r.get(0),
                )
            })
            .map_err(Error::sqlite("looking up a scorer"))
    }

    /// Per-task means of `scorer` for the tasks both commits ran, in task
    /// order, as of `as_of`.
    ///
    /// # Errors
    /// [`Error::Sqlite`] if the read fails.
    pub fn paired_means<'s>(
        &self,
        baseline: &CommitId,
        candidate: &CommitId,
        scorer: impl Into<ScorerRef<'s>>,
        as_of: impl Into<AsOf>,
    ) -> Result<Vec<PairedMeans>> {
        Ok(self
            .task_means(baseline, candidate, scorer, as_of)?
            .into_iter()
            .filter_map(|t| {
                Some(PairedMeans {
                    baseline: t.baseline?,
                    candidate: t.candidate?,
                })
            })
            .collect())
    }

    /// Per-task means of `scorer` under each commit (`None` where a commit
    /// has no score of the task), in task order, as of `as_of`: the gate's
    /// hot path (it needs the tasks one side lacks too). One pass over the
    /// scores table in seq order.
    ///
    /// # Errors
    /// [`Error::Sqlite`] if the read fails.
    pub fn task_means<'s>(
        &self,
        baseline: &CommitId,
        candidate: &CommitId,
        scorer: impl Into<ScorerRef<'s>>,
        as_of: impl Into<AsOf>,
    ) -> Result<Vec<TaskMeans>> {
        // Per task: (sum, count) for the baseline and for the candidate.
        type Sums = [(f64, u32); 2];
        let mut sums: std::collections::HashMap<Vec<u8>, Sums> = Default::default();
        self.scan_pair(
            baseline,
            candidate,
            scorer,
            as_of.into(),
            |task, sides, value| {
                let entry = match sums.get_mut(task) {
                    Some(e) => e,
                    None => sums.entry(task.to_vec()).or_default(),
                };
                for (side, slot) in sides.iter().zip(entry.iter_mut()) {
                    if *side {
                        slot.0 += value;
                        slot.1 += 1;
                    }
                }
            },
        )?;
        let mut tasks: Vec<(Vec<u8>, Sums)> = sums.into_iter().collect();
        tasks.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        let mean = |(sum, n): (f64, u32)| (n > 0).then(|| sum / f64::from(n));
        Ok(tasks
            .into_iter()
            .map(|(task, [b, c])| TaskMeans {
                task: String::from_utf8_lossy(&task).into_owned(),
                baseline: mean(b),
                candidate: mean(c),
            })
            .collect())
    }

    /// Scores of `scorer` per task under a baseline and a candidate commit
    /// as of `as_of`, ordered by task. Tasks only one side ran are included
    /// with an empty list on the other side.
    ///
    /// # Errors
    /// [`Error::Sqlite`] if the read fails.
    pub fn paired_scores<'s>(
        &self,
        baseline: &CommitId,
        candidate: &CommitId,
        scorer: impl Into<ScorerRef<'s>>,
        as_of: impl Into<AsOf>,
    ) -> Result<Vec<PairedTask>> {
        let mut tasks: std::collections::HashMap<Vec<u8>, [Vec<f64>; 2]> = Default::default();
        self.scan_pair(
            baseline,
            candidate,
            scorer,
            as_of.into(),
            |task, sides, value| {
                let entry = match tasks.get_mut(task) {
                    Some(e) => e,
                    None => tasks.entry(task.to_vec()).or_default(),
                };
                for (side, values) in sides.iter().zip(entry.iter_mut()) {
                    if *side {
                        values.push(value);
                    }
                }
            },
        )?;
        let mut out: Vec<PairedTask> = tasks
            .into_iter()
            .map(|(task, [baseline, candidate])| PairedTask {
                task: String::from_utf8_lossy(&task).into_owned(),
                baseline,
                candidate,
            })
            .collect();
        out.sort_unstable_by(|a, b| a.task.cmp(&b.task));
        Ok(out)
    }

    /// Feeds every score of `scorer` under either commit, as of `as_of`, to
    /// `each(task, [is baseline, is candidate], value)` in seq order (append
    /// order within a task).
    fn scan_pair<'s>(
        &self,
        baseline: &CommitId,
        candidate: &CommitId,
        scorer: impl Into<ScorerRef<'s>>,
        as_of: AsOf,
        mut each: impl FnMut(&[u8], [bool; 2], f64),
    ) -> Result<()> {
        const CONTEXT: &str = "reading paired scores";
        let scorer = scorer.into();
        let mut st = self
            .conn
            .prepare_cached(
                "SELECT commit_id, task, value FROM scores NOT INDEXED
                 WHERE scorer = ?1 AND commit_id IN (?2, ?3) AND seq <= ?4
                   AND (?5 IS NULL OR scorer_version = ?5)",
            )
            .map_err(Error::sqlite(CONTEXT))?;
        let mut rows = st
            .query(params![
                scorer.name,
                baseline.as_str(),
                candidate.as_str(),
                as_of.max_seq(),
                scorer.version
            ])
            .map_err(Error::sqlite(CONTEXT))?;
        let (b, c) = (baseline.as_str().as_bytes(), candidate.as_str().as_bytes());
        while let Some(row) = rows.next().map_err(Error::sqlite(CONTEXT))? {
            let (ValueRef::Text(commit), ValueRef::Text(task)) = (
                row.get_ref(0).map_err(Error::sqlite(CONTEXT))?,
                row.get_ref(1).map_err(Error::sqlite(CONTEXT))?,
            ) else {
                return Err(Error::Sqlite {
                    context: CONTEXT,
                    source: conv_err(1, "task"),
                });
            };
            let value = real(row, 2).map_err(Error::sqlite(CONTEXT))?;
            each(task, [commit == b, commit == c], value);
        }
        Ok(())
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

/// A consistent read view of a store, from [`Store::snapshot`]: one SQLite
/// read transaction, so every query through it sees the trace as it stood
/// when the snapshot was taken, while other processes go on appending.
/// Derefs to [`Store`] for every read; it holds the store's exclusive
/// borrow, so nothing can append through this handle while it lives.
#[derive(Debug)]
pub struct Snapshot<'s> {
    store: &'s Store,
    _tx: rusqlite::Transaction<'s>,
}

impl std::ops::Deref for Snapshot<'_> {
    type Target = Store;
    fn deref(&self) -> &Store {
        self.store
    }
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
