//! Fixtures shared by the tests of ratchet's crates, written once: commit
//! ids, stores in temporary directories, the gate's policy tables, the
//! order a pool of workers completes jobs in, the edits an attacker with
//! file access makes to `trace.db`, and (feature
//! `git`) repositories built without a git binary.
//!
//! A dev-dependency only (`publish = false`): nothing here is part of
//! ratchet's API, and no crate's library may depend on it.

mod arrival;
mod policy;
mod raw;
mod store;
mod utf16;

#[cfg(feature = "git")]
pub mod git;

pub use arrival::pool_completions;
pub use policy::{
    REQUIRES_UNIT, gap_class, gap_class_with_beta, guardrail, paired_class, paired_class_to,
    prompt_policy,
};
pub use raw::{
    Attacker, attacker, db_path, documented_hash, genesis, page_size_and_root, permute_leaf_cells,
    raw_connection, recompute_chain, refold_commit_stats, remove_wal, replace_bytes, root_page,
    settle, with_guards_lifted,
};
pub use store::{
    WRITER_SECRET, base, cand, commit, fault, new_store, new_store_with, refused, reopen, score,
    unit_run, view, writer_key,
};
pub use utf16::{from_utf16le, odd_split, rewrite_as_utf16, utf16le};
