import ml_collections
import numpy as np
import pytest

from jaxml.core.optim import make_optimizer, make_schedule


def _cfg(**kw):
    return ml_collections.ConfigDict(kw)


def test_cosine_with_warmup_endpoints():
    s = make_schedule(_cfg(name="cosine", warmup_steps=10, end_factor=0.1), 1.0, 110)
    np.testing.assert_allclose([s(0), s(5), s(10), s(60), s(110)], [0.0, 0.5, 1.0, 0.55, 0.1], atol=1e-6)


def test_linear_and_constant():
    lin = make_schedule(_cfg(name="linear", warmup_steps=0, end_factor=0.0), 2.0, 100)
    np.testing.assert_allclose([lin(0), lin(50), lin(100)], [2.0, 1.0, 0.0], atol=1e-6)
    const = make_schedule(_cfg(name="constant"), 0.3, 100)
    np.testing.assert_allclose([const(0), const(99)], [0.3, 0.3], atol=1e-7)


def test_errors_name_the_bad_value():
    with pytest.raises(ValueError, match="schedule.name='cosin'"):
        make_schedule(_cfg(name="cosin"), 1.0, 10)
    with pytest.raises(ValueError, match="not an optax optimizer"):
        make_optimizer(_cfg(name="adamx", learning_rate=1.0), _cfg(name="constant"), 10)
    with pytest.raises(ValueError, match="bad keyword"):
        make_optimizer(_cfg(name="sgd", learning_rate=1.0, beta=3), _cfg(name="constant"), 10)


def test_sgd_step_matches_hand_computation():
    import jax.numpy as jnp
    tx, _ = make_optimizer(_cfg(name="sgd", learning_rate=0.5, grad_clip_norm=1.0), _cfg(name="constant"), 10)
    params = {"w": jnp.array([1.0, 1.0])}
    grads = {"w": jnp.array([3.0, 4.0])}          # norm 5 -> clipped to norm 1: [0.6, 0.8]
    updates, _ = tx.update(grads, tx.init(params), params)
    np.testing.assert_allclose(updates["w"], [-0.3, -0.4], rtol=1e-6)


def test_multistep_matches_pytorch_multisteplr_epochs():
    # 40 epochs of 10 steps, milestone epoch 30: epochs 1..30 (steps 0..299) at lr, then lr * 0.1,
    # as torch.optim.lr_scheduler.MultiStepLR(milestones=[30], gamma=0.1) stepped once per epoch.
    s = make_schedule(_cfg(name="multistep", milestones=(0.75,), gamma=0.1), 5e-4, 400)
    np.testing.assert_allclose([s(0), s(299), s(300), s(399)], [5e-4, 5e-4, 5e-5, 5e-5], rtol=1e-6)
    two = make_schedule(_cfg(name="multistep", milestones=(0.5, 0.75), gamma=0.5), 1.0, 100)
    np.testing.assert_allclose([two(49), two(50), two(74), two(75)], [1.0, 0.5, 0.5, 0.25], rtol=1e-6)
    with pytest.raises(ValueError, match="milestones"):
        make_schedule(_cfg(name="multistep", milestones=(30,)), 1.0, 100)
