"""The expected-NLL-shift measurement of `dipmark/watermark` on a tiny random Llama."""

import jax
import jax.numpy as jnp
import numpy as np

from jaxml.models.llama import Llama, LlamaConfig
from jaxml.papers.dipmark import data, experiments, reweight


def test_expected_nll_shift_is_zero_for_the_identity_and_positive_for_kgw():
    vocab = 96
    model = Llama(LlamaConfig(vocab_size=vocab, hidden=32, layers=2, heads=4, kv_heads=2, mlp_hidden=64, max_len=64))
    params = model.init(jax.random.PRNGKey(0), jnp.zeros((1, 4), jnp.int32), jnp.zeros((1, 4), jnp.int32))["params"]
    params = jax.tree_util.tree_map(lambda x: x * 3.0, params)   # peaked distributions: KGW's cost is visible
    rng = np.random.default_rng(0)
    prompts = data.Prompts([rng.integers(0, vocab, 4).tolist() for _ in range(3)], ["continuation"] * 3, ["r"] * 3)
    gens = [rng.integers(0, vocab, n) for n in (12, 7, 0)]
    wms = {"identity": reweight.dipmark(b"k", vocab, alpha=0.0), "kgw": reweight.kgw(b"k", vocab, delta=2.0)}
    shift = experiments.expected_nll_shift(model, params, prompts, gens, wms, b"k")
    np.testing.assert_allclose(shift["identity"][:2], 0.0, atol=1e-5)
    assert (shift["kgw"][:2] > 0.01).all()
    assert np.isnan(shift["kgw"][2])   # an empty generation has no positions
