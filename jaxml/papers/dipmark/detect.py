"""Detection without the model or the prompt: only the private key and the tokenizer.

Every token that has `context_width` tokens before it *in the text* is scored (the official
detector's `ignore_history=True`: repeated context codes are scored too); the first
`context_width` tokens of a text have no full context code and are skipped, so a text of T tokens
gives n = T - context_width scored tokens. A scored token is green for `gamma` when its position
in its context's permutation lies in the back (1 - gamma) of the vocabulary, position >= gamma V
(the part DiPmark moves probability mass to). The official code tests (position + 1) / V >= gamma,
which makes one more token green (a 1/V excess over 1 - gamma under the null); ours keeps the null
green probability at most 1 - gamma, so Hoeffding's bound holds as stated.

With L_G green tokens among n:

* DiPmark score (Wu et al., Sec. 5): Phi = (L_G - (1 - gamma) n) / sqrt(n), with Hoeffding's
  bound p <= exp(-2 Phi^2) for Phi > 0 (1 otherwise) under the null of text written without the
  key (each token green with probability 1 - gamma, independently of the text);
* KGW z-score: z = (L_G - (1 - gamma) n) / sqrt(n gamma (1 - gamma));
* the min-over-gammas variant of the official code: the smallest Hoeffding p over `gammas`. It is
  a multiple-testing shortcut (not a valid p-value without a correction); it is labelled
  `min_p_value_uncorrected` everywhere.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Sequence

import jax
import jax.numpy as jnp
import numpy as np

from jaxml.papers.dipmark import keys

GAMMAS = (0.3, 0.4, 0.5, 0.6, 0.7)
HOEFFDING_THRESHOLD_1PCT = math.sqrt(math.log(100) / 2)   # Phi at which exp(-2 Phi^2) = 0.01


@functools.lru_cache(maxsize=16)
def _positions_fn(key_bytes: bytes, vocab_size: int, width: int):
    def run(tokens, lengths):
        batch, length = tokens.shape
        codes = jnp.stack([tokens[:, j:length - width + j] for j in range(width)], axis=-1)  # [B, T-w, w]
        seeds = keys.context_seeds(codes, key_bytes)
        targets = tokens[:, width:]
        scored = jnp.arange(width, length)[None] < lengths[:, None]
        pos = keys.permutation_positions(jnp.where(scored, targets, 0), seeds, vocab_size)
        return jnp.where(scored, pos, -1)

    return jax.jit(run)


def _as_token_rows(sequences, vocab_size: int, width: int, bucket: int) -> tuple[np.ndarray, np.ndarray]:
    """Right-padded int32 [B, T] and lengths [B] from a list of token-id sequences, checked."""
    if isinstance(sequences, np.ndarray) and sequences.ndim == 1:
        raise ValueError("sequences must be a batch (a list of token-id sequences or a [batch, len] array)")
    rows = [np.asarray(s) for s in sequences]
    if not rows:
        raise ValueError("no sequences given")
    for i, r in enumerate(rows):
        if r.ndim != 1:
            raise ValueError(f"sequence {i} has shape {r.shape}; expected a 1-D list of token ids")
        if r.size == 0:
            raise ValueError(f"sequence {i} is empty: nothing to detect")
        if r.size <= width:
            raise ValueError(f"sequence {i} has {r.size} tokens; detection needs more than the context width "
                             f"({width}) to score at least one token")
        if not np.issubdtype(r.dtype, np.integer):
            raise TypeError(f"sequence {i} has dtype {r.dtype}; token ids must be integers")
        if r.min() < 0 or r.max() >= vocab_size:
            raise ValueError(f"sequence {i} has token ids outside [0, {vocab_size})")
    length = int(math.ceil(max(r.size for r in rows) / bucket) * bucket)
    tokens = np.zeros((len(rows), length), np.int32)
    for i, r in enumerate(rows):
        tokens[i, :r.size] = r
    return tokens, np.array([r.size for r in rows], np.int32)


@dataclasses.dataclass(frozen=True)
class Scores:
    """Detection statistics for a batch of texts, one column per gamma.

    Attributes:
      gammas: float [G].
      n: int [B], tokens scored.
      green: int [B, G], green tokens L_G.
      score: float [B, G], the DiPmark score Phi.
      p_value: float [B, G], Hoeffding's bound exp(-2 Phi^2) (1 where Phi <= 0).
      kgw_z: float [B, G], the KGW z-score.
    """

    gammas: np.ndarray
    n: np.ndarray
    green: np.ndarray
    score: np.ndarray
    p_value: np.ndarray
    kgw_z: np.ndarray

    @property
    def min_p_value_uncorrected(self) -> np.ndarray:
        """float [B]: the official code's minimum Hoeffding p over gammas (no multiple-testing correction)."""
        return self.p_value.min(axis=1)

    def column(self, gamma: float) -> int:
        hits = np.flatnonzero(np.isclose(self.gammas, gamma))
        if not hits.size:
            raise ValueError(f"gamma={gamma} was not scored; scored gammas: {self.gammas.tolist()}")
        return int(hits[0])


def statistics(green: np.ndarray, n: np.ndarray, gammas) -> Scores:
    """Scores from green counts [B, G] and scored-token counts [B] (see the module docstring)."""
    gammas = np.asarray(gammas, np.float64)
    green = np.asarray(green, np.float64)
    n = np.asarray(n, np.float64)
    root = np.sqrt(np.maximum(n, 1))[:, None]
    excess = green - (1 - gammas)[None] * n[:, None]
    score = excess / root
    p_value = np.where(score > 0, np.exp(-2 * score ** 2), 1.0)
    kgw_z = excess / (root * np.sqrt(gammas * (1 - gammas))[None])
    return Scores(gammas=gammas, n=n.astype(int), green=green.astype(int), score=score, p_value=p_value, kgw_z=kgw_z)


@dataclasses.dataclass(frozen=True)
class Detector:
    """Watermark detector for one private key.

    Attributes:
      key: bytes or int (see `keys.as_key_bytes`; a str is rejected).
      vocab_size: V of the tokenizer/model the text was generated with.
      context_width: tokens per context code (5, as the generator).
      gammas: the green-list splits scored.
    """

    key: bytes
    vocab_size: int
    context_width: int = keys.CONTEXT_WIDTH
    gammas: tuple[float, ...] = GAMMAS

    def __post_init__(self):
        object.__setattr__(self, "key", keys.as_key_bytes(self.key))
        if not isinstance(self.vocab_size, (int, np.integer)) or not 2 <= self.vocab_size < 2 ** 31:
            raise ValueError(f"vocab_size={self.vocab_size} must be an int in [2, 2^31)")
        if not isinstance(self.context_width, int) or self.context_width < 1:
            raise ValueError(f"context_width={self.context_width} must be a positive int")
        gammas = tuple(float(g) for g in self.gammas)
        if not gammas or not all(0 < g < 1 for g in gammas):
            raise ValueError(f"gammas={self.gammas} must be a non-empty sequence of values in (0, 1)")
        object.__setattr__(self, "gammas", gammas)

    def positions(self, sequences, *, bucket: int = 64) -> tuple[np.ndarray, np.ndarray]:
        """Permutation positions of the scored tokens.

        Args:
          sequences: a list of token-id sequences (lengths may differ) or an int [B, T] array.
        Returns:
          `(positions int32 [B, T - width], lengths int [B])`: entry t is the position of token
          t + width in the permutation of its context code, -1 past the end of a sequence.
        """
        tokens, lengths = _as_token_rows(sequences, self.vocab_size, self.context_width, bucket)
        pos = _positions_fn(self.key, int(self.vocab_size), self.context_width)(tokens, lengths)
        n = tokens.shape[1] - self.context_width
        return np.asarray(pos)[:, :n], lengths

    def green_counts(self, positions: np.ndarray, upto: int | None = None) -> tuple[np.ndarray, np.ndarray]:
        """`(green int [B, G], n int [B])` over the first `upto` scored tokens of each row (all by default)."""
        pos = np.asarray(positions)
        if upto is not None:
            pos = pos[:, :upto]
        scored = pos >= 0
        thresholds = np.asarray(self.gammas) * self.vocab_size
        green = ((pos[..., None] >= thresholds) & scored[..., None]).sum(axis=1)
        return green, scored.sum(axis=1)

    def score(self, sequences, *, upto: int | None = None) -> Scores:
        """Detection statistics of each token-id sequence (see `Scores`)."""
        green, n = self.green_counts(self.positions(sequences)[0], upto)
        return statistics(green, n, self.gammas)

    def score_texts(self, texts: Sequence[str], tokenizer) -> Scores:
        """Tokenizes each text (no BOS) with `tokenizer` and scores it."""
        if isinstance(texts, str):
            raise TypeError("texts must be a list of str, not a single str")
        ids = []
        for i, t in enumerate(texts):
            if not isinstance(t, str):
                raise TypeError(f"text {i} is a {type(t).__name__}; expected str")
            if not t.strip():
                raise ValueError(f"text {i} is empty: nothing to detect")
            ids.append(tokenizer.encode(t, add_bos=False))
        return self.score(ids)


def substitute(sequences: Sequence[Sequence[int]], epsilon: float, vocab_size: int, seed: int = 0) -> list[np.ndarray]:
    """Random token substitution attack: each token is replaced, with probability `epsilon`, by a
    token drawn uniformly from the vocabulary (the official robustness experiment)."""
    if not 0 <= epsilon <= 1:
        raise ValueError(f"epsilon={epsilon} must be in [0, 1]")
    rng = np.random.default_rng(seed)
    out = []
    for s in sequences:
        s = np.array(s, np.int64)
        hit = rng.random(s.shape) < epsilon
        out.append(np.where(hit, rng.integers(0, vocab_size, s.shape), s))
    return out
