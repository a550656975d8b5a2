"""AsyncHow at one scale (experiment `asynchow/reproduce`): the solver check, the LLM benchmark and the
graph-native against the text-reading model, with the paper's claims and verdicts.

Runbook:
    python scripts/reproduce.py --papers=asynchow --scale=quick
    python scripts/run.py --config=jaxml/papers/asynchow/configs/reproduce.py:quick --workdir=/tmp/asynchow
Tiny (tests) runs the solver check only (the parts' own tiny runs are tested separately); quick: 8 LLM tasks
(zero-shot and the LLM-graph + solver pipeline), 120 training steps per model, 2,000 plans for the solver;
1m13s on 2 CPU cores with a warm compilation cache, 1m48s cold. What quick stands for is in
jaxml/papers/asynchow/README.md.
"""

from jaxml.core.config import reproduce_config

PARTS = ("benchmark", "graph_vs_text", "solver")


def get_config(arg=None):
    return reproduce_config("asynchow", arg, tiny=("solver",), quick=PARTS, full=PARTS)
