"""DiPmark at one scale: unbiasedness, watermark quality/detection/resilience, cost (experiment `dipmark/reproduce`).

Runbook:
    python scripts/reproduce.py --papers=dipmark --scale=quick
    python scripts/run.py --config=jaxml/papers/dipmark/configs/reproduce.py:quick --workdir=/tmp/dipmark_reproduce
"""

from jaxml.core.config import reproduce_config


def get_config(arg=None):
    return reproduce_config("dipmark", arg,
                            tiny=('unbiased', 'watermark'),
                            quick=('unbiased', 'watermark', 'cost'),
                            full=('unbiased', 'watermark', 'cost'))
