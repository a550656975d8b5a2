"""Does a skipped block cost nothing? (experiment `avtrack/skipping`): the batch-1 CPU time of AVTrack's
inference program with k of L blocks forced on (k = 2 .. L), one compiled program for every pattern,
at our benchmark's size (64 wide, 8 blocks, 80 tokens) and at AVTrack-DeiT's geometry (192 wide,
12 blocks, 64 + 256 tokens); a line through the points gives the fixed cost and the cost per block.

Runbook:
    python scripts/run.py --config=jaxml/papers/avtrack/configs/skipping.py:quick --workdir=/tmp/avtrack_skip
    python scripts/run.py --config=jaxml/papers/avtrack/configs/skipping.py --workdir=/tmp/avtrack_skip_full
Hardware: 2 CPU cores. Metric: ms per block and the line's R^2. Measured (2026-12-02, quick, 16 s): ours
0.18 + 0.163 k ms (R^2 0.97), DeiT-Tiny geometry 7.0 + 1.90 k ms (R^2 0.97), one compilation each.
"""

import ml_collections

from jaxml.core.config import by_scale, experiment_config


def get_config(arg=None) -> ml_collections.ConfigDict:
    c, scale = experiment_config("avtrack/skipping", arg)
    c.sizes = by_scale(scale, tiny=("ours",), quick=("ours", "deit_tiny"), full=("ours", "deit_tiny"))
    c.frames = by_scale(scale, tiny=4, quick=6, full=50)
    c.repeats = by_scale(scale, tiny=1, quick=3, full=5)
    return c
