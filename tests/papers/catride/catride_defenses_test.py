"""The defences' adversaries and the shared training step: each adversary moves its target the
intended way inside its ball, CA-TRIDE's early stop halts at collapse, the non-collapse-aware CAP
pushes past it, and the step's loss matches an independent NumPy triplet loss."""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxml.papers.catride import defenses as D
from jaxml.papers.catride import metric_learning as ml
from jaxml.papers.catride.collapse import softmax_pool

EPS = 32 / 255


def _batch(t, n_pairs=12):
    src = t["task"].train_source
    batch = src[np.arange(0, 10 * n_pairs, 10)]               # pairs from across the (sorted) classes
    images, labels = ml.flatten_pairs({k: jnp.asarray(v) for k, v in batch.items()})
    return images.astype(jnp.float32) / 255.0, labels


def _in_ball(adv, x0, eps=EPS):
    adv, x0 = np.asarray(adv), np.asarray(x0)
    return np.all(np.abs(adv - x0) <= eps + 1e-6) and adv.min() >= 0.0 and adv.max() <= 1.0


def _d(e, f):
    return np.linalg.norm(np.asarray(e) - np.asarray(f) + 1e-6, axis=-1)


def test_pgd_until_stops_once_the_objective_is_below_the_threshold():
    # relu(x - 0.8) from x = 1 with steps of 0.1: 0.2, 0.1, 0 -> two steps taken, then it stays
    obj = lambda x: jax.nn.relu(jnp.sum(x) - 0.8)
    x, taken = D.pgd_until(obj, jnp.array([1.0]), eps=0.5, size=0.1, steps=6, stop_below=1e-5)
    assert int(taken) == 2 and float(x[0]) == pytest.approx(0.8, abs=1e-6)
    # without the stop a linear objective runs all six steps, clipped at the ball's edge
    x, taken = D.pgd_until(lambda x: jnp.sum(x), jnp.array([1.0]), eps=0.5, size=0.1, steps=6)
    assert int(taken) == 6 and float(x[0]) == pytest.approx(0.5, abs=1e-6)


@pytest.fixture(scope="module")
def setup(catride_trained):
    t = catride_trained
    x, labels = _batch(t)
    negatives = ml.spc2_random_negatives(jax.random.PRNGKey(3), labels)
    return t["embed"], x, labels, negatives


def _run(name, setup, parity, progress=1.0, steps=10, alpha=4 / 255):
    embed, x, _, negatives = setup
    adversary = D.make_adversary(name, eps=EPS, alpha=alpha, steps=steps, lam=10.0)
    return jax.jit(functools.partial(adversary, embed))(x, negatives, jax.random.PRNGKey(0), jnp.float32(progress),
                                                        jnp.int32(parity))


def test_act_collapses_positive_onto_negative_and_leaves_the_anchor(setup):
    embed, x, _, negatives = setup
    a, p, n, info = _run("act", setup, 0)
    assert np.array_equal(np.asarray(a), np.asarray(x[0::2]))
    assert _in_ball(p, x[1::2]) and _in_ball(n, x[negatives])
    before = _d(embed(x[1::2]), embed(x[negatives])).mean()
    after = _d(embed(p), embed(n)).mean()
    assert after < 0.5 * before, (before, after)


@pytest.mark.parametrize("collapse_aware", [False, True])
def test_cap_inverts_the_triplets_and_only_ca_stops_at_collapse(setup, collapse_aware):
    embed, x, _, negatives = setup
    a, p, n, info = _run("catride" if collapse_aware else "tride", setup, parity=0, steps=12)
    assert np.array_equal(np.asarray(a), np.asarray(x[0::2]))
    assert _in_ball(p, x[1::2]) and _in_ball(n, x[negatives])
    ea = embed(a)
    clean_ap, clean_an = _d(ea, embed(x[1::2])), _d(ea, embed(x[negatives]))
    d_ap, d_an = _d(ea, embed(p)), _d(ea, embed(n))
    pooled = lambda d: float(softmax_pool(jnp.asarray(d), 10.0))
    assert pooled(clean_an) > pooled(clean_ap)                       # the trained net ranks them right
    assert pooled(d_an) <= pooled(d_ap) + 1e-4                       # collapsed: d~_an <= d~_ap
    if collapse_aware:
        assert int(info["pgd_steps"]) < 12                            # stopped at collapse
    else:
        assert int(info["pgd_steps"]) == 12


@pytest.mark.slow   # longer check (-m slow): the default suite keeps the core adversary tests
def test_the_non_ca_cap_pushes_further_past_collapse(setup):
    embed, x, _, _ = setup
    gaps = {}
    for name in ("tride", "catride"):
        a, p, n, _ = _run(name, setup, parity=0, steps=12)
        ea = embed(a)
        gaps[name] = float(np.mean(_d(ea, embed(n))) - np.mean(_d(ea, embed(p))))
    assert gaps["tride"] < gaps["catride"] - 0.05, gaps


def test_anp_displaces_the_anchor_and_leaves_the_candidates(setup):
    embed, x, _, negatives = setup
    a, p, n, info = _run("catride", setup, parity=1, steps=12)
    assert np.array_equal(np.asarray(p), np.asarray(x[1::2])) and np.array_equal(np.asarray(n), np.asarray(x[negatives]))
    assert _in_ball(a, x[0::2]) and float(info["anp_step"]) == 1.0
    shift = _d(embed(a), embed(x[0::2])).mean()
    # the displacement term asks for at least the mean distance to the nearer half of the negatives
    d_an = np.sort(_d(embed(x[0::2]), embed(x[negatives])))
    assert shift > 0.5 * d_an[: len(d_an) // 2].mean(), (shift, d_an)


@pytest.mark.slow   # longer check (-m slow): the default suite keeps the core adversary tests
def test_tride_ramp_starts_at_zero(setup):
    _, x, _, negatives = setup
    for parity in (0, 1):
        a, p, n, _ = _run("tride", setup, parity=parity, progress=0.0, steps=3)
        assert np.array_equal(np.asarray(a), np.asarray(x[0::2])) and np.array_equal(np.asarray(p), np.asarray(x[1::2]))


@pytest.mark.slow   # longer check (-m slow): the default suite keeps the core adversary tests
def test_est_stays_in_its_ball_and_shifts_embeddings_more_than_noise(setup):
    embed, x, _, negatives = setup
    a, p, n, _ = _run("est", setup, 0, steps=6, alpha=8 / 255)
    assert _in_ball(a, x[0::2]) and _in_ball(p, x[1::2]) and _in_ball(n, x[negatives])
    noise = np.clip(np.asarray(x[0::2]) + EPS * np.sign(np.random.default_rng(0).standard_normal(a.shape)), 0, 1)
    shift = _d(embed(a), embed(x[0::2])).mean()
    assert shift > 2 * _d(embed(noise), embed(x[0::2])).mean()


def test_unknown_defence_is_a_clear_error():
    with pytest.raises(ValueError, match="accepted"):
        D.make_adversary("madry", eps=0.1, alpha=0.01, steps=2)


def _numpy_triplet_loss(emb, negatives, margin=0.2):
    emb = np.asarray(emb, np.float64)
    a, p, n = emb[0::2], emb[1::2], emb[np.asarray(negatives)]
    d = lambda u, v: np.linalg.norm(u - v + 1e-6, axis=1)
    return np.maximum(d(a, p) - d(a, n) + margin, 0).mean(), d(a, p), d(a, n)


def test_the_training_step_loss_is_the_triplet_loss_and_counts_steps(catride_trained):
    t = catride_trained
    task, params = t["task"], t["params"]
    batch = {k: jnp.asarray(v) for k, v in task.train_source[np.arange(0, 120, 10)].items()}
    state = task.init_state(None, batch)
    key = jax.random.PRNGKey(7)
    loss, (metrics, new_state) = task.loss(params, batch, key, state)
    images, labels = ml.flatten_pairs(batch)
    emb = task.model.apply({"params": params}, images.astype(jnp.float32) / 255.0)
    negatives = ml.spc2_random_negatives(jax.random.split(key)[0], labels)
    expected, _, _ = _numpy_triplet_loss(emb, negatives)
    assert float(loss) == pytest.approx(expected, rel=1e-5)
    assert int(new_state["step"]) == 1 and float(metrics["clean_loss"]) == pytest.approx(expected, rel=1e-5)
    # the embedding-norm diagnostic is the norm before normalisation
    raw = task.model.clone(normalized=False).apply({"params": params}, images.astype(jnp.float32) / 255.0)
    assert float(metrics["embedding_norm"]) == pytest.approx(float(jnp.linalg.norm(raw, axis=1).mean()), rel=1e-5)


@pytest.mark.slow   # longer check (-m slow): the default suite keeps the core adversary tests
def test_half_term_is_added_on_odd_steps_only(catride_trained):
    t = catride_trained
    task = ml.MetricTask(t["task"].model, t["task"].train_source, {}, half_term=True)
    batch = {k: jnp.asarray(v) for k, v in task.train_source[np.arange(0, 160, 10)].items()}
    key = jax.random.PRNGKey(1)
    even = float(task.loss(t["params"], batch, key, {"step": jnp.int32(4)})[0])
    odd = float(task.loss(t["params"], batch, key, {"step": jnp.int32(5)})[0])
    images, labels = ml.flatten_pairs(batch)
    emb = task.model.apply({"params": t["params"]}, images.astype(jnp.float32) / 255.0)
    base, d_ap, d_an = _numpy_triplet_loss(emb, ml.spc2_random_negatives(jax.random.split(key)[0], labels))
    low = lambda d: np.sort(d)[: len(d) // 2].mean()
    assert even == pytest.approx(base, rel=1e-5)
    assert odd == pytest.approx(base + 0.5 * max(low(d_ap) - low(d_an) + 0.04, 0.0), rel=1e-5)


def test_gradual_hard_miner_picks_semi_hard_negatives_with_a_shrinking_margin():
    # anchor 0 at the origin, its positive at distance 0.3; candidates of other classes at 0.1, 0.35, 0.45, 1.0
    pos = np.array([0.0, 0.3, 0.1, 0.35, 0.45, 1.0])
    emb = jnp.asarray(np.stack([pos, np.zeros(6)], 1), jnp.float32)
    labels = jnp.array([0, 0, 1, 1, 2, 2])
    chosen = lambda progress: {int(ml.gradual_hard_negatives(jax.random.PRNGKey(s), emb, labels, progress)[0])
                               for s in range(40)}
    # margin 0.2 at the start: semi-hard = farther than the positive and within 0.3 + 0.2 -> 0.35, 0.45
    assert chosen(0.0) == {3, 4}
    # margin 0.2 * (1 - 1/2)^2 = 0.05 at the end: only 0.35
    assert chosen(1.0) == {3}
