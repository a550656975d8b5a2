"""The AsyncHow release's pickles, read without running their code, and a JSON format of our own.

The release (`fangru-lin/graph-llm-asynchow-plan`, `data/`) ships `async_benchmark.pkl` (1598 tasks),
`seq_benchmark.pkl` and `para_benchmark.pkl` (200 each): each a dict of parallel lists, one entry per task
(`titles`, `steps`, `step_deps`, `edge_list`, `time_dic`, `timedelta_dic`, `task_time`, ...), plus a few
dict-valued fields shared by the file (`nshot_instructions`, `bag_instruction`, `prompts`).

    release = load_release("data/")                # the three files found there: a ReleaseSet
    release[0].plan, release[0].gold                 # Plan, Interval of seconds (the release's task_time)
    check_gold(release)                              # our solver against the release's task_time
    export_json(release, "asynchow.json")            # versioned JSON; load_tasks() reads either format

Pickles are loaded by `safe_load_pickle`, whose unpickler resolves only `set`, `frozenset` and
`datetime.timedelta` (all a release file holds besides dicts, lists, tuples, strings and numbers): a pickle
that names any other callable (os.system, subprocess.Popen, eval, ...) raises `UnsafePickleError` before
anything is called.

The gold answer is the release's `task_time` ([lo, hi] timedeltas, seconds here). Benchmark pitfall: the
release's `longest_path_len` is the START -> END path with the MOST NODES (`get_all_paths`' longest path,
a list of node names despite the name), not the critical path and not a length; it is never the answer
(in 520 of 1598 async tasks it is not even a correct path) and this module never reads it as gold.
"""

from __future__ import annotations

import _compat_pickle
import dataclasses
import datetime
import io
import json
import math
import pathlib
import pickle
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

from jaxml.papers.asynchow.plan import (
    PLAN_TYPES, Interval, Plan, PlanError, all_paths, critical_path, parse_duration, release_task_time)

RELEASE_FILES = {"async": "async_benchmark.pkl", "seq": "seq_benchmark.pkl", "para": "para_benchmark.pkl"}
REQUIRED_FIELDS = ("titles", "steps", "time_dic", "task_time")   # plus step_deps or edge_list
# Fields turned into a ReleaseTask's plan / plan_type / gold / ve_count; every other field is kept in `extra`.
CONSUMED_FIELDS = ("titles", "steps", "time_dic", "step_deps", "edge_list", "task_time", "plan_types", "ve_count")
# File-level dicts that hold per-task lists under a 'prompts' key ({template: {variant: [one per task]}}):
# each task gets its slice in `extra`, the rest of the dict is kept once per file in `ReleaseSet.meta`.
NESTED_FIELDS = ("prompts", "nshot_instructions")
JSON_FORMAT, JSON_VERSION = "jaxml-asynchow", 1
SOURCES = ("async", "seq", "para", "generated")


# --- Restricted unpickling --------------------------------------------------------------------------

class UnsafePickleError(pickle.UnpicklingError, ValueError):
    """A pickle that names a global outside `RestrictedUnpickler.ACCEPTED` (it could run code)."""


class RestrictedUnpickler(pickle.Unpickler):
    """An unpickler that resolves only the globals the release's files need.

    Dicts, lists, tuples, str, int, float, bool and None are built by opcodes without any global; so are
    sets and frozensets from protocol 4 on. What still goes through `find_class`:
      - `builtins.set` / `builtins.frozenset`: sets under protocols 0-3 (`step_deps` is a set for the
        proScript-derived tasks); protocols 0-2 spell the module `__builtin__`;
      - `datetime.timedelta`: `timedelta_dic` values and `task_time` ([lo, hi] timedeltas).
    Nothing else is admitted: not `copyreg._reconstructor` (only instances of Python classes pickled
    under protocols 0-1 use it, and the release has none), not `_codecs.encode` (bytes under protocol
    <= 2; the release holds no bytes), not `datetime.datetime`/`date` (no field holds one).
    Extension-registry codes (EXT1/2/4) and persistent ids resolve through the same check or fail.
    """

    ACCEPTED: Mapping[tuple[str, str], type] = {
        ("builtins", "set"): set, ("builtins", "frozenset"): frozenset,
        ("__builtin__", "set"): set, ("__builtin__", "frozenset"): frozenset,
        ("datetime", "timedelta"): datetime.timedelta,
    }

    def find_class(self, module: str, name: str):
        try:
            return self.ACCEPTED[(module, name)]
        except KeyError:
            pass
        # Protocols 0-2 spell Python 3 names the Python 2 way (subprocess.Popen -> commands.Popen).
        canon = _compat_pickle.NAME_MAPPING.get(
            (module, name), (_compat_pickle.IMPORT_MAPPING.get(module, module), name))
        spelled = "" if canon == (module, name) else f" (spelled {module}.{name} in the pickle)"
        accepted = sorted({f"{m}.{n}" for m, n in self.ACCEPTED if m != "__builtin__"})
        raise UnsafePickleError(f"refusing to load the global {canon[0]}.{canon[1]}{spelled}: accepted only "
                                f"{accepted} (plus dict, list, tuple, str, int, float, bool, None)")

    def persistent_load(self, pid):
        raise UnsafePickleError(f"refusing a persistent id {pid!r}: the release's pickles have none")


def safe_loads(data: bytes, name: str = "<bytes>") -> Any:
    """`RestrictedUnpickler(data).load()`; errors name `name`."""
    try:
        return RestrictedUnpickler(io.BytesIO(data)).load()
    except UnsafePickleError as e:
        raise UnsafePickleError(f"{name}: {e}") from None
    except Exception as e:   # truncated or corrupt data: EOFError, UnpicklingError, TypeError, ...
        raise ValueError(f"{name}: not a readable pickle ({type(e).__name__}: {e})") from None


def safe_load_pickle(path: str | pathlib.Path) -> Any:
    """The object in the pickle file `path`, loaded with `RestrictedUnpickler` (never `pickle.load`)."""
    path = pathlib.Path(path)
    return safe_loads(path.read_bytes(), str(path))


# --- Tasks -------------------------------------------------------------------------------------------

class ReleaseFormatError(ValueError):
    """A file that is not in the release's (or our JSON) layout; the message names file, field and index."""


@dataclasses.dataclass(frozen=True)
class ReleaseTask:
    """One benchmark task.

    Attributes:
      plan: the steps, their durations (the release's `time_dic`, in step order) and the constraints
        (`step_deps`, checked against `edge_list`).
      plan_type: 'sequential', 'parallel' or 'async' (the release's `plan_types` when present, else
        `plan.plan_type`; the two can differ: the release calls a chain plus a transitive edge sequential).
      gold: the release's `task_time` in seconds (never `longest_path_len`, see the module docstring);
        for generated tasks, the rule `make_tasks` was given.
      ve_count: |V| + |E| (the release's field when present, else `plan.ve_count`).
      index: position in its file (0-based; the release's k-shot `idxs` count the same way).
      source: 'async', 'seq', 'para' (the release file) or 'generated'.
      extra: every other field of the task, untouched (`timedelta_dic`, `all_paths`, `adjacency_list`,
        this task's slice of `prompts`, ...); after a JSON round trip, in JSON form (`to_jsonable`).
    """

    plan: Plan
    plan_type: str
    gold: Interval
    ve_count: int
    index: int
    source: str
    extra: dict = dataclasses.field(default_factory=dict)


@dataclasses.dataclass(frozen=True)
class ReleaseSet(Sequence):
    """The tasks of one or more files, in order (async, seq, para for a directory).

    Attributes:
      tasks: the tasks.
      meta: per source, the file-level fields that are not per task (`nshot_instructions`' few-shot texts
        and `idxs`, `bag_instruction`, ...), untouched.
      files: per source, the file it came from.
    """

    tasks: tuple[ReleaseTask, ...]
    meta: dict = dataclasses.field(default_factory=dict)
    files: dict = dataclasses.field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.tasks)

    def __getitem__(self, i):
        return self.tasks[i]

    def __iter__(self) -> Iterator[ReleaseTask]:
        return iter(self.tasks)

    def by_source(self, source: str) -> list[ReleaseTask]:
        return [t for t in self.tasks if t.source == source]

    @property
    def plans(self) -> list[Plan]:
        return [t.plan for t in self.tasks]


def make_tasks(plans: Iterable[Plan], source: str = "generated", gold_rule: str = "critical_path") -> list[ReleaseTask]:
    """Tasks from plans, gold by `gold_rule`: 'critical_path' (our DP, [max lo, max hi] over paths) or
    'release' (`release_task_time`, the release's bookkeeping of the lo end)."""
    if gold_rule not in ("critical_path", "release"):
        raise ValueError(f"gold_rule={gold_rule!r}; accepted 'critical_path' or 'release'")
    if source not in SOURCES:
        raise ValueError(f"source={source!r}; accepted {SOURCES}")
    tasks = []
    for i, plan in enumerate(plans):
        gold = critical_path(plan) if gold_rule == "critical_path" else release_task_time(plan)[0]
        tasks.append(ReleaseTask(plan, plan.plan_type, gold, plan.ve_count, i, source, {}))
    return tasks


# --- Reading the release --------------------------------------------------------------------------------

def _kind_of(path: pathlib.Path, kind: str | None) -> str:
    if kind is not None:
        if kind not in RELEASE_FILES:
            raise ValueError(f"kind={kind!r}; accepted {tuple(RELEASE_FILES)}")
        return kind
    for k, name in RELEASE_FILES.items():
        if path.name == name or path.name.startswith(f"{k}_"):
            return k
    raise ValueError(f"{path}: cannot tell async/seq/para from the file name; pass kind= "
                     f"(release names: {sorted(RELEASE_FILES.values())})")


def _split_nested(value: Any, n: int, in_prompts: bool) -> tuple[Any, Any]:
    """(per-task tree whose leaves are n-lists, shared remainder) of a file-level dict; a list is per task
    only inside a 'prompts' subtree (so a length-n list like `idxs` is never mistaken for one)."""
    if isinstance(value, dict):
        per, shared = {}, {}
        for k, v in value.items():
            p, s = _split_nested(v, n, in_prompts or k == "prompts")
            if p is not None:
                per[k] = p
            if s is not None:
                shared[k] = s
        return (per or None), (shared if shared or not per else None)
    if in_prompts and isinstance(value, (list, tuple)) and len(value) == n:
        return list(value), None
    return None, value


def _take(tree: Any, i: int) -> Any:
    return {k: _take(v, i) for k, v in tree.items()} if isinstance(tree, dict) else tree[i]


def _seconds(value: Any, where: str) -> float:
    if isinstance(value, datetime.timedelta):
        return value.total_seconds()
    if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
        return float(value)
    raise ReleaseFormatError(f"{where}: expected a timedelta (or seconds), got {type(value).__name__} {value!r}")


def _step_id(s: Any, n: int, where: str) -> int:
    if isinstance(s, bool) or not isinstance(s, (str, int)) or not str(s).strip().isdigit():
        raise ReleaseFormatError(f"{where}: step id {s!r} is not a step number")
    v = int(s)
    if not 1 <= v <= n:
        raise ReleaseFormatError(f"{where}: step id {s!r} is out of range; steps are '1'..'{n}'")
    return v


def _task_from_fields(rec: dict, i: int, source: str, name: str) -> ReleaseTask:
    title = rec["titles"]
    at = f"{name}: task {i}" + (f" ({title!r})" if isinstance(title, str) else "")
    if not isinstance(title, str):
        raise ReleaseFormatError(f"{at}, field 'titles': expected a str, got {type(title).__name__}")
    steps = rec["steps"]
    if not isinstance(steps, (list, tuple)) or not all(isinstance(s, str) for s in steps):
        raise ReleaseFormatError(f"{at}, field 'steps': expected a list of str, got {steps!r:.200}")
    n = len(steps)
    time_dic = rec["time_dic"]
    if not isinstance(time_dic, dict):
        raise ReleaseFormatError(f"{at}, field 'time_dic': expected a dict {{'1': '30 minutes', ...}}, "
                                 f"got {type(time_dic).__name__}")
    keys = {str(k) for k in time_dic}
    want = {str(s) for s in range(1, n + 1)}
    if keys != want:
        raise ReleaseFormatError(f"{at}, field 'time_dic': keys {sorted(keys, key=str)} but the task has "
                                 f"steps '1'..'{n}' (missing {sorted(want - keys)}, unknown {sorted(keys - want)})")
    by_key = {str(k): v for k, v in time_dic.items()}
    durations = tuple(by_key[str(s)] for s in range(1, n + 1))

    deps = None
    if "step_deps" in rec and rec["step_deps"] is not None:
        raw = rec["step_deps"]
        if not isinstance(raw, (list, tuple, set, frozenset)):
            raise ReleaseFormatError(f"{at}, field 'step_deps': expected a list or set of (prec, foll), "
                                     f"got {type(raw).__name__}")
        pairs = []
        for e in raw:
            if not isinstance(e, (list, tuple)) or len(e) != 2:
                raise ReleaseFormatError(f"{at}, field 'step_deps': {e!r} is not a (prec, foll) pair")
            pairs.append(tuple(_step_id(s, n, f"{at}, field 'step_deps', pair {tuple(e)!r}") for s in e))
        if isinstance(raw, (set, frozenset)):
            pairs.sort()
        deps = tuple(dict.fromkeys(pairs))   # a set in the release's terms: duplicates carry no meaning
    try:
        if "edge_list" in rec and rec["edge_list"] is not None:
            edges = rec["edge_list"]
            if not isinstance(edges, (list, tuple, set, frozenset)) or not all(
                    isinstance(e, (list, tuple)) and len(e) == 2 for e in edges):
                raise ReleaseFormatError(f"{at}, field 'edge_list': expected a list of (node, node) pairs")
            edges = list(dict.fromkeys((str(a), str(b)) for a, b in edges))
            from_edges = Plan.from_edge_list(title, steps, durations, edges)
            if deps is None:
                deps = from_edges.deps
            elif set(deps) != set(from_edges.deps):
                raise ReleaseFormatError(
                    f"{at}: 'step_deps' {sorted(deps)} and the constraints of 'edge_list' "
                    f"{sorted(from_edges.deps)} disagree")
        if deps is None:
            raise ReleaseFormatError(f"{at}: neither 'step_deps' nor 'edge_list' is given")
        plan = Plan(title, tuple(steps), durations, deps)
    except PlanError as e:
        raise PlanError(f"{at}: {e}") from None

    tt = rec["task_time"]
    if not isinstance(tt, (list, tuple)) or len(tt) != 2:
        raise ReleaseFormatError(f"{at}, field 'task_time': expected [lo, hi] timedeltas, got {tt!r:.200}")
    lo, hi = (_seconds(v, f"{at}, field 'task_time'") for v in tt)
    try:
        gold = Interval(lo, hi)
    except ValueError as e:
        raise ReleaseFormatError(f"{at}, field 'task_time': {e}") from None

    plan_type = rec.get("plan_types", plan.plan_type)
    if plan_type not in PLAN_TYPES:
        raise ReleaseFormatError(f"{at}, field 'plan_types': {plan_type!r}; accepted {PLAN_TYPES}")
    ve_count = rec.get("ve_count", plan.ve_count)
    if isinstance(ve_count, bool) or not isinstance(ve_count, int):
        raise ReleaseFormatError(f"{at}, field 've_count': expected an int, got {ve_count!r}")
    extra = {k: v for k, v in rec.items() if k not in CONSUMED_FIELDS}
    return ReleaseTask(plan, plan_type, gold, ve_count, i, source, extra)


def tasks_from_release_dict(data: Any, source: str, name: str = "<release dict>") -> tuple[list[ReleaseTask], dict]:
    """(tasks, file-level meta) of one release dict of parallel lists; errors name `name`, field, index."""
    if not isinstance(data, dict):
        raise ReleaseFormatError(f"{name}: expected a dict of parallel lists, got {type(data).__name__}")
    missing = [f for f in REQUIRED_FIELDS if f not in data]
    if "step_deps" not in data and "edge_list" not in data:
        missing.append("step_deps or edge_list")
    if missing:
        raise ReleaseFormatError(f"{name}: missing field(s) {missing}; the file has {sorted(map(str, data))}")
    titles = data["titles"]
    if not isinstance(titles, (list, tuple)):
        raise ReleaseFormatError(f"{name}, field 'titles': expected a list, got {type(titles).__name__}")
    n = len(titles)
    parallel, meta, nested = {}, {}, {}
    for field, value in data.items():
        if isinstance(value, (list, tuple)):
            if len(value) != n:
                raise ReleaseFormatError(f"{name}, field {field!r}: {len(value)} entries but 'titles' has {n} "
                                         f"(the fields are parallel lists, one entry per task)")
            parallel[field] = value
        elif isinstance(value, dict) and field in NESTED_FIELDS:
            per, shared = _split_nested(value, n, field == "prompts")
            if per is not None:
                nested[field] = per
            if shared is not None:
                meta[field] = shared
        elif field in REQUIRED_FIELDS or field in ("step_deps", "edge_list"):
            raise ReleaseFormatError(f"{name}, field {field!r}: expected a list (one entry per task), "
                                     f"got {type(value).__name__}")
        else:
            meta[field] = value
    tasks = []
    for i in range(n):
        rec = {f: v[i] for f, v in parallel.items()}
        rec.update({f: _take(t, i) for f, t in nested.items()})
        tasks.append(_task_from_fields(rec, i, source, name))
    return tasks, meta


def load_release(path_or_dir: str | pathlib.Path, kind: str | None = None) -> ReleaseSet:
    """The release's tasks: a directory's `async_benchmark.pkl`, `seq_benchmark.pkl`, `para_benchmark.pkl`
    (those present, in that order) or one pickle file (its kind from the file name or `kind`).

    Raises:
      UnsafePickleError: a pickle that names a global outside `RestrictedUnpickler.ACCEPTED`.
      ReleaseFormatError (a ValueError): not a dict of parallel lists of equal length with the required
        fields, or a malformed field (message: file, field, task index).
      PlanError: a task whose steps, durations or constraints do not make a plan (unknown step, cycle,
        unparseable duration; message: file, task index).
    """
    path = pathlib.Path(path_or_dir)
    if path.is_dir():
        if kind is not None:
            raise ValueError(f"{path}: kind= applies to a single file; a directory reads all release files")
        found = [(k, path / f) for k, f in RELEASE_FILES.items() if (path / f).is_file()]
        if not found:
            raise FileNotFoundError(f"{path}: none of the release files {list(RELEASE_FILES.values())}")
    elif path.is_file():
        found = [(_kind_of(path, kind), path)]
    else:
        raise FileNotFoundError(f"{path}: no such file or directory")
    tasks, meta, files = [], {}, {}
    for k, f in found:
        file_tasks, file_meta = tasks_from_release_dict(safe_load_pickle(f), k, str(f))
        tasks += file_tasks
        if file_meta:
            meta[k] = file_meta
        files[k] = str(f)
    return ReleaseSet(tuple(tasks), meta, files)


# --- Checking the gold ------------------------------------------------------------------------------------

def _close(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=0.0, abs_tol=1e-6)


def check_gold(tasks: Iterable[ReleaseTask]) -> dict:
    """Our solver against each task's gold (the release's `task_time`).

    Returns a dict: `n`; `hi_agree` (critical_path(plan).hi == gold.hi: the DP on the upper ends);
    `lo_agree_release_rule` (gold.lo == release_task_time(plan).lo, the release's own bookkeeping);
    `lo_agree_max_paths` (gold.lo == critical_path(plan).lo, the max over paths of the lower sums);
    `interval_golds` (golds with lo < hi); and the disagreeing tasks as (source, index) lists:
    `hi_disagree`, `lo_release_rule_disagree`, `lo_max_paths_disagree`, `plan_type_disagree` (the task's
    plan_type vs `plan.plan_type`), `ve_count_disagree`, `duration_disagree` (a step whose `time_dic`
    text parses to other seconds than its `timedelta_dic` entry: the release parses only the last
    "number unit" span of a text).
    """
    out = {"n": 0, "hi_agree": 0, "lo_agree_release_rule": 0, "lo_agree_max_paths": 0, "interval_golds": 0,
           "hi_disagree": [], "lo_release_rule_disagree": [], "lo_max_paths_disagree": [],
           "plan_type_disagree": [], "ve_count_disagree": [], "duration_disagree": []}
    for t in tasks:
        key = (t.source, t.index)
        ours, rel = critical_path(t.plan), release_task_time(t.plan)[0]
        out["n"] += 1
        out["interval_golds"] += int(not t.gold.exact)
        for agree_key, disagree_key, agree in (
                ("hi_agree", "hi_disagree", _close(ours.hi, t.gold.hi)),
                ("lo_agree_release_rule", "lo_release_rule_disagree", _close(rel.lo, t.gold.lo)),
                ("lo_agree_max_paths", "lo_max_paths_disagree", _close(ours.lo, t.gold.lo))):
            if agree:
                out[agree_key] += 1
            else:
                out[disagree_key].append(key)
        if t.plan_type != t.plan.plan_type:
            out["plan_type_disagree"].append(key)
        if t.ve_count != t.plan.ve_count:
            out["ve_count_disagree"].append(key)
        tdd = t.extra.get("timedelta_dic")
        if isinstance(tdd, dict):
            for s, text in enumerate(t.plan.durations, 1):
                v = tdd.get(str(s))
                if isinstance(v, (list, tuple)) and len(v) == 2:
                    iv = parse_duration(text)
                    try:
                        lo, hi = (_seconds(x, "timedelta_dic") for x in v)
                    except ReleaseFormatError:
                        out["duration_disagree"].append(key)
                        break
                    if not (_close(iv.lo, lo) and _close(iv.hi, hi)):
                        out["duration_disagree"].append(key)
                        break
    return out


# --- Writing the release's layout -------------------------------------------------------------------------

def _renest(values: list) -> Any:
    """Inverse of the per-task slicing of a nested field: per-task trees -> one tree of lists."""
    if values and all(isinstance(v, dict) for v in values) and all(v.keys() == values[0].keys() for v in values):
        return {k: _renest([v[k] for v in values]) for k in values[0]}
    return list(values)


def _merge(shared: Any, per: Any) -> Any:
    if isinstance(shared, dict) and isinstance(per, dict):
        out = dict(shared)
        for k, v in per.items():
            out[k] = _merge(shared[k], v) if k in shared else v
        return out
    return per


def release_fields(plan: Plan) -> dict:
    """The release's derived fields of one plan (`generate_graph_prompt.main`'s meaning):
    step_nums, step_deps, edge_list, adjacency_list / adjacency_matrix / csr (nodes sorted as strings,
    so '10' < '2' and 'END' < 'START'; csr = (values, row_ptr, col_idx) with col_idx in edge_list order,
    as the release builds it, not row-sorted), time_dic, timedelta_dic ([lo, hi] timedeltas), all_paths (DFS
    order), path_count, longest_path_len / shortest_path_len (the paths with the most / fewest nodes:
    node lists, NOT lengths and NOT the answer), all_corr_paths (the release's correct-path rule)."""
    edges = plan.edge_list()
    nodes = sorted({v for e in edges for v in e})
    pos = {v: i for i, v in enumerate(nodes)}
    adj_list = {v: [] for v in nodes}
    matrix = [[0] * len(nodes) for _ in nodes]
    values, col, row_ptr = [], [], [0] * (len(nodes) + 1)
    for a, b in edges:
        adj_list[a].append(b)
        matrix[pos[a]][pos[b]] = 1
        values.append(1)
        col.append(pos[b])
        row_ptr[pos[a] + 1] += 1
    for r in range(1, len(row_ptr)):
        row_ptr[r] += row_ptr[r - 1]
    paths = all_paths(plan)
    td = lambda s: datetime.timedelta(seconds=s)  # noqa: E731
    ivs = [parse_duration(d) for d in plan.durations]
    return {
        "step_nums": plan.n,
        "step_deps": [(str(a), str(b)) for a, b in plan.deps],
        "edge_list": edges,
        "adjacency_matrix": matrix,
        "csr": (values, row_ptr, col),
        "adjacency_list": adj_list,
        "time_dic": {str(s): d for s, d in enumerate(plan.durations, 1)},
        "timedelta_dic": {str(s): [td(iv.lo), td(iv.hi)] for s, iv in enumerate(ivs, 1)},
        "longest_path_len": max(paths, key=len),
        "shortest_path_len": min(paths, key=len),
        "path_count": len(paths),
        "all_paths": paths,
        "all_corr_paths": release_task_time(plan)[1],
    }


def to_release_dict(tasks: Iterable[ReleaseTask], meta: dict | None = None) -> dict:
    """Tasks in the release's dict-of-parallel-lists layout (what `pickle.dump` wrote there): titles, steps,
    the `release_fields` of each plan, ve_count, plan_types, task_time ([lo, hi] timedeltas of the gold),
    then the tasks' other `extra` fields present in every task (the nested `prompts` slices put back
    into one {template: {variant: [...]}} tree), merged with the file-level `meta` if given."""
    tasks = list(tasks)
    out: dict[str, list] = {"titles": [], "steps": []}
    for t in tasks:
        out["titles"].append(t.plan.title)
        out["steps"].append(list(t.plan.steps))
        for k, v in release_fields(t.plan).items():
            out.setdefault(k, []).append(v)
        out.setdefault("ve_count", []).append(t.ve_count)
        out.setdefault("plan_types", []).append(t.plan_type)
        out.setdefault("task_time", []).append([datetime.timedelta(seconds=t.gold.lo),
                                                datetime.timedelta(seconds=t.gold.hi)])
    common = set.intersection(*(set(t.extra) for t in tasks)) if tasks else set()
    first_keys = list(tasks[0].extra) if tasks else []
    for k in (k for k in first_keys if k in common and k not in out and k not in CONSUMED_FIELDS):
        values = [t.extra[k] for t in tasks]
        out[k] = _renest(values) if k in NESTED_FIELDS else values
    for k, v in (meta or {}).items():
        out[k] = _merge(v, out[k]) if k in out else v
    return out


# --- JSON ---------------------------------------------------------------------------------------------------

class _NotJSON(Exception):
    pass


def to_jsonable(value: Any) -> Any:
    """`value` as JSON data that loads back equal: timedelta -> seconds (float), set/frozenset -> sorted
    list, tuple -> list; raises TypeError for anything else (non-str dict keys, NaN, objects)."""
    try:
        return _jsonable(value)
    except _NotJSON as e:
        raise TypeError(str(e)) from None


def _jsonable(v: Any) -> Any:
    if v is None or isinstance(v, (bool, int, str)):
        return v
    if isinstance(v, float):
        if not math.isfinite(v):
            raise _NotJSON(f"non-finite float {v}")
        return v
    if isinstance(v, datetime.timedelta):
        return v.total_seconds()
    if isinstance(v, (list, tuple)):
        return [_jsonable(x) for x in v]
    if isinstance(v, (set, frozenset)):
        items = [_jsonable(x) for x in v]
        return sorted(items, key=lambda x: json.dumps(x, sort_keys=True))
    if isinstance(v, dict):
        if not all(isinstance(k, str) for k in v):
            raise _NotJSON(f"dict keys {sorted(map(repr, v))[:5]} are not all str")
        return {k: _jsonable(x) for k, x in v.items()}
    raise _NotJSON(f"{type(v).__name__} is not JSON data")


def _task_record(t: ReleaseTask, dropped: set) -> dict:
    extra = {}
    for k, v in t.extra.items():
        try:
            extra[k] = _jsonable(v)
        except _NotJSON:
            dropped.add(k)
    return {"index": t.index, "source": t.source, "plan_type": t.plan_type, "ve_count": t.ve_count,
            "gold": [t.gold.lo, t.gold.hi], "plan": t.plan.to_dict(), "extra": extra}


def export_json(tasks: Iterable[ReleaseTask] | ReleaseSet, path: str | pathlib.Path, meta: dict | None = None) -> dict:
    """Writes {"format": "jaxml-asynchow", "version": 1, "tasks": [...], "meta": {...}}: per task its plan
    dict, gold [lo, hi] seconds, source, plan_type, ve_count, index and the JSON-serialisable `extra`
    fields (`to_jsonable`; others are dropped and named in the returned summary). `meta` defaults to a
    ReleaseSet's. Returns {"path", "tasks" (count), "dropped" (field names)}."""
    if meta is None and isinstance(tasks, ReleaseSet):
        meta = tasks.meta
    dropped: set = set()
    records = [_task_record(t, dropped) for t in tasks]
    doc = {"format": JSON_FORMAT, "version": JSON_VERSION, "tasks": records}
    if meta:
        doc["meta"] = {}
        for src, fields in meta.items():
            kept = {}
            for k, v in fields.items():
                try:
                    kept[k] = _jsonable(v)
                except _NotJSON:
                    dropped.add(f"meta.{src}.{k}")
            doc["meta"][src] = kept
    path = pathlib.Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc, ensure_ascii=False, separators=(",", ":")) + "\n", encoding="utf-8")
    return {"path": str(path), "tasks": len(records), "dropped": sorted(dropped)}


def save_generated(plans: Iterable[Plan], path: str | pathlib.Path, gold_rule: str = "critical_path") -> dict:
    """Generated plans in the JSON format, source 'generated', gold from `critical_path` (by default)."""
    return export_json(make_tasks(plans, "generated", gold_rule), path)


def load_json(path: str | pathlib.Path) -> ReleaseSet:
    """Tasks written by `export_json` / `save_generated`; errors name the file and task index."""
    path = pathlib.Path(path)
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as e:
        raise ReleaseFormatError(f"{path}: not JSON ({e})") from None
    if not isinstance(doc, dict) or doc.get("format") != JSON_FORMAT:
        found = doc.get("format") if isinstance(doc, dict) else type(doc).__name__
        raise ReleaseFormatError(f"{path}: not a {JSON_FORMAT!r} file (format {found!r})")
    if doc.get("version") != JSON_VERSION:
        raise ReleaseFormatError(f"{path}: version {doc.get('version')!r}; this reader knows version {JSON_VERSION}")
    records = doc.get("tasks")
    if not isinstance(records, list):
        raise ReleaseFormatError(f"{path}: 'tasks' must be a list")
    tasks = []
    for i, r in enumerate(records):
        at = f"{path}: task {i}"
        if not isinstance(r, dict):
            raise ReleaseFormatError(f"{at}: expected an object, got {type(r).__name__}")
        missing = {"index", "source", "plan_type", "ve_count", "gold", "plan"} - set(r)
        if missing:
            raise ReleaseFormatError(f"{at}: missing {sorted(missing)}")
        try:
            plan = Plan.from_dict(r["plan"])
        except PlanError as e:
            raise PlanError(f"{at}: {e}") from None
        gold = r["gold"]
        if not (isinstance(gold, list) and len(gold) == 2 and all(
                isinstance(x, (int, float)) and not isinstance(x, bool) for x in gold)):
            raise ReleaseFormatError(f"{at}, field 'gold': expected [lo, hi] seconds, got {gold!r}")
        try:
            gold = Interval(float(gold[0]), float(gold[1]))
        except ValueError as e:
            raise ReleaseFormatError(f"{at}, field 'gold': {e}") from None
        if r["plan_type"] not in PLAN_TYPES:
            raise ReleaseFormatError(f"{at}, field 'plan_type': {r['plan_type']!r}; accepted {PLAN_TYPES}")
        if r["source"] not in SOURCES:
            raise ReleaseFormatError(f"{at}, field 'source': {r['source']!r}; accepted {SOURCES}")
        for f in ("index", "ve_count"):
            if isinstance(r[f], bool) or not isinstance(r[f], int):
                raise ReleaseFormatError(f"{at}, field {f!r}: expected an int, got {r[f]!r}")
        extra = r.get("extra", {})
        if not isinstance(extra, dict):
            raise ReleaseFormatError(f"{at}, field 'extra': expected an object")
        tasks.append(ReleaseTask(plan, r["plan_type"], gold, r["ve_count"], r["index"], r["source"], extra))
    meta = doc.get("meta", {})
    if not isinstance(meta, dict) or not all(isinstance(v, dict) for v in meta.values()):
        raise ReleaseFormatError(f"{path}: 'meta' must map each source to an object of file-level fields")
    files = {src: str(path) for src in dict.fromkeys(t.source for t in tasks)}
    return ReleaseSet(tuple(tasks), meta, files)


def load_tasks(path: str | pathlib.Path, kind: str | None = None) -> ReleaseSet:
    """A directory or `.pkl` file -> `load_release`; a `.json` file -> `load_json`."""
    path = pathlib.Path(path)
    if path.is_dir() or path.suffix == ".pkl":
        return load_release(path, kind)
    if path.suffix == ".json":
        if kind is not None:
            raise ValueError(f"{path}: kind= applies to release pickles, not JSON")
        return load_json(path)
    raise ValueError(f"{path}: expected a release directory, a .pkl release file or a .json file")


__all__ = [
    "RELEASE_FILES", "ReleaseFormatError", "ReleaseSet", "ReleaseTask", "RestrictedUnpickler", "UnsafePickleError",
    "check_gold", "export_json", "load_json", "load_release", "load_tasks", "make_tasks", "release_fields",
    "safe_load_pickle", "safe_loads", "save_generated", "tasks_from_release_dict", "to_jsonable",
    "to_release_dict",
]
