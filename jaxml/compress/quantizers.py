"""Quantizers (fake quantization with a straight-through estimator).

Each quantizer returns the dequantized values in the input's dtype; the backward pass is the
identity (STE). Blocks and groups run along the *reduction* dimension of the matmul the tensor
enters: for a Flax kernel [in, out] that is axis 0, for activations [..., features] the last axis.

* `mxint`: block floating point as the LQER code defines its "MXINT": per block of 16 a shared
  exponent e = ceil(log2(max |x|)) (8-bit, bias 127, clamped to [-127, 128]; taken exactly from the
  float32 exponent and fraction bits, `ceil_log2`, not from a rounded log2); each element is
  sign * 2^e * m / 2^(w-1) with m = clamp(round(|x| / 2^e * 2^(w-1)), 0, 2^(w-1) - 1), w the width
  including the sign bit. The largest element of a block therefore saturates just below 2^e; zeros
  stay zero; an all-zero block borrows the smallest nonzero block maximum (as the reference does).
* `integer`: round-to-nearest integers, symmetric or asymmetric (zero point), per output channel
  (`group_size=0`) or per group of `group_size` along the reduction axis.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Literal

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

EXPONENT_BIAS = 127
EXPONENT_MIN, EXPONENT_MAX = -EXPONENT_BIAS, 2 ** 8 - 1 - EXPONENT_BIAS


def ceil_log2(v: jax.Array) -> jax.Array:
    """ceil(log2(v)) as int32 for float32 v > 0, exactly, from the bits: the unbiased exponent, plus
    one unless the fraction is zero (v a power of 2). For a subnormal v it returns -126 (its values
    are below MXINT's 1e-8 zero threshold, so the exponent does not matter).

    The one implementation of MXINT's shared exponent (the library's `mxint`/`mxint_parts` and the
    Pallas LQER kernel's in-kernel quantizer). XLA's float32 `ceil(log2(v))` is off by one at some
    exact powers of two (2^-26 -> -25) and a few ulps above many (2^k (1 + 2^-23) -> k): no
    rounding here, and only integer ops, so every backend (Mosaic, Triton) gives the same bits."""
    bits = lax.bitcast_convert_type(jnp.asarray(v, jnp.float32), jnp.int32)
    biased = lax.shift_right_logical(bits, jnp.int32(23)) & 0xFF
    return biased - 127 + ((bits & 0x7FFFFF) != 0).astype(jnp.int32)


def exp2_int(e: jax.Array) -> jax.Array:
    """2.0 ** e for integer-valued e (int or float), built from the float32 exponent bits with int32
    arithmetic (exact, no pow call): 0 below 2^-126 and inf above 2^127, as XLA's `2.0 ** e` gives
    on CPU (subnormals flushed)."""
    biased = jnp.clip(e.astype(jnp.int32) + 127, 0, 255)
    return lax.bitcast_convert_type(lax.shift_left(biased, jnp.int32(23)), jnp.float32)


def _shared_exponent(block_max: jax.Array) -> jax.Array:
    """MXINT's shared exponent of blocks with maxima `block_max` (> 0), clamped to the 8-bit range,
    as float32."""
    return jnp.clip(ceil_log2(block_max), EXPONENT_MIN, EXPONENT_MAX).astype(jnp.float32)


def _ste(x: jax.Array, q: jax.Array) -> jax.Array:
    """q forward, identity backward."""
    return x + jax.lax.stop_gradient(q - x)


def _to_blocks(x: jax.Array, axis: int, block: int) -> tuple[jax.Array, tuple[int, ...], int]:
    """Moves `axis` last and splits it into blocks [..., n_blocks, block] (zero padded)."""
    moved = jnp.moveaxis(x, axis, -1)
    n = moved.shape[-1]
    pad = (-n) % block
    if pad:
        moved = jnp.pad(moved, [(0, 0)] * (moved.ndim - 1) + [(0, pad)])
    return moved.reshape(moved.shape[:-1] + (-1, block)), moved.shape, n


def _from_blocks(blocks: jax.Array, padded_shape, n: int, axis: int) -> jax.Array:
    return jnp.moveaxis(blocks.reshape(padded_shape)[..., :n], -1, axis)


def _check_mxint(width: int, block: int) -> None:
    if width < 2:
        raise ValueError(f"mxint width={width} must be >= 2 (one sign bit plus mantissa bits)")
    if block < 1:
        raise ValueError(f"mxint block={block} must be positive")


def mxint_parts(x: jax.Array, width: int, block: int = 16, axis: int = -1):
    """The integer representation of `mxint`: (signed mantissas int32 [..., n_blocks, block],
    exponents int32 [..., n_blocks]) with `axis` moved last, plus the info to undo the blocking."""
    _check_mxint(width, block)
    xf = x.astype(jnp.float32)
    blocks, padded_shape, n = _to_blocks(xf, axis, block)
    block_max = jnp.max(jnp.abs(blocks), axis=-1)
    nonzero_min = jnp.min(jnp.where(block_max > 0, block_max, jnp.inf))
    block_max = jnp.where(block_max > 0, block_max, jnp.where(jnp.isfinite(nonzero_min), nonzero_min, 1.0))
    exponent = _shared_exponent(block_max)
    mantissa_bits = width - 1
    shift = 2.0 ** mantissa_bits
    sign = jnp.sign(blocks + 1e-9)
    magnitude = (jnp.abs(blocks) + 1e-9) / 2.0 ** exponent[..., None]
    m = jnp.clip(jnp.round(magnitude * shift), 0, 2 ** mantissa_bits - 1)
    m = jnp.where(jnp.abs(blocks) <= 1e-8, 0.0, m)      # values within 1e-8 of 0 stay exactly 0
    return (sign * m).astype(jnp.int32), exponent.astype(jnp.int32), (padded_shape, n)


def mxint_from_parts(mantissa: jax.Array, exponent: jax.Array, width: int, layout, axis: int = -1,
                     dtype=jnp.float32) -> jax.Array:
    """Dequantizes `mxint_parts` output back to the original shape."""
    padded_shape, n = layout
    values = mantissa.astype(jnp.float32) * 2.0 ** (exponent[..., None].astype(jnp.float32) - (width - 1))
    return _from_blocks(values, padded_shape, n, axis).astype(dtype)


def mxint(x: jax.Array, width: int, block: int = 16, axis: int = -1) -> jax.Array:
    """Block-floating-point fake quantization (see the module docstring); STE gradient.

    The values of `mxint_from_parts(*mxint_parts(x))`, bit for bit, computed without the integer
    round trip and without the whole-tensor minimum that only picks the (value-irrelevant)
    exponent of all-zero blocks: fewer operations in every quantized layer of a compiled model.
    """
    _check_mxint(width, block)
    blocks, padded_shape, n = _to_blocks(x.astype(jnp.float32), axis, block)
    magnitude = jnp.abs(blocks)
    block_max = jnp.max(magnitude, axis=-1, keepdims=True)
    exponent = _shared_exponent(jnp.where(block_max > 0, block_max, 1.0))
    m = jnp.clip(jnp.round((magnitude + 1e-9) / 2.0 ** exponent * 2.0 ** (width - 1)), 0, 2 ** (width - 1) - 1)
    m = jnp.where(magnitude <= 1e-8, 0.0, m)      # values within 1e-8 of 0 stay exactly 0
    values = (jnp.sign(blocks + 1e-9) * m) * 2.0 ** (exponent - (width - 1))
    return _ste(x, _from_blocks(values, padded_shape, n, axis).astype(x.dtype))


def integer(x: jax.Array, bits: int, *, axis: int = 0, group_size: int = 0, symmetric: bool = True) -> jax.Array:
    """Round-to-nearest integer fake quantization; STE gradient.

    Args:
      x: the tensor (for a kernel [in, out], `axis=0` is the reduction axis).
      bits: integer width (2..8).
      axis: the reduction axis, along which groups are formed.
      group_size: 0 = one scale per slice along `axis` (per output channel), else groups of this
        many elements along `axis` (the length must be a multiple).
      symmetric: signed [-2^(b-1)+1, 2^(b-1)-1] levels with scale max|x|/(2^(b-1)-1); otherwise
        unsigned [0, 2^b - 1] levels with a zero point from min and max.
    """
    if not 2 <= bits <= 8:
        raise ValueError(f"integer bits={bits}; accepted 2..8")
    n = x.shape[axis]
    size = n if group_size == 0 else group_size
    if size <= 0 or n % size:
        raise ValueError(f"group_size={group_size} must divide the length {n} of axis {axis} (or be 0)")
    moved = jnp.moveaxis(x.astype(jnp.float32), axis, -1)
    groups = moved.reshape(moved.shape[:-1] + (n // size, size))
    if symmetric:
        levels = 2 ** (bits - 1) - 1
        scale = jnp.max(jnp.abs(groups), axis=-1, keepdims=True) / levels
        scale = jnp.where(scale > 0, scale, 1.0)
        q = jnp.clip(jnp.round(groups / scale), -levels, levels) * scale
    else:
        levels = 2 ** bits - 1
        lo, hi = jnp.min(groups, axis=-1, keepdims=True), jnp.max(groups, axis=-1, keepdims=True)
        scale = jnp.where(hi > lo, (hi - lo) / levels, 1.0)
        zero = jnp.round(-lo / scale)
        q = (jnp.clip(jnp.round(groups / scale) + zero, 0, levels) - zero) * scale
    q = jnp.moveaxis(q.reshape(moved.shape), -1, axis).astype(x.dtype)
    return _ste(x, q)


@dataclasses.dataclass(frozen=True)
class QuantFormat:
    """A number format: `kind` 'mxint' (width, block) or 'int' (width = bits, group_size,
    symmetric), or 'none' (no quantization)."""

    kind: Literal["mxint", "int", "none"] = "none"
    width: int = 8
    block: int = 16
    group_size: int = 0
    symmetric: bool = True

    def __post_init__(self):
        if self.kind not in ("mxint", "int", "none"):
            raise ValueError(f"QuantFormat.kind={self.kind!r}; accepted 'mxint', 'int', 'none'")

    def __call__(self, x: jax.Array, axis: int) -> jax.Array:
        if self.kind == "none":
            return x
        if self.kind == "mxint":
            return mxint(x, self.width, self.block, axis)
        return integer(x, self.width, axis=axis, group_size=self.group_size, symmetric=self.symmetric)

    def bits_per_element(self, shape: tuple[int, ...], axis: int) -> float:
        """Storage bits per element, shared exponents / scales / zero points included."""
        if self.kind == "none":
            return 32.0
        n = shape[axis]
        if self.kind == "mxint":
            return self.width + 8.0 / self.block    # 8-bit shared exponent per block
        size = n if self.group_size == 0 else self.group_size
        overhead = 16.0 if self.symmetric else 32.0   # fp16 scale (and zero point) per group
        return self.width + overhead / size


NONE = QuantFormat()


def mxint_numpy_reference(x: np.ndarray, width: int, block: int = 16) -> np.ndarray:
    """A plain NumPy transcription of the block-fp rule along the last axis (for tests)."""
    x = np.asarray(x, np.float64)
    out = np.zeros_like(x)
    flat = x.reshape(-1, x.shape[-1])
    res = out.reshape(-1, x.shape[-1])
    maxes = [np.abs(row[s:s + block]).max() for row in flat for s in range(0, len(row), block)]
    nonzero = [m for m in maxes if m > 0]
    fill = min(nonzero) if nonzero else 1.0
    for r, row in enumerate(flat):
        for s in range(0, len(row), block):
            blk = row[s:s + block]
            bmax = np.abs(blk).max() or fill
            e = min(max(np.ceil(np.log2(bmax)), EXPONENT_MIN), EXPONENT_MAX)
            for j, v in enumerate(blk):
                if abs(v) <= 1e-8:
                    continue
                m = min(max(np.round((abs(v) + 1e-9) / 2 ** e * 2 ** (width - 1)), 0), 2 ** (width - 1) - 1)
                res[r, s + j] = np.sign(v + 1e-9) * 2 ** e * m / 2 ** (width - 1)
    return out


@functools.lru_cache(maxsize=None)
def _jit_format(fmt: QuantFormat):
    return jax.jit(fmt.__call__, static_argnames="axis")


def quantize_array(fmt: QuantFormat, x: np.ndarray, axis: int) -> np.ndarray:
    """`fmt(x, axis)` on a NumPy array through one compiled program per format and shape (float32)."""
    if fmt.kind == "none":
        return np.asarray(x, np.float32)
    return np.asarray(_jit_format(fmt)(np.asarray(x, np.float32), axis=axis))
