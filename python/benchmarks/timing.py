"""Timing script for the Python figures (issue 13), measured in one run.

    python python/benchmarks/timing.py [STORE]

* Cusum.run on 10M points against river's detector of the same family
  (Page–Hinkley, a CUSUM-type test) on the same points, both timed here;
* store.scores() of a store into a Polars DataFrame (pass a store of 1M
  score rows; without one, one is made with the ratchet CLI's `append`);
* verify() from Python against `ratchet verify-chain` on the same store.

Build the package in release for figures (`pip install ./python`): the test
suite's dev-profile build is for correctness, not speed.
"""

import pathlib
import subprocess
import sys
import time

import numpy as np
import polars as pl
from river import drift

import ratchet

ROOT = pathlib.Path(__file__).resolve().parents[2]


def best_of(n: int, f) -> float:
    times = []
    for _ in range(n):
        t = time.perf_counter()
        f()
        times.append(time.perf_counter() - t)
    return min(times)


def detectors() -> None:
    rng = np.random.default_rng(7)
    xs = rng.normal(size=10_000_000)
    ours = best_of(3, lambda: ratchet.Cusum(0.0, 1.0, 0.5, 5.0).run(xs))
    sub = xs[:1_000_000]

    def river_run() -> None:
        ph = drift.PageHinkley(min_instances=1, delta=0.005, threshold=50.0, alpha=1.0)
        for x in sub:
            ph.update(x)

    theirs = best_of(1, river_run) * (len(xs) / len(sub))
    print(f"Cusum.run, 10M points: {ours:.3f} s")
    print(f"river PageHinkley, 1M points timed, scaled to 10M: {theirs:.1f} s")
    print(f"ratio: {theirs / ours:.0f}x")


def store_figures(store_dir: pathlib.Path) -> None:
    store = ratchet.Store.open(store_dir)
    t = best_of(3, lambda: pl.DataFrame(store.scores()))
    n = pl.DataFrame(store.scores()).height
    print(f"store.scores() of {n} rows into Polars: {t:.3f} s")
    py = best_of(3, lambda: store.verify())
    binary = ROOT / "target" / "release" / "ratchet"
    if not binary.exists():
        binary = ROOT / "target" / "debug" / "ratchet"
    cli = best_of(
        3,
        lambda: subprocess.run(
            [str(binary), "--store", str(store_dir), "verify-chain"], check=True, capture_output=True
        ),
    )
    print(f"verify(): Python {py:.3f} s, CLI ({binary.parent.name}) {cli:.3f} s, ratio {py / cli:.2f}")


if __name__ == "__main__":
    detectors()
    if len(sys.argv) > 1:
        store_figures(pathlib.Path(sys.argv[1]))
