"""Shared Flax (linen) layers: attention (through kernels/), norms, rotary, MLPs."""
