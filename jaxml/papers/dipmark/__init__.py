"""DiPmark: a distribution-preserving, accessible, resilient watermark for LLM text (Wu et al., ICML
2024), with the KGW soft watermark as the baseline.

    from jaxml.papers import dipmark
    wm = dipmark.dipmark(key=42, vocab_size=49152, alpha=0.45)    # a logits processor
    out = generate(model, params, prompts, max_new_tokens=200, sampling=SamplingOptions(temperature=1.0),
                   logits_processor=wm)
    scores = dipmark.Detector(key=42, vocab_size=49152).score(out.sequences())
    scores.p_value[:, scores.column(0.5)]                          # Hoeffding p at gamma = 0.5

The release's permutation family and rules are one switch away: `mode="official"` on `dipmark`,
`kgw`, `Watermark` and `Detector`, sampled with `official.sampling_options()` (top-k 50 before the
reweight); see `official.py`.
"""

from jaxml.papers.dipmark import experiments  # noqa: F401  (registers the experiments)
from jaxml.papers.dipmark import official
from jaxml.papers.dipmark.detect import (GAMMAS, HOEFFDING_THRESHOLD_1PCT, Detector, Scores, statistics,
                                         substitute)
from jaxml.papers.dipmark.keys import as_key_bytes, context_seed_reference, context_seeds, sha256_words
from jaxml.papers.dipmark.reweight import (MODES, Watermark, dipmark, dipmark_cuts, dipmark_log_weights,
                                           dipmark_reweight, kgw, repeated_context)

__all__ = ["GAMMAS", "HOEFFDING_THRESHOLD_1PCT", "MODES", "Detector", "Scores", "Watermark", "as_key_bytes",
           "context_seed_reference", "context_seeds", "dipmark", "dipmark_cuts", "dipmark_log_weights",
           "dipmark_reweight", "kgw", "official", "repeated_context", "sha256_words", "statistics", "substitute"]
