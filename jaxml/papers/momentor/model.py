"""The video LLM: frozen frame features -> linear projection (+ temporal infusion) -> decoder LM whose
vocabulary is extended by the TPM's M temporal tokens.

Params: {"lm": the shared `jaxml.models.llama.Llama` (a small decoder trained here), "proj":
{"kernel" [F, d], "bias" [d]}, "tpm": {"E_in" [M, d], "E_out" [M, d]}}. Frame and timestamp
embeddings enter through `llama.hidden_states(delta=...)`, so the shared model is not forked.
The logits are [text vocabulary V | M temporal tokens]: hidden @ [E_text; E_out']^T.

`MomentorTask` trains it with the one loop (cross-entropy against one-hot word targets and soft or
one-hot temporal targets, weighted per video as the official code by default); `generate` decodes greedily, feeding a generated temporal token back as
the interpolated embedding of its decoded position (or the token's own row for 'discrete').
"""

from __future__ import annotations

import dataclasses
import functools

import jax
import jax.numpy as jnp
import numpy as np
import optax

from jaxml.data.pipeline import Source
from jaxml.models.llama import Llama, LlamaConfig, hidden_states
from jaxml.papers.momentor import text, tpm


@dataclasses.dataclass(frozen=True)
class ModelSpec:
    """Sizes of the video LLM and its timestamp encoding (hashable: a static argument of jit)."""

    vocab_size: int
    num_frames: int          # = M temporal tokens
    feature_dim: int
    encoding: str = "propagate"
    hidden: int = 128
    layers: int = 3
    heads: int = 4
    mlp_hidden: int = 384
    max_len: int = 512

    def __post_init__(self):
        tpm.check_encoding(self.encoding)

    @property
    def llama(self) -> Llama:
        return Llama(LlamaConfig(vocab_size=self.vocab_size, hidden=self.hidden, layers=self.layers, heads=self.heads,
                                 kv_heads=self.heads, mlp_hidden=self.mlp_hidden, max_len=self.max_len,
                                 rope_layout="rotate_half"))


def init_params(rng, spec: ModelSpec) -> dict:
    k_lm, k_proj, k_in, k_out = jax.random.split(rng, 4)
    tokens = jnp.zeros((1, 4), jnp.int32)
    lm = spec.llama.init(k_lm, tokens, jnp.zeros_like(tokens))["params"]
    d, m, f = spec.hidden, spec.num_frames, spec.feature_dim
    return {"lm": lm,
            "proj": {"kernel": jax.random.normal(k_proj, (f, d)) / np.sqrt(f), "bias": jnp.zeros((d,))},
            "tpm": {"E_in": jax.random.normal(k_in, (m, d)) / np.sqrt(d),
                    "E_out": jax.random.normal(k_out, (m, d)) / np.sqrt(d)}}


def tables(params, spec: ModelSpec):
    """(E_in, E_out), reparametrised by neighbouring token propagation for 'propagate'."""
    e_in, e_out = params["tpm"]["E_in"], params["tpm"]["E_out"]
    if spec.encoding == "propagate":
        e_in, e_out = tpm.propagate(e_in), tpm.propagate(e_out)
    return e_in, e_out


def input_delta(params, spec: ModelSpec, batch, features):
    """What is added to the token embeddings: projected frames + temporal infusion at the frame
    slots, timestamp embeddings at `<time>` slots.  -> [B, L, d]."""
    e_in, e_out = tables(params, spec)
    frames = features @ params["proj"]["kernel"] + params["proj"]["bias"] + (e_in + e_out) / 2      # [B, M, d]
    fi = batch["frame_index"]
    delta = jnp.take_along_axis(frames, jnp.clip(fi, 0)[..., None], axis=1) * (fi >= 0)[..., None]
    if spec.encoding != "text":
        if spec.encoding == "discrete":
            idx = jnp.clip(jnp.round(batch["time_pos"]), 0, spec.num_frames - 1).astype(jnp.int32)
            stamp = e_in[idx]
        else:
            stamp = tpm.interpolate(e_in, batch["time_pos"])
        delta = delta + jnp.where((batch["tokens"] == text.TIME)[..., None], stamp, 0.0)
    return delta


def logits(params, spec: ModelSpec, batch, features):
    """[B, L, V + M] next-token logits over words and temporal tokens."""
    tokens = batch["tokens"]
    b, t = tokens.shape
    positions = batch.get("positions")
    if positions is None:
        positions = jnp.broadcast_to(jnp.arange(t), (b, t))
    hidden, _ = hidden_states(spec.llama, params["lm"], tokens, positions,
                              delta=input_delta(params, spec, batch, features), key_valid=batch.get("key_valid"))
    _, e_out = tables(params, spec)
    word = hidden @ params["lm"]["embed"]["embedding"].T
    return jnp.concatenate([word, hidden @ e_out.T], axis=-1)


def target_distribution(spec: ModelSpec, batch):
    """[B, L, V + M]: one-hot words (kind 1), soft or one-hot temporal targets (kind 2), zeros (kind 0)."""
    kind = batch["target_kind"]
    word = jax.nn.one_hot(batch["target_id"], spec.vocab_size) * (kind == 1)[..., None]
    make = tpm.hard_targets if spec.encoding == "discrete" else tpm.soft_targets
    stamp = make(batch["target_pos"], spec.num_frames) * (kind == 2)[..., None]
    return jnp.concatenate([word, stamp], axis=-1)


def token_losses(params, spec: ModelSpec, batch):
    """Per-position cross-entropy [B, L] (0 where no target), and the logits."""
    lg = logits(params, spec, batch, batch["features"])
    ce = optax.softmax_cross_entropy(lg, target_distribution(spec, batch))
    return jnp.where(batch["target_kind"] > 0, ce, 0.0), lg


LOSS_WEIGHTINGS = ("video", "token")


def check_loss_weighting(weighting: str) -> str:
    if weighting not in LOSS_WEIGHTINGS:
        raise ValueError(f"loss weighting {weighting!r} is not known; accepted: {', '.join(LOSS_WEIGHTINGS)} "
                         "('video': each example's mean over its answer tokens, averaged over the batch, as the "
                         "official momentor.py; 'token': the mean over all answer tokens of the batch)")
    return weighting


def sequence_loss(params, spec: ModelSpec, batch, weighting: str = "video"):
    """(the batch's cross-entropy, metrics: word accuracy and the mean |decoded - target| temporal
    position at time targets, in token units).

    weighting='video' (official, `momentor.py:254-257, 263`): each example's mean over its answer
    tokens, then the mean over examples (the release sums over its per-device batch of 4 and DDP
    averages devices: the same up to that constant factor, which Adam absorbs); 'token': the mean
    over all answer tokens of the batch, so long answers weigh more."""
    ce, lg = token_losses(params, spec, batch)
    kind = batch["target_kind"]
    if check_loss_weighting(weighting) == "video":
        n = (kind > 0).sum(-1)
        per_example = ce.sum(-1) / jnp.maximum(n, 1)
        loss = jnp.where(n > 0, per_example, 0.0).sum() / jnp.maximum((n > 0).sum(), 1)
    else:
        loss = ce.sum() / jnp.maximum((kind > 0).sum(), 1)
    word_ok = jnp.argmax(lg[..., :spec.vocab_size], -1) == batch["target_id"]
    probs = jax.nn.softmax(lg[..., spec.vocab_size:], -1)
    err = jnp.abs(tpm.decode_position(probs, spec.encoding != "discrete") - batch["target_pos"])
    return loss, {"word_accuracy": jnp.where(kind == 1, word_ok, False).sum() / jnp.maximum((kind == 1).sum(), 1),
                  "time_error_tokens": jnp.where(kind == 2, err, 0.0).sum() / jnp.maximum((kind == 2).sum(), 1)}


def example_metrics(params, spec: ModelSpec, batch):
    """Per example [B]: mean answer-token cross-entropy and word accuracy (teacher forced)."""
    ce, lg = token_losses(params, spec, batch)
    kind = batch["target_kind"]
    n = jnp.maximum((kind > 0).sum(-1), 1)
    word_ok = jnp.where(kind == 1, jnp.argmax(lg[..., :spec.vocab_size], -1) == batch["target_id"], False)
    return {"loss": ce.sum(-1) / n, "word_accuracy": word_ok.sum(-1) / jnp.maximum((kind == 1).sum(-1), 1)}


@dataclasses.dataclass(eq=False)
class MomentorTask:
    """One training stage of the video LLM as a Task of the one loop.

    Batches: `text.encode` rows plus `features` [B, M, F]. `start_params`: the previous stage's
    params (None: a fresh init). `loss_weighting`: see `sequence_loss`."""

    spec: ModelSpec
    train_source: Source
    eval_sources: dict
    start_params: dict | None = None
    loss_weighting: str = "video"

    def __post_init__(self):
        check_loss_weighting(self.loss_weighting)

    def init(self, rng, batch):
        if self.start_params is not None:
            return jax.tree_util.tree_map(jnp.asarray, self.start_params)
        return init_params(rng, self.spec)

    def loss(self, params, batch, rng):
        return sequence_loss(params, self.spec, batch, self.loss_weighting)

    def evaluate(self, params, batch):
        return example_metrics(params, self.spec, batch)

    def train_data(self) -> Source:
        return self.train_source

    def eval_data(self) -> dict:
        return self.eval_sources


@functools.partial(jax.jit, static_argnames=("spec", "steps"))
def _generate(params, spec: ModelSpec, prompt, features, steps: int):
    tokens, frame_index, time_pos = prompt["tokens"], prompt["frame_index"], prompt["time_pos"]
    b, p = tokens.shape
    grow = lambda x, value: jnp.concatenate([x, jnp.full((b, steps), value, x.dtype)], axis=1)
    tokens, frame_index, time_pos = grow(tokens, text.PAD), grow(frame_index, -1), grow(time_pos, 0.0)
    positions = jnp.concatenate([prompt["positions"], prompt["positions"][:, -1:] + 1 + jnp.arange(steps)], axis=1)
    key_valid = grow(prompt["key_valid"], True)
    v = spec.vocab_size

    def body(s, carry):
        tokens, time_pos, done = carry
        batch = {"tokens": tokens, "frame_index": frame_index, "time_pos": time_pos, "positions": positions,
                 "key_valid": key_valid}
        lg = jax.lax.dynamic_index_in_dim(logits(params, spec, batch, features), p + s - 1, axis=1, keepdims=False)
        if spec.encoding == "text":
            nxt, is_time = jnp.argmax(lg[:, :v], -1), jnp.zeros((b,), bool)
        else:
            nxt = jnp.argmax(lg, -1)
            is_time = nxt >= v
        pos = tpm.decode_position(jax.nn.softmax(lg[:, v:], -1), spec.encoding != "discrete")
        tok = jnp.where(done, text.PAD, jnp.where(is_time, text.TIME, nxt))
        tokens = jax.lax.dynamic_update_slice_in_dim(tokens, tok[:, None], p + s, axis=1)
        time_pos = jax.lax.dynamic_update_slice_in_dim(time_pos, jnp.where(is_time & ~done, pos, 0.0)[:, None],
                                                       p + s, axis=1)
        return tokens, time_pos, done | (tok == text.EOS)

    tokens, time_pos, _ = jax.lax.fori_loop(0, steps, body, (tokens, time_pos, jnp.zeros((b,), bool)))
    return tokens[:, p:], time_pos[:, p:]


def generate(params, spec: ModelSpec, prompt: dict, features, steps: int, batch_size: int = 64):
    """Greedy decoding of `steps` tokens after left-padded prompts (`text.prompts`).

    Returns (ids int [N, steps], time positions float [N, steps]); rows stop at `<eos>` (PAD after)."""
    n = prompt["tokens"].shape[0]
    ids, pos = [], []
    for i in range(0, n, batch_size):
        rows = np.minimum(np.arange(i, i + batch_size), n - 1)    # the last chunk repeats its last row
        chunk = {k: jnp.asarray(np.asarray(v)[rows]) for k, v in prompt.items()}
        a, b_ = _generate(params, spec, chunk, jnp.asarray(np.asarray(features)[rows]), steps)
        keep = min(batch_size, n - i)
        ids.append(np.asarray(a)[:keep])
        pos.append(np.asarray(b_)[:keep])
    return np.concatenate(ids), np.concatenate(pos)
