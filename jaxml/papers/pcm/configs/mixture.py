"""Mixtures of PCMs by spectral EM (experiment `pcm/mixture`), both EM modes side by side.

Runbook:
    python scripts/run.py --config=jaxml/papers/pcm/configs/mixture.py --workdir=/tmp/pcm_mixture
    (--config.mode=quadrature or =official for one mode; default "both")
    python scripts/run.py --config=jaxml/papers/pcm/configs/mixture.py:quick --workdir=/tmp/pcm_mixture_quick
Arg keys: mode=quadrature|official|both; sim_only (no real data: the `reproduce` part "mixture:sim_only").
Simulated: 2 components (thresholds ~ N(0,1) each), 20 items, L = 2, 3000 users per component; fits C = 1..4,
held-out users' mean log-likelihood picks C. Real: VerbalAggression, ConspiracistBeliefs2016, MathExam14W, 20% of
users held out. Quick: 2000 users per component, C = 1..3; tiny: 6 items, 200 users per component, C = 1, 2,
no real data.
Modes (`mixture.spectral_em(mode=...)`): "quadrature" (ours: theta integrated out, mixing weights estimated) and
"official" (the release's E-step with plug-in ability MLEs and no weights, its location step on a 500-point grid,
its q^2-weighted counts).
Metric: per-threshold RMSE after the best component permutation, assignment accuracy, held-out log-lik; the table
is mixture.md in the workdir; the numbers are in jaxml/papers/pcm/README.md.
"""

from jaxml.core.config import by_scale, experiment_config

REAL = ("verbal_aggression", "conspiracist_beliefs", "math_exam")


def get_config(arg=None):
    c, scale = experiment_config("pcm/mixture", arg, mode="both", sim_only=False)   # mode: see above
    c.scale = scale
    c.true_components = 2
    c.n_items = by_scale(scale, tiny=6, quick=20, full=20)
    c.n_levels = 2
    c.n_per_component = by_scale(scale, tiny=200, quick=2000, full=3000)
    c.components = by_scale(scale, tiny=(1, 2), quick=(1, 2, 3), full=(1, 2, 3, 4))
    c.real_datasets = () if c.sim_only else by_scale(scale, tiny=(), quick=REAL, full=REAL)
    return c
