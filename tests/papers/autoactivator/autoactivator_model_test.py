"""AutoActivator's growth, closed-form head, supervisory check and reactivation, against NumPy
references and invariants, on real data: scikit-learn's 8x8 digits (64 features) in sessions of
three classes, {0,1,2}, {3,4,5}, {6,7,8}."""

import dataclasses

import jax
import numpy as np
import pytest
import scipy.spatial

from jaxml.papers.autoactivator import metrics as M
from jaxml.papers.autoactivator import model as A
from jaxml.papers.autoactivator.stream import digits_stream, split_by_class

CFG = A.GrowthConfig(batch_units=5, candidates=16, tolerance=0.005, max_units=40)


@pytest.fixture(scope="module")
def stream():
    sessions = digits_stream()
    x, y = np.concatenate([s.x_train for s in sessions]), np.concatenate([s.y_train for s in sessions])
    xt, yt = np.concatenate([s.x_test for s in sessions]), np.concatenate([s.y_test for s in sessions])
    return split_by_class(x, y, xt, yt, [(0, 1, 2), (3, 4, 5), (6, 7, 8)])


@pytest.fixture(scope="module")
def learned(stream):
    """The network after each of the first three sessions, learned in one pass."""
    nets, logs = [], []
    net = A.AutoActivator.empty(64, 10)
    for t, s in enumerate(stream[:3]):
        net, log = A.learn_session(net, s.x_train, s.y_train, s.classes, jax.random.PRNGKey(t), CFG)
        nets.append(net)
        logs.append(log)
    return nets, logs


def _ridge_reference(h, t, lam):
    """argmin ||t - h b||^2 + lam ||b||^2 as an ordinary least-squares problem [h; sqrt(lam) I] b = [t; 0]."""
    a = np.concatenate([h, np.sqrt(lam) * np.eye(h.shape[1])])
    rhs = np.concatenate([t, np.zeros((h.shape[1], t.shape[1]))])
    return np.linalg.lstsq(a, rhs, rcond=None)[0]


def test_block_cholesky_head_equals_lstsq():
    rng = np.random.default_rng(0)
    h = rng.standard_normal((200, 23))
    t = rng.standard_normal((200, 4))
    for lam in (1e-8, 0.5):
        solver = A.CholeskyRidge(t, lam)
        start = 0
        for size in (1, 7, 5, 10):                      # columns arrive in uneven blocks
            solver.append(h[:, start:start + size])
            start += size
            np.testing.assert_allclose(solver.solve(), _ridge_reference(h[:, :start], t, lam), rtol=1e-8, atol=1e-10)
    # with a vanishing ridge it is the plain least-squares solution
    tiny = A.CholeskyRidge(t, 1e-10)
    tiny.append(h)
    np.testing.assert_allclose(tiny.solve(), np.linalg.lstsq(h, t, rcond=None)[0], rtol=1e-6, atol=1e-8)


def test_learned_head_is_the_ridge_solution_of_the_session_residual(stream, learned):
    nets, _ = learned
    net = nets[1]
    s = stream[1]
    h = np.asarray(net.activations(s.x_train, 1), np.float64)
    targets = np.eye(10)[s.y_train] - nets[0].prefix_logits(s.x_train, 0)
    np.testing.assert_allclose(net.groups[1].beta, _ridge_reference(h, targets, CFG.ridge), rtol=2e-3, atol=2e-4)


def test_candidate_projections_match_numpy_projection():
    rng = np.random.default_rng(1)
    x = rng.uniform(size=(120, 9)).astype(np.float32)
    residual = rng.standard_normal((120, 3)).astype(np.float32)
    cfg = A.GrowthConfig(batch_units=4, candidates=6)
    w, b = A.sample_candidates(jax.random.PRNGKey(3), 9, cfg)
    got = np.asarray(A.candidate_projections(x, w, b, residual))
    for c in range(cfg.candidates):
        g = 1.0 / (1.0 + np.exp(-(x.astype(np.float64) @ np.asarray(w[c], np.float64) + np.asarray(b[c]))))
        fitted = g @ np.linalg.lstsq(g, residual.astype(np.float64), rcond=None)[0]
        np.testing.assert_allclose(got[c], np.sum(fitted ** 2, axis=0), rtol=1e-3)


def test_a_batch_failing_the_inequality_is_never_selected():
    # candidate 0 has the largest total but fails for output 1; candidate 2 passes everywhere
    xi = np.array([[5.0, -0.1, 5.0], [1.0, 1.0, -2.0], [0.5, 0.2, 0.1], [0.1, 0.0, 0.3]])
    assert A.select_candidate(xi) == 2                   # sums: 0.8 vs 0.4 among the admissible
    assert A.select_candidate(xi[:2]) is None
    # the SCN inequality itself: xi = proj - (1 - r - mu) ||e||^2, mu = (1 - r) / (L + 1)
    proj, energy, r, units = np.array([[0.2, 0.05]]), np.array([1.0, 1.0]), 0.9, 9
    expected = proj - (1 - r - (1 - r) / 10) * energy
    np.testing.assert_allclose(A.supervisory_xi(proj, energy, r, units), expected)
    assert A.select_candidate(A.supervisory_xi(proj, energy, r, units)) is None    # 0.05 < 0.09
    assert A.select_candidate(A.supervisory_xi(proj, energy, 0.99, units)) == 0     # 0.05 >= 0.009


def _session_residuals(net, session, x, y, ridge, k):
    """The residual before each recruited batch, recomputed with NumPy from the learned units."""
    targets = np.eye(net.num_classes)[y] - (net.prefix_logits(x, session - 1) if session else 0.0)
    h = np.asarray(net.activations(x, session), np.float64)
    out = [targets]
    for end in range(k, h.shape[1] + 1, k):
        beta = _ridge_reference(h[:, :end], targets, ridge)
        out.append(targets - h[:, :end] @ beta)
    return h, out


def test_every_recruited_batch_satisfied_the_inequality_and_the_residual_never_grew(stream, learned):
    nets, logs = learned
    k = CFG.batch_units
    for t, (s, log) in enumerate(zip(stream[:3], logs)):
        h, residuals = _session_residuals(nets[t], t, s.x_train, s.y_train, CFG.ridge, k)
        assert len(log.r_used) == h.shape[1] // k == len(residuals) - 1
        for step, r in enumerate(log.r_used):
            block = h[:, step * k:(step + 1) * k]
            e = residuals[step]
            fitted = block @ np.linalg.lstsq(block, e, rcond=None)[0]
            xi = A.supervisory_xi(np.sum(fitted ** 2, axis=0)[None], np.sum(e ** 2, axis=0), r, step * k)
            assert np.all(xi >= -1e-6 * np.sum(e ** 2)), (t, step, xi)
        # the ridge objective cannot grow when columns are added; nor, in practice, the residual
        assert np.all(np.diff(log.objective) <= 1e-9 * log.objective[0])
        assert np.all(np.diff(log.residual) <= 1e-6 * log.residual[0])
        np.testing.assert_allclose(log.residual[1:], [np.mean(e ** 2) for e in residuals[1:]], rtol=1e-3)
    assert sum(log.rejected for log in logs) > 0          # the check did turn candidates down


def test_unchecked_ablation_recruits_without_the_inequality(stream):
    s = stream[1]
    cfg = dataclasses.replace(CFG, check=False, max_units=20, tolerance=0.0)
    net, log = A.learn_session(A.AutoActivator.empty(64, 10), s.x_train, s.y_train, s.classes,
                               jax.random.PRNGKey(0), cfg)
    assert net.units_per_session == [20] and log.r_used == [] and log.candidates_scored == 0
    assert np.all(np.diff(log.residual) <= 1e-6 * log.residual[0])
    assert log.stop == "max_units"


def test_reactivating_a_session_reproduces_its_predictions_after_later_sessions(stream, learned):
    nets, _ = learned
    first, last = nets[0], nets[2]
    x = np.concatenate([s.x_test for s in stream[:3]])
    # the units of session 0 alone give exactly the outputs the network had after session 0
    np.testing.assert_array_equal(last.prefix_logits(x, 0), first.prefix_logits(x, 0))
    np.testing.assert_array_equal(last.after(1).predict(x), nets[1].predict(x))
    # inputs the thresholds route to session 0 get the session-0 network's predictions
    route = last.route(x)
    x0 = stream[0].x_test
    assert np.mean(last.route(x0) == 0) > 0.5            # not vacuous: most of session 0 goes there
    np.testing.assert_array_equal(last.predict(x)[route == 0], first.predict(x)[route == 0])


def test_thresholds_accept_the_quantile_of_own_training_inputs(stream, learned):
    nets, _ = learned
    net = nets[2]
    for t, s in enumerate(stream[:3]):
        own = np.asarray(net.scores(s.x_train))[:, t]
        assert abs(np.mean(own <= 1.0) - CFG.quantile) < 0.02
    # the score is a Mahalanobis distance per unit: check one input against the formula
    g = net.groups[1]
    h = np.asarray(net.all_activations(stream[1].x_test[:1]), np.float64)[0, :net.groups[0].units + g.units]
    d = min(scipy.spatial.distance.mahalanobis(h, m, g.precision) ** 2 for m in g.means) / len(h)
    np.testing.assert_allclose(np.asarray(net.scores(stream[1].x_test[:1]))[0, 1], d / g.threshold, rtol=1e-4)


def test_bad_input_is_rejected(stream):
    net = A.AutoActivator.empty(64, 10)
    s = stream[0]
    with pytest.raises(ValueError, match="inputs"):
        A.learn_session(net, s.x_train[:, :10], s.y_train, s.classes, jax.random.PRNGKey(0), CFG)
    with pytest.raises(ValueError, match="not all in classes"):
        A.learn_session(net, s.x_train, s.y_train + 1, s.classes, jax.random.PRNGKey(0), CFG)
    with pytest.raises(ValueError, match="r_schedule"):
        A.GrowthConfig(r_schedule=(1.5,))
    with pytest.raises(ValueError, match="learned no session"):
        net.predict(s.x_test)
    with pytest.raises(ValueError, match="more than one session"):
        split_by_class(s.x_train, s.y_train, s.x_test, s.y_test, [(0,), (0,)])


def test_metrics_on_a_hand_computed_matrix():
    acc = np.array([[0.9, 0.0, 0.0], [0.6, 0.8, 0.0], [0.3, 0.7, 0.9]])
    sizes = np.array([100, 100, 200])
    np.testing.assert_allclose(M.step_accuracies(acc, sizes), [0.9, 0.7, (30 + 70 + 180) / 400])
    assert M.final_accuracy(acc, sizes) == pytest.approx(0.7)
    assert M.average_incremental_accuracy(acc, sizes) == pytest.approx((0.9 + 0.7 + 0.7) / 3)
    assert M.forgetting(acc) == pytest.approx(((0.9 - 0.3) + (0.8 - 0.7)) / 2)
    assert M.forgetting(np.eye(1)) == 0.0
    with pytest.raises(ValueError, match="square"):
        M.forgetting(np.zeros((2, 3)))


def test_new_units_read_the_input_and_the_existing_units(stream, learned):
    nets, _ = learned
    net = nets[2]
    x = stream[2].x_test
    l0, l1 = net.units_per_session[:2]
    assert net.groups[2].w.shape[0] == 64 + l0 + l1
    sig = lambda z: 1.0 / (1.0 + np.exp(-z))  # noqa: E731
    h0 = sig(x @ net.groups[0].w + net.groups[0].b)
    h1 = sig(np.concatenate([x, h0], 1) @ net.groups[1].w + net.groups[1].b)
    h2 = sig(np.concatenate([x, h0, h1], 1) @ net.groups[2].w + net.groups[2].b)
    np.testing.assert_allclose(np.asarray(net.activations(x, 2)), h2, rtol=1e-4, atol=1e-5)
    s = stream[0]
    cfg = dataclasses.replace(CFG, connect=False)
    plain, _ = A.learn_session(A.AutoActivator.empty(64, 10, connect=False), s.x_train, s.y_train, s.classes,
                               jax.random.PRNGKey(0), cfg)
    plain, _ = A.learn_session(plain, stream[1].x_train, stream[1].y_train, stream[1].classes, jax.random.PRNGKey(1), cfg)
    assert plain.groups[1].w.shape[0] == 64
    with pytest.raises(ValueError, match="does not match"):
        A.learn_session(plain, stream[2].x_train, stream[2].y_train, stream[2].classes, jax.random.PRNGKey(0), CFG)
    with pytest.raises(ValueError, match="earlier session"):
        A.learn_session(plain, s.x_train, s.y_train, s.classes, jax.random.PRNGKey(0), cfg)


def test_accuracy_matrix_matches_the_network_after_each_session(stream, learned):
    nets, _ = learned
    net = nets[2]
    acc = net.accuracy_matrix(stream[:3])
    for i in range(3):
        for j in range(3):
            expected = np.mean(nets[i].predict(stream[j].x_test) == stream[j].y_test) if j <= i else 0.0
            assert acc[i, j] == pytest.approx(expected)
    # without reactivation the argmax runs over every seen class with every unit active
    full = np.argmax(np.where(np.isin(np.arange(10), range(9)), net.prefix_logits(stream[0].x_test, 2), -np.inf), 1)
    assert net.accuracy_matrix(stream[:3], reactivate=False)[2, 0] == pytest.approx(np.mean(full == stream[0].y_test))
