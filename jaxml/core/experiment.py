"""What an experiment returns (metrics, the paper's claims with verdicts, figures) and the helpers a
paper's `reproduce` uses (parts, work directories, figures)."""

from __future__ import annotations

import dataclasses
import json
import math
import pathlib
import re
import time
from typing import Any, Callable

from jaxml import progress


HOLDS, SUGGESTIVE, DOES_NOT_HOLD, NOT_COMPARABLE = "holds", "suggestive", "does not hold", "not comparable"
VERDICTS = (HOLDS, SUGGESTIVE, DOES_NOT_HOLD, NOT_COMPARABLE)
# A claim measured over seeds "holds" only from this many paired seeds on, and at p below ALPHA.
MIN_SEEDS, ALPHA = 5, 0.05


def verdict(holds: bool | None) -> str:
    """The verdict on a claim from what an experiment measured: True -> 'holds', False -> 'does not
    hold', None -> 'not comparable' (the measurement cannot speak to the claim, e.g. a tiny run)."""
    if holds is None:
        return NOT_COMPARABLE
    return HOLDS if bool(holds) else DOES_NOT_HOLD


def paired_verdict(differences, min_seeds: int = MIN_SEEDS, alpha: float = ALPHA) -> tuple[str, str]:
    """The verdict on "the method is better than the baseline" from per-seed paired differences
    (method - baseline at the same seed, larger is better), and its evidence in words.

    'holds': mean > 0, at least `min_seeds` seeds and a two-sided paired t-test p < `alpha`;
    'suggestive': mean > 0 without that support (too few seeds, or p >= alpha);
    'does not hold': mean <= 0; 'not comparable': fewer than 2 seeds.
    """
    from jaxml.core.metrics import paired_t_test

    test = paired_t_test(differences)
    n = int(test["n"])
    words = (f"paired over {n} seeds: {test['mean']:+.4g} ± {test['std']:.2g}, above 0 in {test['positive']:.0%}, "
             f"t-test p = {test['p']:.2g}")
    if n < 2:
        return NOT_COMPARABLE, f"paired over {n} seed: a verdict needs at least 2"
    if test["mean"] <= 0:
        return DOES_NOT_HOLD, words
    if n >= min_seeds and test["p"] < alpha:
        return HOLDS, words
    need = f"{min_seeds} seeds" if n < min_seeds else f"p < {alpha}"
    return SUGGESTIVE, words + f" (suggestive: 'holds' needs {need})"


@dataclasses.dataclass(frozen=True)
class Claim:
    """One claim of a paper and what our run says about it (a row of the report).

    Attributes:
      text: the paper's claim in words ("L2QER's W4A8 perplexity is within ... of FP").
      ours: our number(s) in words, with units and scale ("44.48 vs FP 39.76 (SmolLM2-135M)").
      paper: the paper's number with its setting, or "" when the paper gives none we can set beside ours.
      verdict: 'holds', 'does not hold' or 'not comparable', computed by the experiment (`verdict`).
    """

    text: str
    ours: str
    paper: str = ""
    verdict: str = NOT_COMPARABLE

    def __post_init__(self):
        if not self.text.strip() or not self.ours.strip():
            raise ValueError(f"Claim needs a text and our number, got text={self.text!r}, ours={self.ours!r}")
        if self.verdict not in VERDICTS:
            raise ValueError(f"Claim verdict {self.verdict!r}; accepted: {VERDICTS}")


@dataclasses.dataclass
class Result:
    """The outcome of one experiment `(config, workdir) -> Result`.

    Attributes:
      metrics: measured values, `{name: float}` (all of them go to results.json).
      headline: the key of `metrics` that stands for the experiment when it has no claim.
      reference: the paper's values for the same keys, where the paper reports one.
      figures: paths of figure files written by the experiment (PNG, or HTML for heatmaps).
      claims: the paper's claims with our numbers and verdicts; a paper's `reproduce` puts its
        headline claim first (the report's summary row).
      notes: one or two sentences (scale, data, deviations from the paper).
    """

    metrics: dict[str, float]
    headline: str | None = None
    reference: dict[str, float] = dataclasses.field(default_factory=dict)
    figures: list[str] = dataclasses.field(default_factory=list)
    claims: list[Claim] = dataclasses.field(default_factory=list)
    notes: str = ""

    def __post_init__(self):
        if self.headline is not None and self.headline not in self.metrics:
            raise ValueError(f"Result.headline {self.headline!r} is not among metrics {sorted(self.metrics)}")
        for key in self.reference:
            if key not in self.metrics:
                raise ValueError(f"Result.reference key {key!r} is not among metrics {sorted(self.metrics)}")
        for claim in self.claims:
            if not isinstance(claim, Claim):
                raise TypeError(f"Result.claims holds Claim objects, got {type(claim).__name__}")

    def all_finite(self) -> bool:
        return all(math.isfinite(float(v)) for v in self.metrics.values())

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    def save(self, path: str | pathlib.Path) -> None:
        pathlib.Path(path).write_text(json.dumps(self.to_json(), indent=2, default=float))


def part_label(part: str) -> str:
    """`"train:linear,tanh"` -> `"train_linear_tanh"`: the metric prefix and work folder of a part."""
    name, _, arg = part.partition(":")
    return name if not arg else f"{name}_{re.sub(r'[^A-Za-z0-9.]+', '_', arg).strip('_')}"


def run_parts(slug: str, parts, scale: str, configs_dir: str | pathlib.Path, workdir: str | pathlib.Path
              ) -> tuple[dict[str, float], list[str], list[str], list[Result]]:
    """Runs the parts of a paper's `reproduce` at `scale` ('' or 'full' for the full config).

    A part is `"<name>"` or `"<name>:<arg>"`: experiment `<slug>/<name>` with the config
    `configs_dir/<name>.py` at arg `"<arg>,<scale>"`, run in `workdir/<label>` (`part_label`).
    Returns `(metrics prefixed "<label>/", figures, notes prefixed "<label>: ", the Results)`;
    each part's wall time is the metric `<label>/seconds`.
    Raises ValueError naming the accepted parts when a part has no config file.
    """
    from jaxml import progress
    from jaxml.core import registry
    from jaxml.core.config import load_config

    configs_dir, workdir = pathlib.Path(configs_dir), pathlib.Path(workdir)
    known = sorted(p.stem for p in configs_dir.glob("*.py") if p.stem not in ("reproduce", "__init__", "common"))
    for part in parts:
        if part.partition(":")[0] not in known:
            raise ValueError(f"{slug}/reproduce: unknown part {part!r}; accepted: {known}")
    metrics, figures, notes, results = {}, [], [], []
    for part in parts:
        name, _, arg = part.partition(":")
        label = part_label(part)
        arg = ",".join(a for a in (arg, "" if scale == "full" else scale) if a)
        path = str(configs_dir / f"{name}.py")
        sub = load_config(f"{path}:{arg}" if arg else path)
        t0 = time.perf_counter()
        result = registry.get_experiment(f"{slug}/{name}")(sub, workdir / label)
        seconds = time.perf_counter() - t0
        progress.log(f"{slug}/{label} at scale {scale or 'full'}: {progress.format_duration(seconds)}")
        metrics.update({f"{label}/{k}": v for k, v in result.metrics.items()})
        metrics[f"{label}/seconds"] = seconds
        figures += result.figures
        notes.append(f"{label}: {result.notes}")
        results.append(result)
    return metrics, figures, notes, results


def gather_parts(slug: str, config, configs_dir: str | pathlib.Path, workdir: str | pathlib.Path,
                 headline_part: str | None = None,
                 claims: Callable[[dict[str, float]], list[Claim]] | None = None) -> Result:
    """A paper's `reproduce` experiment: `run_parts` over `config.parts` at `config.scale`, as one Result.

    The headline is `<label>/<headline>` of the part labelled `headline_part` (the first part when
    None or not run). Claims, in order: `claims(metrics)` (claims that need several parts'
    metrics), then the headline part's, then the other parts' in the order of `config.parts`; the
    first one is the report's summary row.
    """
    metrics, figures, notes, results = run_parts(slug, config.parts, config.scale, configs_dir, workdir)
    parts = [part_label(p) for p in config.parts]
    i = parts.index(headline_part) if headline_part in parts else 0
    gathered = list(claims(metrics)) if claims is not None else []
    gathered += list(results[i].claims) + [c for j, r in enumerate(results) if j != i for c in r.claims]
    headline = results[i].headline
    return Result(metrics=metrics, headline=f"{parts[i]}/{headline}" if headline else None, figures=figures,
                  claims=gathered, notes=" ".join(notes))


class Rows:
    """Finished measurements of a long experiment, one JSON object per line of `path`, keyed so a
    run killed midway resumes: `rows.get(key)` is the stored row or None, `rows.add(key, **values)`
    appends one (written at once). A line cut by a kill is skipped (that measurement reruns)."""

    def __init__(self, path: str | pathlib.Path):
        self.path = pathlib.Path(path)
        self.rows: dict[str, dict] = {}
        if self.path.exists():
            for n, line in enumerate(self.path.read_text().splitlines(), 1):
                if not line.strip():
                    continue
                try:
                    row = json.loads(line)
                except json.JSONDecodeError:
                    progress.log(f"{self.path}:{n}: unreadable row skipped (rerun)")
                    continue
                self.rows[row["key"]] = row

    def get(self, key: str) -> dict | None:
        return self.rows.get(key)

    def add(self, key: str, **values) -> dict:
        row = {"key": key, **values}
        self.rows[key] = row
        self.path.parent.mkdir(parents=True, exist_ok=True)
        cut = False
        if self.path.exists() and self.path.stat().st_size > 0:
            with self.path.open("rb") as f:                 # the last byte only, not the whole file
                f.seek(-1, 2)
                cut = f.read(1) != b"\n"
        with self.path.open("a") as f:
            f.write(("\n" if cut else "") + json.dumps(row) + "\n")   # never glued to a line cut by a kill
        return row


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


def save_figure(fig, path: str | pathlib.Path, dpi: int = 100, tight: bool = True) -> str:
    """Lays out (`tight_layout`, unless `tight=False` for a figure placed by hand), writes and closes a
    matplotlib figure; returns the path as a string (for `Result.figures`)."""
    plt = pyplot()
    if tight:
        fig.tight_layout()
    fig.savefig(path, dpi=dpi)
    plt.close(fig)
    return str(path)
