//! The SQLite schema, its version and the per-connection settings.

use std::path::Path;
use std::time::Duration;

use rusqlite::{Connection, OpenFlags};

use crate::error::{Error, Result};

/// `PRAGMA application_id` of a ratchet trace store ("RATC").
pub const APPLICATION_ID: i64 = 0x5241_5443;
/// The schema version this build writes and the newest it reads.
///
/// Version 2 dropped the per-row `BEFORE INSERT` guard on the events and
/// projection tables and the unread index of merged events by origin, and
/// added the per-commit statistics kept on append (`commit_stats`; see
/// docs/design.md, "Where we departed from the brief"); a version-1 store is upgraded
/// in place the first time it is opened for writing, and read as it is
/// when opened read-only.
pub const SCHEMA_VERSION: i64 = 2;

/// How hard a commit is pushed to disk.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Durability {
    /// WAL with `synchronous=FULL`: a committed append survives power loss. The default.
    #[default]
    Full,
    /// WAL with `synchronous=NORMAL`: survives a process crash, but the last
    /// commits may roll back on power loss or an OS crash. Opt-in only.
    Normal,
}

pub(crate) const DDL: &str = r#"
CREATE TABLE meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
) WITHOUT ROWID;

CREATE TABLE events (
    seq          INTEGER PRIMARY KEY,
    id           BLOB NOT NULL,
    ts_ms        INTEGER NOT NULL,
    cell         TEXT NOT NULL,
    session      TEXT NOT NULL,
    kind         TEXT NOT NULL,
    commit_id    TEXT,
    payload      BLOB NOT NULL,
    origin_store TEXT,
    origin_seq   INTEGER,
    origin_hash  BLOB,
    prev_hash    BLOB NOT NULL,
    hash         BLOB NOT NULL,
    mac          BLOB
);
CREATE INDEX events_by_id ON events (id);

CREATE TABLE scores (
    seq            INTEGER PRIMARY KEY,
    commit_id      TEXT NOT NULL,
    task           TEXT NOT NULL,
    scorer         TEXT NOT NULL,
    scorer_version TEXT NOT NULL,
    value          REAL NOT NULL,
    cost           REAL,
    latency_ms     REAL,
    holdout        INTEGER NOT NULL
);
CREATE INDEX scores_by_scorer_commit ON scores (scorer, commit_id, task, value);

CREATE TABLE test_runs (
    seq         INTEGER PRIMARY KEY,
    commit_id   TEXT NOT NULL,
    suite       TEXT NOT NULL,
    passed      INTEGER NOT NULL,
    failed      INTEGER NOT NULL,
    skipped     INTEGER NOT NULL,
    duration_ms REAL NOT NULL
);
CREATE INDEX test_runs_by_commit ON test_runs (commit_id, suite);
"#;

/// Append-only, enforced in SQL where it costs nothing on an append: every
/// table refuses UPDATE and DELETE, and `meta` (written once, at creation)
/// also refuses an INSERT that would replace a row.
///
/// The events and projection tables have no `BEFORE INSERT` guard (schema
/// version 2; version 1 had one). A row trigger on every insert was the
/// largest cost of the chained append (about a third of it: SQLite runs a
/// trigger program and an `EXISTS` probe per row), and what it stopped is
/// stopped elsewhere:
///
/// * through ratchet's own connections `recursive_triggers` is on, so the
///   delete an `INSERT OR REPLACE` performs fires the DELETE guard and the
///   statement is refused (`store.rs` issues plain INSERTs only);
/// * through any other SQLite client, a REPLACE that changes a row is an
///   edit like any other: verification recomputes every hash and projection
///   row and reports it at its seq (`tests/it/tamper.rs`), and the gate fails
///   closed on it. A file writer could drop any trigger anyway, so the
///   guard never stood between an adversary and the file.
///
/// The guards raise FAIL, not ABORT: they are BEFORE triggers, so they fire
/// before the row's statement has changed anything, which makes FAIL just as
/// safe; RAISE(ABORT) would make SQLite keep a statement journal.
///
/// REPLACE can only delete a row whose PRIMARY KEY or UNIQUE column collides,
/// so each table has exactly one unique key (`seq`, or `key` for meta). Event
/// ids are unique by construction instead: the writer allocates them above
/// the largest id under the write lock, and a merge looks each incoming id up
/// (the equivocation check).
fn guard_triggers(table: &str, refuse_replace: Option<&str>) -> String {
    let mut sql = format!(
        r#"
CREATE TRIGGER {table}_no_update BEFORE UPDATE ON {table}
BEGIN SELECT RAISE(FAIL, 'ratchet: {table} is append-only; UPDATE is refused'); END;
CREATE TRIGGER {table}_no_delete BEFORE DELETE ON {table}
BEGIN SELECT RAISE(FAIL, 'ratchet: {table} is append-only; DELETE is refused'); END;
"#
    );
    if let Some(key_match) = refuse_replace {
        sql.push_str(&format!(
            r#"CREATE TRIGGER {table}_no_replace BEFORE INSERT ON {table}
WHEN EXISTS (SELECT 1 FROM {table} WHERE {key_match})
BEGIN SELECT RAISE(FAIL, 'ratchet: {table} is append-only; a row with this key exists'); END;
"#
        ));
    }
    sql
}

/// The guard triggers of the current schema version.
pub(crate) fn all_triggers() -> String {
    triggers_of_version(SCHEMA_VERSION)
}

/// The guard triggers a store of `version` was created with: version 1 also
/// guarded every insert into the events and projection tables.
fn triggers_of_version(version: i64) -> String {
    let per_row = (version < 2).then_some("seq = NEW.seq");
    [
        guard_triggers("meta", Some("key = NEW.key")),
        guard_triggers("events", per_row),
        guard_triggers("scores", per_row),
        guard_triggers("test_runs", per_row),
    ]
    .concat()
}

/// What version 1 had and version 2 dropped: the per-row insert guards, and
/// an index of merged events by origin that no query read (the merge's
/// high-water mark is read from the table, never through an index), which
/// cost every merged event an index insert.
const VERSION_1_ONLY: [&str; 4] = [
    "DROP TRIGGER events_no_replace;",
    "DROP TRIGGER scores_no_replace;",
    "DROP TRIGGER test_runs_no_replace;",
    "DROP INDEX events_by_origin;",
];

/// The origin index of version 1 (see [`VERSION_1_ONLY`]).
const VERSION_1_ORIGIN_INDEX: &str = "CREATE INDEX events_by_origin ON events (origin_store, origin_seq) WHERE origin_store IS NOT NULL;";

/// Upgrades a version-1 store to the current schema inside the caller's
/// write transaction: its schema must be exactly version 1's (anything else
/// is [`Error::SchemaAltered`], and nothing is changed), then what version 2
/// dropped ([`VERSION_1_ONLY`]) is dropped, the per-commit statistics table
/// is created and filled from the stored scores, and `user_version` set. No row is touched, so
/// every hash and checkpoint stays valid.
pub(crate) fn upgrade_in_place(conn: &Connection) -> Result<bool> {
    let version: i64 = conn
        .pragma_query_value(None, "user_version", |r| r.get(0))
        .map_err(Error::sqlite("reading the schema version"))?;
    if version != 1 {
        return Ok(false);
    }
    if let Some(what) = schema_difference_from(conn, 1)? {
        return Err(Error::SchemaAltered { what });
    }
    for drop in VERSION_1_ONLY {
        conn.execute_batch(drop)
            .map_err(Error::sqlite("upgrading the schema"))?;
    }
    conn.execute_batch(crate::summary::DDL)
        .map_err(Error::sqlite("upgrading the schema"))?;
    crate::summary::rebuild(conn)?;
    conn.execute_batch(&format!("PRAGMA user_version = {SCHEMA_VERSION};"))
        .map_err(Error::sqlite("upgrading the schema"))?;
    Ok(true)
}

/// One row of `sqlite_schema`: what an object is, its name, its table and
/// its SQL text (`None` for SQLite's own automatic indexes).
pub(crate) type SchemaRow = (String, String, String, Option<String>);

/// The schema a store is created with, as SQLite itself records it: built
/// once per process in an in-memory database from the same DDL, so the
/// comparison is exact to the byte (no re-implementation of SQLite's text).
fn expected_schema(version: i64) -> Result<&'static [SchemaRow]> {
    static EXPECTED: [std::sync::OnceLock<Vec<SchemaRow>>; SCHEMA_VERSION as usize] =
        [const { std::sync::OnceLock::new() }; SCHEMA_VERSION as usize];
    let slot = usize::try_from(version - 1)
        .ok()
        .and_then(|i| EXPECTED.get(i))
        .ok_or(Error::SchemaAltered {
            what: format!("schema version {version} is not one this build knows"),
        })?;
    if let Some(rows) = slot.get() {
        return Ok(rows);
    }
    let conn =
        Connection::open_in_memory().map_err(Error::sqlite("building the reference schema"))?;
    conn.execute_batch(DDL)
        .and_then(|_| conn.execute_batch(&triggers_of_version(version)))
        .and_then(|_| match version {
            1 => conn.execute_batch(VERSION_1_ORIGIN_INDEX),
            _ => conn.execute_batch(crate::summary::DDL),
        })
        .map_err(Error::sqlite("building the reference schema"))?;
    let rows = read_schema(&conn, "main")?;
    Ok(slot.get_or_init(|| rows))
}

fn read_schema(conn: &Connection, schema: &str) -> Result<Vec<SchemaRow>> {
    let table = if schema == "temp" {
        "sqlite_temp_schema"
    } else {
        "main.sqlite_schema"
    };
    let sql = format!("SELECT type, name, tbl_name, sql FROM {table} ORDER BY type, name");
    conn.prepare(&sql)
        .and_then(|mut st| {
            st.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))?
                .collect()
        })
        .map_err(Error::sqlite("reading the schema"))
}

/// Compares the store's `sqlite_schema` (and this connection's TEMP schema)
/// with the schema ratchet creates. `None` when they agree; otherwise what
/// differs, in words: an added trigger, view, table or index, a dropped or
/// altered one. The schema compared against is that of the store's own
/// `user_version` (a version-1 store opened read-only keeps its version-1
/// guards; a version-2 store with them is altered). A planted trigger would rewrite every later honest append,
/// and a planted view or index could change what a query reads, so nothing
/// may be added, dropped or altered.
///
/// Root page numbers are not compared (they are SQLite's bookkeeping, and
/// differ between any two files). What they could redirect is covered
/// elsewhere: tables are read by verification itself, and no read that feeds
/// a decision goes through a secondary index (see `store.rs`).
pub(crate) fn schema_difference(conn: &Connection) -> Result<Option<String>> {
    let version: i64 = conn
        .pragma_query_value(None, "user_version", |r| r.get(0))
        .map_err(Error::sqlite("reading the schema version"))?;
    schema_difference_from(conn, version)
}

/// [`schema_difference`] against the schema of `version`.
fn schema_difference_from(conn: &Connection, version: i64) -> Result<Option<String>> {
    // Text must be stored as UTF-8, as ratchet creates it. In a UTF-16
    // database SQLite converts every value to UTF-8 on reading (what
    // verification hashes) but compares the stored UTF-16 in SQL, and the
    // conversion is lossy (an odd byte dropped, surrogates aliased): a row
    // could verify as one commit and be invisible to `WHERE commit_id = ?`
    // (red team, issue 14).
    let encoding: String = conn
        .pragma_query_value(None, "encoding", |r| r.get(0))
        .map_err(Error::sqlite("reading the text encoding"))?;
    if encoding != "UTF-8" {
        return Ok(Some(format!(
            "the database stores text as {encoding}, not UTF-8"
        )));
    }
    let expected = expected_schema(version)?;
    let found = read_schema(conn, "main")?;
    let describe = |r: &SchemaRow| format!("{} {}", r.0, r.1);
    for e in expected {
        match found.iter().find(|f| f.0 == e.0 && f.1 == e.1) {
            None => return Ok(Some(format!("{} was dropped", describe(e)))),
            Some(f) if f != e => return Ok(Some(format!("{} was altered", describe(e)))),
            Some(_) => {}
        }
    }
    if let Some(extra) = found
        .iter()
        .find(|f| !expected.iter().any(|e| e.0 == f.0 && e.1 == f.1))
    {
        return Ok(Some(format!("{} was added", describe(extra))));
    }
    if let Some(temp) = read_schema(conn, "temp")?.first() {
        return Ok(Some(format!(
            "{} exists in this connection's TEMP schema",
            describe(temp)
        )));
    }
    Ok(None)
}

/// Starts the one write transaction an append or a merge runs in, after
/// refusing a store opened read-only (`read_only_dir` names its directory)
/// and a schema that is not ratchet's.
pub(crate) fn begin_write<'c>(
    conn: &'c mut Connection,
    checked_cookie: &mut Option<i64>,
    read_only_dir: Option<&std::path::PathBuf>,
    what: &'static str,
) -> Result<rusqlite::Transaction<'c>> {
    if let Some(dir) = read_only_dir {
        return Err(Error::ReadOnly { path: dir.clone() });
    }
    let tx = conn
        .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
        .map_err(Error::sqlite(what))?;
    ensure_unaltered(&tx, checked_cookie)?;
    Ok(tx)
}

/// Refuses to write into a store whose schema was altered. Reads SQLite's
/// schema cookie inside the caller's write transaction (one pragma) and
/// compares the whole schema only when the cookie moved since the last check,
/// so a trigger planted while a store is open is caught at the next write.
pub(crate) fn ensure_unaltered(conn: &Connection, checked_cookie: &mut Option<i64>) -> Result<()> {
    let cookie: i64 = conn
        .pragma_query_value(None, "schema_version", |r| r.get(0))
        .map_err(Error::sqlite("reading the schema version"))?;
    if *checked_cookie == Some(cookie) {
        return Ok(());
    }
    if let Some(what) = schema_difference(conn)? {
        return Err(Error::SchemaAltered { what });
    }
    *checked_cookie = Some(cookie);
    Ok(())
}

/// The metadata keys a store may hold; anything else was added by hand.
pub(crate) const META_KEYS: [&str; 4] = ["format", "store_id", "created_ms", "writer_key_id"];

/// Applies the per-connection settings (none of them is stored in the file).
pub(crate) fn configure(
    conn: &Connection,
    durability: Durability,
    busy: Duration,
    read_only: bool,
) -> Result<()> {
    conn.busy_timeout(busy)
        .map_err(Error::sqlite("setting busy_timeout"))?;
    if read_only {
        // Choosing a journal mode or a sync level is a write: a read-only
        // connection takes the file as it is.
        conn.execute_batch(
            "PRAGMA query_only = ON;
             PRAGMA recursive_triggers = ON;
             PRAGMA trusted_schema = OFF;
             PRAGMA mmap_size = 268435456;",
        )
        .map_err(Error::sqlite("configuring the connection"))?;
        conn.set_prepared_statement_cache_capacity(64);
        return Ok(());
    }
    let sync = match durability {
        Durability::Full => "FULL",
        Durability::Normal => "NORMAL",
    };
    conn.execute_batch(&format!(
        "PRAGMA journal_mode = WAL;
         PRAGMA synchronous = {sync};
         PRAGMA recursive_triggers = ON;
         PRAGMA trusted_schema = OFF;
         PRAGMA mmap_size = 268435456;"
    ))
    .map_err(Error::sqlite("configuring the connection"))?;
    conn.set_prepared_statement_cache_capacity(64);
    Ok(())
}

/// Opens `db` read-only as an immutable file (SQLite's `immutable=1`): for a
/// WAL store in a directory this process may not write, where SQLite could
/// not create the shared-memory file a WAL read needs.
pub(crate) fn open_immutable(db: &Path) -> Result<Connection> {
    let mut uri = String::from("file:");
    for c in db.to_string_lossy().chars() {
        match c {
            '?' => uri.push_str("%3f"),
            '#' => uri.push_str("%23"),
            '%' => uri.push_str("%25"),
            c => uri.push(c),
        }
    }
    uri.push_str("?immutable=1");
    Connection::open_with_flags(
        &uri,
        OpenFlags::SQLITE_OPEN_READ_ONLY
            | OpenFlags::SQLITE_OPEN_URI
            | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .map_err(|e| not_a_store(db, e))
}

/// Reads `application_id` and `user_version` and refuses anything that is not a
/// store this build can read.
pub(crate) fn check_header(conn: &Connection, path: &Path) -> Result<()> {
    let app: i64 = conn
        .pragma_query_value(None, "application_id", |r| r.get(0))
        .map_err(|e| not_a_store(path, e))?;
    let version: i64 = conn
        .pragma_query_value(None, "user_version", |r| r.get(0))
        .map_err(|e| not_a_store(path, e))?;
    if app != APPLICATION_ID {
        return Err(Error::NotAStore {
            path: path.to_path_buf(),
            reason: format!("SQLite application_id is {app:#x}, not ratchet's {APPLICATION_ID:#x}"),
        });
    }
    if version > SCHEMA_VERSION {
        return Err(Error::SchemaTooNew {
            path: path.to_path_buf(),
            found: version,
            supported: SCHEMA_VERSION,
        });
    }
    if version < 1 {
        return Err(Error::NotAStore {
            path: path.to_path_buf(),
            reason: format!("schema version {version} is not a ratchet schema"),
        });
    }
    Ok(())
}

pub(crate) fn not_a_store(path: &Path, e: rusqlite::Error) -> Error {
    if let rusqlite::Error::SqliteFailure(f, _) = &e
        && f.code == rusqlite::ErrorCode::NotADatabase
    {
        return Error::NotAStore {
            path: path.to_path_buf(),
            reason: "the file is not an SQLite database".into(),
        };
    }
    Error::Sqlite {
        context: "reading the store header",
        source: e,
    }
}
