import pytest

from jaxml.data import digits, text


@pytest.mark.parametrize("corpus, n_docs, must_have", [
    ("shakespeare", 42, ("hamlet", "HAMLET, PRINCE OF DENMARK")),
    ("kjv", 66, ("Genesis", "In the beginning God created the heaven and the earth.")),
    ("austen", 6, ("prideprejudice", "It is a truth universally acknowledged")),
])
def test_corpora_have_their_known_documents(corpus, n_docs, must_have):
    docs = text.load_corpus(corpus)
    assert len(docs) == n_docs
    doc_id, phrase = must_have
    doc = next(d for d in docs if d.doc_id == doc_id)
    assert phrase in doc.text


def test_kjv_has_every_verse():
    docs = text.load_corpus("kjv")
    assert sum(len(d.text.split("\n")) for d in docs) == 31103


def test_split_by_document_is_disjoint_complete_and_stable():
    docs = text.load_corpus("kjv")
    splits = text.split_documents(docs, (0.8, 0.1, 0.1), seed=0)
    ids = [[d.doc_id for d in splits[k]] for k in text.SPLIT_NAMES]
    assert sorted(sum(ids, [])) == sorted(d.doc_id for d in docs)
    assert [len(x) for x in ids] == [52, 7, 7]
    again = text.split_documents(list(reversed(docs)), (0.8, 0.1, 0.1), seed=0)
    assert [[d.doc_id for d in again[k]] for k in text.SPLIT_NAMES] == ids
    other = text.split_documents(docs, (0.8, 0.1, 0.1), seed=1)
    assert [d.doc_id for d in other["test"]] != ids[2]


def test_small_corpus_gets_every_split():
    splits = text.split_documents(text.load_corpus("austen"), (0.8, 0.1, 0.1))
    assert [len(splits[k]) for k in text.SPLIT_NAMES] == [4, 1, 1]
    with pytest.raises(ValueError, match="summing to 1"):
        text.split_documents([], (0.5, 0.1, 0.1))
    with pytest.raises(ValueError, match="unknown corpus"):
        text.load_corpus("tolstoy")


def test_digits_match_the_uci_counts():
    images, labels = digits.load()
    assert images.shape == (1797, 8, 8) and images.min() == 0 and images.max() == 16
    assert labels.tolist().count(0) == 178 and len(set(labels.tolist())) == 10
