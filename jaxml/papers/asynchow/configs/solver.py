"""The exact solver against path enumeration (experiment `asynchow/solver`).

Runbook:
    python scripts/run.py --config=jaxml/papers/asynchow/configs/solver.py --workdir=/tmp/asynchow_solver
    (2 CPU cores; full: 20,000 generated plans, 7 s with generation (DP 29 us/plan, enumeration 45 us/plan);
    quick: 2,000; tiny: 200.)
Metric: the share of plans where the DP's interval equals the maximum over all START -> END paths (must be
1.0), and the time per plan of each. Full: 20,000/20,000 (1,190 interval golds). The release: a DAG DP on the upper bound reproduces `task_time` on all
1598 async tasks (anchors, checked on the released data).
"""

from jaxml.core.config import by_scale, experiment_config


def get_config(arg=None):
    c, scale = experiment_config("asynchow/solver", arg)
    c.num_plans = by_scale(scale, tiny=200, quick=2000, full=20000)
    return c
