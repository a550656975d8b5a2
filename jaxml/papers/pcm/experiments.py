"""PCM experiments: parameter recovery vs n, run-time scaling, held-out likelihood on real data, the
VerbalAggression threshold table, and `reproduce` (all of them at one scale).

Timing: each method is run once untimed on a same-shape problem (JIT compilation), then timed with
`jax.block_until_ready`; times include input validation and, for the spectral method, the pass over
the data that builds the counts.
"""

from __future__ import annotations

import json
import math
import pathlib
import time

import jax
import numpy as np

from jaxml import progress
from jaxml.core import registry
from jaxml.core.experiment import Result, gather_parts, make_workdir, pyplot
from jaxml.papers.pcm import abilities, baselines, data, mixture, sparse, spectral

METHODS = ("spectral", "jmle", "mmle")


def fit_thresholds(method: str, x, n_levels: int, config=None) -> np.ndarray:
    """Thresholds `[m, L]` of `method` in METHODS."""
    if method == "spectral":
        lam = config.get("lam", 0.1) if config is not None else 0.1
        return np.asarray(jax.block_until_ready(spectral.spectral_estimate(x, n_levels, lam=lam)))
    if method == "mmle":
        return np.asarray(jax.block_until_ready(baselines.mmle(x, n_levels).thresholds))
    if method == "jmle":
        return np.asarray(jax.block_until_ready(baselines.jmle(x, n_levels).thresholds))
    raise ValueError(f"unknown method {method!r}; choose from {METHODS}")


def timed(fn, *args):
    t0 = time.perf_counter()
    out = fn(*args)
    return out, time.perf_counter() - t0


@registry.experiment("pcm/recovery")
def recovery(config, workdir) -> Result:
    """Centred RMSE of thresholds and wall time vs number of users for each method (simulator)."""
    workdir = make_workdir(workdir)
    rows, metrics = [], {}
    for n in config.ns:
        for method in config.methods:                              # compile on a throw-away same-shape problem
            fit_thresholds(method, data.simulate(10_000 + n, n, config.n_items, config.n_levels,
                                                 missing=config.missing).responses, config.n_levels, config)
        errors = {m: [] for m in config.methods}
        seconds = {m: [] for m in config.methods}
        for trial in range(config.trials):
            sim = data.simulate(config.seed + 1000 * trial + n, n, config.n_items, config.n_levels,
                                missing=config.missing)
            for method in config.methods:
                est, dt = timed(fit_thresholds, method, sim.responses, config.n_levels, config)
                errors[method].append(spectral.centred_rmse(est, sim.thresholds))
                seconds[method].append(dt)
        for method in config.methods:
            e, s = np.array(errors[method]), np.array(seconds[method])
            row = dict(n=n, method=method, rmse=float(e.mean()), rmse_se=float(e.std(ddof=1) / math.sqrt(len(e)))
                       if len(e) > 1 else 0.0, seconds=float(np.median(s)))
            rows.append(row)
            metrics[f"rmse_{method}_n{n}"] = row["rmse"]
            metrics[f"seconds_{method}_n{n}"] = row["seconds"]
        progress.log("recovery n=%d: " % n + ", ".join(
            f"{m} {np.mean(errors[m]):.4f} ({np.median(seconds[m]) * 1e3:.1f} ms)" for m in config.methods))
    if "spectral" in config.methods and "mmle" in config.methods:
        for n in config.ns:
            metrics[f"ratio_spectral_mmle_n{n}"] = metrics[f"rmse_spectral_n{n}"] / metrics[f"rmse_mmle_n{n}"]
            metrics[f"speedup_vs_mmle_n{n}"] = metrics[f"seconds_mmle_n{n}"] / metrics[f"seconds_spectral_n{n}"]
    (workdir / "recovery.json").write_text(json.dumps(rows, indent=1))
    plt = pyplot()
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(9, 3.4))
    for method in config.methods:
        r = [row for row in rows if row["method"] == method]
        a1.errorbar([x["n"] for x in r], [x["rmse"] for x in r], [x["rmse_se"] for x in r], label=method, marker="o")
        a2.plot([x["n"] for x in r], [x["seconds"] for x in r], marker="o", label=method)
    for ax, label in ((a1, "centred RMSE of thresholds"), (a2, "wall time [s]")):
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("users n")
        ax.set_ylabel(label)
        ax.legend()
    fig.suptitle(f"PCM recovery: {config.n_items} items, L={config.n_levels}, {config.trials} trials")
    fig.tight_layout()
    fig.savefig(workdir / "recovery.png", dpi=100)
    plt.close(fig)
    n_last = config.ns[-1]
    return Result(metrics=metrics, headline=f"rmse_spectral_n{n_last}", figures=[str(workdir / "recovery.png")],
                  notes=f"{config.n_items} items x {config.n_levels} thresholds ~ N(0,1), users ~ N(0,1), "
                        f"{config.trials} trials; centred RMSE (grand mean removed).")


def _slope(ns, ts) -> float:
    return float(np.polyfit(np.log(ns), np.log(ts), 1)[0])


def _time_spectral(x, n_levels, repeats):
    fit_thresholds("spectral", x, n_levels)                         # compile
    return min(timed(fit_thresholds, "spectral", x, n_levels)[1] for _ in range(repeats))


@registry.experiment("pcm/scaling")
def scaling(config, workdir) -> Result:
    """Spectral run time vs n (users) and m (items), log-log slopes; MMLE/JMLE time vs n; a big fit."""
    workdir = make_workdir(workdir)
    metrics, curves = {}, {}
    for method in config.methods_n:
        ts = []
        ns = config.ns_spectral if method == "spectral" else config.ns
        for n in ns:
            x = data.simulate(n, n, config.n_items, config.n_levels).responses
            if method == "spectral":
                ts.append(_time_spectral(x, config.n_levels, config.repeats))
            else:
                fit_thresholds(method, data.simulate(n + 1, n, config.n_items, config.n_levels).responses,
                               config.n_levels)
                ts.append(timed(fit_thresholds, method, x, config.n_levels)[1])
            metrics[f"seconds_{method}_n{n}"] = ts[-1]
        curves[f"{method} vs n (m={config.n_items})"] = (ns, ts)
        metrics[f"slope_{method}_n"] = _slope(ns, ts)
        metrics[f"slope_{method}_n_top3"] = _slope(ns[-3:], ts[-3:])     # past the fixed per-call overhead
        progress.log(f"scaling {method}: " + ", ".join(f"n={n}: {t * 1e3:.1f} ms" for n, t in zip(ns, ts)))
    ts = []
    for m in config.ms:
        x = data.simulate(m, config.n_for_m, m, config.n_levels).responses
        ts.append(_time_spectral(x, config.n_levels, config.repeats))
        metrics[f"seconds_spectral_m{m}"] = ts[-1]
    curves[f"spectral vs m (n={config.n_for_m})"] = (config.ms, ts)
    metrics["slope_spectral_m"] = _slope(config.ms, ts)
    progress.log("scaling spectral vs m: " + ", ".join(f"m={m}: {t * 1e3:.1f} ms" for m, t in zip(config.ms, ts)))
    if config.big_n:
        n, m, L = config.big_n, config.big_m, config.n_levels
        sim = data.simulate(0, n, m, L, chunk=1 << 18)
        x = sim.responses
        dt = _time_spectral(x, L, config.repeats)
        est = fit_thresholds("spectral", x, L)
        itemsize = np.dtype(jax.numpy.result_type(float)).itemsize
        metrics["big_seconds"] = dt
        metrics["big_rmse"] = spectral.centred_rmse(est, sim.thresholds)
        metrics["big_matrix_mb"] = x.nbytes / 2 ** 20
        metrics["big_state_mb"] = (L * m * m + (L + 1) ** 2 * m + m * (L + 1)) * itemsize / 2 ** 20
        metrics["big_chunk_mb"] = 8192 * m * (L + 1) * itemsize * 2 / 2 ** 20
        progress.log(f"scaling big: {n} users x {m} items in {dt:.2f}s, rmse {metrics['big_rmse']:.4f}")
    if config.sparse_n:
        n, m, k, L = config.sparse_n, config.sparse_m, config.sparse_per_user, config.n_levels
        r = data.simulate_ratings(0, n, m, L, k)

        def fit_sparse():
            return np.asarray(jax.block_until_ready(
                sparse.spectral_estimate_sparse(r.users, r.items, r.scores, m, L, n_users=n)))

        fit_sparse()                                                    # compile
        est, dt = min((timed(fit_sparse) for _ in range(config.repeats)), key=lambda t: t[1])
        metrics["sparse_seconds"] = dt
        metrics["sparse_observed"] = float(len(r.users))
        metrics["sparse_rmse"] = spectral.centred_rmse(est, r.thresholds)
        progress.log(f"scaling sparse: {n} users x {m} items, {len(r.users)} ratings in {dt:.2f}s, "
                     f"rmse {metrics['sparse_rmse']:.4f}")
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(5.5, 3.8))
    for label, (xs, ts) in curves.items():
        ax.plot(xs, ts, marker="o", label=f"{label}: slope {_slope(xs, ts):.2f}")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("users n or items m")
    ax.set_ylabel("wall time [s]")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(workdir / "scaling.png", dpi=100)
    plt.close(fig)
    (workdir / "scaling.json").write_text(json.dumps(metrics, indent=1))
    return Result(metrics=metrics, headline="slope_spectral_n", figures=[str(workdir / "scaling.png")],
                  notes=f"spectral fits on {jax.device_count()} {jax.default_backend()} device(s) "
                        f"(run on device 0); L={config.n_levels}.")


def heldout_scores(method: str, split: data.Split, n_levels: int, config=None) -> dict[str, float]:
    """Fit on `split.train`, MLE abilities on [-6, 6], mean held-out log-likelihood and argmax MAE."""
    x = split.train
    keep = (x >= 0).any(1)
    beta, dt = timed(fit_thresholds, method, x[keep], n_levels, config)
    theta = np.asarray(abilities.mle_abilities(x, beta, bounds=(-6.0, 6.0)))
    lp = abilities.rating_log_probs(theta, beta, split.test_users, split.test_items, split.test_scores)
    pred = abilities.predicted_scores(theta, beta, split.test_users, split.test_items)
    return dict(heldout_ll=float(np.mean(lp)), mae=float(np.mean(np.abs(np.asarray(pred) - split.test_scores))),
                seconds=dt)


@registry.experiment("pcm/real")
def real(config, workdir) -> Result:
    """Held-out log-likelihood and MAE (one rating per user held out) on the psychotools data sets."""
    workdir = make_workdir(workdir)
    metrics, lines = {}, ["| data | method | held-out log-lik | MAE | fit time [s] |", "|---|---|---|---|---|"]
    for name in config.datasets:
        d = data.load(name)
        per = {m: [] for m in config.methods}
        for seed in range(config.splits):
            split = data.heldout_split(d.responses, seed=seed)
            for method in config.methods:
                if seed == 0:                                        # compile
                    heldout_scores(method, split, d.n_levels, config)
                per[method].append(heldout_scores(method, split, d.n_levels, config))
        for method in config.methods:
            for key in ("heldout_ll", "mae", "seconds"):
                vals = np.array([r[key] for r in per[method]])
                metrics[f"{name}/{method}/{key}"] = float(vals.mean())
                if key != "seconds" and len(vals) > 1:
                    metrics[f"{name}/{method}/{key}_std"] = float(vals.std(ddof=1))
            lines.append(f"| {name} {d.responses.shape} | {method} | "
                         f"{metrics[f'{name}/{method}/heldout_ll']:.4f} | {metrics[f'{name}/{method}/mae']:.4f} | "
                         f"{metrics[f'{name}/{method}/seconds']:.3f} |")
        progress.log(f"real {name}: " + ", ".join(
            f"{m} ll {metrics[f'{name}/{m}/heldout_ll']:.4f}" for m in config.methods))
    (workdir / "real.md").write_text("\n".join(lines) + "\n")
    first = config.datasets[0]
    return Result(metrics=metrics, headline=f"{first}/spectral/heldout_ll",
                  notes=f"mean over {config.splits} random held-out splits; abilities: bounded MLE on [-6, 6] "
                        "given each method's thresholds; MMLE prior N(0, 1).")


@registry.experiment("pcm/verbal_table")
def verbal_table(config, workdir) -> Result:
    """VerbalAggression (316 x 24, 0-2) item thresholds: spectral next to MMLE and JMLE."""
    workdir = make_workdir(workdir)
    d = data.load("verbal_aggression")
    est = {m: fit_thresholds(m, d.responses, d.n_levels, config) for m in METHODS}
    centred = {m: e - e.mean() for m, e in est.items()}
    lines = ["| item | " + " | ".join(f"{m} b1 | {m} b2" for m in METHODS) + " |",
             "|---" * (1 + 2 * len(METHODS)) + "|"]
    for i, item in enumerate(d.items):
        cells = " | ".join(f"{centred[m][i, 0]:.3f} | {centred[m][i, 1]:.3f}" for m in METHODS)
        lines.append(f"| {item} | {cells} |")
    (workdir / "verbal_aggression_thresholds.md").write_text("\n".join(lines) + "\n")
    metrics = {}
    for other in ("mmle", "jmle"):
        a, b = centred["spectral"], centred[other]
        metrics[f"rmse_spectral_vs_{other}"] = float(np.sqrt(np.mean((a - b) ** 2)))
        metrics[f"corr_spectral_vs_{other}"] = float(np.corrcoef(a.ravel(), b.ravel())[0, 1])
        metrics[f"max_abs_spectral_vs_{other}"] = float(np.abs(a - b).max())
    metrics["rmse_jmle_vs_mmle"] = float(np.sqrt(np.mean((centred["jmle"] - centred["mmle"]) ** 2)))
    return Result(metrics=metrics, headline="rmse_spectral_vs_mmle",
                  notes="thresholds centred by their grand mean; table in verbal_aggression_thresholds.md.")


@registry.experiment("pcm/mixture")
def mixture_recovery(config, workdir) -> Result:
    """Spectral EM on a simulated mixture (recovery, assignment accuracy, held-out users' log-likelihood
    for C = 1..max) and the number of components chosen on a real data set by held-out users."""
    workdir = make_workdir(workdir)
    rng = np.random.default_rng(config.seed)
    truth = rng.normal(size=(config.true_components, config.n_items, config.n_levels))
    per = config.n_per_component

    def draw(offset):
        parts = [data.simulate(config.seed + offset + c, per, config.n_items, config.n_levels, thresholds=truth[c])
                 for c in range(config.true_components)]
        return np.concatenate([p.responses for p in parts]), np.repeat(np.arange(config.true_components), per)

    x, z = draw(1)
    x_test, _ = draw(100)
    metrics = {}
    for c in config.components:
        fit, dt = timed(mixture.spectral_em, x, c)
        metrics[f"sim/heldout_ll_C{c}"] = float(mixture.mixture_log_likelihood(fit, x_test).mean())
        metrics[f"sim/seconds_C{c}"] = dt
        if c == config.true_components:
            metrics["sim/param_rmse"] = mixture.permutation_error(fit.thresholds, truth) / math.sqrt(truth.size)
            labels = fit.responsibilities.argmax(1)
            import itertools
            metrics["sim/accuracy"] = max(float(np.mean(np.asarray(p)[labels] == z))
                                          for p in itertools.permutations(range(c)))
            metrics["sim/iterations"] = fit.iterations
    metrics["sim/chosen_C"] = float(max(config.components, key=lambda c: metrics[f"sim/heldout_ll_C{c}"]))
    if config.real_dataset:
        d = data.load(config.real_dataset)
        order = np.random.default_rng(config.seed).permutation(len(d.responses))
        n_test = len(order) // 5
        test, train = d.responses[order[:n_test]], d.responses[order[n_test:]]
        for c in config.components:
            fit = mixture.spectral_em(train, c, d.n_levels)
            metrics[f"real/heldout_ll_C{c}"] = float(mixture.mixture_log_likelihood(fit, test).mean())
        metrics["real/chosen_C"] = float(max(config.components, key=lambda c: metrics[f"real/heldout_ll_C{c}"]))
    progress.log("mixture: " + ", ".join(f"{k} {v:.4f}" for k, v in metrics.items()))
    return Result(metrics=metrics, headline="sim/param_rmse",
                  notes=f"{config.true_components} components x {per} users, {config.n_items} items, "
                        f"L={config.n_levels}; "
                        f"held-out log-likelihood per user (20% users held out on {config.real_dataset}).")


@registry.experiment("pcm/reproduce")
def reproduce(config, workdir) -> Result:
    """Recovery, scaling, real data and the VerbalAggression table at one scale."""
    # Headline: the first part's (recovery: spectral RMSE at the largest n).
    return gather_parts("pcm", config, pathlib.Path(__file__).parent / "configs", workdir)
