"""Helpers shared by the kernel ops: the target platform, choosing an implementation, interpret
modes, compiler parameters per backend, checking block divisibility.

Targets. A kernel is built for one of three targets, which decide its block shapes and compiler
parameters:

- "tpu": Mosaic TPU (compiled on a TPU, or run on CPU by Pallas' TPU interpreter, which simulates
  VMEM/HBM, DMAs and the grid: `tpu_interpret_params()`). Blocks obey Mosaic's tiling rule: the
  last two block dimensions are multiples of (8, 128) or equal the array's.
- "gpu": Triton (jax < 0.11, where `jax.experimental.pallas.triton` exists): power-of-2 tiles,
  dots of at least 16 x 16.
- "interpret": Pallas' generic interpreter on CPU (how the default suite runs the kernels); it
  takes the GPU target's blocks.

`target_platform(backend, interpret)` picks one; `backend=` exists so that code traced on a CPU
can be lowered for another platform (`jax.jit(f).trace(...).lower(lowering_platforms=("tpu",))`).

The jax version story: the Triton backend of Pallas is deprecated from jax 0.11. When it is
missing, 'auto' on a GPU falls back to the XLA path with a warning (`resolve_implementation`), and
asking for 'pallas' on a GPU raises an error naming the jax version.
"""

from __future__ import annotations

import functools
import warnings

import jax

IMPLEMENTATIONS = ("auto", "xla", "pallas")
TARGETS = ("tpu", "gpu", "interpret")
# Mosaic TPU's tile of a 32-bit array's last two dimensions: (sublanes, lanes).
TPU_SUBLANES, TPU_LANES = 8, 128
_GPU_BACKENDS = ("gpu", "cuda", "rocm")


def platform_of(backend: str | None = None) -> str:
    """'tpu', 'gpu' or 'cpu' for a backend or lowering-platform name (default: jax's backend)."""
    backend = (backend or jax.default_backend()).lower()
    if backend in _GPU_BACKENDS:
        return "gpu"
    if backend == "tpu":
        return "tpu"
    if backend == "cpu":
        return "cpu"
    raise ValueError(f"backend={backend!r}; accepted: cpu, tpu, {', '.join(_GPU_BACKENDS)}")


def is_tpu_interpret(interpret) -> bool:
    """Whether `interpret` asks for Pallas' TPU interpreter (a `pltpu.InterpretParams`)."""
    from jax.experimental.pallas import tpu as pltpu
    return isinstance(interpret, pltpu.InterpretParams)


def tpu_interpret_params(**overrides):
    """`pltpu.InterpretParams` for tests: race detection on, uninitialised memory filled with NaN
    (a kernel that reads what it never wrote returns NaN instead of a plausible value)."""
    from jax.experimental.pallas import tpu as pltpu
    return pltpu.InterpretParams(**{"detect_races": True, "uninitialized_memory": "nan", **overrides})


def target_platform(backend: str | None = None, interpret=None) -> str:
    """The target a kernel is built for (see the module docstring): 'tpu' for the TPU interpreter or
    a TPU backend, 'interpret' for the generic interpreter, else the backend's platform."""
    if is_tpu_interpret(interpret):
        return "tpu"
    platform = platform_of(backend)
    if interpret or platform == "cpu":
        return "interpret"
    return platform


@functools.lru_cache(maxsize=1)
def triton_available() -> bool:
    """Whether this jax has Pallas' Triton backend (removed after its deprecation in jax 0.11)."""
    try:
        from jax.experimental.pallas import triton  # noqa: F401
    except ImportError:
        return False
    return True


def resolve_implementation(implementation: str, backend: str | None = None) -> str:
    """'auto' -> 'pallas' on TPU, and on GPU where Pallas' Triton backend exists; 'xla' elsewhere
    (with a warning on a GPU without Triton); 'xla'/'pallas' pass through ('pallas' on a GPU
    without Triton raises).

    On CPU, 'pallas' runs the kernel in interpret mode (see `interpret_default`).
    """
    if implementation not in IMPLEMENTATIONS:
        raise ValueError(f"implementation={implementation!r}; accepted: {IMPLEMENTATIONS}")
    platform = platform_of(backend)
    if platform == "gpu" and not triton_available():
        if implementation == "pallas":
            raise RuntimeError(f"implementation='pallas' on a GPU needs Pallas' Triton backend, which jax "
                               f"{jax.__version__} does not have (deprecated from jax 0.11): use "
                               "implementation='xla' or 'auto', or jax < 0.11")
        if implementation == "auto":
            warnings.warn(f"jax {jax.__version__} has no Pallas Triton backend: the kernels fall back to "
                          "their XLA path on this GPU", RuntimeWarning, stacklevel=2)
            return "xla"
    if implementation != "auto":
        return implementation
    return "pallas" if platform in ("gpu", "tpu") else "xla"


def interpret_default(backend: str | None = None) -> bool:
    """Pallas kernels run in interpret mode on CPU (how CI tests them) and compiled elsewhere."""
    return platform_of(backend) == "cpu"


def resolve_interpret(interpret, backend: str | None = None):
    """`interpret` as a kernel takes it: None -> `interpret_default(backend)`; a TPU
    `InterpretParams` is kept (the TPU interpreter); anything else becomes a bool."""
    if interpret is None:
        return interpret_default(backend)
    return interpret if is_tpu_interpret(interpret) else bool(interpret)


def compiler_params(target: str, *, dimension_semantics=None, num_warps: int = 4, num_stages: int = 2):
    """Compiler parameters for `target`: Mosaic TPU's (grid dimension semantics, e.g.
    ("parallel", "arbitrary")) or Triton's (warps, pipeline stages); None for the generic interpreter."""
    if target == "tpu":
        from jax.experimental.pallas import tpu as pltpu
        return pltpu.CompilerParams(dimension_semantics=dimension_semantics)
    if target == "gpu":
        if not triton_available():
            raise RuntimeError(f"jax {jax.__version__} has no Pallas Triton backend (deprecated from jax 0.11)")
        from jax.experimental.pallas import triton as pltriton
        return pltriton.CompilerParams(num_warps=num_warps, num_stages=num_stages)
    if target == "interpret":
        return None
    raise ValueError(f"target={target!r}; accepted: {TARGETS}")


def check_target(target: str) -> None:
    """Raises ValueError unless `target` is one of TARGETS."""
    if target not in TARGETS:
        raise ValueError(f"target={target!r}; accepted: {TARGETS}")


def check_divisible(name: str, size: int, block_name: str, block: int) -> None:
    """Raises ValueError `f"{name}={size} must be a multiple of {block_name}={block}"`."""
    if block <= 0 or size % block:
        raise ValueError(f"{name}={size} must be a multiple of {block_name}={block}")


def check_tpu_block(name: str, block: tuple[int, ...], array: tuple[int, ...]) -> None:
    """Mosaic TPU's tiling rule for a block of `array`: each of the last two block dimensions is a
    multiple of (8, 128) respectively or equals the array's (a 1-D block: a multiple of 128 or the
    whole array). Raises ValueError naming the block."""
    tiles = (TPU_SUBLANES, TPU_LANES)[-min(2, len(block)):] if block else ()
    for axis, tile in zip(range(len(block) - len(tiles), len(block)), tiles):
        b, a = block[axis], array[axis]
        if b != a and b % tile:
            raise ValueError(f"{name}: block {tuple(block)} of array {tuple(array)} breaks Mosaic TPU's tiling: "
                             f"dimension {axis} must be a multiple of {tile} or equal {a}")
