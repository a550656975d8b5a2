"""StrokeNUWA's SVG fixer: repairs of generated (R, 9) rows whose pieces do not join up.

A generated row [cmd, x0, y0, x1, y1, x2, y2, x3, y3] (format in `svg`) carries its own start (x0, y0),
which need not be where the previous row ended (the pen; (0, 0) before the first row). Two repairs:

* `path_interpolation` (PI): before every L/C row whose start is not the pen, insert the move
  [0, pen, 0, 0, 0, 0, start]; the row is kept as generated (the pen jumps, nothing is lost).
* `path_clipping` (PC): set the start of every L/C row that is not the pen to the pen (the row is
  stretched to join the previous one; its control points and end are kept).

In both, an M row's start is set to the pen (a move's start is bookkeeping, it draws nothing), so every
row of the output starts where the previous one ended. Neither changes cmds or clamps coordinates: apply
them to integer rows (`vq.rows_from_features` output). `is_valid` is the validity test of a generated matrix.
"""

from __future__ import annotations

import numpy as np

from jaxml.papers.strokenuwa.svg import CMD_C, CMD_L, CMD_M, GRID, ROW, SvgError, parse_svg, rows_to_svg


def _rows(rows, where: str) -> np.ndarray:
    rows = np.asarray(rows)
    if rows.ndim != 2 or rows.shape[1] != ROW:
        raise SvgError(f"{where}: rows must have shape (R, {ROW}), got {rows.shape}")
    bad = ~np.isin(rows[:, 0], (CMD_M, CMD_L, CMD_C))
    if bad.any():
        raise SvgError(f"{where}: row {int(np.argmax(bad))} has cmd {rows[bad][0, 0]!r}; accepted 0 (M), 1 (L), 2 (C)")
    return rows


def path_interpolation(rows) -> np.ndarray:
    """PI: (R, 9) -> (R', 9), R' >= R, an M row inserted before each L/C row that starts off the pen."""
    rows = _rows(rows, "path_interpolation")
    out, pen = [], np.zeros(2, rows.dtype)
    for row in rows:
        row = row.copy()
        if row[0] == CMD_M:
            row[1:3] = pen
        elif np.any(row[1:3] != pen):
            out.append(np.array([CMD_M, *pen, 0, 0, 0, 0, *row[1:3]], rows.dtype))
        out.append(row)
        pen = row[7:9]
    return np.stack(out) if out else rows.copy()


def path_clipping(rows) -> np.ndarray:
    """PC: (R, 9) -> (R, 9), every row's start set to the previous row's end ((0, 0) for the first)."""
    rows = _rows(rows, "path_clipping").copy()
    if len(rows):
        rows[0, 1:3] = 0
        rows[1:, 1:3] = rows[:-1, 7:9]
    return rows


def is_valid(rows) -> bool:
    """True for a usable generated matrix: a non-empty (R, 9) array of integer values, cmds in {0, 1, 2},
    coordinates in [0, GRID], at least one L/C row, and `svg.rows_to_svg` output that `svg.parse_svg`
    accepts. Continuity is not required (the SVG draws each row from its own start). Never raises."""
    try:
        rows = np.asarray(rows)
        if rows.ndim != 2 or rows.shape[1] != ROW or len(rows) == 0:
            return False
        if not (np.issubdtype(rows.dtype, np.integer) or np.issubdtype(rows.dtype, np.floating)):
            return False
        if not np.all(np.isfinite(rows)) or not np.all(rows == np.round(rows)):
            return False
        if not np.all(np.isin(rows[:, 0], (CMD_M, CMD_L, CMD_C))) or not np.any(rows[:, 0] != CMD_M):
            return False
        if rows[:, 1:].min() < 0 or rows[:, 1:].max() > GRID:
            return False
        parse_svg(rows_to_svg(rows))
        return True
    except (SvgError, TypeError, ValueError, OverflowError):
        return False
