# Euclid's Elements, Book I, propositions 1-48: statements in the statement language of
# jaxml.papers.euclid (see syntax.py for the grammar), texts from Heath's translation (public domain).
# Proofs of I.1-I.10 are checked by jaxml.papers.euclid.checker; `apply`/`obtain` may use the rules
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
