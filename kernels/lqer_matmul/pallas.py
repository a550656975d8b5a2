"""The fused LQER GEMM in Pallas: MXINT weights dequantized in the kernel, low-rank path fused.

One program per (block_m rows, block_n output columns). It keeps its rows of the quantized
activations resident and walks K in steps of block_k: it loads the int8 mantissa tile [block_k,
block_n] and its exponent rows [block_k // weight_block, block_n], dequantizes them to float
(mantissa * 2^(exponent - (width - 1)), each exponent broadcast over its block of rows; 2^e is
built from the float32 exponent bits, exactly), accumulates x_tile @ w_tile in float32 and, in
the same loop, x_tile @ a_tile ([block_m, r]; every column tile recomputes it, r / block_n extra
work, in exchange for no second pass over X). The epilogue quantizes the [block_m, r] accumulator
with Q_x along r, multiplies it by B's tile [r, block_n], quantizes that product along N (its
blocks lie inside the tile because block_n is a multiple of the block), adds it and the bias,
and stores.

    Y = Q_x(X) W_q + Q_x(Q_x(Q_x(X) A) B) + bias          (LQER, `reference.py`)

Q_x(X) itself is computed by XLA before the kernel (`api.py`), once per call instead of once
per column tile; with an MXINT activation format of width <= 8 it is passed as bfloat16, which
holds those values exactly (<= 7 mantissa bits), and the main dot runs in bfloat16 with float32
accumulation: every product is exact, only the summation order differs from the reference.
The in-kernel quantizer (`mxint_rows`) is `jaxml.compress.quantizers.mxint` along the last axis,
written with the operations Triton lowers (`jnp.round`, half to even, from `floor`).

The layout (`lqer_matmul_pallas`): x [M, K], mantissa int8 [K, N], exponent int8 [K / weight_block,
N], a [K, r], b [r, N], bias [N], with M, N, K multiples of the blocks and r a power of 2 >= 16
(`api.py` pads all of them with zeros).

What has been run where: only interpret mode (`interpret=True`, CPU, jax 0.10.2). The GPU path
(Triton lowering, chosen with `pallas.triton.CompilerParams` as in `kernels/attention_lrp`; every
tile a power of 2, dots >= 16) has NOT been compiled or run on hardware, and neither has TPU
(Mosaic; the 1-D bias block and the int8 exponent tiles with few rows may need other layouts
there). On GPU the exponent ceil(log2(max)) uses the device's log, which can differ from XLA's by
an ulp at exact powers of two, moving a block's exponent by one (rare; see the tests' `gpu` class).
"""

from __future__ import annotations

import dataclasses
import functools

import jax
import jax.numpy as jnp
from jax import lax
from jax.experimental import pallas as pl

from jaxml.compress.quantizers import EXPONENT_MAX, EXPONENT_MIN
from kernels.common import check_divisible

# Triton's dot needs every tile dimension >= 16, and every loaded tile to be a power of 2.
MIN_BLOCK_SIZE = 16


def _is_power_of_2(n: int) -> bool:
    return n > 0 and n & (n - 1) == 0


def next_power_of_2(n: int) -> int:
    return 1 << max(0, (n - 1).bit_length())


def round_up(n: int, multiple: int) -> int:
    return -(-n // multiple) * multiple


def _largest_dividing_block(size: int, cap: int) -> int:
    """The largest power of 2 in [MIN_BLOCK_SIZE, cap] dividing `size` (a multiple of 16), else 16."""
    block = cap
    while block > MIN_BLOCK_SIZE and size % block:
        block //= 2
    return block


@dataclasses.dataclass(frozen=True)
class BlockSizes:
    """Tiles of the kernel: rows (block_m) and output columns (block_n) per program, reduction
    step (block_k).

    Every block is a power of 2 >= 16 (Triton tiles are powers of 2 and its dot needs >= 16), so
    block_k and block_n are multiples of the 16-element MXINT blocks. They change only the order
    of float32 sums, never the quantization.
    """

    block_m: int
    block_n: int
    block_k: int

    def __post_init__(self):
        for field in dataclasses.fields(self):
            value = getattr(self, field.name)
            if (not isinstance(value, int) or isinstance(value, bool) or value < MIN_BLOCK_SIZE
                    or not _is_power_of_2(value)):
                raise ValueError(f"BlockSizes.{field.name}={value!r}: every block must be a power of 2 "
                                 f">= {MIN_BLOCK_SIZE} (Triton tiles are powers of 2, its dot needs >= 16; "
                                 "block_k and block_n must hold whole 16-element MXINT blocks)")

    def fit(self, m: int) -> BlockSizes:
        """block_m shrunk to the smallest power of 2 >= m (>= 16), so few rows are not padded to a
        large tile."""
        return dataclasses.replace(self, block_m=min(self.block_m, max(MIN_BLOCK_SIZE, next_power_of_2(m))))

    @classmethod
    def get_default(cls, m: int, n: int, k: int) -> BlockSizes:
        """Defaults for x [m, k] @ W [k, n]: block_n and block_k are the largest powers of 2 <= 128
        dividing n and k rounded up to 16 (so the API pads nothing but rows); block_m <= 64.

        TODO: tune on the target GPU/TPU; these follow common Triton GEMM tiles, not measurements.
        """
        return cls(block_m=64, block_n=_largest_dividing_block(round_up(n, 16), 128),
                   block_k=_largest_dividing_block(round_up(k, 16), 128)).fit(m)


def _compiler_params(interpret, num_warps: int):
    """Triton on GPU (the kernel uses Triton-style whole-tile loads); the default elsewhere."""
    if interpret or jax.default_backend() != "gpu":
        return None
    from jax.experimental.pallas import triton as pltriton
    return pltriton.CompilerParams(num_warps=num_warps, num_stages=2)


def _dot(a, b, precision):
    return lax.dot_general(a, b, (((1,), (0,)), ((), ())), preferred_element_type=jnp.float32,
                           precision=precision)


def _round_half_even(v):
    """jnp.round (half to even) of float32 v >= 0 from floor, which Triton lowers (it has no round).

    v - floor(v) is exact in floating point. (The magic-number trick (v + 2^23) - 2^23 is not used:
    XLA's simplifier folds it back to v.)
    """
    whole = jnp.floor(v)
    frac = v - whole
    odd = (whole - 2.0 * jnp.floor(whole * 0.5)) == 1.0
    return whole + jnp.where((frac > 0.5) | ((frac == 0.5) & odd), 1.0, 0.0)


def exp2_int(e: jax.Array) -> jax.Array:
    """2.0 ** e for integer-valued float32 e, built from the exponent bits (exact, no pow call):
    0 below 2^-126 and inf above 2^127, as XLA's `2.0 ** e` gives on CPU (subnormals flushed)."""
    biased = jnp.clip(e.astype(jnp.int32) + 127, 0, 255)
    return lax.bitcast_convert_type(jnp.left_shift(biased, 23), jnp.float32)


def mxint_rows(x: jax.Array, width: int, block: int) -> jax.Array:
    """`jaxml.compress.quantizers.mxint(x, width, block, axis=-1)` of a float32 tile [rows, n]
    (n a multiple of `block`), value for value: the same shared exponent ceil(log2(block max))
    clamped to the 8-bit range, sign-magnitude mantissas rounded half to even and saturated at
    2^(width-1) - 1, zeros (|x| <= 1e-8) kept zero. An all-zero block takes exponent 0 here (the
    library borrows the smallest nonzero block maximum); its values are 0 either way."""
    rows, n = x.shape
    blocks = x.reshape(rows, n // block, block)
    block_max = jnp.max(jnp.abs(blocks), axis=-1)
    block_max = jnp.where(block_max > 0, block_max, 1.0)
    exponent = jnp.clip(jnp.ceil(jnp.log2(block_max)), EXPONENT_MIN, EXPONENT_MAX)[..., None]
    sign = jnp.sign(blocks + 1e-9)
    magnitude = (jnp.abs(blocks) + 1e-9) / exp2_int(exponent)
    m = jnp.clip(_round_half_even(magnitude * 2.0 ** (width - 1)), 0, 2 ** (width - 1) - 1)
    m = jnp.where(jnp.abs(blocks) <= 1e-8, 0.0, m)
    return ((sign * m) * exp2_int(exponent - (width - 1))).reshape(rows, n)


def dequantize_tile(mantissa: jax.Array, exponent: jax.Array, width: int, block: int) -> jax.Array:
    """float32 [k, n] from int8 mantissas [k, n] and exponents [k // block, n] (`reference.unpack`)."""
    k, n = mantissa.shape
    scales = exp2_int(exponent.astype(jnp.float32) - (width - 1))
    values = mantissa.astype(jnp.float32).reshape(k // block, block, n) * scales[:, None, :]
    return values.reshape(k, n)


def _kernel(*refs, n_k, block_k, weight_width, weight_block, x_width, x_block, has_lowrank, has_bias,
            main_precision):
    refs = list(refs)
    x_ref, mantissa_ref, exponent_ref = refs[:3]
    rest = refs[3:]
    a_ref = b_ref = bias_ref = None
    if has_lowrank:
        a_ref, b_ref = rest.pop(0), rest.pop(0)
    if has_bias:
        bias_ref = rest.pop(0)
    (o_ref,) = rest
    exponent_rows = block_k // weight_block
    highest = lax.Precision.HIGHEST

    def body(k, carry):
        ks = pl.ds(pl.multiple_of(k * block_k, block_k), block_k)
        es = pl.ds(pl.multiple_of(k * exponent_rows, exponent_rows), exponent_rows)
        x = x_ref[:, ks]
        w = dequantize_tile(mantissa_ref[ks, :], exponent_ref[es, :], weight_width, weight_block)
        acc = carry[0] + _dot(x, w.astype(x.dtype), main_precision)
        if not has_lowrank:
            return (acc,)
        # X A rides along in the same K loop (r / block_n extra work; no second pass over X).
        return acc, carry[1] + _dot(x.astype(jnp.float32), a_ref[ks, :], highest)

    bm, bn = x_ref.shape[0], o_ref.shape[1]
    init = (jnp.zeros((bm, bn), jnp.float32),)
    if has_lowrank:
        init += (jnp.zeros((bm, a_ref.shape[1]), jnp.float32),)
    carry = lax.fori_loop(0, n_k, body, init)
    acc = carry[0]
    if has_lowrank:
        quantize = (lambda v: v) if x_block is None else functools.partial(mxint_rows, width=x_width,
                                                                            block=x_block)
        xa = quantize(carry[1])                               # Q_x(Q_x(X) A), blocks along r
        acc = acc + quantize(_dot(xa, b_ref[...], highest))   # Q_x(... B), blocks along N
    if has_bias:
        acc = acc + bias_ref[...][None, :]
    o_ref[...] = acc.astype(o_ref.dtype)


def lqer_matmul_pallas(xq, mantissa, exponent, a=None, b=None, bias=None, *, weight_width: int,
                       weight_block: int, x_width: int, x_block: int | None, block_sizes: BlockSizes,
                       out_dtype=jnp.float32, interpret=False):
    """The kernel on its layout (`api.lqer_matmul` pads and quantizes X first).

    Args:
      xq: the quantized activations [M, K], float32 or bfloat16 (bfloat16 only when it holds them
        exactly: the main dot runs in xq's dtype).
      mantissa: int8 [K, N]; exponent: int8 [K // weight_block, N] (`reference.PackedMXINT`).
      a, b: float32 [K, r] and [r, N] (r a power of 2 >= 16, a multiple of x_block), or None.
      bias: float32 [N] or None.
      weight_width, weight_block: the weights' MXINT width and rows per exponent (a power of 2
        dividing block_k).
      x_width, x_block: Q_x of the low-rank epilogue (MXINT, blocks along the last axis; x_block
        divides r and block_n), or x_block None for no quantization.
      block_sizes: M, N, K must be multiples of block_m, block_n, block_k.
    Returns:
      [M, N] in out_dtype.
    """
    what = "lqer_matmul_pallas"
    bs = block_sizes
    if xq.ndim != 2 or mantissa.ndim != 2 or exponent.ndim != 2:
        raise ValueError(f"{what}: expects xq [M, K], mantissa [K, N], exponent [K // block, N]; got "
                         f"{xq.shape}, {mantissa.shape}, {exponent.shape}")
    m, k = xq.shape
    if mantissa.shape[0] != k:
        raise ValueError(f"{what}: xq {xq.shape} and mantissa {mantissa.shape} disagree on K")
    n = mantissa.shape[1]
    if mantissa.dtype != jnp.int8 or exponent.dtype != jnp.int8:
        raise TypeError(f"{what}: mantissa and exponent must be int8; got {mantissa.dtype}, {exponent.dtype}")
    if not _is_power_of_2(weight_block) or bs.block_k % weight_block:
        raise ValueError(f"{what}: weight_block={weight_block} must be a power of 2 dividing "
                         f"block_k={bs.block_k}")
    if exponent.shape != (k // weight_block, n):
        raise ValueError(f"{what}: exponent shape {exponent.shape} != (K // weight_block, N) = "
                         f"{(k // weight_block, n)}")
    check_divisible("M", m, "block_m", bs.block_m)
    check_divisible("N", n, "block_n", bs.block_n)
    check_divisible("K", k, "block_k", bs.block_k)
    if x_block is not None:
        if not _is_power_of_2(x_block):
            raise ValueError(f"{what}: x_block={x_block} must be a power of 2")
        check_divisible("block_n", bs.block_n, "x_block", x_block)
    if (a is None) != (b is None):
        raise ValueError(f"{what}: pass both a and b, or neither")
    r = 0
    if a is not None:
        r = a.shape[-1]
        if a.shape != (k, r) or b.shape != (r, n):
            raise ValueError(f"{what}: a {a.shape} and b {b.shape} must be [K, r] = [{k}, r] and [r, N] = "
                             f"[r, {n}]")
        if r < MIN_BLOCK_SIZE or not _is_power_of_2(r):
            raise ValueError(f"{what}: rank r={r} must be a power of 2 >= {MIN_BLOCK_SIZE} (the API pads)")
        if x_block is not None:
            check_divisible("r", r, "x_block", x_block)
    if bias is not None and bias.shape != (n,):
        raise ValueError(f"{what}: bias shape {bias.shape} != (N,) = {(n,)}")

    kernel = functools.partial(
        _kernel, n_k=k // bs.block_k, block_k=bs.block_k, weight_width=weight_width,
        weight_block=weight_block, x_width=x_width, x_block=x_block, has_lowrank=a is not None,
        has_bias=bias is not None,
        main_precision=lax.Precision.HIGHEST if xq.dtype == jnp.float32 else lax.Precision.DEFAULT)
    in_specs = [pl.BlockSpec((bs.block_m, k), lambda i, j: (i, 0)),
                pl.BlockSpec((k, bs.block_n), lambda i, j: (0, j)),
                pl.BlockSpec((k // weight_block, bs.block_n), lambda i, j: (0, j))]
    args = [xq, mantissa, exponent]
    if a is not None:
        in_specs += [pl.BlockSpec((k, r), lambda i, j: (0, 0)), pl.BlockSpec((r, bs.block_n), lambda i, j: (0, j))]
        args += [a, b]
    if bias is not None:
        in_specs.append(pl.BlockSpec((bs.block_n,), lambda i, j: (j,)))
        args.append(bias)
    n_row_tiles, n_col_tiles = m // bs.block_m, n // bs.block_n
    bytes_accessed = (xq.size * xq.dtype.itemsize * n_col_tiles + (mantissa.size + exponent.size) * n_row_tiles
                      + m * n * jnp.dtype(out_dtype).itemsize)
    if a is not None:
        bytes_accessed += 4 * (a.size * n_col_tiles + b.size * n_row_tiles)
    return pl.pallas_call(
        kernel,
        grid=(n_row_tiles, n_col_tiles),
        in_specs=in_specs,
        out_specs=pl.BlockSpec((bs.block_m, bs.block_n), lambda i, j: (i, j)),
        out_shape=jax.ShapeDtypeStruct((m, n), out_dtype),
        compiler_params=_compiler_params(interpret, num_warps=4),
        cost_estimate=pl.CostEstimate(flops=2 * m * k * n + 2 * m * r * (k * n_col_tiles + n),
                                      transcendentals=k * n // weight_block * n_row_tiles,
                                      bytes_accessed=int(bytes_accessed)),
        interpret=interpret,
        name="lqer_matmul",
    )(*args)
