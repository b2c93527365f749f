"""The gate, calibration, rubrics, ingestion, non-inferiority parity with SciPy."""

import pathlib

import numpy as np
import polars as pl
import pytest
from scipy import stats

import ratchet

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


def test_decide_gives_a_typed_verdict_that_is_recorded(tmp_path: pathlib.Path) -> None:
    s = ratchet.Store.create(tmp_path / "s")
    for i in range(400):
        s.record_score(BASE, f"t{i:04}", "accuracy", float(i % 2 == 0))
        s.record_score(CAND, f"t{i:04}", "accuracy", float(i % 10 != 0))
    policy = ratchet.Policy.from_toml(POLICY)
    dry = ratchet.decide(s, BASE, CAND, "tool", policy=policy, record=False)
    assert dry.status == "promote" and dry.decision_seq is None
    v = ratchet.decide(s, BASE, CAND, "tool", policy=policy)
    assert v.status == "promote" and v.exit_code == 0
    assert v.decision_seq == s.size
    d = v.to_dict()
    assert d["candidate"] == CAND and d["outcome"]["verdict"] == "promote"
    assert "PROMOTE" in v._repr_html_()
    assert v.to_json() == dry.to_json(), "recomputed at the same head: the same verdict"
    back = ratchet.Verdict.from_json(v.to_json())
    assert back.to_json() == v.to_json() and back.candidate == CAND
    assert [st.name for st in back.stages] == [st.name for st in v.stages]
    with pytest.raises(ratchet.InvalidInputError, match="not a verdict"):
        ratchet.Verdict.from_json(v.to_json().replace('"candidate":"' + CAND, '"candidate":"abc'))


def test_a_refusal_reads_as_cannot_decide_in_python_in_json_and_in_words_alike(
    tmp_path: pathlib.Path,
) -> None:
    """One verdict, one reading (issue 39 item 5): a class whose required
    suite never ran refuses; Python's status, `ratchet gate`'s words, its
    `--json` and its exit code are the one `GateStatus`'s."""
    import json
    import subprocess

    from conftest import ratchet_binary

    s = ratchet.Store.create(tmp_path / "s")
    for i in range(50):
        s.record_score(BASE, f"t{i:04}", "accuracy", float(i % 2 == 0))
        s.record_score(CAND, f"t{i:04}", "accuracy", float(i % 10 != 0))
    policy_file = tmp_path / "policy.toml"
    policy_file.write_text(POLICY + 'required_suites = ["unit"]\n')
    v = ratchet.decide(s, BASE, CAND, "tool", policy=ratchet.Policy.from_path(policy_file), record=False)
    assert isinstance(v.status, ratchet.GateStatus)
    assert v.status == "missing_evidence" and v.status.name == "missing_evidence"
    assert v.status.words == "cannot decide (evidence missing)"
    assert v.status.headline == "CANNOT DECIDE (evidence missing)"
    assert v.exit_code == v.status.exit_code == 4
    assert v.to_dict()["outcome"]["cause"] == "missing_evidence", "recorded as the gate records it"
    assert "CANNOT DECIDE (evidence missing)" in v._repr_html_()
    assert {v.status: 1}["missing_evidence"] == 1, "hashes as its name"

    def gate(*extra: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(ratchet_binary()), "--store", str(tmp_path / "s"), *extra, "gate", "--baseline", BASE,
             "--candidate", CAND, "--class", "tool", "--policy", str(policy_file), "--dry-run",
             "--allow-unknown-commit"],
            capture_output=True, text=True, check=False,
        )

    words = gate()
    assert words.returncode == v.exit_code, words.stderr
    assert words.stdout.startswith(v.status.headline), words.stdout
    doc = gate("--json")
    assert doc.returncode == v.exit_code, doc.stderr
    answer = json.loads(doc.stdout)
    assert (answer["status"], answer["words"], answer["exit_code"]) == (
        v.status.name, v.status.words, v.exit_code
    ), answer


def test_a_pinned_class_decides_under_its_pin_and_refuses_another(tmp_path: pathlib.Path) -> None:
    s = ratchet.Store.create(tmp_path / "s")
    for i in range(400):
        s.record_score(BASE, f"t{i:04}", "accuracy", float(i % 10 != 0))
        s.record_score(CAND, f"t{i:04}", "accuracy", float(i % 2 == 0))
    policy = ratchet.Policy.from_toml(POLICY)
    seq = ratchet.pin_policy(s, policy, "tool")
    assert ratchet.pin_policy(s, policy, "tool") == seq, "the same pin appends nothing"
    # The file beside the store says lower is better: refused, not used.
    (tmp_path / "s" / "policy.toml").write_text(POLICY + 'direction = "lower"\n')
    with pytest.raises(ratchet.InvalidInputError, match="direction"):
        ratchet.decide(s, BASE, CAND, "tool", record=False)
    (tmp_path / "s" / "policy.toml").unlink()
    v = ratchet.decide(s, BASE, CAND, "tool", record=False)
    assert v.status == "reject"


def test_a_bad_policy_is_an_invalid_input_naming_the_field() -> None:
    with pytest.raises(ratchet.InvalidInputError, match="alpha"):
        ratchet.Policy.from_toml(POLICY.replace("alpha = 0.05", "alpha = 1.5"))


def test_calibrate_is_a_table_of_the_operating_characteristic() -> None:
    policy = ratchet.Policy.from_toml(POLICY)
    oc = pl.DataFrame(ratchet.calibrate(policy, "tool", p0=0.5))
    at_null = oc.filter(pl.col("effect") == 0.5)
    assert at_null.height == 1
    assert at_null["p_promote"][0] <= 0.05 + 1e-9
    assert (oc["p_promote"].diff().drop_nulls() >= -1e-12).all(), "P(promote) rises with the effect"


def test_calibrate_gives_p_truncated_as_the_cli_does(tmp_path: pathlib.Path) -> None:
    import json
    import subprocess

    from conftest import ratchet_binary

    # A max_n too small for the gap: the test often stops undecided.
    tight = POLICY.replace("max_n = 3000", "max_n = 40")
    (tmp_path / "policy.toml").write_text(tight)
    oc = pl.DataFrame(ratchet.calibrate(ratchet.Policy.from_toml(tight), "tool", p0=0.5, runs=400))
    assert ((oc["p_truncated"] >= 0) & (oc["p_promote"] + oc["p_truncated"] <= 1 + 1e-9)).all()
    assert oc["p_truncated"].max() > 0, "max_n = 40 truncates"
    cli = subprocess.run(
        [str(ratchet_binary()), "--json", "calibrate", "--policy", str(tmp_path / "policy.toml"),
         "--class", "tool", "--p0", "0.5", "--runs", "400"],
        capture_output=True, text=True, check=True,
    )
    doc = json.loads(cli.stdout)
    rows = doc["rows"] if isinstance(doc, dict) else doc
    # The same simulation (same seed, runs): the same figures.
    assert [r["p_truncated"] for r in rows] == oc["p_truncated"].to_list()


def test_rubric_scores_are_arithmetic_over_the_checklist() -> None:
    r = ratchet.Rubric.from_toml(
        'name = "answer"\n[[item]]\nid = "correct"\ntype = "boolean"\nweight = 3.0\n'
        '[[item]]\nid = "concise"\ntype = "boolean"\nweight = 1.0\n'
    )
    assert r.score({"correct": True, "concise": False}) == pytest.approx(0.75)
    assert len(r.version) == 64
    with pytest.raises(ratchet.InvalidInputError):
        r.score({"correct": "yes"})


def test_ingest_junit_and_jsonl(tmp_path: pathlib.Path) -> None:
    s = ratchet.Store.create(tmp_path / "s")
    junit = tmp_path / "junit.xml"
    junit.write_text(
        '<testsuite name="unit" tests="2" failures="1"><testcase name="a"/>'
        '<testcase name="b"><failure message="x"/></testcase></testsuite>'
    )
    r = ratchet.ingest_junit(s, junit, CAND)
    assert r["test_runs"] == 1
    again = ratchet.ingest_junit(s, junit, CAND)
    assert again["already_ingested_at"] is not None, "the same report counts once"
    jsonl = tmp_path / "s.jsonl"
    jsonl.write_text('{"task": "t1", "scorer": "acc", "value": 0.5}\n')
    assert ratchet.ingest_jsonl(s, jsonl, CAND)["scores"] == 1
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"task": "t1", "scorer": "acc", "value": 0.5, "holdot": true}\n')
    with pytest.raises(ratchet.InvalidInputError, match="holdot"):
        ratchet.ingest_jsonl(s, bad, CAND)


@pytest.mark.parametrize("seed", range(5))
def test_welch_non_inferiority_p_values_match_scipy(seed: int) -> None:
    rng = np.random.default_rng(seed)
    base = rng.normal(10.0, 2.0, size=rng.integers(20, 200))
    cand = rng.normal(10.3, 3.0, size=rng.integers(20, 200))
    margin = 0.5
    ours = ratchet.welch_non_inferiority(base, cand, margin, lower_is_better=True)
    # H0: cand − base ≥ margin (inferior) against H1: cand − base < margin.
    ref = stats.ttest_ind(cand - margin, base, equal_var=False, alternative="less")
    assert ours["p_value"] == pytest.approx(ref.pvalue, rel=1e-9, abs=1e-12)
    assert ours["df"] == pytest.approx(ref.df, rel=1e-9)


REAL = pathlib.Path(__file__).resolve().parents[2] / "crates/scorers/tests/fixtures/real"


def test_ingest_takes_the_cli_s_format_names_and_directories(tmp_path: pathlib.Path) -> None:
    s = ratchet.Store.create(str(tmp_path / "s"))
    r = ratchet.ingest(s, "junit", [REAL / "junit-surefire-dir"], commit=CAND, suite="unit")
    assert (r["test_runs"], r["scores"], len(r["files"])) == (1, 1, 3)
    r = ratchet.ingest(s, "hyperfine", [REAL / "hyperfine/1brc-two-commands-3-runs.json"], commit=CAND)
    assert r["scorers"][0]["scorer"] == "hyperfine_s"
    assert r["scorers"][0]["direction"] == "lower_is_better"
    again = ratchet.ingest(s, "junit", [REAL / "junit-surefire-dir"], commit=CAND, suite="unit")
    assert again["already_ingested_at"] is not None
    with pytest.raises(ratchet.RatchetError, match="google-benchmark"):
        ratchet.ingest(s, "junitt", [REAL / "junit-gradle"], commit=CAND)
