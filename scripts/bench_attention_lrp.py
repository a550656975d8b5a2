#!/usr/bin/env python3
"""Speed of `kernels.attention_lrp`: the Pallas flash kernels against the XLA reference and
`jax.nn.dot_product_attention`.

    python scripts/bench_attention_lrp.py [--lens=512,2048] [--batch=4] [--heads=9] [--kv_heads=3]
        [--head_dim=64] [--dtype=bfloat16] [--causal] [--lrp] [--reps=10] [--out=bench.json]

Every implementation runs in this one process on this device, at each shape, after a warm-up
call (compilation excluded and reported separately): the forward pass alone and forward plus
backward (jax.grad w.r.t. q, k, v). The rows:

- `xla`: `attention(..., implementation='xla')`, the jnp reference (with the AttnLRP gradient
  scaling when --lrp);
- `pallas`: `attention(..., implementation='pallas')`, the flash kernels;
- `jax.nn[None]`, `jax.nn[cudnn]`, `jax.nn[xla]`: `jax.nn.dot_product_attention` with
  implementation=None (jax's choice: cuDNN's fused attention where it applies), 'cudnn' (GPU
  only; an error row where cuDNN does not take the shape or dtype) and 'xla', as baselines. They
  compute exact gradients: with --lrp their backward does less than ours (no scaling), which is
  negligible next to the attention itself.

The table gives milliseconds (median of --reps), the ratios xla / pallas and best jax.nn / pallas
(> 1: the kernel is faster), and the largest difference to `xla` of each output (and of the
Pallas gradients) as a sanity check. The default shape is SmolLM2-135M's attention (9 query
heads, 3 kv heads, head_dim 64), causal, bfloat16.

On CPU the kernels only run in interpret mode, which is a correctness tool and not a benchmark:
the script says so, times the XLA paths alone (ours and jax.nn's) at a reduced shape, and exits
in seconds. The GPU numbers come from `scripts/device_check.sh`.
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
    """(forward, forward + backward), jitted; implementation 'xla' / 'pallas' (ours) or
    'jax.nn[X]' (jax.nn.dot_product_attention with implementation=X, X in None, cudnn, xla)."""
    import jax
    import jax.numpy as jnp

    from kernels.attention_lrp import attention

    if implementation.startswith("jax.nn["):
        nn_impl = implementation[len("jax.nn["):-1]
        nn_impl = None if nn_impl == "None" else nn_impl

        def forward(q, k, v):
            return jax.nn.dot_product_attention(q, k, v, is_causal=causal, implementation=nn_impl)
    else:
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
    baselines = ("jax.nn[None]", "jax.nn[xla]") + (("jax.nn[cudnn]",) if backend == "gpu" else ())
    implementations = ("xla", "pallas") + baselines
    if on_cpu and _CPU_INTERPRET.value:
        print("CPU: the Pallas numbers below are interpret mode, NOT a benchmark (smoke test of the script).")
    elif on_cpu:
        print("CPU: Pallas kernels run only in interpret mode here, which is not a benchmark; timing the "
              "XLA paths alone at a reduced shape (the kernel numbers come from a GPU run).")
        lens, batch, reps, implementations = [min(lens)], 1, 2, ("xla",) + baselines
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
            print(f"len {n:5d} {impl:>13}: forward {ms_f:8.3f} ms   forward+backward {ms_b:8.3f} ms   "
                  f"(first calls {first_f:.1f} s, {first_b:.1f} s incl. compilation)")
        if "xla" in outputs:
            err = lambda a, b: float(jnp.max(jnp.abs(a.astype(jnp.float32) - b.astype(jnp.float32))))  # noqa: E731
            for impl in outputs:
                if impl == "xla":
                    continue
                row[impl]["max_abs_diff_out_vs_xla"] = err(outputs[impl][0], outputs["xla"][0])
            if "pallas" in outputs:
                grads = jax.tree.map(err, outputs["xla"][1], outputs["pallas"][1])
                row["max_abs_diff"] = {"out": row["pallas"]["max_abs_diff_out_vs_xla"], "dq": grads[0],
                                       "dk": grads[1], "dv": grads[2]}
                print(f"len {n:5d}  max |xla - pallas| {row['max_abs_diff']}")
        if "pallas" in outputs:
            for ref in ["xla"] + [b for b in baselines if b in outputs]:
                for what in ("forward", "forward_backward"):
                    row[f"speedup_{what}_{ref}"] = row[ref][f"{what}_ms"] / row["pallas"][f"{what}_ms"]
            nn = [b for b in baselines if b in outputs]
            best = {what: min(nn, key=lambda b: row[b][f"{what}_ms"]) for what in ("forward", "forward_backward")} \
                if nn else {}
            print(f"len {n:5d}  xla/pallas: forward x{row['speedup_forward_xla']:.2f}, forward+backward "
                  f"x{row['speedup_forward_backward_xla']:.2f}" + "".join(
                      f"; best jax.nn/pallas {what}: {b} x{row[f'speedup_{what}_{b}']:.2f}"
                      for what, b in best.items()))
        results["shapes"].append(row)
    if _OUT.value:
        pathlib.Path(_OUT.value).write_text(json.dumps(results, indent=2))
        print(f"wrote {_OUT.value}")
    return 1 if failed else 0


if __name__ == "__main__":
    app.run(main)
