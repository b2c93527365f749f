# %% [markdown]
# # ratchet in a notebook
#
# Open the store `ratchet demo` made, plot its score ladder and a CUSUM
# chart of live quality with matplotlib, and calibrate the gate's test.
# Run it as a script (`python examples/notebook.py STORE OUT_DIR`) or cell by
# cell in Jupyter (the `# %%` markers). Needs `pip install './python[notebook]'`
# from a clone of ratchet (the distribution `ratchet-gate`, the import `ratchet`).

# %%
import pathlib
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import polars as pl  # noqa: E402

import ratchet  # noqa: E402

store_dir = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ".ratchet")
out = pathlib.Path(sys.argv[2] if len(sys.argv) > 2 else ".")
out.mkdir(parents=True, exist_ok=True)  # where the figures go, made if new
store = ratchet.Store.open(store_dir)
print(store.verify())

# %% The score ladder: mean per commit with a 95 % interval.
stats = pl.DataFrame(store.commit_stats("answer"))
scores = store.scores().to_polars()
print(store.scores())  # its size, columns and first rows
first_seen = scores.group_by("commit").agg(pl.col("seq").min().alias("first")).sort("first")
ladder = first_seen.join(stats, on="commit").with_columns(
    (1.96 * (pl.col("variance") / pl.col("n")).sqrt()).alias("half")
)
fig, ax = plt.subplots(figsize=(8, 3.5))
ax.errorbar(range(ladder.height), ladder["mean"], yerr=ladder["half"], fmt="o")
ax.set_xticks(range(ladder.height), [c[:7] for c in ladder["commit"]], rotation=60)
ax.set_ylabel("answer (mean, 95 % CI)")
ax.set_title("Score ladder")
fig.tight_layout()
fig.savefig(out / "ladder.png")

# %% Live quality of the last deployed commit, with a CUSUM over it. Live
# requests are scored pass/fail under a scorer of their own (`live_answer`);
# the demo's own monitor runs a Bernoulli CUSUM on them, this sketch a
# normal-theory one whose μ and σ come from the first 120 requests (the
# demo's warm-up).
live = scores.filter(pl.col("scorer") == "live_answer")
last = live["commit"][-1]
series = live.filter(pl.col("commit") == last)["value"]
stream = series.to_numpy()
baseline = stats.filter(pl.col("commit") == last)
mu, sd = float(np.mean(stream[:120])), float(np.std(stream[:120]) or 1.0)
cusum = ratchet.Cusum(mu, sd, 0.5, 8.0)
alarms = cusum.run(series)  # any float array-like: a polars Series as it is
fig, ax = plt.subplots(figsize=(8, 3))
ax.plot(stream, ".", alpha=0.5, label="live pass/fail")
for a in alarms:
    ax.axvline(a, color="red", label="alarm")
ax.set_xlabel("live request")
ax.set_title(f"live answers of {last[:7]}: {len(alarms)} alarm(s)")
fig.tight_layout()
fig.savefig(out / "cusum.png")

# %% The gate's operating characteristic for the demo's policy.
policy = ratchet.Policy.from_path(store_dir / "policy.toml")
oc = pl.DataFrame(ratchet.calibrate(policy, "prompt", p0=0.6))
print(oc.select("effect", "p_promote", "expected_n"))
assert oc["p_promote"].is_sorted(), "P(promote) rises with the effect"
print("notebook done:", out / "ladder.png", out / "cusum.png")
