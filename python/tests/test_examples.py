"""The notebook example runs end to end on the demo's store."""

import pathlib
import subprocess
import sys

EXAMPLE = pathlib.Path(__file__).resolve().parents[1] / "examples" / "notebook.py"


def test_the_notebook_runs_on_the_demo_store(demo_store: pathlib.Path, tmp_path: pathlib.Path) -> None:
    # An output directory that does not exist yet is made, not an error.
    out = tmp_path / "figures" / "new"
    run = subprocess.run(
        [sys.executable, str(EXAMPLE), str(demo_store), str(out)],
        capture_output=True,
        text=True,
    )
    assert run.returncode == 0, run.stderr
    assert "notebook done" in run.stdout
    for png in ("ladder.png", "cusum.png"):
        data = (out / png).read_bytes()
        assert data.startswith(b"\x89PNG") and len(data) > 5000, png


ROOT = pathlib.Path(__file__).resolve().parents[2]


def _imports(code: str) -> set[str]:
    import ast

    names: set[str] = set()
    for node in ast.walk(ast.parse(code)):
        if isinstance(node, ast.Import):
            names.update(a.name.split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module.split(".")[0])
    return names


def test_the_distribution_is_ratchet_gate_not_pypis_unrelated_ratchet() -> None:
    """`ratchet` on PyPI is another project (issue 39 item 13): ours is
    installed as `ratchet-gate`, imported as `ratchet`."""
    import importlib.metadata

    import ratchet

    assert importlib.metadata.version("ratchet-gate") == ratchet.__version__
    assert importlib.metadata.packages_distributions()["ratchet"] == ["ratchet-gate"]


def test_what_the_readme_and_the_notebook_import_the_install_they_name_brings() -> None:
    """The README's Python snippet and examples/notebook.py import only the
    package, NumPy (a dependency) and what the `notebook` extra installs."""
    import re
    import tomllib

    project = tomllib.loads((ROOT / "python" / "pyproject.toml").read_text())["project"]
    brought = {"ratchet"} | {
        re.split(r"[<>=\[ ;]", d)[0] for d in project["dependencies"] + project["optional-dependencies"]["notebook"]
    }
    readme = (ROOT / "README.md").read_text()
    section = readme[readme.index("## From Python") :]
    assert "pip install './python[notebook]'" in section
    block = section[section.index("```python") + len("```python") : section.index("```", section.index("```python") + 9)]
    for code, where in [(block, "README"), (EXAMPLE.read_text(), "notebook.py")]:
        missing = _imports(code) - brought - set(sys.stdlib_module_names)
        assert not missing, f"{where} imports {missing}, which `pip install './python[notebook]'` does not bring"
