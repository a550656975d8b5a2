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
the sum over each group of query heads is an XLA reduction afterwards. The key loop (query loop
of the dk/dv kernel) runs inside the kernel, so every grid axis is independent ("parallel" on
TPU) and a program holds all keys (all queries) of its head in fast memory: on TPU the VMEM
footprint grows with the sequence length (jax's `pallas/ops/tpu/flash_attention.py` moves that
loop into the grid instead, an "arbitrary" axis with scratch accumulators; not done here).

Targets (`kernels.common.target_platform`). One kernel body serves all three; only the layout of
the small side inputs and the block minimums differ (`Layout`):

- 'gpu' (Triton) and 'interpret' (the generic interpreter): row statistics (logsumexp, delta)
  are [batch, heads, len, 1], the key-validity row [batch, 1, kv_len] int32, the dense mask int8;
  blocks are powers of 2 >= 16 (Triton's dot).
- 'tpu' (Mosaic, compiled or under the TPU interpreter): Mosaic's tiling asks the last two block
  dimensions to be multiples of (8, 128) or whole. Row statistics are lane-padded to
  [batch, heads, len, 128] (replicated along the lanes, as jax's TPU flash attention does with its
  l and m), the key-validity row is replicated over 8 sublanes [batch, 8, kv_len] (as jax's TPU
  kernels do with their kv segment ids), the dense mask is int32 (tiled like the float32 logits;
  Mosaic packs int8 in (32, 128) tiles, which a 16-row query block would split), query blocks are
  multiples of 8 and key blocks multiples of 128 (the API pads kv_len to a multiple of 128). Every
  TPU BlockSpec is checked against the tiling rule before the pallas_call
  (`kernels.common.check_tpu_block`). float16 lowers like float32 and bfloat16, but TPUs have
  little native float16 arithmetic: bfloat16 is the TPU's 16-bit type.

In both layouts the kernels hold row statistics as [block_q, 1] columns (keepdims reductions) and
build masks from 2-D iotas, the 2-D forms Mosaic's own kernels use; Triton takes them too.

Masks inside the kernels: keys past the true `kv_len` (padding added by the API), `causal`
(query i sees keys j <= i + offset, offset = kv_len - q_len), an optional key-validity row and an
optional dense mask [1 or batch, 1 or heads, len, kv_len]. Masked logits are replaced by
MASK_VALUE = -1e30 as in the reference. Causal programs skip the key (query) blocks that lie
entirely above the diagonal, so a row with *no* visible key ends with a finite placeholder and a
logsumexp near MASK_VALUE; `api.py` detects those rows and gives them the reference's value (the
mean of v, gradient only to v).

What has been run where (jax 0.10.2, on a CPU host; no GPU or TPU has run these kernels):
- Run and tested against the reference (values, exact and AttnLRP gradients): in the generic
  interpreter (`interpret=True`, the GPU layout; the default suite), and in Pallas' TPU
  interpreter (`interpret=kernels.common.tpu_interpret_params()`: the TPU layout and blocks, race
  detection on, uninitialised memory NaN), forward and both backward kernels, on one case in the
  default suite (causal + key padding + a dense mask with an empty row + grouped-query heads +
  padded q_len 24 and kv_len 130, float32) and, marked `slow`, on five more (q_len 100 / kv_len
  130 with default TPU blocks, q_len > kv_len, 256-key blocks, ...) and two in bfloat16
  (`tests/kernels/attention_lrp`, `test_tpu_interpreter_*`).
- Lowered, not compiled: for TPU (Mosaic, `tpu_custom_call`) and for CUDA (Triton,
  `__gpu$xla.gpu.triton`), forward alone and forward + backward (3 kernels), with
  `jax.jit(f).trace(...).lower(lowering_platforms=(platform,))` on a CPU host through the API's
  `backend=`: causal and not, key padding, dense masks ([b, h, t, s] and [1, 1, t, s]),
  grouped-query heads, lengths that are multiples of the blocks (128 / 256) and not (q_len 100,
  kv_len 130; 40), float32, bfloat16 and float16 (`test_kernels_lower_for_tpu_and_cuda`,
  `test_auto_selects_the_kernel_of_the_backend`). Lowering runs the Pallas-to-Mosaic and
  Pallas-to-Triton passes (block shapes, every op's lowering rule); Mosaic's and Triton's own
  compilers, which run on the device, have not seen these kernels.
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
from kernels.common import (TPU_LANES, TPU_SUBLANES, check_divisible, check_target, check_tpu_block,
                            compiler_params, target_platform)

# Triton's dot needs every tile dimension >= 16, and every loaded tile to be a power of 2.
MIN_BLOCK_SIZE = 16
# Mosaic TPU: a vreg is 8 sublanes x 128 lanes of 32-bit values.


@dataclasses.dataclass(frozen=True)
class Layout:
    """How a target lays out the kernels' side inputs, and its smallest legal blocks.

    Attributes:
      target: 'tpu', 'gpu' or 'interpret' (`kernels.common.TARGETS`).
      stat_lanes: row statistics (logsumexp, delta) are [batch, heads, len, stat_lanes], the value
        replicated along the last axis.
      key_rows: the key-validity row is [batch, key_rows, kv_len], replicated along axis 1.
      mask_dtype: the dense mask's dtype in the kernels.
      min_block_q, min_block_k: smallest legal query / key block.
    """

    target: str
    stat_lanes: int
    key_rows: int
    mask_dtype: jnp.dtype
    min_block_q: int
    min_block_k: int

    @classmethod
    def of(cls, target: str) -> Layout:
        check_target(target)
        if target == "tpu":
            return cls(target, TPU_LANES, TPU_SUBLANES, jnp.dtype(jnp.int32), TPU_SUBLANES, TPU_LANES)
        return cls(target, 1, 1, jnp.dtype(jnp.int8), MIN_BLOCK_SIZE, MIN_BLOCK_SIZE)


def _is_power_of_2(n: int) -> bool:
    return n > 0 and n & (n - 1) == 0


def next_power_of_2(n: int) -> int:
    return 1 << max(0, (n - 1).bit_length())


def fit_block(block: int, length: int, minimum: int = MIN_BLOCK_SIZE) -> int:
    """`block`, shrunk to the smallest power of 2 >= length (and >= minimum) for short inputs."""
    return min(block, max(minimum, next_power_of_2(length)))


_Q_FIELDS = ("block_q", "block_q_dkv", "block_q_dq")
_K_FIELDS = ("block_k", "block_k_dkv", "block_k_dq")


@dataclasses.dataclass(frozen=True)
class BlockSizes:
    """Tile sizes of the forward and backward kernels.

    They have a negligible effect on the numerics (the order of float32 sums) but a large one
    on speed. Every block is a power of 2 >= 8, and each target has its minimums (`check`):
    16 everywhere on GPU and in the generic interpreter (Triton's dot), and on TPU query blocks
    >= 8 (sublanes) and key blocks >= 128 (lanes). On TPU, bfloat16 packs 16 rows per tile, so
    8-row query blocks are legal but split tiles; `fit` never shrinks a query block below 16.
    The backward blocks default to the forward ones when left as None.

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
            if (not isinstance(value, int) or isinstance(value, bool) or value < TPU_SUBLANES
                    or not _is_power_of_2(value)):
                raise ValueError(f"BlockSizes.{field.name}={value!r}: every block must be a power of 2 "
                                 f">= {TPU_SUBLANES}")

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

    def check(self, target: str) -> BlockSizes:
        """Raises ValueError if a block is below `target`'s minimum (see the class docstring)."""
        layout = Layout.of(target)
        r = self.resolved()
        for fields, minimum, why in ((_Q_FIELDS, layout.min_block_q, "queries"),
                                     (_K_FIELDS, layout.min_block_k, "keys")):
            for name in fields:
                value = getattr(r, name)
                if value < minimum:
                    detail = (f"Mosaic TPU tiles put {why} on the {minimum} {'lanes' if why == 'keys' else 'sublanes'}"
                              if target == "tpu" else "Triton's dot needs tiles >= 16")
                    raise ValueError(f"BlockSizes.{name}={value} is below the minimum {minimum} of target "
                                     f"{target!r} ({detail})")
        return self

    def fit(self, q_len: int, kv_len: int, target: str = "gpu") -> BlockSizes:
        """Resolved, checked for `target`, and each block shrunk (`fit_block`) so short inputs are
        not padded to a long block (never below 16 for queries, nor the target's key minimum)."""
        r = self.check(target).resolved()
        layout = Layout.of(target)
        fq = lambda b: fit_block(b, q_len, min(b, MIN_BLOCK_SIZE))  # noqa: E731
        fk = lambda b: fit_block(b, kv_len, layout.min_block_k)  # noqa: E731
        return BlockSizes(block_q=fq(r.block_q), block_k=fk(r.block_k),
                          block_q_dkv=fq(r.block_q_dkv), block_k_dkv=fk(r.block_k_dkv),
                          block_q_dq=fq(r.block_q_dq), block_k_dq=fk(r.block_k_dq))

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
    def get_default(cls, q_len: int, kv_len: int, head_dim: int, target: str = "gpu") -> BlockSizes:
        """Defaults for `target`, fitted to the lengths.

        'gpu' / 'interpret' follow the tile sizes of jax's `pallas/ops/gpu/attention.py`; 'tpu'
        takes 128 everywhere, as jax's `pallas/ops/tpu/flash_attention.py`. TODO: select better
        parameters from measurements on the target GPU/TPU; none of these has been tuned.
        """
        if target == "tpu":
            return cls(128, 128, 128, 128, 128, 128).fit(q_len, kv_len, target)
        big = head_dim <= 64
        return cls(block_q=128 if big else 64, block_k=64, block_q_dkv=64 if big else 32,
                   block_k_dkv=64 if big else 32, block_q_dq=64 if big else 32,
                   block_k_dq=64 if big else 32).fit(q_len, kv_len, target)


def _precision(dtype):
    # float32 inputs: full-precision dots (IEEE on Triton rather than its TF32 default).
    return lax.Precision.HIGHEST if dtype == jnp.float32 else lax.Precision.DEFAULT


def _dot(a, b, contract, precision):
    """2-D dot_general in float32: contract=(i, j) contracts a's dim i with b's dim j."""
    return lax.dot_general(a, b, (((contract[0],), (contract[1],)), ((), ())),
                           preferred_element_type=jnp.float32, precision=precision)


def _and(a, b):
    return b if a is None else a & b


def _visible(row0, col0, shape, key_valid, dense, *, causal: bool, offset: int, kv_len: int, kv_padded: int):
    """bool tile `shape` = [block_q, block_k] of (query, key) pairs that attend, or None (all do).

    row0, col0: index of the tile's first query and key. key_valid: int [1, block_k] or None;
    dense: int [block_q, block_k] or None (nonzero = attend).
    """
    ok = None
    cols = None
    if kv_len != kv_padded or causal:
        cols = col0 + lax.broadcasted_iota(jnp.int32, shape, 1)
    if kv_len != kv_padded:
        ok = _and(ok, cols < kv_len)
    if causal:
        rows = row0 + lax.broadcasted_iota(jnp.int32, shape, 0)
        ok = _and(ok, cols <= rows + offset)
    if key_valid is not None:
        ok = _and(ok, jnp.broadcast_to(key_valid, shape) != 0)
    if dense is not None:
        ok = _and(ok, dense != 0)
    return ok


def _column(stat):
    """A row statistic [block_q, stat_lanes] (replicated along the lanes) as a [block_q, 1] column."""
    return stat if stat.shape[-1] == 1 else jnp.max(stat, axis=-1, keepdims=True)


def _split_refs(refs, has_key_valid: bool, has_mask: bool, n_before: int):
    """(first n_before refs, key_valid ref or None, mask ref or None, the rest)."""
    refs = list(refs)
    head, rest = refs[:n_before], refs[n_before:]
    key_valid_ref = rest.pop(0) if has_key_valid else None
    mask_ref = rest.pop(0) if has_mask else None
    return head, key_valid_ref, mask_ref, rest


def _n_key_blocks(i, block_q, block_k, n_k, causal, offset):
    """Key blocks a causal program of query block i visits (those left of the last row's diagonal,
    at least one); all n_k otherwise."""
    if not causal:
        return n_k
    last = jnp.maximum((i + 1) * block_q + offset, 1)
    return jnp.minimum(lax.div(last + block_k - 1, block_k), n_k)


def _fwd_kernel(*refs, scale, causal, offset, kv_len, block_q, block_k, has_key_valid, has_mask):
    (q_ref, k_ref, v_ref), key_valid_ref, mask_ref, (o_ref, lse_ref) = _split_refs(
        refs, has_key_valid, has_mask, 3)
    kv_padded = k_ref.shape[0]
    i = pl.program_id(2)
    q = q_ref[...]
    precision = _precision(q.dtype)

    def body(j, carry):
        acc, m_prev, l_prev = carry
        keys = pl.ds(pl.multiple_of(j * block_k, block_k), block_k)
        k = k_ref[keys, :]
        v = v_ref[keys, :]
        s = _dot(q, k, (1, 1), precision) * scale
        ok = _visible(i * block_q, j * block_k, s.shape,
                      None if key_valid_ref is None else key_valid_ref[pl.ds(0, 1), keys],
                      None if mask_ref is None else mask_ref[:, keys],
                      causal=causal, offset=offset, kv_len=kv_len, kv_padded=kv_padded)
        if ok is not None:
            s = jnp.where(ok, s, MASK_VALUE)
        m = jnp.maximum(m_prev, jnp.max(s, axis=1, keepdims=True))
        correction = jnp.exp(m_prev - m)
        p = jnp.exp(s - m)
        l = correction * l_prev + jnp.sum(p, axis=1, keepdims=True)
        acc = correction * acc + _dot(p.astype(v.dtype), v, (1, 0), precision)
        return acc, m, l

    n_visit = _n_key_blocks(i, block_q, block_k, kv_padded // block_k, causal, offset)
    init = (jnp.zeros(q.shape, jnp.float32), jnp.full((block_q, 1), -jnp.inf, jnp.float32),
            jnp.zeros((block_q, 1), jnp.float32))
    acc, m, l = lax.fori_loop(0, n_visit, body, init)
    o_ref[...] = (acc / l).astype(o_ref.dtype)
    lse_ref[...] = jnp.broadcast_to(m + jnp.log(l), lse_ref.shape)


def _dq_kernel(*refs, scale, causal, offset, kv_len, block_q, block_k, has_key_valid, has_mask,
               grad_scale):
    (q_ref, k_ref, v_ref), key_valid_ref, mask_ref, (do_ref, lse_ref, di_ref, dq_ref) = _split_refs(
        refs, has_key_valid, has_mask, 3)
    kv_padded = k_ref.shape[0]
    i = pl.program_id(2)
    q = q_ref[...]
    do = do_ref[...]
    lse = _column(lse_ref[...])
    di = _column(di_ref[...])
    precision = _precision(q.dtype)

    def body(j, dq):
        keys = pl.ds(pl.multiple_of(j * block_k, block_k), block_k)
        k = k_ref[keys, :]
        v = v_ref[keys, :]
        s = _dot(q, k, (1, 1), precision) * scale
        ok = _visible(i * block_q, j * block_k, s.shape,
                      None if key_valid_ref is None else key_valid_ref[pl.ds(0, 1), keys],
                      None if mask_ref is None else mask_ref[:, keys],
                      causal=causal, offset=offset, kv_len=kv_len, kv_padded=kv_padded)
        if ok is not None:
            s = jnp.where(ok, s, MASK_VALUE)
        p = jnp.exp(s - lse)
        dp = _dot(do, v, (1, 1), precision)
        ds = p * (dp - di)
        return dq + _dot(ds.astype(k.dtype), k, (1, 0), precision)

    n_visit = _n_key_blocks(i, block_q, block_k, kv_padded // block_k, causal, offset)
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
    key_valid = None if key_valid_ref is None else key_valid_ref[pl.ds(0, 1), :]

    def body(i, carry):
        dk, dv = carry
        rows = pl.ds(pl.multiple_of(i * block_q, block_q), block_q)
        q = q_ref[rows, :]
        do = do_ref[rows, :]
        lse = _column(lse_ref[rows, :])
        di = _column(di_ref[rows, :])
        s = _dot(q, k, (1, 1), precision) * scale
        ok = _visible(i * block_q, j * block_k, s.shape, key_valid,
                      None if mask_ref is None else mask_ref[rows, :],
                      causal=causal, offset=offset, kv_len=kv_len, kv_padded=kv_padded)
        if ok is not None:
            s = jnp.where(ok, s, MASK_VALUE)
        p = jnp.exp(s - lse)
        dv = dv + _dot(p.astype(do.dtype), do, (0, 0), precision)
        dp = _dot(do, v, (1, 1), precision)
        ds = p * (dp - di)
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


def _spec(layout: Layout, name: str, array, block, index_map):
    """pl.BlockSpec(block, index_map) for `array`; on TPU, checked against Mosaic's tiling first."""
    if layout.target == "tpu":
        check_tpu_block(name, tuple(1 if n is None else n for n in block), tuple(array.shape))
    return pl.BlockSpec(block, index_map)


def _side_inputs(layout: Layout, key_valid, mask):
    """The key-validity row [batch, key_rows, kv_len] int32 and the dense mask in the target's dtype."""
    if key_valid is not None:
        b, s = key_valid.shape
        key_valid = jnp.broadcast_to(key_valid.astype(jnp.int32)[:, None, :], (b, layout.key_rows, s))
    if mask is not None:
        mask = mask.astype(layout.mask_dtype)
    return key_valid, mask


def _stats(layout: Layout, x):
    """A row statistic [batch, heads, len] as the kernels take it: [.., len, stat_lanes]."""
    return jnp.broadcast_to(x.astype(jnp.float32)[..., None], x.shape + (layout.stat_lanes,))


def _params(layout: Layout, num_warps: int):
    return compiler_params(layout.target, dimension_semantics=("parallel", "parallel", "parallel"),
                           num_warps=num_warps, num_stages=2)


def _target(target, interpret) -> str:
    """The explicit target, or the one `interpret` implies ('tpu' for the TPU interpreter, 'interpret'
    for the generic one, else the default backend's)."""
    return target_platform(None, interpret) if target is None else target


def flash_attention_forward(q, k, v, key_valid=None, mask=None, *, scale: float, causal: bool,
                            offset: int, kv_len: int, block_sizes: BlockSizes, interpret=False,
                            target: str | None = None):
    """The forward kernel on the kernel layout.

    Args:
      q: [batch, heads, q_len, head_dim] (q_len a multiple of block_q; head_dim a power of 2).
      k, v: [batch, kv_heads, kv_padded, head_dim] (kv_padded a multiple of block_k).
      key_valid: int32 or bool [batch, kv_padded], nonzero = attend; or None.
      mask: int8 or bool [1 or batch, 1 or heads, q_len, kv_padded], nonzero = attend; or None.
      scale: logit scale. causal/offset: query i sees keys j <= i + offset.
      kv_len: keys at index >= kv_len are padding (never attended).
      block_sizes: checked against the target (`BlockSizes.check`).
      interpret: False (compiled), True (generic interpreter) or a `pltpu.InterpretParams` (TPU
        interpreter).
      target: 'tpu', 'gpu' or 'interpret' (`kernels.common.target_platform`); default: the one
        `interpret` and jax's backend imply.
    Returns:
      (out [batch, heads, q_len, head_dim] in q's dtype, logsumexp [batch, heads, q_len] float32).
    """
    layout = Layout.of(_target(target, interpret))
    bs = block_sizes.check(layout.target).resolved()
    _check_layout(q, k, v, key_valid, mask, bs.block_q, bs.block_k, "flash_attention_forward")
    b, h, t, d = q.shape
    kv_heads, s = k.shape[1], k.shape[2]
    groups = h // kv_heads
    bq = bs.block_q
    key_valid, mask = _side_inputs(layout, key_valid, mask)
    kernel = functools.partial(_fwd_kernel, scale=scale, causal=causal, offset=offset, kv_len=kv_len,
                               block_q=bq, block_k=bs.block_k,
                               has_key_valid=key_valid is not None, has_mask=mask is not None)
    kv_index = lambda bi, hi, i: (bi, lax.div(hi, groups), 0, 0)  # noqa: E731
    q_index = lambda bi, hi, i: (bi, hi, i, 0)  # noqa: E731
    lse_shape = jax.ShapeDtypeStruct((b, h, t, layout.stat_lanes), jnp.float32)
    in_specs = [_spec(layout, "q", q, (None, None, bq, d), q_index),
                _spec(layout, "k", k, (None, None, s, d), kv_index),
                _spec(layout, "v", v, (None, None, s, d), kv_index)]
    args = [q, k, v]
    if key_valid is not None:
        in_specs.append(_spec(layout, "key_valid", key_valid, (None, layout.key_rows, s),
                              lambda bi, hi, i: (bi, 0, 0)))
        args.append(key_valid)
    if mask is not None:
        in_specs.append(_spec(layout, "mask", mask, (None, None, bq, s), _mask_index(mask, 0, 1, 2, True)))
        args.append(mask)
    out_specs = [_spec(layout, "out", q, (None, None, bq, d), q_index),
                 _spec(layout, "logsumexp", lse_shape, (None, None, bq, layout.stat_lanes), q_index)]
    itemsize = q.dtype.itemsize
    out, lse = pl.pallas_call(
        kernel,
        grid=(b, h, t // bq),
        in_specs=in_specs,
        out_specs=out_specs,
        out_shape=[jax.ShapeDtypeStruct(q.shape, q.dtype), lse_shape],
        compiler_params=_params(layout, num_warps=4 if d <= 64 else 8),
        cost_estimate=pl.CostEstimate(flops=4 * b * h * t * s * d, transcendentals=b * h * t * s,
                                      bytes_accessed=itemsize * (2 * q.size + 2 * k.size * (t // bq))),
        interpret=interpret,
        name="attention_lrp_forward",
    )(*args)
    return out, lse[..., 0]


def flash_attention_backward(q, k, v, key_valid, mask, out, lse, do, *, scale: float, causal: bool,
                             offset: int, kv_len: int, block_sizes: BlockSizes, interpret=False,
                             grad_scales: tuple[float, float, float] = EXACT_GRAD_SCALES,
                             target: str | None = None):
    """dq, dk, dv (each times its factor in `grad_scales`) on the kernel layout.

    Args: as `flash_attention_forward`, plus its `out` and `lse` ([batch, heads, q_len]), and `do`
    (the output's cotangent, [batch, heads, q_len, head_dim]). Rows of `do` must be zero where a
    row sees no key at all (the API does this; see the module docstring).
    Returns:
      dq [batch, heads, q_len, head_dim], dk and dv [batch, kv_heads, kv_padded, head_dim], all
      float32 (dk, dv summed over each group of query heads).
    """
    layout = Layout.of(_target(target, interpret))
    bs = block_sizes.check(layout.target).resolved()
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
    di = _stats(layout, jnp.sum(out.astype(jnp.float32) * do.astype(jnp.float32), axis=-1))
    lse = _stats(layout, lse)
    key_valid, mask = _side_inputs(layout, key_valid, mask)
    lanes = layout.stat_lanes
    common = dict(scale=scale, causal=causal, offset=offset, kv_len=kv_len,
                  has_key_valid=key_valid is not None, has_mask=mask is not None)
    kv_index = lambda bi, hi, i: (bi, lax.div(hi, groups), 0, 0)  # noqa: E731
    q_index = lambda bi, hi, i: (bi, hi, i, 0)  # noqa: E731
    itemsize = q.dtype.itemsize
    params = _params(layout, num_warps=4)

    # dq: one program per block of queries, walking the keys.
    bq, bk = bs.block_q_dq, bs.block_k_dq
    in_specs = [_spec(layout, "q", q, (None, None, bq, d), q_index),
                _spec(layout, "k", k, (None, None, s, d), kv_index),
                _spec(layout, "v", v, (None, None, s, d), kv_index)]
    args = [q, k, v]
    if key_valid is not None:
        in_specs.append(_spec(layout, "key_valid", key_valid, (None, layout.key_rows, s),
                              lambda bi, hi, i: (bi, 0, 0)))
        args.append(key_valid)
    if mask is not None:
        in_specs.append(_spec(layout, "mask", mask, (None, None, bq, s), _mask_index(mask, 0, 1, 2, True)))
        args.append(mask)
    in_specs += [_spec(layout, "do", do, (None, None, bq, d), q_index),
                 _spec(layout, "logsumexp", lse, (None, None, bq, lanes), q_index),
                 _spec(layout, "delta", di, (None, None, bq, lanes), q_index)]
    args += [do, lse, di]
    dq = pl.pallas_call(
        functools.partial(_dq_kernel, block_q=bq, block_k=bk, grad_scale=grad_scales[0], **common),
        grid=(b, h, t // bq),
        in_specs=in_specs,
        out_specs=_spec(layout, "dq", q, (None, None, bq, d), q_index),
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
    whole_q = lambda bi, hi, j: (bi, hi, 0, 0)  # noqa: E731
    in_specs = [_spec(layout, "q", q, (None, None, t, d), whole_q),
                _spec(layout, "k", k, (None, None, bk, d), kv_block),
                _spec(layout, "v", v, (None, None, bk, d), kv_block)]
    args = [q, k, v]
    if key_valid is not None:
        in_specs.append(_spec(layout, "key_valid", key_valid, (None, layout.key_rows, bk),
                              lambda bi, hi, j: (bi, 0, j)))
        args.append(key_valid)
    if mask is not None:
        in_specs.append(_spec(layout, "mask", mask, (None, None, t, bk), _mask_index(mask, 0, 1, 2, False)))
        args.append(mask)
    in_specs += [_spec(layout, "do", do, (None, None, t, d), whole_q),
                 _spec(layout, "logsumexp", lse, (None, None, t, lanes), whole_q),
                 _spec(layout, "delta", di, (None, None, t, lanes), whole_q)]
    args += [do, lse, di]
    per_head = jax.ShapeDtypeStruct((b, h, s, d), jnp.float32)
    dkv_spec = _spec(layout, "dk/dv", per_head, (None, None, bk, d), lambda bi, hi, j: (bi, hi, j, 0))
    dk, dv = pl.pallas_call(
        functools.partial(_dkv_kernel, kv_padded=s, block_q=bq, block_k=bk, grad_scales=grad_scales, **common),
        grid=(b, h, s // bk),
        in_specs=in_specs,
        out_specs=[dkv_spec, dkv_spec],
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
