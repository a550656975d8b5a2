"""What an experiment returns: measured metrics, the paper's numbers, figures."""

from __future__ import annotations

import dataclasses
import json
import math
import pathlib
from typing import Any


@dataclasses.dataclass
class Result:
    """The outcome of one experiment `(config, workdir) -> Result`.

    Attributes:
      metrics: measured values, `{name: float}`.
      headline: the key of `metrics` shown in the README and REPORT.md tables.
      reference: the paper's values for the same keys, where the paper reports one.
      figures: paths of figure files written by the experiment.
      status: one word for the report: 'baseline', 'reproduced', 'differs', 'measured', ...
      notes: one or two sentences (scale, data, deviations from the paper).
    """

    metrics: dict[str, float]
    headline: str | None = None
    reference: dict[str, float] = dataclasses.field(default_factory=dict)
    figures: list[str] = dataclasses.field(default_factory=list)
    status: str = "measured"
    notes: str = ""

    def __post_init__(self):
        if self.headline is not None and self.headline not in self.metrics:
            raise ValueError(f"Result.headline {self.headline!r} is not among metrics {sorted(self.metrics)}")
        for key in self.reference:
            if key not in self.metrics:
                raise ValueError(f"Result.reference key {key!r} is not among metrics {sorted(self.metrics)}")

    def all_finite(self) -> bool:
        return all(math.isfinite(float(v)) for v in self.metrics.values())

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    def save(self, path: str | pathlib.Path) -> None:
        pathlib.Path(path).write_text(json.dumps(self.to_json(), indent=2, default=float))


def run_parts(slug: str, parts, scale: str, configs_dir: str | pathlib.Path, workdir: str | pathlib.Path
              ) -> tuple[dict[str, float], list[str], list[str], list[Result]]:
    """Runs experiments `<slug>/<part>` with their configs `configs_dir/<part>.py` at `scale` ('' or
    'full' for the full config), each in `workdir/<part>`: what a paper's `reproduce` gathers.

    Returns `(metrics prefixed "<part>/", figures, notes prefixed "<part>: ", the Results)`.
    """
    from jaxml.core import registry
    from jaxml.core.config import load_config

    configs_dir, workdir = pathlib.Path(configs_dir), pathlib.Path(workdir)
    metrics, figures, notes, results = {}, [], [], []
    for part in parts:
        path = str(configs_dir / f"{part}.py")
        sub = load_config(f"{path}:{scale}" if scale and scale != "full" else path)
        result = registry.get_experiment(f"{slug}/{part}")(sub, workdir / part)
        metrics.update({f"{part}/{k}": v for k, v in result.metrics.items()})
        figures += result.figures
        notes.append(f"{part}: {result.notes}")
        results.append(result)
    return metrics, figures, notes, results


def gather_parts(slug: str, config, configs_dir: str | pathlib.Path, workdir: str | pathlib.Path,
                 headline_part: str | None = None) -> Result:
    """A paper's `reproduce` experiment: `run_parts` over `config.parts` at `config.scale`, as one Result.

    The headline is `<part>/<that part's headline>` for `headline_part` (the first part when it is
    None or not among the parts); the status is 'differs' if any part differs, else 'measured'.
    """
    metrics, figures, notes, results = run_parts(slug, config.parts, config.scale, configs_dir, workdir)
    parts = list(config.parts)
    i = parts.index(headline_part) if headline_part in parts else 0
    status = "differs" if any(r.status == "differs" for r in results) else "measured"
    return Result(metrics=metrics, headline=f"{parts[i]}/{results[i].headline}", figures=figures, status=status,
                  notes=" ".join(notes))


def make_workdir(workdir: str | pathlib.Path) -> pathlib.Path:
    """`workdir` as a Path, created (with its parents) if missing."""
    path = pathlib.Path(workdir)
    path.mkdir(parents=True, exist_ok=True)
    return path


def pyplot():
    """matplotlib.pyplot on the non-interactive Agg backend (experiments write figure files)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt
