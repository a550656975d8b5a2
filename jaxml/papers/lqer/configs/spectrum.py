"""Singular values of E and diag(s) E (the paper's Fig. 1a; experiment `lqer/spectrum`).

Runbook:
    python scripts/run.py --config=jaxml/papers/lqer/configs/spectrum.py --workdir=/tmp/lqer_spectrum
Seconds after the calibration. Top-32 energy share E -> diag(s) E at MXINT4: layers_0/attn/q
0.32 -> 0.83, layers_14/mlp/down 0.16 -> 0.25, layers_29/mlp/up 0.16 -> 0.84 (the paper: a figure).
"""

from jaxml.core.config import by_scale, experiment_config
from jaxml.papers.lqer.configs import common


def get_config(arg=None):
    c, scale = experiment_config("lqer/spectrum", arg)
    common.add_shared(c, scale)
    c.w_bits = 4
    c.k = by_scale(scale, tiny=8, quick=32, full=32)
    # exact kernel names here (the tiny model has two decoder layers)
    c.layers = by_scale(scale, tiny=("layers_0/attn/q", "layers_1/mlp/down"),
                        quick=("layers_0/attn/q", "layers_14/mlp/down", "layers_29/mlp/up"),
                        full=("layers_0/attn/q", "layers_14/mlp/down", "layers_29/mlp/up"))
    return c
