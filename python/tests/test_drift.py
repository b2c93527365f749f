"""Detectors on NumPy arrays: batch = step by step, and parity with river."""

import numpy as np
import pytest
from river import drift

import ratchet


def stream(seed: int, n: int = 20_000, shift_at: int = 12_000, shift: float = 0.8) -> np.ndarray:
    rng = np.random.default_rng(seed)
    x = rng.normal(0.0, 1.0, size=n)
    x[shift_at:] += shift
    return x


def step_by_step(det: object, xs: np.ndarray) -> list[int]:
    alarms = []
    for i, x in enumerate(xs):
        if det.update(float(x)) is not None:  # type: ignore[attr-defined]
            alarms.append(i)
            det.reset()  # type: ignore[attr-defined]
    return alarms


@pytest.mark.parametrize(
    "make",
    [
        lambda: ratchet.Cusum(0.0, 1.0, 0.5, 5.0),
        lambda: ratchet.Ewma(0.0, 1.0, 0.1, 2.8),
        lambda: ratchet.PageHinkley(0.005, 50.0),
    ],
)
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_batch_runs_give_the_alarms_of_step_by_step_updates(make, seed: int) -> None:
    xs = stream(seed)
    assert make().run(xs) == step_by_step(make(), xs)


def test_strided_views_are_copied_and_bad_values_are_named() -> None:
    xs = stream(4)
    view = xs[::2]  # not contiguous: copied (as numpy.ascontiguousarray would)
    assert ratchet.Cusum().run(view) == ratchet.Cusum().run(np.ascontiguousarray(view))
    bad = xs.copy()
    bad[77] = np.nan
    with pytest.raises(ratchet.InvalidInputError, match="value 77"):
        ratchet.Cusum().run(bad)


def river_page_hinkley_alarms(xs: np.ndarray, delta: float, threshold: float) -> list[int]:
    ph = drift.PageHinkley(min_instances=1, delta=delta, threshold=threshold, alpha=1.0, mode="both")
    alarms = []
    for i, x in enumerate(xs):
        ph.update(float(x))
        if ph.drift_detected:
            alarms.append(i)
    return alarms


@pytest.mark.parametrize("seed", [1, 2, 3, 4])
def test_page_hinkley_matches_river_without_forgetting(seed: int) -> None:
    """river's PageHinkley with alpha=1 (no forgetting) and min_instances=1
    is the same test as ratchet's: the same alarms on the same stream."""
    xs = stream(seed, n=8000, shift_at=5000, shift=1.0)
    ours = ratchet.PageHinkley(0.005, 25.0).run(xs)
    theirs = river_page_hinkley_alarms(xs, 0.005, 25.0)
    assert ours == theirs
    assert ours, "the shift is found"


def test_arl_functions_reproduce_the_published_tables() -> None:
    # Two-sided CUSUM k=0.5, h=5: ARL0 ≈ 465 (Montgomery, table 9.3 gives 465).
    assert ratchet.cusum_arl(0.5, 5.0) == pytest.approx(465.0, rel=0.02)
    assert ratchet.cusum_arl(0.5, 5.0, shift=1.0) == pytest.approx(10.4, rel=0.03)


def test_page_hinkley_reads_delta_and_lambda_in_sigma_units_as_the_cli() -> None:
    """``ratchet watch --page-hinkley 0.5 50`` scales δ and λ by the
    warm-up's σ; Python's ``sigma`` does the same: a stream 4× as wide
    alarms where the unit stream does (4 is a power of two, so the scaled
    sums are exactly the unit ones times 4)."""
    xs = stream(5, n=6000, shift_at=4000, shift=1.0)
    unit = ratchet.PageHinkley(0.5, 50.0).run(xs)
    assert unit, "the shift is found"
    assert ratchet.PageHinkley(0.5, 50.0, sigma=4.0).run(xs * 4.0) == unit
    assert ratchet.PageHinkley().run(xs) == unit, "the CLI's defaults: 0.5 and 50"
    assert ratchet.PageHinkley(0.5, 50.0).run(xs * 4.0) != unit, "raw units would differ"
    with pytest.raises(ratchet.InvalidInputError, match="sigma"):
        ratchet.PageHinkley(sigma=0.0)
