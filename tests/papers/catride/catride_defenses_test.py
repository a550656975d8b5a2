"""The EST defence: the adversary stays in its ball, moves embeddings far more than noise, and with
a zero budget the training loss is exactly the benign one."""

import functools

import jax
import jax.numpy as jnp
import numpy as np

from jaxml.papers.catride import defenses as D
from jaxml.papers.catride import metric_learning as ml
from jaxml.papers.catride.data import fashion_class_split


def _setup():
    xtr, ytr, _, _ = fashion_class_split(train_per_class=8, test_per_class=1)
    net = ml.EmbeddingNet(dim=16, features=(4, 8), hidden=32)
    src = ml.PairSource(xtr, ytr)
    batch = {k: jnp.asarray(v) for k, v in src[np.arange(16)].items()}
    params = net.init(jax.random.PRNGKey(0), jnp.zeros((1, 28, 28, 1)))["params"]
    return net, src, batch, params


def test_est_with_zero_budget_is_benign_training():
    net, src, batch, params = _setup()
    benign = ml.MetricTask(net, src, {})
    est = ml.MetricTask(net, src, {}, adversary=functools.partial(D.est_adversary, eps=0.0, alpha=1 / 255, steps=2))
    key = jax.random.PRNGKey(5)
    # the EST step splits its key once for the attack; the same triplets need the benign loss to draw
    # its negatives with the key that remains
    rest, _ = jax.random.split(key)
    np.testing.assert_allclose(float(est.loss(params, batch, key)[0]), float(benign.loss(params, batch, rest)[0]),
                               rtol=1e-6)


def test_est_adversary_stays_in_its_ball_and_shifts_embeddings():
    net, _, batch, params = _setup()
    images = ml.flatten_pairs(batch)[0].astype(jnp.float32) / 255.0
    embed = jax.jit(lambda x: net.apply({"params": params}, x))
    eps = 16 / 255
    adv = np.asarray(jax.jit(functools.partial(D.est_adversary, embed, eps=eps, alpha=4 / 255, steps=6))(
        images, jax.random.PRNGKey(1)))
    assert np.all(np.abs(adv - np.asarray(images)) <= eps + 1e-6) and adv.min() >= 0 and adv.max() <= 1
    noise = np.clip(np.asarray(images) + eps * np.sign(np.random.default_rng(0).standard_normal(adv.shape)), 0, 1)
    shift = np.linalg.norm(np.asarray(embed(adv) - embed(images)), axis=1).mean()
    random_shift = np.linalg.norm(np.asarray(embed(noise) - embed(images)), axis=1).mean()
    assert shift > 2 * random_shift, (shift, random_shift)
