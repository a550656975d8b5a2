"""The noisy T-maze: the cue is right 80% of the time and the good arm pays 80% of the time
(experiment `embodied/tmaze` with other numbers; a reproduce part `tmaze_noisy`).

Runbook:
    python scripts/run.py --config=jaxml/papers/embodied/configs/tmaze_noisy.py --workdir=/tmp/embodied_noisy
    (2 CPU cores; agents as in tmaze.py.)
Metric: as tmaze.py.
"""

from jaxml.papers.embodied.configs import tmaze


def get_config(arg=None):
    c = tmaze.get_config(arg)
    c.cue_validity = 0.8
    c.reward_probability = 0.8
    return c
