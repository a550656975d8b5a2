#!/usr/bin/env python3
"""Speed of `kernels.attention_lrp`: the Pallas flash kernels against the XLA reference.

    python scripts/bench_attention_lrp.py [--lens=512,2048] [--batch=4] [--heads=9] [--kv_heads=3]
        [--head_dim=64] [--dtype=bfloat16] [--causal] [--lrp] [--reps=10] [--out=bench.json]

Both implementations run in this one process on this device, at each shape, after a warm-up
call (compilation excluded and reported separately): the forward pass alone and forward plus
backward (jax.grad w.r.t. q, k, v). The table gives milliseconds (median of --reps) and the
ratio xla / pallas (> 1: the kernel is faster), and the largest difference between the two
outputs and gradients as a sanity check. The default shape is SmolLM2-135M's attention
(9 query heads, 3 kv heads, head_dim 64), causal, bfloat16.

On CPU the kernels only run in interpret mode, which is a correctness tool and not a benchmark:
the script says so, times the XLA path alone at a reduced shape, and exits quickly. The GPU
numbers come from `scripts/device_check.sh`.
"""

from __future__ import annotations

import json
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

from jaxml.core.benchmark import timed  # noqa: E402

from absl import app, flags, logging  # noqa: E402

_LENS = flags.DEFINE_list("lens", ["512", "2048"], "Sequence lengths (q_len = kv_len).")
_BATCH = flags.DEFINE_integer("batch", 4, "Batch size.")
_HEADS = flags.DEFINE_integer("heads", 9, "Query heads.")
_KV_HEADS = flags.DEFINE_integer("kv_heads", 3, "Key/value heads (grouped-query attention).")
_HEAD_DIM = flags.DEFINE_integer("head_dim", 64, "Head dimension.")
_DTYPE = flags.DEFINE_enum("dtype", "bfloat16", ["bfloat16", "float32"], "Input dtype.")
_CAUSAL = flags.DEFINE_bool("causal", True, "Causal attention.")
_LRP = flags.DEFINE_bool("lrp", True, "Time the AttnLRP backward (lrp=True); the forward is the same.")
_REPS = flags.DEFINE_integer("reps", 10, "Timed repetitions (the median is reported).")
_OUT = flags.DEFINE_string("out", None, "Write the results as JSON here.")
_CPU_INTERPRET = flags.DEFINE_bool("cpu_interpret", False, "On CPU, also run the interpret-mode kernels at the "
                                   "given shapes: a smoke test of this script, not a benchmark.")




def _functions(implementation, causal, lrp):
    import jax
    import jax.numpy as jnp

    from kernels.attention_lrp import attention

    def forward(q, k, v):
        return attention(q, k, v, causal=causal, lrp=lrp, implementation=implementation)

    def forward_backward(q, k, v, w):
        loss = lambda q, k, v: jnp.sum(forward(q, k, v).astype(jnp.float32) * w)  # noqa: E731
        return jax.value_and_grad(loss, argnums=(0, 1, 2))(q, k, v)

    return jax.jit(forward), jax.jit(forward_backward)


def main(argv):
    del argv
    if not flags.FLAGS["verbosity"].present:
        logging.set_verbosity(logging.WARNING)
    import jax
    import jax.numpy as jnp

    backend = jax.default_backend()
    on_cpu = backend == "cpu"
    dtype = jnp.dtype(_DTYPE.value)
    lens = [int(n) for n in _LENS.value]
    batch, reps = _BATCH.value, _REPS.value
    implementations = ("xla", "pallas")
    if on_cpu and _CPU_INTERPRET.value:
        print("CPU: the Pallas numbers below are interpret mode, NOT a benchmark (smoke test of the script).")
    elif on_cpu:
        print("CPU: Pallas kernels run only in interpret mode here, which is not a benchmark; timing the "
              "XLA path alone at a reduced shape (the kernel numbers come from a GPU run).")
        lens, batch, reps, implementations = [min(lens)], 1, 2, ("xla",)
    h, kv_heads, d = _HEADS.value, _KV_HEADS.value, _HEAD_DIM.value
    results = {"device": str(jax.devices()[0]), "backend": backend, "jax": jax.__version__,
               "dtype": dtype.name, "causal": _CAUSAL.value, "lrp": _LRP.value, "batch": batch,
               "heads": h, "kv_heads": kv_heads, "head_dim": d, "shapes": []}
    print(f"device {results['device']}; jax {jax.__version__}; {dtype.name}; causal={_CAUSAL.value}; "
          f"lrp={_LRP.value}; batch {batch}, heads {h}/{kv_heads}, head_dim {d}")
    failed = False
    for n in lens:
        keys = jax.random.split(jax.random.PRNGKey(n), 4)
        q = jax.random.normal(keys[0], (batch, n, h, d), dtype)
        k = jax.random.normal(keys[1], (batch, n, kv_heads, d), dtype)
        v = jax.random.normal(keys[2], (batch, n, kv_heads, d), dtype)
        w = jax.random.normal(keys[3], (batch, n, h, d), jnp.float32)
        row = {"len": n}
        outputs = {}
        for impl in implementations:
            fwd, fwd_bwd = _functions(impl, _CAUSAL.value, _LRP.value)
            try:
                first_f, ms_f, out = timed(lambda: fwd(q, k, v), reps)
                first_b, ms_b, (_, grads) = timed(lambda: fwd_bwd(q, k, v, w), reps)
            except Exception as e:  # a kernel that does not compile here is a result, not a crash
                failed = True
                row[impl] = {"error": f"{type(e).__name__}: {str(e)[:500]}"}
                print(f"len {n:5d} {impl:>6}: FAILED {row[impl]['error']}")
                continue
            outputs[impl] = (out, grads)
            row[impl] = {"forward_ms": ms_f, "forward_backward_ms": ms_b,
                         "first_forward_s_incl_compile": first_f, "first_forward_backward_s_incl_compile": first_b}
            print(f"len {n:5d} {impl:>6}: forward {ms_f:8.3f} ms   forward+backward {ms_b:8.3f} ms   "
                  f"(first calls {first_f:.1f} s, {first_b:.1f} s incl. compilation)")
        if len(outputs) == 2:
            row["speedup_forward"] = row["xla"]["forward_ms"] / row["pallas"]["forward_ms"]
            row["speedup_forward_backward"] = row["xla"]["forward_backward_ms"] / row["pallas"]["forward_backward_ms"]
            diff = jax.tree.map(lambda a, b: float(jnp.max(jnp.abs(a.astype(jnp.float32) - b.astype(jnp.float32)))),
                                outputs["xla"], outputs["pallas"])
            row["max_abs_diff"] = {"out": diff[0], "dq": diff[1][0], "dk": diff[1][1], "dv": diff[1][2]}
            print(f"len {n:5d}  xla/pallas: forward x{row['speedup_forward']:.2f}, forward+backward "
                  f"x{row['speedup_forward_backward']:.2f}; max |xla - pallas| {row['max_abs_diff']}")
        results["shapes"].append(row)
    if _OUT.value:
        pathlib.Path(_OUT.value).write_text(json.dumps(results, indent=2))
        print(f"wrote {_OUT.value}")
    return 1 if failed else 0


if __name__ == "__main__":
    app.run(main)
