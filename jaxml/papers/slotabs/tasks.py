"""ART's four abstract visual reasoning tasks (Webb et al. 2021) built from the 100 real shapes of
`shapes.shape_bank`, as multiple-choice problems whose every candidate is one image holding all the
objects of the problem with that candidate inserted (so slots are needed to reason over objects).

    p = make_problems("rmts", n=256, shape_ids=train_ids, seed=0)
    p.images  float32 [n, C, S, S, 1] in [0, 1];  p.answer  int [n]  (the correct candidate)

  * same_different (C = 2, S = 32): two objects; candidate 0 means "same", 1 "different"; both
    candidates are the same image, told apart by a marker in the corner (a bar on the left for
    "same", on the right for "different"), so every task is scored the same way.
  * rmts, relational match-to-sample (C = 2, S = 64): a source pair (same or different) on top and
    a target pair below; the right target has the source's relation.
  * dist3, distribution-of-three (C = 4, S = 64): a first row of three shapes; the second row holds
    two of them and the candidate; the answer completes the same set of three.
  * identity, identity rules (C = 4, S = 64): the first row follows ABA, AAB, ABB or AAA; each
    candidate is a second row in two other shapes under one of the four rules, and the answer
    follows the first row's. (ART completes a given two-object row with one of four shapes; for AAB
    almost any new shape completes it, so our candidates vary the whole row instead.)
The shapes of a problem are drawn from `shape_ids` (ART: training problems from the 5 training
shapes, test problems from the 95 held-out ones); positions jitter by up to 2 pixels.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from jaxml.papers.slotabs.shapes import shape_bank

OBJECT = 12                                       # object side in pixels
TASKS = ("same_different", "rmts", "dist3", "identity")
CANDIDATES = {"same_different": 2, "rmts": 2, "dist3": 4, "identity": 4}
SIZE = {"same_different": 32, "rmts": 64, "dist3": 64, "identity": 64}
# object anchors (top-left corners, before jitter) of each layout
_PAIR32 = ((10, 2), (10, 18))
_RMTS = ((8, 14), (8, 38), (40, 14), (40, 38))
_ROWS = ((8, 4), (8, 26), (8, 48), (40, 4), (40, 26), (40, 48))


@dataclasses.dataclass(frozen=True)
class Problems:
    """n problems of one task: candidate images [n, C, S, S, 1], the answer [n], and the shape ids
    of each candidate's objects [n, C, objects]."""

    task: str
    images: np.ndarray
    answer: np.ndarray
    objects: np.ndarray


def _draw(canvas: np.ndarray, glyph: np.ndarray, y: int, x: int) -> None:
    h, w = glyph.shape
    np.maximum(canvas[y:y + h, x:x + w], glyph, out=canvas[y:y + h, x:x + w])


def _compose(bank, ids, anchors, size, rng, marker: int | None = None) -> np.ndarray:
    canvas = np.zeros((size, size), np.float32)
    for i, (y, x) in zip(ids, anchors):
        dy, dx = rng.integers(-2, 3, 2)
        _draw(canvas, bank[i], int(y + dy), int(x + dx))
    if marker is not None:                        # same/different's answer marker: a bar in a top corner
        x0 = 1 if marker == 0 else size - 7
        canvas[1:3, x0:x0 + 6] = 1.0
    return canvas


def _distinct(rng, ids, k):
    if len(ids) < k:
        raise ValueError(f"a problem needs {k} distinct shapes but only {len(ids)} shape ids were given")
    return rng.choice(ids, k, replace=False)


def _same_different(rng, ids):
    same = rng.random() < 0.5
    a, b = _distinct(rng, ids, 2)
    pair = (a, a) if same else (a, b)
    return [pair, pair], 0 if same else 1


def _rmts(rng, ids):
    source_same = rng.random() < 0.5
    a, b, c, d, e = _distinct(rng, ids, 5)
    source = (a, a) if source_same else (a, b)
    targets = [(c, c), (d, e)]                    # a same pair and a different pair, in new shapes
    order = rng.permutation(2)
    candidates = [source + targets[o] for o in order]
    answer = int(np.flatnonzero(order == (0 if source_same else 1))[0])
    return candidates, answer


def _dist3(rng, ids):
    a, b, c, d, e, f = _distinct(rng, ids, 6)
    row1 = (a, b, c)
    held = rng.permutation(3)
    row2 = (row1[held[0]], row1[held[1]])
    options = [row1[held[2]], d, e, f]
    order = rng.permutation(4)
    candidates = [row1 + row2 + (options[o],) for o in order]
    return candidates, int(np.flatnonzero(order == 0)[0])


_RULES = {"ABA": (0, 1, 0), "AAB": (0, 0, 1), "ABB": (0, 1, 1), "AAA": (0, 0, 0)}


def _identity(rng, ids):
    rules = list(_RULES.values())
    rule = rng.integers(len(rules))
    a, b, c, d = _distinct(rng, ids, 4)
    row1 = tuple((a, b)[r] for r in rules[rule])
    order = rng.permutation(4)                    # candidate j: the second row in c, d under rule order[j]
    candidates = [row1 + tuple((c, d)[r] for r in rules[o]) for o in order]
    return candidates, int(np.flatnonzero(order == rule)[0])


_MAKERS = {"same_different": (_same_different, _PAIR32), "rmts": (_rmts, _RMTS), "dist3": (_dist3, _ROWS),
           "identity": (_identity, _ROWS)}


def make_problems(task: str, n: int, shape_ids, seed: int = 0) -> Problems:
    """`n` seeded problems of `task` (one of TASKS) over the shapes `shape_ids`."""
    if task not in _MAKERS:
        raise ValueError(f"unknown task {task!r}; accepted: {TASKS}")
    make, anchors = _MAKERS[task]
    bank = shape_bank(size=OBJECT)
    ids = np.asarray(shape_ids)
    if ids.size == 0 or ids.min() < 0 or ids.max() >= len(bank):
        raise ValueError(f"shape ids must lie in [0, {len(bank)}), got {ids.min() if ids.size else 'none'}..")
    rng = np.random.default_rng(seed)
    size, c = SIZE[task], CANDIDATES[task]
    images = np.zeros((n, c, size, size, 1), np.float32)
    objects = np.zeros((n, c, len(anchors)), np.int32)
    answer = np.zeros(n, np.int32)
    for i in range(n):
        candidates, answer[i] = make(rng, ids)
        for j, cand in enumerate(candidates):
            marker = j if task == "same_different" else None
            images[i, j, ..., 0] = _compose(bank, cand, anchors, size, rng, marker)
            objects[i, j] = cand
    return Problems(task, images, answer, objects)
