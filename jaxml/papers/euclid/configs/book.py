"""Book I benchmark: 48 statements parsed, hypotheses checked satisfiable, proofs of I.1-I.20, I.22 and
I.23 checked (experiment `euclid/book`).

Runbook:
    python scripts/run.py --config=jaxml/papers/euclid/configs/book.py --workdir=/tmp/euclid_book
CPU only (z3). Full checks all 48 statements, the 22 proofs and the two lemmas (about 2-3 min of z3 on one
core); quick checks all 48 statements and the 15 fastest proofs (I.1-I.8, I.11, I.12, I.16-I.20), leaving
out the nine slowest; tiny checks I.1 and I.5 (about 1 s). Metric: propositions whose proofs check
(full: 22/22), statements with satisfiable hypotheses (48/48).
"""

import ml_collections

from jaxml.core.config import by_scale, experiment_config

SLOW_PROOFS = ("I.9", "I.10", "lemma_I13", "I.13", "I.14", "I.15", "lemma_I16", "I.22", "I.23")   # the nine slowest


def get_config(arg=None) -> ml_collections.ConfigDict:
    c, scale = experiment_config("euclid/book", arg, timeout_s=15.0)
    c.scale = scale
    c.names = by_scale(scale, tiny=("I.1", "I.5"), quick=(), full=())      # () = all 48
    c.skip_proofs = by_scale(scale, tiny=(), quick=SLOW_PROOFS, full=())
    return c
