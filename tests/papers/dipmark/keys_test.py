"""SHA-256 in jnp against hashlib, context seeds, the keyed permutation, key validation."""

import hashlib

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxml.papers.dipmark import keys


@pytest.mark.parametrize("length", [0, 1, 55, 56, 63, 64, 119, 168, 300])
def test_sha256_is_bit_exact_against_hashlib(length):
    rng = np.random.default_rng(length)
    messages = [bytes(rng.integers(0, 256, length, dtype=np.uint8)) for _ in range(4)]
    words = np.stack([keys.pad_message(m) for m in messages])
    digest = np.asarray(jax.jit(keys.sha256_words)(words))
    for m, d in zip(messages, digest):
        assert d.astype(">u4").tobytes() == hashlib.sha256(m).digest()


def test_context_seeds_match_hashlib_on_random_codes():
    rng = np.random.default_rng(0)
    key = keys.as_key_bytes(int(rng.integers(0, 2 ** 62)) * 2 ** 900 + 12345)
    codes = rng.integers(-1, 49152, (3, 40, 5)).astype(np.int32)   # -1: no token (int64 -1 bytes)
    codes[0, 0] = -1
    seeds = np.asarray(jax.jit(lambda c: keys.context_seeds(c, key))(codes))
    ref = np.array([[keys.context_seed_reference(c, key) for c in row] for row in codes], np.uint32)
    np.testing.assert_array_equal(seeds, ref)
    # digest mod (2^32 - 1) via the ones'-complement word sum, including the all-ones residue.
    words = np.array([[0xFFFFFFFF] * 8, [0] * 7 + [0xFFFFFFFE], [1, 2, 3, 4, 5, 6, 7, 0xFFFFFFFF]], np.uint32)
    expect = [int("".join(f"{w:08x}" for w in row), 16) % (2 ** 32 - 1) for row in words]
    np.testing.assert_array_equal(np.asarray(keys.digest_mod(jnp.asarray(words))), expect)


@pytest.mark.parametrize("vocab", [5, 97, 96, 49152])
def test_permutation_is_a_bijection_and_positions_invert_tokens(vocab):
    seeds = jnp.asarray(np.random.default_rng(vocab).integers(0, 2 ** 32 - 1, 6, dtype=np.uint64).astype(np.uint32))
    pos = np.asarray(keys.permutation_positions(jnp.arange(vocab)[None], seeds[:, None], vocab))
    for row in pos:
        np.testing.assert_array_equal(np.sort(row), np.arange(vocab))
    tokens = np.asarray(keys.permutation_tokens(jnp.asarray(pos), seeds[:, None], vocab))
    np.testing.assert_array_equal(tokens, np.broadcast_to(np.arange(vocab), tokens.shape))


def test_seed_bit_zero_reverses_the_permutation_and_seeds_differ():
    vocab = 97
    seeds = jnp.asarray([10, 11, 12, 13], jnp.uint32)
    pos = np.asarray(keys.permutation_positions(jnp.arange(vocab)[None], seeds[:, None], vocab))
    np.testing.assert_array_equal(pos[1], vocab - 1 - pos[0])
    np.testing.assert_array_equal(pos[3], vocab - 1 - pos[2])
    assert (pos[0] != pos[2]).mean() > 0.9   # different keys, unrelated orders


def test_permutation_positions_are_close_to_uniform_over_seeds():
    """Each token's position over many seeds is spread over [0, V) (a chi-square-style check)."""
    vocab, n = 96, 20000
    seeds = jnp.asarray(np.arange(n, dtype=np.uint32) * np.uint32(2654435761))
    pos = np.asarray(keys.permutation_positions(jnp.full((n,), 7), seeds, vocab))
    counts = np.bincount(pos, minlength=vocab)
    expected = n / vocab
    chi2 = ((counts - expected) ** 2 / expected).sum()
    assert chi2 < vocab + 5 * np.sqrt(2 * vocab)   # df = 95: mean 95, sd 13.8


@pytest.mark.parametrize("bad,error", [("secret", TypeError), (1.5, TypeError), (True, TypeError), (None, TypeError),
                                       (-1, ValueError), (2 ** 1024, ValueError), (b"", ValueError)])
def test_bad_keys_are_rejected(bad, error):
    with pytest.raises(error, match="private key"):
        keys.as_key_bytes(bad)


def test_int_keys_are_128_bytes_little_endian():
    assert keys.as_key_bytes(1) == b"\x01" + b"\x00" * 127
    assert keys.as_key_bytes(b"abc") == b"abc"
