"""aitext at one scale: the known-alpha validation on the shipped generated corpus (experiment
`aitext/reproduce`).

Runbook:
    python scripts/reproduce.py --papers=aitext --scale=quick
    python scripts/run.py --config=jaxml/papers/aitext/configs/reproduce.py:quick --workdir=/tmp/aitext_reproduce
"""

from jaxml.core.config import reproduce_config


def get_config(arg=None):
    return reproduce_config("aitext", arg,
                            tiny=('validate',),
                            quick=('validate',),
                            full=('validate',))
