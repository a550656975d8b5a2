"""jaxml.core.metrics.mean_std: the mean and sample spread shared by the papers' seed tables."""

import numpy as np
import pytest

from jaxml.core.metrics import mean_std


def test_mean_and_sample_standard_deviation():
    assert mean_std([1.0, 2.0, 3.0]) == pytest.approx((2.0, 1.0))
    assert mean_std([1.0, 3.0]) == (2.0, pytest.approx(np.sqrt(2.0)))
    assert mean_std([0.5]) == (0.5, 0.0)
    with pytest.raises(ValueError, match="non-empty"):
        mean_std([])
