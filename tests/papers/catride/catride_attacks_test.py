"""Ranking attacks on a loop-trained embedding: each moves its target quantity the intended way and
stays in its epsilon ball; PGD against an analytic optimum."""

import jax.numpy as jnp
import numpy as np
import pytest

from jaxml.papers.catride import attacks as at

EPS, ALPHA, STEPS = 16 / 255, 2 / 255, 12
# Measured on this fixture (percentile ranks, 0 = top): CA+ 48.0 -> 16.5, CA- 1.7 -> 56.6, QA+ 46.4 -> 24.9,
# QA- 0.8 -> 65.5; ES shifts embeddings by 0.64 against 0.11 for random sign noise of the same size; TMA cosine
# to the random target 77.6 -> 96.5 (%); GTM Recall@1 87.5 -> 8.3; GTT retain@4 100 -> 0; LTM Recall@1
# 87.5 -> 20.8; ES:R (Recall@1 after the embedding shift) 87.5 -> 41.7.


@pytest.fixture(scope="module")
def trained(catride_trained):
    t = catride_trained
    return t["embed"], t["queries"], t["gallery"], t["labels"]


def _in_ball(adv, x0, eps=EPS):
    return np.all(np.abs(adv - x0) <= eps + 1e-6) and adv.min() >= 0.0 and adv.max() <= 1.0


def test_pgd_reaches_the_projected_optimum_of_a_quadratic():
    x0 = jnp.array([0.5, 0.5, 0.98, 0.1])
    target = jnp.array([0.9, 0.45, 1.5, 0.1])
    out = at.pgd(lambda x: jnp.sum((x - target) ** 2), x0, eps=0.1, alpha=0.01, steps=50)
    # the minimiser clipped to the ball and to [0, 1]; signed steps of 0.01 reach it within a step
    np.testing.assert_allclose(out, [0.6, 0.45, 1.0, 0.1], atol=0.011)
    with pytest.raises(ValueError, match="steps"):
        at.pgd(lambda x: jnp.sum(x), x0, eps=0.1, alpha=0.01, steps=0)


@pytest.mark.parametrize("plus", [True, False])
def test_candidate_attack_moves_the_candidate_the_intended_way(trained, plus):
    embed, images, gallery, _ = trained
    out = at.candidate_attack(embed, images, gallery, 0, plus=plus, eps=EPS, alpha=ALPHA, steps=STEPS, queries=4)
    assert _in_ball(out.images, images)
    if plus:     # random queries: the candidate starts mid-ranking and rises
        assert out.after < out.before - 10, (out.before, out.after)
    else:        # queries it ranks high for: it sinks
        assert out.after > out.before + 5, (out.before, out.after)


@pytest.mark.parametrize("plus", [True, False])
def test_query_attack_moves_the_candidates_the_intended_way(trained, plus):
    embed, images, gallery, _ = trained
    out = at.query_attack(embed, images, gallery, 0, plus=plus, eps=EPS, alpha=ALPHA, steps=STEPS, candidates=4)
    assert _in_ball(out.images, images)
    if plus:
        assert out.after < out.before - 10, (out.before, out.after)
    else:
        assert out.after > out.before + 5, (out.before, out.after)


def test_embedding_shift_moves_embeddings_more_than_random_noise(trained):
    embed, images, _, _ = trained
    out = at.embedding_shift(embed, images, 0, eps=EPS, alpha=ALPHA, steps=STEPS)
    assert _in_ball(out.images, images)
    noise = np.clip(images + EPS * np.sign(np.random.default_rng(0).standard_normal(images.shape)), 0, 1)
    random_shift = float(np.mean(np.linalg.norm(np.asarray(embed(noise)) - np.asarray(embed(images)), axis=1)))
    assert out.after > 2 * random_shift and out.after > 0.1, (out.after, random_shift)


def test_targeted_mismatch_pulls_towards_the_random_target(trained):
    embed, images, gallery, _ = trained
    out = at.targeted_mismatch(embed, images, gallery, 0, eps=EPS, alpha=ALPHA, steps=STEPS)
    assert _in_ball(out.images, images)
    assert out.after > out.before + 10, (out.before, out.after)


def test_greedy_top1_attacks_break_the_top1(trained):
    embed, images, gallery, labels = trained
    gtm = at.greedy_top1_misrank(embed, images, labels[:len(images)], gallery, labels, eps=EPS, alpha=ALPHA,
                                 steps=STEPS)
    assert _in_ball(gtm.images, images)
    assert gtm.after < gtm.before - 20, (gtm.before, gtm.after)
    gtt = at.greedy_top1_translocation(embed, images, gallery, eps=EPS, alpha=ALPHA, steps=STEPS)
    assert _in_ball(gtt.images, images)
    assert gtt.before == 100.0 and gtt.after < 80.0, (gtt.before, gtt.after)


def test_ers_from_ten_given_outcomes_hand_computed():
    outcomes = {"CA+": 20.0, "CA-": 30.0, "QA+": 10.0, "QA-": 40.0, "TMA": 0.9, "ES:D": 1.2, "ES:R": 15.0,
                "LTM": 25.0, "GTM": 5.0, "GTT": 60.0}
    # 40 + 70 + 20 + 60 + 10 + 40 + 15 + 25 + 5 + 60 = 345
    assert at.ers(outcomes) == pytest.approx(34.5)
    assert at.ers_terms(outcomes)["ES:D"] == pytest.approx(40.0)
    # a perfectly robust model: ranks unmoved at 50% / 0%, cosine 0, no shift, recalls kept at 100
    ideal = {"CA+": 50.0, "CA-": 0.0, "QA+": 50.0, "QA-": 0.0, "TMA": 0.0, "ES:D": 0.0, "ES:R": 100.0,
             "LTM": 100.0, "GTM": 100.0, "GTT": 100.0}
    assert at.ers(ideal) == pytest.approx(100.0)
    with pytest.raises(ValueError, match="missing"):
        at.ers({"CA+": 1.0})


def test_learning_to_misrank_and_es_recall_lower_recall(trained):
    embed, images, gallery, labels = trained
    out = at.learning_to_misrank(embed, images, labels[:len(images)], gallery, labels, eps=EPS, alpha=ALPHA,
                                 steps=STEPS)
    assert _in_ball(out.images, images)
    assert out.after < out.before - 20, (out.before, out.after)
    es = at.embedding_shift(embed, images, 0, eps=EPS, alpha=ALPHA, steps=STEPS)
    loc = at.self_locations(embed, images, gallery)
    clean = at.recall1_without_self(embed, images, labels[:len(images)], gallery, labels, loc)
    shifted = at.recall1_without_self(embed, es.images, labels[:len(images)], gallery, labels, loc)
    assert clean == pytest.approx(out.before) and shifted < clean - 20, (clean, shifted)


def test_ers_hm_hand_computed_and_zero_for_a_collapsed_model():
    assert at.ers_hm(40.0, 0.6) == pytest.approx(2 * 40 * 60 / 100)          # 48
    assert at.ers_hm(90.0, 0.0) == 0.0                                          # retrieves nothing
    with pytest.raises(ValueError, match="Recall@1 in \\[0, 1\\]"):
        at.ers_hm(40.0, 60.0)                                                   # R@1 given in %


@pytest.mark.slow   # a second compile of an attack (-m slow)
def test_attacks_give_the_same_outcome_with_a_bound_embedding(catride_trained):
    from jaxml.papers.catride.metric_learning import bound_embed

    t = catride_trained
    bound = bound_embed(t["task"].model, t["params"])
    a = at.embedding_shift(t["embed"], t["queries"][:4], 0, eps=EPS, alpha=ALPHA, steps=2)
    b = at.embedding_shift(bound, t["queries"][:4], 0, eps=EPS, alpha=ALPHA, steps=2)
    np.testing.assert_allclose(b.images, a.images, atol=1e-6)
    assert b.after == pytest.approx(a.after)
