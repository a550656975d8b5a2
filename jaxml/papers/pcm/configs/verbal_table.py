"""VerbalAggression item thresholds: spectral vs MMLE vs JMLE (experiment `pcm/verbal_table`).

Runbook:
    python scripts/run.py --config=jaxml/papers/pcm/configs/verbal_table.py --workdir=/tmp/pcm_verbal
Writes verbal_aggression_thresholds.md (24 items x 2 thresholds per method, grand mean removed).
"""

import ml_collections

from jaxml.core.config import parse_arg


def get_config(arg=None) -> ml_collections.ConfigDict:
    parse_arg(arg, tiny=False, quick=False)      # the same small data at every scale
    c = ml_collections.ConfigDict()
    c.experiment = "pcm/verbal_table"
    c.lam = 0.1
    return c
