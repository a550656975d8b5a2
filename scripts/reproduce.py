#!/usr/bin/env python3
"""The main job: runs each paper's `reproduce` experiment and writes the reproduction report.

    python scripts/reproduce.py                      # every paper, quick scale, into reproduce_out/
    python scripts/reproduce.py --papers=pcdeq,pcm --scale=full --out=/tmp/report

Each paper `<slug>` that registers `<slug>/reproduce` is run with its `configs/reproduce.py`
at the chosen scale (`tiny`, `quick` or `full`, passed as the config arg). With no paper
registered yet, the shared examples run instead (the Fashion-MNIST CNN baseline and SmolLM2's
perplexity on a held-out Austen chapter); name `--papers=examples` to run them alongside papers.

Writes into `--out`: `REPORT.md` (one row per paper: its headline claim, our number, the paper's,
the verdict the experiment computed and the time; then each paper's claims, notes and figures),
`report.html` (the same, self-contained: figures and heatmaps inlined), `results.json` (every
metric of every experiment) and `figures/` (each figure once, under a unique name). Work
directories live under `<out>/work/` so an interrupted report resumes from each experiment's
newest checkpoint. A failing experiment is reported in the table and makes the exit status 1; the
others still run.
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

def _copy_figures(name: str, figures, workdir: pathlib.Path, out: pathlib.Path) -> list[str]:
    """Copies each figure once into `out/figures/` under a unique name made from the experiment and
    the figure's path inside its work directory; returns the paths relative to `out`."""
    copied, seen = [], set()
    for fig in figures:
        src = pathlib.Path(fig).resolve()
        if src in seen:
            continue
        seen.add(src)
        try:
            inner = src.relative_to(workdir.resolve()).as_posix()
        except ValueError:   # written outside the work directory
            inner = src.name
        dest = out / "figures" / f"{name.replace('/', '_')}__{inner.replace('/', '__')}"
        if dest.relative_to(out).as_posix() in copied:
            raise ValueError(f"{name}: two figures would be copied to {dest}")
        shutil.copyfile(src, dest)
        copied.append(dest.relative_to(out).as_posix())
    return copied


def _machine() -> str:
    import os
    import platform

    import jax
    devices = jax.devices()
    return (f"{platform.machine()} {os.cpu_count()} CPU core(s), {len(devices)} {devices[0].platform} "
            f"device(s), jax {jax.__version__}")


def main(argv):
    if not flags.FLAGS["verbosity"].present:  # orbax logs every checkpoint at INFO; -v 0 shows it
        logging.set_verbosity(logging.WARNING)
    del argv
    from jaxml.core import compilation_cache, distributed
    compilation_cache.enable()
    distributed.initialize(_DISTRIBUTED.value)
    from jaxml import progress
    from jaxml.core import registry, report
    from jaxml.core.config import load_config

    out = pathlib.Path(_OUT.value)
    (out / "figures").mkdir(parents=True, exist_ok=True)
    names = _experiments(_PAPERS.value)
    arg = "" if _SCALE.value == "full" else _SCALE.value
    rows, failed, t_all = [], 0, time.perf_counter()
    for i, name in enumerate(names, 1):
        progress.log(f"[{i}/{len(names)}] {name} at scale {_SCALE.value}")
        t0 = time.perf_counter()
        workdir = out / "work" / name.replace("/", "_")
        try:
            config = load_config(f"{registry.config_path(name)}:{arg}" if arg else str(registry.config_path(name)))
            result = registry.get_experiment(name)(config, workdir)
            figures = _copy_figures(name, result.figures, workdir, out)
            rows.append(dict(name=name, result=result.to_json(), figures=figures,
                             seconds=time.perf_counter() - t0))
        except Exception as e:  # one paper failing must not hide the others' results
            failed += 1
            traceback.print_exc()
            rows.append(dict(name=name, error=f"{type(e).__name__}: {e}", seconds=time.perf_counter() - t0))
        progress.log(f"[{i}/{len(names)}] {name} done in {progress.format_duration(rows[-1]['seconds'])}")

    command = (f"python scripts/reproduce.py --scale={_SCALE.value}"
               f"{' --papers=' + ','.join(_PAPERS.value) if _PAPERS.value else ''}")
    info = dict(scale=_SCALE.value, command=command, seconds=time.perf_counter() - t_all, machine=_machine())
    (out / "REPORT.md").write_text(report.to_markdown(rows, **info))
    (out / "report.html").write_text(report.to_html(rows, out, **info))
    (out / "results.json").write_text(json.dumps(rows, indent=2, default=float))
    progress.log(f"wrote {out / 'REPORT.md'}, {out / 'report.html'} and {out / 'results.json'}")
    if failed:
        sys.exit(1)


if __name__ == "__main__":
    app.run(main)
