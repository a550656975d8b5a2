"""DiPmark at one scale: unbiasedness, watermark quality/detection/resilience, cost (experiment `dipmark/reproduce`).

Runbook:
    python scripts/reproduce.py --papers=dipmark --scale=quick
    python scripts/run.py --config=jaxml/papers/dipmark/configs/reproduce.py:quick --workdir=/tmp/dipmark_reproduce
Quick runs no `cost` part: the watermark part times its warm batches back to back instead.
"""

from jaxml.core.config import reproduce_config


def get_config(arg=None):
    return reproduce_config("dipmark", arg,
                            tiny=("unbiased", "watermark"),
                            quick=("unbiased", "watermark"),
                            full=("unbiased", "watermark", "cost"))
