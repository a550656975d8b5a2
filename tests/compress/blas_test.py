"""single_threaded_blas: OpenBLAS limited to one thread inside the block, restored after."""

import numpy as np
import pytest

from jaxml.compress.blas import blas_threads, single_threaded_blas


def test_single_threaded_blas_sets_and_restores_the_thread_count():
    np.linalg.eigh(np.eye(3))   # NumPy's OpenBLAS is loaded
    before = blas_threads()
    if not before or set(before) == {1}:
        pytest.skip(f"needs an OpenBLAS running more than one thread; found {before}")
    with single_threaded_blas():
        assert blas_threads() == [1] * len(before)
        g = np.random.default_rng(0).normal(size=(64, 64))
        inside = np.linalg.eigh(g @ g.T)[0]
    assert blas_threads() == before
    np.testing.assert_allclose(inside, np.linalg.eigh(g @ g.T)[0], rtol=1e-10)
    with pytest.raises(ZeroDivisionError):   # restored on an exception too
        with single_threaded_blas():
            1 / 0
    assert blas_threads() == before
