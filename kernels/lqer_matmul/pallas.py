"""The fused LQER GEMM in Pallas: MXINT weights dequantized in the kernel, low-rank path fused.

    Y = Q_x(X) W_q + Q_x(Q_x(Q_x(X) A) B) + bias          (LQER, `reference.py`)

Each program owns a [block_m, block_n] output tile and walks K in steps of block_k: it loads the
int8 mantissa tile [block_k, block_n] and its exponent rows [block_k // weight_block, block_n],
dequantizes them to float (mantissa * 2^(exponent - (width - 1)), each exponent row broadcast over
its block of weight_block rows; 2^e is built from int32 exponent bits, exactly), accumulates
x_tile @ w_tile in float32 and, in the same loop, x_tile @ a_tile ([block_m, r]; every column
tile recomputes it, r / block_n extra work, in exchange for no second pass over X). The epilogue
quantizes the [block_m, r] accumulator with Q_x along r, multiplies it by B's tile [r, block_n],
quantizes that product along N (its blocks lie inside the tile because block_n is a multiple of
the block), adds it and the bias, and stores.

Q_x(X) itself is computed by XLA before the kernel (`api.py`), once per call instead of once per
column tile; with an MXINT activation format of width <= 8 it is passed as bfloat16, which holds
those values exactly (<= 7 mantissa bits), and the main dot runs in bfloat16 with float32
accumulation: every product is exact, only the summation order differs from the reference.

Two targets (`kernels.common.target_platform`), one tile arithmetic:

- "tpu" (Mosaic; also Pallas' TPU interpreter): a grid (M / block_m, N / block_n, K / block_k),
  K last and "arbitrary", the accumulators in VMEM scratch (the idiomatic TPU matmul: every block
  is a small 2-D tile, whatever K is). Blocks follow Mosaic's (8, 128) tiling: block_m a multiple
  of 8, block_n, block_k and the padded rank multiples of 128, the exponent tile [block_k /
  weight_block, block_n] with a multiple of 8 rows (or all of them), the bias a [1, N] row.
  In-kernel ops are restricted to what Mosaic handles on (8, 128) tiles: no reshape touches the
  last two dimensions. The exponent rows are broadcast over their blocks by static row slices,
  sublane broadcasts and one sublane-aligned concatenate (weight_block a multiple of 8); the
  block maxima of Q_x along lanes come from a butterfly of `pltpu.roll`s (log2(block) steps,
  every lane ends with its aligned block's maximum).
- "gpu" (Triton) and "interpret" (the generic interpreter): a grid (M / block_m, N / block_n)
  with a `fori_loop` over K inside, whole-K blocks, power-of-2 tiles >= 16 (Triton's dot);
  exponents broadcast and block maxima taken through reshapes (Triton lowers them).

Both compute the same values: 2^e from bits, the shared exponent ceil(log2(block max)) from the
float32 exponent and fraction bits (exact; no log, so no device-dependent rounding; `ceil_log2`
and `exp2_int` are the library's, `jaxml.compress.quantizers`), rounding half to even from
`floor`. `mxint_rows` is `jaxml.compress.quantizers.mxint` along the last axis value for value,
powers of two and their neighbours included (the library used XLA's float32 log2 until it took
this exact exponent; see the tests).

The layout (`lqer_matmul_pallas`): x [M, K], mantissa int8 [K, N], exponent int8 [K / weight_block,
N], a [K, r], b [r, N], bias [1, N], every dimension a multiple of its block and r of the target's
rank granule (`padded_dims`; `api.py` pads with zeros).

What has been run where (jax 0.10.2, CPU only; no TPU or GPU was available):
- the generic interpreter (`interpret=True`) and Pallas' TPU interpreter
  (`interpret=kernels.common.tpu_interpret_params()`, race detection on, uninitialised memory
  NaN), both bit-identical to `reference.py` on the tests' data;
- lowering only, `jax.jit(...).trace(...).lower(lowering_platforms=("tpu",))`: the TPU variant
  lowers to a Mosaic `tpu_custom_call` and `lowering_platforms=("cuda",)` with Triton compiler
  params to `__gpu$xla.gpu.triton`, padded and unpadded, with and without the low-rank path and
  bias. Lowering checks that every op has a Pallas lowering rule and that the BlockSpecs are
  legal; Mosaic's own compilation (layouts, VMEM) and Triton's compilation run only on a device
  and have NOT been exercised: the kernel has never been compiled or run on TPU or GPU hardware.
"""

from __future__ import annotations

import dataclasses
import functools

import jax
import jax.numpy as jnp
from jax import lax
from jax.experimental import pallas as pl

from jaxml.compress.quantizers import EXPONENT_MAX, EXPONENT_MIN, ceil_log2, exp2_int
from kernels.common import (TPU_LANES, TPU_SUBLANES, check_divisible, check_target, check_tpu_block,
                            compiler_params, target_platform)

# Triton's dot needs every tile dimension >= 16, and every loaded tile to be a power of 2.
MIN_BLOCK_SIZE = 16
_TPU_CANDIDATES = (512, 256, 128)  # block_n / block_k on TPU, largest dividing the padded dim first


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


def tpu_k_granule(weight_block: int) -> int:
    """K is padded to a multiple of this on TPU: 128 lanes for x's tile, and 8 exponent rows per
    K step (block_k / weight_block a multiple of 8)."""
    return max(TPU_LANES, TPU_SUBLANES * weight_block)


@dataclasses.dataclass(frozen=True)
class BlockSizes:
    """Tiles of the kernel: rows (block_m) and output columns (block_n) per program, reduction
    step (block_k). They change only the order of float32 sums, never the quantization.

    What a target accepts (`check`): on 'gpu'/'interpret' every block is a power of 2 >= 16
    (Triton tiles are powers of 2 and its dot needs >= 16; block_k and block_n then hold whole
    16-element MXINT blocks); on 'tpu' block_m is a multiple of 8 and block_n, block_k multiples
    of 128 (Mosaic's (8, 128) tiles; the API pads N and K to them).
    """

    block_m: int
    block_n: int
    block_k: int

    def __post_init__(self):
        for field in dataclasses.fields(self):
            value = getattr(self, field.name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"BlockSizes.{field.name}={value!r}: every block must be a positive int")

    def check(self, target: str) -> None:
        """Raises ValueError naming the block that `target` cannot tile with."""
        check_target(target)
        for field in dataclasses.fields(self):
            value = getattr(self, field.name)
            if target == "tpu":
                multiple = TPU_SUBLANES if field.name == "block_m" else TPU_LANES
                if value % multiple:
                    raise ValueError(f"BlockSizes.{field.name}={value!r}: on TPU block_m must be a multiple "
                                     f"of {TPU_SUBLANES} and block_n, block_k multiples of {TPU_LANES} "
                                     "(Mosaic's (8, 128) tiles)")
            elif value < MIN_BLOCK_SIZE or not _is_power_of_2(value):
                raise ValueError(f"BlockSizes.{field.name}={value!r}: every block must be a power of 2 "
                                 f">= {MIN_BLOCK_SIZE} (Triton tiles are powers of 2, its dot needs >= 16; "
                                 "block_k and block_n must hold whole 16-element MXINT blocks)")

    def fit(self, m: int, target: str = "interpret") -> BlockSizes:
        """block_m shrunk for few rows, so they are not padded to a large tile: to the smallest
        power of 2 >= m (>= 16) on 'gpu'/'interpret', to m rounded up to 8 on 'tpu'."""
        check_target(target)
        rows = round_up(m, TPU_SUBLANES) if target == "tpu" else max(MIN_BLOCK_SIZE, next_power_of_2(m))
        return dataclasses.replace(self, block_m=min(self.block_m, rows))

    @classmethod
    def get_default(cls, m: int, n: int, k: int, target: str = "interpret", weight_block: int = 16) -> BlockSizes:
        """Defaults for x [m, k] @ W [k, n] (k the packed K) on `target`.

        'gpu'/'interpret': block_n and block_k are the largest powers of 2 <= 128 dividing n and k
        rounded up to 16 (so the API pads nothing but rows when n is a multiple of 16); block_m <= 64.
        'tpu': block_n and block_k the largest of 512, 256, 128 dividing n and k rounded up to 128
        (k to `tpu_k_granule(weight_block)`); block_m <= 128, a multiple of 8.

        TODO: tune on the target GPU/TPU; these follow common GEMM tiles, not measurements.
        """
        check_target(target)
        if target == "tpu":
            n_pad, granule = round_up(n, TPU_LANES), tpu_k_granule(weight_block)
            k_pad = round_up(k, granule)
            block_n = next(c for c in _TPU_CANDIDATES + (TPU_LANES,) if n_pad % c == 0)
            block_k = next((c for c in _TPU_CANDIDATES if c % granule == 0 and k_pad % c == 0), granule)
            return cls(block_m=128, block_n=block_n, block_k=block_k).fit(m, target)
        return cls(block_m=64, block_n=_largest_dividing_block(round_up(n, 16), 128),
                   block_k=_largest_dividing_block(round_up(k, 16), 128)).fit(m, target)


def padded_dims(target: str, m: int, n: int, k: int, r: int, block_sizes: BlockSizes,
                x_block: int | None) -> tuple[int, int, int, int]:
    """(M, N, K, r) padded to the kernel's layout on `target`: M, N, K to multiples of the blocks;
    the rank (r > 0) to a power of 2 >= max(16, x_block) on 'gpu'/'interpret' (Triton tiles) and to
    a multiple of max(128, x_block) on 'tpu' (a whole lane tile: the low-rank tiles and Q_x's lane
    butterfly stay (8, 128)-aligned; zero columns of A and rows of B change nothing)."""
    bs = block_sizes
    dims = (round_up(m, bs.block_m), round_up(n, bs.block_n), round_up(k, bs.block_k))
    if r == 0:
        return dims + (0,)
    if target == "tpu":
        return dims + (round_up(r, max(TPU_LANES, x_block or 1)),)
    return dims + (next_power_of_2(max(r, MIN_BLOCK_SIZE, x_block or 1)),)


# --- tile arithmetic (jnp on values; shared by both kernels and testable outside them) -------------

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


def _block_max_lanes(v: jax.Array, block: int, target: str) -> jax.Array:
    """For v [rows, n] (n a multiple of `block`), each element replaced by the maximum of its aligned
    block of `block` lanes. 'tpu': a butterfly of lane rotations (no reshape of the tiled dims):
    at step s every lane i takes max(v[i], v[i ^ s]), the partner fetched by the rotation that
    brings lane i ^ s to i (found by rotating a lane iota the same way, so the rotation's direction
    does not matter). Elsewhere: a reshape to [rows, n / block, block], max, broadcast back."""
    rows, n = v.shape
    if target != "tpu":
        blocks = v.reshape(rows, n // block, block)
        bmax = jnp.max(blocks, axis=-1, keepdims=True)
        return jnp.broadcast_to(bmax, blocks.shape).reshape(rows, n)
    from jax.experimental.pallas import tpu as pltpu
    lane = lax.broadcasted_iota(jnp.int32, v.shape, 1)
    s = 1
    while s < block:
        forward, forward_lane = pltpu.roll(v, s, 1), pltpu.roll(lane, s, 1)
        partner = jnp.where(forward_lane == (lane ^ s), forward, pltpu.roll(v, n - s, 1))
        v = jnp.maximum(v, partner)
        s *= 2
    return v


def mxint_rows(x: jax.Array, width: int, block: int, target: str = "interpret") -> jax.Array:
    """`jaxml.compress.quantizers.mxint(x, width, block, axis=-1)` of a float32 tile [rows, n]
    (n a multiple of `block`): the shared exponent ceil(log2(block max)) (exact, from the bits:
    `ceil_log2`, the library's) clamped to the 8-bit range, sign-magnitude
    mantissas rounded half to even and saturated at 2^(width-1) - 1, zeros (|x| <= 1e-8) kept zero.
    An all-zero block takes exponent 0 here (the library borrows the smallest nonzero block
    maximum); its values are 0 either way. Every op is elementwise on [rows, n] but the block max
    (`_block_max_lanes`)."""
    magnitude = jnp.abs(x)
    block_max = _block_max_lanes(magnitude, block, target)
    block_max = jnp.where(block_max > 0, block_max, 1.0)
    exponent = jnp.clip(ceil_log2(block_max), EXPONENT_MIN, EXPONENT_MAX)
    shifted = x + 1e-9
    sign = jnp.where(shifted > 0, 1.0, jnp.where(shifted < 0, -1.0, 0.0))  # jnp.sign, without lax.sign
    scaled = (magnitude + 1e-9) / exp2_int(exponent)
    m = jnp.clip(_round_half_even(scaled * 2.0 ** (width - 1)), 0, 2 ** (width - 1) - 1)
    m = jnp.where(magnitude <= 1e-8, 0.0, m)
    return (sign * m) * exp2_int(exponent - (width - 1))


def dequantize_tile(mantissa: jax.Array, exponent: jax.Array, width: int, block: int,
                    target: str = "interpret") -> jax.Array:
    """float32 [k, n] from int8 mantissas [k, n] and exponents [k // block, n] (`reference.unpack`).

    int8 is widened to int32 before any arithmetic. 'tpu': each exponent row's scale [1, n] is
    broadcast to [block, n] and the rows concatenated (sublane-aligned for block % 8 == 0);
    elsewhere a reshape to [k // block, block, n]."""
    k, n = mantissa.shape
    scales = exp2_int(exponent.astype(jnp.int32) - (width - 1))  # [k // block, n]
    values = mantissa.astype(jnp.int32).astype(jnp.float32)
    if target == "tpu":
        rows = [jnp.broadcast_to(scales[g:g + 1, :], (block, n)) for g in range(k // block)]
        return values * (rows[0] if len(rows) == 1 else jnp.concatenate(rows, axis=0))
    return (values.reshape(k // block, block, n) * scales[:, None, :]).reshape(k, n)


@dataclasses.dataclass(frozen=True)
class _Config:
    weight_width: int
    weight_block: int
    x_width: int
    x_block: int | None
    has_lowrank: bool
    has_bias: bool
    main_precision: lax.Precision
    target: str


def _split_refs(refs, cfg: _Config, n_scratch: int):
    refs = list(refs)
    x_ref, mantissa_ref, exponent_ref = refs[:3]
    rest = refs[3:]
    a_ref = b_ref = bias_ref = None
    if cfg.has_lowrank:
        a_ref, b_ref = rest.pop(0), rest.pop(0)
    if cfg.has_bias:
        bias_ref = rest.pop(0)
    o_ref = rest.pop(0)
    assert len(rest) == n_scratch
    return x_ref, mantissa_ref, exponent_ref, a_ref, b_ref, bias_ref, o_ref, rest


def _step(x, mantissa, exponent, a, cfg: _Config):
    """One K tile: x_tile @ dequantized w_tile and, with the low-rank path, x_tile @ a_tile."""
    w = dequantize_tile(mantissa, exponent, cfg.weight_width, cfg.weight_block, cfg.target)
    xw = _dot(x, w.astype(x.dtype), cfg.main_precision)
    xa = None if a is None else _dot(x.astype(jnp.float32), a, lax.Precision.HIGHEST)
    return xw, xa


def _epilogue(acc, xa, b, bias, cfg: _Config):
    if cfg.has_lowrank:
        if cfg.x_block is None:
            quantize = lambda v: v  # noqa: E731
        else:
            quantize = functools.partial(mxint_rows, width=cfg.x_width, block=cfg.x_block, target=cfg.target)
        xa = quantize(xa)                                                   # Q_x(Q_x(X) A), blocks along r
        acc = acc + quantize(_dot(xa, b, lax.Precision.HIGHEST))           # Q_x(... B), blocks along N
    if cfg.has_bias:
        acc = acc + bias                                                    # [1, block_n] row
    return acc


def _loop_kernel(*refs, cfg: _Config, n_k: int, block_k: int):
    """'gpu'/'interpret': grid (M / block_m, N / block_n), the K loop inside, whole-K blocks."""
    x_ref, mantissa_ref, exponent_ref, a_ref, b_ref, bias_ref, o_ref, _ = _split_refs(refs, cfg, 0)
    exponent_rows = block_k // cfg.weight_block

    def body(k, carry):
        ks = pl.ds(pl.multiple_of(k * block_k, block_k), block_k)
        es = pl.ds(pl.multiple_of(k * exponent_rows, exponent_rows), exponent_rows)
        xw, xa = _step(x_ref[:, ks], mantissa_ref[ks, :], exponent_ref[es, :],
                       None if a_ref is None else a_ref[ks, :], cfg)
        return (carry[0] + xw,) if xa is None else (carry[0] + xw, carry[1] + xa)

    bm, bn = x_ref.shape[0], o_ref.shape[1]
    init = (jnp.zeros((bm, bn), jnp.float32),)
    if cfg.has_lowrank:
        init += (jnp.zeros((bm, a_ref.shape[1]), jnp.float32),)
    carry = lax.fori_loop(0, n_k, body, init)
    acc = _epilogue(carry[0], carry[1] if cfg.has_lowrank else None, None if b_ref is None else b_ref[...],
                    None if bias_ref is None else bias_ref[...], cfg)
    o_ref[...] = acc.astype(o_ref.dtype)


def _tpu_kernel(*refs, cfg: _Config, n_k: int):
    """'tpu': grid (M / block_m, N / block_n, K / block_k), accumulators in VMEM scratch."""
    n_scratch = 2 if cfg.has_lowrank else 1
    x_ref, mantissa_ref, exponent_ref, a_ref, b_ref, bias_ref, o_ref, scratch = _split_refs(refs, cfg, n_scratch)
    acc_ref = scratch[0]
    xa_ref = scratch[1] if cfg.has_lowrank else None
    k = pl.program_id(2)

    @pl.when(k == 0)
    def _init():
        acc_ref[...] = jnp.zeros(acc_ref.shape, jnp.float32)
        if xa_ref is not None:
            xa_ref[...] = jnp.zeros(xa_ref.shape, jnp.float32)

    xw, xa = _step(x_ref[...], mantissa_ref[...], exponent_ref[...], None if a_ref is None else a_ref[...], cfg)
    acc_ref[...] += xw
    if xa_ref is not None:
        xa_ref[...] += xa

    @pl.when(k == n_k - 1)
    def _store():
        acc = _epilogue(acc_ref[...], None if xa_ref is None else xa_ref[...],
                        None if b_ref is None else b_ref[...], None if bias_ref is None else bias_ref[...], cfg)
        o_ref[...] = acc.astype(o_ref.dtype)


def lqer_matmul_pallas(xq, mantissa, exponent, a=None, b=None, bias=None, *, weight_width: int,
                       weight_block: int, x_width: int, x_block: int | None, block_sizes: BlockSizes,
                       out_dtype=jnp.float32, interpret=False, target: str | None = None,
                       num_warps: int = 4, num_stages: int = 2):
    """The kernel on its layout (`api.lqer_matmul` pads and quantizes X first).

    Args:
      xq: the quantized activations [M, K], float32 or bfloat16 (bfloat16 only when it holds them
        exactly: the main dot runs in xq's dtype).
      mantissa: int8 [K, N]; exponent: int8 [K // weight_block, N] (`reference.PackedMXINT`).
      a, b: float32 [K, r] and [r, N] (r as `padded_dims` makes it), or None.
      bias: float32 [1, N] or None.
      weight_width, weight_block: the weights' MXINT width and rows per exponent (a power of 2
        dividing block_k; on TPU also a multiple of 8).
      x_width, x_block: Q_x of the low-rank epilogue (MXINT, blocks along the last axis; x_block
        divides r and block_n), or x_block None for no quantization.
      block_sizes: M, N, K must be multiples of block_m, block_n, block_k (`BlockSizes.check`).
      interpret: False (compiled), True (the generic interpreter) or a `pltpu.InterpretParams`
        (Pallas' TPU interpreter).
      target: 'tpu', 'gpu' or 'interpret'; default `kernels.common.target_platform(None, interpret)`.
      num_warps, num_stages: Triton's, on 'gpu'.
    Returns:
      [M, N] in out_dtype.
    """
    what = "lqer_matmul_pallas"
    target = target_platform(None, interpret) if target is None else target
    check_target(target)
    bs = block_sizes
    bs.check(target)
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
    if target == "tpu" and weight_block % TPU_SUBLANES:
        raise ValueError(f"{what}: weight_block={weight_block} must be a multiple of {TPU_SUBLANES} on TPU "
                         "(each exponent row is broadcast over a sublane-aligned block of rows)")
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
        if target == "tpu":
            check_divisible("rank r", r, "128 on TPU (the API pads)", TPU_LANES)
        elif r < MIN_BLOCK_SIZE or not _is_power_of_2(r):
            raise ValueError(f"{what}: rank r={r} must be a power of 2 >= {MIN_BLOCK_SIZE} (the API pads)")
        if x_block is not None:
            check_divisible("r", r, "x_block", x_block)
    if bias is not None and bias.shape != (1, n):
        raise ValueError(f"{what}: bias shape {bias.shape} != (1, N) = {(1, n)}")

    cfg = _Config(weight_width=weight_width, weight_block=weight_block, x_width=x_width, x_block=x_block,
                  has_lowrank=a is not None, has_bias=bias is not None, target=target,
                  main_precision=lax.Precision.HIGHEST if xq.dtype == jnp.float32 else lax.Precision.DEFAULT)
    n_row_tiles, n_col_tiles, n_k = m // bs.block_m, n // bs.block_n, k // bs.block_k
    eb = bs.block_k // weight_block
    args = [xq, mantissa, exponent] + ([a, b] if a is not None else []) + ([bias] if bias is not None else [])
    if target == "tpu":
        from jax.experimental.pallas import tpu as pltpu
        grid = (n_row_tiles, n_col_tiles, n_k)
        specs = [("x", (bs.block_m, bs.block_k), lambda i, j, kk: (i, kk)),
                 ("mantissa", (bs.block_k, bs.block_n), lambda i, j, kk: (kk, j)),
                 ("exponent", (eb, bs.block_n), lambda i, j, kk: (kk, j))]
        if a is not None:
            specs += [("a", (bs.block_k, r), lambda i, j, kk: (kk, 0)),
                      ("b", (r, bs.block_n), lambda i, j, kk: (0, j))]
        if bias is not None:
            specs.append(("bias", (1, bs.block_n), lambda i, j, kk: (0, j)))
        out_spec = pl.BlockSpec((bs.block_m, bs.block_n), lambda i, j, kk: (i, j))
        for (name, block, _), arg in zip(specs, args):
            check_tpu_block(f"{what}: {name}", block, arg.shape)
        check_tpu_block(f"{what}: output", (bs.block_m, bs.block_n), (m, n))
        scratch = [pltpu.VMEM((bs.block_m, bs.block_n), jnp.float32)]
        if a is not None:
            scratch.append(pltpu.VMEM((bs.block_m, r), jnp.float32))
        kernel = functools.partial(_tpu_kernel, cfg=cfg, n_k=n_k)
        params = compiler_params("tpu", dimension_semantics=("parallel", "parallel", "arbitrary"))
    else:
        grid = (n_row_tiles, n_col_tiles)
        specs = [("x", (bs.block_m, k), lambda i, j: (i, 0)),
                 ("mantissa", (k, bs.block_n), lambda i, j: (0, j)),
                 ("exponent", (k // weight_block, bs.block_n), lambda i, j: (0, j))]
        if a is not None:
            specs += [("a", (k, r), lambda i, j: (0, 0)), ("b", (r, bs.block_n), lambda i, j: (0, j))]
        if bias is not None:
            specs.append(("bias", (1, bs.block_n), lambda i, j: (0, j)))
        out_spec = pl.BlockSpec((bs.block_m, bs.block_n), lambda i, j: (i, j))
        scratch = []
        kernel = functools.partial(_loop_kernel, cfg=cfg, n_k=n_k, block_k=bs.block_k)
        params = compiler_params(target, num_warps=num_warps, num_stages=num_stages)
    in_specs = [pl.BlockSpec(block, index_map) for _, block, index_map in specs]
    # x is read once per column tile and the weight once per row tile on both grids; A by every program.
    bytes_accessed = (xq.size * xq.dtype.itemsize * n_col_tiles + (mantissa.size + exponent.size) * n_row_tiles
                      + m * n * jnp.dtype(out_dtype).itemsize)
    if a is not None:
        bytes_accessed += 4 * (a.size * n_row_tiles * n_col_tiles + b.size * n_row_tiles)
    return pl.pallas_call(
        kernel,
        grid=grid,
        in_specs=in_specs,
        out_specs=out_spec,
        out_shape=jax.ShapeDtypeStruct((m, n), out_dtype),
        scratch_shapes=scratch,
        compiler_params=params,
        cost_estimate=pl.CostEstimate(flops=2 * m * k * n + 2 * m * r * (k * n_col_tiles + n),
                                      transcendentals=0, bytes_accessed=int(bytes_accessed)),
        interpret=interpret,
        name="lqer_matmul",
    )(*args)
