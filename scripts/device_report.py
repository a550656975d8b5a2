#!/usr/bin/env python3
"""One table from the kernel benchmarks' JSON files (`scripts/bench_*.py --out=...`), for BUILD.md.

    python scripts/device_report.py OUT/bench_attention_lrp.json OUT/bench_lqer_matmul.json ... > table.md

Each benchmark writes {"device", "backend", "jax", ..., <a list of row dicts>}; a row holds its
case (scalars such as len, m, k, n, batch) and one dict per implementation with its timings
(keys ending in `_ms` or `ms`), plus ratios computed in the same run (keys with `_over_` or
starting with `speedup`) and accuracy checks (keys starting with `max_abs`). The
table has one line per (benchmark, case, implementation) and one per ratio. A file that is missing
or unreadable is reported as such, not skipped silently.
"""

from __future__ import annotations

import json
import pathlib
import sys


def _rows(result: dict) -> list[dict]:
    for value in result.values():
        if isinstance(value, list) and value and all(isinstance(r, dict) for r in value):
            return value
    return []


def _is_ratio(key: str) -> bool:
    return "_over_" in key or key.startswith(("speedup", "max_abs"))


def _fmt(value) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k} {_fmt(v)}" for k, v in value.items()) + "}"
    return str(value)


def table(paths: list[str]) -> str:
    lines = ["| benchmark | device | case | implementation | result |", "|---|---|---|---|---|"]
    for path in paths:
        name = pathlib.Path(path).stem
        try:
            result = json.loads(pathlib.Path(path).read_text())
        except (OSError, json.JSONDecodeError) as e:
            lines.append(f"| {name} | | | | no result ({type(e).__name__}: {e}) |")
            continue
        device = f"{result.get('device', '?')} (jax {result.get('jax', '?')})"
        rows = _rows(result)
        if not rows:
            lines.append(f"| {name} | {device} | | | no rows |")
        for row in rows:
            case = ", ".join(f"{k} {v}" for k, v in row.items() if not isinstance(v, (dict, list)) and not _is_ratio(k))
            for impl, value in row.items():
                if isinstance(value, dict) and not _is_ratio(impl):
                    text = (f"FAILED: {value['error'][:160]}" if "error" in value
                            else ", ".join(f"{k} {_fmt(v)}" for k, v in value.items()))
                    lines.append(f"| {name} | {device} | {case} | {impl} | {text} |")
            ratios = {k: v for k, v in row.items() if _is_ratio(k)}
            if ratios:
                lines.append(f"| {name} | {device} | {case} | ratios (same run) | "
                             + ", ".join(f"{k} {_fmt(v)}" for k, v in ratios.items()) + " |")
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    if not argv:
        print("usage: device_report.py BENCH.json [BENCH.json ...]", file=sys.stderr)
        return 2
    print(table(argv))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
