"""Foraging with a rich patch that moves between blocks (experiment `embodied/foraging`).

Runbook:
    python scripts/run.py --config=jaxml/papers/embodied/configs/foraging.py --workdir=/tmp/embodied_forage
    (2 CPU cores; full: 4 patches, 6 blocks of 60 trials, 256 agents, TIME_FULL. Quick: 4 blocks of 40
    trials, 128 agents. Tiny: 2 blocks of 10 trials, 16 agents.)
Metric: food rate per block and in the second half of each block (mean over agents, 95% CI), for
Dirichlet learning with forgetting, without forgetting, and no learning. The paper (a position
paper) has no number; its claim is that an embodied agent must learn continually.
"""

from jaxml.core.config import by_scale, experiment_config


def get_config(arg=None):
    c, scale = experiment_config("embodied/foraging", arg)
    c.patches = 4
    c.p_rich = 0.9
    c.p_poor = 0.1
    c.concentration = 1.0
    c.forgetting = 0.1
    c.agents = by_scale(scale, tiny=16, quick=128, full=256)
    c.blocks = by_scale(scale, tiny=2, quick=4, full=6)
    c.trials_per_block = by_scale(scale, tiny=10, quick=40, full=60)
    c.conditions = by_scale(scale, tiny=("learning_forgetting", "no_learning"),
                            quick=("learning_forgetting", "learning", "no_learning"),
                            full=("learning_forgetting", "learning", "no_learning"))
    return c
