"""ratchet from Python: the same Rust code as the ``ratchet`` CLI.

Open a trace store, read it as tables (``store.scores().to_pandas()``,
``polars.DataFrame(store.scores())``, ``pyarrow.table(...)``), run the gate
and its calibration, run drift detectors on any float array-like, score
rubrics, ingest JUnit and JSON Lines. No statistics are re-implemented
here: every call goes to the library the CLI uses. ``ratchet.Client``
talks to a ``ratchet serve`` instead, with a capability token (pure
Python: ``ratchet.client``).

>>> import ratchet
>>> store = ratchet.Store.open(".ratchet")          # doctest: +SKIP
>>> scores = store.scores().to_pandas()             # doctest: +SKIP
"""

from ratchet import _native
from ratchet._native import *  # noqa: F403 — the names, and their types, are the stub's
from ratchet._native import StageReport, Verdict
from ratchet.client import Client, ServerError


def _stage_row(s: StageReport) -> str:
    import html

    result = {True: "passed", False: "failed"}.get(s.passed, "open")  # type: ignore[arg-type]
    # The figures as the gate's own formatter shows them (significant
    # digits, the scorer's unit), never re-formatted here.
    interval = html.escape(s.interval_text or "")
    if interval and s.interval:
        interval += f" <small>({html.escape(s.interval)})</small>"
    effect = html.escape(s.estimate_text or "")
    if s.measure and effect:
        effect = f'<span title="{html.escape(s.effect_shown or s.measure)}">{effect}</span>'
    n = "" if s.n is None else f"{s.n} {html.escape(s.n_of or '')}"
    # The decided test's own one-sided bound, in its own column: the
    # two-sided interval alone reads "maybe worse" beside most promotes.
    bound = html.escape(s.bound_text or "")
    return (
        f"<tr><td>{html.escape(s.name)}</td><td>{result}</td><td>{effect}</td>"
        f"<td>{bound}</td><td>{interval}</td><td>{n}</td></tr>"
    )


def _verdict_repr_html(self: Verdict) -> str:
    """A verdict as an HTML table, for notebooks: per stage its result, effect
    estimate (hover for what it measures), the one-sided bound that matches
    the decision, the two-sided 95 % interval and N."""
    import html

    rows = "".join(_stage_row(s) for s in self.stages)
    reason = f"<p>{html.escape(self.reason)}</p>" if self.reason else ""
    return (
        f"<p><b>{html.escape(self.status.headline)}</b> — class {html.escape(self.class_name)}: "
        f"candidate <code>{html.escape(self.candidate[:8])}</code> against baseline "
        f"<code>{html.escape(self.baseline[:8])}</code></p>{reason}"
        "<table><tr><th>stage</th><th>result</th><th>effect</th><th>the decision's bound</th>"
        "<th>two-sided 95 % interval</th>"
        f"<th>N</th></tr>{rows}</table>"
    )


Verdict._repr_html_ = _verdict_repr_html  # type: ignore[attr-defined]

__all__ = [*_native.__all__, "Client", "ServerError"]
