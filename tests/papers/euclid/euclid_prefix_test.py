"""Prefixes of the statement language against the full parser, and constrained decoding with scripted and
random models whose own choices do not parse."""

import random

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxml.llm import generate as gen
from jaxml.llm.constrained import PrefixChooser, PrefixProcessor
from jaxml.models.llama import Llama, LlamaConfig
from jaxml.papers.euclid import autoformalize, book
from jaxml.papers.euclid import prefix as P
from jaxml.papers.euclid import syntax as S


def _parses(text: str) -> bool:
    try:
        S.parse_statement(text)
        return True
    except S.EuclidSyntaxError:
        return False


def _book_texts():
    return {n: S.format_statement(st, header=False) for n, st in book.statements().items()}


def _check_prefixes(text: str, step: int = 1) -> None:
    """Every prefix of the statement `text` is viable, 'complete' exactly when the full parser accepts it,
    and its completion makes a statement the full parser accepts, within `reserve` characters."""
    for k in list(range(0, len(text), step)) + [len(text)]:
        p = text[:k]
        status = P.prefix_status(p)
        assert status != "dead", p
        assert (status == "complete") == _parses(p), p
        c = P.completion(p)
        assert _parses(p + c), (p, c)
        assert len(c) <= P.reserve(p), (p, c)


@pytest.mark.parametrize("name", ["I.2", "I.26"])     # a short one; one with a disjunction and `angle`
def test_prefixes_of_book_statements_are_viable_and_complete_as_the_parser_says(name):
    _check_prefixes(_book_texts()[name], step=1 if name == "I.2" else 6)


@pytest.mark.slow
def test_every_prefix_of_every_book_statement():
    for text in _book_texts().values():
        _check_prefixes(text)


def _mutations(names):
    """(statement text, mutated text, end of the mutation): errors put into Book I statements."""
    texts = _book_texts()
    out = []
    for name in names:
        t = texts[name]
        i = t.index("=>") + 3                                    # the first conclusion or `exists`
        for bad in ("zz ", "^ ", "on_line(a) ", "triangle(a, b, c, d) ", "foo(a) ", "Point = ", ") ",
                    "a + ", "2 * a ", "a < "):
            out.append((name, t[:i] + bad + t[i:], i + len(bad)))
        j = t.index("(") + 1                                     # a binder named twice
        first = t[j:].split()[0]
        out.append((name, t[:j] + first + " " + t[j:], j + 2 * len(first) + 2))
    if "I.2" in names:     # an object compared with a magnitude, a Line where a Point goes
        t = "forall (a b : Point) (L : Line), |a b| = a and on_line(a, L)"
        out.append(("-", t, t.index(" and") + 1))
        t = "forall (a b : Point) (L : Line), on_line(L, a)"
        out.append(("-", t, t.index(",", 35)))
    return out


@pytest.mark.parametrize("name,text,end", _mutations(["I.2"]) + [
    pytest.param(*m, marks=pytest.mark.slow) for m in _mutations(["I.6", "I.31", "I.35"])])
def test_errors_before_the_end_are_dead(name, text, end):
    # The full parser rejects the mutated text with every tail of it after the mutation (the statement's own
    # continuations); the prefix checker calls every prefix past the mutation dead.
    assert not any(_parses(text[:end] + text[j:]) for j in range(end, len(text) + 1))
    for k in range(end, len(text) + 1):
        assert P.prefix_status(text[:k]) == "dead", text[:k]


def test_token_soup_viability_agrees_with_the_parser():
    """Random strings of the language's lexemes: 'complete' exactly when the parser accepts; 'viable' ones
    complete to statements the parser accepts; a 'dead' string has no completion among its statement's
    (any lexeme appended keeps it dead)."""
    rng = random.Random(0)
    lexemes = ["a", "b", "c", "L", "C", "(", ")", "|", ",", ":", "=", "!=", "<", "+", "*", "2", "0.5", "and",
               "or", "not", "=>", "exists", "forall", "Point", "Line", "on_line", "between", "angle", "area",
               "right", "triangle", "centre", "d"]
    texts = [t for n, t in _book_texts().items() if len(t) < 150]
    counts = {"complete": 0, "viable": 0, "dead": 0}
    for _ in range(120):       # a short Book I statement, a lexeme or two spliced in, cut at a random place
        words = rng.choice(texts).replace("(", "( ").replace(")", " )").replace(",", " ,").split()
        for _ in range(rng.choice((0, 0, 1, 2))):
            words.insert(rng.randrange(len(words) + 1), rng.choice(lexemes))
        text = " ".join(words[:rng.randint(1, len(words))] if rng.random() < 0.6 else words)
        status = P.prefix_status(text)
        counts[status] += 1
        assert (status == "complete") == _parses(text), text
        if status == "viable":
            assert _parses(text + P.completion(text)), text
        if status == "dead":
            assert all(P.prefix_status(text + " " + x) == "dead" for x in lexemes), text
    assert min(counts.values()) >= 10, counts


def test_unfinished_words_and_bad_input():
    assert P.prefix_status("forall (a b : Point), on_li") == "dead"           # no Line to put on it
    assert P.prefix_status("forall (a : Point) (L : Line), on_li") == "viable"
    assert P.prefix_status("forall (a b : Point), a !") == "viable"             # a != ...
    assert P.prefix_status("forall (a b : Point), a = b =") == "viable"         # ... =>
    assert P.prefix_status("forall (a b : Point), |a b| = 1.") == "viable"
    assert P.prefix_status("forall (a b : Point), a = b\n") == "dead"
    assert P.prefix_status("forall (a b : Point), a = b # note") == "dead"
    with pytest.raises(ValueError, match="not a prefix"):
        P.completion("forall (a : Point), zz = a")
    with pytest.raises(TypeError):
        P.prefix_status(3)


# --- Constrained decoding -------------------------------------------------------------------------

_JUNK = ("\n", " ^", " ?", " triangle(a, b, c, d)", " {", "$")
_VOCAB = ["<stop>", "<pad>", ".\n", *_JUNK, "^2", " =>", " forall", " (", " b", " c", " d", " :", " Point", " triangle",
          "(a", " a", ", b", ", c", " |", " =", " !=", " and", " 1", " exists", " x", " <", " angle", " )", " ,",
          *"abcdefghijklmnopqrstuvwxyzP0123456789_()|,:=<>+*! "]


def _scripted_chooser():
    return PrefixChooser(P.prefix_status, P.completion, P.reserve, ["", ""] + _VOCAB[2:], (0,), alphabet=P.ALPHABET)


def _scripted_decode(chooser, max_new: int, constrained: bool = True, eager_to_stop: bool = True):
    """A scripted model: it most prefers the ungrammatical tokens ('^', '?', a 4-argument triangle, '{', '$'),
    and a newline before them if `eager_to_stop` (after them otherwise); then what it means to write,
    'forall (a b c d : Point), triangle(a, b, c) and |a b| = |a c| and ...', then the rest in a fixed
    shuffled order."""
    meant = [" forall", " (", "a", " b", " c", " d", " :", " Point", ")", ",", " triangle", "(a", ", b", ", c",
             ")"] + [" and", " |", "a", " b", "|", " =", " |", "a", " c", "|"] * 8
    rank = np.random.default_rng(0).permutation(len(_VOCAB)).astype(np.float32)
    out = []
    for step in range(max_new):
        logits = rank.copy()
        if step < len(meant):
            logits[_VOCAB.index(meant[step])] = 100.0
        for j, junk in enumerate(_JUNK):
            logits[_VOCAB.index(junk)] = 200.0 - j
        logits[_VOCAB.index("\n")] = 300.0 if eager_to_stop else 50.0
        t = chooser.choose(out, logits, max_new - step) if constrained else int(np.argmax(logits))
        if t == 0:
            break
        out.append(t)
        if "\n" in _VOCAB[t]:
            break
    return "".join(_VOCAB[t] for t in out).split("\n")[0]


def test_scripted_model_with_ungrammatical_preferences_yields_a_statement():
    assert not _parses(_scripted_decode(None, 60, constrained=False))     # unconstrained: '\n' at once
    chooser = _scripted_chooser()
    assert _scripted_decode(chooser, 60) == " forall (a b c d : Point), triangle(a, b, c)"   # stops when it can
    assert chooser.forced == 0
    assert not _parses(_scripted_decode(None, 60, constrained=False, eager_to_stop=False))   # '^' at once
    text = _scripted_decode(chooser, 60, eager_to_stop=False)
    assert _parses(text), text
    assert text.startswith(" forall (a b c d : Point), triangle(a, b, c) and |a b| = |a c| and |a b| ="), text


@pytest.mark.parametrize("max_new", [4, 9, 12, 30, 47, 61])
def test_running_out_of_tokens_writes_the_completion(max_new):
    """A model that never stops, with budgets that end inside the binders, inside a predicate, inside
    |a b| ...: the chooser writes the completion in time, so the text parses."""
    chooser = _scripted_chooser()
    text = _scripted_decode(chooser, max_new, eager_to_stop=False)
    assert _parses(text), (max_new, text)
    assert chooser.forced > 0


class _StubTokenizer:
    """Id 0 stops, 1 pads; the rest are the scripted vocabulary's strings."""

    def __init__(self):
        self.strings = ["", ""] + _VOCAB[2:]
        self.vocab_size = len(self.strings)
        self.stop_ids = (0,)

    def decode(self, ids):
        return "".join(self.strings[i] for i in ids)


def test_processor_keeps_only_the_chosen_token_under_jit():
    """The processor as `generate` calls it (jitted, the chooser on the host through a callback): per row,
    every logit but the chosen token's is -inf; rows that stopped are left alone."""
    tok = _StubTokenizer()
    proc = PrefixProcessor.for_tokenizer(tok, 64, status=P.prefix_status, completion=P.completion,
                                         reserve=P.reserve, alphabet=P.ALPHABET)
    ids = {s: i for i, s in enumerate(tok.strings) if s}
    logits = np.zeros((3, tok.vocab_size), np.float32)
    logits[:, ids[" ^"]] = 9.0                      # preferred everywhere, never admissible
    logits[:, ids[" :"]] = 8.0
    logits[:, ids[" b"]] = 7.0
    logits[:, 0] = 6.0
    logits[1, ids[" b"]] = 8.5
    pad = ids[" ?"]
    context = np.array([[pad, pad, ids[" forall"], ids[" ("], ids["a"]],
                        [pad, pad, ids[" forall"], ids[" ("], ids["a"]],
                        [pad, pad, ids[" forall"], 0, pad]], np.int32)             # stopped: unchanged
    out = np.asarray(jax.jit(proc)(jnp.asarray(logits), jnp.asarray(context), jnp.int32(3), jax.random.PRNGKey(0)))
    assert np.flatnonzero(np.isfinite(out[0])).tolist() == [ids[" :"]]      # ' forall (a :' (' ^' is dead)
    assert np.flatnonzero(np.isfinite(out[1])).tolist() == [ids[" b"]]      # ' forall (a b': its own best
    assert np.array_equal(out[2], logits[2])


@pytest.mark.slow
def test_random_model_through_generate_always_parses():
    """A random tiny Llama decoded greedily through `generate` with the processor: every row is a
    statement; without the processor none is."""
    tok = _StubTokenizer()
    config = LlamaConfig(vocab_size=tok.vocab_size, hidden=16, layers=1, heads=2, kv_heads=1, mlp_hidden=32,
                         max_len=64, rope_theta=100.0)
    model = Llama(config)
    params = model.init(jax.random.PRNGKey(0), jnp.zeros((1, 4), jnp.int32), jnp.zeros((1, 4), jnp.int32))["params"]
    max_new = 40
    proc = PrefixProcessor.for_tokenizer(tok, max_new, status=P.prefix_status, completion=P.completion,
                                         reserve=P.reserve, alphabet=P.ALPHABET)
    prompts = [[2 + i, 5 + 2 * i, 9] for i in range(4)]
    out = gen.generate(model, params, prompts, max_new_tokens=max_new, stop_ids=(0,), pad_id=1, logits_processor=proc)
    texts = [tok.decode(r[:n]).split("\n")[0] for r, n in zip(out.tokens, out.lengths)]
    assert all(_parses(t) for t in texts), texts
    free = gen.generate(model, params, prompts, max_new_tokens=max_new, stop_ids=(0,), pad_id=1)
    assert not any(_parses(tok.decode(r[:n]).split("\n")[0]) for r, n in zip(free.tokens, free.lengths))


def test_constrained_harness_needs_a_local_model():
    with pytest.raises(TypeError, match="local model"):
        autoformalize.run(autoformalize.ScriptedLLM({}), ["I.2"], constrained=True)
