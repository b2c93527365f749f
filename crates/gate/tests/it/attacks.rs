//! Attacks on a verdict, made the way an adversary with write access to the
//! store's files would make them: raw SQL through a second connection to
//! `trace.db`, without the writer key and without access to the checkpoint
//! (which is held elsewhere).
//!
//! Every attack starts from a store whose honest answer is a reject, checks
//! that answer, edits the files behind the store's back, and then asks two
//! things of the victim, who re-opens the store:
//!
//! * verification reports a fault (`Store::verify`, or against the
//!   checkpoint when the victim holds one), and
//! * the gate does not promote (`verdict_at` at the head): it rejects at
//!   `Stage::TraceVerification`, or fails with an error.
//!
//! A store that refuses to open after an attack counts as a detection too.
//! The comment above each test names the finding it pins.

use crate::common::{self, CLASS, SCORER, SUITE, TASKS, commit, prompt_policy};

use std::path::{Path, PathBuf};

use common::{documented_hash, genesis, with_guards_lifted};
use rand::{Rng, SeedableRng, rngs::StdRng};
use ratchet_gate::{ClassPolicy, Outcome, Policy, Question, Stage, Verdict, verdict_at};
use ratchet_trace::{
    Checkpoint, CommitId, DB_FILE, EventDraft, KEY_ID_CONTEXT, MAC_KEY_CONTEXT, Score, Store,
    StoreOptions, TestRun, VerifyOptions, VerifyReport, WriterKey,
};
use rusqlite::{Connection, params};

/// The attacker's own secret, for attacks that re-MAC with a key of their own.
const ATTACKER_SECRET: [u8; 32] = [0xa5; 32];

/// Every `Question` of this file is built here, so that the field carrying
/// the checkpoint is named in one place only.
fn question<'a>(
    policy: &'a ClassPolicy,
    baseline: &'a CommitId,
    candidate: &'a CommitId,
    checkpoint: Option<&'a Checkpoint>,
) -> Question<'a> {
    Question {
        class: CLASS,
        policy,
        baseline,
        candidate,
        checkpoint,
        allow_unpinned: true,
    }
}

/// What the honest trace holds: pass rates of the two sides on `TASKS`
/// tasks, and the candidate's runs of the required suite, in order.
#[derive(Debug, Clone, Copy)]
struct Honest {
    base_rate: f64,
    cand_rate: f64,
    /// `(passed, failed)` of each run of the required suite.
    unit_runs: &'static [(u64, u64)],
}

/// The candidate is worse (40 % against 70 %), its suite green: the
/// sequential test rejects it.
const WORSE: Honest = Honest {
    base_rate: 0.7,
    cand_rate: 0.4,
    unit_runs: &[(40, 0)],
};

/// The candidate is better, but its required suite never ran: rejected at
/// `Stage::Tests`.
const UNTESTED: Honest = Honest {
    base_rate: 0.4,
    cand_rate: 0.8,
    unit_runs: &[],
};

/// The candidate is better and green: promoted (a rollback's starting point).
const BETTER: Honest = Honest {
    base_rate: 0.4,
    cand_rate: 0.8,
    unit_runs: &[(40, 0)],
};

/// The candidate is better, but its required suite failed, and was re-run
/// until it passed.
const LAUNDERED: Honest = Honest {
    base_rate: 0.4,
    cand_rate: 0.8,
    unit_runs: &[(37, 3), (40, 0)],
};

/// A store directory, the policy and the two commits.
struct World {
    dir: tempfile::TempDir,
    key: Option<WriterKey>,
    policy: Policy,
    base: CommitId,
    cand: CommitId,
}

impl World {
    /// An empty store (keyed if `key` is given), and the store itself.
    fn new(key: Option<WriterKey>) -> (World, Store) {
        let dir = tempfile::tempdir().expect("tempdir");
        let w = World {
            dir,
            key,
            policy: Policy::parse(&prompt_policy()).expect("the policy parses"),
            base: commit(1),
            cand: commit(2),
        };
        let store = Store::create(w.store_dir(), w.options()).expect("create the store");
        (w, store)
    }

    /// A store holding the honest trace `h`, drawn from `seed`.
    fn honest(h: Honest, seed: u64, key: Option<WriterKey>) -> (World, Store) {
        let (w, mut store) = World::new(key);
        w.record(&mut store, h, seed)
            .expect("record the honest trace");
        (w, store)
    }

    /// How most attacks begin: [`World::honest`], whose store verifies and
    /// whose gate rejects at `stage` (both checked, the verdict returned),
    /// the store then closed so the attacker has the file alone.
    fn honestly_rejected(
        h: Honest,
        seed: u64,
        key: Option<WriterKey>,
        stage: Stage,
    ) -> (World, Verdict) {
        let (w, mut store) = World::honest(h, seed, key);
        let honest = w.assert_honest_reject(&mut store, stage);
        drop(store);
        (w, honest)
    }

    /// Appends the honest trace `h` through the library.
    fn record(&self, store: &mut Store, h: Honest, seed: u64) -> ratchet_trace::Result<()> {
        let mut rng = StdRng::seed_from_u64(seed);
        let mut scores = Vec::with_capacity(2 * TASKS);
        for t in 0..TASKS {
            let task = format!("task-{t:04}");
            for (c, rate) in [(&self.base, h.base_rate), (&self.cand, h.cand_rate)] {
                let pass = f64::from(u8::from(rng.random_bool(rate)));
                scores.push(Score::new(c.clone(), task.clone(), SCORER, pass));
            }
        }
        store.record_scores(&scores, "eval")?;
        for &(passed, failed) in h.unit_runs {
            store.record_test_run(
                &TestRun {
                    commit: self.cand.clone(),
                    suite: SUITE.into(),
                    passed,
                    failed,
                    skipped: 0,
                    duration_ms: 9.0,
                    failures: Vec::new(),
                },
                "ci",
            )?;
        }
        Ok(())
    }

    fn store_dir(&self) -> PathBuf {
        self.dir.path().join("store")
    }

    fn db(&self) -> PathBuf {
        self.store_dir().join(DB_FILE)
    }

    /// How the victim opens the store: with the writer key when it is keyed
    /// (the gate holds it, to append its verdict).
    fn options(&self) -> StoreOptions {
        match &self.key {
            Some(k) => StoreOptions::default().writer_key(k.clone()),
            None => StoreOptions::default(),
        }
    }

    fn open(&self) -> Store {
        Store::open(self.store_dir(), self.options()).expect("open the store")
    }

    /// A raw connection to the database file: the attacker's tool.
    fn attacker(&self) -> Connection {
        let c = ratchet_testkit::raw_connection(&self.store_dir());
        // Per connection, not stored: the attacker does not need durability.
        c.execute_batch("PRAGMA synchronous = OFF;")
            .expect("synchronous");
        c
    }

    fn question<'a>(&'a self, checkpoint: Option<&'a Checkpoint>) -> Question<'a> {
        question(
            self.policy.class(CLASS).expect("the class exists"),
            &self.base,
            &self.cand,
            checkpoint,
        )
    }

    /// The gate's verdict at the store's head.
    fn verdict(
        &self,
        store: &mut Store,
        checkpoint: Option<&Checkpoint>,
    ) -> ratchet_gate::Result<Verdict> {
        let head = store.head().expect("read the head").size;
        verdict_at(store, &self.question(checkpoint), head)
    }

    /// Verification as the victim runs it: against the checkpoint if it has one.
    fn verify(store: &Store, checkpoint: Option<&Checkpoint>) -> VerifyReport {
        match checkpoint {
            None => store.verify(),
            Some(cp) => store.verify_with(&VerifyOptions::default().checkpoint(cp.clone())),
        }
        .expect("verification reads the store")
    }

    /// Before the attack: the trace verifies and the gate rejects at `stage`.
    fn assert_honest_reject(&self, store: &mut Store, stage: Stage) -> Verdict {
        let report = World::verify(store, None);
        assert!(report.is_valid(), "the honest store verifies: {report:?}");
        let v = self
            .verdict(store, None)
            .expect("the gate decides the honest store");
        assert_eq!(rejected_at(&v), Some(&stage), "honest verdict: {v:#?}");
        v
    }

    /// After the attack: the re-opened store reports a fault, and the gate
    /// does not promote (it rejects at trace verification, or errs).
    fn assert_caught(&self, checkpoint: Option<&Checkpoint>, attack: &str) {
        if let Err(why) = self.caught(checkpoint, attack) {
            panic!("{why}");
        }
    }

    /// [`World::assert_caught`] as a value, for tests that try several variants.
    fn caught(&self, checkpoint: Option<&Checkpoint>, attack: &str) -> Result<(), String> {
        let mut store = match Store::open(self.store_dir(), self.options()) {
            Ok(s) => s,
            // Refusing to open a tampered store is a detection too.
            Err(_) => return Ok(()),
        };
        let report = World::verify(&store, checkpoint);
        let verdict = self.verdict(&mut store, checkpoint);
        let stopped_at_verification = match &verdict {
            Ok(v) => rejected_at(v) == Some(&Stage::TraceVerification),
            Err(_) => true,
        };
        if report.fault.is_some() && stopped_at_verification {
            Ok(())
        } else {
            Err(format!(
                "{attack}: verification fault = {:?}; gate: {}",
                report.fault,
                describe(&verdict)
            ))
        }
    }
}

/// Fails with every variant that was not caught.
fn assert_all_caught(results: Vec<Result<(), String>>) {
    let missed: Vec<String> = results.into_iter().filter_map(Result::err).collect();
    assert!(
        missed.is_empty(),
        "attacks not caught:\n{}",
        missed.join("\n")
    );
}

fn rejected_at(v: &Verdict) -> Option<&Stage> {
    match &v.outcome {
        Outcome::Reject { stage, .. } => Some(stage),
        _ => None,
    }
}

fn promoted(v: &ratchet_gate::Result<Verdict>) -> bool {
    matches!(v, Ok(v) if v.outcome == Outcome::Promote)
}

fn describe(v: &ratchet_gate::Result<Verdict>) -> String {
    match v {
        Ok(v) => format!("{:?}", v.outcome),
        Err(e) => format!("error: {e}"),
    }
}

fn store_id(c: &Connection) -> String {
    c.query_row("SELECT value FROM meta WHERE key = 'store_id'", [], |r| {
        r.get(0)
    })
    .expect("the store id")
}

fn head_seq(c: &Connection) -> i64 {
    c.query_row("SELECT coalesce(max(seq), 0) FROM events", [], |r| r.get(0))
        .expect("the head seq")
}

/// The tasks of the honest trace, in order.
fn tasks(c: &Connection) -> Vec<String> {
    c.prepare("SELECT DISTINCT task FROM scores WHERE scorer = ?1 ORDER BY task")
        .and_then(|mut st| st.query_map([SCORER], |r| r.get(0))?.collect())
        .expect("the tasks")
}

/// Inserts score rows at seq 0 and below — outside the chain, which starts at
/// seq 1 — into `table`: on every task, the candidate scores 1 and the
/// baseline 0, `per_side` times each.
fn forge_scores_below_the_chain(
    c: &Connection,
    w: &World,
    tasks: &[String],
    table: &str,
    per_side: usize,
) {
    c.execute_batch("BEGIN").expect("begin");
    {
        let mut insert = c
            .prepare(&format!(
                "INSERT INTO {table} (seq, commit_id, task, scorer, scorer_version, value, cost, latency_ms, holdout)
                 VALUES (?1, ?2, ?3, ?4, '1', ?5, NULL, NULL, 0)"
            ))
            .expect("prepare the forged insert");
        let mut seq = 0i64;
        for task in tasks {
            for _ in 0..per_side {
                for (c, value) in [(&w.cand, 1.0), (&w.base, 0.0)] {
                    insert
                        .execute(params![seq, c.as_str(), task, SCORER, value])
                        .expect("insert a forged score");
                    seq -= 1;
                }
            }
        }
    }
    c.execute_batch("COMMIT").expect("commit");
}

// ---------------------------------------------------------------------------
// The documented hash layout, implemented again from the crate docs (as in
// crates/trace/tests/common/mod.rs): an attacker who knows it can rebuild a
// plain chain after an edit, but not the MACs.

/// Re-links every hash from `from` on, as an attacker without the key would;
/// with `mac_secret`, also writes MACs under that (the attacker's own) secret.
fn recompute_chain(c: &Connection, store_id: &str, from: i64, mac_secret: Option<&[u8]>) {
    let mut prev: [u8; 32] = if from == 1 {
        *genesis(store_id).as_bytes()
    } else {
        let v: Vec<u8> = c
            .query_row("SELECT hash FROM events WHERE seq = ?1", [from - 1], |r| {
                r.get(0)
            })
            .expect("prev");
        v.try_into().expect("32 bytes")
    };
    let mac_key = mac_secret.map(|s| blake3::derive_key(MAC_KEY_CONTEXT, s));
    c.execute_batch("BEGIN").expect("begin");
    let seqs: Vec<i64> = c
        .prepare("SELECT seq FROM events WHERE seq >= ?1 ORDER BY seq")
        .and_then(|mut st| st.query_map([from], |r| r.get(0))?.collect())
        .expect("seqs");
    for seq in seqs {
        let h = c
            .query_row("SELECT * FROM events WHERE seq = ?1", [seq], |r| {
                Ok(documented_hash(store_id, r, &prev))
            })
            .expect("row");
        c.execute(
            "UPDATE events SET prev_hash = ?1, hash = ?2 WHERE seq = ?3",
            params![&prev[..], &h.as_bytes()[..], seq],
        )
        .expect("relink");
        if let Some(k) = &mac_key {
            let mac = blake3::keyed_hash(k, h.as_bytes());
            c.execute(
                "UPDATE events SET mac = ?1 WHERE seq = ?2",
                params![&mac.as_bytes()[..], seq],
            )
            .expect("re-MAC");
        }
        prev = *h.as_bytes();
    }
    c.execute_batch("COMMIT").expect("commit");
}

/// Rewrites every accuracy score of the candidate to 1, in its event's
/// payload and in its projection row alike (guards lifted; no re-hashing).
fn rewrite_candidate_scores(c: &Connection, w: &World) {
    let rows: Vec<(i64, Vec<u8>)> = c
        .prepare(
            "SELECT e.seq, e.payload FROM events e JOIN scores s ON s.seq = e.seq
             WHERE s.scorer = ?1 AND s.commit_id = ?2",
        )
        .and_then(|mut st| {
            st.query_map(params![SCORER, w.cand.as_str()], |r| {
                Ok((r.get(0)?, r.get(1)?))
            })?
            .collect()
        })
        .expect("the candidate's score events");
    assert!(!rows.is_empty());
    c.execute_batch("BEGIN").expect("begin");
    for (seq, payload) in rows {
        let mut body: serde_json::Value =
            serde_json::from_slice(&payload).expect("a score payload");
        body["value"] = serde_json::json!(1.0);
        let payload = serde_json::to_vec(&body).expect("serialize");
        c.execute(
            "UPDATE events SET payload = ?1 WHERE seq = ?2",
            params![payload, seq],
        )
        .expect("edit the payload");
        c.execute("UPDATE scores SET value = 1.0 WHERE seq = ?1", [seq])
            .expect("edit the row");
    }
    c.execute_batch("COMMIT").expect("commit");
}

// ---------------------------------------------------------------------------
// 1. Projection rows outside the chain.

// Finding: verification reads projection rows only at seq 1..=head, while the
// gate's queries read every row with `seq <= head` — so rows at seq 0 and
// below are counted by the gate and never checked. The guards are put back
// with their exact text, so nothing but the rows themselves gives it away.
#[test]
fn scores_at_seq_zero_and_below_are_a_fault_not_evidence() {
    let (w, _) = World::honestly_rejected(WORSE, 1, None, Stage::Sequential);

    let c = w.attacker();
    let tasks = tasks(&c);
    with_guards_lifted(&c, |c| {
        forge_scores_below_the_chain(c, &w, &tasks, "scores", 3);
    });
    drop(c);

    w.assert_caught(None, "score rows at seq <= 0");
}

// Finding: the same hole in `test_runs`: a required suite that never ran for
// the candidate reads as green through a row at seq 0 (promoted), or at seq
// -1 (the gate errs reading it, but verification still calls the store valid).
#[test]
fn a_test_run_at_seq_zero_or_below_is_a_fault_not_a_green_suite() {
    let results = [0i64, -1]
        .into_iter()
        .map(|seq| {
            let (w, _) = World::honestly_rejected(UNTESTED, 2, None, Stage::Tests);

            let c = w.attacker();
            with_guards_lifted(&c, |c| {
                c.execute(
                    "INSERT INTO test_runs (seq, commit_id, suite, passed, failed, skipped, duration_ms)
                     VALUES (?1, ?2, ?3, 40, 0, 0, 9.0)",
                    params![seq, w.cand.as_str(), SUITE],
                )
                .expect("forge a green run");
            });
            drop(c);

            w.caught(None, &format!("a test run at seq {seq}"))
        })
        .collect();
    assert_all_caught(results);
}

// ---------------------------------------------------------------------------
// 2. Keyed stores: the plain chain is public, only the MACs are not.

// Finding: `Store::verify` (and the gate's verification) of a keyed store
// opened WITH its writer key does not check the MACs, so a plain chain
// recomputed by anyone who can write the file verifies — whether the old MACs
// are left in place (now wrong) or set to NULL (now missing).
#[test]
fn a_keyed_store_rechained_without_the_key_is_caught() {
    let results = [false, true].into_iter().map(|null_macs| {
        let (w, _) = World::honestly_rejected(WORSE, 3, Some(common::key()), Stage::Sequential);

        let c = w.attacker();
        let id = store_id(&c);
        with_guards_lifted(&c, |c| {
            rewrite_candidate_scores(c, &w);
            recompute_chain(c, &id, 1, None);
            if null_macs {
                c.execute("UPDATE events SET mac = NULL", [])
                    .expect("null the MACs");
            }
        });
        drop(c);

        w.caught(
            None,
            &format!("keyed store re-chained without the key (MACs nulled: {null_macs})"),
        )
    });
    assert_all_caught(results.collect());
}

// Finding: the same, when the attacker also rewrites the key id in `meta`:
// removes it (the store then claims to be unkeyed; MACs nulled), or replaces
// it with the id of a key of their own and re-MACs every event under it. The
// gate, holding the real key, must not accept either.
#[test]
fn a_keyed_store_whose_key_id_is_removed_or_replaced_is_caught() {
    let results = [false, true].into_iter().map(|replace| {
        let (w, _) = World::honestly_rejected(WORSE, 4, Some(common::key()), Stage::Sequential);

        let c = w.attacker();
        let id = store_id(&c);
        with_guards_lifted(&c, |c| {
            rewrite_candidate_scores(c, &w);
            if replace {
                let theirs =
                    blake3::Hash::from(blake3::derive_key(KEY_ID_CONTEXT, &ATTACKER_SECRET));
                c.execute(
                    "UPDATE meta SET value = ?1 WHERE key = 'writer_key_id'",
                    [theirs.to_hex().as_str()],
                )
                .expect("replace the key id");
                recompute_chain(c, &id, 1, Some(&ATTACKER_SECRET));
            } else {
                c.execute("DELETE FROM meta WHERE key = 'writer_key_id'", [])
                    .expect("remove the key id");
                recompute_chain(c, &id, 1, None);
                c.execute("UPDATE events SET mac = NULL", [])
                    .expect("null the MACs");
            }
        });
        drop(c);

        w.caught(
            None,
            &format!(
                "keyed store with its key id {}",
                if replace { "replaced" } else { "removed" }
            ),
        )
    });
    assert_all_caught(results.collect());
}

// Finding: new events appended to a keyed store by someone without the key
// (valid plain hashes, no MAC) verify and are counted, because MACs are not
// checked when the store is opened with its key.
#[test]
fn events_appended_to_a_keyed_store_without_the_key_are_caught() {
    let (w, _) = World::honestly_rejected(WORSE, 5, Some(common::key()), Stage::Sequential);

    let c = w.attacker();
    let id = store_id(&c);
    let head = head_seq(&c);
    let tasks = tasks(&c);
    let last_id: Vec<u8> = c
        .query_row("SELECT id FROM events ORDER BY id DESC LIMIT 1", [], |r| {
            r.get(0)
        })
        .expect("last id");
    let mut next_id = u128::from_be_bytes(last_id.try_into().expect("16 bytes"));
    let ts: i64 = c
        .query_row("SELECT max(ts_ms) FROM events", [], |r| r.get(0))
        .expect("ts");
    with_guards_lifted(&c, |c| {
        c.execute_batch("BEGIN").expect("begin");
        let mut seq = head;
        for task in &tasks {
            for _ in 0..2 {
                for (cm, value) in [(&w.cand, 1.0), (&w.base, 0.0)] {
                    seq += 1;
                    next_id += 1;
                    let payload = serde_json::json!({
                        "task": task, "scorer": SCORER, "scorer_version": "1", "value": value,
                    });
                    let payload = serde_json::to_vec(&payload).expect("payload");
                    c.execute(
                        "INSERT INTO events (seq, id, ts_ms, cell, session, kind, commit_id, payload, prev_hash, hash, mac)
                         VALUES (?1, ?2, ?3, ?4, 'eval', 'score', ?5, ?6, zeroblob(32), zeroblob(32), NULL)",
                        params![seq, &next_id.to_be_bytes()[..], ts, id, cm.as_str(), payload],
                    )
                    .expect("forge an event");
                    c.execute(
                        "INSERT INTO scores (seq, commit_id, task, scorer, scorer_version, value, cost, latency_ms, holdout)
                         VALUES (?1, ?2, ?3, ?4, '1', ?5, NULL, NULL, 0)",
                        params![seq, cm.as_str(), task, SCORER, value],
                    )
                    .expect("forge its row");
                }
            }
        }
        c.execute_batch("COMMIT").expect("commit");
        recompute_chain(c, &id, head + 1, None);
    });
    drop(c);

    w.assert_caught(None, "events appended without the writer key");
}

// ---------------------------------------------------------------------------
// 3. An index that disagrees with its table.

/// Builds a table `evil` shaped like `scores` holding the scores with the
/// candidate at 1 and the baseline at 0, indexes it like
/// `scores_by_scorer_commit`, and swaps the two indexes' root pages in
/// `sqlite_master`: the covering index the gate reads now holds the forged
/// values, while the `scores` table verification reads is untouched. With
/// `erase`, the `evil` objects are then deleted from `sqlite_master`, so the
/// schema's text is exactly the honest one (their pages are left orphaned).
fn swap_index_root(c: &Connection, w: &World, erase: bool) {
    c.execute_batch(
        "CREATE TABLE evil (
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
        INSERT INTO evil SELECT * FROM scores;",
    )
    .expect("copy the scores");
    c.execute(
        "UPDATE evil SET value = CASE WHEN commit_id = ?1 THEN 1.0 ELSE 0.0 END WHERE scorer = ?2",
        params![w.cand.as_str(), SCORER],
    )
    .expect("forge the copy");
    c.execute_batch("CREATE INDEX evil_idx ON evil (scorer, commit_id, task, value);")
        .expect("index the copy");
    let (real, evil) = (
        ratchet_testkit::root_page(c, "scores_by_scorer_commit"),
        ratchet_testkit::root_page(c, "evil_idx"),
    );
    let version: i64 = c
        .query_row("PRAGMA schema_version", [], |r| r.get(0))
        .expect("schema version");
    c.execute_batch("PRAGMA writable_schema = ON;")
        .expect("writable schema");
    c.execute(
        "UPDATE sqlite_master SET rootpage = ?1 WHERE name = 'scores_by_scorer_commit'",
        [evil],
    )
    .expect("point the real index at the forged tree");
    if erase {
        c.execute(
            "DELETE FROM sqlite_master WHERE name IN ('evil', 'evil_idx')",
            [],
        )
        .expect("erase the evil objects");
    } else {
        c.execute(
            "UPDATE sqlite_master SET rootpage = ?1 WHERE name = 'evil_idx'",
            [real],
        )
        .expect("point the evil index at the real tree");
    }
    c.execute_batch(&format!(
        "PRAGMA schema_version = {}; PRAGMA writable_schema = OFF;",
        version + 1
    ))
    .expect("bump the schema version");
}

// Finding: the gate reads scores through the covering index
// `scores_by_scorer_commit`, verification reads the `scores` table; an index
// whose root page was swapped (PRAGMA writable_schema) for a forged tree
// feeds the gate values nobody verified. Either verification notices, or the
// gate reads what verification checked (and then rejects as honestly).
#[test]
fn an_index_swapped_for_a_forged_tree_does_not_fool_the_gate() {
    let results = [false, true].into_iter().map(|erase| {
        let (w, honest) = World::honestly_rejected(WORSE, 6, None, Stage::Sequential);

        let c = w.attacker();
        swap_index_root(&c, &w, erase);
        drop(c);

        let mut store = match Store::open(w.store_dir(), w.options()) {
            Ok(s) => s,
            Err(_) => return Ok(()), // refused to open: detected
        };
        let report = World::verify(&store, None);
        let verdict = w.verdict(&mut store, None);
        let read_honestly =
            matches!(&verdict, Ok(v) if rejected_at(v) == rejected_at(&honest));
        if !promoted(&verdict) && (report.fault.is_some() || read_honestly) {
            Ok(())
        } else {
            Err(format!(
                "index root swapped (evil objects erased: {erase}): verification fault = {:?}; gate: {}",
                report.fault,
                describe(&verdict)
            ))
        }
    });
    assert_all_caught(results.collect());
}

// ---------------------------------------------------------------------------
// 4. A checkpoint must not let verification skip anything.

// Finding: a checkpoint given to the gate made verification skip the prefix
// it covers ("trusted"), so edits inside that prefix — to projection rows
// alone, or to the event payloads and their rows together, without
// re-hashing — were never looked at. The checkpoint is for detecting
// rollback; everything is still recomputed.
#[test]
fn edits_inside_a_checkpointed_prefix_are_caught() {
    let results = [false, true].into_iter().map(|payloads_too| {
        let (w, mut store) = World::honest(WORSE, 7, None);
        w.assert_honest_reject(&mut store, Stage::Sequential);
        let cp = store.checkpoint().expect("a checkpoint");
        drop(store);

        let c = w.attacker();
        with_guards_lifted(&c, |c| {
            if payloads_too {
                rewrite_candidate_scores(c, &w);
            } else {
                c.execute(
                    "UPDATE scores SET value = 1.0 WHERE scorer = ?1 AND commit_id = ?2",
                    params![SCORER, w.cand.as_str()],
                )
                .expect("edit the rows");
            }
        });
        drop(c);

        w.caught(
            Some(&cp),
            &format!("edit inside the checkpointed prefix (payloads too: {payloads_too})"),
        )
    });
    assert_all_caught(results.collect());
}

// ---------------------------------------------------------------------------
// 5. A planted trigger.

// Finding: the schema is not verified, so a trigger planted before the honest
// appends rewrites each of them as it is made — here it shadows every honest
// score with a flipped copy at the negative seq. Verification must find the
// added trigger (nothing may be added to the schema), and the gate must not
// promote; the store may also refuse the honest appends outright.
#[test]
fn a_planted_trigger_is_a_fault() {
    // The honest answer, from an identical store without the trigger.
    let (_twin, _) = World::honestly_rejected(WORSE, 8, None, Stage::Sequential);

    let (w, store) = World::new(None);
    drop(store);
    let c = w.attacker();
    c.execute_batch(&format!(
        "CREATE TRIGGER evil AFTER INSERT ON scores WHEN NEW.seq > 0 BEGIN
            INSERT INTO scores (seq, commit_id, task, scorer, scorer_version, value, cost, latency_ms, holdout)
            VALUES (-NEW.seq, NEW.commit_id, NEW.task, NEW.scorer, NEW.scorer_version,
                    CASE WHEN NEW.commit_id = '{}' THEN 1.0 ELSE 0.0 END,
                    NEW.cost, NEW.latency_ms, NEW.holdout);
         END;",
        w.cand.as_str()
    ))
    .expect("plant the trigger");
    drop(c);

    let mut store = w.open();
    // Refusing to write to an altered schema is a detection, not a failure.
    let _ = w.record(&mut store, WORSE, 8);
    drop(store);

    w.assert_caught(None, "a planted trigger");
}

// Finding: the same hole through a view: `scores` renamed away and replaced
// by a view that adds forged rows (at seqs the verifier does not read) to the
// real ones. Nothing may be added to or renamed in the schema.
#[test]
fn a_view_in_place_of_the_scores_table_is_a_fault() {
    let (w, _) = World::honestly_rejected(WORSE, 9, None, Stage::Sequential);

    let c = w.attacker();
    let tasks = tasks(&c);
    c.execute_batch(
        "ALTER TABLE scores RENAME TO scores_real;
         CREATE TABLE forged AS SELECT * FROM scores_real WHERE 0;",
    )
    .expect("rename the scores table");
    forge_scores_below_the_chain(&c, &w, &tasks, "forged", 3);
    c.execute_batch(
        "CREATE VIEW scores AS SELECT * FROM scores_real UNION ALL SELECT * FROM forged;",
    )
    .expect("create the view");
    drop(c);

    w.assert_caught(None, "a view in place of the scores table");
}

// ---------------------------------------------------------------------------
// 6. Negative zero.

// Finding: a score or test run holding -0.0 (value, cost, latency, duration;
// written as `-0.0`, `-0` or `-0e0` in a payload) bricked the store: SQLite
// stores the REAL as the integer 0, it reads back as +0.0, and the bit-exact
// projection check then calls the honest row a mismatch forever. A store
// must verify after any value the library accepted.
#[test]
fn negative_zero_does_not_brick_the_store() {
    let c = commit(2);
    let mut with_cost = Score::new(c.clone(), "t", SCORER, 0.5);
    with_cost.cost = Some(-0.0);
    let mut with_latency = Score::new(c.clone(), "t", SCORER, 0.5);
    with_latency.latency_ms = Some(-0.0);
    let raw = |value: &str| {
        EventDraft::raw(
            "score",
            format!(r#"{{"task":"t","scorer":"accuracy","scorer_version":"1","value":{value}}}"#),
        )
        .commit(c.clone())
    };
    let drafts: Vec<(&str, EventDraft)> = vec![
        (
            "Score value -0.0",
            Score::new(c.clone(), "t", SCORER, -0.0)
                .to_draft()
                .expect("draft"),
        ),
        ("payload value -0.0", raw("-0.0")),
        ("payload value -0", raw("-0")),
        ("payload value -0e0", raw("-0e0")),
        ("cost -0.0", with_cost.to_draft().expect("draft")),
        ("latency -0.0", with_latency.to_draft().expect("draft")),
        (
            "test run duration -0.0",
            TestRun {
                commit: c.clone(),
                suite: SUITE.into(),
                passed: 1,
                failed: 0,
                skipped: 0,
                duration_ms: -0.0,
                failures: Vec::new(),
            }
            .to_draft()
            .expect("draft"),
        ),
    ];
    let mut bricked = Vec::new();
    for (what, draft) in drafts {
        let (_w, mut store) = World::new(None);
        // Whether the library stores it or refuses it, the store must still verify.
        let appended = store.append(draft);
        let report = store.verify().expect("verification reads the store");
        if let Some(f) = report.fault {
            bricked.push(format!("{what} (appended: {}): {f}", appended.is_ok()));
        }
    }
    // Recorded through the typed API too.
    let (_w, mut store) = World::new(None);
    let _ = store.record_score(&Score::new(c.clone(), "t", SCORER, -0.0), "eval");
    let report = store.verify().expect("verification reads the store");
    if let Some(f) = report.fault {
        bricked.push(format!("record_score -0.0: {f}"));
    }
    assert!(bricked.is_empty(), "bricked by -0.0: {bricked:#?}");
}

// ---------------------------------------------------------------------------
// 7. Reserved kinds.

// Finding: the generic append accepted the kinds the rest of ratchet acts on
// (`alarm` triggers a heal, `decision` is the gate's verdict, `checkout` and
// `promotion` move code), so anyone who may append could forge them. They
// must be refused by name, and a batch holding one must store nothing.
#[test]
fn reserved_kinds_are_refused_by_the_generic_append() {
    let mut accepted = Vec::new();
    for kind in ["alarm", "decision", "checkout", "promotion"] {
        let (_w, mut store) = World::new(None);
        let before = store.head().expect("head");
        match store.append(EventDraft::raw(kind, r#"{"forged":true}"#).session("x")) {
            Ok(r) => accepted.push(format!(
                "{kind:?} through EventDraft::raw, at seq {}",
                r.seq
            )),
            Err(e) => assert!(
                e.to_string().contains(kind),
                "the error names the kind {kind:?}: {e}"
            ),
        }
        // EventDraft::json may refuse the kind itself; if it does not, append must.
        if let Ok(draft) = EventDraft::json(kind, &serde_json::json!({"forged": true}))
            && let Ok(r) = store.append(draft)
        {
            accepted.push(format!(
                "{kind:?} through EventDraft::json, at seq {}",
                r.seq
            ));
        }
        let mid = store.head().expect("head");
        match store.append_batch([EventDraft::raw("note", "{}"), EventDraft::raw(kind, "{}")]) {
            Ok(_) => accepted.push(format!("{kind:?} inside a batch")),
            Err(_) => assert_eq!(
                store.head().expect("head"),
                mid,
                "a refused batch holding {kind:?} stored nothing"
            ),
        }
        if accepted.is_empty() {
            assert_eq!(store.head().expect("head"), before);
        }
    }
    assert!(
        accepted.is_empty(),
        "reserved kinds appended through the generic API:\n{}",
        accepted.join("\n")
    );
}

// ---------------------------------------------------------------------------
// 8. A failure laundered by a later pass.

// Finding: the gate judged the required suite by the candidate's latest run
// only, so a red run was erased by re-running until green. A failure of a
// required suite for the candidate stays a reject at `Stage::Tests`.
#[test]
fn a_failed_required_suite_is_not_erased_by_a_later_pass() {
    let (w, mut store) = World::honest(LAUNDERED, 10, None);
    let v = w.verdict(&mut store, None).expect("the gate decides");
    assert_eq!(rejected_at(&v), Some(&Stage::Tests), "{v:#?}");
}

// ---------------------------------------------------------------------------
// Rollback: the checkpoint exists to catch it.

// Finding (guard): a store rolled back to an older state — its -wal deleted
// after a crash, an older copy of the file restored, or an older copy
// restored and regrown past the checkpoint's size with events of the
// attacker's own — must be a fault when the gate is given the checkpoint
// taken before the attack. Here the rolled-back part is a failing run of the
// required suite.
#[test]
fn a_rolled_back_store_is_caught_by_the_checkpoint() {
    let results = ["-wal deleted", "older copy restored", "older copy regrown"]
        .into_iter()
        .map(|variant| {
            let (w, mut store) = World::honest(BETTER, 11, None);
            let promote = w.verdict(&mut store, None).expect("the gate decides");
            assert_eq!(promote.outcome, Outcome::Promote, "{promote:#?}");
            drop(store); // closing checkpoints the WAL into the main file

            let old = w.dir.path().join("old.db");
            std::fs::copy(w.db(), &old).expect("an older copy");
            let mut store = w.open();
            store
                .record_test_run(
                    &TestRun {
                        commit: w.cand.clone(),
                        suite: SUITE.into(),
                        passed: 30,
                        failed: 10,
                        skipped: 0,
                        duration_ms: 9.0,
                        failures: Vec::new(),
                    },
                    "ci",
                )
                .expect("a red run");
            let cp = store.checkpoint().expect("a checkpoint, held elsewhere");
            let crashed = w.dir.path().join("crashed.db");
            // While the writer is open the red run is only in the -wal.
            std::fs::copy(w.db(), &crashed).expect("the main file alone");
            w.assert_honest_reject(&mut store, Stage::Tests);
            drop(store);

            for suffix in ["-wal", "-shm"] {
                let side = PathBuf::from(format!("{}{suffix}", w.db().display()));
                if side.exists() {
                    std::fs::remove_file(&side).expect("remove a side file");
                }
            }
            let source: &Path = if variant == "-wal deleted" {
                &crashed
            } else {
                &old
            };
            std::fs::copy(source, w.db()).expect("roll back");
            if variant == "older copy regrown" {
                let mut store = w.open();
                for i in 0..3 {
                    store
                        .append(EventDraft::raw("note", format!("{{\"i\":{i}}}")))
                        .expect("regrow");
                }
            }

            w.caught(Some(&cp), variant)
        });
    assert_all_caught(results.collect());
}
