"""Metric writers: JSON lines in the workdir, TensorBoard too when `tensorboardX` is installed."""

from __future__ import annotations

import json
import math
import pathlib
from typing import Any

import jax


class MetricWriter:
    """Appends `{"step": s, "split": name, **metrics}` records to `workdir/metrics.jsonl`.

    On resume from step `resume_step`, records with a larger step (written by the interrupted run
    after its last checkpoint) are moved to `metrics.jsonl.discarded` rather than kept as duplicates.
    Only process 0 writes.
    """

    def __init__(self, workdir: str | pathlib.Path, resume_step: int = 0):
        self.path = pathlib.Path(workdir) / "metrics.jsonl"
        self.active = jax.process_index() == 0
        self._tb = None
        self.resumed_records: list[dict[str, Any]] = []
        if not self.active:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        if self.path.exists():
            keep, drop = [], []
            for line in self.path.read_text().splitlines():
                if not line.strip():
                    continue
                try:
                    record = json.loads(line)
                except json.JSONDecodeError:  # a line cut by a kill mid-write
                    drop.append(line)
                    continue
                (keep if record.get("step", 0) <= resume_step else drop).append(line)
            if drop:
                with open(self.path.with_suffix(".jsonl.discarded"), "a") as f:
                    f.write("\n".join(drop) + "\n")
            self.path.write_text("".join(l + "\n" for l in keep))
            self.resumed_records = [json.loads(l) for l in keep]
        try:
            from tensorboardX import SummaryWriter  # optional
            self._tb = SummaryWriter(str(self.path.parent / "tensorboard"))
        except ImportError:
            self._tb = None

    def last(self, split: str, key: str, default: float) -> float:
        """The newest value of `key` among the `split` records kept from before a resume."""
        for record in reversed(self.resumed_records):
            if record.get("split") == split and key in record:
                return float(record[key])
        return default

    def write(self, step: int, split: str, metrics: dict[str, Any]) -> None:
        if not self.active:
            return
        record = {"step": int(step), "split": split}
        record.update({k: _to_float(v) for k, v in metrics.items()})
        with open(self.path, "a") as f:
            f.write(json.dumps(record) + "\n")
        if self._tb is not None:
            for k, v in record.items():
                if k not in ("step", "split") and isinstance(v, float):
                    self._tb.add_scalar(f"{split}/{k}", v, step)

    def close(self) -> None:
        if self._tb is not None:
            self._tb.close()


def _to_float(v: Any) -> float:
    v = float(v)
    return v if math.isfinite(v) else str(v)


def read_metrics(workdir: str | pathlib.Path, split: str | None = None) -> list[dict[str, Any]]:
    """Reads the records of `workdir/metrics.jsonl` (optionally one split)."""
    path = pathlib.Path(workdir) / "metrics.jsonl"
    if not path.exists():
        raise FileNotFoundError(f"no metrics at {path}; has a training run written to this workdir?")
    records = [json.loads(l) for l in path.read_text().splitlines() if l.strip()]
    return [r for r in records if split is None or r.get("split") == split]


def mean_std(values) -> tuple[float, float]:
    """(mean, sample standard deviation; 0 for a single value) of a metric over seeds or runs."""
    import numpy as np

    v = np.asarray(values, np.float64)
    if v.ndim != 1 or len(v) == 0:
        raise ValueError(f"mean_std: needs a non-empty 1-D sample, got shape {v.shape}")
    return float(v.mean()), float(v.std(ddof=1)) if len(v) > 1 else 0.0


def paired_t_test(differences) -> dict[str, float]:
    """The paired t-test of per-seed differences d_s = (method - baseline) at the same seed.

    Returns n, mean, std (sample), t = mean / (std / sqrt(n)) and p, the two-sided p-value of
    H0: E[d] = 0 under Student's t with n - 1 degrees of freedom (nan for n < 2; 0 when every
    difference is the same non-zero value, 1 when all are 0). `positive` is the share of d_s > 0.
    """
    import numpy as np
    from scipy import stats

    d = np.asarray(differences, np.float64)
    if d.ndim != 1 or len(d) == 0:
        raise ValueError(f"paired_t_test: needs a non-empty 1-D sample of differences, got shape {d.shape}")
    if not np.all(np.isfinite(d)):
        raise ValueError(f"paired_t_test: differences must be finite, got {d.tolist()}")
    n, mean = len(d), float(d.mean())
    out = {"n": float(n), "mean": mean, "positive": float((d > 0).mean())}
    if n < 2:
        return {**out, "std": 0.0, "t": float("nan"), "p": float("nan")}
    std = float(d.std(ddof=1))
    if std == 0.0:
        return {**out, "std": 0.0, "t": math.copysign(math.inf, mean) if mean else 0.0, "p": 0.0 if mean else 1.0}
    t = mean / (std / math.sqrt(n))
    return {**out, "std": std, "t": t, "p": float(2 * stats.t.sf(abs(t), n - 1))}
