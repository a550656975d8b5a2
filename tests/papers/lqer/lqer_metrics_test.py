"""LQER's reported numbers (jaxml.papers.lqer.metrics) and claims against hand-computed cases."""

import numpy as np
import pytest
import scipy.stats

from jaxml.core.experiment import DOES_NOT_HOLD, HOLDS, NOT_COMPARABLE
from jaxml.papers.lqer import metrics
from jaxml.papers.lqer.experiments import order_claims


def test_paper_order():
    # the paper's OPT-1.3B ablation at W4 (FP16 14.63, L2QER 15.02, LQER 15.28, MXINT 16.12) holds
    assert metrics.paper_order(14.63, 15.02, 15.28, 16.12)
    assert metrics.paper_order(10.0, 11.0, 11.0, 12.0)          # L2QER == LQER is allowed (<=)
    assert not metrics.paper_order(10.0, 11.5, 11.0, 12.0)      # L2QER worse than LQER
    assert not metrics.paper_order(11.0, 11.0, 11.5, 12.0)      # L2QER not strictly above FP
    assert not metrics.paper_order(10.0, 11.0, 12.0, 12.0)      # LQER not strictly below MXINT


def test_relative_gap():
    assert metrics.relative_gap(5.69, 5.479) == pytest.approx(0.038510677, rel=1e-8)   # 5.69 / 5.479 - 1
    assert metrics.relative_gap(44.48, 39.76) == pytest.approx(4.72 / 39.76)
    assert metrics.relative_gap(3.0, 4.0) == -0.25
    with pytest.raises(ValueError, match="positive"):
        metrics.relative_gap(1.0, 0.0)


def test_strictly_decreasing():
    assert metrics.strictly_decreasing([192.91, 81.37, 71.68, 65.36, 56.24])
    assert not metrics.strictly_decreasing([3.0, 2.0, 2.0])
    assert not metrics.strictly_decreasing([1.0, 2.0])
    assert metrics.strictly_decreasing([5.0])


def test_top_k_energy():
    # sigma = (3, 2, 1): squares 9, 4, 1 out of 14
    assert metrics.top_k_energy(np.array([3.0, 2.0, 1.0]), 1) == pytest.approx(9 / 14)
    assert metrics.top_k_energy(np.array([1.0, 3.0, 2.0]), 2) == pytest.approx(13 / 14)   # any order
    assert metrics.top_k_energy(np.array([3.0, 2.0, 1.0]), 3) == 1.0
    # equals ||best rank-k approximation||^2 / ||M||^2 (Eckart-Young) on a random matrix
    m = np.random.default_rng(0).normal(size=(12, 7))
    u, s, vt = np.linalg.svd(m, full_matrices=False)
    best2 = (u[:, :2] * s[:2]) @ vt[:2]
    assert metrics.top_k_energy(s, 2) == pytest.approx(np.sum(best2 ** 2) / np.sum(m ** 2), rel=1e-12)
    with pytest.raises(ValueError, match="k=4"):
        metrics.top_k_energy(np.array([3.0, 2.0, 1.0]), 4)


def test_relative_error():
    w = np.array([[3.0, 0.0], [0.0, 4.0]])                     # ||W|| = 5
    assert metrics.relative_error(w, np.array([[3.0, 0.0], [0.0, 1.0]])) == pytest.approx(3 / 5)
    assert metrics.relative_error(w, w) == 0.0
    with pytest.raises(ValueError, match="all zero"):
        metrics.relative_error(np.zeros((2, 2)), np.zeros((2, 2)))


def test_bits_per_weight():
    # a 576 x 1536 kernel at 5.28 bits and a 576 x 192 one at 4.5: (5.28 * 884736 + 4.5 * 110592) / 995328
    assert metrics.bits_per_weight([5.28, 4.5], [576 * 1536, 576 * 192]) == pytest.approx(
        (5.28 * 884736 + 4.5 * 110592) / 995328)
    assert metrics.bits_per_weight([4.5], [10]) == 4.5
    with pytest.raises(ValueError, match="as many bits as sizes"):
        metrics.bits_per_weight([4.5, 3.5], [10])


def _table(fp, w4, w3):
    """Metrics of the perplexity table: w4/w3 = (L2QER, LQER, MXINT), with the derived entries."""
    m = {"ppl_fp": fp}
    for bits, (l2qer, lqer, mxint) in ((4, w4), (3, w3)):
        m |= {f"ppl_l2qer_w{bits}": l2qer, f"ppl_lqer_w{bits}": lqer, f"ppl_mxint_w{bits}": mxint,
              f"paper_order_holds_w{bits}": float(metrics.paper_order(fp, l2qer, lqer, mxint)),
              f"gap_l2qer_w{bits}": metrics.relative_gap(l2qer, fp),
              f"lqer_over_l2qer_w{bits}": metrics.relative_gap(lqer, l2qer)}
    return m


def test_order_claims_verdicts():
    # the README's full-scale numbers: the order holds at both widths, L2QER is 11.9% above FP
    # (not within 4%), and LQER's excess over L2QER grows from 13.5% (W4) to 130% (W3)
    m = _table(39.76, (44.48, 50.50, 53.28), (65.36, 150.46, 192.91))
    order, lossless, w3 = order_claims(m, (4, 3), True, "setting")
    assert (order.verdict, lossless.verdict, w3.verdict) == (HOLDS, DOES_NOT_HOLD, HOLDS)
    assert "W4A8: FP 39.76, L2QER 44.48, LQER 50.50, MXINT 53.28" in order.ours
    assert lossless.ours.startswith("+11.9%")
    assert "+13.5% at W4, +130.2% at W3" in w3.ours
    # the paper's LLaMA-2-7B-like closeness: within 4% holds
    m = _table(5.479, (5.69, 5.85, 6.2), (6.0, 7.0, 8.0))
    assert [c.verdict for c in order_claims(m, (4, 3), True, "s")] == [HOLDS, HOLDS, HOLDS]
    # the order broken at one width fails the headline claim; the lead shrinking fails the third
    m = _table(39.76, (44.48, 50.50, 53.28), (160.0, 150.46, 192.91))
    assert [c.verdict for c in order_claims(m, (4, 3), True, "s")] == [DOES_NOT_HOLD, DOES_NOT_HOLD, DOES_NOT_HOLD]
    # a tiny run speaks to nothing
    assert {c.verdict for c in order_claims(m, (4, 3), False, "s")} == {NOT_COMPARABLE}
    # with W3 alone there is neither a W4 closeness claim nor a W4-vs-W3 comparison
    m = {k: v for k, v in _table(39.76, (44.48, 50.50, 53.28), (65.36, 150.46, 192.91)).items() if "w4" not in k}
    claims = order_claims(m, (3,), True, "s")
    assert len(claims) == 1 and claims[0].verdict == HOLDS and "W4A8" not in claims[0].ours


# --- MiniLM: sentence embeddings against the float32 model's ---------------------------------------

def _unit(degrees: np.ndarray) -> np.ndarray:
    """Unit vectors in the plane at these angles (their cosines are the cosines of the angle differences)."""
    return np.stack([np.cos(np.radians(degrees)), np.sin(np.radians(degrees))], 1)


def test_mean_cosine():
    ref = np.array([[1.0, 0.0], [0.0, 2.0]])
    # row 0: cos 45 deg = 1/sqrt 2; row 1: the same direction, another length -> 1
    emb = np.array([[1.0, 1.0], [0.0, 0.5]])
    assert metrics.mean_cosine(ref, emb) == pytest.approx((2 ** -0.5 + 1.0) / 2)
    assert metrics.mean_cosine(ref, -ref) == -1.0
    with pytest.raises(ValueError, match="all zero"):
        metrics.mean_cosine(ref, np.array([[1.0, 0.0], [0.0, 0.0]]))
    with pytest.raises(ValueError, match="same shape"):
        metrics.mean_cosine(ref, ref[:1])


def test_similarity_spearman():
    # four unit vectors at angles 0, 10, 30, 100 degrees: the six pairwise cosines (pairs 01 02 03 12 13 23)
    # are cos 10, 30, 100, 20, 90, 70 degrees -> ranks 6 4 1 5 2 3. At 0, 10, 30, 30 (the last two rows
    # equal, so their cosines tie exactly): cos 10, 30, 30, 20, 20, 0 -> ranks 5 1.5 1.5 3.5 3.5 6. Pearson
    # of the rank vectors by hand: centred (2.5 .5 -2.5 1.5 -1.5 -.5) and (1.5 -2 -2 0 0 2.5), products
    # 3.75 - 1 + 5 - 1.25 = 6.5, squares 17.5 and 16.5 -> 6.5 / sqrt(17.5 * 16.5)
    ref, emb = _unit(np.array([0.0, 10, 30, 100])), _unit(np.array([0.0, 10, 30, 30]))
    assert metrics.similarity_spearman(ref, emb) == pytest.approx(6.5 / np.sqrt(17.5 * 16.5), rel=1e-12)
    assert metrics.similarity_spearman(ref, 3.0 * ref) == pytest.approx(1.0)   # only directions count
    # against scipy.stats.spearmanr of the upper-triangle similarities on random embeddings
    rng = np.random.default_rng(0)
    ref = rng.normal(size=(20, 8))
    emb = ref + 0.3 * rng.normal(size=ref.shape)
    i, j = np.triu_indices(20, 1)
    cos = lambda x: (x / np.linalg.norm(x, axis=1, keepdims=True)) @ (x / np.linalg.norm(x, axis=1, keepdims=True)).T  # noqa: E731
    expected = scipy.stats.spearmanr(cos(ref)[i, j], cos(emb)[i, j]).statistic
    assert metrics.similarity_spearman(ref, emb) == pytest.approx(expected, rel=1e-12)


def test_neighbour_agreement():
    # five directions at 0, 10, 22, 60, 70 degrees: the reference's nearest neighbours are 0->1, 1->0,
    # 2->1, 3->4, 4->3
    ref = _unit(np.array([0.0, 10, 22, 60, 70]))
    assert metrics.neighbour_agreement(ref, ref, 2) == {"top1": 1.0, "recall_at_k": 1.0}
    # move point 2 to 55 degrees: its nearest becomes 3 (was 1); point 3's nearest becomes 2 (was 4);
    # the others keep theirs -> top-1 3/5. With k = 2: reference sets {1,2} {0,2} {1,0} {4,2} {3,2};
    # moved: 0 {1,2}, 1 {0,2}, 2 {3,4}, 3 {2,4}, 4 {3,2} -> overlaps 2, 2, 0, 2, 2 of 2 -> recall 0.8
    emb = _unit(np.array([0.0, 10, 55, 60, 70]))
    got = metrics.neighbour_agreement(ref, emb, 2)
    assert got == {"top1": pytest.approx(3 / 5), "recall_at_k": pytest.approx(0.8)}
    with pytest.raises(ValueError, match="k=5"):
        metrics.neighbour_agreement(ref, emb, 5)
