import jax.numpy as jnp
import pytest

from jaxml.core.benchmark import median_ms, timed


def test_timed_calls_once_to_compile_then_reps_times_and_returns_the_first_result():
    calls = []

    def fn():
        calls.append(1)
        return jnp.full((2,), len(calls))

    first_s, med_ms, result = timed(fn, 3)
    assert len(calls) == 4 and result.tolist() == [1, 1]
    assert first_s >= 0.0 and med_ms >= 0.0
    with pytest.raises(ValueError, match="reps=0"):
        median_ms(fn, 0)
