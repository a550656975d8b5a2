"""Quantizing every linear layer of a model with LQER, L2QER and the baselines.

    stats = calibration.calibrate(model, params, batches, hessian=True)
    params_q, report = quantize_model(params, stats, Method("l2qer", w_bits=4, rank=32))
    logits = model.clone(ops=quantized_ops(report.act_format)).apply({"params": params_q}, ...)

Methods (W = weight bits; "A8" = activations and the attention matmuls in MXINT8):

| name  | weights                                   | activations | low rank |
|-------|-------------------------------------------|-------------|----------|
| fp    | unchanged                                 | float       | -        |
| rtn   | INT asymmetric, group 64, round to nearest| float       | -        |
| gptq  | INT asymmetric, group 64, GPTQ            | float       | -        |
| awq   | INT asymmetric, group 64, AWQ scales      | float       | -        |
| mxint | MXINT (blocks of 16)                      | MXINT8      | -        |
| lqer  | MXINT                                     | MXINT8      | SVD of E, A/B in MXINT8 |
| l2qer | MXINT                                     | MXINT8      | SVD of diag(s) E, A/B in MXINT8 |

Group 64 (not the usual 128) because SmolLM2's hidden size 576 is not a multiple of 128; it costs
the same 4.5 bits per weight at 4 bits (fp16 scale and zero point per 64 weights) as MXINT4's
4 + 8/16.
"""

from __future__ import annotations

import dataclasses
import time

import jax.numpy as jnp
import numpy as np

from jaxml.compress import calibration
from jaxml.compress.quantizers import NONE, QuantFormat, integer, mxint
from jaxml import progress
from jaxml.papers.lqer.lqer import MXINT8, activation_scale, average_bits, decompose

METHODS = ("fp", "rtn", "gptq", "awq", "mxint", "lqer", "l2qer")
GROUP = 64


@dataclasses.dataclass(frozen=True)
class Method:
    name: str
    w_bits: int = 4
    rank: int = 0

    def __post_init__(self):
        if self.name not in METHODS:
            raise ValueError(f"method {self.name!r}; accepted: {METHODS}")
        if self.name in ("lqer", "l2qer") and self.rank < 0:
            raise ValueError(f"rank={self.rank} must be >= 0")

    @property
    def label(self) -> str:
        if self.name == "fp":
            return "FP (dequantized GGUF)"
        suffix = "A8" if self.act_format.kind != "none" else ""
        rank = f" k={self.rank}" if self.name in ("lqer", "l2qer") else ""
        return f"{self.name.upper()} W{self.w_bits}{suffix}{rank}"

    @property
    def weight_format(self) -> QuantFormat:
        if self.name == "fp":
            return NONE
        if self.name in ("rtn", "gptq", "awq"):
            return QuantFormat("int", self.w_bits, group_size=GROUP, symmetric=False)
        return QuantFormat("mxint", self.w_bits, 16)

    @property
    def act_format(self) -> QuantFormat:
        return MXINT8 if self.name in ("mxint", "lqer", "l2qer") else NONE


@dataclasses.dataclass
class QuantReport:
    method: Method
    act_format: QuantFormat
    bits_per_weight: float            # averaged over the quantized kernels, weighted by size
    seconds: float
    spectra: dict[str, np.ndarray]    # singular values of the decomposed matrix per layer (lqer/l2qer)
    errors: dict[str, float]          # ||W - W_q - A B||_F / ||W||_F per layer


def quantize_kernel(name: str, w: np.ndarray, stats: calibration.LayerStats | None, method: Method):
    """`(entries for the layer's params, bits per weight, singular values or None, relative error)`."""
    fmt = method.weight_format
    w = np.asarray(w, np.float32)
    if method.name == "fp":
        return {}, 32.0, None, 0.0
    if method.name in ("gptq", "awq") and stats is None:
        raise ValueError(f"{method.name} needs calibration statistics for layer {name!r}")
    if method.name == "rtn":
        w_q = np.asarray(integer(jnp.asarray(w), fmt.width, axis=0, group_size=fmt.group_size, symmetric=False))
    elif method.name == "gptq":
        from jaxml.compress.gptq import gptq
        w_q = np.asarray(gptq(w, stats.hessian, fmt))
    elif method.name == "awq":
        from jaxml.compress.awq import awq
        w_q = np.asarray(awq(w, stats.mean_abs, fmt, hessian=stats.hessian)[0])
    else:
        w_q = np.asarray(mxint(jnp.asarray(w), fmt.width, fmt.block, axis=0))
    entries = {"kernel": jnp.asarray(w_q, jnp.float32)}
    spectrum = None
    approx = w_q.astype(np.float64)
    if method.name in ("lqer", "l2qer"):
        scale = None
        if method.name == "l2qer":
            if stats is None:
                raise ValueError(f"l2qer needs calibration statistics for layer {name!r}")
            scale = activation_scale(stats.mean_abs_max)
        low = decompose(w - w_q, method.rank, scale=scale)
        spectrum = low.singular_values
        if method.rank:
            entries["lowrank_a"] = jnp.asarray(low.a)
            entries["lowrank_b"] = jnp.asarray(low.b)
            approx = approx + low.a.astype(np.float64) @ low.b.astype(np.float64)
    bits = average_bits(w.shape, fmt, method.rank if method.name in ("lqer", "l2qer") else 0)
    error = float(np.linalg.norm(w - approx) / np.linalg.norm(w))
    return entries, bits, spectrum, error


def quantize_model(params, stats: dict[str, calibration.LayerStats] | None, method: Method,
                   layers: tuple[str, ...] = ()):
    """Quantizes every Linear kernel (or those whose name starts with one of `layers`);
    returns `(params_q, QuantReport)`."""
    t0 = time.perf_counter()
    kernels = {k: v for k, v in calibration.linear_kernels(params).items()
               if not layers or any(k.startswith(prefix) for prefix in layers)}
    if not kernels:
        raise ValueError(f"no Linear kernels match layers={layers}")
    updates, spectra, errors = {}, {}, {}
    total_bits, total_weights = 0.0, 0
    for i, (name, w) in enumerate(sorted(kernels.items())):
        layer_stats = None if stats is None else stats.get(name)
        entries, bits, spectrum, error = quantize_kernel(name, np.asarray(w), layer_stats, method)
        if entries:
            updates[name] = entries
        if spectrum is not None:
            spectra[name] = spectrum
        errors[name] = error
        total_bits += bits * w.size
        total_weights += w.size
        if (i + 1) % 70 == 0:
            progress.log(f"{method.label}: {i + 1}/{len(kernels)} kernels")
    params_q = calibration.replace_kernels(params, updates) if updates else params
    return params_q, QuantReport(method=method, act_format=method.act_format, bits_per_weight=total_bits / total_weights,
                                 seconds=time.perf_counter() - t0, spectra=spectra, errors=errors)
