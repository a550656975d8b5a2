"""The proof checker cannot be fooled: what a verdict rests on, names, steps after case splits,
contradictory hypotheses (issue 16)."""

import pytest

from jaxml.papers.euclid import book, checker
from jaxml.papers.euclid import syntax as S

# L is false (between(a, b, a) never holds) and has no proof; F's proof fails; A is a user axiom.
# M is proved from L, N from M and P, Q from A; P and R are proved from E alone.
TAINTED = """\
theorem L: forall (a b : Point), a != b => between(a, b, a)

theorem P: forall (a b : Point), a != b => b != a
proof
qed

theorem M: forall (a b : Point), a != b => between(a, b, a)
proof
  apply L(a, b)
qed

theorem N: forall (a b : Point), a != b => between(b, a, b) and a != b
proof
  apply P(a, b)
  apply M(b, a)
qed

theorem F: forall (a b : Point), a != b => between(a, b, a)
proof
qed

theorem G: forall (a b : Point), a != b => between(a, b, a)
proof
  apply F(a, b)
qed

axiom A: forall (a b : Point), a = b

theorem Q: forall (a b : Point), a = b
proof
  apply A(a, b)
qed

theorem R: forall (a b : Point), a != b => |a b| = |b a|
proof
  apply P(a, b)
qed
"""


def test_verdicts_list_the_unproved_statements_they_rest_on():
    results = {r.name: r for r in checker.check_text(TAINTED)}
    assert list(results) == ["P", "M", "N", "F", "G", "Q", "R"]
    summary = {n: (r.ok, r.uses, r.assumptions, r.verified, r.status) for n, r in results.items()}
    assert summary == {
        "P": (True, (), (), True, "verified"),
        "M": (True, ("L",), ("L",), False, "conditional"),          # L has no proof
        "N": (True, ("P", "M"), ("L",), False, "conditional"),      # through M (proved, but from L)
        "F": (False, (), (), False, "failed"),
        "G": (True, ("F",), ("F",), False, "conditional"),          # F's proof failed
        "Q": (True, ("A",), ("A",), False, "conditional"),          # a user axiom
        "R": (True, ("P",), (), True, "verified"),
    }
    # A statement the caller passes in is trusted as checked.
    src = "theorem T: forall (a b : Point), a != b => between(a, b, a)\nproof\n  apply L(a, b)\nqed\n"
    lib = {"L": S.parse_statement(TAINTED.split("\n\n")[0])}
    [t] = checker.check_text(src, library=lib)
    assert (t.ok, t.uses, t.assumptions, t.verified) == (True, ("L",), (), True)


def test_a_proof_may_not_apply_the_theorem_it_proves():
    st = S.parse_statement("theorem T: forall (a b : Point), a != b => between(a, b, a)")
    c = checker.Checker({"T": st})
    [item] = S.parse_file("theorem T: forall (a b : Point), a != b => between(a, b, a)\n"
                          "proof\n  apply T(a, b)\nqed\n")
    result = c.check(item.statement, item.proof)
    assert not result.ok and "may not apply T itself" in result.failure


@pytest.mark.parametrize("src, words", [
    ("theorem T: forall (a : Point), a = a\n\ntheorem U: forall (a : Point), a = a\n\n"
     "theorem T: forall (a b : Point), a = a\nproof\nqed\n",
     ["theorem 'T' at line 5", "line 1"]),
    ("axiom T: forall (a : Point), a = a\ntheorem T: forall (a : Point), a = a\n",
     ["theorem 'T' at line 2", "axiom at line 1"]),
    ("theorem sss: forall (a : Point), a = a\nproof\nqed\n",
     ["theorem 'sss' at line 1", "rule of system E", "RULES_SOURCE"]),
])
def test_duplicate_names_are_errors(src, words):
    with pytest.raises(checker.DuplicateNameError) as e:
        checker.check_text(src)
    for w in words:
        assert w in str(e.value), (w, str(e.value))


def test_duplicate_names_against_the_library_are_errors():
    st = S.parse_statement("forall (a : Point), a = a", name="circle")
    with pytest.raises(checker.DuplicateNameError, match="rule of system E"):
        checker.Checker({"circle": st})
    with pytest.raises(checker.DuplicateNameError, match="'T' at line 1 .*already in the library"):
        checker.check_text("theorem T: forall (a : Point), a = a\n",
                           library={"T": S.parse_statement("forall (a : Point), a = a", name="T")})
    c = checker.Checker()
    c.add(S.parse_statement("theorem T: forall (a : Point), a = a"))
    with pytest.raises(checker.DuplicateNameError):
        c.add(S.parse_statement("theorem T: forall (a : Point), a = a"))
    with pytest.raises(TypeError):
        c.library["U"] = st                       # read-only: statements enter through add()
    # A verdict vouches only for the statement it was checked for.
    [item] = S.parse_file("theorem V: forall (a : Point), a = a\nproof\nqed\n")
    ok = c.check(item.statement, item.proof)
    with pytest.raises(ValueError, match="the result is for 'V'"):
        c.add(S.parse_statement("theorem V: forall (a b : Point), a = b"), ok)


def test_book_rejects_duplicate_names(tmp_path, monkeypatch):
    text = book.BOOK1_PATH.read_text()
    path = tmp_path / "book1.e"
    path.write_text(text + "\ntheorem I.1: forall (a : Point), a = a\n")
    monkeypatch.setattr(book, "BOOK1_PATH", path)
    book.book1.cache_clear()
    try:
        with pytest.raises(checker.DuplicateNameError) as e:
            book.check_book(names=[], check_sat=False, check_proofs=False)
        first = next(i for i, l in enumerate(text.splitlines(), 1) if l.startswith("theorem I.1 "))
        again = len((text + "\n").splitlines()) + 1
        assert f"theorem 'I.1' at line {again}" in str(e.value), str(e.value)
        assert f"theorem at line {first}" in str(e.value) and str(book.BOOK1_PATH) in str(e.value)
    finally:
        book.book1.cache_clear()


# Hand count of the obligations: `cases` 1 (exhaustive); branch a = c: `have c != b` 1, then the two
# steps after `end` 1 each and the conclusion 1; branch a != c: the two steps and the conclusion.
CASES = """\
theorem T: forall (a b c : Point), a != b => |a b| = |b a|
proof
  cases
  case a = c:
    have c != b
  case a != c:
  end
  have |a b| = |b a|
  have b != a
qed
"""


def test_steps_after_cases_run_in_every_branch():
    [r] = checker.check_text(CASES)
    assert r.ok, r.failure
    per_line = {}
    for s in r.steps:
        per_line[s.where] = per_line.get(s.where, 0) + 1
    assert per_line == {"line 3, column 3": 1, "line 5, column 5": 1, "line 8, column 3": 2,
                        "line 9, column 3": 2, "end of proof": 2}
    assert [s.case for s in r.steps] == ["", "a = c", "a = c", "a = c", "a = c", "a != c", "a != c", "a != c"]


def test_a_false_step_after_cases_fails():
    [r] = checker.check_text(CASES.replace("  have b != a\n", "  have between(a, b, c)\n"))
    assert not r.ok
    assert r.failure.startswith("T, line 9, column 3 (case a = c): `have between(a, b, c)` failed: not entailed")


def test_steps_after_nested_cases_continue_the_inner_and_outer_branches():
    src = ("theorem T: forall (a b c : Point), a != b => a != b\nproof\n"
           "  cases\n  case a = c:\n    cases\n    case b = c:\n    case b != c:\n    end\n    have c != b\n"
           "  case a != c:\n  end\n  have b != a\nqed\n")
    [r] = checker.check_text(src)
    assert r.ok, r.failure
    # outer split 1; inner split 1; `have c != b` in both inner branches 2; `have b != a` in three
    # leaves 3; the conclusion in three leaves 3.
    assert len(r.steps) == 10
    assert sorted({s.case for s in r.steps}) == ["", "a != c", "a = c", "a = c; b != c", "a = c; b = c"]
    bad = src.replace("    have c != b\n", "    have c = b\n")
    [r] = checker.check_text(bad)
    assert not r.ok and r.failure.startswith("T, line 9, column 5 (case a = c; b != c): `have c = b` failed")


CONTRADICTORY = ("theorem T: forall (a b c : Point), between(a, b, c) and between(b, a, c) => between(a, c, b)\n"
                 "proof\nqed\n")


def test_contradictory_hypotheses_are_reported():
    [r] = checker.check_text(CONTRADICTORY)
    assert r.ok and r.verified                        # a vacuous theorem is still a theorem ...
    assert r.hypotheses.status == "unsat"
    assert r.hypotheses.core == ("hypothesis 1: between(a, b, c)", "hypothesis 2: between(b, a, c)")
    [w] = r.warnings                                  # ... but the user is told
    assert w.startswith("the hypotheses are contradictory") and "hypothesis 2: between(b, a, c)" in w
    [s] = checker.check_text(CONTRADICTORY, strict=True)
    assert not s.ok and s.failure == "T: " + w and [x.status for x in s.steps] == ["ok"]
    # The query may come later (check_text and check_book run them after all the proofs), once.
    [item] = S.parse_file(CONTRADICTORY)
    c = checker.Checker()
    later = c.check(item.statement, item.proof, hypotheses=False)
    assert later.ok and later.hypotheses is None and later.warnings == []
    assert c.check_hypotheses(later) is later and later.warnings == [w] and later.ok
    with pytest.raises(ValueError, match="already checked"):
        c.check_hypotheses(later)
    with pytest.raises(ValueError, match="under strict"):
        checker.Checker(strict=True).check(item.statement, item.proof, hypotheses=False)
    [good] = checker.check_text(CONTRADICTORY.replace("between(b, a, c)", "a != c").replace(
        "between(a, c, b)", "a != b"), strict=True)
    assert good.ok and good.warnings == [] and good.hypotheses.status == "sat"


def test_consistency_timeout_is_a_warning():
    [r] = checker.check_text(CONTRADICTORY, rlimit=1, strict=True)
    assert r.hypotheses.status == "timeout"
    assert any(w.startswith("the consistency of the hypotheses is unknown") for w in r.warnings)
    assert not r.ok and r.timed_out          # the goal's query runs out of budget too, and fails


def test_checker_passes_the_instance_limit_to_its_contexts():
    """A proof whose context would need more ground instances than `max_instances` fails as a
    timeout naming the limit (no instance is built), and its hypotheses check is a warning."""
    from jaxml.papers.euclid import checker as C
    from jaxml.papers.euclid import syntax as S
    st = S.parse_statement("forall (a b c : Point), between(a, b, c) => between(c, b, a)", name="T")
    ok = C.Checker().check(st, ())
    assert ok.verified
    small = C.Checker(max_instances=10).check(st, ())
    assert not small.ok and small.timed_out and "above the limit 10 (max_instances)" in small.failure, small.failure
    assert any("timeout" in w or "gave up" in w or "limit" in w for w in small.warnings), small.warnings
