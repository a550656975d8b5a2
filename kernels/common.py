"""Helpers shared by the kernel ops: choosing an implementation, checking block divisibility."""

from __future__ import annotations

import jax

IMPLEMENTATIONS = ("auto", "xla", "pallas")


def resolve_implementation(implementation: str, backend: str | None = None) -> str:
    """'auto' -> 'pallas' on GPU and TPU, 'xla' elsewhere; 'xla'/'pallas' pass through.

    On CPU, 'pallas' runs the kernel in interpret mode (see `interpret_default`).
    """
    if implementation not in IMPLEMENTATIONS:
        raise ValueError(f"implementation={implementation!r}; accepted: {IMPLEMENTATIONS}")
    if implementation != "auto":
        return implementation
    backend = backend or jax.default_backend()
    return "pallas" if backend in ("gpu", "cuda", "rocm", "tpu") else "xla"


def interpret_default(backend: str | None = None) -> bool:
    """Pallas kernels run in interpret mode on CPU (how CI tests them) and compiled elsewhere."""
    return (backend or jax.default_backend()) == "cpu"


def check_divisible(name: str, size: int, block_name: str, block: int) -> None:
    """Raises ValueError `f"{name}={size} must be a multiple of {block_name}={block}"`."""
    if block <= 0 or size % block:
        raise ValueError(f"{name}={size} must be a multiple of {block_name}={block}")
