import pytest

from jaxml.papers.euclid import book, checker
from jaxml.papers.euclid import syntax as S

I1 = ("theorem I.1: forall (a b : Point), a != b =>\n"
      "  exists (c : Point), |a b| = |a c| and |a b| = |b c| and c != a and c != b\n"
      "proof\n"
      "  obtain α by circle(a, b)\n"
      "  obtain β by circle(b, a)\n"
      "{steps}"
      "qed\n")


SLOW_PROOFS = ("lemma_I13", "I.13", "I.14", "I.15", "lemma_I16", "I.22", "I.23")   # 5-60 s each


@pytest.mark.parametrize("name", [f"I.{i}" for i in range(1, 21) if f"I.{i}" not in SLOW_PROOFS] + [
    pytest.param(n, marks=pytest.mark.slow) for n in SLOW_PROOFS])
def test_proofs_check(name):
    report = book.check_book(names=[name], check_sat=False)
    result = report.proofs[name]
    assert result.ok, result.failure
    assert result.steps and all(step.status == "ok" for step in result.steps)


def test_wrong_step_fails_with_a_readable_reason():
    steps = "  obtain c by intersection_circles(α, β)\n  have between(a, c, b)\n"
    [result] = checker.check_text(I1.format(steps=steps))
    assert not result.ok
    assert result.failure.startswith("I.1, line 7, column 3: `have between(a, c, b)` failed: not entailed")
    assert "`between(a, c, b)` is false" in result.failure
    # The gap z3 fills in the correct proof: the circles meet, from the centres and radii.
    [good] = checker.check_text(I1.format(steps="  obtain c by intersection_circles(α, β)\n"))
    assert good.ok
    meet = [s for s in good.steps if "circles_meet(α, β)" in s.step][0]
    assert set(meet.core) == {"line 4: obtain α by circle(a, b)", "line 5: obtain β by circle(b, a)"}


def test_missing_rule_premise_is_named():
    src = ("theorem T: forall (a b : Point) (α β : Circle), centre(a, α) and centre(b, β) =>\n"
           "  exists (c : Point), on_circle(c, α)\nproof\n  obtain c by intersection_circles(α, β)\nqed\n")
    [result] = checker.check_text(src)
    assert not result.ok and "hypothesis 1 `circles_meet(α, β)`" in result.failure


def test_conclusion_not_reached_fails_at_end_of_proof():
    [result] = checker.check_text(I1.format(steps="  have a != b\n"))
    assert not result.ok and "needs a Point named 'c'" in result.failure
    src = "theorem T: forall (a b : Point), a != b => |a b| = |b a| and between(a, b, a)\nproof\nqed\n"
    [result] = checker.check_text(src)
    assert not result.ok and "end of proof" in result.failure and "`between(a, b, a)` is false" in result.failure


@pytest.mark.parametrize("steps, words", [
    ("  obtain c by intersect_circles(α, β)\n", "did you mean intersection_circles"),
    ("  obtain c by intersection_circles(α)\n", "takes 2 arguments"),
    ("  obtain c by intersection_circles(α, a)\n", "must be a Circle; 'a' is a Point"),
    ("  obtain a by intersection_circles(α, β)\n", "'a' already names an object"),
    ("  obtain c d by intersection_circles(α, β)\n", "constructs 1 object(s)"),
    ("  have on_circle(z, α)\n", "'z' is not bound"),
])
def test_malformed_steps_fail_with_reason(steps, words):
    [result] = checker.check_text(I1.format(steps=steps))
    assert not result.ok and words in result.failure


def test_solver_budget_exhaustion_is_a_timeout_not_a_proof():
    [result] = checker.check_text(I1.format(steps="  obtain c by intersection_circles(α, β)\n"), rlimit=1)
    assert not result.ok and result.timed_out
    assert "gave up" in result.failure


def test_cases_must_be_exhaustive():
    src = ("theorem T: forall (a b c : Point), b != c => exists (l : Point), |a l| = |b c|\nproof\n"
           "  cases\n  case a = b:\n    let l = c\n  end\nqed\n")
    [result] = checker.check_text(src)
    assert not result.ok and "(exhaustive)" in result.failure
    good = src.replace("  end\n", "  case a != b:\n    obtain d by I.2(a, b, c)\n    let l = d\n  end\n")
    [ok] = checker.check_text(good, library={"I.2": book.statements()["I.2"]})
    assert ok.ok, ok.failure


def test_checker_needs_parsed_steps():
    st = S.parse_statement("forall (a : Point), a = a")
    result = checker.Checker().check(st, ("have a = a",))
    assert not result.ok and "not a proof step" in result.failure
