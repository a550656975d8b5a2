"""The reproduction report: summary rows, per-paper claims, self-contained HTML."""

import html.parser
import os
import pathlib
import shutil
import subprocess

import numpy as np
import pytest

from jaxml.core import report
from jaxml.core.experiment import Claim, Result, verdict

PNG = bytes.fromhex("89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c489"
                    "0000000d4944415478da63f8cfc0f01f0005000201a3c1d6c80000000049454e44ae426082")


def _rows(folder: pathlib.Path):
    (folder / "figures").mkdir(parents=True)
    (folder / "figures/alpha__curves.png").write_bytes(PNG)
    (folder / "figures/alpha__heat.html").write_text("<html><body><span style='color:red'>tok</span></body></html>")
    alpha = Result(metrics={"ppl": 44.48, "ppl_fp": 39.76}, headline="ppl",
                   claims=[Claim("L2QER is closer to FP than LQER | MXINT", "44.48 vs 50.50", "5.69 vs 5.479",
                                 verdict(44.48 < 50.50)),
                           Claim("the rank helps", "k=64: 56.2", "", verdict(False))],
                   notes="SmolLM2-135M.")
    beta = Result(metrics={"acc": 0.9}, headline="acc", notes="no claim here")
    return [dict(name="alpha/reproduce", result=alpha.to_json(), seconds=81.0,
                 figures=["figures/alpha__curves.png", "figures/alpha__heat.html"]),
            dict(name="beta/reproduce", result=beta.to_json(), seconds=3.0, figures=[]),
            dict(name="gamma/reproduce", error="ValueError: broken", seconds=1.5)]


INFO = dict(scale="quick", command="python scripts/reproduce.py", seconds=85.5, machine="x86_64 2 cores")


def test_verdict_words():
    assert (verdict(True), verdict(False), verdict(None)) == ("holds", "does not hold", "not comparable")
    assert verdict(np.bool_(True)) == "holds"
    with pytest.raises(ValueError, match="accepted"):
        Claim("x", "1", verdict="maybe")
    with pytest.raises(ValueError, match="text and our number"):
        Claim("", "1")


def test_markdown_summary_rows_and_sections(tmp_path):
    md = report.to_markdown(_rows(tmp_path), **INFO)
    lines = md.splitlines()
    assert "| [alpha](#alpha) | L2QER is closer to FP than LQER \\| MXINT | 44.48 vs 50.50 | 5.69 vs 5.479 | " \
           "**holds** | 1m21s |" in lines
    assert "| [beta](#beta) | no claim here | acc = 0.9 | — | **not comparable** | 3.0s |" in lines
    assert any(line.startswith("| [gamma](#gamma) | failed: ValueError: broken |") for line in lines)
    assert "1 holds, 1 does not hold" in md and "1 experiment(s) failed" in md
    assert "| the rank helps | k=64: 56.2 | — | does not hold |" in lines
    # An image is shown once, an HTML heatmap is a link (not an image), per-metric lists stay out.
    assert md.count("figures/alpha__curves.png") == 1 and "![alpha__curves.png](figures/alpha__curves.png)" in md
    assert "- [alpha__heat.html](figures/alpha__heat.html)" in lines
    assert "ppl_fp" not in md


class _Refs(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.refs, self.tags = [], []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        self.refs += [(tag, k, v) for k, v in attrs if k in ("src", "href")]


def test_html_is_self_contained(tmp_path):
    page = report.to_html(_rows(tmp_path), tmp_path, **INFO)
    parser = _Refs()
    parser.feed(page)
    images = [v for tag, k, v in parser.refs if tag == "img"]
    assert len(images) == 1 and images[0].startswith("data:image/png;base64,")
    # Links only to anchors inside the page; the heatmap is inlined in a sandboxed iframe.
    assert all(v.startswith(("#", "data:")) for _, _, v in parser.refs), parser.refs
    assert parser.tags.count("iframe") == 1 and "srcdoc=" in page and "color:red" in page
    assert 'class="holds"' in page and 'class="does-not-hold"' in page and "ValueError: broken" in page


@pytest.mark.slow
def test_html_renders_in_headless_chromium(tmp_path):
    chromium = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
    if chromium is None:
        pytest.skip("needs Chromium (Debian: apt-get install chromium)")
    page = tmp_path / "report.html"
    page.write_text(report.to_html(_rows(tmp_path), tmp_path, **INFO))
    shot = tmp_path / "shot.png"
    proc = subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                           "--disable-background-networking", "--disable-component-update", "--disable-sync",
                           f"--user-data-dir={tmp_path / 'profile'}", f"--screenshot={shot}", "--window-size=1200,900",
                           page.as_uri()], capture_output=True, text=True, timeout=120,
                          env=dict(os.environ, HOME=str(tmp_path)))
    assert shot.exists(), proc.stderr[-2000:]
    import matplotlib.image
    pixels = matplotlib.image.imread(shot)
    assert pixels.shape[0] == 900 and pixels.shape[1] == 1200
    # Rendered, not blank: the green 'holds' and red 'does not hold' cells are on the screen.
    rgb = (pixels[..., :3] * 255).round().astype(int)
    assert (np.abs(rgb - [0xdf, 0xf3, 0xdf]).sum(-1) == 0).sum() > 50
    assert (np.abs(rgb - [0xf8, 0xdc, 0xdc]).sum(-1) == 0).sum() > 50
