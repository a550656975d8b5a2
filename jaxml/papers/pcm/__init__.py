"""Spectral estimation for the Partial Credit Model (Nguyen & Zhang, ICML 2024).

    from jaxml.papers.pcm import spectral_estimate
    beta = spectral_estimate(X)          # X: [n_users, n_items] scores 0..L, -1 for missing -> [n_items, L]
"""

from jaxml.papers.pcm.spectral import (MISSING, PairwiseCounts, SpectralFit, category_log_probs, centred_rmse,
                                       pairwise_counts, spectral_estimate, thresholds_from_counts,
                                       validate_responses)

__all__ = ["MISSING", "PairwiseCounts", "SpectralFit", "category_log_probs", "centred_rmse", "pairwise_counts",
           "spectral_estimate", "thresholds_from_counts", "validate_responses"]

from jaxml.papers.pcm import experiments  # noqa: E402,F401  (registers the experiments)
