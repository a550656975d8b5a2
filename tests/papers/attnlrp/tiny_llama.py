"""The small random Llama the AttnLRP tests explain (a helper module, not a test file)."""

import jax
import jax.numpy as jnp

from jaxml.models.llama import Llama, LlamaConfig


def tiny_llama(config: LlamaConfig, seed: int, scale: float = 2.0):
    """(model, params) of `config` with random weights from `seed`, every parameter times `scale`
    (2 by default: larger weights give relevances and logit changes far from rounding noise)."""
    model = Llama(config)
    params = jax.jit(model.init)(jax.random.PRNGKey(seed), jnp.zeros((1, 4), jnp.int32),
                                 jnp.zeros((1, 4), jnp.int32))["params"]
    return model, jax.tree_util.tree_map(lambda p: p * scale, params)
