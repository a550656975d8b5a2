"""Embodied active inference at one scale: T-maze (and its noisy variant), grid-world learning,
foraging and the speed against pymdp (experiment `embodied/reproduce`), with claims and verdicts.

Runbook:
    python scripts/reproduce.py --papers=embodied --scale=quick
    python scripts/run.py --config=jaxml/papers/embodied/configs/reproduce.py:quick --workdir=/tmp/embodied
Tiny (tests) runs the T-maze only; what quick stands for is in jaxml/papers/embodied/README.md.
"""

from jaxml.core.config import reproduce_config

PARTS = ("tmaze", "tmaze_noisy", "gridworld", "foraging", "speed")


def get_config(arg=None):
    return reproduce_config("embodied", arg, tiny=("tmaze",), quick=PARTS, full=PARTS)
