"""The planted-fact task: the span holds the value, the query ends the text; the hit measure by hand."""

import numpy as np
import pytest

from jaxml.models.llama import smollm2_tokenizer
from jaxml.papers.attnlrp import plausibility


def test_planted_facts_hold_the_value_once_and_end_with_the_query():
    tok = smollm2_tokenizer()
    ex = plausibility.planted_fact_examples(tok, n=10, length=96, seed=1)
    assert ex.tokens.shape == (10, 96)
    for r in range(10):
        span_text = tok.decode(ex.tokens[r][ex.answer_span[r]].tolist()).strip()
        assert span_text in plausibility.VALUES
        assert ex.tokens[r][ex.answer_span[r]][0] == ex.answer_ids[r]
        text = tok.decode(ex.tokens[r][ex.valid[r]].tolist())
        key = next(k for k in plausibility.KEYS if text.endswith(f"The {k} is"))
        assert f"The {key} is {span_text}." in text
        assert not (ex.answer_span[r] & ~ex.valid[r]).any()


def test_top_token_in_span_by_hand():
    scores = np.array([[0.1, 0.9, 0.3, 5.0], [0.0, 0.2, 0.7, 0.1]])
    span = np.array([[False, True, True, False], [False, False, True, False]])
    valid = np.array([[True, True, True, False], [True, True, True, True]])    # the 5.0 is padding
    np.testing.assert_array_equal(plausibility.top_token_in_span(scores, span, valid), [True, True])
    np.testing.assert_array_equal(plausibility.top_token_in_span(-scores, span, valid), [False, False])
    with pytest.raises(ValueError, match="must be"):
        plausibility.top_token_in_span(scores, span[:, :2], valid)
