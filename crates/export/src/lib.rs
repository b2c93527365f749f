//! `ratchet-export`: the road past one machine — the store's scores and
//! events as Polars DataFrames, and as Parquet partitioned by commit that
//! DuckDB, Spark or Polars read directly
//! (`SELECT … FROM 'dir/scores/*/*.parquet'`, hive-style `commit=…` folders).
//!
//! Polars is heavy to build, so it lives only in this crate: the core crates
//! never compile it.
//!
//! # Brief overview
//!
//! * [`scores_frame`] / [`events_frame`] — every score row / event.
//! * [`summary`] — per commit × scorer: n, mean, sd, min, max.
//! * [`export_parquet`] — `dir/scores/commit=<id>/part-0.parquet` and
//!   `dir/events/commit=<id|none>/part-0.parquet`.
//!
//! ```no_run
//! let mut store = ratchet_trace::Store::open(".ratchet", ratchet_trace::StoreOptions::default())?;
//! let view = store.verified(&ratchet_trace::VerifyOptions::default())?;
//! let summary = ratchet_export::summary(&view)?;
//! println!("{summary}");
//! ratchet_export::export_parquet(&mut store, std::path::Path::new("ratchet-parquet"))?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![deny(missing_docs)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use polars::prelude::*;
use serde::Serialize;

use ratchet_trace::{Score, Store, Verified};

/// `Result` with this crate's [`Error`] as the default error.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong exporting.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The store could not be read.
    #[error(transparent)]
    Trace(#[from] ratchet_trace::Error),
    /// Polars failed to build or write a frame.
    #[error(transparent)]
    Polars(#[from] PolarsError),
    /// The output directory is not empty; nothing was written.
    #[error("{} is not empty; export into a new or empty directory", .0.display())]
    NotEmpty(PathBuf),
    /// A file could not be written.
    #[error("cannot write {}: {source}", path.display())]
    Io {
        /// The path.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
}

impl Error {
    /// The trace store's error this one is, if it is one: a transparent
    /// wrapper forwards its `source()` past the wrapped error, so the
    /// chain alone does not show it.
    pub fn trace_error(&self) -> Option<&ratchet_trace::Error> {
        match self {
            Error::Trace(e) => Some(e),
            _ => None,
        }
    }
}

fn frame_of_scores(rows: &[(u64, Score)]) -> Result<DataFrame> {
    let df = df!(
        "seq" => rows.iter().map(|(s, _)| *s).collect::<Vec<u64>>(),
        "commit" => rows.iter().map(|(_, s)| s.commit.to_string()).collect::<Vec<String>>(),
        "task" => rows.iter().map(|(_, s)| s.task.clone()).collect::<Vec<String>>(),
        "scorer" => rows.iter().map(|(_, s)| s.scorer.clone()).collect::<Vec<String>>(),
        "scorer_version" => rows.iter().map(|(_, s)| s.scorer_version.clone()).collect::<Vec<String>>(),
        "value" => rows.iter().map(|(_, s)| s.value).collect::<Vec<f64>>(),
        "cost" => rows.iter().map(|(_, s)| s.cost).collect::<Vec<Option<f64>>>(),
        "latency_ms" => rows.iter().map(|(_, s)| s.latency_ms).collect::<Vec<Option<f64>>>(),
        "holdout" => rows.iter().map(|(_, s)| s.holdout).collect::<Vec<bool>>(),
    )?;
    Ok(df)
}

/// Every score row of the store, in seq order.
///
/// # Errors
/// [`Error::Trace`] or [`Error::Polars`].
pub fn scores_frame(view: &Verified) -> Result<DataFrame> {
    frame_of_scores(&view.scores())
}

/// Every event the view keeps whole, in seq order (every event for a view
/// verified with [`ratchet_trace::VerifyOptions::keep_all_events`], else
/// all but scores): seq, id, ts_ms, cell, session, kind, commit (null when
/// none), payload (JSON text), hash (hex).
///
/// # Errors
/// [`Error::Trace`] or [`Error::Polars`].
pub fn events_frame(view: &Verified) -> Result<DataFrame> {
    let events = view.events();
    let df = df!(
        "seq" => events.iter().map(|e| e.seq).collect::<Vec<u64>>(),
        "id" => events.iter().map(|e| e.id.to_string()).collect::<Vec<String>>(),
        "ts_ms" => events.iter().map(|e| e.ts_ms).collect::<Vec<i64>>(),
        "cell" => events.iter().map(|e| e.cell.clone()).collect::<Vec<String>>(),
        "session" => events.iter().map(|e| e.session.clone()).collect::<Vec<String>>(),
        "kind" => events.iter().map(|e| e.kind.clone()).collect::<Vec<String>>(),
        "commit" => events.iter().map(|e| e.commit.as_ref().map(|c| c.to_string())).collect::<Vec<Option<String>>>(),
        "payload" => events.iter().map(|e| String::from_utf8_lossy(&e.payload).into_owned()).collect::<Vec<String>>(),
        "hash" => events.iter().map(|e| e.hash.to_hex().to_string()).collect::<Vec<String>>(),
    )?;
    Ok(df)
}

/// Per commit × scorer × scorer version: `n`, `mean`, `sd` (sample),
/// `min`, `max`, sorted by commit, scorer, version.
///
/// # Errors
/// [`Error::Trace`] or [`Error::Polars`].
pub fn summary(view: &Verified) -> Result<DataFrame> {
    Ok(scores_frame(view)?
        .lazy()
        // One row per scorer version: versions are different scales.
        .group_by([col("commit"), col("scorer"), col("scorer_version")])
        .agg([
            col("value").count().alias("n"),
            col("value").mean().alias("mean"),
            col("value").std(1).alias("sd"),
            col("value").min().alias("min"),
            col("value").max().alias("max"),
        ])
        .sort(
            ["commit", "scorer", "scorer_version"],
            SortMultipleOptions::default(),
        )
        .collect()?)
}

/// What an export wrote.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ExportReport {
    /// Score rows written.
    pub scores: usize,
    /// Events written.
    pub events: usize,
    /// Parquet files written.
    pub files: Vec<PathBuf>,
}

fn write_parquet(path: &Path, df: &mut DataFrame) -> Result<()> {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(|source| Error::Io {
            path: parent.to_path_buf(),
            source,
        })?;
    }
    let file = std::fs::File::create(path).map_err(|source| Error::Io {
        path: path.to_path_buf(),
        source,
    })?;
    ParquetWriter::new(file).finish(df)?;
    Ok(())
}

/// Writes the store's scores and events as Parquet partitioned by commit
/// (`scores/commit=<id>/part-0.parquet`, `events/commit=<id|none>/…`) into
/// `dir`, which must be new or empty.
///
/// The trace is verified first (with the writer key the store was opened
/// with): an export is read by tools that trust it, so it holds only rows
/// verification covered.
///
/// # Errors
/// [`Error::Trace`] if the trace does not verify, or is keyed and was opened
/// without its key; [`Error::NotEmpty`] before anything is written;
/// [`Error::Trace`], [`Error::Polars`] or [`Error::Io`] while writing.
pub fn export_parquet(store: &mut Store, dir: &Path) -> Result<ExportReport> {
    // Every event whole: the events frame holds the score events too.
    let view = store.verified(&ratchet_trace::VerifyOptions::default().keep_all_events())?;
    if dir.exists()
        && std::fs::read_dir(dir)
            .map_err(|source| Error::Io {
                path: dir.to_path_buf(),
                source,
            })?
            .next()
            .is_some()
    {
        return Err(Error::NotEmpty(dir.to_path_buf()));
    }
    let scores = view.scores();
    let mut by_commit: BTreeMap<String, Vec<(u64, Score)>> = BTreeMap::new();
    for row in &scores {
        by_commit
            .entry(row.1.commit.to_string())
            .or_default()
            .push(row.clone());
    }
    let mut files = Vec::new();
    for (commit, rows) in &by_commit {
        let path = dir
            .join("scores")
            .join(format!("commit={commit}"))
            .join("part-0.parquet");
        write_parquet(&path, &mut frame_of_scores(rows)?)?;
        files.push(path);
    }
    let events = events_frame(&view)?;
    let n_events = events.height();
    let parts = events.partition_by_stable(["commit"], true)?;
    for mut part in parts {
        let key = part
            .column("commit")?
            .str()?
            .get(0)
            .map(str::to_string)
            .unwrap_or_else(|| "none".to_string());
        let path = dir
            .join("events")
            .join(format!("commit={key}"))
            .join("part-0.parquet");
        write_parquet(&path, &mut part)?;
        files.push(path);
    }
    Ok(ExportReport {
        scores: scores.len(),
        events: n_events,
        files,
    })
}
