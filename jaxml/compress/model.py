"""Compressing every Linear kernel of a model: weight quantization (RTN, GPTQ, AWQ) or pruning
(magnitude, Wanda, SparseGPT), one spec at a time.

    stats = calibration.calibrate(model, params, batches, hessian=True)
    params_c, report = compress_model(params, stats, Compression("gptq", bits=4))
    params_c, report = compress_model(params, stats, Compression("wanda", pattern="2:4"))
    logits = model.apply({"params": params_c}, ...)        # same model, compressed kernels

The compressed kernels are stored dequantized (float32, on the quantization grid) or with their pruned
entries at exactly zero, and replace the kernels through `calibration.replace_kernels`: any model built
from `jaxml.nn.layers.Linear` (Llama, BERT, ViT) is compressed the same way, and the model's function
is what the compressed weights compute (a sparse or integer kernel would compute the same numbers).

Quantization: INT asymmetric, group 64 along the input axis (an fp16 scale and zero point per group:
`bits + 0.5` bits per weight), which is what the lqer paper's baselines use for SmolLM2 (576 is not a
multiple of the usual 128). Pruning: 50% unstructured or N:M along the input axis; its memory is
counted as fp16 values of the kept weights plus the index: one bit per weight for an unstructured
bitmask, log2(C(M, N)) / N bits per kept weight for N:M (2 bits per kept value at 2:4, as NVIDIA's
sparse tensor cores store it); so 50% sparsity costs about as much memory as 8-bit quantization.
Calibration is one pass of the dense model (the reference implementations of GPTQ, Wanda and
SparseGPT feed each block the outputs of the already compressed blocks; see `calibration.calibrate`).
"""

from __future__ import annotations

import dataclasses
import math
import time

import numpy as np

from jaxml import progress
from jaxml.compress import calibration, pruning
from jaxml.compress.blas import single_threaded_blas
from jaxml.compress.quantizers import QuantFormat, quantize_array

QUANT_METHODS = ("rtn", "gptq", "awq")
PRUNE_METHODS = ("magnitude", "wanda", "sparsegpt")
METHODS = ("dense",) + QUANT_METHODS + PRUNE_METHODS
CALIBRATED = ("gptq", "awq", "wanda", "sparsegpt")
GROUP = 64


def int_format(bits: int) -> QuantFormat:
    """INT asymmetric with an fp16 scale and zero point per group of 64 input weights."""
    return QuantFormat("int", bits, group_size=GROUP, symmetric=False)


@dataclasses.dataclass(frozen=True)
class Compression:
    """One compression setting: `method` in METHODS with `bits` (quantization: 2..8) or `pattern`
    (pruning: '50%' / 'unstructured' / 'N:M')."""

    method: str = "dense"
    bits: int = 0
    pattern: str = ""

    def __post_init__(self):
        if self.method not in METHODS:
            raise ValueError(f"compression method {self.method!r}; accepted: {METHODS}")
        if self.method in QUANT_METHODS:
            if isinstance(self.bits, bool) or not isinstance(self.bits, int) or not 2 <= self.bits <= 8:
                raise ValueError(f"{self.method}: bits={self.bits!r}; accepted integers 2..8")
            if self.pattern:
                raise ValueError(f"{self.method} is a quantizer; pattern={self.pattern!r} is for pruning")
        elif self.method in PRUNE_METHODS:
            pruning.SparsityPattern.parse(self.pattern)      # raises on a bad pattern
            if self.bits:
                raise ValueError(f"{self.method} prunes; bits={self.bits} is for quantizers")
        elif self.bits or self.pattern:
            raise ValueError("dense takes neither bits nor pattern")

    @classmethod
    def parse(cls, text: str) -> "Compression":
        """'dense', 'gptq-w4', 'rtn-w8', 'wanda-2:4', 'sparsegpt-50%'."""
        text = text.strip().lower()
        if text == "dense":
            return cls()
        method, _, level = text.partition("-")
        if method in QUANT_METHODS and level.startswith("w") and level[1:].isdigit():
            return cls(method, bits=int(level[1:]))
        if method in PRUNE_METHODS and level:
            return cls(method, pattern=level)
        raise ValueError(f"compression {text!r}; accepted 'dense', '<rtn|gptq|awq>-w<bits>' or "
                         f"'<magnitude|wanda|sparsegpt>-<50%|N:M>'")

    @property
    def name(self) -> str:
        if self.method == "dense":
            return "dense"
        return f"{self.method}-w{self.bits}" if self.bits else f"{self.method}-{self.sparsity_pattern_text}"

    @property
    def sparsity_pattern_text(self) -> str:
        p = pruning.SparsityPattern.parse(self.pattern)
        return f"{p.n}:{p.m}" if p.structured else f"{p.sparsity:.0%}"

    @property
    def level(self) -> str:
        """'W4', '2:4', '50%' or 'dense'."""
        if self.method == "dense":
            return "dense"
        return f"W{self.bits}" if self.bits else self.sparsity_pattern_text

    @property
    def calibrated(self) -> bool:
        return self.method in CALIBRATED

    @property
    def needs_hessian(self) -> bool:
        return self.method in ("gptq", "awq", "sparsegpt")

    def bits_per_weight(self, n_in: int = 576) -> float:
        """Storage bits per weight of a kernel with `n_in` inputs (dense: fp16)."""
        if self.method == "dense":
            return 16.0
        if self.bits:
            return int_format(self.bits).bits_per_element((n_in, 1), 0)
        p = pruning.SparsityPattern.parse(self.pattern)
        kept = 1 - p.sparsity
        if p.structured:
            index = math.log2(math.comb(p.m, p.n)) / p.n
            return kept * (16 + math.ceil(index))
        return kept * 16 + 1


def quantize_kernel(name: str, kernel, stats: calibration.LayerStats | None, method: str,
                    fmt: QuantFormat) -> np.ndarray:
    """One kernel [in, out] quantized by `method` ('rtn', 'gptq', 'awq') to `fmt` (float32, on the grid)."""
    w = np.asarray(kernel, np.float32)
    if method in ("gptq", "awq") and stats is None:
        raise ValueError(f"{method} needs calibration statistics for layer {name!r}")
    if method == "rtn":
        return quantize_array(fmt, w, 0)
    if method == "gptq":
        from jaxml.compress.gptq import gptq
        return np.asarray(gptq(w, stats.hessian, fmt), np.float32)
    if method == "awq":
        from jaxml.compress.awq import awq
        return np.asarray(awq(w, stats.mean_abs, fmt, hessian=stats.hessian)[0], np.float32)
    raise ValueError(f"quantization method {method!r}; accepted: {QUANT_METHODS}")


def compress_kernel(name: str, kernel, stats: calibration.LayerStats | None, spec: Compression) -> np.ndarray:
    """One kernel [in, out] compressed by `spec` (float32)."""
    w = np.asarray(kernel, np.float32)
    if spec.method == "dense":
        return w
    if spec.method in QUANT_METHODS:
        return quantize_kernel(name, w, stats, spec.method, int_format(spec.bits))
    if spec.calibrated and stats is None:
        raise ValueError(f"{spec.method} needs calibration statistics for layer {name!r}")
    if spec.method == "magnitude":
        return pruning.magnitude_prune(w, spec.pattern)
    if spec.method == "wanda":
        return pruning.wanda_prune(w, stats.sq_mean, spec.pattern)
    return np.asarray(pruning.sparsegpt_prune(w, stats.hessian, spec.pattern), np.float32)


@dataclasses.dataclass
class CompressionReport:
    spec: Compression
    seconds: float
    bits_per_weight: float            # over the compressed kernels, weighted by size
    sparsity: float                   # fraction of exact zeros over the compressed kernels
    layers: int


def compress_model(params, stats: dict[str, calibration.LayerStats] | None, spec: Compression,
                   layers: tuple[str, ...] = ()):
    """Every Linear kernel (or those whose name starts with one of `layers`) compressed by `spec`;
    returns `(params_c, CompressionReport)`. `stats`: `calibration.calibrate(...)` of the dense model
    (with `hessian=True` for GPTQ, AWQ and SparseGPT); unused by RTN, magnitude and dense."""
    t0 = time.perf_counter()
    kernels = {k: v for k, v in sorted(calibration.linear_kernels(params).items())
               if not layers or any(k.startswith(prefix) for prefix in layers)}
    if not kernels:
        raise ValueError(f"no Linear kernels match layers={layers}")
    if spec.calibrated:
        if stats is None:
            raise ValueError(f"{spec.name} needs calibration statistics (calibration.calibrate)")
        missing = [k for k in kernels if k not in stats]
        if missing:
            raise ValueError(f"{spec.name}: no calibration statistics for {missing[:3]} ({len(missing)} layers)")
        if spec.needs_hessian and any(stats[k].hessian is None for k in kernels):
            raise ValueError(f"{spec.name} needs calibrate(..., hessian=True)")
    updates, zeros, size, bits = {}, 0, 0, 0.0
    with single_threaded_blas():
        for i, (name, w) in enumerate(kernels.items()):
            out = compress_kernel(name, w, None if stats is None else stats.get(name), spec)
            if spec.method != "dense":
                updates[name] = {"kernel": out.astype(np.asarray(w).dtype)}
            zeros += int(np.count_nonzero(out == 0))
            size += out.size
            bits += spec.bits_per_weight(out.shape[0]) * out.size
            if (i + 1) % 70 == 0 and time.perf_counter() - t0 > 20:
                progress.log(f"{spec.name}: {i + 1}/{len(kernels)} kernels ({time.perf_counter() - t0:.0f}s)")
    params_c = calibration.replace_kernels(params, updates) if updates else params
    return params_c, CompressionReport(spec=spec, seconds=time.perf_counter() - t0, bits_per_weight=bits / size,
                                       sparsity=zeros / size, layers=len(kernels))
