"""The statement language of system E: a readable first-order text syntax, its parser and printer.

A statement (LeanEuclid style: universally bound objects, hypotheses, existentially bound conclusions):

    theorem I.1 "On a given finite straight line to construct an equilateral triangle.":
      forall (a b : Point), a != b =>
      exists (c : Point), |a c| = |a b| and |b c| = |a b| and c != a and c != b

Grammar (EBNF; `#` starts a comment that runs to the end of the line):

    file       := item*
    item       := ('theorem' | 'axiom' | 'rule') NAME [STRING] ['[' NAME ']'] ':' statement [proof]
    statement  := ['forall' binders ','] [formula '=>'] ['exists' binders ','] formula
    binders    := ('(' NAME+ ':' SORT ')')+            SORT := Point | Line | Circle
    formula    := conj ('or' conj)*
    conj       := unary ('and' unary)*
    unary      := 'not' unary | '(' formula ')' | atom
    atom       := PRED '(' NAME (',' NAME)* ')' | term CMP term
    term       := prod ('+' prod)*
    prod       := factor ('*' factor)*          factor := NUMBER | primary
    primary    := '|' NAME NAME '|' | 'angle' '(' NAME ',' NAME ',' NAME ')'
                | 'area' '(' NAME ',' NAME ',' NAME ')' | 'right' | NUMBER | NAME | '(' term ')'
    CMP        := '=' | '!=' | '<' | '<=' | '>' | '>='
    proof      := 'proof' step* 'qed'
    step       := 'obtain' NAME+ 'by' NAME '(' [NAME (',' NAME)*] ')'
                | 'apply' NAME '(' [NAME (',' NAME)*] ')'
                | 'have' formula
                | 'let' NAME '=' NAME                  (a new name for an existing object)
                | 'cases' ('case' formula ':' step*)+ 'end'

`NAME = NAME` / `NAME != NAME` compare objects of one sort; every other comparison is between
magnitudes (segment lengths `|a b|`, angles `angle(a, b, c)` at b in degrees, with `right` = 90,
triangle areas `area(a, b, c)`). Unicode alternatives are accepted: ∀ ∃ ∧ ∨ ¬ ≠ ≤ ≥ ⇒ → ∠.
Predicates and their sorts are in `PREDICATES`; `triangle`, `opposite_sides`, `outside_circle`
and `parallel` are macros (see `system_e`).

Numbers are exact: a NUMBER is a decimal (`3`, `0.25`; no sign, no exponent: `1e23` is an error
that says to write the decimal out) and is read as a `fractions.Fraction`, as are the coefficients
of a sum (`0.1 * 3` is exactly 0.3). The printer writes every number back as its exact decimal
(products of decimals are decimals), so `format(parse(x))` reads back to an equal statement.

Errors are `EuclidSyntaxError` with the line and column of the offending token and the accepted
alternatives. The parser bounds what it reads, so no input can exhaust the stack or run for long
(each is an `EuclidSyntaxError` naming the limit):

    MAX_SOURCE_CHARS   characters of one input (Book I, `data/book1.e`: about 31,000, in 8,800 tokens)
    MAX_TOKENS         tokens of one input
    MAX_NESTING        depth of nested parentheses, `not`s and proof `cases` (Book I: 2)
    MAX_NUMBER_DIGITS  decimal digits of a number, literal or coefficient (a product of literals)

Each '(' is read once (the parser looks at the token after its matching ')' to tell a parenthesised
formula from a parenthesised term: a term is followed by a comparison, '+' or '*'), so parsing time
is linear in the input.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterator
from fractions import Fraction

SORTS = ("Point", "Line", "Circle")

# Input limits (see the module doc): far above any real statement, far below what exhausts a process.
MAX_SOURCE_CHARS = 1_000_000
MAX_TOKENS = 200_000
MAX_NESTING = 100
MAX_NUMBER_DIGITS = 1000

# name -> argument sorts. Primitive relations of E, then derived ones (expanded by system_e).
PREDICATES: dict[str, tuple[str, ...]] = {
    "on_line": ("Point", "Line"),
    "same_side": ("Point", "Point", "Line"),
    "between": ("Point", "Point", "Point"),
    "on_circle": ("Point", "Circle"),
    "inside_circle": ("Point", "Circle"),
    "centre": ("Point", "Circle"),
    "lines_meet": ("Line", "Line"),
    "line_meets_circle": ("Line", "Circle"),
    "circles_meet": ("Circle", "Circle"),
    # derived
    "opposite_sides": ("Point", "Point", "Line"),
    "outside_circle": ("Point", "Circle"),
    "triangle": ("Point", "Point", "Point"),
    "parallel": ("Line", "Line"),
}
MACROS = ("opposite_sides", "outside_circle", "triangle", "parallel")
COMPARISONS = ("=", "!=", "<", "<=", ">", ">=")
KEYWORDS = {"forall", "exists", "and", "or", "not", "theorem", "axiom", "rule", "proof", "qed", "obtain",
            "by", "apply", "have", "let", "cases", "case", "end", "angle", "area", "right"}
_UNICODE = {"∀": "forall", "∃": "exists", "∧": "and", "∨": "or", "¬": "not", "≠": "!=", "≤": "<=",
            "≥": ">=", "⇒": "=>", "→": "=>", "∠": "angle"}


class EuclidSyntaxError(ValueError):
    """A parse or sort error at `line`:`column` (1-based) of `source`."""

    def __init__(self, message: str, line: int, column: int, source: str = ""):
        self.message, self.line, self.column = message, line, column
        where = f"line {line}, column {column}: {message}"
        if source:
            lines = source.split("\n")
            text, caret = (lines[line - 1].rstrip("\r") if 0 < line <= len(lines) else ""), column - 1
            if len(text) > 100:               # a window of a long line around the column
                lo = max(0, min(caret - 50, len(text) - 100))
                text = ("..." if lo else "") + text[lo:lo + 100] + ("..." if lo + 100 < len(text) else "")
                caret = caret - lo + (3 if lo else 0)
            where += f"\n  {text}\n  {' ' * caret}^"
        super().__init__(where)


# ----------------------------------------------------------------------------------------------
# The abstract syntax. Positions are kept for messages and ignored by ==.

@dataclasses.dataclass(frozen=True)
class Length:
    a: str
    b: str


@dataclasses.dataclass(frozen=True)
class AngleOf:
    a: str
    b: str
    c: str


@dataclasses.dataclass(frozen=True)
class AreaOf:
    a: str
    b: str
    c: str


def exact(x) -> Fraction:
    """`x` (an int, float, Fraction, Decimal or decimal string) as an exact Fraction; a float is taken at
    its exact binary value. Booleans and non-finite values are a ValueError."""
    if isinstance(x, bool):
        raise ValueError(f"not a number: {x!r}")
    try:
        return x if type(x) is Fraction else Fraction(x)
    except (TypeError, ValueError, OverflowError) as e:
        raise ValueError(f"not a finite number: {x!r} ({e})") from None


@dataclasses.dataclass(frozen=True)
class Num:
    value: Fraction       # exact; an int / float / decimal string given here is converted

    def __post_init__(self):
        object.__setattr__(self, "value", exact(self.value))


@dataclasses.dataclass(frozen=True)
class Right:
    pass


@dataclasses.dataclass(frozen=True)
class Sum:
    terms: tuple          # of (coefficient: Fraction, primary term); coefficients are converted as in Num

    def __post_init__(self):
        object.__setattr__(self, "terms", tuple((exact(c), t) for c, t in self.terms))


@dataclasses.dataclass(frozen=True)
class Product:
    factors: tuple        # of terms (a product of magnitudes, e.g. the square |a b| * |a b|)


Term = Length | AngleOf | AreaOf | Num | Right | Sum | Product


@dataclasses.dataclass(frozen=True)
class Pred:
    name: str
    args: tuple[str, ...]


@dataclasses.dataclass(frozen=True)
class ObjEq:
    """`a = b` (negated: `a != b`) between two objects of one sort."""
    a: str
    b: str


@dataclasses.dataclass(frozen=True)
class Cmp:
    op: str               # one of =, <, <= (>, >= are normalised by swapping; != is Not(Cmp(=)))
    lhs: Term
    rhs: Term


@dataclasses.dataclass(frozen=True)
class Not:
    arg: "Formula"


@dataclasses.dataclass(frozen=True)
class And:
    args: tuple


@dataclasses.dataclass(frozen=True)
class Or:
    args: tuple


Formula = Pred | ObjEq | Cmp | Not | And | Or


@dataclasses.dataclass(frozen=True)
class Statement:
    """forall universals, hypotheses => exists existentials, conclusions.

    Attributes:
      name: e.g. 'I.1' or an axiom name.
      universals, existentials: tuples of (name, sort).
      hypotheses, conclusions: tuples of formulas (the top-level conjuncts).
      text: the informal statement, if given.
      kind: 'theorem', 'axiom' or 'rule'; tag: the optional [family] of an axiom.
    """
    name: str
    universals: tuple = ()
    hypotheses: tuple = ()
    existentials: tuple = ()
    conclusions: tuple = ()
    text: str = dataclasses.field(default="", compare=False)
    kind: str = dataclasses.field(default="theorem", compare=False)
    tag: str = dataclasses.field(default="", compare=False)
    line: int = dataclasses.field(default=0, compare=False)

    @property
    def sorts(self) -> dict[str, str]:
        return dict(self.universals + self.existentials)


@dataclasses.dataclass(frozen=True)
class Obtain:
    names: tuple[str, ...]
    rule: str
    args: tuple[str, ...]
    line: int = dataclasses.field(default=0, compare=False)
    column: int = dataclasses.field(default=0, compare=False)


@dataclasses.dataclass(frozen=True)
class Have:
    formula: Formula
    line: int = dataclasses.field(default=0, compare=False)
    column: int = dataclasses.field(default=0, compare=False)


@dataclasses.dataclass(frozen=True)
class Cases:
    branches: tuple       # of (formula, tuple of steps)
    line: int = dataclasses.field(default=0, compare=False)
    column: int = dataclasses.field(default=0, compare=False)


@dataclasses.dataclass(frozen=True)
class Let:
    name: str
    target: str
    line: int = dataclasses.field(default=0, compare=False)
    column: int = dataclasses.field(default=0, compare=False)


Step = Obtain | Have | Let | Cases


@dataclasses.dataclass(frozen=True)
class Item:
    """One `theorem`/`axiom`/`rule` of a file, with its proof (None when it has none)."""
    statement: Statement
    proof: tuple | None = None


# ----------------------------------------------------------------------------------------------
# Lexer.

@dataclasses.dataclass(frozen=True)
class Token:
    kind: str             # NAME, NUMBER, STRING, SYM, KW, EOF
    value: str
    line: int
    column: int


_TOKEN = re.compile(r"""
    (?P<ws>[ \t\r]+) | (?P<nl>\n) | (?P<comment>\#[^\n]*)
  | (?P<string>"[^"\n]*")
  | (?P<scientific>[0-9]+(?:\.[0-9]+)?[eE][+-]?[0-9]+)
  | (?P<number>[0-9]+(?:\.[0-9]+)?)
  | (?P<name>[A-Za-z_\u0370-\u03ff][A-Za-z0-9_'\u0370-\u03ff]*(?:\.[A-Za-z0-9_]+)*)
  | (?P<sym>=>|!=|<=|>=|[()|,:=<>+*\[\]]|[∀∃∧∨¬≠≤≥⇒→∠])
""", re.VERBOSE)


def tokenize(source: str) -> list[Token]:
    """Tokens of `source`; an unknown character is an EuclidSyntaxError at its position."""
    if not isinstance(source, str):
        raise TypeError(f"source must be a str, got {type(source).__name__}")
    if len(source) > MAX_SOURCE_CHARS:
        line = source.count("\n", 0, MAX_SOURCE_CHARS) + 1
        column = MAX_SOURCE_CHARS - (source.rfind("\n", 0, MAX_SOURCE_CHARS) + 1) + 1
        raise EuclidSyntaxError(f"the input is {len(source):,} characters long, above the limit of "
                                f"{MAX_SOURCE_CHARS:,} (MAX_SOURCE_CHARS)", line, column)
    tokens, line, start, pos = [], 1, 0, 0
    while pos < len(source):
        m = _TOKEN.match(source, pos)
        if m is None:
            raise EuclidSyntaxError(f"unexpected character {source[pos]!r}", line, pos - start + 1, source)
        kind, text, col = m.lastgroup, m.group(), pos - start + 1
        if len(tokens) >= MAX_TOKENS and kind not in ("ws", "nl", "comment"):
            raise EuclidSyntaxError(f"the input has more than {MAX_TOKENS:,} tokens (MAX_TOKENS)", line, col)
        if kind == "nl":
            line, start = line + 1, m.end()
        elif kind == "string":
            tokens.append(Token("STRING", text[1:-1], line, col))
        elif kind == "scientific":
            raise EuclidSyntaxError(f"{text!r}: numbers are written as decimals (like 100000000000000000000000 "
                                    f"or 0.0025), not in scientific notation", line, col, source)
        elif kind == "number":
            if len(text) - text.count(".") > MAX_NUMBER_DIGITS:
                raise EuclidSyntaxError(f"a number with more than {MAX_NUMBER_DIGITS} digits (MAX_NUMBER_DIGITS)",
                                        line, col, source)
            tokens.append(Token("NUMBER", text, line, col))
        elif kind == "name":
            tokens.append(Token("KW" if text in KEYWORDS else "NAME", text, line, col))
        elif kind == "sym":
            text = _UNICODE.get(text, text)
            tokens.append(Token("KW" if text in KEYWORDS else "SYM", text, line, col))
        pos = m.end()
    tokens.append(Token("EOF", "", line, pos - start + 1))
    return tokens


# ----------------------------------------------------------------------------------------------
# Parser.

class _Parser:
    def __init__(self, source: str, scope: dict[str, str] | None = None):
        self.source = source
        self.scope = scope          # {name: sort} of the bound objects; None: not checked (proof steps)
        self.tokens = tokenize(source)
        self.i = 0
        self.depth = 0              # open '(', 'not' and 'cases' around the current position (<= MAX_NESTING)
        self.close: dict[int, int] = {}    # index of a '(' token -> index of its matching ')'
        opened = []
        for i, t in enumerate(self.tokens):
            if t.kind == "SYM" and t.value == "(":
                opened.append(i)
            elif t.kind == "SYM" and t.value == ")" and opened:
                self.close[opened.pop()] = i

    # -- token helpers
    @property
    def tok(self) -> Token:
        return self.tokens[self.i]

    def error(self, message: str, tok: Token | None = None) -> EuclidSyntaxError:
        tok = tok or self.tok
        return EuclidSyntaxError(message, tok.line, tok.column, self.source)

    def _show(self, tok: Token) -> str:
        return "end of input" if tok.kind == "EOF" else repr(tok.value)

    def check_name(self, tok: Token, sort: str | None, ctx: str) -> None:
        if self.scope is None:
            return
        if tok.value not in self.scope:
            raise self.error(f"{tok.value!r} is not bound (in {ctx}); bound here: "
                             f"{', '.join(self.scope) or 'nothing'}", tok)
        if sort is not None and self.scope[tok.value] != sort:
            raise self.error(f"{tok.value!r} is a {self.scope[tok.value]} but {ctx} needs a {sort}", tok)

    def at(self, *values: str) -> bool:
        return self.tok.kind in ("SYM", "KW") and self.tok.value in values

    def expect(self, value: str, what: str = "") -> Token:
        if not self.at(value):
            raise self.error(f"expected {value!r}{' ' + what if what else ''}, found {self._show(self.tok)}")
        self.i += 1
        return self.tokens[self.i - 1]

    def enter(self, tok: Token) -> None:
        """One more level of nesting at `tok` ('(', 'not' or 'cases'); `self.depth -= 1` leaves it."""
        self.depth += 1
        if self.depth > MAX_NESTING:
            raise self.error(f"nesting deeper than {MAX_NESTING} (parentheses, 'not' and 'cases'; MAX_NESTING)", tok)

    def name(self, what: str = "a name") -> Token:
        if self.tok.kind != "NAME":
            extra = " (a keyword)" if self.tok.kind == "KW" else ""
            raise self.error(f"expected {what}, found {self._show(self.tok)}{extra}")
        self.i += 1
        return self.tokens[self.i - 1]

    # -- items
    def items(self) -> list[Item]:
        out = []
        while self.tok.kind != "EOF":
            out.append(self.item())
        return out

    def item(self) -> Item:
        if not self.at("theorem", "axiom", "rule"):
            raise self.error(f"expected 'theorem', 'axiom' or 'rule', found {self._show(self.tok)}")
        kind_tok = self.tok
        self.i += 1
        name = self.name("the name of the statement").value
        text = tag = ""
        if self.tok.kind == "STRING":
            text = self.tok.value
            self.i += 1
        if self.at("["):
            self.i += 1
            tag = self.name("a family name").value
            self.expect("]")
        self.expect(":", "after the statement's name")
        statement = self.statement(name, text=text, kind=kind_tok.value, tag=tag, line=kind_tok.line)
        proof = None
        if self.at("proof"):
            self.i += 1
            proof = self.steps(("qed",))
            self.expect("qed", "to end the proof")
        return Item(statement, proof)

    def statement(self, name: str, **meta) -> Statement:
        universals, hypotheses, existentials = (), (), ()
        start = self.tok
        if self.at("forall"):
            self.i += 1
            universals = self.binders()
            self.expect(",", "after the bound variables")
        self._bind(universals, name, start, fresh=True)
        if not self.at("exists"):
            first = self.formula()
            if self.at("=>"):
                self.i += 1
                hypotheses = _conjuncts(first)
            elif self.at("exists"):
                raise self.error("expected '=>' between the hypotheses and 'exists'")
            else:
                self.scope = None
                return Statement(name, universals, (), (), _conjuncts(first), **meta)
        if self.at("exists"):
            self.i += 1
            existentials = self.binders()
            self.expect(",", "after the bound variables")
            self._bind(existentials, name, start, fresh=False)
        conclusions = _conjuncts(self.formula())
        self.scope = None
        return Statement(name, universals, hypotheses, existentials, conclusions, **meta)

    def _bind(self, binders, name: str, start: Token, fresh: bool) -> None:
        scope = {} if fresh else dict(self.scope)
        for var, sort in binders:
            if var in scope:
                raise self.error(f"{var!r} is bound twice in {name}", start)
            scope[var] = sort
        self.scope = scope

    def binders(self) -> tuple:
        out = []
        if not self.at("("):
            raise self.error(f"expected '(' to start a binder like (a b : Point), found {self._show(self.tok)}")
        while self.at("("):
            self.i += 1
            names = [self.name("a variable name")]
            while self.tok.kind == "NAME":
                names.append(self.name())
            self.expect(":", "before the sort")
            sort = self.name(f"a sort ({', '.join(SORTS)})")
            if sort.value not in SORTS:
                raise self.error(f"unknown sort {sort.value!r}; accepted: {', '.join(SORTS)}", sort)
            self.expect(")")
            out += [(n.value, sort.value) for n in names]
        return tuple(out)

    # -- formulas
    def formula(self) -> Formula:
        args = [self.conj()]
        while self.at("or"):
            self.i += 1
            args.append(self.conj())
        return args[0] if len(args) == 1 else Or(tuple(args))

    def conj(self) -> Formula:
        args = [self.unary()]
        while self.at("and"):
            self.i += 1
            args.append(self.unary())
        return args[0] if len(args) == 1 else And(tuple(args))

    def unary(self) -> Formula:
        tok = self.tok
        if self.at("not"):
            self.enter(tok)
            self.i += 1
            out = Not(self.unary())
            self.depth -= 1
            return out
        if self.at("("):            # a parenthesised formula, or a parenthesised term in a comparison
            close = self.close.get(self.i)
            if close is not None and self.tokens[close + 1].kind == "SYM" and \
                    self.tokens[close + 1].value in (*COMPARISONS, "+", "*"):
                return self.atom()         # a parenthesised term: (|a b| + |b c|) = |a c|
            self.enter(tok)
            self.i += 1
            inner = self.formula()
            self.expect(")", "to close '('")
            self.depth -= 1
            return inner
        return self.atom()

    def atom(self) -> Formula:
        tok = self.tok
        if tok.kind == "NAME" and tok.value in PREDICATES and self.tokens[self.i + 1].value == "(":
            self.i += 2
            args = [self.name("an object name")]
            while self.at(","):
                self.i += 1
                args.append(self.name("an object name"))
            self.expect(")", f"to close {tok.value}(...)")
            want = PREDICATES[tok.value]
            if len(args) != len(want):
                raise self.error(f"{tok.value} takes {len(want)} arguments ({', '.join(want)}), "
                                 f"got {len(args)}", tok)
            for a, sort in zip(args, want):
                self.check_name(a, sort, f"{tok.value}(...)")
            return Pred(tok.value, tuple(a.value for a in args))
        if tok.kind == "NAME" and self.tokens[self.i + 1].value == "(":
            raise self.error(f"unknown predicate {tok.value!r}; accepted: {', '.join(PREDICATES)}")
        lhs = self.term()
        if not self.at(*COMPARISONS):
            raise self.error(f"expected a comparison ({' '.join(COMPARISONS)}) after a term, found "
                             f"{self._show(self.tok)}")
        op_tok = self.tok
        self.i += 1
        rhs = self.term()
        if isinstance(lhs, _NameTerm) or isinstance(rhs, _NameTerm):
            if not (isinstance(lhs, _NameTerm) and isinstance(rhs, _NameTerm)):
                bad = lhs if isinstance(lhs, _NameTerm) else rhs
                raise self.error(f"object {bad.name!r} compared with a magnitude; compare objects with "
                                 f"objects (a = b) and magnitudes with magnitudes (|a b| = |c d|)", bad.tok)
            if op_tok.value not in ("=", "!="):
                raise self.error(f"objects can only be compared with = or !=, not {op_tok.value!r}", op_tok)
            self.check_name(lhs.tok, None, "an equation")
            self.check_name(rhs.tok, None, "an equation")
            if self.scope is not None and self.scope[lhs.name] != self.scope[rhs.name]:
                raise self.error(f"{lhs.name!r} is a {self.scope[lhs.name]} and {rhs.name!r} a "
                                 f"{self.scope[rhs.name]}: objects of different sorts", lhs.tok)
            eq = ObjEq(lhs.name, rhs.name)
            return Not(eq) if op_tok.value == "!=" else eq
        op = op_tok.value
        if op == "!=":
            return Not(Cmp("=", lhs, rhs))
        if op in (">", ">="):
            op, lhs, rhs = {">": "<", ">=": "<="}[op], rhs, lhs
        return Cmp(op, lhs, rhs)

    def term(self):
        parts = [self.prod()]
        while self.at("+"):
            self.i += 1
            parts.append(self.prod())
        if len(parts) == 1:
            return parts[0]
        for p in parts:
            if isinstance(p, _NameTerm):
                raise self.error(f"object {p.name!r} cannot be added; only magnitudes can", p.tok)
        terms = []
        for p in parts:
            terms += list(p.terms) if isinstance(p, Sum) else [(Fraction(1), p)]
        return Sum(tuple(terms))

    def prod(self):
        coef, factors, first = Fraction(1), [], self.tok
        while True:
            if self.tok.kind == "NUMBER" and self.tokens[self.i + 1].value == "*":
                coef *= Fraction(self.tok.value)
                if _num_digits(coef) > MAX_NUMBER_DIGITS:
                    raise self.error(f"a coefficient with more than {MAX_NUMBER_DIGITS} digits "
                                     f"(MAX_NUMBER_DIGITS)")
                self.i += 2
                continue
            factor = self.primary()
            if isinstance(factor, _NameTerm) and (factors or coef != 1 or self.at("*")):
                raise self.error(f"object {factor.name!r} cannot be multiplied; only magnitudes can", factor.tok)
            factors.append(factor)
            if not self.at("*"):
                break
            self.i += 1
        if len(factors) == 1 and coef == 1:
            return factors[0]
        inner = factors[0] if len(factors) == 1 else Product(tuple(factors))
        if isinstance(inner, Sum):
            terms = tuple((coef * c, t) for c, t in inner.terms)
            if any(_num_digits(c) > MAX_NUMBER_DIGITS for c, _ in terms):
                raise self.error(f"a coefficient with more than {MAX_NUMBER_DIGITS} digits (MAX_NUMBER_DIGITS)",
                                 first)
            return Sum(terms)
        return Sum(((coef, inner),))

    def primary(self):
        tok = self.tok
        if self.at("|"):
            self.i += 1
            a, b = self.name("a point"), self.name("a second point (write a segment as |a b|)")
            self.expect("|", "to close the segment |a b|")
            for t in (a, b):
                self.check_name(t, "Point", "|a b|")
            return Length(a.value, b.value)
        if self.at("angle", "area"):
            self.i += 1
            self.expect("(", f"after {tok.value}")
            a = self.name("a point")
            self.expect(",")
            b = self.name("a point")
            self.expect(",")
            c = self.name("a point")
            self.expect(")", f"to close {tok.value}(a, b, c)")
            cls = AngleOf if tok.value == "angle" else AreaOf
            for t in (a, b, c):
                self.check_name(t, "Point", f"{tok.value}(a, b, c)")
            return cls(a.value, b.value, c.value)
        if self.at("right"):
            self.i += 1
            return Right()
        if tok.kind == "NUMBER":
            self.i += 1
            return Num(Fraction(tok.value))
        if tok.kind == "NAME":
            self.i += 1
            return _NameTerm(tok.value, tok)
        if self.at("("):
            self.enter(tok)
            self.i += 1
            inner = self.term()
            self.expect(")")
            self.depth -= 1
            return inner
        raise self.error(f"expected a formula or a magnitude (|a b|, angle(a, b, c), area(a, b, c), right, a "
                         f"number), found {self._show(tok)}")

    # -- proofs
    def steps(self, enders: tuple) -> tuple:
        out = []
        while not self.at(*enders):
            tok = self.tok
            if self.at("obtain"):
                self.i += 1
                names = [self.name("a name for the new object")]
                while self.tok.kind == "NAME":
                    names.append(self.name())
                self.expect("by", "after the new names")
                rule, args = self.call()
                out.append(Obtain(tuple(n.value for n in names), rule, args, tok.line, tok.column))
            elif self.at("apply"):
                self.i += 1
                rule, args = self.call()
                out.append(Obtain((), rule, args, tok.line, tok.column))
            elif self.at("have"):
                self.i += 1
                out.append(Have(self.formula(), tok.line, tok.column))
            elif self.at("let"):
                self.i += 1
                name = self.name("a new name").value
                self.expect("=", "in 'let NAME = NAME'")
                out.append(Let(name, self.name("an object name").value, tok.line, tok.column))
            elif self.at("cases"):
                self.enter(tok)
                self.i += 1
                branches = []
                while self.at("case"):
                    self.i += 1
                    f = self.formula()
                    self.expect(":", "after the case's formula")
                    branches.append((f, self.steps(("case", "end"))))
                if not branches:
                    raise self.error(f"expected 'case <formula>:' after 'cases', found {self._show(self.tok)}")
                self.expect("end", "to close 'cases'")
                self.depth -= 1
                out.append(Cases(tuple(branches), tok.line, tok.column))
            else:
                raise self.error(f"expected a proof step ('obtain', 'apply', 'have', 'let', 'cases') or "
                                 f"{' / '.join(repr(e) for e in enders)}, found {self._show(tok)}")
        return tuple(out)

    def call(self) -> tuple[str, tuple[str, ...]]:
        rule = self.name("a rule or theorem name").value
        self.expect("(", f"after {rule}")
        args = []
        if not self.at(")"):
            args.append(self.name("an object name").value)
            while self.at(","):
                self.i += 1
                args.append(self.name("an object name").value)
        self.expect(")", f"to close the arguments of {rule}")
        return rule, tuple(args)


@dataclasses.dataclass(frozen=True)
class _NameTerm:
    name: str
    tok: Token


def _conjuncts(f: Formula) -> tuple:
    return f.args if isinstance(f, And) else (f,)


# ----------------------------------------------------------------------------------------------
# Sort checking.

def objects_of(f) -> Iterator[str]:
    """The object names in a formula or term, in order of appearance (with repeats)."""
    if isinstance(f, Pred):
        yield from f.args
    elif isinstance(f, ObjEq):
        yield from (f.a, f.b)
    elif isinstance(f, Length):
        yield from (f.a, f.b)
    elif isinstance(f, (AngleOf, AreaOf)):
        yield from (f.a, f.b, f.c)
    elif isinstance(f, Cmp):
        yield from objects_of(f.lhs)
        yield from objects_of(f.rhs)
    elif isinstance(f, Sum):
        for _, t in f.terms:
            yield from objects_of(t)
    elif isinstance(f, Product):
        for t in f.factors:
            yield from objects_of(t)
    elif isinstance(f, Not):
        yield from objects_of(f.arg)
    elif isinstance(f, (And, Or)):
        for a in f.args:
            yield from objects_of(a)


def atoms_of(formulas) -> Iterator:
    """The atomic formulas (Pred, ObjEq, Cmp) of `formulas`, through and / or / not."""
    stack = list(formulas)
    while stack:
        f = stack.pop()
        if isinstance(f, (And, Or)):
            stack += list(f.args)
        elif isinstance(f, Not):
            stack.append(f.arg)
        else:
            yield f


def check_sorts(f, sorts: dict[str, str], where: str = "") -> None:
    """Raises ValueError if `f` uses an undeclared name or a name of the wrong sort."""
    err = _sort_error(f, sorts)
    if err:
        raise ValueError(f"{where}{err}")


def _sort_error(f, sorts: dict[str, str]) -> str:
    """'' if `f` is well sorted under `sorts`, else a message."""
    def want(name, sort, ctx):
        if name not in sorts:
            return f"{name!r} is not bound (in {ctx}); bound here: {', '.join(sorts) or 'nothing'}"
        if sorts[name] != sort:
            return f"{name!r} is a {sorts[name]} but {ctx} needs a {sort}"
        return ""
    if isinstance(f, Pred):
        for a, s in zip(f.args, PREDICATES[f.name]):
            if e := want(a, s, f.name):
                return e
    elif isinstance(f, ObjEq):
        for a in (f.a, f.b):
            if a not in sorts:
                return f"{a!r} is not bound (in {f.a} = {f.b}); bound here: {', '.join(sorts) or 'nothing'}"
        if sorts[f.a] != sorts[f.b]:
            return f"{f.a!r} is a {sorts[f.a]} and {f.b!r} a {sorts[f.b]}: objects of different sorts"
    elif isinstance(f, Length):
        return want(f.a, "Point", "|a b|") or want(f.b, "Point", "|a b|")
    elif isinstance(f, (AngleOf, AreaOf)):
        kind = "angle" if isinstance(f, AngleOf) else "area"
        for a in (f.a, f.b, f.c):
            if e := want(a, "Point", f"{kind}(a, b, c)"):
                return e
    elif isinstance(f, Cmp):
        return _sort_error(f.lhs, sorts) or _sort_error(f.rhs, sorts)
    elif isinstance(f, Sum):
        for _, t in f.terms:
            if e := _sort_error(t, sorts):
                return e
    elif isinstance(f, Product):
        for t in f.factors:
            if e := _sort_error(t, sorts):
                return e
    elif isinstance(f, Not):
        return _sort_error(f.arg, sorts)
    elif isinstance(f, (And, Or)):
        for a in f.args:
            if e := _sort_error(a, sorts):
                return e
    return ""


# ----------------------------------------------------------------------------------------------
# Public entry points.

def parse_file(source: str) -> list[Item]:
    """All items (theorems, axioms, rules with their proofs) of a file's text."""
    return _Parser(source).items()


def parse_statement(source: str, name: str = "statement") -> Statement:
    """One statement: either a bare `forall ... => exists ..., ...` or a full `theorem NAME: ...` item
    (a trailing proof is not allowed here)."""
    p = _Parser(source)
    if p.at("theorem", "axiom", "rule"):
        item = p.item()
        if item.proof is not None:
            raise p.error("a proof is not accepted here; give the statement alone")
        statement = item.statement
    else:
        statement = p.statement(name)
    if p.tok.kind != "EOF":
        raise p.error(f"unexpected {p._show(p.tok)} after the end of the statement")
    return statement


def parse_formula(source: str, sorts: dict[str, str]) -> Formula:
    """A formula over objects `sorts` ({name: sort})."""
    p = _Parser(source, dict(sorts))
    f = p.formula()
    if p.tok.kind != "EOF":
        raise p.error(f"unexpected {p._show(p.tok)} after the end of the formula")
    return f


# ----------------------------------------------------------------------------------------------
# Printer.

def _fmt_num(x) -> str:
    """The exact decimal text of `x` (a Fraction whose denominator divides a power of ten; an int or
    float is converted exactly): '3', '0.25', '-1.5'. A ValueError for, e.g., 1/3."""
    x = exact(x)
    sign, n, d = ("-" if x < 0 else ""), abs(x.numerator), x.denominator
    if d == 1:
        return sign + str(n)
    twos = (d & -d).bit_length() - 1
    rest, fives = d >> twos, 0
    while rest % 5 == 0:
        rest, fives = rest // 5, fives + 1
    if rest != 1:
        raise ValueError(f"{x} is not a finite decimal; the statement language writes numbers as decimals")
    k = max(twos, fives)                       # the fewest decimal places: n / d = m / 10**k
    digits = str(n * (10 ** k // d)).rjust(k + 1, "0")
    return f"{sign}{digits[:-k]}.{digits[-k:]}"


def _num_digits(x: Fraction) -> int:
    """How many decimal digits `_fmt_num(x)` writes (a number past MAX_NUMBER_DIGITS is refused)."""
    if x.denominator == 1:
        return len(str(abs(x.numerator))) if abs(x.numerator) < 10 ** (MAX_NUMBER_DIGITS + 1) \
            else MAX_NUMBER_DIGITS + 1
    try:
        return sum(ch.isdigit() for ch in _fmt_num(x))
    except ValueError:
        return MAX_NUMBER_DIGITS + 1


def format_term(t) -> str:
    if isinstance(t, Length):
        return f"|{t.a} {t.b}|"
    if isinstance(t, AngleOf):
        return f"angle({t.a}, {t.b}, {t.c})"
    if isinstance(t, AreaOf):
        return f"area({t.a}, {t.b}, {t.c})"
    if isinstance(t, Num):
        return _fmt_num(t.value)
    if isinstance(t, Right):
        return "right"
    if isinstance(t, Product):       # a number before '*' would read as a coefficient: (2) * |a b|
        return " * ".join(f"({format_term(x)})" if isinstance(x, Num) and i < len(t.factors) - 1 else _paren_term(x)
                          for i, x in enumerate(t.factors))
    if isinstance(t, Sum):
        return " + ".join(format_term(x) if c == 1 else f"{_fmt_num(c)} * {_paren_term(x)}" for c, x in t.terms)
    raise TypeError(f"not a term: {t!r}")


def _paren_term(t) -> str:
    return f"({format_term(t)})" if isinstance(t, Sum) else format_term(t)


def format_formula(f, top: bool = True) -> str:
    if isinstance(f, Pred):
        return f"{f.name}({', '.join(f.args)})"
    if isinstance(f, ObjEq):
        return f"{f.a} = {f.b}"
    if isinstance(f, Cmp):
        return f"{format_term(f.lhs)} {f.op} {format_term(f.rhs)}"
    if isinstance(f, Not):
        if isinstance(f.arg, ObjEq):
            return f"{f.arg.a} != {f.arg.b}"
        if isinstance(f.arg, Cmp) and f.arg.op == "=":
            return f"{format_term(f.arg.lhs)} != {format_term(f.arg.rhs)}"
        if isinstance(f.arg, (And, Or)):
            return f"not ({format_formula(f.arg)})"
        return f"not {format_formula(f.arg, top=False)}"       # an atom or another `not`: no parentheses
    if isinstance(f, And):
        s = " and ".join(format_formula(a, top=False) for a in f.args)
        return s if top else f"({s})"
    if isinstance(f, Or):
        s = " or ".join(format_formula(a, top=False) for a in f.args)
        return s if top else f"({s})"
    raise TypeError(f"not a formula: {f!r}")


def _format_binders(binders) -> str:
    groups: list[tuple[list[str], str]] = []
    for name, sort in binders:
        if groups and groups[-1][1] == sort:
            groups[-1][0].append(name)
        else:
            groups.append(([name], sort))
    return " ".join(f"({' '.join(ns)} : {s})" for ns, s in groups)


def format_statement(s: Statement, header: bool = True) -> str:
    """The canonical text of `s` (parses back to an equal Statement)."""
    parts = []
    if s.universals:
        parts.append(f"forall {_format_binders(s.universals)},")
    def conjunction(fs) -> str:     # a lone disjunction needs no parentheses
        top = len(fs) == 1 and isinstance(fs[0], Or)
        return " and ".join(format_formula(f, top=top) for f in fs)
    if s.hypotheses:
        parts.append(conjunction(s.hypotheses) + " =>")
    if s.existentials:
        parts.append(f"exists {_format_binders(s.existentials)},")
    parts.append(conjunction(s.conclusions) if s.conclusions else "")
    body = " ".join(p for p in parts if p)
    if not header:
        return body
    text = f' "{s.text}"' if s.text else ""
    tag = f" [{s.tag}]" if s.tag else ""
    return f"{s.kind} {s.name}{text}{tag}: {body}"


def format_step(step, indent: str = "  ") -> str:
    if isinstance(step, Obtain):
        call = f"{step.rule}({', '.join(step.args)})"
        return f"{indent}obtain {' '.join(step.names)} by {call}" if step.names else f"{indent}apply {call}"
    if isinstance(step, Have):
        return f"{indent}have {format_formula(step.formula)}"
    if isinstance(step, Let):
        return f"{indent}let {step.name} = {step.target}"
    if isinstance(step, Cases):
        lines = [f"{indent}cases"]
        for f, steps in step.branches:
            lines.append(f"{indent}case {format_formula(f)}:")
            lines += [format_step(s, indent + "  ") for s in steps]
        lines.append(f"{indent}end")
        return "\n".join(lines)
    raise TypeError(f"not a proof step: {step!r}")


def format_item(item: Item) -> str:
    out = format_statement(item.statement)
    if item.proof is not None:
        out += "\nproof\n" + "\n".join(format_step(s) for s in item.proof) + "\nqed"
    return out
