#!/usr/bin/env python3
"""Generation speed of SmolLM2-135M: KV cache against recomputing the prefix, and prefill.

    python scripts/bench_llm.py [--new_tokens=128] [--batch=1] [--reps=3] [--out=bench_llm.json]

All numbers are measured in this one run on this machine, after one warm-up call (compilation
is excluded and reported separately):

* `kv_cache`: `jaxml.llm.generate.generate` (prefill once, then one token per step from the cache);
* `recompute`: the same jitted loop with `use_cache=False` (the whole padded prefix is run again
  at every step), the baseline the KV cache is measured against;
* `prefill`: tokens/s of `token_logprobs` over `--prefill_batch` x `--prefill_len` tokens (one
  padded batch: `--prefill_len` is a length bucket when it is 16, 24, 32, 48, 64, ... e.g. 512);
* `transformers` (only when torch and transformers are installed, the `torch-ref` extra):
  `LlamaForCausalLM.generate(do_sample=False, use_cache=True)` on torch CPU with the same
  dequantized weights, and a check that it produces the same greedy tokens.
"""

from __future__ import annotations

import json
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

from absl import app, flags, logging  # noqa: E402

_NEW = flags.DEFINE_integer("new_tokens", 128, "Tokens to generate (no early stop).")
_BATCH = flags.DEFINE_integer("batch", 1, "Prompts decoded together.")
_REPS = flags.DEFINE_integer("reps", 3, "Timed repetitions (the median is reported).")
_PREFILL_LEN = flags.DEFINE_integer("prefill_len", 512, "Tokens per sequence in the prefill benchmark.")
_PREFILL_BATCH = flags.DEFINE_integer("prefill_batch", 4, "Sequences in the prefill benchmark.")
_TORCH = flags.DEFINE_bool("torch", True, "Also time transformers when torch is installed.")
_OUT = flags.DEFINE_string("out", None, "Write the results as JSON here.")

PROMPT = "Once upon a time, in a small village at the edge of a great forest, there lived an old"


def main(argv):
    del argv
    if not flags.FLAGS["verbosity"].present:
        logging.set_verbosity(logging.WARNING)
    import jax
    import numpy as np

    from jaxml.core.benchmark import median_ms, timed
    from jaxml.llm import generate as gen
    from jaxml.models import llama

    model, params, tok = llama.load_smollm2()
    prompt = tok.encode(PROMPT)
    prompts = [prompt] * _BATCH.value
    n_new = _NEW.value
    results = {"device": str(jax.devices()[0]), "backend": jax.default_backend(), "prompt_tokens": len(prompt),
               "new_tokens": n_new, "batch": _BATCH.value}
    print(f"device {results['device']}; prompt {len(prompt)} tokens; {n_new} new tokens; batch {_BATCH.value}")

    tokens = {}
    for name, use_cache in (("kv_cache", True), ("recompute", False)):
        run = lambda: gen.generate(model, params, prompts, max_new_tokens=n_new, pad_id=tok.pad_id,
                                   use_cache=use_cache, bucket=1).tokens
        first, ms, out = timed(run, _REPS.value)
        seconds = ms / 1e3
        tokens[name] = out
        results[name] = {"seconds": seconds, "tokens_per_s": _BATCH.value * n_new / seconds,
                         "first_call_s_incl_compile": first}
        print(f"{name:>10}: {results[name]['tokens_per_s']:8.1f} new tokens/s ({seconds:.2f} s; first call "
              f"{first:.1f} s incl. compilation)")
    assert np.array_equal(tokens["kv_cache"], tokens["recompute"]), "cache and recompute disagree"
    results["speedup_kv_vs_recompute"] = results["recompute"]["seconds"] / results["kv_cache"]["seconds"]
    print(f"KV cache vs recompute: {results['speedup_kv_vs_recompute']:.2f}x")
    print("greedy text:", repr(tok.decode(tokens["kv_cache"][0][:40])))

    rng = np.random.default_rng(0)
    seqs = [list(rng.integers(100, 40000, size=_PREFILL_LEN.value)) for _ in range(_PREFILL_BATCH.value)]
    score = lambda: gen.token_logprobs(model, params, seqs, batch_size=_PREFILL_BATCH.value)
    score()   # compile
    seconds = median_ms(score, _REPS.value) / 1e3
    results["prefill"] = {"tokens": _PREFILL_LEN.value * _PREFILL_BATCH.value, "seconds": seconds,
                          "tokens_per_s": _PREFILL_LEN.value * _PREFILL_BATCH.value / seconds}
    print(f"   prefill: {results['prefill']['tokens_per_s']:8.1f} tokens/s "
          f"({_PREFILL_BATCH.value} x {_PREFILL_LEN.value} tokens in {seconds:.2f} s)")

    if _TORCH.value:
        try:
            results["transformers"] = _bench_transformers(model, params, prompts, n_new, tokens["kv_cache"])
        except ImportError as e:
            print(f"transformers comparison skipped ({e}); install the torch-ref extra")
    if "transformers" in results:
        t = results["transformers"]
        results["speedup_kv_vs_transformers"] = t["seconds"] / results["kv_cache"]["seconds"]
        print(f"transformers generate (torch {t['torch']}, {t['threads']} threads): {t['tokens_per_s']:.1f} "
              f"new tokens/s; same greedy tokens: {t['same_tokens']}; jaxml KV cache is "
              f"{results['speedup_kv_vs_transformers']:.2f}x faster")
    if _OUT.value:
        pathlib.Path(_OUT.value).write_text(json.dumps(results, indent=2))


def _bench_transformers(model, params, prompts, n_new, our_tokens):
    import numpy as np
    import torch

    from jaxml.core.benchmark import median_ms

    from jaxml.models.llama import to_transformers

    hf = to_transformers(model.config, params)
    ids = torch.tensor(prompts)
    kwargs = dict(max_new_tokens=n_new, min_new_tokens=n_new, do_sample=False, use_cache=True, pad_token_id=2)
    with torch.inference_mode():
        out = hf.generate(ids, **kwargs)   # warm-up
        seconds = median_ms(lambda: hf.generate(ids, **kwargs), _REPS.value) / 1e3
    new = out[:, ids.shape[1]:].numpy()
    return {"seconds": seconds, "tokens_per_s": len(prompts) * n_new / seconds, "torch": torch.__version__,
            "threads": torch.get_num_threads(), "same_tokens": bool(np.array_equal(new, our_tokens)),
            "first_differing_step": int(np.argmax(new[0] != our_tokens[0])) if not np.array_equal(new, our_tokens) else None}


if __name__ == "__main__":
    app.run(main)
