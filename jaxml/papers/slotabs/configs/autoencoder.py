"""Slot Abstractors stage 1 (experiment `slotabs/autoencoder`): pretrain the slot autoencoder on
ART same/different panels of all 100 shapes and compare its held-out reconstruction error with the
mean image's.

Runbook:
    python scripts/run.py --config=jaxml/papers/slotabs/configs/autoencoder.py:quick --workdir=/tmp/slotabs_ae
    python scripts/run.py --config=jaxml/papers/slotabs/configs/autoencoder.py --workdir=/tmp/slotabs_ae_full
Hardware: 2 CPU cores. Metric: test MSE / mean-image MSE (below 1: the slots carry the objects).
The paper gives no number for this stage (it pretrains and freezes the autoencoder). Times and
numbers: jaxml/papers/slotabs/README.md. Tiny: seconds, plumbing only.
"""

import ml_collections

from jaxml.core.config import by_scale, experiment_config


def get_config(arg=None) -> ml_collections.ConfigDict:
    c, scale = experiment_config("slotabs/autoencoder", arg)
    c.task = "same_different"
    c.train_problems = by_scale(scale, tiny=64, quick=1000, full=4000)
    c.test_problems = by_scale(scale, tiny=32, quick=200, full=500)
    c.autoencoder = ml_collections.ConfigDict(dict(num_slots=4, dim=by_scale(scale, tiny=8, quick=16, full=32),
                                                   iters=by_scale(scale, tiny=1, quick=3, full=3)))
    c.steps = by_scale(scale, tiny=4, quick=300, full=3000)
    c.batch_size = by_scale(scale, tiny=16, quick=32, full=32)
    c.learning_rate = 4e-4
    return c
