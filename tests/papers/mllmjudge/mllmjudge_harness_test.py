"""The harness end to end with scripted judges whose replies are known: metrics, failures, consistency and
position bias equal the values computed by hand; the release directory reader round-trips the instance."""

import math

import numpy as np
import pytest

from jaxml.papers.mllmjudge import formats, harness, instance, judges


class Scripted:
    """Replies from a function of (item, seed); counts calls."""

    name = "scripted"

    def __init__(self, fn):
        self.fn, self.calls = fn, []

    def judge(self, items, images, *, setting="No COT", captions=None, seed=0):
        self.calls.append((len(items), setting, seed))
        return [self.fn(it, seed) for it in items]


def _oracle(item, seed):
    kind = formats.kind_of(item)
    if kind == "score":
        return f'{{"Judgement": "[[{item.human}]]"}}'
    if kind == "pair":
        return f"Judgement: [[{item.human_answer}]]"
    return "Judgement: " + ", ".join(f"[[{c}]]" for c in item.human_answer)


@pytest.fixture(scope="module")
def inst():
    return instance.build_instance("test", 2, seed=5)


def _items(inst):
    return {"score": inst.score, "pair": inst.pair, "batch": inst.batch}


def test_oracle_judge_is_perfect_and_consistent(inst):
    judge = Scripted(_oracle)
    res = harness.run_benchmark(judge, _items(inst), inst.images, seeds=(0, 1))
    m = res["metrics"]
    assert m["score"]["overall"]["pearson"] == pytest.approx(1.0)
    assert m["pair"]["with_tie"]["overall"]["accuracy"] == 1.0
    assert m["batch"]["overall"]["mean_distance"] == 0.0
    assert all(c["agreement"] == 1.0 for c in res["consistency"].values())
    # the oracle flips its verdict with the order: no position bias
    assert res["position_bias"]["consistency_rate"] == 1.0
    # score, pair, batch each twice (two seeds) and the pairs once more swapped
    assert [c[0] for c in judge.calls] == [len(inst.score)] * 2 + [len(inst.pair)] * 3 + [len(inst.batch)] * 2
    overall = [r for r in res["rows"] if r["dataset"] == "overall"]
    assert [r["kind"] for r in overall] == ["score", "pair", "batch"]
    per_source = {r["dataset"] for r in res["rows"]} - {"overall"}
    assert per_source == set(instance.SOURCES)


def test_failures_counted_and_position_bias_of_an_always_a_judge(inst):
    def fn(item, seed):
        kind = formats.kind_of(item)
        if kind == "pair":
            return "Judgement: [[A]]"
        if kind == "score":
            return "I cannot judge this." if item.score_id % 2 else "[[3]]"
        return "[[A]], [[A]], [[B]], [[C]]"            # not a permutation: a failure

    res = harness.run_benchmark(Scripted(fn), _items(inst), inst.images, seeds=(0,))
    s = res["metrics"]["score"]["overall"]
    odd = sum(it.score_id % 2 for it in inst.score)
    assert s["num_failures"] == odd and s["num_samples"] == len(inst.score) - odd
    assert math.isnan(s["pearson"])                     # a constant judge: r undefined
    b = res["metrics"]["batch"]["overall"]
    assert b["num_failures"] == len(inst.batch) and b["mean_normalized_distance_failures_as_max"] == 1.0
    pb = res["position_bias"]
    assert pb["both_first_rate"] == 1.0 and pb["a_preference"] == 1.0 and pb["consistency_rate"] == 0.0
    golds = [it.human_answer for it in inst.pair]
    acc = res["metrics"]["pair"]["with_tie"]["overall"]["accuracy"]
    assert acc == pytest.approx(golds.count("A") / len(golds))
    assert res["consistency"] == {}


def test_random_judge_parses_and_is_near_chance(inst):
    big = instance.build_instance("test", 20, seed=6)
    res = harness.run_benchmark(judges.RandomJudge(), _items(big), big.images, seeds=(0, 1))
    assert all(r["failures"] == 0 for r in res["rows"])
    # with-tie accuracy of uniform A/B/C verdicts is 1/3 in expectation; 120 pairs: sd 0.043
    assert abs(res["metrics"]["pair"]["with_tie"]["overall"]["accuracy"] - 1 / 3) < 0.15
    assert abs(res["metrics"]["score"]["overall"]["pearson"]) < 0.25      # sd about 1/sqrt(300) = 0.06


def test_load_release_round_trip_and_errors(inst, tmp_path):
    d = instance.write_instance(inst, tmp_path / "bench")
    items, images = harness.load_release(d)
    assert items["score"] == inst.score and items["pair"] == inst.pair and items["batch"] == inst.batch
    for path, img in inst.images.items():
        np.testing.assert_array_equal(images[path], img)
    assert len(harness.load_release(d, limit=3)[0]["score"]) == 3
    (d / inst.score[0].image_path).unlink()
    with pytest.raises(FileNotFoundError, match=inst.score[0].image_path):
        harness.load_release(d)
    with pytest.raises(FileNotFoundError, match="score.jsonl"):
        harness.load_release(tmp_path)


def test_bad_arguments(inst):
    with pytest.raises(ValueError, match="seeds"):
        harness.run_benchmark(Scripted(_oracle), _items(inst), inst.images, seeds=())
    with pytest.raises(ValueError, match="unknown kinds"):
        harness.run_benchmark(Scripted(_oracle), {"scores": inst.score}, inst.images)

    class Short(Scripted):
        def judge(self, items, images, **kw):
            return ["[[1]]"]

    with pytest.raises(ValueError, match="returned 1 replies"):
        harness.run_benchmark(Short(None), {"score": inst.score}, inst.images)
