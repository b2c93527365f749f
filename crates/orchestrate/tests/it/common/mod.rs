//! What the orchestration tests share: the scene heal's tests play (a
//! prompt at three versions, measured, the deployed one fallen), and the
//! merge tests' command lines, request and sandboxed merge.

use std::path::Path;

use git2::Repository;
use ratchet_drift::Ranking;
use ratchet_orchestrate::checks::CheckSpec;
use ratchet_orchestrate::merge::{MergeOutcome, MergeRequest, merge_branch};
use ratchet_orchestrate::sandbox::ProcessSandbox;
use ratchet_testkit::git::commit_work_file;
use ratchet_trace::{CommitId, Event, Score, Store};

/// A command line as the sandboxes take it (owned words).
pub fn argv(words: &[&str]) -> Vec<String> {
    words.iter().map(|w| w.to_string()).collect()
}

/// A merge into `main` verified by `commands`, nothing else asked.
pub fn request(commands: Vec<Vec<String>>) -> MergeRequest {
    MergeRequest::new(
        "main",
        CheckSpec {
            commands,
            ..CheckSpec::default()
        },
    )
}

/// Merges `branch` into `main` of the repository at `repo_path`, verified
/// per `req` in a new process sandbox and recorded in `store`: the one call
/// each merge test makes.
pub fn sandboxed_merge(
    repo_path: &Path,
    store: &mut Store,
    branch: &str,
    req: &MergeRequest,
) -> ratchet_orchestrate::Result<MergeOutcome> {
    merge_branch(repo_path, store, &mut ProcessSandbox::new(), branch, req)
}

/// The newest event of `store`: what the last merge recorded.
pub fn last_event(store: &Store) -> Event {
    store
        .event_by_seq(store.head().expect("head").size)
        .expect("read")
        .expect("event")
}

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
pub fn around(c: &CommitId, prefix: &str, mean: f64, n: u32) -> Vec<Score> {
    spread_about(c, prefix, mean, 0.01, n)
}

/// `n` quality scores of `c` on tasks `<prefix>0…`, in steps of `step` from
/// five steps below `mean` to five above: live or measured scores with a
/// known mean and a known spread.
pub fn spread_about(c: &CommitId, prefix: &str, mean: f64, step: f64, n: u32) -> Vec<Score> {
    (0..n)
        .map(|i| {
            Score::new(
                c.clone(),
                format!("{prefix}{i}"),
                "quality",
                mean + (f64::from(i % 11) - 5.0) * step,
            )
        })
        .collect()
}

/// The ranking heal asks for: the commits by `scorer` (any version, higher
/// is better) with at least `min_n` scores, at 95 % confidence, none of
/// `exclude`.
pub fn ranking<'a>(scorer: &'a str, min_n: u64, exclude: &'a [CommitId]) -> Ranking<'a> {
    Ranking {
        scorer,
        version: None,
        min_n,
        confidence: 0.95,
        exclude,
        lower_is_better: false,
    }
}
