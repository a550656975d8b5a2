"""The benchmark harness: a judge over release-format items -> parsed verdicts -> the paper's metrics.

    result = run_benchmark(judge, items_by_kind, images, setting="No COT", seeds=(0, 1))
    result["rows"]        # flat metric rows, overall and per original_dataset (see `ROW_KEYS`)

For each kind (score, pair, batch) the judge answers every item with `seeds[0]` (the headline
metrics), again with `seeds[1]` (consistency: the same input judged twice, as the paper samples
at temperature 0.4), and the pair items once more with the answers swapped
(`formats.swap_pair`; position bias). A reply that does not parse is a failure
(`judgements.parse_for` -> None), counted in every table; the harness never crashes on a reply.

`load_release(directory)` reads a directory holding the release's `score.jsonl`, `pair.jsonl`
and `batch.jsonl` (any subset) and the images their `image_path`s name, so a user with the real
benchmark runs it with one command (`experiments.py`'s `mllmjudge/judge`).
"""

from __future__ import annotations

import math
import pathlib
import time
from typing import Mapping, Optional, Sequence

import numpy as np

from jaxml import progress
from jaxml.papers.mllmjudge import formats, instance, judgements, metrics

RELEASE_FILES = {"score": ("score.jsonl", "Score.jsonl", "score_lite.jsonl"),
                 "pair": ("pair.jsonl", "Pair.jsonl", "pair_lite.jsonl"),
                 "batch": ("batch.jsonl", "Batch.jsonl")}


def load_release(directory: str | pathlib.Path, limit: Optional[int] = None
                 ) -> tuple[dict[str, list], dict[str, np.ndarray]]:
    """({kind: items}, {image_path: RGB uint8 image}) from a release-format directory.

    The first of `RELEASE_FILES[kind]` that exists is read (`formats.read_jsonl`, line-numbered
    errors); images are read relative to the directory. `limit` keeps the first items per kind.
    Raises FileNotFoundError naming the directory when no file is there, or an image is missing.
    """
    directory = pathlib.Path(directory)
    items: dict[str, list] = {}
    for kind, names in RELEASE_FILES.items():
        for name in names:
            if (directory / name).exists():
                items[kind] = formats.read_jsonl(directory / name, kind)[:limit]
                break
    if not items:
        raise FileNotFoundError(f"{directory}: none of {sorted(n for v in RELEASE_FILES.values() for n in v)}")
    images = instance.load_images(directory, [it.image_path for v in items.values() for it in v])
    return items, images


def judge_items(judge, items: Sequence, images: Mapping[str, np.ndarray], *, setting: str,
                captions: Optional[Mapping[str, str]], seed: int) -> tuple[list[str], list]:
    """(raw replies, parsed verdicts with None for a failure)."""
    replies = judge.judge(items, images, setting=setting, captions=captions, seed=seed)
    if len(replies) != len(items):
        raise ValueError(f"judge {getattr(judge, 'name', judge)!r} returned {len(replies)} replies for {len(items)} "
                         "items")
    return list(replies), [judgements.parse_for(it, r) for it, r in zip(items, replies)]


def _headline(kind: str, m: dict, name: Optional[str] = None) -> dict:
    """One row of the metric table from `metrics.evaluate`'s result."""
    pick = (lambda d: d["overall"]) if name is None else (lambda d: d["by_dataset"][name])
    if kind == "score":
        s = pick(m)
        return {"pearson": s["pearson"], "n": s["num_items"], "failures": s["num_failures"]}
    if kind == "pair":
        w, wo = pick(m["with_tie"]), pick(m["without_tie"])
        return {"accuracy_with_tie": w["accuracy"], "accuracy_without_tie": wo["accuracy"], "n": w["num_samples"],
                "n_without_tie": wo["num_samples"], "failures": w["num_failures"]}
    s = pick(m)
    return {"levenshtein": s["mean_distance"], "levenshtein_normalized": s["mean_normalized_distance"],
            "levenshtein_normalized_failures_as_max": s["mean_normalized_distance_failures_as_max"],
            "n": s["num_items"], "failures": s["num_failures"]}


def run_benchmark(judge, items_by_kind: Mapping[str, Sequence], images: Mapping[str, np.ndarray], *,
                  setting: str = judgements.DEFAULT_SETTING, captions: Optional[Mapping[str, str]] = None,
                  seeds: Sequence[int] = (0, 1), position_bias: bool = True) -> dict:
    """Runs a judge over every kind and computes the metrics, consistency and position bias.

    Args:
      judge: has `.name` and `.judge(items, images, setting=, captions=, seed=) -> replies`.
      items_by_kind: {"score": [...], "pair": [...], "batch": [...]} (any subset, each non-empty).
      images: image_path -> RGB uint8 image.
      setting: one of `judgements.SETTINGS`.
      captions: image_path -> caption (the Vision Expert setting).
      seeds: the first gives the headline metrics; a second, if given, the consistency.
      position_bias: also judge the pair items with the answers swapped.
    Returns:
      {"metrics": {kind: metrics.evaluate(...)}, "consistency": {kind: ...},
       "position_bias": {...} or None, "rows": [flat rows], "replies": {kind: replies of seeds[0]},
       "verdicts": {kind: parsed}, "seconds": {kind: wall time}}.
    """
    if not seeds:
        raise ValueError("run_benchmark: seeds must name at least one seed")
    unknown = sorted(set(items_by_kind) - set(formats.KINDS))
    if unknown:
        raise ValueError(f"run_benchmark: unknown kinds {unknown}; accepted {formats.KINDS}")
    name = getattr(judge, "name", type(judge).__name__)
    out = {"metrics": {}, "consistency": {}, "position_bias": None, "rows": [], "replies": {}, "verdicts": {},
           "seconds": {}}
    for kind in formats.KINDS:
        items = list(items_by_kind.get(kind, ()))
        if not items:
            continue
        t0 = time.perf_counter()
        replies, verdicts = judge_items(judge, items, images, setting=setting, captions=captions, seed=seeds[0])
        m = metrics.evaluate(items, verdicts)
        out["metrics"][kind], out["replies"][kind], out["verdicts"][kind] = m, replies, verdicts
        consist = None
        if len(seeds) > 1:
            _, again = judge_items(judge, items, images, setting=setting, captions=captions, seed=seeds[1])
            consist = metrics.consistency(verdicts, again)
            out["consistency"][kind] = consist
        bias = None
        if kind == "pair" and position_bias:
            swapped = [formats.swap_pair(it) for it in items]
            _, swapped_verdicts = judge_items(judge, swapped, images, setting=setting, captions=captions,
                                              seed=seeds[0])
            bias = metrics.position_bias(verdicts, swapped_verdicts)
            out["position_bias"] = bias
        out["seconds"][kind] = time.perf_counter() - t0
        datasets = [None] + sorted({it.original_dataset for it in items})
        for ds in datasets:
            row = {"judge": name, "setting": setting, "kind": kind, "dataset": ds or metrics.OVERALL,
                   **_headline(kind, m, ds)}
            if ds is None:
                if consist is not None:
                    row["consistency"] = consist["agreement"]
                if bias is not None:
                    row["position_consistency"] = bias["consistency_rate"]
                    row["a_preference"] = bias["a_preference"]
                row["seconds"] = out["seconds"][kind]
            out["rows"].append(row)
        progress.log(f"{name} [{setting}] {kind}: " + ", ".join(
            f"{k} {v:.3f}" for k, v in out["rows"][-len(datasets)].items()
            if isinstance(v, float) and not math.isnan(v)))
    return out
