"""Run-time scaling of the spectral estimator (experiment `pcm/scaling`), log-log slopes.

Runbook:
    python scripts/run.py --config=jaxml/papers/pcm/configs/scaling.py --workdir=/tmp/pcm_scaling
    (2 CPU cores: spectral vs n up to 204,800 users (10 items), vs m up to 320 items, MMLE/JMLE vs n up
    to 12,800, one fit of 1,000,000 users x 100 items, and one of 10M sparse ratings
    (1M users x 1000 items, 10 each), L = 3.)
Metric: wall time, fitted slope of log time on log n (and log m); the big fit's time and memory.
"""

import ml_collections

from jaxml.core.config import parse_arg, scale_of


def get_config(arg=None) -> ml_collections.ConfigDict:
    arg = parse_arg(arg, tiny=False, quick=False)
    c = ml_collections.ConfigDict()
    c.experiment = "pcm/scaling"
    c.n_items = 10
    c.n_levels = 3
    c.repeats = 3
    c.methods_n = ("spectral", "mmle", "jmle")
    c.ns = (800, 3200, 12800)                    # for every method in methods_n
    c.ns_spectral = (800, 3200, 12800, 51200, 204800)
    c.ms = (10, 20, 40, 80, 160, 320)
    c.n_for_m = 10000
    c.big_n, c.big_m = 1_000_000, 100
    # sparse triples: 1M users each rating 10 of 1000 items (about 10M ratings; 1% of the matrix)
    c.sparse_n, c.sparse_m, c.sparse_per_user = 1_000_000, 1000, 10
    scale = scale_of(arg)
    if scale == "quick":
        c.ms = (10, 40, 160)
        c.big_n = 200_000
        c.sparse_n = 100_000
    if scale == "tiny":
        c.repeats = 1
        c.methods_n = ("spectral", "mmle")
        c.ns, c.ns_spectral, c.ms, c.n_for_m = (200, 400), (200, 400), (5, 10), 300
        c.big_n, c.big_m = 2000, 20
        c.sparse_n, c.sparse_m, c.sparse_per_user = 2000, 50, 5
    return c
