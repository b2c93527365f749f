//! The gate as a command runs it: decide, record, and on promote move
//! the class's promotion ref.

use std::path::Path;

use serde::Serialize;

use ratchet_gate::{Outcome, Question, Verdict};
use ratchet_trace::{CommitId, Ledger, Receipt, Store};

use crate::deploy::{self, Promotion, record_promotion, sync_promotion_ref};
use crate::{Error, Result};

/// How [`gate`] runs.
#[derive(Debug, Clone, Copy, Default)]
pub struct GateOptions<'a> {
    /// Decide without appending the verdict (nor promoting).
    pub dry_run: bool,
    /// On promote, record the promotion in the git repository here.
    pub promote_in: Option<&'a Path>,
}

/// What [`gate`] did.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GateRun {
    /// The verdict.
    pub verdict: Verdict,
    /// The `decision` event appended (`None` on a dry run, or when the
    /// trace failed verification and nothing was written).
    pub decision: Option<Receipt>,
    /// The promotion, when the verdict promoted and a repository was given.
    pub promotion: Option<Promotion>,
}

/// The gate as a command runs it: refuses to compare a commit with itself,
/// decides (at the head, appending the verdict unless `dry_run`), and on
/// promote records the promotion naming the decision's own seq (taken from
/// its receipt, so another writer appending meanwhile cannot be named).
/// With a repository, any recorded decision also brings the class's
/// promotion ref back to what the trace says ([`sync_promotion_ref`]).
///
/// # Errors
/// [`Error::SameCommit`] if baseline and candidate are one commit;
/// [`Error::Gate`] if the gate fails (a policy contradicting the trace, a
/// store that cannot be read); [`Error::Git`] / [`Error::Trace`] if the
/// promotion cannot be recorded (the decision stays recorded).
pub fn gate(ledger: &mut Ledger, q: &Question<'_>, options: &GateOptions<'_>) -> Result<GateRun> {
    if q.baseline == q.candidate {
        return Err(Error::SameCommit {
            commit: q.baseline.clone(),
        });
    }
    let (verdict, decision) = if options.dry_run {
        (ratchet_gate::verdict_in(ledger, q)?, None)
    } else {
        ratchet_gate::decide_in(ledger, q)?
    };
    deploy::crash_point("gate:decided");
    // After a recorded decision the class's ref agrees with the trace again
    // (a crash between an earlier promotion's event and its ref, or a
    // foreign move): `record_promotion` brings it back first, and so does
    // any other outcome. A dry run, or a trace that failed verification,
    // writes nothing.
    let promotion = match (&verdict.outcome, options.promote_in, &decision) {
        (Outcome::Promote, Some(repo), Some(receipt)) => Some(record_promotion(
            repo,
            ledger,
            q.candidate,
            q.class,
            Some(receipt.seq),
        )?),
        (_, Some(repo), Some(_)) => {
            sync_promotion_ref(repo, ledger, q.class)?;
            None
        }
        _ => None,
    };
    Ok(GateRun {
        verdict,
        decision,
        promotion,
    })
}

/// What a one-shot [`gate_once`] decides: the class, its policy file (a
/// pinned class needs none, and a file that differs from the pin is
/// refused), the two commits and a checkpoint held elsewhere.
#[derive(Debug, Clone, Copy)]
pub struct GateRequest<'a> {
    /// The class.
    pub class: &'a str,
    /// The policy file given, if any.
    pub policy_file: Option<&'a ratchet_gate::Policy>,
    /// The commit running now.
    pub baseline: &'a CommitId,
    /// The commit proposed.
    pub candidate: &'a CommitId,
    /// A checkpoint held where the store's writers cannot reach.
    pub checkpoint: Option<&'a ratchet_trace::Checkpoint>,
    /// Decide an unpinned class of a keyed store from the file
    /// ([`Question::allow_unpinned`]).
    pub allow_unpinned: bool,
}

/// [`gate`] for a one-shot command: one verification of `store` folds the
/// view that both the policy resolution (the pin in force) and the
/// decision read; a trace that does not verify gets its unverified
/// verdict, recorded nowhere.
///
/// # Errors
/// As [`gate`]; [`Error::Gate`] if the class's policy cannot be resolved
/// ([`ratchet_gate::resolve_policy`]).
pub fn gate_once(
    store: Store,
    request: &GateRequest<'_>,
    options: &GateOptions<'_>,
) -> Result<(GateRun, ratchet_gate::PolicySource)> {
    let mut verify = ratchet_trace::VerifyOptions::default();
    if let Some(cp) = request.checkpoint {
        verify = verify.checkpoint(cp.clone());
    }
    let (report, view) = store.verify_and_fold(&verify)?;
    // A trace that does not verify is said to be so before anything is
    // read from it: the pin a policy is checked against is part of it.
    let (policy, source) =
        match ratchet_gate::resolve_policy(view.as_ref(), request.class, request.policy_file) {
            Ok(resolved) => resolved,
            Err(e) => match (view.is_none(), report.fault) {
                (true, Some(fault)) => return Err(Error::UnverifiedTrace { fault }),
                _ => return Err(e.into()),
            },
        };
    let question = Question {
        class: request.class,
        policy: &policy,
        baseline: request.baseline,
        candidate: request.candidate,
        checkpoint: request.checkpoint,
        allow_unpinned: request.allow_unpinned,
    };
    let run = match view {
        Some(view) => {
            let mut ledger = Ledger::with_view(store, view, verify)?;
            gate(&mut ledger, &question, options)?
        }
        None => {
            if question.baseline == question.candidate {
                return Err(Error::SameCommit {
                    commit: question.baseline.clone(),
                });
            }
            let head = store.head()?.size;
            GateRun {
                verdict: ratchet_gate::verdict_at(&store, &question, head)?,
                decision: None,
                promotion: None,
            }
        }
    };
    Ok((run, source))
}
