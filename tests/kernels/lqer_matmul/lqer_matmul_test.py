"""kernels.lqer_matmul: the fused Pallas GEMM against the jnp reference, on CPU: the GPU/generic
variant in the generic interpreter, the TPU variant in Pallas' TPU interpreter (race detection on,
uninitialised memory NaN), and both lowered (not compiled) for TPU and CUDA.

Tolerance. Both sides quantize identical float inputs with the same rule, and every product is
exact (MXINT8 activations times MXINT4 weights fit float32, and bfloat16, exactly), so the only
difference is the order of the float32 sums over K. For any order, a sum of n terms is within
(n - 1) 2^-24 sum|terms| of the exact one, so the two outputs differ elementwise by at most
    2 (K + 2) 2^-24 (|Q_x(X)| |W_q| + |low-rank term| + |bias|)
(K products plus the low-rank and bias additions), computed in float64 (`_bound`).
A different summation order can also move X A across an MXINT rounding boundary (a legitimate
difference of one quantization step of the low-rank term, outside that bound). The "exact" data
rules it out: X is integers / 2^7 (|int| <= 127, every 16-block holding 127, so Q_x(X) = X) and A
is integers / 2^10, so every partial sum of X A is an integer / 2^17 of magnitude < 576 * 127^2
< 2^24: X A is exact in any order. Q_x(X A) B sums <= 32 products of 8-bit mantissas (B is
integers / 2^10), exact too while the two 16-blocks of X A have exponents within 5 of each
other (they do here). The "normal" data (random normals) has no such guarantee; a boundary lies
within float32 error with probability ~1e-5 per element, and none does at these seeds.
Measured on CPU (jax 0.10.2): max error 0 (bit-identical) in every MXINT case, in both
interpreters (asserted for the TPU interpreter's "exact" cases), 3e-7 with x_format 'none'
(arbitrary float32 inputs); the tiny Llama's logits are bit-identical too.

The kernel's Q_x and the library's `mxint` take the shared exponent ceil(log2(block max)) from
the float32 bits, exactly, with one function (`jaxml.compress.quantizers.ceil_log2`; XLA's log2,
which the library used before, is off by one at and a few ulps above some powers of two:
`test_shared_exponent_is_exact_at_powers_of_two`).
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

from jaxml.compress.linear import quantized_linear, quantized_ops
from jaxml.compress.quantizers import QuantFormat, integer, mxint
from jaxml.models.llama import Llama, LlamaConfig
from jaxml.compress.quantizers import mxint_numpy_reference
from kernels import common
from kernels.common import resolve_interpret, target_platform, tpu_interpret_params
from kernels.lqer_matmul import (DEFAULT_X_FORMAT, BlockSizes, PackedMXINT, as_linear_op, lqer_matmul,
                                 lqer_matmul_reference, pack, unpack)
from kernels.lqer_matmul import pallas as lqer_pallas

SMALL = BlockSizes(block_m=16, block_n=16, block_k=32)
WIDE = BlockSizes(block_m=32, block_n=64, block_k=64)
TPU_SMALL = BlockSizes(block_m=8, block_n=128, block_k=128)  # the smallest Mosaic-legal tiles


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
    width: int = 4  # the packed weight's MXINT width

    def __str__(self):
        bs = self.blocks
        blocks = "default" if bs is None else f"{bs.block_m}x{bs.block_n}x{bs.block_k}"
        fmt = "" if self.x_format == DEFAULT_X_FORMAT else f"_{self.x_format.kind}{self.x_format.width}"
        return (f"m{self.m}_k{self.k}_n{self.n}_r{self.rank}{'_bias' if self.bias else ''}_{blocks}_{self.data}"
                f"{'' if self.dtype == 'float32' else '_' + self.dtype}{fmt}{'_lead' if self.lead else ''}"
                f"{'' if self.width == 4 else f'_w{self.width}'}")


# Jitted once per shape: eager JAX compiles every primitive separately, which dominates the runtime.
_pack = jax.jit(pack, static_argnames=("width", "block"))
_mxint = jax.jit(mxint, static_argnums=(1, 2, 3))
_unpack = jax.jit(unpack)
_quantized_linear_jit = jax.jit(quantized_linear, static_argnames="act")


def _ints(rng, shape):
    return rng.integers(-127, 128, shape).astype(np.float32) / 128


def _inputs(case: Case, seed=0):
    rng = np.random.default_rng(seed)
    shape = case.lead + (case.m, case.k)
    if case.data == "exact":
        x = _ints(rng, shape)
        x[..., ::16] = 127 / 128
    else:
        x = rng.standard_normal(shape, np.float32)
    w = _pack(jnp.asarray(rng.standard_normal((case.k, case.n), np.float32) * 0.05), width=case.width)
    a = b = None
    if case.rank:
        if case.data == "exact":
            a, b = _ints(rng, (case.k, case.rank)) / 8, _ints(rng, (case.rank, case.n)) / 8
        else:  # LQER's A and B are MXINT8 (blocks of 16 along their reduction axes)
            a = _mxint(jnp.asarray(rng.standard_normal((case.k, case.rank), np.float32) * 0.1), 8, 16, 0)
            b = _mxint(jnp.asarray(rng.standard_normal((case.rank, case.n), np.float32) * 0.1), 8, 16, 0)
    bias = jnp.asarray(rng.standard_normal(case.n, np.float32)) if case.bias else None
    as_jax = lambda v: None if v is None else jnp.asarray(v)  # noqa: E731
    return jnp.asarray(x, case.dtype), w, as_jax(a), as_jax(b), bias


@functools.partial(jax.jit, static_argnames="x_format")
def _reference_and_terms(x, w, a, b, bias, x_format):
    """The reference output, and Q_x(X), W_q and the low-rank term for the bound."""
    xq = x_format(x.astype(jnp.float32), axis=-1)
    lowrank = None if a is None else x_format(x_format(xq @ a, axis=-1) @ b, axis=-1)
    return lqer_matmul_reference(x, w, a, b, bias, x_format=x_format), (xq, unpack(w), lowrank)


def _bound(x, terms, bias):
    """The elementwise float32 summation-order bound of the module docstring (float64)."""
    xq, kernel, lowrank = (None if v is None else np.asarray(v, np.float64) for v in terms)
    total = np.abs(xq) @ np.abs(kernel)
    if lowrank is not None:
        total = total + np.abs(lowrank)
    if bias is not None:
        total = total + np.abs(np.asarray(bias, np.float64))
    return 2 * (x.shape[-1] + 2) * 2.0 ** -24 * total


def _blocks_for(case: Case, target: str):
    """The case's blocks, or TPU_SMALL on TPU where they are the Triton-style ones (not Mosaic-legal)."""
    if target == "tpu" and case.blocks is not None and case.blocks.block_n % 128:
        return TPU_SMALL
    return case.blocks


def _check(case: Case, interpret=None):
    """Pallas vs the reference, elementwise within the bound; returns (max abs error, max error / bound)."""
    x, w, a, b, bias = _inputs(case)
    blocks = _blocks_for(case, target_platform(None, resolve_interpret(interpret)))
    out = lqer_matmul(x, w, a, b, bias, x_format=case.x_format, implementation="pallas",
                      block_sizes=blocks, interpret=interpret)
    ref, terms = _reference_and_terms(x, w, a, b, bias, x_format=case.x_format)
    chex.assert_shape(out, case.lead + (case.m, case.n))
    assert out.dtype == x.dtype
    chex.assert_tree_all_finite(out)
    err = np.abs(np.asarray(out, np.float64) - np.asarray(ref, np.float64))
    tol = _bound(x, terms, bias)
    if case.dtype != "float32":  # one rounding of the float32 result to the output dtype, either way
        tol = tol + np.abs(np.asarray(ref, np.float64)) * float(jnp.finfo(case.dtype).eps)
    assert np.all(err <= tol), (str(case), float(err.max()), float((err - tol).max()))
    return float(err.max()), float((err / tol).max())


# Every (M, K) of M in {1, 7, 64} x K in {64, 96, 576}, N alternating over {32, 80}, ranks cycling
# over 0 / 8 (padded to 16) / 32 (a Latin square over M and K), two block settings and the bias cycling independently.
GRID = [Case(m=m, k=k, n=(32, 80)[i % 2], rank=(0, 8, 32)[(i + i // 3) % 3], bias=i % 4 in (1, 2),
             blocks=(SMALL, WIDE)[(i // 2) % 2])
        for i, (m, k) in enumerate((m, k) for m in (1, 7, 64) for k in (64, 96, 576))]
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


# Pallas' TPU interpreter runs the TPU variant (grid over K, VMEM scratch accumulators, (8, 128)
# blocks, Mosaic-legal ops) on CPU, detecting races and filling uninitialised memory with NaN. Each
# new kernel costs ~2 s to build there, so the default suite runs two cases that together cover
# padded and unpadded shapes, with and without the low-rank path and bias, weight widths 8 and 4;
# -m slow runs three more and the whole GRID + OTHER sweep.
TPU_CASES = [
    Case(m=5, k=200, n=24, rank=8, bias=True, width=8, blocks=TPU_SMALL),  # all padded (K 208 -> 256: two
                                                                           # K steps; r 8 -> 128); MXINT8 W
    Case(m=8, k=128, n=256, blocks=TPU_SMALL),                             # nothing padded, two column tiles
]
TPU_SLOW_CASES = [
    Case(m=7, k=64, n=32, blocks=None),
    Case(m=8, k=256, n=256, rank=128, bias=True, blocks=TPU_SMALL),        # grid (1, 2, 2), r unpadded
    Case(m=20, k=512, n=384, rank=32, bias=True, data="normal", dtype="bfloat16", blocks=None),
]


def _check_tpu_interpreter(case: Case):
    err, _ = _check(case, interpret=tpu_interpret_params())
    if case.data == "exact" and case.x_format == DEFAULT_X_FORMAT:
        assert err == 0.0, (str(case), err)  # bit-identical, as in the generic interpreter


@pytest.mark.parametrize("case", TPU_CASES, ids=str)
def test_pallas_matches_reference_in_tpu_interpreter(case):
    _check_tpu_interpreter(case)


@pytest.mark.slow
@pytest.mark.parametrize("case", TPU_SLOW_CASES + GRID + OTHER, ids=str)
def test_pallas_matches_reference_in_tpu_interpreter_sweep(case):
    _check_tpu_interpreter(case)


# --- lowering for TPU (Mosaic) and CUDA (Triton) on this CPU host: no device, nothing compiled ----

TRITON_CALL = "__gpu$xla.gpu.triton"
LOWER_CASES = [
    Case(m=16, k=256, n=256, blocks=None),                                        # nothing padded
    Case(m=16, k=256, n=256, rank=128, bias=True, blocks=None, dtype="bfloat16"),
    Case(m=7, k=576, n=80, rank=8, blocks=None),                                  # everything padded
    Case(m=5, k=40, n=24, bias=True, blocks=None, x_format=QuantFormat("none")),
]


def _lower(case: Case, backend: str, implementation: str = "pallas"):
    """lqer_matmul traced for `backend` from abstract inputs and lowered for it."""
    sds = jax.ShapeDtypeStruct
    k_pad = -(-case.k // 16) * 16
    w = PackedMXINT(mantissa=sds((k_pad, case.n), jnp.int8), exponent=sds((k_pad // 16, case.n), jnp.int8),
                    width=case.width, block=16, in_features=case.k)
    a = sds((case.k, case.rank), jnp.float32) if case.rank else None
    b = sds((case.rank, case.n), jnp.float32) if case.rank else None
    bias = sds((case.n,), jnp.float32) if case.bias else None
    f = functools.partial(lqer_matmul, x_format=case.x_format, implementation=implementation,
                          block_sizes=case.blocks, backend=backend)
    platform = "cuda" if backend in ("gpu", "cuda") else backend
    return jax.jit(f).trace(sds((case.m, case.k), case.dtype), w, a, b, bias).lower(lowering_platforms=(platform,))


@pytest.mark.parametrize("case", LOWER_CASES, ids=str)
@pytest.mark.parametrize("backend, marker", [("tpu", "tpu_custom_call"), ("cuda", TRITON_CALL)])
def test_kernel_lowers_for_tpu_and_cuda(case, backend, marker):
    """The TPU variant lowers to a Mosaic custom call (its BlockSpecs pass Mosaic's tiling check and
    every in-kernel op has a lowering rule) and the GPU one to Triton. Lowering only: Mosaic's and
    Triton's compilers run on a device."""
    text = _lower(case, backend).as_text()
    assert text.count(marker) == 1


@pytest.mark.parametrize("backend, marker", [("tpu", "tpu_custom_call"), ("cuda", TRITON_CALL), ("cpu", None)])
def test_auto_picks_the_kernel_for_the_backend(backend, marker):
    if backend == "cuda" and not common.triton_available():
        pytest.skip("this jax has no Pallas Triton backend ('auto' falls back to XLA on GPU)")
    text = _lower(LOWER_CASES[1], backend, implementation="auto").as_text()
    if marker is None:  # XLA: no custom call at all
        assert "tpu_custom_call" not in text and TRITON_CALL not in text and "custom_call" not in text
    else:
        assert marker in text


def test_pack_unpack_is_mxint4_along_k():
    rng = np.random.default_rng(1)
    for k, n, width in ((96, 80, 4), (40, 24, 4), (64, 16, 8)):
        kernel = rng.standard_normal((k, n), np.float32) * 0.05
        kernel[16:32, :3] = 0.0  # all-zero blocks
        kernel = jnp.asarray(kernel)
        w = _pack(kernel, width=width)
        k_pad = -(-k // 16) * 16
        chex.assert_shape((w.mantissa, w.exponent), ((k_pad, n), (k_pad // 16, n)))
        assert w.mantissa.dtype == w.exponent.dtype == jnp.int8 and w.shape == (k, n)
        assert int(jnp.max(jnp.abs(w.mantissa))) <= 2 ** (width - 1) - 1
        np.testing.assert_array_equal(w.mantissa[k:], 0)  # the padded rows
        np.testing.assert_array_equal(_unpack(w), _mxint(kernel, width, 16, 0))
        # value = mantissa * 2^(exponent - (width - 1)), one exponent per 16 rows
        manual = np.asarray(w.mantissa, np.float64) * 2.0 ** (np.repeat(np.asarray(w.exponent), 16, 0) - (width - 1))
        np.testing.assert_array_equal(_unpack(w), manual[:k])


def test_packed_weight_is_a_pytree_with_static_format():
    w = pack(jnp.ones((32, 16)))
    leaves, treedef = jax.tree.flatten(w)
    assert len(leaves) == 2
    w2 = jax.tree.unflatten(treedef, leaves)
    assert (w2.width, w2.block, w2.in_features) == (4, 16, 32)
    np.testing.assert_array_equal(jax.jit(unpack)(w), unpack(w))


@pytest.mark.parametrize("target", ["interpret", "tpu"])
def test_in_kernel_quantizer_equals_library_mxint(target):
    """Both variants of the in-kernel tile arithmetic (reshapes for Triton / the generic interpreter,
    lane rotations and row broadcasts for Mosaic) against the library, outside a kernel."""
    z = np.random.default_rng(2).standard_normal((32, 256), np.float32) * 3.0
    z[0, :16], z[1, 3], z[2, :16] = 0.0, 1e-9, 4.0  # a zero block, a tiny value, a power of 2
    z = jnp.asarray(z)
    for width in (4, 8):
        for block in (16, 32):
            np.testing.assert_array_equal(
                jax.jit(lqer_pallas.mxint_rows, static_argnums=(1, 2, 3))(z, width, block, target),
                _mxint(z, width, block, -1))
    # dequantization: reference.unpack's values, bit for bit
    w = _pack(jnp.asarray(np.random.default_rng(3).standard_normal((128, 256), np.float32)))
    dequantize = jax.jit(lqer_pallas.dequantize_tile, static_argnums=(2, 3, 4))
    np.testing.assert_array_equal(dequantize(w.mantissa, w.exponent, 4, 16, target), _unpack(w))
    # round half to even, ties included, as jnp.round
    v = jnp.concatenate([jnp.arange(0.0, 130.0, 0.25), jnp.nextafter(jnp.arange(0.5, 130.0), 0.0),
                         jnp.nextafter(jnp.arange(0.5, 130.0), 200.0)]).astype(jnp.float32)
    np.testing.assert_array_equal(jax.jit(lqer_pallas._round_half_even)(v), jnp.round(v))
    # 2^e from the exponent bits equals XLA's 2.0 ** e over the whole range (both flush subnormals)
    e = jnp.arange(-140.0, 130.0, dtype=jnp.float32)
    np.testing.assert_array_equal(jax.jit(lqer_pallas.exp2_int)(e), jax.jit(lambda e: 2.0 ** e)(e))


def test_shared_exponent_is_exact_at_powers_of_two():
    """ceil(log2(v)) from the bits is exact for every normal float32 exponent, at powers of two and
    a few ulps above them, where XLA's float32 log2 is off by one (e.g. ceil(log2(2^-26)) = -25, and
    2^k (1 + 2^-23) -> k for many k): the kernel's Q_x and the library's `mxint` both follow the
    exact rule there (float64 NumPy reference)."""
    bits = (np.arange(1, 255, dtype=np.uint32)[:, None] << 23 | np.arange(9, dtype=np.uint32)[None, :]).ravel()
    v = bits.view(np.float32)
    mantissa, exponent = np.frexp(v.astype(np.float64))  # v = mantissa 2^exponent, mantissa in [0.5, 1)
    np.testing.assert_array_equal(jax.jit(lqer_pallas.ceil_log2)(v), exponent - (mantissa == 0.5))
    # Q_x of blocks whose maximum is such a value (the other elements away from rounding ties)
    corners = v[(v > 1e-6) & (v < 1e6)]
    rows = corners[:, None] * np.array([1, 1 / 3, -1 / 5, 2 / 7] * 4, np.float32)[None, :]
    rows = np.asarray(rows, np.float32)
    for target in ("interpret", "tpu"):
        got = jax.jit(lqer_pallas.mxint_rows, static_argnums=(1, 2, 3))(jnp.asarray(rows), 8, 16, target)
        np.testing.assert_array_equal(got, mxint_numpy_reference(rows, 8, 16).astype(np.float32))
    np.testing.assert_array_equal(_mxint(jnp.asarray(rows), 8, 16, -1), got)


def test_xla_implementation_is_lqers_compute_pattern_written_out():
    """implementation='xla' (= `jaxml.compress.linear.quantized_linear` on the unpacked weight) against
    Q(X) W_q + Q(Q(Q(X) A) B) + bias composed here from `mxint` and the hand-checked `unpack`."""
    case = Case(m=7, k=96, n=80, rank=8, bias=True, data="normal")
    x, w, a, b, bias = _inputs(case)
    q = lambda v: _mxint(v, 8, 16, -1)  # noqa: E731  (MXINT8 along the last axis)
    xq = q(x)
    expected = xq @ _unpack(w) + q(q(xq @ a) @ b) + bias
    np.testing.assert_array_equal(lqer_matmul(x, w, a, b, bias, implementation="xla"), expected)
    np.testing.assert_array_equal(lqer_matmul(x, w, implementation="xla"), xq @ _unpack(w))
    # int activations (a scale per row) are an XLA-only format
    fmt = QuantFormat("int", 8)
    qi = lambda v: integer(v, 8, axis=-1)  # noqa: E731
    expected = qi(x) @ _unpack(w) + qi(qi(qi(x) @ a) @ b) + bias
    np.testing.assert_allclose(lqer_matmul(x, w, a, b, bias, x_format=fmt, implementation="xla"), expected,
                               rtol=0, atol=0)


def test_pallas_is_inference_only_and_xla_has_ste_gradients():
    x, w, a, b, bias = _inputs(Case(m=4, k=32, n=16, rank=8, bias=True, data="normal"))
    loss = lambda impl, x: jnp.sum(lqer_matmul(x, w, a, b, bias, implementation=impl))  # noqa: E731
    with pytest.raises(TypeError, match="inference-only"):
        jax.grad(functools.partial(loss, "pallas"))(x)
    g = jax.grad(functools.partial(loss, "xla"))(x)
    # STE: the gradient of sum(Q(x) W) w.r.t. x is the row sums of W (plus the low-rank term's A B)
    expected = np.broadcast_to(np.asarray(_unpack(w)).sum(1) + np.asarray(a @ b).sum(1), x.shape)
    chex.assert_trees_all_close(g, expected, atol=1e-5, rtol=1e-5)


def test_block_sizes_validation_and_defaults():
    for bad in (dict(block_n=0), dict(block_n=True), dict(block_k=2.0)):
        name, value = next(iter(bad.items()))
        with pytest.raises(ValueError, match=f"BlockSizes.{name}={value!r}"):
            BlockSizes(**dict(block_m=16, block_n=16, block_k=16) | bad)
    for target in ("gpu", "interpret"):  # Triton tiles: powers of 2 >= 16
        for bad in (dict(block_m=24), dict(block_k=8)):
            name, value = next(iter(bad.items()))
            with pytest.raises(ValueError, match=f"BlockSizes.{name}={value!r}: every block must be a power of 2"):
                BlockSizes(**dict(block_m=16, block_n=16, block_k=16) | bad).check(target)
    for bad in (dict(block_m=12), dict(block_n=64), dict(block_k=192 + 8)):  # Mosaic: (8, 128) multiples
        name, value = next(iter(bad.items()))
        with pytest.raises(ValueError, match=f"BlockSizes.{name}={value!r}: on TPU"):
            BlockSizes(**dict(block_m=8, block_n=128, block_k=128) | bad).check("tpu")
    BlockSizes(24, 384, 128).check("tpu")
    assert BlockSizes.get_default(1, 1536, 576) == BlockSizes(16, 128, 64)
    assert BlockSizes.get_default(512, 4096, 4096) == BlockSizes(64, 128, 128)
    assert BlockSizes.get_default(7, 80, 40) == BlockSizes(16, 16, 16)
    assert WIDE.fit(5) == BlockSizes(16, 64, 64) and WIDE.fit(500) == WIDE
    # TPU: N and K padded to 128 (K to 8 exponent rows per step), block_m a multiple of 8
    assert BlockSizes.get_default(1, 1536, 576, target="tpu") == BlockSizes(8, 512, 128)
    assert BlockSizes.get_default(512, 4096, 4096, target="tpu") == BlockSizes(128, 512, 512)
    assert BlockSizes.get_default(7, 80, 40, target="tpu") == BlockSizes(8, 128, 128)
    assert BlockSizes.get_default(20, 384, 4096, target="tpu", weight_block=32) == BlockSizes(24, 128, 512)
    assert BlockSizes.get_default(20, 384, 300, target="tpu", weight_block=128) == BlockSizes(24, 128, 1024)
    assert TPU_SMALL.fit(5, "tpu") == TPU_SMALL and BlockSizes(64, 128, 128).fit(20, "tpu") == BlockSizes(24, 128, 128)
    assert lqer_pallas.padded_dims("tpu", 5, 80, 48, 8, TPU_SMALL, 16) == (8, 128, 128, 128)
    assert lqer_pallas.padded_dims("interpret", 5, 80, 48, 8, SMALL, 16) == (16, 80, 64, 16)
    for target in ("gpu", "interpret", "tpu"):
        BlockSizes.get_default(3, 1000, 1000, target=target).check(target)


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
        call(xq[:16], w.mantissa, w.exponent, block_sizes=BlockSizes(16, 16, 64))
    with pytest.raises(ValueError, match="rank r=8 must be a power of 2 >= 16"):
        call(xq[:16], w.mantissa, w.exponent, a, b)
    with pytest.raises(TypeError, match="must be int8"):
        call(xq[:16], w.mantissa.astype(jnp.int32), w.exponent)
    # TPU: Mosaic's tiling, named with the block
    tpu = tpu_interpret_params()
    with pytest.raises(ValueError, match="BlockSizes.block_n=16: on TPU"):
        lqer_matmul(x, w, implementation="pallas", block_sizes=SMALL, interpret=tpu)
    with pytest.raises(ValueError, match="block=4 must be a multiple of 8 .* on TPU"):
        lqer_matmul(x, _pack(jnp.ones((32, 16)), block=4), implementation="pallas", interpret=tpu)
    with pytest.raises(ValueError, match=r"exponent: block \(4, 128\) of array \(8, 128\) breaks Mosaic"):
        call(jnp.zeros((8, 256)), jnp.zeros((256, 128), jnp.int8), jnp.zeros((8, 128), jnp.int8), weight_block=32,
             block_sizes=TPU_SMALL, interpret=tpu)
    with pytest.raises(ValueError, match="backend='metal'"):
        lqer_matmul(x, w, backend="metal")


def test_as_linear_op_routes_packed_and_float_kernels():
    op = as_linear_op("pallas", block_sizes=SMALL)
    assert op is as_linear_op("pallas", block_sizes=SMALL)  # same arguments, same function
    x, w, a, b, bias = _inputs(Case(m=7, k=96, n=80, rank=32, bias=True))
    np.testing.assert_array_equal(op(x, w, bias, lowrank=(a, b)),
                                  lqer_matmul(x, w, a, b, bias, implementation="pallas", block_sizes=SMALL))
    np.testing.assert_array_equal(op(x, w, None), lqer_matmul(x, w, implementation="pallas", block_sizes=SMALL))
    kernel = _unpack(w)
    np.testing.assert_array_equal(jax.jit(op)(x, kernel, bias, lowrank=(a, b)),
                                  _quantized_linear_jit(x, kernel, bias, (a, b), act=DEFAULT_X_FORMAT))
    with pytest.raises(TypeError, match="unexpected arguments"):
        as_linear_op("pallas", block_size=SMALL)


def _tiny_llama_params():
    config = LlamaConfig(vocab_size=50, hidden=32, layers=1, heads=4, kv_heads=2, mlp_hidden=64)
    model = Llama(config)
    tokens = jax.random.randint(jax.random.PRNGKey(0), (2, 9), 0, 50)
    positions = jnp.broadcast_to(jnp.arange(9), tokens.shape)
    params = jax.jit(model.init)(jax.random.PRNGKey(1), tokens, positions)["params"]
    return model, params, tokens, positions


def _convert_linears(params, convert):
    """Applies `convert(linear_params, key)` to every `Linear` params dict (the ones with `kernel`)."""
    flat = flax.traverse_util.flatten_dict(flax.core.unfreeze(params), sep="/")
    linears = sorted(path.rsplit("/", 1)[0] for path in flat if path.endswith("/kernel"))
    out = dict(flat)
    for i, prefix in enumerate(linears):
        sub = {key[len(prefix) + 1:]: out.pop(key) for key in list(out) if key.startswith(prefix + "/")}
        out.update({f"{prefix}/{k}": v for k, v in convert(sub, np.random.default_rng(10 + i)).items()})
    return flax.traverse_util.unflatten_dict(out, sep="/"), len(linears)


def _lowrank(kernel, rng, rank=8):
    k, n = kernel.shape
    return (_mxint(jnp.asarray(rng.standard_normal((k, rank), np.float32) * 0.1), 8, 16, 0),
            _mxint(jnp.asarray(rng.standard_normal((rank, n), np.float32) * 0.1), 8, 16, 0))


def test_llama_with_packed_kernels_matches_fake_quantized_xla_path():
    model, params, tokens, positions = _tiny_llama_params()
    fmt = DEFAULT_X_FORMAT

    def fake(sub, rng):  # the XLA path: W4 fake-quantized in place, plus a low-rank pair
        a, b = _lowrank(sub["kernel"], rng)
        return {"kernel": _mxint(sub["kernel"], 4, 16, 0), "lowrank_a": a, "lowrank_b": b}

    def packed(sub, rng):
        a, b = _lowrank(sub["kernel"], rng)
        return {"packed_kernel": _pack(sub["kernel"]), "lowrank_a": a, "lowrank_b": b}

    fake_params, n_linears = _convert_linears(params, fake)
    packed_params, _ = _convert_linears(params, packed)
    assert n_linears == 7  # q, k, v, o, gate, up, down
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
    plain, _ = jax.jit(model.apply)({"params": params}, tokens, positions)
    assert float(jnp.max(jnp.abs(plain - want))) > 1e-3


@pytest.mark.gpu
class TestCompiledKernel:
    """The same comparisons with the compiled kernel (Triton on GPU, Mosaic on TPU, with TPU tiles
    there: `_blocks_for`); never run on CPU.

    The bound in `_check` holds for any summation order, so it applies unchanged. (The in-kernel
    exponent comes from the float32 bits, not the device's log, so it cannot drift by an ulp.)
    """

    CASES = GRID + OTHER + [Case(m=512, k=4096, n=4096, rank=32, bias=True, blocks=None, data="normal"),
                            Case(m=16, k=576, n=1536, rank=32, blocks=None, data="normal", dtype="bfloat16")]

    @pytest.mark.parametrize("case", CASES, ids=str)
    def test_compiled(self, case):
        with jax.default_matmul_precision("highest"):
            _check(case, interpret=False)
