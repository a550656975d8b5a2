"""Parameter recovery vs number of users (experiment `pcm/recovery`): spectral, JMLE, MMLE.

Runbook:
    python scripts/run.py --config=jaxml/papers/pcm/configs/recovery.py --workdir=/tmp/pcm_recovery
    (2 CPU cores; full: 10 items, L=3, n = 100..3200, 20 trials; see the README for time and numbers.
    quick: n = 200, 800, 3200 with 5 trials; tiny: n = 200, 2 trials, spectral and MMLE.)
Metric: centred RMSE of the 10 x 3 thresholds (grand mean removed), mean over trials, and wall time.
Paper: spectral within the accuracy of MMLE/JMLE at orders of magnitude lower run time.
"""

from jaxml.core.config import by_scale, experiment_config


def get_config(arg=None):
    c, scale = experiment_config("pcm/recovery", arg)
    c.scale = scale
    c.n_items = 10
    c.n_levels = 3
    c.missing = 0.0
    c.lam = 0.1
    c.methods = by_scale(scale, tiny=("spectral", "mmle"), quick=("spectral", "jmle", "mmle"),
                         full=("spectral", "jmle", "mmle"))
    c.ns = by_scale(scale, tiny=(200,), quick=(200, 800, 3200), full=(100, 200, 400, 800, 1600, 3200))
    c.trials = by_scale(scale, tiny=2, quick=5, full=20)
    return c
