"""StrokeNUWA at one scale (experiment `strokenuwa/reproduce`): VQ-Stroke's reconstruction and compression
and the stroke-token generator against the raw-SVG baseline, with the paper's claims and verdicts.

Runbook:
    python scripts/reproduce.py --papers=strokenuwa --scale=quick
    python scripts/run.py --config=jaxml/papers/strokenuwa/configs/reproduce.py:quick --workdir=/tmp/sn_rep
What tiny, quick and full cover, and their times, is in the parts' configs and the README.
"""

from jaxml.core.config import reproduce_config

PARTS = ("generate",)     # generate trains (or resumes) VQ-Stroke first and reports it under vq/


def get_config(arg=None):
    # tiny: VQ-Stroke only (the generation's own tiny run is tested separately; seconds matter there)
    return reproduce_config("strokenuwa", arg, tiny=("vqstroke",), quick=PARTS, full=PARTS)
