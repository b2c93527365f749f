//! Helpers shared by the gate's attack suites (attacks, file_edits_of_the_evidence,
//! cells_and_declarations): the class they decide, and (from
//! `ratchet-testkit`) the commits, the writer key, the documented hash
//! layout and the guards-lifting editor.
#![allow(dead_code, unused_imports)]

pub use ratchet_testkit::{
    WRITER_SECRET, base, cand, commit, documented_hash, genesis, prompt_policy, with_guards_lifted,
    writer_key as key,
};

/// The class the attack suites decide: a paired SPRT on `accuracy` over
/// [`TASKS`] tasks, the `unit` suite required ([`prompt_policy`]).
pub const CLASS: &str = "prompt";
pub const SCORER: &str = "accuracy";
pub const SUITE: &str = "unit";
pub const TASKS: usize = 300;

/// The question "is `candidate` better than `baseline` under `policy` (the
/// class `class`)?", asked of the store's head with no checkpoint held
/// elsewhere: the question almost every gate test decides. Its class may
/// be unpinned on a keyed store (these tests are about the evidence; the
/// pin's own promises are tested with [`ratchet_gate::Question`] built
/// whole).
pub fn question<'a>(
    class: &'a str,
    policy: &'a ratchet_gate::ClassPolicy,
    baseline: &'a ratchet_trace::CommitId,
    candidate: &'a ratchet_trace::CommitId,
) -> ratchet_gate::Question<'a> {
    ratchet_gate::Question {
        class,
        policy,
        baseline,
        candidate,
        checkpoint: None,
        allow_unpinned: true,
    }
}
