"""Tests of the class-incremental baselines (finetune, EWC, replay, joint) on Gaussian blobs."""

import shutil

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxml.core.train import load_train_state
from jaxml.data.pipeline import ArraySource
from jaxml.papers.autoactivator import baselines as B
from jaxml.papers.autoactivator.stream import split_by_class


def _blobs(order=((0, 1), (2, 3)), dim=8, train_per_class=64, test_per_class=32, seed=0):
    """Well-separated Gaussian blobs: class c centred at 4 * e_c, isotropic noise of std 0.5."""
    rng = np.random.default_rng(seed)
    classes = sum(len(group) for group in order)

    def draw(n):
        y = np.repeat(np.arange(classes), n)
        x = 4.0 * np.eye(dim)[y] + 0.5 * rng.standard_normal((len(y), dim))
        return x.astype(np.float32), y

    (xtr, ytr), (xte, yte) = draw(train_per_class), draw(test_per_class)
    return split_by_class(xtr, ytr, xte, yte, order)


STREAM = _blobs()
CONFIG = B.baseline_config(hidden=(16,), steps=40, batch_size=32, learning_rate=1e-2, ewc_lambda=10.0,
                           fisher_examples=1000, buffer_size=16)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("baselines")
    return root, {m: B.run_baseline(m, STREAM, CONFIG, root, seed=0) for m in B.METHODS}


def _numpy_fisher(params, seen, x, y):
    """The Fisher of a one-hidden-layer ReLU MLP from hand-derived per-example gradients."""
    W1, b1 = params["hidden_0"]["kernel"], params["hidden_0"]["bias"]
    W2, b2 = params["head"]["kernel"], params["head"]["bias"]
    sq = {k: np.zeros_like(v) for k, v in dict(W1=W1, b1=b1, W2=W2, b2=b2).items()}
    for xi, yi in zip(x.astype(np.float64), y):
        pre = xi @ W1 + b1
        h = np.maximum(pre, 0.0)
        z = h @ W2 + b2
        z = np.where(seen > 0, z, -np.inf)
        p = np.exp(z - z.max())
        p /= p.sum()
        delta = np.eye(len(z))[yi] - p                 # d log p_y / d z (0 on unseen classes)
        dh = (W2 @ delta) * (pre > 0)
        grads = dict(W1=np.outer(xi, dh), b1=dh, W2=np.outer(h, delta), b2=delta)
        for k in sq:
            sq[k] += grads[k] ** 2
    n = len(y)
    return {"hidden_0": {"kernel": sq["W1"] / n, "bias": sq["b1"] / n},
            "head": {"kernel": sq["W2"] / n, "bias": sq["b2"] / n}}


def _tiny_model_and_params(seed=0):
    model = B.MLP((5,), 4)
    params = model.init(jax.random.PRNGKey(seed), jnp.zeros((1, 3)))["params"]
    return model, jax.tree_util.tree_map(np.asarray, params)


def test_empirical_fisher_matches_hand_derived_per_example_gradients():
    model, params = _tiny_model_and_params()
    rng = np.random.default_rng(1)
    x = rng.standard_normal((70, 3)).astype(np.float32)         # 70: two chunks, the second padded
    seen = np.array([1, 1, 1, 0], np.float32)
    y = rng.integers(0, 3, size=70).astype(np.int32)
    got = B.empirical_fisher(model, params, seen, x, y)
    want = _numpy_fisher(params, seen, x, y)
    jax.tree_util.tree_map(lambda g, w: np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-7), got, want)
    # The unseen class's head column gets no gradient, hence no Fisher.
    assert np.all(got["head"]["kernel"][:, 3] == 0) and got["head"]["bias"][3] == 0
    assert np.all(got["head"]["kernel"][:, :3].sum(0) > 0)


def test_ewc_penalty_value_and_gradient_and_its_wiring_into_the_task_loss():
    model, params = _tiny_model_and_params(0)
    _, anchor = _tiny_model_and_params(1)
    rng = np.random.default_rng(2)
    fisher = jax.tree_util.tree_map(lambda p: rng.uniform(0, 2, p.shape).astype(np.float32), params)
    lam = 3.0
    diff = jax.tree_util.tree_map(np.subtract, params, anchor)
    want_value = 0.5 * lam * sum(float(np.sum(f * d ** 2)) for f, d in
                                 zip(jax.tree_util.tree_leaves(fisher), jax.tree_util.tree_leaves(diff)))
    assert float(B.ewc_penalty(params, anchor, fisher, lam)) == pytest.approx(want_value, rel=1e-5)
    grad = jax.grad(B.ewc_penalty)(params, anchor, fisher, lam)
    want_grad = jax.tree_util.tree_map(lambda f, d: lam * f * d, fisher, diff)
    jax.tree_util.tree_map(lambda g, w: np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-7), grad, want_grad)

    # Through the Task: grad(loss with lambda) - grad(loss with lambda = 0) = lambda * F * (theta - theta*).
    x = rng.standard_normal((8, 3)).astype(np.float32)
    batch = {"x": jnp.asarray(x), "y": jnp.asarray(rng.integers(0, 2, 8), jnp.int32)}
    seen = np.array([1, 1, 0, 0], np.float32)
    grads = {}
    for l in (0.0, lam):
        task = B.BaselineTask(model, ArraySource({"x": x, "y": np.asarray(batch["y"])}), {}, seen, params, anchor, fisher, l)
        state = task.init_state(jax.random.PRNGKey(0), batch)
        grads[l], (metrics, new_state) = jax.jit(jax.grad(
            lambda p: task.loss(p, batch, None, state), has_aux=True))(params)
        jax.tree_util.tree_map(np.testing.assert_array_equal, new_state, state)   # passed through
    extra = jax.tree_util.tree_map(np.subtract, grads[lam], grads[0.0])
    jax.tree_util.tree_map(lambda g, w: np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-5), extra, want_grad)


def test_masked_predictions_never_name_an_unseen_class():
    model, params = _tiny_model_and_params()
    params = jax.tree_util.tree_map(np.array, params)
    params["head"]["bias"][2:] = 100.0                          # unseen classes would win every argmax
    x = np.random.default_rng(3).standard_normal((50, 3)).astype(np.float32)
    unmasked = np.argmax(model.apply({"params": params}, x), -1)
    assert set(unmasked.tolist()) <= {2, 3}
    labels = np.asarray(B.predict(model, params, np.array([1, 1, 0, 0], np.float32), x))
    assert set(labels.tolist()) <= {0, 1} and len(set(labels.tolist())) == 2


def test_replay_buffer_is_class_balanced_past_only_and_bounded():
    stream = _blobs(order=((0, 1), (2, 3), (4, 5)), train_per_class=20)
    previous = None
    for upto, size in ((0, 16), (1, 16), (1, 10)):
        x, y = B.replay_buffer(stream, upto, size, seed=0)
        past = set(c for s in stream[:upto + 1] for c in s.classes)
        counts = np.bincount(y, minlength=6)
        assert len(y) <= size and set(y.tolist()) == past
        assert all(counts[c] == size // len(past) for c in past)
        for xi, yi in zip(x, y):                                 # each row is a stored example of its class
            session = next(s for s in stream if yi in s.classes)
            assert np.any(np.all(session.x_train[session.y_train == yi] == xi, axis=1))
        assert len(np.unique(x, axis=0)) == len(x)
        if previous is not None and size == 16:                  # old classes shrink to a subset
            px, py = previous
            for c in stream[0].classes:
                assert np.array_equal(x[y == c], px[py == c][:counts[c]])
        previous = (x, y)


def test_finetune_forgets_while_joint_and_replay_keep_session_zero(runs):
    _, r = runs
    for m, run in r.items():
        assert run.acc.shape == (2, 2) and len(run.seconds) == 2 and run.method == m and run.seed == 0
        assert run.acc[0, 0] > 0.95, (m, run.acc)
        assert run.acc[0, 1] == 0.0                              # session 1's classes are not seen yet
        assert run.acc[1, 1] > 0.9, (m, run.acc)
    assert r["finetune"].acc[1, 0] < 0.1, r["finetune"].acc
    assert r["joint"].acc[1, 0] > 0.95, r["joint"].acc
    assert r["replay"].acc[1, 0] > r["finetune"].acc[1, 0] + 0.5, (r["replay"].acc, r["finetune"].acc)


def test_ewc_state_holds_the_session_zero_anchor_and_fisher(runs):
    root, _ = runs
    model = B.MLP((16,), 4)
    s0 = STREAM[0]
    task = B.BaselineTask(model, ArraySource({"x": s0.x_train, "y": s0.y_train}), {}, B.seen_mask(STREAM, 0))
    loop = B.loop_config(CONFIG, 0, 64)
    first = load_train_state(root / "ewc/seed0/session0", task, loop)
    second = load_train_state(root / "ewc/seed0/session1", task, loop).model_state
    params0 = jax.device_get(first.params)
    fisher = B.empirical_fisher(model, params0, B.seen_mask(STREAM, 0), s0.x_train, s0.y_train)  # all 128 examples
    jax.tree_util.tree_map(np.testing.assert_array_equal, jax.device_get(second["anchor"]), params0)
    jax.tree_util.tree_map(lambda g, w: np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-9),
                           jax.device_get(second["fisher"]), fisher)
    assert float(second["ewc_lambda"]) == CONFIG.ewc_lambda
    np.testing.assert_array_equal(np.asarray(second["seen"]), [1, 1, 1, 1])
    np.testing.assert_array_equal(np.asarray(first.model_state["seen"]), [1, 1, 0, 0])
    finetune = load_train_state(root / "finetune/seed0/session1", task, loop).model_state
    assert float(finetune["ewc_lambda"]) == 0.0


def test_a_killed_study_resumes_to_the_same_result(runs):
    root, r = runs
    shutil.rmtree(root / "finetune/seed0/session1")              # killed after session 0
    session0 = root / "finetune/seed0/session0"
    lines = (session0 / "metrics.jsonl").read_text().count('"train"')
    again = B.run_baseline("finetune", STREAM, CONFIG, root, seed=0)
    np.testing.assert_array_equal(again.acc, r["finetune"].acc)  # session 1 retrained from the restored params
    assert (session0 / "metrics.jsonl").read_text().count('"train"') == lines   # session 0: no step retrained
    assert again.seconds[0] == pytest.approx(r["finetune"].seconds[0], abs=0.05)  # its logged training time


def test_bad_inputs_raise_clear_errors(tmp_path):
    with pytest.raises(ValueError, match="accepted methods are.*finetune.*ewc.*replay.*joint"):
        B.run_baseline("lwf", STREAM, CONFIG, tmp_path, seed=0)
    with pytest.raises(ValueError, match="empty"):
        B.run_baseline("finetune", [], CONFIG, tmp_path, seed=0)
    with pytest.raises(ValueError, match="multiple of the 8 devices"):
        B.run_baseline("finetune", STREAM, B.baseline_config(batch_size=12), tmp_path, seed=0)
    with pytest.raises(ValueError, match="buffer_size"):
        B.run_baseline("replay", STREAM, B.baseline_config(batch_size=32, buffer_size=1), tmp_path, seed=0)
    with pytest.raises(ValueError, match="steps"):
        B.run_baseline("joint", STREAM, B.baseline_config(batch_size=32, steps=0), tmp_path, seed=0)
