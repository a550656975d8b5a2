"""The uncertainty baselines ICE is compared with, from the answers to the original (unclarified) input.

    predictive_entropy       entropy (bits) over the distinct normalised answers
    cluster_entropy          entropy over semantic clusters (MiniLM cosine >= threshold): semantic-entropy style
    self_reported_ambiguity  log p(" Yes") - log p(" No") when the model is asked whether the input is ambiguous
"""

from __future__ import annotations

from collections import Counter

import numpy as np

from jaxml.papers.ice.clustering import normalize_answer, semantic_clusters
from jaxml.papers.ice.decompose import entropy_bits

SELF_REPORT = "\nIs this instruction ambiguous, that is, could it mean more than one thing? Answer Yes or No.\nAnswer:"


def _counts_entropy(labels) -> float:
    labels = list(labels)
    if not labels:
        raise ValueError("entropy of no answers")
    counts = np.array(list(Counter(labels).values()), np.float64)
    return float(entropy_bits(counts / counts.sum()))


def predictive_entropy(answers) -> float:
    """Entropy (bits, the decomposition's smoothing) of the answers over distinct normalised strings."""
    return _counts_entropy(normalize_answer(a) for a in answers)


def cluster_entropy(answers, embed, threshold: float = 0.9) -> float:
    """Entropy (bits) of the answers over `clustering.semantic_clusters` (empty answers share one cluster)."""
    return _counts_entropy(semantic_clusters([normalize_answer(a) or "(empty)" for a in answers], embed, threshold))


def self_reported_ambiguity(llm, examples) -> np.ndarray:
    """`[n]` log p(' Yes') - log p(' No') after asking the model whether each instruction is ambiguous."""
    prompts = [f"{e.input}\nInstruction: {e.instruction}{SELF_REPORT}" for e in examples]
    yes = llm.logprobs(prompts, [" Yes"] * len(prompts))
    no = llm.logprobs(prompts, [" No"] * len(prompts))
    return np.array([float(np.sum(y)) - float(np.sum(n)) for y, n in zip(yes, no)])
