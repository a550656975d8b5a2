"""Shared settings of the LQER configs: the model, the evaluation text, calibration, the window.

    c, scale = experiment_config("lqer/perplexity", arg)
    common.add_shared(c, scale)
"""

from jaxml.core.config import by_scale


def add_shared(c, scale: str):
    """Sets the keys every LQER experiment reads (`config.scale` decides whether verdicts are
    comparable: a tiny run is a smoke test on a truncated model)."""
    c.scale = scale
    # tiny: the first two decoder layers of SmolLM2 only (seconds, not minutes; meaningless perplexities)
    c.decoder_layers = by_scale(scale, tiny=2, quick=0, full=0)
    c.eval_chapters = by_scale(scale, tiny=1, quick=1, full=2)    # chapters of the held-out novel (Persuasion)
    # quick: one window of 512 (511 targets); full: all 5,822 tokens of chapters 1-2 with windows
    # of 512 every 256 (each target after the first window sees >= 256 tokens of context)
    c.eval_tokens = by_scale(scale, tiny=64, quick=512, full=-1)   # -1: every token of those chapters
    c.context = by_scale(scale, tiny=64, quick=512, full=512)
    c.stride = by_scale(scale, tiny=32, quick=511, full=256)
    c.eval_batch = by_scale(scale, tiny=2, quick=1, full=4)
    c.calib_sequences = by_scale(scale, tiny=2, quick=4, full=32)
    c.calib_length = by_scale(scale, tiny=32, quick=256, full=256)
    c.calib_batch = by_scale(scale, tiny=2, quick=4, full=8)
    # name prefixes of the kernels to quantize; () = all of them (tiny: the 7 of the first layer)
    c.layers = by_scale(scale, tiny=("layers_0/",), quick=(), full=())
    # W?A8 models are evaluated with A, B zero-padded to this rank: one compiled program for all ranks
    c.pad_rank = by_scale(scale, tiny=8, quick=32, full=64)
    return c
