"""kernels.lqer_matmul: the fused Pallas GEMM (interpret mode on CPU) against the jnp reference.

Tolerance. Both sides quantize identical float inputs with the same rule, and every product is
exact (MXINT8 activations times MXINT4 weights fit float32, and bfloat16, exactly), so the only
difference is the order of the float32 sums over K. For any order, a sum of n terms is within
(n - 1) 2^-24 sum|terms| of the exact one, so the two outputs differ elementwise by at most
    2 (K + 2) 2^-24 (|Q_x(X)| |W_q| + |low-rank term| + |bias|)
(K products plus the low-rank and bias additions), computed in float64 (`_bound`).
A different summation order can also move X A across an MXINT rounding boundary (a legitimate
difference, one quantization step of the low-rank term). The "exact" data rules that out: X and A
are integers / 128 (|int| <= 127, every 16-block of X holding 127 so its exponent is 0), so every
partial sum of X A is an integer / 2^14 below 2^24 / 2^14 and X A is exact in any order; Q_x(X A)
B sums 32 products of two 8-bit mantissas, exact too. The "normal" data (random normals) has no
such guarantee; ties there have probability ~1e-5 per element and none occurs at these seeds.
"""

from __future__ import annotations

import dataclasses
import functools

import chex
import flax
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxml.compress.linear import _quantized_linear, quantized_ops
from jaxml.compress.quantizers import QuantFormat, mxint
from jaxml.models.llama import Llama, LlamaConfig
from kernels.lqer_matmul import (DEFAULT_X_FORMAT, BlockSizes, PackedMXINT, as_linear_op, lqer_matmul,
                                 lqer_matmul_reference, pack, unpack)
from kernels.lqer_matmul import pallas as lqer_pallas

SMALL = BlockSizes(block_m=16, block_n=16, block_k=32)
WIDE = BlockSizes(block_m=32, block_n=64, block_k=64)


@dataclasses.dataclass(frozen=True)
class Case:
    m: int = 7
    k: int = 64
    n: int = 32
    rank: int = 0
    bias: bool = False
    blocks: BlockSizes | None = SMALL
    data: str = "exact"  # "exact" (integer / 128, see the module docstring) or "normal"
    dtype: str = "float32"
    x_format: QuantFormat = DEFAULT_X_FORMAT
    lead: tuple[int, ...] = ()  # extra leading axes of x

    def __str__(self):
        blocks = "default" if self.blocks is None else f"{self.blocks.block_m}x{self.blocks.block_n}x{self.blocks.block_k}"
        fmt = "" if self.x_format == DEFAULT_X_FORMAT else f"_{self.x_format.kind}{self.x_format.width}"
        return (f"m{self.m}_k{self.k}_n{self.n}_r{self.rank}{'_bias' if self.bias else ''}_{blocks}_{self.data}"
                f"{'' if self.dtype == 'float32' else '_' + self.dtype}{fmt}{'_lead' if self.lead else ''}")


def _ints(key, shape):
    return jax.random.randint(key, shape, -127, 128).astype(jnp.float32) / 128


def _inputs(case: Case, seed=0):
    kx, kw, ka, kb, kc = jax.random.split(jax.random.PRNGKey(seed), 5)
    shape = case.lead + (case.m, case.k)
    if case.data == "exact":
        x = _ints(kx, shape).at[..., ::16].set(127 / 128)
    else:
        x = jax.random.normal(kx, shape)
    w = pack(jax.random.normal(kw, (case.k, case.n)) * 0.05)
    a = b = None
    if case.rank:
        if case.data == "exact":
            a, b = _ints(ka, (case.k, case.rank)) / 8, _ints(kb, (case.rank, case.n)) / 8
        else:  # LQER's A and B are MXINT8 (blocks of 16 along their reduction axes)
            a = mxint(jax.random.normal(ka, (case.k, case.rank)) * 0.1, 8, 16, axis=0)
            b = mxint(jax.random.normal(kb, (case.rank, case.n)) * 0.1, 8, 16, axis=0)
    bias = jax.random.normal(kc, (case.n,)) if case.bias else None
    return x.astype(case.dtype), w, a, b, bias


def _bound(x, w, a, b, bias, x_format):
    """The elementwise float32 summation-order bound of the module docstring (float64)."""
    xq = np.asarray(x_format(x.astype(jnp.float32), axis=-1), np.float64)
    total = np.abs(xq) @ np.abs(np.asarray(unpack(w), np.float64))
    if a is not None:
        xa = x_format(jnp.asarray(xq, jnp.float32) @ a, axis=-1)
        total = total + np.abs(np.asarray(x_format(xa @ b, axis=-1), np.float64))
    if bias is not None:
        total = total + np.abs(np.asarray(bias, np.float64))
    return 2 * (x.shape[-1] + 2) * 2.0 ** -24 * total


def _check(case: Case, interpret=None):
    """Pallas vs the reference; returns the max abs error."""
    x, w, a, b, bias = _inputs(case)
    out = lqer_matmul(x, w, a, b, bias, x_format=case.x_format, implementation="pallas",
                      block_sizes=case.blocks, interpret=interpret)
    ref = lqer_matmul_reference(x, w, a, b, bias, x_format=case.x_format)
    chex.assert_shape(out, case.lead + (case.m, case.n))
    assert out.dtype == x.dtype
    chex.assert_tree_all_finite(out)
    err = np.abs(np.asarray(out, np.float64) - np.asarray(ref, np.float64))
    tol = _bound(x, w, a, b, bias, case.x_format)
    if case.dtype != "float32":  # one rounding of the float32 result to the output dtype, either way
        tol = tol + np.abs(np.asarray(ref, np.float64)) * float(jnp.finfo(case.dtype).eps)
    assert np.all(err <= tol), (str(case), float(err.max()), float((err - tol).max()))
    return float(err.max())


# M in {1, 7, 64} x K in {64, 96, 576} x N in {32, 80}: all 18 shapes, ranks 0 / 8 (padded to 16) /
# 32, two block settings and the bias cycling over them.
GRID = [Case(m=m, k=k, n=n, rank=(0, 8, 32)[i % 3], bias=bool(i % 2), blocks=(SMALL, WIDE)[(i // 3) % 2])
        for i, (m, k, n) in enumerate((m, k, n) for m in (1, 7, 64) for k in (64, 96, 576) for n in (32, 80))]
OTHER = [
    Case(m=64, k=576, n=80, rank=32, bias=True, blocks=None),              # default blocks
    Case(m=7, k=96, n=80, rank=32, bias=True, data="normal"),
    Case(m=64, k=576, n=32, rank=8, data="normal", blocks=WIDE),
    Case(m=5, k=40, n=24, rank=8, bias=True),                               # K, N not multiples of 16
    Case(m=3, k=64, n=48, rank=32, bias=True, lead=(2,)),                   # x [2, 3, K]
    Case(m=7, k=96, n=80, rank=32, bias=True, dtype="bfloat16"),
    Case(m=7, k=64, n=32, rank=8, data="normal", x_format=QuantFormat("none")),
    Case(m=7, k=96, n=32, rank=32, bias=True, data="normal", x_format=QuantFormat("mxint", 6, 16)),
]


@pytest.mark.parametrize("case", GRID + OTHER, ids=str)
def test_pallas_matches_reference(case):
    _check(case)


def test_max_errors_measured():
    """The measured errors, for the record; exact data reproduces the reference bit for bit here."""
    errors = {str(c): _check(c) for c in (GRID[-1], OTHER[1], OTHER[5])}
    print("max abs error pallas vs reference:", errors)
    assert errors[str(GRID[-1])] <= 1e-5


def test_pack_unpack_is_mxint4_along_k():
    key = jax.random.PRNGKey(1)
    for k, n, width in ((96, 80, 4), (40, 24, 4), (64, 16, 8)):
        kernel = jax.random.normal(key, (k, n)) * 0.05
        kernel = kernel.at[16:32, :3].set(0.0)  # all-zero blocks
        w = pack(kernel, width=width)
        k_pad = -(-k // 16) * 16
        chex.assert_shape((w.mantissa, w.exponent), ((k_pad, n), (k_pad // 16, n)))
        assert w.mantissa.dtype == w.exponent.dtype == jnp.int8 and w.shape == (k, n)
        assert int(jnp.max(jnp.abs(w.mantissa))) <= 2 ** (width - 1) - 1
        np.testing.assert_array_equal(w.mantissa[k:], 0)  # the padded rows
        np.testing.assert_array_equal(unpack(w), mxint(kernel, width, 16, axis=0))
        # value = mantissa * 2^(exponent - (width - 1)), one exponent per 16 rows
        manual = np.asarray(w.mantissa, np.float64) * 2.0 ** (np.repeat(np.asarray(w.exponent), 16, 0) - (width - 1))
        np.testing.assert_array_equal(unpack(w), manual[:k])


def test_packed_weight_is_a_pytree_with_static_format():
    w = pack(jnp.ones((32, 16)))
    leaves, treedef = jax.tree.flatten(w)
    assert len(leaves) == 2
    w2 = jax.tree.unflatten(treedef, leaves)
    assert (w2.width, w2.block, w2.in_features) == (4, 16, 32)
    np.testing.assert_array_equal(jax.jit(unpack)(w), unpack(w))


def test_in_kernel_quantizer_equals_library_mxint():
    z = jax.random.normal(jax.random.PRNGKey(2), (32, 64)) * 3.0
    z = z.at[0, :16].set(0.0).at[1, 3].set(1e-9).at[2, :16].set(4.0)  # zero block, tiny value, a tie-free power of 2
    for width in (4, 8):
        np.testing.assert_array_equal(jax.jit(lqer_pallas.mxint_rows, static_argnums=(1, 2))(z, width, 16),
                                      mxint(z, width, 16, axis=-1))
    # round half to even, ties included, as jnp.round
    v = jnp.concatenate([jnp.arange(0.0, 130.0, 0.25), jnp.nextafter(jnp.arange(0.5, 130.0), 0.0),
                         jnp.nextafter(jnp.arange(0.5, 130.0), 200.0)]).astype(jnp.float32)
    np.testing.assert_array_equal(jax.jit(lqer_pallas._round_half_even)(v), jnp.round(v))


def test_xla_implementation_is_the_quantized_linear_of_jaxml_compress():
    case = Case(m=7, k=96, n=80, rank=8, bias=True, data="normal")
    x, w, a, b, bias = _inputs(case)
    out = lqer_matmul(x, w, a, b, bias, implementation="xla")
    np.testing.assert_array_equal(out, _quantized_linear(x, unpack(w), bias, (a, b), act=DEFAULT_X_FORMAT))
    # int activations (a scale per row) are an XLA-only format
    fmt = QuantFormat("int", 8)
    np.testing.assert_array_equal(lqer_matmul(x, w, a, b, bias, x_format=fmt, implementation="xla"),
                                  _quantized_linear(x, unpack(w), bias, (a, b), act=fmt))


def test_pallas_is_inference_only_and_xla_has_ste_gradients():
    x, w, a, b, bias = _inputs(Case(m=4, k=32, n=16, rank=8, bias=True, data="normal"))
    loss = lambda impl, x: jnp.sum(lqer_matmul(x, w, a, b, bias, implementation=impl))  # noqa: E731
    with pytest.raises(TypeError, match="inference-only"):
        jax.grad(functools.partial(loss, "pallas"))(x)
    g = jax.grad(functools.partial(loss, "xla"))(x)
    # STE: the gradient of sum(Q(x) W) w.r.t. x is the row sums of W (plus the low-rank term's A B)
    expected = jnp.broadcast_to(unpack(w).sum(1) + (a @ b).sum(1), x.shape)
    chex.assert_trees_all_close(g, expected, atol=1e-5, rtol=1e-5)


def test_block_sizes_validation_and_defaults():
    for bad in (dict(block_m=24), dict(block_k=8), dict(block_n=0), dict(block_n=True)):
        kwargs = dict(block_m=16, block_n=16, block_k=16) | bad
        name, value = next(iter(bad.items()))
        with pytest.raises(ValueError, match=f"BlockSizes.{name}={value!r}"):
            BlockSizes(**kwargs)
    assert BlockSizes.get_default(1, 1536, 576) == BlockSizes(16, 128, 64)
    assert BlockSizes.get_default(512, 4096, 4096) == BlockSizes(64, 128, 128)
    assert BlockSizes.get_default(7, 80, 40) == BlockSizes(16, 16, 16)
    assert WIDE.fit(5) == BlockSizes(16, 64, 64) and WIDE.fit(500) == WIDE


def test_errors_name_the_values():
    x, w, a, b, bias = _inputs(Case(m=4, k=32, n=16, rank=8, bias=True, data="normal"))
    with pytest.raises(ValueError, match="has K=48, the weight has in_features=32"):
        lqer_matmul(jnp.ones((4, 48)), w)
    with pytest.raises(ValueError, match="both low-rank factors"):
        lqer_matmul(x, w, a, None)
    with pytest.raises(ValueError, match=r"a \(32, 8\) and b \(4, 16\)"):
        lqer_matmul(x, w, a, b[:4])
    with pytest.raises(ValueError, match=r"bias shape \(15,\) != \(N,\) = \(16,\)"):
        lqer_matmul(x, w, bias=bias[:15])
    with pytest.raises(TypeError, match="must be a PackedMXINT"):
        lqer_matmul(x, unpack(w))
    with pytest.raises(TypeError, match="float32/bfloat16/float16"):
        lqer_matmul(x.astype(jnp.int32), w)
    with pytest.raises(ValueError, match="implementation='triton'"):
        lqer_matmul(x, w, implementation="triton")
    with pytest.raises(ValueError, match="kind 'none' or 'mxint'.*x_format.kind='int'"):
        lqer_matmul(x, w, x_format=QuantFormat("int", 8), implementation="pallas")
    with pytest.raises(ValueError, match="x_format.block=12 must be a power of 2"):
        lqer_matmul(x, w, x_format=QuantFormat("mxint", 8, 12), implementation="pallas")
    with pytest.raises(ValueError, match="pack: kernel must be"):
        pack(jnp.ones(16))
    with pytest.raises(ValueError, match="pack: width=9"):
        pack(jnp.ones((16, 4)), width=9)
    with pytest.raises(ValueError, match="int8 exponents cannot store"):
        pack(jnp.full((16, 4), 3e38))
    # the kernel's own layout checks (the API pads so that these hold)
    call = functools.partial(lqer_pallas.lqer_matmul_pallas, weight_width=4, weight_block=16, x_width=8,
                             x_block=16, block_sizes=SMALL, interpret=True)
    xq = jnp.zeros((20, 32), jnp.float32)
    with pytest.raises(ValueError, match="M=20 must be a multiple of block_m=16"):
        call(xq, w.mantissa, w.exponent)
    with pytest.raises(ValueError, match="K=32 must be a multiple of block_k=64"):
        call(xq[:16], w.mantissa, w.exponent, block_sizes=WIDE)
    with pytest.raises(ValueError, match="rank r=8 must be a power of 2 >= 16"):
        call(xq[:16], w.mantissa, w.exponent, a, b)
    with pytest.raises(TypeError, match="must be int8"):
        call(xq[:16], w.mantissa.astype(jnp.int32), w.exponent)


def test_as_linear_op_routes_packed_and_float_kernels():
    op = as_linear_op("pallas", block_sizes=SMALL)
    assert op is as_linear_op("pallas", block_sizes=SMALL)  # same arguments, same function
    x, w, a, b, bias = _inputs(Case(m=7, k=96, n=80, rank=32, bias=True))
    np.testing.assert_array_equal(op(x, w, bias, lowrank=(a, b)),
                                  lqer_matmul(x, w, a, b, bias, implementation="pallas", block_sizes=SMALL))
    np.testing.assert_array_equal(op(x, w, None), lqer_matmul(x, w, implementation="pallas", block_sizes=SMALL))
    kernel = unpack(w)
    np.testing.assert_array_equal(op(x, kernel, bias, lowrank=(a, b)),
                                  _quantized_linear(x, kernel, bias, (a, b), act=DEFAULT_X_FORMAT))
    with pytest.raises(TypeError, match="unexpected arguments"):
        as_linear_op("pallas", block_size=SMALL)


def _tiny_llama_params():
    config = LlamaConfig(vocab_size=50, hidden=32, layers=2, heads=4, kv_heads=2, mlp_hidden=64)
    model = Llama(config)
    tokens = jax.random.randint(jax.random.PRNGKey(0), (2, 9), 0, 50)
    positions = jnp.broadcast_to(jnp.arange(9), tokens.shape)
    params = model.init(jax.random.PRNGKey(1), tokens, positions)["params"]
    return model, params, tokens, positions


def _convert_linears(params, convert):
    """Applies `convert(linear_params, key)` to every `Linear` params dict (the ones with `kernel`)."""
    flat = flax.traverse_util.flatten_dict(flax.core.unfreeze(params), sep="/")
    linears = sorted(path.rsplit("/", 1)[0] for path in flat if path.endswith("/kernel"))
    out = dict(flat)
    for i, prefix in enumerate(linears):
        sub = {key[len(prefix) + 1:]: out.pop(key) for key in list(out) if key.startswith(prefix + "/")}
        out.update({f"{prefix}/{k}": v for k, v in convert(sub, jax.random.PRNGKey(10 + i)).items()})
    return flax.traverse_util.unflatten_dict(out, sep="/"), len(linears)


def _lowrank(kernel, key, rank=8):
    ka, kb = jax.random.split(key)
    k, n = kernel.shape
    return (mxint(jax.random.normal(ka, (k, rank)) * 0.1, 8, 16, axis=0),
            mxint(jax.random.normal(kb, (rank, n)) * 0.1, 8, 16, axis=0))


def test_llama_with_packed_kernels_matches_fake_quantized_xla_path():
    model, params, tokens, positions = _tiny_llama_params()
    fmt = DEFAULT_X_FORMAT

    def fake(sub, key):  # the XLA path: W4 fake-quantized in place, plus a low-rank pair
        a, b = _lowrank(sub["kernel"], key)
        return {"kernel": mxint(sub["kernel"], 4, 16, axis=0), "lowrank_a": a, "lowrank_b": b}

    def packed(sub, key):
        a, b = _lowrank(sub["kernel"], key)
        return {"packed_kernel": pack(sub["kernel"]), "lowrank_a": a, "lowrank_b": b}

    fake_params, n_linears = _convert_linears(params, fake)
    packed_params, _ = _convert_linears(params, packed)
    assert n_linears == 2 * 7  # q, k, v, o, gate, up, down per layer
    leaves = jax.tree.leaves(packed_params, is_leaf=lambda v: isinstance(v, PackedMXINT))
    assert sum(isinstance(v, PackedMXINT) for v in leaves) == n_linears

    xla_model = model.clone(ops=quantized_ops(fmt))
    kernel_model = model.clone(ops=dataclasses.replace(quantized_ops(fmt), linear=as_linear_op("pallas", fmt)))
    want, _ = jax.jit(xla_model.apply)({"params": fake_params}, tokens, positions)
    got, _ = jax.jit(kernel_model.apply)({"params": packed_params}, tokens, positions)
    chex.assert_shape(got, (2, 9, 50))
    err = float(jnp.max(jnp.abs(got - want)))
    print(f"tiny Llama logits, Pallas packed vs XLA fake-quantized: max abs error {err:.3g}")
    # float32 summation order only (see the module docstring); the logits are O(1)
    chex.assert_trees_all_close(got, want, atol=1e-5, rtol=1e-5)
    # and the quantization is not a no-op: the float model differs
    plain, _ = model.apply({"params": params}, tokens, positions)
    assert float(jnp.max(jnp.abs(plain - want))) > 1e-3


@pytest.mark.gpu
class TestCompiledKernel:
    """The same comparisons with the compiled kernel (Triton on GPU); never run on CPU.

    The bound in `_check` holds for any summation order, so it applies unchanged; a rare extra
    difference can come from the device's log (see `pallas.py`), which would show as one failing
    element of about one MXINT8 step of the low-rank term.
    """

    CASES = GRID + OTHER + [Case(m=512, k=4096, n=4096, rank=32, bias=True, blocks=None, data="normal"),
                            Case(m=16, k=576, n=1536, rank=32, blocks=None, data="normal", dtype="bfloat16")]

    @pytest.mark.parametrize("case", CASES, ids=str)
    def test_compiled(self, case):
        with jax.default_matmul_precision("highest"):
            _check(case, interpret=False)
