#!/usr/bin/env python3
"""Speed of `kernels.fixed_point`: the pcDEQ dense fixed point, XLA against the Pallas kernel.

    python scripts/bench_fixed_point.py [--quick] [--weights=slow|init] [--reps=20] [--out=bench.json]

At pcDEQ sizes (batch 64 and 1024, n = 80, 256, 1024; tanh; tol 1e-4, max_iter 200; the default
groups: the whole batch of 64, groups of 64 rows for 1024) and in this one process, after a
warm-up call (compilation excluded and reported separately), the median of --reps of
  fwd       the forward solve (`fixed_point(...).z`)
  fwd+bwd   jax.grad of sum(c * z) w.r.t. (w, x): forward solve plus the adjoint solve
for implementation='xla' and 'pallas', with xla / pallas (> 1: the kernel is faster) and the
iteration counts (forward mean/max over groups; backward mean, read from the `probe` cotangent).
Weights: 'slow' = uniform * 1.8 / n (row sums ~0.9, tens of iterations, like a trained layer);
'init' = pcDEQ's init uniform * sqrt(1e-4) / sqrt(2n) (a handful of iterations).
Injection: softplus(5 v) / 5, v ~ N(0, 1).

On CPU the kernel runs only in interpret mode, which is a correctness tool and not a performance
path: the script says so and times the XLA path alone (--quick: n = 80 and 256 only). The GPU
numbers come from `scripts/device_check.sh`. (argparse, not absl: flags live in scripts/run.py.)
"""

from __future__ import annotations

import argparse
import json
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

from jaxml.core.benchmark import timed  # noqa: E402



def _operands(batch, n, weights, seed=0):
    import jax
    import jax.numpy as jnp

    kw, kx, kc = jax.random.split(jax.random.PRNGKey(seed), 3)
    u = jax.random.uniform(kw, (n, n), jnp.float32)
    w = u * 1.8 / n if weights == "slow" else u * (1e-4 ** 0.5) / (2 * n) ** 0.5
    x = jax.nn.softplus(5.0 * jax.random.normal(kx, (batch, n), jnp.float32)) / 5.0
    c = jax.random.normal(kc, (batch, n), jnp.float32)
    return w, x, c


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer sizes and repetitions")
    parser.add_argument("--weights", choices=("slow", "init"), default="slow")
    parser.add_argument("--reps", type=int, default=None, help="timed repetitions (median reported)")
    parser.add_argument("--out", default=None, help="write the results as JSON here")
    parser.add_argument("--cpu_interpret", action="store_true",
                        help="on CPU, also run the kernels in interpret mode at one small size (a smoke test of "
                             "this script, e.g. `scripts/device_check.sh --dry-run`; not a benchmark)")
    args = parser.parse_args(argv)

    import jax
    import jax.numpy as jnp

    from kernels.fixed_point import fixed_point

    backend = jax.default_backend()
    on_cpu = backend == "cpu"
    batches, widths = (64, 1024), (80, 256, 1024)
    implementations = ("xla", "pallas")
    reps = args.reps or (5 if args.quick else 20)
    if on_cpu and args.cpu_interpret:
        print("CPU: the Pallas numbers below are interpret mode, NOT a benchmark (smoke test of the script).")
        batches, widths = (8,), (16,)
        reps = args.reps or 1
    elif on_cpu:
        print("CPU: Pallas is skipped (its kernels run only in interpret mode here, which is a correctness "
              "tool, not a performance path); timing the XLA path alone. Kernel numbers come from a GPU run "
              "(scripts/device_check.sh).")
        implementations = ("xla",)
        if args.quick:
            widths = (80, 256)
            reps = args.reps or 3
    elif args.quick:
        batches, widths = (64, 1024), (80, 256)
    print(f"device {jax.devices()[0]}; jax {jax.__version__}; tanh, tol 1e-4, max_iter 200; weights "
          f"'{args.weights}'; median of {reps}")
    results = {"device": str(jax.devices()[0]), "backend": backend, "jax": jax.__version__,
               "weights": args.weights, "rows": []}
    header = (f"{'batch':>5} {'n':>5} {'G':>3} {'impl':>6} {'fwd ms':>9} {'fwd+bwd ms':>10} "
              f"{'fwd iters':>10} {'bwd iters':>9} {'compile s':>9}")
    print(header)
    print("-" * len(header))
    failed = False
    for batch in batches:
        for n in widths:
            w, x, c = _operands(batch, n, args.weights)
            row = {"batch": batch, "n": n}
            for impl in implementations:
                fwd = jax.jit(lambda w, x, impl=impl: fixed_point(w, x, activation="tanh", implementation=impl))

                def loss(w, x, probe, impl=impl):
                    r = fixed_point(w, x, activation="tanh", implementation=impl, probe=probe)
                    return jnp.sum(c * r.z)

                grad = jax.jit(jax.grad(loss, argnums=(0, 1, 2)))
                probe = jnp.zeros((2,), jnp.float32)
                try:
                    first_f, ms_f, res = timed(lambda: fwd(w, x), reps)  # noqa: B023
                    first_b, ms_b, grads = timed(lambda: grad(w, x, probe), reps)  # noqa: B023
                except Exception as e:  # a kernel that does not compile here is a result, not a crash
                    failed = True
                    row[impl] = {"error": f"{type(e).__name__}: {str(e)[:500]}"}
                    print(f"{batch:5d} {n:5d} {'':>3} {impl:>6} FAILED {row[impl]['error'][:300]}")
                    continue
                its = res.iterations
                bwd_iters = float(grads[2][0])
                row[impl] = {"fwd_ms": ms_f, "fwd_bwd_ms": ms_b, "groups": int(its.shape[0]),
                             "fwd_iters_mean": float(jnp.mean(its)), "fwd_iters_max": int(jnp.max(its)),
                             "bwd_iters_mean": bwd_iters, "compile_s": first_f + first_b}
                print(f"{batch:5d} {n:5d} {its.shape[0]:3d} {impl:>6} {ms_f:9.3f} {ms_b:10.3f} "
                      f"{float(jnp.mean(its)):5.1f}/{int(jnp.max(its)):<4d} {bwd_iters:9.1f} "
                      f"{first_f + first_b:9.2f}")
            if all(isinstance(row.get(i), dict) and "fwd_ms" in row[i] for i in ("xla", "pallas")):
                row["xla_over_pallas_fwd"] = row["xla"]["fwd_ms"] / row["pallas"]["fwd_ms"]
                row["xla_over_pallas_fwd_bwd"] = row["xla"]["fwd_bwd_ms"] / row["pallas"]["fwd_bwd_ms"]
                print(f"{'':>16} xla / pallas: fwd {row['xla_over_pallas_fwd']:.2f}x, fwd+bwd "
                      f"{row['xla_over_pallas_fwd_bwd']:.2f}x")
            results["rows"].append(row)
    if args.out:
        pathlib.Path(args.out).write_text(json.dumps(results, indent=1))
        print(f"wrote {args.out}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
