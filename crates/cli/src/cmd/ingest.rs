//! Ingestion and scoring: `ingest`, `score`, `rubric check`.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use ratchet_scorers::{Rubric, RubricSet};

use crate::flags::{IngestArgs, IngestDirection};
use crate::{Ctx, out};

fn rubrics(paths: &[PathBuf]) -> Result<RubricSet> {
    Ok(RubricSet::new(
        paths
            .iter()
            .map(|p| Rubric::from_path(p).with_context(|| format!("rubric {}", p.display())))
            .collect::<Result<_>>()?,
    ))
}

/// The `--direction`s given: the one for every metric without a known
/// direction, and one per metric named. The same metric (or the plain one)
/// given two different ways is a mistake, not a choice to make silently.
fn directions(
    given: &[IngestDirection],
) -> Result<(
    Option<ratchet_scorers::Direction>,
    BTreeMap<String, ratchet_scorers::Direction>,
)> {
    let mut all: Option<ratchet_scorers::Direction> = None;
    let mut each = BTreeMap::new();
    for g in given {
        let (name, d) = match g {
            IngestDirection::All(d) => (None, ratchet_scorers::Direction::from(*d)),
            IngestDirection::Metric(name, d) => (Some(name), ratchet_scorers::Direction::from(*d)),
        };
        let earlier = match name {
            None => all.replace(d),
            Some(name) => each.insert(name.clone(), d),
        };
        if let Some(earlier) = earlier
            && earlier != d
        {
            anyhow::bail!(
                "--direction {} is given as both {earlier} and {d}: give it once",
                name.map_or("(for every metric)", String::as_str)
            );
        }
    }
    Ok((all, each))
}

pub fn ingest(ctx: &Ctx, args: IngestArgs) -> Result<u8> {
    let format = args.format;
    let (direction, per_metric) = directions(&args.direction)?;
    let options = ratchet_scorers::IngestOptions {
        commit: args.commit.map(|c| ctx.commit(&c)).transpose()?,
        session: args.session,
        suite: args.suite,
        rubrics: rubrics(&args.rubric)?,
        runner_label: args.label,
        runner: args.runner,
        direction,
        directions: per_metric,
        ..ratchet_scorers::IngestOptions::default()
    };
    if let Some(client) = ctx.client()? {
        return crate::cmd::serve::ingest_remote(ctx, &client, format, &args.paths, &options);
    }
    let mut store = ctx.open(args.key_file.as_deref())?;
    let report = ratchet_scorers::ingest(&mut store, format, &args.paths, &options).map_err(
        |e| match &e {
            ratchet_scorers::Error::Malformed { reason, .. } if reason.starts_with("no commit") => {
                anyhow::Error::new(e).context("give --commit, or a \"commit\" field on each line")
            }
            _ => anyhow::Error::new(e),
        },
    )?;
    if let Some(here) = &report.runner_from_here {
        runner_from_here(format, here);
    }
    // A benchmark that failed leaves no timing behind, only the failed
    // run: said where a person (or a CI log) looks for trouble, whatever
    // stdout carries. A test report's failures are its content, said by
    // the gate.
    if format != ratchet_scorers::Format::Junit {
        for run in &report.failed_runs {
            let _ = writeln!(
                std::io::stderr().lock(),
                "warning: {} failed in suite {} ({}); recorded as a failed test run: a policy requiring suite {:?} rejects this commit",
                run.failed,
                run.suite,
                if run.failures.is_empty() {
                    "the run's verdict is FAIL".to_string()
                } else {
                    run.failures.join(", ")
                },
                run.suite
            );
        }
    }
    if ctx.json {
        out::written(
            &store,
            &report.receipts,
            serde_json::json!({ "ingest": report }),
        )?;
        return Ok(0);
    }
    if let Some(seq) = report.already_ingested_at {
        outln!(
            "already ingested (ingest event at seq {seq}); nothing stored, nothing counted twice"
        );
    } else {
        outln!(
            "recorded {} test run(s) and {} score(s) from {} file(s)",
            report.test_runs,
            report.scores,
            report.files.len()
        );
        for s in &report.scorers {
            let direction = s
                .direction
                .map_or_else(|| "direction not declared".to_string(), |d| d.to_string());
            outln!(
                "  scorer {} ({direction}): {} score(s), version = {} {}",
                s.scorer,
                s.scores,
                format.version_means(),
                s.versions.join(", ")
            );
        }
    }
    for note in &report.notes {
        outln!("note: {note}");
    }
    Ok(0)
}

/// Said on standard error (under `--json` too: standard output is the
/// document): timings fingerprinted as this machine because their file
/// does not name the one that measured them.
pub fn runner_from_here(format: ratchet_scorers::Format, here: &str) {
    eprintln!(
        "warning: {format} files do not name the machine they ran on, so these timings are recorded as measured on this one (runner {here}); if they were measured elsewhere they will never pair with that machine's timings: ingest them with --runner NAME, the same name wherever that runner's timings are ingested"
    );
}

pub fn score(ctx: &Ctx, rubric_paths: &[PathBuf], key_file: Option<&Path>) -> Result<u8> {
    let rubrics = rubrics(rubric_paths)?;
    let mut store = ctx.open(key_file)?;
    let r = ratchet_scorers::score_pending(&mut store, &rubrics)?;
    if ctx.json {
        out::written(&store, &r.receipts, serde_json::json!({ "scoring": r }))?;
    } else {
        outln!(
            "{} observation(s): {} scored now, {} already scored, {} with an unknown rubric, {} invalid",
            r.observations,
            r.scored,
            r.already_scored,
            r.unknown_rubric,
            r.invalid.len()
        );
        if r.not_the_key_holders > 0 {
            outln!(
                "  {} observation(s) left unscored: written by a token's session or a merged cell, not by this store's key holder (a score made here would be the key holder's evidence)",
                r.not_the_key_holders
            );
        }
        for (seq, why) in &r.invalid {
            outln!("  seq {seq}: {why}");
        }
    }
    Ok(0)
}

pub fn rubric_check(ctx: &Ctx, path: &Path) -> Result<u8> {
    let r = Rubric::from_path(path).with_context(|| format!("rubric {}", path.display()))?;
    if ctx.json {
        out::json(&serde_json::json!({
            "name": r.name, "version": r.version(), "holdout": r.holdout, "items": r.items
        }))?;
        return Ok(0);
    }
    outln!(
        "rubric {} ok, version {}{}",
        r.name,
        r.version(),
        if r.holdout { " (holdout)" } else { "" }
    );
    for it in &r.items {
        outln!(
            "  {:<24} {} weight {}{}",
            it.id,
            it.kind,
            it.weight,
            if it.must { " must" } else { "" }
        );
    }
    Ok(0)
}

pub fn rubric_pin(ctx: &Ctx, path: &Path, key_file: Option<&Path>) -> Result<u8> {
    let r = Rubric::from_path(path).with_context(|| format!("rubric {}", path.display()))?;
    let mut store = ctx.open(key_file)?;
    let pinned = ratchet_scorers::pin_rubric(&mut store, &r)?;
    if ctx.json {
        let receipts = match &pinned {
            ratchet_scorers::Pinned::Appended { receipt } => vec![*receipt],
            ratchet_scorers::Pinned::AlreadyPinned { .. } => Vec::new(),
        };
        out::written(
            &store,
            &receipts,
            serde_json::json!({ "rubric": r.name, "version": r.version(), "pin": pinned }),
        )?;
        return Ok(0);
    }
    match &pinned {
        ratchet_scorers::Pinned::Appended { receipt } => outln!(
            "pinned rubric {} at version {} (seq {})",
            r.name,
            r.version(),
            receipt.seq
        ),
        ratchet_scorers::Pinned::AlreadyPinned { seq } => outln!(
            "rubric {} is already pinned at version {} (seq {seq}): nothing appended",
            r.name,
            r.version()
        ),
    }
    Ok(0)
}
