"""Mixtures of PCMs by spectral EM (experiment `pcm/mixture`).

Runbook:
    python scripts/run.py --config=jaxml/papers/pcm/configs/mixture.py --workdir=/tmp/pcm_mixture
Simulated: 2 components (thresholds ~ N(0,1) each), 20 items, L = 2, 3000 users per component; fits C = 1..4,
held-out users' mean log-likelihood picks C. Real: ConspiracistBeliefs2016, 20% of users held out.
Metric: per-threshold RMSE after the best component permutation, assignment accuracy, held-out log-lik.
"""

import ml_collections

from jaxml.core.config import parse_arg, scale_of


def get_config(arg=None) -> ml_collections.ConfigDict:
    arg = parse_arg(arg, tiny=False, quick=False, seed=0)
    c = ml_collections.ConfigDict()
    c.experiment = "pcm/mixture"
    c.seed = arg.seed
    c.true_components = 2
    c.n_items = 20
    c.n_levels = 2
    c.n_per_component = 3000
    c.components = (1, 2, 3, 4)
    c.real_dataset = "conspiracist_beliefs"
    scale = scale_of(arg)
    if scale == "quick":
        c.components = (1, 2, 3)
    if scale == "tiny":
        c.n_items, c.n_per_component, c.components, c.real_dataset = 6, 200, (1, 2), ""
    return c
