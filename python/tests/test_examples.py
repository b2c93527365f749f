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
