"""pcDEQ experiments: training with iteration counts, convergence analysis, gradient checks.

    pcdeq/train       one network on Fashion-MNIST (configs/train.py): accuracy, parameters,
                      forward/backward iterations per epoch, residual-vs-iteration curves of the
                      trained layers with the fitted geometric rate, plain iteration vs Anderson,
                      uniqueness of the fixed point from two starting points.
    pcdeq/gradcheck   implicit gradient vs unrolled backprop and float64 finite differences.
    pcdeq/reproduce   the table: pcDEQ variants and the two baselines at equal parameter count.
"""

from __future__ import annotations

import dataclasses
import json
import pathlib

import jax
import jax.numpy as jnp
import numpy as np

from jaxml import progress
from jaxml.core import registry
from jaxml.core.experiment import Result
from jaxml.core.mesh import num_params
from jaxml.core.metrics import read_metrics
from jaxml.core.train import train_and_evaluate
from jaxml.data import pipeline
from jaxml.papers.pcdeq.layers import CONSTRAINED, layer_map
from jaxml.papers.pcdeq.solver import Solver, find_fixed_point, geometric_rate
from jaxml.papers.pcdeq.task import make_task

_CONFIGS = pathlib.Path(__file__).parent / "configs"


def _first_below(history: np.ndarray, tol: float) -> int:
    """Iterations (applications of f) until the residual is below tol; -1 if never."""
    hits = np.nonzero(np.asarray(history) < tol)[0]
    return int(hits[0]) + 1 if hits.size else -1


def convergence_analysis(task, params, model_state, images, *, tol: float = 1e-6, max_iter: int = 200,
                         seed: int = 0) -> dict:
    """Per DEQ block of a trained network: the residual history of plain iteration and of Anderson
    from z0 = 0 (down to `tol`), the fitted geometric rate, the iterations to 1e-4 and to `tol`, and
    the distance between the fixed points reached from z0 = 0 and from a random z0 >= 0.

    Args:
      task: a PcDEQTask; params, model_state: its trained state; images: [B, 28, 28, 1] uint8.
    Returns:
      {block name: {"plain": history [max_iter], "anderson": history, "rate": float, ...}}.
    """
    from jaxml.core.classification import to_float_images

    model = task.model.clone(capture=True)
    variables = {"params": params, "batch_stats": model_state["batch_stats"], "probe": model_state["probe"]}
    _, captured = jax.jit(lambda v, x: model.apply(v, x, train=False, mutable=["capture", "diagnostics"]))(
        variables, to_float_images(images))
    out = {}
    key = jax.random.PRNGKey(seed)
    for name, leaves in sorted(captured["capture"].items()):
        w, inj = leaves["weight"][0], leaves["injection"][0]
        f = layer_map(model.activation, conv=inj.ndim == 4)
        plain_solver = Solver(tol=tol, max_iter=max_iter)
        fz = jax.jit(lambda z0, s=plain_solver: find_fixed_point(lambda z: f(w, z, inj), z0, s, record=True))
        z_a, k_a, r_a, hist = fz(jnp.zeros_like(inj))
        key, sub = jax.random.split(key)
        z_b, k_b, _, _ = fz(jax.random.uniform(sub, inj.shape, inj.dtype))
        anderson_solver = Solver(tol=tol, max_iter=max_iter, method="anderson",
                                 nonnegative=model.variant in CONSTRAINED)
        _, k_and, _, hist_and = jax.jit(
            lambda z0: find_fixed_point(lambda z: f(w, z, inj), z0, anderson_solver, record=True))(jnp.zeros_like(inj))
        hist, hist_and = np.asarray(hist), np.asarray(hist_and)
        try:
            rate = geometric_rate(hist, skip=1)
        except ValueError:
            rate = float("nan")
        out[name] = {
            "plain": hist, "anderson": hist_and, "rate": rate,
            "plain_iters_1e-4": _first_below(hist, 1e-4), "plain_iters_tol": _first_below(hist, tol),
            "anderson_iters_1e-4": _first_below(hist_and, 1e-4), "anderson_iters_tol": _first_below(hist_and, tol),
            "converged": bool(r_a < tol),
            "uniqueness_distance": float(jnp.linalg.norm((z_a - z_b).ravel()) / (jnp.linalg.norm(z_a.ravel()) + 1e-12)),
            "w_min": float(jnp.min(w)),
        }
    return out


def plot_convergence(path: pathlib.Path, analysis: dict, title: str) -> pathlib.Path:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5.5, 3.6))
    for name, a in analysis.items():
        k = np.arange(1, len(a["plain"]) + 1)
        line, = ax.semilogy(k, a["plain"], label=f"{name}: iteration (rate {a['rate']:.3f})")
        ax.semilogy(k, a["anderson"], "--", color=line.get_color(), label=f"{name}: Anderson")
    ax.axhline(1e-4, color="gray", lw=0.8, ls=":")
    ax.set(xlabel="iteration k", ylabel="relative residual", title=title)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def plot_epochs(path: pathlib.Path, rows: list[dict], title: str) -> pathlib.Path:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(9, 3.2))
    epochs = [r["epoch"] for r in rows]
    ax1.plot(epochs, [r["train_accuracy"] for r in rows], label="train")
    test = [(r["epoch"], r["test_accuracy"]) for r in rows if r.get("test_accuracy") is not None]
    if test:
        ax1.plot(*zip(*test), marker="o", label="test")
    ax1.set(xlabel="epoch", ylabel="accuracy", title=title)
    ax1.legend()
    if rows and "forward_iterations" in rows[0]:
        ax2.plot(epochs, [r["forward_iterations"] for r in rows], label="forward")
        ax2.plot(epochs, [r["backward_iterations"] for r in rows], label="backward")
        ax2.set(xlabel="epoch", ylabel="mean iterations per step", title="fixed-point iterations")
        ax2.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def epoch_table(workdir, steps_per_epoch: int) -> list[dict]:
    """One row per logged window of metrics.jsonl (one epoch in the full configs)."""
    evals = {r["step"]: r for r in read_metrics(workdir, "eval")}
    rows = []
    for r in read_metrics(workdir, "train"):
        row = {"epoch": r["step"] / steps_per_epoch, "step": r["step"], "train_loss": r["loss"],
               "train_accuracy": r.get("accuracy"), "elapsed_s": r.get("elapsed_s")}
        for k in ("forward_iterations", "backward_iterations", "forward_residual", "backward_residual"):
            if k in r:
                row[k] = r[k]
        if r["step"] in evals and "test/accuracy" in evals[r["step"]]:
            row["test_accuracy"] = evals[r["step"]]["test/accuracy"]
            row["test_forward_iterations"] = evals[r["step"]].get("test/forward_iterations")
        rows.append(row)
    return rows


def label(config) -> str:
    m = config.model
    return f"{m.architecture}_{m.variant}_{m.activation}" + ("_anderson" if m.solver == "anderson" else "")


@registry.experiment("pcdeq/train")
def train(config, workdir) -> Result:
    """Trains one network, then analyses the convergence of its trained DEQ layers."""
    workdir = pathlib.Path(workdir)
    task = make_task(config)
    outcome = train_and_evaluate(config, workdir, task=task)
    steps_per_epoch = pipeline.steps_per_epoch(len(task.train_data()), config.batch_size)   # as the loop
    rows = epoch_table(workdir, steps_per_epoch)
    params = jax.device_get(outcome.state.params)
    model_state = jax.device_get(outcome.state.model_state)
    epochs = int(outcome.state.step) / steps_per_epoch
    metrics = {
        "test_accuracy": outcome.metrics["test/accuracy"],
        "params": float(num_params(params)),
        "epochs": epochs,
        "train_time_s": outcome.metrics["train_time_s"],
        "s_per_epoch": outcome.metrics["train_time_s"] / max(epochs, 1e-9),
    }
    if "test/forward_iterations" in outcome.metrics:
        metrics["test_forward_iterations"] = outcome.metrics["test/forward_iterations"]
    last = rows[-1] if rows else {}
    for k in ("forward_iterations", "backward_iterations"):
        if k in last:
            metrics[f"last_epoch_{k}"] = last[k]
            metrics[f"max_epoch_{k}"] = max(r[k] for r in rows)
    figures = [str(plot_epochs(workdir / "epochs.png", rows, label(config)))]
    notes = [f"{label(config)}: {num_params(params):,} params, {epochs:g} epochs of batch {config.batch_size}"]
    if config.model.variant != "explicit":
        test = task.eval_data()["test"]
        images = test[np.arange(min(config.convergence_batch, len(test)))]["image"]
        analysis = convergence_analysis(task, params, model_state, images)
        for name, a in analysis.items():
            for k in ("rate", "plain_iters_1e-4", "plain_iters_tol", "anderson_iters_1e-4", "anderson_iters_tol",
                      "uniqueness_distance"):
                metrics[f"{name}/{k}"] = float(a[k])
            metrics[f"{name}/converged"] = float(a["converged"])
        figures.append(str(plot_convergence(workdir / "convergence.png", analysis, label(config))))
        (workdir / "convergence.json").write_text(json.dumps(
            {n: {k: (v.tolist() if isinstance(v, np.ndarray) else v) for k, v in a.items()} for n, a in analysis.items()},
            default=float))
    (workdir / "epochs.json").write_text(json.dumps(rows, indent=1, default=float))
    return Result(metrics=metrics, headline="test_accuracy", figures=figures,
                  notes="; ".join(notes))


def gradient_errors(conv: bool, activation: str = "tanh", seed: int = 0) -> dict[str, float]:
    """Relative errors of the implicit gradient of a pcDEQ layer on a small problem:
    vs backprop through 400 unrolled iterations (float32, tol 1e-7) and vs central finite
    differences of the float64 forward (directional derivatives along 3 random directions)."""
    from jaxml.papers.pcdeq.layers import injection
    from jaxml.papers.pcdeq.solver import deq_solve, unrolled_solve

    f = layer_map(activation, conv)
    k1, k2, k3, k4 = jax.random.split(jax.random.PRNGKey(seed), 4)
    shape_x = (2, 6, 6, 3) if conv else (4, 16)
    shape_w = (3, 3, 3, 3) if conv else (16, 16)
    w = jax.random.uniform(k1, shape_w) * (0.05 if conv else 0.08)   # row sums ~0.7: not saturated
    x = injection("pcdeq1", jax.random.normal(k2, shape_x))
    target = jax.random.normal(k3, shape_x)

    def implicit_loss(w, x, solver):
        z, _ = deq_solve(f, w, x, solver=solver)
        return jnp.sum(z * target)

    def unrolled_loss(w, x):
        return jnp.sum(unrolled_solve(f, w, x, 400) * target)

    solver = Solver(tol=1e-7, max_iter=400)
    g_imp = jax.grad(implicit_loss, argnums=(0, 1))(w, x, solver)
    g_unr = jax.grad(unrolled_loss, argnums=(0, 1))(w, x)
    rel = lambda a, b: float(jnp.linalg.norm((a - b).ravel()) / jnp.linalg.norm(b.ravel()))
    out = {"unrolled_rel_err_w": rel(g_imp[0], g_unr[0]), "unrolled_rel_err_x": rel(g_imp[1], g_unr[1])}
    with jax.enable_x64(True):
        w64, x64, t64 = (jnp.asarray(a, jnp.float64) for a in (w, x, target))
        solver64 = Solver(tol=1e-13, max_iter=2000)
        loss64 = lambda w, x: jnp.sum(deq_solve(f, w, x, solver=solver64)[0] * t64)
        gw, gx = jax.grad(loss64, argnums=(0, 1))(w64, x64)
        errs = []
        for i, key in enumerate(jax.random.split(k4, 3)):
            dw = jax.random.normal(key, w64.shape, jnp.float64)
            dx = jax.random.normal(jax.random.fold_in(key, 1), x64.shape, jnp.float64)
            eps = 1e-5
            fd = (loss64(w64 + eps * dw, x64 + eps * dx) - loss64(w64 - eps * dw, x64 - eps * dx)) / (2 * eps)
            an = jnp.sum(gw * dw) + jnp.sum(gx * dx)
            errs.append(float(jnp.abs(fd - an) / jnp.abs(an)))
        out["finite_difference_rel_err"] = max(errs)
    return out


@registry.experiment("pcdeq/gradcheck")
def gradcheck(config, workdir) -> Result:
    """Implicit gradient vs unrolled differentiation and finite differences (dense and conv)."""
    metrics = {}
    for conv in (False, True):
        for act in config.activations:
            errs = gradient_errors(conv, act)
            metrics.update({f"{'conv' if conv else 'dense'}_{act}/{k}": v for k, v in errs.items()})
    worst = max(v for k, v in metrics.items() if "unrolled" in k)
    metrics["max_unrolled_rel_err"] = worst
    metrics["max_finite_difference_rel_err"] = max(v for k, v in metrics.items() if "finite" in k)
    return Result(metrics=metrics, headline="max_unrolled_rel_err",
                  notes="float32 implicit vs 400 unrolled steps; float64 central differences, eps 1e-5.")


@registry.experiment("pcdeq/reproduce")
def reproduce(config, workdir) -> Result:
    """Trains each network of `config.runs` (resumable, one workdir each) and gathers the table."""
    from jaxml.core.config import load_config

    workdir = pathlib.Path(workdir)
    metrics, figures, rows = {}, [], []
    for arg in config.runs:
        full_arg = ",".join(a for a in (arg, "" if config.scale == "full" else config.scale) if a)
        sub = load_config(f"{_CONFIGS / 'train.py'}:{full_arg}")
        name = label(sub)
        progress.log(f"pcdeq/reproduce: {name}")
        result = train(sub, workdir / name)
        metrics.update({f"{name}/{k}": v for k, v in result.metrics.items()})
        figures += result.figures
        rows.append((name, result.metrics))
    if config.gradcheck:
        gc = gradcheck(config, workdir / "gradcheck")
        metrics.update({f"gradcheck/{k}": v for k, v in gc.metrics.items()})
    (workdir / "table.md").write_text(table_markdown(rows))
    headline = next(k for k in metrics if k.endswith("/test_accuracy"))
    return Result(metrics=metrics, headline=headline, figures=figures,
                  notes=f"Fashion-MNIST, scale {config.scale}; table in {workdir / 'table.md'}.")


def table_markdown(rows) -> str:
    lines = ["| network | params | epochs | test acc | s/epoch | fwd it (last ep) | bwd it (last ep) | "
             "rate (blocks) | unique |", "|---|---|---|---|---|---|---|---|---|"]
    for name, m in rows:
        rates = [v for k, v in m.items() if k.endswith("/rate")]
        uniq = [v for k, v in m.items() if k.endswith("/uniqueness_distance")]
        fmt = lambda k, f="{:.2f}": f.format(m[k]) if k in m else "—"
        lines.append(f"| {name} | {int(m['params']):,} | {m['epochs']:g} | {m['test_accuracy']:.4f} | "
                     f"{m['s_per_epoch']:.1f} | {fmt('last_epoch_forward_iterations')} | "
                     f"{fmt('last_epoch_backward_iterations')} | "
                     f"{', '.join(f'{r:.3f}' for r in rates) or '—'} | "
                     f"{(f'{max(uniq):.1e}' if uniq else '—')} |")
    return "\n".join(lines) + "\n"
