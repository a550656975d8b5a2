"""VQ-Stroke: the "matrix to token" stage of StrokeNUWA, a Jukebox-style multi-level VQ-VAE over the
row sequence of an SVG (`svg.to_rows`), read as a 1-D signal with 9 channels.

    model = VQStroke(levels=2, width=64, depth=2, emb=64, codes=512)
    task = VQStrokeTask(model, ArraySource({"rows": rows [N, T, 9] int, "length": [N] int}), {...})
    ...train with the one loop (a stateful task: the codebooks are EMA state, not parameters)...
    codes = tokenize(model, params, state, rows, length)   # level 0: [N, T / 2] ints in [0, codes)
    rows = detokenize(model, params, state, codes)        # [N, T, 9] int rows

Each level has its own encoder, codebook and decoder and quantises independently (not residual VQ):
level l downsamples by 2^(l+1) with l+1 blocks of Conv1d(k4, s2) -> ResNet1D(depth) and a Conv1d
to the embedding width, and its decoder mirrors that with ConvTranspose1d(k4, s2). Only level 0
(x2) supplies the generator's tokens, as in the paper.

Codebooks (`init_state`): [levels, codes, emb], updated by exponential moving averages (mu = 0.99)
of the code counts and of the sums of the encoder outputs assigned to each code; initialised from
random encoder outputs of the first batch; a code whose EMA count falls below `threshold` (1.0)
is re-seeded with a random encoder output of the current batch (dead-code re-seeding).

Loss: sum over levels of the masked L2 reconstruction of the 9 input channels, plus
`commit` (1.0) x the commitment loss ||z - sg(z_q)||^2 / numel (straight-through gradients).

Input features (our reading, see the README): coordinates v in [0, 200] -> v / 100 - 1, the
paper's (v / 200) * 2 - 1; the command column cmd in {0, 1, 2} -> cmd - 1. The paper scales the
command column like a coordinate (0, 1, 2 -> -1, -0.99, -0.98), 0.01 apart, which an L2
reconstruction cannot tell apart; cmd - 1 keeps them a unit apart with the same loss.

Padding: rows past an SVG's length are all-zero M rows (cmd 0 at the origin, which draw nothing).
At level l the loss covers the rows up to the length rounded up to the level's factor 2^(l+1), so
a token's span is reconstructed in full and trailing padding decodes to rows that draw nothing.
"""

from __future__ import annotations

import dataclasses

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np

from jaxml.papers.strokenuwa.metrics import point_l2

GRID = 200
ROW = 9


def features(rows: jax.Array) -> jax.Array:
    """int rows [..., T, 9] -> float32 features [..., T, 9] (cmd - 1; coordinates v / 100 - 1)."""
    rows = jnp.asarray(rows, jnp.float32)
    return jnp.concatenate([rows[..., :1] - 1.0, rows[..., 1:] / (GRID / 2) - 1.0], axis=-1)


def rows_from_features(x: jax.Array) -> jax.Array:
    """The inverse of `features`, rounded: float [..., T, 9] -> int32 rows (cmd in {0, 1, 2},
    coordinates in [0, 200]). M and L rows get zero control points, as `svg.to_rows` writes them."""
    cmd = jnp.clip(jnp.round(x[..., :1] + 1.0), 0, 2)
    coords = jnp.clip(jnp.round((x[..., 1:] + 1.0) * (GRID / 2)), 0, GRID)
    controls = jnp.where(cmd == 2, coords[..., 2:6], 0.0)
    out = jnp.concatenate([cmd, coords[..., :2], controls, coords[..., 6:]], axis=-1)
    return out.astype(jnp.int32)


def span_mask(length: jax.Array, steps: int, factor: int) -> jax.Array:
    """[B] lengths -> float [B, steps]: 1 for the rows up to the length rounded up to `factor`."""
    covered = -(-length // factor) * factor
    return (jnp.arange(steps)[None, :] < covered[:, None]).astype(jnp.float32)


class ResNet1D(nn.Module):
    """`depth` residual blocks: relu -> Conv1d(k3, dilation 3^i) -> relu -> Conv1d(k1)."""

    width: int
    depth: int

    @nn.compact
    def __call__(self, x):
        for i in range(self.depth):
            h = nn.Conv(self.width, (3,), kernel_dilation=(3 ** i,), name=f"res{i}_conv3")(nn.relu(x))
            x = x + nn.Conv(self.width, (1,), name=f"res{i}_conv1")(nn.relu(h))
        return x


class Encoder1D(nn.Module):
    """[B, T, 9] -> [B, T / 2^downs, emb]."""

    downs: int
    width: int
    depth: int
    emb: int

    @nn.compact
    def __call__(self, x):
        for i in range(self.downs):
            x = nn.Conv(self.width, (4,), strides=(2,), padding=((1, 1),), name=f"down{i}")(x)
            x = ResNet1D(self.width, self.depth, name=f"resnet{i}")(x)
        return nn.Conv(self.emb, (3,), name="to_emb")(x)


class Decoder1D(nn.Module):
    """[B, T', emb] -> [B, T' * 2^ups, 9]."""

    ups: int
    width: int
    depth: int
    out: int = ROW

    @nn.compact
    def __call__(self, z):
        x = nn.Conv(self.width, (3,), name="from_emb")(z)
        for i in range(self.ups):
            x = ResNet1D(self.width, self.depth, name=f"resnet{i}")(x)
            x = nn.ConvTranspose(self.width, (4,), strides=(2,), padding=((2, 2),), name=f"up{i}")(x)
        return nn.Conv(self.out, (3,), name="to_rows")(nn.relu(x))


class VQStroke(nn.Module):
    """The encoders and decoders of every level (the codebooks live in the task's state).

    Attributes: levels (2: x2 and x4), width (the paper: 512), depth (ResNet1D blocks; 4), emb (code
    width; 1024), codes (codebook size; 4096)."""

    levels: int = 2
    width: int = 64
    depth: int = 2
    emb: int = 64
    codes: int = 512

    def setup(self):
        self.encoders = [Encoder1D(l + 1, self.width, self.depth, self.emb) for l in range(self.levels)]
        self.decoders = [Decoder1D(l + 1, self.width, self.depth) for l in range(self.levels)]

    def factor(self, level: int) -> int:
        return 2 ** (level + 1)

    def encode(self, x: jax.Array) -> list[jax.Array]:
        """features [B, T, 9] (T a multiple of 2^levels) -> per level [B, T / 2^(l+1), emb]."""
        if x.shape[1] % 2 ** self.levels:
            raise ValueError(f"VQStroke: the row count {x.shape[1]} must be a multiple of {2 ** self.levels} "
                             f"(pad with zero rows)")
        return [enc(x) for enc in self.encoders]

    def decode(self, zs: list[jax.Array]) -> list[jax.Array]:
        return [dec(z) for dec, z in zip(self.decoders, zs)]

    def decode_level(self, z: jax.Array, level: int) -> jax.Array:
        return self.decoders[level](z)

    def __call__(self, x):
        return self.decode(self.encode(x))


def nearest_code(z: jax.Array, codebook: jax.Array) -> jax.Array:
    """z [..., D], codebook [K, D] -> the index [...] of the nearest code (squared L2)."""
    d = (jnp.sum(z * z, -1, keepdims=True) - 2 * z @ codebook.T + jnp.sum(codebook * codebook, -1))
    return jnp.argmin(d, axis=-1)


def random_rows(rng, z: jax.Array, mask: jax.Array, n: int) -> jax.Array:
    """n random vectors among the valid positions of z [B, T, D] (mask [B, T]) -> [n, D]."""
    flat, w = z.reshape(-1, z.shape[-1]), mask.reshape(-1)
    p = w / jnp.maximum(w.sum(), 1.0)
    idx = jax.random.choice(rng, flat.shape[0], (n,), p=p)
    return flat[idx]


def ema_update(book: dict, z: jax.Array, idx: jax.Array, mask: jax.Array, rng, mu: float,
               threshold: float) -> tuple[dict, dict]:
    """One EMA step of one level's codebook {"codebook" [K, D], "counts" [K], "sums" [K, D]} from the
    assigned encoder outputs z [B, T, D] (idx [B, T], mask [B, T]). Codes whose EMA count is below
    `threshold` afterwards are re-seeded with random valid encoder outputs. Returns (book, stats)."""
    k = book["codebook"].shape[0]
    onehot = jax.nn.one_hot(idx, k) * mask[..., None]                      # [B, T, K]
    counts = mu * book["counts"] + (1 - mu) * onehot.sum((0, 1))
    sums = mu * book["sums"] + (1 - mu) * jnp.einsum("btk,btd->kd", onehot, z)
    used = counts >= threshold
    fresh = random_rows(rng, z, mask, k)
    codebook = jnp.where(used[:, None], sums / jnp.maximum(counts, 1e-6)[:, None], fresh)
    # a re-seeded code restarts its EMA at the new vector with one count
    counts = jnp.where(used, counts, 1.0)
    sums = jnp.where(used[:, None], sums, fresh)
    usage = onehot.sum((0, 1)) / jnp.maximum(mask.sum(), 1.0)
    perplexity = jnp.exp(-jnp.sum(usage * jnp.log(usage + 1e-10)))
    return {"codebook": codebook, "counts": counts, "sums": sums}, {"reseeded": jnp.sum(~used), "perplexity": perplexity}


@dataclasses.dataclass(frozen=True, eq=False)
class VQStrokeTask:
    """A stateful Task of the one loop. Batches: {"rows": int [B, T, 9], "length": int [B]}.

    State: {"codebook": [L, K, D], "counts": [L, K], "sums": [L, K, D], "ready": int} (ready = 0 until
    the first batch has initialised the codebooks from random encoder outputs)."""

    model: VQStroke
    train_source: object
    eval_sources: dict
    mu: float = 0.99
    threshold: float = 1.0
    commit: float = 1.0

    def init(self, rng, batch):
        return self.model.init(rng, features(batch["rows"]))["params"]

    def init_state(self, rng, batch):
        m = self.model
        return {"codebook": jnp.zeros((m.levels, m.codes, m.emb)), "counts": jnp.zeros((m.levels, m.codes)),
                "sums": jnp.zeros((m.levels, m.codes, m.emb)), "ready": jnp.zeros((), jnp.int32)}

    def _forward(self, params, batch, state, rng=None):
        """Quantise every level; returns (recons, per-level dicts, new state or None)."""
        x = features(batch["rows"])
        zs = self.model.apply({"params": params}, x, method=VQStroke.encode)
        levels, books = [], {"codebook": [], "counts": [], "sums": []}
        for l, z in enumerate(zs):
            mask = span_mask(batch["length"], x.shape[1], self.model.factor(l))
            zmask = mask[:, ::self.model.factor(l)]
            codebook = state["codebook"][l]
            if rng is not None:
                rng, k_init, k_seed = jax.random.split(rng, 3)
                first = random_rows(k_init, jax.lax.stop_gradient(z), zmask, codebook.shape[0])
                codebook = jnp.where(state["ready"] > 0, codebook, first)
            idx = nearest_code(z, codebook)
            zq = codebook[idx]
            levels.append(dict(z=z, idx=idx, zq=z + jax.lax.stop_gradient(zq - z), zmask=zmask, mask=mask,
                               commit=jnp.sum(zmask[..., None] * (z - jax.lax.stop_gradient(zq)) ** 2)
                               / (jnp.maximum(zmask.sum(), 1.0) * z.shape[-1])))
            if rng is not None:
                book = {"codebook": codebook, "counts": jnp.where(state["ready"] > 0, state["counts"][l], 1.0),
                        "sums": jnp.where(state["ready"] > 0, state["sums"][l], codebook)}
                book, stats = ema_update(book, jax.lax.stop_gradient(z), idx, zmask, k_seed, self.mu, self.threshold)
                levels[-1].update(stats)
                for key in books:
                    books[key].append(book[key])
        recons = self.model.apply({"params": params}, [lv["zq"] for lv in levels], method=VQStroke.decode)
        new_state = None
        if rng is not None:
            new_state = {k: jnp.stack(v) for k, v in books.items()} | {"ready": jnp.ones((), jnp.int32)}
        return x, recons, levels, new_state

    def loss(self, params, batch, rng, state):
        x, recons, levels, new_state = self._forward(params, batch, state, rng)
        metrics, total = {}, 0.0
        for l, (recon, lv) in enumerate(zip(recons, levels)):
            mse = jnp.sum(lv["mask"][..., None] * (recon - x) ** 2) / (jnp.maximum(lv["mask"].sum(), 1.0) * ROW)
            total = total + mse + self.commit * lv["commit"]
            metrics |= {f"recon{l}": mse, f"commit{l}": lv["commit"], f"perplexity{l}": lv["perplexity"],
                        f"reseeded{l}": lv["reseeded"]}
        return total, (metrics, new_state)

    def evaluate(self, params, batch, state):
        x, recons, levels, _ = self._forward(params, batch, state)
        out = {}
        valid = (jnp.arange(x.shape[1])[None, :] < batch["length"][:, None]).astype(jnp.float32)
        n = jnp.maximum(valid.sum(1), 1.0)
        for l, recon in enumerate(recons):
            rows = rows_from_features(recon)
            out[f"recon{l}"] = jnp.sum(levels[l]["mask"][..., None] * (recon - x) ** 2, (1, 2)) / (
                jnp.maximum(levels[l]["mask"].sum(1), 1.0) * ROW)
            out[f"cmd_acc{l}"] = jnp.sum(valid * (rows[..., 0] == batch["rows"][..., 0]), 1) / n
            out[f"coord_l2_{l}"] = jnp.sum(valid * point_l2(rows, batch["rows"]), 1) / n
        return out

    def train_data(self):
        return self.train_source

    def eval_data(self):
        return self.eval_sources


def _chunks(x: np.ndarray, batch_size: int):
    """x in chunks of min(batch_size, len(x)) rows, the last one zero-padded (one compiled program)."""
    size = max(min(batch_size, len(x)), 1)
    for i in range(0, len(x), size):
        part = np.asarray(x[i:i + size])
        yield jnp.asarray(np.concatenate([part, np.zeros((size - len(part), *part.shape[1:]), part.dtype)]))


def reconstruct(model: VQStroke, params, state, rows: np.ndarray, batch_size: int = 256) -> list[np.ndarray]:
    """Every level's reconstruction through its codebook: padded rows [N, T, 9] -> per level int rows
    [N, T, 9] (the rows past each length are the decoded padding)."""
    @jax.jit
    def run(p, books, r):
        zs = model.apply({"params": p}, features(r), method=VQStroke.encode)
        zq = [books[l][nearest_code(z, books[l])] for l, z in enumerate(zs)]
        return [rows_from_features(x) for x in model.apply({"params": p}, zq, method=VQStroke.decode)]
    parts = [run(params, state["codebook"], chunk) for chunk in _chunks(rows, batch_size)]
    return [np.concatenate([np.asarray(p[l]) for p in parts])[:len(rows)] for l in range(model.levels)]


def tokenize(model: VQStroke, params, state, rows: np.ndarray, length: np.ndarray, batch_size: int = 256):
    """Level-0 codes of padded rows [N, T, 9] (T a multiple of 2^levels) -> int [N, T / 2]; the codes of
    SVG n are `codes[n, :ceil(length[n] / 2)]`."""
    @jax.jit
    def encode(p, book, r):
        z = model.apply({"params": p}, features(r), method=VQStroke.encode)[0]
        return nearest_code(z, book)
    out = [np.asarray(encode(params, state["codebook"][0], chunk)) for chunk in _chunks(rows, batch_size)]
    return np.concatenate(out)[:len(rows)]


def detokenize(model: VQStroke, params, state, codes: np.ndarray, batch_size: int = 256) -> np.ndarray:
    """Level-0 codes int [N, T'] -> int rows [N, 2 T', 9] (zero-length M rows where padding decoded)."""
    @jax.jit
    def decode(p, book, c):
        return rows_from_features(model.apply({"params": p}, book[c], 0, method=VQStroke.decode_level))
    out = [np.asarray(decode(params, state["codebook"][0], chunk)) for chunk in _chunks(codes, batch_size)]
    return np.concatenate(out)[:len(codes)]
