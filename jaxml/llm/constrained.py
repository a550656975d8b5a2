"""Grammar-constrained decoding: a character automaton lifted to the tokenizer's vocabulary and applied
as a logits processor inside the jitted decoding loop, so the model can only write strings the grammar
accepts. For grammars no automaton holds (bound names, sorts: `jaxml.papers.euclid.prefix`),
`PrefixChooser`/`PrefixProcessor` (at the end) ask a prefix oracle on the host, through a callback.

    dfa = edge_list_dfa(max_id=17)                       # "1 -> 3\n2 -> 3\n", then stop
    proc = GrammarProcessor(dfa, llm.tokenizer, window=64)
    texts = llm.generate_text(prompts, max_new_tokens=64, logits_processor=proc)

`token_table(dfa, strings)` runs the automaton over every token's text from every state once
([states, vocab] next states, -1 where the token would leave the language); the processor finds the
state reached by the tokens generated so far (a scan over the last `window` context tokens) and sets
the logits of every token that would leave the language to -inf. Stop tokens are allowed only in
accepting states, so a finished generation is a complete sentence of the grammar (unless it ran out
of `max_new_tokens`). Tokens whose text is empty or not valid UTF-8 on its own are never allowed.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Sequence

import jax
import jax.numpy as jnp
import numpy as np


@dataclasses.dataclass(frozen=True, eq=False)
class CharDFA:
    """A deterministic automaton over characters; state 0 is the start.

    Attributes:
      transitions: transitions[state] maps a character to the next state (missing: rejected).
      accepting: states in which the text so far is a complete sentence.
    """

    transitions: tuple[dict[str, int], ...]
    accepting: frozenset[int]

    def __post_init__(self):
        n = len(self.transitions)
        for s, row in enumerate(self.transitions):
            for ch, t in row.items():
                if len(ch) != 1 or not 0 <= t < n:
                    raise ValueError(f"CharDFA: state {s} has a bad transition {ch!r} -> {t} ({n} states)")
        if not set(self.accepting) <= set(range(n)):
            raise ValueError(f"CharDFA: accepting states {sorted(self.accepting)} outside 0..{n - 1}")

    @property
    def num_states(self) -> int:
        return len(self.transitions)

    def run(self, text: str, state: int = 0) -> int | None:
        """The state after reading `text` from `state`, or None if the text leaves the language."""
        for ch in text:
            state = self.transitions[state].get(ch)
            if state is None:
                return None
        return state

    def accepts(self, text: str) -> bool:
        end = self.run(text)
        return end is not None and end in self.accepting


def edge_list_dfa(max_id: int, one_edge: bool = False) -> CharDFA:
    """Lines "a -> b" (step ids 1..max_id without leading zeros, one space on each side of the arrow),
    each ended by a newline; zero lines is a sentence too (a plan without constraints). With `one_edge`,
    exactly one such line."""
    if not 1 <= max_id <= 99:
        raise ValueError(f"max_id={max_id}; accepted 1..99 (one- or two-digit ids)")
    rows: list[dict[str, int]] = []

    def new() -> int:
        rows.append({})
        return len(rows) - 1

    def id_states(after: str, then: int, start: int) -> None:
        """From `start`, an id in 1..max_id followed by the text `after`, ending in state `then`."""
        tail = new()                                   # after a complete id
        state = tail
        for ch in after[:-1]:
            nxt = new()
            rows[state][ch] = nxt
            state = nxt
        rows[state][after[-1]] = then
        for d in range(1, 10):
            if d > max_id:
                break
            one = new()
            rows[start][str(d)] = one
            rows[one].update(rows[tail])              # the id may end after one digit
            for e in range(10):
                if 10 * d + e <= max_id:
                    rows[one][str(e)] = tail

    line_start = new()
    between = new()                                     # after "a -> "
    done = new() if one_edge else line_start            # after a line's newline
    id_states(" -> ", between, line_start)
    id_states("\n", done, between)
    return CharDFA(tuple(rows), frozenset({done}))


def token_strings(tokenizer) -> list[str]:
    """The text of every token id on its own ('' for special tokens; tokens that are not valid UTF-8 on
    their own decode with U+FFFD and are thereby never allowed by an ASCII grammar)."""
    return [tokenizer.decode([i]) for i in range(tokenizer.vocab_size)]


def token_table(dfa: CharDFA, strings: Sequence[str]) -> np.ndarray:
    """int32 [num_states, vocab]: the state after token t from state s, -1 if t leaves the language, if its
    text is empty, or if it leads to a state from which no sequence of these tokens reaches an accepting
    state (a dead end: the vocabulary cannot finish the sentence there)."""
    table = np.full((dfa.num_states, len(strings)), -1, np.int32)
    for s in range(dfa.num_states):
        firsts = set(dfa.transitions[s])
        for t, text in enumerate(strings):
            if text and text[0] in firsts:
                end = dfa.run(text, s)
                if end is not None:
                    table[s, t] = end
    live = np.zeros(dfa.num_states, bool)
    live[list(dfa.accepting)] = True
    while True:   # states that reach an accepting state by tokens
        grown = live | np.array([bool(live[row[row >= 0]].any()) for row in table])
        if (grown == live).all():
            break
        live = grown
    table[(table >= 0) & ~live[np.maximum(table, 0)]] = -1
    return table


class GrammarProcessor:
    """A logits processor (`jaxml.llm.generate`'s `(logits, context, step, key) -> logits`) that keeps
    generations inside `dfa`'s language.

    Args:
      dfa: the character automaton.
      tokenizer: the model's tokenizer (`vocab_size`, `decode`, `stop_ids`).
      window: the generation's `max_new_tokens` (the processor reads the last `window` context tokens).
      vocab_size: the logits' width if larger than the tokenizer's vocabulary (padded rows never allowed).
    One instance is one compiled decoding program: reuse it across calls.
    """

    def __init__(self, dfa: CharDFA, tokenizer, window: int, vocab_size: int | None = None):
        if window < 1:
            raise ValueError(f"window={window} must be >= 1 (the generation's max_new_tokens)")
        strings = token_strings(tokenizer)
        width = vocab_size or len(strings)
        if width < len(strings):
            raise ValueError(f"vocab_size={width} is smaller than the tokenizer's {len(strings)} tokens")
        table = np.full((dfa.num_states, width), -1, np.int32)
        table[:, :len(strings)] = token_table(dfa, strings)
        self.dfa, self.window = dfa, int(window)
        self.table = jnp.asarray(table)
        self.accepting = jnp.asarray([s in dfa.accepting for s in range(dfa.num_states)])
        self.stop_ids = jnp.asarray(sorted(set(tokenizer.stop_ids)), jnp.int32)

    def state(self, context: jax.Array, step: jax.Array) -> jax.Array:
        """int32 [batch]: the automaton's state after the `step` generated tokens at the end of `context`
        ([batch, length]); a token outside the language keeps the state it left (the mask prevents it)."""
        tokens = context[:, -self.window:]
        generated = jnp.arange(tokens.shape[1]) >= tokens.shape[1] - step

        def advance(state, xs):
            tok, is_generated = xs
            nxt = self.table[state, jnp.clip(tok, 0, self.table.shape[1] - 1)]
            return jnp.where(is_generated & (nxt >= 0), nxt, state), None

        state0 = jnp.zeros(tokens.shape[0], jnp.int32)
        return jax.lax.scan(advance, state0, (tokens.T, generated))[0]

    def __call__(self, logits: jax.Array, context: jax.Array, step: jax.Array, key: jax.Array) -> jax.Array:
        state = self.state(context, step)
        allowed = self.table[state] >= 0                                   # [batch, vocab]
        can_stop = self.accepting[state] | ~allowed.any(-1)                # a dead end may only stop
        allowed = allowed.at[:, self.stop_ids].set(can_stop[:, None])
        return jnp.where(allowed, logits, -jnp.inf)


# --- Prefix-oracle constraints (grammars a finite automaton cannot hold) -----------------------------

class PrefixChooser:
    """The next token of a greedy decoding constrained by a prefix oracle, on the host.

    `status(text)` says whether `text` is 'complete' (a sentence), 'viable' (the beginning of one) or
    'dead'; `completion(text)` gives a string that makes a viable text complete. A sentence is one line:
    a token containing `end` ('\\n') is admitted only if the text before it is complete, a stop token
    only if the text is complete, and after `end` only a stop token. The chooser checks the tokens in
    the model's order (most likely first) and takes the first admissible one: the argmax of the logits
    over the admissible tokens, so greedy decoding stays greedy. After `scan` inadmissible candidates it
    writes the first token of the completion instead.

    Termination: with `remaining` tokens left (this one included), once `remaining <= reserve(text)` the
    chooser computes the length in tokens (greedy longest match over the vocabulary) of the completion
    after the best admissible token and takes that token only if the completion still fits; otherwise it
    writes the completion of the text (kept once computed, so later steps follow it). The text is then complete when `max_new_tokens` run
    out, provided `reserve(text)` bounds the completion's length when it first applies.

    Args:
      status, completion, reserve: the oracle (see above); `reserve(text)` an int.
      strings: the text of every token id ('' for special tokens).
      stop_ids: the tokens that end a generation.
      alphabet: characters a sentence may contain (tokens with others, or with U+FFFD, are never admitted);
        None: any.
      scan: candidates checked before falling back to the completion.
    """

    def __init__(self, status, completion, reserve, strings, stop_ids, *, alphabet=None, scan: int = 2000,
                 end: str = "\n"):
        if not stop_ids:
            raise ValueError("PrefixChooser needs at least one stop token id")
        self.status, self.completion, self.reserve = status, completion, reserve
        self.strings = list(strings)
        self.stop_ids = tuple(int(s) for s in stop_ids)
        self.scan, self.end = int(scan), end
        allowed = None if alphabet is None else set(alphabet) | set(end)
        self.plausible = np.array([bool(s) and "\ufffd" not in s and (allowed is None or set(s) <= allowed)
                                   for s in self.strings])
        self.plausible[[i for i in self.stop_ids if i < len(self.strings)]] = True
        self.by_text: dict[str, int] = {}
        for i, s in enumerate(self.strings):
            if self.plausible[i] and s and end not in s and len(s) <= 32:
                self.by_text.setdefault(s, i)
        self.longest = max(map(len, self.by_text), default=1)
        self.plans: dict[str, str] = {}
        self.forced = 0           # tokens written from a completion (statistics)
        self.seconds = 0.0        # host time spent choosing

    def reset(self) -> None:
        self.plans.clear()

    def _plan(self, text: str) -> str:
        if text not in self.plans:
            c = self.completion(text)
            for j in range(len(c) + 1):
                self.plans.setdefault(text + c[:j], c[j:])
        return self.plans[text]

    def _pieces(self, s: str) -> list[int]:
        """Token ids that spell `s` (greedy longest match)."""
        out, i = [], 0
        while i < len(s):
            for n in range(min(self.longest, len(s) - i), 0, -1):
                t = self.by_text.get(s[i:i + n])
                if t is not None:
                    out.append(t)
                    i += n
                    break
            else:
                raise ValueError(f"no token spells {s[i]!r}")
        return out

    def _cost(self, text: str) -> float:
        """Tokens the completion of `text` takes (inf if the vocabulary cannot spell it)."""
        try:
            return len(self._pieces(self._plan(text)))
        except ValueError:
            return float("inf")

    def text_of(self, generated) -> str:
        return "".join(self.strings[t] if 0 <= t < len(self.strings) else "" for t in generated)

    def choose(self, generated, logits: np.ndarray, remaining: int) -> int:
        """The next token after the ids `generated`, from the model's `logits` [vocab]; -1 once a stop
        token was written (the row is done: nothing to constrain)."""
        t0 = time.perf_counter()
        try:
            return self._choose(generated, logits, remaining)
        finally:
            self.seconds += time.perf_counter() - t0

    def _choose(self, generated, logits: np.ndarray, remaining: int) -> int:
        if any(t in self.stop_ids for t in generated):
            return -1
        text = self.text_of(generated)
        if self.end in text:
            return self.stop_ids[0]
        tight = remaining <= self.reserve(text)
        logits = np.asarray(logits, np.float32)
        width = min(len(logits), len(self.strings))
        top = min(64, width)
        head = np.argpartition(-logits[:width], top - 1)[:top]
        order = head[np.argsort(-logits[head], kind="stable")]
        checked = 0
        for t in _in_order(order, lambda: np.argsort(-logits[:width], kind="stable")):
            if not self.plausible[t] or logits[t] == -np.inf:
                continue
            checked += 1
            if checked > self.scan:
                break
            if t in self.stop_ids:
                if self.status(text) == "complete":
                    return t
                continue
            s = self.strings[t]
            if self.end in s:
                if self.status(text + s.split(self.end, 1)[0]) == "complete":
                    return t
                continue
            if self.status(text + s) == "dead":
                continue
            if tight and self._cost(text + s) > remaining - 1:
                break             # the best admissible token leaves too little room: write the completion
            return t
        self.forced += 1
        plan = self._plan(text)
        return self._pieces(plan)[0] if plan else self.stop_ids[0]


def _in_order(first, everything):
    """The ids of `first`, then those of `everything()` (called only if needed) not in `first`."""
    seen = set(int(t) for t in first)
    yield from (int(t) for t in first)
    for t in everything():
        if int(t) not in seen:
            yield int(t)


class PrefixProcessor:
    """A logits processor (`jaxml.llm.generate`) around a `PrefixChooser`: each decoding step hands the
    logits and the tokens generated so far to the host (`jax.pure_callback`), the chooser picks the
    token, and every other logit becomes -inf. Greedy: the chosen token is the most likely admissible
    one (with sampling, too).

    Args:
      chooser: the PrefixChooser.
      window: the generation's `max_new_tokens` (the steps left are `window - step`).
    One instance is one compiled decoding program: reuse it across calls with the same `max_new_tokens`.
    """

    def __init__(self, chooser: PrefixChooser, window: int):
        if window < 1:
            raise ValueError(f"window={window} must be >= 1 (the generation's max_new_tokens)")
        self.chooser, self.window = chooser, int(window)

    @classmethod
    def for_tokenizer(cls, tokenizer, window: int, *, status, completion, reserve, alphabet=None,
                      scan: int = 2000) -> "PrefixProcessor":
        return cls(PrefixChooser(status, completion, reserve, token_strings(tokenizer), tokenizer.stop_ids,
                                 alphabet=alphabet, scan=scan), window)

    def choose(self, logits, context, step) -> np.ndarray:
        """int32 [batch]: the chosen token per row (-1: unconstrained), on the host."""
        logits, context, step = np.asarray(logits), np.asarray(context), int(step)
        if step == 0:
            self.chooser.reset()
        out = np.full(logits.shape[0], -1, np.int32)
        for b in range(logits.shape[0]):
            generated = context[b, context.shape[1] - step:].tolist() if step else []
            out[b] = self.chooser.choose(generated, logits[b], self.window - step)
        return out

    def __call__(self, logits: jax.Array, context: jax.Array, step: jax.Array, key: jax.Array) -> jax.Array:
        chosen = jax.pure_callback(self.choose, jax.ShapeDtypeStruct((logits.shape[0],), jnp.int32),
                                   logits, context, step)
        keep = (jnp.arange(logits.shape[-1])[None, :] == chosen[:, None]) | (chosen[:, None] < 0)
        return jnp.where(keep, logits, -jnp.inf)
