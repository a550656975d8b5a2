"""The aitext estimator against direct NumPy / SciPy computations and the model it assumes."""

import numpy as np
import pytest
import scipy.optimize

from jaxml.papers.aitext import estimator as E


def _tables(v=120, seed=0):
    rng = np.random.default_rng(seed)
    p = rng.uniform(0.002, 0.08, v)
    q = np.clip(p * np.exp(rng.normal(0, 1.2, v)), 1e-4, 0.4)
    words = tuple(f"w{i}" for i in range(v))
    return E.Tables(words, np.log(p), np.log1p(-p), np.log(q), np.log1p(-q)), p, q


def _sample(tables, p, q, n, alpha, rng):
    """Sentences drawn from the model itself: each is AI with probability alpha, then every word of
    V occurs independently with probability q_t (AI) or p_t (human)."""
    z = rng.random(n) < alpha
    occ = rng.random((n, len(p))) < np.where(z[:, None], q, p)
    return [[tables.words[j] for j in np.flatnonzero(r)] for r in occ], occ


def test_sentence_log_probs_match_a_dense_numpy_computation():
    tables, p, q = _tables()
    rng = np.random.default_rng(1)
    sents, occ = _sample(tables, p, q, 300, 0.3, rng)
    sents[0] = sents[0] + ["not-in-vocabulary", sents[0][0] if sents[0] else "w0"]   # unknown and repeated words
    occ[0, 0] |= not sents[0][:-2]
    log_p, log_q = E.sentence_log_probs(tables, E.encode(tables, sents))
    want_p = np.where(occ, np.log(p), np.log1p(-p)).sum(1)
    want_q = np.where(occ, np.log(q), np.log1p(-q)).sum(1)
    np.testing.assert_allclose(log_p, want_p, rtol=1e-12, atol=1e-9)
    np.testing.assert_allclose(log_q, want_q, rtol=1e-12, atol=1e-9)


def test_nll_matches_the_mixture_likelihood_in_numpy():
    tables, p, q = _tables()
    sents, occ = _sample(tables, p, q, 500, 0.2, np.random.default_rng(2))
    d = E.log_ratio(tables, E.encode(tables, sents))
    lp = np.where(occ, np.log(p), np.log1p(-p)).sum(1)
    lq = np.where(occ, np.log(q), np.log1p(-q)).sum(1)
    for alpha in (0.0, 0.05, 0.3, 0.9):
        direct = -np.mean(np.log((1 - alpha) * np.exp(lp) + alpha * np.exp(lq)) - lp)   # -mean log(mix / P)
        np.testing.assert_allclose(float(E.nll(alpha, d)), direct, rtol=5e-6)    # float32; measured <= 8.5e-7


def test_mle_matches_scipy_bounded_minimisation():
    tables, p, q = _tables()
    rng = np.random.default_rng(3)
    for alpha in (0.0, 0.03, 0.15, 0.5):
        sents, _ = _sample(tables, p, q, 2000, alpha, rng)
        d = E.log_ratio(tables, E.encode(tables, sents))
        f = lambda a: -np.mean(np.logaddexp(np.log1p(-a), np.log(a) + d)) if a > 0 else -np.mean(np.log1p(-a) + 0 * d)
        ref = scipy.optimize.minimize_scalar(f, bounds=(0, 1), method="bounded", options={"xatol": 1e-9}).x
        got = E.mle(d)
        assert abs(got - ref) < 1e-7, (alpha, got, ref)         # measured <= 1.9e-8


def test_mle_bounds():
    assert E.mle(np.full(50, -3.0)) == 0.0        # every sentence far likelier under P
    assert E.mle(np.full(50, 3.0)) == 1.0         # every sentence far likelier under Q
    # Two values: the root of the derivative has a closed form.
    d = np.array([np.log(3.0)] * 30 + [np.log(0.5)] * 70)    # r = e^d - 1 = 2 and -0.5
    # 0.3 * 2 / (1 + 2a) = 0.7 * 0.5 / (1 - 0.5a)  =>  a = (0.6 - 0.35) / (0.3 + 0.7)
    assert abs(E.mle(d) - 0.25) < 1e-6


def test_resample_solver_equals_bisection_on_each_resample():
    rng = np.random.default_rng(4)
    d = np.concatenate([rng.normal(-1.5, 1.0, 5000), rng.normal(2.0, 1.5, 600)])
    groups = E.compress(d, max_groups=256)        # 5600 distinct values in 256 groups
    assert len(groups.counts) == 256 and groups.counts.sum() == d.size
    np.testing.assert_allclose(groups.values, np.sort(d))
    np.testing.assert_allclose(np.bincount(groups.group, groups.shares), 1.0)     # shares sum to 1 per group
    draws = rng.multinomial(d.size, groups.counts / d.size, size=6)
    fast = E.solve_resamples(groups, draws)
    for b in range(6):
        w = draws[b][groups.group] * groups.shares
        assert abs(fast[b] - E.mle(groups.values, w)) < 1e-6


def test_compress_merges_equal_values_exactly():
    groups = E.compress(np.array([0.5, -1.0, 0.5, 0.5, 2.0, -1.0]))
    np.testing.assert_array_equal(groups.values, [-1.0, 0.5, 2.0])
    np.testing.assert_array_equal(groups.counts, [2, 3, 1])
    np.testing.assert_array_equal(groups.shares, [1, 1, 1])


def test_bootstrap_ci_covers_the_true_alpha_in_at_least_90_percent_of_50_seeds():
    """1000 sentences: below EXACT_UP_TO, so the default bootstrap resamples sentences exactly."""
    tables, p, q = _tables(v=150, seed=5)
    hits = 0
    for seed in range(50):
        rng = np.random.default_rng(100 + seed)
        sents, _ = _sample(tables, p, q, 1000, 0.1, rng)
        est = E.bootstrap(E.log_ratio(tables, E.encode(tables, sents)), n_boot=1000, seed=seed)
        assert est.ci[0] <= est.mle <= est.ci[1]
        assert abs(est.mle - E.mle(E.log_ratio(tables, E.encode(tables, sents)))) < 1e-6   # bisection
        hits += est.ci[0] <= 0.1 <= est.ci[1]
    assert hits >= 45, hits


def test_grouped_bootstrap_matches_resampling_sentences():
    """The grouped multinomial bootstrap and the reference's resampling of sentences give the
    same interval up to Monte-Carlo error (400 resamples each, 2000 sentences, 64 groups)."""
    tables, p, q = _tables(seed=6)
    sents, _ = _sample(tables, p, q, 2000, 0.2, np.random.default_rng(6))
    d = E.log_ratio(tables, E.encode(tables, sents))
    grouped = E.bootstrap(d, n_boot=400, seed=0, max_groups=64, exact_up_to=0)
    rng = np.random.default_rng(1)
    direct = np.array([E.mle(d[rng.integers(0, d.size, d.size)]) for _ in range(400)])
    assert abs(grouped.boot.std() - direct.std()) < 0.15 * direct.std()
    assert abs(grouped.boot.mean() - direct.mean()) < 0.25 * direct.std()
    # By default a sample of 2000 sentences (at most EXACT_UP_TO distinct values) is resampled exactly:
    # one category per distinct value, the same resamples as with no threshold; grouping changes them.
    assert len(np.unique(d)) <= 2000 <= E.EXACT_UP_TO
    default = E.bootstrap(d, n_boot=400, seed=0)
    np.testing.assert_array_equal(default.boot, E.bootstrap(d, n_boot=400, seed=0, exact_up_to=10**9).boot)
    assert not np.allclose(default.boot, grouped.boot)
    assert abs(default.boot.std() - direct.std()) < 0.15 * direct.std()


def test_fit_tables_counts_binary_occurrence_and_filters():
    human = [["a", "a", "b"], ["a", "c"], ["b"], ["a", "d"]] * 5      # 20 sentences
    ai = [["a", "b", "b"], ["b", "c"], ["d"]] * 3                      # 9 sentences
    t = E.fit_tables(human, ai, min_human=5, min_ai=3)
    assert set(t.words) == {"a", "b", "c", "d"}
    i = t.index
    np.testing.assert_allclose(np.exp(t.log_p[i["a"]]), 15 / 20)      # "a" twice in one sentence counts once
    np.testing.assert_allclose(np.exp(t.log_q[i["b"]]), 6 / 9)
    # "c" and "d" are in 5 human sentences only; sorted by log(q/p): b (6/9 vs 1/2) before a (3/9 vs 3/4).
    assert E.fit_tables(human, ai, min_human=6, min_ai=3).words == ("b", "a")
    assert E.fit_tables(human, ai, vocabulary={"a", "zz"}).words == ("a",)
    assert np.all(np.diff(t.log_odds()) <= 1e-12)


def test_tables_save_load_roundtrip_and_foreign_word_list(tmp_path):
    tables, _, _ = _tables(v=30)
    npz, words = tables.save(tmp_path / "adj")
    back = E.Tables.load(tmp_path / "adj.npz")
    assert back.words == tables.words
    np.testing.assert_array_equal(back.log_q, tables.log_q)
    other, _, _ = _tables(v=30, seed=9)
    other = E.Tables(tuple(f"x{i}" for i in range(30)), other.log_p, other.log1m_p, other.log_q, other.log1m_q)
    other.save(tmp_path / "other")
    (tmp_path / "adj.words.txt").write_text((tmp_path / "other.words.txt").read_text())
    with pytest.raises(ValueError, match="another vocabulary"):
        E.Tables.load(tmp_path / "adj")
    with pytest.raises(FileNotFoundError, match="words.txt"):
        E.Tables.load(tmp_path / "missing")


def test_bad_input_errors():
    tables, _, _ = _tables(v=30)
    with pytest.raises(ValueError, match="no sentences"):
        E.log_ratio(tables, E.encode(tables, []))
    with pytest.raises(ValueError, match="none of the 2 sentences"):
        E.log_ratio(tables, E.encode(tables, [["unknown", "words"], ["only", "here"]]))
    with pytest.raises(TypeError, match="tokenized"):
        E.encode(tables, ["a raw string sentence"])
    with pytest.raises(ValueError, match="empty"):
        E.bootstrap(np.array([]))
    with pytest.raises(ValueError, match="vocabulary is empty"):
        E.fit_tables([["a"]], [["b"]], min_human=1, min_ai=1)
