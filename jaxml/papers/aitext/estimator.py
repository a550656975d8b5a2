"""The distributional estimator of the fraction alpha of AI-generated sentences in a corpus.

Model (Liang et al. 2024): a sentence x is the set of its vocabulary words; under the human
distribution P each word t of the vocabulary V occurs independently with probability p_t, under
the AI distribution Q with probability q_t:

    log P(x) = sum_{t in x} log p_t + sum_{t in V \\ x} log(1 - p_t)        (likewise Q)

A corpus is a mixture (1 - alpha) P + alpha Q, and alpha is fitted by maximum likelihood:

    NLL(alpha) = -mean_i log((1 - alpha) + alpha exp(d_i)),      d_i = log Q(x_i) - log P(x_i).

NLL is convex in alpha, so the bounded MLE on [0, 1] is the root of its derivative (or a bound);
it is found by bisection, vectorised in JAX. Confidence intervals are percentile bootstraps
(`bootstrap`): the resamples are drawn as multinomial counts over the distinct values of d (so a
resample never materialises n indices) and all of them are solved at once.

    tables = fit_tables(human_sentences, ai_sentences, vocabulary=wordnet.adjectives())
    d = log_ratio(tables, encode(tables, sentences))      # float64 [n]
    est = bootstrap(d, n_boot=1000)                        # est.mle, est.ci, est.midpoint

Words outside V are ignored: they have the same factor under P and Q (the reference code gives
them a constant -13.8 in both), so they do not change d.
"""

from __future__ import annotations

import collections
import dataclasses
import functools
import hashlib
import json
import pathlib
from collections.abc import Iterable, Sequence

import jax
import jax.numpy as jnp
import numpy as np

EPS = 1e-12


# --- Tables ------------------------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class Tables:
    """Per-word occurrence probabilities of the human (p) and AI (q) references.

    Attributes:
      words: the vocabulary V, a tuple of str [V].
      log_p, log1m_p, log_q, log1m_q: float64 [V], log p_t, log(1 - p_t), log q_t, log(1 - q_t).
      meta: how the tables were fitted (sentence counts, thresholds, vocabulary filter).
    """

    words: tuple[str, ...]
    log_p: np.ndarray
    log1m_p: np.ndarray
    log_q: np.ndarray
    log1m_q: np.ndarray
    meta: dict = dataclasses.field(default_factory=dict)

    def __post_init__(self):
        v = len(self.words)
        for name in ("log_p", "log1m_p", "log_q", "log1m_q"):
            arr = np.asarray(getattr(self, name), np.float64)
            if arr.shape != (v,):
                raise ValueError(f"Tables.{name} has shape {arr.shape}; expected ({v},) to match the words")
            if not np.all(arr <= 0):
                raise ValueError(f"Tables.{name} must hold log-probabilities (<= 0)")
            object.__setattr__(self, name, arr)
        if len(set(self.words)) != v:
            raise ValueError("Tables.words has repeated words")
        if v == 0:
            raise ValueError("the vocabulary is empty: no word passes the count thresholds in both corpora")

    @property
    def tokens(self) -> str:
        """How sentences are tokenized for this table (`text.tokenize`); tables saved before the
        field existed read 'words'."""
        return self.meta.get("tokens", "words")

    @property
    def index(self) -> dict[str, int]:
        return {w: i for i, w in enumerate(self.words)}

    def log_odds(self) -> np.ndarray:
        """log(q / p) per word: how much more often a word occurs in AI sentences. float64 [V]."""
        return self.log_q - self.log_p

    def save(self, path: str | pathlib.Path) -> tuple[pathlib.Path, pathlib.Path]:
        """Writes `<path>.npz` (the four arrays, and `meta` as JSON) and `<path>.words.txt` (one word
        per line, in the arrays' order). Returns both paths."""
        path = pathlib.Path(path)
        stem = path.with_suffix("") if path.suffix == ".npz" else path
        stem.parent.mkdir(parents=True, exist_ok=True)
        npz = stem.with_name(stem.name + ".npz")
        words = stem.with_name(stem.name + ".words.txt")
        np.savez(npz, log_p=self.log_p, log1m_p=self.log1m_p, log_q=self.log_q, log1m_q=self.log1m_q,
                 meta=np.asarray(json.dumps(self.meta)), vocabulary_sha256=np.asarray(self.fingerprint()))
        words.write_text("\n".join(self.words) + "\n", encoding="utf-8")
        return npz, words

    @classmethod
    def load(cls, path: str | pathlib.Path) -> "Tables":
        """Reads what `save` wrote (`path` with or without `.npz`)."""
        path = pathlib.Path(path)
        stem = path.with_suffix("") if path.suffix == ".npz" else path
        npz = stem.with_name(stem.name + ".npz")
        words_path = stem.with_name(stem.name + ".words.txt")
        for p in (npz, words_path):
            if not p.exists():
                raise FileNotFoundError(f"{p} not found: tables are saved as <name>.npz plus <name>.words.txt")
        with np.load(npz) as z:
            arrays = {k: z[k] for k in ("log_p", "log1m_p", "log_q", "log1m_q")}
            meta = json.loads(str(z["meta"]))
            expected = str(z["vocabulary_sha256"])
        words = tuple(w for w in words_path.read_text(encoding="utf-8").split("\n") if w)
        tables = cls(words=words, meta=meta, **arrays) if len(words) == len(arrays["log_p"]) else None
        if tables is None or tables.fingerprint() != expected:
            raise ValueError(f"{words_path} ({len(words)} words) is not the word list {npz} was saved with "
                             f"({len(arrays['log_p'])} words, vocabulary sha256 {expected[:12]}...): the table "
                             "comes from another vocabulary; keep each .npz with its own .words.txt")
        return tables

    def fingerprint(self) -> str:
        """SHA-256 of the word list in order: identifies the vocabulary a table was fitted on."""
        return hashlib.sha256("\n".join(self.words).encode("utf-8")).hexdigest()


def occurrences(sentences: Iterable[Sequence[str]]) -> tuple[collections.Counter, int]:
    """(`{word: number of sentences containing it}`, number of sentences)."""
    counts: collections.Counter = collections.Counter()
    n = 0
    for s in sentences:
        counts.update(set(s))
        n += 1
    return counts, n


def fit_tables(human: Iterable[Sequence[str]], ai: Iterable[Sequence[str]], *, min_human: int = 5,
               min_ai: int = 3, vocabulary: Iterable[str] | None = None, name: str = "",
               tokens: str = "words") -> Tables:
    """p and q from tokenized human and AI sentences (lists of words).

    V = words in at least `min_human` human and `min_ai` AI sentences (the reference's 5 and 3),
    intersected with `vocabulary` when given (e.g. WordNet adjectives). p_t = #human sentences with
    t / #human sentences (binary occurrence), q likewise; both are clipped to [1e-12, 1 - 1e-12].
    Words are sorted by log(q/p), most AI-leaning first. `tokens` names how the sentences were
    tokenized (`text.tokenize`: 'words', or 'pos-adjectives' for adjective-tagged words only) and
    is kept in `meta["tokens"]`, so that the sentences to score are tokenized the same way.
    """
    h_counts, n_h = occurrences(human)
    a_counts, n_a = occurrences(ai)
    if n_h == 0 or n_a == 0:
        raise ValueError(f"fit_tables needs human and AI sentences; got {n_h} human and {n_a} AI")
    allowed = None if vocabulary is None else set(vocabulary)
    words = [w for w, c in h_counts.items() if c >= min_human and a_counts.get(w, 0) >= min_ai
             and (allowed is None or w in allowed)]
    p = np.clip(np.array([h_counts[w] / n_h for w in words]), EPS, 1 - EPS)
    q = np.clip(np.array([a_counts[w] / n_a for w in words]), EPS, 1 - EPS)
    order = np.argsort(-(np.log(q) - np.log(p)), kind="stable")
    words = [words[i] for i in order]
    p, q = p[order], q[order]
    meta = {"name": name, "human_sentences": n_h, "ai_sentences": n_a, "min_human": min_human, "min_ai": min_ai,
            "vocabulary_filter": None if allowed is None else len(allowed), "tokens": tokens}
    return Tables(tuple(words), np.log(p), np.log1p(-p), np.log(q), np.log1p(-q), meta)


# --- Sentences --------------------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class Encoded:
    """Sentences as sets of vocabulary indices, CSR layout.

    Attributes:
      indices: int32 [nnz], sorted within each sentence, no repeats.
      offsets: int64 [n + 1], sentence i is indices[offsets[i]:offsets[i+1]].
      n_words: int64 [n], words of each sentence before the vocabulary filter.
    """

    indices: np.ndarray
    offsets: np.ndarray
    n_words: np.ndarray

    def __len__(self) -> int:
        return len(self.offsets) - 1


def encode(tables: Tables, sentences: Sequence[Sequence[str]]) -> Encoded:
    """Maps tokenized sentences to vocabulary index sets (words outside V are dropped, see module)."""
    if isinstance(sentences, str) or (len(sentences) and isinstance(sentences[0], str)):
        raise TypeError("encode expects tokenized sentences (a list of lists of words); "
                        "use jaxml.papers.aitext.text.tokenized_sentences(text) first")
    index = tables.index
    rows = [sorted({index[w] for w in s if w in index}) for s in sentences]
    offsets = np.zeros(len(rows) + 1, np.int64)
    offsets[1:] = np.cumsum([len(r) for r in rows])
    indices = np.fromiter((i for r in rows for i in r), np.int32, count=int(offsets[-1]))
    return Encoded(indices, offsets, np.array([len(s) for s in sentences], np.int64))


def sentence_log_probs(tables: Tables, enc: Encoded) -> tuple[np.ndarray, np.ndarray]:
    """(log P(x_i), log Q(x_i)), float64 [n] each (the binary-occurrence model over V)."""
    seg = np.repeat(np.arange(len(enc)), np.diff(enc.offsets))
    n = len(enc)
    wp = (tables.log_p - tables.log1m_p)[enc.indices]
    wq = (tables.log_q - tables.log1m_q)[enc.indices]
    log_p = tables.log1m_p.sum() + np.bincount(seg, wp, minlength=n)
    log_q = tables.log1m_q.sum() + np.bincount(seg, wq, minlength=n)
    return log_p, log_q


def log_ratio(tables: Tables, enc: Encoded) -> np.ndarray:
    """d_i = log Q(x_i) - log P(x_i), float64 [n].

    Raises ValueError when there are no sentences, or when no sentence contains a single word of
    the table's vocabulary (then every d_i is the same constant and alpha is not identified: the
    text is in another language or tokenization, or the table was fitted on another vocabulary).
    """
    if len(enc) == 0:
        raise ValueError("no sentences to score: the documents are empty or have no sentence of >= 2 words")
    if enc.indices.size == 0:
        shown = ", ".join(tables.words[:5])
        raise ValueError(f"none of the {len(enc)} sentences contains a word of the table's vocabulary "
                         f"({len(tables.words)} words: {shown}, ...): the text is in another language or "
                         "tokenization, or the table was fitted on another vocabulary")
    log_p, log_q = sentence_log_probs(tables, enc)
    return log_q - log_p


# --- The likelihood and its MLE ----------------------------------------------------------------------

def nll(alpha, d, weights=None):
    """-mean_i w_i log((1 - alpha) + alpha exp(d_i)) / mean w; alpha scalar or [...], d [n]."""
    alpha = jnp.asarray(alpha, jnp.float32)[..., None]
    d = jnp.asarray(d, jnp.float32)
    terms = jnp.logaddexp(jnp.log1p(-alpha), jnp.log(alpha) + d)
    w = jnp.ones_like(d) if weights is None else jnp.asarray(weights, jnp.float32)
    return -(terms * w).sum(-1) / w.sum(-1)


def _score_terms(alpha, d):
    """d/d alpha of log((1-alpha) + alpha e^d) = (e^d - 1) / (1 - alpha + alpha e^d), overflow-free."""
    e_neg = jnp.exp(-jnp.abs(d))
    pos = (1 - e_neg) / ((1 - alpha) * e_neg + alpha)      # d > 0: divide through by e^d
    neg = (e_neg - 1) / ((1 - alpha) + alpha * e_neg)      # d <= 0
    return jnp.where(d > 0, pos, neg)


@jax.jit
def _bisect(d, w):
    """Bounded MLE for each row of weights w [B, K] over values d [K] (float32): 40 bisections on the
    increasing derivative of the NLL, after checking the bounds."""
    def grad(alpha):    # d NLL / d alpha for every row, alpha [B]
        return -(w * _score_terms(alpha[:, None], d[None])).sum(-1) / w.sum(-1)

    b = w.shape[0]
    lo, hi = jnp.zeros(b), jnp.ones(b)

    def step(_, bounds):
        lo, hi = bounds
        mid = 0.5 * (lo + hi)
        up = grad(mid) > 0
        return jnp.where(up, lo, mid), jnp.where(up, mid, hi)

    lo, hi = jax.lax.fori_loop(0, 40, step, (lo, hi))
    alpha = 0.5 * (lo + hi)
    alpha = jnp.where(grad(jnp.zeros(b)) >= 0, 0.0, alpha)
    return jnp.where(grad(jnp.ones(b) - 1e-7) <= 0, 1.0, alpha)


def _check_d(d) -> np.ndarray:
    d = np.asarray(d, np.float64)
    if d.ndim != 1:
        raise ValueError(f"d must be 1-D (one log ratio per sentence), got shape {d.shape}")
    if d.size == 0:
        raise ValueError("no sentences to estimate from (d is empty): every document was empty or had no "
                         "sentence of at least 2 words")
    if not np.all(np.isfinite(d)):
        raise ValueError("d has non-finite values")
    return d


def mle(d, weights=None) -> float:
    """The bounded MLE of alpha in [0, 1] from the log ratios d [n] (optional weights [n])."""
    d = _check_d(d)
    w = np.ones((1, d.size), np.float32) if weights is None else np.asarray(weights, np.float32)[None]
    return float(_bisect(jnp.asarray(d, jnp.float32), jnp.asarray(w))[0])


@dataclasses.dataclass(frozen=True)
class Groups:
    """The distinct values of d, grouped for the bootstrap (see `compress`).

    Attributes:
      values: float64 [K], the distinct values of d, sorted.
      group: int32 [K], the group of each value (0..G-1, consecutive values share a group).
      shares: float64 [K], a value's multiplicity divided by its group's count.
      counts: float64 [G], sentences per group.
    """

    values: np.ndarray
    group: np.ndarray
    shares: np.ndarray
    counts: np.ndarray


def compress(d, max_groups: int = 1024) -> Groups:
    """Groups the values of d for the bootstrap.

    Identical values are merged exactly (sentences with the same vocabulary words have the same d).
    If more than `max_groups` distinct values remain, consecutive sorted values are grouped into
    `max_groups` groups of about equal size; a group's likelihood keeps its members' own terms
    (weighted by their shares), and a resample draws groups. Drawing groups instead of sentences
    drops the variance *within* a group from the bootstrap, which is negligible for groups of
    near-equal values (checked against resampling sentences in the tests).
    """
    values, counts = np.unique(_check_d(d), return_counts=True)
    if len(values) <= max_groups:
        group = np.arange(len(values), dtype=np.int32)
    else:
        cum = np.cumsum(counts)
        group = np.minimum((cum - 1) * max_groups // cum[-1], max_groups - 1)
        group = np.concatenate([[0], np.cumsum(np.diff(group) > 0)]).astype(np.int32)   # 0..G-1, no gaps
    per_group = np.bincount(group, weights=counts).astype(np.float64)
    return Groups(values, group, counts / per_group[group], per_group)


@dataclasses.dataclass(frozen=True)
class Estimate:
    """alpha with its bootstrap CI.

    Attributes:
      mle: the MLE on the whole sample.
      ci: (low, high) percentile bootstrap interval.
      midpoint: (low + high) / 2, what the reference code reports as the estimate.
      half_width: (high - low) / 2.
      n: sentences used.
      boot: float [n_boot], the bootstrap MLEs.
    """

    mle: float
    ci: tuple[float, float]
    midpoint: float
    half_width: float
    n: int
    boot: np.ndarray

    def summary(self) -> str:
        return (f"alpha = {self.mle:.3f} (MLE), 95% CI [{self.ci[0]:.3f}, {self.ci[1]:.3f}], "
                f"midpoint {self.midpoint:.3f} +- {self.half_width:.3f}, {self.n} sentences")


@functools.partial(jax.jit, static_argnames=("points", "n_groups"))
def _grid_gradient(values, group, shares, draws, lo, hi, points: int, n_groups: int):
    """NLL gradient and its slope for every resample at `points` grid values of alpha in [lo, hi].

    values, group, shares: [K] (see `Groups`); draws: float32 [B, G] group counts.
    Returns (grid [A], grad [B, A], slope [B, A]).
    """
    grid = jnp.linspace(lo, hi, points)
    t = _score_terms(grid[None, :], values[:, None])                                 # [K, A]
    h = jax.ops.segment_sum(shares[:, None] * t, group, n_groups)                     # [G, A]
    h1 = -jax.ops.segment_sum(shares[:, None] * t * t, group, n_groups)               # slope terms
    total = draws.sum(1, keepdims=True)
    return grid, -(draws @ h) / total, -(draws @ h1) / total


def _hermite_root(x0, x1, g0, g1, s0, s1, iters: int = 8):
    """Root in [x0, x1] of the cubic Hermite interpolant of g (values g, slopes s at the ends)."""
    h = x1 - x0
    t = np.clip(g0 / np.where(g0 - g1 == 0, 1, g0 - g1), 0, 1)         # start from the secant root
    for _ in range(iters):
        h00, h10, h01, h11 = 2 * t**3 - 3 * t**2 + 1, t**3 - 2 * t**2 + t, -2 * t**3 + 3 * t**2, t**3 - t**2
        f = h00 * g0 + h10 * h * s0 + h01 * g1 + h11 * h * s1
        df = (6 * t**2 - 6 * t) * g0 + (3 * t**2 - 4 * t + 1) * h * s0 + (-6 * t**2 + 6 * t) * g1 \
            + (3 * t**2 - 2 * t) * h * s1
        t = np.clip(t - f / np.where(df == 0, 1, df), 0, 1)
    return x0 + t * h


def _bucket(n: int, minimum: int = 64) -> int:
    return max(minimum, 1 << (max(n, 1) - 1).bit_length())


def solve_resamples(groups: Groups, draws, coarse: int = 65, fine: int = 65) -> np.ndarray:
    """Bounded MLE for every resample (rows of `draws`: counts [B, G] over the groups).

    The NLL gradient is increasing in alpha. It is evaluated for all resamples at once on a coarse
    grid over [0, 1] (one matrix product), then on a fine grid over the union of the brackets found,
    and the root inside each resample's fine bracket is taken from the cubic Hermite interpolant of
    the gradient (values and slopes at the bracket ends): interpolation error O(step^4), far below
    float32 rounding here (tested against bisection on each resample's own weights).
    Inputs are padded to power-of-two sizes so that similar corpora reuse one compiled program.
    """
    k, g = len(groups.values), len(groups.counts)
    kp, gp = _bucket(k), _bucket(g)
    args = (jnp.asarray(np.pad(groups.values, (0, kp - k)), jnp.float32),
            jnp.asarray(np.pad(groups.group, (0, kp - k)), jnp.int32),
            jnp.asarray(np.pad(groups.shares, (0, kp - k)), jnp.float32),       # padding: share 0
            jnp.asarray(np.pad(np.asarray(draws, np.float32), ((0, 0), (0, gp - g))), jnp.float32))

    def gradient(lo, hi, points):
        return (np.asarray(x, np.float64) for x in _grid_gradient(*args, lo, hi, points, gp))

    grid, grad, slope = gradient(0.0, 1.0 - 1e-6, coarse)
    at_zero, at_one = grad[:, 0] >= 0, grad[:, -1] <= 0
    first = np.clip(np.argmax(grad >= 0, axis=1), 1, coarse - 1)                 # first grid point past the root
    inner = ~(at_zero | at_one)
    if inner.any():
        grid, grad, slope = gradient(grid[first[inner] - 1].min(), grid[first[inner]].max(), fine)
        first = np.clip(np.argmax(grad >= 0, axis=1), 1, fine - 1)
    rows = np.arange(len(grad))
    a, b = first - 1, first
    alpha = _hermite_root(grid[a], grid[b], grad[rows, a], grad[rows, b], slope[rows, a], slope[rows, b])
    return np.where(at_zero, 0.0, np.where(at_one, 1.0, alpha))


EXACT_UP_TO = 8192   # bootstrap: exact resampling up to this many distinct values of d (README, timing)


def bootstrap(d, n_boot: int = 1000, seed: int = 0, level: float = 95.0, max_groups: int = 1024,
              exact_up_to: int = EXACT_UP_TO, chunk: int = 2000) -> Estimate:
    """MLE of alpha and a percentile bootstrap interval from the log ratios d [n].

    Each resample is n sentences drawn with replacement, as multinomial counts over the distinct
    values of d: this is exactly resampling sentences (sentences with equal d are interchangeable)
    whenever d has at most `exact_up_to` distinct values (so always for n <= `exact_up_to`
    sentences). Above that, the values are grouped into `max_groups` groups (`compress`), which
    drops the within-group variance from the bootstrap (its effect on the CI width is measured in
    the README, `scripts/bench_aitext.py --grouping`). All resamples are solved together by
    `solve_resamples` (in chunks of at most `chunk` resamples, fewer when there are many distinct
    values, to bound memory), and so is the full-sample MLE (equal to `mle(d)` to float32
    precision, tested).
    """
    if n_boot < 2:
        raise ValueError(f"n_boot={n_boot} must be at least 2")
    if not 0 < level < 100:
        raise ValueError(f"level={level} must be a percentage in (0, 100)")
    d = _check_d(d)
    n_distinct = len(np.unique(d))
    groups = compress(d, n_distinct if n_distinct <= exact_up_to else max_groups)
    chunk = max(1, min(chunk, (1 << 24) // len(groups.counts)))         # draws of one chunk: <= 64 MB
    n = int(groups.counts.sum())
    draws = np.random.default_rng(seed).multinomial(n, groups.counts / n, size=n_boot)     # [B, G]
    # Row 0 is the sample itself (its group counts): its root is the full-sample MLE, solved in the
    # same call as the resamples (one compiled program: a CLI run pays one compilation).
    draws = np.concatenate([groups.counts[None], draws])
    solved = np.concatenate([solve_resamples(groups, draws[s:s + chunk]) for s in range(0, n_boot + 1, chunk)])
    full, boot = float(solved[0]), solved[1:]
    lo, hi = np.percentile(boot, [(100 - level) / 2, 100 - (100 - level) / 2])
    return Estimate(mle=full, ci=(float(lo), float(hi)), midpoint=float((lo + hi) / 2),
                    half_width=float((hi - lo) / 2), n=n, boot=boot)
