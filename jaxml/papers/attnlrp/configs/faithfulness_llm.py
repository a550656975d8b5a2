"""Perturbation faithfulness on SmolLM2-135M-Instruct (experiment `attnlrp/faithfulness_llm`).

Runbook:
    python scripts/run.py --config=jaxml/papers/attnlrp/configs/faithfulness_llm.py --workdir=/tmp/attnlrp_llm
Variants: `:tiny` (4 examples, 3 methods), `:quick` (16 examples), default (200 examples, all
methods). Measured numbers and times: jaxml/papers/attnlrp/README.md.
"""

import ml_collections

from jaxml.core.config import parse_arg, scale_of


def get_config(arg=None) -> ml_collections.ConfigDict:
    arg = parse_arg(arg, tiny=False, quick=False, seed=0)
    scale = scale_of(arg)
    c = ml_collections.ConfigDict()
    c.experiment = "attnlrp/faithfulness_llm"
    c.seed = arg.seed
    c.corpora = ("austen", "shakespeare")
    c.num_examples = {"tiny": 4, "quick": 16, "full": 200}[scale]
    c.length = 24                 # prefixes are left-padded to this many tokens
    c.min_tokens = 8
    c.batch_size = 8
    c.steps = 9                   # fractions 0, 1/8, ..., 1 of the tokens zeroed
    c.protect_first = False       # True: never zero a prefix's first token (the attention sink)
    c.methods = ("attnlrp", "cp_lrp", "gradient_x_input", "integrated_gradients", "smoothgrad",
                 "attention_rollout", "random")
    c.ig_steps = 32
    c.smoothgrad_samples = 16
    c.smoothgrad_noise = 0.1
    c.heatmaps = 8
    if scale == "tiny":
        c.batch_size = 4
        c.methods = ("attnlrp", "gradient_x_input", "random")
        c.steps = 5
        c.heatmaps = 2
    return c
