"""AsyncHow plans and the exact solver of their question.

A plan is a task title, numbered steps each with a duration ("30 minutes", "2 months"), and ordering
constraints (prec, foll) between steps; with START before every step without a predecessor and END after
every step without a successor it is a DAG. The question, "what is the shortest possible time with
infinite resources?", is the critical path: the largest total duration of a START -> END path.

Durations are intervals of seconds: a month is [28, 31] days and a year [365, 366] days (the release's
rule); every other unit is exact. The answer is an interval too, computed on both ends:

    plan = Plan("How to bake bread", ("Mix the dough.", "Heat the oven.", "Bake the loaf."),
                ("20 minutes", "15 minutes", "40 minutes"), deps=((1, 3), (2, 3)))
    critical_path(plan)            # Interval(lo=3600, hi=3600): 20 + 40 minutes
    plan.plan_type, plan.ve_count  # 'async', 12

`critical_path` is a dynamic program over a topological order (O(V + E)); `critical_path_enumerate`
takes the maximum over every START -> END path (exponential; the release's method, used to check the
DP) and `release_task_time` reproduces the release's own bookkeeping of the interval's lower end.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable, Sequence

import numpy as np

START, END = "START", "END"
PLAN_TYPES = ("sequential", "parallel", "async")

# Seconds per unit: [lo, hi]. Month and year are intervals (the release's [28, 31] and [365, 366] days).
DAY = 86400
UNIT_SECONDS = {
    "second": (1, 1), "minute": (60, 60), "hour": (3600, 3600), "day": (DAY, DAY), "week": (7 * DAY, 7 * DAY),
    "month": (28 * DAY, 31 * DAY), "year": (365 * DAY, 366 * DAY),
}
UNIT_ALIASES = {
    "s": "second", "sec": "second", "secs": "second", "second": "second", "seconds": "second",
    "m": "month", "min": "minute", "mins": "minute", "minute": "minute", "minutes": "minute",
    "h": "hour", "hr": "hour", "hrs": "hour", "hour": "hour", "hours": "hour",
    "d": "day", "day": "day", "days": "day",
    "w": "week", "week": "week", "weeks": "week",
    "month": "month", "months": "month", "y": "year", "year": "year", "years": "year",
}
# Longest alias first so that "minutes" is not read as "min" + "utes".
_UNIT_PATTERN = "|".join(sorted((re.escape(u) for u in UNIT_ALIASES), key=len, reverse=True))
_DURATION = re.compile(rf"(\d+(?:,\d{{3}})*(?:\.\d+)?)\s*({_UNIT_PATTERN})\b", re.IGNORECASE)


class PlanError(ValueError):
    """A plan that is not a valid AsyncHow task (the message names the field and the offending value)."""


@dataclasses.dataclass(frozen=True, order=True)
class Interval:
    """A closed interval of seconds [lo, hi]; exact durations have lo == hi."""

    lo: float
    hi: float

    def __post_init__(self):
        if not 0 <= self.lo <= self.hi:
            raise ValueError(f"Interval needs 0 <= lo <= hi, got [{self.lo}, {self.hi}]")

    def __add__(self, other: "Interval") -> "Interval":
        return Interval(self.lo + other.lo, self.hi + other.hi)

    def contains(self, seconds: float) -> bool:
        return self.lo <= seconds <= self.hi

    @property
    def exact(self) -> bool:
        return self.lo == self.hi


def duration_spans(text: str) -> list[tuple[float, str]]:
    """Every "number unit" span of `text` as (number, canonical unit), in order ("1 hour 30 min" -> two)."""
    return [(float(n.replace(",", "")), UNIT_ALIASES[u.lower()]) for n, u in _DURATION.findall(text)]


def parse_duration(text: str) -> Interval:
    """The interval of seconds of a step's duration: the sum of its "number unit" spans.

    "30 minutes" -> [1800, 1800]; "2 months" -> [56 days, 62 days]; "1 hour 30 minutes" -> [5400, 5400].
    Raises PlanError for text without a number followed by a unit (accepted units: `UNIT_ALIASES`).
    """
    if not isinstance(text, str):
        raise PlanError(f"a duration must be a str like '30 minutes', got {type(text).__name__} {text!r}")
    spans = duration_spans(text)
    if not spans:
        raise PlanError(f"cannot parse the duration {text!r}: expected a number and a unit "
                        f"(e.g. '30 minutes', '2 months'; units: {sorted(set(UNIT_ALIASES.values()))})")
    lo = sum(n * UNIT_SECONDS[u][0] for n, u in spans)
    hi = sum(n * UNIT_SECONDS[u][1] for n, u in spans)
    return Interval(lo, hi)


def format_seconds(seconds: float) -> str:
    """An exact duration as text in the largest whole units: 5400 -> '1 hour 30 minutes', 0 -> '0 minutes'."""
    seconds = int(round(seconds))
    if seconds == 0:
        return "0 minutes"
    parts = []
    for unit in ("week", "day", "hour", "minute", "second"):
        size = UNIT_SECONDS[unit][0]
        count, seconds = divmod(seconds, size)
        if count:
            parts.append(f"{count} {unit}{'s' if count != 1 else ''}")
    return " ".join(parts)


@dataclasses.dataclass(frozen=True)
class Plan:
    """One AsyncHow task.

    Attributes:
      title: "How to ..." (the task is the title without "How to ").
      steps: step texts, step i (1-based) is steps[i - 1].
      durations: one duration text per step ("30 minutes").
      deps: ordering constraints (prec, foll) between 1-based step ids: prec must finish before foll starts.
    Raises:
      PlanError: mismatched lengths, an unknown step id, a self-loop or duplicate constraint, a cycle
        (named), or an unparseable duration.
    """

    title: str
    steps: tuple[str, ...]
    durations: tuple[str, ...]
    deps: tuple[tuple[int, int], ...] = ()

    def __post_init__(self):
        object.__setattr__(self, "steps", tuple(self.steps))
        object.__setattr__(self, "durations", tuple(self.durations))
        try:
            deps = tuple((int(a), int(b)) for a, b in self.deps)
        except (TypeError, ValueError):
            raise PlanError(f"{self.title!r}: deps must be (prec, foll) pairs of step ids, got {self.deps!r}") from None
        object.__setattr__(self, "deps", deps)
        n = len(self.steps)
        if n == 0:
            raise PlanError(f"{self.title!r}: a plan needs at least one step")
        if len(self.durations) != n:
            raise PlanError(f"{self.title!r}: {n} steps but {len(self.durations)} durations")
        for a, b in deps:
            for s in (a, b):
                if not 1 <= s <= n:
                    raise PlanError(f"{self.title!r}: constraint ({a}, {b}) names step {s}; steps are 1..{n}")
            if a == b:
                raise PlanError(f"{self.title!r}: constraint ({a}, {b}) makes step {a} precede itself")
        if len(set(deps)) != len(deps):
            dup = sorted({d for d in deps if deps.count(d) > 1})
            raise PlanError(f"{self.title!r}: duplicate constraints {dup}")
        for i, d in enumerate(self.durations):
            try:
                parse_duration(d)
            except PlanError as e:
                raise PlanError(f"{self.title!r}, step {i + 1}: {e}") from None
        cycle = _find_cycle(n, deps)
        if cycle:
            raise PlanError(f"{self.title!r}: the constraints have a cycle {' -> '.join(map(str, cycle))}")

    # --- Structure ------------------------------------------------------------------------------

    @property
    def n(self) -> int:
        return len(self.steps)

    @property
    def task(self) -> str:
        return self.title[len("How to "):] if self.title.startswith("How to ") else self.title

    def intervals(self) -> tuple[np.ndarray, np.ndarray]:
        """Duration bounds in seconds, float64 [n] each (lo, hi)."""
        ivs = [parse_duration(d) for d in self.durations]
        return np.array([i.lo for i in ivs], np.float64), np.array([i.hi for i in ivs], np.float64)

    def predecessors(self) -> list[list[int]]:
        """preds[i - 1]: the step ids that must precede step i."""
        preds = [[] for _ in range(self.n)]
        for a, b in self.deps:
            preds[b - 1].append(a)
        return preds

    def successors(self) -> list[list[int]]:
        succ = [[] for _ in range(self.n)]
        for a, b in self.deps:
            succ[a - 1].append(b)
        return succ

    def edge_list(self) -> list[tuple[str, str]]:
        """The release's `edge_list`: the constraints, then (START, i) for each step without a predecessor
        and (i, END) for each without a successor, ids as strings."""
        preds, succ = self.predecessors(), self.successors()
        edges = [(str(a), str(b)) for a, b in self.deps]
        edges += [(START, str(i)) for i in range(1, self.n + 1) if not preds[i - 1]]
        edges += [(str(i), END) for i in range(1, self.n + 1) if not succ[i - 1]]
        return edges

    @property
    def ve_count(self) -> int:
        """The release's complexity |V| + |E|: steps + START + END + edges including START/END ones."""
        return len(self.edge_list()) + self.n + 2

    @property
    def plan_type(self) -> str:
        """'parallel' (no constraints), 'sequential' (one chain through every step) or 'async'."""
        if not self.deps:
            return "parallel"
        indeg = np.zeros(self.n, int)
        outdeg = np.zeros(self.n, int)
        for a, b in self.deps:
            outdeg[a - 1] += 1
            indeg[b - 1] += 1
        chain = (len(self.deps) == self.n - 1 and np.all(indeg <= 1) and np.all(outdeg <= 1))
        return "sequential" if chain else "async"

    def topological_order(self) -> list[int]:
        """Step ids, each after all its predecessors (Kahn's algorithm, smallest id first)."""
        preds_left = [len(p) for p in self.predecessors()]
        succ = self.successors()
        ready = sorted(i for i in range(1, self.n + 1) if preds_left[i - 1] == 0)
        order = []
        while ready:
            v = ready.pop(0)
            order.append(v)
            for w in succ[v - 1]:
                preds_left[w - 1] -= 1
                if preds_left[w - 1] == 0:
                    ready.append(w)
            ready.sort()
        return order

    def to_dict(self) -> dict:
        return {"title": self.title, "steps": list(self.steps), "durations": list(self.durations),
                "deps": [list(d) for d in self.deps]}

    @classmethod
    def from_dict(cls, d: dict) -> "Plan":
        missing = {"title", "steps", "durations"} - set(d)
        if missing:
            raise PlanError(f"a plan record needs {sorted(missing)}; got keys {sorted(d)}")
        return cls(d["title"], tuple(d["steps"]), tuple(d["durations"]), tuple(tuple(e) for e in d.get("deps", ())))

    @classmethod
    def from_edge_list(cls, title: str, steps: Sequence[str], durations: Sequence[str],
                       edge_list: Iterable[tuple[str, str]]) -> "Plan":
        """A plan from the release's `edge_list` (constraints plus START/END edges), checking that every
        step is connected: reached from START and reaching END, and that START/END edges are the ones the
        constraints imply (no step both with a predecessor and a START edge)."""
        n = len(steps)
        edges = [(str(a), str(b)) for a, b in edge_list]
        ids = {str(i) for i in range(1, n + 1)}
        for a, b in edges:
            for s in (a, b):
                if s not in ids | {START, END}:
                    raise PlanError(f"{title!r}: edge ({a}, {b}) names {s!r}; nodes are 1..{n}, START, END")
            if b == START or a == END:
                raise PlanError(f"{title!r}: edge ({a}, {b}) goes into START or out of END")
        deps = tuple((int(a), int(b)) for a, b in edges if START not in (a, b) and END not in (a, b))
        plan = cls(title, tuple(steps), tuple(durations), deps)
        given, implied = set(edges), set(plan.edge_list())
        unreached = sorted(i for i in range(1, n + 1) if not any(b == str(i) for _, b in given))
        if unreached:
            raise PlanError(f"{title!r}: steps {unreached} are disconnected (no edge into them, not even from START)")
        stranded = sorted(i for i in range(1, n + 1) if not any(a == str(i) for a, _ in given))
        if stranded:
            raise PlanError(f"{title!r}: steps {stranded} are disconnected (no edge out of them, not even to END)")
        if given != implied:
            raise PlanError(f"{title!r}: START/END edges {sorted(given ^ implied)} disagree with the constraints "
                            f"(START precedes exactly the steps without a predecessor, END follows those without "
                            f"a successor)")
        return plan


def _find_cycle(n: int, deps: Sequence[tuple[int, int]]) -> list[int] | None:
    """One directed cycle as a list of ids (first repeated at the end), or None."""
    succ = [[] for _ in range(n + 1)]
    for a, b in deps:
        succ[a].append(b)
    color = [0] * (n + 1)   # 0 new, 1 on the stack, 2 done
    parent = [0] * (n + 1)
    for root in range(1, n + 1):
        if color[root]:
            continue
        stack = [(root, iter(succ[root]))]
        color[root] = 1
        while stack:
            v, it = stack[-1]
            w = next(it, None)
            if w is None:
                color[v] = 2
                stack.pop()
            elif color[w] == 1:
                cycle, u = [w], v
                while u != w:
                    cycle.append(u)
                    u = parent[u]
                return [w] + cycle[1:][::-1] + [w]
            elif color[w] == 0:
                color[w], parent[w] = 1, v
                stack.append((w, iter(succ[w])))
    return None


# --- The solver --------------------------------------------------------------------------------------

def earliest_finish(plan: Plan) -> tuple[np.ndarray, np.ndarray]:
    """Earliest finish time of every step with infinite resources, lo and hi ends, seconds [n] each:
    finish(i) = duration(i) + max(finish(p) for p preceding i), 0 for no predecessor."""
    lo, hi = plan.intervals()
    preds = plan.predecessors()
    f_lo, f_hi = np.zeros(plan.n), np.zeros(plan.n)
    for v in plan.topological_order():
        p = preds[v - 1]
        f_lo[v - 1] = lo[v - 1] + (max(f_lo[u - 1] for u in p) if p else 0.0)
        f_hi[v - 1] = hi[v - 1] + (max(f_hi[u - 1] for u in p) if p else 0.0)
    return f_lo, f_hi


def critical_path(plan: Plan) -> Interval:
    """The shortest possible time with infinite resources: [max over paths of the lo sums, max over paths of
    the hi sums] (each end's longest START -> END path), by dynamic programming in O(V + E)."""
    f_lo, f_hi = earliest_finish(plan)
    return Interval(float(f_lo.max()), float(f_hi.max()))


def critical_steps(plan: Plan, end: str = "hi") -> list[int]:
    """One longest path on the `end` ('lo' or 'hi') durations, as step ids in order (ties: smallest id)."""
    if end not in ("lo", "hi"):
        raise ValueError(f"end={end!r}; accepted 'lo' or 'hi'")
    f = earliest_finish(plan)[0 if end == "lo" else 1]
    d = plan.intervals()[0 if end == "lo" else 1]
    preds = plan.predecessors()
    v = int(np.argmax(f)) + 1
    path = [v]
    while preds[v - 1]:
        want = f[v - 1] - d[v - 1]
        v = min(u for u in preds[v - 1] if np.isclose(f[u - 1], want, rtol=0, atol=1e-6))
        path.append(v)
    return path[::-1]


def all_paths(plan: Plan) -> list[list[str]]:
    """Every START -> END path as node names (['START', '1', '3', 'END']), by depth-first search."""
    succ = {START: [], END: []}
    for a, b in plan.edge_list():
        succ.setdefault(a, []).append(b)
    paths, stack = [], [[START]]
    while stack:
        path = stack.pop()
        if path[-1] == END:
            paths.append(path)
            continue
        stack.extend(path + [w] for w in reversed(succ.get(path[-1], [])))
    return paths


def critical_path_enumerate(plan: Plan) -> Interval:
    """`critical_path` by enumerating every START -> END path (exponential; a check of the DP)."""
    lo, hi = plan.intervals()
    best_lo = best_hi = 0.0
    for path in all_paths(plan):
        steps = [int(v) - 1 for v in path[1:-1]]
        best_lo, best_hi = max(best_lo, lo[steps].sum()), max(best_hi, hi[steps].sum())
    return Interval(float(best_lo), float(best_hi))


def release_task_time(plan: Plan) -> tuple[Interval, list[list[str]]]:
    """The release's gold `task_time` and `all_corr_paths` (`generate_graph_prompt.generate_task_time`): paths
    in DFS order; a path with a larger hi sum resets the answer to its interval; a later path whose hi sum
    reaches the current lo end is added to the correct paths and sets the lo end to its own lo sum.

    The hi end always equals `critical_path(plan).hi`; the lo end can differ from the max-over-paths reading
    when interval (month/year) steps lie on competing paths.
    """
    lo, hi = plan.intervals()
    best, correct = [0.0, 0.0], []
    for path in all_paths(plan):
        steps = [int(v) - 1 for v in path[1:-1]]
        t = [float(lo[steps].sum()), float(hi[steps].sum())]
        if t[1] > best[1]:
            best, correct = t, [path]
        elif t[1] >= best[0] and path not in correct:
            correct.append(path)
            best[0] = t[0]
    return Interval(best[0], best[1]), correct
