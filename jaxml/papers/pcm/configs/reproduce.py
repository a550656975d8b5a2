"""PCM at one scale: recovery, scaling, real data, VerbalAggression table (experiment `pcm/reproduce`).

Runbook:
    python scripts/reproduce.py --papers=pcm --scale=quick
    python scripts/run.py --config=jaxml/papers/pcm/configs/reproduce.py:quick --workdir=/tmp/pcm_reproduce
"""

import ml_collections

from jaxml.core.config import parse_arg, scale_of


def get_config(arg=None) -> ml_collections.ConfigDict:
    arg = parse_arg(arg, tiny=False, quick=False)
    c = ml_collections.ConfigDict()
    c.experiment = "pcm/reproduce"
    c.scale = scale_of(arg)
    c.parts = ("recovery", "scaling", "real", "verbal_table", "mixture")
    if c.scale == "tiny":
        c.parts = ("recovery", "verbal_table")
    return c
