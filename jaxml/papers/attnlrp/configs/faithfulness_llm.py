"""Perturbation faithfulness on SmolLM2-135M-Instruct (experiment `attnlrp/faithfulness_llm`).

Runbook:
    python scripts/run.py --config=jaxml/papers/attnlrp/configs/faithfulness_llm.py --workdir=/tmp/attnlrp_llm
Variants: `:tiny` (SmolLM2 cut to 2 layers, 4 Shakespeare examples in 2 batches, the headline
methods, IG-4: a smoke test of the code paths), `:quick` (the full model on 16 examples in 2
batches, the headline methods only, 5 perturbation steps, IG-8; the cost claim from warm calls of
this run), default (200 examples, all methods, 9 steps, IG-32). Numbers and times:
jaxml/papers/attnlrp/README.md.
"""

from jaxml.core.config import by_scale, experiment_config

ALL_METHODS = ("attnlrp", "cp_lrp", "gradient_x_input", "integrated_gradients", "smoothgrad",
               "attention_rollout", "random")
# What the headline claim needs: AttnLRP (first: the reference) against Gradient x Input, IG and random.
HEADLINE_METHODS = ("attnlrp", "gradient_x_input", "integrated_gradients", "random")


def get_config(arg=None):
    c, scale = experiment_config("attnlrp/faithfulness_llm", arg)
    c.corpora = by_scale(scale, tiny=("shakespeare",), quick=("austen", "shakespeare"), full=("austen", "shakespeare"))
    c.model_layers = by_scale(scale, tiny=2, quick=0, full=0)     # 0: all 30 blocks
    c.num_examples = by_scale(scale, tiny=4, quick=16, full=200)
    c.length = 24                 # prefixes are left-padded to this many tokens
    c.min_tokens = 8
    c.batch_size = by_scale(scale, tiny=2, quick=8, full=8)
    c.steps = by_scale(scale, tiny=5, quick=5, full=9)     # fractions 0, 1/(steps-1), ..., 1 of the tokens zeroed
    c.curve_chunk = by_scale(scale, tiny=32, quick=104, full=72)   # perturbed inputs per forward pass
    c.protect_first = False       # True: never zero a prefix's first token (the attention sink)
    c.bos = False                 # True: SmolLM2's start-of-text in front of every prefix, never removed (the paper's <s>)
    # what a removed token's embedding becomes, each measured on the same explanations: 'zero' or 'mean'
    # (the held-out corpus mean); the metrics of the first are unprefixed, the others' '<value>/...'
    c.replacements = ("zero",)
    c.atman_suppression = 0.9     # AtMan's factor: scores to the suppressed token times (1 - 0.9)
    c.shap_budget = by_scale(scale, tiny=16, quick=64, full=128)   # KernelSHAP coalitions (forward passes) per example
    # tiny: the headline methods (the other baselines' dispatch: tests/papers/attnlrp/baselines_test.py)
    c.methods = by_scale(scale, tiny=HEADLINE_METHODS, quick=HEADLINE_METHODS, full=ALL_METHODS)
    c.ig_steps = by_scale(scale, tiny=4, quick=8, full=32)
    c.ig_chunk = by_scale(scale, tiny=1, quick=1, full=8)    # 1: reuse the plain gradient program
    c.smoothgrad_samples = by_scale(scale, tiny=4, quick=16, full=16)
    c.smoothgrad_noise = 0.1
    c.heatmaps = by_scale(scale, tiny=2, quick=8, full=8)
    # The cost claim from warm calls of this run (quick: the `cost` part is not run).
    c.cost_claim = by_scale(scale, tiny=True, quick=True, full=False)
    c.cost_repeats = by_scale(scale, tiny=1, quick=1, full=3)
    return c
