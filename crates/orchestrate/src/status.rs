//! What a store holds, as `ratchet status` shows it.

use std::path::Path;

use git2::Repository;
use serde::Serialize;

use ratchet_drift::TraceAlarm;
use ratchet_trace::{CommitId, Ledger, Store, Verified};

use crate::deploy::{self, Deployment, RefFault, check_promotion_refs, deployments};
use crate::{Error, Result};

/// What `ratchet status` shows: the store, whether it verifies, what it
/// holds, each scorer's direction, the last decision and the last alarm.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Status {
    /// The store's id.
    pub store_id: String,
    /// The store directory.
    pub store_dir: std::path::PathBuf,
    /// The writer key id, if the store is keyed.
    pub writer_key_id: Option<String>,
    /// Verification of the whole trace (with the key the store was opened
    /// with, if any).
    pub verification: ratchet_trace::VerifyReport,
    /// What the trace holds.
    pub overview: ratchet_trace::Overview,
    /// Each scorer's direction: declared in the trace, else the default.
    pub directions: std::collections::BTreeMap<String, ratchet_scorers::Direction>,
    /// The scorers whose direction nothing in the trace declares: theirs is
    /// the built-in default, which a class's policy may state otherwise.
    #[serde(skip_serializing_if = "std::collections::BTreeSet::is_empty")]
    pub undeclared: std::collections::BTreeSet<String>,
    /// The newest `decision` event.
    pub last_decision: Option<DecisionSummary>,
    /// The newest alarm this store's monitor recorded.
    pub last_alarm: Option<TraceAlarm>,
    /// Each class's pinned policy (hash and seq); empty: no class is
    /// pinned, and a policy file beside the store decides (see README).
    pub pinned_policies: std::collections::BTreeMap<String, PinSummary>,
    /// Classes this store decided or promoted that have no pinned policy.
    pub unpinned_classes: Vec<String>,
    /// Each pinned rubric's version and the pin's seq.
    pub pinned_rubrics: std::collections::BTreeMap<String, PinSummary>,
    /// What the trace says is deployed, per class: the latest promotion,
    /// or the heal that moved away from it ([`deployments`]; the same
    /// answer the report, `serve` and Python give).
    pub deployed: std::collections::BTreeMap<String, Deployment>,
    /// The commit the repository's work tree has checked out (HEAD), when
    /// a repository was compared: it can differ from what the trace says
    /// is deployed (a person moved it, or a branch is checked out), and
    /// `status` says so.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub checked_out: Option<String>,
    /// Promotion refs that disagree with the trace (`None`: no repository
    /// was compared).
    pub ref_faults: Option<Vec<RefFault>>,
    /// The newest test runs that had failures (at most
    /// [`FAILING_RUNS_SHOWN`]), oldest first, with the tests they name.
    pub failing_runs: Vec<FailingRun>,
}

/// How many failing test runs [`Status`] lists.
pub const FAILING_RUNS_SHOWN: usize = 10;

/// A recorded test run with failures.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FailingRun {
    /// Seq of its `test_run` event.
    pub seq: u64,
    /// The commit tested.
    pub commit: CommitId,
    /// The suite.
    pub suite: String,
    /// Tests failed.
    pub failed: u64,
    /// The failed tests it names (the first of them, if many).
    pub failures: Vec<String>,
}

fn failing_runs(view: &Verified, commits: &[ratchet_trace::CommitCounts]) -> Vec<FailingRun> {
    let mut runs: Vec<FailingRun> = commits
        .iter()
        .filter_map(|c| CommitId::parse(&c.commit).ok())
        .flat_map(|c| view.test_runs(&c, ratchet_trace::AsOf::Head))
        .filter(|(_, r)| r.failed > 0)
        .map(|(seq, r)| FailingRun {
            seq,
            commit: r.commit,
            suite: r.suite,
            failed: r.failed,
            failures: r.failures,
        })
        .collect();
    runs.sort_by_key(|r| r.seq);
    let from = runs.len().saturating_sub(FAILING_RUNS_SHOWN);
    runs.split_off(from)
}

/// A pin in force: what it fixes (a policy's hash, a rubric's version) and
/// the seq of its `policy` event.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PinSummary {
    /// The policy hash or rubric version.
    pub hash: String,
    /// Seq of the pin.
    pub seq: u64,
}

/// A recorded verdict, in brief: the fields every law's verdict has (read
/// so that a verdict of a later law than this gate knows still shows in
/// a status; [`ratchet_gate::Verdict::from_json`] reads the whole).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct DecisionSummary {
    /// Seq of the `decision` event.
    #[serde(default)]
    pub seq: u64,
    /// The class.
    pub class: String,
    /// The baseline commit.
    pub baseline: CommitId,
    /// The candidate commit.
    pub candidate: CommitId,
    /// The outcome.
    pub outcome: OutcomeSummary,
}

/// A recorded outcome, in brief.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct OutcomeSummary {
    /// `promote`, `reject` or `continue` (the tag of
    /// [`ratchet_gate::Outcome`]).
    pub verdict: VerdictWord,
    /// For a reject: why (`measured`, `missing_evidence`, …).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cause: Option<ratchet_gate::RejectCause>,
}

impl OutcomeSummary {
    /// The gate's one-word status of this outcome, as
    /// [`ratchet_gate::Outcome::status`] gives it; `None` for a verdict word
    /// of a later law, or a reject that names no cause (neither is
    /// anything this build may act on).
    pub fn status(&self) -> Option<ratchet_gate::GateStatus> {
        use ratchet_gate::{GateStatus, RejectCause};
        match (self.verdict, self.cause) {
            (VerdictWord::Promote, _) => Some(GateStatus::Promote),
            (VerdictWord::Continue, _) => Some(GateStatus::Continue),
            (VerdictWord::Reject, Some(RejectCause::Measured)) => Some(GateStatus::Reject),
            (VerdictWord::Reject, Some(RejectCause::MissingEvidence)) => {
                Some(GateStatus::MissingEvidence)
            }
            (VerdictWord::Reject, Some(RejectCause::UnverifiedTrace)) => {
                Some(GateStatus::UnverifiedTrace)
            }
            (VerdictWord::Reject, Some(RejectCause::Truncated)) => Some(GateStatus::Truncated),
            (VerdictWord::Reject, None) | (VerdictWord::Later, _) => None,
        }
    }
}

/// The verdict word a recorded decision carries (the `verdict` tag of
/// [`ratchet_gate::Outcome`]), typed so that no reader compares strings.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum VerdictWord {
    /// Promote.
    Promote,
    /// Reject (its cause says of what kind).
    Reject,
    /// Collect more evidence.
    Continue,
    /// A word of a later law than this build knows: shown, never acted on.
    #[serde(other)]
    Later,
}

impl VerdictWord {
    /// The word as recorded (`promote`, `reject`, `continue`; `later` for
    /// one this build does not know).
    pub fn as_str(self) -> &'static str {
        match self {
            VerdictWord::Promote => "promote",
            VerdictWord::Reject => "reject",
            VerdictWord::Continue => "continue",
            VerdictWord::Later => "later",
        }
    }
}

impl std::fmt::Display for VerdictWord {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The store's [`Status`]. A trace that fails verification is reported as
/// such (in `verification`), not as an error; the figures beside it are
/// then empty (nothing of an altered trace is read as fact).
///
/// With `repo`, every promotion ref of that repository is compared with
/// the trace ([`check_promotion_refs`]).
///
/// # Errors
/// [`Error::Trace`] if the store cannot be read; [`Error::Scorers`] /
/// [`Error::Drift`] if a declaration or an alarm in it does not parse;
/// [`Error::Git`] if `repo` cannot be read.
pub fn status(store: &mut Store, repo: Option<&Path>) -> Result<Status> {
    let (verification, view) = store.verify_and_fold(&ratchet_trace::VerifyOptions::default())?;
    let Some(view) = view else {
        return Ok(Status {
            store_id: store.id().to_string(),
            store_dir: store.dir().to_path_buf(),
            writer_key_id: store.writer_key_id().map(str::to_string),
            overview: ratchet_trace::Overview {
                size: store.head()?.size,
                kinds: Default::default(),
                commits: Vec::new(),
                scorers: Vec::new(),
            },
            verification,
            directions: Default::default(),
            undeclared: Default::default(),
            last_decision: None,
            last_alarm: None,
            pinned_policies: Default::default(),
            unpinned_classes: Vec::new(),
            pinned_rubrics: Default::default(),
            deployed: Default::default(),
            checked_out: None,
            ref_faults: None,
            failing_runs: Vec::new(),
        });
    };
    status_of(store, verification, &view, repo)
}

/// The name [`status_in`] had (the gate's warm entry points end in `_in`:
/// `verdict_in`, `decide_in`).
///
/// # Errors
/// As [`status`].
#[deprecated(note = "renamed to `status_in`, as the gate's warm entry points are named")]
pub fn status_warm(ledger: &mut Ledger, repo: Option<&Path>) -> Result<Status> {
    status_in(ledger, repo)
}

/// [`status`] of a long-lived owner's verified view (refreshed first): no
/// re-verification of the whole trace, so it costs what is new.
///
/// # Errors
/// As [`status`].
pub fn status_in(ledger: &mut Ledger, repo: Option<&Path>) -> Result<Status> {
    ledger.refresh()?;
    let verification = ledger.view().report().clone();
    status_of(ledger.store(), verification, ledger.view(), repo)
}

fn status_of(
    store: &Store,
    verification: ratchet_trace::VerifyReport,
    view: &Verified,
    repo: Option<&Path>,
) -> Result<Status> {
    let overview = view.overview();
    let failing = failing_runs(view, &overview.commits);
    let mut directions = std::collections::BTreeMap::new();
    let mut undeclared = std::collections::BTreeSet::new();
    for s in &overview.scorers {
        // `direction_in`'s rule, read once: the declared direction, else
        // the default (and then it is said to be the default).
        let direction = match ratchet_records::declared_direction(view, &s.scorer, u64::MAX)? {
            Some((declared, _)) => declared,
            None => {
                undeclared.insert(s.scorer.clone());
                ratchet_records::direction_of(&s.scorer)
            }
        };
        directions.insert(s.scorer.clone(), direction);
    }
    let decisions = view
        .own_control_events::<DecisionSummary>(ratchet_trace::ReservedKind::Decision, u64::MAX)?;
    let decided: Vec<String> = decisions.iter().map(|(_, d)| d.class.clone()).collect();
    let last_decision = decisions.into_iter().next_back().map(|(e, mut d)| {
        d.seq = e.seq;
        d
    });
    let pinned = ratchet_gate::pinned_policies(view, u64::MAX)?;
    let deployed = deployments(view)?;
    let unpinned_classes: Vec<String> = decided
        .into_iter()
        .chain(deployed.keys().cloned())
        .filter(|c| !pinned.contains_key(c))
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect();
    Ok(Status {
        store_id: store.id().to_string(),
        store_dir: store.dir().to_path_buf(),
        writer_key_id: store.writer_key_id().map(str::to_string),
        verification,
        overview,
        directions,
        undeclared,
        last_decision,
        last_alarm: ratchet_drift::latest_alarm(view, None)?,
        pinned_policies: pinned
            .into_iter()
            .map(|(class, p)| {
                (
                    class,
                    PinSummary {
                        hash: p.hash.to_string(),
                        seq: p.seq,
                    },
                )
            })
            .collect(),
        unpinned_classes,
        pinned_rubrics: pinned_rubrics(view)?,
        deployed,
        checked_out: repo
            .map(|r| Ok::<_, Error>(deploy::leaving(&Repository::discover(r)?)))
            .transpose()?
            .flatten()
            .map(|o| o.to_string()),
        ref_faults: repo.map(|r| check_promotion_refs(r, view)).transpose()?,
        failing_runs: failing,
    })
}

fn pinned_rubrics(view: &Verified) -> Result<std::collections::BTreeMap<String, PinSummary>> {
    let mut out = std::collections::BTreeMap::new();
    for (seq, pin) in ratchet_scorers::pins(view, u64::MAX)? {
        if let ratchet_scorers::Pin::Rubric { rubric, version } = pin {
            out.insert(rubric, PinSummary { hash: version, seq });
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use ratchet_gate::GateStatus;

    fn outcome(json: &str) -> OutcomeSummary {
        serde_json::from_str(json).expect("an outcome reads")
    }

    /// Heal lifts or keeps a reject by the typed status, never by the
    /// word: a truncation or a refusal is recorded as `reject` too, and a
    /// later law's word is shown but never acted on.
    #[test]
    fn a_recorded_outcome_reads_typed_and_a_later_laws_word_is_never_acted_on() {
        let cases = [
            (
                r#"{"verdict":"reject","cause":"measured"}"#,
                Some(GateStatus::Reject),
            ),
            (
                r#"{"verdict":"reject","cause":"truncated"}"#,
                Some(GateStatus::Truncated),
            ),
            (
                r#"{"verdict":"reject","cause":"missing_evidence"}"#,
                Some(GateStatus::MissingEvidence),
            ),
            (r#"{"verdict":"reject"}"#, None),
            (r#"{"verdict":"promote"}"#, Some(GateStatus::Promote)),
            (r#"{"verdict":"continue"}"#, Some(GateStatus::Continue)),
            (r#"{"verdict":"abstain"}"#, None),
        ];
        for (json, status) in cases {
            assert_eq!(outcome(json).status(), status, "{json}");
        }
        assert_eq!(
            outcome(r#"{"verdict":"abstain"}"#).verdict,
            VerdictWord::Later
        );
        // `status --json` still shows the word as recorded.
        assert_eq!(
            serde_json::to_string(&outcome(r#"{"verdict":"reject","cause":"measured"}"#))
                .expect("json"),
            r#"{"verdict":"reject","cause":"measured"}"#
        );
    }
}
