"""Parameter recovery vs number of users (experiment `pcm/recovery`): spectral, JMLE, MMLE.

Runbook:
    python scripts/run.py --config=jaxml/papers/pcm/configs/recovery.py --workdir=/tmp/pcm_recovery
    (2 CPU cores; full: 10 items, L=3, n = 100..3200, 20 trials; see the README for time and numbers.)
Metric: centred RMSE of the 10 x 3 thresholds (grand mean removed), mean over trials, and wall time.
Paper: spectral within the accuracy of MMLE/JMLE at orders of magnitude lower run time.
"""

import ml_collections

from jaxml.core.config import parse_arg, scale_of


def get_config(arg=None) -> ml_collections.ConfigDict:
    arg = parse_arg(arg, tiny=False, quick=False, seed=0)
    c = ml_collections.ConfigDict()
    c.experiment = "pcm/recovery"
    c.seed = arg.seed
    c.n_items = 10
    c.n_levels = 3
    c.missing = 0.0
    c.lam = 0.1
    c.methods = ("spectral", "jmle", "mmle")
    c.ns = (100, 200, 400, 800, 1600, 3200)
    c.trials = 20
    scale = scale_of(arg)
    if scale == "quick":
        c.trials = 5
    if scale == "tiny":
        c.ns, c.trials = (100, 200), 2
    return c
