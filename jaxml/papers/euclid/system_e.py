"""System E (Avigad, Dean & Mumma 2009) over z3, with axioms instantiated over the objects in context.

Sorts Point, Line, Circle are z3 uninterpreted sorts; the relations of E are z3 predicates; segment
lengths, angles (degrees, `right` = 90) and triangle areas are z3 reals.

Every axiom is a named statement in the statement language (`AXIOMS_SOURCE`, families
diagrammatic / metric / transfer), universally quantified and *instantiated over the finite set of
objects in the current context* (ground instantiation) instead of being handed to z3 as a
quantified formula: each query is then quantifier-free (a decidable mix of propositional logic,
equality and linear real arithmetic), so z3 answers `sat` (not entailed: a counter-model exists)
or `unsat` (entailed) predictably, and `unknown` only on a timeout. Two sound reductions keep the
instances few: when an axiom has more than `budget` tuples of objects, a hypothesis `on_line(x, L)`
restricts `x` to the points that the facts or the goal relate to `L` (in an on_line / same_side /
opposite_sides atom of either polarity, or through a `between` with two points on `L`); an instance whose
hypotheses contain `x != x`, or a `between` with a repeated point (false by the instances of
`between_symm`, which are all kept), is vacuous and skipped. Fewer
instances make the checker weaker, never unsound; a step that needs a missing incidence can state
it first with `have`.

Rules with existential conclusions (constructions, the parallel postulate), superposition (SAS, SSS) and the
6-point `area_congruence` are not instantiated automatically: proofs apply them explicitly
(`RULES_SOURCE`).
"""

from __future__ import annotations

import dataclasses
import functools
import time
from collections.abc import Iterable, Sequence

import z3

from jaxml.papers.euclid import syntax as S

RIGHT_ANGLE = 90

AXIOMS_SOURCE = r"""
# ---- Diagrammatic: generalities
axiom two_points_determine_line [diagrammatic]: forall (a b : Point) (L M : Line),
  a != b and on_line(a, L) and on_line(b, L) and on_line(a, M) and on_line(b, M) => L = M
axiom centre_unique [diagrammatic]: forall (a b : Point) (α : Circle), centre(a, α) and centre(b, α) => a = b
axiom centre_inside_circle [diagrammatic]: forall (a : Point) (α : Circle), centre(a, α) => inside_circle(a, α)
axiom inside_not_on_circle [diagrammatic]: forall (a : Point) (α : Circle), inside_circle(a, α) => not on_circle(a, α)
# ---- Diagrammatic: betweenness
axiom between_symm [diagrammatic]: forall (a b c : Point),
  between(a, b, c) => between(c, b, a) and a != b and a != c and not between(b, a, c)
axiom between_same_line_out [diagrammatic]: forall (a b c : Point) (L : Line),
  between(a, b, c) and on_line(a, L) and on_line(b, L) => on_line(c, L)
axiom between_same_line_in [diagrammatic]: forall (a b c : Point) (L : Line),
  between(a, b, c) and on_line(a, L) and on_line(c, L) => on_line(b, L)
axiom between_trans_in [diagrammatic]: forall (a b c d : Point),
  between(a, b, c) and between(a, d, b) => between(a, d, c)
axiom between_trans_out [diagrammatic]: forall (a b c d : Point),
  between(a, b, c) and between(b, c, d) => between(a, b, d)
axiom between_points [diagrammatic]: forall (a b c : Point) (L : Line),
  a != b and b != c and c != a and on_line(a, L) and on_line(b, L) and on_line(c, L) =>
  between(a, b, c) or between(b, a, c) or between(a, c, b)
axiom between_not_trans [diagrammatic]: forall (a b c d : Point),
  between(a, b, c) and between(a, b, d) => not between(c, b, d)
# ---- Diagrammatic: same side
axiom same_side_rfl [diagrammatic]: forall (a : Point) (L : Line), not on_line(a, L) => same_side(a, a, L)
axiom same_side_symm [diagrammatic]: forall (a b : Point) (L : Line), same_side(a, b, L) => same_side(b, a, L)
axiom same_side_not_on_line [diagrammatic]: forall (a b : Point) (L : Line), same_side(a, b, L) => not on_line(a, L)
axiom same_side_trans [diagrammatic]: forall (a b c : Point) (L : Line),
  same_side(a, b, L) and same_side(a, c, L) => same_side(b, c, L)
axiom same_side_pigeon_hole [diagrammatic]: forall (a b c : Point) (L : Line),
  not on_line(a, L) and not on_line(b, L) and not on_line(c, L) =>
  same_side(a, b, L) or same_side(a, c, L) or same_side(b, c, L)
# ---- Diagrammatic: Pasch
axiom pasch_1 [diagrammatic]: forall (a b c : Point) (L : Line),
  between(a, b, c) and same_side(a, c, L) => same_side(a, b, L)
axiom pasch_2 [diagrammatic]: forall (a b c : Point) (L : Line),
  between(a, b, c) and on_line(a, L) and not on_line(b, L) => same_side(b, c, L)
axiom pasch_3 [diagrammatic]: forall (a b c : Point) (L : Line),
  between(a, b, c) and on_line(b, L) => not same_side(a, c, L)
axiom pasch_4 [diagrammatic]: forall (a b c : Point) (L M : Line),
  L != M and on_line(b, L) and on_line(b, M) and a != c and on_line(a, M) and on_line(c, M) and a != b and c != b
  and not same_side(a, c, L) => between(a, b, c)
# ---- Diagrammatic: triple incidence
axiom triple_incidence_1 [diagrammatic]: forall (a b c d : Point) (L M N : Line),
  on_line(a, L) and on_line(a, M) and on_line(a, N) and on_line(b, L) and on_line(c, M) and on_line(d, N)
  and same_side(c, d, L) and same_side(b, c, N) => not same_side(b, d, M)
axiom triple_incidence_2 [diagrammatic]: forall (a b c d : Point) (L M N : Line),
  on_line(a, L) and on_line(a, M) and on_line(a, N) and on_line(b, L) and on_line(c, M) and on_line(d, N)
  and same_side(c, d, L) and not same_side(b, d, M) and not on_line(d, M) and b != a => same_side(b, c, N)
axiom triple_incidence_3 [diagrammatic]: forall (a b c d e : Point) (L M N : Line),
  on_line(a, L) and on_line(a, M) and on_line(a, N) and on_line(b, L) and on_line(c, M) and on_line(d, N)
  and same_side(c, d, L) and same_side(b, c, N) and same_side(d, e, M) and same_side(c, e, N) => same_side(c, e, L)
# ---- Diagrammatic: circles
axiom circle_line_intersections [diagrammatic]: forall (a b c : Point) (L : Line) (α : Circle),
  on_line(a, L) and on_line(b, L) and on_line(c, L) and inside_circle(a, α) and on_circle(b, α)
  and on_circle(c, α) and b != c => between(b, a, c)
axiom circle_points_between [diagrammatic]: forall (a b c : Point) (α : Circle),
  (inside_circle(a, α) or on_circle(a, α)) and (inside_circle(b, α) or on_circle(b, α)) and between(a, c, b)
  => inside_circle(c, α)
axiom circle_points_extend [diagrammatic]: forall (a b c : Point) (α : Circle),
  (inside_circle(a, α) or on_circle(a, α)) and not inside_circle(c, α) and between(a, c, b) => outside_circle(b, α)
axiom circles_intersections_diff_side [diagrammatic]: forall (a b c d : Point) (α β : Circle) (L : Line),
  α != β and on_circle(c, α) and on_circle(c, β) and on_circle(d, α) and on_circle(d, β) and c != d
  and centre(a, α) and centre(b, β) and on_line(a, L) and on_line(b, L) => not same_side(c, d, L)
# ---- Diagrammatic: intersections
axiom intersection_lines_opposing [diagrammatic]: forall (a b : Point) (L M : Line),
  opposite_sides(a, b, L) and on_line(a, M) and on_line(b, M) => lines_meet(L, M)
axiom intersection_lines_common_point [diagrammatic]: forall (a : Point) (L M : Line),
  on_line(a, L) and on_line(a, M) and L != M => lines_meet(L, M)
axiom parallel_line_unique [diagrammatic]: forall (a : Point) (L M N : Line),
  not on_line(a, L) and on_line(a, M) and on_line(a, N) and not lines_meet(L, M) and not lines_meet(L, N) => M = N
axiom intersection_symm [diagrammatic]: forall (L M : Line), lines_meet(L, M) => lines_meet(M, L)
axiom intersection_circle_line_1 [diagrammatic]: forall (a b : Point) (α : Circle) (L : Line),
  (on_circle(a, α) or inside_circle(a, α)) and (on_circle(b, α) or inside_circle(b, α)) and opposite_sides(a, b, L)
  => line_meets_circle(L, α)
axiom intersection_circle_line_2 [diagrammatic]: forall (a : Point) (α : Circle) (L : Line),
  inside_circle(a, α) and on_line(a, L) => line_meets_circle(L, α)
# a ON α, as LeanEuclid's intersection_circle_circle_1 (Diagrammatic.lean); Avigad et al.'s "a on or inside α"
# is unsound: concentric circles of radii 2 and 1 with a their centre and b on the larger one (issue 16)
axiom intersection_circle_circle_1 [diagrammatic]: forall (a b : Point) (α β : Circle),
  on_circle(a, α) and (inside_circle(b, α) or on_circle(b, α)) and inside_circle(a, β)
  and outside_circle(b, β) => circles_meet(α, β)
axiom intersection_circle_circle_2 [diagrammatic]: forall (a b : Point) (α β : Circle),
  on_circle(a, α) and inside_circle(b, α) and inside_circle(a, β) and on_circle(b, β) => circles_meet(α, β)
axiom circles_meet_symm [diagrammatic]: forall (α β : Circle), circles_meet(α, β) => circles_meet(β, α)
# ---- Metric
axiom zero_segment_if [metric]: forall (a b : Point), |a b| = 0 => a = b
axiom zero_segment_onlyif [metric]: forall (a b : Point), a = b => |a b| = 0
axiom segment_nonneg [metric]: forall (a b : Point), 0 <= |a b|
axiom segment_symm [metric]: forall (a b : Point), |a b| = |b a|
axiom angle_symm [metric]: forall (a b c : Point), a != b and b != c => angle(a, b, c) = angle(c, b, a)
axiom angle_range [metric]: forall (a b c : Point),
  a != b and b != c => 0 <= angle(a, b, c) and angle(a, b, c) <= 2 * right
axiom degenerate_area [metric]: forall (a b : Point), area(a, a, b) = 0
axiom area_nonneg [metric]: forall (a b c : Point), 0 <= area(a, b, c)
axiom area_symm_1 [metric]: forall (a b c : Point), area(a, b, c) = area(c, a, b)
axiom area_symm_2 [metric]: forall (a b c : Point), area(a, b, c) = area(a, c, b)
# ---- Transfer: diagram-segment
axiom between_if [transfer]: forall (a b c : Point), between(a, b, c) => |a b| + |b c| = |a c|
axiom equal_circles [transfer]: forall (a b c : Point) (α β : Circle),
  centre(a, α) and centre(a, β) and on_circle(b, α) and on_circle(c, β) and |a b| = |a c| => α = β
axiom point_on_circle_if [transfer]: forall (a b c : Point) (α : Circle),
  centre(a, α) and on_circle(b, α) and |a c| = |a b| => on_circle(c, α)
axiom point_on_circle_onlyif [transfer]: forall (a b c : Point) (α : Circle),
  centre(a, α) and on_circle(b, α) and on_circle(c, α) => |a c| = |a b|
axiom point_in_circle_if [transfer]: forall (a b c : Point) (α : Circle),
  centre(a, α) and on_circle(b, α) and |a c| < |a b| => inside_circle(c, α)
axiom point_in_circle_onlyif [transfer]: forall (a b c : Point) (α : Circle),
  centre(a, α) and on_circle(b, α) and inside_circle(c, α) => |a c| < |a b|
# ---- Transfer: diagram-angle
axiom degenerate_angle_if [transfer]: forall (a b c : Point) (L : Line),
  a != b and a != c and on_line(a, L) and on_line(b, L) and on_line(c, L) and not between(b, a, c) => angle(b, a, c) = 0
axiom degenerate_angle_onlyif [transfer]: forall (a b c : Point) (L : Line),
  a != b and a != c and on_line(a, L) and on_line(b, L) and angle(b, a, c) = 0 => on_line(c, L) and not between(b, a, c)
axiom sum_angles_if [transfer]: forall (a b c d : Point) (L M : Line),
  on_line(a, L) and on_line(a, M) and on_line(b, L) and on_line(c, M) and a != b and a != c and not on_line(d, L)
  and not on_line(d, M) and L != M and angle(b, a, c) = angle(b, a, d) + angle(d, a, c)
  => same_side(b, d, M) and same_side(c, d, L)
axiom sum_angles_onlyif [transfer]: forall (a b c d : Point) (L M : Line),
  on_line(a, L) and on_line(a, M) and on_line(b, L) and on_line(c, M) and a != b and a != c and not on_line(d, L)
  and not on_line(d, M) and L != M and same_side(b, d, M) and same_side(c, d, L)
  => angle(b, a, c) = angle(b, a, d) + angle(d, a, c)
axiom perpendicular_if [transfer]: forall (a b c d : Point) (L : Line),
  on_line(a, L) and on_line(b, L) and between(a, c, b) and not on_line(d, L) and angle(a, c, d) = angle(d, c, b)
  => angle(a, c, d) = right
axiom perpendicular_onlyif [transfer]: forall (a b c d : Point) (L : Line),
  on_line(a, L) and on_line(b, L) and between(a, c, b) and not on_line(d, L) and angle(a, c, d) = right
  => angle(a, c, d) = angle(d, c, b)
axiom flat_angle_if [transfer]: forall (a b c : Point),
  a != b and b != c and angle(a, b, c) = 2 * right => between(a, b, c)
axiom flat_angle_onlyif [transfer]: forall (a b c : Point), between(a, b, c) => angle(a, b, c) = 2 * right
axiom equal_angles [transfer]: forall (a b b' c c' : Point) (L M : Line),
  on_line(a, L) and on_line(b, L) and on_line(b', L) and on_line(a, M) and on_line(c, M) and on_line(c', M)
  and b != a and b' != a and c != a and c' != a and not between(b, a, b') and not between(c, a, c')
  => angle(b, a, c) = angle(b', a, c')
# ---- Transfer: diagram-area
axiom degenerate_area_if [transfer]: forall (a b c : Point) (L : Line),
  a != b and on_line(a, L) and on_line(b, L) and area(a, b, c) = 0 => on_line(c, L)
axiom degenerate_area_onlyif [transfer]: forall (a b c : Point) (L : Line),
  a != b and on_line(a, L) and on_line(b, L) and on_line(c, L) => area(a, b, c) = 0
axiom sum_areas_if [transfer]: forall (a b c d : Point) (L : Line),
  on_line(a, L) and on_line(b, L) and on_line(c, L) and a != b and a != c and b != c and not on_line(d, L)
  and between(a, c, b) => area(a, c, d) + area(d, c, b) = area(a, d, b)
axiom sum_areas_onlyif [transfer]: forall (a b c d : Point) (L : Line),
  on_line(a, L) and on_line(b, L) and on_line(c, L) and a != b and a != c and b != c and not on_line(d, L)
  and area(a, c, d) + area(d, c, b) = area(a, d, b) => between(a, c, b)
"""

RULES_SOURCE = r"""
# ---- Constructions: lines and circles
rule line [construction]: forall (a b : Point), a != b => exists (L : Line), on_line(a, L) and on_line(b, L)
rule circle [construction]: forall (a b : Point), a != b => exists (α : Circle), centre(a, α) and on_circle(b, α)
# ---- Constructions: points
rule point_on_line [construction]: forall (L : Line), exists (a : Point), on_line(a, L)
rule point_off_line [construction]: forall (L : Line), exists (a : Point), not on_line(a, L)
rule point_between [construction]: forall (a b : Point) (L : Line), a != b and on_line(a, L) and on_line(b, L) =>
  exists (c : Point), between(a, c, b)
rule extend [construction]: forall (a b : Point) (L : Line), a != b and on_line(a, L) and on_line(b, L) =>
  exists (c : Point), between(a, b, c)
rule point_same_side [construction]: forall (a : Point) (L : Line), not on_line(a, L) =>
  exists (b : Point), same_side(a, b, L)
rule point_opposite_side [construction]: forall (a : Point) (L : Line), not on_line(a, L) =>
  exists (b : Point), opposite_sides(a, b, L)
rule point_inside_circle [construction]: forall (α : Circle), exists (a : Point), inside_circle(a, α)
rule point_on_circle [construction]: forall (α : Circle), exists (a : Point), on_circle(a, α)
# ---- Constructions: intersections
rule intersection_lines [construction]: forall (L M : Line), lines_meet(L, M) =>
  exists (a : Point), on_line(a, L) and on_line(a, M)
rule intersection_circle_line [construction]: forall (α : Circle) (L : Line), line_meets_circle(L, α) =>
  exists (a b : Point), on_circle(a, α) and on_line(a, L) and on_circle(b, α) and on_line(b, L) and a != b
rule intersection_circle_line_between [construction]: forall (b c : Point) (α : Circle) (L : Line),
  inside_circle(b, α) and on_line(b, L) and outside_circle(c, α) and on_line(c, L) =>
  exists (a : Point), on_circle(a, α) and on_line(a, L) and between(b, a, c)
rule intersection_circle_line_extend [construction]: forall (b c : Point) (α : Circle) (L : Line),
  inside_circle(c, α) and on_line(b, L) and on_line(c, L) and b != c =>
  exists (a : Point), on_circle(a, α) and on_line(a, L) and between(b, c, a)
rule intersection_circles [construction]: forall (α β : Circle), circles_meet(α, β) =>
  exists (a : Point), on_circle(a, α) and on_circle(a, β)
rule intersection_circles_side [construction]: forall (c d : Point) (α β : Circle) (L : Line),
  circles_meet(α, β) and centre(c, α) and centre(d, β) and on_line(c, L) and on_line(d, L) =>
  exists (a b : Point), on_circle(a, α) and on_circle(a, β) and on_circle(b, α) and on_circle(b, β)
  and opposite_sides(a, b, L)
rule intersection_circles_same_side [construction]: forall (b c d : Point) (α β : Circle) (L : Line),
  circles_meet(α, β) and centre(c, α) and centre(d, β) and on_line(c, L) and on_line(d, L) and not on_line(b, L) =>
  exists (a : Point), on_circle(a, α) and on_circle(a, β) and same_side(a, b, L)
rule intersection_circles_opposite_side [construction]: forall (b c d : Point) (α β : Circle) (L : Line),
  circles_meet(α, β) and centre(c, α) and centre(d, β) and on_line(c, L) and on_line(d, L) and not on_line(b, L) =>
  exists (a : Point), on_circle(a, α) and on_circle(a, β) and opposite_sides(a, b, L)
# ---- Parallel postulate (transfer axiom with an existential conclusion)
rule lines_intersect [transfer]: forall (a b c d : Point) (L M N : Line),
  on_line(a, L) and on_line(b, L) and on_line(b, M) and on_line(c, M) and on_line(c, N) and on_line(d, N) and b != c
  and same_side(a, d, M) and angle(a, b, c) + angle(b, c, d) < 2 * right =>
  exists (e : Point), on_line(e, L) and on_line(e, N) and same_side(e, a, M)
# ---- Parallelogram areas (LeanEuclid's Transfer.lean, "not in [Avigad et al., 2009]"; rectangle_area is
# "required by Proposition 47"), applied explicitly. The premises are LeanEuclid's formParallelogram: a, b on
# AB; c, d on CD; a, c on AC; b, d on BD; b != d; a, c on one side of BD; AB, CD and AC, BD do not meet.
rule parallelogram_area [transfer]: forall (a b c d : Point) (AB CD AC BD : Line),
  on_line(a, AB) and on_line(b, AB) and on_line(c, CD) and on_line(d, CD) and on_line(a, AC) and on_line(c, AC)
  and on_line(b, BD) and on_line(d, BD) and b != d and same_side(a, c, BD) and not lines_meet(AB, CD)
  and not lines_meet(AC, BD) =>
  area(a, c, d) + area(a, d, b) = area(b, a, c) + area(b, c, d)
rule sum_parallelograms_area [transfer]: forall (a b c d e f : Point) (AB CD AC BD : Line),
  on_line(a, AB) and on_line(b, AB) and on_line(c, CD) and on_line(d, CD) and on_line(a, AC) and on_line(c, AC)
  and on_line(b, BD) and on_line(d, BD) and b != d and same_side(a, c, BD) and not lines_meet(AB, CD)
  and not lines_meet(AC, BD) and between(a, e, b) and between(c, f, d) =>
  area(a, c, f) + area(a, f, e) + area(e, f, d) + area(e, d, b) = area(a, c, d) + area(a, d, b)
rule rectangle_area [transfer]: forall (a b c d : Point) (AB CD AC BD : Line),
  on_line(a, AB) and on_line(b, AB) and on_line(c, CD) and on_line(d, CD) and on_line(a, AC) and on_line(c, AC)
  and on_line(b, BD) and on_line(d, BD) and b != d and same_side(a, c, BD) and not lines_meet(AB, CD)
  and not lines_meet(AC, BD) and angle(a, c, d) = right =>
  area(a, c, d) + area(a, b, d) = |a b| * |a c| and area(b, a, c) + area(b, d, c) = |a b| * |a c|
# ---- Metric with six points (applied explicitly)
rule area_congruence [metric]: forall (a b c d e f : Point),
  |a b| = |d e| and |b c| = |e f| and |c a| = |f d| and angle(a, b, c) = angle(d, e, f)
  and angle(b, c, a) = angle(e, f, d) and angle(c, a, b) = angle(f, d, e) => area(a, b, c) = area(d, e, f)
# ---- Superposition (Avigad, Dean & Mumma §3.7: the two rules justified by superposition)
rule sas [superposition]: forall (a b c d e f : Point),
  a != b and b != c and c != a and d != e and e != f and f != d
  and |a b| = |d e| and |a c| = |d f| and angle(b, a, c) = angle(e, d, f) =>
  |b c| = |e f| and angle(a, b, c) = angle(d, e, f) and angle(a, c, b) = angle(d, f, e)
  and area(a, b, c) = area(d, e, f)
rule sss [superposition]: forall (a b c d e f : Point),
  a != b and b != c and c != a and d != e and e != f and f != d
  and |a b| = |d e| and |b c| = |e f| and |c a| = |f d| =>
  angle(b, a, c) = angle(e, d, f) and angle(a, b, c) = angle(d, e, f) and angle(a, c, b) = angle(d, f, e)
  and area(a, b, c) = area(d, e, f)
"""


@dataclasses.dataclass(frozen=True)
class Axiom:
    """A named statement of E and, for instantiation, its variable order and restrictions."""
    statement: S.Statement
    order: tuple             # variable names, lines and circles first
    restrict: dict           # point var -> (line vars L with a hypothesis on_line(var, L), ...)
    prune_neq: tuple         # (x, y) pairs with a hypothesis x != y
    prune_between: tuple     # argument triples of positive between hypotheses
    template: str            # the SMT-LIB assertion with {i} for the i-th variable of `order`

    @property
    def name(self) -> str:
        return self.statement.name

    @property
    def family(self) -> str:
        return self.statement.tag


def _compile(statement: S.Statement) -> Axiom:
    sorts = dict(statement.universals)
    restrict: dict[str, list] = {v: [] for v, s in sorts.items() if s == "Point"}
    neq, betw = [], []
    for h in statement.hypotheses:
        if isinstance(h, S.Pred) and h.name == "on_line":
            restrict[h.args[0]].append(h.args[1])
        elif isinstance(h, S.Not) and isinstance(h.arg, S.ObjEq):
            neq.append((h.arg.a, h.arg.b))
        elif isinstance(h, S.Pred) and h.name == "between" and statement.name != "between_symm":
            betw.append(h.args)       # between_symm itself is what makes between(x, x, y) false
    points = sorted((v for v in sorts if sorts[v] == "Point"), key=lambda v: -len(restrict[v]))
    order = tuple(v for v, s in statement.universals if s != "Point") + tuple(points)
    slots = {v: "{%d}" % i for i, v in enumerate(order)}
    body = _smt_and([formula_smt(c, slots) for c in statement.conclusions])
    if statement.hypotheses:
        body = f"(=> {_smt_and([formula_smt(h, slots) for h in statement.hypotheses])} {body})"
    return Axiom(statement, order, {k: tuple(v) for k, v in restrict.items()}, tuple(neq), tuple(betw),
                 f"(assert {body})")


@functools.lru_cache(maxsize=None)
def axioms() -> tuple[Axiom, ...]:
    """The automatically instantiated axioms of E, in source order."""
    return tuple(_compile(item.statement) for item in S.parse_file(AXIOMS_SOURCE))


@functools.lru_cache(maxsize=None)
def rules() -> dict[str, S.Statement]:
    """The explicitly applied rules (constructions, superposition, ...), by name."""
    return {item.statement.name: item.statement for item in S.parse_file(RULES_SOURCE)}


def axiom(name: str) -> Axiom:
    for ax in axioms():
        if ax.name == name:
            return ax
    raise KeyError(f"no axiom {name!r}; axioms: {', '.join(a.name for a in axioms())}")


# ----------------------------------------------------------------------------------------------
# The z3 vocabulary and the translation of formulas.

class _Vocab:
    def __init__(self):
        P, L, C = (z3.DeclareSort(s) for s in S.SORTS)
        self.sort = {"Point": P, "Line": L, "Circle": C}
        B, R = z3.BoolSort(), z3.RealSort()
        self.pred = {name: z3.Function(name, *[self.sort[s] for s in sig], B)
                     for name, sig in S.PREDICATES.items() if name not in S.MACROS}
        self.length = z3.Function("length", P, P, R)
        self.angle = z3.Function("angle", P, P, P, R)
        self.area = z3.Function("area", P, P, P, R)
        self._consts: dict = {}
        self.decls = dict(self.pred, length=self.length, angle=self.angle, area=self.area)

    def const(self, name: str, sort: str) -> z3.ExprRef:
        key = (name, sort)
        if key not in self._consts:
            self._consts[key] = z3.Const(f"{sort[0]}!{name}", self.sort[sort])
        return self._consts[key]


VOCAB = _Vocab()


def to_z3(f, objects: dict[str, str]) -> z3.BoolRef:
    """A formula over `objects` {name: sort} as a z3 Boolean (through its SMT-LIB text)."""
    symbols = {n: _symbol(n, s) for n, s in objects.items()}
    decls = dict(VOCAB.decls)
    decls.update({f"{s[0]}!{n}": VOCAB.const(n, s) for n, s in objects.items()})
    return z3.parse_smt2_string(f"(assert {formula_smt(f, symbols)})", sorts=VOCAB.sort, decls=decls)[0]


def substitute(f, mapping: dict[str, str]):
    """`f` with object names renamed by `mapping` (names not in it are kept)."""
    m = lambda x: mapping.get(x, x)  # noqa: E731
    if isinstance(f, S.Pred):
        return S.Pred(f.name, tuple(m(x) for x in f.args))
    if isinstance(f, S.ObjEq):
        return S.ObjEq(m(f.a), m(f.b))
    if isinstance(f, S.Length):
        return S.Length(m(f.a), m(f.b))
    if isinstance(f, S.AngleOf):
        return S.AngleOf(m(f.a), m(f.b), m(f.c))
    if isinstance(f, S.AreaOf):
        return S.AreaOf(m(f.a), m(f.b), m(f.c))
    if isinstance(f, (S.Num, S.Right)):
        return f
    if isinstance(f, S.Sum):
        return S.Sum(tuple((c, substitute(x, mapping)) for c, x in f.terms))
    if isinstance(f, S.Product):
        return S.Product(tuple(substitute(x, mapping) for x in f.factors))
    if isinstance(f, S.Cmp):
        return S.Cmp(f.op, substitute(f.lhs, mapping), substitute(f.rhs, mapping))
    if isinstance(f, S.Not):
        return S.Not(substitute(f.arg, mapping))
    if isinstance(f, (S.And, S.Or)):
        return type(f)(tuple(substitute(x, mapping) for x in f.args))
    raise TypeError(f"not a formula: {f!r}")


def _smt_and(parts: list[str]) -> str:
    return parts[0] if len(parts) == 1 else f"(and {' '.join(parts)})"


def _smt_num(x) -> str:
    """An exact SMT-LIB real for a number (Fraction, int or float, taken exactly): '90.0', '(/ 1.0 10.0)',
    negatives as '(- ...)' (never a float's decimal approximation, nor '1e+23', which z3 does not read)."""
    x = S.exact(x)
    n, d = abs(x.numerator), x.denominator
    text = f"{n}.0" if d == 1 else f"(/ {n}.0 {d}.0)"
    return f"(- {text})" if x < 0 else text


def term_smt(t, env: dict) -> str:
    """A magnitude term as SMT-LIB text, objects looked up in `env` {name: symbol text}."""
    if isinstance(t, S.Length):
        return f"(length {env[t.a]} {env[t.b]})"
    if isinstance(t, S.AngleOf):
        return f"(angle {env[t.a]} {env[t.b]} {env[t.c]})"
    if isinstance(t, S.AreaOf):
        return f"(area {env[t.a]} {env[t.b]} {env[t.c]})"
    if isinstance(t, S.Num):
        return _smt_num(t.value)
    if isinstance(t, S.Right):
        return _smt_num(RIGHT_ANGLE)
    if isinstance(t, S.Product):
        return f"(* {' '.join(term_smt(x, env) for x in t.factors)})"
    if isinstance(t, S.Sum):
        parts = [term_smt(x, env) if c == 1 else f"(* {_smt_num(c)} {term_smt(x, env)})" for c, x in t.terms]
        return parts[0] if len(parts) == 1 else f"(+ {' '.join(parts)})"
    raise TypeError(f"not a term: {t!r}")


def formula_smt(f, env: dict) -> str:
    """A formula as SMT-LIB text (macros expanded), objects looked up in `env` {name: symbol text}."""
    if isinstance(f, S.Pred):
        a = [env[x] for x in f.args]
        if f.name == "opposite_sides":
            return (f"(and (not (on_line {a[0]} {a[2]})) (not (on_line {a[1]} {a[2]})) "
                    f"(not (same_side {a[0]} {a[1]} {a[2]})))")
        if f.name == "outside_circle":
            return f"(and (not (inside_circle {a[0]} {a[1]})) (not (on_circle {a[0]} {a[1]})))"
        if f.name == "triangle":
            return (f"(and (not (= {a[0]} {a[1]})) (not (= {a[1]} {a[2]})) (not (= {a[0]} {a[2]})) "
                    f"(> (area {a[0]} {a[1]} {a[2]}) 0.0))")
        if f.name == "parallel":
            return f"(and (not (= {a[0]} {a[1]})) (not (lines_meet {a[0]} {a[1]})))"
        return f"({f.name} {' '.join(a)})"
    if isinstance(f, S.ObjEq):
        return f"(= {env[f.a]} {env[f.b]})"
    if isinstance(f, S.Cmp):
        return f"({f.op} {term_smt(f.lhs, env)} {term_smt(f.rhs, env)})"
    if isinstance(f, S.Not):
        return f"(not {formula_smt(f.arg, env)})"
    if isinstance(f, S.And):
        return f"(and {' '.join(formula_smt(x, env) for x in f.args)})"
    if isinstance(f, S.Or):
        return f"(or {' '.join(formula_smt(x, env) for x in f.args)})"
    raise TypeError(f"not a formula: {f!r}")


def _symbol(name: str, sort: str) -> str:
    return f"|{sort[0]}!{name}|"


_INSTANCE_CACHE: dict = {}


_CACHE_LIMIT = 1_000_000


def ground_many(keys: list) -> list:
    """z3 assertions for instance keys (axiom name, (object, sort)...), parsed in one batch and cached
    (the cache is emptied when it passes a million instances)."""
    if len(_INSTANCE_CACHE) > _CACHE_LIMIT:
        _INSTANCE_CACHE.clear()
    missing = [k for k in keys if k not in _INSTANCE_CACHE]
    if missing:
        by_name = {ax.name: ax for ax in axioms()}
        text = "\n".join(by_name[k[0]].template.format(*[_symbol(o, s) for o, s in k[1:]]) for k in missing)
        names = {o: s for k in missing for o, s in k[1:]}
        decls = dict(VOCAB.decls)
        decls.update({f"{s[0]}!{o}": VOCAB.const(o, s) for o, s in names.items()})
        parsed = z3.parse_smt2_string(text, sorts=VOCAB.sort, decls=decls)
        for k, expr in zip(missing, parsed):
            _INSTANCE_CACHE[k] = expr
    return [_INSTANCE_CACHE[k] for k in keys]


# ----------------------------------------------------------------------------------------------
# Ground instantiation.

def _known_incidences(facts: Iterable) -> dict[str, set]:
    """{L: points p with an atom on_line(p, L) of either polarity in `facts` (macros included)},
    closed under 'two points of a between-triple on L put the third on L'."""
    known: dict[str, set] = {}
    betweens = []
    for f in S.atoms_of(facts):
        if isinstance(f, S.Pred) and f.name in ("on_line", "same_side", "opposite_sides"):
            for p in f.args[:-1]:
                known.setdefault(f.args[-1], set()).add(p)
        elif isinstance(f, S.Pred) and f.name == "between":
            betweens.append(f.args)
    changed = True
    while changed:
        changed = False
        for pts in known.values():
            for triple in betweens:
                if sum(p in pts for p in triple) == 2:
                    pts.update(triple)
                    changed = True
    return known


def instances(ax: Axiom, objects: dict[str, str], known: dict, budget: int = 0) -> Iterable[dict[str, str]]:
    """Assignments {var: object} of the axiom's variables to context objects (see the module doc).
    The on_line restriction applies only when the unrestricted count would exceed `budget`."""
    sorts = dict(ax.statement.universals)
    by_sort: dict[str, list[str]] = {}
    for name, sort in objects.items():
        by_sort.setdefault(sort, []).append(name)
    order = ax.order
    restricted = _all_tuples(ax, objects) > budget

    def rec(i: int, env: dict):
        if i == len(order):
            yield env
            return
        var = order[i]
        if restricted and sorts[var] == "Point" and ax.restrict.get(var):
            cands = None
            for other in ax.restrict[var]:
                pts = known.get(env[other], set())
                cands = pts if cands is None else cands & pts
            cands = sorted(cands)
        else:
            cands = by_sort.get(sorts[var], [])
        for c in cands:
            env[var] = c
            yield from rec(i + 1, env)
        env.pop(var, None)

    for env in rec(0, {}):
        if any(env[x] == env[y] for x, y in ax.prune_neq):
            continue
        if any(len({env[x] for x in t}) < 3 for t in ax.prune_between):
            continue
        yield dict(env)


def _all_tuples(ax: Axiom, objects: dict[str, str]) -> int:
    """How many assignments of the axiom's variables to objects of their sorts there are."""
    sorts = dict(ax.statement.universals)
    n = 1
    for v in ax.order:
        n *= sum(1 for s in objects.values() if s == sorts[v])
    return n


def instance_count_bound(ax: Axiom, objects: dict[str, str], known: dict, budget: int = 0) -> int:
    """An upper bound on how many assignments `instances(ax, objects, known, budget)` yields, computed
    without enumerating them: exact when no on_line restriction applies (before the pruning of vacuous
    instances); with it, each restricted point ranges over the points known on its first line."""
    sorts = dict(ax.statement.universals)
    count = {s: 0 for s in S.SORTS}
    for sort in objects.values():
        count[sort] += 1
    full = _all_tuples(ax, objects)
    if full <= budget:
        return full
    by_line: dict[str, int] = {}      # line variable -> how many point variables it restricts (first)
    for v in ax.order:
        if sorts[v] == "Point" and ax.restrict.get(v):
            by_line[ax.restrict[v][0]] = by_line.get(ax.restrict[v][0], 0) + 1
    bound = 1
    for v in ax.order:
        if not (v in by_line or (sorts[v] == "Point" and ax.restrict.get(v))):
            bound *= count[sorts[v]]
    lines = [o for o, s in objects.items() if s == "Line"]
    for k in by_line.values():          # sum over the line's objects of (points known on it) ** k
        bound *= sum(len(known.get(line, ())) ** k for line in lines)
    return bound


# ----------------------------------------------------------------------------------------------
# Contexts and queries.

@dataclasses.dataclass
class Verdict:
    """The answer to one query.

    Attributes:
      status: for `entails`, 'proved' (z3: unsat of context + negated goal), 'not_proved' (sat: a
        counter-model exists over the instantiated theory) or 'timeout' (z3: unknown; never counted
        as proved); for `consistent`, 'sat', 'unsat' or 'timeout'.
      seconds: solver wall time, including building the ground instances.
      core: labels of the context facts in z3's unsat core (when proved).
      detail: a readable reason (what the counter-model makes false, or z3's reason for unknown).
      n_instances: ground axiom instances in the query.
    """
    status: str
    seconds: float
    core: tuple = ()
    detail: str = ""
    n_instances: int = 0

    @property
    def proved(self) -> bool:
        return self.status == "proved"


_KEYS_CACHE: dict = {}


def _cached(key: tuple, compute):
    """The instance keys (or their bound) of a context state, computed once: the queries of a proof share
    their objects and incidences, and enumerating the instances in Python dominated their time. A pure
    function of `key`; the cache holds the 64 latest states."""
    if key not in _KEYS_CACHE:
        if len(_KEYS_CACHE) >= 64:
            _KEYS_CACHE.pop(next(iter(_KEYS_CACHE)))
        _KEYS_CACHE[key] = compute()
    return _KEYS_CACHE[key]


# Per-query bounds. Book I: statements need at most 280,431 ground instances by `instance_bound` (I.43;
# 63,225 built), proofs at most 361,612 (lemma_I16; 244,248 built by the end of I.23's proof), and z3
# holds about 250 MB after the largest proofs.
MAX_INSTANCES = 2_000_000
MAX_MEMORY_MB = 4096         # z3's memory (all its allocations in the process) while a query runs


class _TooManyInstances(Exception):
    pass


class Context:
    """Objects (name -> sort) and labelled facts; answers entailment queries with z3.

    Every query is bounded: by `timeout_s` (and `rlimit`), by `max_instances` ground instances (an
    upper bound on their number is computed before any is built; past the limit the query is not
    attempted) and by `max_memory_mb` of z3 memory. Hitting any bound answers status 'timeout' (not
    proved, the solver gave up) with the reason in `detail`, never an exception.

    Args:
      objects: {name: sort}.
      facts: (label, formula) pairs.
      exclude: axiom names left out of the background theory (for ablations and tests).
      timeout_s: per-query z3 timeout in seconds.
      rlimit: optional z3 resource limit per query (deterministic; 0 = none).
      budget: an axiom is instantiated over all tuples of objects when there are at most this many,
        else with the on_line restriction (see the module doc).
      max_instances: the most ground axiom instances a query may need (see `instance_bound`).
      max_memory_mb: z3's `max_memory` for each check, in MB (z3 counts all its allocations in the
        process, cached instances included).
    """

    def __init__(self, objects: dict[str, str] | None = None, facts: Sequence = (), *,
                 exclude: Iterable[str] = (), timeout_s: float = 15.0, rlimit: int = 0, budget: int = 2000,
                 max_instances: int = MAX_INSTANCES, max_memory_mb: int = MAX_MEMORY_MB):
        if not timeout_s > 0:
            raise ValueError(f"timeout_s={timeout_s} must be > 0 seconds")
        if not (isinstance(max_instances, int) and max_instances >= 1):
            raise ValueError(f"max_instances={max_instances!r} must be an int >= 1")
        if not (isinstance(max_memory_mb, int) and max_memory_mb >= 1):
            raise ValueError(f"max_memory_mb={max_memory_mb!r} must be an int >= 1 (megabytes)")
        self.max_instances, self.max_memory_mb = max_instances, max_memory_mb
        self.objects: dict[str, str] = {}
        self.facts: list[tuple[str, object]] = []
        self.exclude = frozenset(exclude)
        unknown = self.exclude - {a.name for a in axioms()}
        if unknown:
            raise ValueError(f"exclude names unknown axioms {sorted(unknown)}")
        self.timeout_s, self.rlimit, self.budget = timeout_s, rlimit, budget
        self._solver = None
        self._n_instances = 0
        for name, sort in (objects or {}).items():
            self.add_object(name, sort)
        for label, f in facts:
            self.add_fact(label, f)

    def copy(self) -> "Context":
        c = Context(exclude=self.exclude, timeout_s=self.timeout_s, rlimit=self.rlimit, budget=self.budget,
                    max_instances=self.max_instances, max_memory_mb=self.max_memory_mb)
        c.objects, c.facts = dict(self.objects), list(self.facts)
        return c

    def add_object(self, name: str, sort: str) -> None:
        if sort not in S.SORTS:
            raise ValueError(f"unknown sort {sort!r}; accepted: {S.SORTS}")
        if name in self.objects:
            raise ValueError(f"object {name!r} already exists (a {self.objects[name]}); choose a fresh name")
        self.objects[name] = sort

    def add_fact(self, label: str, f) -> None:
        S.check_sorts(f, self.objects, where=f"fact {label!r}: ")
        self.facts.append((label, f))

    def instance_bound(self, extra: Sequence = ()) -> int:
        """An upper bound, computed without building them, on the ground instances `instance_keys(extra)`
        lists (exact over points alone; see `instance_count_bound`)."""
        return self._bound(self._known(extra))

    def _known(self, extra: Sequence) -> dict:
        return _known_incidences([f for _, f in self.facts] + list(extra))

    def _bound(self, known: dict) -> int:
        return _cached(("bound",) + self._key(known), lambda: sum(
            instance_count_bound(ax, self.objects, known, self.budget)
            for ax in axioms() if ax.name not in self.exclude))

    def _key(self, known: dict) -> tuple:
        """What the instances depend on: the objects, the known incidences, the excluded axioms, the budget."""
        return (tuple(self.objects.items()), tuple(sorted((L, tuple(sorted(p))) for L, p in known.items())),
                tuple(sorted(self.exclude)), self.budget)

    def instance_keys(self, extra: Sequence = ()) -> list:
        """Keys (axiom name, (object, sort)...) of the ground instances of every axiom over the objects,
        given the incidences mentioned in the facts and in `extra` formulas (the goal)."""
        return self._keys(self._known(extra))

    def _keys(self, known: dict) -> list:
        return _cached(("keys",) + self._key(known), lambda: self._enumerate(known))

    def _enumerate(self, known: dict) -> list:
        keys = []
        for ax in axioms():
            if ax.name in self.exclude:
                continue
            sorts = dict(ax.statement.universals)
            keys += [(ax.name,) + tuple((env[v], sorts[v]) for v in ax.order)
                     for env in instances(ax, self.objects, known, self.budget)]
        return keys

    def _sync(self, extra: Sequence = ()) -> z3.Solver:
        """The solver with every instance so far (instances are only ever added: each is valid in E)
        and every fact, tracked for unsat cores."""
        known = self._known(extra)          # once per query: the bound and the instances both need it
        need = self._bound(known)
        if need > self.max_instances:
            n = {s: sum(x == s for x in self.objects.values()) for s in S.SORTS}
            raise _TooManyInstances(
                f"not attempted: the query needs up to {need:,} ground instances (over {n['Point']} points, "
                f"{n['Line']} lines, {n['Circle']} circles), above the limit {self.max_instances:,} (max_instances)")
        if self._solver is None:
            self._solver = z3.Solver()
            self._solver.set("unsat_core", True)
            self._added, self._n_added, self._labels = set(), 0, {}
        new = [k for k in self._keys(known) if k not in self._added]
        if new:
            self._solver.add(ground_many(new))
            self._added.update(new)
        self._n_instances = len(self._added)
        for label, f in self.facts[self._n_added:]:
            lit = z3.Bool(f"fact!{len(self._labels)}")
            self._labels[str(lit)] = label
            self._solver.assert_and_track(to_z3(f, self.objects), lit)
        self._n_added = len(self.facts)
        self._solver.set("timeout", max(1, int(self.timeout_s * 1000)))
        self._solver.set("max_memory", int(self.max_memory_mb))
        if self.rlimit:
            self._solver.set("rlimit", int(self.rlimit))
        return self._solver

    def _out_of_memory(self, error: z3.Z3Exception, t0: float) -> Verdict:
        """A 'timeout' for z3 stopping at its memory limit (other z3 errors are raised: they are bugs);
        the solver is dropped and rebuilt by the next query."""
        message = error.value.decode(errors="replace") if isinstance(error.value, bytes) else str(error.value)
        if "memory" not in message:
            raise error
        self._solver = None
        return Verdict("timeout", time.perf_counter() - t0, (), f"z3 stopped: {message} (max_memory_mb="
                       f"{self.max_memory_mb}: z3's allocations in this process passed the limit)", 0)

    def entails(self, goal) -> Verdict:
        """Whether the facts and the instantiated theory entail `goal` (a formula over the objects)."""
        S.check_sorts(goal, self.objects, where="goal: ")
        t0 = time.perf_counter()
        try:
            solver = self._sync([goal])
        except _TooManyInstances as e:
            return Verdict("timeout", time.perf_counter() - t0, (), str(e), 0)
        except z3.Z3Exception as e:
            return self._out_of_memory(e, t0)
        pushed = False
        try:
            solver.push()
            pushed = True
            solver.add(z3.Not(to_z3(goal, self.objects)))
            answer = solver.check()
            if answer == z3.unsat:
                core = tuple(sorted({self._labels[str(x)] for x in solver.unsat_core()}))
                return Verdict("proved", time.perf_counter() - t0, core, "", self._n_instances)
            if answer == z3.sat:
                detail = _counter_model(solver.model(), goal, self.objects)
                return Verdict("not_proved", time.perf_counter() - t0, (), detail, self._n_instances)
            return Verdict("timeout", time.perf_counter() - t0, (),
                           f"z3 returned unknown ({solver.reason_unknown()})", self._n_instances)
        except z3.Z3Exception as e:
            return self._out_of_memory(e, t0)
        finally:
            if pushed and self._solver is solver:
                solver.pop()

    def consistent(self) -> Verdict:
        """Whether the facts are satisfiable together with the instantiated theory: status 'sat'
        (a model exists), 'unsat' (contradictory; `core` names the facts) or 'timeout'."""
        t0 = time.perf_counter()
        try:
            solver = self._sync()
            answer = solver.check()
            if answer == z3.unsat:
                core = tuple(sorted({self._labels[str(x)] for x in solver.unsat_core()}))
        except _TooManyInstances as e:
            return Verdict("timeout", time.perf_counter() - t0, (), str(e), 0)
        except z3.Z3Exception as e:
            return self._out_of_memory(e, t0)
        dt = time.perf_counter() - t0
        if answer == z3.sat:
            return Verdict("sat", dt, (), "satisfiable", self._n_instances)
        if answer == z3.unsat:
            return Verdict("unsat", dt, core, "contradictory facts: " + "; ".join(core), self._n_instances)
        return Verdict("timeout", dt, (), f"z3 returned unknown ({solver.reason_unknown()})", self._n_instances)


def _counter_model(model, goal, objects) -> str:
    """The conjuncts of `goal` that the counter-model makes false, as text."""
    parts = goal.args if isinstance(goal, S.And) else (goal,)
    false = [S.format_formula(p) for p in parts
             if z3.is_false(model.eval(to_z3(p, objects), model_completion=True))]
    return "z3 found a model of the context in which " + (
        " and ".join(f"`{x}`" for x in false) if false else f"`{S.format_formula(goal)}`") + " is false"


def statement_context(statement: S.Statement, **kwargs) -> Context:
    """The context of a statement's universals with its hypotheses as facts ('hypothesis i')."""
    ctx = Context(dict(statement.universals), **kwargs)
    for i, h in enumerate(statement.hypotheses, 1):
        ctx.add_fact(f"hypothesis {i}: {S.format_formula(h)}", h)
    return ctx


def hypotheses_satisfiable(statement: S.Statement, **kwargs) -> Verdict:
    """Whether a statement's hypotheses are consistent with E (instantiated over its universals):
    a Verdict with status 'sat', 'unsat' (with the core) or 'timeout'."""
    return statement_context(statement, **kwargs).consistent()


def count_by_family() -> dict[str, int]:
    counts: dict[str, int] = {}
    for ax in axioms():
        counts[ax.family] = counts.get(ax.family, 0) + 1
    for st in rules().values():
        counts["rule:" + st.tag] = counts.get("rule:" + st.tag, 0) + 1
    return counts

