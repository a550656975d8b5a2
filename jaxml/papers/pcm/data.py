"""PCM data: a simulator, the psychotools data sets (asset `psychotools`) and the held-out split.

Response matrices are `[n_users, n_items]` integers in {0..L} with `MISSING` (-1) for missing entries.
"""

from __future__ import annotations

import dataclasses
import functools
import warnings

import jax
import jax.numpy as jnp
import numpy as np

from jaxml.data import assets
from jaxml.papers.pcm.spectral import MISSING, category_logits, validate_responses

# name -> (R object, field, L): the three psychotools sets used here (offline_sources.md, section 5).
DATASETS = {
    "verbal_aggression": ("VerbalAggression", "resp", 2),
    "conspiracist_beliefs": ("ConspiracistBeliefs2016", "resp", 4),
    "math_exam": ("MathExam14W", "credits", 2),
}
_DATA_DIR = ("usr", "lib", "R", "site-library", "psychotools", "data")


@dataclasses.dataclass(frozen=True)
class Simulated:
    responses: np.ndarray       # [n, m] int8, -1 missing
    thresholds: np.ndarray      # [m, L]
    abilities: np.ndarray       # [n]


@functools.partial(jax.jit, static_argnames=("n_users",))
def _sample(key, thresholds, n_users):
    k_theta, k_x = jax.random.split(key)
    theta = jax.random.normal(k_theta, (n_users,))
    logits = category_logits(theta, thresholds)                            # [n, m, L+1]
    return theta, jax.random.categorical(k_x, logits, axis=-1)


def simulate(seed: int, n_users: int, n_items: int, n_levels: int, *, missing: float = 0.0,
             thresholds=None, chunk: int = 65536) -> Simulated:
    """Users theta ~ N(0, 1), thresholds ~ N(0, 1) (unless given `[m, L]`), PCM responses.

    Each entry is missing independently with probability `missing`; a user left with no response
    keeps one random item, so every row is observed at least once.
    """
    if not 0.0 <= missing < 1.0:
        raise ValueError(f"missing must be in [0, 1), got {missing}")
    rng = np.random.default_rng(seed)
    if thresholds is None:
        thresholds = rng.normal(size=(n_items, n_levels))
    thresholds = np.asarray(thresholds, np.float64)
    if thresholds.shape != (n_items, n_levels):
        raise ValueError(f"thresholds: expected shape {(n_items, n_levels)}, got {thresholds.shape}")
    key = jax.random.PRNGKey(seed)
    xs, thetas = [], []
    beta = jnp.asarray(thresholds, jnp.float32)
    for start in range(0, n_users, chunk):
        key, sub = jax.random.split(key)
        theta, x = _sample(sub, beta, min(chunk, n_users - start))
        xs.append(np.asarray(x, np.int8))
        thetas.append(np.asarray(theta, np.float64))
    x = np.concatenate(xs)
    if missing:
        drop = rng.random(x.shape) < missing
        empty = np.flatnonzero(drop.all(1))
        drop[empty, rng.integers(0, n_items, size=len(empty))] = False
        x[drop] = MISSING
    return Simulated(x, thresholds, np.concatenate(thetas))


@dataclasses.dataclass(frozen=True)
class RealData:
    name: str
    responses: np.ndarray       # [n, m] int8, -1 missing
    items: tuple[str, ...]
    n_levels: int


def load(name: str) -> RealData:
    """One of `DATASETS` from the psychotools Debian package (fetched on first use).

    Users without any observed response are dropped (none in these three sets).
    """
    if name not in DATASETS:
        raise ValueError(f"unknown PCM data set {name!r}; choose from {sorted(DATASETS)}")
    import rdata

    obj, field, n_levels = DATASETS[name]
    path = assets.path("psychotools", *_DATA_DIR, f"{obj}.rda")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")                          # rdata: unknown encoding / R classes
        try:
            parsed = rdata.conversion.convert(rdata.parser.parse_file(path), constructor_dict={})
        except Exception as e:  # noqa: BLE001  (rdata raises many types on a bad file)
            raise ValueError(f"cannot read {path} as an R data file: {e}") from e
    matrix = parsed[obj][field]
    items = tuple(str(v) for v in matrix.coords[matrix.dims[1]].values) if matrix.dims[1] in matrix.coords else ()
    x, _ = validate_responses(np.asarray(matrix, np.float64), n_levels, allow_empty_rows=True, name=f"{obj}${field}")
    x = x[(x >= 0).any(1)]
    return RealData(name, x, items, n_levels)


@dataclasses.dataclass(frozen=True)
class Split:
    """train: `[n, m]` with the held-out entries set missing; test_*: `[T]` (user, item, score) triples."""

    train: np.ndarray
    test_users: np.ndarray
    test_items: np.ndarray
    test_scores: np.ndarray


def heldout_split(responses, seed: int = 0, min_train: int = 1) -> Split:
    """Holds out one random observed rating per user (users with at least `min_train + 1` ratings)."""
    x = np.array(responses, copy=True)
    obs = x >= 0
    eligible = np.flatnonzero(obs.sum(1) >= min_train + 1)
    rng = np.random.default_rng(seed)
    # A uniform observed item per user: argmax of random keys over the observed entries.
    keys = np.where(obs[eligible], rng.random((len(eligible), x.shape[1])), -1.0)
    items = keys.argmax(1)
    scores = x[eligible, items].copy()
    x[eligible, items] = MISSING
    return Split(x, eligible, items, scores)


@dataclasses.dataclass(frozen=True)
class SimulatedRatings:
    users: np.ndarray           # [T] int32
    items: np.ndarray           # [T] int32
    scores: np.ndarray          # [T] int8
    thresholds: np.ndarray      # [m, L]
    abilities: np.ndarray       # [n]


@jax.jit
def _sample_pairs(key, theta, beta):
    """theta: [c, k] abilities of the raters, beta: [c, k, L] thresholds of the rated items."""
    steps = theta[..., None] - beta
    logits = jnp.concatenate([jnp.zeros(steps.shape[:-1] + (1,)), jnp.cumsum(steps, -1)], -1)
    return jax.random.categorical(key, logits, axis=-1)


def simulate_ratings(seed: int, n_users: int, n_items: int, n_levels: int, per_user: int,
                     chunk: int = 1 << 17) -> SimulatedRatings:
    """Sparse PCM ratings: each user rates `per_user` items drawn uniformly with replacement, repeats
    dropped (so a few users rate fewer); thresholds and abilities ~ N(0, 1)."""
    rng = np.random.default_rng(seed)
    thresholds = rng.normal(size=(n_items, n_levels))
    theta = rng.normal(size=n_users)
    items = np.sort(rng.integers(0, n_items, size=(n_users, per_user)), axis=1)
    first = np.ones_like(items, dtype=bool)
    first[:, 1:] = items[:, 1:] != items[:, :-1]
    key = jax.random.PRNGKey(seed)
    beta = jnp.asarray(thresholds, jnp.float32)
    scores = []
    for start in range(0, n_users, chunk):
        key, sub = jax.random.split(key)
        it = items[start:start + chunk]
        th = jnp.broadcast_to(jnp.asarray(theta[start:start + chunk, None], jnp.float32), it.shape)
        scores.append(np.asarray(_sample_pairs(sub, th, beta[it]), np.int8))
    scores = np.concatenate(scores)
    users = np.broadcast_to(np.arange(n_users, dtype=np.int32)[:, None], items.shape)
    return SimulatedRatings(users[first], items[first].astype(np.int32), scores[first], thresholds, theta)
