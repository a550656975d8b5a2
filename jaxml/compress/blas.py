"""Single-threaded BLAS for the many small dense factorizations of compression (eigh, Cholesky).

NumPy's and SciPy's OpenBLAS run LAPACK on every core. On a busy machine (or beside XLA, or beside a
second test worker) their threads wait for each other at every BLAS-2 step of a 576 x 576 `eigh`,
which then takes ~20x longer than on one thread (measured: 0.46 s against 0.11 s wall for one
`eigh` of a 576 x 576 Gram matrix, 4.9 s against 0.30 s for a float32 SVD of 576 x 1536, on 2 busy
cores). Results do not depend on the thread count beyond float rounding order.

    with single_threaded_blas():
        np.linalg.eigh(g)
"""

from __future__ import annotations

from threadpoolctl import threadpool_limits


def single_threaded_blas() -> threadpool_limits:
    """A context manager (threadpoolctl) limiting every loaded BLAS library to one thread inside the
    block and restoring the previous counts after it."""
    return threadpool_limits(limits=1, user_api="blas")
