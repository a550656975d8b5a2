"""PCM's reported numbers (metrics.py) on hand-computed cases, and the claims' verdicts from given metrics."""

import ml_collections
import numpy as np
import pytest

from jaxml.core.experiment import DOES_NOT_HOLD, HOLDS, NOT_COMPARABLE
from jaxml.papers.pcm import experiments, metrics as pm, spectral


def test_loglog_slope():
    assert pm.loglog_slope([1, 10], [2, 200]) == pytest.approx(2.0)            # 200 = 2 * 10^2
    assert pm.loglog_slope([10, 100, 1000], [5, 5, 5]) == pytest.approx(0.0, abs=1e-12)
    # Least squares over 3 points: log y = 0, 1, 3 at log x = 0, 1, 2 -> slope 1.5.
    assert pm.loglog_slope(np.exp([0, 1, 2]), np.exp([0, 1, 3])) == pytest.approx(1.5)
    with pytest.raises(ValueError, match="distinct x"):
        pm.loglog_slope([3, 3], [1, 2])


def test_speedup_and_mean_and_se():
    assert pm.speedup(0.08, 0.002) == pytest.approx(40.0)
    with pytest.raises(ValueError, match="positive times"):
        pm.speedup(1.0, 0.0)
    mean, se = pm.mean_and_se([1.0, 2.0, 3.0])
    assert mean == 2.0 and se == pytest.approx(1.0 / np.sqrt(3))                # sd 1 (ddof 1), n = 3
    assert pm.mean_and_se([0.5]) == (0.5, 0.0)


def test_centred_rmse_and_threshold_agreement():
    truth = np.array([[0.0, 1.0], [2.0, 3.0]])
    assert spectral.centred_rmse(truth + 0.7, truth) == pytest.approx(0.0, abs=1e-12)   # a common shift is free
    # Centred difference [[0.5, -0.5], [-0.5, 0.5]]: RMSE 0.5.
    assert spectral.centred_rmse(truth + np.array([[1.0, 0.0], [0.0, 1.0]]), truth) == pytest.approx(0.5)
    a = np.array([[1.0, 2.0], [3.0, 6.0]])                       # centred: [-2, -1, 0, 3]
    agree = pm.threshold_agreement(a, a - 1.0)                                  # the same after centring
    assert agree == pytest.approx({"rmse": 0.0, "corr": 1.0, "max_abs": 0.0})
    b = np.array([[0.0, 0.0], [0.0, 4.0]])                       # centred: [-1, -1, -1, 3]
    got = pm.threshold_agreement(a, b)
    # differences [-1, 0, 1, 0]: RMSE sqrt(2/4), max 1; corr of [-2,-1,0,3] and [-1,-1,-1,3]: 12 / sqrt(14 * 12)
    assert got == pytest.approx({"rmse": np.sqrt(0.5), "corr": 12 / np.sqrt(14 * 12), "max_abs": 1.0})


def test_assignment_accuracy_over_relabellings():
    truth = np.array([0, 0, 1, 1, 2, 2])
    assert pm.assignment_accuracy([1, 1, 2, 2, 0, 0], truth, 3) == 1.0         # a relabelling
    assert pm.assignment_accuracy([1, 1, 2, 0, 0, 0], truth, 3) == pytest.approx(5 / 6)
    assert pm.assignment_accuracy([0, 0, 0, 0, 0, 0], truth, 3) == pytest.approx(2 / 6)


def _config(**kw):
    return ml_collections.ConfigDict({**dict(scale="quick", n_items=10, n_levels=3, trials=5, ns=(800, 3200)), **kw})


def _recovery_metrics(ratio=1.25, mmle_ms=80.0, jmle_ms=2000.0, spectral_ms=2.0):
    m = {}
    for n, scale in ((800, 2.0), (3200, 1.0)):
        m.update({f"rmse_spectral_n{n}": 0.066 * ratio * scale, f"rmse_mmle_n{n}": 0.066 * scale,
                  f"rmse_jmle_n{n}": 0.15 * scale, f"seconds_spectral_n{n}": spectral_ms / 1e3,
                  f"seconds_mmle_n{n}": mmle_ms / 1e3, f"seconds_jmle_n{n}": jmle_ms / 1e3})
        for other in ("mmle", "jmle"):
            m[f"ratio_spectral_{other}_n{n}"] = m[f"rmse_spectral_n{n}"] / m[f"rmse_{other}_n{n}"]
            m[f"speedup_vs_{other}_n{n}"] = m[f"seconds_{other}_n{n}"] / m[f"seconds_spectral_n{n}"]
    return m


def test_recovery_claims_verdicts():
    accuracy, speed = experiments.recovery_claims(_recovery_metrics(), _config())
    assert (accuracy.verdict, speed.verdict) == (HOLDS, HOLDS)
    assert "spectral 0.165/0.083 vs MMLE 0.132/0.066, JMLE 0.300/0.150; spectral / MMLE 1.25 at n = 3200" in accuracy.ours
    assert "spectral 2.0 ms vs MMLE 80 ms (40x), JMLE 2,000 ms (1,000x)" in speed.ours
    accuracy, speed = experiments.recovery_claims(_recovery_metrics(ratio=1.6, mmle_ms=15.0), _config())
    assert (accuracy.verdict, speed.verdict) == (DOES_NOT_HOLD, DOES_NOT_HOLD)      # 1.6x; 7.5x faster
    tiny = experiments.recovery_claims(_recovery_metrics(), _config(scale="tiny"))
    assert [c.verdict for c in tiny] == [NOT_COMPARABLE, NOT_COMPARABLE]


def test_real_and_mixture_claim_verdicts():
    config = ml_collections.ConfigDict(dict(scale="quick", methods=("spectral", "mmle"), splits=3,
                                            datasets=("verbal_aggression", "math_exam")))
    m = {"verbal_aggression/spectral/heldout_ll": -0.822, "verbal_aggression/mmle/heldout_ll": -0.820,
         "math_exam/spectral/heldout_ll": -0.930, "math_exam/mmle/heldout_ll": -0.905}
    (claim,) = experiments.real_claims(m, config)
    assert claim.verdict == HOLDS and "largest gap 0.025 nats" in claim.ours
    m["math_exam/spectral/heldout_ll"] = -0.94
    assert experiments.real_claims(m, config)[0].verdict == DOES_NOT_HOLD
    config = ml_collections.ConfigDict(dict(scale="quick", true_components=2, n_per_component=2000, n_items=20,
                                            n_levels=2, components=(1, 2, 3), mode="both"))
    mix = {"quadrature/sim/param_rmse": 0.07, "quadrature/sim/accuracy": 0.95, "quadrature/sim/chosen_C": 2.0,
           "official/sim/param_rmse": 0.25, "official/sim/accuracy": 0.90, "official/sim/chosen_C": 3.0}
    ours, official = experiments.mixture_claims(mix, config)
    assert (ours.verdict, official.verdict) == (HOLDS, DOES_NOT_HOLD)          # official: picks C = 3
    assert "quadrature (ours" in ours.text and "official (release" in official.text
    assert "per-threshold RMSE 0.250, 90.0% of users assigned" in official.ours
    assert experiments.mixture_claims({**mix, "quadrature/sim/accuracy": 0.8}, config)[0].verdict == DOES_NOT_HOLD
    config.mode = "quadrature"
    assert [c.verdict for c in experiments.mixture_claims(mix, config)] == [HOLDS]
    config.scale = "tiny"
    assert experiments.mixture_claims(mix, config)[0].verdict == NOT_COMPARABLE
    config.mode = "release"
    with pytest.raises(ValueError, match=r"config.mode must be one of \('quadrature', 'official', 'both'\), got 'release'"):
        experiments.mixture_claims(mix, config)


def test_mixture_table_rows_per_data_set_and_mode():
    m = {"quadrature/sim/heldout_ll_C1": -18.74, "quadrature/sim/heldout_ll_C2": -17.851,
         "quadrature/sim/chosen_C": 2.0, "quadrature/sim/param_rmse": 0.0834, "quadrature/sim/accuracy": 0.9535,
         "quadrature/sim/iterations_C2": 7, "quadrature/sim/seconds_C2": 1.194,
         "official/sim/heldout_ll_C1": -18.74, "official/sim/heldout_ll_C2": float("nan"),
         "official/sim/chosen_C": 1.0}
    table = experiments.mixture_table(m, ("quadrature", "official"), ["sim"], (1, 2), 2).splitlines()
    assert table[2] == "| sim | quadrature | -18.740 | -17.851 | 2 | 0.083 | 95.3% | 7 | 1.19 |"
    assert table[3] == "| sim | official | -18.740 |  | 1 |  |  |  |  |"
