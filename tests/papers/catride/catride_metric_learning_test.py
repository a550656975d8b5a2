"""CA-TRIDE's metric-learning core: the SPC-2 triplet loss, mining and pairs, retrieval metrics and
collapseness, against hand-computed values and independent NumPy references."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxml.papers.catride import collapse, metric_learning as ml, retrieval as rt


def test_collapseness_hand_computed():
    d_ap = jnp.array([0.2, 0.6])
    d_an = jnp.array([1.0, 0.4])
    lam = np.log(3.0)               # weights exp(lam (d - max)): d_ap -> (3^-0.4, 1), d_an -> (1, 3^-0.6)
    w_ap = np.array([3.0 ** -0.4, 1.0])
    w_an = np.array([1.0, 3.0 ** -0.6])
    expected = (w_ap @ [0.2, 0.6]) / w_ap.sum() - (w_an @ [1.0, 0.4]) / w_an.sum()
    assert float(collapse.collapseness(d_ap, d_an, lam)) == pytest.approx(expected, rel=1e-6)
    # lam = 0: plain means (0.4 - 0.7); a large lam: the maxima (0.6 - 1.0)
    assert float(collapse.collapseness(d_ap, d_an, 0.0)) == pytest.approx(-0.3, abs=1e-6)
    assert float(collapse.collapseness(d_ap, d_an, 200.0)) == pytest.approx(-0.4, abs=1e-6)


def test_triplet_loss_matches_numpy_with_pytorch_distance():
    rng = np.random.default_rng(0)
    emb = np.asarray(ml.normalize(jnp.asarray(rng.standard_normal((8, 5)), jnp.float32)))
    labels = jnp.array([0, 0, 1, 1, 2, 2, 0, 0])
    loss, parts = ml.triplet_loss(jnp.asarray(emb), labels, jax.random.PRNGKey(3))
    neg = np.asarray(parts["negatives"])
    a, p, n = emb[0::2], emb[1::2], emb[neg]
    d_ap = np.linalg.norm(a - p + 1e-6, axis=1)
    d_an = np.linalg.norm(a - n + 1e-6, axis=1)
    assert float(loss) == pytest.approx(np.mean(np.maximum(d_ap - d_an + 0.2, 0.0)), rel=1e-5)
    assert np.all(np.asarray(labels)[neg] != np.asarray(labels)[0::2])
    with pytest.raises(ValueError, match="even"):
        ml.triplet_loss(jnp.asarray(emb[:7]), labels[:7], jax.random.PRNGKey(0))


def test_spc2_negatives_are_uniform_over_other_classes():
    labels = jnp.array([0, 0, 1, 1, 0, 0, 2, 2])
    negs = np.stack([np.asarray(ml.spc2_random_negatives(jax.random.PRNGKey(k), labels)) for k in range(400)])
    # anchor 0 (class 0): candidates 2, 3, 6, 7, each about a quarter of the draws
    counts = np.bincount(negs[:, 0], minlength=8)
    assert set(np.flatnonzero(counts)) == {2, 3, 6, 7}
    assert np.all(np.abs(counts[[2, 3, 6, 7]] / 400 - 0.25) < 0.08)
    # one class only: RobRank falls back to any index
    assert np.asarray(ml.spc2_random_negatives(jax.random.PRNGKey(0), jnp.zeros(4, int))).shape == (2,)


def test_pair_source_yields_spc2_batches():
    labels = np.array([0, 1, 0, 1, 2, 2, 0])
    images = np.arange(7, dtype=np.float32)[:, None, None, None] * np.ones((7, 2, 2, 1), np.float32)
    src = ml.PairSource(images, labels, seed=1)
    batch = src[np.arange(7)]
    assert batch["image"].shape == (7, 2, 2, 2, 1)
    first, second = batch["image"][:, 0, 0, 0, 0].astype(int), batch["image"][:, 1, 0, 0, 0].astype(int)
    assert np.all(labels[first] == labels[second]) and np.all(first != second)
    flat, flat_labels = ml.flatten_pairs({k: jnp.asarray(v) for k, v in batch.items()})
    assert flat.shape == (14, 2, 2, 1) and np.all(np.asarray(flat_labels)[0::2] == np.asarray(flat_labels)[1::2])
    with pytest.raises(ValueError, match="single image"):
        ml.PairSource(images[:5], np.array([0, 0, 1, 1, 2]))


def test_embedding_net_is_c2f2_and_unit_norm():
    net = ml.EmbeddingNet(dim=16, features=(4, 8), hidden=32)
    params = net.init(jax.random.PRNGKey(0), jnp.zeros((1, 28, 28, 1)))["params"]
    assert params["backbone"]["conv0"]["kernel"].shape == (5, 5, 1, 4)
    emb = net.apply({"params": params}, jax.random.uniform(jax.random.PRNGKey(1), (3, 28, 28, 1)))
    np.testing.assert_allclose(np.linalg.norm(np.asarray(emb), axis=1), 1.0, rtol=1e-5)


def test_recall_and_map_hand_computed():
    # 1-d embeddings: positions 0, 1, 3, 10 with labels a, b, a, b
    emb = np.array([[0.0], [1.0], [3.0], [10.0]])
    labels = np.array([0, 1, 0, 1])
    # rankings: q0 -> 1(b), 2(a), 3(b); q1 -> 0(a), 2(a), 3(b); q2 -> 1(b), 0(a), 3(b); q3 -> 2(a), 1(b), 0(a)
    r = rt.recall_at_k(emb, labels, ks=(1, 2, 3))
    assert r == {1: 0.0, 2: 0.75, 3: 1.0}              # q1 finds its class only at rank 3
    # AP: q0 1/2, q1 1/3, q2 1/2, q3 1/2
    assert rt.mean_average_precision(emb, labels) == pytest.approx((0.5 + 1 / 3 + 0.5 + 0.5) / 4)


def test_nmi_hand_computed():
    y = np.array([0, 0, 1, 1])
    assert rt.nmi(y, np.array([5, 5, 7, 7])) == pytest.approx(1.0)
    assert rt.nmi(y, np.array([0, 1, 0, 1])) == pytest.approx(0.0, abs=1e-12)
    # y = (0,0,1,1), c = (0,0,0,1): I = 0.5 ln 2 + 0.25 ln(4/3) + 0.25 ln 2 ... computed from the joint table
    joint = np.array([[0.5, 0.0], [0.25, 0.25]])
    py, pc = joint.sum(1), joint.sum(0)
    mi = sum(joint[i, j] * np.log(joint[i, j] / (py[i] * pc[j])) for i in range(2) for j in range(2) if joint[i, j])
    h = lambda p: -np.sum(p * np.log(p))  # noqa: E731
    assert rt.nmi(y, np.array([0, 0, 0, 1])) == pytest.approx(mi / ((h(py) + h(pc)) / 2))
    separated = np.concatenate([np.zeros((20, 2)), np.full((20, 2), 5.0)]) + 0.01 * np.arange(40)[:, None]
    assert rt.kmeans_nmi(separated, np.repeat([0, 1], 20)) == pytest.approx(1.0)


def test_triplet_training_on_the_loop_improves_retrieval(catride_trained):
    t = catride_trained
    assert set(np.unique(t["ytr"])) == {0, 1, 2, 3, 4} and set(np.unique(t["labels"])) == {5, 6, 7, 8, 9}
    # held-out images of the training classes (the unseen classes 5-9 are easy even for a random
    # net: R@1 0.840 untrained, 0.836 after these 120 steps)
    task, xval, yval = t["task"], t["xval"], t["yval"]
    before = rt.recall_at_k(task.embed(t["untrained"], xval), yval, (1,))[1]
    after = rt.recall_at_k(task.embed(t["params"], xval), yval, (1,))[1]
    # measured R@1 0.706 -> 0.768 on these 500 held-out images; 87.8% of held-out pairs ranked right
    assert after > before + 0.03, (before, after)
    assert t["metrics"]["test/ranked_right"] > 0.8


def test_digits_split_is_uint8_images_of_disjoint_classes():
    from jaxml.papers.catride.data import load_split

    xtr, ytr, xte, yte = load_split("digits")
    assert xtr.dtype == np.uint8 and xtr.shape[1:] == (8, 8, 1) and xtr.max() == 255
    assert set(np.unique(ytr)) == {0, 1, 2, 3, 4} and set(np.unique(yte)) == {5, 6, 7, 8, 9}
    assert len(ytr) + len(yte) == 1797
    with pytest.raises(ValueError, match="accepted"):
        load_split("cub")
