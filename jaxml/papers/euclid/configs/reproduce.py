"""Euclid at one scale: Book I benchmark, equivalence-checker variants, autoformalization
(experiment `euclid/reproduce`).

Runbook:
    python scripts/reproduce.py --papers=euclid --scale=quick
    python scripts/run.py --config=jaxml/papers/euclid/configs/reproduce.py:quick --workdir=/tmp/euclid_reproduce
Quick: ~3 min on a shared 2-core CPU (Book I proofs ~70 s, SmolLM2 on 8 propositions ~75 s).
"""

from jaxml.core.config import reproduce_config


def get_config(arg=None):
    return reproduce_config("euclid", arg,
                            tiny=('book', 'variants', 'autoformalize'),
                            quick=('book', 'variants', 'autoformalize'),
                            full=('book', 'variants', 'autoformalize'))
