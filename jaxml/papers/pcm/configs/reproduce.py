"""PCM at one scale: recovery, scaling, real data, the VerbalAggression table and mixtures
(experiment `pcm/reproduce`), with the paper's claims and verdicts.

Runbook:
    python scripts/reproduce.py --papers=pcm --scale=quick
    python scripts/run.py --config=jaxml/papers/pcm/configs/reproduce.py:quick --workdir=/tmp/pcm_reproduce
Tiny (tests) runs the recovery part only; what quick stands for is in jaxml/papers/pcm/README.md. The mixture
part runs both EM modes on the simulated mixture only (`mixture:sim_only`; the real data sets are in the
mixture experiment's own runs), to keep the quick run within its time budget.
"""

from jaxml.core.config import reproduce_config

PARTS = ("recovery", "scaling", "real", "verbal_table", "mixture:sim_only")


def get_config(arg=None):
    return reproduce_config("pcm", arg, tiny=("recovery",), quick=PARTS, full=PARTS)
