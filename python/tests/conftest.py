"""Shared fixtures: a demo store made by the ratchet binary the workspace built."""

import os
import pathlib
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]


def ratchet_binary() -> pathlib.Path:
    """The CLI built by `cargo test` (debug), or RATCHET_BIN."""
    env = os.environ.get("RATCHET_BIN")
    if env:
        return pathlib.Path(env)
    for profile in ("debug", "release"):
        p = ROOT / "target" / profile / "ratchet"
        if p.exists():
            return p
    raise RuntimeError("build the CLI first (cargo build -p ratchet), or set RATCHET_BIN")


@pytest.fixture(scope="session")
def demo_store(tmp_path_factory: pytest.TempPathFactory) -> pathlib.Path:
    """The store `ratchet demo` makes (seed 3, 8 proposals)."""
    out = tmp_path_factory.mktemp("demo")
    subprocess.run(
        [str(ratchet_binary()), "demo", "--out", str(out), "--seed", "3", "--proposals", "8"],
        check=True,
        capture_output=True,
    )
    return out / "repo" / ".ratchet"
