"""explain_generation (one forward, batched backward passes) against one `relevance` call per token."""

import jax.numpy as jnp
import numpy as np
import pytest

from jaxml.models.llama import LlamaConfig
from jaxml.papers.attnlrp import explain
from tests.papers.attnlrp.tiny_llama import tiny_llama

CONFIG = LlamaConfig(vocab_size=40, hidden=16, layers=2, heads=2, kv_heads=1, mlp_hidden=24, max_len=32,
                     rope_theta=100.0)


@pytest.fixture(scope="module")
def tiny():
    return tiny_llama(CONFIG, seed=3)


@pytest.mark.parametrize("rules,chunk", [("attnlrp", 2), pytest.param("gradient", 8, marks=pytest.mark.slow)])
def test_equals_one_relevance_call_per_generated_token(tiny, rules, chunk):
    model, params = tiny
    rng = np.random.default_rng(0)
    prompt, gen = rng.integers(0, 40, 5), rng.integers(0, 40, 5)
    out = explain.explain_generation(model, params, prompt, gen, rules=rules, chunk=chunk)
    p = len(prompt)
    assert out.relevance.shape == (len(gen), p + len(gen))
    for k in range(len(gen)):
        seq = np.concatenate([prompt, gen[:k]])                       # what the model saw before token k
        ids = jnp.asarray(seq[None], jnp.int32)
        pos = jnp.arange(len(seq))[None]
        want = explain.relevance(model, params, (ids, pos), target=[int(gen[k])], position=[len(seq) - 1],
                                 rules=rules)
        scale = np.abs(want.per_token("embeddings")).max()
        np.testing.assert_allclose(out.relevance[k, :p + k], want.per_token("embeddings")[0], atol=2e-5 * scale)
        np.testing.assert_allclose(out.target[k], want.target[0], rtol=1e-5)
        assert (out.relevance[k, p + k:] == 0).all()                  # causal: no relevance from the future


def test_bad_input(tiny):
    model, params = tiny
    with pytest.raises(ValueError, match="at least one generated token"):
        explain.explain_generation(model, params, [1, 2], [])
    with pytest.raises(ValueError, match="chunk"):
        explain.explain_generation(model, params, [1, 2], [3], chunk=0)


def test_generation_heatmap_is_written_and_checks_shapes(tiny, tmp_path):
    from jaxml.papers.attnlrp import heatmap
    model, params = tiny
    out = explain.explain_generation(model, params, [1, 2, 3], [4, 5])
    path = heatmap.generation_png(tmp_path / "g.png", [f"t{i}" for i in range(5)], out.relevance, 3)
    assert path.stat().st_size > 0
    with pytest.raises(ValueError, match="prompt_length"):
        heatmap.generation_png(tmp_path / "h.png", ["a"] * 5, out.relevance, 2)
