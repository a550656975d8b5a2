"""Known-alpha validation of the estimator on the real generated corpus (experiment `aitext/validate`).

Runbook:
    python scripts/run.py --config=jaxml/papers/aitext/configs/validate.py --workdir=/tmp/aitext_val
    (2 CPU cores: 7m20s of CPU, 38m34s of wall time at load 8-12 with `logprob_baseline=True`, the
    default at full scale, where SmolLM2 scores the in-distribution pools, most of the time; quick,
    without it: 21.3 s wall, 18.8 s of CPU, on the 2 cores at load 2.7.)
Metric: mean |alpha_hat - alpha| over alpha in {0, 0.025, ..., 0.25} and trials, per split
(in-distribution Austen, held-out Austen novel, KJV), for the MLE, the CI midpoint and the
instance-level baselines, and the 95% interval's coverage, per vocabulary (WordNet adjective list,
adjectives tagged in context, all words; the same sets and bootstrap seeds for each). Full scale:
in-distribution error 0.0102 / 0.0311 / 0.0059, coverage 99% / 64% / 100%. Paper (ICML version): validation error within a few percent
in-distribution, instance-level detectors much worse (its exact numbers were not available to us).
"""

import ml_collections

from jaxml.core.config import by_scale, experiment_config


def get_config(arg=None) -> ml_collections.ConfigDict:
    c, scale = experiment_config("aitext/validate", arg)
    c.scale = scale                       # tiny runs give no verdicts
    c.split_seed = 0                      # must match the generation's (which Austen blocks are test)
    c.generated = "shipped"               # or the path of an aitext/generate cache (generated.jsonl)
    # WordNet adjective lemmas (a word list), adjectives tagged in context by TextBlob's Pattern tagger
    # (the ICML paper counts adjective occurrences; jaxml/papers/aitext/pos.py), and every word
    c.vocabularies = by_scale(scale, tiny=("adjectives",), quick=("adjectives", "pos", "all"),
                              full=("adjectives", "pos", "all"))
    c.min_human, c.min_ai = 5, 3          # the reference's count thresholds
    full_alphas = tuple(round(0.025 * i, 3) for i in range(11))
    c.alphas = by_scale(scale, tiny=(0.0, 0.1, 0.2), quick=full_alphas, full=full_alphas)
    all_splits = ("test", "shift_novel", "shift_genre")
    c.splits = by_scale(scale, tiny=("test",), quick=all_splits, full=all_splits)
    c.n_sentences = by_scale(scale, tiny=200, quick=1000, full=1000)    # per validation set
    c.trials = by_scale(scale, tiny=1, quick=3, full=10)                # validation sets per alpha and split
    c.n_boot = by_scale(scale, tiny=200, quick=1000, full=1000)
    # SmolLM2 mean log-probability per sentence, thresholded (scores every pool sentence: full only)
    c.logprob_baseline = by_scale(scale, tiny=False, quick=False, full=True)
    c.logprob_splits = ("test",)          # splits the detector is run on
    c.logprob_calibration = 300           # fit sentences of each kind used to pick its threshold
    c.max_human_pool = 2000               # human sentences kept per validation split (the scored pool)
    return c
