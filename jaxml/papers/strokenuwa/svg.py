"""StrokeNUWA's "code to matrix" step: SVG text <-> a matrix of path commands, one row of 9 integers each
(the network's float view of the rows is `vq.features`).

    drawing = parse_svg(text)          # Drawing: segments (S, 4, 2) float64 in grid units, kinds (S,)
    rows = to_rows(drawing)            # (R, 9) int32 rows [cmd, x0, y0, x1, y1, x2, y2, x3, y3]
    text = rows_to_svg(rows)           # a standalone SVG, one <path> per subpath

The row format. `cmd` is CMD_M = 0 (a pen move), CMD_L = 1 (a straight line) or CMD_C = 2 (a cubic Bezier
curve); (x0, y0) is the start point, (x1, y1) and (x2, y2) the control points, (x3, y3) the end point, all
integers on a GRID x GRID canvas (GRID = 200), clamped to [0, GRID]. M and L rows carry zero control
points: [0, x0, y0, 0, 0, 0, 0, x3, y3] and [1, x0, y0, 0, 0, 0, 0, x3, y3]. The start of an M row is the
pen position before the move ((0, 0) at the start); it draws nothing.

A *canonical* row matrix (what `to_rows` returns) is continuous: every row starts where the previous one
ended (the first at (0, 0)); it has no zero-length M row, no two M rows in a row, no trailing M row, and a
zero-length L/C row only as the sole drawing row of its subpath (a dot: with round caps it draws a disc,
e.g. Tabler's `h.01` dots). `parse_svg(rows_to_svg(rows))` followed by `to_rows` gives canonical rows back
unchanged.

Parsing (`parse_svg`) is done by svgelements after a validation pass of our own. Every visible shape
(path, line, polyline, polygon, rect, circle, ellipse; transforms and <use> applied) contributes its
segments in document order, converted to absolute M/L/C: lines -> L, cubics -> C, quadratics -> the exact
degree-elevated cubic, elliptical arcs -> cubics of at most 90 degrees each (radial error < 3e-4 of the
radius, exact under skewed transforms; a radius-0 arc is the line the SVG spec makes it), a close path ->
an L back to the subpath start (dropped when zero length). Every drawing segment starts at the pen (an M
is inserted otherwise), so a Drawing is continuous, and the first M starts at (0, 0).
A shape is visible unless display/visibility hide it, opacity is 0, its transform collapses it, or it has
neither a stroke (colour, opacity > 0, width > 0) nor a fill (so Tabler's frame path `M0 0h24v24H0z` with
stroke none is dropped; a filled-only shape keeps its outline). <text>, and the contents of <defs>,
<symbol>, <mask>, <marker>, <clipPath>, <pattern> and <foreignObject>, are never drawn.

The canvas mapping: the root viewBox (or, without one, the width x height viewport) is mapped to the
[0, grid] square with one uniform scale, grid / max(width, height), centred on the short side (a 24x12
viewBox becomes [0, 200] x [50, 150]). The root's width/height and preserveAspectRatio are ignored when
there is a viewBox. Content outside the viewBox keeps its coordinates (outside [0, grid]) in the Drawing;
`to_rows` clamps them.

`SvgError` (a ValueError) is the one exception for bad input, with a message naming what was wrong.
"""

from __future__ import annotations

import dataclasses
import io
import math
import re
import xml.etree.ElementTree as ET

import numpy as np
import svgelements as se

CMD_M, CMD_L, CMD_C = 0, 1, 2
GRID = 200
ROW = 9
COMMANDS = {CMD_M: "M", CMD_L: "L", CMD_C: "C"}


class SvgError(ValueError):
    """Malformed or unusable SVG text, or rows that are not a valid (R, 9) command matrix."""


@dataclasses.dataclass(frozen=True, eq=False)
class Drawing:
    """An SVG as absolute segments on the [0, grid] canvas (y down, as in SVG).

    Attributes:
        segments: (S, 4, 2) float64 points (start, control 1, control 2, end) in grid units. For L and M
            segments the controls lie on the straight line at 1/3 and 2/3 (a uniformly parametrised cubic).
        kinds: (S,) int64 in {CMD_M, CMD_L, CMD_C}. An M segment is a pen move: start = the pen position
            before it ((0, 0) for the first), end = the move target.
        stroke_width: the median stroke width of the stroked shapes, in grid units (0.0 if none is stroked).
        grid: the canvas size the coordinates refer to.
    """
    segments: np.ndarray
    kinds: np.ndarray
    stroke_width: float = 0.0
    grid: int = GRID

    def __len__(self) -> int:
        return len(self.kinds)


# ----------------------------------------------------------------------------------------------------------
# Validation of the XML before svgelements sees it.

_SVG_NS = "{http://www.w3.org/2000/svg}"
_XLINK_HREF = "{http://www.w3.org/1999/xlink}href"
_NUM = r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?"
_LENGTH = re.compile(rf"\s*({_NUM})\s*(px|pt|pc|mm|cm|in|em|ex|%)?\s*")
_LENGTH_ATTRS = {"svg": ("width", "height"), "circle": ("cx", "cy", "r"), "ellipse": ("cx", "cy", "rx", "ry"),
                 "rect": ("x", "y", "width", "height", "rx", "ry"), "line": ("x1", "y1", "x2", "y2"),
                 "use": ("x", "y")}
_NON_NEGATIVE = {"r", "rx", "ry", "width", "height", "stroke-width"}
_NOT_DRAWN = {"symbol", "mask", "marker", "foreignObject"}   # svgelements would draw their contents in place
_MAX_ELEMENTS, _MAX_DEPTH = 100_000, 64


def _svg_tag(tag) -> str | None:
    """The local name of an element in the SVG namespace (or in none); None for other namespaces."""
    if not isinstance(tag, str):
        return None
    if tag.startswith(_SVG_NS):
        return tag[len(_SVG_NS):]
    return None if "}" in tag else tag


def _short(value: str, n: int = 40) -> str:
    return value if len(value) <= n else value[:n] + "..."


def _length(tag: str, name: str, value: str) -> float:
    m = _LENGTH.fullmatch(value)
    if m is None:
        if name in ("rx", "ry") and value.strip() == "auto":
            return 0.0
        raise SvgError(f'<{tag}> attribute {name}="{_short(value)}" is not a length (accepted: a decimal number '
                       "with an optional unit px, pt, pc, mm, cm, in, em, ex or %)")
    v = float(m.group(1))
    if not math.isfinite(v):
        raise SvgError(f'<{tag}> attribute {name}="{_short(value)}" is not finite')
    if name in _NON_NEGATIVE and v < 0:
        raise SvgError(f'<{tag}> attribute {name}="{_short(value)}" is negative')
    return v


def _numbers(tag: str, name: str, value: str) -> list[float]:
    tokens = [t for t in re.split(r"[\s,]+", value.strip()) if t]
    out = []
    for t in tokens:
        if not re.fullmatch(_NUM, t) or not math.isfinite(float(t)):
            raise SvgError(f'<{tag}> attribute {name}="{_short(value)}" holds "{_short(t, 20)}", not a finite number')
        out.append(float(t))
    return out


def _check_root(root: ET.Element) -> None:
    if _svg_tag(root.tag) != "svg":
        raise SvgError(f"the root element is <{_short(str(root.tag))}>, not <svg>")
    vb, width, height = root.get("viewBox"), root.get("width"), root.get("height")
    if vb is not None:
        box = _numbers("svg", "viewBox", vb)
        if len(box) != 4:
            raise SvgError(f'viewBox="{_short(vb)}" must hold 4 numbers (min-x min-y width height), got {len(box)}')
        if box[2] <= 0 or box[3] <= 0:
            raise SvgError(f'viewBox="{_short(vb)}" has a zero or negative size')
    elif width is None or height is None:
        raise SvgError("the <svg> has no viewBox and no width and height: the canvas size is unknown")
    for name, value in (("width", width), ("height", height)):
        if value is None:
            continue
        if vb is None and value.strip().endswith("%"):
            raise SvgError(f'<svg {name}="{value}"> is relative and there is no viewBox: the canvas size is unknown')
        if _length("svg", name, value) <= 0:
            raise SvgError(f'<svg {name}="{value}"> is zero: nothing is rendered')


def _check_element(el: ET.Element, tag: str) -> None:
    for name in _LENGTH_ATTRS.get(tag, ()) + ("stroke-width",):
        if el.get(name) is not None:
            _length(tag, name, el.get(name))
    if tag in ("polyline", "polygon") and el.get("points") is not None:
        if len(_numbers(tag, "points", el.get("points"))) % 2:
            raise SvgError(f'<{tag}> points="{_short(el.get("points"))}" has an odd number of coordinates')
    d = (el.get("d") or "").strip()
    if tag == "path" and d:
        if d[0] not in "Mm":
            raise SvgError(f'<path> d="{_short(d)}" must start with a moveto (M or m)')
        try:
            se.Path(d)
        except Exception as e:
            raise SvgError(f'<path> d="{_short(d)}" is malformed path data ({type(e).__name__})') from e


def _prepare(text: str) -> str:
    """Checks the document and returns the text svgelements should parse (rewritten if needed)."""
    try:
        root = ET.fromstring(text)
    except ET.ParseError as e:
        raise SvgError(f"not well-formed XML: {e}") from e
    _check_root(root)
    ids = {el.get("id"): el for el in root.iter() if el.get("id") is not None}
    renamed = False
    for el in root.iter():
        tag = _svg_tag(el.tag)
        if tag is not None:
            _check_element(el, tag)
        if tag in _NOT_DRAWN:
            el.tag, renamed = el.tag[:len(el.tag) - len(tag)] + "defs", True
    # svgelements inlines <use> targets recursively: refuse cycles, very deep nesting and huge expansions.
    count = 0

    def walk(el: ET.Element, depth: int, chain: tuple[str, ...]) -> None:
        nonlocal count
        count += 1
        if count > _MAX_ELEMENTS:
            raise SvgError(f"more than {_MAX_ELEMENTS} elements once <use> references are expanded")
        if depth > _MAX_DEPTH:
            raise SvgError(f"elements nested more than {_MAX_DEPTH} deep (counting <use> references)")
        for child in el:
            walk(child, depth + 1, chain)
        href = el.get("href", el.get(_XLINK_HREF)) if _svg_tag(el.tag) == "use" else None
        if href and href.startswith("#") and href[1:] in ids:
            if href[1:] in chain:
                raise SvgError(f'<use href="{_short(href)}"> closes a reference cycle (a <use> inside its own target)')
            walk(ids[href[1:]], depth + 1, chain + (href[1:],))

    walk(root, 0, ())
    return ET.tostring(root, encoding="unicode") if renamed else text


# ----------------------------------------------------------------------------------------------------------
# Geometry.

def _visible(e: se.Shape) -> bool:
    v = e.values
    if str(v.get("visibility", "visible")).strip() in ("hidden", "collapse"):
        return False
    try:
        if float(v.get("opacity", 1.0)) <= 0:
            return False
    except (TypeError, ValueError):
        pass
    stroked = e.stroke is not None and e.stroke.value is not None and e.stroke.alpha > 0 and (e.stroke_width or 0) > 0
    filled = (e.fill is not None and e.fill.value is not None and e.fill.alpha > 0
              and not isinstance(e, se.SimpleLine))
    return bool(stroked or filled)


def _line(p0: np.ndarray, p3: np.ndarray) -> np.ndarray:
    return np.stack([p0, p0 + (p3 - p0) / 3, p0 + 2 * (p3 - p0) / 3, p3])


def _xy(p: se.Point) -> tuple[float, float]:
    return (float(p.x), float(p.y))


def _arc(seg: se.Arc, t: np.ndarray) -> list[tuple[int, np.ndarray]]:
    """An elliptical arc (local coordinates, mapped by the (2, 3) affine t) as cubics of at most 90 degrees
    each (4/3 tan(h/4) tangent handles: radial error below 3e-4 of the radius), or as a line when it is
    degenerate (a zero radius or no sweep: the SVG rule).

    svgelements keeps an arc as a centre C and two conjugate-radius points prx, pry: P(a) = C + U cos a +
    V sin a with U = prx - C, V = pry - C, which any affine map (skew and reflection included) sends to
    C' + (L U) cos a + (L V) sin a with the same parameter a, so the local sweep stays valid."""
    start, end = _map(t, _xy(seg.start)), _map(t, _xy(seg.end))
    if seg.center is None or seg.prx is None or seg.pry is None or seg.sweep == 0:
        return [(CMD_L, np.stack([start, end]))]
    c = _map(t, _xy(seg.center))
    u, v = t[:, :2] @ (np.array(_xy(seg.prx)) - _xy(seg.center)), t[:, :2] @ (np.array(_xy(seg.pry)) - _xy(seg.center))
    det = u[0] * v[1] - u[1] * v[0]
    if abs(det) <= 1e-12 * max(np.dot(u, u), np.dot(v, v)) or not math.isfinite(det):
        return [(CMD_L, np.stack([start, end]))]
    q = np.linalg.solve(np.stack([u, v], 1), start - c)
    a0 = math.atan2(q[1], q[0])

    def point(a: float) -> np.ndarray:
        return c + u * math.cos(a) + v * math.sin(a)

    tol = 1e-6 * math.sqrt(max(np.dot(u, u), np.dot(v, v))) + 1e-9
    sweep = next((w for w in (seg.sweep, -seg.sweep) if np.linalg.norm(point(a0 + w) - end) <= tol), None)
    if sweep is None:                       # inconsistent arc data: fall back on svgelements' own cubics
        return [(CMD_C, np.array([_map(t, _xy(p)) for p in (b.start, b.control1, b.control2, b.end)]))
                for b in seg.as_cubic_curves()]
    n = max(1, math.ceil(abs(sweep) / (math.pi / 2) - 1e-6))
    h, out = sweep / n, []
    k = 4 / 3 * math.tan(h / 4)
    for i in range(n):
        a, b = a0 + i * h, a0 + (i + 1) * h
        p0 = start if i == 0 else point(a)
        p3 = end if i == n - 1 else point(b)
        c1 = point(a) + k * (-u * math.sin(a) + v * math.cos(a))
        c2 = point(b) - k * (-u * math.sin(b) + v * math.cos(b))
        out.append((CMD_C, np.stack([p0, c1, c2, p3])))
    return out


def _matrix(m: se.Matrix) -> np.ndarray:
    return np.array([[m.a, m.c, m.e], [m.b, m.d, m.f], [0, 0, 1]], np.float64)


def _map(t: np.ndarray, p) -> np.ndarray:
    return t[:, :2] @ np.asarray(p, np.float64) + t[:, 2]


def _shape_segments(e: se.Shape, t: np.ndarray) -> list[tuple[int, np.ndarray]]:
    """(kind, points on the canvas) of one shape, its local geometry mapped by the (2, 3) affine t:
    M (1, 2) target, L (2, 2) start and end, C (4, 2)."""
    out, sub_start, pen = [], None, None
    for seg in e.segments(transformed=False):
        start = _xy(seg.start) if seg.start is not None else pen
        if isinstance(seg, se.Move):
            out.append((CMD_M, _map(t, _xy(seg.end))[None]))
            pen = sub_start = _xy(seg.end)
            continue
        if isinstance(seg, se.Close):
            end = sub_start if sub_start is not None else _xy(seg.end)
            if start != end:
                out.append((CMD_L, np.stack([_map(t, start), _map(t, end)])))
            pen = end
            continue
        end = _xy(seg.end)
        if isinstance(seg, se.Line):
            out.append((CMD_L, np.stack([_map(t, start), _map(t, end)])))
        elif isinstance(seg, se.CubicBezier):
            out.append((CMD_C, np.stack([_map(t, p) for p in (start, _xy(seg.control1), _xy(seg.control2), end)])))
        elif isinstance(seg, se.QuadraticBezier):
            p0, q, p3 = (_map(t, p) for p in (start, _xy(seg.control), end))
            out.append((CMD_C, np.stack([p0, p0 + 2 / 3 * (q - p0), p3 + 2 / 3 * (q - p3), p3])))
        elif isinstance(seg, se.Arc):
            out.extend(_arc(seg, t))
        else:
            raise SvgError(f"unsupported path segment {type(seg).__name__}")
        pen = end
    return out


def _tidy(pts: np.ndarray, kinds: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Canonical form (see the module docstring), by exact comparisons: consecutive moves merged (first
    start, last target), zero-length and trailing moves dropped, then in each subpath (the drawing rows
    between two moves) zero-length drawing rows dropped unless all of them are, in which case the first
    stays (a dot). Drawing rows never all vanish from a subpath, so moves never become consecutive again."""
    rows: list[list] = []
    for p, k in zip(pts, kinds):
        if k == CMD_M and rows and rows[-1][1] == CMD_M:
            rows[-1][0] = np.stack([rows[-1][0][0], p[1], p[2], p[3]])
        else:
            rows.append([p, k])
    rows = [(p, k) for p, k in rows if not (k == CMD_M and np.all(p[0] == p[3]))]
    while rows and rows[-1][1] == CMD_M:
        rows.pop()
    if not rows:
        return np.zeros((0, 4, 2), pts.dtype), np.zeros(0, np.int64)
    pts, kinds = np.stack([p for p, _ in rows]), np.array([k for _, k in rows], np.int64)
    zero = np.all(pts == pts[:, :1], axis=(1, 2)) & (kinds != CMD_M)
    run = np.cumsum(kinds == CMD_M)
    keep = ~zero
    for r in np.unique(run[zero]):
        idx = np.flatnonzero((run == r) & (kinds != CMD_M))
        if zero[idx].all():
            keep[idx[0]] = True                                              # a dot
    return pts[keep], kinds[keep]


def parse_svg(text: str, *, grid: int = GRID) -> Drawing:
    """Parses SVG text into a `Drawing` on the [0, grid] canvas (see the module docstring for what is kept
    and how the viewBox is mapped). Raises `SvgError` for any malformed or empty input."""
    if not isinstance(text, str):
        raise SvgError(f"expected SVG text as a str, got {type(text).__name__}")
    if not isinstance(grid, (int, np.integer)) or grid < 1:
        raise SvgError(f"grid must be a positive integer, got {grid!r}")
    source = _prepare(text)
    try:
        with np.errstate(all="ignore"):
            segs, kinds, widths = _walk(source, grid)
    except SvgError:
        raise
    except Exception as e:  # svgelements' ValueError, IndexError, ZeroDivisionError, ...
        raise SvgError(f"could not parse the SVG: {type(e).__name__}: {_short(str(e), 200)}") from e
    if not segs:
        raise SvgError("the SVG has no visible strokes or shapes")
    pts, kinds = _tidy(np.stack(segs), np.array(kinds, np.int64))
    if not np.any(kinds != CMD_M):
        raise SvgError("the SVG has no visible strokes or shapes (only moves)")
    return Drawing(pts, kinds, float(np.median(widths)) if widths else 0.0, int(grid))


def _walk(source: str, grid: int) -> tuple[list[np.ndarray], list[int], list[float]]:
    """The visible shapes' segments on the canvas, in document order, each drawing segment preceded by a
    move when it does not start at the pen; and the stroke widths (grid units) of the stroked shapes."""
    doc = se.SVG.parse(io.StringIO(source), reify=False, on_error="raise")
    if not isinstance(doc, se.SVG):
        raise SvgError("svgelements found no <svg> element")
    if doc.viewbox is not None:
        box = (doc.viewbox.x, doc.viewbox.y, doc.viewbox.width, doc.viewbox.height)
        viewport = _matrix(se.Matrix(doc.viewbox_transform))
    else:
        box, viewport = (0.0, 0.0, float(doc.width), float(doc.height)), np.eye(3)
    if not all(math.isfinite(v) for v in box) or box[2] <= 0 or box[3] <= 0:
        raise SvgError(f"the canvas {box[2]} x {box[3]} is not a positive finite size")
    s = grid / max(box[2], box[3])
    frame = np.array([[s, 0, (grid - s * box[2]) / 2 - s * box[0]],
                      [0, s, (grid - s * box[3]) / 2 - s * box[1]], [0, 0, 1]])
    canvas = frame @ np.linalg.inv(viewport)          # svgelements' viewport coordinates -> the grid
    pen, segs, kinds, widths = np.zeros(2), [], [], []
    for e in doc.elements():
        if not isinstance(e, se.Shape) or not _visible(e):
            continue
        t = (canvas @ _matrix(e.transform))[:2]
        det = float(np.linalg.det(t[:, :2]))
        if not np.all(np.isfinite(t)):
            raise SvgError(f"<{e.values.get('tag', type(e).__name__)}> has a non-finite transform")
        if det == 0:
            continue                                    # collapsed by its transform: nothing is drawn
        shape = _shape_segments(e, t)
        if shape and e.stroke is not None and e.stroke.value is not None and e.stroke.alpha > 0:
            widths.append(float(e.stroke_width or 0) * math.sqrt(abs(det)))
        for kind, p in shape:
            if not np.all(np.isfinite(p)):
                raise SvgError(f"<{e.values.get('tag', type(e).__name__)}> has a non-finite coordinate "
                               f"(overflow or NaN) in its {COMMANDS[kind]} segment")
            if kind == CMD_M:
                segs.append(_line(pen, p[0]))
            else:
                if np.any(np.abs(p[0] - pen) > 1e-9 * grid):   # a drawing segment away from the pen
                    segs.append(_line(pen, p[0]))
                    kinds.append(CMD_M)
                    pen = p[0]
                p[0] = pen
                segs.append(_line(p[0], p[1]) if kind == CMD_L else p)
            kinds.append(kind)
            pen = segs[-1][-1]
    return segs, kinds, widths


# ----------------------------------------------------------------------------------------------------------
# Rows.

def to_rows(drawing: Drawing, *, max_rows: int | None = None) -> np.ndarray:
    """(R, 9) int32 canonical rows of a Drawing: coordinates rounded to integers (half to even) and clamped
    to [0, grid], then made canonical (zero-length segments created by the rounding are dropped unless they
    are a subpath's only drawing row, a dot; moves that became zero-length or consecutive are dropped or
    merged). Raises SvgError if R > max_rows: rows are never truncated."""
    pts = np.asarray(drawing.segments, np.float64)
    kinds = np.asarray(drawing.kinds)
    if pts.ndim != 3 or pts.shape[1:] != (4, 2) or kinds.shape != pts.shape[:1]:
        raise SvgError(f"a Drawing needs segments (S, 4, 2) and kinds (S,), got {pts.shape} and {kinds.shape}")
    if not np.all(np.isfinite(pts)):
        raise SvgError("the Drawing has non-finite coordinates")
    if not np.all(np.isin(kinds, (CMD_M, CMD_L, CMD_C))):
        raise SvgError(f"Drawing kinds must be in {{0, 1, 2}} (M, L, C), got {sorted(set(kinds.tolist()))}")
    pts, kinds = _tidy(np.clip(np.rint(pts), 0, drawing.grid), kinds.astype(np.int64))
    rows = np.zeros((len(kinds), ROW), np.int32)
    rows[:, 0] = kinds
    rows[:, 1:] = pts.reshape(-1, 8)
    rows[kinds != CMD_C, 3:7] = 0
    if max_rows is not None and len(rows) > max_rows:
        raise SvgError(f"the drawing needs {len(rows)} rows, more than max_rows={max_rows}")
    return rows


def _check_rows(rows, where: str) -> np.ndarray:
    try:
        rows = np.asarray(rows)
    except Exception as e:
        raise SvgError(f"{where}: rows are not an array: {e}") from e
    if rows.ndim != 2 or rows.shape[1] != ROW:
        raise SvgError(f"{where}: rows must have shape (R, {ROW}), got {rows.shape}")
    if not (np.issubdtype(rows.dtype, np.integer) or np.issubdtype(rows.dtype, np.floating)):
        raise SvgError(f"{where}: rows must be numbers, got dtype {rows.dtype}")
    if not np.all(np.isfinite(rows)):
        raise SvgError(f"{where}: rows hold non-finite values")
    bad = ~np.isin(rows[:, 0], (CMD_M, CMD_L, CMD_C))
    if bad.any():
        raise SvgError(f"{where}: row {int(np.argmax(bad))} has cmd {rows[bad][0, 0]!r}; accepted 0 (M), 1 (L), 2 (C)")
    return rows


def rows_to_segments(rows) -> tuple[np.ndarray, np.ndarray]:
    """(R, 9) rows -> (segments (R, 4, 2) float64, kinds (R,) int64), the layout of `Drawing`: for M and L
    rows the control points are put on the straight line at 1/3 and 2/3 (the stored zeros are ignored)."""
    rows = _check_rows(rows, "rows_to_segments")
    kinds = rows[:, 0].astype(np.int64)
    pts = rows[:, 1:].astype(np.float64).reshape(-1, 4, 2)
    straight = kinds != CMD_C
    pts[straight, 1] = pts[straight, 0] + (pts[straight, 3] - pts[straight, 0]) / 3
    pts[straight, 2] = pts[straight, 0] + 2 * (pts[straight, 3] - pts[straight, 0]) / 3
    return pts, kinds


def _fmt(v) -> str:
    v = float(v)
    return str(int(v)) if v.is_integer() else f"{v:.6g}"


def rows_to_svg(rows, *, stroke_width: float = 4.0, grid: int = GRID) -> str:
    """A standalone SVG (viewBox 0 0 grid grid, no fill, black round-capped strokes of `stroke_width` grid
    units) with one <path> per subpath. An M row starts a new subpath at its end point (its start is the
    pen position and is not written); an L/C row whose start is not the pen position starts a new subpath
    at its own start. Subpaths without a drawing row are not written."""
    rows = _check_rows(rows, "rows_to_svg")
    paths, d, pen = [], [], (0.0, 0.0)
    for row in rows:
        cmd, p0, p3 = int(row[0]), (float(row[1]), float(row[2])), (float(row[7]), float(row[8]))
        if cmd == CMD_M or p0 != pen or not d:
            if len(d) > 1:
                paths.append(" ".join(d))
            d = [f"M{_fmt(p3[0])} {_fmt(p3[1])}" if cmd == CMD_M else f"M{_fmt(p0[0])} {_fmt(p0[1])}"]
        if cmd == CMD_L:
            d.append(f"L{_fmt(p3[0])} {_fmt(p3[1])}")
        elif cmd == CMD_C:
            d.append("C" + " ".join(_fmt(v) for v in row[3:9]))
        pen = p3
    if len(d) > 1:
        paths.append(" ".join(d))
    body = "".join(f'\n  <path d="{p}"/>' for p in paths)
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{grid}" height="{grid}" viewBox="0 0 {grid} {grid}" '
            f'fill="none" stroke="black" stroke-width="{_fmt(stroke_width)}" stroke-linecap="round" '
            f'stroke-linejoin="round">{body}\n</svg>\n')
