//! [`Store`]: opening a store, its options and identity. Writing is in
//! `write.rs`, plain reads in `read.rs`, verification in `verify.rs`, the
//! verified view decisions read in `view.rs`.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use rusqlite::types::ValueRef;
use rusqlite::{Connection, OpenFlags, OptionalExtension, Row, TransactionBehavior, params};
use serde::Serialize;
use ulid::Ulid;

use crate::encoding::{ChainHasher, WriterKey, genesis_hash};
use crate::error::{Error, Result};
use crate::event::{CommitId, DEFAULT_MAX_INLINE_PAYLOAD, Event, EventDraft, Origin, Receipt};
use crate::projection::Projection;
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
    #[serde(serialize_with = "crate::hex_hash::serialize")]
    pub hash: blake3::Hash,
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
    let bytes: [u8; 32] = match row.get_ref(i)? {
        ValueRef::Blob(b) => b.try_into().map_err(|_| conv_err(i, "hash"))?,
        _ => return Err(conv_err(i, "hash")),
    };
    Ok(blake3::Hash::from(bytes))
}

pub(crate) fn ulid_col(row: &Row<'_>, i: usize) -> rusqlite::Result<Ulid> {
    let bytes: [u8; 16] = match row.get_ref(i)? {
        ValueRef::Blob(b) => b.try_into().map_err(|_| conv_err(i, "id"))?,
        _ => return Err(conv_err(i, "id")),
    };
    Ok(Ulid(u128::from_be_bytes(bytes)))
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

impl Store {
    /// Creates a new store in `dir` (made if missing). With a writer key in
    /// `options`, the store is keyed: every event carries a MAC and appending
    /// needs the key.
    ///
    /// On Unix what it makes is its owner's only, whatever the umask: the
    /// directory 0700, the database (and SQLite's -wal and -shm beside it)
    /// 0600; a directory that already exists keeps its mode.
    ///
    /// # Examples
    ///
    /// ```
    /// use ratchet_trace::{Error, Store, StoreOptions};
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let dir = tempfile::tempdir()?;
    /// let store = Store::create(dir.path().join(".ratchet"), StoreOptions::default())?;
    /// assert_eq!(store.head()?.size, 0); // a new store holds no events
    /// assert!(dir.path().join(".ratchet/trace.db").exists());
    ///
    /// // A second store is never made over the first.
    /// let again = Store::create(dir.path().join(".ratchet"), StoreOptions::default());
    /// assert!(matches!(again, Err(Error::StoreExists { .. })));
    /// # Ok(()) }
    /// ```
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
        // Owner only, whatever the umask: the directory 0700, its files 0600
        // (SQLite gives the -wal, -shm and -journal files the database
        // file's mode). A directory or file already there keeps its mode.
        crate::checkpoint::create_private_dir(&dir)?;
        // A store usually lives inside the repository it measures: keep git
        // from ever seeing it as an uncommitted change (this file ignores
        // everything in the directory, itself included).
        let ignore = dir.join(".gitignore");
        if !ignore.exists() {
            use std::io::Write as _;
            crate::checkpoint::open_private(&ignore, false)
                .and_then(|mut f| f.write_all(b"*\n"))
                .map_err(Error::io(&ignore))?;
        }
        // Made here (empty: SQLite takes an empty file for a new database)
        // so that it is made 0600; one a concurrent creator made meanwhile
        // is opened as it is, and the header check below finds it theirs.
        crate::checkpoint::open_private(&db, false).map_err(Error::io(&db))?;
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

    pub(crate) fn check_writer(&self) -> Result<()> {
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
}
