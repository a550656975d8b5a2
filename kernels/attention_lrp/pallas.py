"""Flash attention forward and backward in Pallas; the backward folds in the AttnLRP scaling.

Forward (`flash_attention_forward`): one program per (batch, head, block of queries) keeps its
queries resident, walks the keys block by block with an online softmax (float32 running max,
normaliser and accumulator; FlashAttention-2, Dao 2023, Alg. 1) and writes the output and the
per-row logsumexp. Backward (`flash_attention_backward`): delta = rowsum(o * do) (one fused XLA
reduction), then two kernels that recompute the probabilities from the saved logsumexp: a dq
kernel (one program per block of queries, walking the keys) and a dk/dv kernel (one program per
block of keys, walking the queries). Each kernel multiplies its result by its gradient factor
before the store, so AttnLRP's (dq, dk, dv) x (1/4, 1/4, 1/2) costs nothing extra.

Layout: the kernels take [batch, heads, len, head_dim] (`api.py` transposes and pads); kv heads
are shared by `heads // kv_heads` query heads through the BlockSpec index maps (grouped-query
attention, no copies of k and v). The dk/dv kernel writes one float32 gradient per *query* head;
the sum over each group of query heads is an XLA reduction afterwards.

Masks inside the kernels: keys past the true `kv_len` (padding added by the API), `causal`
(query i sees keys j <= i + offset, offset = kv_len - q_len), an optional int32 key-validity row
and an optional int8 dense mask [1 or batch, 1 or heads, len, kv_len]. Masked logits are replaced
by MASK_VALUE = -1e30 as in the reference. Causal programs skip the key (query) blocks that lie
entirely above the diagonal, so a row with *no* visible key ends with a finite placeholder and a
logsumexp near MASK_VALUE; `api.py` detects those rows and gives them the reference's value (the
mean of v, gradient only to v).

What has been run where: every kernel here has been run and tested only in interpret mode
(`interpret=True`, CPU, jax 0.10.2). The GPU path (Triton lowering, selected with
`pallas.triton.CompilerParams`: power-of-2 blocks >= 16, head_dim padded to a power of 2 by the
API) and the TPU path (Mosaic) have NOT been compiled or run on hardware; the TPU path in
particular may need the lane-padded logsumexp layout of `pallas/ops/tpu/flash_attention.py`.
The Triton backend is deprecated from jax 0.11; a Mosaic GPU port (`plgpu.kernel`) is not written.
`tests/kernels/attention_lrp` has a `gpu`-marked class that runs the compiled kernels, and
`scripts/bench_attention_lrp.py` times them (both via `scripts/device_check.sh`).
"""

from __future__ import annotations

import dataclasses
import functools

import jax
import jax.numpy as jnp
from jax import lax
from jax.experimental import pallas as pl

from kernels.attention_lrp.reference import EXACT_GRAD_SCALES, MASK_VALUE
from kernels.common import check_divisible

# Triton's dot needs every tile dimension >= 16, and every loaded tile to be a power of 2.
MIN_BLOCK_SIZE = 16


def _is_power_of_2(n: int) -> bool:
    return n > 0 and n & (n - 1) == 0


def next_power_of_2(n: int) -> int:
    return 1 << max(0, (n - 1).bit_length())


def fit_block(block: int, length: int) -> int:
    """`block`, shrunk to the smallest power of 2 >= length (>= MIN_BLOCK_SIZE) for short inputs."""
    return min(block, max(MIN_BLOCK_SIZE, next_power_of_2(length)))


@dataclasses.dataclass(frozen=True)
class BlockSizes:
    """Tile sizes of the forward and backward kernels.

    They have a negligible effect on the numerics (the order of float32 sums) but a large one
    on speed. Every block is a power of 2 >= MIN_BLOCK_SIZE. The backward blocks default to the
    forward ones when left as None.

    Attributes:
      block_q, block_k: forward kernel, queries per program and keys per inner step.
      block_q_dkv, block_k_dkv: dk/dv kernel, queries per inner step and keys per program.
      block_q_dq, block_k_dq: dq kernel, queries per program and keys per inner step.
    """

    block_q: int
    block_k: int
    block_q_dkv: int | None = None
    block_k_dkv: int | None = None
    block_q_dq: int | None = None
    block_k_dq: int | None = None

    def __post_init__(self):
        for field in dataclasses.fields(self):
            value = getattr(self, field.name)
            if value is None and field.name not in ("block_q", "block_k"):
                continue
            if (not isinstance(value, int) or isinstance(value, bool) or value < MIN_BLOCK_SIZE
                    or not _is_power_of_2(value)):
                raise ValueError(f"BlockSizes.{field.name}={value!r}: every block must be a power of 2 "
                                 f">= {MIN_BLOCK_SIZE} (Triton tiles are powers of 2, its dot needs >= 16)")

    @property
    def has_backward_blocks(self) -> bool:
        """True when every backward block was given (else they fall back to the forward ones)."""
        return None not in (self.block_q_dkv, self.block_k_dkv, self.block_q_dq, self.block_k_dq)

    def resolved(self) -> BlockSizes:
        """A copy with every backward block set (a missing one takes the forward block)."""
        return dataclasses.replace(
            self,
            block_q_dkv=self.block_q_dkv or self.block_q, block_k_dkv=self.block_k_dkv or self.block_k,
            block_q_dq=self.block_q_dq or self.block_q, block_k_dq=self.block_k_dq or self.block_k)

    def fit(self, q_len: int, kv_len: int) -> BlockSizes:
        """Resolved, and each block shrunk (`fit_block`) so short inputs are not padded to a long block."""
        r = self.resolved()
        return BlockSizes(
            block_q=fit_block(r.block_q, q_len), block_k=fit_block(r.block_k, kv_len),
            block_q_dkv=fit_block(r.block_q_dkv, q_len), block_k_dkv=fit_block(r.block_k_dkv, kv_len),
            block_q_dq=fit_block(r.block_q_dq, q_len), block_k_dq=fit_block(r.block_k_dq, kv_len))

    @property
    def q_multiple(self) -> int:
        """The API pads q_len to a multiple of this (all query blocks divide it)."""
        r = self.resolved()
        return max(r.block_q, r.block_q_dkv, r.block_q_dq)

    @property
    def kv_multiple(self) -> int:
        """The API pads kv_len to a multiple of this (all key blocks divide it)."""
        r = self.resolved()
        return max(r.block_k, r.block_k_dkv, r.block_k_dq)

    @classmethod
    def get_default(cls, q_len: int, kv_len: int, head_dim: int) -> BlockSizes:
        """Defaults fitted to the lengths.

        TODO: select better parameters from measurements on the target GPU/TPU; these follow the
        tile sizes of jax's `pallas/ops/gpu/attention.py` and have not been tuned.
        """
        big = head_dim <= 64
        return cls(block_q=128 if big else 64, block_k=64, block_q_dkv=64 if big else 32,
                   block_k_dkv=64 if big else 32, block_q_dq=64 if big else 32,
                   block_k_dq=64 if big else 32).fit(q_len, kv_len)


def _compiler_params(interpret, num_warps: int):
    """Triton on GPU (the kernels use Triton-style whole-tile loads); the default elsewhere."""
    if interpret or jax.default_backend() != "gpu":
        return None
    from jax.experimental.pallas import triton as pltriton
    return pltriton.CompilerParams(num_warps=num_warps, num_stages=2)


def _precision(dtype):
    # float32 inputs: full-precision dots (IEEE on Triton rather than its TF32 default).
    return lax.Precision.HIGHEST if dtype == jnp.float32 else lax.Precision.DEFAULT


def _dot(a, b, contract, precision):
    """2-D dot_general in float32: contract=(i, j) contracts a's dim i with b's dim j."""
    return lax.dot_general(a, b, (((contract[0],), (contract[1],)), ((), ())),
                           preferred_element_type=jnp.float32, precision=precision)


def _and(a, b):
    return b if a is None else a & b


def _visible(q_idx, k_idx, key_valid, dense, *, causal: bool, offset: int, kv_len: int, kv_padded: int):
    """bool tile [block_q or 1, block_k] of (query, key) pairs that attend, or None (all do)."""
    ok = None
    if kv_len != kv_padded:
        ok = _and(ok, (k_idx < kv_len)[None, :])
    if causal:
        ok = _and(ok, k_idx[None, :] <= q_idx[:, None] + offset)
    if key_valid is not None:
        ok = _and(ok, (key_valid != 0)[None, :])
    if dense is not None:
        ok = _and(ok, dense != 0)
    return ok


def _split_refs(refs, has_key_valid: bool, has_mask: bool, n_before: int):
    """(first n_before refs, key_valid ref or None, mask ref or None, the rest)."""
    refs = list(refs)
    head, rest = refs[:n_before], refs[n_before:]
    key_valid_ref = rest.pop(0) if has_key_valid else None
    mask_ref = rest.pop(0) if has_mask else None
    return head, key_valid_ref, mask_ref, rest


def _fwd_kernel(*refs, scale, causal, offset, kv_len, block_q, block_k, has_key_valid, has_mask):
    (q_ref, k_ref, v_ref), key_valid_ref, mask_ref, (o_ref, lse_ref) = _split_refs(
        refs, has_key_valid, has_mask, 3)
    kv_padded = k_ref.shape[0]
    i = pl.program_id(2)
    q = q_ref[...]
    precision = _precision(q.dtype)
    q_idx = i * block_q + lax.iota(jnp.int32, block_q)

    def body(j, carry):
        acc, m_prev, l_prev = carry
        keys = pl.ds(pl.multiple_of(j * block_k, block_k), block_k)
        k = k_ref[keys, :]
        v = v_ref[keys, :]
        s = _dot(q, k, (1, 1), precision) * scale
        ok = _visible(q_idx, j * block_k + lax.iota(jnp.int32, block_k),
                      None if key_valid_ref is None else key_valid_ref[keys],
                      None if mask_ref is None else mask_ref[:, keys],
                      causal=causal, offset=offset, kv_len=kv_len, kv_padded=kv_padded)
        if ok is not None:
            s = jnp.where(ok, s, MASK_VALUE)
        m = jnp.maximum(m_prev, jnp.max(s, axis=1))
        correction = jnp.exp(m_prev - m)
        p = jnp.exp(s - m[:, None])
        l = correction * l_prev + jnp.sum(p, axis=1)
        acc = correction[:, None] * acc + _dot(p.astype(v.dtype), v, (1, 0), precision)
        return acc, m, l

    n_k = kv_padded // block_k
    if causal:
        # Keys past the last row's diagonal are invisible to the whole block; visit >= 1 block.
        last = jnp.maximum((i + 1) * block_q + offset, 1)
        n_visit = jnp.minimum(lax.div(last + block_k - 1, block_k), n_k)
    else:
        n_visit = n_k
    init = (jnp.zeros(q.shape, jnp.float32), jnp.full((block_q,), -jnp.inf, jnp.float32),
            jnp.zeros((block_q,), jnp.float32))
    acc, m, l = lax.fori_loop(0, n_visit, body, init)
    o_ref[...] = (acc / l[:, None]).astype(o_ref.dtype)
    lse_ref[...] = m + jnp.log(l)


def _dq_kernel(*refs, scale, causal, offset, kv_len, block_q, block_k, has_key_valid, has_mask,
               grad_scale):
    (q_ref, k_ref, v_ref), key_valid_ref, mask_ref, (do_ref, lse_ref, di_ref, dq_ref) = _split_refs(
        refs, has_key_valid, has_mask, 3)
    kv_padded = k_ref.shape[0]
    i = pl.program_id(2)
    q = q_ref[...]
    do = do_ref[...]
    lse = lse_ref[...]
    di = di_ref[...]
    precision = _precision(q.dtype)
    q_idx = i * block_q + lax.iota(jnp.int32, block_q)

    def body(j, dq):
        keys = pl.ds(pl.multiple_of(j * block_k, block_k), block_k)
        k = k_ref[keys, :]
        v = v_ref[keys, :]
        s = _dot(q, k, (1, 1), precision) * scale
        ok = _visible(q_idx, j * block_k + lax.iota(jnp.int32, block_k),
                      None if key_valid_ref is None else key_valid_ref[keys],
                      None if mask_ref is None else mask_ref[:, keys],
                      causal=causal, offset=offset, kv_len=kv_len, kv_padded=kv_padded)
        if ok is not None:
            s = jnp.where(ok, s, MASK_VALUE)
        p = jnp.exp(s - lse[:, None])
        dp = _dot(do, v, (1, 1), precision)
        ds = p * (dp - di[:, None])
        return dq + _dot(ds.astype(k.dtype), k, (1, 0), precision)

    n_k = kv_padded // block_k
    if causal:
        last = jnp.maximum((i + 1) * block_q + offset, 1)
        n_visit = jnp.minimum(lax.div(last + block_k - 1, block_k), n_k)
    else:
        n_visit = n_k
    dq = lax.fori_loop(0, n_visit, body, jnp.zeros(q.shape, jnp.float32))
    dq_ref[...] = (dq * (scale * grad_scale)).astype(dq_ref.dtype)


def _dkv_kernel(*refs, scale, causal, offset, kv_len, kv_padded, block_q, block_k, has_key_valid,
                has_mask, grad_scales):
    (q_ref, k_ref, v_ref), key_valid_ref, mask_ref, (do_ref, lse_ref, di_ref, dk_ref, dv_ref) = _split_refs(
        refs, has_key_valid, has_mask, 3)
    q_padded = q_ref.shape[0]
    j = pl.program_id(2)
    k = k_ref[...]
    v = v_ref[...]
    precision = _precision(k.dtype)
    k_idx = j * block_k + lax.iota(jnp.int32, block_k)
    key_valid = None if key_valid_ref is None else key_valid_ref[...]

    def body(i, carry):
        dk, dv = carry
        rows = pl.ds(pl.multiple_of(i * block_q, block_q), block_q)
        q = q_ref[rows, :]
        do = do_ref[rows, :]
        lse = lse_ref[rows]
        di = di_ref[rows]
        s = _dot(q, k, (1, 1), precision) * scale
        ok = _visible(i * block_q + lax.iota(jnp.int32, block_q), k_idx, key_valid,
                      None if mask_ref is None else mask_ref[rows, :],
                      causal=causal, offset=offset, kv_len=kv_len, kv_padded=kv_padded)
        if ok is not None:
            s = jnp.where(ok, s, MASK_VALUE)
        p = jnp.exp(s - lse[:, None])
        dv = dv + _dot(p.astype(do.dtype), do, (0, 0), precision)
        dp = _dot(do, v, (1, 1), precision)
        ds = p * (dp - di[:, None])
        dk = dk + _dot(ds.astype(q.dtype), q, (0, 0), precision)
        return dk, dv

    n_q = q_padded // block_q
    if causal:
        # Rows before the first one that sees this block's first key contribute nothing.
        first = jnp.maximum(j * block_k - offset, 0)
        start = jnp.minimum(lax.div(first, block_q), n_q)
    else:
        start = 0
    zeros = jnp.zeros(k.shape, jnp.float32)
    dk, dv = lax.fori_loop(start, n_q, body, (zeros, zeros))
    dk_ref[...] = (dk * (scale * grad_scales[1])).astype(dk_ref.dtype)
    dv_ref[...] = (dv * grad_scales[2]).astype(dv_ref.dtype)


def _check_layout(q, k, v, key_valid, mask, block_q: int, block_k: int, what: str):
    """Shapes of the kernel layout and block divisibility, before any pallas_call."""
    if q.ndim != 4 or k.ndim != 4 or k.shape != v.shape:
        raise ValueError(f"{what}: expects q [batch, heads, q_len, head_dim] and k, v [batch, kv_heads, "
                         f"kv_len, head_dim]; got q {q.shape}, k {k.shape}, v {v.shape}")
    b, h, t, d = q.shape
    _, kv_heads, s, dk = k.shape
    if k.shape[0] != b or dk != d:
        raise ValueError(f"{what}: q {q.shape} and k {k.shape} must share batch and head_dim")
    if h % kv_heads:
        raise ValueError(f"{what}: heads={h} must be a multiple of kv_heads={kv_heads}")
    check_divisible("q_len", t, "block_q", block_q)
    check_divisible("kv_len", s, "block_k", block_k)
    if not _is_power_of_2(d) or d < MIN_BLOCK_SIZE:
        raise ValueError(f"{what}: head_dim={d} must be a power of 2 >= {MIN_BLOCK_SIZE} in the kernel "
                         "layout (the API pads it)")
    if key_valid is not None and key_valid.shape != (b, s):
        raise ValueError(f"{what}: key_valid shape {key_valid.shape} != (batch, kv_len) = {(b, s)}")
    if mask is not None and (mask.ndim != 4 or mask.shape[0] not in (1, b) or mask.shape[1] not in (1, h)
                             or mask.shape[2:] != (t, s)):
        raise ValueError(f"{what}: mask shape {mask.shape} must be [1 or {b}, 1 or {h}, {t}, {s}]")


def _mask_index(mask, batch_axis: int, head_axis: int, block_axis: int, block_is_q: bool):
    """The index map of the dense mask: batch/head index 0 where the mask broadcasts."""
    wide_b, wide_h = mask.shape[0] > 1, mask.shape[1] > 1

    def index(*ids):
        bi = ids[batch_axis] if wide_b else 0
        hi = ids[head_axis] if wide_h else 0
        return (bi, hi, ids[block_axis], 0) if block_is_q else (bi, hi, 0, ids[block_axis])
    return index


def flash_attention_forward(q, k, v, key_valid=None, mask=None, *, scale: float, causal: bool,
                            offset: int, kv_len: int, block_sizes: BlockSizes, interpret=False):
    """The forward kernel on the kernel layout.

    Args:
      q: [batch, heads, q_len, head_dim] (q_len a multiple of block_q; head_dim a power of 2).
      k, v: [batch, kv_heads, kv_padded, head_dim] (kv_padded a multiple of block_k).
      key_valid: int32 [batch, kv_padded], nonzero = attend; or None.
      mask: int8 [1 or batch, 1 or heads, q_len, kv_padded], nonzero = attend; or None.
      scale: logit scale. causal/offset: query i sees keys j <= i + offset.
      kv_len: keys at index >= kv_len are padding (never attended).
    Returns:
      (out [batch, heads, q_len, head_dim] in q's dtype, logsumexp [batch, heads, q_len] float32).
    """
    bs = block_sizes.resolved()
    _check_layout(q, k, v, key_valid, mask, bs.block_q, bs.block_k, "flash_attention_forward")
    b, h, t, d = q.shape
    kv_heads, s = k.shape[1], k.shape[2]
    groups = h // kv_heads
    kernel = functools.partial(_fwd_kernel, scale=scale, causal=causal, offset=offset, kv_len=kv_len,
                               block_q=bs.block_q, block_k=bs.block_k,
                               has_key_valid=key_valid is not None, has_mask=mask is not None)
    in_specs = [pl.BlockSpec((None, None, bs.block_q, d), lambda bi, hi, i: (bi, hi, i, 0)),
                pl.BlockSpec((None, None, s, d), lambda bi, hi, i: (bi, lax.div(hi, groups), 0, 0)),
                pl.BlockSpec((None, None, s, d), lambda bi, hi, i: (bi, lax.div(hi, groups), 0, 0))]
    args = [q, k, v]
    if key_valid is not None:
        in_specs.append(pl.BlockSpec((None, s), lambda bi, hi, i: (bi, 0)))
        args.append(key_valid)
    if mask is not None:
        in_specs.append(pl.BlockSpec((None, None, bs.block_q, s), _mask_index(mask, 0, 1, 2, True)))
        args.append(mask)
    itemsize = q.dtype.itemsize
    out, lse = pl.pallas_call(
        kernel,
        grid=(b, h, t // bs.block_q),
        in_specs=in_specs,
        out_specs=[pl.BlockSpec((None, None, bs.block_q, d), lambda bi, hi, i: (bi, hi, i, 0)),
                   pl.BlockSpec((None, None, bs.block_q), lambda bi, hi, i: (bi, hi, i))],
        out_shape=[jax.ShapeDtypeStruct(q.shape, q.dtype), jax.ShapeDtypeStruct((b, h, t), jnp.float32)],
        compiler_params=_compiler_params(interpret, num_warps=4 if d <= 64 else 8),
        cost_estimate=pl.CostEstimate(flops=4 * b * h * t * s * d, transcendentals=b * h * t * s,
                                      bytes_accessed=itemsize * (2 * q.size + 2 * k.size * (t // bs.block_q))),
        interpret=interpret,
        name="attention_lrp_forward",
    )(*args)
    return out, lse


def flash_attention_backward(q, k, v, key_valid, mask, out, lse, do, *, scale: float, causal: bool,
                             offset: int, kv_len: int, block_sizes: BlockSizes, interpret=False,
                             grad_scales: tuple[float, float, float] = EXACT_GRAD_SCALES):
    """dq, dk, dv (each times its factor in `grad_scales`) on the kernel layout.

    Args: as `flash_attention_forward`, plus its `out` and `lse`, and `do` (the output's
    cotangent, [batch, heads, q_len, head_dim]). Rows of `do` must be zero where a row sees no
    key at all (the API does this; see the module docstring).
    Returns:
      dq [batch, heads, q_len, head_dim], dk and dv [batch, kv_heads, kv_padded, head_dim], all
      float32 (dk, dv summed over each group of query heads).
    """
    bs = block_sizes.resolved()
    _check_layout(q, k, v, key_valid, mask, bs.block_q_dq, bs.block_k_dq, "flash_attention_backward")
    check_divisible("q_len", q.shape[2], "block_q_dkv", bs.block_q_dkv)
    check_divisible("kv_len", k.shape[2], "block_k_dkv", bs.block_k_dkv)
    if out.shape != q.shape or do.shape != q.shape or lse.shape != q.shape[:3]:
        raise ValueError(f"flash_attention_backward: out {out.shape}, do {do.shape} must be q's shape "
                         f"{q.shape} and lse {lse.shape} must be {q.shape[:3]}")
    b, h, t, d = q.shape
    kv_heads, s = k.shape[1], k.shape[2]
    groups = h // kv_heads
    do = do.astype(q.dtype)
    # delta_i = sum_d o_id do_id: the softmax-Jacobian term, one fused XLA reduction.
    di = jnp.sum(out.astype(jnp.float32) * do.astype(jnp.float32), axis=-1)
    common = dict(scale=scale, causal=causal, offset=offset, kv_len=kv_len,
                  has_key_valid=key_valid is not None, has_mask=mask is not None)
    kv_index = lambda bi, hi, i: (bi, lax.div(hi, groups), 0, 0)  # noqa: E731
    itemsize = q.dtype.itemsize
    params = _compiler_params(interpret, num_warps=4)

    # dq: one program per block of queries, walking the keys.
    bq, bk = bs.block_q_dq, bs.block_k_dq
    in_specs = [pl.BlockSpec((None, None, bq, d), lambda bi, hi, i: (bi, hi, i, 0)),
                pl.BlockSpec((None, None, s, d), kv_index), pl.BlockSpec((None, None, s, d), kv_index)]
    args = [q, k, v]
    if key_valid is not None:
        in_specs.append(pl.BlockSpec((None, s), lambda bi, hi, i: (bi, 0)))
        args.append(key_valid)
    if mask is not None:
        in_specs.append(pl.BlockSpec((None, None, bq, s), _mask_index(mask, 0, 1, 2, True)))
        args.append(mask)
    in_specs += [pl.BlockSpec((None, None, bq, d), lambda bi, hi, i: (bi, hi, i, 0)),
                 pl.BlockSpec((None, None, bq), lambda bi, hi, i: (bi, hi, i)),
                 pl.BlockSpec((None, None, bq), lambda bi, hi, i: (bi, hi, i))]
    args += [do, lse, di]
    dq = pl.pallas_call(
        functools.partial(_dq_kernel, block_q=bq, block_k=bk, grad_scale=grad_scales[0], **common),
        grid=(b, h, t // bq),
        in_specs=in_specs,
        out_specs=pl.BlockSpec((None, None, bq, d), lambda bi, hi, i: (bi, hi, i, 0)),
        out_shape=jax.ShapeDtypeStruct(q.shape, jnp.float32),
        compiler_params=params,
        cost_estimate=pl.CostEstimate(flops=6 * b * h * t * s * d, transcendentals=b * h * t * s,
                                      bytes_accessed=itemsize * (3 * q.size + 2 * k.size * (t // bq))),
        interpret=interpret,
        name="attention_lrp_dq",
    )(*args)

    # dk, dv: one program per (query head, block of keys), walking the queries.
    bq, bk = bs.block_q_dkv, bs.block_k_dkv
    kv_block = lambda bi, hi, j: (bi, lax.div(hi, groups), j, 0)  # noqa: E731
    in_specs = [pl.BlockSpec((None, None, t, d), lambda bi, hi, j: (bi, hi, 0, 0)),
                pl.BlockSpec((None, None, bk, d), kv_block), pl.BlockSpec((None, None, bk, d), kv_block)]
    args = [q, k, v]
    if key_valid is not None:
        in_specs.append(pl.BlockSpec((None, bk), lambda bi, hi, j: (bi, j)))
        args.append(key_valid)
    if mask is not None:
        in_specs.append(pl.BlockSpec((None, None, t, bk), _mask_index(mask, 0, 1, 2, False)))
        args.append(mask)
    in_specs += [pl.BlockSpec((None, None, t, d), lambda bi, hi, j: (bi, hi, 0, 0)),
                 pl.BlockSpec((None, None, t), lambda bi, hi, j: (bi, hi, 0)),
                 pl.BlockSpec((None, None, t), lambda bi, hi, j: (bi, hi, 0))]
    args += [do, lse, di]
    per_head = jax.ShapeDtypeStruct((b, h, s, d), jnp.float32)
    dk, dv = pl.pallas_call(
        functools.partial(_dkv_kernel, kv_padded=s, block_q=bq, block_k=bk, grad_scales=grad_scales, **common),
        grid=(b, h, s // bk),
        in_specs=in_specs,
        out_specs=[pl.BlockSpec((None, None, bk, d), lambda bi, hi, j: (bi, hi, j, 0))] * 2,
        out_shape=[per_head, per_head],
        compiler_params=params,
        cost_estimate=pl.CostEstimate(flops=8 * b * h * t * s * d, transcendentals=b * h * t * s,
                                      bytes_accessed=itemsize * (2 * k.size * groups + 2 * q.size * (s // bk))),
        interpret=interpret,
        name="attention_lrp_dkv",
    )(*args)
    if groups > 1:
        dk = dk.reshape(b, kv_heads, groups, s, d).sum(axis=2)
        dv = dv.reshape(b, kv_heads, groups, s, d).sum(axis=2)
    return dq, dk, dv
