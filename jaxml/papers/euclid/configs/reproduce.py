"""Euclid at one scale: Book I benchmark, equivalence-checker variants, autoformalization
(experiment `euclid/reproduce`).

Runbook:
    python scripts/reproduce.py --papers=euclid --scale=quick
    python scripts/run.py --config=jaxml/papers/euclid/configs/reproduce.py:quick --workdir=/tmp/euclid_reproduce
Quick: 56 s of CPU (Book I: 48 statements and 15 proofs; 25 variants; SmolLM2 on 2 propositions).
"""

from jaxml.core.config import reproduce_config


def get_config(arg=None):
    return reproduce_config("euclid", arg,
                            tiny=('book', 'variants', 'autoformalize'),
                            quick=('book', 'variants', 'autoformalize'),
                            full=('book', 'variants', 'autoformalize'))
