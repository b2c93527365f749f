//! `ratchet ingest`: a tool's result files recorded as test runs and
//! scores, in one transaction — locally or uploaded through `--server`.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::PathBuf;

use anyhow::{Context, Result};

use crate::cmd::shared::rubrics;
use crate::flags::{IngestArgs, IngestDirection};
use crate::{Ctx, out};

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

/// The files read by `format`'s parser and stored all or none; what was
/// recorded said by scorer, failed benchmark runs warned of on stderr.
pub fn run(ctx: &Ctx, args: IngestArgs) -> Result<u8> {
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
        return remote(ctx, &client, format, &args.paths, &options);
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
fn runner_from_here(format: ratchet_scorers::Format, here: &str) {
    eprintln!(
        "warning: {format} files do not name the machine they ran on, so these timings are recorded as measured on this one (runner {here}); if they were measured elsewhere they will never pair with that machine's timings: ingest them with --runner NAME, the same name wherever that runner's timings are ingested"
    );
}

/// `ingest --server`: each file uploaded and ingested by the server (one
/// transaction per file; a directory is for local ingestion only).
fn remote(
    ctx: &Ctx,
    client: &ratchet_serve::Client,
    format: ratchet_scorers::Format,
    paths: &[PathBuf],
    options: &ratchet_scorers::IngestOptions,
) -> Result<u8> {
    if !options.directions.is_empty() {
        // The server's query takes one direction for every metric; sending
        // only that one would record the named metrics the wrong way.
        anyhow::bail!(
            "--direction NAME=higher|lower is not sent to a server (its ingest takes one direction for every metric): ingest locally with --store, or give one --direction higher|lower"
        );
    }
    let mut docs = Vec::new();
    for path in paths {
        if path.is_dir() {
            anyhow::bail!(
                "{}: a directory; with --server, name its files (each is uploaded and ingested on its own)",
                path.display()
            );
        }
        let body = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
        let name = path
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or("upload");
        let commit = options.commit.as_ref().map(|c| c.as_str().to_string());
        let direction = options.direction.map(|d| match d {
            ratchet_scorers::Direction::HigherIsBetter => "higher",
            ratchet_scorers::Direction::LowerIsBetter => "lower",
        });
        let mut query: Vec<(&str, &str)> = vec![("name", name)];
        if let Some(c) = &commit {
            query.push(("commit", c));
        }
        if let Some(s) = &options.suite {
            query.push(("suite", s));
        }
        if let Some(d) = direction {
            query.push(("direction", d));
        }
        if !options.runner_label.is_empty() {
            query.push(("label", &options.runner_label));
        }
        if let Some(r) = &options.runner {
            query.push(("runner", r));
        }
        let doc = client.ingest(format.name(), &query, &body)?;
        if let Some(here) = doc["ingest"]["runner_from_here"].as_str() {
            runner_from_here(format, &format!("{here}, the server's"));
        }
        docs.push(doc);
    }
    if ctx.json {
        let receipts: Vec<serde_json::Value> = docs
            .iter()
            .flat_map(|d| d["receipts"].as_array().cloned().unwrap_or_default())
            .collect();
        out::json(&serde_json::json!({
            "store_id": docs.first().map(|d| d["store_id"].clone()),
            "receipts": receipts,
            "ingest": docs.iter().map(|d| d["ingest"].clone()).collect::<Vec<_>>(),
        }))?;
    } else {
        for (p, d) in paths.iter().zip(&docs) {
            outln!(
                "{}: {} test run(s), {} score(s) recorded by the server",
                p.display(),
                d["ingest"]["test_runs"],
                d["ingest"]["scores"]
            );
        }
    }
    Ok(0)
}
