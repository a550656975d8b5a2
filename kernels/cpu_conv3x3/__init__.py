"""A direct 3x3 'SAME' convolution for x86-64 CPUs with AVX-512, fused with an input scale, an
added array and an activation: an XLA FFI custom call (`conv3x3.cc`).

    out = act(conv3x3(scale * z, w) + add)      z, scale [n, h, w, c]; w [3, 3, c, o]; add, out [n, h, w, o]

Why: XLA:CPU (jax 0.10) runs a convolution through YNNPACK only when both channel counts exceed
16; below that it uses a slower convolution of its own, and every elementwise step around it is one
more pass over memory. pcDEQ's first block iterates a 12-channel convolution and its activation
(forward) or its transpose after a product with act' (adjoint) several times per training step.

The library is compiled on first use with the system's C++ compiler (`g++ -O3 -march=native`, the
XLA FFI headers that ship with jaxlib) into `$JAXML_CACHE/cpu_conv3x3/` (default `~/.cache/jaxml`),
keyed by the source, the flags and the jax version; nothing is downloaded. `available()` is False,
with the reason in `unavailable_reason()`, when the machine is not x86-64 with AVX-512F, when no
compiler is found or when the build fails (set `JAXML_CPU_CONV3X3=0` to switch it off); callers then
use their XLA path. Float32 only; o <= 16.
"""

from __future__ import annotations

import ctypes
import functools
import hashlib
import os
import pathlib
import platform
import shutil
import subprocess
import tempfile

import jax
import jax.numpy as jnp
import numpy as np

from kernels.fixed_point.reference import EPS as RESIDUAL_EPS   # relative_residual's

_SOURCE = pathlib.Path(__file__).with_name("conv3x3.cc")
_TARGET = "jaxml_cpu_conv3x3"
_TARGET_WGRAD = "jaxml_cpu_conv3x3_weight_grad"
_FLAGS = ["-O3", "-march=native", "-std=c++17", "-shared", "-fPIC"]
ACTIVATIONS = {None: 0, "identity": 0, "softsign": 1}
MAX_OUT_CHANNELS = 16


def _cache_dir() -> pathlib.Path:
    root = pathlib.Path(os.environ.get("JAXML_CACHE", pathlib.Path.home() / ".cache" / "jaxml")).expanduser()
    return root / "cpu_conv3x3"


def _cpu_has_avx512f() -> bool:
    if platform.machine().lower() not in ("x86_64", "amd64"):
        return False
    try:
        flags = pathlib.Path("/proc/cpuinfo").read_text()
    except OSError:
        return False
    return " avx512f" in flags


@functools.lru_cache(maxsize=None)
def _load() -> tuple[bool, str]:
    """Builds (once per source/flags/jax version) and registers the FFI target: (ok, reason)."""
    if os.environ.get("JAXML_CPU_CONV3X3", "1") == "0":
        return False, "switched off by JAXML_CPU_CONV3X3=0"
    if not _cpu_has_avx512f():
        return False, "needs an x86-64 CPU with AVX-512F"
    compiler = shutil.which(os.environ.get("CXX", "g++"))
    if compiler is None:
        return False, "no C++ compiler (g++ or $CXX) on PATH"
    source = _SOURCE.read_bytes()
    key = hashlib.sha256(source + " ".join(_FLAGS).encode() + jax.__version__.encode()).hexdigest()[:16]
    lib = _cache_dir() / f"conv3x3-{key}.so"
    if not lib.exists():
        lib.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=lib.parent) as tmp:
            out = pathlib.Path(tmp) / lib.name
            cmd = [compiler, *_FLAGS, f"-I{jax.ffi.include_dir()}", str(_SOURCE), "-o", str(out)]
            proc = subprocess.run(cmd, capture_output=True, text=True)
            if proc.returncode != 0:
                return False, f"build failed ({' '.join(cmd)}): {proc.stderr[-2000:]}"
            os.replace(out, lib)   # atomic: concurrent builders leave one complete file
    handle = ctypes.cdll.LoadLibrary(str(lib))
    jax.ffi.register_ffi_target(_TARGET, jax.ffi.pycapsule(handle.JaxmlConv3x3), platform="cpu")
    jax.ffi.register_ffi_target(_TARGET_WGRAD, jax.ffi.pycapsule(handle.JaxmlConv3x3WeightGrad), platform="cpu")
    return True, ""


def available() -> bool:
    """Whether the kernel can run here (builds and registers it on the first call)."""
    return _load()[0]


def unavailable_reason() -> str:
    return _load()[1]


def conv3x3(z: jax.Array, w: jax.Array, *, scale: jax.Array | None = None, add: jax.Array | None = None,
            activation: str | None = None, residual: bool = False):
    """act(conv3x3_same(scale * z, w) + add) on the CPU, NHWC x HWIO, float32.

    Args:
      z: [n, h, w, c]; scale: None or z's shape; w: [3, 3, c, o] with o <= 16;
      add: None or [n, h, w, o]; activation: None / 'identity' or 'softsign'.
      residual: also return the step's relative residual ||out - z|| / (||out|| + 1e-5) (c == o), from
        sums the kernel accumulates while writing out (no second pass over memory).
    Returns: out [n, h, w, o] float32, or (out, residual) with residual a float32 scalar. Not
      differentiable by itself (callers give it a VJP).
    Raises: ValueError on other shapes, dtypes or activations; RuntimeError when `available()` is False.
    """
    if activation not in ACTIVATIONS:
        raise ValueError(f"activation={activation!r}; accepted: {sorted(k for k in ACTIVATIONS if k)} or None")
    if z.ndim != 4 or w.ndim != 4 or w.shape[:2] != (3, 3) or w.shape[2] != z.shape[3]:
        raise ValueError(f"conv3x3 takes z [n, h, w, c] and w [3, 3, c, o]; got {z.shape}, {w.shape}")
    o = w.shape[3]
    if not 1 <= o <= MAX_OUT_CHANNELS:
        raise ValueError(f"conv3x3: o={o}; the kernel takes 1..{MAX_OUT_CHANNELS} output channels")
    out_shape = z.shape[:3] + (o,)
    if scale is not None and scale.shape != z.shape:
        raise ValueError(f"scale must have z's shape {z.shape}; got {scale.shape}")
    if add is not None and add.shape != out_shape:
        raise ValueError(f"add must have the output's shape {out_shape}; got {add.shape}")
    for name, a in (("z", z), ("w", w), ("scale", scale), ("add", add)):
        if a is not None and a.dtype != jnp.float32:
            raise ValueError(f"conv3x3: {name} must be float32; got {a.dtype}")
    if residual and o != z.shape[3]:
        raise ValueError(f"conv3x3: residual=True compares out with z and needs c == o; got c={z.shape[3]}, o={o}")
    if not available():
        raise RuntimeError(f"kernels.cpu_conv3x3 is not available here: {unavailable_reason()}")
    dummy = jnp.zeros((1,), jnp.float32)
    call = jax.ffi.ffi_call(_TARGET, (jax.ShapeDtypeStruct(out_shape, jnp.float32),
                                      jax.ShapeDtypeStruct((2,), jnp.float32)))
    out, sums = call(z, w, dummy if scale is None else scale, dummy if add is None else add,
                     act=np.int32(ACTIVATIONS[activation]), use_scale=np.int32(scale is not None),
                     use_add=np.int32(add is not None), residual=np.int32(residual))
    if not residual:
        return out
    return out, jnp.sqrt(sums[0]) / (jnp.sqrt(sums[1]) + RESIDUAL_EPS)


def weight_grad(z: jax.Array, g: jax.Array) -> jax.Array:
    """The 3x3 'SAME' convolution's weight gradient dw[i, j, c, o] = sum z[n, y+i-1, x+j-1, c] g[n, y, x, o].

    Args: z [n, h, w, c], g [n, h, w, o], float32, c and o <= 16. Returns dw [3, 3, c, o] float32
    (sums in float32 per image row and kernel tap, float64 across rows).
    Raises: ValueError on other shapes or dtypes; RuntimeError when `available()` is False.
    """
    if z.ndim != 4 or g.ndim != 4 or z.shape[:3] != g.shape[:3]:
        raise ValueError(f"weight_grad takes z [n, h, w, c] and g [n, h, w, o]; got {z.shape}, {g.shape}")
    c, o = z.shape[3], g.shape[3]
    if not (1 <= c <= MAX_OUT_CHANNELS and 1 <= o <= MAX_OUT_CHANNELS):
        raise ValueError(f"weight_grad: c={c}, o={o}; the kernel takes 1..{MAX_OUT_CHANNELS} of each")
    for name, a in (("z", z), ("g", g)):
        if a.dtype != jnp.float32:
            raise ValueError(f"weight_grad: {name} must be float32; got {a.dtype}")
    if not available():
        raise RuntimeError(f"kernels.cpu_conv3x3 is not available here: {unavailable_reason()}")
    return jax.ffi.ffi_call(_TARGET_WGRAD, jax.ShapeDtypeStruct((3, 3, c, o), jnp.float32))(z, g)
