"""The Hershey fonts asset: 32 fonts, glyphs as polylines in font units."""

import pytest

from jaxml.data import hershey


def test_fonts_and_the_shape_of_a_roman_a():
    assert len(hershey.font_names()) == 32 and "futural" in hershey.font_names()
    strokes = hershey.glyph_strokes("futural", "A")
    # two legs from one apex (y is down: the apex has the smallest y) and a horizontal crossbar
    assert len(strokes) == 3
    (apex1, foot1), (apex2, foot2), (bar1, bar2) = strokes
    assert apex1 == apex2 and apex1[1] < foot1[1] and foot1[1] == foot2[1] and foot1[0] < apex1[0] < foot2[0]
    assert bar1[1] == bar2[1] and foot1[0] < bar1[0] < bar2[0] < foot2[0]
    assert hershey.glyph_strokes("futural", " ") == []
    assert len(hershey.font_chars("japanese")) > len(hershey.font_chars("futural")) >= 95


def test_bad_font_and_char_are_clear_errors():
    with pytest.raises(ValueError, match="accepted"):
        hershey.glyph_strokes("comic-sans", "A")
    with pytest.raises(ValueError, match="one character"):
        hershey.glyph_strokes("futural", "AB")
