"""Book I benchmark: 48 statements parsed, hypotheses checked satisfiable, the proofs of all 48
propositions and their 30 lemmas checked (experiment `euclid/book`).

Runbook:
    python scripts/run.py --config=jaxml/papers/euclid/configs/book.py --workdir=/tmp/euclid_book
CPU only (z3, one core). Full checks all 48 statements and the 78 proofs (issue 32, 2026-12-03: 48/48 and
30/30 verified, 2,233 obligations, 859.6 s of solver time, 14m23s wall on the 2 cores, the other one mostly
idle; I.24 158.2 s); quick checks all 48 statements and the proofs of I.1-I.12, a set closed under the
theorems they apply, so every one can be verified (about 45-55 s); tiny checks I.1, I.4 and I.5 (about 1 s).
Metric: propositions whose proofs are verified (checked, and resting only on verified proofs; full:
48/48), statements with satisfiable hypotheses (48/48). The paper (LeanEuclid) formalizes all 48 in Lean;
it reports no number for proof checking that we could verify.
"""

import ml_collections

from jaxml.core.config import by_scale, experiment_config

# Quick checks the proofs of I.1-I.12 only: a set closed under the theorems they apply, so every one can be
# verified; every other proof of the file is left out (the later ones rest on slow lemmas or are slow themselves).
QUICK_PROOFS = tuple(f"I.{k}" for k in range(1, 13))


def quick_skipped_proofs() -> tuple[str, ...]:
    """Every proof in data/book1.e except QUICK_PROOFS (a proof added to the file stays out of quick)."""
    from jaxml.papers.euclid import book
    return tuple(it.statement.name for it in book.book1() if it.proof is not None and it.statement.name not in QUICK_PROOFS)


def get_config(arg=None) -> ml_collections.ConfigDict:
    c, scale = experiment_config("euclid/book", arg, timeout_s=15.0)
    c.scale = scale
    c.names = by_scale(scale, tiny=("I.1", "I.4", "I.5"), quick=(), full=())      # () = all 48
    c.skip_proofs = quick_skipped_proofs() if scale == "quick" else ()
    return c
