"""The expected-NLL-shift measurement of `dipmark/watermark` on the experiments' tiny random Llama."""

import numpy as np

from jaxml.papers.dipmark import data, experiments, reweight


def test_expected_nll_shift_is_zero_for_the_identity_and_positive_for_kgw():
    vocab = 96
    model, params = experiments.tiny_model(vocab)   # shared with the tiny experiments of this process
    rng = np.random.default_rng(0)
    prompts = data.Prompts([rng.integers(0, vocab, 4).tolist() for _ in range(3)], ["continuation"] * 3, ["r"] * 3)
    gens = [rng.integers(0, vocab, n) for n in (12, 7, 0)]
    wms = {"identity": reweight.dipmark(b"k", vocab, alpha=0.0), "kgw": reweight.kgw(b"k", vocab, delta=2.0)}
    shift = experiments.expected_nll_shift(model, params, prompts, gens, wms, b"k")
    np.testing.assert_allclose(shift["identity"][:2], 0.0, atol=1e-6)
    assert (shift["kgw"][:2] > 0.01).all()
    assert np.isnan(shift["kgw"][2])   # an empty generation has no positions
