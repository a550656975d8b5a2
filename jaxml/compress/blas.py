"""Single-threaded OpenBLAS for the many small dense factorizations of compression (eigh, Cholesky).

NumPy's OpenBLAS runs LAPACK on every core. On a busy machine (or beside XLA, or beside a second
test worker) its threads wait for each other at every BLAS-2 step of a 576 x 576 `eigh`, which
then takes ~20x longer than on one thread (measured: 0.46 s against 0.11 s wall for one `eigh`
of a 576 x 576 Gram matrix, 4.9 s against 0.30 s for a float32 SVD of 576 x 1536, on 2 busy
cores). Results do not depend on the thread count beyond float rounding order.

    with single_threaded_blas():
        np.linalg.eigh(g)

It finds the OpenBLAS libraries loaded in the process (NumPy's and SciPy's wheels bundle their
own) through `/proc/self/maps` and calls their `*_set_num_threads` entry points, as threadpoolctl
does; where there is none (another BLAS, another OS) it does nothing.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools

_SETTERS = ("scipy_openblas_set_num_threads64_", "scipy_openblas_set_num_threads", "openblas_set_num_threads64_",
            "openblas_set_num_threads")
_GETTERS = ("scipy_openblas_get_num_threads64_", "scipy_openblas_get_num_threads", "openblas_get_num_threads64_",
            "openblas_get_num_threads")


@functools.lru_cache(maxsize=None)
def _libraries(paths: tuple[str, ...]) -> tuple[tuple, ...]:
    found = []
    for path in paths:
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        setter = next((getattr(lib, n) for n in _SETTERS if hasattr(lib, n)), None)
        getter = next((getattr(lib, n) for n in _GETTERS if hasattr(lib, n)), None)
        if setter is not None and getter is not None:
            setter.argtypes, setter.restype, getter.restype = [ctypes.c_int], None, ctypes.c_int
            found.append((setter, getter))
    return tuple(found)


def _openblas_libraries() -> tuple[tuple, ...]:
    try:
        with open("/proc/self/maps") as f:
            paths = sorted({line.split()[-1] for line in f if "openblas" in line.lower() and ".so" in line})
    except OSError:
        return ()
    return _libraries(tuple(paths))


@contextlib.contextmanager
def single_threaded_blas():
    """Runs the block with every loaded OpenBLAS limited to one thread, then restores the counts."""
    libraries = _openblas_libraries()
    before = [getter() for _, getter in libraries]
    for setter, _ in libraries:
        setter(1)
    try:
        yield
    finally:
        for (setter, _), n in zip(libraries, before):
            setter(n)


def blas_threads() -> list[int]:
    """The thread count of each loaded OpenBLAS (empty when none is found)."""
    return [getter() for _, getter in _openblas_libraries()]
