"""Mixtures of PCMs by spectral EM (experiment `pcm/mixture`).

Runbook:
    python scripts/run.py --config=jaxml/papers/pcm/configs/mixture.py --workdir=/tmp/pcm_mixture
Simulated: 2 components (thresholds ~ N(0,1) each), 20 items, L = 2, 3000 users per component; fits C = 1..4,
held-out users' mean log-likelihood picks C. Real: ConspiracistBeliefs2016, 20% of users held out.
Quick: 2000 users per component, C = 1..3; tiny: 6 items, 200 users per component, C = 1, 2, no real data.
Metric: per-threshold RMSE after the best component permutation, assignment accuracy, held-out log-lik.
"""

from jaxml.core.config import by_scale, experiment_config


def get_config(arg=None):
    c, scale = experiment_config("pcm/mixture", arg)
    c.scale = scale
    c.true_components = 2
    c.n_items = by_scale(scale, tiny=6, quick=20, full=20)
    c.n_levels = 2
    c.n_per_component = by_scale(scale, tiny=200, quick=2000, full=3000)
    c.components = by_scale(scale, tiny=(1, 2), quick=(1, 2, 3), full=(1, 2, 3, 4))
    c.real_dataset = by_scale(scale, tiny="", quick="conspiracist_beliefs", full="conspiracist_beliefs")
    return c
