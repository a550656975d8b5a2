"""The long versions of the AttnLRP experiment checks (`pytest -m slow`); the default suite runs
every experiment's tiny config (tests/core/experiments_test.py)."""

import math

import pytest

from jaxml.core import registry
from jaxml.core.config import load_config

pytestmark = pytest.mark.slow


def test_faithfulness_vit_trains_the_vit_it_explains(tmp_path, devices8):
    """The tiny config explains an untrained ViT; here the same config trains it first (10 steps of
    the examples/fashion_mnist_vit loop), as the quick and full configs do."""
    name = "attnlrp/faithfulness_vit"
    config = load_config(f"{registry.config_path(name)}:tiny", ["train_vit=True"])
    result = registry.get_experiment(name)(config, tmp_path)
    accuracy = result.metrics["vit_test_accuracy"]
    assert accuracy > 0.2 and math.isfinite(result.metrics["abc_attnlrp_gamma"])   # chance 0.1; measured 0.359
    assert (tmp_path / "vit").is_dir()    # the training run's checkpoints and metrics
    assert result.claims[0].verdict == "not comparable"   # tiny scale
