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


def _loop(step, start):
    """6 iterations of step (x -> (x_next, relative residual)) from start, summing the residuals."""
    import jax
    import jax.numpy as jnp

    def body(_, carry):
        x, r = carry
        x_next, res = step(x)
        return x_next, r + res
    return jax.lax.fori_loop(0, 6, body, (start, jnp.float32(0.0)))


def programs(impl: str, z, w, x, g):
    """The three jitted programs (forward loop, adjoint loop, weight gradient) of one implementation,
    or None where it does not apply ('direct' beyond the kernel's reach)."""
    import jax

    import kernels.cpu_conv3x3 as cpu_conv3x3
    from jaxml.papers.pcdeq.layers import conv3x3, conv_activation, conv_map
    from kernels.fixed_point.reference import relative_residual

    if impl == "direct":
        f = conv_map("softsign")
        if f.step_with_residual(w, x) is None:
            return None
        forward_step = f.step_with_residual
        adjoint_step = f.adjoint_map
        wgrad = lambda z, w, g: cpu_conv3x3.weight_grad(z, g)
    else:
        act = conv_activation("softsign")
        conv = lambda z, w: conv3x3(z, w, impl)

        def with_res(step):   # x -> (step(x), its relative residual), as the kernel's fused steps
            def fused(x):
                nxt = step(x)
                return nxt, relative_residual(nxt, x)
            return fused
        forward_step = lambda w, x: with_res(lambda z: act(conv(z, w) + x))

        def adjoint_step(w, z, x, g):
            vjp = jax.vjp(lambda z_: act(conv(z_, w) + x), z)[1]
            return with_res(lambda u: vjp(u)[0] + g)
        wgrad = lambda z, w, g: jax.vjp(lambda w_: conv(z, w_), w)[1](g)[0]

    forward = jax.jit(lambda z, w, x: _loop(forward_step(w, x), z))
    adjoint = jax.jit(lambda z, w, x, g: _loop(adjoint_step(w, z, x, g), g))
    wgrad = jax.jit(wgrad)
    return {"forward": lambda z, w, x, g: forward(z, w, x), "adjoint": adjoint,
            "wgrad": lambda z, w, x, g: wgrad(z, w, g)}


def main(argv):
    del argv
    import jax

    results = []
    for shape in SHAPES:
        c = shape[-1]
        keys = jax.random.split(jax.random.PRNGKey(0), 4)
        z, x, g = (jax.random.normal(k, shape) for k in keys[:3])
        w = jax.random.uniform(keys[3], (3, 3, c, c)) * 0.05
        progs = {impl: programs(impl, z, w, x, g) for impl in _IMPLS.value}
        progs = {impl: p for impl, p in progs.items() if p is not None}
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
