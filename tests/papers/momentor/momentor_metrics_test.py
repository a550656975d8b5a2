"""Momentor evaluation metrics on small hand-computed cases: temporal IoU, grounding R@1 / mIoU,
optimal event matching (where greedy and the plain 1 + IoU weight both lose matches), dense
captioning P/R/F1 and caption scores at two thresholds, QVHighlights mAP / HIT@1, caption text."""

import math

import numpy as np
import pytest

from jaxml.papers.momentor import metrics

NAN = float("nan")

# ------------------------------------------------------------------------------ temporal IoU


def test_temporal_iou_hand_values():
    # [0,2] vs [1,3]: intersection [1,2] = 1, hull [0,3] = 3.
    assert float(metrics.temporal_iou([0, 2], [1, 3])) == pytest.approx(1 / 3)
    assert float(metrics.temporal_iou([0, 10], [2, 4])) == pytest.approx(0.2)  # contained: 2 / 10
    assert float(metrics.temporal_iou([0, 1], [2, 3])) == 0.0  # disjoint
    assert float(metrics.temporal_iou([0, 1], [1, 3])) == 0.0  # touching at a point
    assert float(metrics.temporal_iou([4, 4], [4, 4])) == 1.0  # same point: union 0, identical
    assert float(metrics.temporal_iou([4, 4], [5, 5])) == 0.0  # two different points
    assert float(metrics.temporal_iou([5, 5], [0, 10])) == 0.0  # a point inside a span


def test_temporal_iou_broadcasts_and_is_symmetric():
    pred = np.array([[0.0, 2.0], [1.0, 3.0], [5.0, 6.0]])
    out = metrics.temporal_iou(pred, np.array([1.0, 3.0]))
    assert out.shape == (3,)
    np.testing.assert_allclose(out, [1 / 3, 1.0, 0.0])
    # All pairs [2, 1, 2] x [1, 2, 2] -> [2, 2].
    pairs = metrics.temporal_iou(np.array([[0.0, 4.0], [2.0, 3.0]])[:, None], np.array([[1.0, 2.0], [2.0, 6.0]])[None])
    np.testing.assert_allclose(pairs, [[1 / 4, 2 / 6], [0.0, 1 / 4]])
    assert float(metrics.temporal_iou([1, 3], [0, 2])) == pytest.approx(1 / 3)


def test_temporal_iou_nan_prediction_is_zero():
    out = metrics.temporal_iou([[NAN, NAN], [0.0, NAN], [0.0, 2.0]], [[0.0, 2.0], [0.0, 2.0], [0.0, 2.0]])
    assert not np.isnan(out).any()
    np.testing.assert_array_equal(out, [0.0, 0.0, 1.0])


def test_temporal_iou_errors():
    with pytest.raises(ValueError, match=r"pred.*start <= end.*start=3.0 > end=1.0"):
        metrics.temporal_iou([3, 1], [0, 2])
    with pytest.raises(ValueError, match=r"gt.*start <= end.*index \(1,\)"):
        metrics.temporal_iou([[0, 1], [0, 1]], [[0, 2], [5, 4]])
    with pytest.raises(ValueError, match=r"gt: must not contain NaN"):
        metrics.temporal_iou([0, 1], [NAN, 2])
    with pytest.raises(ValueError, match=r"pred: must have shape \[\.\.\., 2\]"):
        metrics.temporal_iou([0, 1, 2], [0, 2])
    with pytest.raises(ValueError, match=r"do not broadcast"):
        metrics.temporal_iou(np.zeros((3, 2)), np.zeros((2, 2)))


# ---------------------------------------------------------------------------------- grounding


def test_grounding_metrics_known_mix():
    pred = [[0, 2], [0, 10], [0, 5], [NAN, NAN], [0, 7]]
    gt = [[1, 3], [0, 10], [0, 10], [0, 10], [0, 10]]
    # IoUs: 1/3, 1, 0.5, 0 (failed parse), 0.7; a value equal to the threshold counts.
    out = metrics.grounding_metrics(pred, gt)
    assert set(out) == {"r1_iou0.3", "r1_iou0.5", "r1_iou0.7", "miou", "n"}
    assert out["r1_iou0.3"] == pytest.approx(4 / 5)
    assert out["r1_iou0.5"] == pytest.approx(3 / 5)
    assert out["r1_iou0.7"] == pytest.approx(2 / 5)
    assert out["miou"] == pytest.approx((1 / 3 + 1 + 0.5 + 0 + 0.7) / 5)
    assert out["n"] == 5
    assert metrics.grounding_metrics(pred, gt, thresholds=(0.25,))["r1_iou0.25"] == pytest.approx(4 / 5)


def test_grounding_metrics_errors():
    with pytest.raises(ValueError, match=r"one row per query, got 2 and 1"):
        metrics.grounding_metrics([[0, 1], [0, 1]], [[0, 1]])
    with pytest.raises(ValueError, match=r"pred must have shape \[N, 2\]"):
        metrics.grounding_metrics([0, 1], [[0, 1]])
    with pytest.raises(ValueError, match=r"N >= 1"):
        metrics.grounding_metrics(np.zeros((0, 2)), np.zeros((0, 2)))
    with pytest.raises(ValueError, match=r"0 < t <= 1, got 50"):
        metrics.grounding_metrics([[0, 1]], [[0, 1]], thresholds=(0.5, 50))
    with pytest.raises(ValueError, match=r"start <= end"):
        metrics.grounding_metrics([[2, 1]], [[0, 1]])


# ----------------------------------------------------------------------------------- matching


def test_match_events_beats_greedy():
    # A=[0,8]: IoU 0.8 with gt1=[0,10], 6/10 = 0.6 with gt2=[2,10]. B=[0,6]: 0.6 with gt1, 4/10 = 0.4
    # with gt2. Greedy by IoU takes A-gt1 first and B is left with nothing >= 0.5: 1 match.
    # The optimum pairs A-gt2 and B-gt1: 2 matches.
    pairs = metrics.match_events([[0, 8], [0, 6]], [[0, 10], [2, 10]], 0.5)
    assert pairs == [(0, 1), (1, 0)]


def test_match_events_count_dominates_total_iou():
    # gt: g0=[0,10], g1=[5,15], g2=[10,20]; pred: A=[0,10], B=[5,15], C=[-6,5]. At 0.3:
    # A-g0 1, A-g1 5/15, B-g0 5/15, B-g1 1, B-g2 5/15, C-g0 5/16 = 0.3125, everything else 0.
    # C can only take g0, so the single 3-matching is A-g1, B-g2, C-g0 (total IoU 0.979). The cost
    # 1 + IoU would prefer A-g0, B-g1 (2 + 2 = 4 > 3 + 0.979); the count must come first.
    pairs = metrics.match_events([[0, 10], [5, 15], [-6, 5]], [[0, 10], [5, 15], [10, 20]], 0.3)
    assert pairs == [(0, 1), (1, 2), (2, 0)]


def test_match_events_ties_by_total_iou_and_threshold_filter():
    # P0=[0,6], P1=[0,10]; G0=[0,10], G1=[0,6]. Both perfect matchings have 2 pairs; the crossed one
    # has total IoU 1 + 1 = 2 against 0.6 + 0.6.
    assert metrics.match_events([[0, 6], [0, 10]], [[0, 10], [0, 6]], 0.5) == [(0, 1), (1, 0)]
    # Below the threshold nothing is returned even though the assignment would pair them.
    assert metrics.match_events([[0, 2]], [[1, 3]], 0.5) == []  # IoU 1/3
    assert metrics.match_events([[0, 2]], [[1, 3]], 0.3) == [(0, 0)]
    assert metrics.match_events([[NAN, NAN], [0, 2]], [[0, 2]], 0.5) == [(1, 0)]


def test_match_events_empty_and_errors():
    assert metrics.match_events([], [[0, 1]], 0.5) == []
    assert metrics.match_events([[0, 1]], np.zeros((0, 2)), 0.5) == []
    assert metrics.match_events([], [], 0.5) == []
    with pytest.raises(ValueError, match=r"threshold: must satisfy 0 < threshold <= 1"):
        metrics.match_events([[0, 1]], [[0, 1]], 0.0)
    with pytest.raises(ValueError, match=r"gt_spans.*start <= end"):
        metrics.match_events([[0, 1]], [[3, 1]], 0.5)
    with pytest.raises(ValueError, match=r"pred_spans: must be a list of \(start, end\) spans"):
        metrics.match_events([0, 1], [[0, 1]], 0.5)


# --------------------------------------------------------------------------- dense captioning

# Video 0: refs R0=[0,10] "a man jumps", R1=[10,20] "a dog runs". Preds: P0=[0,8] (IoU 0.8 with R0,
# same caption after normalisation), P1=[12,20] (0.8 with R1, wrong caption), P2=[5,15] (1/3 with
# each ref). Video 1: ref R2=[0,4] "cooking"; preds P3=[1,3] (IoU 2/4 = 0.5, right caption) and a
# failed parse (NaN). 5 predicted and 3 reference events.
PREDS = [
    [(0, 8, "A man  jumps"), (12, 20, "a cat runs"), (5, 15, "noise")],
    [(1, 3, " Cooking "), (NAN, NAN, "x")],
]
REFS = [
    [(0, 10, "a man jumps"), (10, 20, "a dog runs")],
    [(0, 4, "cooking")],
]


def test_dense_caption_metrics_two_videos_two_thresholds():
    out = metrics.dense_caption_metrics(PREDS, REFS, thresholds=(0.3, 0.7))
    # t = 0.3: video 0 matches P0-R0, P1-R1 (2 refs, the larger total IoU 1.6 beats using P2);
    # video 1 matches P3-R2. matched 3: P = 3/5, R = 3/3, F1 = 2 * 0.6 * 1 / 1.6 = 0.75.
    # Captions right: P0, P3 -> 2/3. Joint hits (IoU and caption): P0-R0, P3-R2 -> P = 2/5, R = 2/3,
    # F1 = 2 * (4/15) / (16/15) = 0.5.
    assert out["precision@0.3"] == pytest.approx(0.6)
    assert out["recall@0.3"] == pytest.approx(1.0)
    assert out["f1@0.3"] == pytest.approx(0.75)
    assert out["caption_accuracy@0.3"] == pytest.approx(2 / 3)
    assert out["caption_f1@0.3"] == pytest.approx(0.5)
    # t = 0.7: P0-R0, P1-R1 only (P3 has 0.5). P = 2/5, R = 2/3, F1 = 2 * (4/15) / (16/15) = 0.5.
    # Captions right: 1/2. Joint: P0-R0 -> P = 1/5, R = 1/3, F1 = 2 * (1/15) / (8/15) = 0.25.
    assert out["precision@0.7"] == pytest.approx(0.4)
    assert out["recall@0.7"] == pytest.approx(2 / 3)
    assert out["f1@0.7"] == pytest.approx(0.5)
    assert out["caption_accuracy@0.7"] == pytest.approx(0.5)
    assert out["caption_f1@0.7"] == pytest.approx(0.25)
    # Means over the two thresholds.
    assert out["precision"] == pytest.approx(0.5)
    assert out["recall"] == pytest.approx(5 / 6)
    assert out["f1"] == pytest.approx(0.625)
    assert out["caption_accuracy"] == pytest.approx(7 / 12)
    assert out["caption_f1"] == pytest.approx(0.375)
    assert (out["n_videos"], out["n_pred"], out["n_ref"]) == (2, 5, 3)


def test_dense_caption_default_thresholds_keys():
    out = metrics.dense_caption_metrics(PREDS, REFS)
    for t in ("0.3", "0.5", "0.7", "0.9"):
        for k in ("precision", "recall", "f1", "caption_accuracy", "caption_f1"):
            assert f"{k}@{t}" in out
    # t = 0.9: nothing matches (best IoU 0.8), so every per-threshold value is 0; at 0.5 P3 (IoU 0.5)
    # still matches, as at 0.3.
    assert out["precision@0.9"] == 0.0 and out["f1@0.9"] == 0.0
    assert out["precision@0.5"] == pytest.approx(0.6)
    assert out["precision"] == pytest.approx((0.6 + 0.6 + 0.4 + 0.0) / 4)


def test_dense_caption_joint_score_uses_its_own_matching():
    # One prediction [0,10] "b"; refs [0,10] "a" (IoU 1) and [0,8] "b" (IoU 0.8). Localisation pairs it
    # with the better-overlapping "a" (caption wrong), the joint score with "b": P = 1, R = 1/2.
    out = metrics.dense_caption_metrics([[(0, 10, "b")]], [[(0, 10, "a"), (0, 8, "b")]], thresholds=(0.5,))
    assert out["caption_accuracy"] == 0.0
    assert out["caption_f1"] == pytest.approx(2 / 3)
    assert out["f1"] == pytest.approx(2 / 3)


def test_dense_caption_empty_predictions_and_errors():
    out = metrics.dense_caption_metrics([[], []], REFS, thresholds=(0.5,))
    assert out["precision"] == 0.0 and out["recall"] == 0.0 and out["f1"] == 0.0
    assert out["caption_accuracy"] == 0.0 and (out["n_pred"], out["n_ref"]) == (0, 3)
    with pytest.raises(ValueError, match=r"one entry per video, got 1 and 2"):
        metrics.dense_caption_metrics([[]], REFS)
    with pytest.raises(ValueError, match=r"predictions\[0\]\[0\]: an event must be a \(start, end, caption\)"):
        metrics.dense_caption_metrics([[(0, 1)]], [[(0, 1, "a")]])
    with pytest.raises(ValueError, match=r"references\[0\]\[0\]: the caption must be a str"):
        metrics.dense_caption_metrics([[(0, 1, "a")]], [[(0, 1, 5)]])
    with pytest.raises(ValueError, match=r"references\[1\].*start <= end"):
        metrics.dense_caption_metrics([[], []], [[(0, 1, "a")], [(4, 2, "b")]])


# -------------------------------------------------------------------------------- highlights


def test_highlight_metrics_hand_computed():
    # q0: ranked [3, 1, 7], relevant {1, 7, 9} (frame 3 has level 1 < 2). Hits at ranks 2 and 3:
    # AP = (1/3) * (1/2 + 2/3) = 7/18; HIT@1 = 0.
    s0 = np.array([0, 2, 0, 1, 0, 0, 0, 4, 0, 3])
    # q1: ranked [2, 2, 0] -> [2, 0] after dropping the repeat; relevant {2, 3}; k = R = 2; hit at
    # rank 1 only: AP = (1/2) * 1 = 0.5 (keeping the repeat would give (1/2) * (1 + 1) = 1); HIT@1 = 1.
    s1 = np.array([0, 0, 3, 2, 0])
    # q2: no prediction: AP 0, HIT@1 0.
    # q3: ranked [5], relevant {5, 6, 7}: min(k, R) = 1, AP = 1; HIT@1 = 1.
    s3 = np.array([0, 0, 0, 0, 0, 2, 2, 2])
    out = metrics.highlight_metrics([np.array([3, 1, 7]), np.array([2, 2, 0]), np.array([], dtype=int), [5]],
                                    [s0, s1, s1, s3])
    assert out["map"] == pytest.approx((7 / 18 + 0.5 + 0 + 1) / 4)
    assert out["hit1"] == pytest.approx(2 / 4)
    assert out["n"] == 4


def test_highlight_metrics_very_good_and_no_relevant():
    s = np.array([4, 2, 0])
    # very_good = 4: only frame 0 relevant. Ranked [1, 0]: hit at rank 2, AP = (1/1) * (1/2).
    assert metrics.highlight_metrics([[1, 0]], [s], very_good=4)["map"] == pytest.approx(0.5)
    # very_good = 2: frames 0 and 1 relevant: AP = (1/2) * (1 + 1) = 1.
    assert metrics.highlight_metrics([[1, 0]], [s], very_good=2)["map"] == pytest.approx(1.0)
    # No relevant frame: AP 0.
    out = metrics.highlight_metrics([[0, 1]], [np.array([1, 1, 0])])
    assert out["map"] == 0.0 and out["hit1"] == 0.0


def test_highlight_metrics_errors():
    with pytest.raises(ValueError, match=r"ranked_frames\[1\]: frame index 5 is out of range \[0, 5\)"):
        metrics.highlight_metrics([[0], [1, 5]], [np.zeros(5, int), np.zeros(5, int)])
    with pytest.raises(ValueError, match=r"frame index -1 is out of range"):
        metrics.highlight_metrics([[-1]], [np.zeros(5, int)])
    with pytest.raises(ValueError, match=r"one entry per query, got 1 and 2"):
        metrics.highlight_metrics([[0]], [np.zeros(5, int), np.zeros(5, int)])
    with pytest.raises(ValueError, match=r"frame indices must be integers"):
        metrics.highlight_metrics([[0.5]], [np.zeros(5, int)])
    with pytest.raises(ValueError, match=r"at least one query"):
        metrics.highlight_metrics([], [])


# ------------------------------------------------------------------------------ caption text


def test_caption_accuracy():
    # Case and whitespace are normalised, punctuation is not: "dog" != "dog.".
    assert metrics.caption_accuracy(["A man  jumps ", "dog", "cat"], ["a man jumps", "Dog.", "cat"]) == \
        pytest.approx(2 / 3)
    with pytest.raises(ValueError, match=r"pred: must be a sequence of strings"):
        metrics.caption_accuracy("abc", ["abc"])
    with pytest.raises(ValueError, match=r"one string per item, got 1 and 2"):
        metrics.caption_accuracy(["a"], ["a", "b"])


def test_token_f1():
    # "the cat sat" vs "the cat sat down": overlap 3, P = 1, R = 3/4, F1 = 1.5 / 1.75 = 6/7.
    assert metrics.token_f1(["the cat sat"], ["The cat sat down"]) == pytest.approx(6 / 7)
    # "a a b" vs "a c": multiset overlap {a: 1}: P = 1/3, R = 1/2, F1 = (1/3) / (5/6) = 0.4.
    assert metrics.token_f1(["a a b"], ["a c"]) == pytest.approx(0.4)
    # Both empty 1, one empty 0, no overlap 0; the mean over the pairs.
    assert metrics.token_f1(["the cat sat", "a a b", "", "x", "x"], ["the cat sat down", "a c", " ", "", "y"]) == \
        pytest.approx((6 / 7 + 0.4 + 1 + 0 + 0) / 5)
    with pytest.raises(ValueError, match=r"ref: every item must be a str, got int at index 1"):
        metrics.token_f1(["a", "b"], ["a", 3])
    assert not math.isnan(metrics.token_f1(["x"], ["x"]))


def test_aggregate_pairs_encodings_by_seed():
    from jaxml.papers.momentor.experiments import aggregate
    runs = {"propagate/seed0": {"grounding/miou": 0.5}, "propagate/seed1": {"grounding/miou": 0.7},
            "discrete/seed0": {"grounding/miou": 0.4}, "discrete/seed1": {"grounding/miou": 0.75}}
    out = aggregate(runs, ("propagate", "discrete"), (0, 1))
    assert out["propagate/grounding/miou"] == pytest.approx(0.6)
    assert out["discrete/grounding/miou_std"] == pytest.approx(np.std([0.4, 0.75], ddof=1))
    assert out["paired/propagate_minus_discrete/grounding/miou"] == pytest.approx((0.1 - 0.05) / 2)
    assert out["paired/propagate_minus_discrete/grounding/miou_std"] == pytest.approx(np.std([0.1, -0.05], ddof=1))
    assert out["paired/propagate_minus_discrete/grounding/miou_positive"] == 0.5


def test_encoding_claims_take_their_verdict_from_the_paired_test():
    """3 seeds with gains in every seed are 'suggestive' (the guard wants 5 seeds and p < 0.05); 5 seeds with
    consistent gains hold; a loss in the mean does not hold; tiny runs are not comparable."""
    import types

    from jaxml.papers.momentor.experiments import aggregate, encoding_claims

    def claims(gains, scale="full"):
        seeds = tuple(range(len(gains)))
        runs = {}
        for s, g in zip(seeds, gains):
            runs[f"discrete/seed{s}"] = {"grounding/miou": 0.5, "grounding/r1_iou0.5": 0.5}
            runs[f"text/seed{s}"] = {"grounding/miou": 0.4, "grounding/r1_iou0.5": 0.4}
            runs[f"propagate/seed{s}"] = {"grounding/miou": 0.5 + g, "grounding/r1_iou0.5": 0.5 + g}
        encodings = ("discrete", "propagate", "text")
        config = types.SimpleNamespace(scale=scale, seeds=seeds)
        return encoding_claims(aggregate(runs, encodings, seeds), runs, encodings, config)

    # the README's 3-seed result: +6.4 ± 6.4 mIoU points (0.0, 6.4, 12.8): t = sqrt(3), p = 0.225
    c = claims([0.0, 0.064, 0.128])[0]
    assert c.verdict == "suggestive" and "p = 0.23" in c.ours and "needs 5 seeds" in c.ours
    assert claims([0.05, 0.06, 0.07, 0.05, 0.06])[0].verdict == "holds"
    assert claims([0.05, -0.08, 0.01])[0].verdict == "does not hold"
    assert claims([0.05, 0.06, 0.07], scale="tiny")[0].verdict == "not comparable"
