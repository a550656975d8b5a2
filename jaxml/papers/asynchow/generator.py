"""AsyncHow-style plans from a seed: sequential, parallel and asynchronous, 3-17 steps, with the release's
unit mix (intervals for months and years) and step texts from real English (WordNet 3.0's verb examples).

    plans = generate_plans(100, seed=0)                      # a mix of the three plan types
    plans = split("test")                                     # the fixed test split (seed-derived, disjoint)
    complexity_bin(plans[0].ve_count)                         # '13-16'

What follows the release and what is ours:
- step counts: sequential and parallel plans have 3-7 steps (40 each in the release); asynchronous ones
  follow the release's histogram (3: 279, 4: 270, 5: 499, 6: 249, 7: 226, 8-17: 75 in all);
- asynchronous structure (ours): a random DAG whose edges go forward in the step order (how-to steps are
  listed in a feasible order), edge probability drawn per plan, transitively reduced, and rejected until it
  is neither a chain nor edgeless, so `plan_type` is 'async' as in the release's classification;
- durations (ours): a unit drawn per step (minutes .42, hours .32, days .15, weeks .098, months .008,
  years .004) and a typical count for it; months and years make a gold answer an interval (about 5% of
  plans; the release: 52 of 1598 async tasks);
- texts: the title is one WordNet verb phrase ("How to frame a picture") and the steps are other phrases of
  the same WordNet verb domain, so the plans read as English but their semantics are synthetic, unlike the
  release's WikiHow/proScript plans annotated by GPT-3.5.
"""

from __future__ import annotations

import functools
import hashlib

import numpy as np

from jaxml.papers.asynchow.plan import PLAN_TYPES, Plan

UNITS = ("minute", "hour", "day", "week", "month", "year")
UNIT_PROBS = (0.42, 0.32, 0.15, 0.098, 0.008, 0.004)
UNIT_COUNTS = {"minute": (1, 2, 3, 5, 10, 15, 20, 25, 30, 40, 45), "hour": (1, 2, 3, 4, 5, 6, 8, 10, 12),
               "day": (1, 2, 3, 4, 5, 7, 10, 14), "week": (1, 2, 3, 4, 6), "month": (1, 2, 3, 6),
               "year": (1, 2)}
# The release's async step-count histogram (8-17 share its 75 tasks, falling off).
ASYNC_STEP_WEIGHTS = {3: 279, 4: 270, 5: 499, 6: 249, 7: 226, 8: 20, 9: 15, 10: 11, 11: 8, 12: 6, 13: 5,
                      14: 4, 15: 3, 16: 2, 17: 1}
SIMPLE_STEPS = (3, 7)
MIN_STEPS, MAX_STEPS = 3, 17                       # AsyncHow plans have 3 to 17 steps
# Complexity bins of |V| + |E| (the release's ve_count): sequential 3-7 steps give 9-17, parallel 11-23.
COMPLEXITY_EDGES = (13, 17, 21, 26)
COMPLEXITY_BINS = ("<=12", "13-16", "17-20", "21-25", ">=26")
SPLIT_SEEDS = {"train": 1_000, "validation": 2_000, "test": 3_000}
SPLIT_SIZES = {"train": 20_000, "validation": 1_000, "test": 1_000}
TEXT_SOURCES = ("wordnet", "synthetic")


def complexity_bin(ve_count: int) -> str:
    """The label of the complexity bin of a plan's |V| + |E|."""
    return COMPLEXITY_BINS[int(np.searchsorted(COMPLEXITY_EDGES, ve_count, side="right"))]


@functools.lru_cache(maxsize=None)
def _phrases_by_domain() -> dict[str, tuple[str, ...]]:
    from jaxml.data import wordnet
    by_domain: dict[str, list[str]] = {}
    for domain, phrase in wordnet.verb_phrases():
        by_domain.setdefault(domain, []).append(phrase)
    return {d: tuple(p) for d, p in by_domain.items() if len(p) > MAX_STEPS}   # a title and up to 17 steps


def _texts(rng: np.random.Generator, n: int, source: str) -> tuple[str, tuple[str, ...]]:
    if source == "synthetic":
        k = int(rng.integers(1_000_000))
        return f"How to finish project {k}", tuple(f"Do part {i} of project {k}." for i in range(1, n + 1))
    domains = _phrases_by_domain()
    names = sorted(domains)
    sizes = np.array([len(domains[d]) for d in names], float)
    pool = domains[names[rng.choice(len(names), p=sizes / sizes.sum())]]
    chosen = rng.choice(len(pool), size=n + 1, replace=False)
    title = f"How to {pool[chosen[0]]}"
    return title, tuple(pool[i][0].upper() + pool[i][1:] + "." for i in chosen[1:])


def _duration(rng: np.random.Generator) -> str:
    unit = UNITS[rng.choice(len(UNITS), p=UNIT_PROBS)]
    count = int(rng.choice(UNIT_COUNTS[unit]))
    return f"{count} {unit}{'s' if count != 1 else ''}"


def _transitive_reduction(n: int, edges: set[tuple[int, int]]) -> list[tuple[int, int]]:
    """Edges (a, b), a < b, without those implied by a longer path."""
    reach = np.zeros((n + 1, n + 1), bool)   # reach[a, b]: a path a -> b of length >= 1
    for a in range(n, 0, -1):
        for b in sorted(b for x, b in edges if x == a):
            reach[a, b] = True
            reach[a] |= reach[b]
    kept = []
    for a, b in sorted(edges):
        via = [c for x, c in edges if x == a and c != b]
        if not any(reach[c, b] for c in via):
            kept.append((a, b))
    return kept


def _async_deps(rng: np.random.Generator, n: int) -> list[tuple[int, int]]:
    for _ in range(1000):
        p = rng.uniform(0.15, 0.6)
        upper = np.triu(rng.random((n, n)) < p, k=1)
        deps = _transitive_reduction(n, {(int(a) + 1, int(b) + 1) for a, b in zip(*np.nonzero(upper))})
        probe = Plan("probe", ("s.",) * n, ("1 minute",) * n, tuple(deps))
        if probe.plan_type == "async":
            return deps
    raise RuntimeError(f"no asynchronous DAG on {n} steps after 1000 draws")   # not reached for n >= 3


def generate_plan(rng: np.random.Generator, plan_type: str, n_steps: int, text_source: str = "wordnet") -> Plan:
    """One plan of `plan_type` ('sequential', 'parallel', 'async') with `n_steps` (>= 3) steps."""
    if plan_type not in PLAN_TYPES:
        raise ValueError(f"plan_type={plan_type!r}; accepted {PLAN_TYPES}")
    if not MIN_STEPS <= n_steps <= MAX_STEPS:
        raise ValueError(f"n_steps={n_steps}; AsyncHow plans have {MIN_STEPS} to {MAX_STEPS} steps")
    if text_source not in TEXT_SOURCES:
        raise ValueError(f"text_source={text_source!r}; accepted {TEXT_SOURCES}")
    if plan_type == "sequential":
        deps = [(i, i + 1) for i in range(1, n_steps)]
    elif plan_type == "parallel":
        deps = []
    else:
        deps = _async_deps(rng, n_steps)
    title, steps = _texts(rng, n_steps, text_source)
    return Plan(title, steps, tuple(_duration(rng) for _ in range(n_steps)), tuple(deps))


def _draw_steps(rng: np.random.Generator, plan_type: str) -> int:
    if plan_type != "async":
        return int(rng.integers(SIMPLE_STEPS[0], SIMPLE_STEPS[1] + 1))
    counts = np.array(list(ASYNC_STEP_WEIGHTS))
    weights = np.array(list(ASYNC_STEP_WEIGHTS.values()), float)
    return int(rng.choice(counts, p=weights / weights.sum()))


def generate_plans(num: int, seed: int, plan_types: tuple[str, ...] = PLAN_TYPES,
                   type_probs: tuple[float, ...] | None = None, text_source: str = "wordnet") -> list[Plan]:
    """`num` plans from `seed`; each plan's type is drawn with `type_probs` (default: the release's mix,
    200 sequential, 200 parallel, 1598 async)."""
    if num < 0:
        raise ValueError(f"num={num} must be >= 0")
    unknown = [t for t in plan_types if t not in PLAN_TYPES]
    if unknown or not plan_types:
        raise ValueError(f"plan_types={plan_types!r}; accepted a non-empty subset of {PLAN_TYPES}")
    if type_probs is None:
        release = {"sequential": 200, "parallel": 200, "async": 1598}
        type_probs = tuple(release[t] for t in plan_types)
    if len(type_probs) != len(plan_types) or min(type_probs) < 0 or sum(type_probs) <= 0:
        raise ValueError(f"type_probs={type_probs!r} must be {len(plan_types)} non-negative weights")
    probs = np.asarray(type_probs, float) / sum(type_probs)
    rng = np.random.default_rng(seed)
    plans = []
    for _ in range(num):
        plan_type = plan_types[rng.choice(len(plan_types), p=probs)]
        plans.append(generate_plan(rng, plan_type, _draw_steps(rng, plan_type), text_source))
    return plans


def structure_key(plan: Plan) -> tuple:
    """What a solver sees of a plan (constraints and durations, not texts)."""
    return plan.deps, plan.durations


def split_of(plan: Plan) -> str:
    """The split a plan's structure belongs to: one of the three by a hash of `structure_key` (a third
    each), so the splits are disjoint by construction and no test plan is a training plan with other
    texts; each split keeps the plans of its own seed's stream that hash to it."""
    bucket = int(hashlib.sha256(repr(structure_key(plan)).encode()).hexdigest()[:8], 16) % 3
    return tuple(SPLIT_SEEDS)[bucket]


_SPLIT_CHUNK = 600                             # plans drawn per seed of a split's stream
_SPLIT_CACHE: dict[tuple[str, str], tuple[list[Plan], list[int]]] = {}


def _split(name: str, num: int, text_source: str) -> list[Plan]:
    """The first `num` plans of split `name`: chunks of `_SPLIT_CHUNK` plans from seeds SPLIT_SEEDS[name],
    +1, ... keep those hashing to the split; only as many chunks as needed are drawn (and kept)."""
    plans, chunks = _SPLIT_CACHE.setdefault((name, text_source), ([], [0]))
    while len(plans) < num:
        batch = generate_plans(_SPLIT_CHUNK, SPLIT_SEEDS[name] + chunks[0], text_source=text_source)
        plans += [p for p in batch if split_of(p) == name]
        chunks[0] += 1
    return plans[:num]


def split(name: str, num: int | None = None, text_source: str = "wordnet") -> list[Plan]:
    """The fixed split `name` ('train', 'validation', 'test'), its first `num` plans (at most
    `SPLIT_SIZES[name]`): plans generated from the split's seed whose structure hashes to the split
    (`split_of`); a prefix of a split is the same whatever `num`."""
    if name not in SPLIT_SEEDS:
        raise ValueError(f"split {name!r}; accepted {tuple(SPLIT_SEEDS)}")
    num = SPLIT_SIZES[name] if num is None else num
    if not 0 <= num <= SPLIT_SIZES[name]:
        raise ValueError(f"split {name!r} has {SPLIT_SIZES[name]} plans; asked for {num}")
    return list(_split(name, num, text_source))
