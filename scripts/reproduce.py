#!/usr/bin/env python3
"""The main job: runs each paper's `reproduce` experiment and writes REPORT.md with one table.

    python scripts/reproduce.py                      # every paper, quick scale, into reproduce_out/
    python scripts/reproduce.py --papers=pcdeq,pcm --scale=full --out=/tmp/report

Each paper `<slug>` that registers `<slug>/reproduce` is run with its `configs/reproduce.py`
at the chosen scale (`tiny`, `quick` or `full`, passed as the config arg). With no paper
registered yet, the shared examples run instead (the Fashion-MNIST CNN baseline and SmolLM2's
perplexity on a held-out Austen chapter); name `--papers=examples` to run them alongside papers. Work directories live under `<out>/work/` so an
interrupted report resumes from each experiment's newest checkpoint. A failing experiment is
reported in the table and makes the exit status 1; the others still run.
"""

from __future__ import annotations

import json
import pathlib
import shutil
import sys
import time
import traceback

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

from absl import app, flags, logging  # noqa: E402

_PAPERS = flags.DEFINE_list("papers", None, "Slugs to run (default: every paper with a reproduce experiment).")
_SCALE = flags.DEFINE_enum("scale", "quick", ["tiny", "quick", "full"], "Scale passed to each config.")
_OUT = flags.DEFINE_string("out", "reproduce_out", "Output folder for REPORT.md, figures and work dirs.")
_DISTRIBUTED = flags.DEFINE_bool("jax_distributed", False, "Call jax.distributed.initialize() first.")

def _experiments(papers):
    from jaxml.core import registry
    if papers:
        names = []
        for slug in papers:
            found = [n for n in registry.list_experiments([slug]) if n.endswith("/reproduce")]
            if slug == "examples":
                found = registry.list_experiments(["examples"])
            if not found:
                raise app.UsageError(f"paper {slug!r} has no reproduce experiment")
            names += found
        return names
    names = [n for n in registry.list_experiments(registry.paper_slugs()) if n.endswith("/reproduce")]
    return names or registry.list_experiments(["examples"])

def _fmt(value) -> str:
    if value is None:
        return "—"
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)

def main(argv):
    if not flags.FLAGS["verbosity"].present:  # orbax logs every checkpoint at INFO; -v 0 shows it
        logging.set_verbosity(logging.WARNING)
    del argv
    from jaxml.core import distributed
    distributed.initialize(_DISTRIBUTED.value)
    from jaxml.core import progress, registry
    from jaxml.core.config import load_config

    out = pathlib.Path(_OUT.value)
    (out / "figures").mkdir(parents=True, exist_ok=True)
    names = _experiments(_PAPERS.value)
    arg = "" if _SCALE.value == "full" else _SCALE.value
    rows, failed, t_all = [], 0, time.perf_counter()
    for i, name in enumerate(names, 1):
        progress.log(f"[{i}/{len(names)}] {name} at scale {_SCALE.value}")
        t0 = time.perf_counter()
        try:
            config = load_config(f"{registry.config_path(name)}:{arg}" if arg else str(registry.config_path(name)))
            result = registry.get_experiment(name)(config, out / "work" / name.replace("/", "_"))
            figures = []
            for fig in result.figures:
                dest = out / "figures" / f"{name.replace('/', '_')}_{pathlib.Path(fig).name}"
                shutil.copyfile(fig, dest)
                figures.append(dest.relative_to(out).as_posix())
            rows.append(dict(name=name, result=result.to_json(), figures=figures,
                             seconds=time.perf_counter() - t0))
        except Exception as e:  # one paper failing must not hide the others' results
            failed += 1
            traceback.print_exc()
            rows.append(dict(name=name, error=f"{type(e).__name__}: {e}", seconds=time.perf_counter() - t0))
        progress.log(f"[{i}/{len(names)}] {name} done in {progress.format_duration(rows[-1]['seconds'])}")

    lines = [
        "# jaxml reproduction report", "",
        f"Scale `{_SCALE.value}`; {len(names)} experiment(s) in "
        f"{progress.format_duration(time.perf_counter() - t_all)}. "
        f"Command: `python scripts/reproduce.py --scale={_SCALE.value}"
        f"{' --papers=' + ','.join(_PAPERS.value) if _PAPERS.value else ''}`.", "",
        "| paper | experiment | metric | ours | paper's value | status | time |",
        "|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        slug = row["name"].split("/")[0]
        if "error" in row:
            lines.append(f"| {slug} | `{row['name']}` | — | — | — | failed: {row['error'][:120]} | "
                         f"{progress.format_duration(row['seconds'])} |")
            continue
        r = row["result"]
        key = r["headline"]
        lines.append(f"| {slug} | `{row['name']}` | {key or '—'} | {_fmt(r['metrics'].get(key))} | "
                     f"{_fmt(r['reference'].get(key))} | {r['status']} | {progress.format_duration(row['seconds'])} |")
    lines.append("")
    for row in rows:
        if "error" in row:
            continue
        r = row["result"]
        lines += [f"## `{row['name']}`", ""]
        if r["notes"]:
            lines += [r["notes"], ""]
        lines += [f"- {k}: {_fmt(v)}" + (f" (paper: {_fmt(r['reference'][k])})" if k in r["reference"] else "")
                  for k, v in sorted(r["metrics"].items())]
        lines += [""] + [f"![{f}]({f})" for f in row["figures"]] + [""]
    (out / "REPORT.md").write_text("\n".join(lines))
    (out / "results.json").write_text(json.dumps(rows, indent=2, default=float))
    progress.log(f"wrote {out / 'REPORT.md'}")
    if failed:
        sys.exit(1)

if __name__ == "__main__":
    app.run(main)
