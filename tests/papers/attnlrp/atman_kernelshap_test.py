"""AtMan and KernelSHAP against hand-computed values: a numpy softmax with a scaled score column, the
exact Shapley values by enumeration, and an additive value function."""

import dataclasses
import itertools
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxml.models.llama import LlamaConfig
from jaxml.nn.attention import dot_product_attention
from jaxml.papers.attnlrp import baselines, explain, faithfulness
from tests.papers.attnlrp.tiny_llama import tiny_llama

CONFIG = LlamaConfig(vocab_size=30, hidden=16, layers=2, heads=2, kv_heads=1, mlp_hidden=24, max_len=16,
                     rope_theta=100.0)


@pytest.fixture(scope="module")
def tiny():
    return tiny_llama(CONFIG, seed=5)


def test_suppressed_attention_scales_one_score_column():
    rng = np.random.default_rng(0)
    q, k, v = (rng.normal(size=(1, 3, 2, 4)).astype(np.float32) for _ in range(3))
    factors = np.array([[1.0, 0.1, 1.0]], np.float32)
    got = np.asarray(baselines.suppressed_key_attention(jnp.asarray(q), jnp.asarray(k), jnp.asarray(v),
                                                        factors=jnp.asarray(factors)))
    want = np.zeros_like(q)
    for h in range(2):
        scores = (q[0, :, h] @ k[0, :, h].T) / 2.0 * factors[0][None]        # scale 1/sqrt(4)
        w = np.exp(scores - scores.max(-1, keepdims=True))
        w /= w.sum(-1, keepdims=True)
        want[0, :, h] = w @ v[0, :, h]
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_atman_is_zero_without_suppression_and_batches_consistently(tiny):
    model, params = tiny
    tokens = np.random.default_rng(1).integers(0, 30, (2, 5))
    args = (tokens, np.broadcast_to(np.arange(5), (2, 5)))
    target, position = np.array([3, 7]), np.array([4, 4])
    assert (baselines.atman(model, params, args, target=target, position=position, suppression=0.0) == 0).all()
    both = baselines.atman(model, params, args, target=target, position=position)
    one = baselines.atman(model, params, tuple(a[1:] for a in args), target=target[1:], position=position[1:])
    np.testing.assert_allclose(both[1], one[0], rtol=1e-5, atol=1e-6)
    assert np.abs(both).max() > 0
    # full suppression of one key = that key's scores set to 0 = the key zeroed: check each token
    full = baselines.atman(model, params, args, target=target, position=position, suppression=1.0)
    plain = model.apply({"params": params}, *map(jnp.asarray, args))[0]
    ce = lambda lg: -np.asarray(jax.nn.log_softmax(lg[np.arange(2), position], -1))[np.arange(2), target]
    for j in range(5):
        ops = dataclasses.replace(model.ops, attention=lambda q, k, v, mask=None, j=j: dot_product_attention(
            q, k.at[:, j].set(0.0), v, mask))
        logits = jax.jit(lambda p, a, m=model.clone(ops=ops): m.apply({"params": p}, *a)[0])(params, tuple(map(jnp.asarray, args)))
        np.testing.assert_allclose(full[:, j], ce(logits) - ce(plain), rtol=1e-4, atol=2e-5)
    assert np.abs(full).max() > 1.0


@pytest.mark.parametrize("fixed", [0, 1], ids=["all-players", "first-token-fixed"])
def test_kernel_shap_with_every_coalition_equals_exact_shapley_values(tiny, fixed):
    """`fixed` leading tokens are not players (a BOS the test never removes): they stay in every
    coalition and get 0; the players' values are the exact Shapley values of that game."""
    model, params = tiny
    n = 4
    tokens = np.random.default_rng(2).integers(0, 30, (1, n + fixed))
    args = (jnp.asarray(tokens), jnp.arange(n + fixed)[None])
    target, position = np.array([5]), np.array([n + fixed - 1])
    values = explain.relevance(model, params, args, target=target, position=position, rules="gradient").values["embeddings"]
    subsets = list(itertools.product([False, True], repeat=n))
    removed = np.concatenate([np.zeros((len(subsets), fixed), bool), ~np.asarray(subsets)], 1)
    f = faithfulness.replaced_logits(model, params, args, values, np.zeros_like(values), np.zeros(len(subsets), int),
                                     removed, target=target, position=position, point="embeddings", model_kwargs=None,
                                     logits_fn=explain.default_logits, chunk=16)
    v = {s: float(x) for s, x in zip(subsets, f)}
    exact = np.zeros(n)
    for i in range(n):
        for s in subsets:
            if s[i]:
                continue
            size = sum(s)
            with_i = tuple(True if j == i else s[j] for j in range(n))
            exact[i] += math.factorial(size) * math.factorial(n - size - 1) / math.factorial(n) * (v[with_i] - v[s])
    features = np.arange(n + fixed)[None] >= fixed
    got = baselines.kernel_shap(model, params, args, values, target=target, position=position, budget=2 ** n,
                                features=features)
    assert (got[0, :fixed] == 0).all()
    np.testing.assert_allclose(got[0, fixed:], exact, rtol=1e-4, atol=1e-5 * np.abs(exact).max())


def test_kernel_shap_recovers_an_additive_function_from_samples():
    rng = np.random.default_rng(3)
    m, w, b = 9, rng.normal(size=9), 0.7
    masks, weights = baselines.coalitions(m, 40, seed=1)
    assert len(masks) == 40 and all((masks[i] == ~masks[i + 1]).all() for i in range(0, 40, 2))
    phi = baselines.kernel_shap_solve(masks, masks @ w + b, b, w.sum() + b, weights)
    np.testing.assert_allclose(phi, w, atol=1e-9)
    all_masks, all_w = baselines.coalitions(4, 100)
    assert len(all_masks) == 14 and all_w[0] == pytest.approx(3 / (4 * 1 * 3))


def test_errors():
    with pytest.raises(ValueError, match="at least 2 features"):
        baselines.coalitions(1, 10)
    with pytest.raises(ValueError, match="suppression"):
        baselines.atman(None, None, (np.zeros((1, 3), int),), target=[0], position=[2], suppression=1.5)
