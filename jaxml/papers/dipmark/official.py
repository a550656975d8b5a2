"""The official DiPmark release's permutation family and rules: what `mode="official"` runs.

The release (github.com/yihwu/DiPmark, adapted from xiaoniu-578fa6bff964d005/UnbiasedWatermark)
does the following; every point is reproduced here so that a token sequence watermarked by the
authors' code (run with CPU generators, see the caveat) is detected by ours and the reverse.

1. **Key derivation** (`dipmark/transformers.py::WatermarkLogitsProcessor.get_rng_seed`, with
   `contextcode.py::PrevN_ContextCodeExtractor(5)`): the context code is the bytes of the last
   (up to) 5 token ids, `context[-5:].numpy().tobytes()` (int64, little-endian; *fewer* bytes when
   the context holds fewer than 5 tokens), and seed = int(SHA-256(code || private key), big-endian)
   mod (2^32 - 1). The experiments' private key is `random.seed(42); random.getrandbits(1024)
   .to_bytes(128, "big")` (`experiments/common.py::get_wps`): int keys are big-endian here.
2. **Shuffle** (`dipmark/dipmark.py::Dipmark_WatermarkCode.from_random`):
   `torch.randperm(V, generator=torch.Generator(device).manual_seed(seed))`, `shuffle[p]` = the
   token at position p. With a CPU generator this is MT19937 (`init_genrand(seed)`, standard
   tempering) and the Fisher-Yates pass of ATen's `randperm_cpu`: for i = 0 .. V - 2,
   z = next_uint32() % (V - i), swap(perm[i], perm[i + z]). `shuffle` computes it bit for bit;
   `positions` the position of given tokens without building the permutation.
3. **Green list** (`WatermarkLogitsProcessor.get_green_token_quantile` and
   `experiments/common.py::dip_score_worker`): quantile q = (pos + 1) / V in float32, green iff
   q >= gamma (`green`); KGW's `soft.py::Soft_Reweight` adds delta at positions >= int(V gamma).
4. **Reweight order**: the processor is passed as a logits *warper*, and `monkeypatch.patch_model`
   appends it after transformers' default warpers (`_merge_criteria_processor_list` extends the
   default list), so at sampling time the order is temperature, top-k 50 (transformers' default),
   then the reweight of the filtered, renormalised softmax(logits / T). `sampling_options()` is
   that order for `jaxml.llm.generate`.
5. **Repeated contexts** (`WatermarkLogitsProcessor._get_codes`, `ignore_history=False` for the
   DiPmark processors): one history set per processor, reset at each `generate` call and shared
   by all rows of the batch; a step whose code is already in it (from any row at an earlier step,
   or from an earlier row at this step) is sampled from the unreweighted logits. The KGW (`Soft`)
   processors and the detector run with `ignore_history=True` (`repeated_context`).

Caveat: on a CUDA device `torch.randperm` is a different algorithm (a radix sort of Philox keys
whose layout follows the GPU's multiprocessor count), and the release ran its models on
`cuda:{gpu_id}` with `torch.Generator(device=scores.device)`, so its published generations used
a device-dependent permutation that no CPU implementation reproduces; the CPU-generator family
here is the deterministic, machine-independent one of the same code.
"""

from __future__ import annotations

import functools
import hashlib

import jax
import jax.numpy as jnp
import numpy as np

from jaxml.papers.dipmark import keys

TOP_K = 50          # transformers' default top_k, in force in every sampling run of the release
_MT_N = 624         # MT19937 state words
_MT_M = 397


# --- MT19937 (torch's CPU generator, = numpy's RandomState(seed) stream) --------------------------

def _mt_init(seeds: jax.Array) -> jax.Array:
    """init_genrand: uint32 [...] seeds -> uint32 [..., 624] state."""
    def step(prev, j):
        nxt = np.uint32(1812433253) * (prev ^ (prev >> np.uint32(30))) + j
        return nxt, nxt

    _, rest = jax.lax.scan(step, seeds, jnp.arange(1, _MT_N, dtype=jnp.uint32))
    return jnp.concatenate([seeds[..., None], jnp.moveaxis(rest, 0, -1)], axis=-1)


def _mt_mix(cur, nxt, far):
    y = (cur & np.uint32(0x80000000)) | (nxt & np.uint32(0x7FFFFFFF))
    return far ^ (y >> np.uint32(1)) ^ jnp.where((y & np.uint32(1)) == 1, np.uint32(0x9908B0DF), np.uint32(0))


def _mt_twist(mt: jax.Array) -> jax.Array:
    """The next 624-word state [..., 624], vectorised in the four runs of the in-place recurrence
    (word k reads word k + 397, which is new for k >= 227)."""
    a = _mt_mix(mt[..., :227], mt[..., 1:228], mt[..., _MT_M:])                 # k in [0, 227)
    b = _mt_mix(mt[..., 227:454], mt[..., 228:455], a)                           # k in [227, 454)
    c = _mt_mix(mt[..., 454:623], mt[..., 455:624], b[..., :169])                # k in [454, 623)
    d = _mt_mix(mt[..., 623:], a[..., :1], b[..., 169:170])                      # k = 623
    return jnp.concatenate([a, b, c, d], axis=-1)


def _mt_temper(y: jax.Array) -> jax.Array:
    y = y ^ (y >> np.uint32(11))
    y = y ^ ((y << np.uint32(7)) & np.uint32(0x9D2C5680))
    y = y ^ ((y << np.uint32(15)) & np.uint32(0xEFC60000))
    return y ^ (y >> np.uint32(18))


@functools.partial(jax.jit, static_argnames=("count",))
def mt19937_words(seeds: jax.Array, count: int) -> jax.Array:
    """The first `count` outputs uint32 [..., count] of MT19937 seeded with `seeds` uint32 [...]
    (torch's `Generator().manual_seed(seed)` `random()` stream)."""
    seeds = jnp.asarray(seeds, jnp.uint32)
    blocks = -(-count // _MT_N)

    def block(mt, _):
        mt = _mt_twist(mt)
        return mt, _mt_temper(mt)

    _, out = jax.lax.scan(block, _mt_init(seeds), None, length=blocks)        # [blocks, ..., 624]
    out = jnp.moveaxis(out, 0, -2).reshape(seeds.shape + (blocks * _MT_N,))
    return out[..., :count]


# --- torch.randperm on a CPU generator ------------------------------------------------------------

def _fisher_yates(step, state, seeds: jax.Array, n: int):
    """torch's `randperm_cpu` swap schedule for seeds uint32 [] or [rows]: at step i = 0 .. n - 2,
    j = i + (the i-th MT19937 word mod (n - i)); `state = step(i, j, state)` (j int32 [] or [rows]).
    Returns the final state."""

    def block(b, carry):
        state, mt = carry
        mt = _mt_twist(mt)
        words = _mt_temper(mt)
        start = b * _MT_N

        def swap(k, state):
            i = start + k
            return step(i, i + (words[..., k] % (n - i).astype(jnp.uint32)).astype(jnp.int32), state)

        return jax.lax.fori_loop(0, jnp.minimum(_MT_N, n - 1 - start), swap, state), mt

    state, _ = jax.lax.fori_loop(0, -(-(n - 1) // _MT_N), block, (state, _mt_init(seeds)))
    return state


def _shuffle_row(seed: jax.Array, vocab_size: int) -> jax.Array:
    """One row of `shuffle`: int32 [V]. The swaps are a two-element scatter, done in place by XLA
    (a dynamic-update-slice pair copies the row each step on CPU, 60x slower)."""

    def swap(i, j, perm):
        idx = jnp.stack([i, j])
        return perm.at[idx].set(perm[idx][::-1], mode="promise_in_bounds")   # i == j: same value twice

    return _fisher_yates(swap, jnp.arange(vocab_size, dtype=jnp.int32), seed, vocab_size)


@functools.partial(jax.jit, static_argnames=("vocab_size",))
def shuffle(seeds: jax.Array, vocab_size: int) -> jax.Array:
    """`torch.randperm(V, generator=torch.Generator().manual_seed(seed))` for each seed.

    Args:
      seeds: uint32 [...] (the release's seeds are < 2^32 - 1).
      vocab_size: V.
    Returns:
      int32 [..., V]: entry p is the token at position p (the release's `code.shuffle`). The rows
      are shuffled one after the other (V - 1 sequential swaps each; about 4 ms at V = 49,152 on
      one CPU core).
    """
    seeds = jnp.asarray(seeds, jnp.uint32)
    rows = jax.lax.map(lambda s: _shuffle_row(s, vocab_size), seeds.reshape(-1))
    return rows.reshape(seeds.shape + (vocab_size,))


def inverse(order: jax.Array) -> jax.Array:
    """Positions int32 [..., V] (token -> position) of permutations `order` [..., V] (position -> token)."""
    lead, v = order.shape[:-1], order.shape[-1]
    flat = order.reshape(-1, v)
    pos = jnp.zeros_like(flat).at[jnp.arange(flat.shape[0])[:, None], flat].set(
        jnp.broadcast_to(jnp.arange(v, dtype=flat.dtype), flat.shape), unique_indices=True)
    return pos.reshape(lead + (v,))


@functools.partial(jax.jit, static_argnames=("vocab_size",))
def positions(tokens: jax.Array, seeds: jax.Array, vocab_size: int) -> jax.Array:
    """Position of each token in its seed's `shuffle`, without building the permutation.

    Args:
      tokens: int32 in [0, V), broadcast against `seeds` (uint32).
    Returns:
      int32, the broadcast shape: the p with shuffle(seed)[p] = token. The token is followed
      through the Fisher-Yates swaps (at step i it moves i -> i + z or i + z -> i), so each token
      costs V - 1 compare-and-selects instead of a V-long permutation in memory.
    """
    tokens, seeds = jnp.broadcast_arrays(jnp.asarray(tokens, jnp.int32), jnp.asarray(seeds, jnp.uint32))
    shape = tokens.shape

    def swap(i, j, pos):
        return jnp.where(pos == i, j, jnp.where(pos == j, i, pos))

    pos = _fisher_yates(swap, tokens.reshape(-1), seeds.reshape(-1), vocab_size)
    return pos.reshape(shape)


# --- Seeds of short context codes -----------------------------------------------------------------

@functools.partial(jax.jit, static_argnames=("key_bytes",))
def context_seeds(codes: jax.Array, key_bytes: bytes) -> jax.Array:
    """The release's seeds uint32 [...] for context codes int32 [..., width].

    -1 entries (only on the left, as in a right-aligned context) are *absent* tokens: a code with
    k valid tokens hashes 8 k bytes, as `context[-5:].tobytes()` of a context shorter than 5
    (`keys.context_seeds` instead hashes -1 as int64 -1). Equal to `keys.context_seeds` for codes
    without -1. The messages of every k = 0 .. width are hashed (in one SHA-256 call per padded
    length) and the right one is selected.
    """
    codes = jnp.asarray(codes, jnp.int32)
    width, lead = codes.shape[-1], codes.shape[:-1]
    groups: dict[int, list[tuple[int, jax.Array]]] = {}
    key_only = keys.pad_message(key_bytes)
    for k in range(width + 1):   # message for k tokens: the last k entries of the code || key
        message = (keys.context_message(codes[..., width - k:], key_bytes) if k else
                   jnp.broadcast_to(jnp.asarray(key_only), lead + key_only.shape))
        groups.setdefault(message.shape[-1], []).append((k, message))
    valid = jnp.sum(codes >= 0, axis=-1)
    seeds = jnp.zeros(lead, jnp.uint32)
    for members in groups.values():
        digests = keys.digest_mod(keys.sha256_words(jnp.stack([m for _, m in members], axis=-2)))   # [..., K]
        for i, (k, _) in enumerate(members):
            seeds = jnp.where(valid == k, digests[..., i], seeds)
    return seeds


def _seed_reference(code_bytes: bytes, key_bytes: bytes) -> int:
    return int.from_bytes(hashlib.sha256(code_bytes + key_bytes).digest(), "big") % (2 ** 32 - 1)


def context_seed_reference(code, key_bytes: bytes) -> int:
    """The release's seed of one code with `hashlib` (-1 entries dropped): the specification."""
    code = [int(t) for t in code if int(t) >= 0]
    return _seed_reference(np.asarray(code, np.int64).astype("<i8").tobytes(), key_bytes)


# --- Green list, repeated contexts, sampling order ------------------------------------------------

def green(positions: np.ndarray, vocab_size: int, gammas) -> np.ndarray:
    """bool [..., G]: (pos + 1) / V >= gamma in float32, as the release (`get_green_token_quantile`
    divides in float32; the comparison casts gamma to float32). Under the null a token is green
    with probability (V - ceil(gamma V) + 1) / V: one token more than 1 - gamma of them."""
    quantile = (np.asarray(positions, np.int64) + 1).astype(np.float32) / np.float32(vocab_size)
    return quantile[..., None] >= np.asarray(gammas, np.float32)


def kgw_green_start(vocab_size: int, gamma: float) -> int:
    """First green position of the release's KGW (`Soft_Reweight`: positions >= int(V gamma))."""
    return int(vocab_size * gamma)


def repeated_context(context: jax.Array, step: jax.Array, width: int) -> jax.Array:
    """bool [batch]: the release's history rule for the current step.

    A row's current code (last `width` tokens of `context` int32 [batch, L], right-aligned, -1 for
    no token) is repeated when it equals the code of *any* row at an earlier generation step (one
    of the last `step` windows of each row) or the current code of an earlier row: the release's
    `cc_history` is one set per processor, shared by the batch and filled row by row. Codes with
    -1 entries are shorter byte strings there; two of them are equal iff the windows are.
    """
    batch, length = context.shape
    current = context[:, length - width:]                                      # [B, w]
    now = jnp.all(current[:, None] == current[None], axis=-1) & (jnp.arange(batch)[None] < jnp.arange(batch)[:, None])
    if length <= width:
        return jnp.any(now, axis=1)
    starts = length - width                                                    # windows at s in [0, L - w)
    same = jnp.ones((batch, batch, starts), bool)
    for j in range(width):
        same &= context[None, :, j:j + starts] == current[:, None, j:j + 1]
    distance = starts - jnp.arange(starts)                                     # generation steps back
    earlier = jnp.any(same & (distance <= step)[None, None], axis=(1, 2))
    return earlier | jnp.any(now, axis=1)


def sampling_options(temperature: float = 1.0, top_k: int = TOP_K):
    """`SamplingOptions` in the release's order: temperature and top-k cut the model's logits
    first, the watermark reweights what is left (`filter_order='before_processor'`)."""
    from jaxml.llm.base import SamplingOptions

    if not temperature > 0:
        raise ValueError(f"temperature={temperature} must be > 0: the release samples (do_sample=True)")
    return SamplingOptions(temperature=float(temperature), top_k=int(top_k), filter_order="before_processor")


def key_bytes(key) -> bytes:
    """The private key as the release holds it: bytes as given; an int as 128 bytes big-endian."""
    return keys.as_key_bytes(key, byteorder="big")


def null_green_probability(vocab_size: int, gamma: float) -> float:
    """Exact probability that a uniformly placed token is green under `green` (counted)."""
    return float(green(np.arange(vocab_size), vocab_size, [gamma]).mean())
