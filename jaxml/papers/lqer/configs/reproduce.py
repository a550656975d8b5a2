"""LQER at one scale: perplexity table, rank sweep and spectra (experiment `lqer/reproduce`).

Runbook:
    python scripts/reproduce.py --papers=lqer --scale=quick
"""

from jaxml.core.config import reproduce_config


def get_config(arg=None):
    return reproduce_config("lqer", arg,
                            tiny=('spectrum',),
                            quick=('perplexity', 'spectrum', 'rank_sweep'),
                            full=('perplexity', 'spectrum', 'rank_sweep'))
