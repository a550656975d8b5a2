"""The Hershey vector fonts (public domain; the MIT `hershey-fonts` wheel, read as an asset): glyphs
as polylines.

    strokes = glyph_strokes("astrology", "!")      # [[(x, y), ...], ...] in font units
    chars = font_chars("japanese")

The wheel is not installed (it would put a top-level `tests` package on the path); its single
module, pure standard-library Python, is loaded from the asset cache.
"""

from __future__ import annotations

import functools
import importlib.util

from jaxml.data import assets


@functools.lru_cache(maxsize=1)
def _module():
    path = assets.path("hershey-fonts", "HersheyFonts", "HersheyFonts.py")
    spec = importlib.util.spec_from_file_location("jaxml_hershey_fonts", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@functools.lru_cache(maxsize=64)
def _font(name: str):
    fonts = _module().HersheyFonts()
    if name not in fonts.default_font_names:
        raise ValueError(f"unknown Hershey font {name!r}; accepted: {sorted(fonts.default_font_names)}")
    fonts.load_default_font(name)
    return fonts


def font_names() -> list[str]:
    """The 32 built-in font names."""
    return list(_module().HersheyFonts().default_font_names)


def font_chars(name: str) -> list[str]:
    """The characters font `name` draws, sorted."""
    return sorted(_font(name).all_glyphs)


def glyph_strokes(name: str, char: str) -> list[list[tuple[float, float]]]:
    """The polylines of `char` in font `name` (font units, y down); [] for a blank glyph."""
    if len(char) != 1:
        raise ValueError(f"glyph_strokes: one character expected, got {char!r}")
    return [[(float(x), float(y)) for x, y in stroke] for stroke in _font(name).strokes_for_text(char)]
