"""The shape bank and ART's four tasks: distinct real shapes, ART's held-out split, and every
problem's answer is the one candidate that satisfies the task's rule (checked from the shape ids)."""

import numpy as np
import pytest

from jaxml.papers.slotabs.shapes import render_strokes, shape_bank, split_shapes
from jaxml.papers.slotabs.tasks import CHOICES, TASKS, make_problems


def test_shape_bank_holds_100_distinct_shapes():
    bank = shape_bank(size=12)
    assert bank.shape == (100, 12, 12) and bank.min() >= 0 and bank.max() <= 1
    ink = bank > 0.25
    inter = np.einsum("ihw,jhw->ij", ink, ink)
    union = ink.sum((1, 2))[:, None] + ink.sum((1, 2))[None, :] - inter
    iou = inter / union
    np.fill_diagonal(iou, 0)
    assert iou.max() < 0.5


def test_render_strokes_draws_a_centred_line():
    image = render_strokes([[(0, 0), (10, 0)]], size=16, margin=2, width=1)
    rows = image.sum(1)
    # centred between rows 7 and 8; ends at the 2-pixel margin (plus half the line width)
    assert rows.argmax() in (7, 8) and rows[:7].sum() == rows[9:].sum() == 0
    assert image[:, 1:15].sum() == image.sum() and image[:, 2:14].sum() > 0.9 * image.sum()
    with pytest.raises(ValueError, match="no strokes"):
        render_strokes([], 16)


def test_art_split_holds_out_95_of_100():
    train, test = split_shapes(m_holdout=95)
    assert len(train) == 5 and len(test) == 95 and not set(train) & set(test)
    assert sorted(set(train) | set(test)) == list(range(100))
    with pytest.raises(ValueError, match="m_holdout"):
        split_shapes(m_holdout=100)


def _relation(a, b):
    return a == b


@pytest.mark.parametrize("split", [0, 1])
@pytest.mark.parametrize("task", TASKS)
def test_the_answer_is_the_only_candidate_that_follows_the_rule(task, split):
    ids = split_shapes()[split]                   # every task is built from ART's 5 training shapes too
    p = make_problems(task, 60, ids, seed=3)
    n, c = p.answer.shape[0], p.images.shape[1]
    assert p.images.shape[:2] == (60, c) and set(np.unique(p.objects)) <= set(ids.tolist())
    for i in range(n):
        ok = []
        for j in range(c):
            o = p.objects[i, j]
            if task == "same_different":                      # one image, a binary answer: 1 = different
                ok.append(p.answer[i] == int(o[0] != o[1]))
            elif task == "rmts":
                ok.append(_relation(o[0], o[1]) == _relation(o[2], o[3]))
            elif task == "dist3":
                ok.append(sorted(o[3:]) == sorted(o[:3]))
            else:
                pattern = lambda t: (t[0] == t[1], t[1] == t[2], t[0] == t[2])          # noqa: E731
                ok.append(pattern(o[:3]) == pattern(o[3:]))
        if task == "same_different":
            assert ok == [True], (i, p.objects[i], p.answer[i])
        else:
            assert ok[p.answer[i]] and sum(ok) == 1, (task, i, p.objects[i], p.answer[i])
    # answers are spread over the choices
    assert len(np.unique(p.answer)) == CHOICES[task]


def test_bad_task_and_too_few_shapes_are_clear_errors():
    with pytest.raises(ValueError, match="accepted"):
        make_problems("raven", 2, np.arange(10))
    with pytest.raises(ValueError, match="distinct shapes"):
        make_problems("dist3", 2, np.arange(4))
