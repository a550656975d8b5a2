"""Perturbation faithfulness for all-MiniLM-L6-v2 sentence similarity (`attnlrp/faithfulness_minilm`).

Runbook:
    python scripts/run.py --config=jaxml/papers/attnlrp/configs/faithfulness_minilm.py --workdir=/tmp/attnlrp_minilm
Variants: `:tiny` (MiniLM cut to 2 layers, 4 Shakespeare pairs, 32 tokens), `:quick` (32 pairs of sentences of at most 20
words, 32 tokens, the headline methods, 5 perturbation steps, IG-8), default (100 pairs, all methods, 9 steps, IG-32). Numbers:
the paper's README.
"""

from jaxml.core.config import by_scale, experiment_config

ALL_METHODS = ("attnlrp", "cp_lrp", "gradient_x_input", "integrated_gradients", "smoothgrad", "random")
HEADLINE_METHODS = ("attnlrp", "gradient_x_input", "integrated_gradients", "random")


def get_config(arg=None):
    c, scale = experiment_config("attnlrp/faithfulness_minilm", arg)
    c.model_layers = by_scale(scale, tiny=2, quick=0, full=0)     # 0: all 6 layers
    c.corpus = by_scale(scale, tiny="shakespeare", quick="austen", full="austen")   # held-out sentence pairs
    c.num_examples = by_scale(scale, tiny=4, quick=32, full=100)
    c.max_words = by_scale(scale, tiny=40, quick=20, full=40)    # sentences of 6 to max_words words
    c.length = by_scale(scale, tiny=32, quick=32, full=64)
    c.batch_size = by_scale(scale, tiny=4, quick=32, full=20)
    c.steps = by_scale(scale, tiny=5, quick=5, full=9)
    c.curve_chunk = by_scale(scale, tiny=20, quick=208, full=180)
    c.methods = by_scale(scale, tiny=HEADLINE_METHODS, quick=HEADLINE_METHODS, full=ALL_METHODS)
    c.ig_steps = by_scale(scale, tiny=4, quick=8, full=32)
    c.ig_chunk = by_scale(scale, tiny=1, quick=1, full=8)    # 1: reuse the plain gradient program
    c.smoothgrad_samples = by_scale(scale, tiny=4, quick=16, full=16)
    c.smoothgrad_noise = 0.1
    c.heatmaps = by_scale(scale, tiny=2, quick=6, full=6)
    return c
