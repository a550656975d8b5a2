"""A persistent XLA compilation cache for the scripts (`scripts/run.py`, `scripts/reproduce.py`).

On a CPU most of a short experiment's time is XLA compilation. With the cache, a program compiled
once (SmolLM2's forward pass, a training step) is read back from disk by the next run and by other
experiments of the same run that build the same program. The folder is, in order of precedence,
`JAX_COMPILATION_CACHE_DIR` (JAX's own variable), else `$JAXML_CACHE/xla` (default
`~/.cache/jaxml/xla`); `JAXML_XLA_CACHE=0` turns the cache off.
"""

from __future__ import annotations

import os
import pathlib

import jax


def enable(min_compile_seconds: float = 0.5) -> pathlib.Path | None:
    """Points JAX at the cache folder (call before the first compilation); returns it, or None if off."""
    if os.environ.get("JAXML_XLA_CACHE", "1") == "0":
        return None
    folder = os.environ.get("JAX_COMPILATION_CACHE_DIR")
    if not folder:
        folder = str(pathlib.Path(os.environ.get("JAXML_CACHE", pathlib.Path.home() / ".cache" / "jaxml")) / "xla")
        jax.config.update("jax_compilation_cache_dir", folder)
    if "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS" not in os.environ:
        jax.config.update("jax_persistent_cache_min_compile_time_secs", min_compile_seconds)
    return pathlib.Path(folder)
