import time

import jax.numpy as jnp
import pytest

from jaxml.core.benchmark import call_seconds, median_ms, timed


def test_timed_calls_once_to_compile_then_reps_times_and_returns_the_first_result():
    calls = []

    def fn():
        calls.append(1)
        return jnp.full((2,), len(calls))

    first_s, med_ms, result = timed(fn, 3)
    assert len(calls) == 4 and result.tolist() == [1, 1]
    with pytest.raises(ValueError, match="reps=0"):
        median_ms(fn, 0)


def test_times_are_the_wall_time_of_the_call():
    def sleeper(seconds):
        time.sleep(seconds)
        return jnp.zeros(())

    seconds, value = call_seconds(lambda: sleeper(0.03))
    assert seconds >= 0.03 and float(value) == 0.0
    # Median of [0.2, 0.01, 0.01] s: at least the short sleep, and the one slow call does not move it.
    delays = iter([0.2, 0.01, 0.01])
    assert 10.0 <= median_ms(lambda: sleeper(next(delays)), 3) < 150.0
