"""Compression: quantizers, GPTQ, AWQ, pruning (magnitude, Wanda, SparseGPT; `pruning`), shared by the LQER and
compressed-trust papers."""
