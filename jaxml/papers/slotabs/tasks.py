"""ART's four abstract visual reasoning tasks (Webb et al. 2021) built from the 100 real shapes of
`shapes.shape_bank`, as multiple-choice problems whose every candidate is one image holding all the
objects of the problem with that candidate inserted (so slots are needed to reason over objects).

    p = make_problems("rmts", n=256, shape_ids=train_ids, seed=0)
    p.images  float32 [n, C, S, S, 1] in [0, 1];  p.answer  int [n]  (the correct candidate)

  * same_different (C = 1, S = 64): two objects; a binary judgement, answer 0 "same", 1 "different"
    (the reasoner gives two scores for the one image, `CHOICES`).
  * rmts, relational match-to-sample (C = 2, S = 64): a source pair (same or different) on top and
    a target pair below; the right target has the source's relation.
  * dist3, distribution-of-three (C = 4, S = 64): a first row of three shapes; the second row holds
    two of them and the candidate; the answer completes the same set of three (distractors: a shape
    already in the second row and two shapes outside the first, so 5 distinct shapes suffice, as
    with ART's 5 training shapes).
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
CANDIDATES = {"same_different": 1, "rmts": 2, "dist3": 4, "identity": 4}      # images per problem
CHOICES = {"same_different": 2, "rmts": 2, "dist3": 4, "identity": 4}         # answers (chance = 1 / CHOICES)
SIZE = {"same_different": 64, "rmts": 64, "dist3": 64, "identity": 64}
# object anchors (top-left corners, before jitter) of each layout
_PAIR = ((26, 14), (26, 38))
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


def _compose(bank, ids, anchors, size, rng) -> np.ndarray:
    canvas = np.zeros((size, size), np.float32)
    for i, (y, x) in zip(ids, anchors):
        dy, dx = rng.integers(-2, 3, 2)
        _draw(canvas, bank[i], int(y + dy), int(x + dx))
    return canvas


def _distinct(rng, ids, k):
    if len(ids) < k:
        raise ValueError(f"a problem needs {k} distinct shapes but only {len(ids)} shape ids were given")
    return rng.choice(ids, k, replace=False)


DISTINCT = {"same_different": 2, "rmts": 5, "dist3": 5, "identity": 4}    # distinct shapes a problem draws


def _same_different(rng, ids):
    same = rng.random() < 0.5
    a, b = _distinct(rng, ids, DISTINCT["same_different"])
    return [(a, a) if same else (a, b)], 0 if same else 1


def _rmts(rng, ids):
    source_same = rng.random() < 0.5
    a, b, c, d, e = _distinct(rng, ids, DISTINCT["rmts"])
    source = (a, a) if source_same else (a, b)
    targets = [(c, c), (d, e)]                    # a same pair and a different pair, in new shapes
    order = rng.permutation(2)
    candidates = [source + targets[o] for o in order]
    answer = int(np.flatnonzero(order == (0 if source_same else 1))[0])
    return candidates, answer


def _dist3(rng, ids):
    a, b, c, d, e = _distinct(rng, ids, DISTINCT["dist3"])
    row1 = (a, b, c)
    held = rng.permutation(3)
    row2 = (row1[held[0]], row1[held[1]])
    options = [row1[held[2]], row2[rng.integers(2)], d, e]    # a shape already in row 2 is a distractor
    order = rng.permutation(4)
    candidates = [row1 + row2 + (options[o],) for o in order]
    return candidates, int(np.flatnonzero(order == 0)[0])


_RULES = {"ABA": (0, 1, 0), "AAB": (0, 0, 1), "ABB": (0, 1, 1), "AAA": (0, 0, 0)}


def _identity(rng, ids):
    rules = list(_RULES.values())
    rule = rng.integers(len(rules))
    a, b, c, d = _distinct(rng, ids, DISTINCT["identity"])
    row1 = tuple((a, b)[r] for r in rules[rule])
    order = rng.permutation(4)                    # candidate j: the second row in c, d under rule order[j]
    candidates = [row1 + tuple((c, d)[r] for r in rules[o]) for o in order]
    return candidates, int(np.flatnonzero(order == rule)[0])


_MAKERS = {"same_different": (_same_different, _PAIR), "rmts": (_rmts, _RMTS), "dist3": (_dist3, _ROWS),
           "identity": (_identity, _ROWS)}
OBJECTS = {task: len(anchors) for task, (_, anchors) in _MAKERS.items()}      # objects per candidate image


def scattered_panels(n: int, shape_ids, seed: int = 0, max_objects: int = 6, size: int = 64) -> np.ndarray:
    """`n` panels [n, size, size, 1] of 1..max_objects shapes at random cells of a 4x4 grid (each shape
    jittered inside its cell, no overlaps): the slot autoencoder's pretraining images, whose object
    positions vary far more than the tasks' fixed layouts, so the slots must find the objects."""
    bank = shape_bank(size=OBJECT)
    ids = np.asarray(shape_ids)
    rng = np.random.default_rng(seed)
    cell = size // 4
    out = np.zeros((n, size, size, 1), np.float32)
    for i in range(n):
        count = rng.integers(1, max_objects + 1)
        for c in rng.choice(16, count, replace=False):
            y, x = divmod(int(c), 4)
            dy, dx = rng.integers(0, cell - OBJECT + 1, 2)
            _draw(out[i, ..., 0], bank[rng.choice(ids)], y * cell + int(dy), x * cell + int(dx))
    return out


def make_count_problems(objects: int, n: int, shape_ids, seed: int = 0) -> Problems:
    """`n` seeded all-same problems with `objects` (2..6) objects per panel, for the scaling with the
    number of objects: the panel holds `objects` shapes that are either all the same or all the same
    but one; a binary judgement like same_different, answer 0 "all the same", 1 "one differs".
    Telling them apart compares every pair of objects. Images [n, 1, 64, 64, 1]."""
    if not 2 <= objects <= len(_ROWS):
        raise ValueError(f"make_count_problems: objects must be in [2, {len(_ROWS)}], got {objects}")
    bank = shape_bank(size=OBJECT)
    ids = np.asarray(shape_ids)
    rng = np.random.default_rng(seed)
    images = np.zeros((n, 1, 64, 64, 1), np.float32)
    held = np.zeros((n, 1, objects), np.int32)
    answer = rng.integers(2, size=n).astype(np.int32)
    for i in range(n):
        a, b = _distinct(rng, ids, 2)
        panel = np.full(objects, a)
        if answer[i]:
            panel[rng.integers(objects)] = b
        images[i, 0, ..., 0] = _compose(bank, panel, _ROWS[:objects], 64, rng)
        held[i, 0] = panel
    return Problems(f"all_same_{objects}", images, answer, held)


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
            images[i, j, ..., 0] = _compose(bank, cand, anchors, size, rng)
            objects[i, j] = cand
    return Problems(task, images, answer, objects)
