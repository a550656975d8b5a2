"""Singular values of E and diag(s) E (the paper's Fig. 1a; experiment `lqer/spectrum`).

Runbook:
    python scripts/run.py --config=jaxml/papers/lqer/configs/spectrum.py --workdir=/tmp/lqer_spectrum
"""

import importlib.util
import pathlib

import ml_collections

from jaxml.core.config import parse_arg, scale_of

_spec = importlib.util.spec_from_file_location("_lqer_common", pathlib.Path(__file__).with_name("common.py"))
common = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(common)


def get_config(arg=None) -> ml_collections.ConfigDict:
    arg = parse_arg(arg, tiny=False, quick=False, seed=0)
    scale = scale_of(arg)
    c = common.base(scale, arg.seed)
    c.experiment = "lqer/spectrum"
    c.w_bits = 4
    c.k = 32
    c.layers = ("layers_0/attn/q", "layers_14/mlp/down", "layers_29/mlp/up")   # exact kernel names here
    return c
