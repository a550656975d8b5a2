#!/usr/bin/env python3
"""Time per AttnLRP explanation: jaxml (JAX, jitted) against LXT's efficient mode (PyPI `lxt`, torch).

    python scripts/bench_attnlrp.py [--lens=32,128] [--reps=5] [--torch_threads=0] [--omp_wait_policy=PASSIVE]
        [--out=bench.json]

Run from the repository root. SmolLM2-135M in float32, batch 1; both explain the same logit
(the greedy next token at the last position) of the same token ids, with the same dequantized
weights (`jaxml.models.llama.to_transformers`). One explanation is
  * jaxml: `attnlrp.relevance(model, params, (tokens, positions), rules="attnlrp")`, i.e. the
    jitted forward + modified backward and the value x gradient product (the first call, which
    compiles, is reported separately and excluded);
  * lxt: `inputs_embeds` lookup, forward (`use_cache=False`), `logit.backward()` and
    `(embeds * grad).sum(-1)` on the lxt-patched transformers model (eager attention; parameters
    frozen, so only input gradients are computed, as in jaxml; one warm-up call excluded).
The table gives the median of --reps in milliseconds, the ratio lxt / jaxml (> 1: jaxml is
faster) and the cosine between the two per-token relevance vectors.

Both run in this one process on the CPU (or JAX's default device; torch stays on the CPU), one
after the other. lxt's patch is process-wide (it changes `LlamaMLP`, `LlamaRMSNorm`,
`torch.nn.Dropout` and `modeling_llama`'s attention functions), which is harmless in this script.
lxt 2.1 does not import on transformers 5 (`import lxt.efficient` pulls in a BERT copy that needs
the removed `transformers.modeling_attn_mask_utils`); the script then loads only lxt's llama
patch, as `tests/papers/attnlrp/lxt_torch_ref_test.py` explains. Without torch, transformers or
lxt it says so and exits 0.
"""

from __future__ import annotations

import importlib
import json
import os
import pathlib
import sys
import types

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

from absl import app, flags, logging  # noqa: E402

_LENS = flags.DEFINE_list("lens", ["32", "128"], "Sequence lengths (tokens), batch 1.")
_REPS = flags.DEFINE_integer("reps", 5, "Timed explanations per length and implementation (the median is reported).")
_TORCH_THREADS = flags.DEFINE_integer("torch_threads", 0, "torch.set_num_threads (0: torch's default).")
_OMP_WAIT_POLICY = flags.DEFINE_string(
    "omp_wait_policy", "PASSIVE", "OMP_WAIT_POLICY for torch's OpenMP threads, set before torch is imported unless "
    "already in the environment ('' leaves it unset). PASSIVE because OpenMP's default spin-waiting makes torch "
    "many times slower when the cores are shared with other work (JAX's thread pool does not spin).")
_OUT = flags.DEFINE_string("out", None, "Write the results as JSON here.")

TEXT = ("It is a truth universally acknowledged, that a single man in possession of a good fortune, must be in "
        "want of a wife. However little known the feelings or views of such a man may be on his first entering "
        "a neighbourhood, this truth is so well fixed in the minds of the surrounding families, that he is "
        "considered as the rightful property of some one or other of their daughters. ")


def _patch_transformers_llama_with_lxt():
    """Applies lxt's efficient AttnLRP patch map to transformers' `modeling_llama` (process-wide)."""
    from transformers.modeling_utils import AttentionInterface
    from transformers.models.llama import modeling_llama

    try:
        lxt_llama = importlib.import_module("lxt.efficient.models.llama")
    except ImportError:   # lxt 2.1 on transformers >= 5: the package __init__ imports a BERT copy that fails
        import lxt
        root = pathlib.Path(lxt.__file__).parent / "efficient"
        for name, path in (("lxt.efficient", root), ("lxt.efficient.models", root / "models")):
            pkg = types.ModuleType(name)
            pkg.__path__ = [str(path)]
            sys.modules[name] = pkg
        lxt_llama = importlib.import_module("lxt.efficient.models.llama")
    for target, patch in lxt_llama.attnLRP.items():   # = lxt.efficient.monkey_patch(modeling_llama)
        if not patch(target):
            raise RuntimeError(f"lxt could not patch {target}")
    if not hasattr(modeling_llama.ALL_ATTENTION_FUNCTIONS, "get_interface"):   # lxt left a plain dict
        interface = AttentionInterface()
        for key, fn in modeling_llama.ALL_ATTENTION_FUNCTIONS.items():
            interface[key] = fn
        modeling_llama.ALL_ATTENTION_FUNCTIONS = interface


def main(argv):
    del argv
    if not flags.FLAGS["verbosity"].present:
        logging.set_verbosity(logging.WARNING)
    if _OMP_WAIT_POLICY.value:
        os.environ.setdefault("OMP_WAIT_POLICY", _OMP_WAIT_POLICY.value)
    try:
        import lxt  # noqa: F401
        import torch
        import transformers
    except ImportError as e:
        print(f"bench_attnlrp: needs torch, transformers and lxt (pip install -e '.[torch-ref]'): {e}; skipping.")
        return 0
    import importlib.metadata

    import jax
    import jax.numpy as jnp
    import numpy as np

    from jaxml.core.benchmark import timed
    from jaxml.models import llama
    from jaxml.papers.attnlrp import explain

    if _TORCH_THREADS.value:
        torch.set_num_threads(_TORCH_THREADS.value)
    _patch_transformers_llama_with_lxt()
    model, params, tok = llama.load_smollm2()
    hf = llama.to_transformers(model.config, params)   # built after patching
    hf.set_attn_implementation("eager")
    hf.requires_grad_(False)   # gradients for the input embeddings only, as in jaxml

    lxt_version = importlib.metadata.version("lxt")
    results = {"jax_device": str(jax.devices()[0]), "jax": jax.__version__, "torch": torch.__version__,
               "transformers": transformers.__version__, "lxt": lxt_version,
               "torch_threads": torch.get_num_threads(), "omp_wait_policy": os.environ.get("OMP_WAIT_POLICY"),
               "reps": _REPS.value, "dtype": "float32", "batch": 1,
               "rows": []}
    print(f"SmolLM2-135M float32, batch 1; jax {jax.__version__} on {results['jax_device']}; torch "
          f"{torch.__version__} CPU ({torch.get_num_threads()} threads, OMP_WAIT_POLICY="
          f"{os.environ.get('OMP_WAIT_POLICY')}), transformers {transformers.__version__}, "
          f"lxt {lxt_version} (efficient, eager attention); median of {_REPS.value}")
    ids_all = tok.encode(TEXT * 8)
    for n in (int(x) for x in _LENS.value):
        if n > len(ids_all):
            raise ValueError(f"--lens: {n} tokens is longer than the benchmark text ({len(ids_all)})")
        ids = ids_all[:n]
        tokens, positions = jnp.asarray([ids], jnp.int32), jnp.arange(n, dtype=jnp.int32)[None]
        target = int(jnp.argmax(model.apply({"params": params}, tokens, positions)[0][0, -1]))

        def ours():
            return explain.relevance(model, params, (tokens, positions), target=[target], position=[n - 1],
                                     rules="attnlrp").per_token("embeddings")[0]

        def theirs():
            embeds = hf.get_input_embeddings()(torch.tensor([ids])).detach().requires_grad_(True)
            hf(inputs_embeds=embeds, use_cache=False).logits[0, -1, target].backward()
            return (embeds * embeds.grad).sum(-1)[0].detach().numpy()

        first_s, ms_ours, rel_ours = timed(ours, _REPS.value)
        _, ms_theirs, rel_theirs = timed(theirs, _REPS.value)   # its first call is the warm-up
        cos = float(np.dot(rel_ours, rel_theirs) / (np.linalg.norm(rel_ours) * np.linalg.norm(rel_theirs)))
        row = {"len": n, "target": target, "jaxml_ms": ms_ours, "lxt_ms": ms_theirs,
               "ratio_lxt_over_jaxml": ms_theirs / ms_ours, "jaxml_first_call_s_incl_compile": first_s,
               "cosine": cos, "max_abs_diff": float(np.abs(rel_ours - rel_theirs).max())}
        results["rows"].append(row)
        print(f"len {n:4d}: jaxml {ms_ours:9.1f} ms   lxt {ms_theirs:9.1f} ms   "
              f"lxt/jaxml x{row['ratio_lxt_over_jaxml']:.2f}   cosine {cos:.7f} (max |diff| {row['max_abs_diff']:.1e}; "
              f"jaxml first call {first_s:.1f} s incl. compilation)")
    if _OUT.value:
        pathlib.Path(_OUT.value).write_text(json.dumps(results, indent=2))
        print(f"wrote {_OUT.value}")
    return 0


if __name__ == "__main__":
    app.run(main)
