"""Text handling, the generation cache (resume), validation mixtures and the command-line tool."""

import json
import pathlib
import subprocess
import sys

import numpy as np
import pytest

from jaxml.papers.aitext import corpus, estimator, monitor
from jaxml.papers.aitext import text as textlib

ROOT = pathlib.Path(__file__).resolve().parents[3]


def test_sentences_handle_abbreviations_quotes_and_markdown():
    got = textlib.sentences('Mr. Darcy bowed. "Indeed!" she said. He left at 5 p.m. on Monday. '
                            'J. Smith came.\n**Title**\n- item one\n2. item two')
    assert got == ["Mr. Darcy bowed.", '"Indeed!" she said.', "He left at 5 p.m. on Monday.", "J. Smith came.",
                   "Title", "item one", "item two"]
    assert textlib.words("Mr. Darcy\u2019s bow, isn't it?") == ["mr", "darcy's", "bow", "isn't", "it"]
    assert textlib.tokenized_sentences("Yes. No way.") == [["no", "way"]]     # one-word sentences dropped
    assert textlib.sentences("  \n ") == []


def test_passages_respect_word_bounds():
    paras = [" ".join(["word"] * 30) + "." for _ in range(20)] + ["CHAPTER II"]
    out = textlib.passages(paras, min_words=100, max_words=130)
    assert out and all(100 <= len(p.split()) <= 130 for p in out)
    with pytest.raises(ValueError, match="min_words"):
        textlib.passages(paras, min_words=0)


class FakeLLM:
    """Echoes a numbered text per prompt and records the calls."""

    def __init__(self):
        self.calls = []

    def generate_text(self, prompts, *, max_new_tokens, chat=False, stop=(), seed=0, **sampling):
        self.calls.append((len(prompts), seed))
        return [f"Generated text number {len(self.calls)}-{i}. It has two sentences." for i in range(len(prompts))]


def _passages(n):
    return [corpus.Passage(f"doc/{i}", "fit", "doc", f"Passage {i} text.") for i in range(n)]


def test_generation_cache_resumes_and_skips_a_torn_line(tmp_path):
    path = tmp_path / "gen.jsonl"
    kw = dict(outline_prompt="O: {passage}", expand_prompt="E: {outline}", outline_tokens=4, expand_tokens=8,
              batch=2, seed=0, sampling={})
    llm = FakeLLM()
    corpus.generate_ai(_passages(3), llm, path, **kw)
    assert len(llm.calls) == 4                       # 2 batches x 2 stages
    with open(path, "a") as f:
        f.write('{"pid": "doc/9", "spl')             # an interrupted write
    llm2 = FakeLLM()
    done = corpus.generate_ai(_passages(5), llm2, path, **kw)
    assert len(llm2.calls) == 2 and llm2.calls[0][0] == 2      # only doc/3 and doc/4 are generated
    assert set(done) == {f"doc/{i}" for i in range(5)}
    assert sorted(corpus.load_generated(path)) == sorted(done)
    # Seeds depend on the passage, not on what was cached before.
    assert llm2.calls[0][1] == corpus.generation_seed("doc/3", 0)


def test_mixture_indices_exact_fraction_and_errors():
    rng = np.random.default_rng(0)
    h, a, frac = corpus.mixture_indices(500, 100, 0.125, 400, rng)
    assert len(a) == 50 and len(h) == 350 and frac == 0.125 and len(set(h)) == 350
    with pytest.raises(ValueError, match="needs 100 AI"):
        corpus.mixture_indices(500, 99, 0.25, 400, rng)
    with pytest.raises(ValueError, match="alpha"):
        corpus.mixture_indices(500, 99, 1.5, 400, rng)


def _toy_tables(tmp_path):
    human = [["the", "calm", "day"], ["a", "quiet", "walk"], ["the", "calm", "sea"]] * 10
    ai = [["a", "vibrant", "tapestry"], ["the", "intricate", "tapestry"], ["calm", "vibrant", "day"]] * 10
    tables = estimator.fit_tables(human, ai, min_human=1, min_ai=1)
    tables.save(tmp_path / "toy")
    return tables


def test_estimate_folder_skips_empty_documents_and_rejects_foreign_text(tmp_path):
    tables = _toy_tables(tmp_path)
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.txt").write_text("The calm day. A quiet walk. The calm sea.")
    (docs / "b.txt").write_text("A vibrant tapestry. The intricate tapestry.")
    (docs / "empty.txt").write_text("   \n")
    est, stats = monitor.estimate_folder(docs, tables, n_boot=200)
    assert stats == monitor.CorpusStats(documents=3, empty_documents=1, sentences=5, sentences_with_vocabulary=5)
    # The five sentences (the empty file adds none) have log Q/P = -log 4, log 4, -log 4, log 4, 0 under the toy
    # tables, so with r = e^d - 1 the MLE solves 2 * 3 / (1 + 3a) = 2 * 0.75 / (1 - 0.75a): a = 0.5.
    by_hand = [["the", "calm", "day"], ["a", "quiet", "walk"], ["the", "calm", "sea"],
               ["a", "vibrant", "tapestry"], ["the", "intricate", "tapestry"]]
    d = estimator.log_ratio(tables, estimator.encode(tables, by_hand))
    np.testing.assert_allclose(d, np.log(4) * np.array([-1, 1, -1, 1, 0]), atol=1e-12)
    assert abs(est.mle - 0.5) < 1e-6                # measured 5e-8 (the bootstrap's float32 solve)
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "x.txt").write_text("Der Hund schläft. Die Katze spielt.")
    with pytest.raises(ValueError, match="none of the 2 sentences"):
        monitor.estimate_folder(foreign, tables)
    only_empty = tmp_path / "only_empty"
    only_empty.mkdir()
    (only_empty / "e.txt").write_text("")
    with pytest.raises(ValueError, match="no sentence"):
        monitor.estimate_folder(only_empty, tables)
    with pytest.raises(FileNotFoundError, match="no file matching"):
        monitor.estimate_folder(tmp_path / "docs", tables, pattern="*.md")


def test_command_line_tool(tmp_path):
    _toy_tables(tmp_path)
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.txt").write_text("The calm day. A quiet walk. A vibrant tapestry. The intricate tapestry.")
    out = subprocess.run([sys.executable, str(ROOT / "scripts" / "aitext_estimate.py"), f"--docs={docs}",
                          f"--tables={tmp_path / 'toy'}", "--n_boot=100", f"--json={tmp_path / 'r.json'}"],
                         capture_output=True, text=True, check=True, cwd=tmp_path)
    assert "alpha = " in out.stdout and "4 sentences" in out.stdout
    result = json.loads((tmp_path / "r.json").read_text())
    assert result["ci"][0] <= result["mle"] <= result["ci"][1] and result["sentences"] == 4


def test_logprob_detector_scores_each_sentence_in_its_own_place():
    import types

    import jax
    import jax.numpy as jnp

    from jaxml.llm import generate as gen
    from jaxml.models import llama
    from jaxml.papers.aitext import experiments

    config = llama.LlamaConfig(vocab_size=50, hidden=16, layers=1, heads=2, kv_heads=1, mlp_hidden=32, max_len=128)
    model = llama.Llama(config)
    zeros = jnp.zeros((1, 1), jnp.int32)
    rng = np.random.default_rng(0)       # random weights from the shapes: no init program to compile
    params = jax.tree_util.tree_map(lambda x: jnp.asarray(rng.normal(0, 0.3, x.shape), x.dtype),
                                    jax.eval_shape(model.init, jax.random.PRNGKey(0), zeros, zeros)["params"])
    tokenizer = types.SimpleNamespace(encode=lambda s: [1] + [2 + ord(c) % 48 for c in s], pad_id=0)
    llm = types.SimpleNamespace(model=model, params=params, tokenizer=tokenizer)
    # Four lengths (14, 6, 9 and 3 tokens with BOS), all in one 16-token bucket: two compiled shapes in all.
    sentences = ["a longer one!", "short", "mid text", "xy"]
    got = experiments._logprob_scores(llm, sentences, batch=2)        # batched by length, then unsorted
    for s, g in zip(sentences, got):
        alone = gen.token_logprobs(model, params, [tokenizer.encode(s)])[0].mean()
        np.testing.assert_allclose(g, alone, rtol=1e-6)     # measured: equal
