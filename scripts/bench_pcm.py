#!/usr/bin/env python3
"""Spectral PCM estimation against girth's `pcm_mml`/`pcm_jml` (PyPI girth 0.8.0) in one run.

    python scripts/bench_pcm.py [--n=3200] [--items=10] [--levels=3] [--seed=0] [--out=bench_pcm.json]

On the same simulated matrix (users ~ N(0,1), thresholds ~ N(0,1)) it times (the median of --repeats fits
for the spectral estimator, one fit for the others; `jaxml.core.benchmark`), after a JIT warm-up for
the JAX methods: jaxml's spectral estimator, jaxml's MMLE and JMLE (discrimination 1), and girth's
pcm_mml and pcm_jml (which also fit a discrimination per item, i.e. a GPCM, as stock girth does),
and prints the ratios and each method's centred RMSE of thresholds. It then fits VerbalAggression
with girth's pcm_mml and prints its thresholds next to jaxml's spectral and MMLE ones (`pip install -e ".[girth-ref]"`). Without girth
installed it times the jaxml methods only and says so.
"""

from __future__ import annotations

import json
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402
from absl import app, flags  # noqa: E402

_N = flags.DEFINE_integer("n", 3200, "Users.")
_ITEMS = flags.DEFINE_integer("items", 10, "Items.")
_LEVELS = flags.DEFINE_integer("levels", 3, "L: scores 0..L.")
_SEED = flags.DEFINE_integer("seed", 0, "Simulation seed.")
_REPEATS = flags.DEFINE_integer("repeats", 5, "Timed repeats of the spectral fit (median reported).")
_OUT = flags.DEFINE_string("out", None, "Write the results as JSON here.")


def main(_):
    from jaxml.papers.pcm import data, experiments, metrics, spectral

    _timed = experiments.timed_call          # (result, median seconds) by jaxml.core.benchmark.median_ms

    try:
        import girth
    except ImportError:
        girth = None
        print("girth is not installed (pip install girth): timing the jaxml methods only")

    n, m, L = _N.value, _ITEMS.value, _LEVELS.value
    sim = data.simulate(_SEED.value, n, m, L)
    warm = data.simulate(_SEED.value + 1, n, m, L).responses
    results = {}
    for method in experiments.METHODS:
        experiments.fit_thresholds(method, warm, L)                      # compile
        est, dt = _timed(lambda: experiments.fit_thresholds(method, sim.responses, L),
                         _REPEATS.value if method == "spectral" else 1)
        results[method] = dict(seconds=dt, rmse=spectral.centred_rmse(est, sim.thresholds))
    if girth is not None:
        item_major = sim.responses.T.astype(int)                         # girth: [n_items, n_participants]
        for name, fn in (("girth_pcm_mml", girth.pcm_mml), ("girth_pcm_jml", girth.pcm_jml)):
            out, dt = _timed(lambda: fn(item_major))
            beta = np.asarray(out["Difficulty"], np.float64)[:, :L]
            results[name] = dict(seconds=dt, rmse=spectral.centred_rmse(beta, sim.thresholds),
                                 mean_discrimination=float(np.mean(out["Discrimination"])))
    base = results["spectral"]["seconds"]
    print(f"n={n} users, m={m} items, L={L}; seconds (ratio to spectral), centred RMSE:")
    for name, r in results.items():
        r["ratio_to_spectral"] = metrics.speedup(r["seconds"], base)
        extra = f", mean discrimination {r['mean_discrimination']:.3f}" if "mean_discrimination" in r else ""
        print(f"  {name:14s} {r['seconds']:9.4f} s  (x{r['ratio_to_spectral']:9.1f})  rmse {r['rmse']:.4f}{extra}")

    if girth is not None:
        d = data.load("verbal_aggression")
        ours = {mth: experiments.fit_thresholds(mth, d.responses, d.n_levels) for mth in ("spectral", "mmle")}
        g = girth.pcm_mml(d.responses.T.astype(int))
        ours["girth_pcm_mml"] = np.asarray(g["Difficulty"], np.float64)[:, :2]
        centred = {k: v - v.mean() for k, v in ours.items()}
        print("\nVerbalAggression thresholds (grand mean removed): item | spectral | jaxml MMLE | girth pcm_mml "
              f"(discrimination {np.min(g['Discrimination']):.2f}..{np.max(g['Discrimination']):.2f})")
        for i, item in enumerate(d.items):
            cells = " | ".join(f"{centred[k][i, 0]:.3f}, {centred[k][i, 1]:.3f}" for k in centred)
            print(f"| {item} | {cells} |")
        for k in ("mmle", "girth_pcm_mml"):
            rmse = metrics.threshold_agreement(ours["spectral"], ours[k])["rmse"]
            results[f"verbal_rmse_spectral_vs_{k}"] = rmse
            print(f"RMSE spectral vs {k}: {rmse:.4f}")
        results["verbal_rmse_mmle_vs_girth_pcm_mml"] = metrics.threshold_agreement(ours["mmle"], ours["girth_pcm_mml"])["rmse"]
        print(f"RMSE jaxml MMLE vs girth pcm_mml: {results['verbal_rmse_mmle_vs_girth_pcm_mml']:.4f}")
    if _OUT.value:
        pathlib.Path(_OUT.value).write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    app.run(main)
