"""AsyncHow at one scale (experiment `asynchow/reproduce`): the solver check, the LLM benchmark and the
graph-native against the text-reading model, with the paper's claims and verdicts.

Runbook:
    python scripts/reproduce.py --papers=asynchow --scale=quick
    python scripts/run.py --config=jaxml/papers/asynchow/configs/reproduce.py:quick --workdir=/tmp/asynchow
Tiny (tests) runs the solver and the benchmark on 2 tasks; what quick stands for is in
jaxml/papers/asynchow/README.md.
"""

from jaxml.core.config import reproduce_config

PARTS = ("benchmark", "graph_vs_text", "solver")


def get_config(arg=None):
    return reproduce_config("asynchow", arg, tiny=("benchmark", "solver"), quick=PARTS, full=PARTS)
