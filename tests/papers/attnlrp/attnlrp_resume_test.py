"""faithfulness_llm stores each finished batch and resumes from them; every replacement value is
measured on the same explanations."""

import numpy as np
import pytest

from jaxml.core import registry
from jaxml.core.config import load_config
from jaxml.models.llama import LlamaConfig, smollm2_tokenizer
from tests.papers.attnlrp.tiny_llama import tiny_llama
from jaxml.papers.attnlrp import experiments


def _tiny_smollm2(layers=0):
    """A 2-layer Llama of SmolLM2's vocabulary with random weights and SmolLM2's tokenizer: the
    experiment's code path without loading the 135M weights."""
    tok = smollm2_tokenizer()
    config = LlamaConfig(vocab_size=tok.vocab_size, hidden=16, layers=2, heads=2, kv_heads=1, mlp_hidden=24,
                         max_len=64, rope_theta=100.0, tie_embeddings=True)
    model, params = tiny_llama(config, seed=0, scale=1.0)
    return model, params, tok


def test_faithfulness_llm_resumes_from_stored_batches_and_measures_each_replacement(tmp_path, monkeypatch):
    monkeypatch.setattr(experiments, "smollm2", _tiny_smollm2)
    name = "attnlrp/faithfulness_llm"
    overrides = ["num_examples=4", "batch_size=2", "heatmaps=0", "cost_claim=False",
                 "methods=('attnlrp','gradient_x_input','random')", "replacements=('zero','mean')"]
    config = load_config(f"{registry.config_path(name)}:tiny", overrides)
    first = experiments.faithfulness_llm(config, tmp_path)
    zero, mean = first.metrics["abc_attnlrp"], first.metrics["mean/abc_attnlrp"]
    assert np.isfinite(zero) and np.isfinite(mean) and zero != mean
    assert first.metrics["first_token_drop"] != first.metrics["mean/first_token_drop"]

    def no_more_work(*args, **kwargs):
        raise AssertionError("a stored batch was computed again")

    monkeypatch.setattr(experiments.explain, "relevance", no_more_work)
    again = experiments.faithfulness_llm(config, tmp_path)
    assert again.metrics == pytest.approx(first.metrics)

    # another config (here the IG steps) never reuses the stored rows
    changed = load_config(f"{registry.config_path(name)}:tiny", overrides + ["ig_steps=2"])
    with pytest.raises(AssertionError, match="computed again"):
        experiments.faithfulness_llm(changed, tmp_path)
