"""Slot Abstractors stage 1 (experiment `slotabs/autoencoder`): pretrain the slot autoencoder on
panels of ART's four tasks over all 100 shapes and compare its held-out reconstruction error with
the mean image's.

Runbook:
    python scripts/run.py --config=jaxml/papers/slotabs/configs/autoencoder.py:quick --workdir=/tmp/slotabs_ae
    python scripts/run.py --config=jaxml/papers/slotabs/configs/autoencoder.py --workdir=/tmp/slotabs_ae_full
Hardware: 2 CPU cores. Metric: test MSE / mean-image MSE (below 1: the slots carry the objects).
The paper gives no number for this stage (it pretrains and freezes the autoencoder).
Measured (2026-12-02): full 6000 steps in 11m09s, test MSE 0.0213 against the mean image's 0.0735
(slot binding 0.25, ink share 0.13); quick 400 steps, 0.0605 against 0.0737. Tiny: seconds,
plumbing only. More in jaxml/papers/slotabs/README.md.
"""

import ml_collections

from jaxml.core.config import by_scale, experiment_config


def autoencoder_block(scale: str) -> ml_collections.ConfigDict:
    """The slot autoencoder's size at `scale`: 7 slots (up to 6 objects and the background), the
    encoder strided and the decoder at a quarter of the resolution for CPU (see slot_attention.py)."""
    return ml_collections.ConfigDict(dict(
        num_slots=7, dim=by_scale(scale, tiny=8, quick=32, full=32), iters=by_scale(scale, tiny=1, quick=3, full=3),
        encoder_strides=(2, 2, 1, 1), decode_factor=4, decoder_dim=by_scale(scale, tiny=8, quick=16, full=32),
        decoder_kernel=3, slot_init="learned", broadcast=16, decoder_layers=3, target_pool="max", panels=by_scale(scale, tiny=64, quick=1000, full=8000),
        test_panels=by_scale(scale, tiny=32, quick=256, full=512), steps=by_scale(scale, tiny=4, quick=400, full=6000),
        batch_size=16, learning_rate=by_scale(scale, tiny=3e-3, quick=3e-3, full=1e-3), seed=0))


def get_config(arg=None) -> ml_collections.ConfigDict:
    c, scale = experiment_config("slotabs/autoencoder", arg)
    c.autoencoder = autoencoder_block(scale)
    return c
