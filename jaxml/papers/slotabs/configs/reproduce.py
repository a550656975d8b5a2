"""Slot Abstractors at one scale (experiment `slotabs/reproduce`): the slot autoencoder against the
mean image, ART's four tasks at 95 held-out shapes with the ablations, and the object-count
scaling, with the paper's claims and verdicts.

Runbook:
    python scripts/reproduce.py --papers=slotabs --scale=quick
    python scripts/run.py --config=jaxml/papers/slotabs/configs/reproduce.py:quick --workdir=/tmp/slotabs_rep
What tiny, quick and full cover, and their times, is in the parts' configs and the README.
"""

from jaxml.core.config import reproduce_config

PARTS = ("benchmark",)


def get_config(arg=None):
    # tiny: the autoencoder only (the benchmark's own tiny run is tested separately; seconds matter there)
    return reproduce_config("slotabs", arg, tiny=("autoencoder",), quick=PARTS, full=PARTS)
