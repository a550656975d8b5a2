"""pcDEQ experiments: training with iteration counts, convergence analysis, gradient checks.

    pcdeq/train       one network on Fashion-MNIST (configs/train.py): accuracy, parameters,
                      forward/backward iterations per epoch, residual-vs-iteration curves of the
                      trained layers with the fitted geometric rate, plain iteration vs Anderson,
                      uniqueness of the fixed point from two starting points.
    pcdeq/gradcheck   implicit gradient vs unrolled backprop and float64 finite differences.
    pcdeq/reproduce   the parts of configs/reproduce.py (pcDEQ variants and the two baselines at equal
                      parameter count, the gradient check) and the paper's claims with verdicts.

The numbers are computed by the pure functions of `metrics.py` and `solver.geometric_rate`; this
module wires them to the runs.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import pathlib

import jax
import jax.numpy as jnp
import numpy as np

from jaxml.core import registry
from jaxml.core.experiment import Claim, Result, gather_parts, make_workdir, part_label, pyplot, save_figure, verdict
from jaxml.core.mesh import num_params
from jaxml.core.metrics import read_metrics
from jaxml.core.train import train_and_evaluate
from jaxml.data import pipeline
from jaxml.papers.pcdeq import metrics as pm
from jaxml.papers.pcdeq.layers import CONSTRAINED, injection, layer_map
from jaxml.papers.pcdeq.solver import Solver, deq_solve, find_fixed_point, geometric_rate
from jaxml.papers.pcdeq.task import make_task

_CONFIGS = pathlib.Path(__file__).parent / "configs"


@functools.partial(jax.jit, static_argnames=("activation", "conv", "solver"))
def _residual_history(w, inj, z0, *, activation: str, conv: bool, solver: Solver):
    """`find_fixed_point(..., record=True)` of the layer map (w, inj) from z0, compiled once per shape
    and solver (the networks of one report that share a layer shape share the program)."""
    f = layer_map(activation, conv)
    return find_fixed_point(lambda z: f(w, z, inj), z0, solver, record=True)


def convergence_analysis(task, params, model_state, images, *, tol: float = 1e-6, max_iter: int = 200,
                         seed: int = 0, anderson: bool = True) -> dict:
    """Per DEQ block of a trained network: the residual history of plain iteration (and of Anderson
    when `anderson`) from z0 = 0 (down to `tol`), the fitted geometric rate, the iterations to 1e-4
    and to `tol`, and the distance between the fixed points reached from z0 = 0 and from a random
    z0 in [0, 1).

    Args:
      task: a PcDEQTask; params, model_state: its trained state; images: [B, 28, 28, 1] uint8.
    Returns:
      {block name: {"plain": history [max_iter], "anderson": history or None, "rate": float, ...}}.
    """
    from jaxml.core.classification import to_float_images

    model = task.model.clone(capture=True)
    variables = {"params": params, "batch_stats": model_state["batch_stats"], "probe": model_state["probe"]}
    _, captured = jax.jit(lambda v, x: model.apply(v, x, train=False, mutable=["capture", "diagnostics"]))(
        variables, to_float_images(images))
    out = {}
    rng = np.random.default_rng(seed)
    for name, leaves in sorted(captured["capture"].items()):
        w, inj = leaves["weight"][0], leaves["injection"][0]
        static = dict(activation=model.activation, conv=inj.ndim == 4)
        plain = Solver(tol=tol, max_iter=max_iter)
        z_a, _, r_a, hist = _residual_history(w, inj, jnp.zeros_like(inj), solver=plain, **static)
        z_b, _, _, _ = _residual_history(w, inj, jnp.asarray(rng.uniform(size=inj.shape), inj.dtype),
                                         solver=plain, **static)
        hist = np.asarray(hist)
        hist_and = None
        if anderson:
            guarded = Solver(tol=tol, max_iter=max_iter, method="anderson", nonnegative=model.variant in CONSTRAINED)
            hist_and = np.asarray(_residual_history(w, inj, jnp.zeros_like(inj), solver=guarded, **static)[3])
        try:
            rate = geometric_rate(hist, skip=1)
        except ValueError:
            rate = float("nan")
        out[name] = {
            "plain": hist, "anderson": hist_and, "rate": rate,
            "plain_iters_1e-4": pm.first_below(hist, 1e-4), "plain_iters_tol": pm.first_below(hist, tol),
            "converged": bool(r_a < tol),
            "uniqueness_distance": pm.relative_error(z_b, z_a),
            "w_min": float(jnp.min(w)),
        }
        if anderson:
            out[name].update({"anderson_iters_1e-4": pm.first_below(hist_and, 1e-4),
                              "anderson_iters_tol": pm.first_below(hist_and, tol)})
    return out


def plot_convergence(path: pathlib.Path, analysis: dict, title: str) -> str:
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(5.5, 3.6))
    for name, a in analysis.items():
        k = np.arange(1, len(a["plain"]) + 1)
        line, = ax.semilogy(k, a["plain"], label=f"{name}: iteration (rate {a['rate']:.3f})")
        if a["anderson"] is not None:
            ax.semilogy(k, a["anderson"], "--", color=line.get_color(), label=f"{name}: Anderson")
    ax.axhline(1e-4, color="gray", lw=0.8, ls=":")
    ax.set(xlabel="iteration k", ylabel="relative residual", title=title)
    ax.legend(fontsize=7)
    return save_figure(fig, path, dpi=110)


def plot_epochs(path: pathlib.Path, rows: list[dict], title: str) -> str:
    plt = pyplot()
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
    return save_figure(fig, path)


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
    """Trains one network, then analyses the convergence of its trained DEQ layers.

    Figures: `epochs_<label>.png` (accuracy and iteration counts per logged window, when training
    logged more than one) and `convergence_<label>.png` (residual vs iteration of the trained layers).
    """
    workdir = make_workdir(workdir)
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
    name = label(config)
    figures = [plot_epochs(workdir / f"epochs_{name}.png", rows, name)] if len(rows) > 1 else []
    notes = [f"{num_params(params):,} params, {epochs:.2g} epoch(s) of batch {config.batch_size}"]
    if config.model.variant != "explicit":
        test = task.eval_data()["test"]
        images = test[np.arange(min(config.convergence_batch, len(test)))]["image"]
        analysis = convergence_analysis(task, params, model_state, images, anderson=config.convergence_anderson)
        for block, a in analysis.items():
            for k in ("rate", "plain_iters_1e-4", "plain_iters_tol", "anderson_iters_1e-4", "anderson_iters_tol",
                      "uniqueness_distance"):
                if k in a:
                    metrics[f"{block}/{k}"] = float(a[k])
            metrics[f"{block}/converged"] = float(a["converged"])
        figures.append(plot_convergence(workdir / f"convergence_{name}.png", analysis, name))
        (workdir / "convergence.json").write_text(json.dumps(
            {n: {k: (v.tolist() if isinstance(v, np.ndarray) else v) for k, v in a.items()} for n, a in analysis.items()},
            default=float))
    (workdir / "epochs.json").write_text(json.dumps(rows, indent=1, default=float))
    return Result(metrics=metrics, headline="test_accuracy", figures=figures, notes="; ".join(notes))


@functools.partial(jax.jit, static_argnames=("activation", "conv", "unrolled_steps"))
def _implicit_and_unrolled_grads(w, x, target, *, activation: str, conv: bool, unrolled_steps: int):
    """Gradients w.r.t. (w, x) of sum(z* . target): implicit (adjoint fixed point, tol 1e-7) and by
    backprop through `unrolled_steps` applications of the map from z0 = 0 (a differentiable loop)."""
    f = layer_map(activation, conv)
    solver = Solver(tol=1e-7, max_iter=unrolled_steps)
    implicit = jax.grad(lambda w, x: jnp.sum(deq_solve(f, w, x, solver=solver)[0] * target), (0, 1))(w, x)

    def unrolled(w, x):
        z = jax.lax.fori_loop(0, unrolled_steps, lambda _, z: f(w, z, x), jnp.zeros_like(x))
        return jnp.sum(z * target)

    return implicit, jax.grad(unrolled, (0, 1))(w, x)


@functools.partial(jax.jit, static_argnames=("activation", "conv", "eps"))
def _directional_derivatives(w, x, target, dws, dxs, *, activation: str, conv: bool, eps: float):
    """Float64: the implicit directional derivatives of sum(z* . target) along (dw, dx) [k, ...] and
    their central finite differences with step eps."""
    f = layer_map(activation, conv)
    solver = Solver(tol=1e-13, max_iter=2000)
    loss = lambda w, x: jnp.sum(deq_solve(f, w, x, solver=solver)[0] * target)
    gw, gx = jax.grad(loss, (0, 1))(w, x)
    analytic = jax.vmap(lambda dw, dx: jnp.sum(gw * dw) + jnp.sum(gx * dx))(dws, dxs)
    finite = jax.vmap(lambda dw, dx: (loss(w + eps * dw, x + eps * dx) - loss(w - eps * dw, x - eps * dx))
                      / (2 * eps))(dws, dxs)
    return analytic, finite


def gradient_errors(conv: bool, activation: str = "tanh", seed: int = 0, unrolled_steps: int = 400
                    ) -> dict[str, float]:
    """Relative errors of the implicit gradient of a pcDEQ layer on a small problem (dense [4, 16] or
    conv [2, 6, 6, 3], W >= 0 with row sums about 0.7): vs backprop through `unrolled_steps` unrolled
    iterations (float32, tol 1e-7), and vs central finite differences (eps 1e-5) of the float64 forward
    along 3 random directions (the largest of the 3 relative errors)."""
    # NumPy draws: each jax.random shape would be its own (slow to compile) threefry program.
    rng = np.random.default_rng(seed)
    shape_x = (2, 6, 6, 3) if conv else (4, 16)
    shape_w = (3, 3, 3, 3) if conv else (16, 16)
    w = jnp.asarray(rng.uniform(size=shape_w) * (0.05 if conv else 0.08), jnp.float32)   # row sums ~0.7
    x = injection("pcdeq1", jnp.asarray(rng.standard_normal(shape_x), jnp.float32))
    target = jnp.asarray(rng.standard_normal(shape_x), jnp.float32)
    static = dict(activation=activation, conv=conv)
    g_imp, g_unr = _implicit_and_unrolled_grads(w, x, target, unrolled_steps=unrolled_steps, **static)
    out = {"unrolled_rel_err_w": pm.relative_error(g_imp[0], g_unr[0]),
           "unrolled_rel_err_x": pm.relative_error(g_imp[1], g_unr[1])}
    dws, dxs = rng.standard_normal((3,) + shape_w), rng.standard_normal((3,) + shape_x)
    with jax.enable_x64(True):
        analytic, finite = _directional_derivatives(
            *(jnp.asarray(np.asarray(a), jnp.float64) for a in (w, x, target, dws, dxs)), eps=1e-5, **static)
        analytic, finite = np.asarray(analytic), np.asarray(finite)
    out["finite_difference_rel_err"] = max(pm.relative_error(a, f) for a, f in zip(finite, analytic))
    return out


# The claims' thresholds (stated in the claims' text).
FEW_ITERATIONS = 30        # "few": at most 15% of the solver's cap of 200
UNIQUE_TO = 1e-4           # fixed points from two starts agree to this relative distance
ON_PAR_POINTS = 1.0        # accuracy "on par": the best pcDEQ within 1 point of the best baseline
GRADIENT_TOL = 1e-5        # float32 implicit vs unrolled
FINITE_DIFFERENCE_TOL = 1e-6


def gradient_claim(metrics: dict[str, float], cases) -> Claim:
    """The gradient check's claim from the `pcdeq/gradcheck` metrics over `cases` ("dense_tanh", ...)."""
    unrolled, fd = metrics["max_unrolled_rel_err"], metrics["max_finite_difference_rel_err"]
    layers = {layer: [c.partition("_")[2] for c in cases if c.startswith(layer + "_")] for layer in ("dense", "conv")}
    checked = "; ".join(f"{layer} ({', '.join(acts)})" for layer, acts in layers.items() if acts)
    return Claim(
        text="The implicit gradient (an adjoint fixed point solved by the same iteration) is the gradient "
             "of the fixed point: it equals backprop through the unrolled iteration",
        ours=f"largest relative error {unrolled:.1e} against 400 unrolled steps (float32) and {fd:.1e} against "
             f"float64 central differences; layers: {checked} (holds below {GRADIENT_TOL:.0e} and "
             f"{FINITE_DIFFERENCE_TOL:.0e})",
        verdict=verdict(unrolled < GRADIENT_TOL and fd < FINITE_DIFFERENCE_TOL))


@registry.experiment("pcdeq/gradcheck")
def gradcheck(config, workdir) -> Result:
    """Implicit gradient vs unrolled differentiation and finite differences, per case "<layer>_<act>"."""
    metrics = {}
    for case in config.cases:
        layer, _, act = case.partition("_")
        if layer not in ("dense", "conv"):
            raise ValueError(f"gradcheck case {case!r}: expected 'dense_<activation>' or 'conv_<activation>'")
        metrics.update({f"{case}/{k}": v for k, v in gradient_errors(layer == "conv", act).items()})
    metrics["max_unrolled_rel_err"] = max(v for k, v in metrics.items() if "unrolled" in k)
    metrics["max_finite_difference_rel_err"] = max(v for k, v in metrics.items() if "finite" in k)
    return Result(metrics=metrics, headline="max_unrolled_rel_err", claims=[gradient_claim(metrics, config.cases)],
                  notes=f"{len(config.cases)} layer/activation cases; float32 implicit vs 400 unrolled steps; "
                        "float64 central differences, eps 1e-5.")


@dataclasses.dataclass(frozen=True)
class Run:
    """One trained network of a reproduce run: what it is and its metrics (prefix removed)."""

    label: str
    architecture: str
    variant: str
    activation: str
    solver: str
    metrics: dict

    @property
    def name(self) -> str:
        variant = {"pcdeq1": "pcDEQ-1", "pcdeq2": "pcDEQ-2", "deq": "DEQ", "explicit": "explicit"}[self.variant]
        return f"{variant} {self.activation}" + (" (Anderson)" if self.solver == "anderson" else "")

    @property
    def constrained(self) -> bool:
        return self.variant in CONSTRAINED

    def blocks(self) -> dict[str, dict[str, float]]:
        """{block: {"rate", "plain_iters_1e-4", "converged", "uniqueness_distance", ...}} of the analysis."""
        out = {}
        for key, value in self.metrics.items():
            block, _, metric = key.rpartition("/")
            if block:
                out.setdefault(block, {})[metric] = value
        return out


def training_runs(metrics: dict[str, float], parts) -> list[Run]:
    """The `train:<arg>` parts of a reproduce config that ran (have metrics), in order."""
    from jaxml.papers.pcdeq.configs import train as train_config

    runs = []
    for part in parts:
        name, _, arg = part.partition(":")
        prefix = part_label(part) + "/"
        sub = {k[len(prefix):]: v for k, v in metrics.items() if k.startswith(prefix)}
        if name != "train" or not sub:
            continue
        model = train_config.get_config(arg).model
        runs.append(Run(prefix[:-1], model.architecture, model.variant, model.activation, model.solver, sub))
    return runs


def _epochs(runs) -> str:
    """`"1 epoch"`, or `"1 epoch (multi_conv: 0.11)"` when the runs trained for different lengths."""
    first = runs[0].metrics["epochs"]
    others = [(r.architecture, r.metrics["epochs"]) for r in runs if r.metrics["epochs"] != first]
    text = f"{first:.2g} epoch" + ("" if first == 1 else "s")
    return text + (f" ({', '.join(f'{a}: {e:.2g}' for a, e in dict(others).items())})" if others else "")


def convergence_claim(runs: list[Run], scale: str) -> Claim:
    """pcDEQ's headline: every trained pcDEQ layer converges geometrically (fitted rate < 1) to a unique
    fixed point in few iterations, while the unconstrained DEQ of the same architecture needs more or
    does not converge."""
    text = ("pcDEQ layers have a unique fixed point that plain iteration reaches geometrically in few "
            "iterations; the unconstrained DEQ needs more iterations or does not converge")
    pc, deq = [r for r in runs if r.constrained], [r for r in runs if r.variant == "deq"]
    if not pc:
        return Claim(text, ours=f"no pcDEQ network trained at scale {scale}", verdict=verdict(None))
    blocks = [b for r in pc for b in r.blocks().values()]
    iters = [b["plain_iters_1e-4"] for b in blocks]
    ours = (f"{len(blocks)} layer(s) of {', '.join(f'{r.architecture} {r.name}' for r in pc)} after {_epochs(pc)} "
            f"on Fashion-MNIST: fitted rates "
            f"{pm.value_range(b['rate'] for b in blocks)}, "
            f"{pm.value_range(iters, '{:.0f}') if min(iters) > 0 else 'not all'} iterations to 1e-4, fixed points "
            f"from two starts within {max(b['uniqueness_distance'] for b in blocks):.0e}")
    pc_ok = (all(b["rate"] < 1 and b["converged"] == 1 and b["uniqueness_distance"] < UNIQUE_TO
                 and 0 < b["plain_iters_1e-4"] <= FEW_ITERATIONS for b in blocks))
    compared = []
    for r in deq:
        same = [b["plain_iters_1e-4"] for p in pc if p.architecture == r.architecture for b in p.blocks().values()]
        theirs = list(r.blocks().values())
        if not same or not theirs:
            continue
        counts = ", ".join(f"{b['plain_iters_1e-4']:.0f}" if b["plain_iters_1e-4"] > 0 else "not reached in 200"
                           for b in theirs)
        ours += (f"; unconstrained DEQ ({r.architecture}, {_epochs([r])}): rate "
                 f"{pm.value_range(b['rate'] for b in theirs)}, {counts} iterations")
        compared.append(pm.fewer_iterations(same, [b["plain_iters_1e-4"] for b in theirs]))
    ours += f" (few: <= {FEW_ITERATIONS}; unique: < {UNIQUE_TO:.0e})"
    holds = None if scale == "tiny" or not compared else pc_ok and all(compared)
    return Claim(text, ours=ours, verdict=verdict(holds))


def accuracy_claim(runs: list[Run], scale: str) -> Claim:
    """pcDEQ's accuracy is on par with the baselines (unconstrained DEQ, weight-tied explicit) of the
    same parameter count: the best pcDEQ within ON_PAR_POINTS of the best baseline, per architecture."""
    text = "pcDEQ reaches accuracy on par with baselines of the same parameter count"
    parts, gaps = [], []
    for arch in dict.fromkeys(r.architecture for r in runs):
        same = [r for r in runs if r.architecture == arch]
        pc, base = [r for r in same if r.constrained], [r for r in same if not r.constrained]
        if not pc or not base:
            continue
        params = {r.metrics["params"] for r in same}
        accs = lambda rs: ", ".join(f"{r.name} {100 * r.metrics['test_accuracy']:.1f}%" for r in rs)
        gap = 100 * pm.accuracy_gap([r.metrics["test_accuracy"] for r in pc], [r.metrics["test_accuracy"] for r in base])
        parts.append(f"{arch} ({', '.join(f'{p:,.0f}' for p in sorted(params))} params, {_epochs(same)}): "
                     f"{accs(pc)} vs {accs(base)}; best pcDEQ minus best baseline {gap:+.1f} points")
        gaps.append(gap if len(params) == 1 else None)
    if not parts:
        return Claim(text, ours=f"no pcDEQ network with a baseline trained at scale {scale}", verdict=verdict(None))
    holds = None if scale == "tiny" or None in gaps else all(g >= -ON_PAR_POINTS for g in gaps)
    return Claim(text, ours="; ".join(parts) + f" (on par: within {ON_PAR_POINTS:g} point)", verdict=verdict(holds))


def reproduce_claims(metrics: dict[str, float], parts, scale: str) -> list[Claim]:
    """The claims that need several training runs (the gradient check brings its own)."""
    runs = training_runs(metrics, parts)
    return [convergence_claim(runs, scale), accuracy_claim(runs, scale)]


@registry.experiment("pcdeq/reproduce")
def reproduce(config, workdir) -> Result:
    """Runs the parts of `config.parts` (resumable, one workdir each) and states the paper's claims."""
    workdir = make_workdir(workdir)
    headline = next((part_label(p) for p in config.parts if p.startswith("train:")), None)
    result = gather_parts("pcdeq", config, _CONFIGS, workdir, headline_part=headline,
                          claims=lambda m: reproduce_claims(m, config.parts, config.scale))
    runs = training_runs(result.metrics, config.parts)
    if runs:
        (workdir / "table.md").write_text(table_markdown(runs))
        # One figure with every network's residual curves instead of one figure per network (those stay
        # in the parts' work folders).
        curves = {r.name if r.architecture == "linear" else f"{r.architecture} {r.name}":
                  json.loads((workdir / r.label / "convergence.json").read_text())
                  for r in runs if (workdir / r.label / "convergence.json").exists()}
        if curves:
            result.figures = [f for f in result.figures if not pathlib.Path(f).name.startswith("convergence_")]
            result.figures.append(plot_all_convergence(workdir / "convergence_all_networks.png", curves))
    result.notes = f"Fashion-MNIST, scale {config.scale}. " + result.notes
    return result


def plot_all_convergence(path: pathlib.Path, curves: dict[str, dict], title: str = "") -> str:
    """Plain iteration's residual vs iteration for every DEQ block of every network (`convergence.json`
    of each run), pcDEQ solid and the unconstrained DEQ dashed."""
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(6.5, 4.0))
    for network, blocks in curves.items():
        for block, a in blocks.items():
            h = np.asarray(a["plain"], dtype=float)
            name = network if len(blocks) == 1 else f"{network} {block}"
            ax.semilogy(np.arange(1, len(h) + 1), h, "--" if network.startswith(("DEQ", "multi_conv DEQ")) else "-",
                        label=f"{name}: rate {a['rate']:.2f}")
    ax.axhline(1e-4, color="gray", lw=0.8, ls=":")
    ax.set(xlabel="iteration k", ylabel="relative residual",
           title=title or "trained DEQ layers on test images: plain iteration from z0 = 0")
    ax.legend(fontsize=7)
    return save_figure(fig, path, dpi=110)


def table_markdown(runs: list[Run]) -> str:
    lines = ["| network | params | epochs | test acc | s/epoch | fwd it (last ep) | bwd it (last ep) | "
             "rate (blocks) | unique |", "|---|---|---|---|---|---|---|---|---|"]
    for r in runs:
        m, blocks = r.metrics, r.blocks().values()
        rates = [b["rate"] for b in blocks if "rate" in b]
        uniq = [b["uniqueness_distance"] for b in blocks if "uniqueness_distance" in b]
        fmt = lambda k: f"{m[k]:.2f}" if k in m else "—"
        lines.append(f"| {r.architecture} {r.name} | {int(m['params']):,} | {m['epochs']:g} | {m['test_accuracy']:.4f} | "
                     f"{m['s_per_epoch']:.1f} | {fmt('last_epoch_forward_iterations')} | "
                     f"{fmt('last_epoch_backward_iterations')} | "
                     f"{', '.join(f'{x:.3f}' for x in rates) or '—'} | {(f'{max(uniq):.1e}' if uniq else '—')} |")
    return "\n".join(lines) + "\n"
