//! Helpers shared by the gate's attack suites (attacks, file_edits_of_the_evidence,
//! cells_and_declarations). The documented hash layout is the trace crate's own test
//! re-implementation, included rather than copied.
#![allow(dead_code, unused_imports)]

use rusqlite::Connection;

#[path = "../../../../trace/tests/it/common/mod.rs"]
mod trace_common;

pub use trace_common::{documented_hash, genesis};

/// The class the attack suites decide: a paired SPRT on `accuracy` over
/// [`TASKS`] tasks, the `unit` suite required.
pub const CLASS: &str = "prompt";
pub const SCORER: &str = "accuracy";
pub const SUITE: &str = "unit";
pub const TASKS: usize = 300;

pub const POLICY: &str = r#"
[class.prompt]
scorer = "accuracy"
test = "paired"
alpha = 0.05
beta = 0.05
elo0 = 0.0
elo1 = 40.0
max_n = 3000
required_suites = ["unit"]
"#;

/// The writer's secret in keyed tests (fixed: the tests are seeded).
pub const WRITER_SECRET: [u8; 32] = [0x5a; 32];

pub fn key() -> ratchet_trace::WriterKey {
    ratchet_trace::WriterKey::from_secret(&WRITER_SECRET).expect("key")
}

/// Commits with hex LETTERS in them (so that upper-casing changes them).
pub fn base() -> ratchet_trace::CommitId {
    ratchet_trace::CommitId::parse(&"ab".repeat(20)).expect("commit")
}
pub fn cand() -> ratchet_trace::CommitId {
    ratchet_trace::CommitId::parse(&"cd".repeat(20)).expect("commit")
}

/// Drops the append-only guards, runs `edit`, and puts them back byte for
/// byte — what a careful attacker with file access does.
pub fn with_guards_lifted(c: &Connection, edit: impl FnOnce(&Connection)) {
    let guards: Vec<(String, String)> = c
        .prepare("SELECT name, sql FROM sqlite_master WHERE type = 'trigger' ORDER BY name")
        .and_then(|mut st| st.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?.collect())
        .expect("list the triggers");
    assert!(
        guards.iter().any(|(n, _)| n == "scores_no_update"),
        "the guards exist: {guards:?}"
    );
    for (name, _) in &guards {
        c.execute_batch(&format!("DROP TRIGGER \"{name}\";"))
            .expect("drop a guard");
    }
    edit(c);
    for (_, sql) in &guards {
        c.execute_batch(sql).expect("re-create a guard");
    }
}
