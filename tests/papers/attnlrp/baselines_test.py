"""Baselines and the perturbation test on a tiny Llama, against analytic properties."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxml.models.llama import Llama, LlamaConfig
from jaxml.papers.attnlrp import baselines, explain, faithfulness

CONFIG = LlamaConfig(vocab_size=40, hidden=24, layers=2, heads=4, kv_heads=2, mlp_hidden=32, max_len=32,
                     rope_theta=100.0)


@pytest.fixture(scope="module")
def tiny():
    model = Llama(CONFIG)
    params = jax.jit(model.init)(jax.random.PRNGKey(2), jnp.zeros((1, 4), jnp.int32), jnp.zeros((1, 4), jnp.int32))["params"]
    ids = jnp.asarray([[3, 14, 15, 9, 26, 5, 35, 8], [1, 2, 3, 4, 5, 6, 7, 8]])
    return model, params, (ids, jnp.broadcast_to(jnp.arange(8), (2, 8)))


def _logit_at(model, params, args, scale, target, position):
    """The target logit with the embeddings scaled (a direct forward pass)."""
    emb = model.apply({"params": params}, *args, mutable=["intermediates"])[1]["intermediates"]["embeddings"][0]
    out = model.apply({"params": params, "perturbations": {"embeddings": (scale - 1.0) * emb,
                                                           **{f"residual_{i}": jnp.zeros_like(emb) for i in range(2)}}},
                      *args)[0]
    return np.asarray(out[np.arange(2), position, target])


def test_integrated_gradients_is_the_midpoint_riemann_sum(tiny):
    """Against IG written directly from its definition with jax.grad of a plain function."""
    model, params, args = tiny
    target, position = np.asarray([7, 11]), np.asarray([7, 5])
    ig = baselines.integrated_gradients(model, params, args, target=target, position=position, steps=16, chunk=4)
    emb = model.apply({"params": params}, *args, mutable=["intermediates"])[1]["intermediates"]["embeddings"][0]
    zeros = jnp.zeros_like(emb)

    def f(e):   # the summed target logits with the embeddings replaced by e
        pert = {"embeddings": e - emb, "residual_0": zeros, "residual_1": zeros}
        out = model.apply({"params": params, "perturbations": pert}, *args)[0]
        return out[np.arange(2), position, target].sum()

    alphas = (np.arange(16) + 0.5) / 16
    grads = jax.jit(jax.vmap(jax.grad(f)))(jnp.asarray(alphas, jnp.float32)[:, None, None, None] * emb)
    expected = emb * grads.sum(0) / 16
    np.testing.assert_allclose(ig, expected, rtol=1e-4, atol=1e-6)
    # chunk=1: one call of the plain gradient program per path point, the same sum.
    ig1 = baselines.integrated_gradients(model, params, args, target=target, position=position, steps=16, chunk=1)
    np.testing.assert_allclose(ig1, expected, rtol=1e-4, atol=1e-6)


def test_smoothgrad_without_noise_is_gradient_times_input(tiny):
    model, params, args = tiny
    target, position = np.asarray([7, 11]), np.asarray([7, 5])
    sg = baselines.smoothgrad(model, params, args, target=target, position=position, samples=4, noise=0.0, chunk=4)
    gi = explain.relevance(model, params, args, target=target, position=position, rules="gradient")
    np.testing.assert_allclose(sg, gi.relevance["embeddings"], rtol=1e-5, atol=1e-6)


def test_attention_rollout_rows_are_distributions(tiny):
    model, params, args = tiny
    r = baselines.attention_rollout(model, params, args, position=np.asarray([7, 3]))
    np.testing.assert_allclose(r.sum(-1), 1.0, rtol=1e-5)
    assert (r >= 0).all()
    np.testing.assert_allclose(r[1, 4:], 0.0, atol=1e-7)    # causal: nothing after position 3


def test_experiment_dispatch_runs_each_baseline(tiny):
    """`experiments.explain_scores` (what the experiments call) gives each baseline's own result."""
    from types import SimpleNamespace

    from jaxml.papers.attnlrp.experiments import explain_scores

    model, params, args = tiny
    target, position = np.asarray([7, 11]), np.asarray([7, 5])
    config = SimpleNamespace(ig_steps=16, ig_chunk=4, smoothgrad_samples=4, smoothgrad_noise=0.0, gamma=0.25,
                             atman_suppression=0.9, shap_budget=20)
    scores = lambda m: explain_scores(m, model, params, args, {}, target, position, config, shape=(2, 8))
    np.testing.assert_allclose(scores("smoothgrad"), scores("gradient_x_input"), rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(scores("attention_rollout"),
                                  baselines.attention_rollout(model, params, args, position=position))
    np.testing.assert_allclose(scores("integrated_gradients"), baselines.integrated_gradients(
        model, params, args, target=target, position=position, steps=16, chunk=4).sum(-1), rtol=1e-6)
    np.testing.assert_array_equal(scores("random"), baselines.random_relevance((2, 8), seed=0))
    np.testing.assert_array_equal(scores("atman"), baselines.atman(model, params, args, target=target,
                                                                   position=position, suppression=0.9))
    values = explain.relevance(model, params, args, target=target, position=position).values["embeddings"]
    shap = explain_scores("kernel_shap", model, params, args, {}, target, position, config, values=values)
    np.testing.assert_array_equal(shap, baselines.kernel_shap(model, params, args, values, target=target,
                                                              position=position, budget=20))
    with pytest.raises(ValueError, match="unknown method"):
        scores("lime")


def test_removal_order():
    scores = np.asarray([0.5, -1.0, 2.0, 0.5, 9.0])
    valid = np.asarray([True, True, True, True, False])
    np.testing.assert_array_equal(faithfulness.removal_order(scores, valid, True), [2, 0, 3, 1])
    np.testing.assert_array_equal(faithfulness.removal_order(scores, valid, False), [1, 0, 3, 2])


def test_curves_start_at_the_logit_and_end_with_everything_removed(tiny):
    model, params, args = tiny
    target, position = np.asarray([7, 11]), np.asarray([7, 7])
    expl = explain.relevance(model, params, args, target=target, position=position)
    valid = np.ones((2, 8), bool)
    c = faithfulness.perturbation_curves(model, params, args, expl.values["embeddings"], expl.per_token("embeddings"),
                                         valid, target=target, position=position, fractions=np.linspace(0, 1, 5),
                                         chunk=16)
    np.testing.assert_allclose(c["morf"][:, 0], expl.target, rtol=1e-5)
    np.testing.assert_allclose(c["morf"][:, -1], c["lerf"][:, -1], rtol=1e-5)   # both: all zeroed
    np.testing.assert_allclose(c["morf"][:, -1], _logit_at(model, params, args, 0.0, target, position), rtol=1e-4, atol=1e-5)


def test_curves_for_several_methods_share_the_common_rows(tiny, monkeypatch):
    """Each distinct perturbed input is evaluated once, and the curves equal the one-method ones."""
    model, params, args = tiny
    target, position = np.asarray([7, 11]), np.asarray([7, 7])
    expl = explain.relevance(model, params, args, target=target, position=position)
    valid = np.ones((2, 8), bool)
    up = np.tile(np.arange(8.0), (2, 1))
    scores = {"up": up, "down": -up}   # MoRF of one is LeRF of the other
    rows = []
    real = faithfulness.replaced_logits
    monkeypatch.setattr(faithfulness, "replaced_logits",
                        lambda *a, **k: rows.append(len(a[5])) or real(*a, **k))
    kw = dict(target=target, position=position, fractions=np.linspace(0, 1, 5), chunk=16)
    both = faithfulness.curves_for_methods(model, params, args, expl.values["embeddings"], scores, valid, **kw)
    # Per example: nothing / everything removed (2) + 3 inner steps of "up" MoRF and of "up" LeRF
    # (= "down" LeRF and MoRF): 8 rows, against 2 methods x 2 orders x 5 steps = 20 without sharing.
    assert rows == [2 * 8]
    for name, s in scores.items():
        one = faithfulness.perturbation_curves(model, params, args, expl.values["embeddings"], s, valid, **kw)
        for order in ("morf", "lerf"):
            np.testing.assert_allclose(both[name][order], one[order], rtol=1e-6)
    np.testing.assert_allclose(both["up"]["morf"], both["down"]["lerf"], rtol=1e-6)


def test_curves_with_a_replacement_value_end_at_the_replaced_input(tiny):
    model, params, args = tiny
    target, position = np.asarray([7, 11]), np.asarray([7, 7])
    expl = explain.relevance(model, params, args, target=target, position=position)
    fill = np.full(expl.values["embeddings"].shape[-1], 0.3, np.float32)
    c = faithfulness.perturbation_curves(model, params, args, expl.values["embeddings"], np.ones((2, 8)),
                                         np.ones((2, 8), bool), target=target, position=position,
                                         fractions=np.linspace(0, 1, 3), chunk=8)
    r = faithfulness.curves_for_methods(model, params, args, expl.values["embeddings"], {"m": np.ones((2, 8))},
                                        np.ones((2, 8), bool), target=target, position=position,
                                        fractions=np.linspace(0, 1, 3), chunk=8, replacement=fill)["m"]
    np.testing.assert_allclose(r["morf"][:, 0], c["morf"][:, 0], rtol=1e-6)       # nothing removed: the same
    emb = np.broadcast_to(fill, expl.values["embeddings"].shape)
    shift = emb - expl.values["embeddings"]
    want = np.asarray(faithfulness._forward(model, "embeddings", explain.default_logits)(
        params, args, {}, jnp.asarray(target), jnp.asarray(position),
        explain.perturbation_spec(model, params, args, {}), jnp.asarray(shift)))
    np.testing.assert_allclose(r["morf"][:, -1], want, rtol=1e-5, atol=1e-5)      # everything replaced by `fill`
    assert not np.allclose(r["morf"][:, -1], c["morf"][:, -1])
