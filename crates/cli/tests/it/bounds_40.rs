//! Verdicts print the bound that matches the decision (issue 40, item 5):
//! a promote reads "promoted: improvement ≥ +x (one-sided, α, always
//! valid)" before its two-sided interval, a reject "rejected: improvement
//! ≤ +x, below the gap", in `gate`, `gate --json`, the HTML report and the
//! pull-request comment (`report --markdown`).

use crate::common;

use common::{append, fresh_store, gate, in_store_ok, text};

const BASE: &str = "5555555555555555555555555555555555555555";
const CAND: &str = "6666666666666666666666666666666666666666";

/// Class `q` on `accuracy` in [0, 1], the betting test with a gap of 0.2.
const POLICY: &str = "[class.q]\nscorer = \"accuracy\"\ntest = \"betting\"\nalpha = 0.05\nbeta = 0.1\ngap = 0.2\nmax_n = 2000\n";

/// 300 tasks: the baseline passes every third, the candidate `better` of
/// every ten more often than not (deterministic, no seed needed).
fn scores(candidate_passes: impl Fn(usize) -> bool) -> String {
    let mut out = String::new();
    for t in 0..300 {
        let base = f64::from(u8::from(t % 3 == 0));
        let cand = f64::from(u8::from(candidate_passes(t)));
        for (c, v) in [(BASE, base), (CAND, cand)] {
            out.push_str(&format!(
                "{{\"kind\":\"score\",\"commit\":\"{c}\",\"payload\":{{\"task\":\"t{t:03}\",\"scorer\":\"accuracy\",\"scorer_version\":\"1\",\"value\":{v}}}}}\n"
            ));
        }
    }
    out
}

fn store_with(lines: &str) -> (tempfile::TempDir, String) {
    let (d, st) = fresh_store();
    let policy = d.path().join("policy.toml");
    std::fs::write(&policy, POLICY).expect("policy");
    append(d.path(), &st, lines);
    in_store_ok(
        d.path(),
        &st,
        &["policy", "pin", policy.to_str().expect("utf8")],
    );
    (d, st)
}

#[test]
fn a_promote_prints_its_lower_bound_before_the_two_sided_interval_on_every_face() {
    // The candidate passes 8 tasks in 10: far better than the baseline's ⅓.
    let (d, st) = store_with(&scores(|t| t % 10 < 8));
    let o = gate(d.path(), &st, BASE, CAND, "q", &["--dry-run"]);
    let words = text(&o);
    assert!(words.starts_with("PROMOTE"), "{words}");
    assert!(
        words.contains("promoted: improvement ≥ +")
            && words.contains("(one-sided, α = 0.05, always valid); two-sided 95 % interval ["),
        "{words}"
    );

    let o = gate(d.path(), &st, BASE, CAND, "q", &["--dry-run", "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
    let bound = &v["effect_as_read"]["bound"];
    assert_eq!(bound["side"], "lower", "{v}");
    let lower = bound["improvement"].as_f64().expect("a number");
    let recorded = common::sequential_stage(&v);
    let effect = &recorded["details"]["effect"];
    assert_eq!(effect["bound"]["value"].as_f64(), Some(lower), "{recorded}");
    // Above 0, as the promote says, and below the estimate.
    assert!(lower > 0.0 && lower < effect["estimate"].as_f64().expect("estimate"));

    gate(d.path(), &st, BASE, CAND, "q", &[]);
    let comment = text(&in_store_ok(d.path(), &st, &["report", "--markdown"]));
    assert!(
        comment.contains("**promoted: improvement ≥ +")
            && comment.contains("always valid)**; two-sided 95 % interval "),
        "{comment}"
    );
    in_store_ok(d.path(), &st, &["report", "--out", "r.html"]);
    let html = std::fs::read_to_string(d.path().join("r.html")).expect("report");
    assert!(
        html.contains("promoted: improvement ≥ +") && html.contains("two-sided 95 % interval"),
        "the HTML report lacks the bound"
    );
}

#[test]
fn a_reject_prints_its_upper_bound_against_the_gap() {
    // The candidate passes as often as the baseline: not the gap better.
    let (d, st) = store_with(&scores(|t| (t + 1) % 3 == 0));
    let o = gate(d.path(), &st, BASE, CAND, "q", &["--dry-run"]);
    let words = text(&o);
    assert!(words.starts_with("REJECT"), "{words}");
    assert!(
        words.contains("rejected: improvement ≤ ")
            && words.contains(", below the gap +0.2 (one-sided, β = 0.1, always valid)"),
        "{words}"
    );
}
