"""AIM experiments: the loss-accuracy study across model sizes and checkpoints, the ablations and
the references (experiment `aim/study`), and `aim/reproduce`.

The study, on Fashion-MNIST (images only for pretraining; labels only for the probes):
  1. pretrain each size in `config.sizes` with the one loop (checkpoints and the validation
     next-patch loss at `config.pretrain.checkpoints` evenly spaced steps);
  2. at every checkpoint, extract frozen features (full attention, mean of the last k blocks) and
     fit the attentive probe (`config.probe.seeds` seeds); at the last checkpoint also the
     attentive probe on the last block only and the linear probe;
  3. the same probes on a randomly initialised trunk of each size, and on the trunk of a
     supervised ViT of the ablation size trained for as many steps;
  4. the ablations at `config.ablation_size`: plain causal attention, raw-pixel targets, head
     depth 0 and 4 (the paper's head: 2 blocks here);
  5. the Pearson and Spearman correlations of validation loss and attentive-probe accuracy over
     every (size, checkpoint), the tables and the figures.

Each finished measurement is a row of `rows.jsonl` in the workdir and each pretraining run resumes
from its checkpoints, so a study killed midway resumes where it stopped.
"""

from __future__ import annotations

import dataclasses
import pathlib
import time

import jax
import jax.numpy as jnp
import ml_collections
import numpy as np

from jaxml import progress
from jaxml.core import registry
from jaxml.core.experiment import Claim, Result, Rows, gather_parts, make_workdir, pyplot, save_figure, verdict
from jaxml.core.mesh import num_params
from jaxml.core.metrics import read_metrics
from jaxml.core.train import default_config, load_state_params, train_and_evaluate
from jaxml.data import fashion_mnist
from jaxml.models.vit import image_to_patches
from jaxml.papers.aim import metrics as am
from jaxml.papers.aim.model import AIM, AIMTrunk, average_last_blocks
from jaxml.papers.aim.probe import extract_features
from jaxml.papers.aim.task import (PretrainTask, ProbeTask, SupervisedTask, SupervisedViT, pixel_stats,
                                   standardize)

ABLATIONS = ("causal", "raw", "head0", "head4")

# The claims' thresholds (stated in the claims' text).
STRONG_CORRELATION = -0.7   # "correlates": Pearson r of loss and accuracy at most -0.7
CLEAR_MARGIN = 2.0          # "clear margin": AIM over random trunk by >= 2 points and > 2 pooled stds


@dataclasses.dataclass(frozen=True)
class RunSpec:
    """One pretraining (or supervised) run of the study."""

    name: str
    hidden: int
    layers: int
    heads: int
    head_depth: int = 2
    prefix_mode: str = "prefix"
    normalize_targets: bool = True
    supervised: bool = False

    def trunk(self, patch_size: int) -> AIMTrunk:
        return AIMTrunk(patch_size, self.hidden, self.layers, self.heads)

    def model(self, patch_size: int) -> AIM:
        return AIM(patch_size, self.hidden, self.layers, self.heads, head_depth=self.head_depth,
                   head_width=self.hidden)


def size_specs(config) -> dict[str, RunSpec]:
    """The model sizes, smallest first (a ConfigDict iterates its keys alphabetically)."""
    specs = [RunSpec(name, int(s.hidden), int(s.layers), int(s.heads)) for name, s in config.sizes.items()]
    return {s.name: s for s in sorted(specs, key=lambda s: (s.hidden * s.hidden * s.layers, s.name))}


def ablation_specs(config) -> dict[str, RunSpec]:
    base = size_specs(config)[config.ablation_size]
    out = {}
    for ab in config.ablations:
        if ab not in ABLATIONS:
            raise ValueError(f"aim/study: ablation {ab!r}; accepted: {ABLATIONS}")
        change = {"causal": dict(prefix_mode="causal"), "raw": dict(normalize_targets=False),
                  "head0": dict(head_depth=0), "head4": dict(head_depth=4)}[ab]
        out[ab] = dataclasses.replace(base, name=f"{base.name}_{ab}", **change)
    return out


# --- Data ------------------------------------------------------------------------------------------

def load_data(config) -> dict[str, np.ndarray]:
    """Fashion-MNIST cut to the config's sizes: pretraining images (train split, no labels),
    validation images for the next-patch loss (test split), probe train (train split, labelled)
    and probe test (test split) sets."""
    d = config.data
    # Only the records used are decoded (a tiny run reads 512 of the 60,000 training images).
    train, test = fashion_mnist.load("train", in_memory=False), fashion_mnist.load("test", in_memory=False)
    for key, n, limit in (("pretrain_examples", d.pretrain_examples, len(train)),
                          ("val_examples", d.val_examples, len(test)),
                          ("probe_train_examples", d.probe_train_examples, len(train)),
                          ("probe_test_examples", d.probe_test_examples, len(test))):
        if not 8 <= n <= limit:
            raise ValueError(f"aim/study: data.{key}={n} must be in [8, {limit}]")
    train_part = train[np.arange(max(d.pretrain_examples, d.probe_train_examples))]
    val = test[np.arange(d.val_examples)]                                       # the first test images
    probe_test = test[np.arange(len(test) - d.probe_test_examples, len(test))]   # the last ones
    return dict(pretrain=train_part["image"][:d.pretrain_examples], val=val["image"],
                probe_train=train_part["image"][:d.probe_train_examples],
                probe_train_labels=train_part["label"][:d.probe_train_examples],
                probe_test=probe_test["image"], probe_test_labels=probe_test["label"])


# --- Loop configs ---------------------------------------------------------------------------------

def pretrain_loop_config(config, spec: RunSpec) -> ml_collections.ConfigDict:
    """The loop config of a pretraining run: AdamW (0.9, 0.95), warm-up then cosine to 0, clip 1."""
    p = config.pretrain
    c = default_config()
    c.experiment = config.experiment
    c.task = ""   # the task object is passed to the loop
    c.seed = config.seed
    c.batch_size = p.batch_size
    c.eval_batch_size = p.eval_batch_size
    c.num_steps = p.steps
    c.optimizer = ml_collections.ConfigDict(dict(name="adamw", learning_rate=p.learning_rate, b1=0.9, b2=0.95,
                                                 weight_decay=p.weight_decay, grad_clip_norm=1.0))
    c.schedule = ml_collections.ConfigDict(dict(name="cosine", warmup_steps=max(1, round(p.warmup_fraction * p.steps)),
                                                end_factor=0.0))
    every = checkpoint_every(p.steps, p.checkpoints)
    c.eval_every_steps = every
    c.checkpoint_every_steps = every
    c.keep_checkpoints = p.checkpoints
    c.log_every_steps = max(1, min(every, p.steps // 10 or 1))
    c.async_checkpoint = False
    c.mesh = ml_collections.ConfigDict(dict(data=-1, model=int(config.model_axis)))
    return c


def checkpoint_every(steps: int, checkpoints: int) -> int:
    if checkpoints < 1 or steps % checkpoints:
        raise ValueError(f"aim/study: pretrain.steps={steps} must be a multiple of pretrain.checkpoints={checkpoints}")
    return steps // checkpoints


def probe_loop_config(config, seed: int, n_train: int) -> ml_collections.ConfigDict:
    p = config.probe
    c = default_config()
    c.experiment = config.experiment
    c.task = ""
    c.seed = seed
    c.batch_size = p.batch_size
    c.eval_batch_size = p.eval_batch_size
    c.num_epochs = float(p.epochs)
    c.optimizer = ml_collections.ConfigDict(dict(name="adamw", learning_rate=p.learning_rate,
                                                 weight_decay=p.weight_decay, grad_clip_norm=0.0))
    steps = max(1, int(np.ceil(p.epochs * (n_train // p.batch_size))))
    c.schedule = ml_collections.ConfigDict(dict(name="cosine", warmup_steps=max(1, steps // 10), end_factor=0.0))
    c.log_every_steps = max(1, steps // 4)
    c.checkpoint_every_steps = 10 ** 9   # a probe takes seconds: only the final checkpoint
    c.keep_checkpoints = 1
    c.async_checkpoint = False
    return c


# --- Study pieces ---------------------------------------------------------------------------------

def pretrain(config, spec: RunSpec, data, workdir: pathlib.Path, pixels: tuple[float, float]):
    """Runs (or resumes) one pretraining run; returns (task, loop config, {checkpoint step: val loss, or
    val accuracy for the supervised run}, training-loop seconds)."""
    loop = pretrain_loop_config(config, spec)
    patch = config.patch_size
    if spec.supervised:
        model = SupervisedViT(spec.trunk(patch))
        task = SupervisedTask(model, data["probe_train"], data["probe_train_labels"], data["probe_test"],
                              data["probe_test_labels"], pixel_mean=pixels[0], pixel_std=pixels[1])
    else:
        task = PretrainTask(spec.model(patch), data["pretrain"], data["val"], spec.prefix_mode,
                            spec.normalize_targets, pixel_mean=pixels[0], pixel_std=pixels[1])
    run_dir = workdir / "runs" / spec.name
    t0 = time.perf_counter()
    outcome = train_and_evaluate(loop, run_dir, task=task)
    progress.log(f"aim: {spec.name} trained in {progress.format_duration(time.perf_counter() - t0)} "
                 f"(loop time {progress.format_duration(outcome.metrics['train_time_s'])})")
    key = "val/accuracy" if spec.supervised else "val/loss"
    losses = {int(r["step"]): float(r[key]) for r in read_metrics(run_dir, "eval") if key in r}
    return task, loop, losses, outcome.metrics["train_time_s"]


def feature_sets(trunk: AIMTrunk, trunk_params, data, pixels, last_k: int) -> dict:
    """{(split, k): features} for k in (1, last_k) on the probe train and test images."""
    ks = sorted({1, int(last_k)})

    def fn(images):
        _, blocks = trunk.apply({"params": trunk_params}, standardize(images, *pixels), None)
        return {k: average_last_blocks(blocks, k) for k in ks}

    out = {}
    for split in ("probe_train", "probe_test"):
        for k, feats in extract_features(fn, data[split]).items():
            out[(split, k)] = feats
    return out


PROBE_BANKS = {
    # name -> (kind, last_k from the config or 1)
    "attentive": ("attentive", "k"), "attentive_last": ("attentive", 1), "linear": ("linear", "k"),
}


def fit_probes(config, names, feats: dict, data, seed: int, workdir: pathlib.Path) -> dict[str, float]:
    """Test accuracies `{name: accuracy}` of the probes `names` (keys of `PROBE_BANKS`), trained
    side by side in one loop run on frozen features `{(split, k): [n, N, d]}`."""
    k = int(config.probe.last_k)
    probes = tuple((n, PROBE_BANKS[n][0], k if PROBE_BANKS[n][1] == "k" else 1) for n in names)
    ks = sorted({kk for _, _, kk in probes})
    task = ProbeTask(probes, {kk: feats[("probe_train", kk)] for kk in ks}, data["probe_train_labels"],
                     {kk: feats[("probe_test", kk)] for kk in ks}, data["probe_test_labels"], heads=config.probe.heads)
    loop = probe_loop_config(config, seed, len(data["probe_train_labels"]))
    outcome = train_and_evaluate(loop, workdir, task=task)
    return {n: float(outcome.metrics[f"test/{n}/accuracy"]) for n in names}


def probe_rows(config, rows: Rows, run: str, step: int, trunk, trunk_params, data, pixels, workdir,
               names, seeds) -> None:
    """Adds the rows `run|step|seed` (accuracy of each probe in `names`) that are missing;
    features are extracted only when a row is missing."""
    feats = None
    for seed in seeds:
        key = f"{run}|{step}|{seed}"
        row = rows.get(key)
        if row is not None and set(names) <= set(row["accuracy"]):
            continue
        if feats is None:
            feats = feature_sets(trunk, trunk_params, data, pixels, config.probe.last_k)
        t0 = time.perf_counter()
        # One folder per bank: a bank of other probes has other params (and checkpoints).
        folder = "_".join([key.replace("|", "_"), *names])
        accs = fit_probes(config, names, feats, data, seed, workdir / "probes" / folder)
        rows.add(key, run=run, step=step, seed=seed, accuracy=accs, seconds=time.perf_counter() - t0)
        progress.log(f"aim: probes on {run} step {step}, seed {seed}: "
                     + ", ".join(f"{n} {a:.4f}" for n, a in accs.items()))


def accuracy_of(rows: Rows, run: str, step: int, name: str, seeds) -> tuple[float, float]:
    return am.mean_std([rows.get(f"{run}|{step}|{s}")["accuracy"][name] for s in seeds])


# --- The study --------------------------------------------------------------------------------------

@registry.experiment("aim/study")
def study(config, workdir) -> Result:
    """Pretrains, probes and ablates as the module docstring says; returns the tables' numbers."""
    workdir = make_workdir(workdir)
    rows = Rows(workdir / "rows.jsonl")
    data = load_data(config)
    pixels = pixel_stats(data["pretrain"])
    seeds = tuple(range(config.seed, config.seed + int(config.probe.seeds)))
    # Every trunk gets the same bank of probes: one compiled program serves them all (the persistent
    # compilation cache), and every checkpoint has all three accuracies.
    every_probe = tuple(PROBE_BANKS)
    patch = config.patch_size
    sizes, ablations = size_specs(config), ablation_specs(config)
    if config.ablation_size not in sizes:
        raise ValueError(f"aim/study: ablation_size {config.ablation_size!r}; accepted: {sorted(sizes)}")
    metrics: dict[str, float] = {}
    points = []   # (size, step, val loss, attentive accuracy mean, std)
    trunk_params_count = {}
    for name, spec in sizes.items():
        task, loop, losses, train_time = pretrain(config, spec, data, workdir, pixels)
        largest = (name, task, loop)   # sizes come smallest first: the figure shows the last one
        metrics[f"{name}/train_time_s"] = train_time
        trunk = spec.trunk(patch)
        for step in sorted(losses):
            params = load_state_params(workdir / "runs" / name, task, loop, step=step)
            trunk_params_count[name] = num_params(params["trunk"])
            probe_rows(config, rows, name, step, trunk, params["trunk"], data, pixels, workdir, every_probe, seeds)
            acc, std = accuracy_of(rows, name, step, "attentive", seeds)
            points.append((name, step, losses[step], acc, std))
            metrics[f"{name}/step{step}/val_loss"] = losses[step]
            metrics[f"{name}/step{step}/attentive"] = acc
            metrics[f"{name}/step{step}/linear"] = accuracy_of(rows, name, step, "linear", seeds)[0]
        final = max(losses)
        metrics[f"{name}/val_loss"] = losses[final]
        for label in every_probe:
            metrics[f"{name}/{label}"], metrics[f"{name}/{label}_std"] = accuracy_of(rows, name, final, label, seeds)
        metrics[f"{name}/params"] = float(trunk_params_count[name])
        # The random-trunk reference of the same size.
        random_params = jax.jit(trunk.init)(jax.random.PRNGKey(config.seed + 99),
                                            jnp.zeros((1,) + data["pretrain"].shape[1:], jnp.float32))["params"]
        probe_rows(config, rows, f"{name}_random", 0, trunk, random_params, data, pixels, workdir, every_probe, seeds)
        for label in ("attentive", "linear"):
            metrics[f"{name}_random/{label}"], metrics[f"{name}_random/{label}_std"] = accuracy_of(
                rows, f"{name}_random", 0, label, seeds)

    base = sizes[config.ablation_size]
    for ab, spec in ablations.items():
        task, loop, losses, train_time = pretrain(config, spec, data, workdir, pixels)
        final = max(losses)
        params = load_state_params(workdir / "runs" / spec.name, task, loop, step=final)
        probe_rows(config, rows, spec.name, final, spec.trunk(patch), params["trunk"], data, pixels, workdir,
                   every_probe, seeds)
        metrics[f"{ab}/val_loss"] = losses[final]
        metrics[f"{ab}/train_time_s"] = train_time
        for label in every_probe:
            metrics[f"{ab}/{label}"], metrics[f"{ab}/{label}_std"] = accuracy_of(rows, spec.name, final, label, seeds)

    if config.supervised:
        spec = dataclasses.replace(base, name=f"{base.name}_supervised", supervised=True)
        task, loop, accs, train_time = pretrain(config, spec, data, workdir, pixels)
        final = max(accs)
        params = load_state_params(workdir / "runs" / spec.name, task, loop, step=final)
        probe_rows(config, rows, spec.name, final, spec.trunk(patch), params["trunk"], data, pixels, workdir,
                   every_probe, seeds)
        metrics["supervised/val_accuracy"] = accs[final]
        metrics["supervised/train_time_s"] = train_time
        for label in ("attentive", "linear"):
            metrics[f"supervised/{label}"], metrics[f"supervised/{label}_std"] = accuracy_of(
                rows, spec.name, final, label, seeds)

    losses_all = [p[2] for p in points]
    accs_all = [p[3] for p in points]
    if len(points) >= 3:
        metrics["pearson_loss_accuracy"] = am.pearson(losses_all, accs_all)
        metrics["spearman_loss_accuracy"] = am.spearman(losses_all, accs_all)
        metrics["pearson_loss_linear"] = am.pearson(
            losses_all, [metrics[f"{p[0]}/step{p[1]}/linear"] for p in points])
    ab_name = config.ablation_size
    metrics["margin_over_random"] = 100 * (metrics[f"{ab_name}/attentive"] - metrics[f"{ab_name}_random/attentive"])

    figures = [plot_loss_vs_accuracy(points, metrics, workdir / "aim_loss_vs_accuracy.png")]
    name_last, task_last, loop_last = largest
    params_last = load_state_params(workdir / "runs" / name_last, task_last, loop_last)
    figures.append(plot_predictions(task_last, params_last, data["val"][:4], workdir / "aim_next_patch.png"))
    tables = write_tables(config, points, metrics, sizes, ablations, seeds, workdir)
    # The headline: the correlation; a run with fewer than 3 (size, checkpoint) points (tiny) has the
    # margin over the random trunk instead.
    return Result(metrics=metrics,
                  headline="pearson_loss_accuracy" if "pearson_loss_accuracy" in metrics else "margin_over_random",
                  figures=figures, claims=study_claims(config, metrics, sizes, ablations),
                  notes=(f"Fashion-MNIST {config.data.pretrain_examples} images, patch {patch}, sizes "
                         + ", ".join(f"{n}: d={s.hidden} x {s.layers} blocks" for n, s in sizes.items())
                         + f"; {config.pretrain.steps} steps of batch {config.pretrain.batch_size}; probes on "
                         f"{config.data.probe_train_examples}/{config.data.probe_test_examples} images, "
                         f"{len(seeds)} seed(s); tables in {tables}."))


def study_claims(config, m: dict[str, float], sizes, ablations) -> list[Claim]:
    names = list(sizes)
    ab = config.ablation_size
    claims = []
    if "pearson_loss_accuracy" in m:
        r = m["pearson_loss_accuracy"]
        claims.append(Claim(
            "The pretraining validation loss correlates with the downstream attentive-probe accuracy "
            f"across model sizes and checkpoints (Pearson r <= {STRONG_CORRELATION})",
            f"Pearson r = {r:.3f}, Spearman rho = {m['spearman_loss_accuracy']:.3f} over "
            f"{sum(1 for key in m if key.endswith('/attentive') and '/step' in key)} (size, checkpoint) points",
            "strong correlation (Fig. 4: loss vs. 15-benchmark average, 600M-7B)",
            verdict(r <= STRONG_CORRELATION if np.isfinite(r) else None)))
    if len(names) >= 2:
        losses = [m[f"{n}/val_loss"] for n in names]
        claims.append(Claim("The pretraining loss decreases with model capacity",
                            "final val loss " + ", ".join(f"{n} {v:.4f}" for n, v in zip(names, losses)),
                            "600M > 1B > 3B > 7B (Fig. 4)",
                            verdict(all(a > b for a, b in zip(losses, losses[1:])))))
    margins = {n: 100 * (m[f"{n}/attentive"] - m[f"{n}_random/attentive"]) for n in names}
    pooled = {n: 100 * np.hypot(m[f"{n}/attentive_std"], m[f"{n}_random/attentive_std"]) for n in names}
    claims.append(Claim(
        f"AIM pretraining gives features better than a random trunk of the same size (attentive probe; clear "
        f"margin: >= {CLEAR_MARGIN} points and > 2 pooled seed stds, at every size)",
        ", ".join(f"{n} {100 * m[f'{n}/attentive']:.2f}% vs {100 * m[f'{n}_random/attentive']:.2f}% "
                  f"(+{margins[n]:.2f})" for n in names)
        + (" (one probe seed: no spread measured)" if int(config.probe.seeds) == 1 else ""),
        "", verdict(all(margins[n] >= CLEAR_MARGIN and margins[n] > 2 * pooled[n] for n in names))))
    claims.append(Claim(
        "Averaging the last k blocks' features probes at least as well as the last block alone (every size)",
        f"last {config.probe.last_k} vs last block: " + ", ".join(
            f"{n} {100 * m[f'{n}/attentive']:.2f}% vs {100 * m[f'{n}/attentive_last']:.2f}%" for n in names),
        "AIM-0.6B 79.4 vs 78.5; AIM-7B 84.0 vs 82.4 (IN-1k, best vs last layer)",
        verdict(all(m[f"{n}/attentive"] >= m[f"{n}/attentive_last"] for n in names))))
    base = 100 * m[f"{ab}/attentive"]
    texts = {"causal": ("Prefix attention beats plain causal attention under a bidirectional probe", "prefix"),
             "raw": ("Per-patch normalised pixel targets beat raw pixel targets", "normalised"),
             "head0": ("An MLP prediction head beats a linear head (depth 0)", "head depth 2"),
             "head4": ("A deeper head adds little: head depth 2 is within 1 point of depth 4", "head depth 2")}
    for name in ablations:
        text, ours_label = texts[name]
        other = 100 * m[f"{name}/attentive"]
        holds = base >= other - 1.0 if name == "head4" else base > other
        claims.append(Claim(text, f"{ours_label} {base:.2f}% vs {name} {other:.2f}% (attentive probe, size {ab})",
                            "the paper's ablation (its numbers are not available to us)", verdict(holds)))
    return claims


# --- Tables and figures -----------------------------------------------------------------------------

def _pct(m, key):
    std = m.get(f"{key}_std", 0.0)
    return f"{100 * m[key]:.2f} ± {100 * std:.2f}"


def write_tables(config, points, m, sizes, ablations, seeds, workdir: pathlib.Path) -> str:
    """Writes `tables.md` (loss vs accuracy, ablations, references); returns its path."""
    lines = [f"Attentive-probe accuracy (%) on {config.data.probe_test_examples} Fashion-MNIST test images, mean ± std "
             f"over {len(seeds)} probe seed(s); features: mean of the last {config.probe.last_k} blocks.", "",
             "| size | trunk params | step | val loss | attentive acc | linear acc |", "|---|---|---|---|---|---|"]
    for name, step, loss, acc, std in points:
        lines.append(f"| {name} | {int(m[f'{name}/params']):,} | {step} | {loss:.4f} | {100 * acc:.2f} ± {100 * std:.2f} | "
                     f"{100 * m[f'{name}/step{step}/linear']:.2f} |")
    if "pearson_loss_accuracy" in m:
        lines += ["", f"Pearson r = {m['pearson_loss_accuracy']:.3f}, Spearman rho = {m['spearman_loss_accuracy']:.3f} "
                      f"over {len(points)} points (linear probe: r = {m['pearson_loss_linear']:.3f})."]
    lines += ["", "| run | val loss | attentive (last k) | attentive (last block) | linear |", "|---|---|---|---|---|"]
    ab = config.ablation_size
    lines.append(f"| {ab} (prefix, normalised, head 2) | {m[f'{ab}/val_loss']:.4f} | {_pct(m, f'{ab}/attentive')} | "
                 f"{_pct(m, f'{ab}/attentive_last')} | {_pct(m, f'{ab}/linear')} |")
    for name in ablations:
        lines.append(f"| {ab} {name} | {m[f'{name}/val_loss']:.4f} | {_pct(m, f'{name}/attentive')} | "
                     f"{_pct(m, f'{name}/attentive_last')} | {_pct(m, f'{name}/linear')} |")
    lines.append(f"| {ab} random trunk | | {_pct(m, f'{ab}_random/attentive')} | | {_pct(m, f'{ab}_random/linear')} |")
    if "supervised/attentive" in m:
        lines.append(f"| {ab} supervised ViT (val acc {100 * m['supervised/val_accuracy']:.2f}) | | "
                     f"{_pct(m, 'supervised/attentive')} | | {_pct(m, 'supervised/linear')} |")
    lines += ["", "| size | AIM attentive | random attentive | AIM linear | random linear |", "|---|---|---|---|---|"]
    for name in sizes:
        lines.append(f"| {name} | {_pct(m, f'{name}/attentive')} | {_pct(m, f'{name}_random/attentive')} | "
                     f"{_pct(m, f'{name}/linear')} | {_pct(m, f'{name}_random/linear')} |")
    path = workdir / "tables.md"
    path.write_text("\n".join(lines) + "\n")
    return str(path)


def plot_loss_vs_accuracy(points, m, out: pathlib.Path) -> str:
    """Validation loss against attentive-probe accuracy, one line per size through its checkpoints."""
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(5.2, 3.8))
    for name in dict.fromkeys(p[0] for p in points):
        pts = [p for p in points if p[0] == name]
        ax.errorbar([p[2] for p in pts], [100 * p[3] for p in pts], yerr=[100 * p[4] for p in pts], marker="o",
                    capsize=2, label=f"{name} ({int(m[f'{name}/params']):,} params)")
    title = "AIM on Fashion-MNIST"
    if "pearson_loss_accuracy" in m:
        title += f": Pearson r = {m['pearson_loss_accuracy']:.2f}"
    ax.set(xlabel="validation next-patch loss", ylabel="attentive-probe accuracy (%)", title=title)
    ax.invert_xaxis()
    ax.legend(fontsize=8)
    return save_figure(fig, out)


def plot_predictions(task: PretrainTask, params, images: np.ndarray, out: pathlib.Path) -> str:
    """For a few validation images: the image, and its next-patch predictions (each patch predicted
    from the true patches before it, with the first half of the patches as prefix), shown in pixel
    space by giving each predicted normalised patch the true patch's mean and std (as MAE's figures)."""
    plt = pyplot()
    p = task.model.patch_size
    n = task.n_patches
    prefix = jnp.full((len(images),), n // 2, jnp.int32)
    pred, _ = task.predict(params, images, prefix)
    x = standardize(images, task.pixel_mean, task.pixel_std)
    patches = image_to_patches(x, p)
    mean, std = patches.mean(-1, keepdims=True), jnp.sqrt(patches.var(-1, keepdims=True) + 1e-6)
    shown = pred[:, :-1] * std[:, 1:] + mean[:, 1:] if task.normalize_targets else pred[:, :-1]
    recon = jnp.concatenate([patches[:, :1], shown], axis=1)
    keep = (jnp.arange(n) < n // 2)[None, :, None]
    recon = jnp.where(keep, patches, recon)
    h, w = images.shape[1:3]
    gh, gw = h // p, w // p

    def to_image(tokens):
        return np.asarray(tokens.reshape(-1, gh, gw, p, p).transpose(0, 1, 3, 2, 4).reshape(-1, h, w))

    originals, predicted = to_image(patches), to_image(recon)
    fig, axes = plt.subplots(2, len(images), figsize=(1.6 * len(images), 3.4))
    for i in range(len(images)):
        scale = dict(cmap="gray", vmin=originals[i].min(), vmax=originals[i].max())   # one grey scale per image
        axes[0, i].imshow(originals[i], **scale)
        axes[1, i].imshow(predicted[i], **scale)
        for ax in axes[:, i]:
            ax.axis("off")
    axes[0, 0].set_title("image", fontsize=8, loc="left")
    axes[1, 0].set_title(f"prefix {n // 2} patches + predictions", fontsize=8, loc="left")
    return save_figure(fig, out)


@registry.experiment("aim/reproduce")
def reproduce(config, workdir) -> Result:
    """The parts of configs/reproduce.py at one scale, as one Result."""
    return gather_parts("aim", config, pathlib.Path(__file__).parent / "configs", workdir)
