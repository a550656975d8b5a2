"""The Fashion-MNIST ViT example: the tiny run learns, and its checkpoint reloads to the same model."""

import numpy as np
import pytest

from jaxml.core import registry
from jaxml.core.config import load_config
from jaxml.core.examples import vit
from jaxml.core.train import load_state_params

NAME = "examples/fashion_mnist_vit"


def test_tiny_vit_learns_and_its_checkpoint_reproduces_the_test_accuracy(tmp_path, devices8):
    config = load_config(f"{registry.config_path(NAME)}:tiny")
    result = registry.get_experiment(NAME)(config, tmp_path)
    # 20 steps of batch 32 on 512 images: well above the 10% of guessing, far from converged.
    assert 0.2 < result.metrics["test_accuracy"] < 0.9
    task = registry.get_task(NAME)(config)
    assert isinstance(task.model, vit.ViT) and task.model.patch_size == config.model.patch_size
    params = load_state_params(tmp_path, task, config)
    test = task.eval_data()["test"]
    per_example = task.evaluate(params, test[np.arange(len(test))])
    assert float(np.mean(per_example["accuracy"])) == pytest.approx(result.metrics["test_accuracy"], abs=1e-6)
