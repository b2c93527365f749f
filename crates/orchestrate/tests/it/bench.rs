//! `bench` as a library user calls it: two revisions, ABBA rounds, every
//! run's samples stored with its round, the gate asked after each round.

use ratchet_orchestrate::{
    BenchGate, BenchSide, BenchSpec, Limits, ProcessSandbox, bench_with, resolve_commit,
};
use ratchet_scorers::{Format, KIND_SAMPLES, Samples};
use ratchet_testkit::git::repo_with_branches;
use ratchet_trace::{Store, StoreOptions};

/// A hyperfine export of three times at `factor` percent of 0.1 s, varied
/// by a counter kept in the work directory.
const BENCH_SH: &str = r#"n=$(cat n 2>/dev/null || echo 0); n=$((n + 1)); echo "$n" > n
f=$(cat factor.txt)
a=$(( (100000 + (n % 7) * 100) * f / 100 )); b=$(( (101000 + (n % 5) * 100) * f / 100 ))
printf '{"results":[{"command":"w","mean":0.1,"times":[0.%06d,0.%06d],"exit_codes":[0,0]}]}' "$a" "$b" > out/h.json
"#;

#[test]
fn bench_runs_abba_rounds_and_stops_when_the_gate_decides() {
    let d = tempfile::tempdir().expect("tempdir");
    let repo = d.path().join("repo");
    repo_with_branches(
        &repo,
        &[("bench.sh", Some(BENCH_SH)), ("factor.txt", Some("100\n"))],
        &[("slow", "factor.txt", "125\n")],
    );
    let mut store = Store::create(d.path().join("store"), StoreOptions::default()).expect("store");
    let policy = ratchet_gate::Policy::parse(
        r#"[class.perf]
scorer = "hyperfine_s"
test = "benchmarks"
alpha = 0.05
beta = 0.1
max_n = 100
regression = 0.05
equivalence = 0.01
"#,
    )
    .expect("policy");
    let spec = BenchSpec {
        repo: repo.clone(),
        baseline: resolve_commit(&repo, "main", false).expect("main"),
        candidate: resolve_commit(&repo, "slow", false).expect("slow"),
        build: vec!["mkdir".into(), "out".into()],
        cmd: vec!["sh".into(), "bench.sh".into()],
        out: "out/h.json".into(),
        format: Format::Hyperfine,
        gate: Some(BenchGate {
            class: "perf".into(),
            policy: Some(policy),
        }),
        rounds: 30,
        max_time: None,
        limits: Limits::default(),
        env: Default::default(),
    };
    let (mut a, mut b) = (ProcessSandbox::new(), ProcessSandbox::new());
    let mut orders = Vec::new();
    let report = bench_with(&mut store, [&mut a, &mut b], &spec, &mut |r| {
        orders.push(r.runs.iter().map(|run| run.side).collect::<Vec<_>>());
    })
    .expect("bench");
    assert!(report.failure.is_none(), "{report:?}");
    assert_eq!(report.builds.len(), 2);
    let rounds = report.rounds.len();
    assert!((2..30).contains(&rounds), "{rounds} rounds");
    for (r, order) in orders.iter().enumerate() {
        let want = if r % 2 == 0 {
            [BenchSide::Baseline, BenchSide::Candidate]
        } else {
            [BenchSide::Candidate, BenchSide::Baseline]
        };
        assert_eq!(order.as_slice(), want, "round {r}");
    }
    // Only the last round's verdict is not continue; the recorded one rejects.
    let statuses: Vec<_> = report
        .rounds
        .iter()
        .map(|r| r.verdict.as_ref().expect("verdict").outcome.status())
        .collect();
    assert!(
        statuses[..rounds - 1]
            .iter()
            .all(|s| *s == ratchet_gate::GateStatus::Continue)
    );
    assert_eq!(report.status(), ratchet_gate::GateStatus::Reject);
    assert!(report.decision_seq.is_some());
    // Each run stored one samples event, with its round, for its own commit.
    let events = store.events_of_kinds(&[KIND_SAMPLES]).expect("events");
    assert_eq!(events.len(), 2 * rounds);
    for (i, e) in events.iter().enumerate() {
        let s = Samples::from_payload(&e.payload).expect("samples");
        assert_eq!(s.round, Some((i / 2) as u64));
        assert_eq!(e.session, "bench");
        let side = orders[i / 2][i % 2];
        let commit = match side {
            BenchSide::Baseline => &spec.baseline,
            BenchSide::Candidate => &spec.candidate,
        };
        assert_eq!(&s.commit, commit);
    }
}
