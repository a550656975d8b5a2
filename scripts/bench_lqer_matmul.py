#!/usr/bin/env python3
"""Speed of `kernels.lqer_matmul`: the fused LQER GEMM against its baselines, side by side.

    python scripts/bench_lqer_matmul.py [--rows=1,16,512] [--shapes=4096x4096,576x1536] [--rank=32]
        [--dtype=bfloat16] [--reps=20] [--out=bench.json]

At each shape (K x N weight, M rows of activations) and in this one process on this device, after
a warm-up call (compilation excluded and reported separately), the median of --reps of:
  fused     the Pallas kernel: MXINT4 weight dequantized in the kernel + the rank-r LQER path
  kernel_r0 the same kernel without the low-rank path (the plain W4A8 GEMM): fused / kernel_r0
            is the price of the low-rank correction
  xla       implementation='xla': the weight dequantized by XLA, then the main GEMM and the
            low-rank GEMMs as separate XLA ops: xla / fused > 1 means the kernel is faster
The default shapes are a 4096 x 4096 projection (LLaMA-7B's q/k/v/o) and SmolLM2-135M's MLP
(576 x 1536), M in {1, 16, 512} (decoding, small batch, prefill), rank 32 (LQER's W4A8 setting).
The largest |fused - xla| is printed as a sanity check.

The kernel variant follows jax's backend (`lqer_matmul`'s default `backend=`): the Mosaic kernel
(grid over K, (8, 128) tiles) on a TPU, the Triton one on a GPU. On CPU the kernel runs only in
interpret mode, which is a correctness tool and not a benchmark: the script says so, times the
XLA path alone at a reduced shape, and exits quickly. The device numbers come from
`scripts/device_check.sh`; the kernel has not yet been compiled on a TPU or GPU (see
`kernels/lqer_matmul/pallas.py`).
"""

from __future__ import annotations

import json
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

from jaxml.core.benchmark import timed  # noqa: E402

from absl import app, flags, logging  # noqa: E402

_ROWS = flags.DEFINE_list("rows", ["1", "16", "512"], "Rows M of the activations x [M, K].")
_SHAPES = flags.DEFINE_list("shapes", ["4096x4096", "576x1536"], "Weight shapes KxN (in x out).")
_RANK = flags.DEFINE_integer("rank", 32, "LQER rank r of A [K, r] and B [r, N].")
_DTYPE = flags.DEFINE_enum("dtype", "bfloat16", ["bfloat16", "float32"], "Activation dtype.")
_REPS = flags.DEFINE_integer("reps", 20, "Timed repetitions (the median is reported).")
_OUT = flags.DEFINE_string("out", None, "Write the results as JSON here.")
_CPU_INTERPRET = flags.DEFINE_bool("cpu_interpret", False, "On CPU, also run the interpret-mode kernel at the "
                                   "given shapes: a smoke test of this script, not a benchmark.")



def _operands(m, k, n, rank, dtype, seed=0):
    import jax
    import jax.numpy as jnp

    from jaxml.compress.quantizers import mxint
    from kernels.lqer_matmul import pack

    kx, kw, ka, kb = jax.random.split(jax.random.PRNGKey(seed), 4)
    x = jax.random.normal(kx, (m, k), jnp.float32).astype(dtype)
    w = jax.jit(pack)(jax.random.normal(kw, (k, n), jnp.float32) * k ** -0.5)
    a = mxint(jax.random.normal(ka, (k, rank), jnp.float32) * k ** -0.5, 8, 16, axis=0)
    b = mxint(jax.random.normal(kb, (rank, n), jnp.float32) * 0.01, 8, 16, axis=0)
    return x, w, a, b


def main(argv):
    del argv
    if not flags.FLAGS["verbosity"].present:
        logging.set_verbosity(logging.WARNING)
    import jax
    import jax.numpy as jnp

    from kernels.lqer_matmul import lqer_matmul

    backend = jax.default_backend()
    on_cpu = backend == "cpu"
    dtype = jnp.dtype(_DTYPE.value)
    rows = [int(v) for v in _ROWS.value]
    shapes = [tuple(int(v) for v in s.lower().split("x")) for s in _SHAPES.value]
    reps = _REPS.value
    variants = ("fused", "kernel_r0", "xla")
    if on_cpu and _CPU_INTERPRET.value:
        print("CPU: the Pallas numbers below are interpret mode, NOT a benchmark (smoke test of the script).")
    elif on_cpu:
        print("CPU: Pallas kernels run only in interpret mode here, which is not a benchmark; timing the "
              "XLA path alone at a reduced shape (the kernel numbers come from a GPU run).")
        rows, shapes, reps, variants = [r for r in rows if r <= 16] or rows[:1], [min(shapes)], 3, ("xla",)
    rank = _RANK.value
    results = {"device": str(jax.devices()[0]), "backend": backend, "jax": jax.__version__,
               "dtype": dtype.name, "rank": rank, "shapes": []}
    print(f"device {results['device']}; jax {jax.__version__}; x {dtype.name}; W MXINT4 (blocks of 16 "
          f"along K); X, XA, XAB MXINT8; rank {rank}")
    calls = {
        "fused": jax.jit(lambda x, w, a, b: lqer_matmul(x, w, a, b, implementation="pallas")),
        "kernel_r0": jax.jit(lambda x, w, a, b: lqer_matmul(x, w, implementation="pallas")),
        "xla": jax.jit(lambda x, w, a, b: lqer_matmul(x, w, a, b, implementation="xla")),
    }
    failed = False
    for k, n in shapes:
        for m in rows:
            x, w, a, b = _operands(m, k, n, rank, dtype)
            row = {"m": m, "k": k, "n": n}
            outputs = {}
            for name in variants:
                try:
                    first, ms, out = timed(lambda: calls[name](x, w, a, b), reps)
                except Exception as e:  # a kernel that does not compile here is a result, not a crash
                    failed = True
                    row[name] = {"error": f"{type(e).__name__}: {str(e)[:500]}"}
                    print(f"M {m:4d} K {k:5d} N {n:5d} {name:>9}: FAILED {row[name]['error']}")
                    continue
                outputs[name] = out
                row[name] = {"ms": ms, "first_call_s_incl_compile": first}
                print(f"M {m:4d} K {k:5d} N {n:5d} {name:>9}: {ms:9.4f} ms   (first call {first:.1f} s)")
            if "fused" in outputs and "kernel_r0" in outputs:
                row["fused_over_r0"] = row["fused"]["ms"] / row["kernel_r0"]["ms"]
            if "fused" in outputs and "xla" in outputs:
                row["xla_over_fused"] = row["xla"]["ms"] / row["fused"]["ms"]
                row["max_abs_diff_fused_xla"] = float(jnp.max(jnp.abs(
                    outputs["fused"].astype(jnp.float32) - outputs["xla"].astype(jnp.float32))))
            if "fused_over_r0" in row or "xla_over_fused" in row:
                nan = float("nan")
                print(f"M {m:4d} K {k:5d} N {n:5d}  low-rank cost fused/r0 x{row.get('fused_over_r0', nan):.2f}; "
                      f"speed-up xla/fused x{row.get('xla_over_fused', nan):.2f}; max |fused - xla| "
                      f"{row.get('max_abs_diff_fused_xla', nan):.3g}")
            results["shapes"].append(row)
    if _OUT.value:
        pathlib.Path(_OUT.value).write_text(json.dumps(results, indent=2))
        print(f"wrote {_OUT.value}")
    return 1 if failed else 0


if __name__ == "__main__":
    app.run(main)
