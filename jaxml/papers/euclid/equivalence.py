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

Unifications are tried best first (shared atoms, then name similarity as in E3), at most
`max_unifications` (E3's top-N).
"""

from __future__ import annotations

import dataclasses
import difflib
import itertools

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
      reason: a readable explanation.
    """
    category: str
    forward: str
    backward: str
    unification: dict
    n_unifications: int
    solver_seconds: float
    reason: str = ""


def _by_sort(binders) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {s: [] for s in S.SORTS}
    for name, sort in binders:
        out[sort].append(name)
    return out


def unifications(ground: S.Statement, test: S.Statement, max_unifications: int = 16):
    """Sort-preserving bijections {test var: ground var} of universals and of existentials, best
    first; None if the counts per sort differ. The order: how many atoms of the renamed test
    statement occur in the ground statement (a cheap structural match), then name similarity
    (E3's heuristic)."""
    groups = []
    for g_binders, t_binders in ((ground.universals, test.universals), (ground.existentials, test.existentials)):
        g, t = _by_sort(g_binders), _by_sort(t_binders)
        for sort in S.SORTS:
            if len(g[sort]) != len(t[sort]):
                return None
            if t[sort]:
                groups.append((t[sort], g[sort]))
    target = _atoms(ground.hypotheses + ground.conclusions)
    test_parts = test.hypotheses + test.conclusions
    combos = []
    per_group = [[dict(zip(t_names, p)) for p in itertools.islice(itertools.permutations(g_names), 5040)]
                 for t_names, g_names in groups]
    for parts in itertools.islice(itertools.product(*per_group), 20000):
        m = {}
        for p in parts:
            m.update(p)
        combos.append(m)
    def score(m):
        renamed = _atoms(tuple(E.substitute(f, m) for f in test_parts))
        return len(renamed & target) + 0.01 * sum(_similar(a, b) for a, b in m.items())
    combos.sort(key=score, reverse=True)
    return combos[:max_unifications]


def _similar(a: str, b: str) -> float:
    return 1.0 if a == b else difflib.SequenceMatcher(None, a, b).ratio() * 0.5


def _atoms(formulas) -> set:
    """Normalised atoms (segments and triangles unordered, angles up to reversal) of `formulas`."""
    out = set()
    for f in S.atoms_of(formulas):
        if isinstance(f, S.Cmp):
            out.add((f.op, _norm(f.lhs), _norm(f.rhs)))
            out.update(_norm_terms(f.lhs) | _norm_terms(f.rhs))
        elif isinstance(f, S.ObjEq):
            out.add(("=",) + tuple(sorted((f.a, f.b))))
        elif isinstance(f, S.Pred):
            out.add((f.name,) + f.args)
    return out


def _norm(t):
    if isinstance(t, S.Length):
        return ("len",) + tuple(sorted((t.a, t.b)))
    if isinstance(t, S.AngleOf):
        return ("ang", min(t.a, t.c), t.b, max(t.a, t.c))
    if isinstance(t, S.AreaOf):
        return ("area",) + tuple(sorted((t.a, t.b, t.c)))
    if isinstance(t, S.Sum):
        return ("sum",) + tuple(sorted((c, _norm(x)) for c, x in t.terms))
    if isinstance(t, S.Product):
        return ("prod",) + tuple(sorted(_norm(x) for x in t.factors))
    return (type(t).__name__, getattr(t, "value", None))


def _norm_terms(t) -> set:
    if isinstance(t, S.Sum):
        return set().union(*[_norm_terms(x) for _, x in t.terms])
    if isinstance(t, S.Product):
        return set().union(*[_norm_terms(x) for x in t.factors])
    return {_norm(t)}


def _conj(fs):
    fs = tuple(fs)
    if not fs:
        return None
    return fs[0] if len(fs) == 1 else S.And(fs)


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


def check_equivalence(ground: S.Statement, test: S.Statement, *, timeout_s: float = 15.0,
                      max_unifications: int = 16, budget: int = 2000, rlimit: int = 0) -> Equivalence:
    """Classifies `test` against `ground` (see the module doc). `timeout_s` bounds each z3 query
    (E3: 15 s by default, 60 s in the paper); `rlimit` optionally bounds z3's resources per query."""
    if not isinstance(ground, S.Statement) or not isinstance(test, S.Statement):
        raise TypeError("check_equivalence takes two syntax.Statement (parse them with syntax.parse_statement)")
    if not max_unifications >= 1:
        raise ValueError(f"max_unifications={max_unifications} must be >= 1")
    sigmas = unifications(ground, test, max_unifications)
    if sigmas is None:
        def counts(st):
            return {k: len(v) for k, v in _by_sort(st.universals).items() if v}, \
                {k: len(v) for k, v in _by_sort(st.existentials).items() if v}
        return Equivalence("neither", "", "", {}, 0, 0.0,
                           f"bound variables differ: ground (forall, exists) {counts(ground)}, test {counts(test)}")
    solver_s = 0.0
    best = {"forward": "not_proved", "backward": "not_proved"}
    chosen = {"forward": None, "backward": None}
    rank = {"not_proved": 0, "timeout": 1, "proved": 2}
    for i, sigma in enumerate(sigmas, 1):
        inverse = {g: t for t, g in sigma.items()}
        fwd, s1 = implies(ground, test, sigma, timeout_s=timeout_s, budget=budget, rlimit=rlimit)     # ground => test
        bwd, s2 = implies(test, ground, inverse, timeout_s=timeout_s, budget=budget, rlimit=rlimit)   # test => ground
        solver_s += s1 + s2
        for key, status in (("forward", fwd), ("backward", bwd)):
            if rank[status] > rank[best[key]]:
                best[key], chosen[key] = status, sigma
        if fwd == "proved" and bwd == "proved":
            return Equivalence("equivalent", fwd, bwd, sigma, i, solver_s, "both directions proved")
    f, b = best["forward"], best["backward"]
    if f == "proved":
        cat, reason, sigma = "ground_implies_test", "the test statement is weaker", chosen["forward"]
    elif b == "proved":
        cat, reason, sigma = "test_implies_ground", "the test statement is stronger", chosen["backward"]
    elif "timeout" in (f, b):
        cat, reason, sigma = "timeout", "z3 gave up (timeout or resource limit); no direction proved", sigmas[0]
    else:
        cat, reason, sigma = "neither", "no direction proved under any unification tried", sigmas[0]
    return Equivalence(cat, f, b, sigma or sigmas[0], len(sigmas), solver_s, reason)
