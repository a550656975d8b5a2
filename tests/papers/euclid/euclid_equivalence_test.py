import pytest

from jaxml.papers.euclid import book, equivalence, variants
from jaxml.papers.euclid import syntax as S

I5 = "forall (a b c : Point), triangle(a, b, c) and |a b| = |a c| => angle(a, b, c) = angle(a, c, b)"


@pytest.mark.parametrize("test, expected", [
    ("forall (q p r : Point), triangle(p, q, r) and |p q| = |p r| => angle(p, q, r) = angle(p, r, q)", "equivalent"),
    ("forall (a b c : Point), |a c| = |a b| and triangle(a, b, c) => angle(a, c, b) = angle(a, b, c)", "equivalent"),
    # a different but equivalent wording: the base angles at c and b, the triangle listed as (b, c, a)
    ("forall (a b c : Point), triangle(b, c, a) and |a c| = |a b| => angle(b, c, a) = angle(c, b, a)", "equivalent"),
    # dropping a hypothesis makes the test stronger: it implies the ground truth, not conversely
    ("forall (a b c : Point), triangle(a, b, c) => angle(a, b, c) = angle(a, c, b)", "test_implies_ground"),
    # a weaker conclusion (or an extra hypothesis) makes the test weaker: the ground truth implies it
    ("forall (a b c : Point), triangle(a, b, c) and |a b| = |a c| => angle(a, b, c) <= angle(a, c, b)",
     "ground_implies_test"),
    ("forall (a b c : Point), triangle(a, b, c) and |a b| = |a c| and |b c| = |a b| => angle(a, b, c) = angle(a, c, b)",
     "ground_implies_test"),
    ("forall (a b c : Point), triangle(a, b, c) and |a b| = |a c| => |b c| = |a b|", "neither"),
])
def test_hand_made_variants_of_I5(test, expected):
    result = equivalence.check_equivalence(S.parse_statement(I5), S.parse_statement(test))
    assert result.category == expected, result
    assert 1 <= result.n_unifications <= 6     # the 3! bijections of three points, best first


def test_variant_set_of_I1_and_I47():
    sts = book.statements()
    vs = [v for v in variants.make_variants() if v.ground in ("I.1", "I.47")]
    assert len(vs) == 10
    for v in vs:
        assert equivalence.check_equivalence(sts[v.ground], v.statement).category == v.expected, v


@pytest.mark.slow
def test_all_50_variants():
    sts = book.statements()
    for v in variants.make_variants():
        assert equivalence.check_equivalence(sts[v.ground], v.statement).category == v.expected, v


def test_bound_variable_mismatch_is_neither_with_reason():
    g = S.parse_statement(I5)
    t = S.parse_statement("forall (a b c d : Point), triangle(a, b, c) and |a b| = |a c| => "
                          "angle(a, b, c) = angle(a, c, b)")
    r = equivalence.check_equivalence(g, t)
    assert r.category == "neither" and "bound variables differ" in r.reason and r.n_unifications == 0


def test_existential_witnesses_are_unified():
    g = book.statements()["I.1"]
    t = S.parse_statement("forall (x y : Point), x != y => exists (z : Point), |x z| = |x y| and |y z| = |y x|")
    r = equivalence.check_equivalence(g, t)
    assert r.category == "equivalent" and r.unification == {"x": "a", "y": "b", "z": "c"}


def test_timeout_is_its_own_category():
    r = equivalence.check_equivalence(S.parse_statement(I5), S.parse_statement(I5), rlimit=1)
    assert r.category == "timeout" and r.forward == "timeout"


def test_unifications_prefer_shared_atoms():
    g = S.parse_statement("forall (a b c : Point), between(a, b, c) => |a b| < |a c|")
    t = S.parse_statement("forall (x y z : Point), between(z, x, y) => |z x| < |z y|")
    first = equivalence.unifications(g, t)[0]
    assert first == {"z": "a", "x": "b", "y": "c"}
    with pytest.raises(TypeError):
        equivalence.check_equivalence(I5, I5)
