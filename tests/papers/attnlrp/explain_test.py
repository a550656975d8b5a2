"""The efficient AttnLRP (input x modified gradient) against the explicit rule-by-rule reference."""

import dataclasses
import sys
import pathlib

import jax
import jax.numpy as jnp
import numpy as np
import pytest

sys.path.insert(0, str(pathlib.Path(__file__).parent))
from explicit_reference import ExplicitLlama  # noqa: E402

from jaxml.models.llama import Llama, LlamaConfig  # noqa: E402
from jaxml.papers.attnlrp import explain  # noqa: E402

CONFIG = LlamaConfig(vocab_size=50, hidden=32, layers=3, heads=4, kv_heads=2, mlp_hidden=48, max_len=64,
                     rope_theta=100.0)


@pytest.fixture(scope="module")
def tiny():
    model = Llama(CONFIG)
    params = jax.jit(model.init)(jax.random.PRNGKey(1), jnp.zeros((1, 4), jnp.int32), jnp.zeros((1, 4), jnp.int32))["params"]
    params = jax.tree_util.tree_map(lambda p: p * 2.0, params)
    return model, params


SEQUENCES = [list(np.random.default_rng(seed).integers(0, 50, size=int(np.random.default_rng(seed).integers(6, 14))))
             for seed in range(5)]


@pytest.fixture(scope="module")
def explained(tiny):
    return _explain_all(*tiny)


def _explain_all(model, params):
    """The 5 sequences right-padded into one batch (one compile; causal attention: the padding after
    an explained position cannot change it), and the explicit reference per sequence."""
    lengths = np.asarray([len(s) for s in SEQUENCES])
    ids = np.zeros((len(SEQUENCES), lengths.max()), np.int32)
    for i, seq in enumerate(SEQUENCES):
        ids[i, :len(seq)] = seq
    positions = jnp.broadcast_to(jnp.arange(ids.shape[1]), ids.shape)
    logits = jax.jit(lambda p, t, q: model.apply({"params": p}, t, q)[0])(params, jnp.asarray(ids), positions)
    target = np.asarray(jnp.argmax(logits[np.arange(len(ids)), lengths - 1], -1))
    expl = explain.relevance(model, params, (jnp.asarray(ids), positions), target=target, position=lengths - 1,
                             rules="attnlrp")
    reference = [ExplicitLlama(CONFIG, params).relevance(seq, int(t), len(seq) - 1)
                 for seq, t in zip(SEQUENCES, target)]
    return expl, reference


@pytest.mark.parametrize("index", range(len(SEQUENCES)))
def test_efficient_equals_explicit_per_example(explained, index):
    """float32 modified gradients against the float64 rule-by-rule propagation. Max error relative
    to the largest |relevance| of the sequence, measured over the 5 sequences with these params and
    with the (rounding-different) params of an eager init: 6.7e-7 to 8.1e-6 per token, 2.9e-7 to
    3.9e-6 per (token, feature); the target logit within 5e-7. Asserted at 2e-5, 1e-5 and 2e-6 (float32
    rounding through 3 layers; a wrong rule, e.g. dv/4 instead of dv/2, is off by tens of percent)."""
    expl, reference = explained
    r_explicit, logit, _ = reference[index]
    n = len(SEQUENCES[index])
    np.testing.assert_allclose(expl.target[index], logit, rtol=2e-6)
    ours = expl.relevance["embeddings"][index]
    np.testing.assert_array_equal(ours[n:], 0.0)       # the padding after the explained token
    per_token, per_token_ref = ours[:n].sum(-1), r_explicit.sum(-1)
    err_token = np.abs(per_token - per_token_ref).max() / np.abs(per_token_ref).max()
    err_feature = np.abs(ours[:n] - r_explicit).max() / np.abs(r_explicit).max()
    print(f"\n[{index}] len {n}: relative max error per token {err_token:.2e}, per feature {err_feature:.2e}")
    assert err_token < 2e-5 and err_feature < 1e-5, (err_token, err_feature)


def test_cp_lrp_conserves_on_a_model_without_biases(tiny):
    """CP-LRP treats attention weights and the gate as constants: every step is then a conservative
    rule (Llama has no biases), so the input relevance sums to the target logit."""
    model, params = tiny
    ids = jnp.asarray([[3, 14, 15, 9, 26, 5, 35]])
    expl = explain.relevance(model, params, (ids, jnp.arange(7)[None]), target=[7], position=[6], rules="cp_lrp",
                             points=("embeddings", "residual_0", "residual_1"))
    for point in ("embeddings", "residual_0", "residual_1"):
        np.testing.assert_allclose(expl.conservation(point), 1.0, rtol=1e-4)


def test_latent_points_and_batch_independence(tiny):
    model, params = tiny
    ids = jnp.asarray([[3, 14, 15, 9, 26], [5, 35, 8, 9, 7]])
    pos = jnp.broadcast_to(jnp.arange(5), (2, 5))
    both = explain.relevance(model, params, (ids, pos), target=[1, 2], position=[4, 3], points=("embeddings", "residual_1"))
    one = explain.relevance(model, params, (ids[1:], pos[1:]), target=[2], position=[3], points=("embeddings", "residual_1"))
    np.testing.assert_allclose(both.relevance["embeddings"][1], one.relevance["embeddings"][0], atol=1e-5)
    assert both.relevance["residual_1"].shape == (2, 5, 32)
    # Tokens after the explained position get no relevance (causal attention).
    np.testing.assert_array_equal(both.per_token("embeddings")[1, 4:], 0.0)


def test_bad_points_and_targets(tiny):
    model, params = tiny
    ids = jnp.asarray([[3, 14, 15]])
    with pytest.raises(ValueError, match="unknown explanation point"):
        explain.relevance(model, params, (ids, jnp.arange(3)[None]), target=[1], position=[2], points=("nope",))
    with pytest.raises(ValueError, match="pass position="):
        explain.relevance(model, params, (ids, jnp.arange(3)[None]), target=[1])


@pytest.mark.slow   # the kernel itself is tested in tests/kernels/attention_lrp (default suite)
def test_relevance_through_the_pallas_kernel_equals_the_xla_path(tiny):
    """AttnLRP with the flash-attention kernel (interpret mode on CPU) in place of XLA attention."""
    from kernels.attention_lrp.api import as_attention_fn
    from jaxml.papers.attnlrp.rules import attnlrp_ops

    model, params = tiny
    ids = jnp.asarray([[3, 14, 15, 9, 26, 5, 35, 8, 9, 7, 9]])
    args = (ids, jnp.arange(11)[None])
    xla = explain.relevance(model, params, args, target=[4], position=[10], rules="attnlrp")
    # The rule wraps the kernel's exact-gradient attention...
    wrapped = explain.relevance(model, params, args, target=[4], position=[10],
                                rules=attnlrp_ops(attention=as_attention_fn("pallas")))
    # ...or the kernel applies the AttnLRP scaling in its own backward.
    lrp_kernel = dataclasses.replace(attnlrp_ops(), attention=as_attention_fn("pallas", lrp=True))
    fused = explain.relevance(model, params, args, target=[4], position=[10], rules=lrp_kernel)
    for other in (wrapped, fused):
        np.testing.assert_allclose(other.relevance["embeddings"], xla.relevance["embeddings"], rtol=1e-4, atol=1e-6)
