"""Decoding, sampling, scoring and perplexity; mostly on a tiny random Llama (fast, exact)."""

import itertools

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxml.llm import generate as gen
from jaxml.llm.base import SamplingOptions
from jaxml.models.llama import Llama, LlamaConfig

CONFIG = LlamaConfig(vocab_size=97, hidden=32, layers=2, heads=4, kv_heads=2, mlp_hidden=64, max_len=96,
                     rope_theta=100.0)


@pytest.fixture(scope="module")
def tiny():
    return _tiny_model()


def _tiny_model():
    """A tiny Llama with random weights drawn in NumPy (the shapes from `eval_shape`: an eager
    `init` compiles op by op): 3x flax's default scales, N(0, 9 / fan_in) for the embedding
    (fan_in = its width) and the kernels: sharp logits, so greedy paths are not all ties."""
    model = Llama(CONFIG)
    shapes = jax.eval_shape(model.init, jax.random.PRNGKey(0), jnp.zeros((1, 4), jnp.int32),
                            jnp.zeros((1, 4), jnp.int32))["params"]
    rng = np.random.default_rng(0)

    def draw(path, leaf):
        if leaf.ndim == 1:   # norm scales
            return jnp.ones(leaf.shape, leaf.dtype)
        fan_in = leaf.shape[1] if "embed" in jax.tree_util.keystr(path) else leaf.shape[0]
        std = 3.0 / np.sqrt(fan_in)
        return jnp.asarray(rng.standard_normal(leaf.shape) * std, leaf.dtype)

    return model, jax.tree_util.tree_map_with_path(draw, shapes)


_APPLY = {}


def _full_logits(model, params, ids, pad_to=None):
    """Logits [len, vocab] of one sequence by a plain causal forward pass (no cache, no left
    padding). With `pad_to`, the sequence is right-padded to that length first (causal attention
    never looks at the padding; one compiled program serves every length, at float32 shape noise)."""
    if model not in _APPLY:
        _APPLY[model] = jax.jit(lambda p, x: model.apply({"params": p}, x, jnp.arange(x.shape[1])[None])[0][0])
    padded = np.zeros((1, pad_to or len(ids)), np.int32)
    padded[0, :len(ids)] = ids
    return np.asarray(_APPLY[model](params, jnp.asarray(padded)))[:len(ids)]


def _greedy_by_recomputation(model, params, ids, n):
    ids = list(ids)
    for _ in range(n):
        ids.append(int(np.argmax(_full_logits(model, params, ids, pad_to=32)[-1])))
    return ids[-n:]


def test_cached_decoding_equals_recomputing_each_prefix(tiny):
    model, params = tiny
    prompts = [[5, 17, 33], [8, 9, 10, 11, 12, 13, 14, 15, 16, 2, 3, 4, 71, 72, 73, 1, 60, 61]]  # left padding
    out = gen.generate(model, params, prompts, max_new_tokens=10)
    for prompt, seq in zip(prompts, out.sequences()):
        assert seq == _greedy_by_recomputation(model, params, prompt, 10)
    no_cache = gen.generate(model, params, prompts, max_new_tokens=10, use_cache=False)
    np.testing.assert_array_equal(no_cache.tokens, out.tokens)


def test_prefill_logits_match_the_full_forward(tiny):
    """Left-padded, cached prefill gives each row the logits of its unpadded forward pass."""
    model, params = tiny
    prompts = [[1, 2, 3], [4, 5, 6, 7, 8, 9, 10]]
    tokens, valid = gen.left_pad(prompts, pad_id=0, bucket=8)
    positions = np.maximum(np.cumsum(valid, 1) - 1, 0)
    from jaxml.models.llama import init_cache
    prefill = jax.jit(lambda p, t, pos, v: model.apply({"params": p}, t, pos, key_valid=v,
                                                       cache=init_cache(CONFIG, 2, 8), cache_index=0)[0])
    logits = prefill(params, jnp.asarray(tokens), jnp.asarray(positions), jnp.asarray(valid))
    for i, p in enumerate(prompts):
        # float32: the padded keys change the summation order only (measured 4.1e-6 at |logits| <= 10).
        np.testing.assert_allclose(np.asarray(logits[i, -len(p):]), _full_logits(model, params, p), rtol=0, atol=1e-5)


def test_stop_tokens_end_rows_and_are_excluded(tiny):
    model, params = tiny
    prompt = [5, 17, 33]
    free = _greedy_by_recomputation(model, params, prompt, 8)
    stop = free[3]
    out = gen.generate(model, params, [prompt], max_new_tokens=8, stop_ids=[stop], pad_id=0)
    first = free.index(stop)
    assert out.sequences()[0] == free[:first]
    assert out.stopped[0] and out.lengths[0] == first
    assert out.steps == first + 1                       # the loop ended early
    assert (out.tokens[0, first + 1:] == 0).all()


def test_logits_processor_sees_the_right_aligned_context(tiny):
    model, params = tiny

    def successor(logits, context, step, key):
        # Force next = previous token + 1 (mod vocab): only correct if context[:, -1] is the previous token.
        forced = (context[:, -1] + 1) % logits.shape[-1]
        return jnp.where(jnp.arange(logits.shape[-1])[None] == forced[:, None], 0.0, -jnp.inf)

    prompts = [[5, 17, 33], [40, 41, 42, 43, 44, 90]]
    out = gen.generate(model, params, prompts, max_new_tokens=9, logits_processor=successor)
    assert out.sequences()[0] == [(33 + k) % 97 for k in range(1, 10)]
    assert out.sequences()[1] == [(90 + k) % 97 for k in range(1, 10)]

    def check_padding(logits, context, step, key):
        # The context holds -1 where no token exists; row 0 has 3 prompt tokens + `step` generated.
        n_tokens = jnp.sum(context[0] >= 0)
        return jnp.where(n_tokens == 3 + step, logits, jnp.nan)

    out = gen.generate(model, params, prompts[:1], max_new_tokens=5, logits_processor=check_padding)
    assert out.lengths[0] == 5 and (out.tokens[0] >= 0).all()
    greedy = gen.generate(model, params, prompts[:1], max_new_tokens=5)
    np.testing.assert_array_equal(out.tokens, greedy.tokens)


def test_sampling_frequencies_follow_the_distribution():
    logits = jnp.log(jnp.asarray([[0.5, 0.3, 0.15, 0.05]]))
    keys = jax.random.split(jax.random.PRNGKey(0), 20000)
    draw = jax.vmap(lambda k, o=SamplingOptions(temperature=1.0): gen.sample_logits(logits, k, o)[0])
    freq = np.bincount(np.asarray(draw(keys)), minlength=4) / len(keys)
    np.testing.assert_allclose(freq, [0.5, 0.3, 0.15, 0.05], atol=0.015)
    top_p = jax.vmap(lambda k: gen.sample_logits(logits, k, SamplingOptions(temperature=1.0, top_p=0.7))[0])(keys)
    freq = np.bincount(np.asarray(top_p), minlength=4) / len(keys)
    np.testing.assert_allclose(freq, [0.5 / 0.8, 0.3 / 0.8, 0, 0], atol=0.015)   # smallest set reaching 0.7
    top_k = jax.vmap(lambda k: gen.sample_logits(logits, k, SamplingOptions(temperature=1.0, top_k=2))[0])(keys)
    assert set(np.unique(np.asarray(top_k))) == {0, 1}
    hot = jax.vmap(lambda k: gen.sample_logits(logits, k, SamplingOptions(temperature=1e-3))[0])(keys[:100])
    assert (np.asarray(hot) == 0).all()


def test_seeded_sampling_is_reproducible(tiny):
    model, params = tiny
    opts = SamplingOptions(temperature=1.0)
    a = gen.generate(model, params, [[1, 2]], max_new_tokens=12, sampling=opts, key=jax.random.PRNGKey(7))
    b = gen.generate(model, params, [[1, 2]], max_new_tokens=12, sampling=opts, key=jax.random.PRNGKey(7))
    c = gen.generate(model, params, [[1, 2]], max_new_tokens=12, sampling=opts, key=jax.random.PRNGKey(8))
    np.testing.assert_array_equal(a.tokens, b.tokens)
    assert not np.array_equal(a.tokens, c.tokens)


def test_score_and_perplexity_against_direct_log_softmax(tiny):
    model, params = tiny
    seq = list(np.random.default_rng(0).integers(1, 97, size=40))
    logp_full = jax.nn.log_softmax(_full_logits(model, params, seq), axis=-1)
    direct = np.asarray([logp_full[t, seq[t + 1]] for t in range(len(seq) - 1)])
    [scored] = gen.score(model, params, [seq[:15]], [seq[15:]])
    np.testing.assert_allclose(scored, direct[14:], atol=5e-6)   # measured 9.5e-7
    # One window covering everything: the mean NLL of all tokens after the first.
    single = gen.perplexity(model, params, seq, context=64, stride=63)
    np.testing.assert_allclose(single["nll"], -direct.mean(), rtol=1e-6)   # measured 1.1e-7
    assert single["tokens"] == 39 and single["windows"] == 1


@pytest.mark.parametrize("context, stride", [(8, 7), (8, 3), (16, 5), (10, 1)])
def test_perplexity_windows_score_each_token_once_with_its_window_context(tiny, context, stride):
    model, params = tiny
    seq = list(np.random.default_rng(1).integers(1, 97, size=37))
    got = gen.perplexity(model, params, seq, context=context, stride=stride, batch_size=3)
    # Brute force, target by target: target t of the chunk [first, first + stride) is predicted
    # from the `context` tokens that end where the chunk ends.
    total, windows = 0.0, {}
    for t in range(1, len(seq)):
        first = 1 + ((t - 1) // stride) * stride
        end = min(first + stride, len(seq))
        start = max(0, end - context)
        if (start, end) not in windows:
            windows[start, end] = jax.nn.log_softmax(_full_logits(model, params, seq[start:end], pad_to=16), axis=-1)
        total -= float(windows[start, end][t - start - 1, seq[t]])
        assert end - context <= start and t - start >= min(t, context - stride)   # enough left context
    assert got["tokens"] == len(seq) - 1
    np.testing.assert_allclose(got["nll"], total / (len(seq) - 1), rtol=1e-6)   # measured <= 4e-8


def test_bad_inputs(tiny):
    model, params = tiny
    with pytest.raises(ValueError, match="exceeds the model's context of 96"):
        gen.generate(model, params, [list(range(1, 90))], max_new_tokens=10)
    with pytest.raises(ValueError, match="empty"):
        gen.generate(model, params, [[]], max_new_tokens=3)
    with pytest.raises(ValueError, match=r"outside \[0, 97\)"):
        gen.generate(model, params, [[1, 500]], max_new_tokens=3)
    with pytest.raises(ValueError, match="unknown sampling option"):
        SamplingOptions.from_kwargs(temprature=0.5)
    with pytest.raises(ValueError, match="top_p"):
        SamplingOptions(top_p=0.0)
    with pytest.raises(ValueError, match="2 prompts but 1 continuations"):
        gen.score(model, params, [[1], [2]], [[3]])
    with pytest.raises(ValueError, match="stride"):
        gen.perplexity(model, params, [1, 2, 3], context=4, stride=5)


def test_prompt_plus_generation_may_fill_the_context_exactly(tiny):
    model, params = tiny
    out = gen.generate(model, params, [list(range(1, 87))], max_new_tokens=10)   # 86 + 10 = 96
    assert out.tokens.shape == (1, 10) and out.prompt_len == 86


def test_generation_traces_the_decode_program_once_per_shape(tiny, monkeypatch):
    """Same batch, prompt bucket, max_new_tokens and options: one trace, whatever the prompt
    values, key or params; a prompt in another length bucket needs (and gets) a second one."""
    model, params = tiny
    gen._decoder.cache_clear()
    chex.clear_trace_counter()
    monkeypatch.setattr(gen, "_decode_program", chex.assert_max_traces(gen._decode_program, n=1))
    try:
        gen.generate(model, params, [[1, 2, 3]], max_new_tokens=4)
        gen.generate(model, params, [[4, 5, 6, 7]], max_new_tokens=4, key=jax.random.PRNGKey(3))
        gen.generate(model, jax.tree_util.tree_map(lambda x: x * 0.5, params), [[9] * 16], max_new_tokens=4)
        with pytest.raises(AssertionError, match="traced > 1"):
            gen.generate(model, params, [[1] * 17], max_new_tokens=4)   # 32-token bucket: a new program
    finally:
        monkeypatch.undo()
        gen._decoder.cache_clear()   # drop programs built around the counting wrapper


def test_scoring_compiles_once_per_length_bucket(tiny, monkeypatch):
    """Sequences of 31 lengths from 2 to 92 tokens, one at a time: one trace per length bucket
    (16, 24, 32, 48, 64, 96), and the padding leaves the log-probs unchanged."""
    model, params = tiny
    seq = list(np.random.default_rng(2).integers(1, 97, size=96))
    lengths = range(2, 95, 3)
    buckets = {gen.length_bucket(n, CONFIG.max_len) for n in lengths}
    assert buckets == {16, 24, 32, 48, 64, 96}
    gen._token_logprobs_fn.cache_clear()
    chex.clear_trace_counter()
    monkeypatch.setattr(gen, "_logprobs_program", chex.assert_max_traces(gen._logprobs_program, n=len(buckets)))
    try:
        for n in lengths:
            [lp] = gen.token_logprobs(model, params, [seq[:n]])
            assert lp.shape == (n - 1,)
        with pytest.raises(AssertionError, match=f"traced > {len(buckets)}"):   # two rows: a new program
            gen.score(model, params, [seq[:3], seq[:40]], [seq[3:9], seq[40:90]])
    finally:
        monkeypatch.undo()
        gen._token_logprobs_fn.cache_clear()
    # 11 tokens padded to 16 rows x 16 tokens vs the unpadded forward pass
    direct = jax.nn.log_softmax(_full_logits(model, params, seq[:11]), axis=-1)
    np.testing.assert_allclose(gen.token_logprobs(model, params, [seq[:11]] * 9)[8],
                               np.asarray(direct)[np.arange(10), seq[1:11]], atol=1e-5)   # measured 3.8e-6


def test_length_buckets():
    assert [gen.length_bucket(n, 8192) for n in (1, 16, 17, 24, 25, 33, 49, 65, 97, 129, 8000)] == \
        [16, 16, 24, 24, 32, 48, 64, 96, 128, 192, 8192]
    assert gen.length_bucket(90, 96) == 96 and gen.length_bucket(70, 80) == 80   # capped at the context
    assert len({gen.length_bucket(n, 8192) for n in range(1, 8193)}) == 19
    with pytest.raises(ValueError, match="exceed"):
        gen.length_bucket(97, 96)


# --- Filters and processors ------------------------------------------------------------------------

_PERMS = np.array(list(itertools.permutations(range(4))), np.int32)   # all 24 orders of V = 4


def _gamma_reweight(logits, context, step, key):
    """A distribution-preserving processor: Hu et al.'s gamma-reweight F' = max(2F - 1, 0) in the
    order `_PERMS[context[:, -1]]`; its mean over the 24 orders is the input distribution."""
    order = jnp.asarray(_PERMS)[context[:, -1]]
    p = jnp.take_along_axis(jax.nn.softmax(logits, -1), order, -1)
    f = jnp.maximum(2 * jnp.cumsum(p, -1) - 1, 0)
    new = jnp.diff(f, prepend=0.0, axis=-1)
    back = jnp.zeros_like(new).at[jnp.arange(len(order))[:, None], order].set(new)
    return jnp.log(back)


@pytest.mark.parametrize("cut, kept", [(dict(top_k=2), [0.4, 0.3, 0, 0]), (dict(top_p=0.8), [0.4, 0.3, 0.2, 0])])
def test_filters_before_a_distribution_preserving_processor_keep_its_average(cut, kept):
    p = np.array([0.4, 0.3, 0.2, 0.1])
    logits = jnp.log(jnp.broadcast_to(jnp.asarray(p, jnp.float32), (24, 4)))
    context = jnp.arange(24, dtype=jnp.int32)[:, None]    # row i: the i-th order
    filtered = np.array(kept) / np.sum(kept)
    # the processor alone preserves P (the property the filters must not break)
    plain = jax.nn.softmax(_gamma_reweight(logits, context, 0, None), -1).mean(0)
    np.testing.assert_allclose(plain, p, atol=2e-7)   # float32; measured 3e-8
    averages = {}
    for order in ("before_processor", "after_processor"):
        options = SamplingOptions(temperature=1.0, filter_order=order, **cut)
        final = gen.next_token_logits(logits, options, _gamma_reweight, context, jnp.int32(0), None)
        averages[order] = np.asarray(jax.nn.softmax(final, -1).mean(0))
    np.testing.assert_allclose(averages["before_processor"], filtered, atol=5e-7)   # measured 1e-7
    # after: the cut of each reweighted distribution moves the average away (by 0.22 and 0.067 here)
    assert np.abs(averages["after_processor"] - filtered).max() > 0.05


def test_generate_applies_the_filter_order(tiny):
    """top_k = 1 with a processor that boosts one token: cut first, the boost cannot resurrect
    it (greedy path); cut after, the boosted token is always the one kept."""
    model, params = tiny
    prompt = [[5, 17, 33]]
    greedy = gen.generate(model, params, prompt, max_new_tokens=5).tokens[0]   # the program of an earlier test
    boosted = next(t for t in range(97) if t not in greedy)

    def boost(logits, context, step, key):
        return logits.at[:, boosted].add(100.0)

    out = {order: gen.generate(model, params, prompt, max_new_tokens=5, logits_processor=boost,
                               sampling=SamplingOptions(temperature=1.0, top_k=1, filter_order=order)).tokens[0]
           for order in ("before_processor", "after_processor")}
    np.testing.assert_array_equal(out["before_processor"], greedy)
    assert (out["after_processor"] == boosted).all()
    with pytest.raises(ValueError, match="filter_order"):
        SamplingOptions(filter_order="sideways")


def test_samples_per_prompt_share_the_prefill(tiny):
    model, params = tiny
    prompts = [[5, 6, 7], [1, 2, 3, 4, 9]]
    single = gen.generate(model, params, prompts, max_new_tokens=6)                  # greedy
    shared = gen.generate(model, params, prompts, max_new_tokens=6, samples_per_prompt=3)
    np.testing.assert_array_equal(shared.tokens, np.repeat(single.tokens, 3, axis=0))   # prompt-major copies
    # Sampled rows: the first token's frequencies over 3000 rows follow softmax(prefill logits / T).
    opts = SamplingOptions(temperature=2.0)
    many = gen.generate(model, params, [[5, 6, 7]], max_new_tokens=1, sampling=opts, samples_per_prompt=3000,
                        key=jax.random.PRNGKey(3))
    p = np.asarray(jax.nn.softmax(_full_logits(model, params, [5, 6, 7])[-1] / 2.0))
    freq = np.bincount(many.tokens[:, 0], minlength=p.size) / 3000
    assert np.abs(freq - p).max() < 4 * np.sqrt(p.max() * (1 - p.max()) / 3000) + 1e-3
    with pytest.raises(ValueError, match="samples_per_prompt=0"):
        gen.generate(model, params, prompts, max_new_tokens=2, samples_per_prompt=0)
    with pytest.raises(ValueError, match="needs use_cache=True"):
        gen.generate(model, params, prompts, max_new_tokens=2, samples_per_prompt=2, use_cache=False)
