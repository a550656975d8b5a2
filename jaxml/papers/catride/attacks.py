"""Adversarial ranking attacks in embedding space (RobRank's `AdvRank`), jitted and batched.

    embed = lambda x: net.apply({"params": p}, x)        # images [n, H, W, C] in [0, 1] -> unit-norm [n, d]
    out = candidate_attack(embed, images, gallery, key, plus=True, eps=77/255, alpha=3/255, steps=32)
    out.prank_before, out.prank_after, out.images         # percentile ranks (0 = top) and x'

Every attack is projected signed-gradient descent (PGD) on an image batch: x <- clip(x - alpha *
sign(grad L), x0 - eps, x0 + eps), then clipped to [0, 1]; L is minimised, as in RobRank. Distances
are Euclidean between unit-norm embeddings (RobRank's metric `N`). `gallery` holds the embeddings
[N, d] of the clean retrieval set the queries and candidates are ranked against.

  * Candidate attack (CA+ / CA-): perturb each image c so that it rises (+) or sinks (-) in the
    rankings of W queries: L = mean relu(d(c', q) - d(x, q)) (+) or relu(d(x, q) - d(c', q)) (-)
    over the gallery x and queries q. CA+ queries are random; CA- queries are drawn from each
    candidate's nearest 1% (where it ranks high). The outcome is the percentile rank of c among the
    gallery for its queries: the share of gallery items closer to the query than c.
  * Query attack (QA+ / QA-): perturb each query q so that M candidates rise (+, random candidates)
    or sink (-, from its nearest 1%): L = mean relu(d(q', c) - d(q', x)) (+) or the reverse (-).
    The outcome is the candidates' mean percentile rank in the query's ranking.
  * Embedding shift (ES): maximise ||f(x') - f(x)||; the outcomes are the shift (ES:D) and the
    Recall@1 of the shifted queries without their own entry (ES:R, `recall1_without_self`).
  * Learning to misrank (LTM): pull every other-class item in front of the nearest same-class one;
    outcome: Recall@1 without the query's own entry.
  * Targeted mismatch (TMA): pull f(x') towards a random gallery item; outcome: cosine similarity.
  * Greedy top-1 misrank (GTM): pull f(x') towards the nearest item whose label differs from the
    current top-1's; outcome: Recall@1 without the query's own entry.
  * Greedy top-1 translocation (GTT): push the current top-1 down with the QA- objective; outcome:
    retain@4, the share of queries whose original top-1 stays in their top 4.
ERS (`ers`) rescales the ten outcomes to 0-100 (higher = more robust) and averages them.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np

from jaxml.papers.catride.metric_learning import pairwise_distances

Embed = Callable[[jax.Array], jax.Array]


def pgd(objective: Callable[[jax.Array], jax.Array], x0: jax.Array, eps: float, alpha: float, steps: int) -> jax.Array:
    """argmin of `objective` over the L-infinity ball of radius eps around x0, within [0, 1], by
    `steps` signed-gradient steps of size alpha from x0 (steps = 1: one FGSM step of size eps)."""
    check_budget(eps, alpha, steps)
    size = eps if steps == 1 else alpha
    grad = jax.grad(objective)

    def step(_, x):
        x = x - size * jnp.sign(grad(x))
        return jnp.clip(jnp.clip(x, x0 - eps, x0 + eps), 0.0, 1.0)

    return jax.lax.fori_loop(0, steps, step, x0)


def check_budget(eps, alpha, steps: int) -> None:
    """ValueError unless steps >= 1, eps >= 0 and alpha > 0 (eps and alpha checked when concrete)."""
    concrete = all(isinstance(v, (int, float)) for v in (eps, alpha))
    if steps < 1 or (concrete and (eps < 0 or alpha <= 0)):
        raise ValueError(f"attack budget: need steps >= 1, eps >= 0, alpha > 0; got {steps}, {eps}, {alpha}")


# distances [..., n, m] with a floor that keeps the sqrt's gradient finite for the PGD objectives
_dist = functools.partial(pairwise_distances, floor=1e-12)


def nudged(clean: jax.Array, key: jax.Array) -> jax.Array:
    """RobRank's ES target: the clean embeddings plus 1e-7 x {-1, 0, 1} noise, so that the first
    gradient (of a distance at 0) is defined."""
    return clean + 1e-7 * jax.random.randint(key, clean.shape, -1, 2).astype(clean.dtype)


def as_embed(embed: Embed) -> jax.tree_util.Partial:
    """`embed` as a `jax.tree_util.Partial`, the form the jitted attack internals take: a Partial
    whose arguments are the parameters (`metric_learning.bound_embed`) reuses one compiled attack
    for every model of the same architecture; any other callable is wrapped as it is (and compiles
    once per callable)."""
    return embed if isinstance(embed, jax.tree_util.Partial) else jax.tree_util.Partial(embed)


@dataclasses.dataclass(frozen=True)
class AttackOutcome:
    """An attack's perturbed images and its outcome before and after (percentages; see each attack)."""

    images: np.ndarray
    before: float
    after: float


def _nearest(gallery: np.ndarray, emb: np.ndarray, fraction: float, count: int, rng: np.random.Generator,
             exclude_self: bool = True) -> np.ndarray:
    """For each row of emb, `count` random indices among its nearest `fraction` of the gallery."""
    top = max(int(len(gallery) * fraction), 1)
    d = np.asarray(_dist(jnp.asarray(emb), jnp.asarray(gallery)))
    order = np.argsort(d, axis=1)[:, int(exclude_self):top + int(exclude_self)]
    return np.take_along_axis(order, rng.integers(0, order.shape[1], (len(emb), count)), axis=1)


@functools.partial(jax.jit, static_argnames=("plus", "steps"))
def _candidate_pgd(embed, images, queries, gallery_d, plus, eps, alpha, steps):
    def objective(x):
        a = _dist(embed(x)[:, None, :], queries)[:, 0, :]              # [n, W]: d(c', q)
        gap = a[:, None, :] - gallery_d                                   # [n, N, W]
        return jnp.sum(jnp.mean(jax.nn.relu(gap if plus else -gap), axis=(1, 2)))
    return pgd(objective, images, eps, alpha, steps)


def _targets(embed: Embed, images, gallery, seed: int, random: bool, count: int, fraction: float):
    """The shared set-up of CA and QA: images as float32, the gallery, and `count` gallery indices
    per image, random (the '+' attacks) or among its nearest `fraction` (the '-' attacks)."""
    rng = np.random.default_rng(seed)
    images = jnp.asarray(images, jnp.float32)
    gallery = np.asarray(gallery, np.float32)
    if random:
        idx = rng.integers(0, len(gallery), (len(images), count))
    else:
        idx = _nearest(gallery, np.asarray(embed(images)), fraction, count, rng, exclude_self=True)
    return images, gallery, idx


def candidate_attack(embed: Embed, images: np.ndarray, gallery: np.ndarray, seed: int, *, plus: bool,
                     eps: float, alpha: float, steps: int, queries: int = 1, fraction: float = 0.01
                     ) -> AttackOutcome:
    """CA+ (plus) or CA-: images [n, H, W, C] are the candidates; `queries` (W) per candidate.
    Outcome: 100 x the mean percentile rank of the candidates for their queries (0 = top)."""
    check_budget(eps, alpha, steps)
    embed = as_embed(embed)
    images, gallery, qidx = _targets(embed, images, gallery, seed, plus, queries, fraction)
    q = jnp.asarray(gallery[qidx])                                         # [n, W, d]
    gallery_d = _dist(q, jnp.asarray(gallery)[None])                       # [n, W, N]
    gallery_d = jnp.swapaxes(gallery_d, 1, 2)                               # [n, N, W]

    def prank(x):
        a = _dist(embed(x)[:, None, :], q)[:, 0, :]
        return float(100.0 * jnp.mean(a[:, None, :] > gallery_d))

    adv = _candidate_pgd(embed, images, q, gallery_d, plus, eps, alpha, steps)
    return AttackOutcome(np.asarray(adv), prank(images), prank(adv))


@functools.partial(jax.jit, static_argnames=("plus", "steps"))
def _query_pgd(embed, images, cands, gallery, plus, eps, alpha, steps):
    def objective(x):
        e = embed(x)
        a = _dist(e[:, None, :], cands)[:, 0, :]                          # [n, M]: d(q', c)
        b = _dist(e, gallery)                                              # [n, N]: d(q', x)
        gap = a[:, None, :] - b[:, :, None]                                # [n, N, M]
        return jnp.sum(jnp.mean(jax.nn.relu(gap if plus else -gap), axis=(1, 2)))
    return pgd(objective, images, eps, alpha, steps)


def query_attack(embed: Embed, images: np.ndarray, gallery: np.ndarray, seed: int, *, plus: bool,
                 eps: float, alpha: float, steps: int, candidates: int = 1, fraction: float = 0.01
                 ) -> AttackOutcome:
    """QA+ (plus) or QA-: images [n, H, W, C] are the queries; `candidates` (M) per query.
    Outcome: 100 x the candidates' mean percentile rank in the query's ranking (0 = top)."""
    check_budget(eps, alpha, steps)
    embed = as_embed(embed)
    images, gallery, cidx = _targets(embed, images, gallery, seed, plus, candidates, fraction)
    c = jnp.asarray(gallery[cidx])                                         # [n, M, d]
    g = jnp.asarray(gallery)

    def prank(x):
        e = embed(x)
        a = _dist(e[:, None, :], c)[:, 0, :]
        b = _dist(e, g)
        return float(100.0 * jnp.mean(a[:, None, :] > b[:, :, None]))

    adv = _query_pgd(embed, images, c, g, plus, eps, alpha, steps)
    return AttackOutcome(np.asarray(adv), prank(images), prank(adv))


def shift_away(embed: Embed, images: jax.Array, target: jax.Array, eps, alpha, steps: int) -> jax.Array:
    """PGD maximising sum ||f(x') - target|| (the ES objective; traceable, used inside training steps)."""
    def objective(x):
        return -jnp.sum(jnp.linalg.norm(embed(x) - target, axis=-1))
    return pgd(objective, images, eps, alpha, steps)


_shift_pgd = jax.jit(shift_away, static_argnames=("steps",))


def embedding_shift(embed: Embed, images: np.ndarray, seed: int, *, eps: float, alpha: float, steps: int
                    ) -> AttackOutcome:
    """ES: maximise the distance of f(x') from f(x). Outcome: the mean shift ||f(x') - f(x)||
    (0 before; at most 2 for unit vectors); the target is `nudged` as in RobRank."""
    check_budget(eps, alpha, steps)
    embed = as_embed(embed)
    images = jnp.asarray(images, jnp.float32)
    clean = embed(images)
    adv = _shift_pgd(embed, images, nudged(clean, jax.random.PRNGKey(seed)), eps, alpha, steps)
    shift = float(jnp.mean(jnp.linalg.norm(embed(adv) - clean, axis=-1)))
    return AttackOutcome(np.asarray(adv), 0.0, shift)


def _self_masked_distances(emb: jax.Array, gallery: jax.Array, loc_self: np.ndarray) -> jax.Array:
    """Distances [n, N] of emb to the gallery with each query's own gallery entry set to +inf."""
    d = _dist(emb, gallery)
    return d.at[jnp.arange(len(loc_self)), jnp.asarray(loc_self)].set(jnp.inf)


def _recall1(emb, gallery, labels, query_labels, loc_self) -> float:
    d = _self_masked_distances(emb, gallery, loc_self)
    return float(100.0 * jnp.mean(jnp.asarray(labels)[jnp.argmin(d, axis=1)] == jnp.asarray(query_labels)))


@functools.partial(jax.jit, static_argnames=("steps",))
def _pull_pgd(embed, images, target, eps, alpha, steps):
    """Minimise the distance of f(x') to `target` [n, d] (GTM's objective)."""
    def objective(x):
        return jnp.sum(jnp.linalg.norm(embed(x) - target, axis=-1))
    return pgd(objective, images, eps, alpha, steps)


@functools.partial(jax.jit, static_argnames=("steps",))
def _cosine_pgd(embed, images, target, eps, alpha, steps):
    """Maximise the cosine similarity of f(x') to `target` (TMA's objective, 1 - cos minimised)."""
    def objective(x):
        e = embed(x)
        cos = jnp.sum(e * target, -1) / (jnp.linalg.norm(e, axis=-1) * jnp.linalg.norm(target, axis=-1))
        return jnp.sum(1.0 - cos)
    return pgd(objective, images, eps, alpha, steps)


def targeted_mismatch(embed: Embed, images: np.ndarray, gallery: np.ndarray, seed: int, *, eps: float,
                      alpha: float, steps: int) -> AttackOutcome:
    """TMA (Tolias et al. 2019, as in RobRank): pull each query's embedding towards a random gallery
    item's. Outcome: 100 x the mean cosine similarity to that item (ERS scores 100 (1 - cos))."""
    check_budget(eps, alpha, steps)
    embed = as_embed(embed)
    rng = np.random.default_rng(seed)
    images = jnp.asarray(images, jnp.float32)
    target = jnp.asarray(np.asarray(gallery, np.float32)[rng.integers(0, len(gallery), len(images))])

    def cos(x):
        e = embed(x)
        return float(100.0 * jnp.mean(jnp.sum(e * target, -1) / (jnp.linalg.norm(e, axis=-1)
                                                                  * jnp.linalg.norm(target, axis=-1))))

    adv = _cosine_pgd(embed, images, target, eps, alpha, steps)
    return AttackOutcome(np.asarray(adv), cos(images), cos(adv))


def self_locations(embed: Embed, images: np.ndarray, gallery: np.ndarray) -> np.ndarray:
    """The gallery index nearest to each clean query's embedding (the query itself when the
    queries come from the gallery), masked out of the rankings as RobRank does."""
    return np.asarray(jnp.argmin(_dist(embed(jnp.asarray(images, jnp.float32)), jnp.asarray(gallery)), axis=1))


def greedy_top1_misrank(embed: Embed, images: np.ndarray, query_labels: np.ndarray, gallery: np.ndarray,
                        gallery_labels: np.ndarray, *, eps: float, alpha: float, steps: int) -> AttackOutcome:
    """GTM: pull each query towards its nearest gallery item whose label differs from its current
    top-1's, so that the top-1 changes class. Outcome: Recall@1 (%) without the query's own entry."""
    check_budget(eps, alpha, steps)
    embed = as_embed(embed)
    images = jnp.asarray(images, jnp.float32)
    g, gl = jnp.asarray(gallery, jnp.float32), np.asarray(gallery_labels)
    loc = self_locations(embed, images, gallery)
    d = np.asarray(_self_masked_distances(embed(images), g, loc))
    top1_label = gl[np.argmin(d, axis=1)]
    d_unmatch = np.where(gl[None, :] != top1_label[:, None], d, np.inf)
    target = g[jnp.asarray(np.argmin(d_unmatch, axis=1))]
    adv = _pull_pgd(embed, images, target, eps, alpha, steps)
    return AttackOutcome(np.asarray(adv), _recall1(embed(images), g, gl, query_labels, loc),
                         _recall1(embed(adv), g, gl, query_labels, loc))


def greedy_top1_translocation(embed: Embed, images: np.ndarray, gallery: np.ndarray, *, eps: float, alpha: float,
                              steps: int, k: int = 4) -> AttackOutcome:
    """GTT: push each query's current top-1 gallery item (not itself) down its ranking with the QA-
    objective. Outcome: retain@k (%): the share of queries whose original top-1 is still in their
    top k (ERS uses k = 4)."""
    check_budget(eps, alpha, steps)
    embed = as_embed(embed)
    images = jnp.asarray(images, jnp.float32)
    g = jnp.asarray(gallery, jnp.float32)
    loc = self_locations(embed, images, gallery)
    top1 = np.argmin(np.asarray(_self_masked_distances(embed(images), g, loc)), axis=1)

    def retain(x):
        d = np.asarray(_self_masked_distances(embed(x), g, loc))
        topk = np.argsort(d, axis=1)[:, :k]
        return float(100.0 * np.mean(np.any(topk == top1[:, None], axis=1)))

    adv = _query_pgd(embed, images, g[jnp.asarray(top1)][:, None, :], g, False, eps, alpha, steps)
    return AttackOutcome(np.asarray(adv), retain(images), retain(adv))


def recall1_without_self(embed: Embed, images: np.ndarray, query_labels: np.ndarray, gallery: np.ndarray,
                         gallery_labels: np.ndarray, loc_self: np.ndarray) -> float:
    """Recall@1 (%) of the (possibly perturbed) queries against the gallery without their own entry."""
    return _recall1(embed(jnp.asarray(images, jnp.float32)), jnp.asarray(gallery), gallery_labels, query_labels,
                    loc_self)


@functools.partial(jax.jit, static_argnames=("steps",))
def _ltm_pgd(embed, images, gallery, same, diff, eps, alpha, steps):
    def objective(x):
        d = _dist(embed(x), gallery)                                          # [n, N]
        max_an = jnp.max(jnp.where(diff, d, -jnp.inf), axis=1)
        min_ap = jnp.min(jnp.where(same, d, jnp.inf), axis=1)
        return jnp.sum(jax.nn.relu(max_an - min_ap))
    return pgd(objective, images, eps, alpha, steps)


def learning_to_misrank(embed: Embed, images: np.ndarray, query_labels: np.ndarray, gallery: np.ndarray,
                        gallery_labels: np.ndarray, *, eps: float, alpha: float, steps: int) -> AttackOutcome:
    """LTM (Feng et al. 2020, RobRank's form): minimise relu(max over other-class items of d(q', x) -
    min over same-class items of d(q', x)), pulling every negative in front of the nearest positive.
    The query's own entry is left out of the positives (RobRank meant to, but its `scatter` is not
    in place). Outcome: Recall@1 (%) without the query's own entry."""
    check_budget(eps, alpha, steps)
    embed = as_embed(embed)
    images = jnp.asarray(images, jnp.float32)
    g, gl, ql = jnp.asarray(gallery, jnp.float32), np.asarray(gallery_labels), np.asarray(query_labels)
    loc = self_locations(embed, images, gallery)
    same = gl[None, :] == ql[:, None]
    same[np.arange(len(loc)), loc] = False
    diff = gl[None, :] != ql[:, None]
    adv = _ltm_pgd(embed, images, g, jnp.asarray(same), jnp.asarray(diff), eps, alpha, steps)
    return AttackOutcome(np.asarray(adv), recall1_without_self(embed, images, ql, gallery, gl, loc),
                         recall1_without_self(embed, adv, ql, gallery, gl, loc))


ERS_ATTACKS = ("CA+", "CA-", "QA+", "QA-", "TMA", "ES:D", "ES:R", "LTM", "GTM", "GTT")


def ers_terms(outcomes: dict[str, float]) -> dict[str, float]:
    """RobRank's rescaling of the ten attack outcomes to 0-100, higher = more robust
    (`tools/pjswipe.py`): CA+ and QA+ 2 x percentile rank, CA- and QA- 100 - percentile rank,
    TMA 100 (1 - cosine), ES:D 100 (2 - shift) / 2, and ES:R, LTM, GTM (Recall@1) and GTT
    (retain@4) as they are. `outcomes` holds the after-attack values: percentile ranks, Recall@1
    and retain@4 in %, the TMA cosine as a fraction, the ES shift in embedding units."""
    missing = [k for k in ERS_ATTACKS if k not in outcomes]
    if missing:
        raise ValueError(f"ers: missing attack outcomes {missing}; needed {ERS_ATTACKS}")
    o = outcomes
    return {"CA+": 2.0 * o["CA+"], "CA-": 100.0 - o["CA-"], "QA+": 2.0 * o["QA+"], "QA-": 100.0 - o["QA-"],
            "TMA": 100.0 * (1.0 - o["TMA"]), "ES:D": 100.0 * (2.0 - o["ES:D"]) / 2.0, "ES:R": o["ES:R"],
            "LTM": o["LTM"], "GTM": o["GTM"], "GTT": o["GTT"]}


def ers(outcomes: dict[str, float]) -> float:
    """The empirical robustness score: the mean of `ers_terms` (0-100)."""
    return float(np.mean(list(ers_terms(outcomes).values())))


def ers_hm(ers_score: float, recall1: float) -> float:
    """ERS-HM, our stand-in for CA-TRIDE's new robustness metric (whose definition is not in our
    sources): the harmonic mean of ERS (0-100) and the benign Recall@1 (a fraction, taken x 100).
    It answers the drawback we read the paper to name, that ERS alone rewards a collapsed model: one
    that retrieves nothing has little for an attack to destroy, and a high ERS; here it scores ~0."""
    if not 0.0 <= recall1 <= 1.0 or not 0.0 <= ers_score <= 100.0:
        raise ValueError(f"ers_hm: ERS in [0, 100] and Recall@1 in [0, 1] expected, got {ers_score}, {recall1}")
    r = 100.0 * recall1
    return 0.0 if ers_score + r == 0 else 2.0 * ers_score * r / (ers_score + r)
