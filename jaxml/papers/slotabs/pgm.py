"""A small 3x3 Raven-style task in the manner of PGM (Barrett et al. 2018), built from the real shapes of
`shapes.shape_bank`, with a held-out attribute-value regime.

    p = make_pgm_problems(256, shape_ids, regime="extrapolation", split="test", seed=0)
    p.context [n, 8, 64, 64, 1], p.candidates [n, 4, 64, 64, 1] (float32 in [0, 1]), p.answer [n]
    p.attributes [n, 12, 2]: (shape id, count) of the 8 context panels, then of the 4 candidates
    z, m = pgm_sequences(ctx_z, ctx_m, cand_z, cand_m)       # [n, 4, 9 K, D], [n, 4, 9 K, D + 6]

Each panel holds `count` copies (1 to 6, in a 2x3 layout filled row by row) of one shape. One attribute,
shape or count, follows a rule along every row; the other varies at random from panel to panel:
  * constant: the attribute is the same along a row (its value may change between rows);
  * progression (count only): +1 along a row;
  * distribution: the same three values in every row, in a different order.
The ninth panel is missing; the four candidates are the right panel and three panels whose ruled
attribute takes another value (the other attribute as in the right panel), so only the rule tells
them apart.

Regimes (PGM's held-out attribute values): "neutral" draws counts from 1..6 in both splits;
"extrapolation" draws counts from 1..4 for "train" and 3..6 for "test", so counts 5 and 6 never appear
in training (not even in a distractor). Shapes come from the caller's ids (ART's shape split gives held-out shapes too).

`pgm_sequences` builds, for each candidate, the sequence of the 9 panels' slots (8 context panels and
the candidate in position 9); the position symbols m get the panel's one-hot row and column code
appended, as the official PGM Abstractor adds Linear(6 -> d) of that code to its symbols.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from jaxml.papers.slotabs.shapes import shape_bank
from jaxml.papers.slotabs.tasks import OBJECT

REGIMES = ("neutral", "extrapolation")
SPLITS = ("train", "test")
RULES = ("constant", "progression", "distribution")
ATTRIBUTES = ("shape", "count")
COUNTS = {("neutral", "train"): (1, 2, 3, 4, 5, 6), ("neutral", "test"): (1, 2, 3, 4, 5, 6),
          ("extrapolation", "train"): (1, 2, 3, 4), ("extrapolation", "test"): (3, 4, 5, 6)}
PANEL = 64
_PLACES = ((8, 4), (8, 26), (8, 48), (40, 4), (40, 26), (40, 48))   # top-left corners of up to 6 copies


@dataclasses.dataclass(frozen=True)
class PgmProblems:
    """n problems: context panels [n, 8, S, S, 1], candidate panels [n, 4, S, S, 1], the answer [n], the
    (shape id, count) of every panel [n, 12, 2] (8 context, then 4 candidates), the ruled attribute
    [n] (index into ATTRIBUTES) and its rule [n] (index into RULES)."""

    context: np.ndarray
    candidates: np.ndarray
    answer: np.ndarray
    attributes: np.ndarray
    attribute: np.ndarray
    rule: np.ndarray


def _row_values(rng, rule: str, values: tuple) -> np.ndarray:
    """[3, 3] values of the ruled attribute, one row per matrix row."""
    if rule == "constant":
        return np.repeat(rng.choice(values, 3)[:, None], 3, axis=1)
    if rule == "progression":
        starts = [v for v in values if v + 2 in values]
        return np.asarray([[s, s + 1, s + 2] for s in rng.choice(starts, 3)])
    three = rng.choice(values, 3, replace=False)
    return np.stack([rng.permutation(three) for _ in range(3)])


def _render(bank, shape: int, count: int, rng) -> np.ndarray:
    panel = np.zeros((PANEL, PANEL), np.float32)
    for y, x in _PLACES[:count]:
        dy, dx = rng.integers(-2, 3, 2)
        y, x = y + int(dy), x + int(dx)
        np.maximum(panel[y:y + OBJECT, x:x + OBJECT], bank[shape], out=panel[y:y + OBJECT, x:x + OBJECT])
    return panel


def make_pgm_problems(n: int, shape_ids, regime: str = "neutral", split: str = "train", seed: int = 0
                      ) -> PgmProblems:
    """`n` seeded problems of `regime` (REGIMES) and `split` (SPLITS) over the shapes `shape_ids`."""
    if regime not in REGIMES:
        raise ValueError(f"unknown regime {regime!r}; accepted: {REGIMES}")
    if split not in SPLITS:
        raise ValueError(f"unknown split {split!r}; accepted: {SPLITS}")
    ids = np.asarray(shape_ids)
    if len(np.unique(ids)) < 4:
        raise ValueError(f"make_pgm_problems needs at least 4 distinct shape ids (4 candidates), got {len(np.unique(ids))}")
    bank = shape_bank(size=OBJECT)
    counts = COUNTS[regime, split]
    rng = np.random.default_rng(seed)
    context = np.zeros((n, 8, PANEL, PANEL, 1), np.float32)
    candidates = np.zeros((n, 4, PANEL, PANEL, 1), np.float32)
    attributes = np.zeros((n, 12, 2), np.int32)
    answer = rng.integers(4, size=n).astype(np.int32)
    attribute = rng.integers(2, size=n).astype(np.int32)
    rule = np.zeros(n, np.int32)
    for i in range(n):
        ruled = ATTRIBUTES[attribute[i]]
        choices = ("constant", "distribution") + (("progression",) if ruled == "count" else ())
        rule[i] = RULES.index(choices[rng.integers(len(choices))])
        values = tuple(ids) if ruled == "shape" else counts
        grid = _row_values(rng, RULES[rule[i]], values)                       # the ruled attribute, [3, 3]
        other = (rng.choice(counts, (3, 3)) if ruled == "shape" else rng.choice(ids, (3, 3)))
        panels = [(int(grid[r, c]), int(other[r, c])) if ruled == "shape" else (int(other[r, c]), int(grid[r, c]))
                  for r in range(3) for c in range(3)]
        right = panels[8]
        wrong = [v for v in values if v != grid[2, 2]]
        wrong = rng.choice(wrong, 3, replace=False)
        cands = [(int(w), right[1]) if ruled == "shape" else (right[0], int(w)) for w in wrong]
        cands.insert(int(answer[i]), right)
        for j, (shape, count) in enumerate(panels[:8]):
            context[i, j, ..., 0] = _render(bank, shape, count, rng)
        for j, (shape, count) in enumerate(cands):
            candidates[i, j, ..., 0] = _render(bank, shape, count, rng)
        attributes[i] = panels[:8] + cands
    return PgmProblems(context, candidates, answer, attributes, attribute, rule)


def pgm_sequences(ctx_z: np.ndarray, ctx_m: np.ndarray, cand_z: np.ndarray, cand_m: np.ndarray
                  ) -> tuple[np.ndarray, np.ndarray]:
    """Per-candidate slot sequences of the 9 panels: context slots [n, 8, K, D] and candidate slots
    [n, C, K, D] -> z [n, C, 9 K, D] and m [n, C, 9 K, D + 6], m with each panel's one-hot row and
    column (the candidate sits at row 3, column 3) appended."""
    n, c, k, d = cand_z.shape
    if ctx_z.shape != (n, 8, k, d) or ctx_m.shape != ctx_z.shape or cand_m.shape != cand_z.shape:
        raise ValueError(f"pgm_sequences: context [n, 8, K, D] and candidates [n, C, K, D] expected; got "
                         f"{ctx_z.shape}, {ctx_m.shape}, {cand_z.shape}, {cand_m.shape}")
    code = np.zeros((9, 6), np.float32)
    for p in range(9):
        code[p, p // 3] = code[p, 3 + p % 3] = 1.0
    code = np.broadcast_to(np.repeat(code, k, axis=0), (n, c, 9 * k, 6))
    z = np.concatenate([np.broadcast_to(ctx_z[:, None], (n, c, 8, k, d)), cand_z[:, :, None]], axis=2)
    m = np.concatenate([np.broadcast_to(ctx_m[:, None], (n, c, 8, k, d)), cand_m[:, :, None]], axis=2)
    return z.reshape(n, c, 9 * k, d), np.concatenate([m.reshape(n, c, 9 * k, d), code], axis=-1)
