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

`Detector(mode="official")` detects the release's watermark (`official.py`): its permutation
family and seeds (a text's first tokens are scored with the shorter codes of the tokens before
them, as the release's `get_dip_score` loop does, so a text of T tokens gives n = T - 1), and its
green rule (pos + 1) / V >= gamma in float32. What it does not copy: the release's loop stops one
token short (its last label is counted in n but never scored) and its Hoeffding p is
exp(-2 Phi^2) for either sign of Phi (a text with too *few* green tokens is flagged too); here the
last token is scored and p = 1 for Phi <= 0, in both modes.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Sequence

import jax
import jax.numpy as jnp
import numpy as np

from jaxml.papers.dipmark import keys, official
from jaxml.papers.dipmark.reweight import check_mode

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


@functools.lru_cache(maxsize=16)
def _official_positions_fn(key_bytes: bytes, vocab_size: int, width: int):
    """Tokens 1 .. T - 1 scored with the (up to) `width` tokens before them: the first width - 1 with
    short codes (the release's `context[-5:]` of a shorter prefix), the rest with full ones."""
    def run(tokens, lengths):
        batch, length = tokens.shape
        padded = jnp.concatenate([jnp.full((batch, width - 1), -1, tokens.dtype), tokens], axis=1)
        codes = jnp.stack([padded[:, j:j + length - 1] for j in range(width)], axis=-1)   # [B, T-1, w], token t >= 1
        head = min(width - 1, length - 1)                                                 # codes with -1 entries
        seeds = jnp.concatenate([official.context_seeds(codes[:, :head], key_bytes),
                                 keys.context_seeds(codes[:, head:], key_bytes)], axis=1)
        scored = jnp.arange(1, length)[None] < lengths[:, None]
        pos = official.positions(jnp.where(scored, tokens[:, 1:], 0), seeds, vocab_size)
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
            raise ValueError(f"sequence {i} has {r.size} tokens; detection needs more than {width} (the unscored "
                             f"first tokens: the context width in mode 'ours', 1 in 'official') to score one")
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
      mode: the detector's mode ('ours' or 'official'), for labelling.
    """

    gammas: np.ndarray
    n: np.ndarray
    green: np.ndarray
    score: np.ndarray
    p_value: np.ndarray
    kgw_z: np.ndarray
    mode: str = "ours"

    @property
    def min_p_value_uncorrected(self) -> np.ndarray:
        """float [B]: the official code's minimum Hoeffding p over gammas (no multiple-testing correction)."""
        return self.p_value.min(axis=1)

    def column(self, gamma: float) -> int:
        hits = np.flatnonzero(np.isclose(self.gammas, gamma))
        if not hits.size:
            raise ValueError(f"gamma={gamma} was not scored; scored gammas: {self.gammas.tolist()}")
        return int(hits[0])


def statistics(green: np.ndarray, n: np.ndarray, gammas, mode: str = "ours") -> Scores:
    """Scores from green counts [B, G] and scored-token counts [B] (see the module docstring);
    `mode` only labels them (the statistics are the same in both modes)."""
    gammas = np.asarray(gammas, np.float64)
    green = np.asarray(green, np.float64)
    n = np.asarray(n, np.float64)
    root = np.sqrt(np.maximum(n, 1))[:, None]
    excess = green - (1 - gammas)[None] * n[:, None]
    score = excess / root
    p_value = np.where(score > 0, np.exp(-2 * score ** 2), 1.0)
    kgw_z = excess / (root * np.sqrt(gammas * (1 - gammas))[None])
    return Scores(gammas=gammas, n=n.astype(int), green=green.astype(int), score=score, p_value=p_value, kgw_z=kgw_z,
                  mode=check_mode(mode))


@dataclasses.dataclass(frozen=True)
class Detector:
    """Watermark detector for one private key.

    Attributes:
      key: bytes or int (see `keys.as_key_bytes`; a str is rejected; an int is 128 bytes
        little-endian in mode 'ours', big-endian in 'official', as the release's key).
      vocab_size: V of the tokenizer/model the text was generated with (the logits' width: the
        release's detector passes `max(tokenizer.vocab.values())`, one less for a dense
        vocabulary, which on a CPU generator is another permutation altogether).
      context_width: tokens per context code (5, as the generator).
      gammas: the green-list splits scored.
      mode: 'ours' (the Feistel family; the first `context_width` tokens unscored; green =
        position >= gamma V) or 'official' (the release's family; tokens 1.. scored; green =
        (position + 1) / V >= gamma), see the module docstring.
    """

    key: bytes
    vocab_size: int
    context_width: int = keys.CONTEXT_WIDTH
    gammas: tuple[float, ...] = GAMMAS
    mode: str = "ours"

    def __post_init__(self):
        check_mode(self.mode)
        object.__setattr__(self, "key", keys.as_key_bytes(self.key, "big" if self.mode == "official" else "little"))
        if not isinstance(self.vocab_size, (int, np.integer)) or not 2 <= self.vocab_size < 2 ** 31:
            raise ValueError(f"vocab_size={self.vocab_size} must be an int in [2, 2^31)")
        if not isinstance(self.context_width, int) or self.context_width < 1:
            raise ValueError(f"context_width={self.context_width} must be a positive int")
        gammas = tuple(float(g) for g in self.gammas)
        if not gammas or not all(0 < g < 1 for g in gammas):
            raise ValueError(f"gammas={self.gammas} must be a non-empty sequence of values in (0, 1)")
        object.__setattr__(self, "gammas", gammas)

    @property
    def first_scored(self) -> int:
        """Index of the first scored token of a text: `context_width` (ours), 1 (official)."""
        return 1 if self.mode == "official" else self.context_width

    def positions(self, sequences, *, bucket: int = 64) -> tuple[np.ndarray, np.ndarray]:
        """Permutation positions of the scored tokens.

        Args:
          sequences: a list of token-id sequences (lengths may differ) or an int [B, T] array.
        Returns:
          `(positions int32 [B, T - f], lengths int [B])` with f = `first_scored`: entry t is the
          position of token t + f in the permutation of its context code, -1 past the end of a
          sequence.
        """
        first = self.first_scored
        tokens, lengths = _as_token_rows(sequences, self.vocab_size, first, bucket)
        make = _official_positions_fn if self.mode == "official" else _positions_fn
        pos = make(self.key, int(self.vocab_size), self.context_width)(tokens, lengths)
        return np.asarray(pos)[:, :tokens.shape[1] - first], lengths

    def is_green(self, positions: np.ndarray) -> np.ndarray:
        """bool [..., G]: green for each gamma of positions int [...] (>= 0) under this mode's rule."""
        pos = np.asarray(positions)
        if self.mode == "official":
            return official.green(pos, self.vocab_size, self.gammas)
        return pos[..., None] >= np.asarray(self.gammas) * self.vocab_size

    def green_counts(self, positions: np.ndarray, upto: int | None = None) -> tuple[np.ndarray, np.ndarray]:
        """`(green int [B, G], n int [B])` over the first `upto` scored tokens of each row (all by default)."""
        pos = np.asarray(positions)
        if upto is not None:
            pos = pos[:, :upto]
        scored = pos >= 0
        green = (self.is_green(pos) & scored[..., None]).sum(axis=1)
        return green, scored.sum(axis=1)

    def statistics(self, green: np.ndarray, n: np.ndarray) -> Scores:
        """`statistics` of green counts [B, G] and n [B], labelled with this detector's mode."""
        return statistics(green, n, self.gammas, self.mode)

    def score(self, sequences, *, upto: int | None = None) -> Scores:
        """Detection statistics of each token-id sequence (see `Scores`)."""
        green, n = self.green_counts(self.positions(sequences)[0], upto)
        return self.statistics(green, n)

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
