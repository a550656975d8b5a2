"""Watermark keys: private key, context codes, SHA-256 seeds and the keyed vocabulary permutation.

The official DiPmark code (`yihwu/DiPmark`) seeds `torch.randperm(|V|)` with
SHA-256(context_code || private_key) mod (2^32 - 1), where the context code is the bytes of the
previous 5 token ids (int64, little-endian). Everything here runs inside `jit`, per generation
step and per scored token:

* `sha256_words`: FIPS 180-4 SHA-256 over uint32 words in `jnp`, vectorised over a batch of
  fixed-length messages; bit-exact against `hashlib.sha256` (tested).
* `context_seeds`: message = 5 tokens as int64 little-endian bytes || key bytes, digest read as a
  big-endian 256-bit integer, seed = digest mod (2^32 - 1). Because 2^32 = 1 mod (2^32 - 1), the
  residue is the ones'-complement sum of the eight digest words (exact in uint32).
* `permutation_positions` / `permutation_tokens`: the permutation itself. `torch.randperm` cannot be
  reproduced bit for bit, and sorting 49,152 random numbers per row per step is too slow on CPU, so
  the permutation is a keyed bijection of [0, V) computed elementwise: a 4-round Feistel network
  on Z_m x Z_n (m n = V when V factors evenly, e.g. 192 x 256 for SmolLM2's 49,152; otherwise
  m = ceil(sqrt V), n = ceil(V / m), with cycle walking back into [0, V)),
  whose round functions hash (seed, round, half); bit 0 of the seed reverses the order. The
  reversal bit makes the key distribution symmetric under reversing the permutation, which is all
  DiPmark's unbiasedness proof needs (reweights of a permutation and its reverse average to P), so
  distribution preservation over keys holds exactly for this family, not only for uniform
  permutations.

Accepted private keys (`as_key_bytes`): `bytes` (1 to 512 bytes), or a non-negative `int` below
2^1024, encoded as 128 bytes little-endian (ours; the official release encodes its
`getrandbits(1024)` key big-endian, which `mode="official"` does, see `official.py`).

This module is the default family (`mode="ours"`); `official.py` holds the release's
(`torch.randperm` on an MT19937 generator) for `mode="official"`.
"""

from __future__ import annotations

import functools
import hashlib
import math

import jax
import jax.numpy as jnp
import numpy as np

CONTEXT_WIDTH = 5
KEY_INT_BYTES = 128
MAX_KEY_BYTES = 512

_K = np.array([
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
], np.uint32)
_H0 = np.array([0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19],
               np.uint32)


def as_key_bytes(key, byteorder: str = "little") -> bytes:
    """The private key as bytes: `bytes`/`bytearray` (1..512 bytes) or an `int` in [0, 2^1024)
    (128 bytes in `byteorder`: 'little', ours; 'big', the official release's
    `getrandbits(1024).to_bytes(128, "big")`). Anything else (a `str`, a float, a bool, a negative
    int) is an error."""
    if byteorder not in ("little", "big"):
        raise ValueError(f"byteorder={byteorder!r}; accepted: 'little', 'big'")
    if isinstance(key, (bytes, bytearray)):
        if not 1 <= len(key) <= MAX_KEY_BYTES:
            raise ValueError(f"private key of {len(key)} bytes; accepted: 1 to {MAX_KEY_BYTES} bytes")
        return bytes(key)
    if isinstance(key, (int, np.integer)) and not isinstance(key, (bool, np.bool_)):
        key = int(key)
        if not 0 <= key < 2 ** (8 * KEY_INT_BYTES):
            raise ValueError(f"integer private key {key} must be in [0, 2^{8 * KEY_INT_BYTES})")
        return key.to_bytes(KEY_INT_BYTES, byteorder)
    hint = " (encode text keys explicitly, e.g. key.encode() or bytes.fromhex(key))" if isinstance(key, str) else ""
    raise TypeError(f"private key of type {type(key).__name__}; accepted: bytes (1 to {MAX_KEY_BYTES}) "
                    f"or a non-negative int below 2^{8 * KEY_INT_BYTES}{hint}")


# --- SHA-256 over uint32 words -----------------------------------------------------------------

def _rotr(x, n):
    return (x >> np.uint32(n)) | (x << np.uint32(32 - n))


def _compress(state, block):
    """One SHA-256 compression. state: uint32 [8, ...]; block: uint32 [16, ...] (big-endian words)."""
    def schedule(window, _):
        w0, w1, w9, w14 = window[0], window[1], window[9], window[14]
        s0 = _rotr(w1, 7) ^ _rotr(w1, 18) ^ (w1 >> np.uint32(3))
        s1 = _rotr(w14, 17) ^ _rotr(w14, 19) ^ (w14 >> np.uint32(10))
        new = w0 + s0 + w9 + s1
        return jnp.concatenate([window[1:], new[None]], axis=0), w0

    _, w = jax.lax.scan(schedule, block, None, length=64)

    def round_(vars_, kw):
        a, b, c, d, e, f, g, h = vars_
        k, wt = kw
        s1 = _rotr(e, 6) ^ _rotr(e, 11) ^ _rotr(e, 25)
        ch = (e & f) ^ (~e & g)
        t1 = h + s1 + ch + k + wt
        s0 = _rotr(a, 2) ^ _rotr(a, 13) ^ _rotr(a, 22)
        maj = (a & b) ^ (a & c) ^ (b & c)
        t2 = s0 + maj
        return (t1 + t2, a, b, c, d + t1, e, f, g), None

    out, _ = jax.lax.scan(round_, tuple(state), (jnp.asarray(_K), w))
    return state + jnp.stack(out)


def sha256_words(message: jax.Array) -> jax.Array:
    """SHA-256 of already padded messages.

    Args:
      message: uint32 [batch..., 16 * blocks], big-endian words of the padded message (FIPS 180-4).
    Returns:
      uint32 [batch..., 8], the digest words (big-endian order: word 0 is the first 4 bytes).
    """
    message = jnp.asarray(message, jnp.uint32)
    if message.shape[-1] % 16:
        raise ValueError(f"padded message of {message.shape[-1]} words is not a multiple of 16")
    words = jnp.moveaxis(message, -1, 0)
    state = jnp.broadcast_to(jnp.asarray(_H0).reshape((8,) + (1,) * (words.ndim - 1)), (8,) + words.shape[1:])
    blocks = words.reshape((-1, 16) + words.shape[1:])
    # one compression body scanned over the blocks: a third of the program for a 3-block message
    state, _ = jax.lax.scan(lambda st, block: (_compress(st, block), None), state, blocks)
    return jnp.moveaxis(state, 0, -1)


def pad_message(data: bytes) -> np.ndarray:
    """FIPS 180-4 padding of `data`: uint32 big-endian words, a multiple of 16 of them."""
    length = len(data)
    padded = data + b"\x80" + b"\x00" * ((55 - length) % 64) + (8 * length).to_bytes(8, "big")
    return np.frombuffer(padded, ">u4").astype(np.uint32)


def _bswap(x):
    return ((x & np.uint32(0xFF)) << np.uint32(24)) | ((x & np.uint32(0xFF00)) << np.uint32(8)) | \
        ((x >> np.uint32(8)) & np.uint32(0xFF00)) | (x >> np.uint32(24))


def context_message(codes: jax.Array, key_bytes: bytes) -> jax.Array:
    """Padded SHA-256 messages for context codes: tokens as int64 little-endian bytes || key.

    Args:
      codes: int32 [batch..., width] token ids (-1 where there is no token: encoded as int64 -1).
      key_bytes: the private key (`as_key_bytes`).
    Returns:
      uint32 [batch..., 16 * blocks].
    """
    codes = jnp.asarray(codes, jnp.int32)
    width = codes.shape[-1]
    template = pad_message(b"\x00" * (8 * width) + key_bytes)
    low = _bswap(codes.astype(jnp.uint32))                     # int64 LE: low 4 bytes, then the sign
    high = jnp.where(codes < 0, np.uint32(0xFFFFFFFF), np.uint32(0))
    tokens = jnp.stack([low, high], axis=-1).reshape(codes.shape[:-1] + (2 * width,))
    rest = jnp.broadcast_to(jnp.asarray(template[2 * width:]), codes.shape[:-1] + (len(template) - 2 * width,))
    return jnp.concatenate([tokens, rest], axis=-1)


def digest_mod(digest: jax.Array) -> jax.Array:
    """int(digest, big-endian) mod (2^32 - 1) from uint32 [..., 8] digest words (uint32 [...])."""
    total = jnp.zeros(digest.shape[:-1], jnp.uint32)
    for i in range(digest.shape[-1]):            # ones'-complement sum: 2^32 = 1 mod (2^32 - 1)
        s = total + digest[..., i]
        total = s + (s < total).astype(jnp.uint32)
    return jnp.where(total == np.uint32(0xFFFFFFFF), np.uint32(0), total)


@functools.partial(jax.jit, static_argnames=("key_bytes",))
def context_seeds(codes: jax.Array, key_bytes: bytes) -> jax.Array:
    """Seeds uint32 [...] = SHA-256(code bytes || key) mod (2^32 - 1) for codes int32 [..., width]."""
    return digest_mod(sha256_words(context_message(codes, key_bytes)))


def context_seed_reference(code, key_bytes: bytes) -> int:
    """The same seed with `hashlib` (the specification, for tests and the CLI's self-check)."""
    data = np.asarray(code, np.int64).astype("<i8").tobytes() + key_bytes
    return int(hashlib.sha256(data).hexdigest(), 16) % (2 ** 32 - 1)


# --- The keyed permutation ---------------------------------------------------------------------

def _mix32(x):
    """A 32-bit integer finaliser (lowbias32): an avalanche hash of uint32 values."""
    x = x ^ (x >> np.uint32(16))
    x = x * np.uint32(0x7FEB352D)
    x = x ^ (x >> np.uint32(15))
    x = x * np.uint32(0x846CA68B)
    return x ^ (x >> np.uint32(16))


def _grid(vocab_size: int) -> tuple[int, int]:
    """(m, n) with m n >= V: an exact factorisation with n <= 4 m when V has one (no cycle walking,
    e.g. 49,152 = 192 x 256 for SmolLM2), else m = ceil(sqrt V), n = ceil(V / m)."""
    root = math.isqrt(vocab_size)
    for m in range(root, 1, -1):
        if vocab_size % m == 0:
            if vocab_size // m <= 4 * m:
                return m, vocab_size // m
            break
    m = max(2, math.isqrt(vocab_size - 1) + 1)
    return m, max(2, -(-vocab_size // m))


def _round_offset(seed, r, value, modulus):
    """Round function in [0, modulus): a hash of (seed, round, value), range-reduced by a multiply."""
    h = _mix32(seed ^ _mix32(value.astype(jnp.uint32) * np.uint32(0x9E3779B1) + np.uint32((0x632BE5AB * (r + 1)) & 0xFFFFFFFF)))
    return (((h >> np.uint32(16)) * np.uint32(modulus)) >> np.uint32(16)).astype(jnp.int32)


def _feistel(x, seed, m, n, inverse):
    hi, lo = x // n, x % n
    rounds = range(3, -1, -1) if inverse else range(4)
    for r in rounds:
        if r % 2 == 0:   # lo <- lo + f(hi) mod n
            off = _round_offset(seed, r, hi, n)
            lo = (lo - off) % n if inverse else (lo + off) % n
        else:            # hi <- hi + f(lo) mod m
            off = _round_offset(seed, r, lo, m)
            hi = (hi - off) % m if inverse else (hi + off) % m
    return hi * n + lo


def _walk(x, seed, vocab_size, inverse):
    m, n = _grid(vocab_size)
    x = _feistel(x, seed, m, n, inverse)
    if m * n == vocab_size:
        return x
    # Cycle walking: a bijection of [0, m n) restricted to [0, V) by re-applying it until in range.
    return jax.lax.while_loop(lambda y: jnp.any(y >= vocab_size),
                              lambda y: jnp.where(y >= vocab_size, _feistel(y, seed, m, n, inverse), y), x)


@functools.partial(jax.jit, static_argnames=("vocab_size",))
def permutation_positions(tokens: jax.Array, seeds: jax.Array, vocab_size: int) -> jax.Array:
    """Position of each token in its seed's permutation: int32, broadcast of `tokens` and `seeds`.

    `tokens` int32 in [0, V); `seeds` uint32. Position 0 is the front of the permutation (the mass
    DiPmark removes), V - 1 the back (green).
    """
    tokens, seeds = jnp.broadcast_arrays(jnp.asarray(tokens, jnp.int32), jnp.asarray(seeds, jnp.uint32))
    pos = _walk(tokens, seeds >> np.uint32(1), vocab_size, inverse=False)
    return jnp.where((seeds & np.uint32(1)) == 1, vocab_size - 1 - pos, pos)


@functools.partial(jax.jit, static_argnames=("vocab_size",))
def permutation_tokens(positions: jax.Array, seeds: jax.Array, vocab_size: int) -> jax.Array:
    """The inverse: the token at each position of its seed's permutation (same shapes and dtypes)."""
    positions, seeds = jnp.broadcast_arrays(jnp.asarray(positions, jnp.int32), jnp.asarray(seeds, jnp.uint32))
    positions = jnp.where((seeds & np.uint32(1)) == 1, vocab_size - 1 - positions, positions)
    return _walk(positions, seeds >> np.uint32(1), vocab_size, inverse=True)
