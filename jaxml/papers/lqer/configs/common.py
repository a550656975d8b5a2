"""Shared settings of the LQER configs (evaluation text, calibration, perplexity window)."""

import ml_collections


def base(scale: str, seed: int = 0) -> ml_collections.ConfigDict:
    c = ml_collections.ConfigDict()
    c.seed = seed
    c.eval_chapters = 2            # chapters of the held-out novel (Persuasion)
    c.eval_tokens = -1             # -1: all tokens of those chapters
    c.context = 512
    c.stride = 256
    c.eval_batch = 4
    c.calib_sequences = 32
    c.calib_length = 256
    c.calib_batch = 8
    c.layers = ()                  # name prefixes of the kernels to quantize; () = all 210
    if scale == "quick":
        c.eval_chapters, c.eval_tokens = 1, 1536
        c.calib_sequences = 16
    if scale == "tiny":
        c.eval_chapters, c.eval_tokens, c.context, c.stride = 1, 160, 64, 32
        c.calib_sequences, c.calib_length, c.calib_batch = 2, 32, 2
        c.layers = ("layers_0/", "layers_1/")   # seconds, not minutes: 14 of the 210 kernels
    return c
