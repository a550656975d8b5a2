"""Pallas kernels, one op per folder: `reference.py` (the jnp spec and XLA path), `pallas.py`
(the kernel and its frozen `BlockSizes`), `api.py` (`op(..., implementation='auto'|'xla'|'pallas')`).
"""
