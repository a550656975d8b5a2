"""Slot Abstractors on ART's four tasks at m = 95 held-out shapes (experiment `slotabs/benchmark`):
the frozen slot autoencoder, then the Slot Abstractor and its ablations (a Transformer over slots,
learned symbols, an Abstractor over CNN features without slots, a CNN+MLP) over seeds, on problems
of the 95 held-out shapes and on fresh problems of the 5 training shapes; and the scaling with the
number of objects per panel (held-out accuracy on all-same problems with 2 to 5 objects, and the
time per example against the number of slots K).

Runbook:
    python scripts/run.py --config=jaxml/papers/slotabs/configs/benchmark.py:quick --workdir=/tmp/slotabs_bench
    python scripts/run.py --config=jaxml/papers/slotabs/configs/benchmark.py --workdir=/tmp/slotabs_bench_full
Hardware: 2 CPU cores. Metric: held-out-shape accuracy (%), mean and std over seeds; the headline
is the Slot Abstractor's mean over the tasks. The paper reports near-ceiling ART accuracy at m = 95
(no table in our sources).
Measured (2026-12-02): tiny 39 s (plumbing only); quick about 1m20s (autoencoder 400 steps,
same/different: Slot Abstractor 64.5%, Transformer over slots 62.5%, CNN+MLP 54.7%); full: the
autoencoder 11m09s and about 56 min of reasoner runs, Slot Abstractor mean 41.8 +- 2.5% against the
CNN Abstractor's 55.8 +- 2.4% (same/different 65.2 vs 80.9; RMTS, identity at chance for every
model); the PGM-like extrapolation block about 51 min more: Slot Abstractor 34.1 +- 5.0% (chance 25%),
Transformer over slots 28.6 +- 4.0%, learned symbols 38.3 +- 3.1%. Tables: jaxml/papers/slotabs/README.md.
"""

import ml_collections

from jaxml.core.config import by_scale, experiment_config
from jaxml.papers.slotabs.configs.autoencoder import autoencoder_block


def reasoning_block(c, scale: str) -> None:
    """The stage-2 fields: problems, reasoner size, loop."""
    c.m_holdout = 95
    c.train_problems = by_scale(scale, tiny=32, quick=1024, full=4096)
    c.test_problems = by_scale(scale, tiny=16, quick=256, full=512)
    c.reasoner = ml_collections.ConfigDict(dict(dim=by_scale(scale, tiny=16, quick=64, full=64),
                                                depth=by_scale(scale, tiny=1, quick=2, full=4), heads=4,
                                                head_dim=16, mlp=by_scale(scale, tiny=32, quick=128, full=128)))
    c.steps = by_scale(scale, tiny=4, quick=300, full=1500)
    c.batch_size = 16
    c.learning_rate = 4e-4


def get_config(arg=None) -> ml_collections.ConfigDict:
    c, scale = experiment_config("slotabs/benchmark", arg)
    c.autoencoder = autoencoder_block(scale)
    c.tasks = by_scale(scale, tiny=("rmts",), quick=("same_different",),
                       full=("same_different", "rmts", "dist3", "identity"))
    c.reasoners = by_scale(scale, tiny=("slot_abstractor", "cnn_mlp"),
                           quick=("slot_abstractor", "transformer", "cnn_mlp"),
                           full=("slot_abstractor", "transformer", "learned_symbols", "cnn_abstractor", "cnn_mlp"))
    c.seeds = by_scale(scale, tiny=(0,), quick=(0,), full=(0, 1, 2))
    reasoning_block(c, scale)
    # the scaling with the number of objects (all-same problems; up to 6 objects and the background in 7 slots)
    c.scaling = ml_collections.ConfigDict(dict(
        objects=by_scale(scale, tiny=(2,), quick=(2, 5), full=(2, 3, 5)),
        reasoners=by_scale(scale, tiny=("slot_abstractor",), quick=("slot_abstractor",),
                           full=("slot_abstractor", "cnn_mlp")),
        timing_slots=by_scale(scale, tiny=(4,), quick=(4, 16), full=(4, 8, 16, 32, 64)),
        timing_batch=by_scale(scale, tiny=16, quick=64, full=64)))
    # the 3x3 PGM-like task (slot reasoners; the extrapolation regime holds counts 5 and 6 out of training)
    c.pgm = ml_collections.ConfigDict(dict(
        regimes=by_scale(scale, tiny=("extrapolation",), quick=(), full=("extrapolation",)),
        reasoners=by_scale(scale, tiny=("slot_abstractor",), quick=("slot_abstractor",),
                           full=("slot_abstractor", "transformer", "learned_symbols"))))
    return c
