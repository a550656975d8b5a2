"""Calibration windows from the training text."""

import numpy as np

from jaxml.compress import calibration


def test_text_windows_are_drawn_from_the_training_text():
    from jaxml.data import text
    from jaxml.models.llama import smollm2_tokenizer

    tok = smollm2_tokenizer()
    batches = list(calibration.text_windows(tok, 6, 16, seed=2, batch=4))
    assert [b[0][0].shape for b in batches] == [(4, 16), (2, 16)]
    docs = text.split_documents(text.load_corpus("shakespeare"), seed=0)["train"][:6]
    ids = tok.encode("\n\n".join(text.unwrap(d.text) for d in docs))
    starts = np.random.default_rng(2).choice(len(ids) - 16, size=6, replace=False)
    np.testing.assert_array_equal(np.asarray(batches[1][0][0][1]), ids[starts[5]:starts[5] + 16])
    np.testing.assert_array_equal(np.asarray(batches[0][0][1][0]), np.arange(16))
