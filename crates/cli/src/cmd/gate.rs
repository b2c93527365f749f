//! The gate: `gate` and `calibrate`.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use ratchet_gate::{Outcome, Stage, StageState, Verdict};
use ratchet_trace::{Checkpoint, CommitId};

use crate::flags::{CalibrateFlags, GateFlags};
use crate::{Ctx, out};

/// `gate`'s flags, typed.
#[derive(Debug)]
pub struct GateArgs {
    pub baseline: CommitId,
    pub candidate: CommitId,
    pub class: String,
    pub policy: Option<PathBuf>,
    pub checkpoint: Option<PathBuf>,
    pub record_promotion: Option<PathBuf>,
    pub key_file: Option<PathBuf>,
    pub dry_run: bool,
    pub allow_unpinned: bool,
}

/// The policy file a command was given, else `policy.toml` in the store
/// directory when it exists (`None`: neither; a pinned class needs none).
pub fn policy_file(ctx: &Ctx, path: Option<&Path>) -> Result<Option<ratchet_gate::Policy>> {
    let default = ctx.store_dir.join("policy.toml");
    let path = match path {
        Some(p) => p,
        None if default.exists() => default.as_path(),
        None => return Ok(None),
    };
    Ok(Some(ratchet_gate::Policy::from_path(path)?))
}

/// The class policy a command decides under: the pin in the trace when the
/// class is pinned (a policy file that differs is refused), else the file's.
fn class_policy(
    ctx: &Ctx,
    view: Option<&ratchet_trace::Verified>,
    class: &str,
    path: Option<&Path>,
) -> Result<(ratchet_gate::ClassPolicy, ratchet_gate::PolicySource)> {
    let file = policy_file(ctx, path)?;
    no_policy_named(
        ctx,
        class,
        ratchet_gate::resolve_policy(view, class, file.as_ref()),
    )
}

/// Neither a pin nor a file: say where the file was looked for.
fn no_policy_named<T>(ctx: &Ctx, class: &str, resolved: ratchet_gate::Result<T>) -> Result<T> {
    match resolved {
        Err(ratchet_gate::Error::NoPolicy { .. }) => anyhow::bail!(
            "class {class} is not pinned in the trace and there is no policy file (looked for {}); pass --policy FILE, or pin one with `ratchet policy pin FILE`",
            ctx.store_dir.join("policy.toml").display()
        ),
        resolved => Ok(resolved?),
    }
}

pub fn policy_pin(
    ctx: &Ctx,
    path: &Path,
    only: Option<&str>,
    key_file: Option<&Path>,
) -> Result<u8> {
    let policy = ratchet_gate::Policy::from_path(path)?;
    let classes: Vec<&String> = match only {
        Some(c) => {
            policy.class(c)?;
            policy.class.keys().filter(|k| k.as_str() == c).collect()
        }
        None => policy.class.keys().collect(),
    };
    let mut store = ctx.open(key_file)?;
    let mut pins = Vec::new();
    let mut receipts = Vec::new();
    for class in classes {
        let c = policy.class(class)?;
        let pinned = ratchet_gate::pin_policy(&mut store, class, c)?;
        if let ratchet_gate::Pinned::Appended { receipt } = &pinned {
            receipts.push(*receipt);
        }
        // How the class will read each scorer from now on, whatever later
        // evidence declares: shown to the person pinning.
        let view = store.verified(&ratchet_trace::VerifyOptions::default())?;
        let readings = ratchet_gate::readings(&view, c, pinned.seq())?;
        pins.push(serde_json::json!({
            "class": class,
            "policy_hash": c.hash().to_string(),
            "pin": pinned,
            "readings": readings,
        }));
        if !ctx.json {
            match &pinned {
                ratchet_gate::Pinned::Appended { receipt } => outln!(
                    "pinned class {class}: policy {} (seq {})",
                    out::short(&c.hash().to_hex()),
                    receipt.seq
                ),
                ratchet_gate::Pinned::AlreadyPinned { seq } => outln!(
                    "class {class} is already pinned to policy {} (seq {seq}): nothing appended",
                    out::short(&c.hash().to_hex())
                ),
            }
            for r in &readings {
                outln!("  {}: {} ({})", r.scorer, r.direction, r.from);
            }
            // The order the test will read, now pinned with the policy.
            if let Some(ids) = c.declared_tasks() {
                outln!(
                    "  tasks: {} listed, read in that order (first {})",
                    ids.len(),
                    ids.first().map_or("", String::as_str)
                );
            }
        }
    }
    if ctx.json {
        out::written(&store, &receipts, serde_json::json!({ "pins": pins }))?;
    }
    Ok(0)
}

pub fn gate(ctx: &Ctx, a: &GateArgs) -> Result<u8> {
    let store = ctx.open(a.key_file.as_deref())?;
    let store_id = store.id().to_string();
    let file = policy_file(ctx, a.policy.as_deref())?;
    let checkpoint = a
        .checkpoint
        .as_ref()
        .map(|p| Checkpoint::read(p).with_context(|| format!("checkpoint {}", p.display())))
        .transpose()?;
    let ran = ratchet_orchestrate::gate_once(
        store,
        &ratchet_orchestrate::GateRequest {
            class: &a.class,
            policy_file: file.as_ref(),
            baseline: &a.baseline,
            candidate: &a.candidate,
            checkpoint: checkpoint.as_ref(),
            allow_unpinned: a.allow_unpinned,
        },
        &ratchet_orchestrate::GateOptions {
            dry_run: a.dry_run,
            promote_in: a.record_promotion.as_deref(),
        },
    );
    let (run, source) = match ran {
        Err(ratchet_orchestrate::Error::Gate(e)) => no_policy_named(ctx, &a.class, Err(e))?,
        Err(e @ ratchet_orchestrate::Error::UnverifiedTrace { .. }) => {
            return unverified_before_policy(ctx, &store_id, &e);
        }
        other => other?,
    };
    let status = run.verdict.outcome.status();
    let scale = scale_of(ctx, a.key_file.as_deref(), &run.verdict, file.as_ref());
    if ctx.json {
        #[derive(serde::Serialize)]
        struct GateJson<'a> {
            status: ratchet_gate::GateStatus,
            /// The status as the words print it (`cannot decide (evidence
            /// missing)`): one reading of the verdict, whatever the
            /// recorded `outcome` says it was stored as.
            words: &'static str,
            exit_code: u8,
            recorded: bool,
            policy_source: ratchet_gate::PolicySource,
            decision: Option<ratchet_trace::Receipt>,
            promotion: Option<&'a ratchet_orchestrate::Promotion>,
            /// The sequential stage's effect as a person reads it
            /// (candidate − baseline in the scorer's unit and direction):
            /// presentation beside the verdict, never recorded in it.
            effect_as_read: Option<ratchet_gate::shown::EffectShown>,
            #[serde(flatten)]
            verdict: &'a Verdict,
        }
        out::json_in(
            &store_id,
            &GateJson {
                status,
                words: status.words(),
                exit_code: status.exit_code(),
                recorded: run.decision.is_some(),
                policy_source: source,
                decision: run.decision,
                promotion: run.promotion.as_ref(),
                effect_as_read: scale.verdict_effect(&run.verdict),
                verdict: &run.verdict,
            },
        )?;
    } else {
        print_verdict(&run.verdict, &scale)?;
        if matches!(
            run.verdict.outcome,
            ratchet_gate::Outcome::Reject {
                stage: Stage::Tests,
                ..
            }
        ) {
            explain_tests(ctx, a.key_file.as_deref(), &run.verdict)?;
        }
        if a.dry_run {
            outln!("(dry run: the verdict was not recorded)");
        }
        if source == ratchet_gate::PolicySource::Unpinned {
            outln!(
                "(policy not pinned: the file decided; pin it with `ratchet policy pin` so that no edit beside the store can)"
            );
        }
        if let Some(p) = &run.promotion {
            outln!(
                "{} -> {} (promotion at seq {})",
                p.reference,
                a.candidate,
                p.receipt.seq
            );
        }
    }
    Ok(status.exit_code())
}

/// How `verdict` reads its primary scorer ([`ratchet_gate::shown::Scale`]):
/// from the store as it now verifies and the policy the gate was given;
/// from the verdict alone when the store cannot be read.
fn scale_of(
    ctx: &Ctx,
    key_file: Option<&Path>,
    verdict: &Verdict,
    file: Option<&ratchet_gate::Policy>,
) -> ratchet_gate::shown::Scale {
    let policy = file.and_then(|f| f.class(&verdict.class).ok());
    let ledger = ctx.ledger_read(key_file).ok();
    ratchet_gate::shown::Scale::of_verdict(
        ledger.as_ref().map(ratchet_trace::Ledger::view),
        verdict,
        policy,
    )
}

/// A trace that failed verification before its class's policy could be
/// read: the gate's exit code for an unverified trace (5), said first.
fn unverified_before_policy(
    ctx: &Ctx,
    store_id: &str,
    e: &ratchet_orchestrate::Error,
) -> Result<u8> {
    let status = ratchet_gate::GateStatus::UnverifiedTrace;
    if ctx.json {
        out::json_in(
            store_id,
            &serde_json::json!({
                "status": status,
                "words": status.words(),
                "exit_code": status.exit_code(),
                "recorded": false,
                "reason": e.to_string(),
            }),
        )?;
    } else {
        outln!("{}: {e}", status.headline());
    }
    Ok(status.exit_code())
}

/// What a person needs after a verdict stopped at the required tests, read
/// from the trace (not part of the recorded reason, which must recompute
/// byte for byte): for a required suite the candidate has no run of, which
/// side lacks it and what the candidate does have (a report ingested under
/// another name is the usual cause); for a failing run, the tests it names.
fn explain_tests(ctx: &Ctx, key_file: Option<&std::path::Path>, verdict: &Verdict) -> Result<()> {
    let candidate = &verdict.candidate;
    let store = ctx.open_read(key_file)?;
    let view = store.verified(&ratchet_trace::VerifyOptions::default())?;
    let at = verdict.trace.size;
    let runs = view.test_runs(candidate, at);
    let baseline_runs = view.test_runs(&verdict.baseline, at);
    let mut suites: Vec<&str> = runs.iter().map(|(_, r)| r.suite.as_str()).collect();
    suites.sort_unstable();
    suites.dedup();
    let tests = verdict.stages.iter().filter_map(|s| match &s.details {
        ratchet_gate::StageDetails::Tests(t) => Some(t),
        _ => None,
    });
    let required: Vec<&str> = tests
        .clone()
        .flat_map(|t| t.suites.iter().map(|x| x.suite.as_str()))
        .collect();
    // The candidate's suites the policy does not require yet: the only
    // ones "name it in required_suites" can be said of.
    let unrequired: Vec<&str> = suites
        .iter()
        .copied()
        .filter(|s| !required.contains(s))
        .collect();
    let missing = tests.flat_map(|t| t.suites.iter().filter(|x| x.runs.is_empty()));
    for suite in missing {
        let name = suite.suite.as_str();
        let on_baseline = baseline_runs
            .iter()
            .filter(|(_, r)| r.suite == name)
            .count();
        outln!(
            "suite {name} has no run on the candidate {}{}",
            out::short(&candidate.to_string()),
            match on_baseline {
                0 => " (nor on the baseline)".to_string(),
                n => format!(" (the baseline has {n} run(s) of it)"),
            }
        );
        let record = format!(
            "`ratchet ingest junit FILE --commit {candidate} --suite {name}` records a report's tests as suite {name} (without --suite, a suite is named as the report names it)"
        );
        if suites.is_empty() {
            outln!("  the candidate has no test run at all: {record}");
        } else if unrequired.is_empty() {
            // Every suite it has is required already: renaming the policy
            // would not help, only a run of {name} will.
            outln!(
                "  the candidate has runs of: {} (each required already); {record}",
                suites.join(", ")
            );
        } else {
            outln!(
                "  the candidate has runs of: {}; if one of them is {name} under another name, record it again with {record}, or name that suite in required_suites",
                suites.join(", ")
            );
        }
        for suite in &suites {
            if let Some(why) = ratchet_scorers::unnameable_suite(suite) {
                outln!(
                    "  suite {suite:?} is {why}: `ratchet ingest junit FILE --commit … --suite NAME` stores the report under a name the policy can require"
                );
            }
        }
    }
    for (seq, r) in runs.iter().filter(|(_, r)| !r.failures.is_empty()) {
        outln!(
            "  {} at seq {seq}: {} failed: {}",
            r.suite,
            r.failed,
            r.failures.join(", ")
        );
    }
    Ok(())
}

/// The verdict in words, its figures read on `scale` (the primary
/// scorer's unit and direction).
pub(crate) fn print_verdict(v: &Verdict, scale: &ratchet_gate::shown::Scale) -> Result<()> {
    use ratchet_gate::shown::number;
    let mut o = std::io::stdout().lock();
    match &v.outcome {
        Outcome::Promote => writeln!(
            o,
            "PROMOTE {} over {} ({})",
            v.candidate, v.baseline, v.class
        )?,
        Outcome::Reject { stage, reason, .. } => {
            let what = v.outcome.status().headline();
            writeln!(o, "{what} at {}: {reason}", stage)?
        }
        Outcome::Continue {
            expected_more,
            reason,
        } => {
            // A benchmarks class counts pairs of runs, not tasks.
            let benchmarks = v
                .stages
                .iter()
                .any(|s| matches!(s.details, ratchet_gate::StageDetails::Benchmarks(_)));
            let more = if benchmarks {
                "runs of each side (or `ratchet bench` rounds)"
            } else {
                "tasks"
            };
            writeln!(
                o,
                "CONTINUE: about {expected_more} more {more} needed ({reason})"
            )?
        }
    }
    // A benchmarks class leads with its table: regressions first.
    for s in &v.stages {
        if let ratchet_gate::StageDetails::Benchmarks(d) = &s.details {
            writeln!(
                o,
                "  {:<32} {:>12} {:>12} {:>26}  verdict",
                "benchmark", "baseline", "candidate", "ratio [interval]"
            )?;
            for r in &d.benchmarks {
                writeln!(
                    o,
                    "  {:<32} {:>12} {:>12} {:>26}  {}",
                    r.label(),
                    number(r.baseline, scale.unit()),
                    number(r.candidate, scale.unit()),
                    format!("×{:.3} [{:.3}, {:.3}]", r.ratio, r.low, r.high),
                    r.verdict.as_str()
                )?;
            }
            writeln!(
                o,
                "  ({}; ratio = candidate ÷ baseline, lower bound at α/{} per benchmark, upper at α)",
                if d.paired {
                    "paired by round"
                } else {
                    "unpaired samples: the machine's drift between the two runs is not cancelled"
                },
                d.benchmarks.len()
            )?;
        }
    }
    for s in &v.stages {
        let mark = match s.passed {
            StageState::Passed => "pass",
            StageState::Failed => "FAIL",
            StageState::Open => "open",
        };
        writeln!(o, "  {mark:<4}  {:<20} {}", s.stage, s.shown(scale))?;
    }
    // A promotion with no stage of a test: the class runs none (`test =
    // "none"`), said so that no one looks for the effect it did not measure.
    if matches!(v.outcome, Outcome::Promote)
        && !v
            .stages
            .iter()
            .any(|s| matches!(s.stage, Stage::Sequential | Stage::Guardrail(_)))
    {
        writeln!(
            o,
            "  (no sequential test: the class is decided by its required suites and invariants alone)"
        )?;
    }
    // Evidence stored but not read: its producer is not one the class trusts.
    for a in &v.set_aside {
        let what = match (a.scores, a.test_runs) {
            (0, runs) => format!("{runs} test run(s)"),
            (scores, 0) => format!("{scores} score(s)"),
            (scores, runs) => format!("{scores} score(s) and {runs} test run(s)"),
        };
        writeln!(
            o,
            "  set aside: {what} about the {} from {}: not a producer class {} trusts for the {} (its `trust`)",
            a.side, a.producer, v.class, a.side
        )?;
    }
    // The order the test read: the declared list (and what it left
    // unread), or the baseline's trace order and how to fix it.
    if let Some(order) = &v.order {
        writeln!(o, "  order: {}", order.words())?;
    }
    writeln!(
        o,
        "policy {} at trace size {} ({})",
        out::short(&v.policy_hash.to_hex()),
        v.trace.size,
        out::short(&v.trace.hash.to_hex())
    )?;
    Ok(())
}

pub fn calibrate(
    ctx: &Ctx,
    policy: Option<PathBuf>,
    class: &str,
    mut assumptions: ratchet_gate::Assumptions,
    from_store: Option<&CommitId>,
    key_file: Option<&std::path::Path>,
) -> Result<u8> {
    // The pinned policy when the store pins the class (and exists); a
    // policy file alone otherwise.
    // Only a store that does not exist is passed over: one that cannot be
    // opened, or does not verify, is an error (a damaged store must not
    // make an edited file the policy).
    let missing = |e: &anyhow::Error| {
        e.chain().any(|c| {
            matches!(
                crate::trace_error_of(c),
                Some(ratchet_trace::Error::StoreMissing { .. })
            )
        })
    };
    let ledger = match ctx.ledger_read(key_file) {
        Ok(l) => Some(l),
        Err(e) if from_store.is_none() && missing(&e) => None,
        Err(e) => return Err(e),
    };
    let view = ledger.as_ref().map(ratchet_trace::Ledger::view);
    let class_policy = match view {
        Some(v) => class_policy(ctx, Some(v), class, policy.as_deref())?.0,
        None => policy_file(ctx, policy.as_deref())?
            .ok_or_else(|| anyhow::anyhow!("no policy file: pass --policy FILE"))?
            .class(class)?
            .clone(),
    };
    let class_policy = &class_policy;
    let mut world = None;
    let unit = ratchet_gate::shown::Unit::of_scorer(&class_policy.scorer);
    if let (Some(baseline), Some(view)) = (from_store, view) {
        let w = ratchet_gate::baseline_world(view, class_policy, baseline)?;
        if !ctx.json {
            outln!(
                "measured from {} task(s) of {} version {}: p0 {}, σ of a difference {}, draw ratio {}",
                w.tasks,
                w.scorer,
                w.scorer_version,
                ratchet_gate::shown::sig(w.p0),
                w.sigma.map_or("n/a (one task)".into(), |s| {
                    ratchet_gate::shown::number(s, unit)
                }),
                w.draw.map_or(
                    format!("{} (assumed: no task ran twice)", assumptions.draw),
                    ratchet_gate::shown::sig
                )
            );
        }
        assumptions = assumptions.measured(&w);
        world = Some(w);
    }
    let progress =
        indicatif::ProgressBar::new(ratchet_gate::CALIBRATION_ROWS as u64).with_message("effects");
    let rows =
        ratchet_gate::calibration_table(class_policy, &assumptions, &mut || progress.inc(1))?;
    progress.finish_and_clear();
    let warning = ratchet_gate::power_warning(class_policy, &rows, assumptions.runs);
    if ctx.json {
        out::json(&serde_json::json!({
            "class": class, "assumptions": assumptions, "measured_from": world, "rows": rows,
            "warning": warning
        }))?;
        return Ok(0);
    }
    write_calibration(&rows, warning.as_deref(), unit)?;
    Ok(0)
}

/// The calibration table in words: one row per true effect (a mean shift
/// in the scorer's unit, positive = better).
fn write_calibration(
    rows: &[ratchet_gate::CalibrationRow],
    warning: Option<&str>,
    unit: ratchet_gate::shown::Unit,
) -> Result<()> {
    let mut o = std::io::stdout().lock();
    writeln!(
        o,
        "{:<22} {:>10} {:>12} {:>9} {:>8} {:>8} {:>8}  method",
        "true effect (+ better)", "P(promote)", "P(truncated)", "E[N]", "N10", "N50", "N90"
    )?;
    for r in rows {
        writeln!(
            o,
            "{:<22} {:>10.4} {:>12.4} {:>9.1} {:>8} {:>8} {:>8}  {}{}",
            r.effect.shown(unit),
            r.p_promote,
            r.p_truncated,
            r.expected_n,
            r.n_quantiles[0],
            r.n_quantiles[1],
            r.n_quantiles[2],
            match r.method {
                ratchet_gate::CalibrationMethod::Exact => "exact",
                ratchet_gate::CalibrationMethod::MonteCarlo => "monte carlo",
            },
            if r.design { "  (design effect)" } else { "" }
        )?;
    }
    if let Some(w) = warning {
        writeln!(o, "warning: {w}")?;
    }
    Ok(())
}

/// `ratchet gate`: the flags checked and turned into the library's terms, then run.
pub fn gate_command(ctx: &Ctx, flags: GateFlags) -> Result<u8> {
    let GateFlags {
        baseline,
        candidate,
        class,
        policy,
        checkpoint,
        record_promotion,
        key_file,
        dry_run,
        allow_unpinned,
    } = flags;
    if let Some(client) = ctx.client()? {
        if policy.is_some() || record_promotion.is_some() || checkpoint.is_some() || allow_unpinned
        {
            anyhow::bail!(
                "with --server the gate decides under the class's pinned policy, in the server: --policy, --checkpoint and --record-promotion are for local stores"
            );
        }
        return crate::cmd::serve::gate_remote(
            ctx,
            &client,
            &class,
            &ctx.commit(&baseline)?,
            &ctx.commit(&candidate)?,
            dry_run,
        );
    }
    crate::cmd::gate::gate(
        ctx,
        &crate::cmd::gate::GateArgs {
            baseline: ctx.commit(&baseline)?,
            candidate: ctx.commit(&candidate)?,
            class,
            policy,
            checkpoint,
            record_promotion,
            key_file,
            dry_run,
            allow_unpinned,
        },
    )
}

/// `ratchet calibrate`: the flags checked and turned into the library's terms, then run.
pub fn calibrate_command(ctx: &Ctx, flags: CalibrateFlags) -> Result<u8> {
    let CalibrateFlags {
        policy,
        class,
        p0,
        sigma,
        draw,
        runs,
        seed,
        from_store,
        key_file,
    } = flags;
    let assumptions = ratchet_gate::Assumptions {
        p0,
        sigma,
        draw,
        runs,
        seed,
    };
    let baseline = from_store.map(|b| ctx.commit(&b)).transpose()?;
    crate::cmd::gate::calibrate(
        ctx,
        policy,
        &class,
        assumptions,
        baseline.as_ref(),
        key_file.as_deref(),
    )
}
