import pytest

from jaxml.papers.euclid import book, system_e
from jaxml.papers.euclid import syntax as S


def test_all_48_statements_parse_and_round_trip():
    sts = book.statements()
    assert list(sts) == [f"I.{i}" for i in range(1, 49)]
    for st in sts.values():
        assert st.text, st.name
        again = S.parse_statement(S.format_statement(st))
        assert again == st and again.text == st.text
    assert sum(item.proof is not None for item in book.book1()) == 24     # I.1-I.20, I.22, I.23, lemma_I13, lemma_I16


def test_axioms_and_rules_round_trip():
    for st in [a.statement for a in system_e.axioms()] + list(system_e.rules().values()):
        assert S.parse_statement(S.format_statement(st)) == st


def test_statement_structure_and_unicode_alternatives():
    ascii_ = S.parse_statement("forall (a b : Point) (L : Line), a != b and not on_line(a, L) => "
                               "exists (c : Point), |a c| <= |a b| + |b c| and angle(a, c, b) >= 0")
    uni = S.parse_statement("∀ (a b : Point) (L : Line), a ≠ b ∧ ¬ on_line(a, L) ⇒ "
                            "∃ (c : Point), |a c| ≤ |a b| + |b c| ∧ ∠(a, c, b) ≥ 0")
    assert ascii_ == uni
    assert ascii_.universals == (("a", "Point"), ("b", "Point"), ("L", "Line"))
    assert ascii_.existentials == (("c", "Point"),)
    assert len(ascii_.hypotheses) == 2 and len(ascii_.conclusions) == 2
    # `x >= y` is stored as `y <= x`.
    assert ascii_.conclusions[1] == S.Cmp("<=", S.Num(0.0), S.AngleOf("a", "c", "b"))


@pytest.mark.parametrize("text, line, column, words", [
    ("forall (a b : Point), a != b exists (c : Point), c = a", 1, 30, "'=>'"),
    ("forall (a : Point) (L : Line), on_line(L, a)", 1, 40, "'L' is a Line"),
    ("forall (a : Pt), a = a", 1, 13, "unknown sort 'Pt'"),
    ("forall (a b : Point),\n  foo(a, b)", 2, 3, "unknown predicate 'foo'"),
    ("forall (a b : Point), a < b", 1, 25, "objects can only be compared"),
    ("forall (a b : Point), |a b| = a", 1, 31, "compared with a magnitude"),
    ("forall (a b : Point), between(a, b)", 1, 23, "takes 3 arguments"),
    ("forall (a b : Point),\n  |a c| = |a b|", 2, 6, "'c' is not bound"),
    ("forall (a b : Point), a != b => |a b| > 0 )", 1, 43, "unexpected ')'"),
    ("forall (a b : Point), a $ b", 1, 25, "unexpected character '$'"),
])
def test_malformed_statements_report_line_and_column(text, line, column, words):
    with pytest.raises(S.EuclidSyntaxError) as err:
        S.parse_statement(text)
    assert (err.value.line, err.value.column) == (line, column), str(err.value)
    assert words in str(err.value)


def test_malformed_proofs_report_line_and_column():
    src = ("theorem T: forall (a b : Point), a != b => |a b| > 0\n"
           "proof\n"
           "  have |a b| > 0\n"
           "  show a != b\n"
           "qed\n")
    with pytest.raises(S.EuclidSyntaxError) as err:
        S.parse_file(src)
    assert (err.value.line, err.value.column) == (4, 3)
    assert "expected a proof step" in str(err.value)
    with pytest.raises(S.EuclidSyntaxError) as err:
        S.parse_file("theorem T: forall (a : Point), a = a\nproof\n  have a = a\n")
    assert err.value.line == 4 and "'qed'" in str(err.value)
    with pytest.raises(S.EuclidSyntaxError) as err:
        S.parse_file("theorem T: forall (a : Point), a = a\nproof\n  obtain L by line(a\nqed")
    assert (err.value.line, err.value.column) == (4, 1) and "')'" in str(err.value)


def test_products_and_sums_print_back():
    st = S.parse_statement("forall (a b c : Point), 2 * (|a b| + |b c|) = |a c| * |a c| + 3 * right")
    lhs = st.conclusions[0].lhs
    assert lhs == S.Sum(((2.0, S.Length("a", "b")), (2.0, S.Length("b", "c"))))
    assert S.parse_statement(S.format_statement(st, header=False)) == st
