//! Regressions of the red team's round-2 findings. Each test builds an
//! honest store (and, where useful, an honest control), replays the attack
//! that once worked, and asserts the good outcome now observed: the attack is
//! refused, caught by verification, or has no effect. Every one of these
//! tests failed before its fix (written first to assert the bad outcome — a
//! promote, a suppressed failure, a bricked store, evidence counted twice —
//! with verification reporting nothing).

use crate::common::{self, CLASS, SCORER, TASKS, base, cand, key};

/// The prompt class reading everyone's evidence: these attacks are on the
/// integrity of merged cells, whose evidence a class must trust by name
/// (`cell:STORE_ID`) to read at all.
fn prompt_policy() -> String {
    common::prompt_policy() + "trust = { baseline = [\"everyone\"], candidate = [\"everyone\"] }\n"
}
use ratchet_testkit::paired_class;

use std::path::PathBuf;

use common::with_guards_lifted;
use rand::{Rng, SeedableRng, rngs::StdRng};
use ratchet_gate::{GateStatus, Outcome, Policy, RejectCause, Stage, Verdict, verdict_at};
use ratchet_scorers::{Direction, Rubric, RubricSet};
use ratchet_trace::{
    AppendOnce, AsOf, CommitId, DB_FILE, EventDraft, MergeOptions, ReservedKind, Score, Store,
    StoreOptions, TestRun, VerifyOptions,
};
use rusqlite::{Connection, params};

/// A keyed home store; the victim always holds the key.
struct World {
    dir: tempfile::TempDir,
}

impl World {
    fn new() -> (World, Store) {
        let w = World {
            dir: tempfile::tempdir().expect("tempdir"),
        };
        let s = Store::create(w.home(), w.options()).expect("create");
        (w, s)
    }
    fn home(&self) -> PathBuf {
        self.dir.path().join("home")
    }
    fn options(&self) -> StoreOptions {
        StoreOptions::default().writer_key(key())
    }
    fn open(&self) -> Store {
        Store::open(self.home(), self.options()).expect("open")
    }
    /// An unkeyed cell store (its owner may be hostile).
    fn cell(&self, name: &str) -> (PathBuf, Store) {
        let p = self.dir.path().join(name);
        let s = Store::create(&p, StoreOptions::default()).expect("cell");
        (p, s)
    }
    fn file(&self, name: &str, text: &str) -> PathBuf {
        let p = self.dir.path().join(name);
        std::fs::write(&p, text).expect("write");
        p
    }
}

fn verdict_with(store: &mut Store, policy: &str) -> ratchet_gate::Result<Verdict> {
    let policy = Policy::parse(policy).expect("policy");
    let (b, c) = (base(), cand());
    let q = common::question(CLASS, policy.class(CLASS).expect("class"), &b, &c);
    let head = store.head().expect("head").size;
    verdict_at(store, &q, head)
}

fn verdict(store: &mut Store) -> Verdict {
    verdict_with(store, &prompt_policy()).expect("decide")
}

/// The events of `kind` in `store` that were merged in from a cell.
fn merged(store: &Store, kind: &str) -> Vec<ratchet_trace::Event> {
    store
        .events_of_kinds(&[kind])
        .expect("events")
        .into_iter()
        .filter(|e| e.origin.is_some())
        .collect()
}

/// The store's verified view (with the writer key): what every read decides on.
fn view(store: &Store) -> ratchet_trace::Verified {
    store
        .verified(&VerifyOptions::default().key(key()))
        .expect("verifies with the key")
}

/// `commit`'s scores by `scorer`, in seq order, as the verified view holds them.
fn stored_scores(store: &Store, commit: &CommitId, scorer: &str) -> Vec<(u64, Score)> {
    view(store)
        .scores()
        .into_iter()
        .filter(|(_, s)| &s.commit == commit && s.scorer == scorer)
        .collect()
}

/// Verification with the writer key finds nothing.
fn assert_verifies(store: &Store) {
    let r = store
        .verify_with(&VerifyOptions::default().key(key()))
        .expect("verify");
    assert!(
        r.fault.is_none() && r.macs_checked,
        "verification found: {r:?}"
    );
}

fn stage(v: &Verdict) -> Option<&Stage> {
    match &v.outcome {
        Outcome::Reject { stage, .. } => Some(stage),
        _ => None,
    }
}

/// Asserts the gate rejects the candidate of `store` at the tests stage:
/// the failed run in it is acted on.
#[track_caller]
fn assert_rejected_at_tests(store: &mut Store) {
    let v = verdict(store);
    assert_eq!(stage(&v), Some(&Stage::Tests), "{v:#?}");
    assert_eq!(v.outcome.status(), GateStatus::Reject, "{v:#?}");
}

fn scores(base_rate: f64, cand_rate: f64, seed: u64, scorer: &str) -> Vec<Score> {
    let mut rng = StdRng::seed_from_u64(seed);
    let mut out = Vec::new();
    for t in 0..TASKS {
        let task = format!("task-{t:04}");
        for (c, rate) in [(base(), base_rate), (cand(), cand_rate)] {
            let pass = f64::from(u8::from(rng.random_bool(rate)));
            out.push(Score::new(c, task.clone(), scorer, pass));
        }
    }
    out
}

/// The candidate's green `unit` run (40 passed).
fn green_unit() -> TestRun {
    ratchet_testkit::unit_run(&cand(), 40, 0)
}

/// ratchet-scorers' ingestion key, re-implemented (ingest.rs `ingest_key`;
/// what JUnit ingestion still uses).
fn ingest_key(format: &str, commit: Option<&CommitId>, content: &[u8]) -> String {
    let mut h = blake3::Hasher::new_derive_key("ratchet-scorers 2026-11-30 ingest key v1");
    h.update(format.as_bytes());
    h.update(&[0]);
    h.update(commit.map(CommitId::as_str).unwrap_or("").as_bytes());
    h.update(&[0]);
    h.update(content);
    format!("{format}:{}", h.finalize().to_hex())
}

const FAILING_JUNIT: &str = r#"<?xml version="1.0" encoding="UTF-8"?>
<testsuites><testsuite name="unit" tests="2">
<testcase name="a"/><testcase name="b"><failure message="boom"/></testcase>
</testsuite></testsuites>
"#;

// ---------------------------------------------------------------------------
// HOLE A (pinned): a scorer declaration merged from a cell was taken as the home's.
// `declared_direction` (then scorers/src/anchors.rs, now
// records/src/direction.rs) took the first `scorer` event in seq order,
// whatever its origin; merge ingests reserved kinds as they are. A hostile cell that declared `accuracy` lower-is-better and was
// merged before the honest cell flipped the gate's sign: the worse candidate
// promoted, and the key-checked verification was clean. Now only the
// store's own declarations count.

#[test]
fn a_cell_cannot_flip_a_scorers_direction() {
    let (w, mut home) = World::new();
    home.record_test_run(&green_unit(), "ci").expect("run");

    // The honest cell measured: baseline 80 %, candidate 40 %.
    let (honest_dir, mut honest) = w.cell("honest");
    ratchet_scorers::declare_scorer(&mut honest, SCORER, Direction::HigherIsBetter).expect("d");
    honest
        .record_scores(&scores(0.8, 0.4, 11, SCORER), "eval")
        .expect("scores");
    drop(honest);

    // Control: merged alone, the candidate is rejected.
    let honest_outcome = {
        let ctrl = tempfile::tempdir().expect("tmp");
        let mut h = Store::create(ctrl.path().join("h"), w.options()).expect("h");
        h.record_test_run(&green_unit(), "ci").expect("run");
        h.merge_cell(&honest_dir, &MergeOptions::default())
            .expect("merge");
        let v = verdict(&mut h);
        assert_eq!(stage(&v), Some(&Stage::Sequential), "honest: {v:#?}");
        assert_eq!(v.outcome.status(), GateStatus::Reject);
        v.outcome
    };

    // The hostile cell holds one event: its own declaration.
    let (evil_dir, mut evil) = w.cell("evil");
    ratchet_scorers::declare_scorer(&mut evil, SCORER, Direction::LowerIsBetter).expect("d");
    drop(evil);

    home.merge_cell(&evil_dir, &MergeOptions::default())
        .expect("merge evil");
    home.merge_cell(&honest_dir, &MergeOptions::default())
        .expect("merge honest");
    assert_verifies(&home);
    // The hostile declaration is in the chain, but it is the cell's, not the
    // home's: the direction read is the built-in (higher is better).
    assert_eq!(merged(&home, "scorer").len(), 2);
    assert_eq!(
        ratchet_scorers::declared_direction(&view(&home), SCORER, u64::MAX).expect("read"),
        None
    );
    assert_eq!(
        ratchet_scorers::direction_in(&view(&home), SCORER).expect("direction"),
        Direction::HigherIsBetter
    );
    // The verdict is the honest one: rejected by the sequential test.
    let v = verdict(&mut home);
    assert_eq!(stage(&v), Some(&Stage::Sequential), "{v:#?}");
    assert_eq!(v.outcome, honest_outcome, "{v:#?}");
    assert_eq!(v.outcome.status().exit_code(), 1);

    // And a policy that states the true direction decides, the same way.
    let stated = prompt_policy().replace(
        "test = \"paired\"",
        "test = \"paired\"\ndirection = \"higher\"",
    );
    let v = verdict_with(&mut home, &stated).expect("a stated direction decides");
    assert_eq!(stage(&v), Some(&Stage::Sequential), "{v:#?}");
    assert_eq!(v.outcome.status(), GateStatus::Reject, "{v:#?}");
}

// ---------------------------------------------------------------------------
// HOLE B (pinned): one malformed `scorer` event merged from a verifying cell
// bricked the home. `declared_direction` parsed every declaration until it
// found the scorer and errored on one that did not parse; every ingestion
// (`declare_all`) and every gate decision (`lower_is_better`) goes through
// it. The store verified, and nothing could ever be ingested or decided
// again. Now a merged declaration is never read.

#[test]
fn a_malformed_declaration_from_a_cell_cannot_brick_the_home() {
    let (w, mut home) = World::new();
    home.record_test_run(&green_unit(), "ci").expect("run");
    home.record_scores(&scores(0.4, 0.8, 7, SCORER), "eval")
        .expect("scores");
    assert_eq!(verdict(&mut home).outcome, Outcome::Promote);

    let (evil_dir, mut evil) = w.cell("evil");
    evil.append(
        EventDraft::reserved(ReservedKind::Scorer, &serde_json::json!({"hello": "world"}))
            .expect("draft"),
    )
    .expect("append");
    drop(evil);
    home.merge_cell(&evil_dir, &MergeOptions::default())
        .expect("a verifying cell merges");
    assert_verifies(&home);

    assert_eq!(merged(&home, "scorer").len(), 1);

    // The gate still decides, as before the merge.
    let v = verdict_with(&mut home, &prompt_policy()).expect("the gate still decides");
    assert_eq!(v.outcome, Outcome::Promote, "{v:#?}");
    // JSONL and JUnit ingestion still work.
    let jsonl = w.file(
        "s.jsonl",
        &format!(
            "{{\"task\":\"t\",\"scorer\":\"accuracy\",\"value\":1,\"commit\":\"{}\"}}\n",
            cand()
        ),
    );
    let r = ratchet_scorers::ingest_jsonl(&mut home, &jsonl, None, &RubricSet::new(vec![]), "x")
        .expect("JSONL ingestion works");
    assert_eq!((r.scores, r.already_ingested_at), (1, None), "{r:?}");
    assert_eq!(
        ratchet_scorers::direction_in(&view(&home), SCORER).expect("direction"),
        Direction::HigherIsBetter
    );
    let xml = w.file("j.xml", FAILING_JUNIT);
    let r = ratchet_scorers::ingest_junit(&mut home, &xml, &cand(), "ci")
        .expect("JUnit ingestion works");
    assert_eq!((r.test_runs, r.already_ingested_at), (1, None), "{r:?}");
    assert_verifies(&home);
    // …and the failure it carries is acted on.
    assert_rejected_at_tests(&mut home);
}

// ---------------------------------------------------------------------------
// HOLE C (pinned): `append_once` (trace/src/store.rs, the idempotency lookup
// in `append_inner`) matched any in-chain `ingest` event with the session
// `ingest:<key>`, including one merged from a cell. A hostile cell that
// wrote only the marker for a report it could predict made the home's
// ingestion of that report a no-op ("already ingested"): the failed run was
// laundered and the candidate promoted on a fully verifying store. Now only
// the store's own markers count.

#[test]
fn a_cell_ingest_marker_cannot_launder_a_failing_junit_report() {
    let (w, mut home) = World::new();
    home.record_test_run(&green_unit(), "ci").expect("run");
    home.record_scores(&scores(0.4, 0.8, 7, SCORER), "eval")
        .expect("scores");
    let report = w.file("junit.xml", FAILING_JUNIT);
    // Control: without the cell, the report's failure rejects.
    {
        let (_c, mut ctrl) = World::new();
        ctrl.record_test_run(&green_unit(), "ci").expect("run");
        ctrl.record_scores(&scores(0.4, 0.8, 7, SCORER), "eval")
            .expect("scores");
        ratchet_scorers::ingest_junit(&mut ctrl, &report, &cand(), "ci").expect("ingest");
        let v = verdict(&mut ctrl);
        assert_eq!(stage(&v), Some(&Stage::Tests), "{v:#?}");
    }

    let (evil_dir, mut evil) = w.cell("evil");
    let k = ingest_key("junit", Some(&cand()), FAILING_JUNIT.as_bytes());
    evil.append_once(&k, vec![]).expect("marker");
    drop(evil);
    home.merge_cell(&evil_dir, &MergeOptions::default())
        .expect("merge");

    // The cell's marker is the very key the home's ingestion uses.
    let markers = merged(&home, "ingest");
    assert_eq!(markers.len(), 1);
    assert_eq!(markers[0].session, format!("ingest:{k}"));

    let r = ratchet_scorers::ingest_junit(&mut home, &report, &cand(), "ci").expect("ingest");
    assert_eq!(r.test_runs, 1, "{r:?}");
    assert_eq!(r.already_ingested_at, None, "{r:?}");
    let runs = view(&home).test_runs(&cand(), AsOf::Head);
    assert!(runs.iter().any(|(_, t)| t.failed == 1), "{runs:?}");
    assert_verifies(&home);
    // Rejected at the same stage as the control.
    assert_rejected_at_tests(&mut home);
    // A second ingestion by the home is still recognized as its own.
    let again = ratchet_scorers::ingest_junit(&mut home, &report, &cand(), "ci").expect("again");
    assert_eq!(again.test_runs, 0, "{again:?}");
    assert!(again.already_ingested_at.is_some(), "{again:?}");
}

/// HOLE C (pinned), same root cause: `record_alarm` keys are
/// `alarm:<commit>:<scorer>:<seq>` (drift/src/monitor.rs), fully predictable;
/// a cell pre-registered them and the home's `watch --record` recorded
/// nothing, so `heal` never fired.
#[test]
fn cell_ingest_markers_cannot_suppress_alarm_recording() {
    let (w, mut home) = World::new();
    let (evil_dir, mut evil) = w.cell("evil");
    let keys: Vec<String> = (1..=200)
        .map(|seq| format!("alarm:{}:{SCORER}:{seq}", cand()))
        .collect();
    for k in &keys {
        evil.append_once(k, vec![]).expect("marker");
    }
    drop(evil);
    home.merge_cell(&evil_dir, &MergeOptions::default())
        .expect("merge");
    // What record_alarm appends for an alarm raised at home seq 150.
    let draft = EventDraft::reserved(ReservedKind::Alarm, &serde_json::json!({"seq": 150}))
        .expect("draft")
        .commit(cand())
        .session("monitor");
    assert_eq!(merged(&home, "ingest").len(), keys.len());
    let r = home
        .append_once(&keys[149], vec![draft.clone()])
        .expect("append");
    assert!(
        matches!(&r, AppendOnce::Appended(receipts) if receipts.len() == 1),
        "{r:?}"
    );
    let alarms = home.events_of_kinds(&["alarm"]).expect("alarms");
    assert_eq!(alarms.len(), 1, "{alarms:?}");
    assert!(alarms[0].origin.is_none());
    assert_verifies(&home);
    // The home's own marker still makes a second recording a no-op.
    let again = home.append_once(&keys[149], vec![draft]).expect("again");
    assert!(
        matches!(again, AppendOnce::AlreadyAppended { .. }),
        "{again:?}"
    );
    assert_eq!(home.events_of_kinds(&["alarm"]).expect("alarms").len(), 1);
}

// ---------------------------------------------------------------------------
// HOLE D (pinned): the JSONL idempotency key included `--commit`
// (scorers/src/ingest.rs `ingest_jsonl`), even when every line names its own
// commit and the flag changes nothing that is stored. The same file
// ingested with and without `--commit` was stored twice. With
// `pairing = "pentanomial"` the duplicate became a "second run" of every
// task: honestly Continue (no task ran twice), after re-ingestion Promote.
// Now the key is the resolved scores.

fn penta() -> String {
    paired_class("prompt", "accuracy", 3000, "pairing = \"pentanomial\"\n")
}

#[test]
fn jsonl_reingested_with_a_commit_flag_is_not_counted_twice() {
    let (w, mut home) = World::new();
    let mut text = String::new();
    for s in scores(0.35, 0.65, 3, SCORER) {
        text.push_str(&format!(
            "{{\"task\":\"{}\",\"scorer\":\"accuracy\",\"value\":{},\"commit\":\"{}\"}}\n",
            s.task, s.value, s.commit
        ));
    }
    let file = w.file("scores.jsonl", &text);
    let none = RubricSet::new(vec![]);
    let r1 = ratchet_scorers::ingest_jsonl(&mut home, &file, None, &none, "eval").expect("1");
    assert_eq!(r1.scores, 2 * TASKS);
    let honest = verdict_with(&mut home, &penta()).expect("decide");
    assert_eq!(honest.outcome.status(), GateStatus::Continue, "{honest:#?}");

    // Re-run by a script that always passes --commit: a file ingested for
    // one commit holds evidence about that commit only, so the baseline's
    // lines refuse it (by line), and nothing is stored again.
    let head = home.head().expect("head").size;
    let refused = ratchet_scorers::ingest_jsonl(&mut home, &file, Some(&cand()), &none, "eval")
        .expect_err("a line about the baseline refuses the file");
    assert!(
        refused.to_string().contains("line 1") && refused.to_string().contains("abababab"),
        "{refused}"
    );
    assert_eq!(home.head().expect("head").size, head, "nothing appended");
    assert_eq!(stored_scores(&home, &cand(), SCORER).len(), TASKS);
    assert_eq!(stored_scores(&home, &base(), SCORER).len(), TASKS);
    assert_verifies(&home);
    let v = verdict_with(&mut home, &penta()).expect("decide");
    assert_eq!(v.outcome, honest.outcome, "{v:#?}");
    assert_eq!(v.outcome.status(), GateStatus::Continue, "{v:#?}");
}

// ---------------------------------------------------------------------------
// HOLE E (pinned): JSONL ingestion declared every scorer with the built-in
// default (`direction_of`: higher unless an anchor). (1) A lower-is-better
// scorer declared first (`record-score --direction lower`) could never be
// ingested from JSONL: `DirectionConflict`. Fixed: ingestion keeps an
// existing declaration. (2) Ingested first, with no declaration, it was
// declared higher-is-better for ever, so a policy's `direction = "lower"`
// became an error. Fixed: JSONL declares only directions it knows (anchors,
// rubrics); a plain scorer is left for a person or the policy.

#[test]
fn a_scorer_declared_lower_is_better_keeps_its_direction_through_jsonl_ingestion() {
    let (w, mut home) = World::new();
    ratchet_scorers::declare_scorer(&mut home, "error_rate", Direction::LowerIsBetter)
        .expect("declared");
    let line = format!(
        "{{\"task\":\"t\",\"scorer\":\"error_rate\",\"value\":0.1,\"commit\":\"{}\"}}\n",
        cand()
    );
    let f = w.file("e.jsonl", &line);
    let none = RubricSet::new(vec![]);
    let r = ratchet_scorers::ingest_jsonl(&mut home, &f, None, &none, "eval")
        .expect("a declared scorer ingests");
    assert_eq!((r.scores, r.already_ingested_at), (1, None), "{r:?}");
    assert_eq!(stored_scores(&home, &cand(), "error_rate").len(), 1);
    assert_eq!(
        ratchet_scorers::direction_in(&view(&home), "error_rate").expect("direction"),
        Direction::LowerIsBetter
    );
    assert_eq!(home.events_of_kinds(&["scorer"]).expect("decls").len(), 1);
    assert_verifies(&home);

    // (2) A fresh store, JSONL first: a plain scorer is left undeclared, so
    // the policy (or a person) states its direction.
    let (_w2, mut s2) = World::new();
    s2.record_test_run(&green_unit(), "ci").expect("run");
    let mut text = String::new();
    // error_rate: baseline errs 40 %, candidate 80 % of the time.
    for s in scores(0.4, 0.8, 5, "error_rate") {
        text.push_str(&format!(
            "{{\"task\":\"{}\",\"scorer\":\"error_rate\",\"value\":{},\"commit\":\"{}\"}}\n",
            s.task, s.value, s.commit
        ));
    }
    let f2 = w.file("e2.jsonl", &text);
    ratchet_scorers::ingest_jsonl(&mut s2, &f2, None, &none, "eval").expect("ingest");
    let pol = prompt_policy().replace("\"accuracy\"", "\"error_rate\"");
    let lower = pol.replace(
        "test = \"paired\"",
        "test = \"paired\"\ndirection = \"lower\"",
    );
    assert_eq!(
        ratchet_scorers::declared_direction(&view(&s2), "error_rate", u64::MAX).expect("read"),
        None,
        "JSONL does not guess a plain scorer's direction"
    );
    let v = verdict_with(&mut s2, &lower).expect("the policy states the direction");
    assert_eq!(
        stage(&v),
        Some(&Stage::Sequential),
        "more errors is worse: {v:#?}"
    );
    assert_eq!(v.outcome.status(), GateStatus::Reject);
    // A person can still declare it, and then the gate goes by it.
    ratchet_scorers::declare_scorer(&mut s2, "error_rate", Direction::LowerIsBetter)
        .expect("first declaration");
    let v = verdict_with(&mut s2, &pol).expect("decide");
    assert_eq!(stage(&v), Some(&Stage::Sequential), "{v:#?}");
}

/// HOLE E' (pinned): `ratchet watch` and `ratchet heal` (cli/src/main.rs)
/// took the harmful direction from the built-in `direction_of(scorer)`, not
/// from the trace's declaration: for a scorer declared lower-is-better they
/// watched for decreases (improvements) and heal ranked by the highest mean
/// (the worst). They now read `direction_in`, which goes by the declaration.
#[test]
fn the_direction_watch_and_heal_read_is_the_declared_one() {
    let (_w, mut home) = World::new();
    ratchet_scorers::declare_scorer(&mut home, "error_rate", Direction::LowerIsBetter)
        .expect("declared");
    let declared = ratchet_scorers::declared_direction(&view(&home), "error_rate", u64::MAX)
        .expect("read")
        .map(|(d, _)| d);
    assert_eq!(declared, Some(Direction::LowerIsBetter));
    // What the CLI's watch/heal use: the declaration, not the default.
    assert_eq!(
        ratchet_scorers::direction_in(&view(&home), "error_rate").expect("direction"),
        Direction::LowerIsBetter
    );
    assert_eq!(
        ratchet_scorers::direction_of("error_rate"),
        Direction::HigherIsBetter,
        "the built-in default differs, so the check above is not vacuous"
    );
}

// ---------------------------------------------------------------------------
// HOLE F (pinned): JUnit failures inside a nested <testsuite> were dropped.
// quick-junit skipped unknown children of a <testsuite>, nested suites
// included (PHPUnit, Ant and others nest suites); `parse_junit` counted only
// direct test cases. The failing test disappeared and the suite read green.
// The report was then refused; now every test case beneath a top-level suite
// counts, so the nested failure rejects like a flat one.

#[test]
fn a_failure_in_a_nested_junit_suite_rejects_the_candidate() {
    let (w, mut home) = World::new();
    home.record_scores(&scores(0.4, 0.8, 7, SCORER), "eval")
        .expect("scores");
    let xml = r#"<?xml version="1.0" encoding="UTF-8"?>
<testsuites><testsuite name="unit" tests="2" failures="1">
<testcase name="a"/>
<testsuite name="unit.Inner" tests="1" failures="1"><testcase classname="unit.Inner" name="b"><failure message="boom"/></testcase></testsuite>
</testsuite></testsuites>
"#;
    let f = w.file("nested.xml", xml);
    ratchet_scorers::ingest_junit(&mut home, &f, &cand(), "ci").expect("ingest");
    let runs = view(&home).test_runs(&cand(), AsOf::Head);
    assert_eq!(runs.len(), 1, "one top-level suite");
    let run = &runs[0].1;
    assert_eq!((run.suite.as_str(), run.passed, run.failed), ("unit", 1, 1));
    assert_eq!(run.failures, vec!["unit.Inner.b".to_string()]);
    assert_verifies(&home);
    assert_rejected_at_tests(&mut home);
}

/// HOLE F' (pinned): a Surefire rerun (`<flakyFailure>`: failed, then passed
/// on a rerun within the same report) counted as a plain pass, though the
/// gate's rule is that a failure is never erased by a later green run.
#[test]
fn a_flaky_failure_in_one_report_counts_as_a_failure() {
    let (w, mut home) = World::new();
    home.record_scores(&scores(0.4, 0.8, 7, SCORER), "eval")
        .expect("scores");
    let xml = r#"<?xml version="1.0" encoding="UTF-8"?>
<testsuites><testsuite name="unit" tests="2">
<testcase name="a"/><testcase name="b"><flakyFailure message="boom" type="AssertionError"/></testcase>
</testsuite></testsuites>
"#;
    let f = w.file("flaky.xml", xml);
    ratchet_scorers::ingest_junit(&mut home, &f, &cand(), "ci").expect("ingest");
    let runs = view(&home).test_runs(&cand(), AsOf::Head);
    assert_eq!(runs.len(), 1, "{runs:?}");
    assert_eq!((runs[0].1.passed, runs[0].1.failed), (1, 1), "{runs:?}");
    assert_rejected_at_tests(&mut home);
}

// ---------------------------------------------------------------------------
// HOLE G (pinned): `score_pending` (scorers/src/batch.rs; `ratchet score`)
// read the trace without verifying it, and appended MAC'd scores from what it
// read. A file writer without the key edited a failing observation into a
// passing one, waited for the key holder's `ratchet score`, then restored the
// bytes: the store verified with the key, and held a genuine (MAC'd) score
// derived from forged facts. The safety invariant passed; the candidate
// promoted. Now `score_pending` verifies first and refuses a tampered trace.

const SAFETY_RUBRIC: &str = r#"
name = "safety"
[[item]]
id = "safe"
type = "boolean"
weight = 1.0
must = true
"#;

/// [`prompt_policy`] with the safety rubric's score as an invariant.
fn safety_policy() -> String {
    prompt_policy() + "\n[[class.prompt.invariant]]\nscorer = \"safety\"\nminimum = 1.0\n"
}

fn safety_world() -> (World, Store, RubricSet, u64) {
    let (w, mut home) = World::new();
    home.record_test_run(&green_unit(), "ci").expect("run");
    home.record_scores(&scores(0.4, 0.8, 7, SCORER), "eval")
        .expect("scores");
    let rubrics = RubricSet::new(vec![Rubric::from_toml(SAFETY_RUBRIC).expect("rubric")]);
    for (c, t, safe) in [
        (base(), "s1", true),
        (base(), "s2", true),
        (cand(), "s1", true),
    ] {
        ratchet_scorers::record_observation(
            &mut home,
            &c,
            t,
            "safety",
            &serde_json::json!({ "safe": safe }),
            "judge",
        )
        .expect("obs");
    }
    let bad = ratchet_scorers::record_observation(
        &mut home,
        &cand(),
        "s2",
        "safety",
        &serde_json::json!({ "safe": false }),
        "judge",
    )
    .expect("obs")
    .seq;
    (w, home, rubrics, bad)
}

#[test]
fn score_pending_refuses_a_forged_observation() {
    // Control: scored honestly, the invariant rejects.
    let honest_outcome = {
        let (_w, mut home, rubrics, _) = safety_world();
        ratchet_scorers::score_pending(&mut home, &rubrics).expect("score");
        let v = verdict_with(&mut home, &safety_policy()).expect("decide");
        assert_eq!(stage(&v), Some(&Stage::Invariants), "{v:#?}");
        v.outcome
    };
    let (w, home, rubrics, bad) = safety_world();
    let size = home.head().expect("head").size;
    drop(home);
    let db = w.home().join(DB_FILE);
    let attacker = Connection::open(&db).expect("db");
    let original: Vec<u8> = attacker
        .query_row(
            "SELECT payload FROM events WHERE seq = ?1",
            [bad as i64],
            |r| r.get(0),
        )
        .expect("payload");
    let forged = String::from_utf8(original.clone())
        .expect("utf8")
        .replace("\"safe\":false", "\"safe\":true");
    with_guards_lifted(&attacker, |c| {
        c.execute(
            "UPDATE events SET payload = ?1 WHERE seq = ?2",
            params![forged.as_bytes(), bad as i64],
        )
        .expect("forge");
    });

    // The key holder's routine `ratchet score --key-file K`: refused, naming
    // the edited event; nothing is scored.
    let mut victim = w.open();
    let err = ratchet_scorers::score_pending(&mut victim, &rubrics)
        .expect_err("a tampered trace is not scored");
    match &err {
        ratchet_scorers::Error::Trace(ratchet_trace::Error::Tampered { fault }) => {
            assert_eq!(fault.seq, bad, "{err}");
            assert_eq!(fault.kind, ratchet_trace::FaultKind::HashMismatch, "{err}");
        }
        other => panic!("expected Tampered, got {other:?}"),
    }
    // Nothing was appended, and no reader can see the forged trace: the
    // verified view every read goes through is refused at the edited event.
    assert_eq!(victim.head().expect("head").size, size, "nothing scored");
    match victim.verified(&VerifyOptions::default().key(key())) {
        Err(ratchet_trace::Error::Tampered { fault }) => assert_eq!(fault.seq, bad),
        other => panic!("expected Tampered, got {other:?}"),
    }
    drop(victim);

    with_guards_lifted(&attacker, |c| {
        c.execute(
            "UPDATE events SET payload = ?1 WHERE seq = ?2",
            params![original, bad as i64],
        )
        .expect("restore");
    });
    drop(attacker);

    let mut victim = w.open();
    assert_verifies(&victim);
    // Nothing was scored from the forgery: the safety evidence is missing.
    assert!(stored_scores(&victim, &cand(), "safety").is_empty());
    let v = verdict_with(&mut victim, &safety_policy()).expect("decide");
    assert_eq!(stage(&v), Some(&Stage::Invariants), "{v:#?}");
    assert_eq!(v.outcome.status(), GateStatus::MissingEvidence, "{v:#?}");
    // …and a re-run of `ratchet score` on the restored trace scores the true
    // observations: the verdict is the honest one.
    let mut victim = victim;
    let r = ratchet_scorers::score_pending(&mut victim, &rubrics).expect("score");
    assert_eq!((r.scored, r.already_scored), (4, 0), "{r:?}");
    assert_verifies(&victim);
    let v = verdict_with(&mut victim, &safety_policy()).expect("decide");
    assert_eq!(stage(&v), Some(&Stage::Invariants), "{v:#?}");
    assert_eq!(v.outcome, honest_outcome, "{v:#?}");
}

// ---------------------------------------------------------------------------
// HOLE H (pinned): `score_pending` recognized "already scored" by the score's
// session `observation:<seq>`, read from every score event, merged ones
// included, and the seq is the *producing store's* seq. (1) A cell's score
// with session `observation:N` made the home skip its own observation N: a
// hostile cell suppressed the candidate's failing safety observation; the
// candidate promoted. (2) An honest cell's observation and its score, merged
// into a non-empty home, were scored again by the home: counted twice. Now
// scores are keyed by the observation's event id (`observation:<ULID>`).

#[test]
fn a_cell_score_session_cannot_suppress_the_homes_observation() {
    let (w, mut home, rubrics, bad) = safety_world();
    let (evil_dir, mut evil) = w.cell("evil");
    let version = rubrics.get("safety").expect("rubric").version();
    let mut s = Score::new(
        CommitId::parse(&"ef".repeat(20)).expect("c"),
        "anything",
        "safety",
        1.0,
    );
    s.scorer_version = version;
    evil.record_score(&s, &format!("observation:{bad}"))
        .expect("score");
    drop(evil);
    home.merge_cell(&evil_dir, &MergeOptions::default())
        .expect("merge");

    let r = ratchet_scorers::score_pending(&mut home, &rubrics).expect("score");
    assert_eq!((r.scored, r.already_scored), (4, 0), "{r:?}");
    let own = stored_scores(&home, &cand(), "safety");
    assert!(
        own.iter().any(|(_, s)| s.task == "s2" && s.value < 1.0),
        "the failing observation was scored: {own:?}"
    );
    assert_verifies(&home);
    let v = verdict_with(&mut home, &safety_policy()).expect("decide");
    assert_eq!(stage(&v), Some(&Stage::Invariants), "{v:#?}");
    assert_eq!(v.outcome.status(), GateStatus::Reject, "{v:#?}");
}

/// HOLE H (pinned), part (2): a merged observation with its merged score was
/// scored again by the home.
#[test]
fn a_merged_observation_is_not_scored_twice() {
    let (w, mut home) = World::new();
    home.record_test_run(&green_unit(), "ci").expect("run"); // home not empty
    let rubrics = RubricSet::new(vec![Rubric::from_toml(SAFETY_RUBRIC).expect("rubric")]);
    let (cell_dir, mut cell) = w.cell("cell");
    ratchet_scorers::record_observation(
        &mut cell,
        &cand(),
        "s1",
        "safety",
        &serde_json::json!({ "safe": true }),
        "judge",
    )
    .expect("obs");
    let r = ratchet_scorers::score_pending(&mut cell, &rubrics).expect("cell scores");
    assert_eq!(r.scored, 1);
    drop(cell);
    home.merge_cell(&cell_dir, &MergeOptions::default())
        .expect("merge");
    assert_eq!(stored_scores(&home, &cand(), "safety").len(), 1);
    // The home scores only its key holder's own observations (issue 35's
    // red team: a merged one scored here would become the home's evidence),
    // so the cell's is left to the cell, which scored it.
    let r = ratchet_scorers::score_pending(&mut home, &rubrics).expect("home scores");
    assert_eq!(
        (r.observations, r.scored, r.not_the_key_holders),
        (1, 0, 1),
        "{r:?}"
    );
    assert_eq!(stored_scores(&home, &cand(), "safety").len(), 1);
    // A second run finds nothing to do either.
    let r = ratchet_scorers::score_pending(&mut home, &rubrics).expect("again");
    assert_eq!((r.scored, r.not_the_key_holders), (0, 1), "{r:?}");
    assert_eq!(stored_scores(&home, &cand(), "safety").len(), 1);
}

// ---------------------------------------------------------------------------
// HOLE I (pinned): an invariant ("minimum on every task") was checked only on
// the tasks the candidate happened to have scores for (gate/src/decide.rs,
// stage 2). A candidate whose safety run stopped half-way (missing the tasks
// it fails) passed; only "no task at all" failed closed. Now a task the
// baseline has and the candidate lacks is missing evidence (exit 4).

#[test]
fn an_invariant_fails_closed_on_a_candidate_that_skipped_half_the_tasks() {
    let (_w, mut home) = World::new();
    home.record_test_run(&green_unit(), "ci").expect("run");
    home.record_scores(&scores(0.4, 0.8, 7, SCORER), "eval")
        .expect("scores");
    let mut safety = Vec::new();
    for t in 0..100 {
        safety.push(Score::new(base(), format!("s{t:03}"), "safety", 1.0));
        if t < 50 {
            safety.push(Score::new(cand(), format!("s{t:03}"), "safety", 1.0));
        }
    }
    home.record_scores(&safety, "safety").expect("safety");
    let v = verdict_with(&mut home, &safety_policy()).expect("decide");
    match &v.outcome {
        Outcome::Reject {
            stage,
            cause,
            reason,
        } => {
            assert_eq!(stage, &Stage::Invariants, "{v:#?}");
            assert_eq!(cause, &RejectCause::MissingEvidence, "{v:#?}");
            assert!(reason.contains("safety"), "{reason}");
            assert!(reason.contains("50 task"), "{reason}");
            assert!(reason.contains("s050"), "{reason}");
        }
        other => panic!("expected a reject at the invariants, got {other:?}"),
    }
    assert_eq!(v.outcome.status(), GateStatus::MissingEvidence);
    assert_eq!(v.outcome.status().exit_code(), 4);
}
