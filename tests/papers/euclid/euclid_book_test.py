import pytest

from jaxml.papers.euclid import book
from jaxml.papers.euclid import syntax as S
from jaxml.papers.euclid import system_e as E

# Statements with at most 4 points and 1 line: seconds in all; the slow test checks all 48.
SMALL = ["I.1", "I.2", "I.3", "I.5", "I.6", "I.9", "I.10", "I.11", "I.12", "I.16", "I.17", "I.18", "I.19",
         "I.20", "I.30", "I.31", "I.32", "I.46", "I.47", "I.48"]


@pytest.mark.parametrize("name", SMALL)
def test_hypotheses_are_satisfiable(name):
    assert E.hypotheses_satisfiable(book.statements()[name]).status == "sat"


@pytest.mark.slow
def test_all_48_hypotheses_are_satisfiable():
    report = book.check_book(names=list(book.statements()), check_proofs=False)
    assert len(report.satisfiable) == 48
    assert {n: v.status for n, v in report.satisfiable.items() if v.status != "sat"} == {}


def test_a_proof_rests_on_the_theorems_not_checked_in_the_run():
    alone = book.check_book(names=["I.5"], check_sat=False).proofs["I.5"]
    assert alone.ok and alone.status == "conditional" and alone.uses == ("I.4",) and alone.assumptions == ("I.4",)
    both = book.check_book(names=["I.4", "I.5"]).proofs
    assert [both[n].status for n in ("I.4", "I.5")] == ["verified", "verified"]
    assert both["I.5"].uses == ("I.4",) and both["I.5"].hypotheses.status == "sat"


def test_playfair_i30_needs_the_parallel_axiom():
    """I.30 (lines parallel to one line are parallel) checks in one case split, and fails without the
    axiom `parallel_line_unique` (Playfair's form of the parallel postulate in E)."""
    from jaxml.papers.euclid import checker
    item = next(it for it in book.book1() if it.statement.name == "I.30")
    ok = checker.Checker().check(item.statement, item.proof, hypotheses=False)
    assert ok.verified and ok.uses == ()
    without = checker.Checker(exclude=["parallel_line_unique"]).check(item.statement, item.proof, hypotheses=False)
    assert not without.ok and "parallel(L, M)" in without.failure, without.failure


@pytest.mark.slow
def test_every_proof_of_book_1_is_verified():
    # All proofs in one run: each rests only on theorems whose proofs checked before it (I.1-I.23,
    # I.24-I.48 and 30 lemmas; see the README for the time).
    report = book.check_book(check_sat=False)
    assert len(report.proofs) == 78
    assert {n: (p.status, p.assumptions, p.failure) for n, p in report.proofs.items() if not p.verified} == {}
    assert {n: p.warnings for n, p in report.proofs.items() if p.warnings} == {}


def test_contradictory_hypotheses_are_found():
    st = S.parse_statement("forall (a b c : Point), between(a, b, c) and between(b, a, c) => a = a")
    v = E.hypotheses_satisfiable(st)
    assert v.status == "unsat" and len(v.core) == 2
    st = S.parse_statement("forall (a b c : Point), triangle(a, b, c) and |a b| + |b c| < |a c| and "
                           "between(a, b, c) => a = a")
    assert E.hypotheses_satisfiable(st).status == "unsat"


def test_every_statement_has_its_heath_text_and_binds_what_it_uses():
    for name, st in book.statements().items():
        assert len(st.text) > 20, name
        bound = dict(st.universals + st.existentials)
        for f in st.hypotheses + st.conclusions:
            S.check_sorts(f, bound, where=name)
