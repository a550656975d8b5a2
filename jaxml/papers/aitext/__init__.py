"""Estimating the fraction of AI-modified text in a corpus (Liang et al., ICML 2024)."""

from jaxml.papers.aitext import experiments  # noqa: F401  (registers the experiments)
