//! `ratchet gate`: a verdict on the candidate over the baseline, recorded
//! (and the promotion ref moved) unless a dry run — locally or through
//! `--server`.

use std::path::Path;

use anyhow::{Context, Result, anyhow};
use ratchet_gate::{Stage, Verdict};
use ratchet_trace::{Checkpoint, CommitId};

use crate::cmd::shared::policy_file::{no_policy_named, policy_file};
use crate::cmd::shared::remote::answer;
use crate::cmd::shared::verdict::print_verdict;
use crate::flags::GateFlags;
use crate::{Ctx, out};

/// The verdict in words or JSON; the exit code is the verdict's
/// ([`ratchet_gate::GateStatus::exit_code`]).
pub fn run(ctx: &Ctx, flags: GateFlags) -> Result<u8> {
    if let Some(client) = ctx.client()? {
        if flags.policy.is_some()
            || flags.record_promotion.is_some()
            || flags.checkpoint.is_some()
            || flags.allow_unpinned
        {
            anyhow::bail!(
                "with --server the gate decides under the class's pinned policy, in the server: --policy, --checkpoint and --record-promotion are for local stores"
            );
        }
        return remote(
            ctx,
            &client,
            &flags.class,
            &ctx.commit(&flags.baseline)?,
            &ctx.commit(&flags.candidate)?,
            flags.dry_run,
        );
    }
    let (baseline, candidate) = (ctx.commit(&flags.baseline)?, ctx.commit(&flags.candidate)?);
    let store = ctx.open(flags.key_file.as_deref())?;
    let store_id = store.id().to_string();
    let file = policy_file(ctx, flags.policy.as_deref())?;
    let checkpoint = flags
        .checkpoint
        .as_ref()
        .map(|p| Checkpoint::read(p).with_context(|| format!("checkpoint {}", p.display())))
        .transpose()?;
    let ran = ratchet_orchestrate::gate_once(
        store,
        &ratchet_orchestrate::GateRequest {
            class: &flags.class,
            policy_file: file.as_ref(),
            baseline: &baseline,
            candidate: &candidate,
            checkpoint: checkpoint.as_ref(),
            allow_unpinned: flags.allow_unpinned,
        },
        &ratchet_orchestrate::GateOptions {
            dry_run: flags.dry_run,
            promote_in: flags.record_promotion.as_deref(),
        },
    );
    let (run, source) = match ran {
        Err(ratchet_orchestrate::Error::Gate(e)) => no_policy_named(ctx, &flags.class, Err(e))?,
        Err(e @ ratchet_orchestrate::Error::UnverifiedTrace { .. }) => {
            return unverified_before_policy(ctx, &store_id, &e);
        }
        other => other?,
    };
    let status = run.verdict.outcome.status();
    let scale = scale_of(ctx, flags.key_file.as_deref(), &run.verdict, file.as_ref());
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
        print_words(ctx, &flags, &candidate, &run, source, &scale)?;
    }
    Ok(status.exit_code())
}

/// The verdict in words, then what a person needs beside it: why the
/// required tests stopped it, whether it was recorded, under which policy,
/// and where the promotion ref now points.
fn print_words(
    ctx: &Ctx,
    flags: &GateFlags,
    candidate: &CommitId,
    run: &ratchet_orchestrate::GateRun,
    source: ratchet_gate::PolicySource,
    scale: &ratchet_gate::shown::Scale,
) -> Result<()> {
    print_verdict(&run.verdict, scale)?;
    if matches!(
        run.verdict.outcome,
        ratchet_gate::Outcome::Reject {
            stage: Stage::Tests,
            ..
        }
    ) {
        explain_tests(ctx, flags.key_file.as_deref(), &run.verdict)?;
    }
    if flags.dry_run {
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
            candidate,
            p.receipt.seq
        );
    }
    Ok(())
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

/// `gate --server`: the server decides under the class's pinned policy and
/// records the verdict; the exit code is the verdict's, as locally.
fn remote(
    ctx: &Ctx,
    client: &ratchet_serve::Client,
    class: &str,
    baseline: &ratchet_trace::CommitId,
    candidate: &ratchet_trace::CommitId,
    dry_run: bool,
) -> Result<u8> {
    let doc = client.post_json(
        "/v1/decide",
        &serde_json::json!({
            "class": class, "baseline": baseline.as_str(), "candidate": candidate.as_str(),
            "dry_run": dry_run,
        }),
    )?;
    let status: ratchet_gate::GateStatus = serde_json::from_value(doc["status"].clone())
        .map_err(|e| anyhow!("the server's verdict has no status: {e}"))?;
    // The answer is the verdict with the server's additions beside it:
    // without them it reads back as the verdict, printed as a local gate
    // prints one (stages, commits, figures), not as one word.
    if !ctx.json {
        let mut verdict = doc.clone();
        if let Some(fields) = verdict.as_object_mut() {
            for added in ["status", "words", "exit_code", "decision", "store_id"] {
                fields.remove(added);
            }
        }
        let parsed = serde_json::to_vec(&verdict)
            .ok()
            .and_then(|bytes| ratchet_gate::Verdict::from_json(&bytes).ok());
        if let Some(v) = parsed {
            print_verdict(&v, &ratchet_gate::shown::Scale::of_verdict(None, &v, None))?;
            if let Some(seq) = doc["decision"]["seq"].as_u64() {
                outln!("recorded by the server as seq {seq}");
            }
            return Ok(status.exit_code());
        }
    }
    answer(ctx, &doc, |d| {
        format!(
            "{}: {}",
            serde_json::to_value(status)
                .ok()
                .and_then(|v| v.as_str().map(str::to_uppercase))
                .unwrap_or_default(),
            d["outcome"]["reason"]
                .as_str()
                .or_else(|| d["reason"].as_str())
                .unwrap_or("")
        )
    })?;
    Ok(status.exit_code())
}
