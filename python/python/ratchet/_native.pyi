"""Type stubs of ratchet._native (checked against the module by mypy.stubtest).

The docstrings here are what an editor shows; the module's own (``help()``)
say the same in the Rust source, python/src/ (one module per role).
"""

import os
from collections.abc import Iterator
from typing import Any, Optional, Union, final

import numpy as np
import numpy.typing as npt

__version__: str
__all__ = [
    "Cusum",
    "Ewma",
    "GateStatus",
    "InvalidInputError",
    "KeyRequiredError",
    "NotFoundError",
    "PageHinkley",
    "Policy",
    "RatchetError",
    "ReadOnlyError",
    "Rubric",
    "StageReport",
    "Store",
    "Table",
    "TamperedError",
    "Verdict",
    "__version__",
    "calibrate",
    "cusum_arl",
    "decide",
    "ewma_arl",
    "ingest",
    "ingest_jsonl",
    "ingest_junit",
    "pin_policy",
    "welch_non_inferiority",
]

_Path = Union[str, os.PathLike[str]]
# What the detectors and the non-inferiority test take: anything
# ``numpy.asarray(x, dtype=float64)`` makes a one-dimensional array of
# (float32 or integer arrays, strided views, lists, pandas and polars Series).
_Floats = npt.ArrayLike

class RatchetError(Exception):
    """Every error ratchet raises."""

class TamperedError(RatchetError):
    """The store does not verify, or its schema was altered."""

class InvalidInputError(RatchetError):
    """An argument, a file or a policy is malformed (the message names it)."""

class NotFoundError(RatchetError):
    """No store (or file) where one was named."""

class KeyRequiredError(RatchetError):
    """A keyed store needs its writer key (or was given another store's)."""

class ReadOnlyError(RatchetError):
    """The store was opened read-only."""

@final
class Table:
    """A table ratchet computed: scores, events, per-commit statistics, an
    operating characteristic.

    Arrow inside: ``polars.DataFrame(t)`` and ``pyarrow.table(t)`` read it
    without a copy (the Arrow PyCapsule stream). ``t.to_pandas()`` needs no
    pyarrow; ``pandas.DataFrame(t)`` works too (from its rows). Printed, it
    shows its size, columns, their types and the first rows.
    """

    def __arrow_c_stream__(self, requested_schema: Optional[object] = None) -> object:
        """The table as an Arrow C stream (the PyCapsule interface)."""
    @property
    def columns(self) -> list[str]:
        """The columns' names, in order."""
    @property
    def num_rows(self) -> int:
        """Rows in the table."""
    def __len__(self) -> int:
        """Rows in the table."""
    def column(self, name: str) -> Any:
        """One column: a NumPy array (numbers; a missing one is NaN), or a
        list (text, and booleans with gaps). ``KeyError`` names the columns."""
    def to_dict(self) -> dict[str, Any]:
        """Every column by name, as ``column`` gives it."""
    def to_pandas(self) -> Any:
        """A ``pandas.DataFrame`` (built from NumPy columns: no pyarrow needed)."""
    def to_polars(self) -> Any:
        """A ``polars.DataFrame`` (zero-copy)."""
    def to_pyarrow(self) -> Any:
        """A ``pyarrow.Table`` (zero-copy)."""
    def __iter__(self) -> Iterator[dict[str, Any]]:
        """The rows, each a dict of column name to value (None when missing)."""
    def _repr_html_(self) -> str:
        """The first rows as an HTML table, for notebooks."""

@final
class Store:
    """A trace store (``ratchet_trace::Store``): a hash-chained, append-only
    log of events and scores. The first call that needs the verified trace
    verifies it; later calls read only what was appended since."""

    @staticmethod
    def open(path: _Path, key: Optional[_Path] = None) -> Store:
        """Opens the store at ``path`` (with the writer key file ``key`` for a
        keyed store). ``NotFoundError`` if there is none."""
    @staticmethod
    def create(path: _Path, key: Optional[_Path] = None) -> Store:
        """Creates a store at ``path`` (keyed by the writer key file ``key``, if given)."""
    @property
    def id(self) -> str:
        """The store's id."""
    @property
    def size(self) -> int:
        """Events in the trace."""
    @property
    def path(self) -> str:
        """The store's directory."""
    def append(
        self, kind: str, payload: Any, session: Optional[str] = None, commit: Optional[str] = None
    ) -> int:
        """Appends an event of ``kind`` with a JSON-serializable ``payload``
        (``commit``: a full commit id); its seq. Reserved kinds (decision,
        score, ...) are refused: they have their own calls."""
    def record_score(
        self,
        commit: str,
        task: str,
        scorer: str,
        value: float,
        scorer_version: Optional[str] = None,
        cost: Optional[float] = None,
        latency_ms: Optional[float] = None,
        session: str = "python",
        holdout: bool = False,
        direction: Optional[str] = None,
    ) -> int:
        """Records the score ``value`` (finite) of ``commit`` (a full id) on
        ``task`` under ``scorer``; its seq.

        ``holdout=True`` marks a holdout score: the gate counts it,
        proposers never see it. ``direction`` (``"higher"`` or ``"lower"``)
        declares which way the scorer improves the first time the scorer
        appears in the trace (without it: down for cost, latency_ms and
        criterion_ns, up otherwise); one contradicting the scorer's
        declaration is an ``InvalidInputError``.
        """
    def verify(self, raise_on_fault: bool = False) -> dict[str, Any]:
        """Recomputes the chain: a dict of size, head, keyed, macs_checked,
        valid and fault (None, or the first bad seq and why).
        ``raise_on_fault=True`` raises ``TamperedError`` instead."""
    def checkpoint(self) -> dict[str, Any]:
        """The chain head as a checkpoint: origin, size, head."""
    def merge_cell(self, path: _Path, cell_key: Optional[_Path] = None) -> dict[str, Any]:
        """Merges the cell store at ``path`` into this one (``cell_key``: its
        writer key file): cell_id, ingested, already_present."""
    def scores(self) -> Table:
        """Every score of the verified trace: seq, commit, task, scorer,
        scorer_version, value, cost, latency_ms, holdout."""
    def events(self) -> Table:
        """Every event as the file holds it: seq, id, ts_ms, cell, session,
        kind, commit, payload (JSON text), hash (a listing: ``verify()``
        says whether they are the trace's)."""
    def commit_stats(self, scorer: str, version: Optional[str] = None) -> Table:
        """Per-commit statistics of ``scorer`` (its newest version unless
        ``version``): commit, n, mean, variance, min, max."""

@final
class Policy:
    """A policy file (``ratchet_gate::Policy``): one class per kind of change."""

    @staticmethod
    def from_toml(text: str) -> Policy:
        """Parses a policy's TOML text (``InvalidInputError`` names a bad field)."""
    @staticmethod
    def from_path(path: _Path) -> Policy:
        """Reads a policy file."""
    @property
    def classes(self) -> list[str]:
        """The classes' names."""
    def hash(self, cls: str) -> str:
        """The hash of class ``cls`` (what its verdicts record as ``policy_hash``)."""

@final
class StageReport:
    """One stage of a verdict: whether it passed, its effect estimate with
    its interval, and how much evidence it read, where the stage has them
    (``Verdict.to_dict()`` has every figure)."""

    @property
    def name(self) -> str:
        """``trace verification``, ``required tests``, ``invariants``, ``sequential
        test`` or ``guardrail <scorer>``."""
    @property
    def passed(self) -> Optional[bool]:
        """True passed, False failed, None still open."""
    @property
    def measure(self) -> Optional[str]:
        """What ``estimate`` measures and which way is better (None when the
        stage estimates nothing): for the sequential test ``candidate −
        baseline`` in the scorer's own direction (a faster candidate of a
        lower-is-better timing is negative)."""
    @property
    def estimate(self) -> Optional[float]:
        """The effect estimate, in ``unit``."""
    @property
    def ci_low(self) -> Optional[float]:
        """Lower end of its 95 % interval (None: one-sided, or no interval)."""
    @property
    def ci_high(self) -> Optional[float]:
        """Upper end of its 95 % interval."""
    @property
    def interval(self) -> Optional[str]:
        """How the interval was computed (None: fixed-sample, or no interval)."""
    @property
    def n(self) -> Optional[int]:
        """How much evidence the stage read: a count of ``n_of``."""
    @property
    def n_of(self) -> Optional[str]:
        """What ``n`` counts: ``pairs`` (tasks scored on both sides),
        ``tasks``, ``runs`` or ``events``."""
    @property
    def unit(self) -> Optional[str]:
        """The unit of ``estimate`` and its interval (``s``, ``ns``, …;
        None: a plain number)."""
    @property
    def estimate_text(self) -> Optional[str]:
        """``estimate`` as a person reads it, in its unit (``-40.7 µs``)."""
    @property
    def interval_text(self) -> Optional[str]:
        """The interval as a person reads it (``[-45.1 µs, -36.2 µs]``)."""
    @property
    def effect_shown(self) -> Optional[str]:
        """The effect in words: ``candidate − baseline: -40.7 µs [-45.1 µs,
        -36.2 µs] (an improvement: lower is better)``."""
    @property
    def bound(self) -> Optional[float]:
        """The one-sided bound that matches the sequential test's decision,
        on the improvement (positive is better, whatever the scorer's
        direction), in ``unit``: a promote's lower bound (above 0 exactly
        when it promoted), a reject's upper bound (below the gap). None for
        verdicts before law 4, a test still open, and other stages."""
    @property
    def bound_side(self) -> Optional[str]:
        """``lower`` (the improvement is at least ``bound``) or ``upper`` (at most)."""
    @property
    def bound_level(self) -> Optional[float]:
        """The miss rate the bound holds at: the test's α (lower) or β (upper)."""
    @property
    def bound_text(self) -> Optional[str]:
        """The bound in words: ``promoted: improvement ≥ +0.031 (one-sided,
        α = 0.05, always valid)``."""
    @property
    def shown(self) -> str:
        """The stage in one line, as ``ratchet gate`` prints it."""

@final
class GateStatus:
    """A verdict's outcome (``ratchet_gate::GateStatus``): the one vocabulary
    the CLI, its ``--json``, the report and the pull-request comment read it
    with. Equal to its name as text."""

    @property
    def name(self) -> str:
        """As ``--json`` serializes it: ``promote``, ``reject``, ``continue``,
        ``missing_evidence``, ``unverified_trace`` or ``truncated``."""
    @property
    def words(self) -> str:
        """As a person reads it: ``cannot decide (evidence missing)`` for a refusal."""
    @property
    def headline(self) -> str:
        """The CLI's headline: ``CANNOT DECIDE (evidence missing)``."""
    @property
    def exit_code(self) -> int:
        """The exit code ``ratchet gate`` uses for it."""
    def __eq__(self, value: object, /) -> bool: ...
    def __hash__(self) -> int: ...

@final
class Verdict:
    """A verdict of the gate (``ratchet_gate::Verdict``); shown as an HTML
    table in notebooks."""

    @property
    def status(self) -> GateStatus:
        """The outcome: its ``name``, ``words``, ``headline`` and
        ``exit_code``, as the CLI reads it; equal to its name as text
        (``v.status == "promote"``)."""
    @property
    def exit_code(self) -> int:
        """The exit code ``ratchet gate`` would use."""
    @property
    def class_name(self) -> str:
        """The class decided."""
    @property
    def baseline(self) -> str:
        """The baseline commit (a full id)."""
    @property
    def candidate(self) -> str:
        """The candidate commit (a full id)."""
    @property
    def decision_seq(self) -> Optional[int]:
        """Seq of the recorded ``decision`` event (None when nothing was recorded)."""
    @property
    def reason(self) -> Optional[str]:
        """Why it rejects or continues, in words (None for a promote)."""
    @property
    def stages(self) -> list[StageReport]:
        """Each stage that ran, in order."""
    @staticmethod
    def from_json(json: str) -> Verdict:
        """Reads a verdict back from its JSON (a ``decision`` event's payload); raises InvalidInputError for text that is not one."""
    def to_json(self) -> str:
        """The whole verdict as the ``decision`` event holds it (its canonical JSON)."""
    def to_dict(self) -> dict[str, Any]:
        """The whole verdict as Python dicts and lists."""

def decide(
    store: Store,
    baseline: str,
    candidate: str,
    cls: str,
    policy: Optional[Policy] = None,
    record: bool = True,
    repo: Optional[_Path] = None,
    allow_unknown_commit: bool = True,
) -> Verdict:
    """Decides class ``cls`` for ``candidate`` against ``baseline`` and
    records the verdict (``record=False``: recomputes at the head, appending
    nothing).

    ``baseline`` and ``candidate`` are revisions as the CLI takes them
    (``main``, ``HEAD~1``, a short or full id), resolved as the CLI resolves
    them, in the git repository enclosing ``repo`` (default: the current
    directory). A full id the repository lacks (a commit measured
    elsewhere) is accepted unless ``allow_unknown_commit=False`` (the CLI's
    default). ``policy``: default ``policy.toml`` in the store's directory.
    A class pinned in the trace decides under its pin (a different policy
    given is refused).
    """

def pin_policy(store: Store, policy: Policy, cls: str) -> int:
    """Pins ``policy``'s class ``cls`` in the trace: every later decision of
    the class is taken under it. The seq of the pin in force."""

def calibrate(
    policy: Policy,
    cls: str,
    p0: float = 0.5,
    sigma: float = 1.0,
    draw: float = 0.3,
    runs: int = 2000,
    seed: int = 1,
) -> Table:
    """The operating characteristic of a class's test: effect_unit, effect,
    p_promote, p_truncated (max_n reached undecided, as ``ratchet
    calibrate`` shows it), expected_n, n_p10, n_p50, n_p90, method (one row
    per effect)."""

def welch_non_inferiority(
    baseline: _Floats,
    candidate: _Floats,
    margin: float,
    relative: bool = False,
    lower_is_better: bool = True,
    alpha: float = 0.05,
) -> dict[str, Any]:
    """Welch's non-inferiority test of a guardrail: excess, se, t, df,
    p_value, non_inferior. The samples: any float array-likes."""

@final
class Cusum:
    """Two-sided tabular CUSUM (``ratchet_drift::Cusum``)."""

    def __new__(cls, mu0: float = 0.0, sigma: float = 1.0, k: float = 0.5, h: float = 5.0) -> Cusum:
        """A CUSUM for in-control mean ``mu0`` and sd ``sigma``, reference
        ``k`` and decision interval ``h`` (both in σ)."""
    def update(self, x: float) -> Optional[dict[str, Any]]:
        """Adds one observation: the alarm (a dict) when a limit is crossed, else None."""
    def run(self, values: _Floats) -> list[int]:
        """Runs ``values`` (any float array-like; a contiguous float64 array
        is read in place, anything else converted), restarting after each
        alarm: the indices of the values that alarmed."""
    def reset(self) -> None:
        """Forgets everything seen."""
    @property
    def n(self) -> int:
        """Observations since the last reset."""

@final
class Ewma:
    """EWMA chart (``ratchet_drift::Ewma``)."""

    def __new__(
        cls,
        mu0: float = 0.0,
        sigma: float = 1.0,
        lam: float = 0.1,
        width: float = 2.7,
        steady_state: bool = False,
    ) -> Ewma:
        """An EWMA chart for ``mu0``, ``sigma``, smoothing ``lam`` and limit
        width ``width`` (``steady_state=True``: the limits of the published
        ARL tables)."""
    def update(self, x: float) -> Optional[dict[str, Any]]:
        """Adds one observation: the alarm (a dict) when a limit is crossed, else None."""
    def run(self, values: _Floats) -> list[int]:
        """Runs ``values`` (any float array-like), restarting after each
        alarm: the indices of the values that alarmed."""
    def reset(self) -> None:
        """Forgets everything seen."""
    @property
    def n(self) -> int:
        """Observations since the last reset."""

@final
class PageHinkley:
    """Page–Hinkley test (``ratchet_drift::PageHinkley``)."""

    def __new__(cls, delta: float = 0.5, lam: float = 50.0, sigma: float = 1.0) -> PageHinkley:
        """A Page–Hinkley test with tolerance ``delta`` and threshold ``lam``
        in σ units of ``sigma`` (the in-control sd), as ``ratchet watch
        --page-hinkley DELTA LAMBDA`` takes them, with its defaults;
        ``sigma=1.0``: the data's own units."""
    def update(self, x: float) -> Optional[dict[str, Any]]:
        """Adds one observation: the alarm (a dict) when a limit is crossed, else None."""
    def run(self, values: _Floats) -> list[int]:
        """Runs ``values`` (any float array-like), restarting after each
        alarm: the indices of the values that alarmed."""
    def reset(self) -> None:
        """Forgets everything seen."""
    @property
    def n(self) -> int:
        """Observations since the last reset."""

def cusum_arl(k: float, h: float, shift: float = 0.0) -> float:
    """Average run length of a two-sided CUSUM (Markov chain) for a mean
    shift of ``shift`` σ."""

def ewma_arl(lam: float, width: float, shift: float = 0.0) -> float:
    """Average run length of an EWMA chart (steady-state limits) for a mean
    shift of ``shift`` σ."""

@final
class Rubric:
    """A rubric (``ratchet_scorers::Rubric``): a judge's checklist, scored by arithmetic."""

    @staticmethod
    def from_toml(text: str) -> Rubric:
        """Parses a rubric's TOML text."""
    @property
    def name(self) -> str:
        """The rubric's name."""
    @property
    def version(self) -> str:
        """Its version (a content hash): what its scores are recorded under."""
    def score(self, observation: Any) -> float:
        """The score of an observation (a dict of item values)."""

def ingest_junit(store: Store, path: _Path, commit: str, session: str = "python") -> dict[str, Any]:
    """Ingests a JUnit XML file for ``commit``: test_runs, scores, already_ingested_at."""

def ingest(
    store: Store,
    format: str,
    paths: list[_Path],
    commit: Optional[str] = None,
    session: Optional[str] = None,
    suite: Optional[str] = None,
    label: str = "",
    direction: Optional[str] = None,
    repo: Optional[_Path] = None,
    allow_unknown_commit: bool = True,
) -> dict[str, Any]:
    """Ingests what a tool wrote, as ``ratchet ingest FORMAT PATH...``:
    ``format`` is one of ``junit``, ``criterion``, ``jsonl``, ``bmf``,
    ``hyperfine``, ``google-benchmark``, ``pytest-benchmark``, ``go-bench``,
    ``inspect``, ``lm-eval``, ``promptfoo``; ``paths`` are files or
    directories, stored in one transaction or not at all; ``commit`` is a
    revision or full id resolved as the CLI resolves it; ``suite`` renames
    JUnit suites to one; ``direction`` (``"higher"``/``"lower"``) is for
    metrics whose format gives none. Returns the ingestion report (files,
    test_runs, scores, scorers, notes, already_ingested_at)."""

def ingest_jsonl(
    store: Store, path: _Path, commit: Optional[str] = None, session: str = "python"
) -> dict[str, Any]:
    """Ingests a JSON Lines score file (lines may name their commit;
    ``commit`` is the default)."""
