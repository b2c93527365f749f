//! A timing effect as the report and the PR comment show it (issue 39):
//! significant digits in µs, not `+0.000`, and for a lower-is-better
//! scorer candidate − baseline, negative when the candidate is faster.

use ratchet_gate::{Policy, Question};
use ratchet_trace::{CommitId, Store, StoreOptions, VerifyOptions};

fn commit(i: u8) -> CommitId {
    CommitId::parse(&format!("{i:02x}").repeat(20)).expect("commit")
}

/// 60 tasks timed at about 1 ms (`latency_s`, lower is better by the
/// pinned policy); the candidate about 40.7 µs faster; decided.
fn decided_store(dir: &std::path::Path) -> Store {
    let mut store = Store::create(dir.join("s"), StoreOptions::default()).expect("store");
    let (base, cand) = (commit(1), commit(2));
    let mut drafts = Vec::new();
    for t in 0..60u32 {
        let b = 1e-3 + 2e-5 * (f64::from(t * 7 % 13) / 13.0);
        let c = b - 4.07e-5 + 3e-6 * (f64::from(t) * 1.3).sin();
        for (commit, v) in [(&base, b), (&cand, c)] {
            let mut score =
                ratchet_trace::Score::new(commit.clone(), format!("t{t:03}"), "latency_s", v);
            score.scorer_version = "1".into();
            drafts.push(score.to_draft().expect("score"));
        }
    }
    store.append_batch(drafts).expect("append");
    let policy = Policy::parse(
        "[class.perf]\nscorer = \"latency_s\"\ndirection = \"lower\"\ntest = \"gaussian\"\nalpha = 0.05\nbeta = 0.1\ngap = 0.00001\nmax_n = 500\n",
    )
    .expect("policy");
    let class = policy.class("perf").expect("class");
    ratchet_gate::pin_policy(&mut store, "perf", class).expect("pin");
    let q = Question {
        class: "perf",
        policy: class,
        baseline: &base,
        candidate: &cand,
        checkpoint: None,
        allow_unpinned: false,
    };
    let v = ratchet_gate::decide(&mut store, &q).expect("decide");
    assert_eq!(
        v.outcome.status(),
        ratchet_gate::GateStatus::Promote,
        "{v:#?}"
    );
    // Recorded on the judged scale: positive, better.
    assert!(
        v.sequential()
            .and_then(|f| f.effect)
            .expect("effect")
            .estimate
            > 0.0
    );
    store
}

#[test]
fn a_faster_candidate_reads_as_minus_microseconds_in_the_comment_and_the_report() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut store = decided_store(dir.path());
    let view = store.verified(&VerifyOptions::default()).expect("view");
    let md = ratchet_report::markdown(&view).expect("markdown");
    assert!(
        md.contains("Effect, candidate − baseline: **-40.")
            && md.contains(" µs** — an improvement: lower is better — **promoted: improvement ≥ +")
            && md.contains(" µs, i.e. candidate − baseline ≤ -")
            && md.contains("(one-sided, α = 0.05, always valid)**; two-sided 95 % interval -4")
            && !md.contains("0.0000"),
        "{md}"
    );
    let html = ratchet_report::html(&mut store, &Default::default()).expect("html");
    let banner = &html[html.find("id=\"banner-perf\"").expect("banner")..];
    let banner = &banner[..banner.find("</section>").expect("end")];
    assert!(
        banner.contains("Effect <b>promoted: improvement ≥ +")
            && banner.contains("; two-sided 95 % interval [-4")
            && banner.contains("; candidate − baseline: -40.")
            && banner.contains("(an improvement: lower is better)</b>")
            && !banner.contains("+0.000"),
        "{banner}"
    );
    let results = &html[html.find("id=\"results-perf\"").expect("results")..];
    let results = &results[..results.find("</table>").expect("end")];
    assert!(
        results.contains("-40.")
            && results.contains(" µs <small>candidate − baseline, an improvement: lower is better")
            && !results.contains("+0.0000"),
        "{results}"
    );
}
