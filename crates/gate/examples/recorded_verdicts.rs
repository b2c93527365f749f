//! Writes the store behind `tests/fixtures/recorded`: verdicts of every
//! shape (each test kind, each stage, promote / reject / continue / missing
//! evidence) recorded by the gate of the day it was run, so that a later
//! gate can be checked to recompute them byte for byte
//! (`tests/it/recorded.rs`). Run only to make a new fixture:
//!
//! ```text
//! cargo run -p ratchet-gate --example recorded_verdicts -- <new dir>
//! ```

use rand::{Rng, SeedableRng, rngs::StdRng};
use ratchet_gate::{Policy, Question, decide};
use ratchet_testkit::commit;
use ratchet_trace::{Score, Store, StoreOptions, TestRun};

/// Every policy field in use somewhere, defaults and non-defaults.
const POLICY: &str = r#"
[class.paired]
scorer = "accuracy"
test = "paired"
alpha = 0.05
beta = 0.05
elo0 = 0.0
elo1 = 40.0
max_n = 3000
required_suites = ["unit"]

[[class.paired.guardrail]]
scorer = "cost"
direction = "lower"
margin = 0.10
margin_kind = "relative"

[[class.paired.invariant]]
scorer = "safety"
minimum = 1.0

[class.paired.canaries]
tasks = ["task-00001", "task-00002"]

[class.pentanomial]
scorer = "accuracy"
test = "paired"
pairing = "pentanomial"
elo_model = "normalized"
overshoot = false
alpha = 0.05
beta = 0.1
elo0 = 0.0
elo1 = 2.0
max_n = 3000

[class.bernoulli]
scorer = "accuracy"
test = "bernoulli"
alpha = 0.05
beta = 0.05
gap = 0.15
pass_threshold = 1.0
max_n = 3000

[class.gaussian]
scorer = "quality"
test = "gaussian"
direction = "higher"
alpha = 0.05
beta = 0.05
gap = 0.1
warmup = 5
max_n = 3000

[[class.gaussian.guardrail]]
scorer = "latency_ms"
direction = "lower"
margin = 5.0
margin_kind = "absolute"
method = "sequence"

[class.missing_suite]
scorer = "accuracy"
test = "bernoulli"
alpha = 0.05
beta = 0.05
gap = 0.15
max_n = 3000
required_suites = ["integration"]

[class.unknown_scorer]
scorer = "helpfulness"
test = "gaussian"
alpha = 0.05
beta = 0.05
gap = 0.1
max_n = 3000

[class.pinned]
scorer = "accuracy"
scorer_version = "v0"
test = "bernoulli"
alpha = 0.05
beta = 0.05
gap = 0.15
max_n = 3000
"#;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = std::env::args()
        .nth(1)
        .ok_or("usage: recorded_verdicts <new store dir>")?;
    let dir = std::path::Path::new(&dir);
    let mut store = Store::create(dir, StoreOptions::default())?;
    std::fs::write(dir.join("policy.toml"), POLICY)?;
    let policy = Policy::parse(POLICY)?;
    let mut rng = StdRng::seed_from_u64(20261130);
    let (base, good, bad) = (commit(1), commit(2), commit(3));
    for (c, rate, shift) in [(&base, 0.5, 0.0), (&good, 0.8, 0.3), (&bad, 0.2, -0.3)] {
        let mut scores = Vec::new();
        for t in 0..100 {
            let task = format!("task-{t:05}");
            for run in 0..2 {
                let pass = f64::from(u8::from(rng.random_bool(rate) || t < 3));
                scores.push(Score::new(c.clone(), task.clone(), "accuracy", pass));
                if run == 0 {
                    let q = 0.5 + shift + rng.random::<f64>() * 0.2;
                    scores.push(Score::new(c.clone(), task.clone(), "quality", q));
                    let mut cost = Score::new(
                        c.clone(),
                        task.clone(),
                        "cost",
                        1.0 + rng.random::<f64>() * 0.1,
                    );
                    cost.scorer_version = "usd-1".into();
                    scores.push(cost);
                    scores.push(Score::new(
                        c.clone(),
                        task.clone(),
                        "latency_ms",
                        100.0 + rng.random::<f64>() * 10.0,
                    ));
                    scores.push(Score::new(c.clone(), task.clone(), "safety", 1.0));
                }
            }
        }
        store.record_scores(&scores, "fixture")?;
        store.record_test_run(
            &TestRun {
                commit: c.clone(),
                suite: "unit".into(),
                passed: 40,
                failed: u64::from(c == &bad),
                skipped: 1,
                duration_ms: 9.5,
                failures: Vec::new(),
            },
            "ci",
        )?;
    }
    let mut recorded = 0;
    for class in policy.class.keys() {
        for cand in [&good, &bad] {
            let q = Question {
                class,
                policy: policy.class(class)?,
                baseline: &base,
                candidate: cand,
                checkpoint: None,
                allow_unpinned: false,
            };
            let v = decide(&mut store, &q)?;
            println!("{class} {}: {:?}", &cand.as_str()[..4], v.outcome.status());
            recorded += 1;
        }
    }
    println!("{recorded} verdicts recorded in {}", dir.display());
    Ok(())
}
