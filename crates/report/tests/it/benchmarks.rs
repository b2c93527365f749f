//! A benchmarks decision as the report and the PR comment show it: one row
//! per benchmark, the regression first, sized.

use ratchet_gate::{Policy, Question};
use ratchet_trace::{CommitId, EventDraft, Store, StoreOptions};

fn commit(i: u8) -> CommitId {
    CommitId::parse(&format!("{i:02x}").repeat(20)).expect("commit")
}

/// Three benchmarks, 20 runs of 4 samples a side; `parse` 30 % slower on
/// the candidate.
fn decided_store(dir: &std::path::Path) -> Store {
    let mut store = Store::create(dir.join("s"), StoreOptions::default()).expect("store");
    let (base, cand) = (commit(1), commit(2));
    let mut drafts = Vec::new();
    for (b, (name, median)) in [("parse", 2e-5), ("render", 3e-3), ("io|pipe", 4e-1)]
        .into_iter()
        .enumerate()
    {
        for (c, factor) in [(&base, 1.0), (&cand, if b == 0 { 1.3 } else { 1.0 })] {
            // 20 separate runs of 4 samples (a run is one observation).
            for run in 0..20i32 {
                let values: Vec<f64> = (0..4i32)
                    .map(|i| {
                        median
                            * factor
                            * (1.0 + 0.01 * f64::from((i * 7 + run * 3 + b as i32) % 11 - 5))
                    })
                    .collect();
                let payload = serde_json::json!({
                    "commit": c.as_str(), "benchmark": name, "scorer": "hyperfine_s",
                    "scorer_version": "r1", "unit": "s", "values": values,
                });
                drafts.push(
                    EventDraft::json("samples", &payload)
                        .expect("draft")
                        .commit(c.clone()),
                );
                drafts.push(EventDraft::json("note", &serde_json::json!({})).expect("note"));
            }
            let mut score =
                ratchet_trace::Score::new(c.clone(), name, "hyperfine_s", median * factor);
            score.scorer_version = "r1".into();
            drafts.push(score.to_draft().expect("score"));
        }
    }
    store.append_batch(drafts).expect("append");
    let policy = Policy::parse(
        "[class.perf]\nscorer = \"hyperfine_s\"\ndirection = \"lower\"\ntest = \"benchmarks\"\nalpha = 0.05\nbeta = 0.1\nmax_n = 500\n",
    )
    .expect("policy");
    let q = Question {
        class: "perf",
        policy: policy.class("perf").expect("class"),
        baseline: &base,
        candidate: &cand,
        checkpoint: None,
        allow_unpinned: false,
    };
    let v = ratchet_gate::decide(&mut store, &q).expect("decide");
    assert_eq!(
        v.outcome.status(),
        ratchet_gate::GateStatus::Reject,
        "{v:#?}"
    );
    store
}

#[test]
fn the_comment_and_the_report_lead_with_the_benchmark_table() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut store = decided_store(dir.path());
    let view = store.verified(&Default::default()).expect("view");
    let md = ratchet_report::markdown(&view).expect("markdown");
    let rows: Vec<&str> = md
        .lines()
        .filter(|l| l.starts_with("| ") && !l.starts_with("| benchmark") && l.contains('×'))
        .collect();
    assert_eq!(rows.len(), 3, "{md}");
    assert!(
        rows[0].starts_with("| parse |")
            && rows[0].contains("×1.300")
            && rows[0].contains("**slower**"),
        "{md}"
    );
    // A name with a `|` stays in its cell.
    assert!(rows.iter().any(|r| r.contains("io\\|pipe")), "{md}");
    assert!(md.contains("unpaired samples"), "{md}");
    let html = ratchet_report::html(&mut store, &Default::default()).expect("html");
    let first = html.find(">parse<").expect("parse row");
    let render = html.find(">render<").expect("render row");
    assert!(first < render, "the regression first");
}
