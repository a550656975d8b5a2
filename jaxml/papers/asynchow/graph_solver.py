"""The LLM builds the graph, the solver does the arithmetic: BaG ("build a graph") with the model's
output held to a grammar the parser accepts.

    result = extract_and_solve(llm, [build_prompt(p) for p in plans], cache, mode="per_constraint")
    result[i].answer                 # Interval (the critical path of the extracted DAG) or None

Two ways to ask (`MODES`):
- 'per_constraint' (the default): each ordering-constraint sentence of the question (the benchmark prints
  one per line) becomes one short completion prompt, "Sentence: After step 2, step 5 should commence.\\nEdge:",
  after one illustration per constraint phrasing (the release's ten), and the model writes exactly one
  edge "a -> b" (grammar `edge_list_dfa(17, one_edge=True)`). The model reads the natural language (which
  step comes first depends on the phrasing); our code only splits the list into lines.
- 'whole': the whole question with an instruction to list every constraint as "a -> b" lines (grammar
  `edge_list_dfa(17)`), after k-shot illustrations of generated plans with their edges.
With a local model decoding is constrained to the grammar, so every finished output parses; a server
backend gets the same prompts unconstrained and every "a -> b" in its text is taken. The durations come
from the question's own step lines ("Step 3. ... (40 minutes)"), and the answer is the critical path of
the extracted DAG: correct iff either end lies in the gold interval (the rule for a parsed text answer).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

from jaxml.llm.cache import GenerationCache
from jaxml.llm.constrained import GrammarProcessor, edge_list_dfa
from jaxml.papers.asynchow.generator import MAX_STEPS
from jaxml.papers.asynchow.parsing import within_gold
from jaxml.papers.asynchow.plan import Interval, Plan, PlanError, critical_path
from jaxml.papers.asynchow.prompts import HEADER, ORDERING_TEMPLATES

MODES = ("per_constraint", "whole")
EDGE_QUESTION = ("Question: Write every ordering constraint above as an edge \"a -> b\" (step a must be done "
                 "before step b starts), one edge per line, and nothing else. If there are no ordering "
                 "constraints, write nothing.\nEdges:\n")
CONSTRAINT_INSTRUCTION = ("Each sentence orders two steps of a plan. Write the step that must be done first, "
                          "an arrow, and the step that comes after it.\n\n")
_STEP_LINE = re.compile(r"^\s*Step (\d+)\. (.*) \(([^()]*)\)\s*$", re.MULTILINE)
_EDGE = re.compile(r"(?:step\s*)?(\d+)\s*-+>\s*(?:step\s*)?(\d+)", re.IGNORECASE)


class Extraction(NamedTuple):
    """What the model's output gave: the edges kept, the problems found, and the solver's answer."""

    edges: tuple[tuple[int, int], ...]
    problems: tuple[str, ...]
    answer: Interval | None


def _question(prompt: str) -> str:
    """The question being asked: after the last "###" of a k-shot prompt."""
    return prompt.rsplit("###\n", 1)[-1]


def steps_from_prompt(prompt: str) -> list[tuple[str, str]]:
    """(step text, duration text) of every "Step i. text (duration)" line of the question, in order;
    ValueError if the ids are not 1..n."""
    found = _STEP_LINE.findall(_question(prompt))
    ids = [int(i) for i, _, _ in found]
    if not found or ids != list(range(1, len(ids) + 1)):
        raise ValueError(f"the prompt's step lines are numbered {ids}, expected 1..n")
    return [(text, duration) for _, text, duration in found]


def constraint_sentences(prompt: str) -> list[str]:
    """The ordering-constraint lines of the question (none for "All steps can be executed in parallel.")."""
    question = _question(prompt)
    if HEADER not in question:
        return []
    body = question.split(HEADER, 1)[1].lstrip("\n")
    return [line.strip() for line in body.split("\n\n", 1)[0].split("\n") if line.strip()]


def edges_text(edges: Sequence[tuple[int, int]]) -> str:
    return "".join(f"{a} -> {b}\n" for a, b in edges)


def whole_prompt(question: str, shots: Sequence[tuple[str, Sequence[tuple[int, int]]]] = ()) -> str:
    """'whole' mode: the question's body (up to "Question:") with the edge-list question, after k-shot
    illustrations `(shot question, its edges)`."""
    def body(q):
        q = _question(q)
        return q[:q.index("Question:")] if "Question:" in q else q
    blocks = [body(q) + EDGE_QUESTION + edges_text(e) for q, e in shots]
    prefix = ("###Examples:\n" + "\n\n".join(blocks) + "\n###\n") if blocks else ""
    return prefix + body(question) + EDGE_QUESTION


def constraint_shots(seed: int = 0) -> list[tuple[str, tuple[int, int]]]:
    """One illustration per constraint phrasing (the release's ten), with step ids drawn from `seed`."""
    rng = np.random.default_rng(seed)
    shots = []
    for template in ORDERING_TEMPLATES:
        a, b = (int(x) for x in rng.choice(np.arange(1, 10), 2, replace=False))
        text = template.replace("[preceding step]", f"step {a}").replace("[following step]", f"step {b}")
        shots.append((text[0].upper() + text[1:], (a, b)))
    return shots


def constraint_prompt(sentence: str, shots: Sequence[tuple[str, tuple[int, int]]]) -> str:
    """'per_constraint' mode: a completion prompt ending in "Edge: " for one constraint sentence."""
    lines = "".join(f"Sentence: {s}\nEdge: {a} -> {b}\n\n" for s, (a, b) in shots)
    return CONSTRAINT_INSTRUCTION + lines + f"Sentence: {sentence}\nEdge: "


def parse_edges(text: str, n_steps: int) -> tuple[list[tuple[int, int]], list[str]]:
    """Every "a -> b" of `text` ("step a -> step b" too) with 1 <= a, b <= n_steps, a != b, first
    occurrence; the rest reported as problems."""
    edges, problems = [], []
    for a, b in ((int(a), int(b)) for a, b in _EDGE.findall(text)):
        if not (1 <= a <= n_steps and 1 <= b <= n_steps):
            problems.append(f"edge {a} -> {b} names a step outside 1..{n_steps}")
        elif a == b:
            problems.append(f"edge {a} -> {b} is a self-loop")
        elif (a, b) in edges:
            problems.append(f"edge {a} -> {b} repeated")
        else:
            edges.append((a, b))
    return edges, problems


def solve_edges(prompt: str, output: str) -> Extraction:
    """The critical path of the DAG in `output` over the steps and durations of `prompt`'s question;
    `answer` is None when the edges have a cycle."""
    steps = steps_from_prompt(prompt)
    edges, problems = parse_edges(output, len(steps))
    try:
        plan = Plan("extracted", tuple(s for s, _ in steps), tuple(d for _, d in steps), tuple(edges))
    except PlanError as e:
        return Extraction(tuple(edges), tuple(problems) + (str(e),), None)
    return Extraction(tuple(edges), tuple(problems), critical_path(plan))


def answer_is_correct(answer: Interval | None, gold: Interval) -> bool:
    """The benchmark's rule for a numeric answer: either end within [gold.lo, gold.hi]."""
    return answer is not None and within_gold(answer.lo, answer.hi, gold)


_PROCESSORS: dict = {}


def _processor(llm, one_edge: bool, max_new_tokens: int):
    """The grammar as a logits processor for a local model (None for other backends); one per tokenizer and
    setting, so every `LocalLLM` over the same (process-wide) SmolLM2 shares one compiled decoder."""
    if not hasattr(llm, "tokenizer") or not hasattr(llm, "model"):
        return None
    key = (id(llm.tokenizer), llm.model.config.vocab_size, one_edge, max_new_tokens)
    if key not in _PROCESSORS:
        _PROCESSORS[key] = GrammarProcessor(edge_list_dfa(MAX_STEPS, one_edge=one_edge), llm.tokenizer,
                                            window=max_new_tokens, vocab_size=llm.model.config.vocab_size)
    return _PROCESSORS[key]


def extract_and_solve(llm, questions: Sequence[str], cache: GenerationCache, *, mode: str = "per_constraint",
                      whole_shots: Sequence[tuple[str, Sequence[tuple[int, int]]]] = (), shot_seed: int = 0,
                      max_new_tokens: int | None = None, batch: int = 64) -> list[Extraction]:
    """The extracted graph and the solver's answer for each benchmark question (`prompts.build_prompt`).

    per_constraint: one greedy completion of at most 8 tokens per constraint sentence; whole: one of at most
    `max_new_tokens` (default 8 per constraint line of the longest question, at least 16) per question.
    Generations are cached (`cache`), so a killed run resumes."""
    if mode not in MODES:
        raise ValueError(f"mode={mode!r}; accepted {MODES}")
    if mode == "whole":
        prompts = [whole_prompt(q, whole_shots) for q in questions]
        max_new = max_new_tokens or max(16, 8 * max(len(constraint_sentences(q)) for q in questions) + 8)
        proc = _processor(llm, False, max_new)
        options = {"logits_processor": proc} if proc else {}
        outputs = cache.generate(llm, prompts, chat=True, seed=0, max_new_tokens=max_new, temperature=0.0,
                                 batch=batch, what="asynchow graphs", tag="edge-list" if proc else "", **options)
        return [solve_edges(q, o) for q, o in zip(questions, outputs)]
    shots = constraint_shots(shot_seed)
    sentences = [constraint_sentences(q) for q in questions]
    flat = [constraint_prompt(s, shots) for ss in sentences for s in ss]
    max_new = max_new_tokens or 8
    proc = _processor(llm, True, max_new)
    options = {"logits_processor": proc} if proc else {}
    outputs = cache.generate(llm, flat, chat=False, seed=0, max_new_tokens=max_new, temperature=0.0, batch=batch,
                             what="asynchow edges", tag="one-edge" if proc else "first-line", stop=("\n",),
                             **options) \
        if flat else []
    results, k = [], 0
    for q, ss in zip(questions, sentences):
        text = "".join(o.split("\n")[0] + "\n" for o in outputs[k:k + len(ss)])
        k += len(ss)
        results.append(solve_edges(q, text))
    return results
