"""AttnLRP composed with quantization: the quantized model's forward pass, the rules' backward pass."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxml.compress.linear import quantized_ops
from jaxml.compress.quantizers import NONE, QuantFormat
from jaxml.models.llama import Llama, LlamaConfig
from jaxml.papers.attnlrp import compressed, explain

CONFIG = LlamaConfig(vocab_size=30, hidden=32, layers=2, heads=2, kv_heads=1, mlp_hidden=32, max_len=16,
                     rope_theta=100.0)
A8 = QuantFormat("mxint", 8, 16)


@pytest.fixture(scope="module")
def tiny():
    model = Llama(CONFIG)
    params = jax.jit(model.init)(jax.random.PRNGKey(7), jnp.zeros((1, 4), jnp.int32),
                                 jnp.zeros((1, 4), jnp.int32))["params"]
    tokens = jnp.asarray(np.random.default_rng(0).integers(0, 30, (2, 6)))
    return model, params, (tokens, jnp.broadcast_to(jnp.arange(6), (2, 6)))


@pytest.mark.parametrize("rules", ["attnlrp", "cp_lrp", "gradient"])
def test_composed_forward_is_the_quantized_models(tiny, rules):
    model, params, args = tiny
    run = lambda ops: np.asarray(jax.jit(lambda p, a: model.clone(ops=ops).apply({"params": p}, *a)[0])(params, args))
    quant = run(quantized_ops(A8))
    assert np.array_equal(run(compressed.quantized_rules(rules, A8)), quant)
    assert not np.allclose(quant, run(quantized_ops(NONE)), atol=1e-6)      # quantization does change it


def test_without_quantization_the_relevance_is_plain_attnlrp(tiny):
    model, params, args = tiny
    kw = dict(target=[3, 4], position=[5, 5])
    plain = explain.relevance(model, params, args, rules="attnlrp", **kw).per_token("embeddings")
    same = explain.relevance(model, params, args, rules=compressed.quantized_rules("attnlrp", NONE), **kw)
    np.testing.assert_allclose(same.per_token("embeddings"), plain, rtol=1e-5, atol=1e-6)
    quant = explain.relevance(model, params, args, rules=compressed.quantized_rules("attnlrp", A8), **kw)
    assert np.isfinite(quant.per_token("embeddings")).all() and not np.allclose(quant.per_token("embeddings"), plain)


def test_unknown_rules():
    with pytest.raises(ValueError, match="accepted"):
        compressed.quantized_rules("lime")
