"""Batched rollout speed, ours against pymdp's, same T-maze agents, same CPU, one run (experiment
`embodied/speed`).

Runbook:
    pip install -e ".[pymdp-ref]"      # pymdp 1.0.4; without it only our rate is reported
    python scripts/run.py --config=jaxml/papers/embodied/configs/speed.py --workdir=/tmp/embodied_speed
    (2 CPU cores; full: 256, 2,048 and 16,384 agents x 3 steps, medians of 21 interleaved warm calls.
    Quick: 256 and 2,048 agents, 7 calls. Tiny: 64 agents, 2 calls, ours only.)
Metric: agent-steps per second of each and the ratio pymdp time / our time.
"""

from jaxml.core.config import by_scale, experiment_config


def get_config(arg=None):
    c, scale = experiment_config("embodied/speed", arg)
    c.agents = by_scale(scale, tiny=(64,), quick=(256, 2048), full=(256, 2048, 16384))
    c.steps = 3
    c.pymdp = by_scale(scale, tiny=False, quick=True, full=True)   # tiny (tests): ours only, whatever is installed
    c.repeats = by_scale(scale, tiny=2, quick=7, full=21)
    return c
