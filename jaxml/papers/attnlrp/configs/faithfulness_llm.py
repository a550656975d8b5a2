"""Perturbation faithfulness on SmolLM2-135M-Instruct (experiment `attnlrp/faithfulness_llm`).

Runbook:
    python scripts/run.py --config=jaxml/papers/attnlrp/configs/faithfulness_llm.py --workdir=/tmp/attnlrp_llm
The paper's protocol (LXT issue #40) with SmolLM2's start-of-text in front of every prefix (the
paper's LLaMA-2 `<s>`, never removed): explain the greedy next token, remove the most (MoRF) or
least (LeRF) relevant tokens first in 5 steps, record the target logit; area between the curves.
Each explanation is measured under two replacement values: the zero embedding (the paper's; it is
also IG's baseline and KernelSHAP's removal) and the held-out corpus mean (nobody's baseline).
Variants: `:tiny` (SmolLM2 cut to 2 layers, 4 Shakespeare prefixes in 2 batches, the headline
methods, IG-4: a smoke test), `:quick` (the full model on 96 prefixes in 3 batches, the headline
methods, IG-4, the mean replacement only: 1m04s on 2 quiet CPU cores, AttnLRP minus Gradient x
Input +1.87 +- 0.37 and minus random +0.94 +- 0.34, minus IG-4 +0.24 +- 0.40; the cost claim from
warm calls of this run), default (1,000 prefixes, all nine methods, IG-16, SmoothGrad-8,
KernelSHAP with 48 coalitions: the BOS half of `configs/protocol.py`, whose stored batches it
reuses when run in the same workdir). Numbers
and times: jaxml/papers/attnlrp/README.md.
"""

from jaxml.core.config import by_scale, experiment_config

ALL_METHODS = ("attnlrp", "cp_lrp", "gradient_x_input", "integrated_gradients", "smoothgrad",
               "attention_rollout", "atman", "kernel_shap", "random")
# What the headline claim needs: AttnLRP (first: the reference) against Gradient x Input, IG and random.
HEADLINE_METHODS = ("attnlrp", "gradient_x_input", "integrated_gradients", "random")


def get_config(arg=None):
    c, scale = experiment_config("attnlrp/faithfulness_llm", arg)
    c.corpora = by_scale(scale, tiny=("shakespeare",), quick=("austen", "shakespeare"), full=("austen", "shakespeare"))
    c.model_layers = by_scale(scale, tiny=2, quick=0, full=0)     # 0: all 30 blocks
    c.num_examples = by_scale(scale, tiny=4, quick=96, full=1000)
    c.length = 16                 # prefixes (8-15 tokens after the BOS) are left-padded to this many tokens
    c.min_tokens = 8
    c.batch_size = by_scale(scale, tiny=2, quick=32, full=16)
    c.steps = 5                   # fractions 0, 1/4, ..., 1 of the removable tokens removed
    c.curve_chunk = by_scale(scale, tiny=32, quick=104, full=72)   # perturbed inputs per forward pass
    c.protect_first = False       # True: never remove a prefix's first removable token
    c.bos = True                  # SmolLM2's start-of-text in front of every prefix, never removed (the paper's <s>)
    # what a removed token's embedding becomes, each measured on the same explanations: 'zero' or 'mean'
    # (the held-out corpus mean); the metrics of the first are unprefixed, the others' '<value>/...'
    c.replacements = by_scale(scale, tiny=("zero", "mean"), quick=("mean",), full=("zero", "mean"))
    c.atman_suppression = 0.9     # AtMan's factor: scores to the suppressed token times (1 - 0.9)
    c.shap_budget = by_scale(scale, tiny=16, quick=48, full=48)   # KernelSHAP coalitions (+2 forward passes)
    # tiny and quick: the headline methods (the other baselines' dispatch: tests/papers/attnlrp/baselines_test.py)
    c.methods = by_scale(scale, tiny=HEADLINE_METHODS, quick=HEADLINE_METHODS, full=ALL_METHODS)
    c.ig_steps = by_scale(scale, tiny=4, quick=4, full=16)
    c.ig_chunk = by_scale(scale, tiny=1, quick=1, full=8)    # 1: reuse the plain gradient program
    c.smoothgrad_samples = by_scale(scale, tiny=4, quick=8, full=8)
    c.smoothgrad_noise = 0.1
    c.heatmaps = by_scale(scale, tiny=2, quick=8, full=8)
    # The cost claim from warm calls of this run (quick: the `cost` part is not run).
    c.cost_claim = by_scale(scale, tiny=True, quick=True, full=False)
    c.cost_repeats = by_scale(scale, tiny=1, quick=1, full=3)
    return c
