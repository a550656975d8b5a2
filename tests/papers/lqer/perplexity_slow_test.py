"""The perplexity table on the whole SmolLM2 (not the truncated tiny model): the long version of the
tiny `lqer/perplexity` run of tests/core/experiments_test.py."""

import math

import pytest

from jaxml.core import registry
from jaxml.core.config import load_config


@pytest.mark.slow
def test_perplexity_table_on_the_whole_model(tmp_path):
    """Every decoder layer runs (MXINT8 activations everywhere), the first two are quantized,
    159 held-out tokens. The low-rank terms must lower each kernel's weight error (Eckart-Young,
    here with MXINT8 factors) at the cost of (in + out) k 8.5 bits."""
    overrides = ["decoder_layers=0", "eval_tokens=160", "layers=('layers_0/', 'layers_1/')", "rank=32", "pad_rank=32"]
    config = load_config(f"{registry.config_path('lqer/perplexity')}:tiny", overrides)
    result = registry.get_experiment("lqer/perplexity")(config, tmp_path)
    m = result.metrics
    assert all(math.isfinite(v) for v in m.values()), m
    for bits in (4, 3):
        assert m[f"weight_error_lqer_w{bits}"] < m[f"weight_error_mxint_w{bits}"]
        assert m[f"bits_lqer_w{bits}"] == m[f"bits_l2qer_w{bits}"] > m[f"bits_mxint_w{bits}"]
    # measured: FP 113.87; W4 L2QER 117.45 < LQER 122.17 < MXINT 124.74; W3 124.47 < 139.78 < 157.49
    assert m["ppl_fp"] < m["ppl_l2qer_w3"] < m["ppl_mxint_w3"]
    assert all(c.verdict == "not comparable" for c in result.claims)   # a tiny-scale config
