//! `ratchet-trace`: the hash-chained, append-only trace store that every
//! ratchet decision is recomputed from.
//!
//! # Brief overview
//!
//! A [`Store`] is a directory holding `trace.db` (SQLite, WAL) and `blobs/`.
//! Every [`Event`] is a link of one hash chain; events of the reserved kinds
//! `score` and `test_run` are also projected, in the same transaction, into
//! typed, indexed tables ([`Score`], [`TestRun`]) for SQL users.
//! [`Store::verify`] recomputes every hash and every projection row and
//! names the first bad `seq` ([`Fault`]); [`Store::verified`] also folds what
//! it checked into a [`Verified`] view — the only thing a decision reads
//! ("is commit B better than commit A": [`Verified::commit_stats`],
//! [`Verified::paired_scores`]). A [`Ledger`] keeps that view warm for a
//! long-lived owner, reading only what is appended after the head it holds.
//! A [`Checkpoint`] held elsewhere detects truncation and rollback; a
//! [`WriterKey`] adds a MAC per event that nobody without the key can forge;
//! [`Store::merge_cell`] folds a sandbox's store into the home chain.
//!
//! ```
//! use ratchet_trace::{AsOf, CommitId, EventDraft, Score, Store, StoreOptions};
//!
//! let dir = tempfile::tempdir()?;
//! let mut store = Store::create(dir.path().join(".ratchet"), StoreOptions::default())?;
//! let commit = CommitId::parse("4b825dc642cb6eb9a060e54bf8d69288fbee4904")?;
//!
//! store.append(EventDraft::json("note", &serde_json::json!({"msg": "hello"}))?)?;
//! store.record_score(&Score::new(commit.clone(), "task-1", "accuracy", 0.75), "run-1")?;
//! store.record_score(&Score::new(commit.clone(), "task-2", "accuracy", 0.25), "run-1")?;
//!
//! let view = store.verified(&Default::default())?; // Err(Tampered) on any fault
//! let stats = view.commit_stats_for(&commit, "accuracy", AsOf::Head).expect("two scores");
//! assert_eq!((stats.n, stats.mean), (2, 0.5));
//! assert!(view.report().is_valid());
//! assert_eq!(store.checkpoint()?.size, 3);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # The hashed layout (version 1)
//!
//! The layout is a compatibility promise, pinned by a known-answer test and a
//! committed fixture store. All integers are little-endian except the id.
//!
//! * `genesis = BLAKE3-derive-key("ratchet-trace 2026-11-30 genesis v1",
//!   u32 len ‖ store_id)`. Event 1 chains from it, so a row replayed from one
//!   store into another breaks.
//! * `store_key = BLAKE3-derive-key("ratchet-trace 2026-11-30 store key v1",
//!   store_id)`: derive-key mode separates the domain and binds the store id
//!   into every event hash without hashing it per row.
//! * `hash = BLAKE3-keyed(store_key, L)` where `L` is, in order:
//!   `u64 seq`, `prev_hash[32]`, `id[16]` (the ULID's 128 bits, big-endian,
//!   as stored), `i64 ts_ms`, cell as `u8 0` (the store itself) or
//!   `u8 1 ‖ u32 len ‖ cell`, `u32 len ‖ session`, `u32 len ‖ kind`, commit
//!   as `u8 0` or `u8 n ‖ n bytes` (n = 20 or 32, the object id's bytes),
//!   origin as `u8 0` or
//!   `u8 1 ‖ u32 len ‖ origin store ‖ u64 origin seq ‖ origin hash[32]`,
//!   `u64 len ‖ payload` (the JSON bytes exactly as stored).
//! * Keyed mode: `mac_key = BLAKE3-derive-key("ratchet-trace 2026-11-30
//!   writer mac key v1", secret)`, `mac = BLAKE3-keyed(mac_key, hash)`,
//!   compared in constant time. The store records only the key id,
//!   `BLAKE3-derive-key("ratchet-trace 2026-11-30 writer key id v1", secret)`.
//!
//! # Guarantees
//!
//! * Append-only in SQL: triggers refuse UPDATE and DELETE from any client,
//!   and an `INSERT OR REPLACE` through ratchet's own connections; the API
//!   has no edit. A REPLACE from another SQLite client is not refused (no
//!   per-row insert trigger: it cost a third of every append) but, like any
//!   edit, is found by [`Store::verify`] at its seq.
//! * Every write is one `BEGIN IMMEDIATE` transaction that reads the head
//!   inside it; WAL with `synchronous=FULL` by default ([`Durability`]).
//!   Several processes may append at once; each commit is all or nothing.
//! * Bad input (NaN scores, abbreviated commits, invalid JSON, oversized
//!   payloads) is refused with an [`Error`] naming the field, before anything
//!   is written.
#![deny(missing_docs)]

/// Columns read for an event, in this order, by [`event_from_row`] (a macro
/// so hot queries are `concat!`ed at compile time, not formatted per call).
macro_rules! event_columns {
    () => {
        "seq, id, ts_ms, cell, session, kind, commit_id, payload, \
         origin_store, origin_seq, origin_hash, prev_hash, hash, mac"
    };
}

mod blob;
mod checkpoint;
mod encoding;
mod error;
mod event;
pub mod hex_hash;
mod ledger;
mod merge;
mod projection;
mod read;
mod rows;
mod schema;
mod store;
mod summary;
mod verify;
mod view;
mod walk;
mod write;

pub use blake3::Hash;
pub use checkpoint::Checkpoint;
pub use encoding::{
    GENESIS_CONTEXT, KEY_ID_CONTEXT, MAC_KEY_CONTEXT, STORE_KEY_CONTEXT, WriterKey,
};
pub use error::{Error, Result};
pub use event::{
    CommitId, DEFAULT_MAX_INLINE_PAYLOAD, Event, EventDraft, MAX_NAME_LEN, Origin, Receipt,
    ReservedKind,
};
pub use ledger::Ledger;
pub use merge::{MergeOptions, MergeReport};
pub use projection::{KIND_SCORE, KIND_TEST_RUN, MAX_FAILURES_NAMED, Score, TestRun};
pub use read::Tail;
pub use schema::{APPLICATION_ID, Durability, SCHEMA_VERSION};
pub use store::{AppendOnce, DB_FILE, EventFilter, Head, Store, StoreOptions};
pub use ulid::Ulid;
pub use verify::{Fault, FaultKind, VerifyOptions, VerifyReport};
pub use view::{
    AsOf, CommitCounts, CommitStats, KEPT_CALLER_KINDS, Overview, PairedScores, PairedSeqs,
    PairedTask, Producer, ScoreRow, ScorerCounts, ScorerRef, ScorerVersion, SetAside, Side,
    Sources, Verified, is_plain, merge_set_aside, own_control_events,
};
