"""VerbalAggression item thresholds: spectral vs MMLE vs JMLE (experiment `pcm/verbal_table`).

Runbook:
    python scripts/run.py --config=jaxml/papers/pcm/configs/verbal_table.py --workdir=/tmp/pcm_verbal
Writes verbal_aggression_thresholds.md (24 items x 2 thresholds per method, grand mean removed). The
same small data at every scale.
"""

from jaxml.core.config import experiment_config


def get_config(arg=None):
    c, scale = experiment_config("pcm/verbal_table", arg)
    c.scale = scale
    c.lam = 0.1
    return c
