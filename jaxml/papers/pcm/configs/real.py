"""Held-out log-likelihood and MAE on real psychometric data (experiment `pcm/real`).

Runbook:
    python scripts/run.py --config=jaxml/papers/pcm/configs/real.py --workdir=/tmp/pcm_real
Data: psychotools VerbalAggression (316 x 24, 0-2), ConspiracistBeliefs2016 (2449 x 15, 0-4, 106
missing), MathExam14W credits (729 x 13, 0-2); one random rating per user held out, 10 splits.
Metric: mean log P(held-out rating) with bounded-MLE abilities, MAE of the argmax prediction.
"""

import ml_collections

from jaxml.core.config import parse_arg, scale_of


def get_config(arg=None) -> ml_collections.ConfigDict:
    arg = parse_arg(arg, tiny=False, quick=False)
    c = ml_collections.ConfigDict()
    c.experiment = "pcm/real"
    c.datasets = ("verbal_aggression", "conspiracist_beliefs", "math_exam")
    c.methods = ("spectral", "jmle", "mmle")
    c.lam = 0.1
    c.splits = 10
    scale = scale_of(arg)
    if scale == "quick":
        c.splits = 3
    if scale == "tiny":
        c.datasets, c.splits = ("verbal_aggression",), 1
    return c
