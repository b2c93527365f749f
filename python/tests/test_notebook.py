"""Python as notebooks expect it (issue 23, item 5): tables pandas reads and a
person can read, revisions as the CLI takes them, any float array-like for
the detectors, docstrings in the stubs, record_score's holdout and
direction, the notebook extra, a verdict's effects in its HTML, and the
profile `pip install` builds with."""

import ast
import pathlib
import subprocess
import sys
import tomllib
from html import escape as html_escape

import numpy as np
import pandas as pd
import polars as pl
import pytest

import ratchet

PYTHON_DIR = pathlib.Path(__file__).resolve().parents[1]
ROOT = PYTHON_DIR.parent
BASE = "1" * 40
CAND = "2" * 40

POLICY = """
[class.tool]
scorer = "accuracy"
test = "bernoulli"
alpha = 0.05
beta = 0.05
gap = 0.2
max_n = 3000
"""

GUARDED = POLICY + """
[[class.tool.guardrail]]
scorer = "cost"
direction = "lower"
margin = 0.1
margin_kind = "absolute"
method = "sequence"
"""


def scored_store(path: pathlib.Path, base: str = BASE, cand: str = CAND) -> ratchet.Store:
    """400 tasks: the candidate passes 90 %, the baseline 50 %, both cost 1."""
    s = ratchet.Store.create(path)
    for i in range(400):
        s.record_score(base, f"t{i:04}", "accuracy", float(i % 2 == 0))
        s.record_score(cand, f"t{i:04}", "accuracy", float(i % 10 != 0))
        s.record_score(base, f"t{i:04}", "cost", 1.0)
        s.record_score(cand, f"t{i:04}", "cost", 1.0)
    return s


# --- tables -----------------------------------------------------------------


def test_pandas_reads_a_table_directly_and_through_to_pandas(tmp_path: pathlib.Path) -> None:
    s = ratchet.Store.create(tmp_path / "s")
    s.record_score(BASE, "t1", "accuracy", 0.75, cost=0.01)
    s.record_score(BASE, "t2", "accuracy", 0.25)
    direct = pd.DataFrame(s.scores())
    assert list(direct.columns) == s.scores().columns
    assert direct["value"].tolist() == [0.75, 0.25]
    df = s.scores().to_pandas()
    assert isinstance(df, pd.DataFrame) and len(df) == 2
    assert df["value"].dtype == np.float64 and df["holdout"].dtype == bool
    assert df["cost"].iloc[0] == 0.01 and np.isnan(df["cost"].iloc[1]), "missing is NaN"
    assert df["task"].tolist() == ["t1", "t2"]
    pdf = s.scores().to_polars()
    assert isinstance(pdf, pl.DataFrame) and pdf["value"].to_list() == [0.75, 0.25]
    assert s.scores().to_pyarrow().num_rows == 2


def test_to_pandas_needs_no_pyarrow(tmp_path: pathlib.Path) -> None:
    """A user with pandas alone (no pyarrow) still gets a DataFrame."""
    s = ratchet.Store.create(tmp_path / "s")
    s.record_score(BASE, "t1", "accuracy", 0.5)
    code = (
        "import sys; sys.modules['pyarrow'] = None\n"  # import pyarrow now raises
        "import ratchet\n"
        f"s = ratchet.Store.open({str(tmp_path / 's')!r})\n"
        "df = s.scores().to_pandas()\n"
        "assert df['value'].tolist() == [0.5], df\n"
        "print('ok')\n"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert run.returncode == 0 and "ok" in run.stdout, run.stderr


def test_an_empty_table_keeps_its_columns(tmp_path: pathlib.Path) -> None:
    t = ratchet.Store.create(tmp_path / "s").scores()
    assert len(t) == 0 and t.num_rows == 0
    assert list(t.to_pandas().columns) == t.columns
    assert t.to_polars().columns == t.columns
    assert "0 rows × 9 columns" in repr(t)


def test_a_table_prints_its_size_columns_and_first_rows(demo_store: pathlib.Path) -> None:
    t = ratchet.Store.open(demo_store).scores()
    text = repr(t)
    lines = text.splitlines()
    assert lines[0] == f"ratchet.Table: {t.num_rows} rows × 9 columns"
    assert "arro3" not in text and type(t).__name__ == "Table"
    for name in t.columns:
        assert name in lines[1]
    assert lines[2].split() == ["u64", "str", "str", "str", "str", "f64", "f64", "f64", "bool"]
    first = t.to_pandas().iloc[0]
    assert lines[3].split()[0] == str(first["seq"])
    assert lines[3].split()[1].startswith(first["commit"][:8]), "commit ids are cut, not dropped"
    assert lines[-1] == f"… {t.num_rows - 5} more rows"
    html = t._repr_html_()
    assert html.count("<tr>") == 1 + 10 and f"{t.num_rows} rows" in html


def test_a_column_is_numpy_and_a_wrong_name_lists_the_columns(tmp_path: pathlib.Path) -> None:
    s = ratchet.Store.create(tmp_path / "s")
    s.record_score(BASE, "t1", "accuracy", 0.5)
    v = s.scores().column("value")
    assert isinstance(v, np.ndarray) and v.dtype == np.float64 and v.tolist() == [0.5]
    with pytest.raises(KeyError, match="scorer_version"):
        s.scores().column("vaule")


def test_to_polars_without_polars_says_how_to_install_it(tmp_path: pathlib.Path) -> None:
    code = (
        "import sys; sys.modules['polars'] = None\n"
        "import ratchet\n"
        f"t = ratchet.Store.create({str(tmp_path / 's')!r}).scores()\n"
        "try:\n    t.to_polars()\nexcept ImportError as e:\n    print(e)\n"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert "pip install polars" in run.stdout, run.stderr


# --- revisions --------------------------------------------------------------


def git(repo: pathlib.Path, *args: str) -> str:
    """Test setup only: the library never runs git."""
    return subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid", *args],
        cwd=repo,
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()


@pytest.fixture
def repo(tmp_path: pathlib.Path) -> pathlib.Path:
    r = tmp_path / "repo"
    r.mkdir()
    git(r, "init", "-q", "-b", "main")
    for n in ("one", "two"):
        (r / "f").write_text(n)
        git(r, "add", "f")
        git(r, "commit", "-q", "-m", n)
    return r


def test_decide_takes_the_revisions_the_cli_takes(
    repo: pathlib.Path, tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    base, cand = git(repo, "rev-parse", "HEAD~1"), git(repo, "rev-parse", "HEAD")
    s = scored_store(tmp_path / "s", base, cand)
    policy = ratchet.Policy.from_toml(POLICY)
    v = ratchet.decide(s, "main~1", "main", "tool", policy=policy, record=False, repo=repo)
    assert (v.baseline, v.candidate) == (base, cand) and v.status == "promote"
    short = ratchet.decide(s, base[:7], "HEAD", "tool", policy=policy, record=False, repo=repo)
    assert short.to_json() == v.to_json()
    # Without `repo`: the repository of the current directory, as the CLI.
    monkeypatch.chdir(repo)
    assert ratchet.decide(s, "HEAD~1", "HEAD", "tool", policy=policy, record=False).baseline == base
    with pytest.raises(ratchet.InvalidInputError, match="HEAD~7"):
        ratchet.decide(s, "HEAD~7", "HEAD", "tool", policy=policy, record=False)


def test_full_ids_measured_elsewhere_are_accepted_unless_refused(
    repo: pathlib.Path, tmp_path: pathlib.Path
) -> None:
    s = scored_store(tmp_path / "s")
    policy = ratchet.Policy.from_toml(POLICY)
    v = ratchet.decide(s, BASE, CAND, "tool", policy=policy, record=False, repo=repo)
    assert v.baseline == BASE
    with pytest.raises(ratchet.InvalidInputError, match="allow-unknown-commit"):
        ratchet.decide(
            s, BASE, CAND, "tool", policy=policy, record=False, repo=repo, allow_unknown_commit=False
        )
    outside = tmp_path / "no-git"
    outside.mkdir()
    with pytest.raises(ratchet.InvalidInputError, match="no git repository"):
        ratchet.decide(s, "main", CAND, "tool", policy=policy, record=False, repo=outside)


# --- detectors take any float array-like --------------------------------------


@pytest.mark.parametrize("det", [ratchet.Cusum, ratchet.Ewma, ratchet.PageHinkley])
def test_detectors_take_any_float_array_like(det: type) -> None:
    rng = np.random.default_rng(7)
    xs = rng.normal(0.0, 1.0, 4000)
    xs[2500:] += 1.5
    want = det().run(xs)
    assert want, "the shift is found"
    f32 = xs.astype(np.float32)
    assert det().run(f32) == det().run(f32.astype(np.float64))
    assert det().run(xs.tolist()) == want
    assert det().run(pl.Series(xs)) == want
    assert det().run(pd.Series(xs)) == want
    strided = np.repeat(xs, 2)[::2]
    assert not strided.flags.c_contiguous and det().run(strided) == want
    assert det().run(tuple(int(x > 0) for x in xs)) == det().run((xs > 0).astype(np.float64))


def test_what_is_not_an_array_of_numbers_is_named() -> None:
    with pytest.raises(ratchet.InvalidInputError, match="values: not an array of numbers"):
        ratchet.Cusum().run(["a", "b"])
    with pytest.raises(ratchet.InvalidInputError, match=r"shape \(2, 2\)"):
        ratchet.Cusum().run(np.zeros((2, 2)))
    with pytest.raises(ratchet.InvalidInputError, match="one-dimensional"):
        ratchet.Cusum().run(1.0)
    with pytest.raises(ratchet.InvalidInputError, match="value 1"):
        ratchet.Cusum().run([0.0, float("nan")])


def test_welch_takes_array_likes_too() -> None:
    rng = np.random.default_rng(3)
    b, c = rng.normal(10, 2, 50), rng.normal(10, 2, 60)
    want = ratchet.welch_non_inferiority(b, c, 0.5)
    assert ratchet.welch_non_inferiority(b.tolist(), pl.Series(c), 0.5) == want


# --- stubs ------------------------------------------------------------------


def test_every_public_name_of_the_stub_has_a_docstring() -> None:
    tree = ast.parse((PYTHON_DIR / "python" / "ratchet" / "_native.pyi").read_text())
    missing = []

    def walk(body: list[ast.stmt], prefix: str) -> None:
        for node in body:
            if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
                name = prefix + node.name
                public = not node.name.startswith("_") or node.name in (
                    "__new__",
                    "__arrow_c_stream__",
                    "__iter__",
                    "__len__",
                    "_repr_html_",
                )
                if public and ast.get_docstring(node) is None:
                    missing.append(name)
                if isinstance(node, ast.ClassDef):
                    walk(node.body, name + ".")

    walk(tree.body, "")
    assert missing == []
    documented = {n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
    assert set(ratchet._native.__all__) - {"__version__"} <= documented


# --- record_score: holdout and direction ------------------------------------------


def test_record_score_takes_holdout_and_direction(tmp_path: pathlib.Path) -> None:
    s = ratchet.Store.create(tmp_path / "s")
    s.record_score(BASE, "t1", "tokens", 120.0, direction="lower")
    s.record_score(BASE, "t1", "secret", 1.0, holdout=True)
    s.record_score(BASE, "t2", "tokens", 100.0, direction="lower")  # the same: accepted
    rows = s.scores().to_pandas().set_index(["scorer", "task"])
    assert bool(rows.loc[("secret", "t1"), "holdout"]) is True
    assert bool(rows.loc[("tokens", "t1"), "holdout"]) is False
    events = s.events().to_pandas()
    declared = events[events["kind"] == "scorer"]["payload"].tolist()
    assert any('"tokens"' in p and "lower" in p for p in declared), declared
    size = s.size
    with pytest.raises(ratchet.InvalidInputError, match="tokens"):
        s.record_score(BASE, "t3", "tokens", 90.0, direction="higher")
    with pytest.raises(ratchet.InvalidInputError, match='expected "higher"'):
        s.record_score(BASE, "t3", "tokens", 90.0, direction="down")
    assert s.size == size, "nothing stored by the refused calls"


# --- the notebook extra ----------------------------------------------------------


def test_the_notebook_extra_installs_what_the_example_imports() -> None:
    project = tomllib.loads((PYTHON_DIR / "pyproject.toml").read_text())["project"]
    extra = {d.split("[")[0].split(">")[0].split("=")[0].strip() for d in project["optional-dependencies"]["notebook"]}
    core = {d.split(">")[0].split("=")[0].strip() for d in project["dependencies"]}
    tree = ast.parse((PYTHON_DIR / "examples" / "notebook.py").read_text())
    imported = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imported |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            imported.add(node.module.split(".")[0])
    third_party = imported - set(sys.stdlib_module_names) - {"ratchet"}
    assert "matplotlib" in third_party
    assert third_party <= extra | core, third_party - extra - core
    assert {"pandas", "polars"} <= extra, "the tables' two conversions"


# --- the verdict's HTML -------------------------------------------------------


def test_a_verdict_shows_effect_interval_and_n_per_stage(tmp_path: pathlib.Path) -> None:
    s = scored_store(tmp_path / "s")
    v = ratchet.decide(s, BASE, CAND, "tool", policy=ratchet.Policy.from_toml(GUARDED), record=False)
    d = v.to_dict()
    by_name = {st.name: st for st in v.stages}
    assert list(by_name) == [
        "trace verification",
        "required tests",
        "invariants",
        "sequential test",
        "guardrail cost",
    ]
    seq = by_name["sequential test"]
    effect = d["stages"][3]["details"]["effect"]
    assert (seq.estimate, seq.ci_low, seq.ci_high, seq.n) == (
        effect["estimate"],
        effect["ci_low"],
        effect["ci_high"],
        effect["n"],
    )
    assert seq.n_of == "pairs" and seq.ci_low < seq.estimate < seq.ci_high
    assert seq.measure and "pass-rate" in seq.measure
    guard = by_name["guardrail cost"]
    result = d["stages"][4]["details"]["result"]
    assert (guard.estimate, guard.ci_high, guard.n) == (result["excess"], result["upper_bound"], result["n"])
    assert guard.ci_low is None, "one-sided"
    assert by_name["trace verification"].n == s.size
    html = v._repr_html_()
    assert "PROMOTE" in html
    assert seq.estimate_text and seq.interval_text and guard.interval_text
    assert guard.interval_text.startswith("[−∞, ")
    for text in (
        seq.estimate_text,
        seq.interval_text,
        f"{seq.n} pairs",
        guard.interval_text,
        f"{guard.n} pairs",
        f"{s.size} events",
    ):
        assert text in html, text
    assert "estimate=" in repr(seq) and "n=" in repr(seq)


TIMED = """
[class.perf]
scorer = "latency_s"
direction = "lower"
test = "gaussian"
alpha = 0.05
beta = 0.1
gap = 0.00001
max_n = 500
"""


def test_a_faster_timing_reads_as_a_negative_difference_in_microseconds(
    tmp_path: pathlib.Path,
) -> None:
    """Issue 39: a lower-is-better timing ~40 µs faster is shown as
    candidate − baseline (negative, an improvement) with its significant
    digits in µs; the recorded verdict keeps the gate's judged scale."""
    import math

    s = ratchet.Store.create(tmp_path / "s")
    for t in range(60):
        base = 1e-3 + 2e-5 * ((t * 7 % 13) / 13)
        s.record_score(BASE, f"t{t:03}", "latency_s", base, direction="lower")
        s.record_score(
            CAND, f"t{t:03}", "latency_s", base - 4.07e-5 + 3e-6 * math.sin(t * 1.3), direction="lower"
        )
    v = ratchet.decide(s, BASE, CAND, "perf", policy=ratchet.Policy.from_toml(TIMED), record=False)
    assert v.status == "promote", v.reason
    seq = {st.name: st for st in v.stages}["sequential test"]
    assert seq.measure == "candidate − baseline (lower is better)"
    assert seq.unit == "s"
    assert seq.estimate is not None and -4.2e-5 < seq.estimate < -3.9e-5
    assert seq.ci_low is not None and seq.ci_high is not None
    assert seq.ci_low <= seq.estimate <= seq.ci_high
    assert seq.estimate_text and seq.estimate_text.startswith("-40.") and seq.estimate_text.endswith(" µs")
    assert seq.effect_shown and seq.effect_shown.endswith("(an improvement: lower is better)")
    assert "µs" in seq.shown and "0.0000" not in seq.shown
    # The recorded verdict: negated times, a positive (better) estimate.
    recorded = v.to_dict()["stages"][-1]["details"]["effect"]["estimate"]
    assert math.isclose(recorded, -seq.estimate)
    # Read back from its JSON alone, without the policy or trace that name
    # the direction: shown on the gate's judged scale, and labelled so.
    again = {st.name: st for st in ratchet.Verdict.from_json(v.to_json()).stages}["sequential test"]
    assert again.effect_shown and "judged scale" in again.effect_shown
    assert again.estimate_text == "+" + seq.estimate_text[1:]
    html = v._repr_html_()
    assert seq.estimate_text in html and "0.0000" not in html
    # The promote's own bound, on the improvement (positive: faster), said
    # before the two-sided interval and as candidate − baseline too.
    recorded_bound = v.to_dict()["stages"][-1]["details"]["effect"]["bound"]
    assert seq.bound_side == "lower" and seq.bound_level == 0.05
    assert seq.bound is not None and 0 < seq.bound < -seq.estimate
    assert math.isclose(seq.bound, recorded_bound["value"])
    assert seq.bound_text and seq.bound_text.startswith("promoted: improvement ≥ +")
    assert "i.e. candidate − baseline ≤ -" in seq.bound_text
    assert seq.effect_shown.startswith(seq.bound_text + "; two-sided 95 % interval [")
    assert f"<td>{html_escape(seq.bound_text)}</td>" in html, "the bound's own column"


def test_a_reject_carries_its_upper_bound_below_the_gap(tmp_path: pathlib.Path) -> None:
    """Issue 40, item 5: a reject reads as the upper bound at β that put the
    candidate below the design gap."""
    s = ratchet.Store.create(tmp_path / "s")
    for t in range(300):
        s.record_score(BASE, f"t{t:03}", "accuracy", float(t % 3 == 0))
        s.record_score(CAND, f"t{t:03}", "accuracy", float((t + 1) % 3 == 0))
    policy = ratchet.Policy.from_toml(
        '[class.q]\nscorer = "accuracy"\ntest = "betting"\nalpha = 0.05\nbeta = 0.1\ngap = 0.2\nmax_n = 2000\n'
    )
    v = ratchet.decide(s, BASE, CAND, "q", policy=policy, record=False)
    assert v.status == "reject", v.reason
    seq = {st.name: st for st in v.stages}["sequential test"]
    assert seq.bound_side == "upper" and seq.bound_level == 0.1
    assert seq.bound is not None and seq.bound < 0.2
    assert seq.bound_text and ", below the gap +0.2 (one-sided, β = 0.1, always valid)" in seq.bound_text


def test_a_continue_says_why(tmp_path: pathlib.Path) -> None:
    s = ratchet.Store.create(tmp_path / "s")
    for i in range(4):
        s.record_score(BASE, f"t{i}", "accuracy", 1.0)
        s.record_score(CAND, f"t{i}", "accuracy", 1.0)
    v = ratchet.decide(s, BASE, CAND, "tool", policy=ratchet.Policy.from_toml(POLICY), record=False)
    assert v.status == "continue" and v.reason
    assert v.reason in v._repr_html_().replace("&#x27;", "'").replace("&quot;", '"')


# --- the build profile -----------------------------------------------------------


def test_pip_install_builds_with_the_python_profile() -> None:
    maturin = tomllib.loads((PYTHON_DIR / "pyproject.toml").read_text())["tool"]["maturin"]
    profiles = tomllib.loads((ROOT / "Cargo.toml").read_text())["profile"]
    assert maturin["profile"] == "python"
    p = profiles["python"]
    assert p["inherits"] == "release" and p["opt-level"] in (1, 2)
    assert p.get("lto", False) is False and p.get("debug", False) is False
    assert p["package"]["*"]["opt-level"] in (1, 2)
