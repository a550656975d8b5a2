"""Run-time scaling of the spectral estimator (experiment `pcm/scaling`), log-log slopes.

Runbook:
    python scripts/run.py --config=jaxml/papers/pcm/configs/scaling.py --workdir=/tmp/pcm_scaling
    (2 CPU cores: spectral vs n up to 204,800 users (10 items), vs m up to 320 items, MMLE/JMLE vs n up
    to 12,800, one fit of 1,000,000 users x 100 items, and one of 10M sparse ratings
    (1M users x 1000 items, 10 each), L = 3. Quick: MMLE only (JMLE's times are in pcm/recovery), m up
    to 160, 200,000 users x 100 items dense and 100,000 users sparse. Tiny: the spectral fits only, at
shapes shared with each other.)
Metric: wall time (median of `repeats` fits), fitted slope of log time on log n (and log m); the big
fit's time and memory.
"""

from jaxml.core.config import by_scale, experiment_config


def get_config(arg=None):
    c, scale = experiment_config("pcm/scaling", arg)
    c.scale = scale
    c.n_items = 10
    c.n_levels = 3
    c.repeats = by_scale(scale, tiny=1, quick=3, full=3)
    c.methods_n = by_scale(scale, tiny=("spectral",), quick=("spectral", "mmle"), full=("spectral", "mmle", "jmle"))
    c.ns = by_scale(scale, tiny=(200, 400), quick=(800, 3200, 12800), full=(800, 3200, 12800))  # every method
    c.ns_spectral = by_scale(scale, tiny=(200, 400), quick=(800, 3200, 12800, 51200, 204800),
                             full=(800, 3200, 12800, 51200, 204800))
    # tiny reuses shapes (m = 10 at n = 200, the big fit at 400 x 10): each new shape is a compilation
    c.ms = by_scale(scale, tiny=(10,), quick=(10, 40, 160), full=(10, 20, 40, 80, 160, 320))
    c.n_for_m = by_scale(scale, tiny=200, quick=10000, full=10000)
    c.big_n = by_scale(scale, tiny=400, quick=200_000, full=1_000_000)
    c.big_m = by_scale(scale, tiny=10, quick=100, full=100)
    # sparse triples: 1M users each rating 10 of 1000 items (about 10M ratings; 1% of the matrix)
    c.sparse_n = by_scale(scale, tiny=2000, quick=100_000, full=1_000_000)
    c.sparse_m = by_scale(scale, tiny=50, quick=1000, full=1000)
    c.sparse_per_user = by_scale(scale, tiny=5, quick=10, full=10)
    return c
