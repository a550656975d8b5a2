"""StrokeNUWA's VQ-Stroke (experiment `strokenuwa/vqstroke`): train the two-level VQ-VAE over the rows of
real icons (Tabler outline icons and KanjiVG kanji) and measure the held-out reconstruction (coordinate
L2, command accuracy, raster IoU with and without the SVG fixer) and the compression ratio.

Runbook:
    python scripts/run.py --config=jaxml/papers/strokenuwa/configs/vqstroke.py:quick --workdir=/tmp/sn_vq
    python scripts/run.py --config=jaxml/papers/strokenuwa/configs/vqstroke.py --workdir=/tmp/sn_vq_full
Hardware: 2 CPU cores. Metric: level-0 raster IoU against the original (PI fixer); the compression
ratio stroke tokens / SVG code tokens in SmolLM2's BPE. The paper: 6.9% compression (no
reconstruction number in our sources).
Measured (2026-12-02): full, 3000 steps on 14,655 training icons in 22 min: level-0 raster IoU 0.543 (PI)
and 0.541 (PC = no fixer), command accuracy 99.4%, coordinate L2 12.1 of 200; compression 2.8% (Tabler, our
SVG text) and 5.9% (Tabler, the published path data). Tiny: seconds, plumbing only. Tables:
jaxml/papers/strokenuwa/README.md.
"""

import ml_collections

from jaxml.core.config import by_scale, experiment_config


def data_block(c, scale: str) -> None:
    """Which icons: sources, every n-th file, the row cap, the raster size of the IoU."""
    c.sources = by_scale(scale, tiny=("tabler",), quick=("tabler", "kanjivg"), full=("tabler", "kanjivg"))
    c.every = by_scale(scale, tiny=40, quick=10, full=1)     # every n-th file of each source
    c.max_rows = by_scale(scale, tiny=64, quick=128, full=128)
    c.raster_size = 64


def vq_block(scale: str) -> ml_collections.ConfigDict:
    """VQ-Stroke's size (the paper: width 512, depth 4, 4096 codes of 1024) and its loop."""
    return ml_collections.ConfigDict(dict(
        levels=2, width=by_scale(scale, tiny=16, quick=64, full=128), depth=2,
        emb=by_scale(scale, tiny=8, quick=32, full=64), codes=by_scale(scale, tiny=32, quick=256, full=512),
        mu=0.99, threshold=1.0, commit=1.0,
        steps=by_scale(scale, tiny=4, quick=150, full=3000), batch_size=by_scale(scale, tiny=8, quick=32, full=32),
        learning_rate=1e-3))     # the paper: 3e-4 at batch 128 for 90 epochs; ours has a few epochs


def get_config(arg=None) -> ml_collections.ConfigDict:
    c, scale = experiment_config("strokenuwa/vqstroke", arg)
    data_block(c, scale)
    c.vq = vq_block(scale)
    return c
