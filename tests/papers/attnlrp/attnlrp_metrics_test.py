"""The numbers the AttnLRP experiments report, as pure functions, against hand-computed cases."""

import math

import numpy as np
import pytest

from jaxml.core.experiment import DOES_NOT_HOLD, HOLDS, NOT_COMPARABLE
from jaxml.papers.attnlrp import claims, faithfulness


def test_area_between_curves_is_the_trapezoid_rule():
    # diff = lerf - morf = [0, 1, 0] and [0, 2, 2] on fractions 0, 0.5, 1:
    # (0 + 1)/2 * 0.5 + (1 + 0)/2 * 0.5 = 0.5 and (0 + 2)/2 * 0.5 + (2 + 2)/2 * 0.5 = 1.5
    curves = {"morf": np.asarray([[3.0, 1.0, 0.0], [1.0, -1.0, -1.0]]),
              "lerf": np.asarray([[3.0, 2.0, 0.0], [1.0, 1.0, 1.0]]), "fractions": np.asarray([0.0, 0.5, 1.0])}
    np.testing.assert_allclose(faithfulness.area_between_curves(curves), [0.5, 1.5])
    # Uneven fractions: [0, 0.25, 1] with diff [0, 4, 0] -> 2 * 0.25 + 2 * 0.75 = 2
    np.testing.assert_allclose(faithfulness.area_between_curves(
        {"morf": np.zeros((1, 3)), "lerf": np.asarray([[0.0, 4.0, 0.0]]), "fractions": np.asarray([0, 0.25, 1])}), [2.0])


def test_mean_and_se():
    # [1, 2, 3, 6]: mean 3, sample variance (4 + 1 + 0 + 9) / 3 = 14/3, SE sqrt(14/3) / 2
    mean, se = faithfulness.mean_and_se([1.0, 2.0, 3.0, 6.0])
    assert mean == 3.0
    assert se == pytest.approx(math.sqrt(14 / 3) / 2, rel=1e-12)
    mean, se = faithfulness.mean_and_se([2.5])
    assert mean == 2.5 and math.isnan(se)
    with pytest.raises(ValueError, match="empty"):
        faithfulness.mean_and_se([])


def test_summarise_pairs_the_differences():
    abc = {"attnlrp": np.asarray([1.0, 2.0, 3.0]), "random": np.asarray([0.0, 2.0, 1.0]),
           "gradient_x_input": np.asarray([1.0, 2.0, 3.0]) - 10.0}
    m = faithfulness.summarise(abc)
    s3 = 1 / math.sqrt(3)   # sample SD 1 over 3 examples
    assert m["abc_attnlrp"] == 2.0 and m["abc_attnlrp_se"] == pytest.approx(s3)
    assert m["abc_random"] == 1.0 and m["abc_random_se"] == pytest.approx(s3)
    # paired: [1, 0, 2] -> mean 1, SD 1; a constant shift has SE 0 (the spread between examples cancels)
    assert m["attnlrp_minus_random"] == 1.0 and m["attnlrp_minus_random_se"] == pytest.approx(s3)
    assert m["attnlrp_minus_gradient_x_input"] == pytest.approx(10.0)
    assert m["attnlrp_minus_gradient_x_input_se"] == pytest.approx(0.0, abs=1e-12)
    assert "attnlrp_minus_attnlrp" not in m
    assert set(faithfulness.summarise(abc, reference="random")) >= {"random_minus_attnlrp", "random_minus_attnlrp_se"}
    with pytest.raises(ValueError, match="shapes"):
        faithfulness.summarise({"attnlrp": np.ones(3), "random": np.ones(2)})


def test_clearly_positive_is_two_standard_errors():
    assert faithfulness.clearly_positive(1.0, 0.49) is True
    assert faithfulness.clearly_positive(1.0, 0.5) is False      # exactly 2 SE is not more than 2 SE
    assert faithfulness.clearly_positive(-1.0, 0.1) is False
    assert faithfulness.clearly_positive(1.0, 0.3, k=3.0) is True
    assert faithfulness.clearly_positive(1.0, float("nan")) is None


def _metrics(diffs):
    """Metrics with the given (mean, se) paired differences for the headline baselines."""
    m = {"abc_attnlrp": 1.0, "abc_attnlrp_se": 0.1}
    for name, (d, se) in zip(claims.HEADLINE_BASELINES, diffs):
        m.update({f"abc_{name}": 1.0 - d, f"abc_{name}_se": 0.1, f"attnlrp_minus_{name}": d,
                  f"attnlrp_minus_{name}_se": se})
    return m


def test_faithfulness_verdict():
    assert claims.faithfulness_verdict(_metrics([(0.9, 0.4), (0.5, 0.2), (1.0, 0.1)])) is True
    # Full-scale SmolLM2 (README): IG is ahead of AttnLRP -> does not hold.
    full = _metrics([(0.80, 0.39), (-0.51, 0.36), (1.04, 0.37)])
    assert claims.faithfulness_verdict(full) is False
    assert claims.faithfulness_verdict(_metrics([(0.9, 0.5), (0.5, 0.2), (1.0, 0.1)])) is False   # 1.8 SE
    assert claims.faithfulness_verdict(full, comparable=False) is None
    partial = {k: v for k, v in full.items() if "integrated" not in k}
    assert claims.faithfulness_verdict(partial) is None
    assert claims.faithfulness_verdict(_metrics([(0.9, float("nan"))] * 3)) is None


def test_faithfulness_claim_reads_our_numbers():
    c = claims.faithfulness_claim(_metrics([(0.80, 0.39), (-0.51, 0.36), (1.04, 0.37)]), "SmolLM2-135M, 200 prefixes",
                                  ig_steps=32)
    assert c.verdict == DOES_NOT_HOLD
    assert c.ours.startswith("SmolLM2-135M, 200 prefixes: area between curves AttnLRP 1.00 +- 0.10")
    assert "IG-32 -0.51 +- 0.36" in c.ours and "Gradient x Input +0.80 +- 0.39" in c.ours
    assert c.paper == ""
    tiny = claims.faithfulness_claim(_metrics([(0.9, 0.4), (0.5, 0.2), (1.0, 0.1)]), "cut model", comparable=False)
    assert tiny.verdict == NOT_COMPARABLE


def test_cost_ratios_and_verdict():
    r = claims.cost_ratios(2.0, 1.8, 57.6)
    assert r == {"attnlrp_over_forward_backward": pytest.approx(0.9), "ig_over_attnlrp": pytest.approx(32.0)}
    with pytest.raises(ValueError, match="positive"):
        claims.cost_ratios(0.0, 1.0, 1.0)
    assert claims.cost_verdict(0.9, 32.0, ig_steps=32) is True
    assert claims.cost_verdict(1.6, 32.0, ig_steps=32) is False     # more than 1.5 passes
    assert claims.cost_verdict(0.9, 15.0, ig_steps=32) is False     # IG-32 under 16x AttnLRP
    assert claims.cost_verdict(0.9, 32.0, ig_steps=32, comparable=False) is None
    m = {**r, "seconds_forward_backward": 2.0, "seconds_attnlrp": 1.8, "seconds_ig": 57.6}
    c = claims.cost_claim(m, "SmolLM2-135M, batch 8 x 64 tokens", ig_steps=32)
    assert c.verdict == HOLDS
    assert "AttnLRP 0.90x a plain forward+backward pass (1800 ms vs 2000 ms); IG-32 32.0x AttnLRP (57.60 s)" in c.ours


def test_conservation_is_reported_not_judged():
    c = claims.conservation_claim({"conservation_mean": 0.39, "conservation_median": 0.38, "conservation_min": 0.15,
                                   "conservation_max": 0.8}, "SmolLM2-135M, 200 prefixes")
    assert c.verdict == NOT_COMPARABLE and "median 0.38 (mean 0.39, range 0.15 to 0.80)" in c.ours


def test_curve_areas_by_hand():
    from jaxml.papers.attnlrp import faithfulness as fa
    curves = {"fractions": np.array([0.0, 0.5, 1.0]), "morf": np.array([[4.0, 1.0, 0.0]]),
              "lerf": np.array([[4.0, 3.0, 0.0]])}
    a = fa.curve_areas(curves)
    # trapezoids: MoRF (4+1)/2*.5 + (1+0)/2*.5 = 1.5; LeRF (4+3)/4 + 3/4 = 2.5
    np.testing.assert_allclose([a["morf"][0], a["lerf"][0], a["abc"][0]], [1.5, 2.5, 1.0])
    np.testing.assert_allclose(a["abc"], fa.area_between_curves(curves))


def test_paired_bootstrap_ci_matches_the_normal_interval_and_collapses_for_a_constant_difference():
    from jaxml.papers.attnlrp import faithfulness as fa
    rng = np.random.default_rng(0)
    a = rng.normal(1.0, 1.0, 4000)
    b = a - 0.3 - rng.normal(0.0, 0.5, 4000)        # paired: the shared part cancels
    mean, lo, hi = fa.paired_bootstrap_ci(a, b, resamples=4000)
    d = a - b
    se = d.std(ddof=1) / np.sqrt(d.size)
    assert mean == pytest.approx(d.mean())
    assert lo == pytest.approx(d.mean() - 1.96 * se, abs=0.15 * se) and hi == pytest.approx(d.mean() + 1.96 * se, abs=0.15 * se)
    assert fa.paired_bootstrap_ci(a, a - 2.0, resamples=200) == pytest.approx((2.0, 2.0, 2.0))
    with pytest.raises(ValueError, match="pair up"):
        fa.paired_bootstrap_ci(a, b[:10])


def test_protocol_rows_pair_methods_within_each_corpus():
    from jaxml.papers.attnlrp.experiments import protocol_rows
    per = {"s": {"abc": {"attnlrp": [1.0, 2.0, 3.0, 5.0], "random": [0.0, 0.0, 1.0, 1.0]},
                 "morf_area": {"attnlrp": [0.0, 1.0, 0.0, 1.0], "random": [1.0, 1.0, 1.0, 1.0]},
                 "lerf_area": {"attnlrp": [1.0, 3.0, 3.0, 6.0], "random": [1.0, 1.0, 2.0, 2.0]},
                 "corpus": ["a", "a", "b", "b"]}}
    rows = protocol_rows(per, resamples=500)
    by = {(r["corpus"], r["method"]): r for r in rows}
    assert by[("all", "attnlrp")]["abc"] == pytest.approx(2.75) and "diff" not in by[("all", "attnlrp")]
    assert by[("a", "random")]["diff"] == pytest.approx(1.5)           # (1 - 0 + 2 - 0) / 2
    assert by[("b", "random")]["diff"] == pytest.approx(3.0) and by[("b", "random")]["n"] == 2
    assert by[("all", "random")]["ci_lo"] <= by[("all", "random")]["diff"] <= by[("all", "random")]["ci_hi"]
    assert by[("a", "attnlrp")]["morf"] == pytest.approx(0.5) and by[("b", "random")]["lerf"] == pytest.approx(2.0)


def test_single_removals_probe_the_first_and_one_other_removable_token():
    from jaxml.papers.attnlrp.experiments import single_removals

    removable = np.array([[False, False, True, True, True], [False, True, True, False, True]])
    first, other = single_removals(removable, seed=3)
    np.testing.assert_array_equal(first, [[0, 0, 1, 0, 0], [0, 1, 0, 0, 0]])
    assert (other.sum(1) == 1).all() and not (other & first).any() and not (other & ~removable).any()
    np.testing.assert_array_equal(other, single_removals(removable, seed=3)[1])       # seeded


def test_first_token_metrics_by_hand():
    from jaxml.papers.attnlrp.experiments import first_token_metrics

    single = {"none": np.array([10.0, 8.0, 6.0]), "all": np.array([0.0, 4.0, 6.0]),
              "first": np.array([5.0, 7.0, 6.0]), "other": np.array([9.0, 8.0, 7.0])}
    got = first_token_metrics(single)
    assert got["first_token_drop"] == pytest.approx((5 + 1 + 0) / 3)
    assert got["other_token_drop"] == pytest.approx((1 + 0 - 1) / 3)
    assert got["all_tokens_drop"] == pytest.approx((10 + 4 + 0) / 3)
    # shares of the full removal's drop: 5/10, 1/4, undefined (no drop) -> median of 0.5 and 0.25
    assert got["first_token_share_median"] == pytest.approx(0.375)
    assert got["first_token_half_or_more"] == pytest.approx(1 / 3)
    assert got["first_minus_other_drop"] == pytest.approx(2.0)
    assert got["first_minus_other_drop_ci_lo"] <= 2.0 <= got["first_minus_other_drop_ci_hi"]


def test_cost_units_are_per_batch_ratios_to_one_pass():
    from jaxml.papers.attnlrp.experiments import cost_units

    # batch 2 ran under twice the load (and compiled IG): per-batch ratios 4, 4, 12 -> median 4
    times = {"gradient_x_input": [1.0, 2.0, 1.0], "integrated_gradients": [4.0, 8.0, 12.0], "attnlrp": [0.9, 1.8, 0.8]}
    got = cost_units(times)
    assert got["cost_units_integrated_gradients"] == pytest.approx(4.0)
    assert got["cost_units_attnlrp"] == pytest.approx(0.9)
    assert got["cost_units_gradient_x_input"] == pytest.approx(1.0)
    assert cost_units({"attnlrp": [1.0]}) == {}
    with pytest.raises(ValueError, match="non-positive"):
        cost_units({"gradient_x_input": [0.0], "attnlrp": [1.0]})
