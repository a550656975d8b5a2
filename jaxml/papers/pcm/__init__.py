"""Spectral estimation for the Partial Credit Model (Nguyen & Zhang, ICML 2024).

    from jaxml.papers.pcm import spectral_estimate, mle_abilities
    beta = spectral_estimate(X)          # X: [n_users, n_items] scores 0..L, -1 for missing -> [n_items, L]
    theta = mle_abilities(X, beta)       # [n_users], bounded on [-6, 6]
    fit = spectral_em(X, n_components=2) # mixture of PCMs; mode="official": the release's EM
"""

from jaxml.papers.pcm import experiments  # noqa: F401  (registers the experiments)
from jaxml.papers.pcm.abilities import eap_abilities, mle_abilities, rating_log_probs
from jaxml.papers.pcm.baselines import jmle, mmle
from jaxml.papers.pcm.data import heldout_split, load, simulate
from jaxml.papers.pcm.mixture import MixtureFit, mixture_log_likelihood, official_e_step, spectral_em
from jaxml.papers.pcm.sparse import pairwise_counts_sparse, spectral_estimate_sparse
from jaxml.papers.pcm.spectral import (MISSING, PairwiseCounts, SpectralFit, category_log_probs, centred_rmse,
                                       pairwise_counts, spectral_estimate, thresholds_from_counts,
                                       validate_responses)

__all__ = ["MISSING", "MixtureFit", "PairwiseCounts", "SpectralFit", "category_log_probs", "centred_rmse",
           "eap_abilities", "heldout_split", "jmle", "load", "mixture_log_likelihood", "mle_abilities", "mmle",
           "official_e_step", "pairwise_counts", "pairwise_counts_sparse", "rating_log_probs", "simulate", "spectral_em",
           "spectral_estimate", "spectral_estimate_sparse",
           "thresholds_from_counts", "validate_responses"]
