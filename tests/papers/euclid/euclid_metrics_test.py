"""The Euclid experiments' counts and rates on hand-computed cases."""

import pytest

from jaxml.papers.euclid import metrics as M


def test_rate():
    assert M.rate(3, 8) == 0.375
    assert M.rate(0, 0) == 0.0                 # nothing scored: 0, not a division error
    with pytest.raises(ValueError):
        M.rate(5, 4)
    with pytest.raises(ValueError):
        M.rate(-1, 4)


def test_accuracy_and_accuracy_by_kind():
    kinds = ["renamed", "dropped", "renamed", "unrelated", "dropped"]
    expected = ["equivalent", "test_implies_ground", "equivalent", "neither", "test_implies_ground"]
    got = ["equivalent", "neither", "equivalent", "neither", "test_implies_ground"]
    assert M.accuracy(expected, got) == 0.8                           # 4 of 5
    assert M.accuracy_by_kind(kinds, expected, got) == {"renamed": 1.0, "dropped": 0.5, "unrelated": 1.0}
    assert list(M.accuracy_by_kind(kinds, expected, got)) == ["renamed", "dropped", "unrelated"]
    with pytest.raises(ValueError):
        M.accuracy(["a"], ["a", "b"])
    with pytest.raises(ValueError):
        M.accuracy_by_kind(["k"], ["a", "b"], ["a", "b"])


def test_category_counts_include_zeros_and_reject_strangers():
    known = ("equivalent", "neither", "parse_error")
    assert M.category_counts(["neither", "parse_error", "parse_error"], known) == {
        "equivalent": 0, "neither": 1, "parse_error": 2}
    with pytest.raises(ValueError, match="'maybe'"):
        M.category_counts(["maybe"], known)


def test_book_counts_split_propositions_from_lemmas():
    props = [f"I.{i}" for i in range(1, 49)]
    sat = {"I.1": "sat", "I.2": "sat", "I.3": "timeout", "lemma_I13": "sat"}
    proofs = {"I.1": "verified", "I.2": "failed", "I.3": "conditional", "lemma_I13": "verified",
              "lemma_I16": "failed", "lemma_x": "conditional"}
    assert M.book_counts(sat, proofs, props) == {
        "statements_parsed": 48.0, "statements_checked": 3.0, "statements_satisfiable": 2.0,
        "proofs_total": 3.0, "proofs_checked": 1.0, "proofs_conditional": 1.0,
        "lemmas_total": 3.0, "lemmas_checked": 1.0, "lemmas_conditional": 1.0}


def test_book_counts_reject_a_bare_truth_value():
    # A bool cannot say whether a proof rests on an unproved statement: refused, not counted.
    with pytest.raises(ValueError, match="proof status True of I.1"):
        M.book_counts({}, {"I.1": True}, ["I.1"])
