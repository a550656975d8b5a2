"""Patch-perturbation faithfulness on a Fashion-MNIST ViT (experiment `attnlrp/faithfulness_vit`).

Runbook:
    python scripts/run.py --config=jaxml/papers/attnlrp/configs/faithfulness_vit.py --workdir=/tmp/attnlrp_vit
    # reuse a trained ViT: --config.vit_workdir=/tmp/vit_full (a finished examples/fashion_mnist_vit run)
Variants: `:tiny` (the tiny ViT untrained, 8 images), `:quick` (the quick ViT, 64
images), default (the full ViT, 200 images). Numbers: jaxml/papers/attnlrp/README.md.
"""

from jaxml.core.config import by_scale, experiment_config

ALL_METHODS = ("attnlrp_gamma", "attnlrp", "cp_lrp_gamma", "gradient_x_input", "integrated_gradients",
               "smoothgrad", "random")


def get_config(arg=None):
    c, scale = experiment_config("attnlrp/faithfulness_vit", arg)
    c.vit_scale = scale            # the examples/fashion_mnist_vit config variant to train
    # Overrides of that config: at tiny, 10 steps with one evaluation and one checkpoint.
    c.vit_overrides = by_scale(scale, tiny=("num_steps=10", "eval_every_steps=10", "checkpoint_every_steps=10"),
                               quick=(), full=())
    c.vit_workdir = ""             # a finished ViT run to reuse instead of training one
    # tiny: explain the untrained ViT (no training, no training data read): a smoke test of the
    # explanations; tests/papers/attnlrp/experiments_slow_test.py runs the tiny config with training.
    c.train_vit = by_scale(scale, tiny=False, quick=True, full=True)
    c.num_examples = by_scale(scale, tiny=8, quick=64, full=200)
    c.batch_size = by_scale(scale, tiny=8, quick=32, full=40)
    c.steps = by_scale(scale, tiny=5, quick=9, full=9)
    c.curve_chunk = by_scale(scale, tiny=40, quick=288, full=360)
    c.gamma = 0.1
    # tiny: the gamma rule against random (the gradient baselines run in the tiny LLM and MiniLM
    # configs through the same `explain_scores`)
    c.methods = by_scale(scale, tiny=("attnlrp_gamma", "random"), quick=ALL_METHODS, full=ALL_METHODS)
    c.ig_steps = by_scale(scale, tiny=4, quick=32, full=32)
    c.ig_chunk = by_scale(scale, tiny=4, quick=8, full=8)
    c.smoothgrad_samples = by_scale(scale, tiny=4, quick=16, full=16)
    c.smoothgrad_noise = 0.1
    c.heatmaps = by_scale(scale, tiny=4, quick=8, full=8)
    return c
