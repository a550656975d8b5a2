"""Known-alpha validation of the estimator on the real generated corpus (experiment `aitext/validate`).

Runbook:
    python scripts/run.py --config=jaxml/papers/aitext/configs/validate.py --workdir=/tmp/aitext_val
    (2 CPU cores, about 3 min without the log-probability baseline; with `logprob_baseline=True`,
    the default at full scale, SmolLM2 scores the in-distribution pools: add about 10-20 min.)
Metric: mean |alpha_hat - alpha| over alpha in {0, 0.025, ..., 0.25} and trials, per split
(in-distribution Austen, held-out Austen novel, KJV), for the MLE, the CI midpoint and the
instance-level baselines. Paper (ICML version): validation error within a few percent
in-distribution, instance-level detectors much worse (its exact numbers were not available to us).
"""

import ml_collections

from jaxml.core.config import parse_arg, scale_of


def get_config(arg=None) -> ml_collections.ConfigDict:
    arg = parse_arg(arg, tiny=False, quick=False, seed=0)
    c = ml_collections.ConfigDict()
    c.experiment = "aitext/validate"
    c.seed = arg.seed
    c.split_seed = 0                      # must match the generation's (which Austen blocks are test)
    c.generated = "shipped"               # or the path of an aitext/generate cache (generated.jsonl)
    c.vocabularies = ("adjectives", "all")   # WordNet adjectives (the ICML paper) and every word
    c.min_human, c.min_ai = 5, 3          # the reference's count thresholds
    c.alphas = tuple(round(0.025 * i, 3) for i in range(11))
    c.splits = ("test", "shift_novel", "shift_genre")
    c.n_sentences = 1000                  # per validation set
    c.trials = 10                         # validation sets per alpha and split
    c.n_boot = 1000
    c.logprob_baseline = True             # SmolLM2 mean log-probability per sentence, thresholded
    c.logprob_splits = ("test",)          # splits the detector is run on (it scores every pool sentence)
    c.logprob_calibration = 300           # fit sentences of each kind used to pick its threshold
    c.max_human_pool = 2000               # human sentences kept per validation split (the scored pool)
    scale = scale_of(arg)
    if scale == "quick":
        c.trials, c.logprob_baseline = 3, False
    if scale == "tiny":
        c.vocabularies, c.alphas, c.splits = ("adjectives",), (0.0, 0.1, 0.2), ("test",)
        c.n_sentences, c.trials, c.n_boot, c.logprob_baseline = 200, 1, 200, False
    return c
