"""A small encoder-decoder Transformer from caption keywords to target tokens (stroke tokens, or SVG
text tokens for the baseline), its training Task and a jitted KV-cached decoder.

    model = Seq2Seq(Seq2SeqConfig(src_vocab=V_src, tgt_vocab=V_tgt, max_tgt=T))
    task = Seq2SeqTask(model, ArraySource({"src": [N, S], "tgt": [N, T]}), {...})
    out = generate(model, params, src [B, S], max_len=T, key=key, options=SamplingOptions(0.7))
    # out.tokens [B, max_len] (PAD after EOS), out.lengths [B] (tokens before EOS), out.ended [B]

StrokeNUWA fine-tunes Flan-T5's decoder (encoder frozen) over a new table of 4096 VQ codes plus
SVG-begin and SVG-end; here both the encoder and the decoder are small and trained from scratch
(no pretrained T5 is available offline), and the raw-SVG baseline is the same model with the same
size and budget over SVG text tokens.

Target ids: 0 = PAD, 1 = BOS, 2 = EOS, then the content tokens shifted by SPECIALS (3). A target row
is [BOS, t_1 .. t_n, EOS, PAD ...]. Source ids: 0 = PAD (masked out of the encoder's attention).

Layers: pre-LayerNorm blocks, learned absolute position embeddings, GELU feed-forward; the decoder
block is causal self-attention, cross-attention over the encoder output, feed-forward; the output
layer is tied to the target embedding.
"""

from __future__ import annotations

import dataclasses
import functools

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np

from jaxml.llm.base import SamplingOptions
from jaxml.llm.generate import sample_logits
from jaxml.nn.attention import dot_product_attention

PAD, BOS, EOS = 0, 1, 2
SPECIALS = 3


@dataclasses.dataclass(frozen=True)
class Seq2SeqConfig:
    src_vocab: int
    tgt_vocab: int                 # including the 3 specials
    max_src: int = 32
    max_tgt: int = 128             # including BOS and EOS
    dim: int = 128
    heads: int = 4
    enc_layers: int = 2
    dec_layers: int = 2
    mlp: int = 256
    dropout: float = 0.0


def targets(sequences: list[np.ndarray], length: int) -> np.ndarray:
    """Content-token sequences (ids >= 0, before the shift) -> int32 [N, length] rows
    [BOS, t + SPECIALS ..., EOS, PAD...]; a sequence longer than length - 2 raises (never cut)."""
    out = np.zeros((len(sequences), length), np.int32)
    for i, s in enumerate(sequences):
        s = np.asarray(s, np.int64)
        if len(s) > length - 2:
            raise ValueError(f"target {i} has {len(s)} tokens > {length - 2} (max_tgt {length} minus BOS and EOS)")
        out[i, 0] = BOS
        out[i, 1:len(s) + 1] = s + SPECIALS
        out[i, len(s) + 1] = EOS
    return out


def content(tokens: np.ndarray) -> list[np.ndarray]:
    """Generated rows int [B, T] (no BOS) -> each row's content ids (shifted back) before its first EOS;
    specials other than EOS inside a row are dropped."""
    out = []
    for row in np.asarray(tokens):
        end = np.flatnonzero(row == EOS)
        row = row[:end[0]] if len(end) else row
        out.append(row[row >= SPECIALS] - SPECIALS)
    return out


class MultiHeadAttention(nn.Module):
    heads: int
    dim: int

    @nn.compact
    def __call__(self, x, kv, mask, cache=None, index=None):
        """x [B, T, D], kv [B, S, D], mask broadcastable to [B, H, T, S'] -> ([B, T, D], cache). With
        `cache` {"k", "v": [B, L, H, Dh]}, the new keys and values are written at `index` and the
        attention runs over the whole cache (mask [B, 1, T, L])."""
        hd = self.dim // self.heads
        proj = lambda name: nn.DenseGeneral((self.heads, hd), name=name)   # noqa: E731
        q, k, v = proj("q")(x), proj("k")(kv), proj("v")(kv)
        if cache is not None:
            k = jax.lax.dynamic_update_slice_in_dim(cache["k"], k, index, axis=1)
            v = jax.lax.dynamic_update_slice_in_dim(cache["v"], v, index, axis=1)
            cache = {"k": k, "v": v}
        out = dot_product_attention(q, k, v, mask)
        return nn.DenseGeneral(self.dim, axis=(-2, -1), name="out")(out), cache


class FeedForward(nn.Module):
    mlp: int
    dim: int

    @nn.compact
    def __call__(self, x):
        return nn.Dense(self.dim)(nn.gelu(nn.Dense(self.mlp)(x)))


class Seq2Seq(nn.Module):
    config: Seq2SeqConfig

    def setup(self):
        c = self.config
        self.src_embed = nn.Embed(c.src_vocab, c.dim)
        self.src_pos = self.param("src_pos", nn.initializers.normal(0.02), (c.max_src, c.dim))
        self.tgt_embed = nn.Embed(c.tgt_vocab, c.dim)
        self.tgt_pos = self.param("tgt_pos", nn.initializers.normal(0.02), (c.max_tgt, c.dim))
        self.enc = [dict(ln1=nn.LayerNorm(), att=MultiHeadAttention(c.heads, c.dim), ln2=nn.LayerNorm(),
                         ff=FeedForward(c.mlp, c.dim)) for _ in range(c.enc_layers)]
        self.enc_ln = nn.LayerNorm()
        self.dec = [dict(ln1=nn.LayerNorm(), self_att=MultiHeadAttention(c.heads, c.dim), ln2=nn.LayerNorm(),
                         cross=MultiHeadAttention(c.heads, c.dim), ln3=nn.LayerNorm(), ff=FeedForward(c.mlp, c.dim))
                    for _ in range(c.dec_layers)]
        self.dec_ln = nn.LayerNorm()

    def encode(self, src):
        """src int [B, S] (S <= max_src; 0 = PAD) -> memory [B, S, D]."""
        if src.shape[1] > self.config.max_src:
            raise ValueError(f"Seq2Seq: source length {src.shape[1]} > max_src {self.config.max_src}")
        x = self.src_embed(src) + self.src_pos[:src.shape[1]]
        mask = (src != PAD)[:, None, None, :]
        for b in self.enc:
            x = x + b["att"](b["ln1"](x), b["ln1"](x), mask)[0]
            x = x + b["ff"](b["ln2"](x))
        return self.enc_ln(x)

    def decode(self, tgt, memory, src, cache=None, index=0):
        """tgt int [B, T] at positions index .. index + T - 1 -> (logits [B, T, V], cache). Without a
        cache T is the whole prefix (teacher forcing); with one (`init_cache`), the tokens are
        appended at `index`."""
        t = tgt.shape[1]
        x = self.tgt_embed(tgt) + jax.lax.dynamic_slice_in_dim(self.tgt_pos, index, t, axis=0)
        cross_mask = (src != PAD)[:, None, None, :]
        q_pos = index + jnp.arange(t)
        if cache is None:
            self_mask = (q_pos[:, None] >= jnp.arange(t)[None, :])[None, None]
        else:
            self_mask = (q_pos[:, None] >= jnp.arange(self.config.max_tgt)[None, :])[None, None]
        new_cache = []
        for i, b in enumerate(self.dec):
            h = b["ln1"](x)
            a, c = b["self_att"](h, h, self_mask, None if cache is None else cache[i], index)
            new_cache.append(c)
            x = x + a
            x = x + b["cross"](b["ln2"](x), memory, cross_mask)[0]
            x = x + b["ff"](b["ln3"](x))
        logits = self.tgt_embed.attend(self.dec_ln(x))
        return logits, (None if cache is None else new_cache)

    def __call__(self, src, tgt_in):
        return self.decode(tgt_in, self.encode(src), src)[0]


def init_cache(config: Seq2SeqConfig, batch: int) -> list[dict]:
    hd = config.dim // config.heads
    z = jnp.zeros((batch, config.max_tgt, config.heads, hd))
    return [{"k": z, "v": z} for _ in range(config.dec_layers)]


def sequence_loss(logits, tgt_out):
    """Mean next-token cross-entropy over non-PAD targets, and per-example (sum, count)."""
    valid = (tgt_out != PAD).astype(jnp.float32)
    nll = -jnp.take_along_axis(jax.nn.log_softmax(logits.astype(jnp.float32)), tgt_out[..., None], -1)[..., 0]
    return jnp.sum(nll * valid) / jnp.maximum(valid.sum(), 1.0), (jnp.sum(nll * valid, 1), valid.sum(1))


@dataclasses.dataclass(frozen=True, eq=False)
class Seq2SeqTask:
    """Teacher-forced training of `Seq2Seq`. Batches {"src": int [B, S], "tgt": int [B, T]}."""

    model: Seq2Seq
    train_source: object
    eval_sources: dict

    def init(self, rng, batch):
        return self.model.init(rng, batch["src"], batch["tgt"][:, :-1])["params"]

    def loss(self, params, batch, rng):
        logits = self.model.apply({"params": params}, batch["src"], batch["tgt"][:, :-1])
        loss, _ = sequence_loss(logits, batch["tgt"][:, 1:])
        return loss, {"nll": loss}

    def evaluate(self, params, batch):
        logits = self.model.apply({"params": params}, batch["src"], batch["tgt"][:, :-1])
        _, (total, count) = sequence_loss(logits, batch["tgt"][:, 1:])
        correct = (jnp.argmax(logits, -1) == batch["tgt"][:, 1:]) & (batch["tgt"][:, 1:] != PAD)
        return {"nll": total / jnp.maximum(count, 1.0), "token_acc": correct.sum(1) / jnp.maximum(count, 1.0)}

    def train_data(self):
        return self.train_source

    def eval_data(self):
        return self.eval_sources


@dataclasses.dataclass(frozen=True)
class Generation:
    tokens: np.ndarray       # int32 [B, max_len]: generated ids after BOS (PAD after EOS)
    lengths: np.ndarray      # int32 [B]: content tokens before EOS (max_len when no EOS)
    ended: np.ndarray        # bool [B]: an EOS was produced
    steps: int               # decoding steps run (the loop stops when every row has ended)


@functools.lru_cache(maxsize=16)
def _program(model: Seq2Seq, max_len: int, options: SamplingOptions):
    config = model.config

    def run(params, src, key):
        b = src.shape[0]
        memory = model.apply({"params": params}, src, method=Seq2Seq.encode)
        cache = init_cache(config, b)
        tokens = jnp.full((b, max_len), PAD, jnp.int32)
        state = (jnp.int32(0), jnp.full((b,), BOS, jnp.int32), cache, tokens, jnp.zeros((b,), bool), key)

        def cond(s):
            return (s[0] < max_len) & ~jnp.all(s[4])

        def body(s):
            step, last, cache, tokens, done, key = s
            key, sub = jax.random.split(key)
            logits, cache = model.apply({"params": params}, last[:, None], memory, src, cache, step,
                                        method=Seq2Seq.decode)
            logits = logits[:, 0].at[:, PAD].set(-jnp.inf).at[:, BOS].set(-jnp.inf)
            token = jnp.where(done, PAD, sample_logits(logits, sub, options))
            tokens = tokens.at[:, step].set(token)
            return step + 1, token, cache, tokens, done | (token == EOS), key

        step, _, _, tokens, done, _ = jax.lax.while_loop(cond, body, state)
        return tokens, done, step

    return jax.jit(run)


def generate(model: Seq2Seq, params, src: np.ndarray, *, max_len: int | None = None, key=None,
             options: SamplingOptions = SamplingOptions()) -> Generation:
    """Decodes target tokens for src int [B, S] (greedy by default): one encoder pass, then one cached
    decoder step per token until every row has produced EOS or `max_len` (default max_tgt - 1)."""
    max_len = model.config.max_tgt - 1 if max_len is None else max_len
    if not 1 <= max_len <= model.config.max_tgt - 1:
        raise ValueError(f"generate: max_len={max_len}; accepted 1..{model.config.max_tgt - 1} (max_tgt - 1)")
    key = jax.random.PRNGKey(0) if key is None else key
    tokens, done, step = _program(model, max_len, options)(params, jnp.asarray(src, jnp.int32), key)
    tokens, done = np.asarray(tokens), np.asarray(done)
    first_eos = np.where((tokens == EOS).any(1), (tokens == EOS).argmax(1), max_len)
    return Generation(tokens, first_eos.astype(np.int32), done, int(step))
