"""Shared examples that prove the path end to end (registry slug `examples`)."""

from jaxml.core.examples import fashion_mnist  # noqa: F401  (registers its task and experiment)
