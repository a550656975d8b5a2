"""Compression: quantizers, GPTQ, AWQ, pruning (shared by the LQER and compressed-trust papers)."""
