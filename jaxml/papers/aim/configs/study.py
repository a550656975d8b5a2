"""AIM's loss-accuracy study on Fashion-MNIST (experiment `aim/study`).

Runbook:
    python scripts/run.py --config=jaxml/papers/aim/configs/study.py --workdir=/tmp/aim_study        # full
    python scripts/run.py --config=jaxml/papers/aim/configs/study.py:quick --workdir=/tmp/aim_quick
Hardware: 2 CPU cores (no accelerator needed).
Full (51 min on 2 CPU cores that test runs shared part of the time, 2026-12-02): three sizes (d = 32/64/96, 4 blocks, patch 4, 49
patches per image) pretrained for 1000 steps of batch 128 on the 60k training images, four checkpoints
each, the four ablations at size S, a supervised ViT of size S and random trunks; attentive and linear
probes on 10k/10k images, 2 probe seeds. Measured: Pearson r = -0.920 (Spearman -0.937) of validation
loss and attentive-probe accuracy over the 12 (size, checkpoint) points; final attentive accuracy
79.8 / 82.2 / 83.0% vs random trunks 74.9 / 77.6 / 78.4%.
Quick (55 s to 1m17s over three runs): one size (d = 32, 2 blocks), 600 steps of batch 64, three checkpoints, probes on 2k/2k
images, one seed: r = -0.972 over 3 points, 72.1% vs random 68.1%. Tiny: seconds (tests, notebook).
The paper: a strong loss-accuracy correlation (Fig. 4) and IN-1k attentive-probe top-1 of 78.5-84.0 at
0.6B-7B. All tables: jaxml/papers/aim/README.md.
Keys: seed; `tiny` or `quick`; model_axis (devices on the `model` mesh axis, default 1).
"""

import ml_collections

from jaxml.core.config import by_scale, experiment_config


def get_config(arg=None) -> ml_collections.ConfigDict:
    c, scale = experiment_config("aim/study", arg, model_axis=1)
    c.patch_size = 4
    c.sizes = ml_collections.ConfigDict(by_scale(
        scale,
        tiny={"S": dict(hidden=16, layers=1, heads=2)},
        quick={"S": dict(hidden=32, layers=2, heads=2)},
        full={"S": dict(hidden=32, layers=4, heads=2), "M": dict(hidden=64, layers=4, heads=4),
              "L": dict(hidden=96, layers=4, heads=4)}))
    c.ablation_size = "S"
    c.ablations = by_scale(scale, tiny=(), quick=(), full=("causal", "raw", "head0", "head4"))
    c.supervised = scale == "full"
    c.data = ml_collections.ConfigDict(by_scale(
        scale,
        tiny=dict(pretrain_examples=512, val_examples=64, probe_train_examples=256, probe_test_examples=128),
        quick=dict(pretrain_examples=60000, val_examples=1000, probe_train_examples=2000, probe_test_examples=2000),
        full=dict(pretrain_examples=60000, val_examples=5000, probe_train_examples=10000,
                  probe_test_examples=10000)))
    # The anchors' optimiser: AdamW (0.9, 0.95), lr 1e-3, weight decay 0.05, clip 1.0, 2.5% warm-up
    # then cosine to 0.
    c.pretrain = ml_collections.ConfigDict(dict(
        steps=by_scale(scale, tiny=8, quick=600, full=1000), batch_size=by_scale(scale, tiny=32, quick=64, full=128),
        eval_batch_size=by_scale(scale, tiny=64, quick=1000, full=1000), learning_rate=1e-3, weight_decay=0.05,
        warmup_fraction=0.025, checkpoints=by_scale(scale, tiny=2, quick=3, full=4)))
    # Probes: AdamW, lr 3e-2, cosine, 15 epochs (full); features averaged over the last 2 blocks.
    # Chosen on a first run (size S, 600 steps; probes on 5k/5k images, attentive AIM / random):
    # lr 1e-3 x 10 epochs 59.2 / 45.9, 1e-2 x 10 71.3 / 65.5, 1e-2 x 30 74.3 / 70.8,
    # 3e-2 x 10 73.0 / 70.0, 3e-2 x 30 75.2 / 71.9: still rising; 15 epochs is the CPU budget.
    c.probe = ml_collections.ConfigDict(dict(
        last_k=by_scale(scale, tiny=1, quick=2, full=2), heads=by_scale(scale, tiny=2, quick=2, full=4), seeds=by_scale(scale, tiny=1, quick=1, full=2),
        epochs=by_scale(scale, tiny=1, quick=15, full=15), batch_size=by_scale(scale, tiny=32, quick=128, full=256),
        eval_batch_size=by_scale(scale, tiny=64, quick=1000, full=1000), learning_rate=3e-2, weight_decay=0.05))
    return c
