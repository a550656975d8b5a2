"""Jitted autoregressive decoding with a KV cache, log-prob scoring and sliding-window perplexity.

    out = generate(model, params, [tok.encode("Once upon a time")], max_new_tokens=32,
                   stop_ids=tok.stop_ids, pad_id=tok.pad_id)
    text = tok.decode(out.sequences()[0])

Prompts are left-padded to a common length (rounded up to a multiple of `bucket` so that
similar batches reuse one compiled program). Prefill writes the prompt's keys and values into a
cache of length `prompt_len + max_new_tokens`; a `lax.while_loop` then decodes one token per
step for the whole batch and stops early once every row has produced a stop token.

A *logits processor* is a pure function `(logits, context, step, key) -> logits` applied to the
float32 logits [batch, vocab] before sampling: `context` is int32 [batch, prompt_len +
max_new_tokens], the tokens before the one being chosen, right-aligned (`context[:, -1]` is the
previous token; -1 fills the left where there is no token); `step` is the number of tokens already
generated; `key` is a fresh PRNG key. Watermarks (DiPmark, KGW) are processors.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Callable, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from jaxml.llm.base import SamplingOptions
from jaxml.models.llama import Llama, init_cache

LogitsProcessor = Callable[[jax.Array, jax.Array, jax.Array, jax.Array], jax.Array]


def sample_logits(logits: jax.Array, key: jax.Array, options: SamplingOptions) -> jax.Array:
    """Next tokens int32 [batch] from logits [batch, vocab] (greedy when temperature == 0)."""
    if options.temperature == 0:
        return jnp.argmax(logits, axis=-1).astype(jnp.int32)
    logits = logits.astype(jnp.float32) / options.temperature
    if options.top_k:
        k = min(options.top_k, logits.shape[-1])
        kth = jax.lax.top_k(logits, k)[0][..., -1:]
        logits = jnp.where(logits < kth, -jnp.inf, logits)
    if options.top_p < 1.0:
        sorted_logits = jnp.sort(logits, axis=-1)[..., ::-1]
        probs = jax.nn.softmax(sorted_logits, axis=-1)
        # Keep tokens whose preceding cumulative mass is below top_p (the top token always stays).
        before = jnp.cumsum(probs, axis=-1) - probs
        cutoff = jnp.min(jnp.where(before < options.top_p, sorted_logits, jnp.inf), axis=-1, keepdims=True)
        logits = jnp.where(logits < cutoff, -jnp.inf, logits)
    return jax.random.categorical(key, logits, axis=-1).astype(jnp.int32)


@dataclasses.dataclass(frozen=True)
class GenerationOutput:
    """Result of `generate`.

    Attributes:
      tokens: int32 [batch, max_new_tokens], the stop token included, `pad_id` after it.
      lengths: int [batch], tokens before the first stop token (or max_new_tokens).
      stopped: bool [batch], whether a stop token was produced.
      prompt_len: the padded prompt length used.
      steps: decoding steps run (fewer than max_new_tokens when every row stopped early).
    """

    tokens: np.ndarray
    lengths: np.ndarray
    stopped: np.ndarray
    prompt_len: int
    steps: int

    def sequences(self) -> list[list[int]]:
        """Each row's generated tokens up to (not including) its stop token."""
        return [row[:n].tolist() for row, n in zip(self.tokens, self.lengths)]


def left_pad(prompts: Sequence[Sequence[int]], pad_id: int, bucket: int = 16) -> tuple[np.ndarray, np.ndarray]:
    """`(tokens int32 [batch, len], valid bool [batch, len])`, left-padded to a multiple of `bucket`."""
    if not prompts:
        raise ValueError("no prompts given")
    lengths = [len(p) for p in prompts]
    if min(lengths) == 0:
        raise ValueError(f"prompt {lengths.index(0)} is empty; every prompt needs at least one token")
    length = int(math.ceil(max(lengths) / bucket) * bucket)
    tokens = np.full((len(prompts), length), pad_id, np.int32)
    valid = np.zeros((len(prompts), length), bool)
    for i, p in enumerate(prompts):
        tokens[i, length - len(p):] = np.asarray(p, np.int32)
        valid[i, length - len(p):] = True
    return tokens, valid


def _check_tokens(prompts, vocab_size: int) -> None:
    for i, p in enumerate(prompts):
        arr = np.asarray(p)
        if arr.size and (arr.min() < 0 or arr.max() >= vocab_size):
            raise ValueError(f"prompt {i} has token ids outside [0, {vocab_size})")


@functools.lru_cache(maxsize=32)
def _decoder(model: Llama, max_new: int, options: SamplingOptions, stop_ids: tuple[int, ...], pad_id: int,
             processor: LogitsProcessor | None, use_cache: bool):
    """Builds the jitted `(params, prompt, valid, key) -> (tokens, done, steps)` program."""
    config = model.config
    stops = jnp.asarray(stop_ids if stop_ids else (-1,), jnp.int32)

    def run(params, prompt, valid, key):
        batch, plen = prompt.shape
        total = plen + max_new
        key_valid = jnp.concatenate([valid, jnp.ones((batch, max_new), bool)], axis=1)
        n_real = valid.sum(axis=1).astype(jnp.int32)
        positions = jnp.maximum(jnp.cumsum(valid, axis=1) - 1, 0).astype(jnp.int32)
        if use_cache:
            cache = init_cache(config, batch, total, model.dtype)
            logits, cache = model.apply({"params": params}, prompt, positions, key_valid=key_valid,
                                        cache=cache, cache_index=0)
            buffer = None
        else:  # the recompute baseline: the whole prefix is run again every step
            cache = None
            buffer = jnp.concatenate([prompt, jnp.full((batch, max_new), pad_id, jnp.int32)], axis=1)
            all_positions = jnp.concatenate(
                [positions, n_real[:, None] + jnp.arange(max_new, dtype=jnp.int32)[None]], axis=1)
            logits, _ = model.apply({"params": params}, buffer, all_positions, key_valid=key_valid)
            logits = logits[:, :plen]
        context = jnp.concatenate([jnp.full((batch, max_new), -1, jnp.int32), jnp.where(valid, prompt, -1)], axis=1)
        out = jnp.full((batch, max_new), pad_id, jnp.int32)
        state = (jnp.int32(0), logits[:, -1].astype(jnp.float32), cache, buffer, context, out,
                 jnp.zeros((batch,), bool), key)

        def cond(state):
            step, *_, done, _ = state
            return (step < max_new) & ~jnp.all(done)

        def body(state):
            step, last, cache, buffer, context, out, done, key = state
            key, sample_key, processor_key = jax.random.split(key, 3)
            if processor is not None:
                last = processor(last, context, step, processor_key)
            token = jnp.where(done, pad_id, sample_logits(last, sample_key, options))
            out = out.at[:, step].set(token)
            done = done | jnp.isin(token, stops)
            context = jnp.concatenate([context[:, 1:], token[:, None]], axis=1)
            position = (n_real + step)[:, None]
            if use_cache:
                logits, cache = model.apply({"params": params}, token[:, None], position, key_valid=key_valid,
                                            cache=cache, cache_index=plen + step)
                last = logits[:, 0].astype(jnp.float32)
            else:
                buffer = jax.lax.dynamic_update_slice(buffer, token[:, None], (0, plen + step))
                all_positions = jnp.concatenate(
                    [positions, n_real[:, None] + jnp.arange(max_new, dtype=jnp.int32)[None]], axis=1)
                logits, _ = model.apply({"params": params}, buffer, all_positions, key_valid=key_valid)
                last = jax.lax.dynamic_index_in_dim(logits, plen + step, axis=1, keepdims=False).astype(jnp.float32)
            return step + 1, last, cache, buffer, context, out, done, key

        step, _, _, _, _, out, done, _ = jax.lax.while_loop(cond, body, state)
        return out, done, step

    return jax.jit(run)


def generate(model: Llama, params, prompts: Sequence[Sequence[int]], *, max_new_tokens: int,
             sampling: SamplingOptions | None = None, stop_ids: Sequence[int] = (), pad_id: int = 0,
             key: jax.Array | None = None, logits_processor: LogitsProcessor | None = None,
             bucket: int = 16, use_cache: bool = True) -> GenerationOutput:
    """Decodes up to `max_new_tokens` for each prompt (a list of token-id lists).

    Args:
      model, params: the Llama module and its params.
      prompts: token ids per prompt (lengths may differ; they are left-padded).
      max_new_tokens: > 0.
      sampling: SamplingOptions (default greedy).
      stop_ids: tokens that end a row (kept in `tokens`, excluded from `lengths`).
      pad_id: id used for left padding and after a row stopped.
      key: PRNG key for sampling and the processor (default PRNGKey(0)).
      logits_processor: `(logits, context, step, key) -> logits`, see the module docstring.
      bucket: prompts are padded to a multiple of this length.
      use_cache: False recomputes the whole prefix every step (the benchmark's baseline).
    Raises:
      ValueError: empty prompt, ids outside the vocabulary, or prompt + max_new_tokens longer than
        the model's context.
    """
    if max_new_tokens <= 0:
        raise ValueError(f"max_new_tokens={max_new_tokens} must be positive")
    sampling = sampling or SamplingOptions()
    if not isinstance(sampling, SamplingOptions):
        raise TypeError(f"sampling must be a SamplingOptions, got {type(sampling).__name__}")
    _check_tokens(prompts, model.config.vocab_size)
    tokens, valid = left_pad(prompts, pad_id, bucket)
    longest = max(len(p) for p in prompts)
    if longest + max_new_tokens > model.config.max_len:
        raise ValueError(f"prompt of {longest} tokens + max_new_tokens={max_new_tokens} exceeds the "
                         f"model's context of {model.config.max_len} tokens")
    # The padded buffer must fit too: shrink the bucket padding rather than fail.
    if tokens.shape[1] + max_new_tokens > model.config.max_len:
        tokens, valid = left_pad(prompts, pad_id, 1)
    key = jax.random.PRNGKey(0) if key is None else key
    run = _decoder(model, int(max_new_tokens), sampling, tuple(int(s) for s in stop_ids), int(pad_id),
                   logits_processor, bool(use_cache))
    out, done, steps = jax.device_get(run(params, tokens, valid, key))
    stop_set = np.asarray(sorted(set(stop_ids)) or [-1])
    is_stop = np.isin(out, stop_set)
    lengths = np.where(is_stop.any(1), is_stop.argmax(1), max_new_tokens)
    return GenerationOutput(tokens=out, lengths=lengths, stopped=done, prompt_len=tokens.shape[1], steps=int(steps))


# --- Scoring ---------------------------------------------------------------------------------------

@functools.lru_cache(maxsize=8)
def _token_logprobs_fn(model: Llama):
    def run(params, tokens, valid):
        positions = jnp.maximum(jnp.cumsum(valid, axis=1) - 1, 0)
        logits, _ = model.apply({"params": params}, tokens, positions, key_valid=valid)
        logp = jax.nn.log_softmax(logits[:, :-1].astype(jnp.float32), axis=-1)
        return jnp.take_along_axis(logp, tokens[:, 1:, None], axis=-1)[..., 0]   # [batch, len-1]

    return jax.jit(run)


def token_logprobs(model: Llama, params, sequences: Sequence[Sequence[int]], *, pad_id: int = 0,
                   bucket: int = 16) -> list[np.ndarray]:
    """log p(token_t | tokens_<t) for t >= 1 of each sequence: float32 [len - 1] per sequence."""
    if not sequences:
        raise ValueError("no sequences given")
    _check_tokens(sequences, model.config.vocab_size)
    lengths = [len(s) for s in sequences]
    if min(lengths) < 2:
        raise ValueError("every sequence needs at least 2 tokens to be scored")
    if max(lengths) > model.config.max_len:
        raise ValueError(f"a sequence of {max(lengths)} tokens exceeds the context of {model.config.max_len}")
    length = min(int(math.ceil(max(lengths) / bucket) * bucket), model.config.max_len)
    tokens = np.full((len(sequences), length), pad_id, np.int32)
    valid = np.zeros((len(sequences), length), bool)
    for i, s in enumerate(sequences):   # right padding: position t is token t
        tokens[i, :len(s)] = s
        valid[i, :len(s)] = True
    logp = np.asarray(_token_logprobs_fn(model)(params, tokens, valid))
    return [logp[i, :n - 1] for i, n in enumerate(lengths)]


def score(model: Llama, params, prompts: Sequence[Sequence[int]], continuations: Sequence[Sequence[int]],
          *, pad_id: int = 0, batch_size: int = 16) -> list[np.ndarray]:
    """Per-token log-probabilities of each continuation given its prompt (token ids).

    Returns float32 [len(continuation)] per pair: entry j is log p(c_j | prompt, c_<j).
    """
    if len(prompts) != len(continuations):
        raise ValueError(f"{len(prompts)} prompts but {len(continuations)} continuations")
    for i, (p, c) in enumerate(zip(prompts, continuations)):
        if not len(p) or not len(c):
            raise ValueError(f"pair {i}: prompt and continuation must both be non-empty")
    out = []
    for start in range(0, len(prompts), batch_size):
        chunk = [list(p) + list(c) for p, c in zip(prompts[start:start + batch_size], continuations[start:start + batch_size])]
        logps = token_logprobs(model, params, chunk, pad_id=pad_id)
        out += [lp[len(p) - 1:] for lp, p in zip(logps, prompts[start:start + batch_size])]
    return out


def perplexity(model: Llama, params, tokens: Sequence[int], *, context: int = 512, stride: int = 256,
               batch_size: int = 4) -> dict[str, float]:
    """Sliding-window perplexity of one long token sequence.

    The targets (every token after the first) are taken `stride` at a time; each chunk is scored
    by one forward pass over the window of `context` tokens that ends with the chunk, so every
    target is scored exactly once, with at least `context - stride` tokens of left context (fewer
    only at the start of the sequence).

    Returns:
      `{"nll": mean negative log-likelihood in nats/token, "perplexity": exp(nll),
        "tokens": tokens scored, "windows": n}`.
    """
    tokens = np.asarray(tokens, np.int32)
    if tokens.ndim != 1 or len(tokens) < 2:
        raise ValueError(f"perplexity needs a 1-D sequence of at least 2 tokens, got shape {tokens.shape}")
    if not 0 < stride < context <= model.config.max_len:
        raise ValueError(f"need 0 < stride ({stride}) < context ({context}) <= model context ({model.config.max_len})")
    windows = []   # (window start, window end, first target position)
    for first in range(1, len(tokens), stride):
        end = min(first + stride, len(tokens))
        windows.append((max(0, end - context), end, first))
    total, count = 0.0, 0
    for i in range(0, len(windows), batch_size):
        chunk = windows[i:i + batch_size]
        logps = token_logprobs(model, params, [tokens[s:e] for s, e, _ in chunk], bucket=context)
        for (start, _, first), lp in zip(chunk, logps):
            part = lp[first - start - 1:]   # lp[j] = log p(token start+j+1 | tokens start..start+j)
            total -= float(part.sum())
            count += len(part)
    nll = total / count
    return {"nll": nll, "perplexity": math.exp(nll), "tokens": count, "windows": len(windows)}
