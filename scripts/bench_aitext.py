#!/usr/bin/env python3
"""Bootstrap estimation of alpha: jaxml's vectorised bootstrap against the reference approach.

    python scripts/bench_aitext.py [--n=100000] [--n_boot=1000] [--alpha=0.1] [--vocab=2000]
                                   [--reference_resamples=1000] [--out=bench_aitext.json]
    python scripts/bench_aitext.py --grouping [--grouping_sizes=16384,32768,100000] [--grouping_seeds=4]

Data: n sentences sampled from the estimator's own model (each AI with probability `alpha`, every
one of `vocab` words occurring independently with p_t or q_t; p ~ U(0.0005, 0.02) and
log(q/p) ~ N(0, 1), the spread of the adjective tables fitted on the real corpus). Both methods
get the same log ratios d.

* `reference`: what `src/MLE.py` of the reference code does: a Python loop over resamples, each
  drawing n sentence indices with replacement and minimising the NLL with scipy's L-BFGS-B
  (x0 = 0.5, bounds [0, 1]). With `--reference_resamples` < n_boot it is timed on that many and
  scaled linearly (said in the output).
* `jaxml`: `jaxml.papers.aitext.estimator.bootstrap` (multinomial counts over the groups of d,
  every resample solved in one vectorised JAX pass), first call (compilation included) and the
  median of 3 warm calls.

`--grouping` measures instead what grouping the values of d costs in interval width: on the same
log ratios (simulated at each size of `--grouping_sizes`, and the real fit pool of the shipped
corpus scored with the all-words table), the 95% interval of the exact bootstrap (one multinomial
category per distinct value of d, i.e. resampling sentences) against the grouped one (1,024 groups),
each with `--grouping_seeds` resampling seeds, and the time of one call of each (warm).
"""

from __future__ import annotations

import json
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402
from absl import app, flags  # noqa: E402

_N = flags.DEFINE_integer("n", 100_000, "Sentences.")
_BOOT = flags.DEFINE_integer("n_boot", 1000, "Bootstrap resamples.")
_ALPHA = flags.DEFINE_float("alpha", 0.1, "True fraction of AI sentences.")
_VOCAB = flags.DEFINE_integer("vocab", 2000, "Vocabulary size of the simulated tables.")
_REF = flags.DEFINE_integer("reference_resamples", 1000, "Resamples timed for the reference loop.")
_SEED = flags.DEFINE_integer("seed", 0, "Seed.")
_OUT = flags.DEFINE_string("out", None, "Write the results as JSON here.")
_GROUPING = flags.DEFINE_bool("grouping", False, "Measure the CI width of exact against grouped resampling.")
_GROUPING_SIZES = flags.DEFINE_list("grouping_sizes", ["16384", "32768", "100000"], "Sentences per simulated sample.")
_GROUPING_SEEDS = flags.DEFINE_integer("grouping_seeds", 4, "Resampling seeds per sample and method.")


def simulated_log_ratios(n, v, alpha, seed):
    rng = np.random.default_rng(seed)
    p = rng.uniform(0.0005, 0.02, v)
    q = np.clip(p * np.exp(rng.normal(0.0, 1.0, v)), 1e-5, 0.5)
    w = (np.log(q) - np.log1p(-q)) - (np.log(p) - np.log1p(-p))
    const = np.log1p(-q).sum() - np.log1p(-p).sum()
    d = np.empty(n)
    for start in range(0, n, 10_000):                       # sample in chunks: [10k, v] at a time
        m = min(10_000, n - start)
        z = rng.random(m) < alpha
        occ = rng.random((m, v)) < np.where(z[:, None], q, p)
        d[start:start + m] = const + occ @ w
    return d


def reference_bootstrap(d, n_boot, seed):
    """The reference's loop: resample sentences, L-BFGS-B on the NLL, percentile interval."""
    from scipy.optimize import minimize

    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n_boot):
        sample = d[rng.choice(d.size, d.size, replace=True)]
        ratio = np.exp(sample)

        def nll(a):
            return -np.mean(np.log((1 - a[0]) + a[0] * ratio))

        out.append(minimize(nll, x0=[0.5], method="L-BFGS-B", bounds=[(0, 1)]).x[0])
    return np.asarray(out)


def real_log_ratios():
    """d of every fit sentence of the shipped corpus (human and AI) under the all-words table fitted
    on them: a real sample with more distinct values than the exact threshold."""
    from jaxml.papers.aitext import corpus, estimator
    from jaxml.papers.aitext import text as textlib

    pools = corpus.human_passages()
    human = [textlib.words(s) for s in corpus.sentence_pool([p.text for p in pools["fit"]])]
    ai = [textlib.words(s) for s in corpus.sentence_pool(
        [r["text"] for r in corpus.load_ai_records("shipped") if r["split"] == "fit"])]
    tables = estimator.fit_tables(human, ai)
    return estimator.log_ratio(tables, estimator.encode(tables, human + ai))


def grouping(seeds: int, sizes) -> list[dict]:
    """Interval width and time of the exact and the grouped bootstrap on the same samples."""
    import time

    from jaxml.papers.aitext import estimator

    samples = [(f"simulated n={n}", simulated_log_ratios(int(n), _VOCAB.value, _ALPHA.value, _SEED.value))
               for n in sizes] + [("real: fit pool, all-words table", real_log_ratios())]
    rows = []
    for name, d in samples:
        row = {"sample": name, "n": int(d.size), "distinct": int(len(np.unique(d)))}
        for method, exact_up_to in (("exact", d.size), ("grouped", 0)):
            estimator.bootstrap(d, n_boot=_BOOT.value, seed=0, exact_up_to=exact_up_to)      # compile
            widths, t0 = [], time.perf_counter()
            for s in range(1, seeds + 1):
                est = estimator.bootstrap(d, n_boot=_BOOT.value, seed=s, exact_up_to=exact_up_to)
                widths.append(est.ci[1] - est.ci[0])
            row[method] = {"width_mean": float(np.mean(widths)), "width_sd": float(np.std(widths, ddof=1)),
                           "seconds_per_call": (time.perf_counter() - t0) / seeds, "mle": est.mle}
        row["width_ratio"] = row["grouped"]["width_mean"] / row["exact"]["width_mean"]
        e, g = row["exact"], row["grouped"]
        print(f"{name}: {row['n']} sentences, {row['distinct']} distinct d; 95% CI width exact "
              f"{e['width_mean']:.5f} +- {e['width_sd']:.5f} ({e['seconds_per_call']:.2f} s/call), grouped "
              f"{g['width_mean']:.5f} +- {g['width_sd']:.5f} ({g['seconds_per_call']:.2f} s/call); "
              f"grouped / exact {row['width_ratio']:.3f}", flush=True)
        rows.append(row)
    return rows


def main(_):
    import jax

    if _GROUPING.value:
        rows = grouping(_GROUPING_SEEDS.value, _GROUPING_SIZES.value)
        if _OUT.value:
            pathlib.Path(_OUT.value).write_text(json.dumps(rows, indent=2))
        return

    from jaxml.core import benchmark
    from jaxml.papers.aitext import estimator

    d = simulated_log_ratios(_N.value, _VOCAB.value, _ALPHA.value, _SEED.value)
    print(f"{_N.value} sentences, vocabulary {_VOCAB.value}, true alpha {_ALPHA.value}, "
          f"{len(np.unique(d))} distinct log ratios; jax {jax.__version__} on {jax.devices()[0].platform}")

    seeds = iter(range(_SEED.value, _SEED.value + 4))     # a new resampling seed for every call
    first, warm_ms, est = benchmark.timed(lambda: estimator.bootstrap(d, n_boot=_BOOT.value, seed=next(seeds)), reps=3)
    ours = warm_ms / 1e3
    print(f"jaxml bootstrap ({_BOOT.value} resamples): first call {first:.3f} s, warm median {ours:.3f} s; {est.summary()}")

    n_ref = min(_REF.value, _BOOT.value)
    refs = []                                              # one timed call (it takes seconds), its result kept
    ref_s = benchmark.median_ms(lambda: refs.append(reference_bootstrap(d, n_ref, _SEED.value)), 1) / 1e3
    ref, ref_s = refs[0], ref_s * _BOOT.value / n_ref
    lo, hi = np.percentile(ref, [2.5, 97.5])
    scaled = f" (timed on {n_ref} resamples, scaled to {_BOOT.value})" if n_ref < _BOOT.value else ""
    print(f"reference loop (scipy L-BFGS-B per resample): {ref_s:.2f} s{scaled}; CI [{lo:.4f}, {hi:.4f}], "
          f"mean {ref.mean():.4f}")
    print(f"speed-up: {ref_s / ours:.1f}x (warm), {ref_s / first:.1f}x (first call)")
    result = dict(n=_N.value, n_boot=_BOOT.value, vocab=_VOCAB.value, alpha=_ALPHA.value,
                  distinct=int(len(np.unique(d))), jaxml_first_s=first, jaxml_warm_s=ours,
                  jaxml_mle=est.mle, jaxml_ci=list(est.ci), reference_s=ref_s, reference_resamples=n_ref,
                  reference_ci=[float(lo), float(hi)], speedup_warm=ref_s / ours, speedup_first=ref_s / first)
    if _OUT.value:
        pathlib.Path(_OUT.value).write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    app.run(main)
