"""Perturbation faithfulness for all-MiniLM-L6-v2 sentence similarity (`attnlrp/faithfulness_minilm`).

Runbook:
    python scripts/run.py --config=jaxml/papers/attnlrp/configs/faithfulness_minilm.py --workdir=/tmp/attnlrp_minilm
Variants: `:tiny` (4 pairs), `:quick` (16 pairs), default (100 pairs). Numbers: the paper's README.
"""

import ml_collections

from jaxml.core.config import parse_arg, scale_of


def get_config(arg=None) -> ml_collections.ConfigDict:
    arg = parse_arg(arg, tiny=False, quick=False, seed=0)
    scale = scale_of(arg)
    c = ml_collections.ConfigDict()
    c.experiment = "attnlrp/faithfulness_minilm"
    c.seed = arg.seed
    c.num_examples = {"tiny": 4, "quick": 16, "full": 100}[scale]
    c.length = 64
    c.batch_size = {"tiny": 4, "quick": 16, "full": 20}[scale]
    c.steps = 9
    c.methods = ("attnlrp", "cp_lrp", "gradient_x_input", "integrated_gradients", "smoothgrad", "random")
    c.ig_steps = 32
    c.smoothgrad_samples = 16
    c.smoothgrad_noise = 0.1
    c.heatmaps = 6
    if scale == "tiny":
        c.methods = ("attnlrp", "gradient_x_input", "random")
        c.steps = 5
        c.heatmaps = 2
    return c
