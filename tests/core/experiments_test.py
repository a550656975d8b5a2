"""Every registered experiment's tiny config runs: papers added later are covered automatically."""

import math
import pathlib

import pytest

from jaxml.core import registry
from jaxml.core.config import load_config
from jaxml.core.experiment import VERDICTS, Claim, Result

EXPERIMENTS = registry.list_experiments()

# Checks of particular tiny runs beyond the common ones below.
EXPECTED = {
    # 20 steps of batch 32 on 512 images: well above the 10% of guessing, far from converged.
    "examples/fashion_mnist_cnn": lambda r: 0.2 < r.metrics["test_accuracy"] < 0.9,
}


@pytest.mark.parametrize("name", EXPERIMENTS)
def test_tiny_config_runs_and_reports_finite_metrics(name, tmp_path, devices8):
    config = load_config(f"{registry.config_path(name)}:tiny")
    result = registry.get_experiment(name)(config, tmp_path / "work")
    assert isinstance(result, Result)
    assert result.metrics, f"{name} returned no metrics"
    assert all(math.isfinite(float(v)) for v in result.metrics.values()), result.metrics
    assert result.headline in result.metrics
    for figure in result.figures:
        assert pathlib.Path(figure).stat().st_size > 0
    assert len(result.figures) == len(set(result.figures)), result.figures
    assert EXPECTED.get(name, lambda r: True)(result), result.metrics
    if name.endswith("/reproduce"):   # the report's row: at least the paper's headline claim, with a verdict
        assert result.claims and all(isinstance(c, Claim) and c.verdict in VERDICTS for c in result.claims)


