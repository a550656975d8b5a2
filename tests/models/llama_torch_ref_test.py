"""Cross-check against transformers' LlamaForCausalLM with the same dequantized weights (torch_ref)."""

import numpy as np
import pytest

pytestmark = pytest.mark.torch_ref


@pytest.fixture(scope="module")
def both():
    import torch  # noqa: F401
    from jaxml.models import llama
    model, params, tok = llama.load_smollm2()
    return model, params, tok, llama.to_transformers(model.config, params)


def test_logits_match_transformers(both):
    import jax.numpy as jnp
    import torch
    model, params, tok, hf = both
    ids = tok.encode("It is a truth universally acknowledged, that a single man")
    ours = np.asarray(model.apply({"params": params}, jnp.asarray([ids]), jnp.arange(len(ids))[None])[0][0])
    with torch.inference_mode():
        theirs = hf(torch.tensor([ids])).logits[0].numpy()
    assert np.abs(ours - theirs).max() <= 5e-4


def test_greedy_generation_matches_transformers(both):
    import torch
    from jaxml.llm import generate as gen
    model, params, tok, hf = both
    ids = tok.encode("Once upon a time, there was a little")
    with torch.inference_mode():
        theirs = hf.generate(torch.tensor([ids]), max_new_tokens=20, min_new_tokens=20, do_sample=False,
                             pad_token_id=tok.pad_id)[0, len(ids):].tolist()
    ours = gen.generate(model, params, [ids], max_new_tokens=20, pad_id=tok.pad_id).tokens[0].tolist()
    assert ours == theirs
