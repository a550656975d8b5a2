"""LQER and the baselines on a real float32 model: all-MiniLM-L6-v2 sentence embeddings
(experiment `lqer/minilm`).

Runbook:
    python scripts/run.py --config=jaxml/papers/lqer/configs/minilm.py --workdir=/tmp/lqer_minilm
Variants: `:tiny` (MiniLM cut to 2 layers, 8 calibration and 16 evaluation sentences, MXINT and
L2QER at W4 only: a smoke test), `:quick` (all 6 layers, 32 calibration and 128 evaluation sentences, FP/MXINT/LQER/
L2QER at W4 and W3, k = 8 and 32), default (128 calibration and 512 evaluation sentences, every
method at W4 and W3, LQER and L2QER at k = 8, 16, 32, 64, MXINT and L2QER also weight-only, and
float32 weights with MXINT8 activations); `:split` (full scale, only FP, MXINT W?A8, MXINT W?A16
and the A8-only row: which of weights and activations costs what).
Calibration: sentences of Shakespeare's training plays; evaluation: sentences of the held-out Austen
novel (Persuasion), disjoint documents. Metrics against the float32 model: mean cosine of the
sentence embeddings, Spearman correlation of the pairwise similarities, top-1 and recall@10 of
the nearest neighbours. Default on 2 CPU cores under a load average of about 8 from other jobs:
11m51s wall, 237 s user; quick 1m39s wall, 41 s user (load about 9). W4A8 k=32 against float32: L2QER cosine 0.974,
Spearman 0.981, top-1 0.756; LQER 0.954 / 0.969; MXINT 0.944 / 0.963; GPTQ W4A16 0.988 / 0.990.
Tables: jaxml/papers/lqer/README.md ("MiniLM-L6"). The paper (LLaMA/OPT perplexity, not embeddings)
calls W4A8 L2QER near-lossless (+1.3-3.9%).
"""

from jaxml.core.config import by_scale, experiment_config


def get_config(arg=None):
    c, scale = experiment_config("lqer/minilm", arg, split=False)
    c.scale = scale
    c.model_layers = by_scale(scale, tiny=2, quick=0, full=0)          # 0: all 6 layers
    c.calib_corpus, c.eval_corpus = "shakespeare", "austen"             # training plays / held-out novel
    c.calib_sentences = by_scale(scale, tiny=8, quick=32, full=128)
    c.eval_sentences = by_scale(scale, tiny=16, quick=128, full=512)
    c.min_words, c.max_words = 6, 40
    c.max_tokens = 64                  # longer sentences are truncated (with [CLS] and [SEP])
    c.batch = by_scale(scale, tiny=16, quick=32, full=64)
    c.k = by_scale(scale, tiny=4, quick=10, full=10)                    # recall@k of the nearest neighbours
    c.bits = by_scale(scale, tiny=(4,), quick=(4, 3), full=(4, 3))
    c.methods = by_scale(scale, tiny=("fp", "mxint", "l2qer"), quick=("fp", "mxint", "lqer", "l2qer"),
                         full=("fp", "rtn", "gptq", "awq", "mxint", "lqer", "l2qer"))
    c.ranks = by_scale(scale, tiny=(8,), quick=(8, 32), full=(8, 16, 32, 64))
    c.rank = by_scale(scale, tiny=8, quick=32, full=32)                 # the table's rank (one of `ranks`)
    # methods also evaluated with float activations (W?A16; their weights and A, B as at W?A8)
    c.weight_only = by_scale(scale, tiny=(), quick=(), full=("mxint", "l2qer"))
    # a row with float32 weights and MXINT8 activations (what A8 alone costs)
    c.activation_only = by_scale(scale, tiny=False, quick=False, full=True)
    if c.split:    # `:split`: only the rows that separate the weight error from the activation error
        c.methods, c.weight_only, c.activation_only = ("fp", "mxint"), ("mxint",), True
    return c
