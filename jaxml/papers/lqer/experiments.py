"""LQER experiments on SmolLM2-135M-Instruct: perplexity of every method at W4 and W3, the rank
sweep, and the singular-value spectra of E and diag(s) E (the paper's Fig. 1a).

SmolLM2's weights come from a Q4_1 GGUF, so the "full-precision" reference is itself the
dequantized 4-bit model: every method here re-quantizes weights that already sit on a 4-bit grid
(per 32 weights), which is easier at W4 than quantizing real bf16 weights.
"""

from __future__ import annotations

import functools
import json
import pathlib
import time

import jax.numpy as jnp
import numpy as np

from jaxml.compress import calibration
from jaxml.compress.linear import quantized_ops
from jaxml import progress
from jaxml.core import registry
from jaxml.core.experiment import Result, gather_parts
from jaxml.data import text
from jaxml.llm.generate import perplexity
from jaxml.papers.lqer.lqer import activation_scale
from jaxml.papers.lqer.methods import Method, quantize_model


def eval_tokens(tokenizer, config) -> np.ndarray:
    """The held-out text: chapters of the test novel of the Austen split (Persuasion)."""
    doc = text.split_documents(text.load_corpus("austen"), seed=0)["test"][0]
    chapters = text.chapters(doc)
    ids = tokenizer.encode("\n\n".join(chapters[:config.eval_chapters]))
    return np.asarray(ids[:config.eval_tokens] if config.eval_tokens > 0 else ids, np.int32)


def calibration_batches(tokenizer, config):
    """`config.calib_sequences` windows of `config.calib_length` tokens from the Shakespeare
    training plays (a different author and genre from the evaluation text)."""
    docs = text.split_documents(text.load_corpus("shakespeare"), seed=0)["train"]
    ids = tokenizer.encode("\n\n".join(text.unwrap(d.text) for d in docs[:6]))
    rng = np.random.default_rng(config.seed)
    starts = rng.choice(len(ids) - config.calib_length, size=config.calib_sequences, replace=False)
    windows = np.stack([ids[s:s + config.calib_length] for s in starts]).astype(np.int32)
    positions = np.broadcast_to(np.arange(config.calib_length), windows.shape)
    for i in range(0, len(windows), config.calib_batch):
        yield (jnp.asarray(windows[i:i + config.calib_batch]), jnp.asarray(positions[i:i + config.calib_batch])), {}


@functools.lru_cache(maxsize=1)
def _model():
    from jaxml.models.llama import load_smollm2
    return load_smollm2()


def _calibrate(model, params, tokenizer, config):
    t0 = time.perf_counter()
    stats = calibration.calibrate(model, params, calibration_batches(tokenizer, config), hessian=True)
    progress.log(f"calibration: {config.calib_sequences} x {config.calib_length} tokens, {len(stats)} layers, "
                 f"{time.perf_counter() - t0:.0f}s")
    return stats


def _perplexity(model, params_q, act, tokens, config) -> float:
    return perplexity(model.clone(ops=quantized_ops(act)), params_q, tokens, context=config.context,
                      stride=config.stride, batch_size=config.eval_batch)["perplexity"]


@registry.experiment("lqer/perplexity")
def perplexity_table(config, workdir) -> Result:
    """Perplexity of every method at each weight width in `config.bits`."""
    workdir = pathlib.Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    model, params, tok = _model()
    tokens = eval_tokens(tok, config)
    stats = _calibrate(model, params, tok, config)
    rows, metrics = [], {}
    fp = None
    for bits in config.bits:
        for name in config.methods:
            if name == "fp" and fp is not None:
                continue
            method = Method(name, w_bits=bits, rank=config.rank)
            params_q, report = quantize_model(params, stats, method, tuple(config.layers))
            t0 = time.perf_counter()
            ppl = _perplexity(model, params_q, report.act_format, tokens, config)
            progress.log(f"{method.label}: perplexity {ppl:.3f} ({report.bits_per_weight:.3f} bits/weight; "
                         f"quantized in {report.seconds:.0f}s, evaluated in {time.perf_counter() - t0:.0f}s)")
            key = "fp" if name == "fp" else f"{name}_w{bits}"
            if name == "fp":
                fp = ppl
            metrics[f"ppl_{key}"] = ppl
            metrics[f"bits_{key}"] = report.bits_per_weight
            metrics[f"weight_error_{key}"] = float(np.mean(list(report.errors.values())))
            rows.append({"method": method.label, "key": key, "bits_per_weight": report.bits_per_weight,
                         "perplexity": ppl, "mean_relative_weight_error": metrics[f"weight_error_{key}"]})
    (workdir / "perplexity_table.json").write_text(json.dumps(rows, indent=1))
    order_notes = []
    for bits in config.bits:
        keys = [f"ppl_{m}_w{bits}" for m in ("l2qer", "lqer", "mxint")]
        if all(k in metrics for k in keys) and "ppl_fp" in metrics:
            holds = metrics["ppl_fp"] < metrics[keys[0]] <= metrics[keys[1]] < metrics[keys[2]]
            metrics[f"paper_order_holds_w{bits}"] = float(holds)
            order_notes.append(f"W{bits}: FP < L2QER <= LQER < MXINT {'holds' if holds else 'does NOT hold'}")
    figure = _plot_table(workdir / "lqer_perplexity.png", rows)
    headline = f"ppl_l2qer_w{config.bits[0]}" if f"ppl_l2qer_w{config.bits[0]}" in metrics else next(iter(metrics))
    return Result(metrics=metrics, headline=headline, figures=[str(figure)],
                  notes=(f"SmolLM2-135M (dequantized Q4_1 GGUF as FP), perplexity on {len(tokens)} tokens of the held-out "
                         f"Austen novel (context {config.context}, stride {config.stride}); calibration "
                         f"{config.calib_sequences} x {config.calib_length} Shakespeare tokens; rank {config.rank}. "
                         + "; ".join(order_notes) + "."))


@registry.experiment("lqer/rank_sweep")
def rank_sweep(config, workdir) -> Result:
    """LQER and L2QER perplexity against the rank k (and so against bits per weight)."""
    workdir = pathlib.Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    model, params, tok = _model()
    tokens = eval_tokens(tok, config)
    stats = _calibrate(model, params, tok, config)
    metrics, rows = {}, []
    for name in config.methods:
        for rank in config.ranks:
            params_q, report = quantize_model(params, stats, Method(name, w_bits=config.w_bits, rank=rank),
                                               tuple(config.layers))
            ppl = _perplexity(model, params_q, report.act_format, tokens, config)
            progress.log(f"{report.method.label}: perplexity {ppl:.3f}, {report.bits_per_weight:.3f} bits/weight")
            metrics[f"ppl_{name}_k{rank}"] = ppl
            metrics[f"bits_{name}_k{rank}"] = report.bits_per_weight
            rows.append((name, rank, report.bits_per_weight, ppl))
    figure = _plot_sweep(workdir / "lqer_rank_sweep.png", rows, config.w_bits)
    best = max(config.ranks)
    return Result(metrics=metrics, headline=f"ppl_{config.methods[-1]}_k{best}", figures=[str(figure)],
                  notes=f"W{config.w_bits}A8 on {len(tokens)} held-out tokens; ranks {tuple(config.ranks)}.")


@registry.experiment("lqer/spectrum")
def spectrum(config, workdir) -> Result:
    """Singular values of E = W - Q(W) and of diag(s) E for a few layers (Fig. 1a)."""
    workdir = pathlib.Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    model, params, tok = _model()
    stats = _calibrate(model, params, tok, config)
    kernels = calibration.linear_kernels(params)
    from jaxml.compress.quantizers import mxint
    metrics, curves = {}, {}
    for name in config.layers:
        w = np.asarray(kernels[name], np.float64)
        e = w - np.asarray(mxint(jnp.asarray(w, jnp.float32), config.w_bits, 16, axis=0), np.float64)
        s = activation_scale(stats[name].mean_abs_max)
        plain = np.linalg.svd(e, compute_uv=False)
        scaled = np.linalg.svd(s[:, None] * e, compute_uv=False)
        curves[name] = (plain / plain[0], scaled / scaled[0])
        for label, sv in (("E", plain), ("SE", scaled)):
            energy = np.cumsum(sv ** 2) / np.sum(sv ** 2)
            metrics[f"energy_top{config.k}_{label}_{name}"] = float(energy[config.k - 1])
    figure = _plot_spectra(workdir / "lqer_spectrum.png", curves, config.w_bits)
    first = config.layers[0]
    return Result(metrics=metrics, headline=f"energy_top{config.k}_SE_{first}", figures=[str(figure)],
                  notes=(f"Share of the squared Frobenius norm in the top {config.k} singular values, of E and of "
                         f"diag(s) E, MXINT{config.w_bits} weights; calibration {config.calib_sequences} x "
                         f"{config.calib_length} Shakespeare tokens."))


def _plot_table(path, rows):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 3.6))
    ax.barh([r["method"] for r in rows], [r["perplexity"] for r in rows])
    for i, r in enumerate(rows):
        ax.text(r["perplexity"], i, f" {r['perplexity']:.2f} ({r['bits_per_weight']:.2f} b/w)", va="center", fontsize=7)
    ax.set(xlabel="perplexity (held-out Austen)", title="SmolLM2-135M: quantization methods")
    ax.invert_yaxis()
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def _plot_sweep(path, rows, bits):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(9, 3.4))
    for name in sorted({r[0] for r in rows}):
        pts = [r for r in rows if r[0] == name]
        ax1.plot([r[1] for r in pts], [r[3] for r in pts], marker="o", label=name.upper())
        ax2.plot([r[2] for r in pts], [r[3] for r in pts], marker="o", label=name.upper())
    ax1.set(xlabel="rank k", ylabel="perplexity", title=f"W{bits}A8: perplexity vs rank")
    ax2.set(xlabel="average bits per weight", title="perplexity vs bits per weight")
    ax1.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def _plot_spectra(path, curves, bits):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(curves), figsize=(3.4 * len(curves), 3.2), squeeze=False)
    for ax, (name, (plain, scaled)) in zip(axes[0], curves.items()):
        ax.semilogy(plain, label="E")
        ax.semilogy(scaled, label="diag(s) E")
        ax.set(title=name, xlabel="index", ylabel="normalised singular value")
        ax.legend(fontsize=7)
    fig.suptitle(f"Singular values of the MXINT{bits} quantization error")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


@registry.experiment("lqer/reproduce")
def reproduce(config, workdir) -> Result:
    """The perplexity table, the rank sweep and the spectra at one scale."""
    return gather_parts("lqer", config, pathlib.Path(__file__).parent / "configs", workdir,
                        headline_part="perplexity")
