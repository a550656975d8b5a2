"""The autoformalization harness: few-shot prompt an LLM to formalise a proposition of Book I in the
statement language, parse its answer, and score it against our formalisation with the equivalence
checker (categories of `equivalence.CATEGORIES` plus 'parse_error').

Any `jaxml.llm.base.LLM` works: `jaxml.llm.local.LocalLLM.smollm2()` or, for a large model,
`jaxml.llm.openai_http.OpenAICompatibleLLM(url, model)` (`make_llm('http://host:8000/v1', model=...)`).

`run(llm, constrained=True)` decodes a local model under the statement grammar (`statement_processor`:
a token is admitted only if the answer stays a viable prefix of a statement, `prefix.prefix_status`,
and the line ends only on a complete one), so every answer parses; an HTTP backend has no logits to
constrain and is run as before.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Sequence

from jaxml.llm.backends import make_llm  # noqa: F401  (re-exported: euclid.make_llm)
from jaxml.llm.constrained import PrefixProcessor
from jaxml.papers.euclid import book
from jaxml.papers.euclid import equivalence as eq
from jaxml.papers.euclid import metrics as M
from jaxml.papers.euclid import prefix
from jaxml.papers.euclid import syntax as S

# The few-shot examples (excluded from scoring), as in LeanEuclid's 5 Book I examples.
EXAMPLES = ("I.1", "I.5", "I.15", "I.31", "I.37")
SCORE_CATEGORIES = eq.CATEGORIES + ("parse_error",)

INSTRUCTIONS = """\
Formalize propositions of Euclid's Elements, Book I, in the language of system E, on one line.
Sorts: Point, Line, Circle. Relations: on_line(p, L), same_side(p, q, L), opposite_sides(p, q, L),
between(p, q, r) (q lies between p and r), on_circle(p, C), inside_circle(p, C), outside_circle(p, C),
centre(p, C), lines_meet(L, M), parallel(L, M), circles_meet(C, D), triangle(p, q, r).
Magnitudes: |p q| (length), angle(p, q, r) (the angle at q), area(p, q, r), right (a right angle);
compare them with = != < <= and add them with +. Connectives: and, or, not.
Form: forall (names : Sort), hypotheses => exists (names : Sort), conclusions
"""


def prompt_for(name: str, examples: Sequence[str] = EXAMPLES) -> str:
    """The few-shot prompt for proposition `name` (e.g. 'I.6'); the model continues after 'Formal:'."""
    sts = book.statements()
    if name not in sts:
        raise ValueError(f"unknown proposition {name!r}; Book I has I.1 ... I.48")
    parts = [INSTRUCTIONS]
    for ex in examples:
        parts.append(f"Proposition {ex}: {sts[ex].text}\nFormal: {S.format_statement(sts[ex], header=False)}\n")
    parts.append(f"Proposition {name}: {sts[name].text}\nFormal:")
    return "\n".join(parts)


@dataclasses.dataclass
class Scored:
    """One proposition: the model's answer, its category and why."""
    name: str
    output: str
    category: str
    detail: str = ""
    solver_seconds: float = 0.0


@dataclasses.dataclass
class HarnessReport:
    rows: list
    counts: dict              # category -> number of propositions
    generate_seconds: float
    solver_seconds: float
    forced_tokens: int = 0    # constrained decoding: tokens written by the completion, not the model's choice
    constraint_seconds: float = 0.0   # constrained decoding: host time choosing tokens (in generate_seconds)

    @property
    def equivalent_rate(self) -> float:
        return M.rate(self.counts.get("equivalent", 0), len(self.rows))


def score_output(name: str, output: str, *, timeout_s: float = 15.0) -> Scored:
    """Parses a model's answer for proposition `name` (its first line, a final full stop dropped) and
    classifies it against the ground truth."""
    text = output.strip().splitlines()[0].strip().rstrip(".").rstrip() if output.strip() else ""
    ground = book.statements()[name]
    try:
        test = S.parse_statement(text, name=name)
    except S.EuclidSyntaxError as e:
        return Scored(name, text, "parse_error", e.message + f" (column {e.column})")
    result = eq.check_equivalence(ground, test, timeout_s=timeout_s)
    return Scored(name, text, result.category, result.reason, result.solver_seconds)


def statement_processor(tokenizer, max_new_tokens: int) -> PrefixProcessor:
    """The logits processor that keeps a greedy generation of `max_new_tokens` tokens inside the statement
    language (see `jaxml.llm.constrained.PrefixChooser` and `prefix`)."""
    return PrefixProcessor.for_tokenizer(tokenizer, max_new_tokens, status=prefix.prefix_status,
                                         completion=prefix.completion, reserve=prefix.reserve,
                                         alphabet=prefix.ALPHABET)


def run(llm, names: Sequence[str] | None = None, *, max_new_tokens: int = 200, timeout_s: float = 15.0,
        examples: Sequence[str] = EXAMPLES, constrained: bool = False) -> HarnessReport:
    """Prompts `llm` (greedy) for each proposition in `names` (default: all but the examples) and
    scores the answers. `constrained`: decode under the statement grammar (a local model only)."""
    all_names = list(book.statements())
    names = [n for n in all_names if n not in examples] if names is None else list(names)
    for n in names:
        if n in examples:
            raise ValueError(f"{n} is a few-shot example; it cannot be scored")
        if n not in all_names:
            raise ValueError(f"unknown proposition {n!r}; Book I has I.1 ... I.48")
    extra, proc = {}, None
    if constrained:
        if not hasattr(llm, "tokenizer"):
            raise TypeError(f"constrained decoding needs a local model's tokenizer and logits; "
                            f"{type(llm).__name__} has none (an HTTP backend is run with constrained=False)")
        proc = extra["logits_processor"] = statement_processor(llm.tokenizer, max_new_tokens)
    t0 = time.perf_counter()
    outputs = llm.generate_text([prompt_for(n, examples) for n in names], max_new_tokens=max_new_tokens,
                                stop=["\n"], temperature=0.0, **extra) if names else []
    gen_s = time.perf_counter() - t0
    rows = [score_output(n, o, timeout_s=timeout_s) for n, o in zip(names, outputs)]
    counts = M.category_counts([r.category for r in rows], SCORE_CATEGORIES)
    return HarnessReport(rows, counts, gen_s, sum(r.solver_seconds for r in rows),
                         proc.chooser.forced if proc else 0, proc.chooser.seconds if proc else 0.0)


class ScriptedLLM:
    """A fake `LLM` for tests and tiny runs: answers each prompt with `answers[name]` for the
    proposition named on the prompt's last 'Proposition' line ('' when not scripted)."""

    def __init__(self, answers: dict[str, str]):
        self.answers = dict(answers)

    def generate_text(self, prompts, *, max_new_tokens: int, chat: bool = False, stop=(), seed: int = 0,
                      **sampling) -> list[str]:
        out = []
        for p in prompts:
            last = p.rsplit("Proposition ", 1)[-1]
            out.append(" " + self.answers.get(last.split(":", 1)[0], ""))
        return out

    def logprobs(self, prompts, continuations):
        raise TypeError("ScriptedLLM only generates text; it has no log-probabilities")
