"""jaxml: JAX-first, functional reimplementations of 19 ICML 2024 papers.

Shared packages: `jaxml.core` (config, registry, the one training loop), `jaxml.data` (offline
assets and datasets), `jaxml.nn`, `jaxml.models`, `jaxml.llm`, `jaxml.compress`; one package per
paper in `jaxml.papers.<slug>`. Nothing is downloaded or computed at import.
"""

__version__ = "0.1.0"
