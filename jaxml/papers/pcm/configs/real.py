"""Held-out log-likelihood and MAE on real psychometric data (experiment `pcm/real`).

Runbook:
    python scripts/run.py --config=jaxml/papers/pcm/configs/real.py --workdir=/tmp/pcm_real
Data: psychotools VerbalAggression (316 x 24, 0-2), ConspiracistBeliefs2016 (2449 x 15, 0-4, 106
missing), MathExam14W credits (729 x 13, 0-2); one random rating per user held out, 10 splits (quick:
3 splits, spectral and MMLE; tiny: VerbalAggression, one split, spectral and MMLE).
Metric: mean log P(held-out rating) with bounded-MLE abilities, MAE of the argmax prediction.
"""

from jaxml.core.config import by_scale, experiment_config

DATASETS = ("verbal_aggression", "conspiracist_beliefs", "math_exam")


def get_config(arg=None):
    c, scale = experiment_config("pcm/real", arg)
    c.scale = scale
    c.datasets = by_scale(scale, tiny=DATASETS[:1], quick=DATASETS, full=DATASETS)
    c.methods = by_scale(scale, tiny=("spectral", "mmle"), quick=("spectral", "mmle"),
                         full=("spectral", "jmle", "mmle"))
    c.lam = 0.1
    c.splits = by_scale(scale, tiny=1, quick=3, full=10)
    return c
