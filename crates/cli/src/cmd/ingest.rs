//! Ingestion and scoring: `ingest`, `score`, `rubric check`.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use ratchet_scorers::{Rubric, RubricSet};

use crate::{Ctx, IngestKind, out};

fn rubrics(paths: &[PathBuf]) -> Result<RubricSet> {
    Ok(RubricSet::new(
        paths
            .iter()
            .map(|p| Rubric::from_path(p).with_context(|| format!("rubric {}", p.display())))
            .collect::<Result<_>>()?,
    ))
}

pub fn ingest(ctx: &Ctx, what: IngestKind) -> Result<u8> {
    let report = match what {
        IngestKind::Junit {
            path,
            commit,
            session,
            key_file,
        } => {
            let commit = ctx.commit(&commit)?;
            let mut store = ctx.open(key_file.as_deref())?;
            ratchet_scorers::ingest_junit(&mut store, &path, &commit, &session)?
        }
        IngestKind::Criterion(a) => {
            let commit = ctx.commit(&a.commit)?;
            let mut store = ctx.open(a.key_file.as_deref())?;
            let env = ratchet_scorers::Environment::current(&a.label);
            if !ctx.json {
                println!(
                    "scorer {} (lower is better), version = runner fingerprint {}",
                    ratchet_scorers::CRITERION_NS,
                    env.fingerprint()
                );
            }
            ratchet_scorers::ingest_criterion(&mut store, &a.path, &commit, &env, "criterion")?
        }
        IngestKind::Jsonl {
            path,
            commit,
            rubric,
            session,
            key_file,
        } => {
            let commit = commit.map(|c| ctx.commit(&c)).transpose()?;
            let rubrics = rubrics(&rubric)?;
            let mut store = ctx.open(key_file.as_deref())?;
            ratchet_scorers::ingest_jsonl(&mut store, &path, commit.as_ref(), &rubrics, &session)
                .map_err(|e| match &e {
                    ratchet_scorers::Error::Malformed { reason, .. }
                        if reason.starts_with("no commit") =>
                    {
                        anyhow::Error::new(e)
                            .context("give --commit, or a \"commit\" field on each line")
                    }
                    _ => anyhow::Error::new(e),
                })?
        }
    };
    if ctx.json {
        out::json(&report)?;
    } else if let Some(seq) = report.already_ingested_at {
        println!(
            "already ingested for this commit (ingest event at seq {seq}); nothing stored, nothing counted twice"
        );
    } else {
        println!(
            "recorded {} test run(s) and {} score(s)",
            report.test_runs, report.scores
        );
    }
    Ok(0)
}

pub fn score(ctx: &Ctx, rubric_paths: &[PathBuf], key_file: Option<&Path>) -> Result<u8> {
    let rubrics = rubrics(rubric_paths)?;
    let mut store = ctx.open(key_file)?;
    let r = ratchet_scorers::score_pending(&mut store, &rubrics)?;
    if ctx.json {
        out::json(&r)?;
    } else {
        println!(
            "{} observation(s): {} scored now, {} already scored, {} with an unknown rubric, {} invalid",
            r.observations,
            r.scored,
            r.already_scored,
            r.unknown_rubric,
            r.invalid.len()
        );
        for (seq, why) in &r.invalid {
            println!("  seq {seq}: {why}");
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
    println!(
        "rubric {} ok, version {}{}",
        r.name,
        r.version(),
        if r.holdout { " (holdout)" } else { "" }
    );
    for it in &r.items {
        println!(
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
        out::json(&serde_json::json!({
            "store_id": store.id(), "rubric": r.name, "version": r.version(), "pin": pinned,
        }))?;
        return Ok(0);
    }
    match &pinned {
        ratchet_scorers::Pinned::Appended { receipt } => println!(
            "pinned rubric {} at version {} (seq {})",
            r.name,
            r.version(),
            receipt.seq
        ),
        ratchet_scorers::Pinned::AlreadyPinned { seq } => println!(
            "rubric {} is already pinned at version {} (seq {seq}): nothing appended",
            r.name,
            r.version()
        ),
    }
    Ok(0)
}
