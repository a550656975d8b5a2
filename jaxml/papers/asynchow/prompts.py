"""AsyncHow question prompts (the release's 24 variants x 10 constraint phrasings), graph structures, and
k-shot / PLaG prompts with worked answers from our solver.

    plan = Plan("How to bake bread", ("Mix the dough.", "Heat the oven.", "Bake the loaf."),
                ("20 minutes", "15 minutes", "40 minutes"), deps=((1, 3), (2, 3)))
    build_prompt(plan, "vanilla")                   # the benchmark question
    build_prompt(plan, "adjacency_list_cot")        # explicit graph + "Let's think step by step ..."
    few_shot_prompt(plan, "adjacency_list_cot", shots, cot=True)   # PLaG (explicit graph)
    few_shot_prompt(plan, "bag_cot", shots, cot=True)              # PLaG (BaG)
    answer_text(plan)                               # '1 hour', a gold answer the parser scores correct

Variants (`VARIANTS`, named as the release's `prompts[template][f'{variant}_prompts']`): `vanilla`, `cot`,
`bag` (build a graph first), `bag_cot`, the explicit graphs `edge_list`, `adjacency_list`,
`adjacency_matrix`, `csr` (the graph and the time dictionary appended), each with `_cot`, and every one
with `_combined` (the "economic" constraints, one sentence per preceding step: "Step 1 must precede step
2 and 3."). PLaG = an explicit-graph or BaG variant with k-shot CoT illustrations.

The question text follows `data_gen/generate_graph_prompt.py::generate_prompt` of the release
(fangru-lin/graph-llm-asynchow-plan). What its string replacements produce, worked out from the code:

- Its template is a triple-quoted string inside the function body, so every line after the first is
  indented by 4 spaces in the string itself (blank lines are empty; "Answer:" follows an escaped "\\n"
  and is not indented). The steps are inserted at "    [STEPS AND TIME]", so only step 1 gets the
  indent, and each step line ends with "\\n", which leaves two empty lines before the constraints.
- Its replacements '\\nThese ordering constraints need to be obeyed when executing above
  steps:\\n[ORDERING CONSTRAINTS]' (parallel plans) and '\\n[GRAPH]\\n' (variants without a graph) are
  written for an unindented template: against the indented one they never match. Run as committed,
  every parallel prompt keeps the constraints header and a literal "[ORDERING CONSTRAINTS]" (never
  "All steps can be executed in parallel."), and every non-graph prompt keeps a literal "    [GRAPH]".
- The published question texts (the Hugging Face `fangrulin/asynchow` questions, as quoted by third-party
  code: "...(1 minutes)\\n\\n\\nThese ordering constraints ...:\\nStep 1 must precede step 4.\\n...\\nStep 4
  must precede step 5.\\n\\n\\nQuestion: ...") and the paper's appendix A.8 have no indentation and no
  "[GRAPH]": they come from the unindented template, where both replacements match (the parallel one
  eats the "\\n" before "These", leaving "\\n\\nAll steps can be executed in parallel.\\n\\n").
So `layout="published"` (default) is the unindented template, the text the released data and paper show,
and `layout="committed"` runs the committed code's indented template as is, character for character.
Both apply the same replacement chain in the release's order ([TASK], steps, constraints or the parallel
sentence, [GRAPH], BaG, CoT), with its `str.capitalize()` of each constraint and its string sort of the
constraint sentences ("Step 10 ..." before "Step 2 ...") and of the combined followers ("step 10 and 2").

Graph structures: the release sorts node names as strings, so for n >= 10 its node order is 1, 10, 11,
2, ..., END, START, while its own prompt states "the node order to be 1 to n, 'END', 'START'"; and its
CSR appends column indices in edge-list order while counting the row pointer per row, so the columns are
not grouped by row (not a valid CSR) whenever the edge list is not row-sorted (START's edges come after
the constraints). We default to the order the prompt states and a valid CSR (columns grouped by row,
ascending); `release_order=True` (or `nodes=release_node_order(...)`, `edge_order=True`) reproduces the
release's structures exactly. (Checked against a scratch transcription of the release's
`generate_prompt` and `edge_list_to_adjacency_structures`: identical text for 400 generated plans x 10
phrasings x 24 variants x both layouts with `release_order=True`.)
"""

from __future__ import annotations

from collections.abc import Sequence

from jaxml.papers.asynchow.plan import (
    DAY, END, START, UNIT_SECONDS, Plan, critical_path, critical_steps, duration_spans, earliest_finish,
    format_seconds,
)

# The release's 10 phrasings of one ordering constraint (`main`'s `nl_prompt_templates`, in its order).
ORDERING_TEMPLATES = (
    "Before starting [following step], complete [preceding step].",
    "[preceding step] must precede [following step].",
    "Upon completing [preceding step], proceed to [following step].",
    "After [preceding step], [following step] should commence.",
    "Prioritize [preceding step] before advancing to [following step].",
    "[preceding step] is a prerequisite for [following step].",
    "Initiate [following step] subsequent to [preceding step].",
    "Ensure [preceding step] is done before [following step].",
    "Sequence the tasks: firstly [preceding step], then [following step].",
    "[following step] follows the completion of [preceding step].",
)
GRAPH_TYPES = ("edge_list", "adjacency_list", "adjacency_matrix", "csr")
LAYOUTS = ("published", "committed")


def _variant_table() -> dict[str, tuple[str | None, bool, bool, bool]]:
    """variant -> (graph_type, cot, bag, combined), in the release's key order of `prompts[template]`."""
    table = {"vanilla": (None, False, False, False), "vanilla_combined": (None, False, False, True),
             "cot": (None, True, False, False), "cot_combined": (None, True, False, True)}
    for suffix, combined in (("", False), ("_combined", True)):
        table.update({f"{g}{suffix}": (g, False, False, combined) for g in GRAPH_TYPES})
        table.update({f"{g}_cot{suffix}": (g, True, False, combined) for g in GRAPH_TYPES})
        table.update({f"bag{suffix}": (None, False, True, combined), f"bag_cot{suffix}": (None, True, True, combined)})
    return table


_VARIANTS = _variant_table()
VARIANTS = tuple(_VARIANTS)
# PLaG: these variants prompted with k-shot CoT illustrations (`few_shot_prompt(..., cot=True)`).
PLAG_VARIANTS = tuple(v for v in VARIANTS if _VARIANTS[v][1] and (_VARIANTS[v][0] or _VARIANTS[v][2]))

_ANSWER = "Answer the time in double quotes."
_BAG_ANSWER = ("Let's construct a graph with the nodes and edges first to represent step ordering constraints, "
               "and also construct a dictionary to represent time needed for each step. Use the graph and "
               "dictionary to calculate the shortest possible time needed for the task. " + _ANSWER)
_COT_ANSWER = "Let's think step by step and then answer the time in double quotes."
_QUESTION = ("Question: Assume that you need to execute all the steps to complete the task and that infinite "
             "resources are available. What is the shortest possible time to [TASK]? " + _ANSWER)
HEADER = "These ordering constraints need to be obeyed when executing above steps:"
PARALLEL_SENTENCE = "All steps can be executed in parallel."
_TEMPLATES = {
    "published": ("To [TASK], here are the steps and the times needed for each step.\n[STEPS AND TIME]\n\n"
                  f"{HEADER}\n[ORDERING CONSTRAINTS]\n\n[GRAPH]\n\n{_QUESTION}\nAnswer:"),
    # The committed triple-quoted template: lines 2.. carry the function body's 4-space indent.
    "committed": ("To [TASK], here are the steps and the times needed for each step.\n    [STEPS AND TIME]\n\n"
                  f"    {HEADER}\n    [ORDERING CONSTRAINTS]\n\n    [GRAPH]\n\n    {_QUESTION}\nAnswer:"),
}


# --- Graph structures --------------------------------------------------------------------------------

def node_order(plan: Plan) -> list[str]:
    """The node order the release's prompt states: '1', ..., 'n', 'END', 'START'."""
    return [str(i) for i in range(1, plan.n + 1)] + [END, START]


def release_node_order(nodes) -> list[str]:
    """The release's node order (`edge_list_to_adjacency_structures`: `sorted` node names as strings), so
    '10' comes before '2': for n = 11, ['1', '10', '11', '2', ..., '9', 'END', 'START']."""
    return sorted(str(v) for v in nodes)


def _nodes(plan: Plan, nodes: Sequence[str] | None) -> list[str]:
    if nodes is None:
        return node_order(plan)
    nodes = [str(v) for v in nodes]
    if sorted(nodes) != sorted(node_order(plan)):
        raise ValueError(f"nodes={nodes!r} must order exactly the plan's nodes {node_order(plan)}")
    return nodes


def adjacency_list(plan: Plan, nodes: Sequence[str] | None = None) -> dict[str, list[str]]:
    """{node: successors} over `plan.edge_list()` (constraints, START edges, END edges), keys in `nodes`
    order (default `node_order`), successors in edge-list order: {'1': ['3'], ..., 'END': [], 'START': [...]}."""
    adj = {v: [] for v in _nodes(plan, nodes)}
    for a, b in plan.edge_list():
        adj[a].append(b)
    return adj


def adjacency_matrix(plan: Plan, nodes: Sequence[str] | None = None) -> list[list[int]]:
    """0/1 matrix, row = preceding node, column = following node, in `nodes` order (default `node_order`)."""
    order = _nodes(plan, nodes)
    index = {v: i for i, v in enumerate(order)}
    matrix = [[0] * len(order) for _ in order]
    for a, b in plan.edge_list():
        matrix[index[a]][index[b]] = 1
    return matrix


def csr(plan: Plan, nodes: Sequence[str] | None = None, edge_order: bool = False
        ) -> tuple[list[int], list[int], list[int]]:
    """(values, row pointer, column indices) of the adjacency matrix in `nodes` order.

    Columns are grouped by row, ascending (a valid CSR); `edge_order=True` lists them in edge-list order as
    the release does (its row pointer is the same; its columns then disagree with it when START's edges,
    listed after the constraints, belong to the last row)."""
    order = _nodes(plan, nodes)
    index = {v: i for i, v in enumerate(order)}
    cells = [(index[a], index[b]) for a, b in plan.edge_list()]
    row_ptr = [0] * (len(order) + 1)
    for r, _ in cells:
        row_ptr[r + 1] += 1
    for i in range(1, len(row_ptr)):
        row_ptr[i] += row_ptr[i - 1]
    cols = [c for _, c in (cells if edge_order else sorted(cells))]
    return [1] * len(cells), row_ptr, cols


def time_dict(plan: Plan) -> dict[str, str]:
    """{'1': '30 minutes', ...}: the release's `time_dic`, step ids as strings."""
    return {str(i): d for i, d in enumerate(plan.durations, start=1)}


def graph_text(plan: Plan, graph_type: str, release_order: bool = False) -> str:
    """The release's text of a graph and the time dictionary ('Here is the adjacency list representation of
    the step ordering constraints:\\n{...}\\nTime for each step can be represented as a dictionary:\\n{...}')."""
    nodes = release_node_order(node_order(plan)) if release_order else None
    times = f"\nTime for each step can be represented as a dictionary:\n{time_dict(plan)}"
    stated = f" (assuming the node order to be 1 to {plan.n}, 'END', 'START')"
    if graph_type == "edge_list":
        body = f"Here is the edge list representation of the step ordering constraints:\n{plan.edge_list()}"
    elif graph_type == "adjacency_list":
        body = (f"Here is the adjacency list representation of the step ordering constraints:\n"
                f"{adjacency_list(plan, nodes)}")
    elif graph_type == "adjacency_matrix":
        body = (f"Here is the adjacency matrix representation of the step ordering constraints{stated}:\n"
                f"{adjacency_matrix(plan, nodes)}")
    elif graph_type == "csr":
        values, row_ptr, cols = csr(plan, nodes, edge_order=release_order)
        body = (f"Here is the compressed sparse row representation of the step ordering constraints{stated}:\n"
                f"Values: {values}\nRow indices: {row_ptr}\nColumn indices: {cols}")
    else:
        raise ValueError(f"graph_type={graph_type!r}; accepted {GRAPH_TYPES}")
    return body + times


def bag_graph_answer(plan: Plan, graph_type: str = "adjacency_list", release_order: bool = False) -> str:
    """What a Build-a-Graph answer builds before reasoning: the graph and the time dictionary (the paper's
    BaG illustrations open their answer with this text)."""
    return graph_text(plan, graph_type, release_order)


# --- The question ------------------------------------------------------------------------------------

def _check(variant: str, template: str, layout: str) -> tuple[str | None, bool, bool, bool]:
    if variant not in _VARIANTS:
        raise ValueError(f"variant={variant!r}; accepted {VARIANTS}")
    if template not in ORDERING_TEMPLATES:
        raise ValueError(f"template={template!r}; accepted {ORDERING_TEMPLATES}")
    if layout not in LAYOUTS:
        raise ValueError(f"layout={layout!r}; accepted {LAYOUTS}")
    return _VARIANTS[variant]


def _constraint(template: str, prec: str, foll: str) -> str:
    text = template.replace("[preceding step]", f"step {prec}").replace("[following step]", f"step {foll}")
    return f"{text}\n".capitalize()


def constraint_lines(plan: Plan, template: str = ORDERING_TEMPLATES[1], combined: bool = False) -> str:
    """The constraint sentences as the release writes them: one per constraint, or with `combined` one per
    preceding step with its followers string-sorted ("step 2, 3 and 4"); each `str.capitalize`d, and the
    sentences string-sorted."""
    if not combined:
        lines = [_constraint(template, str(a), str(b)) for a, b in plan.deps]
    else:
        lines = []
        for prec, folls in adjacency_list(plan).items():
            folls = sorted(f for f in folls if f != END)
            if prec == START or not folls:
                continue
            joined = ", ".join(folls[:-1]) + " and " + folls[-1] if len(folls) > 1 else folls[0]
            lines.append(_constraint(template, prec, joined))
    return "".join(sorted(lines))


def _task(plan: Plan) -> str:
    return plan.title.replace("How to ", "")   # the release replaces every occurrence, not just the prefix


def build_prompt(plan: Plan, variant: str = "vanilla", template: str = ORDERING_TEMPLATES[1],
                 layout: str = "published", release_order: bool = False) -> str:
    """The release's question for `plan` in `variant` (see `VARIANTS`) with the constraint phrasing
    `template` (one of `ORDERING_TEMPLATES`).

    layout: 'published' (the unindented text of the released data and the paper) or 'committed' (the
      committed `generate_prompt` as is: indented lines, a literal "[GRAPH]" in non-graph variants and a
      literal "[ORDERING CONSTRAINTS]" for parallel plans); see the module docstring.
    release_order: graph structures in the release's string-sorted node order with edge-ordered CSR
      columns (differs from the default for n >= 10, and for CSR whenever START has edges).
    Raises ValueError for an unknown variant, template or layout (the message lists the accepted ones).
    """
    graph, cot, bag, combined = _check(variant, template, layout)
    prompt = _TEMPLATES[layout].replace("[TASK]", _task(plan))
    steps = "".join(f"Step {i}. {s} ({d})\n" for i, (s, d) in enumerate(zip(plan.steps, plan.durations), 1))
    prompt = prompt.replace("[STEPS AND TIME]", steps)
    if not plan.deps:
        prompt = prompt.replace(f"\n{HEADER}\n[ORDERING CONSTRAINTS]", PARALLEL_SENTENCE)
    else:
        prompt = prompt.replace("[ORDERING CONSTRAINTS]", constraint_lines(plan, template, combined))
    if graph:
        prompt = prompt.replace("[GRAPH]", graph_text(plan, graph, release_order))
    else:
        prompt = prompt.replace("\n[GRAPH]\n", "")
    if bag:
        prompt = prompt.replace(_ANSWER, _BAG_ANSWER)
    if cot:
        prompt = prompt.replace(_ANSWER, _COT_ANSWER)
    return prompt


# --- Answers -----------------------------------------------------------------------------------------

def _count(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else f"{x:g}"


def answer_text(plan: Plan) -> str:
    """A canonical gold answer that `parsing.is_correct` scores correct against `critical_path(plan)`.

    An exact gold is written in whole units (`format_seconds`: '1 hour 30 minutes'). An interval gold
    (months or years on the critical path) is the sum of the durations along a critical path of the upper
    ends, months and years kept as such ('2 months 3 days'): its parse has the gold's upper end as its own
    upper end, so it falls within the gold under the release's rule (either end within [lo, hi])."""
    gold = critical_path(plan)
    if gold.exact:
        return format_seconds(gold.lo)
    counts = {"year": 0.0, "month": 0.0}
    rest = 0.0
    for step in critical_steps(plan, "hi"):
        for n, unit in duration_spans(plan.durations[step - 1]):
            if unit in counts:
                counts[unit] += n
            else:
                rest += n * UNIT_SECONDS[unit][0]
    parts = [f"{_count(n)} {u}{'' if n == 1 else 's'}" for u, n in counts.items() if n]
    if rest:
        parts.append(format_seconds(rest))
    return " ".join(parts)


def _when(lo: float, hi: float) -> str:
    """A time point in the reasoning: 'at 20 minutes' or 'between 56 and 62 days'."""
    if lo == hi:
        return f"at {format_seconds(lo)}"
    if lo % DAY == 0 and hi % DAY == 0:
        return f"between {int(lo // DAY)} and {int(hi // DAY)} days"
    return f"between {format_seconds(lo)} and {format_seconds(hi)}"


def _steps(ids: Sequence[int]) -> str:
    names = [f"step {i}" for i in ids]
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def worked_solution(plan: Plan) -> str:
    """A chain-of-thought answer from our solver: each step's earliest finish time in topological order,
    then the quoted `answer_text`. It holds no other double quote, so the parser reads the final answer.

    "Step 1 can start at once; it takes 20 minutes, so it finishes at 20 minutes. ... Step 3 can start
    after step 1 and step 2, the last of which finishes at 20 minutes; it takes 40 minutes, so it finishes
    at 1 hour. ... the shortest possible time to bake bread is "1 hour"."
    """
    f_lo, f_hi = earliest_finish(plan)
    preds = plan.predecessors()
    sentences = []
    for v in plan.topological_order():
        p = sorted(preds[v - 1])
        took = f"it takes {plan.durations[v - 1]}, so it finishes {_when(f_lo[v - 1], f_hi[v - 1])}."
        if not p:
            sentences.append(f"Step {v} can start at once; {took}")
        else:
            start = _when(max(f_lo[u - 1] for u in p), max(f_hi[u - 1] for u in p))
            which = "which finishes" if len(p) == 1 else "the last of which finishes"
            sentences.append(f"Step {v} can start after {_steps(p)}, {which} {start}; {took}")
    gold = critical_path(plan)
    task = _task(plan).replace('"', "'")   # keep the final quoted answer the only double-quoted text
    sentences.append(f"All steps are done when the last one finishes, {_when(gold.lo, gold.hi)}, so the "
                     f'shortest possible time to {task} is "{answer_text(plan)}".')
    return " ".join(sentences)


def shot_answer(plan: Plan, cot: bool, bag_graph: str | None = None, release_order: bool = False) -> str:
    """The answer of one k-shot illustration: the quoted gold time (the paper's k-shot form, 'The shortest
    possible time to X is "55 min".'), or with `cot` the `worked_solution`, preceded by the BaG graph text
    when `bag_graph` names a graph type."""
    if not cot:
        task = _task(plan).replace('"', "'")
        return f'The shortest possible time to {task} is "{answer_text(plan)}".'
    solution = worked_solution(plan)
    return f"{bag_graph_answer(plan, bag_graph, release_order)}\n{solution}" if bag_graph else solution


def few_shot_prompt(plan: Plan, variant: str, shots: Sequence[Plan], cot: bool,
                    template: str = ORDERING_TEMPLATES[1], layout: str = "published", release_order: bool = False,
                    bag_graph: str = "adjacency_list", shot_variant: str | None = None) -> str:
    """A k-shot prompt: each shot's question (in `shot_variant`, default `variant`) followed by its answer
    (`shot_answer`: the quoted gold, or with `cot` a worked solution, opened for BaG variants by the
    `bag_graph` graph text), then the question of `plan` in `variant`.

    The release fills [PROMPT0].. of instruction texts it stores in the async pickle but does not publish
    in code; ours follow the paper's appendix A.8 layout: "###Examples:\\n" + shots + "###\\n" + question.
    PLaG = an explicit-graph or BaG variant (`PLAG_VARIANTS`) with `cot=True`.
    """
    shot_variant = variant if shot_variant is None else shot_variant
    _check(shot_variant, template, layout)
    prompt = build_prompt(plan, variant, template, layout, release_order)
    if not shots:
        return prompt
    bag = bag_graph if _VARIANTS[shot_variant][2] else None
    if bag is not None and bag not in GRAPH_TYPES:
        raise ValueError(f"bag_graph={bag_graph!r}; accepted {GRAPH_TYPES}")
    blocks = [build_prompt(s, shot_variant, template, layout, release_order) + " "
              + shot_answer(s, cot, bag, release_order) for s in shots]
    return "###Examples:\n" + "\n\n".join(blocks) + "\n###\n" + prompt


__all__ = [
    "ORDERING_TEMPLATES", "VARIANTS", "PLAG_VARIANTS", "GRAPH_TYPES", "LAYOUTS", "node_order", "release_node_order",
    "adjacency_list", "adjacency_matrix", "csr", "time_dict", "graph_text", "bag_graph_answer",
    "constraint_lines", "build_prompt", "answer_text", "worked_solution", "shot_answer", "few_shot_prompt",
]
