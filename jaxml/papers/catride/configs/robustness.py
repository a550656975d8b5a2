"""CA-TRIDE so far (experiment `catride/robustness`): benign and EST-trained embeddings on
Fashion-MNIST classes 0-4, retrieval and ERS on the unseen classes 5-9.

Runbook:
    python scripts/run.py --config=jaxml/papers/catride/configs/robustness.py:quick --workdir=/tmp/catride_quick
    python scripts/run.py --config=jaxml/papers/catride/configs/robustness.py --workdir=/tmp/catride
Hardware: 2 CPU cores. Times and numbers: jaxml/papers/catride/README.md (the paper is in progress,
issue 23: TRIDE, CA-TRIDE, ACT, the new metric and the 3-seed benchmark are not built yet).
Full: all 30k training / 5k retrieval images, 1000 steps of 64 pairs, EST with RobRank's 28x28
budget (eps 77/255, alpha 3/255) at 8 PGD steps, attacks on 500 queries with 32 steps.
Quick: 500 / 200 images per class, 150 steps, attacks on 100 queries with 8 steps. Tiny: seconds.
"""

import ml_collections

from jaxml.core.config import by_scale, experiment_config


def get_config(arg=None) -> ml_collections.ConfigDict:
    c, scale = experiment_config("catride/robustness", arg)
    c.defences = by_scale(scale, tiny=("none",), quick=("none", "est"), full=("none", "est"))
    c.data = ml_collections.ConfigDict(dict(train_per_class=by_scale(scale, tiny=64, quick=500, full=0),
                                            test_per_class=by_scale(scale, tiny=32, quick=200, full=0)))
    c.model = ml_collections.ConfigDict(dict(dim=by_scale(scale, tiny=16, quick=128, full=512),
                                             features=by_scale(scale, tiny=(4, 8), quick=(16, 32), full=(32, 64)),
                                             hidden=by_scale(scale, tiny=32, quick=256, full=1024)))
    c.steps = by_scale(scale, tiny=10, quick=150, full=1000)
    c.batch_size = by_scale(scale, tiny=16, quick=32, full=64)
    c.learning_rate = 1e-3
    c.train_attack = ml_collections.ConfigDict(dict(eps=77 / 255, alpha=3 / 255, steps=by_scale(scale, tiny=2, quick=4, full=8)))
    c.attack = ml_collections.ConfigDict(dict(eps=77 / 255, alpha=3 / 255, steps=by_scale(scale, tiny=2, quick=8, full=32),
                                              queries=by_scale(scale, tiny=16, quick=100, full=500), w=1, m=1))
    return c
