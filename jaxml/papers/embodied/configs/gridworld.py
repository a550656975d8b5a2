"""Grid world: Dirichlet learning of B (A known) and of A (B known) over blocks (experiment
`embodied/gridworld`).

Runbook:
    python scripts/run.py --config=jaxml/papers/embodied/configs/gridworld.py --workdir=/tmp/embodied_grid
    (2 CPU cores; full: 7x7 grid, 32 agents, 20 blocks of 100 steps, novelty-seeking and random
    movers, TIME_FULL. Quick: 16 agents, 8 blocks. Tiny: 4x4 grid, 4 agents, 3 blocks of 20 steps, B only.)
Metric: mean over agents of KL(true || learned) over the columns of B (or A), nats, with 95% CIs.
pymdp's learning_gridworld demo: KL falls over blocks when one of A, B is known.
"""

from jaxml.core.config import by_scale, experiment_config


def get_config(arg=None):
    c, scale = experiment_config("embodied/gridworld", arg)
    c.size = by_scale(scale, tiny=4, quick=7, full=7)
    c.noise = 0.1
    c.concentration = 0.1
    c.agents = by_scale(scale, tiny=4, quick=16, full=32)
    c.blocks = by_scale(scale, tiny=3, quick=8, full=20)
    c.steps = by_scale(scale, tiny=20, quick=100, full=100)
    c.learn = by_scale(scale, tiny=("B",), quick=("B", "A"), full=("B", "A"))
    c.explorers = ("novelty", "random")
    c.learning_mode = "step"     # online: a novelty-seeking move sees its own counts within the block
    return c
