"""Prefixes of the statement language: is a string the beginning of some statement, and how to finish it.

    prefix_status("forall (a b : Point), a != b => exists (c : Po")     # 'viable'
    prefix_status("forall (a b : Point), on_line(a, b")                  # 'dead' (b is a Point, not a Line)
    prefix_status("forall (a : Point), a = a")                           # 'complete'
    completion("forall (a b : Point), |a b")                             # '| = 1'

A string is *viable* when some continuation makes it a bare statement that `syntax.parse_statement`
accepts (names bound, sorts right, arities met), *complete* when it is one already, *dead* otherwise.
This is what constrained decoding (`autoformalize.statement_processor`, `jaxml.llm.constrained.PrefixChooser`) needs: a
token is admitted only if the text stays viable, the end of the line only if it is complete.

How: `_PrefixParser` is the statement parser with two changes. (1) An error at the end of the input
("expected ..., found end of input") means the input is unfinished, not wrong: the parse needs more
tokens. An error at a real token means no continuation helps. (2) Checks that the full parser makes
late are made as soon as their token is read, so that a string the parser waits on at its end can
always be finished: each predicate argument is checked for being bound and of its sort (and the arity)
when it is read; `|`, `angle`, `area` and predicates need a bound object of the sorts they take; a
name in a term must be bound when it is read; an object compared with `=`/`!=` must be followed by an
object of its sort; an object may not be followed by `+`; names bound twice are errors at the second.
`(` whose matching `)` ends the input may open a formula or a parenthesised term: both are tried.
The last word may be unfinished (`on_li`, `Poi`, `!`, `=` of `=>`, `1.`): the string is viable if it
is, or if one of the words that can extend it (keywords, predicates, sorts, the names it binds, a
filler character) makes it viable.

The language constrained here is a slice of what `parse_statement` reads: a bare statement on one
line, without the `theorem NAME "text":` header, without `#` comments, and without parentheses around
an object name (`a = (b)`, which the full parser reads as `a = b`). Every prefix of every Book I
statement is viable and every string with an error before its end is dead (the tests check both
against the full parser).
"""

from __future__ import annotations

import functools
import re

from jaxml.papers.euclid import syntax as S

STATUSES = ("complete", "viable", "dead")

# The characters a statement may use (besides the newline that ends it).
ALPHABET = frozenset(
    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_'. \t()|,:=<>+*!"
    "∀∃∧∨¬≠≤≥⇒→∠" + "".join(chr(c) for c in range(0x370, 0x400)))
_WORD_END = re.compile(r"[A-Za-z0-9_'\u0370-\u03ff]+$")
_NAMES = re.compile(r"[A-Za-z_\u0370-\u03ff][A-Za-z0-9_'\u0370-\u03ff]*(?:\.[A-Za-z0-9_]+)*")
_FIXED_WORDS = tuple(sorted(set(S.KEYWORDS) | set(S.PREDICATES) | set(S.SORTS)))


class _EndOfInput(Exception):
    """The parse reached the end of the input wanting more: the input so far is unfinished, not wrong."""


class _PrefixParser(S._Parser):
    """The statement parser, reading a prefix: see the module doc."""

    def error(self, message: str, tok=None):
        tok = tok or self.tok
        if tok.kind == "EOF":
            return _EndOfInput(message)
        return super().error(message, tok)

    def _has(self, sort: str) -> bool:
        return self.scope is not None and sort in self.scope.values()

    def _need(self, sorts, tok, what: str) -> None:
        """Raises at `tok` unless an object of each sort in `sorts` is bound (else `what` can never be finished)."""
        for sort in sorts:
            if not self._has(sort):
                raise self.error(f"{what} needs a {sort} and none is bound", tok)

    def binders(self) -> tuple:
        bound = dict(self.scope or {})
        if not self.at("("):
            raise self.error(f"expected '(' to start a binder, found {self._show(self.tok)}")
        out = []
        while self.at("("):
            self.i += 1
            names = [self.name("a variable name")]
            while self.tok.kind == "NAME":
                names.append(self.name())
            for n in names:        # the full parser finds these after the binders, at the statement's start
                if n.value in bound:
                    raise self.error(f"{n.value!r} is bound twice", n)
                bound[n.value] = ""
            self.expect(":", "before the sort")
            sort = self.name("a sort")
            if sort.value not in S.SORTS:
                raise self.error(f"unknown sort {sort.value!r}", sort)
            self.expect(")")
            out += [(n.value, sort.value) for n in names]
        return tuple(out)

    def unary(self):
        if self.at("("):
            close = self.close.get(self.i)
            if close is not None and self.tokens[close + 1].kind == "EOF":
                # '(...)' ends the input: a parenthesised formula, or a term that a comparison will follow.
                i, depth = self.i, self.depth
                try:
                    self.enter(self.tok)
                    self.i += 1
                    inner = self.formula()
                    self.expect(")")
                    self.depth -= 1
                    return inner
                except S.EuclidSyntaxError:
                    self.i, self.depth = i, depth
                    return self.atom()
        return super().unary()

    def atom(self):
        tok = self.tok
        nxt = self.tokens[min(self.i + 1, len(self.tokens) - 1)]
        if tok.kind == "NAME" and nxt.kind == "EOF":
            # `PRED` before '(' or an object before '=': either may follow.
            if tok.value in S.PREDICATES and all(self._has(s) for s in S.PREDICATES[tok.value]):
                raise _EndOfInput("a predicate's arguments")
            if tok.value in (self.scope or {}):
                raise _EndOfInput("an equation")
            raise self.error(f"{tok.value!r} is neither a usable predicate nor a bound name", tok)
        if tok.kind == "NAME" and tok.value in S.PREDICATES and nxt.value == "(":
            want = S.PREDICATES[tok.value]
            self._need(want, tok, f"{tok.value}(...)")
            self.i += 2
            args = []
            while True:
                arg = self.name("an object name")
                self.check_name(arg, want[len(args)], f"{tok.value}(...)")
                args.append(arg.value)
                if len(args) == len(want):
                    self.expect(")", f"to close {tok.value}(...) after {len(want)} arguments")
                    return S.Pred(tok.value, tuple(args))
                self.expect(",", f"{tok.value} takes {len(want)} arguments")
        if tok.kind == "NAME" and nxt.value == "(":
            raise self.error(f"unknown predicate {tok.value!r}")
        lhs = self.term()
        if not isinstance(lhs, S._NameTerm):
            return self._compare(lhs)
        if not self.at("=", "!="):
            raise self.error(f"an object is compared with = or != only, found {self._show(self.tok)}")
        op = self.tok.value
        self.i += 1
        rhs = self.name("an object name")
        self.check_name(rhs, self.scope[lhs.name], "an equation with " + repr(lhs.name))
        if self.at("+", "*"):
            raise self.error(f"object {rhs.value!r} cannot be added or multiplied", rhs)
        eq = S.ObjEq(lhs.name, rhs.value)
        return S.Not(eq) if op == "!=" else eq

    def _compare(self, lhs):
        """The rest of `lhs CMP term` for a magnitude `lhs`, as the full parser reads it."""
        if not self.at(*S.COMPARISONS):
            raise self.error(f"expected a comparison after a term, found {self._show(self.tok)}")
        op = self.tok.value
        self.i += 1
        rhs = self.term()
        if isinstance(rhs, S._NameTerm):
            raise self.error(f"object {rhs.name!r} compared with a magnitude", rhs.tok)
        return S.Cmp(op, lhs, rhs)       # (normalising > and != does not matter here)

    def term(self):
        parts = [self.prod()]
        while self.at("+"):
            if isinstance(parts[-1], S._NameTerm):
                raise self.error(f"object {parts[-1].name!r} cannot be added", parts[-1].tok)
            self.i += 1
            parts.append(self.prod())
        if len(parts) > 1 and isinstance(parts[-1], S._NameTerm):
            raise self.error(f"object {parts[-1].name!r} cannot be added", parts[-1].tok)
        return parts[0] if len(parts) == 1 else S.Sum(tuple((1, p) for p in parts))

    def primary(self):
        tok = self.tok
        if self.at("|"):
            self._need(("Point",), tok, "|a b|")
            self.i += 1
            for what in ("a point", "a second point"):
                self.check_name(self.name(what), "Point", "|a b|")
            self.expect("|", "to close |a b|")
            return S.Right()
        if self.at("angle", "area"):
            self._need(("Point",), tok, f"{tok.value}(a, b, c)")
            self.i += 1
            self.expect("(")
            for k in range(3):
                self.check_name(self.name("a point"), "Point", f"{tok.value}(a, b, c)")
                self.expect("," if k < 2 else ")")
            return S.Right()
        if tok.kind == "NAME":
            self.check_name(tok, None, "a term")
            self.i += 1
            return S._NameTerm(tok.value, tok)
        if self.at("("):
            self.enter(tok)
            self.i += 1
            inner = self.term()
            if isinstance(inner, S._NameTerm):
                raise self.error("no parentheses around an object name here", inner.tok)
            self.expect(")")
            self.depth -= 1
            return inner
        return super().primary()


@functools.lru_cache(maxsize=65536)
def _raw_status(text: str) -> str:
    """'complete', 'viable' or 'dead' for `text` read as it stands (its last word finished)."""
    try:
        p = _PrefixParser(text)
        p.statement("prefix")
        if p.tok.kind != "EOF":
            return "dead"
        return "complete"
    except _EndOfInput:
        return "viable"
    except S.EuclidSyntaxError:
        return "dead"


def _extensions(text: str):
    """Texts that finish `text`'s last word in every way that matters for viability."""
    out = []
    if text.endswith(("!", "<", ">")):
        out.append(text + "=")
    if text.endswith("="):
        out.append(text + ">")
    if text.endswith("."):
        out += [text + "0", text + "_"]
    m = _WORD_END.search(text)
    if m:
        word = m.group()
        head = text[:m.start()]
        names = set(_NAMES.findall(head))
        for w in sorted(set(_FIXED_WORDS) | names):
            if w.startswith(word) and w != word:
                out.append(head + w)
        out.append(text + "_")            # a keyword's letters starting a longer name (`and` of `andy`)
    return out


@functools.lru_cache(maxsize=65536)
def prefix_status(text: str) -> str:
    """'complete' if `text` is a statement, 'viable' if some continuation makes it one, else 'dead'.
    One line only: a newline, '#' or '"' makes it dead."""
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__}")
    if any(ch not in ALPHABET for ch in text):
        return "dead"
    status = _raw_status(text)
    if status != "dead":
        return status
    return "viable" if any(_raw_status(t) != "dead" for t in _extensions(text)) else "dead"


# The pieces `completion` appends, in order of preference (each after a space, so that it is a token of
# its own): closers first, then the shortest way on.
_STEPS = (")", "1", "=", "|", ",", ":", "Point", "(", "=>")


def completion(text: str, max_steps: int = 400) -> str:
    """A short string that makes the viable `text` a complete statement (greedy: finish the last word,
    then add the first piece of `_STEPS`, a bound name or a fresh one that keeps it viable)."""
    if prefix_status(text) == "dead":
        raise ValueError(f"{text!r} is not a prefix of any statement; it cannot be completed")
    out = ""
    if _raw_status(text) == "dead":       # an unfinished last word
        out = next(t for t in _extensions(text) if _raw_status(t) != "dead")[len(text):]
    for _ in range(max_steps):
        cur = text + out
        if _raw_status(cur) == "complete":
            return out
        names = sorted(set(_NAMES.findall(cur)) - set(_FIXED_WORDS))
        fresh = next(f"x{k}" for k in range(len(names) + 1) if f"x{k}" not in names)
        for piece in (*_STEPS, *names, fresh):
            if _raw_status(cur + " " + piece) != "dead":
                out += " " + piece
                break
        else:
            raise RuntimeError(f"no way on from {cur!r}")   # a bug: viable prefixes always go on
    raise RuntimeError(f"{text!r}: no completion within {max_steps} steps")


def reserve(text: str) -> int:
    """An upper bound on the characters of `completion(text)` (so on its tokens): 32 plus 4 per open '('
    (the tests check it on the prefixes of Book I)."""
    return 32 + 4 * max(0, text.count("(") - text.count(")"))
