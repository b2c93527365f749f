//! The scene heal's tests share: a prompt at three versions, measured, the
//! deployed one fallen.

use std::path::Path;

use git2::Repository;
use ratchet_testkit::git::commit_work_file;
use ratchet_trace::{CommitId, Score, Store};

/// A repository at `dir` with three commits of `prompt.txt` ("v1", "v2",
/// "v3"), HEAD at the last.
pub fn three_versions(dir: &Path) -> (Repository, Vec<CommitId>) {
    let repo = Repository::init(dir).expect("init");
    let commits = ["v1", "v2", "v3"]
        .iter()
        .map(|v| {
            let oid = commit_work_file(&repo, "prompt.txt", v, v);
            CommitId::parse(&oid.to_string()).expect("commit id")
        })
        .collect();
    (repo, commits)
}

/// 100 quality scores of each of `commits` (means 0.80, 0.85, 0.90), then
/// 20 live scores of the third around 0.70: the harm an alarm on it
/// reports (heal compares candidates with this estimate).
pub fn record_versions_and_a_fall(store: &mut Store, commits: &[CommitId]) {
    for (c, mean) in commits.iter().zip([0.80, 0.85, 0.90]) {
        store
            .record_scores(&around(c, "t", mean, 100), "eval")
            .expect("scores");
    }
    store
        .record_scores(&around(&commits[2], "live", 0.70, 20), "live")
        .expect("live scores");
}

/// `n` quality scores of `c` on tasks `<prefix>0…`, spread ±0.05 about `mean`.
fn around(c: &CommitId, prefix: &str, mean: f64, n: u32) -> Vec<Score> {
    (0..n)
        .map(|i| {
            Score::new(
                c.clone(),
                format!("{prefix}{i}"),
                "quality",
                mean + (f64::from(i % 11) - 5.0) * 0.01,
            )
        })
        .collect()
}
