"""Public LQER GEMM: packed MXINT weights, fused low-rank correction.

    y = lqer_matmul(x, pack(W), a, b, bias, implementation="auto")
      = Q_x(X) W_q + Q_x(Q_x(Q_x(X) A) B) + bias                  (LQER, Zhang et al. ICML 2024)

`implementation='xla'` is `reference.lqer_matmul_reference` (dequantize the weight, then plain
XLA GEMMs); 'pallas' is the fused kernel of `pallas.py` (interpret mode on CPU); 'auto' picks
Pallas on GPU/TPU and XLA elsewhere. Q_x(X) is computed by XLA before the kernel in both.

The Pallas path is inference-only: differentiating it raises a TypeError (its rounding has no
useful derivative; the XLA path has the quantizers' straight-through gradients). It accepts Q_x of
kind 'none' or 'mxint' (a power-of-2 block, at most block_n); 'int' formats (a scale per whole row)
are XLA-only. The API pads everything the kernel needs with zeros and slices the result: rows of
x to a multiple of block_m, K to a multiple of block_k, N to a multiple of block_n (the default
blocks divide the packed K and N when N is a multiple of 16, so then only rows are padded; any other
weight padding copies the packed weight on every call), and the rank r to a power of 2 >= 16
(zero columns of A, zero rows of B: Q_x along r sees the same 16-element blocks, the padded ones
all zero).

`as_linear_op` adapts it to `jaxml.nn.ops.Ops.linear`, for models whose `Linear` params hold a
`packed_kernel` (see `jaxml.nn.layers.Linear`).
"""

from __future__ import annotations

import dataclasses
import functools

import jax
import jax.numpy as jnp

from jaxml.compress.linear import quantized_linear
from jaxml.compress.quantizers import QuantFormat
from kernels.common import interpret_default, resolve_implementation
from kernels.lqer_matmul import pallas
from kernels.lqer_matmul.pallas import BlockSizes, next_power_of_2, round_up
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
    interpret: bool


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


def _check_pallas(w: PackedMXINT, x_format: QuantFormat, bs: BlockSizes):
    if x_format.kind not in ("none", "mxint"):
        raise ValueError(f"lqer_matmul: implementation='pallas' quantizes with kind 'none' or 'mxint'; got "
                         f"x_format.kind={x_format.kind!r} (use implementation='xla')")
    if x_format.kind == "mxint" and (not pallas._is_power_of_2(x_format.block) or x_format.block > bs.block_n):
        raise ValueError(f"lqer_matmul: x_format.block={x_format.block} must be a power of 2 <= "
                         f"block_n={bs.block_n} for implementation='pallas'")
    if not pallas._is_power_of_2(w.block) or w.block > bs.block_k:
        raise ValueError(f"lqer_matmul: the weight's block={w.block} must be a power of 2 <= "
                         f"block_k={bs.block_k} for implementation='pallas'")


@functools.partial(jax.custom_jvp, nondiff_argnums=(6,))
def _kernel(xq, mantissa, exponent, a, b, bias, st: _Static):
    return pallas.lqer_matmul_pallas(
        xq, mantissa, exponent, a, b, bias, weight_width=st.weight_width, weight_block=st.weight_block,
        x_width=st.x_width, x_block=st.x_block, block_sizes=st.block_sizes, out_dtype=st.out_dtype,
        interpret=st.interpret)


@_kernel.defjvp
def _kernel_jvp(st, primals, tangents):
    del st, primals, tangents
    raise TypeError("lqer_matmul(implementation='pallas') is inference-only and has no derivative; "
                    "differentiate implementation='xla' (straight-through gradients of the quantizers)")


def _pad2(x, rows: int, cols: int):
    return jnp.pad(x, ((0, rows - x.shape[0]), (0, cols - x.shape[1])))


def _pallas_path(x, w: PackedMXINT, a, b, bias, x_format: QuantFormat, block_sizes, interpret):
    lead, k = x.shape[:-1], x.shape[-1]
    n = w.out_features
    x2 = x.reshape(-1, k)
    m = x2.shape[0]
    k_packed = w.mantissa.shape[0]
    bs = BlockSizes.get_default(m, n, k_packed) if block_sizes is None else block_sizes.fit(m)
    _check_pallas(w, x_format, bs)
    mxint_x = x_format.kind == "mxint"
    xq = x_format(x2.astype(jnp.float32), axis=-1)
    if mxint_x and x_format.width <= 8:
        xq = xq.astype(jnp.bfloat16)  # exact: MXINT8 values have <= 7 mantissa bits (module docstring)
    m_pad, k_pad, n_pad = round_up(m, bs.block_m), round_up(k_packed, bs.block_k), round_up(n, bs.block_n)
    xq = _pad2(xq, m_pad, k_pad)
    mantissa = _pad2(w.mantissa, k_pad, n_pad)
    exponent = _pad2(w.exponent, k_pad // w.block, n_pad)
    if a is not None:
        x_block = x_format.block if mxint_x else 1
        r_pad = next_power_of_2(max(a.shape[1], pallas.MIN_BLOCK_SIZE, x_block))
        a = _pad2(a.astype(jnp.float32), k_pad, r_pad)
        b = _pad2(b.astype(jnp.float32), r_pad, n_pad)
    if bias is not None:
        bias = jnp.pad(bias.astype(jnp.float32), (0, n_pad - n))
    st = _Static(weight_width=w.width, weight_block=w.block, x_width=x_format.width,
                 x_block=x_format.block if mxint_x else None, block_sizes=bs, out_dtype=x.dtype,
                 interpret=interpret)
    y = _kernel(xq, mantissa, exponent, a, b, bias, st)
    return y[:m, :n].reshape(lead + (n,))


@functools.partial(jax.jit, static_argnames=("x_format", "implementation", "block_sizes", "interpret"))
def _lqer_matmul(x, w, a, b, bias, *, x_format, implementation, block_sizes, interpret):
    if implementation == "xla":
        return lqer_matmul_reference(x, w, a, b, bias, x_format=x_format)
    return _pallas_path(x, w, a, b, bias, x_format, block_sizes, interpret)


def lqer_matmul(x: jax.Array, w: PackedMXINT, a: jax.Array | None = None, b: jax.Array | None = None,
                bias: jax.Array | None = None, *, x_format: QuantFormat = DEFAULT_X_FORMAT,
                implementation: str = "auto", block_sizes: BlockSizes | None = None,
                interpret: bool | None = None) -> jax.Array:
    """Q_x(X) W_q + Q_x(Q_x(Q_x(X) A) B) + bias with a packed MXINT weight.

    Args:
      x: [..., K], float32, bfloat16 or float16.
      w: the weight [K, N] as a `PackedMXINT` (`pack(kernel, width=4)`).
      a, b: the low-rank correction, [K, r] and [r, N] (used as given: LQER stores them already
        quantized, e.g. MXINT8), or both None.
      bias: [N] or None.
      x_format: Q_x, applied along the last axis to X, to X A and to (X A) B. Default MXINT8 with
        blocks of 16 (LQER's W4A8).
      implementation: 'xla' (the reference), 'pallas' (the fused kernel) or 'auto'.
      block_sizes: kernel tiles (`BlockSizes`), default `BlockSizes.get_default`; block_m shrinks
        for few rows. Any number of rows works (the API pads).
      interpret: run the kernel in interpret mode; default True on CPU only.
    Returns:
      [..., N] in x's dtype (accumulated in float32). Inference-only on the Pallas path.
    """
    _check_inputs(x, w, a, b, bias, x_format)
    implementation = resolve_implementation(implementation)
    if block_sizes is not None and not isinstance(block_sizes, BlockSizes):
        raise TypeError(f"lqer_matmul: block_sizes must be a BlockSizes; got {type(block_sizes).__name__}")
    interpret = interpret_default() if interpret is None else bool(interpret)
    return _lqer_matmul(x, w, a, b, bias, x_format=x_format, implementation=implementation,
                        block_sizes=block_sizes, interpret=interpret)


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
      **kwargs: `block_sizes` or `interpret`, passed to `lqer_matmul`.
    """
    resolve_implementation(implementation)
    unknown = set(kwargs) - {"block_sizes", "interpret"}
    if unknown:
        raise TypeError(f"as_linear_op: unexpected arguments {sorted(unknown)}; accepted: block_sizes, interpret")
    return _cached_linear_op(implementation, x_format, tuple(sorted(kwargs.items())))
