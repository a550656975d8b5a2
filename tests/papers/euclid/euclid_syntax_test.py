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
    assert sum(item.proof is not None for item in book.book1()) == 78     # I.1-I.48 and 30 lemmas


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


# ---- Exact numbers (issue 16): numerals are rationals, never floats.

def test_numerals_are_exact_rationals_and_print_back_exactly():
    from fractions import Fraction
    st = S.parse_statement("forall (a b : Point), |a b| = 9007199254740993 => |a b| = 9007199254740992")
    assert st.hypotheses[0].rhs == S.Num(Fraction(9007199254740993))
    assert st.hypotheses[0].rhs != st.conclusions[0].rhs          # equal as floats: 2**53 + 1 rounds to 2**53
    assert type(st.hypotheses[0].rhs.value) is Fraction
    for text in ["|a b| = 9007199254740993", "|a b| = 100000000000000000000000", "|a b| = 0.1",
                 "|a b| = 123456789.000000000000000000001", "0.3 * |a b| = 0.02 * |a b| + 2.5",
                 "|a b| = " + "9" * 400]:
        body = "forall (a b : Point), " + text
        assert S.format_statement(S.parse_statement(body), header=False) == body
    # coefficients multiply exactly: 0.1 * 3 is 0.3, not 0.30000000000000004
    st = S.parse_statement("forall (a b : Point), 0.1 * 3 * |a b| = 0.2 * 0.5 * |a b|")
    assert st.conclusions[0].lhs == S.Sum(((Fraction(3, 10), S.Length("a", "b")),))
    assert st.conclusions[0].rhs == S.Sum(((Fraction(1, 10), S.Length("a", "b")),))
    assert S.format_statement(st, header=False) == "forall (a b : Point), 0.3 * |a b| = 0.1 * |a b|"
    # a float given by hand is kept exactly (its binary value is a finite decimal)
    assert S.Num(0.5) == S.Num(Fraction(1, 2)) and S.format_term(S.Num(0.5)) == "0.5"
    assert S.format_term(S.Num(0.1)) == "0.1000000000000000055511151231257827021181583404541015625"


@pytest.mark.parametrize("text, column", [
    ("forall (a b : Point), |a b| = 1e23", 31),
    ("forall (a b : Point), |a b| = 2.5E-3 * |a b|", 31),
    ("forall (a b : Point), |a b| = 1e+23", 31),
])
def test_scientific_notation_is_rejected_with_a_clear_message(text, column):
    with pytest.raises(S.EuclidSyntaxError) as err:
        S.parse_statement(text)
    assert (err.value.line, err.value.column) == (1, column), str(err.value)
    assert "scientific notation" in str(err.value) and "decimal" in str(err.value)


def test_overlong_numbers_are_rejected():
    big = "1" * (S.MAX_NUMBER_DIGITS + 1)
    with pytest.raises(S.EuclidSyntaxError) as err:
        S.parse_statement("forall (a b : Point),\n |a b| = " + big)
    assert (err.value.line, err.value.column) == (2, 10)
    assert f"more than {S.MAX_NUMBER_DIGITS} digits" in str(err.value)
    # a product of literals within the limit can still pass it: the coefficient is checked too
    factor = "9" * 600
    with pytest.raises(S.EuclidSyntaxError) as err:
        S.parse_statement(f"forall (a b : Point), {factor} * {factor} * |a b| = 0")
    assert f"more than {S.MAX_NUMBER_DIGITS} digits" in str(err.value)


# ---- Bounded resources (issue 16): nesting depth, input size, no backtracking.

@pytest.mark.parametrize("prefix, suffix, column", [
    ("(" * 5000, "a = b" + ")" * 5000, 23 + S.MAX_NESTING),
    ("not " * 5000, "a = b", 23 + 4 * S.MAX_NESTING),
    ("(" * 5000, "|a b|" + ")" * 5000 + " = 0", 23 + S.MAX_NESTING),
    ("not (" * 2500, "a = b" + ")" * 2500, 23 + 5 * (S.MAX_NESTING // 2)),
])
def test_deep_nesting_is_a_syntax_error_not_a_crash(prefix, suffix, column):
    with pytest.raises(S.EuclidSyntaxError) as err:
        S.parse_statement("forall (a b : Point), " + prefix + suffix)
    assert f"nesting deeper than {S.MAX_NESTING}" in str(err.value)
    assert (err.value.line, err.value.column) == (1, column)


def test_nesting_up_to_the_limit_parses():
    n = S.MAX_NESTING
    for text in ["(" * n + "a = b" + ")" * n, "not " * n + "a = b", "(" * n + "|a b|" + ")" * n + " = 0",
                 "0 = " + "(" * n + "|a b| + |a b|" + ")" * n]:
        st = S.parse_statement("forall (a b : Point), " + text)
        assert S.parse_statement(S.format_statement(st)) == st


def test_parenthesised_terms_are_parsed_once_without_backtracking(monkeypatch):
    """Each '(' is read once: the parser does not first try a formula and then re-read a term."""
    calls = []
    primary = S._Parser.primary
    monkeypatch.setattr(S._Parser, "primary", lambda self: calls.append(self.i) or primary(self))
    depth = 60
    st = S.parse_statement("forall (a b : Point), " + "(" * depth + "|a b|" + ")" * depth + " = 0")
    assert st.conclusions == (S.Cmp("=", S.Length("a", "b"), S.Num(0)),)
    assert len(calls) == depth + 2 and len(set(calls)) == len(calls)   # depth parens, |a b|, 0


def test_oversized_input_is_rejected_naming_the_limit():
    with pytest.raises(S.EuclidSyntaxError) as err:
        S.parse_statement("forall (a : Point), a = a" + " " * S.MAX_SOURCE_CHARS)
    assert f"{S.MAX_SOURCE_CHARS + 25:,} characters" in str(err.value)
    assert f"limit of {S.MAX_SOURCE_CHARS:,} (MAX_SOURCE_CHARS)" in str(err.value)
    text = "forall (a : Point), a = a" + " and a = a" * (S.MAX_TOKENS // 4)
    with pytest.raises(S.EuclidSyntaxError) as err:
        S.parse_statement(text)
    assert f"more than {S.MAX_TOKENS:,} tokens (MAX_TOKENS)" in str(err.value)
    with pytest.raises(S.EuclidSyntaxError, match="MAX_TOKENS"):
        S.parse_formula(" and ".join(["a = a"] * (S.MAX_TOKENS // 4 + 1)), {"a": "Point"})
    # Book I is far below the limits
    from jaxml.papers.euclid import book as book_lib
    source = book_lib.BOOK1_PATH.read_text()
    assert len(source) < S.MAX_SOURCE_CHARS // 10 and len(S.tokenize(source)) < S.MAX_TOKENS // 10


def test_nested_products_and_negations_round_trip():
    for text in ["|a b| * (|a b| * |a b|) = 0", "(|a b| * |a b|) * |a b| = 0", "not not a = b",
                 "not not not between(a, b, a)", "not not |a b| < 0", "2 * (3 * |a b|) = 6 * (|a b|)",
                 "not (|a b| + |a b|) * |a b| < 0"]:
        st = S.parse_statement("forall (a b : Point), " + text)
        printed = S.format_statement(st)
        assert S.parse_statement(printed) == st, printed


def test_printing_nested_negations_is_linear(monkeypatch):
    """format_formula formats each subformula once (it used to format a negated subformula twice: 2**depth)."""
    calls = []
    fmt = S.format_formula
    monkeypatch.setattr(S, "format_formula", lambda f, top=True: calls.append(f) or fmt(f, top))
    depth = 12
    f = S.Pred("between", ("a", "b", "a"))
    for _ in range(depth):
        f = S.Not(f)
    assert S.format_formula(f) == "not " * depth + "between(a, b, a)"
    assert len(calls) == depth + 1
    st = S.parse_statement("forall (a b : Point), " + S.format_formula(f))
    assert st.conclusions == (f,)


def test_deeply_nested_cases_in_a_proof_are_a_syntax_error():
    head = "theorem T: forall (a : Point), a = a\nproof\n"
    src = head + "cases case a = a:\n" * 3000 + "end\n" * 3000 + "qed\n"
    with pytest.raises(S.EuclidSyntaxError) as err:
        S.parse_file(src)
    assert f"nesting deeper than {S.MAX_NESTING}" in str(err.value)
    assert (err.value.line, err.value.column) == (3 + S.MAX_NESTING, 1)
    n = S.MAX_NESTING
    (item,) = S.parse_file(head + "cases case a = a:\n" * n + "end\n" * n + "qed\n")
    assert S.parse_file(S.format_item(item)) == [item]
