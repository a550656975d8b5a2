"""mode="official": the release's shuffle, seeds, green rule, sampling order and history rule, checked
against a plain-Python transcription of the release written here from its source.

The transcription (the `_release_*` names) calls no jaxml code. From `yihwu/DiPmark`:
`dipmark/transformers.py::WatermarkLogitsProcessor` (`get_rng_seed`, `_get_codes`, `__call__`,
`get_green_token_quantile`), `dipmark/dipmark.py::Dipmark_WatermarkCode.from_random` and
`Dip_Reweight.reweight_logits`, `experiments/common.py::get_dip_score` / `dip_score_worker`; from
`UnbiasedWatermark`: `contextcode.py::PrevN_ContextCodeExtractor` and `monkeypatch.patch_model`
(the processor runs after transformers' warpers: temperature, then top-k). `torch.randperm` on a
CPU generator is MT19937 (the reference `init_genrand` / `genrand_int32`) and ATen's
`randperm_cpu` Fisher-Yates pass.
"""

import hashlib
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxml.llm.base import SamplingOptions
from jaxml.llm.generate import next_token_logits
from jaxml.papers.dipmark import detect, keys, official, reweight

VOCAB = 96
KEY = 0x5EED_CAFE_F00D   # an int key: 128 bytes big-endian, as the release's `to_bytes(128, "big")`
KEY_BYTES = KEY.to_bytes(128, "big")
GAMMAS = (0.3, 0.4, 0.5, 0.6, 0.7)


# --- The release, transcribed ---------------------------------------------------------------------

def _release_mt19937(seed):
    """torch.Generator().manual_seed(seed).random(): MT19937 outputs after init_genrand(seed)."""
    mt = [seed & 0xFFFFFFFF]
    for j in range(1, 624):
        mt.append((1812433253 * (mt[-1] ^ (mt[-1] >> 30)) + j) & 0xFFFFFFFF)
    while True:
        for k in range(624):
            y = (mt[k] & 0x80000000) | (mt[(k + 1) % 624] & 0x7FFFFFFF)
            mt[k] = mt[(k + 397) % 624] ^ (y >> 1) ^ (0x9908B0DF if y & 1 else 0)
        for y in mt:
            y ^= y >> 11
            y ^= (y << 7) & 0x9D2C5680
            y ^= (y << 15) & 0xEFC60000
            yield y ^ (y >> 18)


def _release_randperm(n, seed):
    """torch.randperm(n, generator=torch.Generator().manual_seed(seed)) (ATen randperm_cpu, n small)."""
    rng, perm = _release_mt19937(seed), list(range(n))
    for i in range(n - 1):
        z = next(rng) % (n - i)
        perm[i], perm[i + z] = perm[i + z], perm[i]
    return np.array(perm)


def _release_code(input_ids):
    return np.asarray(input_ids[-5:], np.int64).tobytes()          # PrevN_ContextCodeExtractor(5)


def _release_seed(code, key):
    return int.from_bytes(hashlib.sha256(code + key).digest(), "big") % (2 ** 32 - 1)   # get_rng_seed


def _release_dip_reweight(p_logits, shuffle, alpha):
    """Dip_Reweight.reweight_logits for one row (float64)."""
    s_p_logits = p_logits[shuffle]
    s_log_cumsum = np.logaddexp.accumulate(s_p_logits)
    s_cumsum = np.exp(s_log_cumsum - s_log_cumsum[-1])
    s_p = np.exp(s_p_logits - s_log_cumsum[-1])

    def portion_in_right(cut):
        boundary = int(np.argmax(s_cumsum > cut))
        right = (s_cumsum > cut).astype(np.float64)
        right[boundary] = np.clip((s_cumsum[boundary] - cut) / s_p[boundary], 0, 1)
        return right

    s_all = portion_in_right(alpha) / 2 + portion_in_right(1 - alpha) / 2
    with np.errstate(divide="ignore"):
        return p_logits + np.log(s_all)[np.argsort(shuffle)]


class _ReleaseProcessor:
    """WatermarkLogitsProcessor(key, Dip_Reweight(alpha), PrevN(5), ignore_history) on a batch."""

    def __init__(self, key, alpha, vocab_size, ignore_history=False):
        self.key, self.alpha, self.vocab_size, self.ignore_history = key, alpha, vocab_size, ignore_history
        self.cc_history = set()

    def __call__(self, input_ids, scores):
        mask, out = [], []
        for row, logits in zip(input_ids, scores):
            code = _release_code(row)
            mask.append(code in self.cc_history)        # looked up before get_rng_seed adds it
            if not self.ignore_history:
                self.cc_history.add(code)
            shuffle = _release_randperm(self.vocab_size, _release_seed(code, self.key))
            out.append(_release_dip_reweight(logits, shuffle, self.alpha))
        if self.ignore_history:
            return np.stack(out)
        return np.where(np.array(mask)[:, None], scores, np.stack(out))


def _release_warpers(scores, temperature, top_k):
    """transformers' default warpers before the patched-in processor: temperature, then top-k."""
    if temperature != 1.0:
        scores = scores / temperature
    kth = np.sort(scores, axis=-1)[:, -top_k][:, None]
    return np.where(scores < kth, -np.inf, scores)


def _release_dip_score(output_ids, key, vocab_size, gammas=GAMMAS):
    """get_dip_score + dip_score_worker for one unpadded output: per-token quantiles, green counts,
    n, the score (mid2) and exp(-2 mid2^2) per gamma, and the minimum over gammas."""
    decoder_input_ids = list(output_ids[:-1])
    seq_len = len(decoder_input_ids)                        # sum of label_attention_mask
    score = np.zeros(seq_len, np.float32)
    for i in range(seq_len - 1):
        pre, cur = decoder_input_ids[:i + 1], decoder_input_ids[i + 1]
        shuffle = _release_randperm(vocab_size, _release_seed(_release_code(pre), key))
        score[i] = np.float32(np.flatnonzero(shuffle == cur)[0] + 1) / np.float32(vocab_size)
    green = np.array([np.sum(score >= np.float32(g)) for g in gammas])
    mid2 = (green - (1 - np.asarray(gammas)) * seq_len) / math.sqrt(seq_len)
    app = np.exp(-2 * mid2 ** 2)
    return {"quantile": score[:seq_len - 1], "green": green, "n": seq_len, "score": mid2, "app_score": app,
            "best_app_score": app.min()}


# --- The transcription itself, against NumPy's MT19937 (and torch where installed) ----------------

def test_transcribed_mt19937_is_numpys_randomstate_stream():
    """numpy's RandomState(seed) is MT19937 after init_genrand(seed); randint over the full uint32
    range returns its raw outputs: an independent check of the transcription (and of ours)."""
    for seed in (0, 5489, 2 ** 32 - 2):
        rng = _release_mt19937(seed)
        ref = np.random.RandomState(seed).randint(0, 2 ** 32, size=1300, dtype=np.uint32)
        np.testing.assert_array_equal([next(rng) for _ in range(1300)], ref)
        np.testing.assert_array_equal(np.asarray(official.mt19937_words(jnp.uint32(seed), 1300)), ref)


@pytest.mark.torch_ref
def test_transcription_and_ours_equal_torch_randperm():
    import torch

    for n in (VOCAB, 49152):
        for seed in (0, 1, 2 ** 32 - 2):
            ref = torch.randperm(n, generator=torch.Generator().manual_seed(seed)).numpy()
            np.testing.assert_array_equal(_release_randperm(n, seed), ref)
            np.testing.assert_array_equal(np.asarray(official.shuffle(jnp.uint32(seed), n)), ref)


# --- Ours against the transcription ----------------------------------------------------------------

def test_official_shuffle_equals_the_release_permutation():
    seeds = [0, 1, 977, 123456789, 2 ** 31, 2 ** 32 - 2]
    ours = np.asarray(official.shuffle(jnp.asarray(seeds, jnp.uint32), VOCAB))
    for seed, row in zip(seeds, ours):
        np.testing.assert_array_equal(row, _release_randperm(VOCAB, seed))
    # the position of a token without the permutation (the detector's path) is the same
    tokens = np.arange(len(seeds)) * 17 % VOCAB
    pos = np.asarray(official.positions(jnp.asarray(tokens), jnp.asarray(seeds, jnp.uint32), VOCAB))
    np.testing.assert_array_equal(pos, [np.flatnonzero(row == t)[0] for row, t in zip(ours, tokens)])
    # at SmolLM2's vocabulary, for two keys' context seeds
    big = [_release_seed(_release_code([1, 2, 3, 4, 5]), KEY_BYTES), _release_seed(_release_code([7]), b"k")]
    ours = np.asarray(official.shuffle(jnp.asarray(big, jnp.uint32), 49152))
    for seed, row in zip(big, ours):
        np.testing.assert_array_equal(row, _release_randperm(49152, seed))


def test_official_seeds_hash_short_codes_short_and_int_keys_big_endian():
    codes = np.array([[1, 2, 3, 4, 5], [-1, -1, 9, 8, 7], [-1, -1, -1, -1, 42], [-1] * 5, [0, 0, 0, 0, 0]], np.int32)
    ours = np.asarray(official.context_seeds(jnp.asarray(codes), KEY_BYTES))
    ref = [_release_seed(_release_code([t for t in c if t >= 0]), KEY_BYTES) for c in codes]
    np.testing.assert_array_equal(ours, ref)
    assert official.key_bytes(KEY) == KEY_BYTES
    assert reweight.dipmark(KEY, VOCAB, mode="official").key == KEY_BYTES
    assert detect.Detector(KEY, VOCAB, mode="official").key == KEY_BYTES
    assert detect.Detector(KEY, VOCAB).key == KEY.to_bytes(128, "little")     # ours: unchanged


def test_green_rule_by_hand():
    """(pos + 1) / V >= gamma: one more green position than ours (pos >= gamma V), on V = 10."""
    pos = np.arange(10)
    off = detect.Detector(b"k", 10, gammas=(0.3, 0.5, 0.7), mode="official").is_green(pos)
    our = detect.Detector(b"k", 10, gammas=(0.3, 0.5, 0.7)).is_green(pos)
    np.testing.assert_array_equal(off.T, [[0, 0, 1, 1, 1, 1, 1, 1, 1, 1],      # gamma 0.3: pos >= 2
                                          [0, 0, 0, 0, 1, 1, 1, 1, 1, 1],      # 0.5: pos >= 4
                                          [0, 0, 0, 0, 0, 0, 1, 1, 1, 1]])     # 0.7: 7/10 == 0.7 in float32
    np.testing.assert_array_equal(our.T.sum(1), [7, 5, 3])
    assert official.null_green_probability(10, 0.5) == 0.6
    assert official.kgw_green_start(VOCAB, 0.35) == 33 and math.ceil(0.35 * VOCAB) == 34   # Soft_Reweight: int(V gamma)


def test_topk_then_reweight_then_temperature_order_by_hand():
    """Four tokens a, b, c, d at positions 10, 40, 70, 90 of the context's permutation with
    P = (0.4, 0.3, 0.2, 0.1), top-k 3, alpha = 0.5 (F' = max(2F - 1, 0)). Release (top-k first):
    P_k = (4, 3, 2)/9 over a, b, c, F = 4/9, 7/9, 1 -> P' = (0, 5/9, 4/9). Reweight first, then
    top-k: F = .4, .7, .9, 1 -> P' = (0, .4, .4, .2), whose top 3 are b, c, d. At T = 0.5 the
    release reweights top-3 of P^2: (16, 9, 4)/29 -> F' = 3/29, 21/29, 1 -> (3, 18, 8)/29."""
    context = np.array([[11, 22, 33, 44, 55], [1, 2, 3, 4, 5]], np.int32)
    shuffle = _release_randperm(VOCAB, _release_seed(_release_code(context[0]), KEY_BYTES))
    a, b, c, d = shuffle[[10, 40, 70, 90]]
    logits = np.full((2, VOCAB), -np.inf, np.float32)
    logits[:, [a, b, c, d]] = np.log([0.4, 0.3, 0.2, 0.1])
    ctx, step = jnp.asarray(context), jnp.int32(0)

    processors = {t: jax.jit(reweight.dipmark(KEY, VOCAB, alpha=0.5, temperature=t, mode="official"))
                  for t in (1.0, 0.5)}

    def sampled(temperature, options):   # the distribution `generate` draws from (one compiled processor per T)
        out = next_token_logits(jnp.asarray(logits), options, processors[temperature], ctx, step, None)
        return np.asarray(jax.nn.softmax(out / temperature, axis=-1))[0][[a, b, c, d]]

    np.testing.assert_allclose(sampled(1.0, official.sampling_options(top_k=3)), [0, 5 / 9, 4 / 9, 0], atol=1e-6)
    after = SamplingOptions(temperature=1.0, top_k=3, filter_order="after_processor")
    np.testing.assert_allclose(sampled(1.0, after), [0, 0.4, 0.4, 0.2], atol=1e-6)
    np.testing.assert_allclose(sampled(0.5, official.sampling_options(0.5, top_k=3)), np.array([3, 18, 8, 0]) / 29,
                               atol=1e-6)
    # and the transcription (warpers, then the processor) agrees
    for temperature, expect in ((1.0, [0, 5 / 9, 4 / 9, 0]), (0.5, np.array([3, 18, 8, 0]) / 29)):
        release = _ReleaseProcessor(KEY_BYTES, 0.5, VOCAB)(context, _release_warpers(logits.astype(np.float64),
                                                                                      temperature, 3))
        p = np.exp(release[0] - np.logaddexp.reduce(release[0]))
        np.testing.assert_allclose(p[[a, b, c, d]], expect, atol=1e-9)


def test_release_history_rule_is_shared_by_the_batch():
    """The release's history set (one per processor, filled row by row at each step) against
    `official.repeated_context` on a 2-token vocabulary (repeats are frequent), with a 3-token
    prompt (short codes at the first steps) and two rows sharing a prompt."""
    rng = np.random.default_rng(0)
    batch, plen, steps, width = 3, 3, 12, 5
    prompts = rng.integers(0, 2, (batch, plen))
    prompts[1] = prompts[0]
    generated = rng.integers(0, 2, (batch, steps))
    history, ours_rows, official_rows = set(), [], []
    shared = jax.jit(official.repeated_context, static_argnums=2)
    per_row = jax.jit(reweight.repeated_context, static_argnums=2)
    for step in range(steps):
        rows = [list(prompts[b]) + list(generated[b, :step]) for b in range(batch)]
        release = []
        for row in rows:
            code = _release_code(row)
            release.append(code in history)
            history.add(code)
        context = np.concatenate([np.full((batch, steps - step), -1), prompts, generated[:, :step]], axis=1)
        ours = np.asarray(shared(jnp.asarray(context, jnp.int32), jnp.int32(step), width))
        np.testing.assert_array_equal(ours, release, err_msg=f"step {step}")
        official_rows.append(ours)
        ours_rows.append(np.asarray(per_row(jnp.asarray(context, jnp.int32), jnp.int32(step), width)))
    official_rows, ours_rows = np.array(official_rows), np.array(ours_rows)
    assert official_rows[0, 1] and not ours_rows[0, 1]      # row 1 repeats row 0's code: shared history only
    assert official_rows.sum() > ours_rows.sum() >= 1


def _generate(processor_fn, prompts, steps, seed):
    """Token rows sampled step by step from processor_fn(logits [B, V], rows, step) -> probs [B, V]
    for fixed random logits (no model); `rows` are the token lists so far (prompt included)."""
    rng = np.random.default_rng(seed)
    rows = [list(p) for p in prompts]
    for step in range(steps):
        logits = rng.standard_normal((len(rows), VOCAB)).astype(np.float32)
        probs = processor_fn(logits, rows, step)
        for r, p in zip(rows, probs):
            r.append(int(rng.choice(VOCAB, p=p / p.sum())))
    return [np.array(r[len(p):]) for r, p in zip(rows, prompts)]


def test_watermarked_by_either_side_is_detected_by_both_and_not_by_the_default_mode():
    """Our official generator (processor + release sampling order) gives the release's distribution
    at every step (batch-shared history included: two rows share a prompt), its text is detected by
    our official detector and the transcribed release detector, not by the default mode's; and a
    text sampled from the transcribed release generator is detected by our official detector."""
    alpha, top_k, steps = 0.45, 50, 90
    prompts = np.array([[5, 17, 3, 88, 41, 9], [5, 17, 3, 88, 41, 9]])
    wm = reweight.dipmark(KEY, VOCAB, alpha=alpha, mode="official")
    options = official.sampling_options(top_k=top_k)
    ours_step = jax.jit(lambda logits, ctx, step: jax.nn.softmax(next_token_logits(logits, options, wm, ctx, step,
                                                                                   None)))
    release = _ReleaseProcessor(KEY_BYTES, alpha, VOCAB)
    repeated = []

    def filtered(logits):   # the release's warpers (temperature 1: top-k only), as probabilities
        x = _release_warpers(logits.astype(np.float64), 1.0, top_k)
        return x, np.exp(x - np.logaddexp.reduce(x, axis=1, keepdims=True))

    def ours_fn(logits, rows, step):
        width = len(prompts[0]) + steps
        ctx = np.array([[-1] * (width - len(r)) + r for r in rows], np.int32)
        p = np.asarray(ours_step(jnp.asarray(logits), jnp.asarray(ctx), jnp.int32(step)), np.float64)
        x, base = filtered(logits)
        q = release(rows, x)
        q = np.exp(q - np.logaddexp.reduce(q, axis=1, keepdims=True))
        np.testing.assert_allclose(p, q, atol=2e-6, err_msg=f"step {step}")
        repeated.append(np.isclose(q, base).all(axis=1))
        return p

    ours_text = _generate(ours_fn, prompts, steps, seed=1)
    assert repeated[0][1] and not repeated[0][0]   # step 0: row 1's code was row 0's -> unreweighted

    release_alone = _ReleaseProcessor(KEY_BYTES, alpha, VOCAB)     # a fresh generate call: empty history

    def release_fn(logits, rows, step):
        q = release_alone(rows, filtered(logits)[0])
        return np.exp(q - np.logaddexp.reduce(q, axis=1, keepdims=True))

    release_text = _generate(release_fn, prompts[:1], steps, seed=2)

    official_det = detect.Detector(KEY, VOCAB, gammas=GAMMAS, mode="official")
    default_det = detect.Detector(KEY, VOCAB, gammas=GAMMAS)
    texts = ours_text + release_text                # the generated part only, as the release scores
    s_off, s_def = official_det.score(texts), default_det.score(texts)
    col = s_off.column(0.5)
    assert s_off.mode == "official" and s_def.mode == "ours"
    assert (s_off.score[:, col] > detect.HOEFFDING_THRESHOLD_1PCT).all(), s_off.score[:, col]
    assert (s_off.p_value[:, col] < 1e-3).all()
    assert (s_def.score[:, col] < detect.HOEFFDING_THRESHOLD_1PCT).all(), s_def.score[:, col]
    pos, _ = official_det.positions(texts)
    for i, text in enumerate(texts):
        ref = _release_dip_score(text, KEY_BYTES, VOCAB)
        n = len(text) - 1
        # the same token quantiles (tokens 1 .. T - 2; the release never scores its last token)
        np.testing.assert_array_equal((pos[i, :n - 1] + 1).astype(np.float32) / np.float32(VOCAB), ref["quantile"])
        last = official.green(pos[i, n - 1], VOCAB, GAMMAS)
        np.testing.assert_array_equal(s_off.green[i], ref["green"] + last)
        assert s_off.n[i] == ref["n"] == n
        assert ref["best_app_score"] < 1e-3 and ref["score"][col] > detect.HOEFFDING_THRESHOLD_1PCT


def test_mode_errors_name_the_value():
    with pytest.raises(ValueError, match="mode='torch'.*accepted"):
        reweight.dipmark(b"k", VOCAB, mode="torch")
    with pytest.raises(ValueError, match="mode='Official'.*accepted"):
        detect.Detector(b"k", VOCAB, mode="Official")
    with pytest.raises(ValueError, match="byteorder"):
        keys.as_key_bytes(1, byteorder="native")
    with pytest.raises(ValueError, match="temperature"):
        official.sampling_options(temperature=0.0)
    with pytest.raises(ValueError, match="more than 1"):
        detect.Detector(b"k", VOCAB, mode="official").score([[3]])


@pytest.mark.slow
def test_tiny_watermark_experiment_in_official_mode_labels_its_detection_metrics(tmp_path):
    from jaxml.core.config import load_config
    from jaxml.papers.dipmark import experiments

    config = load_config("jaxml/papers/dipmark/configs/watermark.py:tiny")
    with config.unlocked():
        config.mode = "official"
    assert experiments.top_k_of(config) == official.TOP_K
    result = experiments.watermark(config, tmp_path)
    detection = [k for k in result.metrics if k.startswith(("tpr_", "fpr_", "threshold_emp", "n_null"))]
    assert detection and all("/official/" in k for k in detection)
    assert all(math.isfinite(v) for v in result.metrics.values())
    assert "mode official" in result.notes and all("mode official" in c.ours for c in result.claims[1:])
