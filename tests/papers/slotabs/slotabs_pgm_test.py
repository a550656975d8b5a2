"""The PGM-like task: every problem's answer is the only candidate that completes its row rule, the
regimes keep their count values apart, the panels show their counts, and the per-candidate
sequences carry the panel code."""

import numpy as np
import pytest

from jaxml.papers.slotabs.pgm import (ATTRIBUTES, COUNTS, RULES, make_pgm_problems, pgm_sequences)
from jaxml.papers.slotabs.shapes import split_shapes


def _follows(rule: str, rows) -> bool:
    rows = [tuple(r) for r in rows]
    if rule == "constant":
        return all(len(set(r)) == 1 for r in rows)
    if rule == "progression":
        return all(r[1] == r[0] + 1 and r[2] == r[1] + 1 for r in rows)
    return len(set(rows[0])) == 3 and all(sorted(r) == sorted(rows[0]) for r in rows)


@pytest.mark.parametrize("regime,split", [("neutral", "train"), ("extrapolation", "train"), ("extrapolation", "test")])
def test_the_answer_alone_completes_the_rule(regime, split):
    train_ids, test_ids = split_shapes()
    ids = train_ids if split == "train" else test_ids
    p = make_pgm_problems(60, ids, regime=regime, split=split, seed=1)
    assert p.context.shape == (60, 8, 64, 64, 1) and p.candidates.shape == (60, 4, 64, 64, 1)
    counts = set(COUNTS[regime, split])
    for i in range(60):
        a, rule = p.attribute[i], RULES[p.rule[i]]
        values = p.attributes[i, :, a]
        ok = [_follows(rule, np.append(values[:8], values[8 + j]).reshape(3, 3)) for j in range(4)]
        assert ok[p.answer[i]] and sum(ok) == 1, (i, rule, ATTRIBUTES[a], p.attributes[i])
        # the other attribute of every candidate is the right panel's: only the rule decides
        other = p.attributes[i, 8:, 1 - a]
        assert len(set(other.tolist())) == 1
        assert set(p.attributes[i, :, 1].tolist()) <= counts            # counts stay inside the regime
        assert set(p.attributes[i, :, 0].tolist()) <= set(ids.tolist())
    assert len(np.unique(p.answer)) == 4 and len(np.unique(p.rule)) == 3 and len(np.unique(p.attribute)) == 2


def test_extrapolation_keeps_the_large_counts_out_of_training():
    train = make_pgm_problems(40, np.arange(100), "extrapolation", "train", seed=2)
    test = make_pgm_problems(40, np.arange(100), "extrapolation", "test", seed=2)
    assert train.attributes[..., 1].max() <= 4 and test.attributes[..., 1].min() >= 3
    assert test.attributes[..., 1].max() == 6


def test_panels_show_their_counts():
    p = make_pgm_problems(10, np.arange(100), seed=3)
    panels = np.concatenate([p.context, p.candidates], axis=1)[..., 0]            # [n, 12, 64, 64]
    # ink in each of the six 2x3 places (rows 8-20 / 40-52 +- 2 jitter, columns 4/26/48 +- 2)
    places = [(y, x) for y in (6, 38) for x in (2, 24, 46)]
    inked = np.stack([panels[..., y:y + 16, x:x + 16].max(axis=(-1, -2)) > 0.25 for y, x in places], -1)
    np.testing.assert_array_equal(inked.sum(-1), p.attributes[..., 1])


def test_sequences_put_the_candidate_ninth_with_the_panel_code():
    rng = np.random.default_rng(4)
    n, c, k, d = 2, 4, 3, 5
    ctx_z, ctx_m = rng.standard_normal((n, 8, k, d)), rng.standard_normal((n, 8, k, d))
    cand_z, cand_m = rng.standard_normal((n, c, k, d)), rng.standard_normal((n, c, k, d))
    z, m = pgm_sequences(ctx_z, ctx_m, cand_z, cand_m)
    assert z.shape == (n, c, 9 * k, d) and m.shape == (n, c, 9 * k, d + 6)
    np.testing.assert_array_equal(z[1, 2, 8 * k:], cand_z[1, 2])
    np.testing.assert_array_equal(z[1, 2, 3 * k:4 * k], ctx_z[1, 3])
    np.testing.assert_array_equal(m[0, 1, 5 * k, :d], ctx_m[0, 5, 0])
    # panel 5 is row 2, column 3; panel 9 (the candidate) row 3, column 3
    np.testing.assert_array_equal(m[0, 1, 5 * k, d:], [0, 1, 0, 0, 0, 1])
    np.testing.assert_array_equal(m[0, 1, 8 * k + 1, d:], [0, 0, 1, 0, 0, 1])
    with pytest.raises(ValueError, match="context"):
        pgm_sequences(ctx_z[:, :7], ctx_m[:, :7], cand_z, cand_m)


def test_bad_regime_split_and_too_few_shapes_are_clear_errors():
    with pytest.raises(ValueError, match="accepted"):
        make_pgm_problems(2, np.arange(10), regime="interpolation")
    with pytest.raises(ValueError, match="accepted"):
        make_pgm_problems(2, np.arange(10), split="valid")
    with pytest.raises(ValueError, match="at least 4"):
        make_pgm_problems(2, np.arange(3))
