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
    params = model.init(jax.random.PRNGKey(1), jnp.zeros((1, 4), jnp.int32), jnp.zeros((1, 4), jnp.int32))["params"]
    params = jax.tree_util.tree_map(lambda p: p * 2.0, params)
    return model, params


def _cos(a, b):
    return float(np.dot(a, b) / (np.linalg.norm(a) * np.linalg.norm(b)))


@pytest.mark.parametrize("seed", range(5))
def test_efficient_equals_explicit_per_example(tiny, seed):
    model, params = tiny
    rng = np.random.default_rng(seed)
    ids = list(rng.integers(0, 50, size=int(rng.integers(6, 14))))
    T = len(ids)
    logits = model.apply({"params": params}, jnp.asarray([ids]), jnp.arange(T)[None])[0]
    target = int(jnp.argmax(logits[0, -1]))
    expl = explain.relevance(model, params, (jnp.asarray([ids]), jnp.arange(T)[None]), target=[target],
                             position=[T - 1], rules="attnlrp")
    r_explicit, logit, _ = ExplicitLlama(CONFIG, params).relevance(ids, target, T - 1)
    np.testing.assert_allclose(expl.target[0], logit, rtol=1e-4)
    per_token_eff, per_token_exp = expl.per_token("embeddings")[0], r_explicit.sum(-1)
    assert _cos(per_token_eff, per_token_exp) > 0.99, (per_token_eff, per_token_exp)
    assert _cos(expl.relevance["embeddings"][0].ravel(), r_explicit.ravel()) > 0.99


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
