# Euclid's Elements, Book I, propositions 1-48: statements in the statement language of
# jaxml.papers.euclid (see syntax.py for the grammar), texts from Heath's translation (public domain).
# Proofs of all 48 propositions (and the lemmas before them) are checked by jaxml.papers.euclid.checker; `apply`/`obtain` may use the rules
# of system E (system_e.RULES_SOURCE) and any earlier theorem of this file.

theorem I.1 "On a given finite straight line to construct an equilateral triangle.":
  forall (a b : Point), a != b =>
  exists (c : Point), |a b| = |a c| and |a b| = |b c| and c != a and c != b
proof
  obtain α by circle(a, b)
  obtain β by circle(b, a)
  obtain c by intersection_circles(α, β)     # that α and β meet is the gap z3 fills
qed

theorem I.2 "To place at a given point (as an extremity) a straight line equal to a given straight line.":
  forall (a b c : Point), b != c =>
  exists (l : Point), |a l| = |b c|
proof
  cases
  case a = b:
    let l = c
  case a != b:
    obtain d by I.1(a, b)
    obtain L by line(d, b)
    obtain α by circle(b, c)
    obtain g by intersection_circle_line_extend(d, b, α, L)
    obtain β by circle(d, g)
    obtain M by line(d, a)
    obtain l by intersection_circle_line_extend(d, a, β, M)
  end
qed

theorem I.3 "Given two unequal straight lines, to cut off from the greater a straight line equal to the less.":
  forall (a b c d : Point), a != b and c != d and |c d| < |a b| =>
  exists (e : Point), between(a, e, b) and |a e| = |c d|
proof
  obtain f by I.2(a, c, d)
  obtain α by circle(a, f)
  obtain L by line(a, b)
  obtain e by intersection_circle_line_between(a, b, α, L)
qed

theorem I.4 "If two triangles have the two sides equal to two sides respectively, and have the angles contained by the equal straight lines equal, they will also have the base equal to the base, the triangle will be equal to the triangle, and the remaining angles will be equal to the remaining angles respectively, namely those which the equal sides subtend.":
  forall (a b c d e f : Point),
  triangle(a, b, c) and triangle(d, e, f) and |a b| = |d e| and |a c| = |d f| and angle(b, a, c) = angle(e, d, f) =>
  |b c| = |e f| and angle(a, b, c) = angle(d, e, f) and angle(a, c, b) = angle(d, f, e) and area(a, b, c) = area(d, e, f)
proof
  apply sas(a, b, c, d, e, f)
qed

theorem I.5 "In isosceles triangles the angles at the base are equal to one another, and, if the equal straight lines be produced further, the angles under the base will be equal to one another.":
  forall (a b c : Point), triangle(a, b, c) and |a b| = |a c| =>
  angle(a, b, c) = angle(a, c, b)
proof
  apply I.4(a, b, c, a, c, b)
qed

theorem I.6 "If in a triangle two angles be equal to one another, the sides which subtend the equal angles will also be equal to one another.":
  forall (a b c : Point), triangle(a, b, c) and angle(a, b, c) = angle(a, c, b) =>
  |a b| = |a c|
proof
  obtain M by line(b, c)
  cases
  case |a c| < |a b|:
    obtain L by line(a, b)
    obtain d by I.3(b, a, a, c)
    apply I.4(b, d, c, c, a, b)
  case |a b| < |a c|:
    obtain L by line(a, c)
    obtain d by I.3(c, a, a, b)
    apply I.4(c, d, b, b, a, c)
  case |a b| = |a c|:
  end
qed

theorem I.7 "Given two straight lines constructed on a straight line (from its extremities) and meeting in a point, there cannot be constructed on the same straight line (from its extremities), and on the same side of it, two other straight lines meeting in another point and equal to the former two respectively, namely each to that which has the same extremity with it.":
  forall (a b c d : Point) (L : Line),
  on_line(b, L) and on_line(c, L) and b != c and same_side(a, d, L) and |b a| = |b d| and |c a| = |c d| =>
  a = d
proof
  obtain α by circle(b, a)
  obtain β by circle(c, a)
qed

theorem I.8 "If two triangles have the two sides equal to two sides respectively, and have also the base equal to the base, they will also have the angles equal which are contained by the equal straight lines.":
  forall (a b c d e f : Point),
  triangle(a, b, c) and triangle(d, e, f) and |a b| = |d e| and |a c| = |d f| and |b c| = |e f| =>
  angle(b, a, c) = angle(e, d, f)
proof
  apply sss(a, b, c, d, e, f)
qed

# I.10 comes before I.9 here: our proof of I.10 uses the two intersections of the circles of I.1 (and no
# angle bisection), and the proof of I.9 bisects the base of an isosceles triangle with I.10 (Euclid
# does it the other way round).
theorem I.10 "To bisect a given finite straight line.":
  forall (a b : Point), a != b =>
  exists (d : Point), between(a, d, b) and |a d| = |d b|
proof
  obtain L by line(a, b)
  obtain α by circle(a, b)
  obtain β by circle(b, a)
  obtain c e by intersection_circles_side(a, b, α, β, L)
  obtain M by line(c, e)
  obtain d by intersection_lines(L, M)
  have between(c, d, e)
  apply sss(c, a, e, c, b, e)
  obtain N by line(c, a)
  obtain K by line(c, b)
  have angle(a, c, d) = angle(b, c, d)
  have a != d and b != d
  apply sas(c, a, d, c, b, d)
qed

theorem I.9 "To bisect a given rectilineal angle.":
  forall (a b c : Point), triangle(a, b, c) =>
  exists (m : Point), angle(b, a, m) = angle(m, a, c) and angle(b, a, m) + angle(m, a, c) = angle(b, a, c)
proof
  obtain AB by line(a, b)
  obtain AC by line(a, c)
  obtain x by extend(c, a, AC)
  obtain γ by circle(a, b)
  obtain e by intersection_circle_line_extend(x, a, γ, AC)
  have |a e| = |a b| and not between(c, a, e)
  obtain m by I.10(b, e)
  apply sss(a, b, m, a, e, m)
  have angle(b, a, e) = angle(b, a, m) + angle(m, a, e)
  have angle(b, a, e) = angle(b, a, c) and angle(m, a, e) = angle(m, a, c)
qed

# ---- I.11-I.20, I.22 and I.23 have proofs (I.13 and I.16 with a lemma each); the other statements have none
# (each one's hypotheses are checked satisfiable).
# A parallelogram "PG(p q r s)" is written out: p, q on PQ; r, s on RS; p, r on PR; q, s on QS;
# PQ parallel to RS and PR parallel to QS (sides pq, rs, pr, qs; diagonal p-s).

theorem I.11 "To draw a straight line at right angles to a given straight line from a given point on it.":
  forall (a c : Point) (L : Line), on_line(a, L) and on_line(c, L) and a != c =>
  exists (f : Point), not on_line(f, L) and angle(a, c, f) = right
proof
  obtain γ by circle(c, a)
  obtain e by intersection_circle_line_extend(a, c, γ, L)
  obtain f by I.1(a, e)
  have not on_line(f, L)
  apply sss(c, a, f, c, e, f)
qed

theorem I.12 "To a given infinite straight line, from a given point which is not on it, to draw a perpendicular straight line.":
  forall (c : Point) (L : Line), not on_line(c, L) =>
  exists (g h : Point), on_line(g, L) and on_line(h, L) and g != h and angle(g, h, c) = right
proof
  obtain d by point_opposite_side(c, L)
  obtain γ by circle(c, d)
  obtain g e by intersection_circle_line(γ, L)
  obtain h by I.10(g, e)
  apply sss(h, g, c, h, e, c)
qed

# A lemma for I.13 (Euclid's proof, with the perpendicular of I.11 on the side of a).
theorem lemma_I13 "I.13 when a perpendicular bf stands on the side of a.": forall (a b c d f : Point) (L : Line),
  on_line(c, L) and on_line(d, L) and between(c, b, d) and not on_line(a, L) and same_side(a, f, L)
  and angle(c, b, f) = right =>
  angle(c, b, a) + angle(a, b, d) = 2 * right
proof
  obtain N by line(b, f)
  obtain M by line(b, a)
  have angle(f, b, d) = right
  have not on_line(c, N) and not on_line(d, N)
  cases
  case on_line(a, N):
    have angle(c, b, a) = angle(c, b, f) and angle(a, b, d) = angle(f, b, d)
  case same_side(a, c, N):
    have angle(c, b, f) = angle(c, b, a) + angle(a, b, f)
    have same_side(d, f, M)
    have angle(a, b, d) = angle(a, b, f) + angle(f, b, d)
  case same_side(a, d, N):
    have angle(d, b, f) = angle(d, b, a) + angle(a, b, f)
    have same_side(c, f, M)
    have angle(a, b, c) = angle(a, b, f) + angle(f, b, c)
  end
qed

theorem I.13 "If a straight line set up on a straight line make angles, it will make either two right angles or angles equal to two right angles.":
  forall (a b c d : Point) (L : Line), on_line(c, L) and on_line(d, L) and between(c, b, d) and not on_line(a, L) =>
  angle(c, b, a) + angle(a, b, d) = 2 * right
proof
  obtain f by I.11(c, b, L)
  cases
  case same_side(a, f, L):
    apply lemma_I13(a, b, c, d, f, L)
  case not same_side(a, f, L):
    obtain N by line(f, b)
    obtain g by extend(f, b, N)
    have same_side(a, g, L)
    have angle(c, b, g) = right
    apply lemma_I13(a, b, c, d, g, L)
  end
qed

theorem I.14 "If with any straight line, and at a point on it, two straight lines not lying on the same side make the adjacent angles equal to two right angles, the two straight lines will be in a straight line with one another.":
  forall (a b c d : Point) (L : Line),
  on_line(a, L) and on_line(b, L) and a != b and opposite_sides(c, d, L) and angle(a, b, c) + angle(a, b, d) = 2 * right =>
  between(c, b, d)
proof
  obtain M by line(c, b)
  obtain e by extend(c, b, M)
  have not on_line(a, M)
  apply I.13(a, b, c, e, M)
  have same_side(e, d, L)
  obtain N by line(b, d)
  cases
  case on_line(d, M):
  case same_side(d, a, M):
    have angle(a, b, e) = angle(a, b, d) + angle(d, b, e)
  case opposite_sides(d, a, M):
    have not on_line(e, N)
    have same_side(a, e, N)
    have angle(a, b, d) = angle(a, b, e) + angle(e, b, d)
  end
qed

theorem I.15 "If two straight lines cut one another, they make the vertical angles equal to one another.":
  forall (a b c d e : Point) (L M : Line),
  on_line(a, L) and on_line(b, L) and on_line(c, M) and on_line(d, M) and L != M and between(a, e, b) and between(c, e, d) =>
  angle(a, e, c) = angle(d, e, b) and angle(c, e, b) = angle(a, e, d)
proof
  have not on_line(c, L) and not on_line(b, M) and not on_line(d, L)
  apply I.13(c, e, a, b, L)
  apply I.13(b, e, c, d, M)
  apply I.13(d, e, a, b, L)
qed

# A lemma for I.16: Euclid's proof for the angle at a; I.16 applies it twice.
theorem lemma_I16 "The exterior angle at c exceeds the interior angle at a.": forall (a b c d : Point),
  triangle(a, b, c) and between(b, c, d) => angle(b, a, c) < angle(a, c, d)
proof
  obtain AC by line(a, c)
  obtain BD by line(b, c)
  obtain e by I.10(a, c)
  obtain BE by line(b, e)
  obtain γ by circle(e, b)
  obtain f by intersection_circle_line_extend(b, e, γ, BE)
  have AC != BE
  apply I.15(a, c, b, f, e, AC, BE)
  apply sas(e, a, b, e, c, f)
  obtain AB by line(a, b)
  obtain CF by line(c, f)
  have angle(b, a, c) = angle(f, c, a)
  have same_side(f, d, AC) and same_side(f, a, BD)
  have angle(a, c, d) = angle(a, c, f) + angle(f, c, d)
  have not on_line(f, BD)
qed

theorem I.16 "In any triangle, if one of the sides be produced, the exterior angle is greater than either of the interior and opposite angles.":
  forall (a b c d : Point), triangle(a, b, c) and between(b, c, d) =>
  angle(a, b, c) < angle(a, c, d) and angle(b, a, c) < angle(a, c, d)
proof
  apply lemma_I16(a, b, c, d)
  obtain AC by line(a, c)
  obtain g by extend(a, c, AC)
  apply lemma_I16(b, a, c, g)
  obtain BD by line(b, c)
  apply I.15(a, g, b, d, c, AC, BD)
qed

theorem I.17 "In any triangle two angles taken together in any manner are less than two right angles.":
  forall (a b c : Point), triangle(a, b, c) =>
  angle(a, b, c) + angle(b, c, a) < 2 * right
proof
  obtain BC by line(b, c)
  obtain d by extend(b, c, BC)
  apply I.16(a, b, c, d)
  have not on_line(a, BC)
  apply I.13(a, c, b, d, BC)
qed

theorem I.18 "In any triangle the greater side subtends the greater angle.":
  forall (a b c : Point), triangle(a, b, c) and |a b| < |a c| =>
  angle(a, c, b) < angle(a, b, c)
proof
  obtain AB by line(a, b)
  obtain BC by line(b, c)
  obtain AC by line(a, c)
  obtain d by I.3(a, c, a, b)
  obtain BD by line(b, d)
  apply I.5(a, b, d)
  apply I.16(b, c, d, a)
  have angle(a, b, c) = angle(a, b, d) + angle(d, b, c)
  have angle(b, c, d) = angle(b, c, a)
qed

theorem I.19 "In any triangle the greater angle is subtended by the greater side.":
  forall (a b c : Point), triangle(a, b, c) and angle(a, c, b) < angle(a, b, c) =>
  |a b| < |a c|
proof
  cases
  case |a b| < |a c|:
  case |a b| = |a c|:
    apply I.5(a, b, c)
  case |a c| < |a b|:
    apply I.18(a, c, b)
  end
qed

theorem I.20 "In any triangle two sides taken together in any manner are greater than the remaining one.":
  forall (a b c : Point), triangle(a, b, c) =>
  |b c| < |a b| + |a c|
proof
  obtain AB by line(b, a)
  obtain γ by circle(a, c)
  obtain d by intersection_circle_line_extend(b, a, γ, AB)
  obtain CD by line(c, d)
  obtain BC by line(b, c)
  obtain AC by line(a, c)
  apply I.5(a, c, d)
  have angle(b, c, d) = angle(b, c, a) + angle(a, c, d)
  have angle(b, d, c) = angle(a, d, c)
  apply I.19(b, c, d)
qed

theorem I.21 "If on one of the sides of a triangle, from its extremities, there be constructed two straight lines meeting within the triangle, the straight lines so constructed will be less than the remaining two sides of the triangle, but will contain a greater angle.":
  forall (a b c d : Point) (AB BC CA : Line),
  triangle(a, b, c) and on_line(a, AB) and on_line(b, AB) and on_line(b, BC) and on_line(c, BC) and on_line(c, CA)
  and on_line(a, CA) and same_side(d, a, BC) and same_side(d, b, CA) and same_side(d, c, AB) =>
  |b d| + |d c| < |b a| + |a c| and angle(b, a, c) < angle(b, d, c)
proof
  obtain BD by line(b, d)
  have opposite_sides(a, c, BD)
  obtain e by intersection_lines(BD, CA)
  have between(a, e, c)
  have between(b, d, e)
  apply I.20(a, b, e)
  apply I.20(e, d, c)
  apply I.16(c, e, d, b)
  apply I.16(b, a, e, c)
  have angle(b, a, e) = angle(b, a, c)
  have angle(c, e, d) = angle(c, e, b)
qed

theorem I.22 "Out of three straight lines, which are equal to three given straight lines, to construct a triangle: thus it is necessary that two of the straight lines taken together in any manner should be greater than the remaining one.":
  forall (a b c d e f : Point),
  a != b and c != d and e != f and |e f| < |a b| + |c d| and |c d| < |a b| + |e f| and |a b| < |c d| + |e f| =>
  exists (k l m : Point), |k l| = |a b| and |l m| = |c d| and |m k| = |e f|
proof
  obtain p by I.2(b, c, d)
  obtain q by I.2(a, e, f)
  obtain α by circle(a, q)
  obtain β by circle(b, p)
  obtain AB by line(a, b)
  obtain u v by intersection_circle_line(α, AB)
  obtain m by intersection_circles(α, β)
  let k = a
  let l = b
qed

theorem I.23 "On a given straight line and at a point on it to construct a rectilineal angle equal to a given rectilineal angle.":
  forall (a b c d e : Point), a != b and triangle(c, d, e) =>
  exists (f : Point), angle(b, a, f) = angle(c, d, e)
proof
  apply I.20(d, c, e)
  apply I.20(c, d, e)
  apply I.20(e, c, d)
  obtain p by I.2(a, d, c)
  obtain q by I.2(a, d, e)
  obtain AB by line(a, b)
  obtain α by circle(a, p)
  obtain u v by intersection_circle_line(α, AB)
  cases
  case not between(u, a, b):
    obtain r by I.2(u, c, e)
    obtain γ by circle(a, q)
    obtain δ by circle(u, r)
    obtain s t by intersection_circle_line(γ, AB)
    obtain f by intersection_circles(γ, δ)
    apply sss(d, c, e, a, u, f)
    obtain AF by line(a, f)
  case between(u, a, b):
    have not between(v, a, b)
    obtain r by I.2(v, c, e)
    obtain γ by circle(a, q)
    obtain δ by circle(v, r)
    obtain s t by intersection_circle_line(γ, AB)
    obtain f by intersection_circles(γ, δ)
    apply sss(d, c, e, a, v, f)
    obtain AF by line(a, f)
  end
qed

# I.23 with the new side on a chosen side of the line (the circles' intersection on the side of p);
# I.24 and I.31 need the side.
theorem lemma_I23 "I.23 with the new side on the side of p.":
  forall (a b c d e p : Point) (AB : Line), a != b and on_line(a, AB) and on_line(b, AB) and not on_line(p, AB)
  and triangle(c, d, e) =>
  exists (f : Point), angle(b, a, f) = angle(c, d, e) and same_side(f, p, AB)
proof
  apply I.20(d, c, e)
  apply I.20(c, d, e)
  apply I.20(e, c, d)
  obtain q0 by I.2(a, d, c)
  obtain q by I.2(a, d, e)
  obtain α by circle(a, q0)
  obtain u v by intersection_circle_line(α, AB)
  cases
  case not between(u, a, b):
    obtain r by I.2(u, c, e)
    obtain γ by circle(a, q)
    obtain δ by circle(u, r)
    obtain s t by intersection_circle_line(γ, AB)
    have circles_meet(γ, δ)
    obtain f by intersection_circles_same_side(p, a, u, γ, δ, AB)
    apply sss(d, c, e, a, u, f)
    obtain AF by line(a, f)
  case between(u, a, b):
    have not between(v, a, b)
    obtain r by I.2(v, c, e)
    obtain γ by circle(a, q)
    obtain δ by circle(v, r)
    obtain s t by intersection_circle_line(γ, AB)
    have circles_meet(γ, δ)
    obtain f by intersection_circles_same_side(p, a, v, γ, δ, AB)
    apply sss(d, c, e, a, v, f)
    obtain AF by line(a, f)
  end
qed

theorem I.24 "If two triangles have the two sides equal to two sides respectively, but have the one of the angles contained by the equal straight lines greater than the other, they will also have the base greater than the base.":
  forall (a b c d e f : Point),
  triangle(a, b, c) and triangle(d, e, f) and |a b| = |d e| and |a c| = |d f| and angle(e, d, f) < angle(b, a, c) =>
  |e f| < |b c|
proof
  obtain DE by line(d, e)
  obtain g0 by lemma_I23(d, e, b, a, c, f, DE)
  obtain DG by line(d, g0)
  obtain DF by line(d, f)
  obtain x by extend(g0, d, DG)
  obtain γ by circle(d, f)
  obtain g by intersection_circle_line_extend(x, d, γ, DG)
  have angle(e, d, g) = angle(b, a, c) and same_side(g, f, DE)
  apply I.4(d, e, g, a, b, c)
  have not on_line(f, DG)
  cases
  case opposite_sides(f, e, DG):
    have same_side(e, g, DF)
    have angle(e, d, f) = angle(e, d, g) + angle(g, d, f)
  case same_side(f, e, DG):
    obtain EG by line(e, g)
    cases
    case on_line(f, EG):
      have between(e, f, g)
    case same_side(f, d, EG):
      apply I.21(g, e, d, f, EG, DE, DG)
    case opposite_sides(f, d, EG):
      obtain h by intersection_lines(DF, EG)
      have between(d, h, f)
      have between(e, h, g)
      obtain FE by line(f, e)
      obtain FG by line(f, g)
      apply I.5(d, f, g)
      have angle(e, f, g) = angle(e, f, h) + angle(h, f, g)
      have angle(d, g, f) = angle(d, g, h) + angle(h, g, f)
      have angle(h, f, g) = angle(d, f, g) and angle(h, g, f) = angle(e, g, f)
      apply I.19(e, f, g)
    end
  end
qed

theorem I.25 "If two triangles have the two sides equal to two sides respectively, but have the base greater than the base, they will also have the one of the angles contained by the equal straight lines greater than the other.":
  forall (a b c d e f : Point),
  triangle(a, b, c) and triangle(d, e, f) and |a b| = |d e| and |a c| = |d f| and |e f| < |b c| =>
  angle(e, d, f) < angle(b, a, c)
proof
  cases
  case angle(e, d, f) < angle(b, a, c):
  case angle(e, d, f) = angle(b, a, c):
    apply I.4(a, b, c, d, e, f)
  case angle(b, a, c) < angle(e, d, f):
    apply I.24(d, e, f, a, b, c)
  end
qed

theorem I.26 "If two triangles have the two angles equal to two angles respectively, and one side equal to one side, namely, either the side adjoining the equal angles, or that subtending one of the equal angles, they will also have the remaining sides equal to the remaining sides and the remaining angle to the remaining angle.":
  forall (a b c d e f : Point),
  triangle(a, b, c) and triangle(d, e, f) and angle(a, b, c) = angle(d, e, f) and angle(b, c, a) = angle(e, f, d)
  and (|b c| = |e f| or |a b| = |d e|) =>
  |a b| = |d e| and |b c| = |e f| and |a c| = |d f| and angle(b, a, c) = angle(e, d, f)
proof
  obtain AB by line(a, b)
  obtain BC by line(b, c)
  obtain DE by line(d, e)
  obtain EF by line(e, f)
  cases
  case |b c| = |e f|:
    cases
    case |d e| < |a b|:
      obtain g by I.3(b, a, d, e)
      have angle(g, b, c) = angle(a, b, c)
      apply I.4(b, g, c, e, d, f)
      obtain CG by line(c, g)
      obtain CA by line(c, a)
      have angle(b, c, a) = angle(b, c, g) + angle(g, c, a)
    case |a b| < |d e|:
      obtain g by I.3(e, d, a, b)
      have angle(g, e, f) = angle(d, e, f)
      apply I.4(e, g, f, b, a, c)
      obtain FG by line(f, g)
      obtain FD by line(f, d)
      have angle(e, f, d) = angle(e, f, g) + angle(g, f, d)
    case |a b| = |d e|:
    end
    apply I.4(b, a, c, e, d, f)
  case |a b| = |d e|:
    cases
    case |e f| < |b c|:
      obtain h by I.3(b, c, e, f)
      have angle(a, b, h) = angle(a, b, c)
      apply I.4(b, a, h, e, d, f)
      apply I.16(a, c, h, b)
      obtain CA by line(c, a)
      have angle(a, c, h) = angle(a, c, b)
    case |b c| < |e f|:
      obtain h by I.3(e, f, b, c)
      have angle(d, e, h) = angle(d, e, f)
      apply I.4(e, d, h, b, a, c)
      apply I.16(d, f, h, e)
      obtain FD by line(f, d)
      have angle(d, f, h) = angle(d, f, e)
    case |b c| = |e f|:
    end
    apply I.4(b, a, c, e, d, f)
  end
qed

theorem I.27 "If a straight line falling on two straight lines make the alternate angles equal to one another, the straight lines will be parallel to one another.":
  forall (a d e f : Point) (L M N : Line),
  on_line(a, L) and on_line(e, L) and on_line(d, M) and on_line(f, M) and on_line(e, N) and on_line(f, N)
  and e != f and a != e and d != f and opposite_sides(a, d, N) and angle(a, e, f) = angle(e, f, d) =>
  parallel(L, M)
proof
  have L != M
  cases
  case not lines_meet(L, M):
  case lines_meet(L, M):
    obtain g by intersection_lines(L, M)
    have not on_line(g, N)
    cases
    case same_side(g, a, N):
      have between(g, f, d)
      apply I.16(e, g, f, d)
      have angle(g, e, f) = angle(a, e, f)
    case same_side(g, d, N):
      have between(g, e, a)
      apply I.16(f, g, e, a)
      have angle(g, f, e) = angle(d, f, e)
    end
  end
qed

theorem I.28 "If a straight line falling on two straight lines make the exterior angle equal to the interior and opposite angle on the same side, or the interior angles on the same side equal to two right angles, the straight lines will be parallel to one another.":
  forall (b d e f g : Point) (L M N : Line),
  on_line(b, L) and on_line(e, L) and on_line(d, M) and on_line(f, M) and on_line(e, N) and on_line(f, N)
  and on_line(g, N) and between(g, e, f) and e != f and b != e and d != f and same_side(b, d, N)
  and (angle(g, e, b) = angle(e, f, d) or angle(b, e, f) + angle(e, f, d) = 2 * right) =>
  parallel(L, M)
proof
  obtain a by extend(b, e, L)
  apply I.15(b, a, g, f, e, L, N)
  apply I.13(f, e, b, a, L)
  have angle(a, e, f) = angle(e, f, d)
  apply I.27(a, d, e, f, L, M, N)
qed

theorem I.29 "A straight line falling on parallel straight lines makes the alternate angles equal to one another, the exterior angle equal to the interior and opposite angle, and the interior angles on the same side equal to two right angles.":
  forall (a b d e f g : Point) (L M N : Line),
  on_line(a, L) and on_line(b, L) and on_line(e, L) and between(a, e, b) and on_line(d, M) and on_line(f, M)
  and on_line(e, N) and on_line(f, N) and on_line(g, N) and between(g, e, f) and d != f
  and opposite_sides(a, d, N) and parallel(L, M) =>
  angle(a, e, f) = angle(e, f, d) and angle(g, e, b) = angle(e, f, d) and angle(b, e, f) + angle(e, f, d) = 2 * right
proof
  apply I.13(f, e, a, b, L)
  apply I.15(a, b, g, f, e, L, N)
  obtain x by extend(d, f, M)
  apply I.13(e, f, d, x, M)
  cases
  case angle(e, f, d) < angle(a, e, f):
    obtain p by lines_intersect(b, e, f, d, L, N, M)
  case angle(a, e, f) < angle(e, f, d):
    obtain p by lines_intersect(a, e, f, x, L, N, M)
  case angle(a, e, f) = angle(e, f, d):
  end
qed

theorem I.30 "Straight lines parallel to the same straight line are also parallel to one another.":
  forall (L M N : Line), parallel(L, N) and parallel(M, N) and L != M =>
  parallel(L, M)
proof
  cases
  case not lines_meet(L, M):
  case lines_meet(L, M):
    obtain p by intersection_lines(L, M)
  end
qed

theorem I.31 "Through a given point to draw a straight line parallel to a given straight line.":
  forall (a : Point) (L : Line), not on_line(a, L) =>
  exists (M : Line), on_line(a, M) and parallel(M, L)
proof
  obtain b by point_on_line(L)
  obtain AB by line(a, b)
  obtain γ by circle(b, a)
  obtain c c2 by intersection_circle_line(γ, L)
  obtain p by point_opposite_side(c, AB)
  obtain f by lemma_I23(a, b, a, b, c, p, AB)
  obtain M by line(a, f)
  apply I.27(f, c, a, b, M, L, AB)
qed

theorem I.32 "In any triangle, if one of the sides be produced, the exterior angle is equal to the two interior and opposite angles, and the three interior angles of the triangle are equal to two right angles.":
  forall (a b c d : Point), triangle(a, b, c) and between(b, c, d) =>
  angle(a, c, d) = angle(c, a, b) + angle(a, b, c) and angle(a, b, c) + angle(b, c, a) + angle(c, a, b) = 2 * right
proof
  obtain AB by line(a, b)
  obtain BC by line(b, c)
  obtain AC by line(a, c)
  obtain M by I.31(c, AB)
  obtain γ by circle(c, a)
  obtain e1 e2 by intersection_circle_line(γ, M)
  have between(e1, c, e2)
  have not on_line(e1, AC) and not on_line(e2, AC)
  obtain g by extend(a, c, AC)
  cases
  case same_side(e1, d, AC):
    have same_side(e1, a, BC)
    apply I.29(e1, e2, b, c, a, g, M, AB, AC)
    apply I.29(e2, e1, a, c, b, d, M, AB, BC)
    have angle(a, c, d) = angle(a, c, e1) + angle(e1, c, d)
  case same_side(e2, d, AC):
    have same_side(e2, a, BC)
    apply I.29(e2, e1, b, c, a, g, M, AB, AC)
    apply I.29(e1, e2, a, c, b, d, M, AB, BC)
    have angle(a, c, d) = angle(a, c, e2) + angle(e2, c, d)
  end
  apply I.13(a, c, b, d, BC)
qed

theorem I.33 "The straight lines joining equal and parallel straight lines (at the extremities which are) in the same directions (respectively) are themselves also equal and parallel.":
  forall (a b c d : Point) (AB CD AC BD : Line),
  on_line(a, AB) and on_line(b, AB) and on_line(c, CD) and on_line(d, CD) and on_line(a, AC) and on_line(c, AC)
  and on_line(b, BD) and on_line(d, BD) and a != b and parallel(AB, CD) and |a b| = |c d| and same_side(b, d, AC) =>
  parallel(AC, BD) and |a c| = |b d|
proof
  obtain BC by line(b, c)
  have same_side(a, b, CD)
  have opposite_sides(a, d, BC)
  obtain x by extend(a, b, AB)
  obtain g by extend(c, b, BC)
  apply I.29(a, x, d, b, c, g, AB, CD, BC)
  apply I.4(b, a, c, c, d, b)
  apply I.27(a, d, c, b, AC, BD, BC)
qed

# I.29's alternate angles with only the four points and three lines they involve: I.34 applies it twice,
# where I.29 itself (with the points produced past the vertices) would put 7 points and 5 lines in context.
theorem lemma_I29 "I.29's alternate angles, with only the objects they involve.":
  forall (a e f d : Point) (L M N : Line),
  on_line(a, L) and on_line(e, L) and on_line(e, N) and on_line(f, N) and on_line(d, M) and on_line(f, M)
  and a != e and e != f and d != f and opposite_sides(a, d, N) and parallel(L, M) =>
  angle(a, e, f) = angle(e, f, d)
proof
  obtain b by extend(a, e, L)
  obtain g by extend(f, e, N)
  apply I.29(a, b, d, e, f, g, L, M, N)
qed

theorem I.34 "In parallelogrammic areas the opposite sides and angles are equal to one another, and the diameter bisects the areas.":
  forall (a b c d : Point) (AB CD AC BD : Line),
  on_line(a, AB) and on_line(b, AB) and on_line(c, CD) and on_line(d, CD) and on_line(a, AC) and on_line(c, AC)
  and on_line(b, BD) and on_line(d, BD) and parallel(AB, CD) and parallel(AC, BD) =>
  |a b| = |c d| and |a c| = |b d| and angle(b, a, c) = angle(c, d, b) and angle(a, b, d) = angle(d, c, a)
  and area(a, b, c) = area(d, c, b)
proof
  have a != b and a != c and b != d and c != d
  obtain BC by line(b, c)
  have same_side(a, b, CD) and same_side(b, d, AC) and same_side(a, c, BD) and same_side(c, d, AB)
  have opposite_sides(a, d, BC)
  apply lemma_I29(a, b, c, d, AB, CD, BC)
  apply lemma_I29(a, c, b, d, AC, BD, BC)
  apply I.26(a, b, c, d, c, b)
  apply sss(a, b, c, d, c, b)
  have angle(a, b, d) = angle(a, b, c) + angle(c, b, d)
  have angle(d, c, a) = angle(d, c, b) + angle(b, c, a)
qed

# The quadrilateral lemmas (a trapezoid abcd, ad parallel to bc): its two cuts into triangles along a diagonal have
# one area (through the crossing g of the diagonals), with a diagonal and its side fact given, or with the sides.
theorem lemma_quad "A quadrilateral abcd with ad parallel to bc and its diagonals ac, bd crossing is the sum of two triangles either way.":
  forall (a b c d : Point) (AC BD AD BC : Line),
  on_line(a, AC) and on_line(c, AC) and on_line(b, BD) and on_line(d, BD) and on_line(a, AD) and on_line(d, AD)
  and on_line(b, BC) and on_line(c, BC) and parallel(AD, BC) and opposite_sides(a, c, BD) =>
  area(a, b, c) + area(a, c, d) = area(a, b, d) + area(b, c, d)
proof
  have same_side(a, d, BC) and same_side(b, c, AD)
  obtain g by intersection_lines(AC, BD)
  have between(a, g, c)
  have same_side(g, a, BC) and same_side(g, c, AD)
  have between(b, g, d)
  have area(a, b, c) = area(a, g, b) + area(b, g, c)
  have area(a, c, d) = area(a, g, d) + area(d, g, c)
  have area(a, b, d) = area(a, g, b) + area(a, g, d)
  have area(b, c, d) = area(b, g, c) + area(d, g, c)
qed

theorem lemma_quad_sides "lemma_quad for a quadrilateral abcd with ad parallel to bc, given by its sides.":
  forall (a b c d : Point) (AB BC DA : Line),
  on_line(a, AB) and on_line(b, AB) and on_line(b, BC) and on_line(c, BC) and on_line(d, DA) and on_line(a, DA)
  and parallel(DA, BC) and same_side(c, d, AB) =>
  area(a, b, c) + area(a, c, d) = area(a, b, d) + area(b, c, d)
proof
  have same_side(d, a, BC)
  obtain BD by line(b, d)
  have opposite_sides(a, c, BD)
  obtain AC by line(a, c)
  apply lemma_quad(a, b, c, d, AC, BD, DA, BC)
qed

# I.35 in its three configurations (the fourth and fifth are these with the parallelograms swapped): d between
# a and e (Euclid's figure: triangles abe and dcf congruent by SSS, lemma_quad on dbce with the diagonals dc, eb),
# e between a and d (overlap: lemma_quad_sides on ebcd) and e = d (triangles abd and dcf). Each derives the order
# of f from the sides of eb (triple incidence at b) and switches abcd's diagonal with parallelogram_area read from
# d (its side premise, c and d on one side of ab, is already known: asking for a and b on one side of dc took 77-95 s of solver time).
theorem lemma_I35 "I.35 when d lies between a and e (Euclid's figure).":
  forall (a b c d e f : Point) (AF BC AB DC EB FC : Line),
  on_line(a, AF) and on_line(d, AF) and on_line(e, AF) and on_line(f, AF) and on_line(b, BC) and on_line(c, BC)
  and parallel(AF, BC) and on_line(a, AB) and on_line(b, AB) and on_line(d, DC) and on_line(c, DC) and parallel(AB, DC)
  and on_line(e, EB) and on_line(b, EB) and on_line(f, FC) and on_line(c, FC) and parallel(EB, FC)
  and between(a, d, e) =>
  area(a, b, c) + area(a, c, d) = area(e, b, c) + area(e, c, f)
proof
  apply I.34(a, d, b, c, AF, BC, AB, DC)
  apply I.34(e, f, b, c, AF, BC, EB, FC)
  have same_side(d, e, AB) and same_side(c, d, AB) and same_side(a, e, BC)
  have opposite_sides(a, c, EB)
  have same_side(a, d, EB) and same_side(c, f, EB)
  have between(d, e, f)
  have |a e| = |d f|
  apply sss(a, b, e, d, c, f)
  have area(a, b, e) = area(a, b, d) + area(d, b, e)
  have area(d, c, f) = area(d, c, e) + area(e, c, f)
  apply parallelogram_area(d, a, c, b, AF, BC, DC, AB)
  have opposite_sides(d, c, EB)
  apply lemma_quad(d, b, c, e, DC, EB, AF, BC)
qed

theorem lemma_I35b "I.35 when e lies between a and d (the parallelograms overlap).":
  forall (a b c d e f : Point) (AF BC AB DC EB FC : Line),
  on_line(a, AF) and on_line(d, AF) and on_line(e, AF) and on_line(f, AF) and on_line(b, BC) and on_line(c, BC)
  and parallel(AF, BC) and on_line(a, AB) and on_line(b, AB) and on_line(d, DC) and on_line(c, DC) and parallel(AB, DC)
  and on_line(e, EB) and on_line(b, EB) and on_line(f, FC) and on_line(c, FC) and parallel(EB, FC)
  and between(a, e, d) =>
  area(a, b, c) + area(a, c, d) = area(e, b, c) + area(e, c, f)
proof
  apply I.34(a, d, b, c, AF, BC, AB, DC)
  apply I.34(e, f, b, c, AF, BC, EB, FC)
  have same_side(e, d, AB) and same_side(c, d, AB) and same_side(a, e, BC)
  have opposite_sides(a, c, EB)
  have opposite_sides(a, d, EB) and same_side(c, f, EB)
  have same_side(d, f, EB) and same_side(c, d, EB)
  have between(e, d, f)
  have |a e| = |d f|
  apply sss(a, b, e, d, c, f)
  have area(d, a, b) = area(a, b, e) + area(e, b, d)
  have area(e, c, f) = area(e, c, d) + area(d, c, f)
  apply parallelogram_area(d, a, c, b, AF, BC, DC, AB)
  apply lemma_quad_sides(e, b, c, d, EB, BC, AF)
qed

theorem lemma_I35c "I.35 when the parallelograms abcd and dbcf share the side through d.":
  forall (a b c d f : Point) (AF BC AB DC DB FC : Line),
  on_line(a, AF) and on_line(d, AF) and on_line(f, AF) and on_line(b, BC) and on_line(c, BC)
  and parallel(AF, BC) and on_line(a, AB) and on_line(b, AB) and on_line(d, DC) and on_line(c, DC) and parallel(AB, DC)
  and on_line(d, DB) and on_line(b, DB) and on_line(f, FC) and on_line(c, FC) and parallel(DB, FC) =>
  area(a, b, c) + area(a, c, d) = area(d, b, c) + area(d, c, f)
proof
  apply I.34(a, d, b, c, AF, BC, AB, DC)
  apply I.34(d, f, b, c, AF, BC, DB, FC)
  have same_side(c, d, AB) and same_side(a, d, BC)
  have opposite_sides(a, c, DB)
  have same_side(c, f, DB)
  have between(a, d, f)
  apply sss(a, b, d, d, c, f)
  apply parallelogram_area(d, a, c, b, AF, BC, DC, AB)
qed

theorem I.35 "Parallelograms which are on the same base and in the same parallels are equal to one another.":
  forall (a b c d e f : Point) (AF BC AB DC EB FC : Line),
  on_line(a, AF) and on_line(d, AF) and on_line(e, AF) and on_line(f, AF) and on_line(b, BC) and on_line(c, BC)
  and parallel(AF, BC) and on_line(a, AB) and on_line(b, AB) and on_line(d, DC) and on_line(c, DC) and parallel(AB, DC)
  and on_line(e, EB) and on_line(b, EB) and on_line(f, FC) and on_line(c, FC) and parallel(EB, FC) =>
  area(a, b, c) + area(a, c, d) = area(e, b, c) + area(e, c, f)
proof
  have a != d and e != f
  cases
  case e = a:
    have f = d
  case between(a, e, d):
    apply lemma_I35b(a, b, c, d, e, f, AF, BC, AB, DC, EB, FC)
  case e = d:
    apply lemma_I35c(a, b, c, d, f, AF, BC, AB, DC, EB, FC)
  case between(a, d, e):
    apply lemma_I35(a, b, c, d, e, f, AF, BC, AB, DC, EB, FC)
  case between(e, a, d):
    cases
    case f = a:
      apply lemma_I35c(e, b, c, a, d, AF, BC, EB, FC, AB, DC)
    case between(e, f, a):
      apply lemma_I35(e, b, c, f, a, d, AF, BC, EB, FC, AB, DC)
    case between(e, a, f):
      apply lemma_I35b(e, b, c, f, a, d, AF, BC, EB, FC, AB, DC)
    case between(f, e, a):
      have opposite_sides(e, d, AB) and same_side(c, d, AB) and same_side(a, e, BC)
      have opposite_sides(f, a, EB) and same_side(c, f, EB)
      have opposite_sides(a, c, EB)
    end
  end
qed

# I.36 as Euclid: ebch is a parallelogram (I.33) equal to abcd (I.35) and, on the side eh, to efgh (I.35 again,
# lemma_I36b); lemma_I36 is the case where eh runs the way of bc, I.36 reads efgh as hgfe in the other.
theorem lemma_I36b "Parallelograms ebch and efgh on the same side eh are equal (I.35 on eh), written with the diagonals ec and eg.":
  forall (b c e f g h : Point) (AH BG EB HC EG HF : Line),
  on_line(e, AH) and on_line(h, AH) and on_line(b, BG) and on_line(c, BG) and on_line(f, BG) and on_line(g, BG)
  and parallel(AH, BG) and on_line(e, EB) and on_line(b, EB) and on_line(h, HC) and on_line(c, HC) and parallel(EB, HC)
  and on_line(e, EG) and on_line(f, EG) and on_line(h, HF) and on_line(g, HF) and parallel(EG, HF) =>
  area(e, b, c) + area(e, c, h) = area(e, f, g) + area(e, g, h)
proof
  apply I.35(b, e, h, c, f, g, BG, AH, EB, HC, EG, HF)
  have same_side(e, b, HC) and same_side(e, f, HF) and h != c and h != g
  apply parallelogram_area(e, h, b, c, AH, BG, EB, HC)
  apply parallelogram_area(e, h, f, g, AH, BG, EG, HF)
qed

theorem lemma_I36 "I.36 when eh runs the way of bc (h and c on one side of eb).":
  forall (a b c d e f g h : Point) (AH BG AB DC EG HF EB : Line),
  on_line(a, AH) and on_line(d, AH) and on_line(e, AH) and on_line(h, AH) and on_line(b, BG) and on_line(c, BG)
  and on_line(f, BG) and on_line(g, BG) and parallel(AH, BG) and |b c| = |f g| and b != c
  and on_line(a, AB) and on_line(b, AB) and on_line(d, DC) and on_line(c, DC) and parallel(AB, DC)
  and on_line(e, EG) and on_line(f, EG) and on_line(h, HF) and on_line(g, HF) and parallel(EG, HF)
  and on_line(e, EB) and on_line(b, EB) and same_side(h, c, EB) =>
  area(a, b, c) + area(a, c, d) = area(e, f, g) + area(e, g, h)
proof
  apply I.34(e, h, f, g, AH, BG, EG, HF)
  obtain HC by line(h, c)
  apply I.33(e, h, b, c, AH, BG, EB, HC)
  apply I.35(a, b, c, d, e, h, AH, BG, AB, DC, EB, HC)
  apply lemma_I36b(b, c, e, f, g, h, AH, BG, EB, HC, EG, HF)
qed

theorem I.36 "Parallelograms which are on equal bases and in the same parallels are equal to one another.":
  forall (a b c d e f g h : Point) (AH BG AB DC EG HF : Line),
  on_line(a, AH) and on_line(d, AH) and on_line(e, AH) and on_line(h, AH) and on_line(b, BG) and on_line(c, BG)
  and on_line(f, BG) and on_line(g, BG) and parallel(AH, BG) and |b c| = |f g| and b != c
  and on_line(a, AB) and on_line(b, AB) and on_line(d, DC) and on_line(c, DC) and parallel(AB, DC)
  and on_line(e, EG) and on_line(f, EG) and on_line(h, HF) and on_line(g, HF) and parallel(EG, HF) =>
  area(a, b, c) + area(a, c, d) = area(e, f, g) + area(e, g, h)
proof
  obtain EB by line(e, b)
  cases
  case same_side(h, c, EB):
    apply lemma_I36(a, b, c, d, e, f, g, h, AH, BG, AB, DC, EG, HF, EB)
  case not same_side(h, c, EB):
    obtain HB by line(h, b)
    have same_side(e, c, HB)
    apply lemma_I36(a, b, c, d, h, g, f, e, AH, BG, AB, DC, HF, EG, HB)
    have same_side(e, f, HF) and h != g
    apply parallelogram_area(e, h, f, g, AH, BG, EG, HF)
  end
qed

theorem I.37 "Triangles which are on the same base and in the same parallels are equal to one another.":
  forall (a b c d : Point) (AD BC : Line),
  on_line(a, AD) and on_line(d, AD) and on_line(b, BC) and on_line(c, BC) and b != c and parallel(AD, BC) =>
  area(a, b, c) = area(d, b, c)
proof
  have not on_line(a, BC) and not on_line(d, BC) and not on_line(c, AD)
  obtain AB by line(a, b)
  obtain DB by line(d, b)
  have not on_line(c, AB) and not on_line(c, DB)
  obtain M by I.31(c, AB)
  have lines_meet(M, AD)
  obtain x by intersection_lines(M, AD)
  obtain N by I.31(c, DB)
  have lines_meet(N, AD)
  obtain y by intersection_lines(N, AD)
  apply I.35(a, b, c, x, d, y, AD, BC, AB, M, DB, N)
  apply I.34(b, a, c, x, AB, M, BC, AD)
  apply I.34(b, d, c, y, DB, N, BC, AD)
qed

theorem I.38 "Triangles which are on equal bases and in the same parallels are equal to one another.":
  forall (a b c d e f : Point) (AD BF : Line),
  on_line(a, AD) and on_line(d, AD) and on_line(b, BF) and on_line(c, BF) and on_line(e, BF) and on_line(f, BF)
  and b != c and |b c| = |e f| and parallel(AD, BF) =>
  area(a, b, c) = area(d, e, f)
proof
  have not on_line(a, BF) and not on_line(d, BF) and not on_line(c, AD) and not on_line(f, AD) and e != f
  obtain AB by line(a, b)
  obtain DE by line(d, e)
  have not on_line(c, AB) and not on_line(f, DE)
  obtain M by I.31(c, AB)
  have lines_meet(M, AD)
  obtain x by intersection_lines(M, AD)
  obtain N by I.31(f, DE)
  have lines_meet(N, AD)
  obtain y by intersection_lines(N, AD)
  apply I.36(a, b, c, x, d, e, f, y, AD, BF, AB, M, DE, N)
  apply I.34(b, a, c, x, AB, M, BF, AD)
  apply I.34(e, d, f, y, DE, N, BF, AD)
qed

theorem I.39 "Equal triangles which are on the same base and on the same side are also in the same parallels.":
  forall (a b c d : Point) (BC AD : Line),
  on_line(b, BC) and on_line(c, BC) and b != c and same_side(a, d, BC) and area(a, b, c) = area(d, b, c)
  and a != d and on_line(a, AD) and on_line(d, AD) =>
  parallel(AD, BC)
proof
  obtain M by I.31(a, BC)
  obtain BD by line(b, d)
  have lines_meet(M, BD)
  obtain e by intersection_lines(M, BD)
  apply I.37(a, b, c, e, M, BC)
  have same_side(e, d, BC)
  have e = d
qed

theorem I.40 "Equal triangles which are on equal bases and on the same side are also in the same parallels.":
  forall (a b c d e f : Point) (BF AD : Line),
  on_line(b, BF) and on_line(c, BF) and on_line(e, BF) and on_line(f, BF) and b != c and |b c| = |e f|
  and same_side(a, d, BF) and area(a, b, c) = area(d, e, f) and a != d and on_line(a, AD) and on_line(d, AD) =>
  parallel(AD, BF)
proof
  obtain M by I.31(a, BF)
  obtain ED by line(e, d)
  have lines_meet(M, ED)
  obtain g by intersection_lines(M, ED)
  apply I.38(a, b, c, g, e, f, M, BF)
  have same_side(g, d, BF)
  have g = d
qed

theorem I.41 "If a parallelogram have the same base with a triangle and be in the same parallels, the parallelogram is double of the triangle.":
  forall (a b c d e : Point) (AE BC AB DC : Line),
  on_line(a, AE) and on_line(d, AE) and on_line(e, AE) and on_line(b, BC) and on_line(c, BC) and parallel(AE, BC)
  and on_line(a, AB) and on_line(b, AB) and on_line(d, DC) and on_line(c, DC) and parallel(AB, DC) =>
  area(a, b, c) + area(a, c, d) = 2 * area(e, b, c)
proof
  apply I.34(b, a, c, d, AB, DC, BC, AE)
  apply I.37(a, b, c, e, AE, BC)
qed

# I.42's angle at p with its side cut off on the parallel through a (the point x of lemma_I23 stays here).
theorem lemma_I42 "At p on pc, an angle cpr equal to edg with r on a given parallel RS to pc.":
  forall (a c p d e g : Point) (PQ RS : Line),
  on_line(p, PQ) and on_line(c, PQ) and p != c and on_line(a, RS) and parallel(RS, PQ) and triangle(e, d, g) =>
  exists (r : Point) (PR : Line), on_line(r, RS) and on_line(r, PR) and on_line(p, PR) and angle(c, p, r) = angle(e, d, g)
proof
  have not on_line(a, PQ)
  obtain x by lemma_I23(p, c, e, d, g, a, PQ)
  obtain PR by line(p, x)
  have lines_meet(PR, RS)
  obtain r by intersection_lines(PR, RS)
  have same_side(r, x, PQ)
qed

theorem I.42 "To construct, in a given rectilineal angle, a parallelogram equal to a given triangle.":
  forall (a b c d e g : Point), triangle(a, b, c) and triangle(e, d, g) =>
  exists (p q r s : Point) (PQ RS PR QS : Line),
  on_line(p, PQ) and on_line(q, PQ) and on_line(r, RS) and on_line(s, RS) and on_line(p, PR) and on_line(r, PR)
  and on_line(q, QS) and on_line(s, QS) and parallel(PQ, RS) and parallel(PR, QS)
  and angle(q, p, r) = angle(e, d, g) and area(p, r, s) + area(p, s, q) = area(a, b, c)
proof
  obtain PQ by line(b, c)
  obtain p by I.10(b, c)
  have on_line(p, PQ) and not on_line(a, PQ)
  obtain RS by I.31(a, PQ)
  obtain r PR by lemma_I42(a, c, p, d, e, g, PQ, RS)
  obtain QS by I.31(c, PR)
  have lines_meet(QS, RS)
  obtain s by intersection_lines(QS, RS)
  apply I.41(s, c, p, r, a, RS, PQ, QS, PR)
  apply I.38(a, b, p, a, p, c, RS, PQ)
  have area(a, b, c) = area(a, b, p) + area(a, p, c)
  let q = c
qed

# I.43's sub-arguments with only the objects they involve (the proposition's 9 points and 6 lines ground
# too many instances for the betweenness and the area sums): where the parallels through k cut the sides,
# and one half of the parallelogram cut into two triangles and a complement.
theorem lemma_I43a "A parallel to bd through a point k of ad cuts ab between a and b.":
  forall (a b d k e : Point) (AB BD EF AX : Line),
  on_line(a, AB) and on_line(b, AB) and on_line(e, AB) and on_line(b, BD) and on_line(d, BD) and on_line(e, EF)
  and on_line(k, EF) and between(a, k, d) and on_line(a, AX) and parallel(EF, AX) and parallel(EF, BD) =>
  between(a, e, b)
proof
  have not on_line(a, EF) and not on_line(d, EF) and not on_line(b, EF)
  have opposite_sides(a, d, EF)
  have same_side(b, d, EF)
  have opposite_sides(a, b, EF)
qed

theorem lemma_I43t "A point k of the side ad of a triangle abd cuts it into the triangles akb and bkd.":
  forall (a b d k : Point) (AB BD : Line),
  on_line(a, AB) and on_line(b, AB) and on_line(b, BD) and on_line(d, BD) and not on_line(a, BD) and b != d
  and between(a, k, d) =>
  area(a, b, d) = area(a, k, b) + area(b, k, d) and not on_line(k, AB) and not on_line(k, BD)
proof
  have not on_line(d, AB)
  have not on_line(k, AB) and not on_line(k, BD)
  obtain AD by line(a, d)
  have not on_line(b, AD)
qed

theorem lemma_I43b "A triangle abd with e on ab, h on bd and k on ad is the triangles aek, keb, bhk and khd.":
  forall (a b d e h k : Point) (AB BD AX : Line),
  on_line(a, AB) and on_line(b, AB) and on_line(e, AB) and on_line(b, BD) and on_line(d, BD) and on_line(h, BD)
  and on_line(a, AX) and parallel(AX, BD) and between(a, e, b) and between(b, h, d) and between(a, k, d) =>
  area(a, b, d) = area(a, e, k) + area(k, e, b) + area(b, h, k) + area(k, h, d)
proof
  have not on_line(a, BD)
  apply lemma_I43t(a, b, d, k, AB, BD)
  have area(a, k, b) = area(a, e, k) + area(k, e, b)
  have area(b, k, d) = area(b, h, k) + area(k, h, d)
qed

theorem lemma_I43p "A parallelogram is the same two triangles on either diagonal.":
  forall (a b c d : Point) (AB CD AC BD : Line),
  on_line(a, AB) and on_line(b, AB) and on_line(c, CD) and on_line(d, CD) and on_line(a, AC) and on_line(c, AC)
  and on_line(b, BD) and on_line(d, BD) and parallel(AB, CD) and parallel(AC, BD) =>
  area(a, c, d) + area(a, d, b) = area(b, a, c) + area(b, c, d)
proof
  have b != d and same_side(a, c, BD)
  apply parallelogram_area(a, b, c, d, AB, CD, AC, BD)
qed

theorem I.43 "In any parallelogram the complements of the parallelograms about the diameter are equal to one another.":
  forall (a b c d e f g h k : Point) (AB CD AC BD EF GH : Line),
  on_line(a, AB) and on_line(b, AB) and on_line(c, CD) and on_line(d, CD) and on_line(a, AC) and on_line(c, AC)
  and on_line(b, BD) and on_line(d, BD) and parallel(AB, CD) and parallel(AC, BD) and between(a, k, d)
  and on_line(e, AB) and on_line(f, CD) and on_line(e, EF) and on_line(k, EF) and on_line(f, EF) and parallel(EF, AC)
  and on_line(g, AC) and on_line(h, BD) and on_line(g, GH) and on_line(k, GH) and on_line(h, GH) and parallel(GH, AB) =>
  area(e, b, h) + area(e, h, k) = area(g, k, f) + area(g, f, c)
proof
  apply I.30(EF, BD, AC)
  apply I.30(GH, CD, AB)
  apply lemma_I43a(a, b, d, k, e, AB, BD, EF, AC)
  apply lemma_I43a(d, c, a, k, f, CD, AC, EF, BD)
  apply lemma_I43a(a, c, d, k, g, AC, CD, GH, AB)
  apply lemma_I43a(d, b, a, k, h, BD, AB, GH, CD)
  apply lemma_I43b(a, b, d, e, h, k, AB, BD, AC)
  apply lemma_I43b(a, c, d, g, f, k, AC, CD, AB)
  apply lemma_I43p(e, b, k, h, AB, GH, EF, BD)
  apply lemma_I43p(g, k, c, f, GH, CD, AC, EF)
  apply I.34(b, a, d, c, AB, CD, BD, AC)
  apply I.34(e, a, k, g, AB, GH, EF, AC)
  apply I.34(h, k, d, f, GH, CD, BD, EF)
qed

# I.44 in three steps, each with only the objects it needs: a copy of the triangle cde on ab produced beyond b
# (lemma_I44r, lemma_I44a), I.42's parallelogram on half its base with a side on ab produced (lemma_I44b),
# and Euclid's completion of the figure with the complement of I.43 on ab (lemma_I44c).
theorem lemma_I44r "On the ray from b through y, a point z with bz equal to ce.":
  forall (b y c e : Point) (L : Line), on_line(b, L) and on_line(y, L) and b != y and c != e =>
  exists (z : Point), on_line(z, L) and |b z| = |c e| and b != z and not between(y, b, z)
proof
  obtain l by I.2(b, c, e)
  have b != l
  obtain γ by circle(b, l)
  obtain x by extend(y, b, L)
  obtain z by intersection_circle_line_extend(x, b, γ, L)
  have |b z| = |b l|
qed

theorem lemma_I44a "A triangle zbw equal to cde with its base bw on ab produced beyond b.":
  forall (a b c d e : Point) (AB : Line), on_line(a, AB) and on_line(b, AB) and a != b and triangle(c, d, e) =>
  exists (w z : Point), on_line(w, AB) and between(a, b, w) and not on_line(z, AB) and area(z, b, w) = area(c, d, e)
proof
  obtain x by extend(a, b, AB)
  obtain w by lemma_I44r(b, x, c, d, AB)
  have between(a, b, w)
  obtain p by point_off_line(AB)
  obtain y by lemma_I23(b, w, d, c, e, p, AB)
  obtain BY by line(b, y)
  obtain z by lemma_I44r(b, y, c, e, BY)
  have not on_line(z, AB)
  have angle(w, b, z) = angle(d, c, e)
  apply sas(b, w, z, c, d, e)
qed

theorem lemma_I44b "I.42's parallelogram bmsr on the half bm of the base of zbw, with the angle abr given.":
  forall (a b w z f g h : Point) (AB : Line),
  on_line(a, AB) and on_line(b, AB) and on_line(w, AB) and between(a, b, w) and not on_line(z, AB)
  and triangle(f, g, h) =>
  exists (m r s : Point) (RS BR MS : Line),
  on_line(m, AB) and between(a, b, m) and on_line(r, RS) and on_line(s, RS) and on_line(b, BR) and on_line(r, BR)
  and on_line(m, MS) and on_line(s, MS) and parallel(RS, AB) and parallel(BR, MS) and angle(a, b, r) = angle(f, g, h)
  and area(r, s, m) + area(r, m, b) = area(z, b, w)
proof
  obtain m by I.10(b, w)
  have on_line(m, AB) and between(a, b, m)
  obtain RS by I.31(z, AB)
  obtain r BR by lemma_I42(z, a, b, g, f, h, AB, RS)
  have not on_line(m, BR)
  obtain MS by I.31(m, BR)
  have lines_meet(MS, RS)
  obtain s by intersection_lines(MS, RS)
  apply I.41(r, b, m, s, z, RS, AB, BR, MS)
  apply I.38(z, b, m, z, m, w, RS, AB)
  have area(z, b, w) = area(z, b, m) + area(z, m, w)
qed

theorem lemma_I44d "The parallel to br through a meets rs at H, hb meets ms at K, and b lies between H and K.":
  forall (a b m r : Point) (AB RS BR MS AP : Line),
  on_line(a, AB) and on_line(b, AB) and on_line(m, AB) and between(a, b, m) and on_line(r, RS) and on_line(b, BR)
  and on_line(r, BR) and on_line(m, MS) and parallel(RS, AB) and parallel(BR, MS) and on_line(a, AP)
  and parallel(AP, BR) =>
  exists (H K : Point), on_line(H, AP) and on_line(H, RS) and on_line(K, MS) and between(H, b, K)
proof
  have lines_meet(AP, RS)
  obtain H by intersection_lines(AP, RS)
  obtain HB by line(H, b)
  have lines_meet(HB, MS)
  obtain K by intersection_lines(HB, MS)
  have same_side(H, a, BR) and same_side(K, m, BR) and opposite_sides(a, m, BR)
  have opposite_sides(H, K, BR)
qed

theorem lemma_I44c "Euclid's completion: the parallelogram bmsr with a, b, m on AB gives abqp equal to it.":
  forall (a b m r s : Point) (AB RS BR MS : Line),
  on_line(a, AB) and on_line(b, AB) and on_line(m, AB) and between(a, b, m) and on_line(r, RS) and on_line(s, RS)
  and on_line(b, BR) and on_line(r, BR) and on_line(m, MS) and on_line(s, MS) and parallel(RS, AB)
  and parallel(BR, MS) =>
  exists (p q : Point) (PQ AP : Line),
  on_line(a, AP) and on_line(p, AP) and on_line(p, PQ) and on_line(q, PQ) and on_line(q, BR) and parallel(AB, PQ)
  and parallel(AP, BR) and angle(b, a, p) = angle(a, b, r) and area(a, p, q) + area(a, q, b) = area(r, s, m) + area(r, m, b)
proof
  have not on_line(a, BR)
  obtain AP by I.31(a, BR)
  obtain H K by lemma_I44d(a, b, m, r, AB, RS, BR, MS, AP)
  have not on_line(K, AB)
  obtain PQ by I.31(K, AB)
  have lines_meet(PQ, AP)
  obtain p by intersection_lines(PQ, AP)
  have lines_meet(PQ, BR)
  obtain q by intersection_lines(PQ, BR)
  apply I.30(RS, PQ, AB)
  apply I.30(AP, MS, BR)
  apply I.43(H, s, p, K, r, q, a, m, b, RS, PQ, AP, MS, BR, AB)
  have same_side(p, K, AB) and same_side(r, H, AB)
  have opposite_sides(p, r, AB)
  apply lemma_I29(p, a, b, r, AP, BR, AB)
qed

theorem lemma_I44e "I.44 for a triangle zbw with its base bw on ab produced beyond b.":
  forall (a b w z f g h : Point) (AB : Line),
  on_line(a, AB) and on_line(b, AB) and on_line(w, AB) and between(a, b, w) and not on_line(z, AB)
  and triangle(f, g, h) =>
  exists (p q : Point) (PQ AP BQ : Line),
  on_line(p, PQ) and on_line(q, PQ) and on_line(a, AP) and on_line(p, AP) and on_line(b, BQ) and on_line(q, BQ)
  and parallel(AB, PQ) and parallel(AP, BQ) and angle(b, a, p) = angle(f, g, h)
  and area(a, p, q) + area(a, q, b) = area(z, b, w)
proof
  obtain m r s RS BQ MS by lemma_I44b(a, b, w, z, f, g, h, AB)
  obtain p q PQ AP by lemma_I44c(a, b, m, r, s, AB, RS, BQ, MS)
qed

theorem I.44 "To a given straight line to apply, in a given rectilineal angle, a parallelogram equal to a given triangle.":
  forall (a b c d e f g h : Point), a != b and triangle(c, d, e) and triangle(f, g, h) =>
  exists (p q : Point) (AB PQ AP BQ : Line),
  on_line(a, AB) and on_line(b, AB) and on_line(p, PQ) and on_line(q, PQ) and on_line(a, AP) and on_line(p, AP)
  and on_line(b, BQ) and on_line(q, BQ) and parallel(AB, PQ) and parallel(AP, BQ)
  and angle(b, a, p) = angle(f, g, h) and area(a, p, q) + area(a, q, b) = area(c, d, e)
proof
  obtain AB by line(a, b)
  obtain w z by lemma_I44a(a, b, c, d, e, AB)
  obtain p q PQ AP BQ by lemma_I44e(a, b, w, z, f, g, h, AB)
qed

# I.45 through one triangle: the parallel to bd through c meets ab produced at h, and I.37 makes the
# quadrilateral abcd equal to the triangle ahd, to which I.42 applies (not Euclid's construction with I.44).
theorem lemma_I45 "A quadrilateral abcd with a, c on either side of bd equals a triangle ahd with b between a and h.":
  forall (a b c d : Point) (BD : Line),
  triangle(a, b, d) and triangle(b, c, d) and on_line(b, BD) and on_line(d, BD) and opposite_sides(a, c, BD) =>
  exists (h : Point), triangle(a, h, d) and area(a, h, d) = area(a, b, d) + area(b, c, d)
proof
  obtain M by I.31(c, BD)
  obtain AB by line(a, b)
  have lines_meet(AB, M)
  obtain h by intersection_lines(AB, M)
  apply I.37(c, b, d, h, M, BD)
  have same_side(h, c, BD)
  have between(a, b, h)
  have not on_line(d, AB)
qed

theorem I.45 "To construct, in a given rectilineal angle, a parallelogram equal to a given rectilineal figure.":
  forall (a b c d e f g : Point) (BD : Line),
  triangle(a, b, d) and triangle(b, c, d) and on_line(b, BD) and on_line(d, BD) and opposite_sides(a, c, BD)
  and triangle(e, f, g) =>
  exists (p q r s : Point) (PQ RS PR QS : Line),
  on_line(p, PQ) and on_line(q, PQ) and on_line(r, RS) and on_line(s, RS) and on_line(p, PR) and on_line(r, PR)
  and on_line(q, QS) and on_line(s, QS) and parallel(PQ, RS) and parallel(PR, QS)
  and angle(q, p, r) = angle(e, f, g) and area(p, r, s) + area(p, s, q) = area(a, b, d) + area(b, c, d)
proof
  obtain h by lemma_I45(a, b, c, d, BD)
  obtain p q r s PQ RS PR QS by I.42(a, h, d, f, e, g)
qed

theorem I.46 "On a given straight line to describe a square.":
  forall (a b : Point), a != b =>
  exists (c d : Point), |a b| = |b d| and |b d| = |d c| and |d c| = |c a| and angle(c, a, b) = right
  and angle(a, b, d) = right and angle(b, d, c) = right and angle(d, c, a) = right
proof
  obtain AB by line(a, b)
  obtain f by I.11(b, a, AB)
  obtain AF by line(a, f)
  obtain x by extend(f, a, AF)
  obtain γ by circle(a, b)
  obtain c by intersection_circle_line_extend(x, a, γ, AF)
  have angle(b, a, c) = right and |a c| = |a b|
  obtain M by I.31(c, AB)
  obtain N by I.31(b, AF)
  have lines_meet(M, N)
  obtain d by intersection_lines(M, N)
  apply I.34(a, b, c, d, AB, M, AF, N)
  obtain y by extend(b, a, AB)
  apply I.29(x, c, d, a, b, y, AF, N, AB)
qed

# Lemmas for I.47 (Euclid's proof with the squares drawn inwards, so that every angle is a difference of a
# right angle and angle abc, and with the triangle-as-half-a-rectangle step of I.41 in a lemma of its own).
theorem lemma_I47_perp "A perpendicular bf to ab at b, on the side of c, with |b f| = |b a|.":
  forall (a b c : Point) (L : Line), on_line(a, L) and on_line(b, L) and a != b and not on_line(c, L) =>
  exists (f : Point), same_side(f, c, L) and angle(a, b, f) = right and |b f| = |b a|
proof
  obtain f0 by I.11(a, b, L)
  obtain γ by circle(b, a)
  obtain N by line(b, f0)
  cases
  case same_side(f0, c, L):
    obtain x by extend(f0, b, N)
    obtain f by intersection_circle_line_extend(x, b, γ, N)
    have opposite_sides(x, f0, L) and opposite_sides(x, f, L)
    have same_side(f, f0, L)
    have angle(a, b, f) = angle(a, b, f0)
  case not same_side(f0, c, L):
    obtain f by intersection_circle_line_extend(f0, b, γ, N)
    have not on_line(a, N)
    apply I.13(a, b, f0, f, N)
  end
qed

theorem lemma_I47_tri "A triangle xbd, with bd perpendicular to bm at b and x on the perpendicular to bm at m, is half the rectangle |b d| * |b m|.":
  forall (x b d m : Point) (BM BD : Line),
  on_line(b, BM) and on_line(m, BM) and on_line(b, BD) and on_line(d, BD) and b != m and angle(m, b, d) = right
  and angle(b, m, x) = right and same_side(x, d, BM) =>
  2 * area(x, b, d) = |b d| * |b m| and same_side(m, x, BD)
proof
  obtain MX by line(m, x)
  obtain g by extend(b, m, BM)
  have angle(x, m, b) + angle(m, b, d) = 2 * right
  apply I.28(x, d, m, b, g, MX, BD, BM)
  obtain DL by I.31(d, BM)
  have lines_meet(MX, DL)
  obtain l by intersection_lines(MX, DL)
  apply I.34(m, l, b, d, MX, BD, BM, DL)
  apply rectangle_area(m, l, b, d, MX, BD, BM, DL)
  apply I.41(m, b, d, l, x, MX, BD, BM, DL)
qed

theorem lemma_I47_right "A right angle at h on a line L is right with any other point p of L.":
  forall (a g h p : Point) (L : Line),
  on_line(g, L) and on_line(h, L) and on_line(p, L) and g != h and p != h and not on_line(a, L)
  and angle(g, h, a) = right =>
  angle(p, h, a) = right
proof
  obtain M by line(h, a)
  cases
  case between(g, h, p):
    apply I.13(a, h, g, p, L)
  case not between(g, h, p):
  end
qed

theorem lemma_I47_foot "In a triangle right-angled at a the perpendicular from a on bc falls between b and c.":
  forall (a b c g h : Point) (BC : Line),
  triangle(a, b, c) and angle(b, a, c) = right and on_line(b, BC) and on_line(c, BC) and on_line(g, BC)
  and on_line(h, BC) and g != h and angle(g, h, a) = right =>
  between(b, h, c) and angle(a, h, b) = right and angle(a, h, c) = right
proof
  apply I.17(c, a, b)
  apply I.17(b, a, c)
  cases
  case h = b:
    apply lemma_I47_right(a, g, b, c, BC)
  case h = c:
    apply lemma_I47_right(a, g, c, b, BC)
  case between(h, b, c):
    apply lemma_I47_right(a, g, h, b, BC)
    apply I.16(a, h, b, c)
  case between(b, c, h):
    apply lemma_I47_right(a, g, h, c, BC)
    apply I.16(a, h, c, b)
  case between(b, h, c):
    apply lemma_I47_right(a, g, h, b, BC)
    apply lemma_I47_right(a, g, h, c, BC)
  end
qed

theorem lemma_I47_sq "With a right angle at a: on the side bf of the square on ab (towards c), triangle cbf is half the square.":
  forall (a b c : Point) (AB : Line), triangle(a, b, c) and angle(b, a, c) = right and on_line(a, AB) and on_line(b, AB) =>
  exists (f : Point), |b f| = |b a| and 2 * area(c, b, f) = |a b| * |a b| and angle(f, b, c) + angle(a, b, c) = right
proof
  obtain f by lemma_I47_perp(a, b, c, AB)
  obtain BF by line(b, f)
  apply lemma_I47_tri(c, b, f, a, AB, BF)
  have angle(a, b, f) = angle(a, b, c) + angle(c, b, f)
qed

theorem lemma_I47_rect "With m the foot of the perpendicular from a on bc: on the side bd of the square on bc (towards a), triangle abd is half the rectangle |b c| * |b m|.":
  forall (a b c m : Point) (BC : Line),
  triangle(a, b, c) and on_line(b, BC) and on_line(c, BC) and between(b, m, c) and angle(a, m, b) = right =>
  exists (d : Point), |b d| = |b c| and 2 * area(a, b, d) = |b c| * |b m| and angle(a, b, d) + angle(a, b, c) = right
proof
  obtain d by lemma_I47_perp(c, b, a, BC)
  obtain BD by line(b, d)
  have not between(m, b, c)
  have angle(m, b, d) = right
  apply lemma_I47_tri(a, b, d, m, BC, BD)
  have same_side(m, c, BD)
  have same_side(c, a, BD)
  have angle(c, b, d) = angle(c, b, a) + angle(a, b, d)
qed

theorem lemma_I47_half "In a triangle right-angled at a, with m the foot of the perpendicular from a on bc, the square on ab equals the rectangle |b c| * |b m|.":
  forall (a b c m : Point) (BC : Line),
  triangle(a, b, c) and angle(b, a, c) = right and on_line(b, BC) and on_line(c, BC) and between(b, m, c)
  and angle(a, m, b) = right =>
  |a b| * |a b| = |b c| * |b m|
proof
  obtain AB by line(a, b)
  obtain f by lemma_I47_sq(a, b, c, AB)
  obtain d by lemma_I47_rect(a, b, c, m, BC)
  have angle(f, b, c) = angle(a, b, d)
  apply sas(b, f, c, b, a, d)
qed

theorem I.47 "In right-angled triangles the square on the side subtending the right angle is equal to the squares on the sides containing the right angle.":
  forall (a b c : Point), triangle(a, b, c) and angle(b, a, c) = right =>
  |b c| * |b c| = |a b| * |a b| + |a c| * |a c|
proof
  obtain BC by line(b, c)
  obtain g h by I.12(a, BC)
  apply lemma_I47_foot(a, b, c, g, h, BC)
  apply lemma_I47_half(a, b, c, h, BC)
  apply lemma_I47_half(a, c, b, h, BC)
  have |b h| + |h c| = |b c|
qed

theorem I.48 "If in a triangle the square on one of the sides be equal to the squares on the remaining two sides of the triangle, the angle contained by the remaining two sides of the triangle is right.":
  forall (a b c : Point), triangle(a, b, c) and |b c| * |b c| = |a b| * |a b| + |a c| * |a c| =>
  angle(b, a, c) = right
proof
  obtain AC by line(a, c)
  obtain f by I.11(c, a, AC)
  obtain AF by line(a, f)
  obtain γ by circle(a, b)
  obtain x by extend(f, a, AF)
  obtain d by intersection_circle_line_extend(x, a, γ, AF)
  have angle(d, a, c) = right and |a d| = |a b|
  apply I.47(a, d, c)
  have |d c| * |d c| = |b c| * |b c|
  have |d c| = |b c|
  apply sss(a, d, c, a, b, c)
qed
