"""The specification of `lqer_matmul` in plain jnp, and the packed MXINT weight format.

    Y = Q_x(X) W_q + Q_x(Q_x(Q_x(X) A) B) + bias          (LQER, Zhang et al. ICML 2024, Sec. 3)

`W_q` is an MXINT weight (block floating point, `jaxml.compress.quantizers.mxint`) stored packed:
`PackedMXINT` holds its signed integer mantissas (int8 [K_pad, N]) and one shared exponent per
block of `block` (16) consecutive input features (int8 [K_pad // block, N]); the value of an
element is `mantissa * 2^(exponent - (width - 1))`. K, the reduction axis, is padded with zero rows
to a multiple of `block` when it is not one (`in_features` keeps the true K; padded rows have
mantissa 0). `unpack(pack(W))` equals `mxint(W, width, block, axis=0)` exactly.

`Q_x` (default MXINT8, blocks of 16 along the last axis) quantizes the activations, the rank-r
intermediate X A and the low-rank product (X A) B; A [K, r] and B [r, N] are used as given (LQER
stores them already quantized, e.g. MXINT8). The computation is `jaxml.compress.linear.
quantized_linear(x, unpack(w), bias, (a, b), act=x_format)`, in float32, cast to x's dtype.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from flax import struct

from jaxml.compress.linear import quantized_linear
from jaxml.compress.quantizers import QuantFormat, mxint_parts

# int8 holds exponents in [-128, 127]; MXINT's 8-bit exponent spans [-127, 128] (quantizers.py).
_INT8_EXPONENT_MAX = 127
MAX_WIDTH = 8  # mantissas (sign included) are stored as int8


@struct.dataclass
class PackedMXINT:
    """An MXINT weight [K, N] (`K` = in_features, the reduction axis) in integer form.

    Attributes:
      mantissa: int8 [K_pad, N], signed, |m| <= 2^(width-1) - 1; K_pad = K rounded up to a
        multiple of `block` (the extra rows are zero).
      exponent: int8 [K_pad // block, N], the shared exponent of each block of `block` rows.
      width: bits per element, sign included (static).
      block: rows per shared exponent (static).
      in_features: the true K (static).
    """

    mantissa: jax.Array
    exponent: jax.Array
    width: int = struct.field(pytree_node=False, default=4)
    block: int = struct.field(pytree_node=False, default=16)
    in_features: int = struct.field(pytree_node=False, default=0)

    @property
    def shape(self) -> tuple[int, int]:
        """The shape of the float weight, (K, N)."""
        return (self.in_features, self.mantissa.shape[1])

    @property
    def out_features(self) -> int:
        return self.mantissa.shape[1]

    def validate(self, what: str = "PackedMXINT") -> None:
        """Raises ValueError/TypeError when the arrays do not fit the static fields."""
        if not 2 <= self.width <= MAX_WIDTH:
            raise ValueError(f"{what}: width={self.width}; accepted 2..{MAX_WIDTH} (int8 mantissas)")
        if self.mantissa.ndim != 2 or self.exponent.ndim != 2:
            raise ValueError(f"{what}: mantissa {self.mantissa.shape} and exponent {self.exponent.shape} "
                             "must be 2-D ([K_pad, N] and [K_pad // block, N])")
        k_pad, n = self.mantissa.shape
        if self.block < 1 or k_pad % self.block or k_pad - self.in_features not in range(self.block):
            raise ValueError(f"{what}: mantissa rows {k_pad} must be in_features={self.in_features} rounded "
                             f"up to a multiple of block={self.block}")
        if self.exponent.shape != (k_pad // self.block, n):
            raise ValueError(f"{what}: exponent shape {self.exponent.shape} != (K_pad // block, N) = "
                             f"{(k_pad // self.block, n)}")
        if self.mantissa.dtype != jnp.int8 or self.exponent.dtype != jnp.int8:
            raise TypeError(f"{what}: mantissa and exponent must be int8; got {self.mantissa.dtype}, "
                            f"{self.exponent.dtype}")


def pack(kernel: jax.Array, width: int = 4, block: int = 16) -> PackedMXINT:
    """MXINT-quantizes a Flax kernel [K, N] along K (axis 0) and stores it as integers.

    Args:
      kernel: float [K, N] (in_features, out_features).
      width: mantissa bits including the sign, 2..8 (4 = LQER's W4).
      block: consecutive input features that share an exponent (16 in LQER).
    Returns:
      PackedMXINT with `unpack(result) == mxint(kernel, width, block, axis=0)` exactly.
    Raises:
      ValueError: a bad shape or width, or (for concrete inputs) a block whose maximum exceeds
        2^127, whose exponent 128 int8 cannot hold.
    """
    kernel = jnp.asarray(kernel)
    if kernel.ndim != 2 or min(kernel.shape) < 1:
        raise ValueError(f"pack: kernel must be [in_features, out_features]; got shape {kernel.shape}")
    if not jnp.issubdtype(kernel.dtype, jnp.floating):
        raise TypeError(f"pack: kernel must be floating; got {kernel.dtype}")
    if not 2 <= width <= MAX_WIDTH:
        raise ValueError(f"pack: width={width}; accepted 2..{MAX_WIDTH} (int8 mantissas)")
    if block < 1:
        raise ValueError(f"pack: block={block} must be positive")
    k, n = kernel.shape
    mantissa, exponent, _ = mxint_parts(kernel, width, block, axis=0)  # [N, nb, block], [N, nb]
    if not isinstance(exponent, jax.core.Tracer) and int(jnp.max(exponent)) > _INT8_EXPONENT_MAX:
        raise ValueError(f"pack: a block maximum exceeds 2^{_INT8_EXPONENT_MAX} (exponent "
                         f"{int(jnp.max(exponent))}), which int8 exponents cannot store")
    mantissa = mantissa.reshape(n, -1).T.astype(jnp.int8)  # [K_pad, N]
    return PackedMXINT(mantissa=mantissa, exponent=exponent.T.astype(jnp.int8), width=width, block=block,
                       in_features=k)


def block_scales(exponent: jax.Array, width: int) -> jax.Array:
    """2^(exponent - (width - 1)) in float32, the value of mantissa 1 (the formula of
    `quantizers.mxint_from_parts`, so dequantization is bit-identical)."""
    return 2.0 ** (exponent.astype(jnp.float32) - (width - 1))


def unpack(w: PackedMXINT, dtype=jnp.float32) -> jax.Array:
    """The float weight [K, N]: mantissa * 2^(exponent - (width - 1)), padded rows dropped."""
    scales = jnp.repeat(block_scales(w.exponent, w.width), w.block, axis=0)  # [K_pad, N]
    return (w.mantissa.astype(jnp.float32) * scales)[:w.in_features].astype(dtype)


def lqer_matmul_reference(x: jax.Array, w: PackedMXINT, a: jax.Array | None = None,
                          b: jax.Array | None = None, bias: jax.Array | None = None, *,
                          x_format: QuantFormat = QuantFormat("mxint", 8, 16)) -> jax.Array:
    """Y = Q_x(X) unpack(W) + Q_x(Q_x(Q_x(X) A) B) + bias, in float32, returned in x's dtype: the one
    specification `jaxml.compress.linear.quantized_linear` applied to the unpacked weight.

    Args:
      x: float [..., K].
      w: PackedMXINT of a [K, N] weight.
      a, b: [K, r] and [r, N], or both None (no low-rank path).
      bias: [N] or None.
      x_format: Q_x, applied along the last axis (any `QuantFormat`).
    Returns:
      [..., N] in x's dtype. The gradient is the straight-through estimator of the quantizers
      (with respect to x, a, b and bias; none to the integer weight).
    """
    lowrank = None if a is None else (a.astype(jnp.float32), b.astype(jnp.float32))
    y = quantized_linear(x.astype(jnp.float32), unpack(w), None if bias is None else bias.astype(jnp.float32),
                         lowrank, act=x_format)
    return y.astype(x.dtype)
