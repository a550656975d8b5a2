"""The equivalence checker on 50 hand-made variants of 10 Book I statements (experiment `euclid/variants`).

Runbook:
    python scripts/run.py --config=jaxml/papers/euclid/configs/variants.py --workdir=/tmp/euclid_variants
CPU only (z3), seconds. Metric: accuracy of the category per variant kind (renamed, reordered ->
equivalent; dropped hypothesis -> test_implies_ground; weakened conclusion -> ground_implies_test;
unrelated -> neither). Quick: the 25 variants of the five statements with at most 3 points; tiny: I.1 and I.5.
"""

import ml_collections

from jaxml.core.config import by_scale, experiment_config


def get_config(arg=None) -> ml_collections.ConfigDict:
    c, scale = experiment_config("euclid/variants", arg, timeout_s=15.0)
    c.scale = scale
    c.names = by_scale(scale, tiny=("I.1", "I.5"), quick=("I.1", "I.5", "I.6", "I.18", "I.47"), full=())  # () = all 10
    return c
