"""Book I benchmark: 48 statements parsed, hypotheses checked satisfiable, proofs of I.1-I.34 and I.46
checked (experiment `euclid/book`).

Runbook:
    python scripts/run.py --config=jaxml/papers/euclid/configs/book.py --workdir=/tmp/euclid_book
CPU only (z3). Full checks all 48 statements, the 35 proofs and the four lemmas (issue 32: 551.0 s of
solver time, 9m38s wall on the 2 shared cores under load 4-5; 35/35 verified, I.24 196.5 s); quick checks
all 48 statements and the proofs of I.1-I.12, a set closed under the theorems they apply, so every one
can be verified (the others rest on the slow lemmas or are slow themselves);
tiny checks I.1, I.4 and I.5 (about 1 s). Metric: propositions whose proofs are verified (checked, and
resting only on verified proofs; full: 35/35), statements with satisfiable hypotheses (48/48).
"""

import ml_collections

from jaxml.core.config import by_scale, experiment_config

# Left out at quick: the slow proofs and those that apply them (I.16-I.20 apply lemma_I16 and I.13).
# I.21, I.24-I.34 and I.46 apply them (and lemma_I23, I.29 and I.32 are among the slowest).
QUICK_SKIPPED_PROOFS = ("lemma_I13", "I.13", "I.14", "I.15", "lemma_I16", "I.16", "I.17", "I.18", "I.19", "I.20",
                        "I.21", "I.22", "I.23", "lemma_I23", "I.26", "I.27", "I.28", "I.29", "I.30", "I.31", "I.32",
                        "I.33", "I.24", "I.25", "lemma_I29", "I.34", "I.46")


def get_config(arg=None) -> ml_collections.ConfigDict:
    c, scale = experiment_config("euclid/book", arg, timeout_s=15.0)
    c.scale = scale
    c.names = by_scale(scale, tiny=("I.1", "I.4", "I.5"), quick=(), full=())      # () = all 48
    c.skip_proofs = by_scale(scale, tiny=(), quick=QUICK_SKIPPED_PROOFS, full=())
    return c
