"""The local judges' machinery on a tiny random Llama with SmolLM2's tokenizer: the prefix cache, the
image slots, verdict-constrained decoding and the VLM task's frozen/trained split."""

import functools

import jax
import jax.numpy as jnp
import ml_collections
import numpy as np
import pytest

from jaxml.models.llama import Llama, LlamaConfig, smollm2_tokenizer
from jaxml.papers.mllmjudge import formats, judgements, lm_judges


@functools.lru_cache(maxsize=1)
def tiny():
    tok = smollm2_tokenizer()
    config = LlamaConfig(vocab_size=tok.vocab_size, hidden=32, layers=3, heads=4, kv_heads=2, mlp_hidden=48,
                         max_len=1024)
    model = Llama(config)
    params = jax.jit(model.init)(jax.random.PRNGKey(0), jnp.zeros((1, 4), jnp.int32),
                                 jnp.zeros((1, 4), jnp.int32))["params"]
    return model, params, tok


def _items():
    a = [formats.Answer(n, t) for n, t in (("p", "A bag."), ("q", "A coat."), ("r", "A shoe."), ("s", "Nothing."))]
    score = formats.ScoreItem(0, "p", "A bag at the top left.", 0, "What is in the image?", "images/x.png", "fashion", 4)
    pair = formats.PairItem(0, 0, "images/x.png", "fashion", "What is in the image?", a[0], a[1], "A")
    batch = formats.BatchItem(0, "What is in the image?", "images/x.png", "icons", a, "ABCD")
    return score, pair, batch


@functools.lru_cache(maxsize=4)
def _apply(model):
    return jax.jit(lambda p, t: model.apply({"params": p}, t, jnp.arange(t.shape[1])[None])[0][0, -1])


def full_logits(model, params, rows):
    """Next-token logits after each row, one unpadded forward pass per row (the reference)."""
    return np.stack([np.asarray(_apply(model)(params, jnp.asarray([r], jnp.int32))) for r in rows])


def test_verdict_tokens_single_token_symbols():
    tok = smollm2_tokenizer()
    vt = lm_judges.VerdictTokens.of(tok)
    assert tok.decode(list(vt.prefix)) == lm_judges.PREFIX
    for c, i in vt.choice.items():
        assert tok.decode([i]) == c
    # a ranking spelled by target() decodes to the release's ranking string
    assert tok.decode(list(vt.prefix) + vt.target("CDAB")) == "Judgement: [[C]], [[D]], [[A]], [[B"
    for reply, kind in (("4", "score"), ("B", "pair"), ("CDAB", "batch")):
        text = lm_judges.reply_text(reply if kind != "score" else 4, kind)
        item = _items()[("score", "pair", "batch").index(kind)]
        assert judgements.parse_for(item, text) == (4 if kind == "score" else reply)


def test_pick_argmax_nucleus_and_frequencies():
    rng = np.random.default_rng(0)
    logits = np.array([[0.0, 2.0, 1.0, -np.inf]])
    assert lm_judges.pick(logits, 0.0, 1.0, rng)[0] == 1
    # top_p 0.2 keeps only the most likely entry
    assert set(lm_judges.pick(np.repeat(logits, 200, 0), 1.0, 0.2, rng)) == {1}
    # top_p 1: frequencies follow softmax(logits / T); T = 0.5 -> p ∝ exp(2 * logits)
    draws = lm_judges.pick(np.repeat(logits, 20000, 0), 0.5, 1.0, rng)
    p = np.exp(2 * np.array([0.0, 2.0, 1.0]))
    p /= p.sum()
    freq = np.bincount(draws, minlength=4)[:3] / len(draws)
    np.testing.assert_allclose(freq, p, atol=0.01)     # 5 sigma of a binomial at n = 20000 is < 0.01
    assert np.bincount(draws, minlength=4)[3] == 0


def test_prefix_cache_equals_full_forward():
    model, params, tok = tiny()
    prefix_cache, after_prefix, _ = lm_judges._programs(model)
    head = tok.encode("Evaluation Method: rate the answer.\nHere is the input:\n")
    rests = [tok.encode("Answer: a bag.\nJudgement: [[", add_bos=False), tok.encode("Answer: no.", add_bos=False)]
    cache = prefix_cache(params, np.asarray([head], np.int32))
    arr, last = lm_judges._right_pad(rests, tok.pad_id, 4)
    got = np.asarray(after_prefix(params, cache, arr, last))[:2]
    want = full_logits(model, params, [head + r for r in rests])
    np.testing.assert_allclose(got, want, atol=2e-5, rtol=1e-4)


def test_image_slots_act_as_embeddings():
    """delta = E[x] - E[placeholder] at a slot gives exactly the logits of token x written there."""
    model, params, tok = tiny()
    layout = lm_judges.VLMLayout.of(tok)
    row = layout.row(tok, _items()[0])
    _, _, with_delta = lm_judges._programs(model)
    emb = params["embed"]["embedding"]
    xs = np.arange(100, 100 + lm_judges.IMAGE_SLOTS)
    projected = (emb[xs] - emb[layout.placeholder])[None]
    arr, last = lm_judges._right_pad([row], tok.pad_id, 1)
    delta = lm_judges._image_delta(layout, jnp.asarray(projected), arr.shape[1])
    got = np.asarray(with_delta(params, arr, delta, last))
    written = list(row)
    written[layout.slots] = xs.tolist()
    np.testing.assert_allclose(got, full_logits(model, params, [written]), atol=2e-5, rtol=1e-4)


def test_constrained_verdicts_always_parse_and_rank_permutations():
    model, params, tok = tiny()
    vt = lm_judges.VerdictTokens.of(tok)
    _, _, with_delta = lm_judges._programs(model)
    score, pair, batch = _items()
    items = [score, pair, batch, batch]
    rows = [tok.encode(judgements.build_prompt(it)[-200:] + lm_judges.PREFIX) for it in items]
    calls = []

    def last_logits(rows_now, owners):
        calls.append(list(owners))
        return full_logits(model, params, rows_now)

    for seed in range(3):
        v = lm_judges.constrained_verdicts(last_logits, rows, [formats.kind_of(i) for i in items], vt, 1.0, 1.0,
                                           np.random.default_rng(seed), [0, 0, 4, 4])
        assert v[0] in (1, 2, 3, 4, 5) and v[1] in ("A", "B", "C")
        assert sorted(v[2]) == sorted(v[3]) == list("ABCD")
    assert calls[0] == [0, 1, 2, 3] and calls[1] == [2, 3] and calls[2] == [2, 3]
    # greedy equals the argmax over the allowed symbols of a full forward
    v = lm_judges.constrained_verdicts(last_logits, rows[:2], ["score", "pair"], vt, 0.0, 1.0,
                                       np.random.default_rng(0), [0, 0])
    logits = full_logits(model, params, rows[:2])
    assert v[0] == 1 + int(np.argmax(logits[0, [vt.choice[c] for c in "12345"]]))
    assert v[1] == "ABC"[int(np.argmax(logits[1, [vt.choice[c] for c in "ABC"]]))]


def test_build_examples_targets_point_at_verdict_symbols():
    _, _, tok = tiny()
    layout = lm_judges.VLMLayout.of(tok)
    items = list(_items())
    feats = {"images/x.png": np.ones((lm_judges.IMAGE_SLOTS, 8), np.float32)}
    ex = lm_judges.build_examples(items, feats, tok, layout)
    assert ex["tokens"].shape[1] % 32 == 0
    symbols = {"score": "4", "pair": "A", "batch": "ABCD"}
    for i, it in enumerate(items):
        want = symbols[formats.kind_of(it)]
        n = int(ex["target_w"][i].sum())
        assert n == len(want)
        ids = ex["target_ids"][i, :n]
        assert [tok.decode([int(t)]) for t in ids] == list(want)
        np.testing.assert_array_equal(ex["tokens"][i, ex["target_pos"][i, :n] + 1], ids)


def test_vlm_task_trains_projector_and_top_layers_only():
    model, params, tok = tiny()
    layout = lm_judges.VLMLayout.of(tok)
    feats = {"images/x.png": np.random.default_rng(0).normal(size=(lm_judges.IMAGE_SLOTS, 8)).astype(np.float32)}
    src = lm_judges.vlm_source(list(_items()), feats, tok, layout)
    task = lm_judges.VLMTask(model, params, layout, src, {}, train_layers=1)
    batch = src[np.arange(3)]
    p = task.init(jax.random.PRNGKey(1), batch)
    assert set(p["lm_top"]) == {"layers_2", "final_norm"} and "layers_2" not in p["lm"]
    grads = jax.jit(jax.grad(lambda q: task.loss(q, batch, None)[0]))(p)
    norm = lambda t: float(sum(jnp.abs(x).sum() for x in jax.tree_util.tree_leaves(t)))
    assert norm(grads["lm"]) == 0.0 and norm(grads["projector"]) > 0 and norm(grads["lm_top"]) > 0
    config = ml_collections.ConfigDict({"num_steps": 10, "optimizer": {"name": "adamw", "learning_rate": 1e-2,
                                                                       "weight_decay": 0.1},
                                        "schedule": {"name": "constant", "warmup_steps": 0, "end_factor": 1.0}})
    tx = task.optimizer(config)
    updates, _ = tx.update(grads, tx.init(p), p)
    assert norm(updates["lm"]) == 0.0 and norm(updates["projector"]) > 0


def test_vlm_judge_rejects_other_settings_and_missing_images():
    model, params, tok = tiny()
    judge = lm_judges.VLMJudge(model, {"projector": {}, "lm": params, "lm_top": {}}, tok, expert=None)
    with pytest.raises(ValueError, match="setting"):
        judge.judge(list(_items()), {}, setting="No Figure")
    with pytest.raises(KeyError, match="images/x.png"):
        judge.judge(list(_items()), {})


def test_text_judge_greedy_equals_the_reference_forward():
    """TextJudge (greedy, prompt head cached per kind) picks the argmax verdict of an uncached forward pass
    over the chat-wrapped release prompt + 'Judgement: [['; the ranking continues from the chosen letters."""
    from jaxml.llm.local import LocalLLM

    model, params, tok = tiny()
    judge = lm_judges.TextJudge(LocalLLM(model, params, tok), temperature=0.0, batch_size=4)
    vt = judge.tokens
    score, pair, batch = _items()
    replies = judge.judge([score, pair, batch], {}, setting="No Figure")
    marker = "Here is the input:\n"

    def ids(item):
        chat = tok.apply_chat_template([{"role": "user", "content": judgements.build_prompt(item, "No Figure")}])
        cut = chat.index(marker) + len(marker)
        return tok.encode(chat[:cut]) + tok.encode(chat[cut:] + lm_judges.PREFIX, add_bos=False)

    logits = full_logits(model, params, [ids(score), ids(pair)])
    assert replies[0] == f"Judgement: [[{1 + int(np.argmax(logits[0, [vt.choice[c] for c in '12345']]))}]]"
    assert replies[1] == f"Judgement: [[{'ABC'[int(np.argmax(logits[1, [vt.choice[c] for c in 'ABC']]))]}]]"
    ranking = ""
    row = ids(batch)
    for _ in range(3):
        left = [c for c in "ABCD" if c not in ranking]
        lg = full_logits(model, params, [row])[0]
        ranking += left[int(np.argmax(lg[[vt.choice[c] for c in left]]))]
        row = ids(batch) + vt.target(ranking) + list(vt.sep)
    ranking += next(c for c in "ABCD" if c not in ranking)
    assert replies[2] == lm_judges.reply_text(ranking, "batch")
    assert judgements.parse_for(batch, replies[2]) == ranking


def test_score_distribution_is_the_softmax_over_the_five_score_tokens():
    from jaxml.llm.local import LocalLLM

    model, params, tok = tiny()
    judge = lm_judges.TextJudge(LocalLLM(model, params, tok), batch_size=4)
    score = _items()[0]
    probs = judge.score_distribution([score, score], setting="No Figure")
    marker = "Here is the input:\n"
    chat = tok.apply_chat_template([{"role": "user", "content": judgements.build_prompt(score, "No Figure")}])
    cut = chat.index(marker) + len(marker)
    logits = full_logits(model, params, [tok.encode(chat[:cut]) + tok.encode(chat[cut:] + lm_judges.PREFIX,
                                                                              add_bos=False)])[0]
    z = logits[[judge.tokens.choice[c] for c in "12345"]].astype(np.float64)
    want = np.exp(z - z.max()) / np.exp(z - z.max()).sum()
    np.testing.assert_allclose(probs, [want, want], atol=1e-5)
    np.testing.assert_allclose(lm_judges.expected_scores(np.eye(5)), [1, 2, 3, 4, 5])
    with pytest.raises(ValueError, match="score items only"):
        judge.score_distribution([_items()[1]], setting="No Figure")
