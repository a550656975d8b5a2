"""An E3-style equivalence checker: is a predicted statement equivalent to the ground truth?

A statement is `forall x, H(x) => exists y, C(x, y)`. Given a unification σ of the test statement's
bound variables with the ground truth's (a sort-preserving bijection of the universals and one of
the existentials), "P implies Q" is checked as two ground z3 queries over P's objects:

  1. H_Q(σ x) entails H_P(x)                       (P's hypotheses follow from Q's), and
  2. H_Q(σ x), H_P(x), C_P(x, y) entail C_Q(σ x, σ y)   (Q's conclusions follow, with Q's witnesses
                                                    taken to be P's, through σ).

Both hold => every instance of P yields the instance of Q, so P implies Q (a sufficient check,
like E3's; with the axioms of E instantiated over the statement's objects). The categories:

  equivalent            ground => test and test => ground under one unification
  ground_implies_test   only ground => test (the test is weaker: e.g. a weakened conclusion or an
                        added hypothesis)
  test_implies_ground   only test => ground (the test is stronger: e.g. a dropped hypothesis)
  neither               no unification proves either direction (or the bound variables differ in
                        number per sort, which E3 also reports as a mismatch)
  timeout               some query was unknown and no direction was proved (never counted as a proof)

Unifications come from colour refinement of the two statements' atoms (`colour_rounds`), so the
order of the binders and the names of the variables do not matter: for statements equal up to
renaming and reordering, the first unification tried is an isomorphism. They are tried best first
(colour agreement, shared atoms, then name similarity as in E3), at most `max_unifications` (E3's
top-N), within a per-pair time budget. Bound variables that occur nowhere in a statement are
dropped before unifying (`forall x, P` is P when x is not in P) and named in the result's reason,
with E3's per-sort bound-variable deltas in `bvars`.
"""

from __future__ import annotations

import dataclasses
import difflib
import time

from jaxml.papers.euclid import syntax as S
from jaxml.papers.euclid import system_e as E

CATEGORIES = ("equivalent", "ground_implies_test", "test_implies_ground", "neither", "timeout")


@dataclasses.dataclass
class Equivalence:
    """The result of `check_equivalence`.

    Attributes:
      category: one of CATEGORIES.
      forward, backward: 'proved' / 'not_proved' / 'timeout' for ground => test and test => ground
        (the best over the unifications tried; '' when no unification exists).
      unification: {test variable: ground variable} of the deciding unification (or the first tried).
      n_unifications: how many were tried.
      solver_seconds: total z3 time (instance building included).
      reason: a readable explanation (names any unused bound variables that were dropped).
      bvars: E3's bound-variable deltas of the statements as given (`bvars_delta`).
    """
    category: str
    forward: str
    backward: str
    unification: dict
    n_unifications: int
    solver_seconds: float
    reason: str = ""
    bvars: dict = dataclasses.field(default_factory=dict)


def _similar(a: str, b: str) -> float:
    return 1.0 if a == b else difflib.SequenceMatcher(None, a, b).ratio() * 0.5


def _atoms(formulas) -> set:
    """The atoms of `formulas` in `_shape`'s canonical form (names kept), with the primary terms of
    every comparison, so that a partly matching equation still counts."""
    out = set()
    for f in S.atoms_of(formulas):
        out.add(_shape(f, str))
        if isinstance(f, S.Cmp):
            out.update(_primaries(f.lhs) | _primaries(f.rhs))
    return out


def _primaries(t) -> set:
    if isinstance(t, S.Sum):
        return set().union(*[_primaries(x) for _, x in t.terms])
    if isinstance(t, S.Product):
        return set().union(*[_primaries(x) for x in t.factors])
    return {_shape(t, str)}


def _conj(fs):
    fs = tuple(fs)
    if not fs:
        return None
    return fs[0] if len(fs) == 1 else S.And(fs)


# ----------------------------------------------------------------------------------------------
# Unifications guided by structure: colour refinement (1-dimensional Weisfeiler-Leman) on the atoms.

def _walk(formulas, part: str):
    """(context, atom) for every atomic formula: context = (part, negated, under an 'or')."""
    out = []

    def rec(f, neg, disj):
        if isinstance(f, S.Not):
            rec(f.arg, not neg, disj)
        elif isinstance(f, S.And):
            for a in f.args:
                rec(a, neg, disj)
        elif isinstance(f, S.Or):
            for a in f.args:
                rec(a, neg, True)
        else:
            out.append(((part, neg, disj), f))
    for f in formulas:
        rec(f, False, False)
    return out


_SYMMETRIC_FIRST_TWO = ("same_side", "opposite_sides", "lines_meet", "circles_meet", "parallel")


def _shape(f, name):
    """A canonical, renaming-invariant shape of an atom or term: each object replaced by `name(x)`,
    symmetric positions sorted (segments, triangle areas and `=` unordered, angles and `between` up
    to reversal, sums as multisets, the first two arguments of same_side-like relations)."""
    if isinstance(f, S.Pred):
        args = [name(x) for x in f.args]
        if f.name in _SYMMETRIC_FIRST_TWO:
            args[:2] = sorted(args[:2])
        if f.name == "between":
            args = min(args, args[::-1])
        if f.name == "triangle":
            args = sorted(args)
        return ("pred", f.name, tuple(args))
    if isinstance(f, S.ObjEq):
        return ("objeq",) + tuple(sorted((name(f.a), name(f.b))))
    if isinstance(f, S.Cmp):
        sides = [_shape(f.lhs, name), _shape(f.rhs, name)]
        if f.op == "=":
            sides.sort(key=repr)
        return ("cmp", f.op) + tuple(sides)
    if isinstance(f, S.Length):
        return ("len",) + tuple(sorted((name(f.a), name(f.b))))
    if isinstance(f, S.AngleOf):
        ends = sorted((name(f.a), name(f.c)))
        return ("ang", ends[0], name(f.b), ends[1])
    if isinstance(f, S.AreaOf):
        return ("area",) + tuple(sorted((name(f.a), name(f.b), name(f.c))))
    if isinstance(f, S.Sum):
        return ("sum",) + tuple(sorted(((str(c), _shape(x, name)) for c, x in f.terms), key=repr))
    if isinstance(f, S.Product):
        return ("prod",) + tuple(sorted((_shape(x, name) for x in f.factors), key=repr))
    if isinstance(f, S.Num):
        return ("num", str(f.value))
    return (type(f).__name__,)


def colour_rounds(statements, rounds: int | None = None) -> list[dict]:
    """Colour refinement on several statements at once (so colours compare across them).

    Every bound variable starts with its sort and quantifier; each round, a variable's new colour is
    its old colour with the multiset of shapes of the atoms it occurs in (the other objects written
    as their colours, itself marked), with each atom's place (hypothesis or conclusion, negated,
    under an `or`). Returns one {(i, name): colour id} per round, round 0 first, until the partition
    stops splitting (or `rounds`). Renaming the variables or listing the binders in another order
    gives the same colours; two variables with different colours are not exchanged by any
    isomorphism of the statements."""
    occurrences = {}
    colour = {}
    for i, st in enumerate(statements):
        for name, sort in st.universals:
            colour[(i, name)] = ("u", sort)
        for name, sort in st.existentials:
            colour[(i, name)] = ("e", sort)
        atoms = _walk(st.hypotheses, "H") + _walk(st.conclusions, "C")
        occurrences[i] = atoms
    ids: dict = {}
    def intern(c):
        return ids.setdefault(c, len(ids))
    current = {k: intern(c) for k, c in colour.items()}
    history = [dict(current)]
    limit = rounds if rounds is not None else len(current)
    for _ in range(limit):
        features: dict = {k: [] for k in current}
        for i, atoms in occurrences.items():
            for ctx, atom in atoms:
                names = set(S.objects_of(atom))
                for v in names:
                    if (i, v) not in current:
                        continue
                    shape = _shape(atom, lambda x, v=v: ("*" if x == v else "") + str(current.get((i, x), x)))
                    features[(i, v)].append(repr((ctx, shape)))
        new = {k: intern((current[k], tuple(sorted(features[k])))) for k in current}
        if len(set(new.values())) == len(set(current.values())):
            history.append(new)
            break
        current = new
        history.append(current)
    return history


def _by_sort_q(st: S.Statement) -> dict:
    out: dict = {}
    for q, binders in (("u", st.universals), ("e", st.existentials)):
        for name, sort in binders:
            out.setdefault((q, sort), []).append(name)
    return out


def unifications(ground: S.Statement, test: S.Statement, max_unifications: int = 16, *,
                 max_nodes: int = 20000):
    """Sort-preserving bijections {test var: ground var} of universals and of existentials, best
    first; None if the counts per sort differ.

    Candidates come from colour refinement (`colour_rounds` on both statements together): a test
    variable is paired first with the ground variables that kept its colour for the most rounds,
    so binder order and names do not matter. Two depth-first searches over the test variables (most
    constrained first, at most `max_nodes` partial assignments each): the first keeps only
    assignments under which every fully assigned atom of the test statement is an atom of the
    ground statement in the same place (an isomorphism search, so statements equal up to renaming
    and reordering get an isomorphism first); the second fills up to 4 x `max_unifications`
    bijections without that restriction. They are ranked by how many atoms of the renamed test
    statement occur in the ground statement, then by colour agreement, then by name similarity
    (E3's heuristic)."""
    g_groups, t_groups = _by_sort_q(ground), _by_sort_q(test)
    if {k: len(v) for k, v in g_groups.items()} != {k: len(v) for k, v in t_groups.items()}:
        return None
    history = colour_rounds([ground, test])
    group_of = {t: g_groups[key] for key, names in t_groups.items() for t in names}
    sim = {(t, g): sum(1 for h in history if h[(0, g)] == h[(1, t)]) + 0.01 * _similar(t, g)
           for t, gs in group_of.items() for g in gs}
    best = {t: max(sim[(t, g)] for g in gs) for t, gs in group_of.items()}
    # most constrained first: the best colour agreement, then the fewest ground variables sharing it
    order = sorted(group_of, key=lambda t: (-best[t], sum(sim[(t, g)] >= best[t] - 0.5 for g in group_of[t]), t))
    position = {t: i for i, t in enumerate(order)}
    ground_atoms = {(ctx, _shape(a, str)) for ctx, a in _walk(ground.hypotheses, "H") + _walk(ground.conclusions, "C")}
    closing: dict = {t: [] for t in order}          # test atoms whose last variable (in `order`) is t
    for ctx, a in _walk(test.hypotheses, "H") + _walk(test.conclusions, "C"):
        names = [x for x in set(S.objects_of(a)) if x in position]
        if names:
            closing[max(names, key=position.get)].append((ctx, a))
    want = 4 * max_unifications
    found: dict = {}

    def search(strict: bool):
        nodes = 0

        def dfs(i, used, m, total):
            nonlocal nodes
            if len(found) >= want or nodes >= max_nodes:
                return
            if i == len(order):
                key = tuple(sorted(m.items()))
                if key not in found:
                    found[key] = (strict, total, dict(m))
                return
            t = order[i]
            for g in sorted(group_of[t], key=lambda g: -sim[(t, g)]):
                if g in used:
                    continue
                nodes += 1
                m[t] = g
                if not strict or all((ctx, _shape(a, m.get)) in ground_atoms for ctx, a in closing[t]):
                    used.add(g)
                    dfs(i + 1, used, m, total + sim[(t, g)])
                    used.discard(g)
                del m[t]
                if len(found) >= want or nodes >= max_nodes:
                    return
        dfs(0, set(), {}, 0.0)

    search(strict=True)
    if len(found) < max_unifications:
        search(strict=False)
    target = _atoms(ground.hypotheses + ground.conclusions)
    test_parts = test.hypotheses + test.conclusions

    def score(item):
        strict, total, m = item
        renamed = _atoms(tuple(E.substitute(f, m) for f in test_parts))
        return (strict, len(renamed & target), total)
    ranked = sorted(found.values(), key=score, reverse=True)
    return [m for _, _, m in ranked[:max_unifications]]


def implies(p: S.Statement, q: S.Statement, sigma: dict[str, str], *, timeout_s: float = 15.0,
            budget: int = 2000, rlimit: int = 0) -> tuple[str, float]:
    """Whether statement `p` implies `q` with q's variables renamed by `sigma` {q var: p var}:
    ('proved' | 'not_proved' | 'timeout', solver seconds)."""
    q_hyps = [E.substitute(h, sigma) for h in q.hypotheses]
    q_concl = [E.substitute(c, sigma) for c in q.conclusions]
    seconds = 0.0
    kw = dict(timeout_s=timeout_s, budget=budget, rlimit=rlimit)
    p_hyps = _conj(p.hypotheses)
    if p_hyps is not None:
        ctx = E.Context(dict(p.universals), [(f"test hypothesis {i}", h) for i, h in enumerate(q_hyps)], **kw)
        v = ctx.entails(p_hyps)
        seconds += v.seconds
        if not v.proved:
            return v.status, seconds
    facts = [(f"test hypothesis {i}", h) for i, h in enumerate(q_hyps)]
    facts += [(f"hypothesis {i}", h) for i, h in enumerate(p.hypotheses)]
    facts += [(f"conclusion {i}", c) for i, c in enumerate(p.conclusions)]
    ctx = E.Context(dict(p.universals + p.existentials), facts, **kw)
    v = ctx.entails(_conj(q_concl))
    return v.status, seconds + v.seconds


_E3_KEYS = {("u", "Point"): "uPoints", ("u", "Line"): "uLines", ("u", "Circle"): "uCircles",
            ("e", "Point"): "ePoints", ("e", "Line"): "eLines", ("e", "Circle"): "eCircles"}


def bvars_delta(ground: S.Statement, test: S.Statement) -> dict[str, int]:
    """E3's bound-variable deltas: per sort and quantifier, the test's count minus the ground
    truth's (positive: the test has too many), keys uPoints ... eCircles."""
    g, t = _by_sort_q(ground), _by_sort_q(test)
    return {key: len(t.get(k, [])) - len(g.get(k, [])) for k, key in _E3_KEYS.items()}


def drop_unused(st: S.Statement) -> tuple[S.Statement, tuple[str, ...]]:
    """`st` without the bound variables that occur in no hypothesis or conclusion, and their names.
    Over E's non-empty sorts `forall x, P` and `exists x, P` are P when x does not occur in P, so
    the statement means the same; E3 reports such variables in its bound-variable deltas and its
    binary check proves the equivalence through the quantifiers, which is what dropping them does
    for our ground queries."""
    used = set(S.objects_of(S.And(tuple(st.hypotheses + st.conclusions)))) if st.hypotheses + st.conclusions else set()
    dropped = tuple(n for n, _ in st.universals + st.existentials if n not in used)
    if not dropped:
        return st, ()
    return dataclasses.replace(st, universals=tuple(b for b in st.universals if b[0] in used),
                               existentials=tuple(b for b in st.existentials if b[0] in used)), dropped


def check_equivalence(ground: S.Statement, test: S.Statement, *, timeout_s: float = 15.0,
                      max_unifications: int = 16, budget: int = 2000, rlimit: int = 0,
                      pair_timeout_s: float = 120.0) -> Equivalence:
    """Classifies `test` against `ground` (see the module doc). `timeout_s` bounds each z3 query
    (E3: 15 s by default, 60 s in the paper); `pair_timeout_s` bounds the whole pair (no new query
    starts after it, and each query gets at most the time left; when it runs out before a
    direction is proved the category is 'timeout'); `rlimit` optionally bounds z3's resources per
    query. Bound variables that occur nowhere are dropped first (see `drop_unused`) and reported in
    the reason; `bvars` holds E3's deltas of the statements as given."""
    if not isinstance(ground, S.Statement) or not isinstance(test, S.Statement):
        raise TypeError("check_equivalence takes two syntax.Statement (parse them with syntax.parse_statement)")
    if not max_unifications >= 1:
        raise ValueError(f"max_unifications={max_unifications} must be >= 1")
    if not (timeout_s > 0 and pair_timeout_s > 0):
        raise ValueError(f"timeout_s={timeout_s} and pair_timeout_s={pair_timeout_s} must be > 0 seconds")
    t_start = time.perf_counter()
    bvars = bvars_delta(ground, test)
    ground, g_unused = drop_unused(ground)
    test, t_unused = drop_unused(test)
    note = ""
    if g_unused or t_unused:
        note = "; unused bound variables dropped: " + ", ".join(
            f"{who} {', '.join(names)}" for who, names in (("ground", g_unused), ("test", t_unused)) if names)
    sigmas = unifications(ground, test, max_unifications)
    if sigmas is None:
        def counts(st):
            groups = _by_sort_q(st)
            return tuple({sort: len(v) for (q_, sort), v in groups.items() if q_ == q} for q in ("u", "e"))
        return Equivalence("neither", "", "", {}, 0, 0.0,
                           f"bound variables differ: ground (forall, exists) {counts(ground)}, test {counts(test)}"
                           + note, bvars)
    solver_s = 0.0
    best = {"forward": "not_proved", "backward": "not_proved"}
    chosen = {"forward": None, "backward": None}
    rank = {"not_proved": 0, "timeout": 1, "proved": 2}
    out_of_time = False
    tried = 0
    for sigma in sigmas:
        left = pair_timeout_s - (time.perf_counter() - t_start)
        if left <= 0:
            out_of_time = True
            break
        tried += 1
        inverse = {g: t for t, g in sigma.items()}
        kw = dict(budget=budget, rlimit=rlimit)
        fwd, s1 = implies(ground, test, sigma, timeout_s=min(timeout_s, left), **kw)     # ground => test
        left = pair_timeout_s - (time.perf_counter() - t_start)
        if left <= 0:
            bwd, s2, out_of_time = "timeout", 0.0, True
        else:
            bwd, s2 = implies(test, ground, inverse, timeout_s=min(timeout_s, left), **kw)   # test => ground
        solver_s += s1 + s2
        for key, status in (("forward", fwd), ("backward", bwd)):
            if rank[status] > rank[best[key]]:
                best[key], chosen[key] = status, sigma
        if fwd == "proved" and bwd == "proved":
            return Equivalence("equivalent", fwd, bwd, sigma, tried, solver_s, "both directions proved" + note, bvars)
        if out_of_time:
            break
    f, b = best["forward"], best["backward"]
    if f == "proved":
        cat, reason, sigma = "ground_implies_test", "the test statement is weaker", chosen["forward"]
    elif b == "proved":
        cat, reason, sigma = "test_implies_ground", "the test statement is stronger", chosen["backward"]
    elif out_of_time:
        cat, reason, sigma = "timeout", (f"the pair's budget of {pair_timeout_s:g} s ran out after {tried} of "
                                         f"{len(sigmas)} unifications; no direction proved"), sigmas[0]
    elif "timeout" in (f, b):
        cat, reason, sigma = "timeout", "z3 gave up (timeout or resource limit); no direction proved", sigmas[0]
    else:
        cat, reason, sigma = "neither", "no direction proved under any unification tried", sigmas[0]
    return Equivalence(cat, f, b, sigma or sigmas[0], tried, solver_s, reason + note, bvars)
