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
generated; `key` is a fresh PRNG key. Watermarks (DiPmark, KGW) are processors. Top-k/top-p
filters cut the processor's output by default; `SamplingOptions(filter_order="before_processor")`
cuts the model's logits before the processor instead (what a distribution-preserving watermark
needs to stay unbiased with top-k sampling), see `next_token_logits`.

Compilation: one decoding program per (model, batch, padded prompt length, max_new_tokens,
options, stop ids, processor), cached; `score`/`token_logprobs` pad each batch to a power-of-two
number of rows (at most `batch_size`) and to one of a few lengths (`length_bucket`: 16, 24, 32,
48, 64, ... capped at the model's context), so scoring texts of many lengths compiles a handful of
programs, not one per length.
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


def filter_logits(logits: jax.Array, options: SamplingOptions) -> jax.Array:
    """`logits` [batch, vocab] with -inf outside the top-k / top-p set of `options` (float32).

    The scale is unchanged (the temperature only decides the top-p set, computed on
    softmax(logits / temperature)); with temperature 0 (greedy) nothing is cut.
    """
    logits = logits.astype(jnp.float32)
    if options.temperature == 0:
        return logits
    if options.top_k:
        k = min(options.top_k, logits.shape[-1])
        kth = jax.lax.top_k(logits, k)[0][..., -1:]
        logits = jnp.where(logits < kth, -jnp.inf, logits)
    if options.top_p < 1.0:
        sorted_logits = jnp.sort(logits, axis=-1)[..., ::-1]
        probs = jax.nn.softmax(sorted_logits / options.temperature, axis=-1)
        # Keep tokens whose preceding cumulative mass is below top_p (the top token always stays).
        before = jnp.cumsum(probs, axis=-1) - probs
        cutoff = jnp.min(jnp.where(before < options.top_p, sorted_logits, jnp.inf), axis=-1, keepdims=True)
        logits = jnp.where(logits < cutoff, -jnp.inf, logits)
    return logits


def next_token_logits(logits: jax.Array, options: SamplingOptions, processor: LogitsProcessor | None = None,
                      context: jax.Array | None = None, step: jax.Array | None = None,
                      key: jax.Array | None = None) -> jax.Array:
    """The logits [batch, vocab] the next token is drawn from: softmax(result / temperature) is
    the sampling distribution (argmax when greedy).

    The processor `(logits, context, step, key) -> logits` (if any) and the top-k/top-p filters
    run in the order `options.filter_order`: 'after_processor' filters the processor's output,
    'before_processor' gives the processor the filtered logits (-inf outside the kept set).
    """
    logits = logits.astype(jnp.float32)
    if processor is None:
        return filter_logits(logits, options)
    if options.filter_order == "before_processor":
        return processor(filter_logits(logits, options), context, step, key).astype(jnp.float32)
    return filter_logits(processor(logits, context, step, key), options)


def sample_logits(logits: jax.Array, key: jax.Array, options: SamplingOptions) -> jax.Array:
    """Next tokens int32 [batch] from logits [batch, vocab] (greedy when temperature == 0),
    after the top-k/top-p filters of `options`."""
    logits = filter_logits(logits, options)
    return _draw(logits, key, options)


def _draw(logits: jax.Array, key: jax.Array, options: SamplingOptions) -> jax.Array:
    """A token per row from already filtered logits: argmax (greedy) or softmax(logits / T)."""
    if options.temperature == 0:
        return jnp.argmax(logits, axis=-1).astype(jnp.int32)
    return jax.random.categorical(key, logits / options.temperature, axis=-1).astype(jnp.int32)


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
             processor: LogitsProcessor | None, use_cache: bool, samples: int = 1):
    """The jitted `(params, prompt, valid, key) -> (tokens, done, steps)` program for these statics."""
    def run(params, prompt, valid, key):
        # `_decode_program` is looked up when jit traces `run` (tests count the traces).
        return _decode_program(model, max_new, options, stop_ids, pad_id, processor, use_cache,
                               params, prompt, valid, key, samples)

    return jax.jit(run)


def _decode_program(model: Llama, max_new: int, options: SamplingOptions, stop_ids: tuple[int, ...],
                    pad_id: int, processor: LogitsProcessor | None, use_cache: bool, params, prompt, valid, key,
                    samples: int = 1):
    """Prefill, then a `lax.while_loop` of decode steps (traced once per compiled program). With
    `samples` > 1 every prompt's prefill (logits and KV cache) is repeated `samples` times after it is
    computed once, and the rows decode independently (prompt-major order)."""
    config = model.config
    stops = jnp.asarray(stop_ids if stop_ids else (-1,), jnp.int32)
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
        if samples > 1:
            repeat = functools.partial(jnp.repeat, repeats=samples, axis=0)
            logits, cache, key_valid, n_real = repeat(logits), jax.tree.map(repeat, cache), repeat(key_valid), \
                repeat(n_real)
            prompt, valid, positions = repeat(prompt), repeat(valid), repeat(positions)
            batch = batch * samples
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
        last = next_token_logits(last, options, processor, context, step, processor_key)
        token = jnp.where(done, pad_id, _draw(last, sample_key, options))
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


def generate(model: Llama, params, prompts: Sequence[Sequence[int]], *, max_new_tokens: int,
             sampling: SamplingOptions | None = None, stop_ids: Sequence[int] = (), pad_id: int = 0,
             key: jax.Array | None = None, logits_processor: LogitsProcessor | None = None,
             bucket: int = 16, use_cache: bool = True, samples_per_prompt: int = 1) -> GenerationOutput:
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
      samples_per_prompt: rows decoded per prompt from one shared prefill (sampling only makes them
        differ); the output has `len(prompts) * samples_per_prompt` rows, prompt-major. Needs the cache.
    Raises:
      ValueError: empty prompt, ids outside the vocabulary, or prompt + max_new_tokens longer than
        the model's context.
    """
    if max_new_tokens <= 0:
        raise ValueError(f"max_new_tokens={max_new_tokens} must be positive")
    if isinstance(samples_per_prompt, bool) or not isinstance(samples_per_prompt, int) or samples_per_prompt < 1:
        raise ValueError(f"samples_per_prompt={samples_per_prompt!r} must be an int >= 1")
    if samples_per_prompt > 1 and not use_cache:
        raise ValueError("samples_per_prompt > 1 shares the prefill's KV cache: it needs use_cache=True")
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
                   logits_processor, bool(use_cache), int(samples_per_prompt))
    out, done, steps = jax.device_get(run(params, tokens, valid, key))
    stop_set = np.asarray(sorted(set(stop_ids)) or [-1])
    is_stop = np.isin(out, stop_set)
    lengths = np.where(is_stop.any(1), is_stop.argmax(1), max_new_tokens)
    return GenerationOutput(tokens=out, lengths=lengths, stopped=done, prompt_len=tokens.shape[1], steps=int(steps))


# --- Scoring ---------------------------------------------------------------------------------------

def length_bucket(n: int, limit: int) -> int:
    """The padded length for `n` tokens: the smallest of 16, 24, 32, 48, 64, 96, 128, ... (powers
    of two and their midpoints) that is >= n, capped at `limit` (the model's context). At most
    1.5x padding, and 2 log2(limit / 16) + 1 distinct lengths at most (19 for a context of 8192)."""
    if n > limit:
        raise ValueError(f"{n} tokens exceed the limit of {limit}")
    size = 16
    while size < n:
        size = size * 3 // 2 if (size & (size - 1)) == 0 else size * 4 // 3
    return min(size, limit)


def _row_bucket(n: int, batch_size: int) -> int:
    """Rows of a padded batch: the next power of two >= n, at most `batch_size` (n <= batch_size)."""
    return min(1 << max(n - 1, 0).bit_length(), batch_size)


@functools.lru_cache(maxsize=8)
def _token_logprobs_fn(model: Llama):
    def run(params, tokens, valid):
        # `_logprobs_program` is looked up when jit traces `run` (tests count the traces).
        return _logprobs_program(model, params, tokens, valid)

    return jax.jit(run)


def _logprobs_program(model: Llama, params, tokens, valid):
    """log p(token t | tokens < t) float32 [batch, len - 1] of right-padded rows."""
    positions = jnp.maximum(jnp.cumsum(valid, axis=1) - 1, 0)
    logits, _ = model.apply({"params": params}, tokens, positions, key_valid=valid)
    logp = jax.nn.log_softmax(logits[:, :-1].astype(jnp.float32), axis=-1)
    return jnp.take_along_axis(logp, tokens[:, 1:, None], axis=-1)[..., 0]


def token_logprobs(model: Llama, params, sequences: Sequence[Sequence[int]], *, pad_id: int = 0,
                   batch_size: int = 16) -> list[np.ndarray]:
    """log p(token_t | tokens_<t) for t >= 1 of each sequence: float32 [len - 1] per sequence.

    Sequences are sorted by length and scored `batch_size` at a time; each batch is right-padded
    to `length_bucket(longest)` tokens and to a power-of-two number of rows (at most
    `batch_size`), so the compiled programs are few whatever the lengths.
    """
    if not sequences:
        raise ValueError("no sequences given")
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise ValueError(f"batch_size={batch_size!r} must be an int >= 1")
    _check_tokens(sequences, model.config.vocab_size)
    lengths = [len(s) for s in sequences]
    if min(lengths) < 2:
        raise ValueError("every sequence needs at least 2 tokens to be scored")
    if max(lengths) > model.config.max_len:
        raise ValueError(f"a sequence of {max(lengths)} tokens exceeds the context of {model.config.max_len}")
    run = _token_logprobs_fn(model)
    order = np.argsort(lengths, kind="stable")
    out: list[np.ndarray | None] = [None] * len(sequences)
    for start in range(0, len(order), batch_size):
        chunk = order[start:start + batch_size]
        length = length_bucket(max(lengths[i] for i in chunk), model.config.max_len)
        rows = _row_bucket(len(chunk), batch_size)
        tokens = np.full((rows, length), pad_id, np.int32)
        valid = np.zeros((rows, length), bool)
        valid[len(chunk):, 0] = True   # filler rows: one token each, so no row attends to nothing
        for r, i in enumerate(chunk):   # right padding: position t is token t
            tokens[r, :lengths[i]] = sequences[i]
            valid[r, :lengths[i]] = True
        logp = np.asarray(run(params, tokens, valid))
        for r, i in enumerate(chunk):
            out[i] = logp[r, :lengths[i] - 1]
    return out


def score(model: Llama, params, prompts: Sequence[Sequence[int]], continuations: Sequence[Sequence[int]],
          *, pad_id: int = 0, batch_size: int = 16) -> list[np.ndarray]:
    """Per-token log-probabilities of each continuation given its prompt (token ids).

    Returns float32 [len(continuation)] per pair: entry j is log p(c_j | prompt, c_<j). Batching
    and padding as `token_logprobs`.
    """
    if len(prompts) != len(continuations):
        raise ValueError(f"{len(prompts)} prompts but {len(continuations)} continuations")
    for i, (p, c) in enumerate(zip(prompts, continuations)):
        if not len(p) or not len(c):
            raise ValueError(f"pair {i}: prompt and continuation must both be non-empty")
    joined = [list(p) + list(c) for p, c in zip(prompts, continuations)]
    logps = token_logprobs(model, params, joined, pad_id=pad_id, batch_size=batch_size)
    return [lp[len(p) - 1:] for lp, p in zip(logps, prompts)]


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
        logps = token_logprobs(model, params, [tokens[s:e] for s, e, _ in chunk], batch_size=batch_size)
        for (start, _, first), lp in zip(chunk, logps):
            part = lp[first - start - 1:]   # lp[j] = log p(token start+j+1 | tokens start..start+j)
            total -= float(part.sum())
            count += len(part)
    nll = total / count
    return {"nll": nll, "perplexity": math.exp(nll), "tokens": count, "windows": len(windows)}
