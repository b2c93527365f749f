//! What someone with write access to `trace.db` can do behind the store's
//! back: raw SQL with the append-only guards lifted, a chain re-linked by
//! the documented layout, bytes edited in the file.

use std::path::{Path, PathBuf};

use rusqlite::Connection;

/// The database file of the store at `store_dir`.
pub fn db_path(store_dir: &Path) -> PathBuf {
    store_dir.join(ratchet_trace::DB_FILE)
}

/// A plain SQLite connection to the database file of the store at
/// `store_dir`, waiting up to 30 s for a lock, the guards left as they are:
/// the attacker's tool before they decide what to lift.
pub fn raw_connection(store_dir: &Path) -> Connection {
    let c = Connection::open(db_path(store_dir)).expect("raw open");
    c.busy_timeout(std::time::Duration::from_secs(30))
        .expect("busy");
    c
}

/// A raw connection with the append-only triggers dropped: what someone with
/// write access to the file can do. A careful attacker covers their tracks:
/// the triggers are put back, byte for byte, when the connection is dropped
/// (verification checks the schema, so leaving them dropped is itself caught).
pub fn attacker(store_dir: &Path) -> Attacker {
    let c = raw_connection(store_dir);
    let triggers = lift_guards(&c);
    Attacker {
        conn: c,
        triggers: triggers.into_iter().map(|(_, sql)| sql).collect(),
    }
}

/// See [`attacker`].
#[derive(Debug)]
pub struct Attacker {
    conn: Connection,
    triggers: Vec<String>,
}

impl std::ops::Deref for Attacker {
    type Target = Connection;
    fn deref(&self) -> &Connection {
        &self.conn
    }
}

impl Drop for Attacker {
    fn drop(&mut self) {
        for sql in &self.triggers {
            self.conn.execute_batch(sql).expect("restore trigger");
        }
    }
}

/// The documented layout, implemented again from the crate docs: an attacker
/// who knows it can rebuild a plain chain after an edit, but not the MACs.
pub fn documented_hash(store_id: &str, row: &rusqlite::Row<'_>, prev: &[u8; 32]) -> blake3::Hash {
    fn s(buf: &mut Vec<u8>, x: &str) {
        buf.extend_from_slice(&(x.len() as u32).to_le_bytes());
        buf.extend_from_slice(x.as_bytes());
    }
    let seq: i64 = row.get("seq").expect("seq");
    let id: Vec<u8> = row.get("id").expect("id");
    let ts: i64 = row.get("ts_ms").expect("ts");
    let commit: Option<String> = row.get("commit_id").expect("commit");
    let payload: Vec<u8> = row.get("payload").expect("payload");
    let mut b = Vec::new();
    b.extend_from_slice(&(seq as u64).to_le_bytes());
    b.extend_from_slice(prev);
    b.extend_from_slice(&id);
    b.extend_from_slice(&ts.to_le_bytes());
    let cell: String = row.get("cell").expect("cell");
    if cell == store_id {
        b.push(0);
    } else {
        b.push(1);
        s(&mut b, &cell);
    }
    for col in ["session", "kind"] {
        s(&mut b, &row.get::<_, String>(col).expect(col));
    }
    match commit {
        None => b.push(0),
        Some(c) => {
            let bytes: Vec<u8> = (0..c.len())
                .step_by(2)
                .map(|i| u8::from_str_radix(&c[i..i + 2], 16).expect("hex commit"))
                .collect();
            b.push(bytes.len() as u8);
            b.extend_from_slice(&bytes);
        }
    }
    b.push(0); // no origin in these tests
    b.extend_from_slice(&(payload.len() as u64).to_le_bytes());
    b.extend_from_slice(&payload);
    let key = blake3::derive_key(ratchet_trace::STORE_KEY_CONTEXT, store_id.as_bytes());
    blake3::keyed_hash(&key, &b)
}

/// The hash before the first event of the store `store_id`, by the documented layout.
pub fn genesis(store_id: &str) -> blake3::Hash {
    let mut h = blake3::Hasher::new_derive_key(ratchet_trace::GENESIS_CONTEXT);
    h.update(&(store_id.len() as u32).to_le_bytes());
    h.update(store_id.as_bytes());
    h.finalize()
}

/// Re-links every hash from `from` on, as an attacker without the key would.
pub fn recompute_chain(conn: &Connection, store_id: &str, from: i64) {
    let mut prev: [u8; 32] = if from == 1 {
        *genesis(store_id).as_bytes()
    } else {
        let v: Vec<u8> = conn
            .query_row("SELECT hash FROM events WHERE seq = ?1", [from - 1], |r| {
                r.get(0)
            })
            .expect("prev");
        v.try_into().expect("32 bytes")
    };
    let seqs: Vec<i64> = conn
        .prepare("SELECT seq FROM events WHERE seq >= ?1 ORDER BY seq")
        .expect("prep")
        .query_map([from], |r| r.get(0))
        .expect("query")
        .collect::<Result<_, _>>()
        .expect("seqs");
    for seq in seqs {
        let h = conn
            .query_row("SELECT * FROM events WHERE seq = ?1", [seq], |r| {
                Ok(documented_hash(store_id, r, &prev))
            })
            .expect("row");
        conn.execute(
            "UPDATE events SET prev_hash = ?1, hash = ?2 WHERE seq = ?3",
            rusqlite::params![&prev[..], &h.as_bytes()[..], seq],
        )
        .expect("relink");
        prev = *h.as_bytes();
    }
}

/// Recomputes the kept per-commit statistics (`commit_stats`) from the score
/// rows, as the crate documents them (Welford per scorer × version × commit,
/// in seq order): what a careful attacker does after editing scores, so the
/// store stays self-consistent.
pub fn refold_commit_stats(conn: &Connection) {
    #[derive(Default, Clone, Copy)]
    struct W {
        n: i64,
        mean: f64,
        m2: f64,
        min: f64,
        max: f64,
        last: i64,
    }
    let rows: Vec<(i64, String, String, String, f64)> = conn
        .prepare("SELECT seq, scorer, scorer_version, commit_id, value FROM scores ORDER BY seq")
        .and_then(|mut st| {
            st.query_map([], |r| {
                Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?))
            })?
            .collect()
        })
        .expect("read scores");
    let mut folds: std::collections::BTreeMap<(String, String, String), W> = Default::default();
    for (seq, scorer, version, commit, x) in rows {
        let w = folds.entry((scorer, version, commit)).or_default();
        if w.n == 0 {
            (w.min, w.max) = (x, x);
        } else {
            (w.min, w.max) = (w.min.min(x), w.max.max(x));
        }
        w.n += 1;
        let d = x - w.mean;
        w.mean += d / w.n as f64;
        w.m2 += d * (x - w.mean);
        w.last = seq;
    }
    conn.execute("DELETE FROM commit_stats", []).expect("clear");
    for ((scorer, version, commit), w) in folds {
        conn.execute(
            "INSERT INTO commit_stats VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
            rusqlite::params![
                scorer, version, commit, w.n, w.mean, w.m2, w.min, w.max, w.last
            ],
        )
        .expect("insert");
    }
}

/// Closes nothing itself: the caller must have dropped every `Store` on the
/// directory. Moves every WAL frame into the main file and leaves no WAL, so
/// the bytes of `trace.db` are the database.
pub fn settle(dir: &Path) {
    let c = Connection::open(db_path(dir)).expect("raw open");
    c.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))
        .expect("checkpoint");
    c.pragma_update(None, "journal_mode", "DELETE")
        .expect("leave WAL");
    drop(c);
    let wal = dir.join(format!("{}-wal", ratchet_trace::DB_FILE));
    assert!(
        !wal.exists() || std::fs::metadata(&wal).expect("wal").len() == 0,
        "no WAL left"
    );
}

/// Replaces the one occurrence of `from` in the settled database file by `to`.
pub fn replace_bytes(dir: &Path, from: &[u8], to: &[u8]) {
    settle(dir);
    let path = db_path(dir);
    let mut bytes = std::fs::read(&path).expect("read db");
    let at: Vec<usize> = bytes
        .windows(from.len())
        .enumerate()
        .filter(|(_, w)| *w == from)
        .map(|(i, _)| i)
        .collect();
    assert_eq!(at.len(), 1, "the pattern occurs once");
    bytes[at[0]..at[0] + to.len()].copy_from_slice(to);
    std::fs::write(&path, bytes).expect("write db");
}

/// Deletes the WAL, shared-memory and journal files beside `trace.db`: the
/// database is then exactly its main file.
pub fn remove_wal(dir: &Path) {
    for ext in ["-wal", "-shm", "-journal"] {
        let p = dir.join(format!("{}{ext}", ratchet_trace::DB_FILE));
        if p.exists() {
            std::fs::remove_file(p).expect("remove");
        }
    }
}

/// The root page of the table or index `name` in the schema `c` reads.
pub fn root_page(c: &Connection, name: &str) -> i64 {
    c.query_row(
        "SELECT rootpage FROM sqlite_schema WHERE name = ?1",
        [name],
        |r| r.get(0),
    )
    .expect("root page")
}

/// The page size of the store's database and the root page of `table`.
pub fn page_size_and_root(dir: &Path, table: &str) -> (usize, usize) {
    let c = Connection::open(db_path(dir)).expect("raw open");
    let ps: i64 = c
        .pragma_query_value(None, "page_size", |r| r.get(0))
        .expect("page size");
    (ps as usize, root_page(&c, table) as usize)
}

/// Rewrites the cell-pointer array of a one-page WITHOUT ROWID table (its
/// root is a leaf index page): `order[i]` is the sorted position of the row
/// to put at cell i. Only the order of the pointers changes — every cell,
/// every byte of every row stays as SQLite wrote it. Every `Store` on `dir`
/// must be dropped.
pub fn permute_leaf_cells(dir: &Path, table: &str, order: &[usize]) {
    settle(dir);
    let (ps, root) = page_size_and_root(dir, table);
    let path = db_path(dir);
    let mut bytes = std::fs::read(&path).expect("read db");
    let base = (root - 1) * ps;
    assert_eq!(bytes[base], 0x0a, "{table}'s root is a leaf index page");
    let n = u16::from_be_bytes([bytes[base + 3], bytes[base + 4]]) as usize;
    assert_eq!(n, order.len(), "cells on the page");
    let ptrs: Vec<[u8; 2]> = (0..n)
        .map(|i| [bytes[base + 8 + 2 * i], bytes[base + 9 + 2 * i]])
        .collect();
    for (i, &from) in order.iter().enumerate() {
        bytes[base + 8 + 2 * i..base + 10 + 2 * i].copy_from_slice(&ptrs[from]);
    }
    std::fs::write(&path, bytes).expect("write db");
}

/// Drops the append-only guards of `c`, runs `edit`, and puts them back
/// byte for byte — what a careful attacker with file access does.
pub fn with_guards_lifted(c: &Connection, edit: impl FnOnce(&Connection)) {
    let guards = lift_guards(c);
    assert!(
        guards.iter().any(|(n, _)| n == "scores_no_update"),
        "the guards exist: {guards:?}"
    );
    edit(c);
    for (_, sql) in &guards {
        c.execute_batch(sql).expect("re-create a guard");
    }
}

/// Drops every trigger of `c` and returns their names and SQL, to be run again.
fn lift_guards(c: &Connection) -> Vec<(String, String)> {
    let guards: Vec<(String, String)> = c
        .prepare("SELECT name, sql FROM sqlite_master WHERE type = 'trigger' ORDER BY name")
        .and_then(|mut st| st.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?.collect())
        .expect("list the triggers");
    for (name, _) in &guards {
        c.execute_batch(&format!("DROP TRIGGER \"{name}\";"))
            .expect("drop a guard");
    }
    guards
}
