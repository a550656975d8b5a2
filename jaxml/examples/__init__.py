"""Shared examples that prove the path end to end (registry slug `examples`)."""

from jaxml.examples import fashion_mnist, smollm2, vit  # noqa: F401  (register their experiments)
