"""LQER/L2QER math on real SmolLM2 layers and the quantized model path on a tiny Llama."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxml.compress import calibration
from jaxml.compress.linear import quantized_ops
from jaxml.compress.quantizers import NONE, QuantFormat, mxint
from jaxml.models.llama import Llama, LlamaConfig
from jaxml.papers.lqer import Method, activation_scale, average_bits, decompose, quantize_model

LAYER = "layers_3/mlp/down"


@pytest.fixture(scope="module")
def real_layer():
    """One real SmolLM2 kernel, its MXINT4 error and calibration scale from two Austen sentences."""
    from jaxml.models.llama import load_smollm2
    model, params, tok = load_smollm2()
    ids = np.asarray([tok.encode("It is a truth universally acknowledged, that a single man in possession of a good")[:16],
                      tok.encode("Sir Walter Elliot, of Kellynch Hall, in Somersetshire, was a man who, for his own")[:16]])
    batch = ((jnp.asarray(ids), jnp.broadcast_to(jnp.arange(16), (2, 16))), {})
    stats = calibration.calibrate(model, params, [batch])
    w = np.asarray(calibration.linear_kernels(params)[LAYER], np.float32)
    e = w - np.asarray(mxint(jnp.asarray(w), 4, 16, axis=0))
    return w, e, stats[LAYER]


def test_reconstruction_error_decreases_with_rank(real_layer):
    _, e, stats = real_layer
    s = activation_scale(stats.mean_abs_max)
    for fmt in (NONE, QuantFormat("mxint", 8, 16)):
        for scale in (None, s):
            errs = [np.linalg.norm(e - (lr.a @ lr.b if k else 0))
                    for k in (0, 4, 8, 16, 32, 64) for lr in [decompose(e, k, scale=scale, a_format=fmt, b_format=fmt)]]
            assert all(b < a for a, b in zip(errs, errs[1:])), errs


def test_scaled_spectrum_decays_faster(real_layer):
    _, e, stats = real_layer
    s = activation_scale(stats.mean_abs_max)
    energy = lambda m: np.cumsum(np.linalg.svd(m, compute_uv=False) ** 2)[31] / np.sum(m ** 2)
    assert energy(s[:, None] * e) > energy(e) + 0.05


def test_l2qer_minimises_the_activation_weighted_error(real_layer):
    """Eckart-Young on diag(s) E: for exact factors L2QER's scaled error is the smallest possible."""
    _, e, stats = real_layer
    s = activation_scale(stats.mean_abs_max)
    plain = decompose(e, 16, a_format=NONE, b_format=NONE)
    scaled = decompose(e, 16, scale=s, a_format=NONE, b_format=NONE)
    weighted = lambda lr: np.linalg.norm(s[:, None] * (e - lr.a @ lr.b))
    assert weighted(scaled) < weighted(plain)
    sv = np.linalg.svd(s[:, None] * e, compute_uv=False)
    np.testing.assert_allclose(weighted(scaled), np.sqrt(np.sum(sv[16:] ** 2)), rtol=1e-3)


def test_activation_scale_normalisation():
    s = activation_scale(np.asarray([0.0, 1e-6, 0.5, 4.0]))
    assert s.min() > 0
    np.testing.assert_allclose(np.sqrt(s.min() * s.max()), 1.0)
    np.testing.assert_allclose(s[0], s[1])   # both clamped at 1e-4


def test_average_bits():
    # 576 x 1536 MXINT4 (4 + 8/16) plus rank 32 in MXINT8 (8.5 bits): (576*1536*4.5 + (576+1536)*32*8.5) / (576*1536)
    expected = (576 * 1536 * 4.5 + (576 + 1536) * 32 * 8.5) / (576 * 1536)
    assert average_bits((576, 1536), QuantFormat("mxint", 4, 16), 32) == pytest.approx(expected)
    assert average_bits((576, 1536), QuantFormat("mxint", 4, 16), 0) == 4.5


@pytest.fixture(scope="module")
def tiny():
    config = LlamaConfig(vocab_size=50, hidden=32, layers=2, heads=4, kv_heads=2, mlp_hidden=48, max_len=64)
    model = Llama(config)
    params = model.init(jax.random.PRNGKey(0), jnp.zeros((1, 4), jnp.int32), jnp.zeros((1, 4), jnp.int32))["params"]
    ids = jnp.asarray(np.random.default_rng(0).integers(0, 50, size=(2, 12)))
    args = (ids, jnp.broadcast_to(jnp.arange(12), (2, 12)))
    stats = calibration.calibrate(model, params, [(args, {})], hessian=True)
    return model, params, args, stats


def test_quantize_model_layouts(tiny):
    model, params, args, stats = tiny
    fp, report = quantize_model(params, stats, Method("fp"))
    assert report.bits_per_weight == 32.0
    q, report = quantize_model(params, stats, Method("l2qer", w_bits=4, rank=8))
    k = q["layers_0"]["mlp"]["up"]
    assert k["lowrank_a"].shape == (32, 8) and k["lowrank_b"].shape == (8, 48)
    w = np.asarray(params["layers_0"]["mlp"]["up"]["kernel"])
    np.testing.assert_array_equal(k["kernel"], np.asarray(mxint(jnp.asarray(w), 4, 16, axis=0)))
    assert report.bits_per_weight > 4.5


def test_quantized_model_computes_lqer_pattern(tiny):
    """Layer by layer, Linear with low-rank params under quantized_ops computes
    Q(X) W_q + Q(Q(Q(X) A) B); checked on the model's first q projection."""
    model, params, args, stats = tiny
    act = QuantFormat("mxint", 8, 16)
    q, _ = quantize_model(params, stats, Method("lqer", w_bits=4, rank=8))
    model_q = model.clone(ops=quantized_ops(act))
    _, state = model_q.apply({"params": q}, *args, mutable=["linear_inputs"])
    x = state["linear_inputs"]["layers_0"]["attn"]["q"]["x"][0]
    layer = q["layers_0"]["attn"]["q"]
    expected = (act(x, axis=-1) @ layer["kernel"]
                + act(act(act(x, axis=-1) @ layer["lowrank_a"], axis=-1) @ layer["lowrank_b"], axis=-1))
    from jaxml.nn.layers import Linear
    got = Linear(32, use_bias=False, ops=model_q.ops).apply({"params": layer}, x)
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)
    logits_q = model_q.apply({"params": q}, *args)[0]
    logits = model.apply({"params": params}, *args)[0]
    assert np.isfinite(np.asarray(logits_q)).all()
    assert 0 < float(jnp.abs(logits_q - logits).max()) < float(jnp.abs(logits).max())


def test_bad_inputs():
    with pytest.raises(ValueError, match="method 'int4'"):
        Method("int4")
    with pytest.raises(ValueError, match="rank=700"):
        decompose(np.zeros((8, 4)), 700)
    with pytest.raises(ValueError, match="needs calibration"):
        quantize_model({"l": {"kernel": jnp.ones((16, 4))}}, None, Method("l2qer", rank=2))
