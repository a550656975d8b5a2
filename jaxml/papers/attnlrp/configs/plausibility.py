"""Plausibility with a known answer on SmolLM2-135M (experiment `attnlrp/plausibility`).

Runbook:
    python scripts/run.py --config=jaxml/papers/attnlrp/configs/plausibility.py --workdir=/tmp/attnlrp_plausibility
A fact ("The password is violet.") planted in a held-out passage and asked about at the end; for
the examples the model answers correctly, the share whose most relevant token lies in the planted
value, per method. Numbers and times: jaxml/papers/attnlrp/README.md.
"""

from jaxml.core.config import by_scale, experiment_config


def get_config(arg=None):
    c, scale = experiment_config("attnlrp/plausibility", arg)
    c.model_layers = by_scale(scale, tiny=2, quick=0, full=0)
    c.corpora = ("austen", "shakespeare")
    c.num_examples = by_scale(scale, tiny=4, quick=16, full=300)
    c.length = 64
    c.context_sentences = 2       # held-out sentences around the planted one
    # explain only the examples the model answers (the paper's measure); tiny: all (its cut model never answers)
    c.only_correct = by_scale(scale, tiny=False, quick=True, full=True)
    c.batch_size = by_scale(scale, tiny=2, quick=8, full=8)
    c.methods = by_scale(scale, tiny=("attnlrp", "gradient_x_input", "random"),
                         quick=("attnlrp", "gradient_x_input", "integrated_gradients", "random"),
                         full=("attnlrp", "cp_lrp", "gradient_x_input", "integrated_gradients", "smoothgrad",
                               "attention_rollout", "atman", "kernel_shap", "random"))
    # the budgets of the protocol's full run (configs/protocol.py)
    c.ig_steps = by_scale(scale, tiny=4, quick=8, full=16)
    c.ig_chunk = by_scale(scale, tiny=1, quick=1, full=8)
    c.smoothgrad_samples = 8
    c.smoothgrad_noise = 0.1
    c.atman_suppression = 0.9
    c.shap_budget = 48
    c.curve_chunk = 72            # rows per forward pass (KernelSHAP's coalitions)
    return c
