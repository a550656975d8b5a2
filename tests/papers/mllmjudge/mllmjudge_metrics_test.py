"""MLLM-as-a-Judge metrics on small fixed tables with hand-computed values: Pearson r with failures
and constant inputs, pair accuracy with and without ties (the drop rule, failures), Levenshtein
distances raw and normalised, per-dataset grouping, consistency and position bias."""

import functools
import math
import random

import pytest
from scipy import stats

from jaxml.papers.mllmjudge import formats, metrics

# ------------------------------------------------------------------------------------ score

# judge, human, dataset; None = the judge's reply did not parse.
SCORE_TABLE = [
    (1, 2, "coco"), (2, 1, "coco"), (3, 4, "coco"), (4, 3, "coco"), (5, 5, "coco"), (None, 3, "coco"),
    (4, 2, "WIT"), (4, 5, "WIT"), (None, 1, "WIT"),
]


def _columns(table):
    return [list(c) for c in zip(*table)]


def test_pearson_five_items_by_hand():
    # x = 1..5 (mean 3): dx = -2 -1 0 1 2; y = 2 1 4 3 5 (mean 3): dy = -1 -2 1 0 2.
    # Sxy = 2 + 2 + 0 + 0 + 4 = 8; Sxx = 10; Syy = 1 + 4 + 1 + 0 + 4 = 10; r = 8 / 10 = 0.8.
    r, p, reason = metrics.pearson([1, 2, 3, 4, 5], [2, 1, 4, 3, 5])
    assert r == pytest.approx(0.8, abs=1e-15) and reason is None
    # p: t = r sqrt(3 / (1 - r^2)) = 0.8 sqrt(3 / 0.36) = 2.3094 on 3 degrees of freedom.
    ref = stats.pearsonr([1, 2, 3, 4, 5], [2, 1, 4, 3, 5])
    assert p == pytest.approx(ref.pvalue, rel=1e-12)
    assert p == pytest.approx(2 * stats.t.sf(0.8 * math.sqrt(3 / 0.36), 3), rel=1e-10)
    # Symmetric, invariant to affine maps of either side, sign flips with a negation.
    assert metrics.pearson([2, 1, 4, 3, 5], [1, 2, 3, 4, 5])[0] == pytest.approx(0.8)
    assert metrics.pearson([10 * v + 3 for v in [1, 2, 3, 4, 5]], [2, 1, 4, 3, 5])[0] == pytest.approx(0.8)
    assert metrics.pearson([-v for v in [1, 2, 3, 4, 5]], [2, 1, 4, 3, 5])[0] == pytest.approx(-0.8)


def test_pearson_degenerate_inputs_give_nan_with_reason():
    r, p, reason = metrics.pearson([4, 4, 4], [1, 2, 3])
    assert math.isnan(r) and math.isnan(p) and "constant judge scores" in reason
    r, _, reason = metrics.pearson([1, 2, 3], [3, 3, 3])
    assert math.isnan(r) and "constant human scores" in reason
    r, _, reason = metrics.pearson([5], [1])
    assert math.isnan(r) and "fewer than 2" in reason
    # Two distinct points: r = +-1 and p = 1 (scipy's convention).
    assert metrics.pearson([1, 2], [5, 3])[:2] == (-1.0, 1.0)
    # Perfect fit: r = 1, p = 0.
    assert metrics.pearson([1, 2, 3], [2, 4, 6])[:2] == (1.0, 0.0)
    with pytest.raises(ValueError, match="one entry per item"):
        metrics.pearson([1, 2], [1, 2, 3])


def test_score_pearson_with_failures_per_dataset():
    judge, human, datasets = _columns(SCORE_TABLE)
    out = metrics.score_pearson(judge, human, datasets)
    assert list(out["by_dataset"]) == ["coco", "WIT"]
    coco = out["by_dataset"]["coco"]
    # coco: the 5 parsed items are the table above, r = 0.8; the sixth failed.
    assert coco["pearson"] == pytest.approx(0.8, abs=1e-15)
    assert (coco["num_samples"], coco["num_failures"], coco["num_items"], coco["reason"]) == (5, 1, 6, None)
    wit = out["by_dataset"]["WIT"]
    # WIT: parsed judge scores 4, 4 are constant: r undefined.
    assert math.isnan(wit["pearson"]) and "constant judge" in wit["reason"]
    assert (wit["num_samples"], wit["num_failures"]) == (2, 1)
    # Overall pools the 7 parsed items: x = 1 2 3 4 5 4 4, y = 2 1 4 3 5 2 5.
    # sum x = 23, sum y = 22, sum xy = 2+2+12+12+25+8+20 = 81, sum x^2 = 87, sum y^2 = 84.
    # Sxy = 81 - 23*22/7 = 61/7; Sxx = 87 - 529/7 = 80/7; Syy = 84 - 484/7 = 104/7.
    # r = 61 / sqrt(80 * 104) = 61 / sqrt(8320) = 0.66875...
    overall = out["overall"]
    assert overall["pearson"] == pytest.approx(61 / math.sqrt(8320), rel=1e-14)
    assert (overall["num_samples"], overall["num_failures"], overall["num_items"]) == (7, 2, 9)
    used = [(j, h) for j, h, _ in SCORE_TABLE if j is not None]
    ref = stats.pearsonr(*zip(*used))
    assert overall["pearson"] == pytest.approx(ref.statistic, rel=1e-13)
    assert overall["p_value"] == pytest.approx(ref.pvalue, rel=1e-10)
    # Without datasets: the overall value only.
    assert metrics.score_pearson(judge, human)["by_dataset"] == {}


# ------------------------------------------------------------------------------------- pair

# gold, prediction, dataset
PAIR_TABLE = [
    ("A", "A", "coco"),    # 0 right
    ("B", "A", "coco"),    # 1 wrong
    ("C", "C", "coco"),    # 2 right (tie); dropped without ties
    ("A", "C", "coco"),    # 3 wrong; dropped without ties (prediction C)
    ("C", "A", "coco"),    # 4 wrong; dropped without ties (gold C)
    ("B", None, "coco"),   # 5 failure: wrong in both variants
    ("A", "A", "WIT"),     # 6 right
    ("C", None, "WIT"),    # 7 failure: wrong with ties; dropped without ties (gold C)
]


def test_pair_accuracy_with_and_without_ties():
    gold, pred, datasets = _columns(PAIR_TABLE)
    out = metrics.pair_accuracy(pred, gold, datasets)
    tie, no_tie = out["with_tie"], out["without_tie"]
    # With ties: right on 0, 2, 6 of all 8 items; the two failures count as wrong.
    assert tie["overall"] == {"accuracy": 3 / 8, "num_correct": 3, "num_samples": 8, "num_failures": 2}
    # Without ties: 2, 3, 4, 7 dropped; right on 0 and 6 of 0, 1, 5, 6.
    assert no_tie["overall"] == {"accuracy": 2 / 4, "num_correct": 2, "num_samples": 4, "num_failures": 1}
    # Per dataset: coco 2/6 with ties, 1/3 (items 0, 1, 5) without; WIT 1/2 and 1/1.
    assert tie["by_dataset"]["coco"]["accuracy"] == pytest.approx(2 / 6)
    assert no_tie["by_dataset"]["coco"]["accuracy"] == pytest.approx(1 / 3)
    assert (tie["by_dataset"]["WIT"]["accuracy"], no_tie["by_dataset"]["WIT"]["accuracy"]) == (0.5, 1.0)
    # Failures dropped instead (pair_analysis.ipynb): with ties 3/6; without ties 2/3 (items 0, 1, 6).
    dropped = metrics.pair_accuracy(pred, gold, datasets, failures="drop")
    assert dropped["with_tie"]["overall"]["accuracy"] == 0.5 and dropped["with_tie"]["overall"]["num_samples"] == 6
    assert dropped["without_tie"]["overall"]["accuracy"] == pytest.approx(2 / 3)


def test_pair_accuracy_edges_and_validation():
    # Only ties: nothing left without ties -> nan.
    out = metrics.pair_accuracy(["C", "A"], ["C", "C"])
    assert out["with_tie"]["overall"]["accuracy"] == 0.5 and math.isnan(out["without_tie"]["overall"]["accuracy"])
    with pytest.raises(ValueError, match="gold verdict 1 is 'D'"):
        metrics.pair_accuracy(["A", "A"], ["A", "D"])
    with pytest.raises(ValueError, match="prediction 0 is 'a'"):
        metrics.pair_accuracy(["a"], ["A"])
    with pytest.raises(ValueError, match="failures must be"):
        metrics.pair_accuracy(["A"], ["A"], failures="skip")


# ------------------------------------------------------------------------------------ batch


@pytest.mark.parametrize("a, b, distance", [
    ("ABCD", "ABCD", 0),
    ("ABCD", "BACD", 2),   # a transposition is 2 edits (Levenshtein, not Damerau)
    ("ABCD", "BADC", 3),   # insert B, substitute B->D, delete D: ABCD -> BABCD -> BADCD -> BADC
    ("ABCD", "DCBA", 4),   # no letter can stay aligned cheaper than substituting all four
    ("ABCD", "CDAB", 4),   # delete A, B and insert them at the end, or substitute all four
    ("CDAB", "CDBA", 2),
    ("ABCD", "", 4), ("", "", 0),
    ("kitten", "sitting", 3),   # the textbook example
    ("ABC", "CBA", 2),
])
def test_levenshtein_known_pairs(a, b, distance):
    assert metrics.levenshtein(a, b) == distance
    assert metrics.levenshtein(b, a) == distance


def test_levenshtein_matches_a_naive_recursion_on_random_rankings():
    @functools.lru_cache(maxsize=None)
    def naive(a, b):
        if not a or not b:
            return len(a) + len(b)
        return min(naive(a[1:], b) + 1, naive(a, b[1:]) + 1, naive(a[1:], b[1:]) + (a[0] != b[0]))

    rng = random.Random(0)
    for _ in range(200):
        a = "".join(rng.sample("ABCDE", rng.randint(0, 5)))
        b = "".join(rng.sample("ABCDE", rng.randint(0, 5)))
        assert metrics.levenshtein(a, b) == naive(a, b), (a, b)
    with pytest.raises(TypeError, match="two strings"):
        metrics.levenshtein("ABCD", None)


# gold, prediction, dataset
BATCH_TABLE = [
    ("ABCD", "ABCD", "coco"),  # 0
    ("ABCD", "BADC", "coco"),  # 3
    ("ABCD", "DCBA", "coco"),  # 4
    ("CDAB", None, "WIT"),     # failure (counts 4 = len(gold) in the failures-as-max mean)
    ("CDAB", "CDBA", "WIT"),   # 2
]


def test_batch_levenshtein_raw_normalised_per_dataset():
    gold, pred, datasets = _columns(BATCH_TABLE)
    out = metrics.batch_levenshtein(pred, gold, datasets)
    overall = out["overall"]
    # Parsed: (0 + 3 + 4 + 2) / 4 = 2.25 raw, / 4 answers = 0.5625 normalised.
    assert overall["mean_distance"] == 2.25 and overall["mean_normalized_distance"] == 0.5625
    # Failure as the maximum 4: (9 + 4) / 5 = 2.6; normalised 2.6 / 4 = 0.65.
    assert overall["mean_distance_failures_as_max"] == pytest.approx(2.6)
    assert overall["mean_normalized_distance_failures_as_max"] == pytest.approx(0.65)
    assert (overall["num_samples"], overall["num_failures"], overall["num_items"]) == (4, 1, 5)
    coco, wit = out["by_dataset"]["coco"], out["by_dataset"]["WIT"]
    assert coco["mean_distance"] == pytest.approx(7 / 3) and coco["mean_normalized_distance"] == pytest.approx(7 / 12)
    assert (wit["mean_distance"], wit["mean_normalized_distance"]) == (2.0, 0.5)
    assert (wit["mean_distance_failures_as_max"], wit["mean_normalized_distance_failures_as_max"]) == (3.0, 0.75)


def test_batch_levenshtein_normalises_per_item_and_handles_all_failures():
    # A 3-answer item: "CBA" vs "ABC" is 2 edits, 2/3 normalised; with a 4-answer 3-edit item the
    # normalised mean is (2/3 + 3/4) / 2 = 17/24, not the raw mean 2.5 divided by 4.
    out = metrics.batch_levenshtein(["CBA", "BADC"], ["ABC", "ABCD"])["overall"]
    assert out["mean_distance"] == 2.5 and out["mean_normalized_distance"] == pytest.approx(17 / 24)
    none = metrics.batch_levenshtein([None], ["ABCD"])["overall"]
    assert math.isnan(none["mean_distance"]) and none["mean_distance_failures_as_max"] == 4.0
    with pytest.raises(ValueError, match="gold ranking 0"):
        metrics.batch_levenshtein(["AB"], [""])


# ---------------------------------------------------------------------------- reliability


def test_consistency_between_two_runs():
    # Agree on items 0 and 2; item 4 failed in the first run.
    out = metrics.consistency(["A", "B", "C", "A", None], ["A", "C", "C", "B", "A"])
    assert out == {"agreement": 2 / 5, "agreement_parsed": 2 / 4, "num_items": 5, "num_both_parsed": 4}
    assert metrics.consistency([3, 4], [3, 4])["agreement"] == 1.0
    assert math.isnan(metrics.consistency([None], [None])["agreement_parsed"])


def test_position_bias_by_hand():
    original = ["A", "A", "B", "C", "A", None]
    swapped = ["B", "A", "A", "C", "A", "B"]
    out = metrics.position_bias(original, swapped)
    # Items 0 (A->B), 2 (B->A), 3 (C->C) flip consistently; 1 and 4 pick position A both times; 5 failed.
    assert out["num_both_parsed"] == 5 and out["num_failures"] == 1
    assert out["consistency_rate"] == pytest.approx(3 / 5) and out["inconsistency_rate"] == pytest.approx(2 / 5)
    assert out["both_first_rate"] == pytest.approx(2 / 5) and out["both_second_rate"] == 0.0
    # A among parsed verdicts: 3 of 5 originals, 3 of 6 swapped, 6 of 11 pooled.
    assert (out["a_share_original"], out["a_share_swapped"]) == (0.6, 0.5)
    assert out["a_preference"] == pytest.approx(6 / 11)
    with pytest.raises(ValueError, match=r"swapped\[0\] is 'D'"):
        metrics.position_bias(["A"], ["D"])


def test_position_bias_of_a_judge_that_reads_answers_not_positions():
    # A judge preferring gpt4's answer wherever it sits: the swapped run flips every verdict.
    items = [formats.PairItem(i, i, f"{i}.jpg", "coco", "q", formats.Answer(n1, "x"), formats.Answer(n2, "y"), "A")
             for i, (n1, n2) in enumerate([("gpt4", "llava"), ("gemini", "gpt4"), ("gpt4", "cogvlm")])]

    def judge(it):
        return "A" if it.answer1.name == "gpt4" else "B"

    out = metrics.position_bias([judge(it) for it in items], [judge(formats.swap_pair(it)) for it in items])
    assert out["inconsistency_rate"] == 0.0 and out["a_preference"] == 0.5


# -------------------------------------------------------------------------------- evaluate


def test_evaluate_takes_golds_and_datasets_from_items():
    score_items = [formats.ScoreItem(i, "llava", "a", i, "q", "x.jpg", d, h, {})
                   for i, (_, h, d) in enumerate(SCORE_TABLE)]
    out = metrics.evaluate(score_items, [j for j, _, _ in SCORE_TABLE])
    assert out["overall"]["pearson"] == pytest.approx(61 / math.sqrt(8320), rel=1e-14)
    pair_items = [formats.PairItem(i, i, "x.jpg", d, "q", formats.Answer("a", "1"), formats.Answer("b", "2"), g)
                  for i, (g, _, d) in enumerate(PAIR_TABLE)]
    out = metrics.evaluate(pair_items, [p for _, p, _ in PAIR_TABLE])
    assert out["with_tie"]["overall"]["accuracy"] == 3 / 8 and out["without_tie"]["overall"]["accuracy"] == 0.5
    answers = tuple(formats.Answer(n, "x") for n in ("llava", "cogvlm", "gpt4", "gemini"))
    batch_items = [formats.BatchItem(i, "q", "x.jpg", d, answers, g) for i, (g, _, d) in enumerate(BATCH_TABLE)]
    out = metrics.evaluate(batch_items, [p for _, p, _ in BATCH_TABLE])
    assert out["overall"]["mean_distance"] == 2.25
    with pytest.raises(ValueError, match="one kind"):
        metrics.evaluate(score_items[:1] + pair_items[:1], [1, "A"])
    with pytest.raises(ValueError, match="one entry per item"):
        metrics.evaluate(score_items, [1])
