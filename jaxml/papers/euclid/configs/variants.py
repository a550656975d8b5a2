"""The equivalence checker on 50 hand-made variants of 10 Book I statements (experiment `euclid/variants`).

Runbook:
    python scripts/run.py --config=jaxml/papers/euclid/configs/variants.py --workdir=/tmp/euclid_variants
CPU only (z3), a few seconds. Metric: accuracy of the category per variant kind (renamed, reordered ->
equivalent; dropped hypothesis -> test_implies_ground; weakened conclusion -> ground_implies_test;
unrelated -> neither). Quick: the 25 variants of the five statements with at most 3 points; tiny: I.1 and I.5.
"""

import ml_collections

from jaxml.core.config import parse_arg, scale_of


def get_config(arg=None) -> ml_collections.ConfigDict:
    arg = parse_arg(arg, tiny=False, quick=False, timeout_s=15.0)
    c = ml_collections.ConfigDict()
    c.experiment = "euclid/variants"
    c.scale = scale_of(arg)
    c.timeout_s = arg.timeout_s
    c.names = ()                     # () = all 10 statements
    if c.scale == "quick":
        c.names = ("I.1", "I.5", "I.6", "I.18", "I.47")
    if c.scale == "tiny":
        c.names = ("I.1", "I.5")
    return c
