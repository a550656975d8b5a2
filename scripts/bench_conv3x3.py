#!/usr/bin/env python3
"""Milliseconds of pcDEQ's 3x3 convolution (`jaxml.papers.pcdeq.layers.conv3x3`) per implementation,
on ONE pinned CPU thread, at the multi-conv network's three block shapes (batch 64, float32).

    python scripts/bench_conv3x3.py [--reps=21] [--impls=xla,patches,pairs,auto,direct] [--out=conv3x3.json]

For each shape and implementation, interleaved (every repetition runs each implementation once, so
all see the same load), the median wall time of:
  forward  6 iterations z <- softsign(conv(z) + x) and the relative residual, in a `fori_loop`
           (the DEQ's forward solve);
  adjoint  6 iterations u <- conv^T(act'(pre) * u) + g (the backward solve; conv^T is the
           implementation's own adjoint, `jax.vjp`);
  wgrad    the weight gradient (`jax.vjp` w.r.t. the kernel).
Ratios are against 'xla' (`lax.conv_general_dilated`) measured in the same run. 'direct' is the
CPU kernel `kernels.cpu_conv3x3` as the pcDEQ layers use it (`layers.conv_map`, at most 16
channels): forward = one fused call per iteration (convolution, injection, softsign and the
residual's sums), adjoint = one fused call (act' product, transposed convolution, + g, residual),
wgrad = the kernel's weight gradient; skipped where it does not apply.
"""

from __future__ import annotations

import os

os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") +
                           " --xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1").strip()
if hasattr(os, "sched_setaffinity"):
    os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})

import json  # noqa: E402
import pathlib  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402
from absl import app, flags  # noqa: E402

_REPS = flags.DEFINE_integer("reps", 21, "Interleaved repetitions (the median is reported).")
_IMPLS = flags.DEFINE_list("impls", ["xla", "patches", "pairs", "auto", "direct"], "conv3x3 implementations.")
_OUT = flags.DEFINE_string("out", None, "Write the results as JSON here.")
SHAPES = [(64, 28, 28, 12), (64, 13, 13, 24), (64, 6, 6, 48)]


def programs(impl: str):
    """The three jitted programs (forward loop, adjoint loop, weight gradient) of one implementation."""
    import jax
    import jax.numpy as jnp

    from jaxml.papers.pcdeq.layers import conv3x3, conv_activation

    act = conv_activation("softsign")
    conv = lambda z, w: conv3x3(z, w, impl)
    if impl == "direct":
        return _direct_programs()

    @jax.jit
    def forward(z, w, x):
        def body(_, carry):
            z, r = carry
            zn = act(conv(z, w) + x)
            return zn, r + jnp.linalg.norm(zn - z) / jnp.linalg.norm(zn)
        return jax.lax.fori_loop(0, 6, body, (z, 0.0))

    @jax.jit
    def adjoint(z, w, x, g):
        _, vjp = jax.vjp(lambda z_: act(conv(z_, w) + x), z)

        def body(_, carry):
            u, r = carry
            un = vjp(u)[0] + g
            return un, r + jnp.linalg.norm(un - u) / jnp.linalg.norm(un)
        return jax.lax.fori_loop(0, 6, body, (g, 0.0))

    @jax.jit
    def wgrad(z, w, g):
        return jax.vjp(lambda w_: conv(z, w_), w)[1](g)[0]

    return {"forward": lambda z, w, x, g: forward(z, w, x), "adjoint": adjoint,
            "wgrad": lambda z, w, x, g: wgrad(z, w, g)}


def _direct_programs():
    import jax
    from jax import numpy as jnp

    import kernels.cpu_conv3x3 as cpu_conv3x3
    from jaxml.papers.pcdeq.layers import conv_map

    f = conv_map("softsign")

    @jax.jit
    def forward(z, w, x):
        step = f.step_with_residual(w, x)

        def body(_, carry):
            z, r = carry
            zn, res = step(z)
            return zn, r + res
        return jax.lax.fori_loop(0, 6, body, (z, jnp.float32(0.0)))

    @jax.jit
    def adjoint(z, w, x, g):
        step = f.adjoint_map(w, z, x, g)

        def body(_, carry):
            u, r = carry
            un, res = step(u)
            return un, r + res
        return jax.lax.fori_loop(0, 6, body, (g, jnp.float32(0.0)))

    return {"forward": lambda z, w, x, g: forward(z, w, x), "adjoint": adjoint,
            "wgrad": jax.jit(lambda z, w, x, g: cpu_conv3x3.weight_grad(z, g))}


def _direct_applies(shape) -> bool:
    import kernels.cpu_conv3x3 as cpu_conv3x3
    return shape[-1] <= cpu_conv3x3.MAX_OUT_CHANNELS and cpu_conv3x3.available()


def main(argv):
    del argv
    import jax

    results = []
    for shape in SHAPES:
        c = shape[-1]
        keys = jax.random.split(jax.random.PRNGKey(0), 4)
        z, x, g = (jax.random.normal(k, shape) for k in keys[:3])
        w = jax.random.uniform(keys[3], (3, 3, c, c)) * 0.05
        progs = {impl: programs(impl) for impl in _IMPLS.value if impl != "direct" or _direct_applies(shape)}
        for p in progs.values():
            for f in p.values():
                jax.block_until_ready(f(z, w, x, g))
        times = {(impl, name): [] for impl in progs for name in progs[impl]}
        for _ in range(_REPS.value):
            for impl, p in progs.items():
                for name, f in p.items():
                    t0 = time.perf_counter()
                    jax.block_until_ready(f(z, w, x, g))
                    times[impl, name].append(time.perf_counter() - t0)
        for name in ("forward", "adjoint", "wgrad"):
            med = {impl: float(np.median(times[impl, name])) * 1e3 for impl in progs}
            base = med.get("xla")
            row = {"shape": list(shape), "program": name, "ms": med}
            results.append(row)
            cells = "  ".join(f"{impl} {ms:6.2f}" + (f" ({base / ms:4.2f}x)" if base else "")
                              for impl, ms in med.items())
            print(f"{'x'.join(map(str, shape[1:]))} {name:8s} {cells}", flush=True)
    if _OUT.value:
        pathlib.Path(_OUT.value).write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    app.run(main)
