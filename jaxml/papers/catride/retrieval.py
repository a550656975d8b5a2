"""Retrieval metrics on embeddings (pure functions): Recall@k, mAP and NMI, leave-one-out over one
set (every item is a query against all the others), as in RobRank's evaluation.

    recall_at_k(emb, labels, ks=(1, 2, 4, 8))   # {1: 0.81, 2: ...}: share of queries whose k nearest
                                                #  neighbours hold an item of the same class
    mean_average_precision(emb, labels)         # mean over queries of the average precision of the ranking
    nmi(labels, clusters)                       # normalised mutual information (arithmetic mean)
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import scipy.cluster.vq


def _distances(emb: np.ndarray) -> np.ndarray:
    emb = np.asarray(emb, np.float64)
    if emb.ndim != 2 or len(emb) < 2:
        raise ValueError(f"embeddings must be [n >= 2, d], got shape {emb.shape}")
    sq = np.sum(emb * emb, 1)
    d = np.sqrt(np.maximum(sq[:, None] + sq[None, :] - 2.0 * emb @ emb.T, 0.0))
    np.fill_diagonal(d, np.inf)                 # a query never retrieves itself
    return d


def ranked_labels(emb: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """[n, n-1]: the labels of every query's other items, nearest first (ties by index)."""
    d = _distances(emb)
    order = np.argsort(d, axis=1, kind="stable")[:, :-1]
    return np.asarray(labels)[order]


def recall_at_k(emb: np.ndarray, labels: np.ndarray, ks: Sequence[int] = (1, 2, 4, 8)) -> dict[int, float]:
    """{k: share of queries with a same-class item among their k nearest neighbours}."""
    labels = np.asarray(labels)
    hits = ranked_labels(emb, labels) == labels[:, None]
    return {int(k): float(np.mean(hits[:, :k].any(axis=1))) for k in ks}


def mean_average_precision(emb: np.ndarray, labels: np.ndarray) -> float:
    """Mean over queries (with at least one same-class item) of the average precision: the mean of
    precision@r over the ranks r of the same-class items."""
    labels = np.asarray(labels)
    hits = (ranked_labels(emb, labels) == labels[:, None]).astype(np.float64)
    ranks = np.arange(1, hits.shape[1] + 1)
    precision = np.cumsum(hits, axis=1) / ranks
    relevant = hits.sum(axis=1)
    ap = np.sum(precision * hits, axis=1) / np.maximum(relevant, 1)
    return float(np.mean(ap[relevant > 0]))


def nmi(labels: np.ndarray, clusters: np.ndarray) -> float:
    """Normalised mutual information I(Y; C) / ((H(Y) + H(C)) / 2), in [0, 1] (1: the same partition)."""
    labels, clusters = np.asarray(labels), np.asarray(clusters)
    if labels.shape != clusters.shape or labels.ndim != 1:
        raise ValueError(f"nmi: labels {labels.shape} and clusters {clusters.shape} must be the same 1-d shape")
    _, y = np.unique(labels, return_inverse=True)
    _, c = np.unique(clusters, return_inverse=True)
    joint = np.zeros((y.max() + 1, c.max() + 1))
    np.add.at(joint, (y, c), 1.0)
    joint /= joint.sum()
    py, pc = joint.sum(1), joint.sum(0)

    def entropy(p):
        p = p[p > 0]
        return float(-np.sum(p * np.log(p)))

    nz = joint > 0
    mutual = float(np.sum(joint[nz] * np.log(joint[nz] / np.outer(py, pc)[nz])))
    denominator = (entropy(py) + entropy(pc)) / 2.0
    return mutual / denominator if denominator > 0 else 1.0


def kmeans_nmi(emb: np.ndarray, labels: np.ndarray, seed: int = 0) -> float:
    """NMI of the classes and a k-means clustering of the embeddings (k = number of classes;
    scipy's kmeans2 with k-means++ initialisation)."""
    k = len(np.unique(labels))
    _, clusters = scipy.cluster.vq.kmeans2(np.asarray(emb, np.float64), k, minit="++", seed=seed)
    return nmi(labels, clusters)
