"""A numeric model of the Euclidean plane for system E, and random scenes to test the axioms on.

Objects (coordinates of order 1; the tolerances below are absolute):

- a point is `Point(x, y)`;
- a line is `Line(a, b, c)`, the points with a x + b y + c = 0, normalised so that a^2 + b^2 = 1
  (built from two points by `line_through`); `L = M` compares (a, b, c) up to sign;
- a circle is `Circle(cx, cy, r)` with r > 0 (`circle_through(centre, point)`).

The relations of E, decided with a tolerance (see "Three-valued truth"):

| relation | holds when |
|---|---|
| `on_line(p, L)` | the distance from p to L is 0 |
| `same_side(p, q, L)` | p and q are both strictly off L, on the same side (so `same_side(p, p, L)` iff p is off L) |
| `between(a, b, c)` | strict: b lies on the segment ac, b != a, b != c (so a != c) |
| `on_circle(p, α)` / `inside_circle(p, α)` / `centre(p, α)` | \\|p o\\| = r / \\|p o\\| < r (strictly) / p = o |
| `lines_meet(L, M)` | L and M are distinct and not parallel (they share exactly one point) |
| `line_meets_circle(L, α)` | L cuts α in two points: the distance from o to L is < r (a tangent does not count) |
| `circles_meet(α, β)` | α and β cross in two points: \\|r1 - r2\\| < \\|o1 o2\\| < r1 + r2 (not when tangent, |
| | concentric or equal) |

The two "meet" relations are the two-point ones because the construction rules that use them
(`intersection_circle_line`, `intersection_circles_side`) yield two distinct intersection points;
every axiom that concludes one of them (`intersection_circle_line_1/2`, `intersection_circle_circle_1/2`,
`intersection_lines_*`) does so only in a two-point situation.

Macros as `system_e.formula_smt` expands them: `opposite_sides(a, b, L)` = neither on L and not
same_side; `outside_circle(p, α)` = neither inside nor on; `triangle(a, b, c)` = pairwise distinct
and area(a, b, c) > 0; `parallel(L, M)` = L != M and not lines_meet(L, M).

Magnitudes: `|a b|` the distance; `angle(a, b, c)` the angle at b in degrees, in [0, 180] (`right` =
90); `area(a, b, c)` the unsigned area of the triangle. Degenerate angle: when a = b or c = b the
angle is *defined as 0*. E says nothing about such angles: every axiom that mentions angle(x, y, z)
either has the premises x != y and z != y (angle_symm, angle_range, the transfer axioms, SAS, SSS),
or premises that imply them (`lines_intersect`: a and d are off M, b and c on it), or a conclusion that
holds whatever the degenerate angles are (`area_congruence`: a repeated vertex makes both areas 0);
any constant in [0, 180] would do, 0 is chosen.

Three-valued truth. Floating point makes exact relations (on a line, on a circle, equal lengths) hold
only up to rounding, so each relation is decided from a real quantity q with two thresholds eps <
band: an *equality* (q = 0) is true when |q| <= eps, false when |q| >= band; a *strict inequality*
(q > 0) is true when q >= band, false when q <= eps; in between it is ambiguous (None, code `U`). A
magnitude comparison scales q by 1 + max(|lhs|, |rhs|). Connectives are Kleene's: `and` is the
minimum of F=0 < U=1 < T=2, `or` the maximum, `not` 2 - x. `evaluate` (eps = band = tol) always
decides; `truth` answers None where a tiny perturbation could flip the answer, which is what a
soundness check must skip.

All relation functions are vectorised: arguments are arrays of coordinates with a leading batch
shape ((..., 2) for points, (..., 3) for lines and circles) broadcast together.

The statement checkers: `check_assignment` (one assignment of a statement's universals: are the
hypotheses true, and then is there a witness for the existentials in a pool), `enumerate_assignments`
(all assignments of some variables to scene objects that make given formulas true, as a vectorised
join with pruning) and `check_statement` (a statement on a whole `Scene`: every assignment of its
universals, the non-vacuous ones counted, violations described with coordinates). `random_scene` and
`triangle_scene` build scenes in which the relations hold often (points on lines, on and inside
circles, between others, congruent triangles), from a seeded `numpy.random.Generator`.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from collections.abc import Iterable, Sequence
from typing import NamedTuple

import numpy as np

from jaxml.papers.euclid import syntax as S

RIGHT_ANGLE = 90.0
EPS = 1e-9          # |q| <= EPS: q is zero
BAND = 1e-6         # EPS < |q| < BAND: ambiguous (a soundness check skips such assignments)
F, U, T = 0, 1, 2   # three-valued truth codes (Kleene: and = min, or = max, not = 2 - x)
SORTS = ("Point", "Line", "Circle")
DIM = {"Point": 2, "Line": 3, "Circle": 3}


class Point(NamedTuple):
    x: float
    y: float


class Line(NamedTuple):
    """a x + b y + c = 0 with a^2 + b^2 = 1."""
    a: float
    b: float
    c: float


class Circle(NamedTuple):
    cx: float
    cy: float
    r: float


_TYPES = {Point: "Point", Line: "Line", Circle: "Circle"}


def sort_of(obj) -> str:
    """'Point', 'Line' or 'Circle' for a Point / Line / Circle."""
    try:
        return _TYPES[type(obj)]
    except KeyError:
        raise TypeError(f"not a Point, Line or Circle: {obj!r}") from None


# ----------------------------------------------------------------------------------------------
# Constructions.

def normalise_line(a: float, b: float, c: float) -> Line:
    n = math.hypot(a, b)
    if n == 0:
        raise ValueError("a line needs (a, b) != (0, 0)")
    a, b, c = a / n, b / n, c / n
    if a < 0 or (a == 0 and b < 0):
        a, b, c = -a, -b, -c
    return Line(a, b, c)


def line_through(p, q) -> Line:
    """The line through two distinct points."""
    (px, py), (qx, qy) = p, q
    dx, dy = qx - px, qy - py
    if math.hypot(dx, dy) <= EPS:
        raise ValueError(f"line_through needs two distinct points, got {p} and {q}")
    return normalise_line(-dy, dx, dy * px - dx * py)


def parallel_through(L, p) -> Line:
    """The line through p parallel to L."""
    a, b, _ = L
    return normalise_line(a, b, -(a * p[0] + b * p[1]))


def circle_through(centre, p) -> Circle:
    """The circle with this centre through p (p != centre)."""
    r = math.dist(centre, p)
    if r <= EPS:
        raise ValueError("circle_through needs a point distinct from the centre")
    return Circle(float(centre[0]), float(centre[1]), r)


def foot(p, L) -> Point:
    """The foot of the perpendicular from p to L."""
    a, b, c = L
    s = a * p[0] + b * p[1] + c
    return Point(p[0] - s * a, p[1] - s * b)


def reflect(p, L) -> Point:
    """The mirror image of p across L."""
    a, b, c = L
    s = a * p[0] + b * p[1] + c
    return Point(p[0] - 2 * s * a, p[1] - 2 * s * b)


def intersect_lines(L, M, min_sin: float = 0.0) -> list[Point]:
    """[the common point] of two lines whose normals make |sin| > min_sin, else []."""
    (a1, b1, c1), (a2, b2, c2) = L, M
    det = a1 * b2 - a2 * b1
    if abs(det) <= max(min_sin, EPS):
        return []
    return [Point((b1 * c2 - b2 * c1) / det, (c1 * a2 - c2 * a1) / det)]


def intersect_line_circle(L, C, margin: float = 0.0) -> list[Point]:
    """The two points where L cuts C (distance from the centre < r - margin), else []."""
    a, b, _ = L
    cx, cy, r = C
    f = foot((cx, cy), L)
    d = math.hypot(f[0] - cx, f[1] - cy)
    if d >= r - max(margin, EPS):
        return []
    h = math.sqrt(r * r - d * d)
    return [Point(f[0] - b * h, f[1] + a * h), Point(f[0] + b * h, f[1] - a * h)]


def intersect_circles(C1, C2, margin: float = 0.0) -> list[Point]:
    """The two points where two circles cross (|r1 - r2| + margin < d < r1 + r2 - margin), else []."""
    x1, y1, r1 = C1
    x2, y2, r2 = C2
    d = math.hypot(x2 - x1, y2 - y1)
    m = max(margin, EPS)
    if not abs(r1 - r2) + m < d < r1 + r2 - m:
        return []
    a = (r1 * r1 - r2 * r2 + d * d) / (2 * d)
    h = math.sqrt(max(r1 * r1 - a * a, 0.0))
    ux, uy = (x2 - x1) / d, (y2 - y1) / d
    mx, my = x1 + a * ux, y1 + a * uy
    return [Point(mx - h * uy, my + h * ux), Point(mx + h * uy, my - h * ux)]


# ----------------------------------------------------------------------------------------------
# Relations and magnitudes, vectorised over arrays of coordinates.

def _zero(q, eps, band):
    q = np.abs(q)
    return np.where(q <= eps, T, np.where(q >= band, F, U)).astype(np.int8)


def _pos(q, eps, band):
    return np.where(q >= band, T, np.where(q <= eps, F, U)).astype(np.int8)


def _and(*xs):
    out = xs[0]
    for x in xs[1:]:
        out = np.minimum(out, x)
    return out


def _or(*xs):
    out = xs[0]
    for x in xs[1:]:
        out = np.maximum(out, x)
    return out


def _not(x):
    return (T - x).astype(np.int8)


def _signed(P, L):
    return L[..., 0] * P[..., 0] + L[..., 1] * P[..., 1] + L[..., 2]


def _cross(u, v):
    return u[..., 0] * v[..., 1] - u[..., 1] * v[..., 0]


def _norm(v):
    return np.hypot(v[..., 0], v[..., 1])


def on_line(P, L, eps=EPS, band=BAND):
    return _zero(_signed(P, L), eps, band)


def same_side(P, Q, L, eps=EPS, band=BAND):
    s, t = _signed(P, L), _signed(Q, L)
    return _or(_and(_pos(s, eps, band), _pos(t, eps, band)), _and(_pos(-s, eps, band), _pos(-t, eps, band)))


def between(A, B, C, eps=EPS, band=BAND):
    ac = C - A
    n = _norm(ac)
    u = ac / np.maximum(n, 1e-300)[..., None]
    off = _cross(u, B - A)                             # distance of B from the line AC
    from_a = (u * (B - A)).sum(-1)                     # how far B is along AC from A
    from_c = (u * (C - B)).sum(-1)                     # ... and before C
    return _and(_pos(n, eps, band), _zero(off, eps, band), _pos(from_a, eps, band), _pos(from_c, eps, band))


def on_circle(P, C, eps=EPS, band=BAND):
    return _zero(_norm(P - C[..., :2]) - C[..., 2], eps, band)


def inside_circle(P, C, eps=EPS, band=BAND):
    return _pos(C[..., 2] - _norm(P - C[..., :2]), eps, band)


def centre(P, C, eps=EPS, band=BAND):
    return _zero(_norm(P - C[..., :2]), eps, band)


def lines_meet(L, M, eps=EPS, band=BAND):
    return _pos(np.abs(_cross(L, M)), eps, band)       # |sin| of the angle between the normals


def line_meets_circle(L, C, eps=EPS, band=BAND):
    return _pos(C[..., 2] - np.abs(_signed(C[..., :2], L)), eps, band)


def circles_meet(C1, C2, eps=EPS, band=BAND):
    d = _norm(C1[..., :2] - C2[..., :2])
    return _and(_pos(d - np.abs(C1[..., 2] - C2[..., 2]), eps, band), _pos(C1[..., 2] + C2[..., 2] - d, eps, band))


def equal(sort: str, X, Y, eps=EPS, band=BAND):
    """Object equality: points by distance, lines by (a, b, c) up to sign, circles by (cx, cy, r)."""
    if sort == "Line":
        q = np.minimum(np.linalg.norm(X - Y, axis=-1), np.linalg.norm(X + Y, axis=-1))
    else:
        q = np.linalg.norm(X - Y, axis=-1)
    return _zero(q, eps, band)


def length(A, B):
    return _norm(B - A)


def angle(A, B, C, eps=EPS, band=BAND):
    """(degrees at B in [0, 180], ambiguous mask); 0 when A = B or C = B (see the module doc)."""
    u, v = A - B, C - B
    nu, nv = _norm(u), _norm(v)
    deg = np.degrees(np.arctan2(np.abs(_cross(u, v)), (u * v).sum(-1)))
    short = np.minimum(nu, nv)
    deg = np.where(short <= eps, 0.0, deg)
    return deg, (short > eps) & (short < band)


def area(A, B, C):
    return 0.5 * np.abs(_cross(B - A, C - A))


RELATIONS = {"on_line": on_line, "same_side": same_side, "between": between, "on_circle": on_circle,
             "inside_circle": inside_circle, "centre": centre, "lines_meet": lines_meet,
             "line_meets_circle": line_meets_circle, "circles_meet": circles_meet}


# ----------------------------------------------------------------------------------------------
# Formulas.

class _Evaluator:
    """Three-valued evaluation of formulas over env {name: (sort, coordinate array)}."""

    def __init__(self, env: dict, eps: float, band: float):
        self.env, self.eps, self.band = env, eps, band

    def arr(self, name):
        return self.env[name][1]

    def term(self, t):
        """(value, ambiguous mask) of a magnitude term."""
        e = self.arr
        if isinstance(t, S.Length):
            return length(e(t.a), e(t.b)), np.zeros((), bool)
        if isinstance(t, S.AngleOf):
            return angle(e(t.a), e(t.b), e(t.c), self.eps, self.band)
        if isinstance(t, S.AreaOf):
            return area(e(t.a), e(t.b), e(t.c)), np.zeros((), bool)
        if isinstance(t, S.Num):
            return np.asarray(float(t.value)), np.zeros((), bool)
        if isinstance(t, S.Right):
            return np.asarray(RIGHT_ANGLE), np.zeros((), bool)
        if isinstance(t, S.Sum):
            val, amb = np.asarray(0.0), np.zeros((), bool)
            for c, x in t.terms:
                v, a = self.term(x)
                val, amb = val + float(c) * v, amb | a
            return val, amb
        if isinstance(t, S.Product):
            val, amb = np.asarray(1.0), np.zeros((), bool)
            for x in t.factors:
                v, a = self.term(x)
                val, amb = val * v, amb | a
            return val, amb
        raise TypeError(f"not a term: {t!r}")

    def formula(self, f):
        eps, band, e = self.eps, self.band, self.arr
        if isinstance(f, S.Pred):
            a = [e(x) for x in f.args]
            if f.name == "opposite_sides":
                return _and(_not(on_line(a[0], a[2], eps, band)), _not(on_line(a[1], a[2], eps, band)),
                            _not(same_side(a[0], a[1], a[2], eps, band)))
            if f.name == "outside_circle":
                return _and(_not(inside_circle(a[0], a[1], eps, band)), _not(on_circle(a[0], a[1], eps, band)))
            if f.name == "triangle":
                x, y, z = f.args
                return _and(*[_not(self.formula(S.ObjEq(p, q))) for p, q in ((x, y), (y, z), (x, z))],
                            self.formula(S.Cmp("<", S.Num(0), S.AreaOf(x, y, z))))
            if f.name == "parallel":
                return _and(_not(equal("Line", a[0], a[1], eps, band)), _not(lines_meet(a[0], a[1], eps, band)))
            return RELATIONS[f.name](*a, eps, band)
        if isinstance(f, S.ObjEq):
            return equal(self.env[f.a][0], e(f.a), e(f.b), eps, band)
        if isinstance(f, S.Cmp):
            (lv, la), (rv, ra) = self.term(f.lhs), self.term(f.rhs)
            diff = (lv - rv) / (1.0 + np.maximum(np.abs(lv), np.abs(rv)))
            if f.op == "=":
                out = _zero(diff, eps, band)
            elif f.op == "<":
                out = _pos(-diff, eps, band)
            elif f.op == "<=":
                out = _not(_pos(diff, eps, band))
            else:
                raise ValueError(f"unknown comparison {f.op!r}")
            return np.where(la | ra, U, out).astype(np.int8)
        if isinstance(f, S.Not):
            return _not(self.formula(f.arg))
        if isinstance(f, S.And):
            return _and(*[self.formula(x) for x in f.args])
        if isinstance(f, S.Or):
            return _or(*[self.formula(x) for x in f.args])
        raise TypeError(f"not a formula: {f!r}")


def _env_of(env: dict) -> dict:
    return {k: (sort_of(v), np.asarray(v, float)) for k, v in env.items()}


def truth(formula, env: dict, eps: float = EPS, band: float = BAND):
    """True / False, or None when a perturbation of the size of the tolerance band could flip it;
    env: {name: Point | Line | Circle}."""
    code = int(_Evaluator(_env_of(env), eps, band).formula(formula))
    return None if code == U else code == T


def evaluate(formula, env: dict, tol: float = EPS) -> bool:
    """Whether `formula` (a syntax AST) holds for env {name: Point | Line | Circle}, every exact
    relation decided with tolerance `tol` (|q| <= tol counts as 0)."""
    return int(_Evaluator(_env_of(env), tol, tol).formula(formula)) == T


def truth_array(formula, env: dict, eps: float = EPS, band: float = BAND) -> np.ndarray:
    """Vectorised three-valued truth codes (F, U, T); env: {name: (sort, coordinate array)}."""
    return _Evaluator(env, eps, band).formula(formula)


# ----------------------------------------------------------------------------------------------
# Joins: all assignments of variables to objects that make formulas true.

def _vars_of(f) -> set:
    return set(S.objects_of(f))


def join_order(variables: Sequence, constraints: Sequence, sizes: dict) -> list:
    """Variables (name, sort) ordered greedily: next the one that completes the most selective
    constraints (a negation such as `a != b` or `not on_line(a, L)` is rarely selective), then the one
    in the most selective constraints with variables assigned so far, then the one that completes the
    most constraints at all, then the one with the fewest candidates."""
    left = list(variables)
    done: set = set()
    order = []
    cvars = [_vars_of(c) & {v for v, _ in variables} for c in constraints]
    strong = [not isinstance(c, S.Not) for c in constraints]
    while left:
        def score(vs):
            v, s = vs
            completes = [k for k, cv in enumerate(cvars) if v in cv and cv <= done | {v}]
            linked = sum(1 for k, cv in enumerate(cvars) if strong[k] and v in cv and cv & done)
            return (-sum(strong[k] for k in completes), -linked, -len(completes), sizes[s], left.index(vs))
        best = min(left, key=score)
        order.append(best)
        done.add(best[0])
        left.remove(best)
    return order


@dataclasses.dataclass
class JoinResult:
    """rows: (R, V) indices into the domains of `order`'s sorts; ambiguous: assignments dropped because
    a formula was ambiguous on them (before a false one was found); capped: rows were subsampled."""
    order: list
    rows: np.ndarray
    ambiguous: int
    capped: bool
    space: int


def enumerate_assignments(variables: Sequence, constraints: Sequence, domains: dict, fixed: dict | None = None,
                          *, eps: float = EPS, band: float = BAND, cap: int = 200_000,
                          rng: np.random.Generator | None = None) -> JoinResult:
    """Every assignment of `variables` [(name, sort)] to objects of `domains` {sort: (n, dim) array} under
    which all `constraints` (formulas over the variables and the `fixed` objects {name: (sort, coords)})
    are true (code T), as a join that checks each formula as soon as its variables are assigned. When
    a level would exceed `cap` rows, the rows so far are subsampled (with `rng`)."""
    fixed = dict(fixed or {})
    sizes = {s: len(domains[s]) for s in SORTS}
    order = join_order(variables, constraints, sizes)
    names = [v for v, _ in order]
    space = 1
    for _, s in order:
        space *= sizes[s]
    rows = np.zeros((1, 0), np.int64)
    pending = list(constraints)
    ambiguous, capped = 0, False
    # formulas over fixed objects only
    now = [c for c in pending if not (_vars_of(c) & set(names))]
    pending = [c for c in pending if c not in now]
    if now:
        env = {k: v for k, v in fixed.items()}
        code = int(_and(*[truth_array(c, env, eps, band) for c in now]))
        if code != T:
            return JoinResult(order, np.zeros((0, len(order)), np.int64), int(code == U), False, space)
    for j, (v, s) in enumerate(order):
        n = sizes[s]
        if n == 0:
            return JoinResult(order, np.zeros((0, len(order)), np.int64), ambiguous, capped, space)
        if len(rows) * n > cap:
            keep = max(1, cap // n)
            rng = rng if rng is not None else np.random.default_rng(0)
            rows = rows[np.sort(rng.choice(len(rows), keep, replace=False))]
            capped = True
        rows = np.concatenate([np.repeat(rows, n, axis=0), np.tile(np.arange(n), len(rows))[:, None]], axis=1)
        assigned = set(names[:j + 1])
        now = [c for c in pending if _vars_of(c) & set(names) <= assigned]
        pending = [c for c in pending if c not in now]
        if not now or len(rows) == 0:
            continue
        needed = set().union(*[_vars_of(c) for c in now])
        env = dict(fixed)
        for i, (w, ws) in enumerate(order[:j + 1]):
            if w in needed:
                env[w] = (ws, domains[ws][rows[:, i]])
        code = _and(*[truth_array(c, env, eps, band) for c in now])
        code = np.broadcast_to(code, (len(rows),))
        ambiguous += int((code == U).sum())
        rows = rows[code == T]
    return JoinResult(order, rows, ambiguous, capped, space)


# ----------------------------------------------------------------------------------------------
# Candidate witnesses constructed from given objects.

FIXED_POINTS = (Point(0.0, 0.0), Point(1.0, 0.0), Point(0.0, 1.0), Point(0.37, -0.61))


def constructions(objects: Iterable) -> dict[str, list]:
    """Objects built from `objects` (Points, Lines, Circles) by ruler and compass, as candidate witnesses
    for existential conclusions: {sort: list}. Points: the given ones, midpoints and extensions
    (2q - p) of pairs, reflections across and feet on the lines, all pairwise intersections, centres,
    two points on each circle, two on each line, and a few fixed points (not all on one line); lines:
    the given ones and those through pairs of points; circles: the given ones and those centred at one
    point through another."""
    objects = list(objects)
    pts = [o for o in objects if isinstance(o, Point)]
    lns = [o for o in objects if isinstance(o, Line)]
    cis = [o for o in objects if isinstance(o, Circle)]
    P = list(pts) + list(FIXED_POINTS)
    for p, q in itertools.combinations(pts, 2):
        if math.dist(p, q) > EPS:
            P += [Point((p[0] + q[0]) / 2, (p[1] + q[1]) / 2), Point(2 * q[0] - p[0], 2 * q[1] - p[1]),
                  Point(2 * p[0] - q[0], 2 * p[1] - q[1])]
    for L in lns:
        P += [reflect(p, L) for p in pts] + [foot(p, L) for p in pts]
        f = foot((0.0, 0.0), L)
        P += [f, Point(f[0] - L[1], f[1] + L[0]), Point(f[0] + L[1], f[1] - L[0])]
    for L, M in itertools.combinations(lns, 2):
        P += intersect_lines(L, M)
    for L in lns:
        for C in cis:
            P += intersect_line_circle(L, C)
    for C1, C2 in itertools.combinations(cis, 2):
        P += intersect_circles(C1, C2)
    for cx, cy, r in cis:
        P += [Point(cx, cy), Point(cx + r, cy), Point(cx - 0.6 * r, cy + 0.8 * r)]
    L_out = list(lns) + [line_through(p, q) for p, q in itertools.combinations(pts, 2) if math.dist(p, q) > EPS]
    C_out = list(cis) + [circle_through(p, q) for p, q in itertools.permutations(pts, 2) if math.dist(p, q) > EPS]
    return {"Point": P, "Line": L_out, "Circle": C_out}


def _as_array(objs: Sequence, sort: str) -> np.ndarray:
    return np.asarray(objs, float).reshape(len(objs), DIM[sort])


# ----------------------------------------------------------------------------------------------
# One assignment of a statement.

@dataclasses.dataclass
class AssignmentCheck:
    """status: 'vacuous' (a hypothesis is false), 'holds', 'violated', or 'ambiguous' (a hypothesis or
    conclusion within the tolerance band); witness: {name: object} for the existentials when it holds."""
    status: str
    witness: dict = dataclasses.field(default_factory=dict)


def check_assignment(statement: S.Statement, env: dict, pool: dict | None = None, *, eps: float = EPS,
                     band: float = BAND) -> AssignmentCheck:
    """Whether `statement` holds at env {universal: Point | Line | Circle}: if every hypothesis is true,
    some assignment of the existentials to objects of `pool` {sort: [objects]} (default: the
    `constructions` from env's objects) makes every conclusion true."""
    envc = _env_of(env)
    hyp = [int(truth_array(h, envc, eps, band)) for h in statement.hypotheses]
    if any(h == F for h in hyp):
        return AssignmentCheck("vacuous")
    if any(h == U for h in hyp):
        return AssignmentCheck("ambiguous")
    if pool is None:
        pool = constructions(env.values())
    domains = {s: _as_array(pool.get(s, []), s) for s in SORTS}
    res = enumerate_assignments(statement.existentials, statement.conclusions, domains, envc, eps=eps, band=band)
    if len(res.rows):
        row = res.rows[0]
        return AssignmentCheck("holds", {v: pool[s][i] for (v, s), i in zip(res.order, row)})
    return AssignmentCheck("ambiguous" if res.ambiguous else "violated")


# ----------------------------------------------------------------------------------------------
# Scenes.

@dataclasses.dataclass
class Scene:
    """Objects of a configuration, each with a label saying how it was built.

    points: (n, 2); lines: (m, 3) normalised; circles: (k, 3); labels: {sort: [str]}.
    """
    points: np.ndarray
    lines: np.ndarray
    circles: np.ndarray
    labels: dict
    seed: object = None

    @property
    def domains(self) -> dict:
        return {"Point": self.points, "Line": self.lines, "Circle": self.circles}

    def obj(self, sort: str, i: int):
        return {"Point": Point, "Line": Line, "Circle": Circle}[sort](*map(float, self.domains[sort][i]))

    def describe(self, sort: str, i: int) -> str:
        c = ", ".join(f"{x:.6g}" for x in self.domains[sort][i])
        return f"{self.labels[sort][i]} ({c})"

    def sizes(self) -> tuple:
        return len(self.points), len(self.lines), len(self.circles)


class SceneBuilder:
    """Collects points, lines and circles without duplicates (within `merge`)."""

    def __init__(self, merge: float = 1e-7):
        self.merge = merge
        self.objs = {s: [] for s in SORTS}
        self.labels = {s: [] for s in SORTS}

    def _find(self, sort, obj):
        x = np.asarray(obj, float)
        for i, y in enumerate(self.objs[sort]):
            y = np.asarray(y)
            d = np.linalg.norm(x - y)
            if sort == "Line":
                d = min(d, np.linalg.norm(x + y))
            if d <= self.merge:
                return i
        return None

    def add(self, obj, label: str) -> int:
        sort = sort_of(obj)
        i = self._find(sort, obj)
        if i is None:
            i = len(self.objs[sort])
            self.objs[sort].append(obj)
            self.labels[sort].append(f"{'pLC'[SORTS.index(sort)]}{i}={label}")
        return i

    def name(self, sort: str, i: int) -> str:
        return self.labels[sort][i].split("=", 1)[0]

    def points(self) -> list:
        return self.objs["Point"]

    def scene(self, seed=None) -> Scene:
        return Scene(*(_as_array(self.objs[s], s) for s in SORTS), {s: list(v) for s, v in self.labels.items()},
                     seed)


def _collinear_pairs(b: SceneBuilder, rng, k: int) -> list:
    """Up to k random pairs of distinct points lying on a common line of the builder."""
    pts = np.asarray(b.points(), float)
    pairs = []
    for L in b.objs["Line"]:
        on = np.nonzero(np.abs(_signed(pts, np.asarray(L))) <= EPS)[0]
        pairs += [(int(i), int(j)) for i, j in itertools.combinations(on, 2)]
    if not pairs:
        return []
    pick = rng.choice(len(pairs), min(k, len(pairs)), replace=False)
    return [pairs[i] for i in pick]


def random_scene(rng: np.random.Generator, n_base: int = 4, n_circles: int = 3, n_concentric: int = 1,
                 n_parallel: int = 1, n_between: int = 6, n_extend: int = 3, n_reflect: int = 2,
                 n_inside: int = 3, n_on_circle: int = 1, n_tangent: int = 1) -> Scene:
    """A random configuration in which the relations of E hold often: `n_base` random points (pairwise
    apart, no three nearly collinear); the lines through all pairs of them and `n_parallel` lines through
    a base point parallel to another line; `n_circles` circles centred at a base point through another
    and `n_concentric` more with the centre of one of them and a smaller or larger radius; every
    pairwise intersection of these lines and circles (ill-conditioned ones, nearly parallel lines or
    nearly tangent circles, skipped); `n_tangent` times a line touching a circle and a circle about a
    base point touching it (with the points of contact), where "meets" must be false; then points
    strictly between and beyond pairs of points on a common line (midpoints, random ratios),
    reflections of points across lines, points inside circles and on circles."""
    for _ in range(1000):
        base = rng.uniform(-1, 1, (n_base, 2))
        ok = all(np.linalg.norm(p - q) > 0.35 for p, q in itertools.combinations(base, 2))
        ok = ok and all(abs(_cross(q - p, r - p)) > 0.15 for p, q, r in itertools.combinations(base, 3))
        if ok:
            break
    b = SceneBuilder()
    for i, p in enumerate(base):
        b.add(Point(*map(float, p)), f"base{i}")
    for i, j in itertools.combinations(range(n_base), 2):
        b.add(line_through(base[i], base[j]), f"line(p{i},p{j})")
    for _ in range(n_parallel):
        k = int(rng.integers(len(b.objs["Line"])))
        L = b.objs["Line"][k]
        off = [i for i in range(n_base) if abs(_signed(base[i], np.asarray(L))) > 0.1]
        if off:
            i = off[int(rng.integers(len(off)))]
            b.add(parallel_through(L, base[i]), f"parallel(p{i},L{k})")
    pairs = list(itertools.permutations(range(n_base), 2))
    for k in rng.choice(len(pairs), min(n_circles, len(pairs)), replace=False):
        i, j = pairs[k]
        b.add(circle_through(base[i], base[j]), f"circle(p{i},p{j})")
    for _ in range(n_concentric):
        cx, cy, r = b.objs["Circle"][int(rng.integers(len(b.objs["Circle"])))]
        b.add(Circle(cx, cy, float(r * rng.choice([rng.uniform(0.3, 0.7), rng.uniform(1.3, 1.8)]))),
              "concentric")
    for _ in range(n_tangent):
        k = int(rng.integers(len(b.objs["Circle"])))
        cx, cy, r = b.objs["Circle"][k]
        th = rng.uniform(0, 2 * np.pi)
        t = Point(cx + r * math.cos(th), cy + r * math.sin(th))
        b.add(t, f"on(C{k})")
        b.add(normalise_line(math.cos(th), math.sin(th), -(math.cos(th) * t.x + math.sin(th) * t.y)),
              f"tangent(C{k})")
        i = int(rng.integers(n_base))
        d = math.dist(base[i], (cx, cy))
        if d > 0.1 and abs(d - r) > 0.1:                 # the circle about p_i touching C_k
            u = (np.asarray(base[i]) - (cx, cy)) / d
            b.add(Point(cx + r * float(u[0]), cy + r * float(u[1])), f"touch(p{i},C{k})")
            b.add(Circle(float(base[i][0]), float(base[i][1]), abs(d - r)), f"tangent(p{i},C{k})")
    lines, circles = list(b.objs["Line"]), list(b.objs["Circle"])
    ln = [b.name("Line", i) for i in range(len(lines))]
    cn = [b.name("Circle", i) for i in range(len(circles))]
    for (i, L), (j, M) in itertools.combinations(enumerate(lines), 2):
        for p in intersect_lines(L, M, min_sin=0.05):
            if np.all(np.abs(p) < 6):
                b.add(p, f"meet({ln[i]},{ln[j]})")
    for i, L in enumerate(lines):
        for j, C in enumerate(circles):
            for p in intersect_line_circle(L, C, margin=1e-3):
                b.add(p, f"meet({ln[i]},{cn[j]})")
    for (i, C1), (j, C2) in itertools.combinations(enumerate(circles), 2):
        for p in intersect_circles(C1, C2, margin=1e-3):
            b.add(p, f"meet({cn[i]},{cn[j]})")
    for i, j in _collinear_pairs(b, rng, n_between):
        p, q = np.asarray(b.points()[i]), np.asarray(b.points()[j])
        t = 0.5 if rng.random() < 0.5 else float(rng.uniform(0.2, 0.8))
        b.add(Point(*map(float, p + t * (q - p))), f"between(p{i},p{j})")
    for i, j in _collinear_pairs(b, rng, n_extend):
        p, q = np.asarray(b.points()[i]), np.asarray(b.points()[j])
        b.add(Point(*map(float, q + rng.uniform(0.3, 1.0) * (q - p))), f"beyond(p{i},p{j})")
    n_pts = len(b.points())
    for _ in range(n_reflect):
        i, k = int(rng.integers(n_pts)), int(rng.integers(len(lines)))
        b.add(reflect(b.points()[i], lines[k]), f"reflect(p{i},{ln[k]})")
    for _ in range(n_inside):
        k = int(rng.integers(len(circles)))
        cx, cy, r = circles[k]
        v = rng.normal(size=2)
        v = v / np.linalg.norm(v) * r * rng.uniform(0.1, 0.9)
        b.add(Point(cx + float(v[0]), cy + float(v[1])), f"inside({cn[k]})")
    for k in range(min(n_on_circle, len(circles))):
        cx, cy, r = circles[k]
        th = rng.uniform(0, 2 * np.pi)
        b.add(Point(cx + r * math.cos(th), cy + r * math.sin(th)), f"on({cn[k]})")
    return b.scene()


def _isometry(rng) -> tuple:
    th = rng.uniform(0, 2 * np.pi)
    R = np.array([[math.cos(th), -math.sin(th)], [math.sin(th), math.cos(th)]])
    if rng.random() < 0.5:
        R = R @ np.diag([1.0, -1.0])
    return R, rng.uniform(-0.8, 0.8, 2)


def triangle_scene(rng: np.random.Generator, n_triangles: int = 2, n_copies: int = 2, lines: bool = True) -> Scene:
    """Random triangles abc, each with `n_copies` congruent copies (a random rotation, translation and
    maybe reflection) and two non-congruent relatives that agree with it in some parts: abc' with c'
    the other point of the ray bc at distance |a c| from a (same |a b|, |a c| and angle at b: the
    ambiguous case of "SSA"; every triangle is drawn with |a c| < |a b| so that c' exists), and c
    turned about a (same |a b|, |a c|, another angle at a). With `lines`, the lines through the sides."""
    b = SceneBuilder()
    for t in range(n_triangles):
        for _ in range(1000):
            pb = rng.uniform(-0.8, 0.8, 2)
            ab = rng.uniform(0.9, 1.5)
            phi = rng.uniform(0, 2 * np.pi)
            pa = pb + ab * np.array([math.cos(phi), math.sin(phi)])
            B = rng.uniform(math.radians(25), math.radians(65)) * rng.choice([-1, 1])
            u = np.array([math.cos(phi + B), math.sin(phi + B)])       # the ray from b
            h = ab * abs(math.sin(B))
            r = h + rng.uniform(0.25, 0.75) * (ab - h)
            along, half = ab * math.cos(B), math.sqrt(r * r - h * h)
            pc, pc2 = pb + (along - half) * u, pb + (along + half) * u
            tri = np.array([pa, pb, pc])
            sides = [np.linalg.norm(tri[i] - tri[j]) for i, j in ((0, 1), (1, 2), (0, 2))]
            if min(sides) > 0.3 and abs(_cross(tri[1] - tri[0], tri[2] - tri[0])) > 0.1 and half > 0.15:
                break
        th = rng.uniform(0.3, 1.0) * rng.choice([-1, 1])
        Rr = np.array([[math.cos(th), -math.sin(th)], [math.sin(th), math.cos(th)]])
        figures = [("tri", tri)]
        for k in range(n_copies):
            R, s = _isometry(rng)
            figures.append((f"copy{k}", tri @ R.T + s))
        figures.append(("ssa", np.array([pa, pb, pc2])))
        figures.append(("hinge", np.array([pa, pb, pa + Rr @ (pc - pa)])))
        for label, fig in figures:
            idx = [b.add(Point(*map(float, p)), f"T{t}{label}.{'abc'[i]}") for i, p in enumerate(fig)]
            if lines:
                for i, j in ((0, 1), (1, 2), (0, 2)):
                    p, q = b.points()[idx[i]], b.points()[idx[j]]
                    if math.dist(p, q) > 1e-6:
                        b.add(line_through(p, q), f"side(p{idx[i]},p{idx[j]})")
    return b.scene()


# ----------------------------------------------------------------------------------------------
# A statement on a scene.

@dataclasses.dataclass
class StatementReport:
    """What `check_statement` found.

    space: the number of assignments of the universals to scene objects; non_vacuous: those (of the
    ones enumerated) with every hypothesis true; checked: those whose conclusions were evaluated
    (all non-vacuous ones, or a sample for statements with existentials); ambiguous: assignments
    skipped because an atom was within the tolerance band; capped: the enumeration was subsampled;
    violations: descriptions (at most `max_reports`); n_violations: their number.
    """
    name: str
    space: int = 0
    non_vacuous: int = 0
    checked: int = 0
    ambiguous: int = 0
    capped: bool = False
    n_violations: int = 0
    violations: list = dataclasses.field(default_factory=list)


def _describe_assignment(scene: Scene, order: Sequence, row: Sequence, extra: dict | None = None) -> str:
    parts = [f"{v} = {scene.describe(s, int(i))}" for (v, s), i in zip(order, row)]
    for k, o in (extra or {}).items():
        parts.append(f"{k} = {o}")
    return "; ".join(parts)


def check_statement(statement: S.Statement, scene: Scene, *, eps: float = EPS, band: float = BAND,
                    cap: int = 200_000, max_exists: int = 60, max_reports: int = 3,
                    rng: np.random.Generator | None = None) -> StatementReport:
    """Every assignment of the statement's universals to the scene's objects (subsampled beyond `cap`
    rows): those making every hypothesis true must make the conclusions true; for existentials, at
    most `max_exists` of them are checked, with the witnesses searched among the scene's objects and
    the `constructions` from the assigned objects."""
    rng = rng if rng is not None else np.random.default_rng(0)
    rep = StatementReport(statement.name)
    res = enumerate_assignments(statement.universals, statement.hypotheses, scene.domains, eps=eps, band=band,
                                cap=cap, rng=rng)
    rep.space, rep.capped, rep.ambiguous = res.space, res.capped, res.ambiguous
    rows = res.rows
    rep.non_vacuous = len(rows)
    if not len(rows):
        return rep
    if not statement.existentials:
        env = {v: (s, scene.domains[s][rows[:, i]]) for i, (v, s) in enumerate(res.order)}
        codes = [np.broadcast_to(truth_array(c, env, eps, band), (len(rows),)) for c in statement.conclusions]
        code = _and(*codes)
        rep.checked = len(rows)
        rep.ambiguous += int((code == U).sum())
        bad = np.nonzero(code == F)[0]
        rep.n_violations = len(bad)
        for k in bad[:max_reports]:
            false = [S.format_formula(c) for c, cc in zip(statement.conclusions, codes) if cc[k] == F]
            rep.violations.append(f"{statement.name}: hypotheses true, conclusion false ({' and '.join(false)}) at "
                                  + _describe_assignment(scene, res.order, rows[k]))
        return rep
    pick = rows if len(rows) <= max_exists else rows[np.sort(rng.choice(len(rows), max_exists, replace=False))]
    for row in pick:
        objs = {v: scene.obj(s, int(i)) for (v, s), i in zip(res.order, row)}
        extra = constructions(objs.values())
        domains = {s: np.concatenate([scene.domains[s], _as_array(extra[s], s)]) for s in SORTS}
        found = enumerate_assignments(statement.existentials, statement.conclusions, domains, _env_of(objs),
                                      eps=eps, band=band, cap=cap, rng=rng)
        rep.checked += 1
        if len(found.rows):
            continue
        if found.ambiguous:
            rep.ambiguous += 1
            continue
        rep.n_violations += 1
        if len(rep.violations) < max_reports:
            rep.violations.append(
                f"{statement.name}: hypotheses true, no witness for "
                f"{', '.join(v for v, _ in statement.existentials)} among {sum(len(d) for d in domains.values())} "
                f"scene and constructed objects at " + _describe_assignment(scene, res.order, row))
    return rep
