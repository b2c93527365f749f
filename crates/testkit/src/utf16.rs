//! A store rewritten as a UTF-16 database: same rows, same hashes, another
//! text encoding, and the byte games SQLite's conversion allows.

use std::path::Path;

use rusqlite::Connection;
use rusqlite::types::Value;

use crate::{db_path, remove_wal, settle};

/// Copies the database at `dir` into a fresh UTF-16le database, object by
/// object and row by row (same SQL text, same values), then lets `tweak`
/// edit the copy, and puts the copy in place of `trace.db`.
pub fn rewrite_as_utf16(dir: &Path, tweak: impl FnOnce(&Connection)) {
    settle(dir);
    let path = db_path(dir);
    let tmp = dir.join("utf16.db");
    {
        let old = Connection::open(&path).expect("old");
        let new = Connection::open(&tmp).expect("new");
        new.execute_batch("PRAGMA encoding = 'UTF-16le';")
            .expect("encoding");
        let objects: Vec<(String, String, String)> = old
            .prepare(
                "SELECT type, name, sql FROM sqlite_schema WHERE sql IS NOT NULL ORDER BY rowid",
            )
            .and_then(|mut st| {
                st.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
                    .collect()
            })
            .expect("schema");
        for (ty, _, sql) in objects.iter().filter(|o| o.0 != "trigger") {
            new.execute_batch(sql)
                .unwrap_or_else(|e| panic!("{ty}: {e}"));
        }
        for (_, table, _) in objects.iter().filter(|o| o.0 == "table") {
            let mut st = old
                .prepare(&format!("SELECT * FROM {table}"))
                .expect("select");
            let ncol = st.column_count();
            let rows: Vec<Vec<Value>> = st
                .query_map([], |r| (0..ncol).map(|i| r.get::<_, Value>(i)).collect())
                .and_then(|rows| rows.collect())
                .expect("rows");
            let marks = vec!["?"; ncol].join(", ");
            for row in rows {
                new.execute(
                    &format!("INSERT INTO {table} VALUES ({marks})"),
                    rusqlite::params_from_iter(row),
                )
                .expect("insert");
            }
        }
        // The edit goes in before the guards, which are then created as
        // ratchet created them.
        tweak(&new);
        for (_, _, sql) in objects.iter().filter(|o| o.0 == "trigger") {
            new.execute_batch(sql).expect("trigger");
        }
        let app: i64 = old
            .pragma_query_value(None, "application_id", |r| r.get(0))
            .expect("app");
        let ver: i64 = old
            .pragma_query_value(None, "user_version", |r| r.get(0))
            .expect("ver");
        new.execute_batch(&format!(
            "PRAGMA application_id = {app}; PRAGMA user_version = {ver};"
        ))
        .expect("header");
    }
    remove_wal(dir);
    std::fs::rename(&tmp, &path).expect("replace trace.db");
}

/// `s` as UTF-16le bytes.
pub fn utf16le(s: &str) -> Vec<u8> {
    s.encode_utf16().flat_map(u16::to_le_bytes).collect()
}

/// The text of UTF-16le bytes.
pub fn from_utf16le(b: &[u8]) -> String {
    assert_eq!(b.len() % 2, 0);
    let units: Vec<u16> = b
        .chunks(2)
        .map(|c| u16::from_le_bytes([c[0], c[1]]))
        .collect();
    String::from_utf16(&units).expect("valid UTF-16")
}

/// The two texts to store in adjacent TEXT columns so that, once their
/// serial types are changed by one byte each, the first column's bytes are
/// `a` + one stray byte and the second's `b` + one stray byte.
pub fn odd_split(a: &str, b: &str) -> (String, String) {
    let mut full = utf16le(a);
    full.push(0x41);
    full.extend(utf16le(b));
    full.push(0x20);
    let cut = utf16le(a).len() + 2;
    (from_utf16le(&full[..cut]), from_utf16le(&full[cut..]))
}
