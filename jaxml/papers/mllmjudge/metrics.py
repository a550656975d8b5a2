"""Agreement between an MLLM judge and the human annotators: pure functions on parsed verdicts.

The release's `scripts/calculate_metrics.ipynb` defines the metrics, each reported per
`original_dataset` and overall (the overall value pools all items; it is not a mean of the
per-dataset values):

  * Score: Pearson r between the judge's and the humans' 1-5 scores (`scipy.stats.pearsonr`),
    with its two-sided p-value.
  * Pair: accuracy. With ties: all items, the verdicts A/B/C compared as labels. Without ties: an
    item is dropped when the gold OR the prediction is "C", the rest compared.
  * Batch: Levenshtein distance between the predicted and the gold best->worst ranking strings
    ("CDAB"). The notebook averages the raw distance; the paper reports a distance normalised by
    the number of answers (raw / 4), so both are given.

A verdict that did not parse (None, see `judgements.parse_judgement`) is a failure:

  * Score: r is computed over the parsed items only and the failures are counted (the notebook's
    `float(...)` would raise on them; the release's `Score_analysis.ipynb` skips `judge == -1`).
  * Pair: a failure is a wrong answer, with and without ties. This is what the notebook does with
    a stored failure string: it is never equal to the gold, and it is not "C", so the no-tie rule
    keeps it (unless the gold is "C"). (The older `pair_analysis.ipynb` instead kept only verdicts
    in A/B/C; `pair_accuracy(..., failures="drop")` gives that variant.)
  * Batch: the mean over parsed items is the headline, and a second mean counts each failure as
    the distance of the empty ranking, i.e. `len(gold)` (the largest distance two rankings of the
    same answers can have), so failures are never rewarded.

Alignment is by position: prediction i belongs to item i. (The notebook matches predictions to
gold by `id`, which is the image id and is not unique in the score and pair files, so its dicts
silently keep one item per image; that is not reproduced.)

Edge cases of Pearson r: fewer than 2 parsed items, or a constant judge or human score (zero
variance, so r = cov / 0), give r = nan and a `reason` string saying which; otherwise `reason` is
None. This matches scipy, which returns nan (with a warning) for constant input.

Consistency and position bias (the paper's analysis of judge reliability):

  * `consistency(a, b)`: the agreement rate of two judgements of the same inputs (two samples, two
    prompts): over all items with a failure in either counting as a disagreement, and over the
    items both parsed.
  * `position_bias(original, swapped)`: the pair judge run again with answer1 and answer2
    swapped. A judge without position bias flips its verdict (A <-> B, C stays C). Reported: the
    rate of inconsistent (not properly flipped) verdicts over the items parsed in both orders, the
    share of those items where the judge picked the first position both times ("A" then "A") or the
    second both times, and the share of all parsed verdicts, in either order, that pick position A.
"""

from __future__ import annotations

import math
from typing import Any, Callable, Hashable, Optional, Sequence

from jaxml.papers.mllmjudge import formats

OVERALL = "overall"

# --------------------------------------------------------------------------------- helpers


def _check_lengths(where: str, **named: Optional[Sequence]) -> int:
    lengths = {k: len(v) for k, v in named.items() if v is not None}
    if len(set(lengths.values())) > 1:
        raise ValueError(f"{where}: the sequences must have one entry per item, got lengths {lengths}")
    return next(iter(lengths.values()))


def _groups(n: int, datasets: Optional[Sequence[Hashable]]) -> dict[Any, list[int]]:
    """Item indices per dataset, datasets in first-seen order (empty when datasets is None)."""
    out: dict[Any, list[int]] = {}
    if datasets is not None:
        for i, d in enumerate(datasets):
            out.setdefault(d, []).append(i)
    return out


def _per_dataset(fn: Callable[[list[int]], dict], n: int, datasets: Optional[Sequence[Hashable]]) -> dict:
    """{'overall': fn(all), 'by_dataset': {name: fn(indices)}}."""
    return {OVERALL: fn(list(range(n))), "by_dataset": {d: fn(idx) for d, idx in _groups(n, datasets).items()}}


# --------------------------------------------------------------------------------- scoring


def pearson(x: Sequence[float], y: Sequence[float]) -> tuple[float, float, Optional[str]]:
    """Pearson correlation of two equal-length sequences, exactly (float64, two-pass).

    Returns:
      (r, p_value, reason): r in [-1, 1]; the two-sided p-value of r under no correlation (as
      `scipy.stats.pearsonr`: the exact null distribution of r for normal data); reason is None,
      or why r is nan ("fewer than 2 items", "constant judge scores", "constant human scores").
    """
    _check_lengths("pearson", x=x, y=y)
    n = len(x)
    if n < 2:
        return math.nan, math.nan, f"fewer than 2 items (n={n})"
    xs, ys = [float(v) for v in x], [float(v) for v in y]
    if not all(math.isfinite(v) for v in xs + ys):
        raise ValueError("pearson: the scores must be finite numbers")
    mx, my = math.fsum(xs) / n, math.fsum(ys) / n
    dx, dy = [v - mx for v in xs], [v - my for v in ys]
    sxx, syy = math.fsum(d * d for d in dx), math.fsum(d * d for d in dy)
    if sxx == 0.0 or syy == 0.0:
        which = "judge" if sxx == 0.0 else "human"
        return math.nan, math.nan, f"constant {which} scores (zero variance): r is undefined"
    sxy = math.fsum(a * b for a, b in zip(dx, dy))
    r = max(-1.0, min(1.0, sxy / math.sqrt(sxx * syy)))
    return r, _pearson_p_value(r, n), None


def _pearson_p_value(r: float, n: int) -> float:
    """Two-sided p of r under H0: r is Beta((n-2)/2, (n-2)/2) on [-1, 1], so p = I_{1-r^2}((n-2)/2, 1/2)."""
    if n == 2:
        return 1.0  # two points always lie on a line (scipy's convention)
    if abs(r) == 1.0:
        return 0.0
    from scipy import special  # only here: the p-value needs the regularised incomplete beta
    return float(special.betainc((n - 2) / 2.0, 0.5, 1.0 - r * r))


def score_pearson(predictions: Sequence[Optional[float]], golds: Sequence[float],
                  datasets: Optional[Sequence[Hashable]] = None) -> dict:
    """Pearson r between the judge's scores and the human scores, per dataset and overall.

    Args:
      predictions: [N] the judge's parsed scores; None where the judgement failed to parse.
      golds: [N] the human scores (1-5).
      datasets: [N] each item's `original_dataset`, or None for the overall value only.
    Returns:
      {'overall': stats, 'by_dataset': {name: stats}} with stats = {'pearson', 'p_value',
      'num_samples' (parsed items used), 'num_failures', 'num_items', 'reason' (None, or why
      pearson is nan)}.
    """
    n = _check_lengths("score_pearson", predictions=predictions, golds=golds, datasets=datasets)

    def stats(idx: list[int]) -> dict:
        used = [i for i in idx if predictions[i] is not None]
        r, p, reason = pearson([predictions[i] for i in used], [golds[i] for i in used])
        return {"pearson": r, "p_value": p, "num_samples": len(used), "num_failures": len(idx) - len(used),
                "num_items": len(idx), "reason": reason}

    return _per_dataset(stats, n, datasets)


# ------------------------------------------------------------------------------------ pair


def pair_accuracy(predictions: Sequence[Optional[str]], golds: Sequence[str],
                  datasets: Optional[Sequence[Hashable]] = None, failures: str = "wrong") -> dict:
    """Pair-comparison accuracy with and without ties, per dataset and overall.

    Args:
      predictions: [N] the judge's verdicts "A" / "B" / "C" (tie); None where it failed to parse.
      golds: [N] the human verdicts "A" / "B" / "C".
      datasets: [N] each item's `original_dataset`, or None.
      failures: "wrong" (the notebook: a failure counts as a wrong answer) or "drop" (failures are
        left out of both accuracies, as the older `pair_analysis.ipynb` did).
    Returns:
      {'with_tie': {'overall': stats, 'by_dataset': {...}}, 'without_tie': {...}} with stats =
      {'accuracy' (nan when no item is counted), 'num_correct', 'num_samples' (items counted),
      'num_failures' (failures among the items considered)}. Without ties, an item is dropped when
      the gold or the prediction is "C".
    """
    n = _check_lengths("pair_accuracy", predictions=predictions, golds=golds, datasets=datasets)
    if failures not in ("wrong", "drop"):
        raise ValueError(f"failures must be 'wrong' or 'drop', got {failures!r}")
    for i, g in enumerate(golds):
        if g not in ("A", "B", "C"):
            raise ValueError(f"pair_accuracy: gold verdict {i} is {g!r}, expected 'A', 'B' or 'C'")
    for i, p in enumerate(predictions):
        if p is not None and p not in ("A", "B", "C"):
            raise ValueError(f"pair_accuracy: prediction {i} is {p!r}, expected 'A', 'B', 'C' or None (failure)")

    def make(with_tie: bool) -> Callable[[list[int]], dict]:
        def stats(idx: list[int]) -> dict:
            considered = [i for i in idx if with_tie or (golds[i] != "C" and predictions[i] != "C")]
            n_fail = sum(predictions[i] is None for i in considered)
            counted = [i for i in considered if failures == "wrong" or predictions[i] is not None]
            correct = sum(predictions[i] == golds[i] for i in counted)
            return {"accuracy": correct / len(counted) if counted else math.nan, "num_correct": correct,
                    "num_samples": len(counted), "num_failures": n_fail}
        return stats

    return {"with_tie": _per_dataset(make(True), n, datasets),
            "without_tie": _per_dataset(make(False), n, datasets)}


# ----------------------------------------------------------------------------------- batch


def levenshtein(a: str, b: str) -> int:
    """Edit distance (insertions, deletions, substitutions, each cost 1) by the O(len(a) len(b)) DP.

    Same value as `Levenshtein.distance`, which the release's notebook uses.
    """
    if not isinstance(a, str) or not isinstance(b, str):
        raise TypeError(f"levenshtein expects two strings, got {type(a).__name__} and {type(b).__name__}")
    if len(a) < len(b):
        a, b = b, a
    previous = list(range(len(b) + 1))  # distance from a[:0] to each prefix of b
    for i, ca in enumerate(a, start=1):
        current = [i]
        for j, cb in enumerate(b, start=1):
            current.append(min(previous[j] + 1,                 # delete ca
                               current[j - 1] + 1,              # insert cb
                               previous[j - 1] + (ca != cb)))   # substitute (free if equal)
        previous = current
    return previous[-1]


def batch_levenshtein(predictions: Sequence[Optional[str]], golds: Sequence[str],
                      datasets: Optional[Sequence[Hashable]] = None) -> dict:
    """Levenshtein distance between predicted and gold rankings, raw and normalised, per dataset.

    Args:
      predictions: [N] the judge's best->worst rankings ("BACD"); None where it failed to parse.
      golds: [N] the human rankings ("CDAB").
      datasets: [N] each item's `original_dataset`, or None.
    Returns:
      {'overall': stats, 'by_dataset': {name: stats}} with stats =
      {'mean_distance' (raw, over parsed items; lower is better),
       'mean_normalized_distance' (each distance / len(gold), i.e. / number of answers),
       'mean_distance_failures_as_max', 'mean_normalized_distance_failures_as_max' (over all items,
       a failure counting len(gold), normalised 1.0), 'num_samples' (parsed), 'num_failures',
       'num_items'}; means over no items are nan.
    """
    n = _check_lengths("batch_levenshtein", predictions=predictions, golds=golds, datasets=datasets)
    for i, g in enumerate(golds):
        if not isinstance(g, str) or not g:
            raise ValueError(f"batch_levenshtein: gold ranking {i} is {g!r}, expected a non-empty string")
    raw = [None if p is None else levenshtein(p, g) for p, g in zip(predictions, golds)]

    def mean(values: list[float]) -> float:
        return math.fsum(values) / len(values) if values else math.nan

    def stats(idx: list[int]) -> dict:
        used = [i for i in idx if raw[i] is not None]
        with_fail = [raw[i] if raw[i] is not None else len(golds[i]) for i in idx]
        return {
            "mean_distance": mean([raw[i] for i in used]),
            "mean_normalized_distance": mean([raw[i] / len(golds[i]) for i in used]),
            "mean_distance_failures_as_max": mean(with_fail),
            "mean_normalized_distance_failures_as_max": mean([d / len(golds[i]) for d, i in zip(with_fail, idx)]),
            "num_samples": len(used), "num_failures": len(idx) - len(used), "num_items": len(idx)}

    return _per_dataset(stats, n, datasets)


# ------------------------------------------------------------------------ judge reliability


def consistency(first: Sequence[Any], second: Sequence[Any]) -> dict:
    """Agreement rate between two judgements of the same items (None = a failed parse).

    Returns:
      {'agreement' (over all items; a failure in either run is a disagreement), 'agreement_parsed'
      (over the items parsed in both runs; nan if none), 'num_items', 'num_both_parsed'}.
    """
    n = _check_lengths("consistency", first=first, second=second)
    both = [i for i in range(n) if first[i] is not None and second[i] is not None]
    same = sum(first[i] == second[i] for i in both)
    return {"agreement": same / n if n else math.nan, "agreement_parsed": same / len(both) if both else math.nan,
            "num_items": n, "num_both_parsed": len(both)}


_FLIP = {"A": "B", "B": "A", "C": "C"}


def position_bias(original: Sequence[Optional[str]], swapped: Sequence[Optional[str]]) -> dict:
    """Position-bias statistics of a pair judge run on (answer1, answer2) and on the swapped order.

    Args:
      original: [N] verdicts "A"/"B"/"C" on the items as given; None = failure.
      swapped: [N] verdicts on the same items with answer1 and answer2 swapped (`formats.swap_pair`).
    Returns:
      {'inconsistency_rate': share of items parsed in both orders whose swapped verdict is not the
       flip of the original (A <-> B, C stays C); 'consistency_rate' = 1 - that;
       'both_first_rate' / 'both_second_rate': share of those items with "A" both times / "B" both
       times (the judge followed the position, not the answer);
       'a_preference': share of all parsed verdicts, both orders pooled, that are "A" (0.5 with no
       ties and no bias); 'a_share_original', 'a_share_swapped': the same per order;
       'num_items', 'num_both_parsed', 'num_failures' (items with a failure in either order)}.
      Rates over no items are nan.
    """
    n = _check_lengths("position_bias", original=original, swapped=swapped)
    for name, seq in (("original", original), ("swapped", swapped)):
        for i, v in enumerate(seq):
            if v is not None and v not in _FLIP:
                raise ValueError(f"position_bias: {name}[{i}] is {v!r}, expected 'A', 'B', 'C' or None")
    both = [i for i in range(n) if original[i] is not None and swapped[i] is not None]
    consistent = sum(swapped[i] == _FLIP[original[i]] for i in both)

    def rate(count: int, total: int) -> float:
        return count / total if total else math.nan

    def a_share(seq: Sequence[Optional[str]]) -> tuple[int, int]:
        parsed = [v for v in seq if v is not None]
        return sum(v == "A" for v in parsed), len(parsed)

    a_orig, n_orig = a_share(original)
    a_swap, n_swap = a_share(swapped)
    return {
        "inconsistency_rate": rate(len(both) - consistent, len(both)),
        "consistency_rate": rate(consistent, len(both)),
        "both_first_rate": rate(sum(original[i] == swapped[i] == "A" for i in both), len(both)),
        "both_second_rate": rate(sum(original[i] == swapped[i] == "B" for i in both), len(both)),
        "a_preference": rate(a_orig + a_swap, n_orig + n_swap),
        "a_share_original": rate(a_orig, n_orig),
        "a_share_swapped": rate(a_swap, n_swap),
        "num_items": n, "num_both_parsed": len(both), "num_failures": n - len(both)}


# ------------------------------------------------------------------------ item-level wrappers


def evaluate(items: Sequence[Any], predictions: Sequence[Any]) -> dict:
    """The kind's metrics for parsed predictions aligned with release items (all of one kind).

    Score items -> `score_pearson`; pair items -> `pair_accuracy`; batch items ->
    `batch_levenshtein`; golds and `original_dataset` are taken from the items.
    """
    _check_lengths("evaluate", items=items, predictions=predictions)
    if not items:
        raise ValueError("evaluate: no items")
    kinds = {formats.kind_of(it) for it in items}
    if len(kinds) != 1:
        raise ValueError(f"evaluate: items of one kind expected, got {sorted(kinds)}")
    kind = kinds.pop()
    datasets = [it.original_dataset for it in items]
    if kind == "score":
        return score_pearson(predictions, [it.human for it in items], datasets)
    if kind == "pair":
        return pair_accuracy(predictions, [it.human_answer for it in items], datasets)
    return batch_levenshtein(predictions, [it.human_answer for it in items], datasets)
