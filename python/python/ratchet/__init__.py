"""ratchet from Python: the same Rust code as the ``ratchet`` CLI.

Open a trace store, read it as Arrow tables (``polars.DataFrame(store.scores())``,
``pyarrow.table(...)``, pandas through pyarrow), run the gate and its
calibration, run drift detectors on NumPy arrays, score rubrics, ingest
JUnit and JSON Lines. No statistics are re-implemented here: every call
goes to the library the CLI uses.

>>> import ratchet
>>> store = ratchet.Store.open(".ratchet")          # doctest: +SKIP
>>> scores = polars.DataFrame(store.scores())       # doctest: +SKIP
"""

from ratchet import _native
from ratchet._native import *  # noqa: F403 — the names, and their types, are the stub's
from ratchet._native import Verdict


def _verdict_repr_html(self: Verdict) -> str:
    """A verdict as an HTML table, for notebooks."""
    import html

    d = self.to_dict()
    rows = []
    for stage in d.get("stages", []):
        name = stage["stage"] if isinstance(stage["stage"], str) else " ".join(
            f"{k} {v}" for k, v in stage["stage"].items()
        )
        passed = {True: "passed", False: "failed"}.get(stage.get("passed"), "not decided")
        rows.append(f"<tr><td>{html.escape(name)}</td><td>{passed}</td></tr>")
    return (
        f"<p><b>{html.escape(self.status.upper())}</b> — class {html.escape(self.class_name)}: "
        f"candidate <code>{html.escape(self.candidate[:8])}</code> against baseline "
        f"<code>{html.escape(self.baseline[:8])}</code></p>"
        f"<table><tr><th>stage</th><th>result</th></tr>{''.join(rows)}</table>"
    )


Verdict._repr_html_ = _verdict_repr_html  # type: ignore[attr-defined]

__all__ = list(_native.__all__)
