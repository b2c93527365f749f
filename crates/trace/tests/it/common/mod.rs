//! Helpers shared by the integration tests: stores with known content, and
//! an "attacker" who edits the database behind the store's back.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

use ratchet_trace::{CommitId, EventDraft, FaultKind, Score, Store, StoreOptions, TestRun};

pub fn commit(n: u8) -> CommitId {
    CommitId::parse(&format!("{n:02x}").repeat(20)).expect("valid commit")
}

/// A store in a fresh temporary directory.
pub fn new_store() -> (tempfile::TempDir, Store) {
    new_store_with(StoreOptions::default())
}

pub fn new_store_with(options: StoreOptions) -> (tempfile::TempDir, Store) {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = Store::create(dir.path().join("store"), options).expect("create store");
    (dir, store)
}

/// Appends `n` events cycling through notes, scores and test runs.
pub fn fill(store: &mut Store, n: usize) {
    let drafts: Vec<EventDraft> = (0..n).map(mixed_draft).collect();
    store.append_batch(drafts).expect("append");
}

pub fn mixed_draft(i: usize) -> EventDraft {
    match i % 3 {
        0 => EventDraft::json(
            "note",
            &serde_json::json!({"i": i, "marker": format!("MARK{i:06}")}),
        )
        .expect("json")
        .session("s1"),
        1 => Score::new(
            commit((i % 4) as u8),
            format!("task-{}", i % 7),
            "acc",
            (i % 10) as f64 / 10.0,
        )
        .to_draft()
        .expect("score"),
        _ => TestRun {
            commit: commit((i % 4) as u8),
            suite: "unit".into(),
            passed: i as u64,
            failed: 0,
            skipped: 1,
            duration_ms: 12.5,
            failures: Vec::new(),
        }
        .to_draft()
        .expect("test run"),
    }
}

pub fn db_path(store_dir: &Path) -> PathBuf {
    store_dir.join(ratchet_trace::DB_FILE)
}

/// A raw connection with the append-only triggers dropped: what someone with
/// write access to the file can do. A careful attacker covers their tracks:
/// the triggers are put back, byte for byte, when the connection is dropped
/// (verification checks the schema, so leaving them dropped is itself caught).
pub fn attacker(store_dir: &Path) -> Attacker {
    let c = rusqlite::Connection::open(db_path(store_dir)).expect("raw open");
    c.busy_timeout(std::time::Duration::from_secs(30))
        .expect("busy");
    let triggers: Vec<(String, String)> = c
        .prepare("SELECT name, sql FROM sqlite_master WHERE type = 'trigger' ORDER BY name")
        .and_then(|mut st| st.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?.collect())
        .expect("read triggers");
    for (name, _) in &triggers {
        c.execute_batch(&format!("DROP TRIGGER {name};"))
            .expect("drop trigger");
    }
    Attacker {
        conn: c,
        triggers: triggers.into_iter().map(|(_, sql)| sql).collect(),
    }
}

/// See [`attacker`].
pub struct Attacker {
    conn: rusqlite::Connection,
    triggers: Vec<String>,
}

impl std::ops::Deref for Attacker {
    type Target = rusqlite::Connection;
    fn deref(&self) -> &rusqlite::Connection {
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

pub fn genesis(store_id: &str) -> blake3::Hash {
    let mut h = blake3::Hasher::new_derive_key(ratchet_trace::GENESIS_CONTEXT);
    h.update(&(store_id.len() as u32).to_le_bytes());
    h.update(store_id.as_bytes());
    h.finalize()
}

/// Re-links every hash from `from` on, as an attacker without the key would.
pub fn recompute_chain(conn: &rusqlite::Connection, store_id: &str, from: i64) {
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
pub fn refold_commit_stats(conn: &rusqlite::Connection) {
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

// Shared by the red-team files (kept_statistics.rs, encoding_and_raw_writes.rs).

pub fn reopen(dir: &Path) -> Store {
    Store::open(dir, StoreOptions::default()).expect("reopen")
}

pub fn score(c: u8, task: &str, scorer: &str, value: f64) -> Score {
    Score::new(commit(c), task, scorer, value)
}

pub fn fault(store: &Store) -> Option<(u64, FaultKind)> {
    store
        .verify()
        .expect("verification runs")
        .fault
        .map(|f| (f.seq, f.kind))
}

/// Closes nothing itself: the caller must have dropped every `Store` on the
/// directory. Moves every WAL frame into the main file and leaves no WAL, so
/// the bytes of `trace.db` are the database.
pub fn settle(dir: &Path) {
    let c = rusqlite::Connection::open(db_path(dir)).expect("raw open");
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

/// The store's verified view (default options): what every decision reads.
pub fn view(store: &Store) -> ratchet_trace::Verified {
    store
        .verified(&ratchet_trace::VerifyOptions::default())
        .expect("the store verifies")
}

/// The fault a refused verification names, as (seq, kind).
pub fn refused(result: ratchet_trace::Result<ratchet_trace::Verified>) -> (u64, FaultKind) {
    match result {
        Err(ratchet_trace::Error::Tampered { fault }) => (fault.seq, fault.kind),
        Err(e) => panic!("refused, but not as tampered: {e}"),
        Ok(v) => panic!(
            "verification accepted a tampered store at head {:?}",
            v.head()
        ),
    }
}

/// Statistics as their bits: `==` on `f64` would let `-0.0` equal `0.0`.
pub fn bits(
    stats: &[ratchet_trace::CommitStats],
) -> Vec<(String, u64, u64, Option<u64>, u64, u64)> {
    stats
        .iter()
        .map(|s| {
            (
                s.commit.to_string(),
                s.n,
                s.mean.to_bits(),
                s.variance.map(f64::to_bits),
                s.min.to_bits(),
                s.max.to_bits(),
            )
        })
        .collect()
}
