"""Detection: statistics, null calibration, green lists shared with the generator, errors."""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxml.llm import generate as gen
from jaxml.llm.base import SamplingOptions
from jaxml.models.llama import Llama, LlamaConfig
from jaxml.papers.dipmark import detect, reweight

VOCAB = 96


def test_statistics_match_the_formulas():
    s = detect.statistics(np.array([[80, 60], [40, 50]]), np.array([100, 100]), (0.3, 0.5))
    np.testing.assert_allclose(s.score, [[(80 - 70) / 10, (60 - 50) / 10], [(40 - 70) / 10, 0.0]])
    np.testing.assert_allclose(s.p_value, [[math.exp(-2), math.exp(-2 * 1.0)], [1.0, 1.0]])
    np.testing.assert_allclose(s.kgw_z[0], [10 / math.sqrt(100 * 0.21), 10 / math.sqrt(25)])
    np.testing.assert_allclose(s.min_p_value_uncorrected, [math.exp(-2), 1.0])
    assert detect.HOEFFDING_THRESHOLD_1PCT == pytest.approx(1.5174, abs=1e-4)


def test_unwatermarked_random_text_is_calibrated():
    """Under the null the green fraction is 1 - gamma and Hoeffding's 1% threshold is conservative."""
    rng = np.random.default_rng(0)
    texts = rng.integers(0, VOCAB, (400, 105))
    det = detect.Detector(b"k", VOCAB)
    s = det.score(texts)
    assert (s.n == 100).all()
    frac = s.green.sum(0) / s.n.sum()
    exact = (VOCAB - np.ceil(s.gammas * VOCAB)) / VOCAB    # positions >= gamma V: at most 1 - gamma
    assert np.all(exact <= 1 - s.gammas)
    se = np.sqrt(exact * (1 - exact) / s.n.sum())
    assert np.all(np.abs(frac - exact) < 4 * se), frac
    assert (s.p_value <= 0.01).mean() <= 0.01
    assert abs(s.kgw_z[:, s.column(0.5)].mean()) < 4 / math.sqrt(len(texts))


@pytest.fixture(scope="module")
def tiny_lm():
    model = Llama(LlamaConfig(vocab_size=VOCAB, hidden=32, layers=2, heads=4, kv_heads=2, mlp_hidden=64, max_len=128))
    params = model.init(jax.random.PRNGKey(0), jnp.zeros((1, 4), jnp.int32), jnp.zeros((1, 4), jnp.int32))["params"]
    prompts = np.random.default_rng(1).integers(0, VOCAB, (8, 6)).tolist()
    return model, params, prompts


def test_generator_and_detector_share_the_green_list(tiny_lm):
    """KGW with a huge delta makes every watermarked step green; only repeated-context steps escape."""
    model, params, prompts = tiny_lm
    wm = reweight.kgw(b"k", VOCAB, delta=60.0, gamma=0.5)
    out = gen.generate(model, params, prompts, max_new_tokens=40, sampling=SamplingOptions(temperature=1.0),
                       logits_processor=wm)
    det = detect.Detector(b"k", VOCAB, gammas=(0.5,))
    full = [p + s for p, s in zip(prompts, out.sequences())]   # score with the prompt so every step has its context
    pos, _ = det.positions(full)
    for row, p, seq in zip(pos, prompts, full):
        generated = row[len(p) - 5:len(seq) - 5]
        codes = [tuple(seq[t - 5:t]) for t in range(len(p), len(seq))]
        fresh = np.array([c not in codes[:i] for i, c in enumerate(codes)])
        assert (generated[fresh] >= VOCAB / 2).all()
        assert fresh.sum() >= 30
    # the wrong key sees no excess of green tokens
    wrong = detect.Detector(b"other", VOCAB, gammas=(0.5,)).score(full)
    assert wrong.score.mean() < 1.0


def test_dipmark_generations_are_detected_and_null_generations_are_not(tiny_lm):
    model, params, prompts = tiny_lm
    det = detect.Detector(b"k", VOCAB)
    options = SamplingOptions(temperature=1.0)
    marked = gen.generate(model, params, prompts, max_new_tokens=64, sampling=options,
                          logits_processor=reweight.dipmark(b"k", VOCAB, alpha=0.5), key=jax.random.PRNGKey(3))
    plain = gen.generate(model, params, prompts, max_new_tokens=64, sampling=options, key=jax.random.PRNGKey(3))
    s_marked, s_plain = det.score(marked.sequences()), det.score(plain.sequences())
    col = s_marked.column(0.5)
    assert (s_marked.score[:, col] > detect.HOEFFDING_THRESHOLD_1PCT).mean() >= 0.75
    assert s_plain.score[:, col].max() < detect.HOEFFDING_THRESHOLD_1PCT
    # substitution dilutes the signal
    attacked = det.score(detect.substitute(marked.sequences(), 0.5, VOCAB, seed=0))
    assert attacked.score[:, col].mean() < s_marked.score[:, col].mean()


def test_substitute_rate_and_identity():
    seqs = [np.arange(2000) % VOCAB]
    np.testing.assert_array_equal(detect.substitute(seqs, 0.0, VOCAB)[0], seqs[0])
    changed = (detect.substitute(seqs, 0.3, VOCAB, seed=1)[0] != seqs[0]).mean()
    assert abs(changed - 0.3 * (1 - 1 / VOCAB)) < 0.04
    with pytest.raises(ValueError, match="epsilon"):
        detect.substitute(seqs, 1.5, VOCAB)


def test_bad_inputs_get_clear_errors():
    det = detect.Detector(b"k", VOCAB)
    with pytest.raises(ValueError, match="empty"):
        det.score([[]])
    with pytest.raises(ValueError, match="context width"):
        det.score([[1, 2, 3, 4, 5]])
    with pytest.raises(ValueError, match="outside"):
        det.score([[1, 2, 3, 4, 5, 6, VOCAB]])
    with pytest.raises(ValueError, match="no sequences"):
        det.score([])
    with pytest.raises(TypeError, match="private key"):
        detect.Detector("a string key", VOCAB)
    with pytest.raises(ValueError, match="gamma"):
        detect.Detector(b"k", VOCAB, gammas=(0.0,))
    with pytest.raises(ValueError, match="not scored"):
        det.score([list(range(10))]).column(0.55)


class _WordTokenizer:
    """A stand-in tokenizer: one id per character (enough for the text path)."""

    def encode(self, text, add_bos=None):
        return [ord(c) % VOCAB for c in text]


def test_score_texts_tokenizes_and_rejects_empty_or_short_text():
    det = detect.Detector(b"k", VOCAB)
    s = det.score_texts(["a longer piece of text"], _WordTokenizer())
    assert s.n.tolist() == [len("a longer piece of text") - 5]
    with pytest.raises(ValueError, match="empty"):
        det.score_texts(["   "], _WordTokenizer())
    with pytest.raises(ValueError, match="context width"):
        det.score_texts(["abc"], _WordTokenizer())
    with pytest.raises(TypeError, match="list of str"):
        det.score_texts("abcdefgh", _WordTokenizer())
