"""single_threaded_blas: BLAS limited to one thread inside the block, restored after."""

import numpy as np
import pytest
from threadpoolctl import threadpool_info

from jaxml.compress.blas import single_threaded_blas


def _blas_threads():
    return [i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"]


def test_single_threaded_blas_sets_and_restores_the_thread_count():
    import scipy.linalg  # noqa: F401  (SciPy's own OpenBLAS is loaded too)
    np.linalg.eigh(np.eye(3))
    before = _blas_threads()
    if not before or set(before) == {1}:
        pytest.skip(f"needs a BLAS running more than one thread; found {before}")
    with single_threaded_blas():
        assert _blas_threads() == [1] * len(before)
        g = np.random.default_rng(0).normal(size=(64, 64))
        inside = np.linalg.eigh(g @ g.T)[0]
    assert _blas_threads() == before
    np.testing.assert_allclose(inside, np.linalg.eigh(g @ g.T)[0], rtol=1e-10)
    with pytest.raises(ZeroDivisionError):   # restored on an exception too
        with single_threaded_blas():
            1 / 0
    assert _blas_threads() == before
