"""The benchmark harness: AsyncHow tasks x prompt variants over any `jaxml.llm` backend, scored by the
benchmark's parser, with the solver as the oracle row; generations cached so a killed run resumes.

    llm = make_llm("smollm2", batch_size=16)          # or make_llm("http://host:8000/v1", model="NAME")
    tasks = release.make_tasks(generator.split("test", 100))    # or release.load_tasks("data/") (the real files)
    rows = run_benchmark(llm, tasks, ("zero-shot", "k-shot CoT", "PLaG (adjacency list)"), cache)
    metrics.accuracy_table(rows, ("method", "plan_type"))

Methods (`METHODS`): name -> (release variant, number of shots, CoT illustrations). 'zero-shot' is the
release's `vanilla`, 'k-shot' adds the quoted answers of `shots` solved plans, 'k-shot CoT' worked
solutions; 'BaG' / 'BaG CoT' ask the model to build a graph first; 'PLaG (...)' = an explicit graph (or
BaG) with k-shot CoT illustrations, the paper's method. Every task gets one of the release's ten
constraint phrasings, drawn from `template_seed` (the same for every method). Two more rows:
'solver (oracle)' scores our solver's `answer_text` through the same parser (it must be 100%), and
'LLM graph + solver' (`graph_solver.extract_and_solve`, one edge per constraint sentence; '... (whole
list)' for the whole edge list at once) lets the model write the edges under a grammar and computes the
answer exactly.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from jaxml import progress
from jaxml.llm.cache import GenerationCache
from jaxml.papers.asynchow import graph_solver, parsing, prompts
from jaxml.papers.asynchow.generator import complexity_bin
from jaxml.papers.asynchow.plan import Plan

METHODS = {
    "zero-shot": ("vanilla", 0, False),
    "zero-shot CoT": ("cot", 0, False),
    "BaG": ("bag", 0, False),
    "BaG CoT": ("bag_cot", 0, False),
    "k-shot": ("vanilla", 3, False),
    "k-shot CoT": ("cot", 3, True),
    "PLaG (edge list)": ("edge_list_cot", 3, True),
    "PLaG (adjacency list)": ("adjacency_list_cot", 3, True),
    "PLaG (adjacency matrix)": ("adjacency_matrix_cot", 3, True),
    "PLaG (CSR)": ("csr_cot", 3, True),
    "PLaG (BaG)": ("bag_cot", 3, True),
}
ORACLE = "solver (oracle)"
GRAPH_SOLVER = "LLM graph + solver"
GRAPH_SOLVER_WHOLE = "LLM graph + solver (whole list)"


def illustration_plans(text_source: str = "wordnet") -> list[Plan]:
    """The k-shot illustrations: the first asynchronous, sequential and parallel plans of 3-4 steps of the
    validation split, in that order (the release fixes three tasks, indices [1198, 8, 3] of its async set)."""
    from jaxml.papers.asynchow.generator import split
    chosen = {}
    for plan in split("validation", 200, text_source=text_source):
        if plan.n <= 4 and plan.plan_type not in chosen:
            chosen[plan.plan_type] = plan
    return [chosen["async"], chosen["sequential"], chosen["parallel"]]


def templates_for(n: int, seed: int) -> list[str]:
    """One of the ten constraint phrasings per task, drawn from `seed`."""
    rng = np.random.default_rng(seed)
    return [prompts.ORDERING_TEMPLATES[i] for i in rng.integers(len(prompts.ORDERING_TEMPLATES), size=n)]


def method_prompt(plan: Plan, method: str, shots: Sequence[Plan], template: str) -> str:
    """The prompt of `method` for `plan` (see `METHODS`)."""
    if method not in METHODS:
        raise ValueError(f"method={method!r}; accepted {sorted(METHODS)}")
    variant, k, cot = METHODS[method]
    if k == 0:
        return prompts.build_prompt(plan, variant, template)
    if len(shots) < k:
        raise ValueError(f"{method!r} needs {k} illustration plans, got {len(shots)}")
    return prompts.few_shot_prompt(plan, variant, shots[:k], cot=cot, template=template)


def _row(task, method: str, response: str, correct: bool, lo: float | None, hi: float | None) -> dict:
    return dict(method=method, index=task.index, source=task.source, plan_type=task.plan_type,
                ve_count=task.ve_count, complexity=complexity_bin(task.ve_count), correct=bool(correct),
                response=response, parsed_lo=lo, parsed_hi=hi, gold_lo=task.gold.lo, gold_hi=task.gold.hi)


def _text_row(task, method: str, response: str) -> dict:
    """A row for a text answer, parsed once and scored by the benchmark's rule."""
    parsed = parsing.parse_answer(response)
    return _row(task, method, response, parsing.parsed_is_correct(parsed, task.gold),
                None if parsed is None else parsed.lo, None if parsed is None else parsed.hi)


def run_benchmark(llm, tasks: Sequence, methods: Sequence[str], cache: GenerationCache, *,
                  shots: Sequence[Plan] = (), template_seed: int = 0, answer_tokens: int = 32,
                  cot_tokens: int = 192, batch: int = 16, chat: bool = True, graph_solver_mode: str | None = None
                  ) -> list[dict]:
    """One row per (method, task): the response, whether the benchmark's rule scores it correct, and the
    task's plan type and complexity. `tasks` are `release.ReleaseTask`s (real or generated). Greedy
    decoding (the paper's temperature 0); `answer_tokens` new tokens for direct answers, `cot_tokens` for
    CoT and BaG ones. `graph_solver_mode` ('per_constraint' or 'whole') adds the LLM-graph + solver row (in
    'whole' mode the `shots` illustrate the edge list)."""
    unknown = [m for m in methods if m not in METHODS]
    if unknown:
        raise ValueError(f"unknown methods {unknown}; accepted {sorted(METHODS)}")
    templates = templates_for(len(tasks), template_seed)
    rows = [_text_row(t, ORACLE, f'"{prompts.answer_text(t.plan)}"') for t in tasks]
    for method in methods:
        variant, k, cot = METHODS[method]
        long = cot or "cot" in variant or "bag" in variant
        texts = [method_prompt(t.plan, method, shots, tpl) for t, tpl in zip(tasks, templates)]
        responses = cache.generate(llm, texts, chat=chat, seed=0, max_new_tokens=cot_tokens if long else answer_tokens,
                                   temperature=0.0, batch=batch, what=f"asynchow {method}")
        rows += [_text_row(t, method, r) for t, r in zip(tasks, responses)]
        acc = np.mean([r["correct"] for r in rows[-len(tasks):]])
        progress.log(f"asynchow {method}: accuracy {acc:.3f} on {len(tasks)} tasks")
    if graph_solver_mode:
        questions = [prompts.build_prompt(t.plan, "vanilla", tpl) for t, tpl in zip(tasks, templates)]
        whole_shots = [(prompts.build_prompt(s, "vanilla", tpl), s.deps) for s, tpl in
                       zip(shots, templates_for(len(shots), template_seed + 1))]
        found = graph_solver.extract_and_solve(llm, questions, cache, mode=graph_solver_mode, batch=2 * batch,
                                               whole_shots=whole_shots)
        for t, f in zip(tasks, found):
            name = GRAPH_SOLVER if graph_solver_mode == "per_constraint" else GRAPH_SOLVER_WHOLE
            row = _row(t, name, graph_solver.edges_text(f.edges), graph_solver.answer_is_correct(f.answer, t.gold),
                       None if f.answer is None else f.answer.lo, None if f.answer is None else f.answer.hi)
            row["edges_exact"] = set(f.edges) == set(t.plan.deps)
            rows.append(row)
        acc = np.mean([r["correct"] for r in rows[-len(tasks):]])
        progress.log(f"asynchow {rows[-1]['method']}: accuracy {acc:.3f} on {len(tasks)} tasks")
    return rows
