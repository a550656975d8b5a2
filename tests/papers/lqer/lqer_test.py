"""LQER/L2QER math on real SmolLM2 layers and the quantized model path on a tiny Llama."""

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxml.compress import calibration
from jaxml.compress.blas import single_threaded_blas
from jaxml.compress.linear import quantized_ops
from jaxml.compress.quantizers import NONE, QuantFormat, mxint
from jaxml.models.llama import Llama, LlamaConfig
from jaxml.papers.lqer import (Method, activation_scale, average_bits, decompose, error_svd, pad_lowrank,
                               quantize_model, quantize_model_ranks, top_singular)
from jaxml.papers.lqer.experiments import load_model

LAYER = "layers_1/mlp/down"   # [1536, 576]: in > out
WIDE = "layers_1/mlp/up"      # [576, 1536]: in < out


@pytest.fixture(scope="module")
def real_layers():
    """Two real SmolLM2 kernels, their MXINT4 errors and the calibration scales from two Austen
    sentences. The model is cut after decoder layer 1: layers 0-1 see the same inputs as in the
    whole (causal) model, and it compiles in a second."""
    model, params, tok = load_model(decoder_layers=2)
    ids = np.asarray([tok.encode("It is a truth universally acknowledged, that a single man in possession of a good")[:16],
                      tok.encode("Sir Walter Elliot, of Kellynch Hall, in Somersetshire, was a man who, for his own")[:16]])
    batch = ((jnp.asarray(ids), jnp.broadcast_to(jnp.arange(16), (2, 16))), {})
    stats = calibration.calibrate(model, params, [batch])
    kernels = calibration.linear_kernels(params)
    out = {}
    for name in (LAYER, WIDE):
        w = np.asarray(kernels[name], np.float32)
        error = w - np.asarray(mxint(jnp.asarray(w), 4, 16, axis=0))
        out[name] = (w, error, activation_scale(stats[name].mean_abs_max))
    return out


@pytest.mark.parametrize("name", [LAYER, WIDE])
def test_top_singular_equals_lapack_svd(real_layers, name):
    """The Gram/eigh decomposition against NumPy's float64 SVD: measured at most 9e-15 relative on the
    rank-64 product, 8e-15 on the singular values, 4e-15 off orthonormal; asserted at 1e-13."""
    _, e, s = real_layers[name]
    for m in (e, s[:, None] * e):
        u, sv_vt, sv = top_singular(m, 64)
        with single_threaded_blas():
            ref_u, ref_s, ref_vt = np.linalg.svd(m.astype(np.float64), full_matrices=False)
        np.testing.assert_allclose(sv, ref_s[:64], rtol=1e-13)
        ref = (ref_u[:, :64] * ref_s[:64]) @ ref_vt[:64]
        assert np.abs(u @ sv_vt - ref).max() <= 1e-13 * np.abs(ref).max()
        np.testing.assert_allclose(u.T @ u, np.eye(64), atol=1e-13)   # orthonormal columns


def test_reconstruction_error_decreases_with_rank(real_layers):
    _, e, s = real_layers[LAYER]
    for fmt in (NONE, QuantFormat("mxint", 8, 16)):
        for scale in (None, s):
            svd = error_svd(e, 64, scale=scale)
            errs = [np.linalg.norm(e - (lr.a @ lr.b if k else 0))
                    for k in (0, 4, 8, 16, 32, 64) for lr in [svd.factors(k, fmt, fmt)]]
            assert all(b < a for a, b in zip(errs, errs[1:])), errs
            # the factors of one rank-64 decomposition are those of a rank-k one
            np.testing.assert_array_equal(svd.factors(16, fmt, fmt).a, decompose(e, 16, scale=scale, a_format=fmt,
                                                                                 b_format=fmt).a)


def test_scaled_spectrum_decays_faster(real_layers):
    """Fig. 1a on a real layer: the top 32 singular values hold more of diag(s) E than of E
    (measured 0.17 -> 0.47 for layers_1/mlp/down with this calibration)."""
    _, e, s = real_layers[LAYER]
    energy = lambda m: np.sum(np.linalg.svd(m, compute_uv=False)[:32] ** 2) / np.sum(m ** 2)  # noqa: E731
    with single_threaded_blas():
        assert energy(s[:, None] * e) > energy(e) + 0.25


def test_l2qer_minimises_the_activation_weighted_error(real_layers):
    """Eckart-Young on diag(s) E: for exact factors L2QER's scaled error is the smallest possible."""
    _, e, s = real_layers[LAYER]
    plain = decompose(e, 16, a_format=NONE, b_format=NONE)
    scaled = decompose(e, 16, scale=s, a_format=NONE, b_format=NONE)
    weighted = lambda lr: np.linalg.norm(s[:, None] * (e - lr.a @ lr.b))  # noqa: E731
    assert weighted(scaled) < weighted(plain)
    with single_threaded_blas():
        sv = np.linalg.svd(s[:, None] * e.astype(np.float64), compute_uv=False)
    # measured relative difference 1.3e-11 (A and B are stored in float32)
    np.testing.assert_allclose(weighted(scaled), np.sqrt(np.sum(sv[16:] ** 2)), rtol=1e-9)


def test_activation_scale_normalisation():
    s = activation_scale(np.asarray([0.0, 1e-6, 0.5, 4.0]))
    np.testing.assert_allclose(s, np.asarray([1e-4, 1e-4, 0.5, 4.0]) / np.sqrt(1e-4 * 4.0))   # both clamped at 1e-4
    np.testing.assert_allclose(np.sqrt(s.min() * s.max()), 1.0)


def test_average_bits():
    # 576 x 1536 MXINT4 (4 + 8/16) plus rank 32 in MXINT8 (8.5 bits): (576*1536*4.5 + (576+1536)*32*8.5) / (576*1536)
    expected = (576 * 1536 * 4.5 + (576 + 1536) * 32 * 8.5) / (576 * 1536)
    assert average_bits((576, 1536), QuantFormat("mxint", 4, 16), 32) == pytest.approx(expected)
    assert average_bits((576, 1536), QuantFormat("mxint", 4, 16), 0) == 4.5


@pytest.fixture(scope="module")
def tiny():
    config = LlamaConfig(vocab_size=50, hidden=32, layers=1, heads=4, kv_heads=2, mlp_hidden=48, max_len=64)
    model = Llama(config)
    zeros = jnp.zeros((1, 4), jnp.int32)
    params = jax.jit(model.init)(jax.random.PRNGKey(0), zeros, zeros)["params"]
    ids = jnp.asarray(np.random.default_rng(0).integers(0, 50, size=(2, 12)))
    args = (ids, jnp.broadcast_to(jnp.arange(12), (2, 12)))
    stats = calibration.calibrate(model, params, [(args, {})], hessian=True)
    return model, params, args, stats


@pytest.fixture(scope="module")
def a8_apply(tiny):
    """The tiny model's `apply` under MXINT8 activations, also returning every Linear's input (the
    `linear_inputs` collection), compiled once per parameter layout: `(logits, state)`."""
    apply = jax.jit(tiny[0].clone(ops=quantized_ops(QuantFormat("mxint", 8, 16))).apply, static_argnames="mutable")
    return lambda params, *args: (lambda out: (out[0][0], out[1]))(apply(params, *args, mutable="linear_inputs"))


def test_quantize_model_layouts(tiny):
    model, params, args, stats = tiny
    fp, report = quantize_model(params, stats, Method("fp"))
    assert report.bits_per_weight == 32.0 and fp is params
    q, report = quantize_model(params, stats, Method("l2qer", w_bits=4, rank=8))
    k = q["layers_0"]["mlp"]["up"]
    assert k["lowrank_a"].shape == (32, 8) and k["lowrank_b"].shape == (8, 48)
    w = np.asarray(params["layers_0"]["mlp"]["up"]["kernel"])
    np.testing.assert_array_equal(k["kernel"], np.asarray(mxint(jnp.asarray(w), 4, 16, axis=0)))
    # per kernel [in, out]: in*out*4.5 + (in + out)*8*8.5 bits; q/k/v/o/gate/up/down
    shapes = [(32, 32), (32, 16), (32, 16), (32, 32), (32, 48), (32, 48), (48, 32)]
    bits = sum(i * o * 4.5 + (i + o) * 8 * 8.5 for i, o in shapes) / sum(i * o for i, o in shapes)
    assert report.bits_per_weight == pytest.approx(bits)
    plain, _ = quantize_model(params, stats, Method("mxint", w_bits=4), ("layers_0/mlp/",))
    assert plain["layers_0"]["attn"]["q"]["kernel"] is params["layers_0"]["attn"]["q"]["kernel"]   # not selected
    np.testing.assert_array_equal(plain["layers_0"]["mlp"]["up"]["kernel"], k["kernel"])
    assert "lowrank_a" not in plain["layers_0"]["mlp"]["up"]


def test_rank_sweep_equals_separate_quantizations(tiny):
    """One decomposition per kernel for ranks (0, 4, 8) gives each rank's quantize_model result;
    the svd_cache makes a second call reuse the decompositions."""
    _, params, _, stats = tiny
    cache = {}
    swept = {r: (q, rep) for r, q, rep in quantize_model_ranks(params, stats, Method("l2qer", 3), (0, 4, 8),
                                                               svd_cache=cache)}
    assert sorted(cache) == sorted(calibration.linear_kernels(params)) and all(s.max_rank == 8 for s in cache.values())
    stored = dict(cache)
    for rank, (q_sweep, rep_sweep) in swept.items():
        q, rep = quantize_model(params, stats, Method("l2qer", 3, rank))
        assert rep.bits_per_weight == rep_sweep.bits_per_weight and rep_sweep.method.rank == rank
        for a, b in zip(jax.tree.leaves(q), jax.tree.leaves(q_sweep)):
            # measured: identical (the first k singular vectors do not depend on how many are kept)
            np.testing.assert_array_equal(a, b)
        q_cached, _ = quantize_model(params, stats, Method("l2qer", 3, rank), svd_cache=cache)
        jax.tree.map(np.testing.assert_array_equal, q_cached, q_sweep)
    assert all(cache[k] is stored[k] for k in stored)   # reused, not recomputed
    assert "lowrank_a" not in swept[0][0]["layers_0"]["attn"]["q"]


def test_pad_lowrank_computes_the_same_function(tiny, a8_apply):
    """Zero-padded factors (and zero factors for rank 0) leave the logits unchanged: bit-identical
    on the CPU (in general only the order of the float32 sums in Q(X) A may differ)."""
    model, params, args, stats = tiny
    apply = a8_apply
    for method in (Method("mxint", 4), Method("l2qer", 3, 5)):
        q, _ = quantize_model(params, stats, method)
        padded = pad_lowrank(q, 16)
        assert padded["layers_0"]["attn"]["k"]["lowrank_a"].shape == (32, 16)
        assert padded["layers_0"]["attn"]["k"]["lowrank_b"].shape == (16, 16)
        want = apply({"params": q}, *args)[0]
        got = apply({"params": padded}, *args)[0]
        np.testing.assert_array_equal(got, want)
    with pytest.raises(ValueError, match="rank 8 > 4"):
        pad_lowrank(quantize_model(params, stats, Method("lqer", 4, 8))[0], 4)


def test_quantized_model_computes_lqer_pattern(tiny, a8_apply):
    """Layer by layer, Linear with low-rank params under quantized_ops computes
    Q(X) W_q + Q(Q(Q(X) A) B); checked on the model's first q projection."""
    model, params, args, stats = tiny
    act = QuantFormat("mxint", 8, 16)
    q, _ = quantize_model(params, stats, Method("l2qer", w_bits=3, rank=5))   # the layout of the padding test
    model_q = model.clone(ops=quantized_ops(act))
    logits_q, state = a8_apply({"params": q}, *args)
    x = state["linear_inputs"]["layers_0"]["attn"]["q"]["x"][0]
    layer = q["layers_0"]["attn"]["q"]
    expected = (act(x, axis=-1) @ layer["kernel"]
                + act(act(act(x, axis=-1) @ layer["lowrank_a"], axis=-1) @ layer["lowrank_b"], axis=-1))
    from jaxml.nn.layers import Linear
    got = jax.jit(Linear(32, use_bias=False, ops=model_q.ops).apply)({"params": layer}, x)
    # measured 0 difference (same operations); float32 ulps allowed
    np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-7)
    logits = jax.jit(model.apply)({"params": params}, *args)[0]
    assert np.isfinite(np.asarray(logits_q)).all()
    assert 0 < float(jnp.abs(logits_q - logits).max()) < float(jnp.abs(logits).max())


def test_truncated_model_keeps_the_first_layers():
    model, params, _ = load_model(decoder_layers=2)
    full, full_params, _ = load_model()
    assert model.config == dataclasses.replace(full.config, layers=2)
    assert sorted(k for k in params if k.startswith("layers_")) == ["layers_0", "layers_1"]
    assert params["layers_1"] is full_params["layers_1"] and params["embed"] is full_params["embed"]


def test_bad_inputs():
    with pytest.raises(ValueError, match="method 'int4'"):
        Method("int4")
    with pytest.raises(ValueError, match="rank=700"):
        decompose(np.zeros((8, 4)), 700)
    with pytest.raises(ValueError, match="needs calibration"):
        quantize_model({"l": {"kernel": jnp.ones((16, 4))}}, None, Method("l2qer", rank=2))
    with pytest.raises(ValueError, match="rank=9 must be in"):
        error_svd(np.ones((16, 4)), 2).factors(9)
    with pytest.raises(ValueError, match=r"ranks=\(\) must be"):
        next(quantize_model_ranks({"l": {"kernel": jnp.ones((16, 4))}}, None, Method("mxint"), ()))
