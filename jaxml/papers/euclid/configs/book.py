"""Book I benchmark: 48 statements parsed, hypotheses checked satisfiable, proofs of I.1-I.20, I.22 and
I.23 checked (experiment `euclid/book`).

Runbook:
    python scripts/run.py --config=jaxml/papers/euclid/configs/book.py --workdir=/tmp/euclid_book
CPU only (z3). Full checks all 48 statements and the 22 proofs and two lemmas (~110 s on one core);
quick the same without the proof of I.23 (~70 s); tiny checks I.1 and I.5 (~1 s). Metric: propositions
whose proofs check (22/22), statements with satisfiable hypotheses (48/48).
"""

import ml_collections

from jaxml.core.config import parse_arg, scale_of


def get_config(arg=None) -> ml_collections.ConfigDict:
    arg = parse_arg(arg, tiny=False, quick=False, timeout_s=15.0)
    c = ml_collections.ConfigDict()
    c.experiment = "euclid/book"
    c.scale = scale_of(arg)
    c.timeout_s = arg.timeout_s
    c.names = ()                     # () = all 48
    c.skip_proofs = ()
    if c.scale == "quick":
        c.skip_proofs = ("I.23",)    # ~40 s of the ~100 s
    if c.scale == "tiny":
        c.names = ("I.1", "I.5")
    return c
