"""Every dense layer of the shared models goes through the `ops.linear` seam.

`jaxml.nn.ops.Ops.linear` is how AttnLRP's gamma rule, quantization (LQER, GPTQ, AWQ) and
calibration reach a model; a dense layer built with `flax.linen.Dense` (or a bare `x @ w`) would
silently bypass them. For each model, at a tiny config with random params:

* recording: an `Ops` whose `linear` records the kernel it is given is called exactly once per
  2-D `kernel` param, and every such param is among the recorded kernels (by value: the paths of
  the ones that bypass the seam are named in the failure);
* use: adding noise to the result of the i-th `ops.linear` call changes the model output, for
  every i (the seam's result is what the model computes with, not a side computation).

Not counted: embedding tables (`embedding`, a lookup), including Llama's tied output projection
`embed.attend` (the transposed embedding table, not a `kernel` param).
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxml.models.bert import Bert, BertConfig
from jaxml.models.llama import Llama, LlamaConfig
from jaxml.models.vit import ViT
from jaxml.nn.ops import Ops, plain_linear


def _llama(tie_embeddings):
    config = LlamaConfig(vocab_size=40, hidden=16, layers=2, heads=4, kv_heads=2, mlp_hidden=24, max_len=32,
                         tie_embeddings=tie_embeddings)
    tokens = jnp.asarray([[3, 14, 15, 9, 26, 5]])
    return (lambda ops: Llama(config, ops=ops)), (tokens, jnp.arange(6)[None]), lambda out: out[0]


def _vit():
    images = jax.random.uniform(jax.random.PRNGKey(1), (2, 8, 8, 1))
    make = lambda ops: ViT(num_classes=5, patch_size=4, hidden=16, layers=2, heads=4, mlp_hidden=24, ops=ops)
    return make, (images,), lambda out: out


def _bert():
    config = BertConfig(vocab_size=11, hidden_size=8, num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=12, max_position_embeddings=16)
    ids = jnp.asarray([[1, 5, 7, 2, 0], [1, 3, 2, 0, 0]])
    return (lambda ops: Bert(config, ops=ops)), (ids, (ids != 0).astype(jnp.int32)), lambda out: out


MODELS = {
    "llama_tied": lambda: _llama(True),
    "llama_untied": lambda: _llama(False),
    "vit": _vit,
    "bert": _bert,
}
# Expected kernel counts, from the architectures: Llama 7 per block (q, k, v, o, gate, up, down)
# (+ lm_head when untied); ViT patch_embed + 4 per block (qkv, out, fc_in, fc_out) + head; BERT 6
# per layer (query, key, value, output, mlp_in, mlp_out).
EXPECTED_KERNELS = {"llama_tied": 14, "llama_untied": 15, "vit": 10, "bert": 12}


def _leaves(params):
    for path, leaf in jax.tree_util.tree_leaves_with_path(params):
        yield "/".join(str(getattr(k, "key", k)) for k in path), leaf


def _kernel_paths(params) -> list[str]:
    return [path for path, leaf in _leaves(params) if path.endswith("/kernel") and np.ndim(leaf) == 2]


@functools.lru_cache(maxsize=None)
def _setup(name):
    """(make, args, logits, params): params drawn with NumPy on the shapes `init` traces (nothing compiled)."""
    make, args, logits = MODELS[name]()
    shapes = jax.eval_shape(make(Ops()).init, jax.random.PRNGKey(0), *args)["params"]
    rng = np.random.default_rng(0)
    params = jax.tree_util.tree_map(lambda s: jnp.asarray(0.5 * rng.standard_normal(s.shape), s.dtype), shapes)
    return make, args, logits, params


PARAMS = ["llama_tied", "llama_untied", "vit", "bert"]


@pytest.mark.parametrize("name", PARAMS)
def test_every_dense_kernel_goes_through_ops_linear(name):
    """Traced once (eval_shape, nothing compiled): Flax hands `ops.linear` the param object itself."""
    make, args, _, params = _setup(name)
    paths = _kernel_paths(params)
    assert len(paths) == EXPECTED_KERNELS[name], paths
    found = {}

    def check(params):
        seen = []

        def recording(x, kernel, bias, lowrank=None):
            seen.append(kernel)
            return plain_linear(x, kernel, bias, lowrank)

        make(Ops(linear=recording)).apply({"params": params}, *args)
        leaves = dict(_leaves(params))
        found.update(calls=len(seen), bypassing=[p for p in paths if not any(k is leaves[p] for k in seen)])

    jax.eval_shape(check, params)
    assert not found["bypassing"], f"{name}: dense layers not going through ops.linear: {found['bypassing']}"
    assert found["calls"] == len(paths), f"{name}: {found['calls']} ops.linear calls for {len(paths)} kernels"


@pytest.mark.parametrize("name", PARAMS)
def test_each_ops_linear_result_is_used(name):
    """d(random projection of the output) / d(shift_i) != 0, where the result of the i-th
    `ops.linear` call is moved by shift_i times random noise (over tokens and features: a constant
    shift could vanish in a LayerNorm or a softmax). A result the model discarded gives exactly 0."""
    make, args, logits, params = _setup(name)
    n = EXPECTED_KERNELS[name]

    def projected(shifts):
        calls = []

        def shifted(x, kernel, bias, lowrank=None):
            y = plain_linear(x, kernel, bias, lowrank)
            i = len(calls)
            calls.append(i)
            return y + shifts[i] * np.random.default_rng(i).standard_normal(y.shape).astype(y.dtype)

        out = logits(make(Ops(linear=shifted)).apply({"params": params}, *args))
        assert len(calls) == n
        return jnp.sum(out * np.random.default_rng(99).standard_normal(out.shape).astype(out.dtype))

    sensitivity = np.abs(np.asarray(jax.jit(jax.grad(projected))(jnp.zeros(n))))
    assert (sensitivity > 1e-3).all(), f"{name}: ops.linear calls whose result does not reach the output: " \
                                       f"{np.flatnonzero(sensitivity <= 1e-3).tolist()} ({sensitivity})"
