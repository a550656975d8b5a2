"""The DiPmark reweight, the KGW soft watermark, and both as logits processors for
`jaxml.llm.generate`.

DiPmark (Wu et al., ICML 2024, Eq. 2): with the vocabulary in a keyed permuted order and F(i) the
cumulative probability of the first i tokens, the watermarked distribution has the cumulative

    F'(i) = max(F(i) - alpha, 0) + max(F(i) - (1 - alpha), 0),     alpha in [0, 0.5],

so each token keeps the part of its probability interval [F(i-1), F(i)] that lies above alpha, plus
the part above 1 - alpha once more. alpha = 0.5 is the gamma-reweight of Hu et al. (2023); alpha = 0
is no watermark. KGW soft (Kirchenbauer et al., 2023) adds delta to the logits of the green tokens,
here the back (1 - gamma) of the same permutation (as the DiPmark repository's `Soft_Reweight`).

Two permutation families, one switch (`Watermark.mode`):

* `"ours"` (the default): the keyed Feistel bijection of `keys.py`, whose seeds come in reversed
  pairs, so the average of the reweight over the key family is P *exactly* (the proof's pairing,
  tested to float32 rounding); elementwise, so a step costs no sequential shuffle; identical on
  every device. Repeated context codes are judged per row.
* `"official"`: the release's family (`official.py`): `torch.randperm` on an MT19937 CPU generator
  seeded from the same SHA-256 of the context code (short codes hashed short, int keys
  big-endian), its KGW green start int(V gamma), its batch-shared history of context codes, and
  (through `official.sampling_options()`) its sampling order: top-k 50 before the reweight.
  Its family is 2^32 - 1 pseudo-random permutations out of V!: unbiased only as far as MT19937
  seeded with a hash looks uniform (no pairing makes the average exact), and a shuffle costs V - 1
  sequential swaps per context.
"""

from __future__ import annotations

import dataclasses
import functools

import jax
import jax.numpy as jnp
import numpy as np

from jaxml.papers.dipmark import keys, official

METHODS = ("dipmark", "kgw")
MODES = ("ours", "official")


def check_mode(mode) -> str:
    """`mode` if it is one of `MODES`, else a ValueError naming it."""
    if mode not in MODES:
        raise ValueError(f"mode={mode!r}; accepted: {MODES} ('ours': the keyed Feistel family, exactly unbiased "
                         f"over keys; 'official': the release's torch.randperm family and rules)")
    return mode


@functools.partial(jax.jit, static_argnames=("block",))
def dipmark_cuts(probs_permuted: jax.Array, alpha, block: int = 256) -> list[tuple[jax.Array, jax.Array]]:
    """Where the cuts alpha and 1 - alpha fall in the permuted distribution [..., V].

    Returns `[(k, share)]` for each cut c in (alpha, 1 - alpha): `k` int32 [..., 1] the position
    of the token whose interval [F(k-1), F(k)] straddles c (V - 1 when every token ends at or
    below c), and `share` float32 [..., 1] the fraction of that interval above c (0 in that case).

    F is never materialised: block sums locate the block holding each cut, and only that block's
    `block` probabilities are summed token by token (cheaper, and the float32 sums are shorter).
    """
    lead, v = probs_permuted.shape[:-1], probs_permuted.shape[-1]
    if len(lead) != 1:   # any leading shape: flatten, solve, restore
        flat = dipmark_cuts(probs_permuted.reshape(-1, v), alpha, block)
        return [(k.reshape(lead + (1,)), s.reshape(lead + (1,))) for k, s in flat]
    batch = lead[0]
    block = min(block, v)
    pad = (-v) % block
    blocks = jnp.pad(probs_permuted, ((0, 0), (0, pad))).reshape(batch, -1, block)
    sums = blocks.sum(-1)
    ends = jnp.cumsum(sums, axis=-1)
    starts = ends - sums
    n_blocks = blocks.shape[1]
    cuts = []
    for cut in (alpha, 1.0 - alpha):
        j = jnp.sum(ends <= cut, axis=-1, keepdims=True)                     # blocks wholly at or below
        jc = jnp.minimum(j, n_blocks - 1)
        inner = blocks[jnp.arange(batch)[:, None], jc][:, 0]                   # [batch, block]
        after = jnp.take_along_axis(starts, jc, axis=-1) + jnp.cumsum(inner, axis=-1)
        i = jnp.minimum(jnp.sum(after <= cut, axis=-1, keepdims=True), block - 1)
        p_k = jnp.take_along_axis(inner, i, axis=-1)
        share = jnp.clip((jnp.take_along_axis(after, i, axis=-1) - cut) / jnp.where(p_k > 0, p_k, 1.0), 0.0, 1.0)
        k = (jc * block + i).astype(jnp.int32)
        below = (j >= n_blocks) | (k >= v)                                     # every token ends below the cut
        cuts.append((jnp.where(below, v - 1, k), jnp.where(below, 0.0, share)))
    return cuts


def log_weights_at(positions: jax.Array, cuts) -> jax.Array:
    """log w for tokens at `positions` [..., V] of the permutation, w = share above alpha + share
    above 1 - alpha: 0 before the token straddling alpha, 1 between, 2 after the one straddling
    1 - alpha, fractional only at the (at most two) straddling tokens, so only they need a log.
    """
    count = sum((positions > k).astype(jnp.int32) for k, _ in cuts)    # cuts wholly before the token
    log_w = jnp.where(count == 0, -jnp.inf, jnp.where(count == 1, 0.0, np.float32(np.log(2.0))))
    for k, _ in cuts:   # a straddling token: its own share of each cut (1 for a cut wholly before it)
        w_k = sum(jnp.where(k == other, share, jnp.where(k > other, 1.0, 0.0)) for other, share in cuts)
        log_w = jnp.where(positions == k, jnp.log(w_k), log_w)
    return log_w


@jax.jit
def dipmark_log_weights(probs_permuted: jax.Array, alpha) -> jax.Array:
    """log w [..., V] with P' = w * P (Eq. 2), for probabilities in permuted order [..., V]."""
    return log_weights_at(jnp.arange(probs_permuted.shape[-1]), dipmark_cuts(probs_permuted, alpha))


@jax.jit
def dipmark_reweight(probs: jax.Array, order: jax.Array, alpha) -> jax.Array:
    """P' [..., V] from P [..., V] and the permutation `order` [..., V] (order[i] = token at position i)."""
    permuted = jnp.take_along_axis(probs, order, axis=-1)
    positions = jnp.argsort(order, axis=-1)
    return jnp.exp(log_weights_at(positions, dipmark_cuts(permuted, alpha))) * probs


def repeated_context(context: jax.Array, step: jax.Array, width: int) -> jax.Array:
    """bool [batch]: the current context code (last `width` tokens of `context` [batch, L]) already
    occurred as the code of an earlier *generated* position of the same row (the last `step` ones).

    Codes inside the prompt do not count: as the official processor, only codes seen while
    generating are history.
    """
    length = context.shape[1]
    if length <= width:
        return jnp.zeros((context.shape[0],), bool)
    current = context[:, length - width:]
    same = jnp.ones((context.shape[0], length - width), bool)
    for j in range(width):   # window starting at s equals the current code, s in [0, L - width)
        same &= context[:, j:j + length - width] == current[:, j:j + 1]
    distance = length - width - jnp.arange(length - width)   # generation steps back
    return jnp.any(same & (distance <= step)[None], axis=1)


@dataclasses.dataclass(frozen=True)
class Watermark:
    """A watermark configuration and its logits processor `(logits, context, step, key) -> logits`.

    Compared and hashed by value: `generate` compiles one program per processor, so equal
    configurations (the same key and parameters) share one.

    Attributes:
      key: the private key, normalised to bytes by `keys.as_key_bytes` (bytes or int accepted).
      vocab_size: V, the logits' last dimension.
      method: 'dipmark' (reweight with `alpha`) or 'kgw' (+`delta` on the green back (1 - gamma)).
      alpha: DiPmark parameter in [0, 0.5]; 0.5 is the gamma-reweight.
      delta: KGW logit bias >= 0.
      gamma: KGW green list = back (1 - gamma) of the permutation, gamma in (0, 1).
      context_width: tokens in a context code (5 in the paper's code).
      skip_repeated: leave a step unwatermarked when its context code was seen before (the
        official `ignore_history=False`): at an earlier generated position of the row (ours),
        or of any row of the batch (official). None (default): on, except for KGW in official
        mode (the release's KGW processors ignore the history).
      temperature: the sampling temperature used with it: the processor reweights
        softmax(logits / temperature) and returns temperature * log P', so that sampling at that
        temperature draws from P'. With top-k/top-p, sample with
        `SamplingOptions(..., filter_order="before_processor")`: the filters then cut P and the
        reweight of the filtered distribution stays unbiased; cut after it they would bias P'.
        (The release's order: `official.sampling_options()`, top-k 50 before the reweight.)
      mode: 'ours' (default) or 'official': the permutation family, seeds, KGW green start and
        repeated-context rule (see the module docstring). An int key is encoded little-endian
        in 'ours' and big-endian in 'official' (the release's `to_bytes(128, "big")`).
    """

    key: bytes
    vocab_size: int
    method: str = "dipmark"
    alpha: float = 0.45
    delta: float = 2.0
    gamma: float = 0.5
    context_width: int = keys.CONTEXT_WIDTH
    skip_repeated: bool | None = None
    temperature: float = 1.0
    mode: str = "ours"

    def __post_init__(self):
        check_mode(self.mode)
        object.__setattr__(self, "key", keys.as_key_bytes(self.key, "big" if self.mode == "official" else "little"))
        if self.skip_repeated is None:
            object.__setattr__(self, "skip_repeated", self.mode == "ours" or self.method == "dipmark")
        if self.method not in METHODS:
            raise ValueError(f"watermark method {self.method!r}; accepted: {METHODS}")
        if not isinstance(self.vocab_size, (int, np.integer)) or not 2 <= self.vocab_size < 2 ** 31:
            raise ValueError(f"vocab_size={self.vocab_size} must be an int in [2, 2^31)")
        if not 0.0 <= self.alpha <= 0.5:
            raise ValueError(f"alpha={self.alpha} must be in [0, 0.5]")
        if not self.delta >= 0:
            raise ValueError(f"delta={self.delta} must be >= 0")
        if not 0.0 < self.gamma < 1.0:
            raise ValueError(f"gamma={self.gamma} must be in (0, 1)")
        if not isinstance(self.context_width, int) or self.context_width < 1:
            raise ValueError(f"context_width={self.context_width} must be a positive int")
        if not self.temperature > 0:
            raise ValueError(f"temperature={self.temperature} must be > 0 (greedy decoding cannot carry it)")

    @property
    def label(self) -> str:
        name = f"dipmark(alpha={self.alpha:g})" if self.method == "dipmark" else f"kgw(delta={self.delta:g})"
        return name if self.mode == "ours" else f"{name}[official]"

    def seeds(self, context: jax.Array) -> jax.Array:
        """uint32 [batch]: the permutation seed of the current context code (last tokens of `context`
        [batch, L]; -1 = no token: hashed as int64 -1 (ours) or left out (official))."""
        codes = context[:, -self.context_width:]
        if self.mode == "official":
            return official.context_seeds(codes, self.key)
        return keys.context_seeds(codes, self.key)

    def order_and_positions(self, seeds: jax.Array) -> tuple[jax.Array, jax.Array]:
        """`(order, positions)` int32 [batch, V] of the permutations of `seeds` [batch]: order[p] is
        the token at position p, positions[t] the position of token t."""
        if self.mode == "official":
            order = official.shuffle(seeds, self.vocab_size)
            return order, official.inverse(order)
        vocab = jnp.arange(self.vocab_size)[None]
        return (keys.permutation_tokens(vocab, seeds[:, None], self.vocab_size),
                keys.permutation_positions(vocab, seeds[:, None], self.vocab_size))

    def apply(self, logits: jax.Array, seeds: jax.Array) -> jax.Array:
        """Watermarked logits [batch, V] for the permutations of `seeds` [batch] (no repeat check)."""
        if self.method == "kgw":
            if self.mode == "official":
                _, pos = self.order_and_positions(seeds)
                return logits + self.delta * (pos >= official.kgw_green_start(self.vocab_size, self.gamma))
            pos = keys.permutation_positions(jnp.arange(self.vocab_size)[None], seeds[:, None], self.vocab_size)
            green = pos >= self.gamma * self.vocab_size
            return logits + self.delta * green
        # The permuted order is needed only to find where the cuts fall; the weights are then
        # computed elementwise in vocabulary order from each token's position (no scatter back).
        probs = jax.nn.softmax(logits / self.temperature, axis=-1)
        order, positions = self.order_and_positions(seeds)
        cuts = dipmark_cuts(jnp.take_along_axis(probs, order, axis=-1), self.alpha)
        return logits + self.temperature * log_weights_at(positions, cuts)

    def repeated(self, context: jax.Array, step: jax.Array) -> jax.Array:
        """bool [batch]: steps left unwatermarked by the repeated-context rule of this mode."""
        if self.mode == "official":
            return official.repeated_context(context, step, self.context_width)
        return repeated_context(context, step, self.context_width)

    def __call__(self, logits: jax.Array, context: jax.Array, step: jax.Array, key: jax.Array) -> jax.Array:
        del key   # the watermark is deterministic given the context
        if logits.shape[-1] != self.vocab_size:
            raise ValueError(f"logits have {logits.shape[-1]} entries, the watermark expects vocab_size={self.vocab_size}")
        marked = self.apply(logits, self.seeds(context))
        if not self.skip_repeated:
            return marked
        return jnp.where(self.repeated(context, step)[:, None], logits, marked)


def dipmark(key, vocab_size: int, alpha: float = 0.45, **kwargs) -> Watermark:
    """The DiPmark processor (alpha = 0.5: the gamma-reweight)."""
    return Watermark(key, vocab_size, "dipmark", alpha=alpha, **kwargs)


def kgw(key, vocab_size: int, delta: float = 2.0, gamma: float = 0.5, **kwargs) -> Watermark:
    """The KGW soft watermark on the same permutation machinery."""
    return Watermark(key, vocab_size, "kgw", delta=delta, gamma=gamma, **kwargs)
