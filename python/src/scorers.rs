//! Scorers: `Rubric` and ingestion of what tools wrote.

use std::path::PathBuf;

use pyo3::prelude::*;

use crate::convert::{commit, direction, from_json, resolve_commit, to_json};
use crate::errors::ToPyErr;
use crate::store::Store;

/// A rubric (`ratchet_scorers::Rubric`): a judge's checklist, scored by arithmetic.
#[pyclass(module = "ratchet._native", frozen)]
pub(crate) struct Rubric {
    inner: ratchet_scorers::Rubric,
}

#[pymethods]
impl Rubric {
    /// Parses a rubric's TOML text.
    #[staticmethod]
    fn from_toml(text: &str) -> PyResult<Self> {
        Ok(Rubric {
            inner: ratchet_scorers::Rubric::from_toml(text).map_err(ToPyErr::py)?,
        })
    }
    /// The rubric's name.
    #[getter]
    fn name(&self) -> String {
        self.inner.name.clone()
    }
    /// Its version (a content hash): what its scores are recorded under.
    #[getter]
    fn version(&self) -> String {
        self.inner.version()
    }
    /// The score of an observation (a dict of item values).
    fn score(&self, py: Python<'_>, observation: &Bound<'_, PyAny>) -> PyResult<f64> {
        self.inner
            .score_json(&to_json(py, observation)?)
            .map_err(ToPyErr::py)
    }
}

pub(crate) fn ingest_dict<'py>(
    py: Python<'py>,
    r: &ratchet_scorers::IngestReport,
) -> PyResult<Bound<'py, PyAny>> {
    from_json(py, r)
}

/// Ingests what a tool wrote (`ratchet ingest FORMAT PATH…`): `format` is
/// one of the CLI's names (`junit`, `criterion`, `jsonl`, `bmf`,
/// `hyperfine`, `google-benchmark`, `pytest-benchmark`, `go-bench`,
/// `inspect`, `lm-eval`, `promptfoo`); `paths` files or directories; the
/// commit a revision or full id, resolved as the CLI resolves it.
#[pyfunction]
#[pyo3(signature = (store, format, paths, commit=None, session=None, suite=None, label="", direction=None, repo=None, allow_unknown_commit=true))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn ingest<'py>(
    py: Python<'py>,
    store: &Store,
    format: &str,
    paths: Vec<PathBuf>,
    commit: Option<&str>,
    session: Option<String>,
    suite: Option<String>,
    label: &str,
    direction: Option<&str>,
    repo: Option<PathBuf>,
    allow_unknown_commit: bool,
) -> PyResult<Bound<'py, PyAny>> {
    let format: ratchet_scorers::Format = format.parse().map_err(ToPyErr::py)?;
    let options = ratchet_scorers::IngestOptions {
        commit: commit
            .map(|c| resolve_commit(c, repo.clone(), allow_unknown_commit))
            .transpose()?,
        session,
        suite,
        runner_label: label.to_string(),
        direction: direction.map(self::direction).transpose()?,
        ..ratchet_scorers::IngestOptions::default()
    };
    let report = store.with(py, |s| {
        ratchet_scorers::ingest(s, format, &paths, &options).map_err(ToPyErr::py)
    })?;
    ingest_dict(py, &report)
}

/// Ingests a JUnit XML file for `commit`: a dict of test_runs, scores, already_ingested_at.
#[pyfunction]
#[pyo3(signature = (store, path, commit, session="python"))]
pub(crate) fn ingest_junit<'py>(
    py: Python<'py>,
    store: &Store,
    path: PathBuf,
    commit: &str,
    session: &str,
) -> PyResult<Bound<'py, PyAny>> {
    let commit_id = self::commit(commit)?;
    let report = store.with(py, |s| {
        ratchet_scorers::ingest_junit(s, &path, &commit_id, session).map_err(ToPyErr::py)
    })?;
    ingest_dict(py, &report)
}

/// Ingests a JSON Lines score file (lines may name their commit; `commit`
/// is the default).
#[pyfunction]
#[pyo3(signature = (store, path, commit=None, session="python"))]
pub(crate) fn ingest_jsonl<'py>(
    py: Python<'py>,
    store: &Store,
    path: PathBuf,
    commit: Option<&str>,
    session: &str,
) -> PyResult<Bound<'py, PyAny>> {
    let commit_id = commit.map(self::commit).transpose()?;
    let report = store.with(py, |s| {
        ratchet_scorers::ingest_jsonl(
            s,
            &path,
            commit_id.as_ref(),
            &ratchet_scorers::RubricSet::default(),
            session,
        )
        .map_err(ToPyErr::py)
    })?;
    ingest_dict(py, &report)
}
