//! Watching a deployed commit and healing after an alarm: [`start_watch`],
//! [`heal`], [`heal_latest`], [`check_recovery`]. A heal ranks commits by a
//! lower confidence bound ([`ratchet_drift::best_commit`]), skips those the
//! repository no longer has, refuses to touch a work tree with uncommitted
//! changes (listing them), checks the winner out (detached HEAD, safe mode)
//! and records a `checkout` event; it returns a [`HealReport`] and a
//! [`ratchet_drift::Monitor`] restarted on the new commit's baseline.
//!
//! ```no_run
//! use ratchet_orchestrate::heal::{HealOptions, heal};
//! # fn demo(store: ratchet_trace::Store, alarm: &ratchet_drift::TraceAlarm) -> Result<(), Box<dyn std::error::Error>> {
//! // Verified once; heal refreshes the view and reads nothing else.
//! let mut ledger = ratchet_trace::Ledger::new(store, Default::default())?;
//! let (report, _monitor) = heal(std::path::Path::new("."), &mut ledger, alarm, &HealOptions::default())?;
//! println!("checked out {:?}", report.chosen);
//! # Ok(()) }
//! ```

use std::path::Path;

use git2::{Oid, Repository};
use serde::Serialize;

use ratchet_drift::{Chart, Monitor, RankedCommit, Ranking, TraceAlarm, Watch, best_commit};
use ratchet_trace::{CommitId, EventDraft, Ledger, Verified};

use crate::deploy::{self, CheckoutRecord, recover_checkout};
use crate::git::refuse_dirty;
use crate::status::DecisionSummary;
use crate::{Error, Result, io_err};

/// How to heal.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HealOptions {
    /// Minimum scores for a commit to be a candidate.
    pub min_n: u64,
    /// Confidence of the lower bound used for ranking.
    pub confidence: f64,
    /// Rank and report, but do not touch the work tree or the trace.
    pub dry_run: bool,
    /// CUSUM reference k for the restarted monitor.
    pub k: f64,
    /// CUSUM interval h for the restarted monitor.
    pub h: f64,
    /// The scorer improves downwards (cost, latency): harm is an increase,
    /// and commits are ranked by their upper confidence bound.
    pub lower_is_better: bool,
    /// Whose scores rank the commits and estimate the deployed one
    /// (default: the key holder's): no other producer picks what heal
    /// checks out.
    #[serde(skip)]
    pub trust: ratchet_trace::Sources,
}

impl Default for HealOptions {
    fn default() -> Self {
        HealOptions {
            min_n: 30,
            confidence: 0.95,
            dry_run: false,
            k: 0.5,
            h: 5.0,
            lower_is_better: false,
            trust: ratchet_trace::Sources::key_holder(),
        }
    }
}

/// What a heal did.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HealReport {
    /// The alarmed commit.
    pub alarmed: CommitId,
    /// The ranking considered (alarmed commit excluded).
    pub ranking: Vec<RankedCommit>,
    /// Commits passed over because the repository no longer has them.
    pub skipped: Vec<(CommitId, String)>,
    /// The commit healed to.
    pub chosen: Option<CommitId>,
    /// Whether the work tree was changed.
    pub checked_out: bool,
    /// Seq of the `checkout` event, if recorded.
    pub checkout_seq: Option<u64>,
    /// The alarmed commit's mean since the change the alarm dated: the
    /// estimate a target must beat.
    pub deployed_estimate: Option<f64>,
    /// Why the heal stayed on the deployed commit, when it did: the alarm
    /// was not harmful, or no measured commit is surely better, or an
    /// earlier heal already acted on the alarm.
    pub stayed: Option<String>,
    /// The deployed commit the heal stayed on, when it stayed: the alarmed
    /// commit, or the commit an earlier heal of the same alarm checked out.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub staying_on: Option<CommitId>,
    /// The commit the work tree had checked out (HEAD) when the heal ran —
    /// what a checkout leaves, which need not be the alarmed commit (the
    /// tree may be on another branch); `None`: an unborn HEAD.
    pub head: Option<String>,
    /// Seq of the `checkout` event with which this run first completed an
    /// earlier heal's interrupted checkout (the work tree moved then).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub completed: Option<u64>,
}

/// The candidates the gate rejected on measured evidence (a failing
/// required suite, a broken invariant, worse scores, a guardrail) in some
/// class and that class has not *deployed* since, each with the words a
/// heal report gives for skipping it. Only a recorded promotion of the
/// commit in the class that rejected it (`gate --record-promotion`, the key
/// holder's act) lifts a reject: a decision in another class, a reject for
/// missing evidence, a truncation, a "continue" — or a promote decision
/// alone, which a `decide` token can obtain against a baseline of its
/// choosing — is no finding that the commit got better.
fn gate_rejected(view: &Verified) -> Result<std::collections::BTreeMap<CommitId, String>> {
    // Per (candidate, class): the seq of a measured reject not lifted since.
    let mut open: std::collections::BTreeMap<(CommitId, String), u64> =
        std::collections::BTreeMap::new();
    let decisions = view
        .own_control_events::<DecisionSummary>(ratchet_trace::ReservedKind::Decision, u64::MAX)?;
    let promotions = view.own_control_events::<deploy::PromotionRecord>(
        ratchet_trace::ReservedKind::Promotion,
        u64::MAX,
    )?;
    // (seq, (candidate, class), true for a measured reject / false for a
    // promotion that deploys it), in trace order.
    let mut moves: Vec<(u64, (CommitId, String), bool)> = Vec::new();
    for (e, d) in decisions {
        if d.outcome.status() == Some(ratchet_gate::GateStatus::Reject) {
            moves.push((e.seq, (d.candidate.clone(), d.class.clone()), true));
        }
    }
    for (e, p) in promotions {
        if let Some(c) = &e.commit {
            moves.push((e.seq, (c.clone(), p.class.clone()), false));
        }
    }
    moves.sort_by_key(|m| m.0);
    for (seq, key, rejected) in moves {
        if rejected {
            open.entry(key).or_insert(seq);
        } else {
            open.remove(&key);
        }
    }
    let mut out = std::collections::BTreeMap::new();
    for ((commit, class), seq) in open {
        out.entry(commit).or_insert_with(|| {
            format!("the gate rejected it (class {class}, decision at seq {seq})")
        });
    }
    Ok(out)
}

/// Heals after `alarm`: checks out the best measured commit other than the
/// alarmed one in the repository at `repo_path`, records a `checkout` event,
/// and returns the report with a monitor restarted on the new commit.
///
/// # Errors
/// [`Error::Trace`] if the trace does not verify (or is keyed and the store
/// was opened without its key), before anything changes;
/// [`Error::DirtyWorkTree`] listing the paths, before anything changes;
/// [`Error::NoCandidate`] when no commit qualifies; [`Error::Git`],
/// [`Error::Trace`] or [`Error::Drift`] for failures underneath.
pub fn heal(
    repo_path: &Path,
    ledger: &mut Ledger,
    alarm: &TraceAlarm,
    options: &HealOptions,
) -> Result<(HealReport, Option<Monitor>)> {
    // Nothing moves on a trace that does not verify: the ranking and the
    // deployed commit's estimate are read from the owner's verified view,
    // refreshed first.
    ledger.refresh()?;
    let HealInputs {
        ranking,
        deployed,
        rejected,
    } = heal_inputs(ledger.view(), alarm, options)?;
    let repo = Repository::discover(repo_path)?;
    let store_dir = ledger.store().dir().to_path_buf();
    let (chosen, skipped) = choose_target(&repo, &ranking, &rejected, &store_dir)?;
    let mut report = HealReport {
        alarmed: alarm.commit.clone(),
        ranking,
        skipped,
        chosen: chosen.clone(),
        checked_out: false,
        checkout_seq: None,
        deployed_estimate: deployed,
        stayed: None,
        staying_on: None,
        head: deploy::leaving(&repo).map(|o| o.to_string()),
        completed: None,
    };
    if let Some(why) = stay_reason(&report, alarm, options) {
        report.chosen = None;
        report.stayed = Some(why);
        report.staying_on = Some(alarm.commit.clone());
        return Ok((report, None));
    }
    let Some(target) = chosen else {
        return Err(Error::NoCandidate {
            reason: format!(
                "{} ranked commit(s) with at least {} {} scores, none safe to check out{}",
                report.ranking.len(),
                options.min_n,
                alarm.scorer,
                report
                    .skipped
                    .iter()
                    .map(|(c, why)| format!("; {c}: {why}"))
                    .collect::<String>()
            ),
        });
    };
    if options.dry_run {
        return Ok((report, None));
    }
    let seq = record_and_check_out(&repo, ledger, alarm, &target, &report.skipped)?;
    report.checked_out = true;
    report.checkout_seq = Some(seq);
    tracing::info!(from = %alarm.commit, to = %target, "healed by checkout");
    // The restarted monitor's baseline is read from the verified view too,
    // from the producers the heal trusts, and it reads only theirs.
    let monitor = Monitor::start(
        &ledger.view().restricted_to(&options.trust),
        &target,
        &alarm.scorer,
        seq,
        options.k,
        options.h,
        options.min_n,
    )?
    .watching(Watch::harm(options.lower_is_better))?
    .reading(options.trust.clone());
    Ok((report, Some(monitor)))
}

/// What a heal weighs, read from the verified view: the trusted producers'
/// ranking of every other commit, the alarmed commit's mean since the
/// change (the estimate a target must beat), and the commits the gate
/// rejected on measured evidence (never healed to).
fn heal_inputs(all: &Verified, alarm: &TraceAlarm, options: &HealOptions) -> Result<HealInputs> {
    let view = &all.restricted_to(&options.trust);
    let ranking = best_commit(
        view,
        &Ranking {
            scorer: &alarm.scorer,
            version: alarm.scorer_version.as_deref(),
            min_n: options.min_n,
            confidence: options.confidence,
            exclude: std::slice::from_ref(&alarm.commit),
            lower_is_better: options.lower_is_better,
        },
    )?;
    let scorer = match &alarm.scorer_version {
        Some(v) => ratchet_trace::ScorerRef::at_version(&alarm.scorer, v),
        None => alarm.scorer.as_str().into(),
    };
    let since = view.score_stream(
        &alarm.commit,
        scorer,
        alarm.change_seq.saturating_sub(1),
        usize::MAX,
    );
    let deployed =
        (!since.is_empty()).then(|| since.iter().map(|(_, v)| v).sum::<f64>() / since.len() as f64);
    Ok(HealInputs {
        ranking,
        deployed,
        rejected: gate_rejected(all)?,
    })
}

/// What [`heal_inputs`] reads.
struct HealInputs {
    ranking: Vec<RankedCommit>,
    /// The alarmed commit's mean since the change.
    deployed: Option<f64>,
    /// Commits never healed to, with why.
    rejected: std::collections::BTreeMap<CommitId, String>,
}

/// Commits passed over, each with why.
type Passed = Vec<(CommitId, String)>;

/// The best-ranked commit heal may check out, and every better one passed
/// over with why: gone from the repository, rejected by the gate on
/// measured evidence, or unsafe to check out (paths in the store, files it
/// would overwrite).
fn choose_target(
    repo: &Repository,
    ranking: &[RankedCommit],
    rejected: &std::collections::BTreeMap<CommitId, String>,
    store_dir: &Path,
) -> Result<(Option<CommitId>, Passed)> {
    let mut skipped = Vec::new();
    for r in ranking {
        let present = Oid::from_str(r.commit.as_str())
            .ok()
            .and_then(|oid| repo.find_commit(oid).ok());
        if present.is_none() {
            skipped.push((
                r.commit.clone(),
                "no longer exists in the repository".to_string(),
            ));
            continue;
        }
        // The best measured commit is not always one the gate let through:
        // a candidate it rejected on measured evidence (a failing required
        // suite, a broken invariant, worse scores) is never healed to.
        if let Some(why) = rejected.get(&r.commit) {
            skipped.push((r.commit.clone(), why.clone()));
            continue;
        }
        // A commit that would write into the store, or over files it did
        // not write, is never checked out: the next best safe one is.
        match deploy::checkout_refusal(repo, &r.commit, store_dir)? {
            Some(why) => skipped.push((r.commit.clone(), why)),
            None => return Ok((Some(r.commit.clone()), skipped)),
        }
    }
    Ok((None, skipped))
}

/// Why the heal stays on the deployed commit, if it does: heal only on
/// harm, and only towards a commit surely better than what runs now (its
/// pessimistic bound must beat the deployed commit's estimate since the
/// change).
fn stay_reason(report: &HealReport, alarm: &TraceAlarm, options: &HealOptions) -> Option<String> {
    if !Watch::harm(options.lower_is_better).reports(alarm.alarm.shift) {
        return Some(format!(
            "the alarm is a {:?} shift of {}, an improvement for this scorer: nothing to heal",
            alarm.alarm.shift, alarm.scorer
        ));
    }
    let best = report
        .chosen
        .as_ref()
        .and_then(|c| report.ranking.iter().find(|r| &r.commit == c))?;
    let now = report.deployed_estimate?;
    let beats = if options.lower_is_better {
        best.lower_bound < now
    } else {
        best.lower_bound > now
    };
    (!beats).then(|| {
        format!(
            "the best measured commit {} has a confidence bound of {:.4}, which does not beat the deployed commit's {:.4} since the change",
            best.commit, best.lower_bound, now
        )
    })
}

/// Recorded first, checked out second: a crash between the two leaves the
/// trace ahead of the work tree, and the next heal completes it
/// (`recover_checkout`, told by the synced marker). Returns the `checkout`
/// event's seq.
fn record_and_check_out(
    repo: &Repository,
    ledger: &mut Ledger,
    alarm: &TraceAlarm,
    target: &CommitId,
    skipped: &[(CommitId, String)],
) -> Result<u64> {
    refuse_dirty(repo)?;
    let store_dir = ledger.store().dir().to_path_buf();
    let head_was = deploy::leaving(repo).map(|o| o.to_string());
    let marker = deploy::pending_checkout_path(repo);
    deploy::write_synced_json(
        &marker,
        &deploy::PendingCheckout::new(
            ledger.store(),
            ledger.view().head().size,
            head_was.clone(),
            target.clone(),
        ),
    )?;
    let receipt = ledger.append(
        EventDraft::reserved(
            ratchet_trace::ReservedKind::Checkout,
            &CheckoutRecord {
                from: alarm.commit.clone(),
                to: target.clone(),
                alarm_seq: Some(alarm.seq),
                scorer: Some(alarm.scorer.clone()),
                reason: "monitor alarm: best measured commit by lower confidence bound".into(),
                skipped: skipped.to_vec(),
                head_was,
                completes: None,
            },
        )?
        .commit(target.clone())
        .session("heal"),
    )?;
    deploy::crash_point("heal:recorded");
    deploy::check_out_detached(repo, target, &store_dir)?;
    std::fs::remove_file(&marker).map_err(io_err(&marker))?;
    deploy::crash_point("heal:checked-out");
    Ok(receipt.seq)
}

/// Whether the commit healed to stayed in control after the heal.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Recovery {
    /// Live scores seen since the heal.
    pub n: u64,
    /// Their mean (`None` before the first).
    pub mean: Option<f64>,
    /// Alarms raised on the new commit since the heal.
    pub alarms: usize,
    /// True once at least `min_n` live scores arrived without an alarm.
    pub recovered: bool,
}

/// Polls the restarted monitor and says whether scores recovered, reading
/// inside a read transaction that verified the trace first.
///
/// # Errors
/// [`Error::Trace`] if the trace does not verify (or is keyed and was opened
/// without its key); [`Error::Drift`] or [`Error::Trace`] if the store
/// cannot be read.
pub fn check_recovery(
    ledger: &mut Ledger,
    monitor: &mut Monitor,
    since_seq: u64,
    min_n: u64,
) -> Result<Recovery> {
    ledger.refresh()?;
    let view = ledger.view();
    let alarms = monitor.poll(view)?;
    let (commit, scorer) = monitor.stream();
    // The live scores of the producers the monitor reads.
    let live = view.score_stream_from(
        commit,
        ratchet_trace::ScorerRef::at_version(scorer, monitor.scorer_version()),
        since_seq,
        usize::MAX,
        monitor.sources(),
    );
    let scored = live.len() as u64;
    let mean = (scored > 0).then(|| live.iter().map(|(_, v)| v).sum::<f64>() / scored as f64);
    Ok(Recovery {
        n: scored,
        mean,
        alarms: alarms.len(),
        recovered: alarms.is_empty() && scored >= min_n,
    })
}

/// Heals after the latest alarm this store's monitor recorded (of `only`,
/// if given): finds it on a verified trace, takes the alarmed scorer's
/// direction from the trace, and runs [`heal`] with `options` (whose
/// `lower_is_better` is set from that direction).
///
/// # Errors
/// [`Error::NoAlarm`] if no alarm was recorded; as [`heal`] otherwise.
pub fn heal_latest(
    repo_path: &Path,
    ledger: &mut Ledger,
    only: Option<&CommitId>,
    options: &HealOptions,
) -> Result<(HealReport, Option<Monitor>)> {
    // A checkout the trace records but the work tree does not show (a
    // crash between the two) is completed first.
    let completed = if options.dry_run {
        None
    } else {
        recover_checkout(repo_path, ledger)?.map(|r| r.seq)
    };
    ledger.refresh()?;
    let (alarm, healed) = {
        let view = ledger.view();
        let alarm = ratchet_drift::latest_alarm(view, only)?.ok_or(Error::NoAlarm)?;
        let healed = deploy::checkouts_in(view)?
            .into_iter()
            .rfind(|(_, c)| c.alarm_seq == Some(alarm.seq));
        (alarm, healed)
    };
    if let Some((seq, c)) = healed {
        // What stays deployed is what that heal checked out (not the
        // alarmed commit it left), and "was" is the tree's own HEAD.
        let head = deploy::leaving(&Repository::discover(repo_path)?).map(|o| o.to_string());
        return Ok((
            HealReport {
                alarmed: alarm.commit.clone(),
                ranking: Vec::new(),
                skipped: Vec::new(),
                chosen: None,
                checked_out: completed.is_some(),
                checkout_seq: completed,
                deployed_estimate: None,
                staying_on: Some(c.to.clone()),
                head,
                stayed: Some(format!(
                    "nothing to heal: the alarm at seq {} was healed at seq {seq} (checked out {}){}",
                    alarm.seq,
                    c.to,
                    completed.map_or(String::new(), |s| format!(
                        "; its interrupted checkout was completed now (seq {s})"
                    ))
                )),
                completed,
            },
            None,
        ));
    }
    let direction = ratchet_scorers::direction_in(ledger.view(), &alarm.scorer)?;
    let options = HealOptions {
        lower_is_better: direction == ratchet_scorers::Direction::LowerIsBetter,
        ..options.clone()
    };
    let (mut report, monitor) = heal(repo_path, ledger, &alarm, &options)?;
    report.completed = completed;
    Ok((report, monitor))
}

/// Where and how a watch over one commit's live scores starts.
#[derive(Debug, Clone, PartialEq)]
pub struct WatchPlan {
    /// The deployed commit.
    pub commit: CommitId,
    /// The scorer whose stream is watched.
    pub scorer: String,
    /// The seq after which its live scores begin; `None`: its latest
    /// promotion or checkout in the trace.
    pub from: Option<u64>,
    /// The chart; `None`: chosen for the stream by [`Chart::for_stream`],
    /// from `auto` (pass/fail streams, other streams).
    pub chart: Option<Chart>,
    /// The charts `None` chooses between.
    pub auto: (Chart, Chart),
    /// Watch both directions, not only harm (harm follows the scorer's
    /// declared direction).
    pub two_sided: bool,
    /// Scores the in-control baseline needs before the start.
    pub min_n: u64,
    /// Whose scores the watch reads (default in the CLI: the key holder's).
    pub trust: ratchet_trace::Sources,
}

/// Starts a monitor as `ratchet watch` does: on a verified trace (one read
/// transaction), from the commit's deployment or `plan.from`, with the
/// scorer's declared direction as the harm watched.
///
/// # Errors
/// [`Error::NoDeployment`] without `from` when the trace records no
/// deployment of the commit; [`Error::Trace`] if the trace does not verify;
/// [`Error::Drift`] if the baseline is too short or the chart invalid.
pub fn start_watch(ledger: &mut Ledger, plan: &WatchPlan) -> Result<Monitor> {
    ledger.refresh()?;
    let view = ledger.view();
    let watch = if plan.two_sided {
        Watch::Both
    } else {
        Watch::harm(
            ratchet_scorers::direction_in(view, &plan.scorer)?
                == ratchet_scorers::Direction::LowerIsBetter,
        )
    };
    let from = match plan.from {
        Some(f) => f,
        None => ratchet_drift::deployment_start(view, &plan.commit)?.ok_or_else(|| {
            Error::NoDeployment {
                commit: plan.commit.clone(),
            }
        })?,
    };
    // Only the producers the watch trusts (the key holder's by default):
    // nobody else's scores make its baseline or raise its alarms.
    let trusted = view.restricted_to(&plan.trust);
    let chart = match plan.chart {
        Some(c) => c,
        None => Chart::for_stream(
            &trusted,
            &plan.commit,
            &plan.scorer,
            from,
            plan.auto.0,
            plan.auto.1,
        )?,
    };
    Ok(Monitor::start_chart(
        &trusted,
        &plan.commit,
        &plan.scorer,
        from,
        chart,
        watch,
        plan.min_n,
    )?
    .reading(plan.trust.clone()))
}
