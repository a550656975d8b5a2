"""Singular values of E and diag(s) E (the paper's Fig. 1a; experiment `lqer/spectrum`).

Runbook:
    python scripts/run.py --config=jaxml/papers/lqer/configs/spectrum.py --workdir=/tmp/lqer_spectrum
"""

import ml_collections

from jaxml.core.config import parse_arg, scale_of
from jaxml.papers.lqer.configs import common


def get_config(arg=None) -> ml_collections.ConfigDict:
    arg = parse_arg(arg, tiny=False, quick=False, seed=0)
    scale = scale_of(arg)
    c = common.base(scale, arg.seed)
    c.experiment = "lqer/spectrum"
    c.w_bits = 4
    c.k = 32
    c.layers = ("layers_0/attn/q", "layers_14/mlp/down", "layers_29/mlp/up")   # exact kernel names here
    return c
