"""AsyncHow and Plan Like a Graph (Lin et al., ICML 2024, "Graph-enhanced Large Language Models in
Asynchronous Plan Reasoning"): the benchmark's task model and exact solver, the release's files, a generator
of AsyncHow-style plans, every prompt variant and the answer parser, an evaluation harness over any
`jaxml.llm` backend, an LLM-graph + solver pipeline under a grammar, and graph-native against text-reading
models trained with the one loop.

    from jaxml.papers import asynchow
    plan = asynchow.Plan("How to bake bread", ("Mix the dough.", "Heat the oven.", "Bake the loaf."),
                         ("20 minutes", "15 minutes", "40 minutes"), deps=((1, 3), (2, 3)))
    asynchow.critical_path(plan)                          # Interval(lo=3600.0, hi=3600.0)
    asynchow.build_prompt(plan, "adjacency_list_cot")      # the benchmark's question, PLaG-style
    asynchow.is_correct('It takes "1 hour".', asynchow.critical_path(plan))   # True
    tasks = asynchow.load_tasks("data/")                  # the release's pickles, read safely

Modules: `plan` (plans, solver), `generator`, `release` (pickles, JSON), `tfds_builder`, `prompts`,
`parsing`, `evaluate` (harness), `graph_solver`, `neural` (graph vs text models), `metrics`, `experiments`;
results in jaxml/papers/asynchow/README.md.
"""

from jaxml.papers.asynchow import experiments, neural  # noqa: F401  (register the experiments and the task)
from jaxml.papers.asynchow.evaluate import METHODS, run_benchmark
from jaxml.papers.asynchow.generator import complexity_bin, generate_plan, generate_plans, split
from jaxml.papers.asynchow.graph_solver import extract_and_solve
from jaxml.papers.asynchow.metrics import accuracy_table, complexity_slope, wilson_interval
from jaxml.papers.asynchow.parsing import is_correct, parse_answer
from jaxml.papers.asynchow.plan import (Interval, Plan, PlanError, critical_path, critical_path_enumerate,
                                        earliest_finish, parse_duration)
from jaxml.papers.asynchow.prompts import ORDERING_TEMPLATES, VARIANTS, build_prompt, few_shot_prompt
from jaxml.papers.asynchow.release import ReleaseTask, load_release, load_tasks, make_tasks, safe_load_pickle

__all__ = ["METHODS", "ORDERING_TEMPLATES", "VARIANTS", "Interval", "Plan", "PlanError", "ReleaseTask",
           "accuracy_table", "build_prompt", "complexity_bin", "complexity_slope", "critical_path",
           "critical_path_enumerate", "earliest_finish", "extract_and_solve", "few_shot_prompt", "generate_plan",
           "generate_plans", "is_correct", "load_release", "load_tasks", "make_tasks", "parse_answer",
           "parse_duration", "run_benchmark", "safe_load_pickle", "split", "wilson_interval"]
