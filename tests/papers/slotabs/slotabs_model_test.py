"""Slot attention is permutation-equivariant in its slots; the abstractor sees object features only
through query-key products; shapes and errors of the autoencoder."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxml.papers.slotabs.abstractor import Abstractor, TemporalContextNorm, score_candidates
from jaxml.papers.slotabs.slot_attention import SlotAttention, SlotAutoencoder, position_grid


def test_slot_attention_is_permutation_equivariant_in_the_slots():
    rng = np.random.default_rng(0)
    inputs = jnp.asarray(rng.standard_normal((2, 20, 8)), jnp.float32)
    slots = jnp.asarray(rng.standard_normal((2, 5, 16)), jnp.float32)
    module = SlotAttention(dim=16, iters=3)
    params = module.init(jax.random.PRNGKey(0), inputs, slots)
    out, attn = module.apply(params, inputs, slots)
    perm = np.array([3, 0, 4, 1, 2])
    out_p, attn_p = module.apply(params, inputs, slots[:, perm])
    np.testing.assert_allclose(np.asarray(out_p), np.asarray(out)[:, perm], atol=1e-5)
    np.testing.assert_allclose(np.asarray(attn_p), np.asarray(attn)[:, perm], atol=1e-6)
    # the attention is a softmax over slots renormalised into a mean over the inputs
    np.testing.assert_allclose(np.asarray(attn).sum(axis=2), 1.0, atol=1e-5)


def test_autoencoder_shapes_masks_and_factorised_slots():
    ae = SlotAutoencoder(num_slots=3, dim=8, resolution=(16, 16), channels=1, iters=2)
    images = jnp.asarray(np.random.default_rng(1).uniform(size=(2, 16, 16, 1)), jnp.float32)
    params = ae.init({"params": jax.random.PRNGKey(0), "slots": jax.random.PRNGKey(1)}, images)["params"]
    out = ae.apply({"params": params}, images, rngs={"slots": jax.random.PRNGKey(2)})
    assert out["recon"].shape == (2, 16, 16, 1) and out["masks"].shape == (2, 3, 16, 16, 1)
    np.testing.assert_allclose(np.asarray(out["masks"]).sum(axis=1), 1.0, atol=1e-5)
    assert out["z"].shape == out["m"].shape == (2, 3, 8)
    # m_k is the attention-weighted mean of the projected grid: inside the grid's convex hull per feature
    dense = params["enc_pos"]["grid"]
    pos = (np.asarray(position_grid(16, 16)) @ np.asarray(dense["kernel"]) + np.asarray(dense["bias"])).reshape(-1, 8)
    m = np.asarray(out["m"])
    assert np.all(m >= pos.min(0) - 1e-5) and np.all(m <= pos.max(0) + 1e-5)
    with pytest.raises(ValueError, match="resolution must be square"):
        SlotAutoencoder(resolution=(24, 24)).init({"params": jax.random.PRNGKey(0), "slots": jax.random.PRNGKey(1)},
                                                  jnp.zeros((1, 24, 24, 1)))


def test_temporal_context_norm_normalises_over_the_sequence():
    x = jnp.asarray(np.random.default_rng(2).standard_normal((3, 7, 5)) * 4 + 2, jnp.float32)
    y = TemporalContextNorm().apply({"params": {"gamma": jnp.ones(5), "beta": jnp.zeros(5)}}, x)
    np.testing.assert_allclose(np.asarray(y).mean(1), 0.0, atol=1e-5)
    np.testing.assert_allclose(np.asarray(y).std(1), 1.0, atol=1e-4)


def _abstractor_inputs(seed=3):
    rng = np.random.default_rng(seed)
    return (jnp.asarray(rng.standard_normal((4, 12, 10)), jnp.float32),
            jnp.asarray(rng.standard_normal((4, 12, 10)), jnp.float32))


def test_abstractor_sees_objects_only_through_query_key_products():
    z, m = _abstractor_inputs()
    model = Abstractor(dim=16, depth=2, heads=2, head_dim=8, mlp=32)
    params = model.init(jax.random.PRNGKey(0), z, m)["params"]
    rca = params["layer0"]["rca"]
    np.testing.assert_array_equal(np.asarray(rca["q"]["kernel"]), np.asarray(rca["k"]["kernel"]))   # tied init
    score = np.asarray(model.apply({"params": params}, z, m))
    # z -> -z flips every normalised feature (TCN and LayerNorm are odd at init) and hence q and k, and
    # leaves every product q k^T: the score is unchanged
    np.testing.assert_allclose(np.asarray(model.apply({"params": params}, -z, m)), score, rtol=1e-4, atol=1e-5)
    # a change of the relations between objects does change it (objects 0 and 1 made identical)
    z_same = z.at[:, 1].set(z[:, 0])
    assert np.max(np.abs(np.asarray(model.apply({"params": params}, z_same, m)) - score)) > 1e-3
    # contrast: a model that reads the features directly is not invariant to z -> -z
    w = jnp.asarray(np.random.default_rng(4).standard_normal(10), jnp.float32)
    direct = lambda zz: jnp.tanh(zz @ w).mean(1)                       # noqa: E731
    assert np.max(np.abs(np.asarray(direct(-z) - direct(z)))) > 1e-2


def test_score_candidates_shapes_and_bad_input():
    z, m = _abstractor_inputs()
    model = Abstractor(dim=16, depth=1, heads=2, head_dim=8, mlp=32)
    params = model.init(jax.random.PRNGKey(0), z, m)["params"]
    logits = score_candidates(model, params, z.reshape(2, 2, 12, 10), m.reshape(2, 2, 12, 10))
    np.testing.assert_allclose(np.asarray(logits).ravel(), np.asarray(model.apply({"params": params}, z, m)), rtol=1e-5)
    with pytest.raises(ValueError, match="same batch and tokens"):
        model.apply({"params": params}, z, m[:, :5])
