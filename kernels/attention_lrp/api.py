"""Public attention op whose backward can apply the AttnLRP rule.

    out = attention(q, k, v, mask=..., causal=..., key_valid=..., lrp=True, implementation="auto")

Forward: softmax(q k^T * scale, masked) v, identical for `lrp=False` and `lrp=True`. Backward:
the exact gradient (`lrp=False`), or the AttnLRP one (`lrp=True`): the exact dq, dk, dv times
1/4, 1/4, 1/2 (Achtibat et al., ICML 2024; the `lxt.efficient` attention rule, see
`reference.py`). `implementation='xla'` is `reference.attention_reference`; 'pallas' is the
flash-attention kernel of `pallas.py` (forward and backward kernels, interpret mode on CPU);
'auto' picks Pallas on GPU/TPU and XLA elsewhere (`kernels.common.resolve_implementation`).

`backend=` ('cpu', 'tpu', 'gpu'/'cuda'/'rocm'; default jax's) names the platform the call is
built for: it picks the implementation, the kernel target (Mosaic TPU or Triton, with its block
shapes and layout, see `pallas.py`) and whether to interpret, so a CPU host can trace for a TPU
or a GPU and lower (`jax.jit(f).trace(...).lower(lowering_platforms=("tpu",))`).
`interpret=pltpu.InterpretParams(...)` (e.g. `kernels.common.tpu_interpret_params()`) runs the
TPU variant under Pallas' TPU interpreter on CPU.

Lengths that are not multiples of the blocks are padded inside (keys past the true length are
masked in the kernel, padded queries are dropped), and head_dim is zero-padded to a power of 2;
nothing is asked of the caller. What has been run, interpreted and lowered: see `pallas.py`.
"""

from __future__ import annotations

import dataclasses
import functools

import jax
import jax.numpy as jnp

from kernels.attention_lrp import pallas
from kernels.attention_lrp.pallas import BlockSizes
from kernels.attention_lrp.reference import (EXACT_GRAD_SCALES, LRP_GRAD_SCALES, MASK_VALUE,
                                             attention_reference, scale_gradients)
from kernels.common import resolve_implementation, resolve_interpret, target_platform

BACKWARDS = ("pallas", "xla")
_DTYPES = (jnp.float32, jnp.bfloat16, jnp.float16)


@dataclasses.dataclass(frozen=True)
class _Static:
    """Everything the custom VJP of the Pallas path treats as a compile-time constant."""

    scale: float
    causal: bool
    q_len: int
    kv_len: int
    head_dim: int
    block_sizes: BlockSizes
    interpret: object  # bool, or a pltpu.InterpretParams (the TPU interpreter)
    target: str  # 'tpu', 'gpu' or 'interpret' (kernels.common.target_platform)
    grad_scales: tuple[float, float, float]
    backward: str
    # Some row may have no visible key (then the API substitutes the reference's value).
    may_mask_rows: bool


def _check_inputs(q, k, v, mask, key_valid):
    for name, x in (("q", q), ("k", k), ("v", v)):
        if getattr(x, "ndim", None) != 4:
            raise ValueError(f"attention: {name} must be [batch, len, heads, head_dim]; got shape "
                             f"{getattr(x, 'shape', type(x).__name__)}")
    b, t, h, d = q.shape
    if k.shape != v.shape or k.shape[0] != b or k.shape[3] != d:
        raise ValueError(f"attention: q {q.shape}, k {k.shape}, v {v.shape} do not fit "
                         "q [batch, q_len, heads, head_dim], k = v [batch, kv_len, kv_heads, head_dim]")
    s, kv_heads = k.shape[1], k.shape[2]
    if min(b, t, h, d, s, kv_heads) < 1:
        raise ValueError(f"attention: empty input: q {q.shape}, k {k.shape}")
    if h % kv_heads:
        raise ValueError(f"attention: heads={h} must be a multiple of kv_heads={kv_heads}")
    if not (q.dtype == k.dtype == v.dtype) or q.dtype not in _DTYPES:
        raise TypeError(f"attention: q, k, v must share one of float32, bfloat16, float16; got "
                        f"{q.dtype}, {k.dtype}, {v.dtype}")
    if key_valid is not None and tuple(key_valid.shape) != (b, s):
        raise ValueError(f"attention: key_valid shape {tuple(key_valid.shape)} must be [batch, kv_len] = "
                         f"{(b, s)}")
    if mask is not None:
        full = (b, h, t, s)
        shape = tuple(mask.shape)
        padded = (1,) * (4 - len(shape)) + shape
        if len(shape) > 4 or any(m not in (1, f) for m, f in zip(padded, full)):
            raise ValueError(f"attention: mask shape {shape} is not broadcastable to [batch, heads, q_len, "
                             f"kv_len] = {full}")


def _kernel_masks(mask, key_valid, b, t, s, t_pad, s_pad):
    """(int32 key_valid [b, s_pad] or None, int8 mask [1|b, 1|h, t_pad, s_pad] or None); `pallas.py`
    lays them out for its target.

    A dense mask that varies only over keys ([b|1, 1, 1, s]) is folded into key_valid.
    """
    dense = None
    if mask is not None:
        m = jnp.asarray(mask, bool)
        m = m.reshape((1,) * (4 - m.ndim) + m.shape)
        if m.shape[1] == 1 and m.shape[2] == 1:
            from_mask = jnp.broadcast_to(m[:, 0, 0, :], (b, s))
            key_valid = from_mask if key_valid is None else jnp.asarray(key_valid, bool) & from_mask
        else:
            m = jnp.broadcast_to(m, m.shape[:2] + (t, s))
            dense = jnp.pad(m.astype(jnp.int8), ((0, 0), (0, 0), (0, t_pad - t), (0, s_pad - s)))
    if key_valid is not None:
        key_valid = jnp.pad(jnp.asarray(key_valid, bool).astype(jnp.int32), ((0, 0), (0, s_pad - s)))
    return key_valid, dense


def _to_kernel(x, length_pad, dim_pad):
    """[batch, len, heads, head_dim] -> [batch, heads, length_pad, dim_pad], zero padded."""
    _, n, _, d = x.shape
    x = jnp.pad(x, ((0, 0), (0, length_pad - n), (0, 0), (0, dim_pad - d)))
    return x.transpose(0, 2, 1, 3)


def _from_kernel(x, length, dim):
    """[batch, heads, length_pad, dim_pad] -> [batch, length, heads, dim]."""
    return x[:, :, :length, :dim].transpose(0, 2, 1, 3)


def _no_visible_key(lse):
    # Only a row whose every logit is MASK_VALUE has a logsumexp this low (real logits are O(100)).
    return lse < 0.5 * MASK_VALUE


def _pallas_forward(q, k, v, key_valid, mask, st: _Static):
    bs = st.block_sizes
    t_pad = -(-st.q_len // bs.q_multiple) * bs.q_multiple
    s_pad = -(-st.kv_len // bs.kv_multiple) * bs.kv_multiple
    d_pad = max(pallas.MIN_BLOCK_SIZE, pallas.next_power_of_2(st.head_dim))
    qt, kt, vt = _to_kernel(q, t_pad, d_pad), _to_kernel(k, s_pad, d_pad), _to_kernel(v, s_pad, d_pad)
    key_valid, mask = _kernel_masks(mask, key_valid, q.shape[0], st.q_len, st.kv_len, t_pad, s_pad)
    o, lse = pallas.flash_attention_forward(
        qt, kt, vt, key_valid, mask, scale=st.scale, causal=st.causal, offset=st.kv_len - st.q_len,
        kv_len=st.kv_len, block_sizes=bs, interpret=st.interpret, target=st.target)
    out = _from_kernel(o, st.q_len, st.head_dim)
    if st.may_mask_rows:
        # The reference gives a row with no visible key uniform weights: the mean of all v.
        b, h = q.shape[0], q.shape[2]
        groups = h // k.shape[2]
        mean_v = jnp.mean(v.astype(jnp.float32), axis=1)  # [b, kv_heads, d]
        mean_v = jnp.repeat(mean_v, groups, axis=1).reshape(b, 1, h, st.head_dim)
        empty = _no_visible_key(lse[:, :, :st.q_len]).transpose(0, 2, 1)[..., None]
        out = jnp.where(empty, mean_v.astype(out.dtype), out)
    return out, (qt, kt, vt, key_valid, mask, o, lse)


@functools.partial(jax.custom_vjp, nondiff_argnums=(5,))
def _pallas_attention(q, k, v, key_valid, mask, st: _Static):
    return _pallas_forward(q, k, v, key_valid, mask, st)[0]


def _pallas_attention_fwd(q, k, v, key_valid, mask, st):
    return _pallas_forward(q, k, v, key_valid, mask, st)


def _pallas_attention_bwd(st: _Static, res, g):
    qt, kt, vt, key_valid, mask, o, lse = res
    b, h, t_pad, d_pad = qt.shape
    kv_heads, s_pad = kt.shape[1], kt.shape[2]
    dtype = qt.dtype
    if st.backward == "xla":
        # The oracle: jax.vjp of the reference, on the unpadded inputs.
        q, k, v = (_from_kernel(x, n, st.head_dim) for x, n in ((qt, st.q_len), (kt, st.kv_len), (vt, st.kv_len)))
        kv = None if key_valid is None else key_valid[:, :st.kv_len] != 0
        dense = None if mask is None else mask[:, :, :st.q_len, :st.kv_len] != 0
        _, vjp = jax.vjp(lambda q, k, v: attention_reference(q, k, v, dense, st.causal, kv, st.scale), q, k, v)
        grads = vjp(g)
        return tuple((x * s).astype(x.dtype) for x, s in zip(grads, st.grad_scales)) + (None, None)
    do = _to_kernel(g.astype(dtype), t_pad, d_pad)
    if st.may_mask_rows:
        empty = _no_visible_key(lse)[..., None]  # [b, h, t_pad, 1]
        do_empty = jnp.where(empty, do.astype(jnp.float32), 0.0)
        do = jnp.where(empty, jnp.zeros((), dtype), do)
    dq, dk, dv = pallas.flash_attention_backward(
        qt, kt, vt, key_valid, mask, o, lse, do, scale=st.scale, causal=st.causal,
        offset=st.kv_len - st.q_len, kv_len=st.kv_len, block_sizes=st.block_sizes,
        interpret=st.interpret, grad_scales=st.grad_scales, target=st.target)
    if st.may_mask_rows:
        # A row with no visible key spreads 1/kv_len of its cotangent to every real v (and
        # nothing to q, k: the mask's `where` blocks the logits' gradient).
        extra = do_empty.reshape(b, kv_heads, h // kv_heads, t_pad, d_pad).sum(axis=(2, 3))
        extra = extra * (st.grad_scales[2] / st.kv_len)
        real = (jnp.arange(s_pad) < st.kv_len)[None, None, :, None]
        dv = dv + jnp.where(real, extra[:, :, None, :], 0.0)
    dq = _from_kernel(dq, st.q_len, st.head_dim).astype(dtype)
    dk = _from_kernel(dk, st.kv_len, st.head_dim).astype(dtype)
    dv = _from_kernel(dv, st.kv_len, st.head_dim).astype(dtype)
    return dq, dk, dv, None, None


_pallas_attention.defvjp(_pallas_attention_fwd, _pallas_attention_bwd)


@functools.partial(jax.jit, static_argnames=("causal", "scale", "lrp", "implementation", "block_sizes",
                                             "interpret", "target", "backward"))
def _attention(q, k, v, mask, key_valid, *, causal, scale, lrp, implementation, block_sizes, interpret,
               target, backward):
    grad_scales = LRP_GRAD_SCALES if lrp else EXACT_GRAD_SCALES
    if implementation == "xla":
        if lrp:
            q, k, v = scale_gradients(q, k, v, grad_scales)
        return attention_reference(q, k, v, mask, causal, key_valid, scale)
    b, t, h, d = q.shape
    s = k.shape[1]
    bs = (BlockSizes.get_default(t, s, d, target) if block_sizes is None else block_sizes.fit(t, s, target))
    st = _Static(scale=scale, causal=causal, q_len=t, kv_len=s, head_dim=d, block_sizes=bs,
                 interpret=interpret, target=target, grad_scales=grad_scales, backward=backward,
                 may_mask_rows=mask is not None or key_valid is not None or (causal and t > s))
    return _pallas_attention(q, k, v, key_valid, mask, st)


def attention(q: jax.Array, k: jax.Array, v: jax.Array, *, mask: jax.Array | None = None,
              causal: bool = False, key_valid: jax.Array | None = None, scale: float | None = None,
              lrp: bool = False, implementation: str = "auto", block_sizes: BlockSizes | None = None,
              interpret=None, backward: str = "pallas", backend: str | None = None) -> jax.Array:
    """Masked grouped-query attention; `lrp=True` gives its backward the AttnLRP rule.

    Args:
      q: [batch, q_len, heads, head_dim], float32, bfloat16 or float16.
      k, v: [batch, kv_len, kv_heads, head_dim], q's dtype; heads a multiple of kv_heads.
      mask: bool broadcastable to [batch, heads, q_len, kv_len]; True = attend.
      causal: query i sees keys j <= i + (kv_len - q_len): the queries are aligned with the *end*
        of the keys (a chunk of q_len new tokens after a cache of kv_len - q_len).
      key_valid: bool [batch, kv_len]; False = padding key.
        The three masks combine with AND. A row that sees no key is the mean of v (masked
        logits are -1e30, as in `jaxml.nn.attention`), with finite gradients.
      scale: logit scale, default head_dim ** -0.5.
      lrp: False = exact gradients; True = dq x 1/4, dk x 1/4, dv x 1/2 (the forward is unchanged).
      implementation: 'xla' (the jnp reference), 'pallas' (the kernels) or 'auto' (Pallas on a
        TPU, and on a GPU where Pallas has Triton; XLA elsewhere).
      block_sizes: kernel tiles (`BlockSizes`), default `BlockSizes.get_default` for the target;
        shrunk for short inputs, checked against the target's minimums. Lengths need not be
        multiples: the API pads and masks.
      interpret: None (default: interpret on CPU only), True (Pallas' generic interpreter),
        False (compiled for `backend`), or a `pltpu.InterpretParams` (Pallas' TPU interpreter:
        the TPU variant of the kernels, run on CPU).
      backward: 'pallas' (the flash backward kernels) or 'xla' (jax.vjp of the reference, an
        oracle for debugging); the Pallas path only.
      backend: the platform to build for ('cpu', 'tpu', 'gpu', 'cuda', 'rocm'); default jax's
        default backend. With 'tpu' or a GPU on a CPU host, the result can be lowered (not run)
        for that platform.
    Returns:
      [batch, q_len, heads, head_dim] in q's dtype.
    """
    _check_inputs(q, k, v, mask, key_valid)
    implementation = resolve_implementation(implementation, backend)
    if backward not in BACKWARDS:
        raise ValueError(f"attention: backward={backward!r}; accepted: {BACKWARDS}")
    if block_sizes is not None and not isinstance(block_sizes, BlockSizes):
        raise TypeError(f"attention: block_sizes must be a BlockSizes; got {type(block_sizes).__name__}")
    scale = float(q.shape[-1] ** -0.5 if scale is None else scale)
    target = None  # the XLA path has no target and does not interpret
    if implementation != "pallas":
        interpret = None
    else:
        interpret = resolve_interpret(interpret, backend)
        target = target_platform(backend, interpret)
        if interpret is False and target == "interpret":
            raise ValueError("attention: implementation='pallas' with interpret=False needs a TPU or GPU "
                             f"backend (backend={backend or jax.default_backend()!r}); pass interpret=None/True, "
                             "or backend='tpu'/'cuda' to lower for that platform")
        if block_sizes is not None:
            block_sizes.check(target)
    return _attention(q, k, v, mask, key_valid, causal=bool(causal), scale=scale, lrp=bool(lrp),
                      implementation=implementation, block_sizes=block_sizes, interpret=interpret,
                      target=target, backward=backward)


def as_attention_fn(implementation: str = "auto", lrp: bool = False, **kwargs):
    """An `attention_fn(q, k, v, mask=None, *, scale=None)` with the signature of
    `jaxml.nn.attention.dot_product_attention`, for `jaxml.nn.ops.Ops(attention=...)`.

    Args:
      implementation, lrp: as `attention`.
      **kwargs: `block_sizes`, `interpret`, `backward` or `backend`, passed to `attention`.
    """
    allowed = {"block_sizes", "interpret", "backward", "backend"}
    if set(kwargs) - allowed:
        raise TypeError(f"as_attention_fn: unexpected {sorted(set(kwargs) - allowed)}; accepted: {sorted(allowed)}")
    resolve_implementation(implementation, kwargs.get("backend"))  # fail now, not at the first call

    def attention_fn(q, k, v, mask=None, *, scale=None):
        return attention(q, k, v, mask=mask, scale=scale, lrp=lrp, implementation=implementation, **kwargs)

    attention_fn.__name__ = f"attention_lrp_{implementation}{'_lrp' if lrp else ''}"
    return attention_fn
