"""kernels.attention_lrp: the Pallas kernels (interpret mode on CPU) against the jnp reference.

Values and gradients, exact (`lrp=False`, against jax.grad of the reference) and AttnLRP
(`lrp=True`, equal to (1/4, 1/4, 1/2) x the exact gradients), over grouped-query heads, causal,
key padding, dense masks, lengths that are not multiples of the blocks, float32 and bfloat16:
in Pallas' generic interpreter (the GPU/Triton layout), and on fewer cases in Pallas' TPU
interpreter (the TPU/Mosaic layout; slow to compile, so one case by default and a sweep marked
`slow`). Lowering (no device needed) for TPU (Mosaic) and CUDA (Triton), forward and backward,
and the choice of implementation by `backend=`. The `gpu` class repeats the comparisons with
compiled kernels (interpret=False).
"""

from __future__ import annotations

import dataclasses
import functools
import itertools

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxml.nn.attention import causal_mask, dot_product_attention, padding_mask
from kernels.attention_lrp import (LRP_GRAD_SCALES, BlockSizes, as_attention_fn, attention,
                                   attention_reference)
from kernels.attention_lrp import pallas as attention_pallas
from kernels.common import tpu_interpret_params

SMALL = BlockSizes(block_q=16, block_k=16)
# The smallest TPU tiles: query blocks of 16 rows, key blocks of 128 lanes.
TPU_SMALL = BlockSizes(block_q=16, block_k=128)
F32_ATOL = 1e-5
# bfloat16 stores the output and gradients with 8 mantissa bits: absolute and relative 2e-2.
BF16_ATOL = 2e-2


@dataclasses.dataclass(frozen=True)
class Case:
    batch: int = 1
    q_len: int = 16
    kv_len: int = 16
    heads: int = 4
    kv_heads: int = 4
    head_dim: int = 16
    causal: bool = False
    key_padding: bool = False
    dense_mask: str | None = None  # None, "full" ([b, h, t, s]) or "shared" ([1, 1, t, s])
    blocks: BlockSizes | None = SMALL

    def __str__(self):
        return (f"b{self.batch}_t{self.q_len}_s{self.kv_len}_h{self.heads}/{self.kv_heads}_d{self.head_dim}"
                f"{'_causal' if self.causal else ''}{'_pad' if self.key_padding else ''}"
                f"{'_mask-' + self.dense_mask if self.dense_mask else ''}{'' if self.blocks else '_default'}")


def _inputs(case: Case, dtype=jnp.float32, seed=0):
    kq, kk, kv, kw, km = jax.random.split(jax.random.PRNGKey(seed), 5)
    q = jax.random.normal(kq, (case.batch, case.q_len, case.heads, case.head_dim), jnp.float32)
    k = jax.random.normal(kk, (case.batch, case.kv_len, case.kv_heads, case.head_dim), jnp.float32)
    v = jax.random.normal(kv, (case.batch, case.kv_len, case.kv_heads, case.head_dim), jnp.float32)
    # The cotangent that weights the output in the loss (so every output element matters).
    w = jax.random.normal(kw, q.shape, jnp.float32)
    key_valid = None
    if case.key_padding:  # batch element i keeps the first kv_len - 5 i keys (at least 1)
        lengths = jnp.maximum(case.kv_len - 5 * jnp.arange(1, case.batch + 1), 1)
        key_valid = jnp.arange(case.kv_len)[None, :] < lengths[:, None]
    mask = None
    if case.dense_mask == "full":
        mask = jax.random.bernoulli(km, 0.7, (case.batch, case.heads, case.q_len, case.kv_len))
        mask = mask.at[:, :, 1].set(False)  # a row that sees no key
    elif case.dense_mask == "shared":
        mask = jax.random.bernoulli(km, 0.7, (1, 1, case.q_len, case.kv_len))
    cast = lambda x: x.astype(dtype)  # noqa: E731
    return cast(q), cast(k), cast(v), w, mask, key_valid


def _outputs(case: Case, impl: str, dtype=jnp.float32, interpret=None, backward="pallas"):
    """(out, exact grads, LRP grads) of one jitted function; impl 'reference' = the spec."""
    q, k, v, w, mask, key_valid = _inputs(case, dtype)

    def fn(q, k, v, lrp):
        if impl == "reference":
            return attention_reference(q, k, v, mask, case.causal, key_valid)
        return attention(q, k, v, mask=mask, causal=case.causal, key_valid=key_valid, lrp=lrp,
                         implementation=impl, block_sizes=case.blocks, interpret=interpret,
                         backward=backward)

    @jax.jit
    def run(q, k, v):
        # The gradients of sum(out * w): one forward and one backward per value of lrp (each
        # pallas_call costs seconds to compile in the TPU interpreter).
        out, vjp = jax.vjp(functools.partial(fn, lrp=False), q, k, v)
        exact = vjp(w.astype(out.dtype))
        if impl == "reference":
            return out, out, exact, exact
        out_lrp, vjp_lrp = jax.vjp(functools.partial(fn, lrp=True), q, k, v)
        return out, out_lrp, exact, vjp_lrp(w.astype(out.dtype))

    out, out_lrp, exact, lrp = run(q, k, v)
    chex.assert_trees_all_equal(out, out_lrp)  # AttnLRP leaves the forward pass unchanged
    return out, exact, lrp


def _max_err(a, b):
    return max(float(jnp.max(jnp.abs(x.astype(jnp.float32) - y.astype(jnp.float32))))
               for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b)))


def _check(case: Case, impl="pallas", dtype=jnp.float32, atol=F32_ATOL, interpret=None):
    out, exact, lrp = _outputs(case, impl, dtype, interpret)
    # The spec: the reference in float32 on the same (possibly bf16-rounded) inputs.
    ref_out, ref_grads, _ = _outputs(case, "reference", jnp.float32) if dtype == jnp.float32 else \
        _reference_f32(case, dtype)
    rtol = 0.0 if dtype == jnp.float32 else atol
    chex.assert_shape(out, (case.batch, case.q_len, case.heads, case.head_dim))
    assert out.dtype == dtype
    chex.assert_tree_all_finite((out, exact, lrp))
    chex.assert_trees_all_close(out.astype(jnp.float32), ref_out, atol=atol, rtol=rtol)
    chex.assert_trees_all_close(jax.tree.map(lambda x: x.astype(jnp.float32), exact), ref_grads,
                                atol=atol, rtol=rtol)
    scaled = tuple(g.astype(jnp.float32) * s for g, s in zip(ref_grads, LRP_GRAD_SCALES))
    chex.assert_trees_all_close(jax.tree.map(lambda x: x.astype(jnp.float32), lrp), scaled,
                                atol=atol, rtol=rtol)
    return _max_err(out, ref_out), _max_err(exact, ref_grads)


def _reference_f32(case: Case, dtype):
    q, k, v, w, mask, key_valid = _inputs(case, dtype)
    q, k, v = (x.astype(jnp.float32) for x in (q, k, v))
    f = lambda q, k, v: attention_reference(q, k, v, mask, case.causal, key_valid)  # noqa: E731
    grads = jax.grad(lambda q, k, v: jnp.sum(f(q, k, v) * w), argnums=(0, 1, 2))(q, k, v)
    return f(q, k, v), grads, None


# A modest grid in interpret mode (each case compiles a forward and two backward kernels).
F32_CASES = [
    Case(),
    Case(batch=2, q_len=40, kv_len=40, kv_heads=2, causal=True, key_padding=True),
    Case(q_len=16, kv_len=64, kv_heads=1, head_dim=32),
    Case(batch=2, q_len=64, kv_len=40, kv_heads=4, causal=True),
    Case(batch=1, q_len=40, kv_len=16, kv_heads=2, causal=True),  # q_len > kv_len: early rows see nothing
    Case(batch=2, q_len=16, kv_len=40, kv_heads=1, head_dim=32, key_padding=True, dense_mask="full"),
    Case(batch=1, q_len=40, kv_len=64, kv_heads=2, causal=True, dense_mask="shared"),
    Case(batch=2, q_len=40, kv_len=40, kv_heads=2, head_dim=32, causal=True, blocks=None),
]


@pytest.mark.parametrize("case", F32_CASES, ids=str)
def test_pallas_matches_reference_f32(case):
    _check(case)


BF16_CASES = [
    Case(batch=2, q_len=40, kv_len=40, kv_heads=2, causal=True, key_padding=True),
    Case(q_len=16, kv_len=64, kv_heads=1, head_dim=32, dense_mask="shared"),
]


@pytest.mark.parametrize("case", BF16_CASES, ids=str)
def test_pallas_matches_reference_bf16(case):
    _check(case, dtype=jnp.bfloat16, atol=BF16_ATOL)


def test_xla_path_matches_reference_and_scales_lrp():
    case = Case(batch=2, q_len=16, kv_len=40, kv_heads=2, causal=True, key_padding=True)
    _check(case, impl="xla")


def test_backward_xla_oracle_equals_pallas_backward():
    case = Case(batch=1, q_len=40, kv_len=40, kv_heads=2, causal=True, dense_mask="full")
    _, exact_kernel, lrp_kernel = _outputs(case, "pallas")
    _, exact_oracle, lrp_oracle = _outputs(case, "pallas", backward="xla")
    chex.assert_trees_all_close((exact_kernel, lrp_kernel), (exact_oracle, lrp_oracle), atol=F32_ATOL, rtol=0)


def test_rows_with_no_visible_key_are_mean_of_v_with_finite_gradients():
    b, t, s, h, d = 2, 16, 24, 2, 16
    q, k, v = (jax.random.normal(key, shape) for key, shape in zip(
        jax.random.split(jax.random.PRNGKey(1), 3), [(b, t, h, d), (b, s, h, d), (b, s, h, d)]))
    key_valid = jnp.ones((b, s), bool).at[1].set(False)  # batch element 1: every key is padding
    mask = jnp.ones((b, h, t, s), bool).at[0, 1, 3].set(False)  # one more empty row
    for impl in ("pallas", "xla"):
        f = lambda q, k, v: attention(q, k, v, mask=mask, key_valid=key_valid, causal=True,  # noqa: E731
                                      implementation=impl, block_sizes=SMALL)
        out = f(q, k, v)
        mean_v = v.mean(axis=1)  # [b, kv_heads, d]
        chex.assert_trees_all_close(out[1], jnp.broadcast_to(mean_v[1], (t, h, d)), atol=1e-5)
        chex.assert_trees_all_close(out[0, 3, 1], mean_v[0, 1], atol=1e-5)
        grads = jax.grad(lambda q, k, v: jnp.sum(f(q, k, v) ** 2), argnums=(0, 1, 2))(q, k, v)
        chex.assert_tree_all_finite(grads)
        # An empty row's logits are constants: no gradient reaches its q (or batch 1's k).
        np.testing.assert_array_equal(grads[0][1], 0.0)
        np.testing.assert_array_equal(grads[0][0, 3, 1], 0.0)
        np.testing.assert_array_equal(grads[1][1], 0.0)
        ref = jax.grad(lambda q, k, v: jnp.sum(attention_reference(q, k, v, mask, True, key_valid) ** 2),
                       argnums=(0, 1, 2))(q, k, v)
        chex.assert_trees_all_close(grads, ref, atol=F32_ATOL, rtol=0)


@pytest.mark.parametrize("lrp", [False, True])
def test_as_attention_fn_equals_library_attention(lrp):
    b, t, h, kv_heads, d = 2, 24, 4, 2, 16
    q, k, v = (jax.random.normal(key, shape) for key, shape in zip(
        jax.random.split(jax.random.PRNGKey(2), 3), [(b, t, h, d), (b, t, kv_heads, d), (b, t, kv_heads, d)]))
    positions = jnp.broadcast_to(jnp.arange(t), (b, t))
    valid = jnp.arange(t)[None, :] >= jnp.array([0, 5])[:, None]  # left padding in batch element 1
    mask = causal_mask(positions, positions) & padding_mask(valid)  # [b, 1, t, t], as the models build it
    fn = as_attention_fn("pallas", lrp=lrp, block_sizes=SMALL)
    chex.assert_trees_all_close(fn(q, k, v, mask), dot_product_attention(q, k, v, mask), atol=F32_ATOL, rtol=0)
    chex.assert_trees_all_close(fn(q, k, v, None, scale=0.3), dot_product_attention(q, k, v, None, scale=0.3),
                                atol=F32_ATOL, rtol=0)
    g = jax.grad(lambda v: jnp.sum(fn(q, k, v, mask)))(v)
    g_lib = jax.grad(lambda v: jnp.sum(dot_product_attention(q, k, v, mask)))(v)
    chex.assert_trees_all_close(g, g_lib * (LRP_GRAD_SCALES[2] if lrp else 1.0), atol=F32_ATOL, rtol=0)


def test_block_sizes_defaults_and_padding():
    bs = BlockSizes.get_default(2048, 2048, 64)
    assert (bs.block_q, bs.block_k) == (128, 64) and bs.has_backward_blocks
    short = BlockSizes.get_default(40, 20, 64)  # shrunk to the lengths, not padded to 128
    assert (short.block_q, short.block_k, short.q_multiple, short.kv_multiple) == (64, 32, 64, 32)
    # TPU: 128 everywhere; short inputs shrink the query blocks only (keys stay on 128 lanes).
    assert BlockSizes.get_default(2048, 2048, 64, "tpu") == BlockSizes(128, 128, 128, 128, 128, 128)
    tpu_short = BlockSizes.get_default(40, 20, 64, "tpu")
    assert (tpu_short.block_q, tpu_short.block_k, tpu_short.q_multiple, tpu_short.kv_multiple) == (64, 128, 64, 128)
    assert BlockSizes(8, 128).fit(5, 5, "tpu") == BlockSizes(8, 128, 8, 128, 8, 128)  # 8 rows: legal on TPU
    partial = BlockSizes(block_q=32, block_k=16, block_q_dq=64)
    assert not partial.has_backward_blocks
    r = partial.resolved()
    assert (r.block_q_dkv, r.block_k_dkv, r.block_q_dq, r.block_k_dq) == (32, 16, 64, 16)
    assert partial.q_multiple == 64


def test_errors_name_the_values():
    q = jnp.zeros((1, 16, 4, 16))
    k = jnp.zeros((1, 16, 3, 16))
    with pytest.raises(ValueError, match="heads=4 must be a multiple of kv_heads=3"):
        attention(q, k, k)
    with pytest.raises(ValueError, match=r"mask shape \(2, 16, 16\) is not broadcastable"):
        attention(q, q, q, mask=jnp.ones((2, 16, 16), bool))
    with pytest.raises(ValueError, match=r"key_valid shape \(1, 8\)"):
        attention(q, q, q, key_valid=jnp.ones((1, 8), bool))
    with pytest.raises(ValueError, match="q must be"):
        attention(q[0], q, q)
    with pytest.raises(TypeError, match="must share one of"):
        attention(q, q.astype(jnp.bfloat16), q)
    with pytest.raises(ValueError, match="implementation='triton'"):
        attention(q, q, q, implementation="triton")
    with pytest.raises(ValueError, match="backward='cuda'"):
        attention(q, q, q, backward="cuda")
    with pytest.raises(ValueError, match=r"BlockSizes.block_k=24: every block must be a power of 2"):
        BlockSizes(block_q=16, block_k=24)
    with pytest.raises(ValueError, match=r"BlockSizes.block_q_dq=4"):
        BlockSizes(block_q=16, block_k=16, block_q_dq=4)
    # Per-target minimums: Triton's dot (16), Mosaic's lanes for keys (128).
    with pytest.raises(ValueError, match=r"BlockSizes.block_q_dq=8 is below the minimum 16 of target 'gpu'"):
        BlockSizes(block_q=16, block_k=16, block_q_dq=8).check("gpu")
    with pytest.raises(ValueError, match=r"BlockSizes.block_k=16 is below the minimum 128 of target 'tpu'"):
        attention(q, q, q, implementation="pallas", block_sizes=SMALL, interpret=tpu_interpret_params())
    with pytest.raises(ValueError, match=r"block_k_dkv=64 is below the minimum 128 of target 'tpu'"):
        attention(q, q, q, block_sizes=BlockSizes(16, 128, block_k_dkv=64), backend="tpu")
    with pytest.raises(ValueError, match="interpret=False needs a TPU or GPU backend"):
        attention(q, q, q, implementation="pallas", interpret=False, backend="cpu")
    with pytest.raises(ValueError, match="backend='metal'"):
        attention(q, q, q, backend="metal")
    with pytest.raises(TypeError, match="unexpected"):
        as_attention_fn("pallas", causal=True)
    # The kernel layout itself checks block divisibility before pallas_call.
    qt = jnp.zeros((1, 4, 40, 16))
    with pytest.raises(ValueError, match="q_len=40 must be a multiple of block_q=16"):
        attention_pallas.flash_attention_forward(qt, qt, qt, scale=1.0, causal=False, offset=0, kv_len=40,
                                                 block_sizes=SMALL, interpret=True)


@pytest.mark.slow
@pytest.mark.parametrize("case", [
    Case(batch=b, q_len=t, kv_len=s, kv_heads=kvh, head_dim=d, causal=c, key_padding=p)
    for b, (t, s), kvh, d, c, p in itertools.product(
        (1, 2), ((16, 16), (40, 64), (64, 40)), (4, 2, 1), (16, 32), (False, True), (False, True))
], ids=str)
def test_pallas_matches_reference_full_grid(case):
    _check(case)


# --- the TPU variant, in Pallas' TPU interpreter ----------------------------------------------------
# Each pallas_call takes seconds to trace in the TPU interpreter (race detection on, uninitialised
# memory NaN): the default suite runs one case that combines every feature (causal, key padding, a
# dense mask with an empty row, grouped-query heads, padded lengths: 2 query blocks of 16 over q_len
# 24, 2 key blocks of 128 over kv_len 130); the sweep is `slow`.
TPU_DEFAULT_CASE = Case(batch=1, q_len=24, kv_len=130, heads=2, kv_heads=1, causal=True, key_padding=True,
                        dense_mask="full", blocks=TPU_SMALL)
TPU_CASES = [
    Case(batch=2, q_len=40, kv_len=40, kv_heads=2, causal=True, key_padding=True, blocks=TPU_SMALL),
    Case(q_len=16, kv_len=130, kv_heads=1, head_dim=32, key_padding=True, dense_mask="full", blocks=TPU_SMALL),
    Case(q_len=100, kv_len=130, kv_heads=2, causal=True, dense_mask="shared", blocks=None),
    Case(q_len=40, kv_len=16, heads=2, kv_heads=1, causal=True, blocks=TPU_SMALL),  # rows that see nothing
    Case(q_len=16, kv_len=300, heads=2, kv_heads=2, blocks=BlockSizes(16, 256, block_k_dkv=128, block_k_dq=128)),
]


def test_tpu_interpreter_matches_reference_f32():
    _check(TPU_DEFAULT_CASE, interpret=tpu_interpret_params())


@pytest.mark.slow
@pytest.mark.parametrize("case", TPU_CASES, ids=str)
def test_tpu_interpreter_matches_reference_f32_sweep(case):
    _check(case, interpret=tpu_interpret_params())


@pytest.mark.slow
@pytest.mark.parametrize("case", [TPU_DEFAULT_CASE, TPU_CASES[0]], ids=str)
def test_tpu_interpreter_matches_reference_bf16(case):
    _check(case, dtype=jnp.bfloat16, atol=BF16_ATOL, interpret=tpu_interpret_params())


# --- lowering for TPU (Mosaic) and CUDA (Triton) on this CPU host -----------------------------------
CUSTOM_CALL = {"tpu": "tpu_custom_call", "cuda": "__gpu$xla.gpu.triton"}

LOWERING_CASES = {
    # name: (q_len, kv_len, heads, kv_heads, head_dim, causal, key_padding, dense mask, dtype)
    "plain": (128, 128, 4, 4, 64, False, False, None, jnp.float32),
    "causal_gqa": (128, 256, 4, 2, 64, True, False, None, jnp.float32),
    "padded_keyvalid_mask_gqa": (100, 130, 4, 2, 64, True, True, "full", jnp.float32),
    "padded_shared_mask_bf16": (40, 40, 4, 1, 32, False, True, "shared", jnp.bfloat16),
    "causal_f16": (64, 64, 2, 1, 16, True, False, None, jnp.float16),
}


def _lower(platform, name, implementation="pallas", grad=True, **kwargs):
    t, s, h, kvh, d, causal, key_padding, dense, dtype = LOWERING_CASES[name]
    q = jnp.zeros((2, t, h, d), dtype)
    k = jnp.zeros((2, s, kvh, d), dtype)
    key_valid = jnp.arange(s)[None, :] < jnp.array([[s], [s - 7]]) if key_padding else None
    mask = {None: None, "full": jnp.ones((2, h, t, s), bool), "shared": jnp.ones((1, 1, t, s), bool)}[dense]

    def fwd(q, k, v):
        return attention(q, k, v, mask=mask, key_valid=key_valid, causal=causal, lrp=True,
                         implementation=implementation, backend=platform, **kwargs)

    f = jax.grad(lambda q, k, v: jnp.sum(fwd(q, k, v).astype(jnp.float32)), argnums=(0, 1, 2)) if grad else fwd
    return jax.jit(f).trace(q, k, k).lower(lowering_platforms=(platform,)).as_text()


@pytest.mark.parametrize("name", sorted(LOWERING_CASES))
@pytest.mark.parametrize("platform", ["tpu", "cuda"])
def test_kernels_lower_for_tpu_and_cuda(platform, name):
    """Forward alone (1 kernel) and forward + backward (3 kernels: forward, dq, dk/dv) lower, not
    compile (no device here), through Mosaic for TPU and Triton for CUDA: every block shape obeys
    the target's rules and every op in the kernels has a lowering rule there."""
    assert _lower(platform, name, grad=False).count(CUSTOM_CALL[platform]) == 1
    assert _lower(platform, name).count(CUSTOM_CALL[platform]) == 3


@pytest.mark.parametrize("platform", ["tpu", "cuda"])
def test_auto_selects_the_kernel_of_the_backend(platform):
    text = _lower(platform, "padded_keyvalid_mask_gqa", implementation="auto")
    assert text.count(CUSTOM_CALL[platform]) == 3
    assert CUSTOM_CALL["tpu" if platform == "cuda" else "cuda"] not in text
    xla = _lower(platform, "padded_keyvalid_mask_gqa", implementation="xla")
    assert not any(target in xla for target in CUSTOM_CALL.values())


def test_auto_on_cpu_is_xla_and_as_attention_fn_passes_backend():
    q = jnp.zeros((1, 16, 2, 16))
    cpu = jax.jit(lambda q: attention(q, q, q)).trace(q).lower().as_text()
    assert "custom_call" not in cpu
    fn = as_attention_fn("auto", lrp=True, backend="tpu")
    text = jax.jit(jax.grad(lambda q: jnp.sum(fn(q, q, q, None)))).trace(q).lower(
        lowering_platforms=("tpu",)).as_text()
    assert text.count(CUSTOM_CALL["tpu"]) == 3


@pytest.mark.gpu
class TestCompiledKernels:
    """The same comparisons with compiled kernels (Triton on GPU, Mosaic on TPU); never run on CPU.

    float32 references are computed at 'highest' matmul precision (the kernels use full-precision
    dots for float32 inputs). Tolerances for compiled float32 are looser than interpret mode
    (different exp/log implementations); they have not been calibrated on hardware yet. On a TPU
    the cases' small Triton tiles become the smallest TPU ones (`TPU_SMALL`).
    """

    CASES = F32_CASES + TPU_CASES + [Case(batch=2, q_len=256, kv_len=200, heads=6, kv_heads=2, head_dim=64,
                                          causal=True, key_padding=True, blocks=None)]

    @staticmethod
    def _on_this_backend(case):
        if jax.default_backend() == "tpu" and case.blocks is not None:
            try:
                case.blocks.check("tpu")
            except ValueError:
                return dataclasses.replace(case, blocks=TPU_SMALL)
        return case

    @pytest.mark.parametrize("case", CASES, ids=str)
    def test_f32(self, case):
        with jax.default_matmul_precision("highest"):
            _check(self._on_this_backend(case), atol=5e-5, interpret=False)

    @pytest.mark.parametrize("case", BF16_CASES, ids=str)
    def test_bf16(self, case):
        with jax.default_matmul_precision("highest"):
            _check(self._on_this_backend(case), dtype=jnp.bfloat16, atol=BF16_ATOL, interpret=False)
