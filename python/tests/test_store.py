"""The store from Python: open, append, score, verify, tables, errors."""

import json
import pathlib
import subprocess

import numpy as np
import pandas as pd
import polars as pl
import pyarrow as pa
import pytest

import ratchet
from conftest import ratchet_binary

C1 = "a" * 40
C2 = "b" * 40


def test_a_new_store_takes_events_and_scores_and_verifies(tmp_path: pathlib.Path) -> None:
    s = ratchet.Store.create(tmp_path / "s")
    assert s.size == 0
    seq = s.append("note", {"msg": "hello", "n": [1, 2]}, session="nb", commit=C1)
    assert seq == 1
    s.record_score(C1, "t1", "accuracy", 0.75, cost=0.01)
    s.record_score(C1, "t2", "accuracy", 0.25)
    report = s.verify()
    assert report["valid"] and report["fault"] is None
    cp = s.checkpoint()
    assert cp["origin"] == s.id and cp["size"] == s.size
    events = pl.DataFrame(s.events())
    assert events["kind"].to_list()[0] == "note"
    assert json.loads(events["payload"][0]) == {"msg": "hello", "n": [1, 2]}
    stats = pl.DataFrame(s.commit_stats("accuracy"))
    assert stats["mean"].to_list() == [0.5] and stats["n"].to_list() == [2]


def test_tables_are_arrow_for_polars_pyarrow_and_pandas(demo_store: pathlib.Path) -> None:
    s = ratchet.Store.open(demo_store)
    t = pa.table(s.scores())
    assert t.num_rows > 1000
    assert t.schema.field("value").type == pa.float64()
    df = pl.DataFrame(s.scores())
    assert df.shape[0] == t.num_rows
    pdf = t.to_pandas()
    assert isinstance(pdf, pd.DataFrame) and len(pdf) == t.num_rows


def test_scores_equal_what_the_cli_exports(demo_store: pathlib.Path, tmp_path: pathlib.Path) -> None:
    out = tmp_path / "parquet"
    subprocess.run(
        [str(ratchet_binary()), "--store", str(demo_store), "export", "--parquet", str(out)],
        check=True,
        capture_output=True,
    )
    exported = pl.read_parquet(str(out / "scores" / "**" / "*.parquet")).sort("seq")
    store = ratchet.Store.open(demo_store)
    ours = pl.DataFrame(store.scores()).sort("seq")
    assert ours.height == exported.height
    # Every column, nulls included, in the notebook table's own types.
    for col in ours.columns:
        assert exported[col].cast(ours[col].dtype).to_list() == ours[col].to_list(), col
    # pyarrow reads the same files; the events hold every event the store has.
    import pyarrow.dataset as ds

    scores = ds.dataset(str(out / "scores"), format="parquet").to_table()
    assert scores.num_rows == ours.height
    assert scores.schema.field("latency_ms").type == pa.float64()
    events = ds.dataset(str(out / "events"), format="parquet").to_table().sort_by("seq")
    listed = pa.table(store.events())
    assert events.num_rows == listed.num_rows
    assert events.column("hash").to_pylist() == listed.column("hash").to_pylist()


def test_errors_are_typed_and_say_what_is_wrong(tmp_path: pathlib.Path) -> None:
    with pytest.raises(ratchet.NotFoundError, match="no ratchet store"):
        ratchet.Store.open(tmp_path / "missing")
    s = ratchet.Store.create(tmp_path / "s")
    with pytest.raises(ratchet.InvalidInputError, match="commit"):
        s.record_score("abc", "t", "x", 1.0)
    with pytest.raises(ratchet.InvalidInputError):
        s.append("decision", {"forged": True})
    with pytest.raises(ratchet.InvalidInputError):
        s.record_score(C1, "t", "x", float("nan"))
    assert issubclass(ratchet.TamperedError, ratchet.RatchetError)
    assert issubclass(ratchet.RatchetError, Exception)
    assert s.size == 0, "nothing stored by the refused calls"


def test_a_tampered_store_is_named(demo_store: pathlib.Path, tmp_path: pathlib.Path) -> None:
    copy = demo_store.parent.parent / "tampered-copy"
    s = ratchet.Store.open(copy)
    report = s.verify()
    assert not report["valid"] and "seq" in report["fault"]
    with pytest.raises(ratchet.TamperedError):
        s.verify(raise_on_fault=True)


def test_merge_cell(tmp_path: pathlib.Path) -> None:
    home = ratchet.Store.create(tmp_path / "home")
    cell = ratchet.Store.create(tmp_path / "cell")
    cell.record_score(C2, "t", "acc", 1.0)
    r = home.merge_cell(tmp_path / "cell")
    assert r["ingested"] == cell.size  # the score and its scorer's declaration
    assert home.verify()["valid"]
    assert np.isclose(pl.DataFrame(home.scores())["value"].sum(), 1.0)
