"""Shared backbones and their weight loaders (Flax linen, pure functions of params)."""
