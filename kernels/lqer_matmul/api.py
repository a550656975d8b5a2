"""Public LQER GEMM: packed MXINT weights, fused low-rank correction.

    y = lqer_matmul(x, pack(W), a, b, bias, implementation="auto")
      = Q_x(X) W_q + Q_x(Q_x(Q_x(X) A) B) + bias                  (LQER, Zhang et al. ICML 2024)

`implementation='xla'` is `reference.lqer_matmul_reference` (dequantize the weight, then plain
XLA GEMMs); 'pallas' is the fused kernel of `pallas.py`; 'auto' picks Pallas on GPU/TPU and XLA
elsewhere (`kernels.common.resolve_implementation`). Q_x(X) is computed by XLA before the kernel
in both.

`backend=` (default: jax's backend) names the platform the call is built for, so a CPU host can
trace and lower it for another one (`jax.jit(f).trace(...).lower(lowering_platforms=("tpu",))`
with `backend="tpu"`); with `interpret` it decides the kernel's target
(`kernels.common.target_platform`): 'tpu' (Mosaic, or Pallas' TPU interpreter when `interpret`
is a `pltpu.InterpretParams`), 'gpu' (Triton) or 'interpret' (the generic interpreter, the
default on CPU). The target decides the blocks (`BlockSizes.get_default(..., target=)`) and the
padding (`pallas.padded_dims`).

The Pallas path is inference-only: differentiating it raises a TypeError (its rounding has no
useful derivative; the XLA path has the quantizers' straight-through gradients). It accepts Q_x of
kind 'none' or 'mxint' (a power-of-2 block, at most block_n); 'int' formats (a scale per whole row)
are XLA-only. The API pads everything the kernel needs with zeros and slices the result: rows of
x to a multiple of block_m, K to a multiple of block_k, N to a multiple of block_n, the rank r as
`pallas.padded_dims` says (zero columns of A, zero rows of B: Q_x along r sees the same blocks,
the padded ones all zero), the bias to a [1, N] row. On 'gpu'/'interpret' the default blocks
divide the packed K and N when N is a multiple of 16, so then only rows are padded; on 'tpu' N
and K are padded to multiples of 128. Any weight padding copies the packed weight on every call.

`as_linear_op` adapts it to `jaxml.nn.ops.Ops.linear`, for models whose `Linear` params hold a
`packed_kernel` (see `jaxml.nn.layers.Linear`).
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any

import jax
import jax.numpy as jnp

from jaxml.compress.linear import quantized_linear
from jaxml.compress.quantizers import QuantFormat
from kernels.common import TPU_SUBLANES, platform_of, resolve_implementation, resolve_interpret, target_platform
from kernels.lqer_matmul import pallas
from kernels.lqer_matmul.pallas import BlockSizes, padded_dims
from kernels.lqer_matmul.reference import PackedMXINT, lqer_matmul_reference

DEFAULT_X_FORMAT = QuantFormat("mxint", 8, 16)
_DTYPES = (jnp.float32, jnp.bfloat16, jnp.float16)


@dataclasses.dataclass(frozen=True)
class _Static:
    """What the Pallas call treats as compile-time constants."""

    weight_width: int
    weight_block: int
    x_width: int
    x_block: int | None
    block_sizes: BlockSizes
    out_dtype: jnp.dtype
    interpret: Any  # bool or a pltpu.InterpretParams
    target: str


def _check_inputs(x, w, a, b, bias, x_format):
    if not isinstance(w, PackedMXINT):
        raise TypeError(f"lqer_matmul: w must be a PackedMXINT (kernels.lqer_matmul.pack); got "
                        f"{type(w).__name__}")
    w.validate("lqer_matmul: w")
    if getattr(x, "ndim", 0) < 1 or x.dtype not in _DTYPES:
        raise TypeError(f"lqer_matmul: x must be a float32/bfloat16/float16 array [..., K]; got "
                        f"{getattr(x, 'dtype', type(x).__name__)} {getattr(x, 'shape', '')}")
    k, n = w.shape
    if x.shape[-1] != k:
        raise ValueError(f"lqer_matmul: x {x.shape} has K={x.shape[-1]}, the weight has in_features={k}")
    if (a is None) != (b is None):
        raise ValueError("lqer_matmul: pass both low-rank factors a [K, r] and b [r, N], or neither")
    if a is not None:
        if a.ndim != 2 or b.ndim != 2 or a.shape[0] != k or b.shape != (a.shape[1], n) or a.shape[1] < 1:
            raise ValueError(f"lqer_matmul: a {a.shape} and b {b.shape} must be [K, r] = [{k}, r] and "
                             f"[r, N] = [r, {n}] with r >= 1")
    if bias is not None and tuple(bias.shape) != (n,):
        raise ValueError(f"lqer_matmul: bias shape {tuple(bias.shape)} != (N,) = {(n,)}")
    if not isinstance(x_format, QuantFormat):
        raise TypeError(f"lqer_matmul: x_format must be a QuantFormat; got {type(x_format).__name__}")


def _check_pallas(w: PackedMXINT, x_format: QuantFormat, bs: BlockSizes, target: str):
    bs.check(target)
    if x_format.kind not in ("none", "mxint"):
        raise ValueError(f"lqer_matmul: implementation='pallas' quantizes with kind 'none' or 'mxint'; got "
                         f"x_format.kind={x_format.kind!r} (use implementation='xla')")
    if x_format.kind == "mxint" and (not pallas._is_power_of_2(x_format.block) or x_format.block > bs.block_n):
        raise ValueError(f"lqer_matmul: x_format.block={x_format.block} must be a power of 2 <= "
                         f"block_n={bs.block_n} for implementation='pallas'")
    if not pallas._is_power_of_2(w.block) or w.block > bs.block_k:
        raise ValueError(f"lqer_matmul: the weight's block={w.block} must be a power of 2 <= "
                         f"block_k={bs.block_k} for implementation='pallas'")
    if target == "tpu" and w.block % TPU_SUBLANES:
        raise ValueError(f"lqer_matmul: the weight's block={w.block} must be a multiple of "
                         f"{TPU_SUBLANES} for implementation='pallas' on TPU")


@functools.partial(jax.custom_jvp, nondiff_argnums=(6,))
def _kernel(xq, mantissa, exponent, a, b, bias, st: _Static):
    return pallas.lqer_matmul_pallas(
        xq, mantissa, exponent, a, b, bias, weight_width=st.weight_width, weight_block=st.weight_block,
        x_width=st.x_width, x_block=st.x_block, block_sizes=st.block_sizes, out_dtype=st.out_dtype,
        interpret=st.interpret, target=st.target)


@_kernel.defjvp
def _kernel_jvp(st, primals, tangents):
    del st, primals, tangents
    raise TypeError("lqer_matmul(implementation='pallas') is inference-only and has no derivative; "
                    "differentiate implementation='xla' (straight-through gradients of the quantizers)")


def _pad2(x, rows: int, cols: int):
    return jnp.pad(x, ((0, rows - x.shape[0]), (0, cols - x.shape[1])))


def _pallas_path(x, w: PackedMXINT, a, b, bias, x_format: QuantFormat, block_sizes, interpret, target):
    lead, k = x.shape[:-1], x.shape[-1]
    n = w.out_features
    x2 = x.reshape(-1, k)
    m = x2.shape[0]
    k_packed = w.mantissa.shape[0]
    if block_sizes is None:
        bs = BlockSizes.get_default(m, n, k_packed, target=target, weight_block=w.block)
    else:
        bs = block_sizes.fit(m, target)
    _check_pallas(w, x_format, bs, target)
    mxint_x = x_format.kind == "mxint"
    x_block = x_format.block if mxint_x else None
    xq = x_format(x2.astype(jnp.float32), axis=-1)
    if mxint_x and x_format.width <= 8:
        xq = xq.astype(jnp.bfloat16)  # exact: MXINT8 values have <= 7 mantissa bits (module docstring)
    m_pad, n_pad, k_pad, r_pad = padded_dims(target, m, n, k_packed, 0 if a is None else a.shape[1], bs, x_block)
    xq = _pad2(xq, m_pad, k_pad)
    mantissa = _pad2(w.mantissa, k_pad, n_pad)
    exponent = _pad2(w.exponent, k_pad // w.block, n_pad)
    if a is not None:
        a = _pad2(a.astype(jnp.float32), k_pad, r_pad)
        b = _pad2(b.astype(jnp.float32), r_pad, n_pad)
    if bias is not None:
        bias = _pad2(bias.astype(jnp.float32)[None, :], 1, n_pad)
    st = _Static(weight_width=w.width, weight_block=w.block, x_width=x_format.width, x_block=x_block,
                 block_sizes=bs, out_dtype=x.dtype, interpret=interpret, target=target)
    y = _kernel(xq, mantissa, exponent, a, b, bias, st)
    return y[:m, :n].reshape(lead + (n,))


@functools.partial(jax.jit, static_argnames=("x_format", "implementation", "block_sizes", "interpret", "target"))
def _lqer_matmul(x, w, a, b, bias, *, x_format, implementation, block_sizes, interpret, target):
    if implementation == "xla":
        return lqer_matmul_reference(x, w, a, b, bias, x_format=x_format)
    return _pallas_path(x, w, a, b, bias, x_format, block_sizes, interpret, target)


def lqer_matmul(x: jax.Array, w: PackedMXINT, a: jax.Array | None = None, b: jax.Array | None = None,
                bias: jax.Array | None = None, *, x_format: QuantFormat = DEFAULT_X_FORMAT,
                implementation: str = "auto", block_sizes: BlockSizes | None = None,
                interpret=None, backend: str | None = None) -> jax.Array:
    """Q_x(X) W_q + Q_x(Q_x(Q_x(X) A) B) + bias with a packed MXINT weight.

    Args:
      x: [..., K], float32, bfloat16 or float16.
      w: the weight [K, N] as a `PackedMXINT` (`pack(kernel, width=4)`).
      a, b: the low-rank correction, [K, r] and [r, N] (used as given: LQER stores them already
        quantized, e.g. MXINT8), or both None.
      bias: [N] or None.
      x_format: Q_x, applied along the last axis to X, to X A and to (X A) B. Default MXINT8 with
        blocks of 16 (LQER's W4A8).
      implementation: 'xla' (the reference), 'pallas' (the fused kernel) or 'auto' (Pallas on a
        TPU or GPU backend, XLA on CPU).
      block_sizes: kernel tiles (`BlockSizes`), default `BlockSizes.get_default` for the target;
        block_m shrinks for few rows. Any number of rows works (the API pads).
      interpret: None (the generic interpreter on a CPU backend, compiled elsewhere), a bool, or a
        `pltpu.InterpretParams` for Pallas' TPU interpreter (the TPU kernel, run on CPU).
      backend: the platform to build for ('cpu', 'tpu', 'gpu', 'cuda', 'rocm'); default jax's
        backend. Selects the 'auto' implementation and the kernel's target, so that a CPU host can
        lower the call for a TPU or GPU.
    Returns:
      [..., N] in x's dtype (accumulated in float32). Inference-only on the Pallas path.
    """
    _check_inputs(x, w, a, b, bias, x_format)
    platform_of(backend)  # raises ValueError naming an unknown backend
    implementation = resolve_implementation(implementation, backend)
    if block_sizes is not None and not isinstance(block_sizes, BlockSizes):
        raise TypeError(f"lqer_matmul: block_sizes must be a BlockSizes; got {type(block_sizes).__name__}")
    interpret = resolve_interpret(interpret, backend)
    target = target_platform(backend, interpret)
    return _lqer_matmul(x, w, a, b, bias, x_format=x_format, implementation=implementation,
                        block_sizes=block_sizes, interpret=interpret, target=target)


def _linear(x, kernel, bias, lowrank=None, *, implementation, x_format, kwargs):
    if isinstance(kernel, PackedMXINT):
        a, b = (None, None) if lowrank is None else lowrank
        return lqer_matmul(x, kernel, a, b, bias, x_format=x_format, implementation=implementation,
                           **dict(kwargs))
    return quantized_linear(x, kernel, bias, lowrank, act=x_format)


@functools.lru_cache(maxsize=None)
def _cached_linear_op(implementation: str, x_format: QuantFormat, kwargs: tuple):
    return functools.partial(_linear, implementation=implementation, x_format=x_format, kwargs=kwargs)


def as_linear_op(implementation: str = "auto", x_format: QuantFormat = DEFAULT_X_FORMAT, **kwargs):
    """A `linear(x, kernel, bias, lowrank=None)` for `jaxml.nn.ops.Ops(linear=...)`.

    A `PackedMXINT` kernel (a `packed_kernel` param of `jaxml.nn.layers.Linear`) goes through
    `lqer_matmul`; a float kernel falls back to `jaxml.compress.linear`'s quantized linear
    (Q_x(X) kernel [+ Q_x(Q_x(Q_x(X) A) B)] + bias, the kernel used as stored). The same
    arguments return the same function (so `Ops` built from it compare equal).

    Args:
      implementation, x_format: as `lqer_matmul`.
      **kwargs: `block_sizes`, `interpret` or `backend`, passed to `lqer_matmul`.
    """
    resolve_implementation(implementation, kwargs.get("backend"))
    unknown = set(kwargs) - {"block_sizes", "interpret", "backend"}
    if unknown:
        raise TypeError(f"as_linear_op: unexpected arguments {sorted(unknown)}; accepted: block_sizes, interpret, "
                        "backend")
    return _cached_linear_op(implementation, x_format, tuple(sorted(kwargs.items())))
