"""A hand-made test set for the equivalence checker: five variants of ten Book I statements, each
with the category it must get.

  renamed      every bound variable renamed (and listed in another order)  -> equivalent
  reordered    hypotheses and conclusions in reverse order                 -> equivalent
  dropped      one essential hypothesis dropped (a stronger statement)     -> test_implies_ground
  weakened     one conclusion dropped, or `=` / `<` relaxed to `<=`         -> ground_implies_test
  unrelated    another proposition over the same objects (e.g. the converse) -> neither
"""

from __future__ import annotations

import dataclasses

from jaxml.papers.euclid import book
from jaxml.papers.euclid import syntax as S
from jaxml.papers.euclid import system_e as E

EXPECTED = {"renamed": "equivalent", "reordered": "equivalent", "dropped": "test_implies_ground",
            "weakened": "ground_implies_test", "unrelated": "neither"}

# proposition: (index of the hypothesis to drop, index of the conclusion to weaken, the unrelated one)
_PLAN = {
    "I.1": (0, 1, "I.10"),
    "I.5": (1, 0, "I.6"),
    "I.6": (1, 0, "I.5"),
    "I.16": (1, 1, "I.32"),
    "I.18": (1, 0, "I.19"),
    "I.19": (1, 0, "I.18"),
    "I.24": (4, 0, "I.25"),
    "I.26": (4, 3, "I.4"),
    "I.32": (1, 1, "I.16"),
    "I.47": (1, 0, "I.48"),
}


@dataclasses.dataclass(frozen=True)
class Variant:
    ground: str               # proposition name
    kind: str                 # a key of EXPECTED
    statement: S.Statement

    @property
    def expected(self) -> str:
        return EXPECTED[self.kind]


def _relax(f):
    """`x = y` -> `x <= y`, `x < y` -> `x <= y`."""
    if isinstance(f, S.Cmp):
        return S.Cmp("<=", f.lhs, f.rhs)
    raise ValueError(f"cannot weaken {S.format_formula(f)}")


def make_variants() -> list[Variant]:
    sts = book.statements()
    out = []
    for name, (drop, weaken, other) in _PLAN.items():
        st = sts[name]
        names = [n for n, _ in st.universals + st.existentials]
        fresh = {n: f"v{len(names) - i}" for i, n in enumerate(names)}
        renamed = S.Statement(name, tuple((fresh[n], s) for n, s in reversed(st.universals)),
                              tuple(E.substitute(h, fresh) for h in st.hypotheses),
                              tuple((fresh[n], s) for n, s in reversed(st.existentials)),
                              tuple(E.substitute(c, fresh) for c in st.conclusions))
        reordered = dataclasses.replace(st, hypotheses=st.hypotheses[::-1], conclusions=st.conclusions[::-1])
        dropped = dataclasses.replace(st, hypotheses=st.hypotheses[:drop] + st.hypotheses[drop + 1:])
        if len(st.conclusions) > 1:
            weakened = dataclasses.replace(st, conclusions=st.conclusions[:weaken] + st.conclusions[weaken + 1:])
        else:
            weakened = dataclasses.replace(st, conclusions=(_relax(st.conclusions[0]),))
        unrelated = dataclasses.replace(sts[other], name=name)
        for kind, v in (("renamed", renamed), ("reordered", reordered), ("dropped", dropped),
                        ("weakened", weakened), ("unrelated", unrelated)):
            # Round trip through the text syntax: the variants are statements a model could write.
            out.append(Variant(name, kind, S.parse_statement(S.format_statement(v, header=False), name=name)))
    return out
