"""Patch-perturbation faithfulness on a Fashion-MNIST ViT (experiment `attnlrp/faithfulness_vit`).

Runbook:
    python scripts/run.py --config=jaxml/papers/attnlrp/configs/faithfulness_vit.py --workdir=/tmp/attnlrp_vit
    # reuse a trained ViT: --config.vit_workdir=/tmp/vit_full (a finished examples/fashion_mnist_vit run)
Variants: `:tiny` (tiny ViT, 8 images), `:quick` (the quick ViT, 64 images), default (the full ViT,
200 images). Numbers: jaxml/papers/attnlrp/README.md.
"""

import ml_collections

from jaxml.core.config import parse_arg, scale_of


def get_config(arg=None) -> ml_collections.ConfigDict:
    arg = parse_arg(arg, tiny=False, quick=False, seed=0)
    scale = scale_of(arg)
    c = ml_collections.ConfigDict()
    c.experiment = "attnlrp/faithfulness_vit"
    c.seed = arg.seed
    c.vit_scale = scale            # the examples/fashion_mnist_vit config variant to train
    c.vit_workdir = ""             # a finished ViT run to reuse instead of training one
    c.num_examples = {"tiny": 8, "quick": 64, "full": 200}[scale]
    c.batch_size = {"tiny": 8, "quick": 32, "full": 40}[scale]
    c.steps = 9
    c.gamma = 0.1
    c.methods = ("attnlrp_gamma", "attnlrp", "cp_lrp_gamma", "gradient_x_input", "integrated_gradients",
                 "smoothgrad", "random")
    c.ig_steps = 32
    c.smoothgrad_samples = 16
    c.smoothgrad_noise = 0.1
    c.heatmaps = 8
    if scale == "tiny":
        c.methods = ("attnlrp_gamma", "gradient_x_input", "random")
        c.steps = 5
        c.heatmaps = 4
    return c
