//! Red team, round 3, end to end.
//!
//! * A store rewritten as a UTF-16 database (same rows, same hashes, same
//!   MACs) with one extra byte in a test run's `commit_id` verifies with the
//!   writer key and a checkpoint, and the gate no longer sees the
//!   candidate's failed run: a reject becomes a promote.
//! * A raw writer racing heal's ranking (then `rank_commits`) got a
//!   verified ranking with the worse commit first.
//!
//! The store-level reproductions, and the mechanisms, are in
//! `crates/trace/tests/it/encoding_and_raw_writes.rs`. Both holes are fixed and their tests
//! pin the fixes: a store that does not store text as UTF-8 does not
//! verify; and the ranking reads only the view that verification folded
//! from the event bytes it checked, so bytes written into `trace.db` after
//! verification cannot reach it (each attempt is refused or ranks
//! honestly).

use std::path::Path;

use ratchet_drift::best_commit;
use ratchet_gate::{GateStatus, Policy, Question};
use ratchet_testkit::{
    base, cand, db_path as db, odd_split, prompt_policy, rewrite_as_utf16, utf16le,
};
use ratchet_trace::{CommitId, Score, Store, StoreOptions, VerifyOptions, WriterKey};
use rusqlite::Connection;

/// In the `test_runs` record (header: size, NULL rowid alias, commit_id,
/// suite, …) holding `first`/`second`, moves one byte from `commit_id` to
/// `suite` by editing their two serial types.
fn shift_one_byte(path: &Path, first: &str, second: &str) {
    let mut bytes = std::fs::read(path).expect("read");
    let (ea, eb) = (utf16le(first), utf16le(second));
    let pattern = [ea.clone(), eb.clone()].concat();
    let body: Vec<usize> = bytes
        .windows(pattern.len())
        .enumerate()
        .filter(|(_, w)| *w == pattern.as_slice())
        .map(|(i, _)| i)
        .collect();
    let (ta, tb) = (2 * ea.len() as u64 + 13, 2 * eb.len() as u64 + 13);
    assert!(
        (128..16384).contains(&ta) && tb < 126,
        "two-byte and one-byte serial types"
    );
    let header = [0u8, 0x80 | (ta >> 7) as u8, (ta & 0x7f) as u8, tb as u8];
    let starts: Vec<usize> = body
        .iter()
        .filter_map(|&b| {
            (1..32)
                .map(|h| b - h)
                .find(|&s| bytes[s] as usize == b - s && bytes[s + 1..].starts_with(&header))
        })
        .collect();
    assert_eq!(starts.len(), 1, "one test_runs record");
    let s = starts[0] + 1;
    let (na, nb) = (ta - 2, tb + 2);
    bytes[s + 1] = 0x80 | (na >> 7) as u8;
    bytes[s + 2] = (na & 0x7f) as u8;
    bytes[s + 3] = nb as u8;
    std::fs::write(path, bytes).expect("write");
}

fn decide(store: &mut Store, cp: &ratchet_trace::Checkpoint) -> ratchet_gate::Verdict {
    let policy = Policy::parse(&prompt_policy()).expect("policy");
    let (b, c) = (base(), cand());
    let q = Question {
        class: "prompt",
        policy: policy.class("prompt").expect("class"),
        baseline: &b,
        candidate: &c,
        checkpoint: Some(cp),
        // (This attack is on the store's bytes, not on the pin.)
        allow_unpinned: true,
    };
    ratchet_gate::decide(store, &q).expect("decide")
}

/// The candidate is far better on `accuracy`, but its `unit` suite failed
/// once before a green rerun: honestly, a reject at the tests stage.
#[test]
fn break_utf16_rewrite_turns_a_failed_suite_into_a_promote() {
    let tmp = tempfile::tempdir().expect("tmp");
    let dir = tmp.path().join("store");
    let (key, _) = WriterKey::generate().expect("key");
    let opts = StoreOptions::default().writer_key(key.clone());
    let mut s = Store::create(&dir, opts.clone()).expect("create");
    for failed in [2, 0] {
        s.record_test_run(&ratchet_testkit::unit_run(&cand(), 40, failed), "ci")
            .expect("run");
    }
    let mut scores = Vec::new();
    for t in 0..300 {
        let task = format!("task-{t:04}");
        scores.push(Score::new(
            base(),
            task.clone(),
            "accuracy",
            f64::from(u8::from(t % 10 < 4)),
        ));
        scores.push(Score::new(
            cand(),
            task,
            "accuracy",
            f64::from(u8::from(t % 10 < 9)),
        ));
    }
    s.record_scores(&scores, "eval").expect("scores");

    // Control: the honest verdict, on a copy.
    let ctrl = tmp.path().join("control");
    std::fs::create_dir_all(&ctrl).expect("dir");
    {
        let c = Connection::open(db(&dir)).expect("raw");
        c.execute("VACUUM INTO ?1", [db(&ctrl).to_string_lossy()])
            .expect("copy");
    }
    let mut control = Store::open(&ctrl, opts.clone()).expect("control");
    let cp = control.checkpoint().expect("cp");
    let honest = decide(&mut control, &cp);
    assert_eq!(
        honest.outcome.status(),
        GateStatus::Reject,
        "{:?}",
        honest.outcome
    );
    let cp = s.checkpoint().expect("checkpoint held elsewhere");
    drop(s);

    let (c1, s1) = odd_split(cand().as_str(), "unit");
    rewrite_as_utf16(&dir, |c| {
        c.execute(
            "UPDATE test_runs SET commit_id = ?1, suite = ?2 WHERE seq = 1",
            [&c1, &s1],
        )
        .expect("tweak");
    });
    shift_one_byte(&db(&dir), &c1, &s1);

    // Fixed: a database that stores text as UTF-16 does not verify (seq 0),
    // and the gate fails closed on it.
    let mut s = Store::open(&dir, opts).expect("open");
    let refused = s
        .verified(&VerifyOptions::default().key(key).checkpoint(cp.clone()))
        .expect_err("a UTF-16 database does not verify");
    assert!(refused.to_string().contains("UTF-16"), "{refused}");
    let v = decide(&mut s, &cp);
    assert_eq!(
        v.outcome.status(),
        GateStatus::UnverifiedTrace,
        "the gate must fail closed on the rewritten store; got {:?}",
        v.outcome
    );
}

/// A raw writer racing the ranking heal uses (`best_commit` on a verified
/// view): it toggles 8 bytes of `trace.db` — commit 2's kept mean — between
/// the honest value and a forged one, with no SQLite lock. SQLite reads the
/// main file through a shared memory map (and re-reads evicted pages), so
/// the reads of one verification can see either value; when the ranking
/// read the tables again after verification (`rank_commits`, before issue
/// 21) it could rank the worse commit first on a trace that had just
/// verified. Now the ranking reads only the view folded from the event
/// bytes verification checked: each attempt is either refused (verification
/// saw the forged kept mean) or ranks commit 1 first — never commit 2.
#[test]
fn a_raw_write_racing_verification_never_reaches_the_ranking() {
    use std::io::{Seek, SeekFrom, Write};
    use std::sync::atomic::{AtomicBool, Ordering};
    let tmp = tempfile::tempdir().expect("tmp");
    let dir = tmp.path().join("store");
    let one = CommitId::parse(&"01".repeat(20)).expect("c1");
    let two = CommitId::parse(&"02".repeat(20)).expect("c2");
    {
        let mut s = Store::create(&dir, StoreOptions::default()).expect("create");
        let mut scores = Vec::new();
        for t in 0..20 {
            let task = format!("t{t}");
            scores.push(Score::new(
                one.clone(),
                task.clone(),
                "acc",
                0.91 + f64::from(t % 3) * 0.01,
            ));
            scores.push(Score::new(
                two.clone(),
                task,
                "acc",
                0.41 + f64::from(t % 3) * 0.01,
            ));
        }
        s.record_scores(&scores, "s").expect("scores");
    }
    {
        let c = Connection::open(db(&dir)).expect("raw");
        c.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))
            .expect("ckpt");
    }
    let bytes = std::fs::read(db(&dir)).expect("read");
    let mut pat = b"acc1".to_vec();
    pat.extend_from_slice(two.as_str().as_bytes());
    let at = bytes
        .windows(pat.len())
        .position(|w| w == pat.as_slice())
        .expect("commit_stats row")
        + pat.len()
        + 1;
    let honest: [u8; 8] = bytes[at..at + 8].try_into().expect("8");
    let forged = 0.99f64.to_be_bytes();

    let store = Store::open(&dir, StoreOptions::default()).expect("open");
    let rank = |store: &Store| -> Option<Vec<CommitId>> {
        let view = store.verified(&VerifyOptions::default()).ok()?;
        Some(
            best_commit(&view, &crate::common::ranking("acc", 2, &[]))
                .expect("ranks")
                .into_iter()
                .map(|r| r.commit)
                .collect(),
        )
    };
    let stop = AtomicBool::new(false);
    let (mut named, mut forged_first, mut honest_first) = (0, 0, 0);
    std::thread::scope(|scope| {
        let path = db(&dir);
        let stop = &stop;
        scope.spawn(move || {
            let mut f = std::fs::OpenOptions::new()
                .write(true)
                .open(&path)
                .expect("open");
            let mut flip = false;
            while !stop.load(Ordering::Relaxed) {
                flip = !flip;
                f.seek(SeekFrom::Start(at as u64)).expect("seek");
                f.write_all(if flip { &forged } else { &honest })
                    .expect("write");
                std::thread::sleep(std::time::Duration::from_micros(50));
            }
            f.seek(SeekFrom::Start(at as u64)).expect("seek");
            f.write_all(&honest).expect("restore");
        });
        for _ in 0..400 {
            match rank(&store) {
                None => named += 1,
                Some(r) if r.first() == Some(&two) => forged_first += 1,
                Some(_) => honest_first += 1,
            }
            if forged_first > 0 {
                break;
            }
        }
        stop.store(true, Ordering::Relaxed);
    });
    eprintln!("named {named}, honest ranking {honest_first}, forged ranking {forged_first}");
    assert_eq!(
        forged_first, 0,
        "a verified ranking put the worse commit first ({named} attempts named the forgery)"
    );
    // The writer restored the honest bytes: the trace verifies and ranks
    // commit 1 first.
    assert_eq!(
        rank(&store).expect("the restored trace verifies"),
        vec![one, two]
    );
}
