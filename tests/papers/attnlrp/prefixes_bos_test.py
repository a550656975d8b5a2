"""The BOS mode of the perturbation protocol: the same text, one start-of-text token in front that is never removed."""

import numpy as np

from jaxml.models.llama import smollm2_tokenizer
from jaxml.papers.attnlrp import data


def test_bos_prefixes_add_a_protected_start_token():
    tok = smollm2_tokenizer()
    plain = data.sample_prefixes(tok, n=12, length=16, min_tokens=6, seed=3)
    bos = data.sample_prefixes(tok, n=12, length=16, min_tokens=6, seed=3, bos=True)
    assert plain.sentence == bos.sentence
    for r in range(12):
        p = plain.tokens[r][plain.valid[r]]
        b = bos.tokens[r][bos.valid[r]]
        assert b[0] == tok.bos_id and tok.bos_id not in p
        if len(p) < 16:
            np.testing.assert_array_equal(b[1:], p)           # the same text after the BOS
        else:
            np.testing.assert_array_equal(b[1:], p[:-1])      # a full-length prefix loses its last token
        first = np.argmax(bos.valid[r])
        assert not bos.removable()[r, first] and bos.removable()[r, first + 1:].all()
    np.testing.assert_array_equal(plain.removable(), plain.valid)


class _Tok:
    def encode(self, s):
        return [int(c) for c in s.split()]


def test_mean_embedding_weights_rows_by_occurrence(monkeypatch):
    monkeypatch.setattr(data, "held_out_sentences", lambda corpus, split_seed=0: ("0 1 1", "2") if corpus == "a" else ("1",))
    table = np.array([[1.0, 0.0], [0.0, 1.0], [2.0, 2.0]])
    got = data.mean_embedding(table, _Tok(), corpora=("a", "b"))
    np.testing.assert_allclose(got, (table[0] + 3 * table[1] + table[2]) / 5)      # token 1 occurs 3 times in 5
