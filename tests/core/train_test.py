import json
import os
import pathlib
import signal
import subprocess
import sys
import textwrap
import time

import chex
import jax
import numpy as np
import pytest

from jaxml.core import mesh as mesh_lib
from jaxml.core import train
from jaxml.core.metrics import read_metrics
from jaxml.core.optim import make_optimizer
from jaxml.core.testing import (NonnegativeRegressionTask, RegressionTask, StatefulRegressionTask,
                                regression_config)


def _one_step(devices, config, task):
    mesh = mesh_lib.mesh_from_config(config.mesh, devices)
    source = task.train_data()
    tx, schedule = make_optimizer(config.optimizer, config.schedule, config.num_steps)
    state, shardings, _ = train.create_train_state(task, config, mesh, tx, source[np.arange(2)])
    step = train.make_train_step(task, tx, schedule, shardings, mesh)
    batch = source[np.arange(config.batch_size)]
    state, metrics = step(state, mesh_lib.global_batch(batch, mesh))
    return jax.device_get(state.params), jax.device_get(metrics)


def test_eight_devices_match_one_device(devices8):
    task = RegressionTask(hidden=16)
    config = regression_config()
    params1, metrics1 = _one_step(devices8[:1], config, task)
    params8, metrics8 = _one_step(devices8, config, task)
    # Same global batch: only the float32 reduction order differs.
    np.testing.assert_allclose(metrics8["loss"], metrics1["loss"], rtol=1e-6)
    np.testing.assert_allclose(metrics8["grad_norm"], metrics1["grad_norm"], rtol=1e-5)
    chex.assert_trees_all_close(params8, params1, rtol=1e-5, atol=1e-7)
    # ...and the step did change the parameters (so the comparison is not vacuous).
    task_params0 = task.init(jax.random.split(jax.random.PRNGKey(0))[0], task.train_data()[np.arange(2)])
    assert not np.allclose(params1["hidden"]["kernel"], task_params0["hidden"]["kernel"])


def test_model_axis_sharding_matches_replicated(devices8):
    task = RegressionTask(hidden=16)
    sharded = regression_config(mesh={"data": 4, "model": 2},
                                param_sharding=(("hidden/kernel", (None, "model")),))
    params_r, metrics_r = _one_step(devices8, regression_config(), task)
    params_s, metrics_s = _one_step(devices8, sharded, task)
    np.testing.assert_allclose(metrics_s["loss"], metrics_r["loss"], rtol=1e-6)
    chex.assert_trees_all_close(params_s, params_r, rtol=1e-5, atol=1e-7)


def test_param_sharding_rule_that_does_not_divide_is_an_error(devices8):
    task = RegressionTask(hidden=15)
    config = regression_config(mesh={"data": 4, "model": 2}, param_sharding=(("hidden/kernel", (None, "model")),))
    with pytest.raises(ValueError, match="not divisible by mesh axis 'model'"):
        _one_step(devices8, config, task)


def test_training_reduces_loss_and_evaluates_every_example(tmp_path, devices8):
    task = RegressionTask()
    outcome = train.train_and_evaluate(regression_config(num_steps=200), tmp_path, task=task)
    records = read_metrics(tmp_path, "train")
    assert [r["step"] for r in records][-1] == 200
    assert records[-1]["loss"] < 0.5 * records[0]["loss"]
    # The final eval averages all 256 examples (padded batches of 48): recompute it by hand.
    params = jax.device_get(outcome.state.params)
    arrays = task.eval_data()["train"].arrays
    by_hand = float(np.mean(np.asarray(task.evaluate(params, arrays)["mse"])))
    np.testing.assert_allclose(outcome.metrics["train/mse"], by_hand, rtol=1e-5)


def test_project_hook_runs_after_every_step(tmp_path, devices8):
    outcome = train.train_and_evaluate(regression_config(num_steps=5), tmp_path,
                                       task=NonnegativeRegressionTask())
    kernel = np.asarray(jax.device_get(outcome.state.params["hidden"]["kernel"]))
    assert kernel.min() >= 0.0 and kernel.max() > 0.0


def test_non_finite_loss_stops_with_a_clear_error(tmp_path, devices8):
    config = regression_config(num_steps=30, checkpoint_every_steps=2, batch_size=32)
    # Example 100 sits in some batch of the first epoch (8 batches of 32).
    bad_step = next(s for s in range(8) if 100 in train.pipeline.train_indices(256, 32, 0, s))
    with pytest.raises(train.NonFiniteLossError, match=rf"loss = nan at step {bad_step + 1}\b"):
        train.train_and_evaluate(config, tmp_path, task=RegressionTask(nan_example=100))
    steps = sorted(int(p.name) for p in (tmp_path / "checkpoints").iterdir() if p.name.isdigit())
    assert all(s <= bad_step for s in steps), f"a checkpoint after the NaN step was written: {steps}"


def test_batch_size_must_divide_over_devices(tmp_path, devices8):
    with pytest.raises(ValueError, match="batch_size=12 must be divisible by the data axis size 8"):
        train.train_and_evaluate(regression_config(batch_size=12), tmp_path, task=RegressionTask())


_KILLABLE = textwrap.dedent("""
    import sys
    from jaxml.core import train
    from jaxml.core.testing import (NonnegativeRegressionTask, RegressionTask, StatefulRegressionTask,
                                regression_config)
    config = regression_config(num_steps=60, checkpoint_every_steps=5, async_checkpoint=True)
    train.train_and_evaluate(config, sys.argv[1], task=RegressionTask(delay_s=float(sys.argv[2])))
""")


def test_kill_and_resume_is_bit_identical(tmp_path, devices8):
    config = regression_config(num_steps=60, checkpoint_every_steps=5, async_checkpoint=True)
    reference = train.train_and_evaluate(config, tmp_path / "straight", task=RegressionTask())

    workdir = tmp_path / "killed"
    env = dict(os.environ, JAXML_QUIET="1")
    proc = subprocess.Popen([sys.executable, "-c", _KILLABLE, str(workdir), "0.05"], env=env)
    deadline = time.time() + 120
    while time.time() < deadline:  # kill once two checkpoints exist (around step 10 of 60)
        ckpts = [p for p in (workdir / "checkpoints").glob("*") if p.name.isdigit()] if workdir.exists() else []
        if len(ckpts) >= 2 or proc.poll() is not None:
            break
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    assert proc.wait() == -signal.SIGKILL, "the run finished before it could be killed"

    resumed = train.train_and_evaluate(config, workdir, task=RegressionTask())
    assert resumed.resumed_from is not None and 5 <= resumed.resumed_from < 60
    chex.assert_trees_all_equal(jax.device_get(resumed.state.params), jax.device_get(reference.state.params))
    chex.assert_trees_all_equal(jax.device_get(resumed.state.opt_state), jax.device_get(reference.state.opt_state))
    # metrics.jsonl has each logged step once, in order, after the resume.
    steps = [r["step"] for r in read_metrics(workdir, "train")]
    assert steps == sorted(set(steps)) and steps[-1] == 60


def test_rerun_of_finished_workdir_trains_nothing(tmp_path, devices8):
    config = regression_config(num_steps=10)
    first = train.train_and_evaluate(config, tmp_path, task=RegressionTask())
    again = train.train_and_evaluate(config, tmp_path, task=RegressionTask())
    assert again.resumed_from == 10
    chex.assert_trees_all_equal(jax.device_get(again.state.params), jax.device_get(first.state.params))
    saved = json.loads((tmp_path / "config.json").read_text())
    assert saved["num_steps"] == 10


def test_changed_config_keeps_the_old_one(tmp_path, devices8):
    train.train_and_evaluate(regression_config(num_steps=5), tmp_path, task=RegressionTask())
    train.train_and_evaluate(regression_config(num_steps=10), tmp_path, task=RegressionTask())
    assert json.loads((tmp_path / "config.prev-1.json").read_text())["num_steps"] == 5
    assert json.loads((tmp_path / "config.json").read_text())["num_steps"] == 10


def test_task_optimizer_hook_replaces_the_config_optimizer(tmp_path, devices8):
    import dataclasses

    import optax

    @dataclasses.dataclass(frozen=True, eq=False)
    class Frozen(RegressionTask):
        def optimizer(self, config):
            return optax.sgd(0.0)   # a zero step: the parameters must not move

    outcome = train.train_and_evaluate(regression_config(num_steps=5), tmp_path, task=Frozen())
    task = Frozen()
    init = task.init(jax.random.split(jax.random.PRNGKey(0))[0], task.train_data()[np.arange(2)])
    chex.assert_trees_all_equal(jax.device_get(outcome.state.params), jax.device_get(init))
    assert "learning_rate" not in read_metrics(tmp_path, "train")[-1]


def test_stateful_task_state_is_updated_evaluated_and_resumed(tmp_path, devices8):
    task = StatefulRegressionTask()
    config = regression_config(num_steps=12, checkpoint_every_steps=4, schedule={"name": "constant"})
    outcome = train.train_and_evaluate(config, tmp_path / "a", task=task)
    # The running mean is the momentum-0.9 EMA of the 12 training batches' means, by hand.
    arrays = task.train_data().arrays
    mean = np.zeros(task.dim, np.float32)
    for step in range(12):
        x = arrays["x"][train.pipeline.train_indices(task.num_examples, config.batch_size, config.seed, step)]
        mean = 0.9 * mean + 0.1 * x.mean(0)
    state_mean = np.asarray(jax.device_get(outcome.state.model_state["mean"]))
    np.testing.assert_allclose(state_mean, mean, rtol=1e-5, atol=1e-7)
    assert np.abs(mean).max() > 1e-3   # not vacuous
    # Evaluation centres with the running mean, not the batch mean.
    params = jax.device_get(outcome.state.params)
    by_hand = float(np.mean(np.asarray(task.evaluate(params, arrays, {"mean": mean})["mse"])))
    np.testing.assert_allclose(outcome.metrics["train/mse"], by_hand, rtol=1e-5)
    # Training in two runs (8 steps, then resume to 12) restores the state from the checkpoint.
    train.train_and_evaluate(regression_config(num_steps=8, checkpoint_every_steps=4,
                                               schedule={"name": "constant"}), tmp_path / "b", task=task)
    resumed = train.train_and_evaluate(config, tmp_path / "b", task=task)
    assert resumed.resumed_from == 8
    chex.assert_trees_all_equal(jax.device_get(resumed.state.model_state), jax.device_get(outcome.state.model_state))
    chex.assert_trees_all_equal(jax.device_get(resumed.state.params), params)
    restored = train.load_train_state(tmp_path / "a", task, config)
    np.testing.assert_allclose(np.asarray(restored.model_state["mean"]), state_mean)


def test_task_value_and_grad_hook_replaces_autodiff(tmp_path, devices8):
    import dataclasses

    @dataclasses.dataclass(frozen=True, eq=False)
    class HalfGrad(RegressionTask):
        def value_and_grad(self, params, batch, rng):
            (loss, metrics), grads = jax.value_and_grad(lambda p: self.loss(p, batch, rng), has_aux=True)(params)
            return (loss, {**metrics, "probe": jax.numpy.float32(7.0)}), jax.tree_util.tree_map(lambda g: 0.5 * g, grads)

    config = regression_config(num_steps=1, log_every_steps=1)
    _, plain = _one_step(devices8[:1], config, RegressionTask())
    _, half = _one_step(devices8[:1], config, HalfGrad())
    np.testing.assert_allclose(half["grad_norm"], 0.5 * plain["grad_norm"], rtol=1e-6)
    assert float(half["probe"]) == 7.0


_LOSS_TRACED_ONCE = chex.assert_max_traces(RegressionTask.loss, n=1)
_EVALUATE_TRACED_ONCE = chex.assert_max_traces(RegressionTask.evaluate, n=1)


class _TracedOnceTask(RegressionTask):
    """RegressionTask whose loss and evaluate raise if traced a second time (a recompiled step)."""

    def loss(self, params, batch, rng):
        return _LOSS_TRACED_ONCE(self, params, batch, rng)

    def evaluate(self, params, batch):
        return _EVALUATE_TRACED_ONCE(self, params, batch)


def test_train_and_eval_steps_are_traced_once(tmp_path, devices8):
    # 30 steps with logging, evaluation and checkpoints every 10 and a padded last eval batch: one
    # compiled train step and one compiled eval step for the whole run.
    config = regression_config(eval_every_steps=10, log_every_steps=5)
    outcome = train.train_and_evaluate(config, tmp_path, task=_TracedOnceTask(hidden=16), devices=devices8)
    assert int(outcome.state.step) == 30
    assert len(read_metrics(tmp_path, "eval")) == 3   # steps 10, 20 and the final one
