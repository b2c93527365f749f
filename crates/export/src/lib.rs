//! `ratchet-export`: the road past one machine — the store's scores and
//! events as Arrow record batches, and as Parquet partitioned by commit that
//! DuckDB, Spark, Polars or pyarrow read directly
//! (`SELECT … FROM 'dir/scores/*/*.parquet'`, hive-style `commit=…` folders).
//!
//! The batches are the ones the Python package hands to notebooks (through
//! the Arrow PyCapsule interface), so a notebook's table and an exported file
//! hold the same columns, built by the same code.
//!
//! # Brief overview
//!
//! * [`scores_batch`] / [`events_batch`] — every score row / event.
//! * [`summary`] — per commit × scorer × version: n, mean, sd, min, max
//!   (the trace's own fold, [`ratchet_trace::Verified::commit_stats`]).
//! * [`export_parquet`] — `dir/scores/commit=<id>/part-0.parquet` and
//!   `dir/events/commit=<id|none>/part-0.parquet`.
//!
//! # Examples
//!
//! ```
//! use ratchet_trace::{CommitId, Score, Store, StoreOptions, VerifyOptions};
//!
//! let dir = tempfile::tempdir()?;
//! let mut store = Store::create(dir.path().join("s"), StoreOptions::default())?;
//! let commit = CommitId::parse(&"ab".repeat(20))?;
//! store.record_scores(&[Score::new(commit, "t1", "accuracy", 1.0)], "eval")?;
//!
//! let view = store.verified(&VerifyOptions::default())?;
//! assert_eq!(ratchet_export::scores_batch(&view)?.num_rows(), 1);
//! println!("{}", ratchet_export::summary(&view));
//!
//! let written = ratchet_export::export_parquet(&mut store, &dir.path().join("parquet"))?;
//! assert_eq!((written.scores, written.events), (1, 1));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![deny(missing_docs)]

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_array::builder::{BooleanBuilder, Float64Builder, StringBuilder, UInt64Builder};
use arrow_array::{
    Array, ArrayRef, Int64Array, RecordBatch, StringArray, UInt32Array, UInt64Array,
};
use arrow_schema::{ArrowError, Field, Schema};
use parquet::arrow::ArrowWriter;
use parquet::basic::Compression;
use parquet::file::properties::WriterProperties;
use serde::Serialize;

use ratchet_trace::{Event, ScorerRef, Store, Verified};

/// `Result` with this crate's [`Error`] as the default error.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong exporting.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The store could not be read.
    #[error(transparent)]
    Trace(#[from] ratchet_trace::Error),
    /// A record batch could not be built or cut.
    #[error(transparent)]
    Arrow(#[from] ArrowError),
    /// A Parquet file could not be encoded or written.
    #[error("cannot write the Parquet file {}: {source}", path.display())]
    Parquet {
        /// The file.
        path: PathBuf,
        /// The encoder's error.
        #[source]
        source: parquet::errors::ParquetError,
    },
    /// The output directory is not empty; nothing was written.
    #[error("{} is not empty; export into a new or empty directory", .0.display())]
    NotEmpty(PathBuf),
    /// An event's payload is not UTF-8 text, so the payload column cannot
    /// hold it as stored; nothing was written.
    #[error("the payload of event {seq} is not UTF-8 text; nothing exported")]
    NotText {
        /// The event's seq.
        seq: u64,
    },
    /// A text column would hold more than the 2 GiB of text one Arrow
    /// column can (32-bit offsets): a store of tens of millions of rows.
    /// Nothing was written.
    #[error(
        "the {column} column would hold more than 2 GiB of text, past what one Arrow column \
         holds; nothing exported"
    )]
    TooMuchText {
        /// The column.
        column: &'static str,
    },
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

/// A batch of `columns` (name, array, nullable).
fn batch(columns: Vec<(&str, ArrayRef, bool)>) -> Result<RecordBatch> {
    let fields: Vec<Field> = columns
        .iter()
        .map(|(name, a, nullable)| Field::new(*name, a.data_type().clone(), *nullable))
        .collect();
    let arrays = columns.into_iter().map(|(_, a, _)| a).collect();
    Ok(RecordBatch::try_new(Arc::new(Schema::new(fields)), arrays)?)
}

/// The most bytes one Arrow text column holds (its offsets are 32-bit).
const TEXT_COLUMN_BYTES: usize = i32::MAX as usize;

/// A text column that stops growing, and says so, where Arrow's builder
/// would panic: a store of tens of millions of events outgrows a column.
struct Text {
    name: &'static str,
    builder: StringBuilder,
    bytes: usize,
    limit: usize,
    full: bool,
}

impl Text {
    fn new(name: &'static str) -> Self {
        Text::with_limit(name, TEXT_COLUMN_BYTES)
    }

    fn with_limit(name: &'static str, limit: usize) -> Self {
        Text {
            name,
            builder: StringBuilder::new(),
            bytes: 0,
            limit,
            full: false,
        }
    }

    fn push(&mut self, value: &str) {
        if self.full || self.bytes + value.len() > self.limit {
            self.full = true;
        } else {
            self.bytes += value.len();
            self.builder.append_value(value);
        }
    }

    fn push_option(&mut self, value: Option<&str>) {
        match value {
            Some(v) => self.push(v),
            None if !self.full => self.builder.append_null(),
            None => {}
        }
    }

    fn finish(mut self) -> Result<ArrayRef> {
        if self.full {
            return Err(Error::TooMuchText { column: self.name });
        }
        Ok(Arc::new(self.builder.finish()))
    }
}

/// Every score row of the view, in seq order: seq, commit, task, scorer,
/// scorer_version, value, cost and latency_ms (null when not recorded),
/// holdout. Built column by column from the rows as the view lends them.
///
/// # Errors
/// [`Error::TooMuchText`] if a column would hold more than 2 GiB of text
/// (Arrow's 32-bit offsets): tens of millions of scores.
pub fn scores_batch(view: &Verified) -> Result<RecordBatch> {
    struct Columns {
        seq: UInt64Builder,
        commit: Text,
        task: Text,
        scorer: Text,
        version: Text,
        value: Float64Builder,
        cost: Float64Builder,
        latency: Float64Builder,
        holdout: BooleanBuilder,
    }
    let mut columns = Columns {
        seq: UInt64Builder::new(),
        commit: Text::new("commit"),
        task: Text::new("task"),
        scorer: Text::new("scorer"),
        version: Text::new("scorer_version"),
        value: Float64Builder::new(),
        cost: Float64Builder::new(),
        latency: Float64Builder::new(),
        holdout: BooleanBuilder::new(),
    };
    view.each_score(0, &mut |r| {
        columns.seq.append_value(r.seq);
        columns.commit.push(r.commit);
        columns.task.push(r.task);
        columns.scorer.push(r.scorer);
        columns.version.push(r.scorer_version);
        columns.value.append_value(r.value);
        columns.cost.append_option(r.cost);
        columns.latency.append_option(r.latency_ms);
        columns.holdout.append_value(r.holdout);
    });
    batch(vec![
        ("seq", Arc::new(columns.seq.finish()), false),
        ("commit", columns.commit.finish()?, false),
        ("task", columns.task.finish()?, false),
        ("scorer", columns.scorer.finish()?, false),
        ("scorer_version", columns.version.finish()?, false),
        ("value", Arc::new(columns.value.finish()), false),
        ("cost", Arc::new(columns.cost.finish()), true),
        ("latency_ms", Arc::new(columns.latency.finish()), true),
        ("holdout", Arc::new(columns.holdout.finish()), false),
    ])
}

/// `events` as a batch: seq, id, ts_ms, cell, session, kind, commit (null
/// when none), payload (JSON text), hash (hex). Pass
/// [`Verified::events`] of a view verified with
/// [`ratchet_trace::VerifyOptions::keep_all_events`] for every event of the
/// trace, or a listing ([`Store::tail`]) for what the file holds.
///
/// # Errors
/// [`Error::NotText`] if a payload is not UTF-8; [`Error::TooMuchText`] if
/// a column would hold more than 2 GiB of text (Arrow's 32-bit offsets).
pub fn events_batch(events: &[Event]) -> Result<RecordBatch> {
    let text = |name: &'static str, f: &dyn Fn(&Event) -> String| -> Result<ArrayRef> {
        let mut column = Text::new(name);
        for e in events {
            column.push(&f(e));
        }
        column.finish()
    };
    batch(vec![
        (
            "seq",
            Arc::new(UInt64Array::from_iter_values(events.iter().map(|e| e.seq))),
            false,
        ),
        ("id", text("id", &|e| e.id.to_string())?, false),
        (
            "ts_ms",
            Arc::new(Int64Array::from_iter_values(events.iter().map(|e| e.ts_ms))),
            false,
        ),
        ("cell", text("cell", &|e| e.cell.clone())?, false),
        ("session", text("session", &|e| e.session.clone())?, false),
        ("kind", text("kind", &|e| e.kind.clone())?, false),
        (
            "commit",
            {
                let mut column = Text::new("commit");
                for e in events {
                    column.push_option(e.commit.as_ref().map(|c| c.as_str()));
                }
                column.finish()?
            },
            true,
        ),
        ("payload", payloads(events)?, false),
        (
            "hash",
            text("hash", &|e| e.hash.to_hex().to_string())?,
            false,
        ),
    ])
}

/// The payloads as text, byte for byte: a payload that is not UTF-8 (the
/// store checks JSON when appending, not when merging a cell's events) is
/// refused, never written with its bytes replaced.
fn payloads(events: &[Event]) -> Result<ArrayRef> {
    let mut column = Text::new("payload");
    for e in events {
        column.push(std::str::from_utf8(&e.payload).map_err(|_| Error::NotText { seq: e.seq })?);
    }
    column.finish()
}

/// One row of [`summary`]: a scorer version's values under one commit.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SummaryRow {
    /// The commit (canonical hex).
    pub commit: String,
    /// The scorer.
    pub scorer: String,
    /// The scorer's version.
    pub scorer_version: String,
    /// Score rows.
    pub n: u64,
    /// Mean value.
    pub mean: f64,
    /// Sample standard deviation (n − 1 denominator); `None` when n < 2.
    pub sd: Option<f64>,
    /// Smallest value.
    pub min: f64,
    /// Largest value.
    pub max: f64,
}

/// Per commit × scorer × scorer version (versions are different scales,
/// so never pooled), sorted by commit, scorer, version; its `Display` is a
/// table a terminal shows.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(transparent)]
pub struct Summary {
    /// The rows.
    pub rows: Vec<SummaryRow>,
}

/// The view's scores summarised per commit × scorer × version, with the
/// trace's own fold (Welford's update, the one the gate reads), so the
/// figures are the gate's to the bit.
pub fn summary(view: &Verified) -> Summary {
    let mut rows = Vec::new();
    for scorer in view.overview().scorers {
        for version in &scorer.versions {
            let at = ScorerRef::at_version(&scorer.scorer, &version.version);
            for s in view.commit_stats(at, ratchet_trace::AsOf::Head) {
                rows.push(SummaryRow {
                    commit: s.commit.to_string(),
                    scorer: scorer.scorer.clone(),
                    scorer_version: version.version.clone(),
                    n: s.n,
                    mean: s.mean,
                    sd: s.variance.map(f64::sqrt),
                    min: s.min,
                    max: s.max,
                });
            }
        }
    }
    rows.sort_by(|a, b| {
        (&a.commit, &a.scorer, &a.scorer_version).cmp(&(&b.commit, &b.scorer, &b.scorer_version))
    });
    Summary { rows }
}

/// A figure for the table: four decimals, or four significant digits in
/// exponent form where four decimals would be a screen wide (past 1e9) or
/// read as zero (below 1e-4).
fn figure(x: f64) -> String {
    if x == 0.0 || !x.is_finite() || (1e-4..1e9).contains(&x.abs()) {
        format!("{x:.4}")
    } else {
        format!("{x:.3e}")
    }
}

impl fmt::Display for Summary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        const HEAD: [&str; 8] = [
            "commit", "scorer", "version", "n", "mean", "sd", "min", "max",
        ];
        // A commit's first 12 digits name it on a terminal (the files and
        // the JSON hold all 40), or more where two commits of the table
        // share them, as git abbreviates.
        let commits: BTreeSet<&str> = self.rows.iter().map(|r| r.commit.as_str()).collect();
        let digits = commits
            .iter()
            .zip(commits.iter().skip(1))
            .map(|(a, b)| a.bytes().zip(b.bytes()).take_while(|(x, y)| x == y).count() + 1)
            .fold(12, usize::max);
        let cells: Vec<[String; 8]> = self
            .rows
            .iter()
            .map(|r| {
                [
                    r.commit.chars().take(digits).collect(),
                    r.scorer.clone(),
                    r.scorer_version.clone(),
                    r.n.to_string(),
                    figure(r.mean),
                    r.sd.map_or_else(|| "-".to_string(), figure),
                    figure(r.min),
                    figure(r.max),
                ]
            })
            .collect();
        let mut width = HEAD.map(str::len);
        for row in &cells {
            for (w, cell) in width.iter_mut().zip(row) {
                *w = (*w).max(cell.chars().count());
            }
        }
        let line = |f: &mut fmt::Formatter<'_>, row: [&str; 8]| -> fmt::Result {
            for (i, (cell, w)) in row.iter().zip(width).enumerate() {
                let sep = if i == 0 { "" } else { "  " };
                // Text left, figures right.
                if i < 3 {
                    write!(f, "{sep}{cell:<w$}")?;
                } else {
                    write!(f, "{sep}{cell:>w$}")?;
                }
            }
            writeln!(f)
        };
        line(f, HEAD)?;
        for row in &cells {
            line(f, row.each_ref().map(String::as_str))?;
        }
        write!(f, "({} row(s))", self.rows.len())
    }
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
    /// The exported scores summarised ([`summary`] of the view the export
    /// verified), for a caller that shows both without verifying again.
    #[serde(skip)]
    pub summary: Summary,
}

fn write_parquet(path: &Path, batch: &RecordBatch) -> Result<()> {
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
    let parquet = |source| Error::Parquet {
        path: path.to_path_buf(),
        source,
    };
    let props = WriterProperties::builder()
        .set_compression(Compression::SNAPPY)
        .build();
    let mut writer = ArrowWriter::try_new(file, batch.schema(), Some(props)).map_err(parquet)?;
    writer.write(batch).map_err(parquet)?;
    writer.close().map_err(parquet)?;
    Ok(())
}

/// `batch`'s rows cut by the value of its string column `column` (null as
/// `none`), in key order (directories list as the store sorts commits);
/// each part keeps the rows' order.
fn partition_by(batch: &RecordBatch, column: &str) -> Result<Vec<(String, RecordBatch)>> {
    let keys = batch
        .column_by_name(column)
        .and_then(|c| c.as_any().downcast_ref::<StringArray>())
        .ok_or_else(|| ArrowError::SchemaError(format!("no string column {column}")))?;
    let mut rows: BTreeMap<&str, Vec<u32>> = BTreeMap::new();
    for i in 0..keys.len() {
        let key = if keys.is_null(i) {
            "none"
        } else {
            keys.value(i)
        };
        // Parquet's row groups and Arrow's indices are 32-bit here; a
        // larger export is cut by the writer, not by this index.
        rows.entry(key)
            .or_default()
            .push(u32::try_from(i).map_err(|_| {
                ArrowError::ComputeError(format!("more than {} rows in one export", u32::MAX))
            })?);
    }
    rows.into_iter()
        .map(|(key, ix)| {
            let part = arrow_select::take::take_record_batch(batch, &UInt32Array::from(ix))?;
            Ok((key.to_string(), part))
        })
        .collect()
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
/// without its key; [`Error::NotEmpty`] or [`Error::NotText`] before
/// anything is written; [`Error::Parquet`] or [`Error::Io`] while writing.
pub fn export_parquet(store: &mut Store, dir: &Path) -> Result<ExportReport> {
    // Every event whole: the events table holds the score events too.
    let view = store.verified(&ratchet_trace::VerifyOptions::default().keep_all_events())?;
    // The empty path is the current directory (where `dir.join` writes),
    // though `exists` says no: checked as `.`, never written past the check.
    let dir = if dir.as_os_str().is_empty() {
        Path::new(".")
    } else {
        dir
    };
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
    let scores = scores_batch(&view)?;
    let events = events_batch(view.events())?;
    let mut files = Vec::new();
    for (table, all) in [("scores", &scores), ("events", &events)] {
        for (key, part) in partition_by(all, "commit")? {
            let path = dir
                .join(table)
                .join(format!("commit={key}"))
                .join("part-0.parquet");
            write_parquet(&path, &part)?;
            files.push(path);
        }
    }
    Ok(ExportReport {
        scores: scores.num_rows(),
        events: events.num_rows(),
        files,
        summary: summary(&view),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_text_column_past_its_limit_is_an_error_not_a_panic() {
        let mut column = Text::with_limit("task", 10);
        column.push("0123456789");
        column.push_option(None);
        assert_eq!(column.bytes, 10, "exactly at the limit fits");
        let mut at_limit = Text::with_limit("task", 10);
        at_limit.push("0123456789");
        assert!(at_limit.finish().is_ok());
        column.push("x");
        column.push_option(None);
        column.push("");
        assert!(matches!(
            column.finish(),
            Err(Error::TooMuchText { column: "task" })
        ));
    }
}
