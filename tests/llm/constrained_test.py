"""Grammar-constrained decoding: the edge-list automaton, its token table, and generations of a random
model that must stay inside the language."""

import itertools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxml.llm import generate as gen
from jaxml.llm.base import SamplingOptions
from jaxml.llm.constrained import CharDFA, GrammarProcessor, edge_list_dfa, token_table
from jaxml.models.llama import Llama, LlamaConfig


@pytest.mark.parametrize("text,ok", [
    ("", True), ("1 -> 3\n", True), ("1 -> 3\n2 -> 3\n17 -> 9\n", True), ("10 -> 11\n", True),
    ("1 -> 3", False), ("0 -> 1\n", False), ("18 -> 1\n", False), ("1->3\n", False), ("01 -> 3\n", False),
    ("1 -> 3\n\n", False), ("1 -> 3 \n", False), ("1  -> 3\n", False), ("a -> b\n", False),
])
def test_edge_list_language(text, ok):
    assert edge_list_dfa(17).accepts(text) is ok


@pytest.mark.parametrize("text,ok", [("1 -> 3\n", True), ("12 -> 3\n", True), ("", False), ("1 -> 3\n2 -> 3\n", False),
                                     ("1 -> 3", False)])
def test_one_edge_language(text, ok):
    assert edge_list_dfa(17, one_edge=True).accepts(text) is ok


def test_edge_list_dfa_ids_respect_max_id():
    for max_id in (1, 5, 9, 10, 17, 30, 99):
        dfa = edge_list_dfa(max_id)
        for i in range(0, 101):
            assert dfa.accepts(f"{i} -> 1\n") is (1 <= i <= max_id), (max_id, i)
    with pytest.raises(ValueError, match="max_id"):
        edge_list_dfa(100)


def test_char_dfa_validates_transitions():
    with pytest.raises(ValueError, match="bad transition"):
        CharDFA(({"a": 3},), frozenset({0}))
    with pytest.raises(ValueError, match="accepting"):
        CharDFA(({"a": 0},), frozenset({2}))


STRINGS = ["", "1", "2", "3", "12", " ", " ->", "->", "\n", "1 -> 2\n", " -> ", "x", "0", "3\n1", "\ufffd", "7 -"]


def test_token_table_matches_running_the_automaton_per_token():
    dfa = edge_list_dfa(13)
    table = token_table(dfa, STRINGS)
    assert table.shape == (dfa.num_states, len(STRINGS))
    for s, (t, text) in itertools.product(range(dfa.num_states), enumerate(STRINGS)):
        end = dfa.run(text, s) if text else None
        if text == "7 -":   # "7 -" needs a ">" next, and no token starts with one: a dead end, never allowed
            assert table[s, t] == -1
            continue
        assert table[s, t] == (-1 if end is None else end), (s, text)


class _StubTokenizer:
    """Ids 0 and 1 are specials (stop, pad); the rest are STRINGS' non-empty texts and filler words."""

    def __init__(self, vocab_size):
        texts = [s for s in STRINGS if s] + ["4", "5", "6", "8", "9", "10", "\n1", " -> 1", "1\n"]
        self.strings = ["", ""] + texts + [f"w{i}" for i in range(vocab_size - 2 - len(texts))]
        self.vocab_size = vocab_size
        self.stop_ids = (0,)

    def decode(self, ids):
        return "".join(self.strings[i] for i in ids)


def test_random_model_generations_stay_in_the_language():
    """A random tiny Llama sampled at temperature 1.5: every generation that stopped is a sentence of the
    grammar, every one that ran out of tokens is a prefix of one; without the processor almost none are."""
    config = LlamaConfig(vocab_size=64, hidden=32, layers=1, heads=2, kv_heads=1, mlp_hidden=64, max_len=64,
                         rope_theta=100.0)
    model = Llama(config)
    params = model.init(jax.random.PRNGKey(0), jnp.zeros((1, 4), jnp.int32), jnp.zeros((1, 4), jnp.int32))["params"]
    tok = _StubTokenizer(config.vocab_size)
    dfa = edge_list_dfa(13)
    max_new = 24
    proc = GrammarProcessor(dfa, tok, window=max_new)
    prompts = [[5 + (i % 7), 9, 2 + i % 3] for i in range(16)]
    options = SamplingOptions(temperature=1.5)
    out = gen.generate(model, params, prompts, max_new_tokens=max_new, sampling=options, stop_ids=(0,), pad_id=1,
                       key=jax.random.PRNGKey(3), logits_processor=proc)
    stopped = 0
    for row, length, done in zip(out.tokens, out.lengths, out.stopped):
        text = tok.decode(row[:length])
        assert dfa.run(text) is not None, repr(text)
        if done:
            stopped += 1
            assert dfa.accepts(text), repr(text)
    assert stopped >= 4
    free = gen.generate(model, params, prompts, max_new_tokens=max_new, sampling=options, stop_ids=(0,), pad_id=1,
                        key=jax.random.PRNGKey(3))
    inside = sum(dfa.run(tok.decode(r[:n])) is not None for r, n in zip(free.tokens, free.lengths))
    assert inside <= 4


def test_processor_state_tracks_the_generated_suffix_only():
    tok = _StubTokenizer(40)
    dfa = edge_list_dfa(13)
    proc = GrammarProcessor(dfa, tok, window=6)
    ids = {s: tok.strings.index(s) for s in ("1", " ->", " ", "3", "\n", "x")}
    # prompt tokens "x x" (outside the language) then generated "1 -> 3\n" as 1, ' ->', ' ', 3, '\n'
    gen_ids = [ids["1"], ids[" ->"], ids[" "], ids["3"], ids["\n"]]
    context = jnp.asarray([[ids["x"], ids["x"], ids["x"]] + gen_ids])
    for step in range(len(gen_ids) + 1):
        want = dfa.run(tok.decode(gen_ids[:step]))
        assert int(proc.state(context[:, :context.shape[1] - len(gen_ids) + step], jnp.int32(step))[0]) == want
    logits = proc(jnp.zeros((1, 40)), context, jnp.int32(5), jax.random.PRNGKey(0))
    allowed = np.flatnonzero(np.isfinite(np.asarray(logits[0])))
    line_start = dfa.run("1 -> 3\n")     # accepting: the stop token (0) is allowed; "7 -" is a dead end
    want = {t for t in range(40) if t == 0 or (tok.strings[t] not in ("", "7 -")
                                               and dfa.run(tok.strings[t], line_start) is not None)}
    assert set(allowed.tolist()) == want
