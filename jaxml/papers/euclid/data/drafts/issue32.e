# NOT PART OF THE BOOK: drafts of Book I proofs from issue 32 that were not checked in a full run by the
# deadline. `book.book1()` does not read this file. The status of each is in its comment; a proof here
# moves into data/book1.e only once `euclid.book.check_book()` verifies it with everything else.
# Theorem texts are "x" (the statements are the ones of data/book1.e).

# lemma_I35: Euclid's figure of I.35 (d between a and e, e between d and f); its run got past the
# intersection g of dc and eb before it was stopped. I.35 itself needs the other orders of a, d, e, f
# (LeanEuclid's proposition_35': four cases).
theorem lemma_I35 "I.35 when d lies between a and e and e between d and f (Euclid's figure).":
  forall (a b c d e f : Point) (AF BC AB DC EB FC : Line),
  on_line(a, AF) and on_line(d, AF) and on_line(e, AF) and on_line(f, AF) and on_line(b, BC) and on_line(c, BC)
  and parallel(AF, BC) and on_line(a, AB) and on_line(b, AB) and on_line(d, DC) and on_line(c, DC) and parallel(AB, DC)
  and on_line(e, EB) and on_line(b, EB) and on_line(f, FC) and on_line(c, FC) and parallel(EB, FC)
  and between(a, d, e) and between(d, e, f) =>
  area(a, b, c) + area(a, c, d) = area(e, b, c) + area(e, c, f)
proof
  apply I.34(a, d, b, c, AF, BC, AB, DC)
  apply I.34(e, f, b, c, AF, BC, EB, FC)
  have |a e| = |d f|
  obtain x by extend(c, d, DC)
  apply I.29(x, c, b, d, a, f, DC, AB, AF)
  have angle(e, a, b) = angle(d, a, b)
  apply I.4(a, e, b, d, f, c)
  have same_side(a, b, DC) and same_side(c, f, EB)
  have opposite_sides(d, c, EB)
  obtain g by intersection_lines(DC, EB)
  have between(d, g, c)
  have between(e, g, b)
  apply parallelogram_area(a, d, b, c, AF, BC, AB, DC)
  have area(d, b, c) = area(d, b, g) + area(g, b, c)
  have area(a, b, e) = area(a, b, d) + area(d, b, e)
  have area(d, b, e) = area(d, b, g) + area(d, g, e)
  have area(e, b, c) = area(e, g, c) + area(g, b, c)
  have area(d, c, f) = area(d, c, e) + area(e, c, f)
  have area(d, c, e) = area(d, g, e) + area(g, c, e)
qed

# I.35 reduced to I.37 (not run; I.37 itself rests on I.35 in Euclid and LeanEuclid, so this only shows the
# reduction). (I.39, I.41 and I.48 are proved in data/book1.e now.)
theorem I.35 "x":
  forall (a b c d e f : Point) (AF BC AB DC EB FC : Line),
  on_line(a, AF) and on_line(d, AF) and on_line(e, AF) and on_line(f, AF) and on_line(b, BC) and on_line(c, BC)
  and parallel(AF, BC) and on_line(a, AB) and on_line(b, AB) and on_line(d, DC) and on_line(c, DC) and parallel(AB, DC)
  and on_line(e, EB) and on_line(b, EB) and on_line(f, FC) and on_line(c, FC) and parallel(EB, FC) =>
  area(a, b, c) + area(a, c, d) = area(e, b, c) + area(e, c, f)
proof
  apply I.34(b, a, c, d, AB, DC, BC, AF)
  apply I.34(b, e, c, f, EB, FC, BC, AF)
  apply I.37(a, e, b, c, AF, BC)
qed
