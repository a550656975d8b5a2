"""Kernels, one op per folder.

Pallas kernels (GPU/TPU, interpreted on CPU in the tests): `reference.py` (the jnp spec and XLA
path), `pallas.py` (the kernel and its frozen `BlockSizes`), `api.py`
(`op(..., implementation='auto'|'xla'|'pallas')`): `attention_lrp`, `lqer_matmul`, `fixed_point`.

One CPU kernel: `cpu_conv3x3`, a direct 3x3 convolution for x86-64 with AVX-512 as an XLA FFI custom
call (C++, built on first use with the system compiler), which pcDEQ's conv layers use on the CPU
where XLA:CPU has no fast convolution (at most 16 channels); without a compiler or AVX-512 they keep
their XLA path.
"""
