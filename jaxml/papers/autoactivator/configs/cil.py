"""AutoActivator's class-incremental benchmark (experiment `autoactivator/cil`).

Runbook:
    python scripts/run.py --config=jaxml/papers/autoactivator/configs/cil.py --workdir=/tmp/aa_cil        # full
    python scripts/run.py --config=jaxml/papers/autoactivator/configs/cil.py:quick --workdir=/tmp/aa_quick
Hardware: 2 CPU cores (no accelerator needed).
Full (12m59s on 2 CPU cores that test runs shared part of the time, 2026-12-02): Split Fashion-MNIST
5 x 2 classes on pixels and on frozen CNN features (all 60k/10k images; the CNN trained with the loop
on session 1's classes only), and Split digits 10 x 1 class; 3 seeds; AutoActivator and its ablations
(no reactivation, no supervisory check, no connections to existing units), fine-tuning, EWC, replay
(200 stored examples) and joint training (MLP 256, 500 steps of batch 128 a session); a tolerance
sweep (0.02 to 0.0025). Measured final accuracy: pixels 74.1 ± 0.7% (fine-tuning 20.0, EWC 20.0,
replay 61.3, joint 83.4), CNN features 66.6 ± 3.4% (19.9 / 19.9 / 46.6 / 77.4), digits 86.6 ± 4.9%
(10.0 / 10.0 / 93.9 / 94.5); 21 claims, 15 hold.
Quick (47 to 55 s): Fashion-MNIST pixels, 500 / 200 images per class, one seed, 150 steps a session:
AutoActivator 73.95% final (fine-tuning 19.9, EWC 20.0, replay 71.1, joint 76.0).
Tiny (17 s alone): two sessions of 64 images per class (tests and the notebook).
The paper: AutoActivator strong in rehearsal-free, minimal-expansion settings on MNIST,
Fashion-MNIST, CIFAR-100 and ImageNet-R (its tables were not available to us).
All tables: jaxml/papers/autoactivator/README.md.
Keys: seed (unused: `seeds` lists the seeds); `tiny` or `quick`.
"""

import ml_collections

from jaxml.core.config import by_scale, experiment_config
from jaxml.papers.autoactivator.baselines import baseline_config


def get_config(arg=None) -> ml_collections.ConfigDict:
    c, scale = experiment_config("autoactivator/cil", arg)
    c.benchmarks = by_scale(scale, tiny=("fmnist_pixels",), quick=("fmnist_pixels",),
                            full=("fmnist_pixels", "fmnist_cnn", "digits"))
    c.seeds = by_scale(scale, tiny=(0,), quick=(0,), full=(0, 1, 2))
    c.sessions = by_scale(scale, tiny=2, quick=0, full=0)     # 0: every session of the stream
    c.methods = by_scale(scale, tiny=("finetune", "joint"), quick=("finetune", "ewc", "replay", "joint"),
                         full=("finetune", "ewc", "replay", "joint"))
    c.data = ml_collections.ConfigDict(dict(train_per_class=by_scale(scale, tiny=64, quick=500, full=0),
                                            test_per_class=by_scale(scale, tiny=32, quick=200, full=0)))
    # Growth: batches of 10 sigmoid units, 32 candidate batches scored per step at four weight
    # scales, the SCN r schedule, stop at a mean squared residual of 0.01 or 200 units a session.
    c.growth = ml_collections.ConfigDict(dict(
        batch_units=10, candidates=32, scales=(1.0, 2.0, 4.0, 8.0), r_schedule=(0.9, 0.99, 0.999, 0.9999),
        tolerance=0.01, max_units=by_scale(scale, tiny=40, quick=200, full=200), ridge=1e-3, activation="sigmoid",
        shrinkage=0.1, quantile=0.95))
    # digits: one class per session, whose residual is nearly constant; a tighter tolerance.
    c.growth_overrides = ml_collections.ConfigDict({"digits": {"tolerance": 0.0005}})
    # Full only: units against final accuracy as the tolerance varies, with and without the check.
    c.sweep = ml_collections.ConfigDict(dict(
        benchmark="fmnist_pixels", tolerances=by_scale(scale, tiny=(), quick=(), full=(0.02, 0.01, 0.005, 0.0025)),
        seeds=(0,), max_units=400))
    c.baseline = baseline_config(
        hidden=(256,), steps=by_scale(scale, tiny=8, quick=150, full=500), batch_size=by_scale(scale, tiny=32, quick=64, full=128),
        learning_rate=1e-3, ewc_lambda=1000.0, fisher_examples=1000, buffer_size=200)
    # digits: sessions of about 125 images; batch 64, 200 steps (about 100 epochs of a session).
    c.baseline_overrides = ml_collections.ConfigDict({"digits": {"batch_size": 64, "steps": 200}})
    c.backbone = ml_collections.ConfigDict(dict(features=(16, 32), hidden=128, steps=by_scale(scale, tiny=8, quick=200, full=1000),
                                                batch_size=64, learning_rate=1e-3))
    return c
