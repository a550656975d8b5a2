"""CA-TRIDE's defence benchmark (experiment `catride/robustness`): none, EST, ACT, TRIDE and CA-TRIDE
trained on 5 classes and attacked on 5 unseen ones, with retrieval, ERS and ERS-HM, and the collapse
diagnostics over training.

Runbook:
    python scripts/run.py --config=jaxml/papers/catride/configs/robustness.py:quick --workdir=/tmp/catride_quick
    python scripts/run.py --config=jaxml/papers/catride/configs/robustness.py --workdir=/tmp/catride
    python scripts/reproduce.py --papers=catride --scale=quick
Hardware: 2 CPU cores. Metric: ERS (RobRank's empirical robustness score, 0-100) with R@1, mAP, NMI
and ERS-HM. The paper's numbers are on CUB/CARS/SOP with ResNet-18 (RobRank's baselines on CUB:
R@1 / mAP / ERS none 53.9 / 26.1 / 3.8, EST 8.5 / 2.6 / 5.3, ACT 27.5 / 12.2 / 33.9); CA-TRIDE's
own numbers are not in our sources.
Full: Fashion-MNIST (all 30k training images of classes 0-4, 5k retrieval images of classes 5-9)
and the UCI digits (0-4 / 5-9), 3 seeds x 5 defences: 39m41s on 2 CPU cores (2026-12-02). ERS on
Fashion-MNIST: none 10.2 ± 0.9, EST 16.8 ± 1.3, ACT 20.6 ± 1.0, TRIDE 21.0 ± 0.8, CA-TRIDE 17.5 ± 1.3
(R@1 89.0 / 90.5 / 89.8 / 91.8 / 91.4 %); digits: 9.3, 19.1, 16.0, 18.1, 17.4. The full tables are in
the README.
Quick: Fashion-MNIST only, one seed, 300 / 100 images per class, 80 steps: 1m16s; ERS none 17.9,
EST 22.5, ACT 24.1, TRIDE 22.7, CA-TRIDE 21.6. Tiny: about 20 s, plumbing only.
"""

import ml_collections

from jaxml.core.config import by_scale, experiment_config


def get_config(arg=None) -> ml_collections.ConfigDict:
    c, scale = experiment_config("catride/robustness", arg)
    c.datasets = by_scale(scale, tiny=("fashion",), quick=("fashion",), full=("fashion", "digits"))
    c.defences = by_scale(scale, tiny=("none", "catride"), quick=("none", "est", "act", "tride", "catride"),
                          full=("none", "est", "act", "tride", "catride"))
    c.seeds = by_scale(scale, tiny=(0,), quick=(0,), full=(0, 1, 2))
    c.data = ml_collections.ConfigDict(dict(train_per_class=by_scale(scale, tiny=32, quick=300, full=0),
                                            test_per_class=by_scale(scale, tiny=16, quick=100, full=0)))
    # RobRank's C2F2 (5x5 convs of 32 and 64 channels, 1024 hidden, 512-d) at a quarter of its width
    # (channels 8, 16; 128 hidden; 64-d): 30 adversarially trained runs must fit in an hour on 2 cores
    c.model = ml_collections.ConfigDict(dict(dim=by_scale(scale, tiny=16, quick=64, full=64),
                                             features=by_scale(scale, tiny=(4, 8), quick=(8, 16), full=(8, 16)),
                                             hidden=by_scale(scale, tiny=32, quick=128, full=128)))
    c.steps = by_scale(scale, tiny=6, quick=80, full=400)
    c.batch_size = by_scale(scale, tiny=8, quick=32, full=32)
    c.learning_rate = 1e-3
    # RobRank's 28x28 budget is eps 77/255 with 32 steps of 3/255 (a reach of 96/255); with fewer steps
    # the step grows to keep that reach. lambda 10: CA-TRIDE's CUB setting.
    train_steps = by_scale(scale, tiny=2, quick=4, full=8)
    c.train_attack = ml_collections.ConfigDict(dict(eps=77 / 255, alpha=96 / 255 / train_steps, lam=10.0,
                                                    steps=train_steps))
    attack_steps = by_scale(scale, tiny=2, quick=4, full=16)
    c.attack = ml_collections.ConfigDict(dict(eps=77 / 255, alpha=96 / 255 / attack_steps, steps=attack_steps,
                                              queries=by_scale(scale, tiny=8, quick=48, full=200), w=1, m=1))
    return c
