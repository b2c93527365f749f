//! The SQLite schema, its version and the per-connection settings.

use std::path::Path;
use std::time::Duration;

use rusqlite::Connection;

use crate::error::{Error, Result};

/// `PRAGMA application_id` of a ratchet trace store ("RATC").
pub const APPLICATION_ID: i64 = 0x5241_5443;
/// The schema version this build writes and the newest it reads.
pub const SCHEMA_VERSION: i64 = 1;

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
CREATE INDEX events_by_origin ON events (origin_store, origin_seq) WHERE origin_store IS NOT NULL;

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

/// Append-only, enforced in SQL: no UPDATE, no DELETE, and no INSERT that would
/// replace an existing row (`INSERT OR REPLACE` deletes without firing DELETE
/// triggers unless `recursive_triggers` is on, so it is stopped before it starts).
///
/// The guards raise FAIL, not ABORT: they are BEFORE triggers, so they fire
/// before the row's statement has changed anything (and, for REPLACE, before
/// the conflicting row is deleted), which makes FAIL just as safe; and RAISE
/// (ABORT) would make SQLite keep a statement journal for every INSERT of our
/// own, which measured as most of the cost of the chained append.
///
/// REPLACE can only delete a row whose PRIMARY KEY or UNIQUE column collides,
/// so each table has exactly one unique key (`seq`, or `key` for meta) and the
/// guard checks only that. Event ids are unique by construction instead: the
/// writer allocates them above the largest id under the write lock, and a merge
/// looks each incoming id up (the equivocation check).
fn guard_triggers(table: &str, key_match: &str) -> String {
    format!(
        r#"
CREATE TRIGGER {table}_no_update BEFORE UPDATE ON {table}
BEGIN SELECT RAISE(FAIL, 'ratchet: {table} is append-only; UPDATE is refused'); END;
CREATE TRIGGER {table}_no_delete BEFORE DELETE ON {table}
BEGIN SELECT RAISE(FAIL, 'ratchet: {table} is append-only; DELETE is refused'); END;
CREATE TRIGGER {table}_no_replace BEFORE INSERT ON {table}
WHEN EXISTS (SELECT 1 FROM {table} WHERE {key_match})
BEGIN SELECT RAISE(FAIL, 'ratchet: {table} is append-only; a row with this key exists'); END;
"#
    )
}

pub(crate) fn all_triggers() -> String {
    [
        guard_triggers("meta", "key = NEW.key"),
        guard_triggers("events", "seq = NEW.seq"),
        guard_triggers("scores", "seq = NEW.seq"),
        guard_triggers("test_runs", "seq = NEW.seq"),
    ]
    .concat()
}

/// Applies the per-connection settings (none of them is stored in the file).
pub(crate) fn configure(conn: &Connection, durability: Durability, busy: Duration) -> Result<()> {
    conn.busy_timeout(busy)
        .map_err(Error::sqlite("setting busy_timeout"))?;
    let sync = match durability {
        Durability::Full => "FULL",
        Durability::Normal => "NORMAL",
    };
    conn.execute_batch(&format!(
        "PRAGMA journal_mode = WAL;
         PRAGMA synchronous = {sync};
         PRAGMA recursive_triggers = ON;
         PRAGMA mmap_size = 268435456;"
    ))
    .map_err(Error::sqlite("configuring the connection"))?;
    conn.set_prepared_statement_cache_capacity(64);
    Ok(())
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
