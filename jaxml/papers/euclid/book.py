"""Euclid's Elements Book I: the 48 statements, their proofs and 30 lemmas in `data/book1.e`."""

from __future__ import annotations

import dataclasses
import functools
import pathlib
import re
import time

from jaxml.papers.euclid import checker as checker_lib
from jaxml.papers.euclid import syntax as S
from jaxml.papers.euclid import system_e as E

BOOK1_PATH = pathlib.Path(__file__).parent / "data" / "book1.e"
_PROPOSITION = re.compile(r"I\.\d+")


@functools.lru_cache(maxsize=None)
def book1() -> tuple[S.Item, ...]:
    """The items of Book I in file order: the 48 propositions and the lemmas some proofs use
    (I.10 precedes I.9: see the file). Two items with one name, or an item named like a rule of E,
    are a checker.DuplicateNameError."""
    items = tuple(S.parse_file(BOOK1_PATH.read_text()))
    checker_lib.check_names([item.statement for item in items], source=str(BOOK1_PATH))
    return items


def statements() -> dict[str, S.Statement]:
    """{'I.1': Statement, ...}: the 48 propositions in order (lemmas left out)."""
    items = {item.statement.name: item.statement for item in book1() if _PROPOSITION.fullmatch(item.statement.name)}
    return {name: items[name] for name in sorted(items, key=lambda n: int(n.split(".")[1]))}


@dataclasses.dataclass
class BookReport:
    """Satisfiability of every statement's hypotheses and the result of every proof."""
    satisfiable: dict         # name -> Verdict (status 'sat' / 'unsat' / 'timeout')
    proofs: dict              # name -> checker.ProofResult (see its `status` and `assumptions`)
    seconds: float


def check_book(*, names=None, timeout_s: float = 15.0, check_sat: bool = True, check_proofs: bool = True,
               skip_proofs=()) -> BookReport:
    """Checks the hypotheses of the statements `names` (default all) for satisfiability and every
    proof among them except `skip_proofs`; a proof may use any theorem earlier in the file. A theorem
    whose proof is not checked in this call (no proof, not in `names`, in `skip_proofs`) or fails is
    an assumption of the proofs that apply it: their results are 'conditional', not 'verified'."""
    t0 = time.perf_counter()
    wanted = set(names) if names is not None else None
    sat, proofs = {}, {}
    checker = checker_lib.Checker(timeout_s=timeout_s)
    for item in book1():
        st = item.statement
        result = None
        if (wanted is None or st.name in wanted) and check_proofs and item.proof is not None \
                and st.name not in skip_proofs:
            result = proofs[st.name] = checker.check(st, item.proof, hypotheses=False)
        checker.add(st, result)
    # Every satisfiability query after all the proofs: interleaved, they slow the proofs down (see
    # checker's module doc). The checker's query on a proof's hypotheses is the satisfiability check.
    for item in book1():
        st = item.statement
        if st.name in proofs:
            checker.check_hypotheses(proofs[st.name])
        if check_sat and (wanted is None or st.name in wanted):
            sat[st.name] = (proofs[st.name].hypotheses if st.name in proofs
                            else E.hypotheses_satisfiable(st, timeout_s=timeout_s))
    return BookReport(sat, proofs, time.perf_counter() - t0)
