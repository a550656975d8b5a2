"""Progress lines and human-readable durations (process 0 prints; `JAXML_QUIET=1` silences)."""

from __future__ import annotations

import os
import sys
import time


def log(message: str) -> None:
    """Prints one progress line to stderr on process 0."""
    if os.environ.get("JAXML_QUIET"):
        return
    try:
        import jax
        if jax.process_index() != 0:
            return
    except Exception:  # jax not initialised yet: print anyway.
        pass
    print(f"[jaxml {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def format_duration(seconds: float) -> str:
    """'1h02m', '3m07s', '12.3s'."""
    if seconds != seconds or seconds == float("inf"):
        return "?"
    if seconds < 60:
        return f"{seconds:.1f}s"
    minutes, secs = divmod(int(round(seconds)), 60)
    if minutes < 60:
        return f"{minutes}m{secs:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m"


def format_bytes(n: float) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:.1f} {unit}" if unit != "B" else f"{int(n)} B"
        n /= 1024
    return f"{n:.1f} GB"


class Rate:
    """Steps per second and ETA over a run that may have resumed at `start_step`."""

    def __init__(self, start_step: int, total_steps: int):
        self.start_step, self.total_steps = start_step, total_steps
        self.t0 = time.perf_counter()

    def line(self, step: int) -> str:
        elapsed = time.perf_counter() - self.t0
        done = step - self.start_step
        rate = done / elapsed if elapsed > 0 and done > 0 else float("nan")
        eta = (self.total_steps - step) / rate if rate == rate and rate > 0 else float("nan")
        pct = 100.0 * step / max(self.total_steps, 1)
        return f"step {step}/{self.total_steps} ({pct:.0f}%) {rate:.2f} steps/s ETA {format_duration(eta)}"
