# NOT PART OF THE BOOK: drafts of Book I proofs from issue 32 that were not checked in a full run by the
# deadline. `book.book1()` does not read this file. The status of each is in its comment; a proof here
# moves into data/book1.e only once `euclid.book.check_book()` verifies it with everything else.
# Theorem texts are "x" (the statements are the ones of data/book1.e).

# I.43: the complements via I.34 three times, I.30 twice and parallelogram_area twice; killed at its second
# step (9 points, 7 lines: each query grounds hundreds of thousands of instances).
theorem I.43 "x":
  forall (a b c d e f g h k : Point) (AB CD AC BD EF GH : Line),
  on_line(a, AB) and on_line(b, AB) and on_line(c, CD) and on_line(d, CD) and on_line(a, AC) and on_line(c, AC)
  and on_line(b, BD) and on_line(d, BD) and parallel(AB, CD) and parallel(AC, BD) and between(a, k, d)
  and on_line(e, AB) and on_line(f, CD) and on_line(e, EF) and on_line(k, EF) and on_line(f, EF) and parallel(EF, AC)
  and on_line(g, AC) and on_line(h, BD) and on_line(g, GH) and on_line(k, GH) and on_line(h, GH) and parallel(GH, AB) =>
  area(e, b, h) + area(e, h, k) = area(g, k, f) + area(g, f, c)
proof
  obtain AD by line(a, d)
  have not on_line(k, CD) and not on_line(k, BD) and not on_line(k, AB) and not on_line(k, AC)
  apply I.30(GH, CD, AB)
  apply I.30(BD, EF, AC)
  have opposite_sides(a, d, EF) and opposite_sides(a, d, GH)
  have same_side(b, d, EF) and same_side(c, d, GH) and same_side(a, c, EF) and same_side(a, b, GH)
  have between(a, e, b) and between(c, f, d)
  have between(a, g, c) and between(b, h, d)
  apply I.34(b, a, d, c, AB, CD, BD, AC)
  apply I.34(e, a, k, g, AB, GH, EF, AC)
  apply I.34(h, k, d, f, GH, CD, BD, EF)
  apply parallelogram_area(e, b, k, h, AB, GH, EF, BD)
  apply parallelogram_area(g, k, c, f, GH, CD, AC, EF)
  have area(a, b, d) = area(a, k, b) + area(b, k, d)
  have area(a, k, b) = area(a, e, k) + area(k, e, b) and area(b, k, d) = area(b, h, k) + area(k, h, d)
  have area(a, c, d) = area(a, k, c) + area(c, k, d)
  have area(a, k, c) = area(a, g, k) + area(k, g, c) and area(c, k, d) = area(c, f, k) + area(k, f, d)
qed

# I.48: checked (59 s) with I.47 taken as given.
theorem I.48 "x":
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

# I.39 and I.41 reduced to I.37 (not run; lemma_I35 and I.35 are now proved in data/book1.e, with I.36-I.38).
theorem I.39 "x":
  forall (a b c d : Point) (BC AD : Line),
  on_line(b, BC) and on_line(c, BC) and b != c and same_side(a, d, BC) and area(a, b, c) = area(d, b, c)
  and a != d and on_line(a, AD) and on_line(d, AD) =>
  parallel(AD, BC)
proof
  obtain M by I.31(a, BC)
  obtain BD by line(b, d)
  have lines_meet(M, BD)
  obtain e by intersection_lines(M, BD)
  apply I.37(a, e, b, c, M, BC)
  have same_side(e, d, BC)
  have e = d
qed

theorem I.41 "x":
  forall (a b c d e : Point) (AE BC AB DC : Line),
  on_line(a, AE) and on_line(d, AE) and on_line(e, AE) and on_line(b, BC) and on_line(c, BC) and parallel(AE, BC)
  and on_line(a, AB) and on_line(b, AB) and on_line(d, DC) and on_line(c, DC) and parallel(AB, DC) =>
  area(a, b, c) + area(a, c, d) = 2 * area(e, b, c)
proof
  apply I.34(b, a, c, d, AB, DC, BC, AE)
  apply I.37(a, e, b, c, AE, BC)
qed
