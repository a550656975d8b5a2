"""faithfulness_llm stores each finished batch and resumes from them; every replacement value is
measured on the same explanations."""

import numpy as np
import pytest

from jaxml.core import registry
from jaxml.core.config import load_config
from jaxml.papers.attnlrp import experiments


def test_faithfulness_llm_resumes_from_stored_batches_and_measures_each_replacement(tmp_path, monkeypatch):
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
