"""T-maze: cue visits and rewards with and without the epistemic term (experiment `embodied/tmaze`).

Runbook:
    python scripts/run.py --config=jaxml/papers/embodied/configs/tmaze.py --workdir=/tmp/embodied_tmaze
    (2 CPU cores; full: 4,000 agents per condition, five conditions, TIME_FULL. Quick: 1,000 agents;
    tiny: 64 agents, the two stochastic conditions.)
Metric: rate of seeds whose first move is to the cue, cue visited before an arm, rewarded trials,
with 95% Wilson intervals. pymdp's demo (the paper has no experiments): cue first with the
information gain, no cue-seeking without it.
"""

from jaxml.core.config import by_scale, experiment_config

CONDITIONS = ("epistemic", "pragmatic", "epistemic_argmax", "pragmatic_argmax", "pragmatic_sophisticated")


def get_config(arg=None):
    c, scale = experiment_config("embodied/tmaze", arg)
    c.agents = by_scale(scale, tiny=64, quick=1000, full=4000)
    c.conditions = by_scale(scale, tiny=CONDITIONS[:2], quick=CONDITIONS, full=CONDITIONS)
    c.cue_validity = 0.95
    c.reward_probability = 1.0
    c.steps = 3
    return c
