"""Fuzzing the statement language (issue 16): no input crashes the parser, printer or solver.

For every text, from a grammar of well-formed statements, from token soup and from mutations of the
Book I statements: parsing returns a Statement or raises EuclidSyntaxError (never another exception,
never a RecursionError); a parsed statement prints to a text that parses back to an equal statement
(and prints the same again); a small one gets a Verdict from `hypotheses_satisfiable`. Runs are
reproducible (`derandomize=True`); the default suite draws a few hundred texts, `-m slow` thousands.
"""

import functools

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from jaxml.papers.euclid import book
from jaxml.papers.euclid import syntax as S
from jaxml.papers.euclid import system_e as E

OBJECTS = {"Point": ["a", "b", "c", "d", "p'", "x1"], "Line": ["L", "M"], "Circle": ["α", "β"]}


def _settings(n: int):
    return settings(max_examples=n, deadline=None, derandomize=True, database=None, print_blob=True,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                           HealthCheck.filter_too_much])


# ---- A grammar of well-formed statements (as text).

NUMBERS = st.one_of(
    st.integers(0, 10 ** 30).map(str),
    st.tuples(st.integers(0, 10 ** 6), st.integers(0, 10 ** 6)).map(lambda t: f"{t[0]}.{t[1]}"),
    st.sampled_from(["0", "1", "2", "90", "0.5", "007", "1.50", "9007199254740993", "100000000000000000000000",
                     "0.1", "3.14159265358979323846264338327950288"]),
)


def _pick(draw, sort, scope):
    return draw(st.sampled_from(scope[sort]))


@st.composite
def terms(draw, scope, depth=0):
    pts = scope["Point"]
    choices = ["number", "right"] + (["length", "angle", "area"] if pts else [])
    if depth < 3:
        choices += ["sum", "coef", "prod", "paren"]
    kind = draw(st.sampled_from(choices))
    if kind == "number":
        return draw(NUMBERS)
    if kind == "right":
        return "right"
    if kind == "length":
        return f"|{draw(st.sampled_from(pts))} {draw(st.sampled_from(pts))}|"
    if kind in ("angle", "area"):
        a, b, c = (draw(st.sampled_from(pts)) for _ in range(3))
        return f"{draw(st.sampled_from([kind, '∠'] if kind == 'angle' else [kind]))}({a}, {b}, {c})"
    if kind == "sum":
        return f"{draw(terms(scope, depth + 1))} + {draw(terms(scope, depth + 1))}"
    if kind == "coef":
        return f"{draw(NUMBERS)} * {draw(terms(scope, depth + 1))}"
    if kind == "prod":
        return f"({draw(terms(scope, depth + 1))}) * ({draw(terms(scope, depth + 1))})"
    return f"({draw(terms(scope, depth + 1))})"


@st.composite
def atoms(draw, scope):
    kinds = ["cmp"]
    preds = [name for name, sig in S.PREDICATES.items() if all(scope[s] for s in sig)]
    if preds:
        kinds.append("pred")
    if any(scope.values()):
        kinds.append("eq")
    kind = draw(st.sampled_from(kinds))
    if kind == "pred":
        name = draw(st.sampled_from(preds))
        return f"{name}({', '.join(_pick(draw, s, scope) for s in S.PREDICATES[name])})"
    if kind == "eq":
        sort = draw(st.sampled_from([s for s in S.SORTS if scope[s]]))
        return f"{_pick(draw, sort, scope)} {draw(st.sampled_from(['=', '!=', '≠']))} {_pick(draw, sort, scope)}"
    op = draw(st.sampled_from(list(S.COMPARISONS) + ["≤", "≥", "≠"]))
    return f"{draw(terms(scope))} {op} {draw(terms(scope))}"


@st.composite
def formulas(draw, scope, depth=0):
    kind = draw(st.sampled_from(["atom", "atom"] + (["not", "paren", "and", "or"] if depth < 4 else [])))
    if kind == "atom":
        return draw(atoms(scope))
    if kind == "not":
        return f"{draw(st.sampled_from(['not ', '¬']))}{draw(formulas(scope, depth + 1))}"
    if kind == "paren":
        return f"({draw(formulas(scope, depth + 1))})"
    word = draw(st.sampled_from(["and", "∧"] if kind == "and" else ["or", "∨"]))
    return f"({draw(formulas(scope, depth + 1))} {word} {draw(formulas(scope, depth + 1))})"


@st.composite
def binders(draw, names_by_sort):
    groups = [f"({' '.join(ns)} : {sort})" for sort, ns in names_by_sort.items() if ns]
    return " ".join(draw(st.permutations(groups)))


@st.composite
def statements(draw):
    """(text, small): a well-formed, well-sorted statement; small when it has few objects."""
    universal = {s: draw(st.lists(st.sampled_from(OBJECTS[s]), unique=True, max_size=3 if s == "Point" else 1))
                 for s in S.SORTS}
    rest = {s: [n for n in OBJECTS[s] if n not in universal[s]] for s in S.SORTS}
    existential = {s: draw(st.lists(st.sampled_from(rest[s]), unique=True, max_size=2)) if rest[s] else []
                   for s in S.SORTS}
    both = {s: universal[s] + existential[s] for s in S.SORTS}
    parts = []
    if any(universal.values()):
        parts.append(f"{draw(st.sampled_from(['forall', '∀']))} {draw(binders(universal))},")
    if draw(st.booleans()):
        hyps = draw(st.lists(formulas(universal), min_size=1, max_size=3))
        parts.append(" and ".join(hyps) + f" {draw(st.sampled_from(['=>', '⇒', '→']))}")
    scope = universal
    if any(existential.values()):
        parts.append(f"{draw(st.sampled_from(['exists', '∃']))} {draw(binders(existential))},")
        scope = both
    parts.append(" and ".join(draw(st.lists(formulas(scope), min_size=1, max_size=3))))
    text = " ".join(parts)
    if draw(st.booleans()):
        text = f"{draw(st.sampled_from(['theorem', 'axiom', 'rule']))} T.{draw(st.integers(0, 99))} \"fuzz\": {text}"
    return text, sum(map(len, universal.values())) <= 4


# ---- Malformed texts: token soup and mutations of Book I.

TOKENS = (["forall", "exists", "and", "or", "not", "=>", ",", "(", ")", "|", ":", "=", "!=", "<", "<=", ">",
           ">=", "+", "*", "[", "]", "theorem", "axiom", "proof", "qed", "right", "angle", "area", "Point",
           "Line", "Circle", "∀", "∃", "¬", "≠", "⇒", "∠", '"text"', "#c\n", "\n", "1e23", "2.5", "0", "12",
           "$", ".", "-", "1.", "e5", "I.1", "on_line", "between", "triangle", "same_side", "foo"]
          + [n for ns in OBJECTS.values() for n in ns])
SOUP = st.lists(st.sampled_from(TOKENS), max_size=40).map(" ".join)


@functools.lru_cache(maxsize=None)
def _book_texts() -> tuple:
    return tuple(S.format_statement(s) for s in book.statements().values())


@st.composite
def mutations(draw):
    """A Book I statement with a few random edits: delete, duplicate or swap a span, insert a token or
    a random character."""
    text = draw(st.sampled_from(_book_texts()))
    for _ in range(draw(st.integers(1, 4))):
        i = draw(st.integers(0, len(text)))
        j = draw(st.integers(i, min(len(text), i + 12)))
        edit = draw(st.sampled_from(["delete", "duplicate", "token", "char", "swap"]))
        if edit == "delete":
            text = text[:i] + text[j:]
        elif edit == "duplicate":
            text = text[:j] + text[i:j] + text[j:]
        elif edit == "token":
            text = text[:i] + f" {draw(st.sampled_from(TOKENS))} " + text[i:]
        elif edit == "char":
            text = text[:i] + draw(st.characters(codec="utf-8")) + text[i:]
        else:
            k = draw(st.integers(j, min(len(text), j + 12)))
            text = text[:i] + text[j:k] + text[i:j] + text[k:]
    return text


@st.composite
def deep(draw):
    """A formula wrapped in parentheses and `not`s around the nesting limit."""
    n = draw(st.integers(S.MAX_NESTING - 3, S.MAX_NESTING + 3))
    wraps = draw(st.lists(st.sampled_from(["(", "not ", "not (", "¬"]), min_size=n, max_size=n))
    inner = draw(st.sampled_from(["a = b", "|a b| < 0", "between(a, b, a)", "(|a b| + 1) * 2 = 0"]))
    text = inner
    for w in reversed(wraps):
        text = w + text + (")" if w.endswith("(") else "")
    return "forall (a b : Point), " + text


# ---- The properties.

def _check(text: str) -> S.Statement | None:
    """Parses `text`; a syntax error is fine, any other exception fails. A statement must round-trip."""
    try:
        statement = S.parse_statement(text)
    except S.EuclidSyntaxError as e:
        assert e.line >= 1 and e.column >= 1 and str(e)
        return None
    printed = S.format_statement(statement)
    again = S.parse_statement(printed)
    assert again == statement, (text, printed)
    assert (again.kind, again.name, again.text) == (statement.kind, statement.name, statement.text)
    assert S.format_statement(again) == printed
    return statement


def _check_formula_and_file(text: str) -> None:
    for parse in (lambda t: S.parse_formula(t, {"a": "Point", "b": "Point", "L": "Line", "α": "Circle"}),
                  S.parse_file):
        try:
            parse(text)
        except S.EuclidSyntaxError:
            pass


def _grammar_case(case) -> None:
    text, _ = case
    assert _check(text) is not None, text            # well-formed by construction: it must parse


def _malformed_case(text) -> None:
    _check(text)
    _check_formula_and_file(text)


@_settings(300)
@given(statements())
def test_grammar_statements_parse_and_round_trip(case):
    _grammar_case(case)


@_settings(200)
@given(st.one_of(SOUP, mutations(), deep()))
def test_malformed_and_mutated_texts_never_crash(text):
    _malformed_case(text)


def _verdict_case(case) -> None:
    text, small = case
    statement = _check(text)
    if small:
        verdict = E.hypotheses_satisfiable(statement, timeout_s=1)
        assert verdict.status in ("sat", "unsat", "timeout")
        # the instance bound computed before building is an upper bound, with the on_line restriction too
        goal = S.And(statement.conclusions) if statement.existentials == () else None
        ctx = E.statement_context(statement, budget=0)
        extra = [goal] if goal is not None else []
        assert len(ctx.instance_keys(extra)) <= ctx.instance_bound(extra)


@_settings(25)
@given(statements())
def test_small_statements_get_a_verdict(case):
    _verdict_case(case)


@pytest.mark.slow
@_settings(5000)
@given(statements())
def test_grammar_statements_sweep(case):
    _grammar_case(case)


@pytest.mark.slow
@_settings(5000)
@given(st.one_of(SOUP, mutations(), deep(), st.text(max_size=200)))
def test_malformed_texts_sweep(text):
    _malformed_case(text)


@pytest.mark.slow
@_settings(400)
@given(statements())
def test_small_statements_verdict_sweep(case):
    _verdict_case(case)
