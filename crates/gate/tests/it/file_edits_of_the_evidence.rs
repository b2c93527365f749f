//! Red-team findings against issue 8's first fix, kept as regression tests:
//! each builds an honest store, attacks it through the files only (no
//! writer key, checkpoint held elsewhere), and asserts the attack is caught
//! — verification names a fault and the gate does not promote — or has no
//! effect. Each failed (the attack worked) before its fix.

use crate::common::{self, CLASS, SCORER, TASKS, base, cand, key};

/// The prompt class reading everyone's evidence: these attacks are on the
/// integrity of merged cells, whose evidence a class must trust by name
/// (`cell:STORE_ID`) to read at all.
fn prompt_policy() -> String {
    common::prompt_policy() + "trust = { baseline = [\"everyone\"], candidate = [\"everyone\"] }\n"
}

use std::path::{Path, PathBuf};

use common::with_guards_lifted;
use rand::{Rng, SeedableRng, rngs::StdRng};
use ratchet_gate::{Outcome, Policy, Question, Stage, Verdict, verdict_at};
use ratchet_trace::{
    AsOf, Checkpoint, CommitId, DB_FILE, MergeOptions, Score, Store, StoreOptions, TestRun,
    VerifyOptions,
};
use rusqlite::{Connection, params};

struct World {
    dir: tempfile::TempDir,
    policy: Policy,
}

impl World {
    fn new() -> (World, Store) {
        let dir = tempfile::tempdir().expect("tempdir");
        let w = World {
            dir,
            policy: Policy::parse(&prompt_policy()).expect("policy"),
        };
        let store = Store::create(w.store_dir(), w.options()).expect("create");
        (w, store)
    }
    fn store_dir(&self) -> PathBuf {
        self.dir.path().join("store")
    }
    fn db(&self) -> PathBuf {
        self.store_dir().join(DB_FILE)
    }
    /// The victim always holds the writer key (keyed store).
    fn options(&self) -> StoreOptions {
        StoreOptions::default().writer_key(key())
    }
    fn open(&self) -> Store {
        Store::open(self.store_dir(), self.options()).expect("open")
    }
    fn attacker(&self) -> Connection {
        ratchet_testkit::raw_connection(&self.store_dir())
    }
    fn verdict(&self, store: &mut Store, cp: Option<&Checkpoint>) -> Verdict {
        let (b, c) = (base(), cand());
        let q = Question {
            class: CLASS,
            policy: self.policy.class(CLASS).expect("class"),
            baseline: &b,
            candidate: &c,
            checkpoint: cp,
            allow_unpinned: true,
        };
        let head = store.head().expect("head").size;
        verdict_at(store, &q, head).expect("decide")
    }
    /// A new world whose keyed store holds [`TASKS`] seeded scores of each
    /// commit (the baseline passing at `base_rate`, the candidate at
    /// `cand_rate`) and the candidate's passing `unit` run: the honest store
    /// most holes start from.
    fn scored(base_rate: f64, cand_rate: f64, seed: u64) -> (World, Store) {
        let (w, mut store) = World::new();
        record_scores(&mut store, base_rate, cand_rate, seed);
        store
            .record_test_run(&run(40, 0), "ci")
            .expect("red team step");
        (w, store)
    }
    /// A CI cell at `<dir>/cell` (unkeyed, honest) that holds a failed `unit`
    /// run of the candidate (37 passed, 3 failed): the evidence the merge
    /// holes try to keep out of the home.
    fn cell_with_a_failed_run(&self) -> (PathBuf, Store) {
        let cell_dir = self.dir.path().join("cell");
        let mut cell = Store::create(&cell_dir, StoreOptions::default()).expect("red team step");
        cell.record_test_run(&run(37, 3), "ci-cell")
            .expect("red team step");
        (cell_dir, cell)
    }
    /// The honest control of an attack: a copy of the victim's store in a
    /// new temporary directory, opened with its key, `act` done to it
    /// honestly, then decided without a checkpoint.
    fn honest_control(&self, act: impl FnOnce(&mut Store)) -> Verdict {
        let ctrl = tempfile::tempdir().expect("red team step");
        copy_dir(&self.store_dir(), &ctrl.path().join("store"));
        let mut h = Store::open(ctrl.path().join("store"), self.options()).expect("red team step");
        act(&mut h);
        let wc = World {
            dir: ctrl,
            policy: Policy::parse(&prompt_policy()).expect("red team step"),
        };
        let v = wc.verdict(&mut h, None);
        drop(h);
        v
    }
    /// The attacker deletes the row planted at seq -1 (guards lifted),
    /// covering their tracks once the victim has acted on it.
    fn remove_planted_row(&self) {
        let c = self.attacker();
        with_guards_lifted(&c, |c| {
            c.execute("DELETE FROM events WHERE seq = -1", [])
                .expect("red team step");
        });
    }
    /// The victim's store opened again, checkpointed, and decided at that
    /// checkpoint: the verdict once an attack is over.
    fn verdict_at_a_new_checkpoint(&self) -> Verdict {
        let mut store = self.open();
        let cp = store.checkpoint().expect("red team step");
        self.verdict(&mut store, Some(&cp))
    }
    /// Verification as `ratchet verify-chain --key-file K --checkpoint CP`
    /// does it must name a fault, and the gate must not promote.
    fn assert_caught(&self, store: &mut Store, cp: &Checkpoint) {
        let r = store
            .verify_with(&VerifyOptions::default().key(key()).checkpoint(cp.clone()))
            .expect("verify");
        assert!(r.fault.is_some(), "verification found nothing: {r:?}");
        let v = self.verdict(store, Some(cp));
        assert_eq!(
            outcome_stage(&v),
            Some(&Stage::TraceVerification),
            "forged: {v:#?}"
        );
    }
}

fn record_scores(store: &mut Store, base_rate: f64, cand_rate: f64, seed: u64) {
    let mut rng = StdRng::seed_from_u64(seed);
    let mut scores = Vec::new();
    for t in 0..TASKS {
        let task = format!("task-{t:04}");
        for (c, rate) in [(base(), base_rate), (cand(), cand_rate)] {
            let pass = f64::from(u8::from(rng.random_bool(rate)));
            scores.push(Score::new(c, task.clone(), SCORER, pass));
        }
    }
    store.record_scores(&scores, "eval").expect("scores");
}

/// A run of the required suite (`unit`) for the candidate.
fn run(passed: u64, failed: u64) -> TestRun {
    ratchet_testkit::unit_run(&cand(), passed, failed)
}

fn outcome_stage(v: &Verdict) -> Option<&Stage> {
    match &v.outcome {
        Outcome::Reject { stage, .. } => Some(stage),
        _ => None,
    }
}

// ---------------------------------------------------------------------------
// HOLE 1 (fixed: a projection row's commit must be stored in canonical
// form, or it does not verify): projection rows' commit_id is compared after CommitId::parse, which
// lower-cases; the gate's queries compare the raw text. An upper-cased
// commit_id in a scores / test_runs row verifies, but the gate never sees it.

#[test]
fn hole1_uppercased_commit_hides_a_failed_test_run() {
    let (w, mut store) = World::new();
    record_scores(&mut store, 0.4, 0.8, 7);
    store
        .record_test_run(&run(37, 3), "ci")
        .expect("red team step");
    store
        .record_test_run(&run(40, 0), "ci")
        .expect("red team step");
    let cp = store.checkpoint().expect("red team step");
    let v = w.verdict(&mut store, Some(&cp));
    assert_eq!(outcome_stage(&v), Some(&Stage::Tests), "honest: {v:?}");
    drop(store);

    let c = w.attacker();
    with_guards_lifted(&c, |c| {
        let n = c
            .execute(
                "UPDATE test_runs SET commit_id = upper(commit_id) WHERE failed > 0",
                [],
            )
            .expect("red team step");
        assert_eq!(n, 1);
    });
    drop(c);

    let mut store = w.open();
    w.assert_caught(&mut store, &cp);
}

#[test]
fn hole1_uppercased_commit_hides_the_candidates_losses() {
    let (w, mut store) = World::scored(0.7, 0.4, 1);
    let cp = store.checkpoint().expect("red team step");
    let v = w.verdict(&mut store, Some(&cp));
    assert_eq!(outcome_stage(&v), Some(&Stage::Sequential), "honest: {v:?}");
    let honest_stats = store
        .verified(&VerifyOptions::default())
        .expect("red team step")
        .commit_stats(SCORER, AsOf::Head);
    assert_eq!(honest_stats.len(), 2);
    drop(store);

    let c = w.attacker();
    with_guards_lifted(&c, |c| {
        c.execute(
            "UPDATE scores SET commit_id = upper(commit_id) WHERE commit_id = ?1 AND value = 0",
            [cand().as_str()],
        )
        .expect("red team step");
    });
    drop(c);

    let mut store = w.open();
    w.assert_caught(&mut store, &cp);
    // `best` / heal / watch go through `Store::verified` first.
    assert!(matches!(
        store.verified(&VerifyOptions::default()),
        Err(ratchet_trace::Error::Tampered { .. })
    ));
}

// ---------------------------------------------------------------------------
// HOLE 2 (fixed: verification runs SQLite's quick_check, which sees a
// subtree out of order under its divider): verification reads projection rows with a seek (`seq >= 1`), the
// gate (and commit_stats / best / watch baselines) with a scan from the first
// row (`seq <= at`, or no seq bound). A leaf grafted as the leftmost child of
// the scores b-tree, under a divider key of 0, is skipped by every seek to
// seq >= 1 (verification, and the seq < 1 probe stops at its first row), but
// read by every scan from the start. sqlite_schema is unchanged; only
// PRAGMA integrity_check would notice.

fn page_size(bytes: &[u8]) -> usize {
    match u16::from_be_bytes([bytes[16], bytes[17]]) {
        1 => 65536,
        n => n as usize,
    }
}

/// Inserts the cell (left child = `child`, key = 0) first in the interior
/// root page `root` of a table b-tree.
fn graft_leftmost(db: &Path, root: u32, child: u32) {
    let mut bytes = std::fs::read(db).expect("red team step");
    let ps = page_size(&bytes);
    let page = &mut bytes[(root as usize - 1) * ps..root as usize * ps];
    assert_eq!(page[0], 0x05, "the scores root is an interior table page");
    let n = u16::from_be_bytes([page[3], page[4]]) as usize;
    let top = match u16::from_be_bytes([page[5], page[6]]) {
        0 => 65536,
        t => t as usize,
    };
    let mut cell = child.to_be_bytes().to_vec();
    cell.push(0x00); // varint key 0
    let new_top = top - cell.len();
    assert!(12 + 2 * (n + 1) <= new_top, "room in the root page");
    page[new_top..top].copy_from_slice(&cell);
    page.copy_within(12..12 + 2 * n, 14);
    page[12..14].copy_from_slice(&(new_top as u16).to_be_bytes());
    page[3..5].copy_from_slice(&((n + 1) as u16).to_be_bytes());
    page[5..7].copy_from_slice(&(new_top as u16).to_be_bytes());
    std::fs::write(db, bytes).expect("red team step");
}

/// Grafts the table `forged` (built on `c`) as the leftmost leaf of
/// `victim`: `forged` is forgotten from the schema (its pages stay,
/// referenced by nothing yet), the WAL is moved into the file, `c` is
/// closed, and `victim`'s root page gets the cell that points at them.
fn graft_forged_under(c: Connection, db: &Path, victim: &str) {
    let root = |name: &str| -> u32 {
        u32::try_from(ratchet_testkit::root_page(&c, name)).expect("a page number")
    };
    let (victim_root, forged_root) = (root(victim), root("forged"));
    c.execute_batch(
        "PRAGMA writable_schema = ON;
         DELETE FROM sqlite_schema WHERE name = 'forged';
         PRAGMA writable_schema = OFF;",
    )
    .expect("red team step");
    c.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))
        .expect("red team step");
    drop(c);
    graft_leftmost(db, victim_root, forged_root);
}

#[test]
fn hole2_grafted_leftmost_leaf_is_read_by_the_gate_but_never_verified() {
    let (w, mut store) = World::scored(0.7, 0.4, 1);
    let cp = store.checkpoint().expect("red team step");
    let v = w.verdict(&mut store, Some(&cp));
    assert_eq!(outcome_stage(&v), Some(&Stage::Sequential), "honest: {v:?}");
    drop(store);

    let c = w.attacker();
    // A helper table with the scores table's exact row layout (seq is the
    // rowid alias, so it is stored as NULL in the record), filled with
    // forged evidence: on new tasks named to sort first, the candidate
    // passes and the baseline fails. Row seqs 1.. (>= 1, <= head).
    c.execute_batch(
        "CREATE TABLE forged (seq INTEGER PRIMARY KEY, commit_id TEXT NOT NULL, task TEXT NOT NULL,
           scorer TEXT NOT NULL, scorer_version TEXT NOT NULL, value REAL NOT NULL, cost REAL,
           latency_ms REAL, holdout INTEGER NOT NULL);",
    )
    .expect("red team step");
    let mut seq = 1i64;
    for t in 0..60 {
        for (commit, value) in [(cand(), 1.0), (base(), 0.0)] {
            c.execute(
                "INSERT INTO forged VALUES (?1, ?2, ?3, ?4, '1', ?5, NULL, NULL, 0)",
                params![seq, commit.as_str(), format!("a{t:03}"), SCORER, value],
            )
            .expect("red team step");
            seq += 1;
        }
    }
    graft_forged_under(c, &w.db(), "scores");

    let mut store = w.open();
    w.assert_caught(&mut store, &cp);
    let f = store.verify().expect("verify").fault.expect("fault");
    assert!(
        matches!(f.kind, ratchet_trace::FaultKind::Structure { .. }),
        "{f:?}"
    );
}

// ---------------------------------------------------------------------------
// HOLE 3 (fixed: the merge's lookups read only rows inside the chain): a merge decides "the home already holds this cell event" by an id
// lookup over the whole events table, unverified. A row planted at seq -1
// (outside the chain) with the cell event's id and content makes the merge
// skip the event for good (the high-water mark moves past it); the attacker
// then deletes the planted row and the home verifies clean.

#[test]
fn hole3_planted_row_makes_a_merge_drop_a_cell_event() {
    let (w, home) = World::scored(0.4, 0.8, 7);
    // A CI cell (unkeyed, honest) that holds a failed run of the candidate.
    let (cell_dir, cell) = w.cell_with_a_failed_run();
    drop(cell);

    // Honest control: merged honestly, the gate rejects at Tests.
    let v = w.honest_control(|h| {
        let r = h
            .merge_cell(&cell_dir, &MergeOptions::default())
            .expect("red team step");
        assert_eq!(r.ingested, 1);
    });
    assert_eq!(outcome_stage(&v), Some(&Stage::Tests), "honest: {v:?}");
    drop(home);

    // The attacker reads the cell's event and plants a copy at seq -1.
    let cellc = Connection::open(cell_dir.join(DB_FILE)).expect("red team step");
    let (id, ts, cellid, session, kind, commit, payload): (
        Vec<u8>,
        i64,
        String,
        String,
        String,
        String,
        Vec<u8>,
    ) = cellc
        .query_row(
            "SELECT id, ts_ms, cell, session, kind, commit_id, payload FROM events WHERE seq = 1",
            [],
            |r| {
                Ok((
                    r.get(0)?,
                    r.get(1)?,
                    r.get(2)?,
                    r.get(3)?,
                    r.get(4)?,
                    r.get(5)?,
                    r.get(6)?,
                ))
            },
        )
        .expect("red team step");
    drop(cellc);
    let c = w.attacker();
    c.execute(
        "INSERT INTO events (seq, id, ts_ms, cell, session, kind, commit_id, payload, prev_hash, hash)
         VALUES (-1, ?1, ?2, ?3, ?4, ?5, ?6, ?7, zeroblob(32), zeroblob(32))",
        params![id, ts, cellid, session, kind, commit, payload],
    )
    .expect("red team step");
    drop(c);

    // The victim merges (with its key): the planted row is outside the
    // chain, so the cell's event is not "already present".
    let mut home = w.open();
    let r = home
        .merge_cell(&cell_dir, &MergeOptions::default())
        .expect("red team step");
    assert_eq!((r.ingested, r.already_present), (1, 0), "{r:?}");
    drop(home);

    // The attacker removes the planted row.
    w.remove_planted_row();

    let v = w.verdict_at_a_new_checkpoint();
    assert_eq!(
        outcome_stage(&v),
        Some(&Stage::Tests),
        "the failed run counts: {v:#?}"
    );
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("red team step");
    for e in std::fs::read_dir(from).expect("red team step") {
        let e = e.expect("red team step");
        if e.file_type().expect("red team step").is_file() {
            std::fs::copy(e.path(), to.join(e.file_name())).expect("red team step");
        }
    }
}

// ---------------------------------------------------------------------------
// HOLE 4 (fixed: the idempotence lookup reads only rows inside the chain): ingestion's idempotence check (append_once) looks the key up over
// the whole, unverified events table. An `ingest` marker planted at seq -1
// for a report the attacker can predict makes the victim's ingestion store
// nothing ("already ingested"); the attacker deletes the marker afterwards.

fn ingest_key(format: &str, commit: &CommitId, content: &[u8]) -> String {
    let mut h = blake3::Hasher::new_derive_key("ratchet-scorers 2026-11-30 ingest key v1");
    h.update(format.as_bytes());
    h.update(&[0]);
    h.update(commit.as_str().as_bytes());
    h.update(&[0]);
    h.update(content);
    format!("{format}:{}", h.finalize().to_hex())
}

#[test]
fn hole4_planted_ingest_marker_suppresses_a_failing_report() {
    let (w, store) = World::scored(0.4, 0.8, 7);
    drop(store);

    let xml = r#"<?xml version="1.0" encoding="UTF-8"?>
<testsuites><testsuite name="unit" tests="2">
<testcase name="a"/><testcase name="b"><failure message="boom"/></testcase>
</testsuite></testsuites>
"#;
    let report = w.dir.path().join("junit.xml");
    std::fs::write(&report, xml).expect("red team step");

    // Honest control: ingested honestly, the gate rejects at Tests.
    let v = w.honest_control(|h| {
        let r = ratchet_scorers::ingest_junit(h, &report, &cand(), "ci").expect("red team step");
        assert_eq!(r.test_runs, 1);
    });
    assert_eq!(outcome_stage(&v), Some(&Stage::Tests), "honest: {v:?}");

    let c = w.attacker();
    let session = format!("ingest:{}", ingest_key("junit", &cand(), xml.as_bytes()));
    c.execute(
        "INSERT INTO events (seq, id, ts_ms, cell, session, kind, commit_id, payload, prev_hash, hash)
         VALUES (-1, zeroblob(16), 0, 'x', ?1, 'ingest', NULL, x'7b7d', zeroblob(32), zeroblob(32))",
        [session],
    )
    .expect("red team step");
    drop(c);

    // A marker outside the chain does not suppress the report.
    let mut store = w.open();
    let r =
        ratchet_scorers::ingest_junit(&mut store, &report, &cand(), "ci").expect("red team step");
    assert_eq!((r.test_runs, r.already_ingested_at), (1, None), "{r:?}");
    drop(store);

    w.remove_planted_row();

    let v = w.verdict_at_a_new_checkpoint();
    assert_eq!(
        outcome_stage(&v),
        Some(&Stage::Tests),
        "the failure counts: {v:#?}"
    );
}

// ---------------------------------------------------------------------------
// HOLE 2b (fixed as HOLE 2; the merge itself does not verify the home, but
// the home then fails verification, so nothing decides from it): the merge's
// high-water query (`events NOT INDEXED WHERE origin_store = ?`) is a scan
// from the first row; verification seeks to seq >= 1. A grafted leftmost
// events leaf holding one row "origin (cell, 1, cell's hash at 1)" sets the
// cell's high-water mark to 1 for ever: the cell's failed run is never
// merged, and nothing has to be cleaned up.

#[test]
fn hole2b_grafted_event_moves_a_cells_high_water_mark_for_good() {
    let (w, home) = World::scored(0.4, 0.8, 7);
    drop(home);
    let (cell_dir, mut cell) = w.cell_with_a_failed_run();
    cell.record_test_run(&run(40, 0), "ci-cell")
        .expect("red team step");
    let cell_id = cell.id().to_string();
    let hash1 = cell
        .event_by_seq(1)
        .expect("red team step")
        .expect("red team step")
        .hash;
    drop(cell);

    let c = w.attacker();
    c.execute_batch(
        "CREATE TABLE forged (seq INTEGER PRIMARY KEY, id BLOB NOT NULL, ts_ms INTEGER NOT NULL,
           cell TEXT NOT NULL, session TEXT NOT NULL, kind TEXT NOT NULL, commit_id TEXT,
           payload BLOB NOT NULL, origin_store TEXT, origin_seq INTEGER, origin_hash BLOB,
           prev_hash BLOB NOT NULL, hash BLOB NOT NULL, mac BLOB);",
    )
    .expect("red team step");
    c.execute(
        "INSERT INTO forged VALUES (1, zeroblob(16), 0, 'x', 'x', 'note', NULL, x'7b7d',
           ?1, 1, ?2, zeroblob(32), zeroblob(32), NULL)",
        params![cell_id, &hash1.as_bytes()[..]],
    )
    .expect("red team step");
    graft_forged_under(c, &w.db(), "events");

    // The merge may be misled (it does not verify the home), but the
    // home's next verification sees the graft, and nothing decides from it.
    let mut home = w.open();
    let _ = home.merge_cell(&cell_dir, &MergeOptions::default());
    let cp = home.checkpoint().expect("red team step");
    w.assert_caught(&mut home, &cp);
}
