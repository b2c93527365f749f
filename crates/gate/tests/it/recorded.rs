//! Verdicts recorded by an earlier gate still recompute, byte for byte.
//!
//! `fixtures/recorded` is a store written by `examples/recorded_verdicts.rs`
//! with the gate of 2026-11-30 (before `StageReport` was typed): fourteen
//! verdicts of every shape, with the policy file they were decided under.
//! Each is recomputed with `verdict_at` at the trace size it records and
//! must equal the payload stored, byte for byte: the policy hash (its
//! canonical form), the stage reports and their field order, the numbers.
//! A change that breaks this breaks every audit of an old decision: when
//! the law changes, old verdicts recompute under the law they name
//! ([`ratchet_gate::Law`]; these name none: the first).

use crate::common;
use ratchet_gate::{KIND_DECISION, Law, Policy, Verdict, recompute_at, verdict_at};
use ratchet_trace::{Store, StoreOptions, VerifyOptions};

#[test]
fn every_recorded_verdict_recomputes_byte_for_byte() {
    let fixture = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/recorded");
    let dir = tempfile::tempdir().expect("tempdir");
    for file in ["trace.db", "policy.toml"] {
        std::fs::copy(fixture.join(file), dir.path().join(file)).expect("copy fixture");
    }
    let mut store = Store::open_read_only(dir.path(), StoreOptions::default()).expect("open");
    assert!(
        store
            .verify_with(&VerifyOptions::default())
            .expect("verify")
            .is_valid()
    );
    let policy = Policy::from_path(dir.path().join("policy.toml")).expect("policy");
    let decisions: Vec<_> = store
        .events_after(0, usize::MAX)
        .expect("events")
        .into_iter()
        .filter(|e| e.kind == KIND_DECISION)
        .collect();
    assert_eq!(decisions.len(), 14, "the fixture's verdicts");
    let mut statuses = std::collections::BTreeSet::new();
    for e in decisions {
        // Read back typed: the same bytes come out again.
        let r = Verdict::from_json(&e.payload).expect("a verdict");
        assert_eq!(
            String::from_utf8_lossy(&r.to_json().expect("json")),
            String::from_utf8_lossy(&e.payload),
            "the verdict at seq {} reads back to other bytes",
            e.seq
        );
        let class = policy.class(&r.class).expect("class");
        assert_eq!(class.hash(), r.policy_hash, "policy hash of {}", r.class);
        let q = common::question(&r.class, class, &r.baseline, &r.candidate);
        let law = Law::of_recorded(&e.payload).expect("a law");
        assert_eq!(law, Law::NameOrder, "recorded before the law had a number");
        assert_eq!(r.law, law);
        let again = recompute_at(&store, &q, r.trace.size, law).expect("recompute");
        let now = verdict_at(&mut store, &q, r.trace.size).expect("the current law");
        assert_eq!(now.law, Law::CURRENT);
        statuses.insert(format!("{:?}", again.outcome.status()));
        assert_eq!(again, r);
        assert_eq!(
            String::from_utf8_lossy(&again.to_json().expect("json")),
            String::from_utf8_lossy(&e.payload),
            "verdict at seq {} ({} {}) no longer recomputes",
            e.seq,
            r.class,
            &r.candidate.as_str()[..8]
        );
    }
    assert_eq!(
        statuses.len(),
        4,
        "promote, reject, continue and missing evidence are all covered: {statuses:?}"
    );
}
