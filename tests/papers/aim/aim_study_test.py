"""The study's metrics (pure functions, against hand-computed values), the frozen trunk under probing,
and the prefix-trained model's loop run on a model-sharded mesh."""

import jax
import jax.numpy as jnp
import ml_collections
import numpy as np
import pytest

from jaxml.core.train import default_config, train_and_evaluate
from jaxml.papers.aim import experiments as E
from jaxml.papers.aim.configs.study import get_config
from jaxml.papers.aim.metrics import mean_std, pearson, spearman
from jaxml.papers.aim.model import AIM, AIMTrunk
from jaxml.papers.aim.task import PretrainTask


def test_pearson_and_spearman_against_hand_computed_values():
    # x = 1..4, y = 2, 1, 4, 3: cov = 0.8 * 4/3... r = sum(dx dy) / sqrt(sum dx^2 sum dy^2) = 3 / 5 = 0.6
    assert pearson([1, 2, 3, 4], [2, 1, 4, 3]) == pytest.approx(0.6)
    assert pearson([1, 2, 3], [-2, -4, -6]) == pytest.approx(-1.0)
    assert np.isnan(pearson([1, 2, 3], [5, 5, 5]))
    # Monotone but not linear: rho = 1 while r < 1.
    assert spearman([1, 2, 3, 4], [1, 10, 100, 1000]) == pytest.approx(1.0)
    assert pearson([1, 2, 3, 4], [1, 10, 100, 1000]) < 0.9
    # Ties get average ranks: x ranks 1, 2.5, 2.5, 4; y ranks 1, 2, 3, 4 -> r of the ranks.
    rx, ry = np.array([1, 2.5, 2.5, 4]), np.array([1, 2, 3, 4])
    assert spearman([0, 1, 1, 2], [0, 1, 2, 3]) == pytest.approx(np.corrcoef(rx, ry)[0, 1])
    with pytest.raises(ValueError, match="at least 3"):
        pearson([1, 2], [1, 2])
    assert mean_std([1.0, 2.0, 3.0]) == pytest.approx((2.0, 1.0))
    assert mean_std([0.5]) == (0.5, 0.0)


def _tiny_data(n=64):
    rng = np.random.default_rng(0)
    images = rng.integers(0, 256, size=(n, 8, 8, 1), dtype=np.uint8)
    labels = rng.integers(0, 10, size=n)
    return dict(pretrain=images, val=images[:16], probe_train=images, probe_train_labels=labels,
                probe_test=images[:32], probe_test_labels=labels[:32])


@pytest.mark.slow
def test_pretraining_on_a_model_sharded_mesh_matches_the_replicated_run(tmp_path, devices8):
    """Three loop steps with the trunk split over `model` (2 x 4 mesh) give the 8 x 1 run's losses."""
    data = _tiny_data(64)
    task = PretrainTask(AIM(4, 16, 1, 4, head_depth=1, head_width=16), data["pretrain"], data["val"])
    losses = {}
    for model_axis in (1, 4):
        c = default_config()
        c.update(dict(batch_size=16, eval_batch_size=16, num_steps=3, log_every_steps=1,
                      checkpoint_every_steps=100, async_checkpoint=False))
        c.mesh = ml_collections.ConfigDict(dict(data=-1, model=model_axis))
        out = train_and_evaluate(c, tmp_path / f"m{model_axis}", task=task, devices=devices8)
        if model_axis == 4:
            kernel = out.state.params["trunk"]["block_0"]["mlp"]["fc_in"]["kernel"]
            assert kernel.sharding.spec == jax.sharding.PartitionSpec(None, "model")
        losses[model_axis] = out.metrics["val/loss"]
    assert losses[4] == pytest.approx(losses[1], rel=1e-5)


def test_study_config_rejects_bad_ablation_and_checkpoint_counts():
    config = get_config("tiny")
    config.ablations = ("dropout",)
    with pytest.raises(ValueError, match="accepted"):
        E.ablation_specs(config)
    with pytest.raises(ValueError, match="multiple"):
        E.checkpoint_every(10, 3)


def test_probing_leaves_the_trunk_bit_identical_and_a_bank_equals_each_probe_alone(tmp_path):
    """The trunk only enters through features (its params are unchanged, bit for bit, by probing); probes
    with disjoint params, summed losses and AdamW without clipping train in a bank exactly as alone."""
    from jaxml.core.train import load_train_state
    from jaxml.papers.aim.task import ProbeTask

    config = get_config("tiny")
    data = _tiny_data()
    trunk = AIMTrunk(4, 16, 2, 2)
    params = trunk.init(jax.random.PRNGKey(0), jnp.zeros((1, 8, 8, 1)))["params"]
    before = jax.tree_util.tree_map(np.array, params)
    feats = E.feature_sets(trunk, params, data, (0.5, 0.25), last_k=2)
    # The features are full-attention block outputs: the last-2 average of what the trunk computes.
    _, blocks = trunk.apply({"params": params}, (data["probe_test"].astype(np.float32) / 255 - 0.5) / 0.25, None)
    np.testing.assert_allclose(feats[("probe_test", 2)], np.asarray((blocks[0] + blocks[1]) / 2), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(feats[("probe_test", 1)], np.asarray(blocks[1]), rtol=1e-5, atol=1e-5)
    train = {k: feats[("probe_train", k)] for k in (1, 2)}
    test = {k: feats[("probe_test", k)] for k in (1, 2)}
    labels, test_labels = data["probe_train_labels"], data["probe_test_labels"]
    states = {}
    for probes in ((("a", "attentive", 2),), (("a", "attentive", 2), ("b", "linear", 1), ("c", "attentive", 1))):
        task = ProbeTask(probes, train, labels, test, test_labels, heads=2)
        loop = E.probe_loop_config(config, 0, len(labels))
        loop.num_epochs = 2.0
        out = train_and_evaluate(loop, tmp_path / str(len(probes)), task=task)
        assert all(0.0 <= out.metrics[f"test/{n}/accuracy"] <= 1.0 for n, _, _ in probes)
        states[len(probes)] = load_train_state(tmp_path / str(len(probes)), task, loop)
    after = jax.tree_util.tree_map(np.array, params)
    assert jax.tree_util.tree_all(jax.tree_util.tree_map(np.array_equal, before, after))
    alone, bank = states[1], states[3]
    jax.tree_util.tree_map(lambda x, y: np.testing.assert_allclose(x, y, rtol=1e-6, atol=1e-7),
                           alone.params["a"], bank.params["a"])
    jax.tree_util.tree_map(lambda x, y: np.testing.assert_allclose(x, y, rtol=1e-6, atol=1e-7),
                           alone.model_state["a"], bank.model_state["a"])
    assert int(alone.step) == int(bank.step) == 2 * (64 // 32)
    feats = train
    with pytest.raises(ValueError, match="last 3 blocks"):
        ProbeTask((("a", "attentive", 3),), feats, labels, feats, labels)
