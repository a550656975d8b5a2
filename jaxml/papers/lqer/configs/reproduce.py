"""LQER at one scale: perplexity table, rank sweep and spectra (experiment `lqer/reproduce`).

Runbook:
    python scripts/reproduce.py --papers=lqer --scale=quick
"""

import ml_collections

from jaxml.core.config import parse_arg, scale_of


def get_config(arg=None) -> ml_collections.ConfigDict:
    arg = parse_arg(arg, tiny=False, quick=False)
    c = ml_collections.ConfigDict()
    c.experiment = "lqer/reproduce"
    c.scale = scale_of(arg)
    c.parts = ("perplexity", "spectrum", "rank_sweep")
    if c.scale == "tiny":
        c.parts = ("spectrum",)
    return c
