"""DiPmark reweight (exact unbiasedness), KGW, the repeated-context rule and the processor."""

import itertools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxml.papers.dipmark import keys, reweight


def _reference(p, alpha):
    """F' = max(F - alpha, 0) + max(F - (1 - alpha), 0) in float64 (p in permuted order)."""
    f = np.cumsum(p)
    fp = np.maximum(f - alpha, 0) + np.maximum(f - (1 - alpha), 0)
    return np.diff(np.concatenate([[0.0], fp]))


@pytest.mark.parametrize("alpha", [0.0, 0.1, 0.25, 0.4, 0.45, 0.5])
def test_mean_over_all_permutations_is_the_original_distribution(alpha):
    v = 5
    rng = np.random.default_rng(int(alpha * 100))
    probs = rng.dirichlet(np.ones(v) * 0.7, size=20).astype(np.float32)
    orders = np.array(list(itertools.permutations(range(v))), np.int32)    # all 120
    p = np.broadcast_to(probs[:, None], (20, len(orders), v))
    new = np.asarray(reweight.dipmark_reweight(jnp.asarray(p), jnp.asarray(np.broadcast_to(orders, p.shape)), alpha))
    np.testing.assert_allclose(new.sum(-1), 1.0, atol=3e-7)
    np.testing.assert_allclose(new.mean(axis=1), probs, atol=1e-6)
    # and each reweight is Eq. 2 exactly (float64 reference, permuted order)
    for i in (0, 7):
        for j in (0, 33, 119):
            ref = _reference(probs[i][orders[j]].astype(np.float64), alpha)
            np.testing.assert_allclose(new[i, j][orders[j]], ref, atol=2e-7)


def test_alpha_half_is_the_gamma_reweight_and_alpha_zero_is_identity():
    rng = np.random.default_rng(1)
    probs = rng.dirichlet(np.ones(7), size=4)
    for q in probs:
        f = np.cumsum(q)
        gamma = np.diff(np.concatenate([[0.0], np.maximum(2 * f - 1, 0)]))   # Hu et al.'s gamma-reweight
        lw = np.asarray(reweight.dipmark_log_weights(jnp.asarray(q[None], jnp.float32), 0.5))[0]
        np.testing.assert_allclose(np.exp(lw) * q, gamma, atol=2e-7)
        lw0 = np.asarray(reweight.dipmark_log_weights(jnp.asarray(q[None], jnp.float32), 0.0))[0]
        np.testing.assert_allclose(lw0, 0.0, atol=1e-7)


def test_large_vocabulary_reweight_matches_float64_and_has_at_most_two_fractional_tokens():
    rng = np.random.default_rng(2)
    p = rng.dirichlet(np.full(49152, 0.02), size=3).astype(np.float32)
    for alpha in (0.3, 0.45):
        lw = np.asarray(reweight.dipmark_log_weights(jnp.asarray(p), alpha))
        w = np.exp(lw)
        for row, q in zip(w, p):
            np.testing.assert_allclose(row * q, _reference(q.astype(np.float64), alpha), atol=2e-7)
            assert ((row > 1e-6) & (np.abs(row - 1) > 1e-6) & (np.abs(row - 2) > 1e-6)).sum() <= 2


def test_key_family_average_over_a_key_and_its_twin_is_exact():
    """Seeds 2m and 2m+1 give reversed permutations; their reweights average to P (the proof's pairing)."""
    vocab = 97
    rng = np.random.default_rng(3)
    logits = jnp.asarray(rng.standard_normal((8, vocab)) * 2, jnp.float32)
    seeds = jnp.asarray(rng.integers(0, 2 ** 30, 8) * 2, jnp.uint32)
    for alpha in (0.35, 0.5):
        wm = reweight.dipmark(b"key", vocab, alpha=alpha)
        marked = jax.jit(lambda s: jax.nn.softmax(wm.apply(logits, s), -1))
        twin = (marked(seeds) + marked(seeds + 1)) / 2
        np.testing.assert_allclose(twin, jax.nn.softmax(logits, -1), atol=5e-7)   # float32; measured 1.4e-7
        # and a single key does move mass (the watermark is not a no-op)
        assert float(jnp.abs(marked(seeds) - jax.nn.softmax(logits, -1)).sum(-1).min()) > 0.3


def test_processor_equals_the_reweight_in_the_permutation_of_the_context_seed():
    vocab = 96
    rng = np.random.default_rng(4)
    logits = jnp.asarray(rng.standard_normal((3, vocab)), jnp.float32)
    context = jnp.asarray(rng.integers(0, vocab, (3, 12)), jnp.int32)
    wm = reweight.dipmark(7, vocab, alpha=0.4)
    seeds = keys.context_seeds(context[:, -5:], keys.as_key_bytes(7))
    order = keys.permutation_tokens(jnp.arange(vocab)[None], seeds[:, None], vocab)
    expect = reweight.dipmark_reweight(jax.nn.softmax(logits, -1), order, 0.4)
    got = jax.nn.softmax(jax.jit(wm)(logits, context, jnp.int32(0), None), -1)
    np.testing.assert_allclose(got, expect, atol=2e-7)   # measured 2.2e-8
    # temperature T: sampling softmax(out / T) draws from the reweight of softmax(logits / T)
    hot = reweight.dipmark(7, vocab, alpha=0.4, temperature=0.7)
    got_t = jax.nn.softmax(jax.jit(hot)(logits, context, jnp.int32(0), None) / 0.7, -1)
    np.testing.assert_allclose(got_t, reweight.dipmark_reweight(jax.nn.softmax(logits / 0.7, -1), order, 0.4),
                               atol=2e-7)   # measured 4.5e-8


def test_kgw_adds_delta_to_the_back_of_the_same_permutation():
    vocab = 96
    logits = jnp.zeros((2, vocab))
    context = jnp.asarray(np.arange(24).reshape(2, 12), jnp.int32)
    out = np.asarray(jax.jit(reweight.kgw(7, vocab, delta=1.5, gamma=0.25))(logits, context, jnp.int32(0), None))
    seeds = keys.context_seeds(context[:, -5:], keys.as_key_bytes(7))
    pos = np.asarray(keys.permutation_positions(jnp.arange(vocab)[None], seeds[:, None], vocab))
    np.testing.assert_array_equal(out, 1.5 * (pos >= 0.25 * vocab))
    assert (out > 0).sum(1).tolist() == [72, 72]   # back (1 - gamma) V


def test_repeated_context_counts_only_generated_positions():
    # context right-aligned; the last 5 tokens [1 2 3 4 5] also occur ending 6 tokens earlier.
    row = [9, 9, 1, 2, 3, 4, 5, 6, 1, 2, 3, 4, 5]
    ctx = jnp.asarray([row], jnp.int32)
    # the earlier occurrence is the code of the generation step 6 steps ago
    assert not bool(reweight.repeated_context(ctx, jnp.int32(5), 5)[0])   # it was prompt, not generated
    assert bool(reweight.repeated_context(ctx, jnp.int32(6), 5)[0])
    assert not bool(reweight.repeated_context(jnp.asarray([[9, 9, 1, 2, 3, 4, 5, 6, 1, 2, 3, 4, 7]]), jnp.int32(12), 5)[0])


def test_processor_leaves_repeated_steps_unwatermarked():
    vocab = 96
    logits = jnp.asarray(np.random.default_rng(5).standard_normal((2, vocab)), jnp.float32)
    repeat = [1, 2, 3, 4, 5, 6, 1, 2, 3, 4, 5]
    fresh = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]
    wm = reweight.dipmark(3, vocab, alpha=0.5)
    out = np.asarray(jax.jit(wm)(logits, jnp.asarray([repeat, fresh], jnp.int32), jnp.int32(6), None))
    np.testing.assert_array_equal(out[0], np.asarray(logits[0]))
    assert np.isneginf(out[1]).sum() > 0           # alpha = 0.5 drops the front half of the mass
    out_all = np.asarray(jax.jit(reweight.dipmark(3, vocab, alpha=0.5, skip_repeated=False))(
        logits, jnp.asarray([repeat, fresh], jnp.int32), jnp.int32(6), None))
    assert np.isneginf(out_all[0]).sum() > 0


@pytest.mark.parametrize("kwargs,match", [(dict(alpha=0.6), "alpha"), (dict(method="soft"), "method"),
                                          (dict(delta=-1.0), "delta"), (dict(gamma=1.0), "gamma"),
                                          (dict(temperature=0.0), "temperature"), (dict(key="abc"), "private key")])
def test_bad_watermark_settings_are_rejected(kwargs, match):
    args = dict(key=1, vocab_size=96)
    args.update(kwargs)
    with pytest.raises((ValueError, TypeError), match=match):
        reweight.Watermark(**args)
