"""LQER at one scale: perplexity table, spectra and rank sweep (experiment `lqer/reproduce`).

Runbook:
    python scripts/reproduce.py --papers=lqer --scale=quick
Quick: 52-57 s on 2 idle CPU cores; what it stands for is in jaxml/papers/lqer/README.md ("The quick run").
Full scale adds the MiniLM-L6 table (`configs/minilm.py`, a float32 model; not in tiny or quick).
"""

from jaxml.core.config import reproduce_config

PARTS = ("perplexity", "spectrum", "rank_sweep")


def get_config(arg=None):
    return reproduce_config("lqer", arg, tiny=PARTS, quick=PARTS, full=PARTS + ("minilm",))
