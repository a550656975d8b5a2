"""scripts/device_check.sh --dry-run (the device check's own steps at smoke sizes on a CPU) and the
table it writes."""

import json
import os
import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]


def test_device_report_table_lists_every_case_and_the_failures(tmp_path):
    sys.path.insert(0, str(ROOT / "scripts"))
    from device_report import table

    good = {"device": "cuda:0", "jax": "0.10.2", "rows": [
        {"batch": 8, "n": 16, "xla": {"fwd_ms": 2.0}, "pallas": {"fwd_ms": 0.5}, "xla_over_pallas_fwd": 4.0},
        {"batch": 64, "n": 16, "xla": {"fwd_ms": 3.0}, "pallas": {"error": "RuntimeError: too big"}}]}
    (tmp_path / "bench_a.json").write_text(json.dumps(good))
    (tmp_path / "bench_b.json").write_text("{not json")
    text = table([str(tmp_path / "bench_a.json"), str(tmp_path / "bench_b.json"), str(tmp_path / "missing.json")])
    lines = text.splitlines()
    assert len(lines) == 2 + 5 + 2          # header, 2 + 1 rows + 1 ratio line + 1 failure, 2 unreadable files
    assert "| bench_a | cuda:0 (jax 0.10.2) | batch 8, n 16 | pallas | fwd_ms 0.5 |" in lines
    assert "xla_over_pallas_fwd 4" in text and "FAILED: RuntimeError: too big" in text
    assert "| bench_b |" in text and "JSONDecodeError" in text and "FileNotFoundError" in text


@pytest.mark.slow
def test_device_check_dry_run_passes_on_cpu(tmp_path):
    """About 2 minutes on 2 cores: the kernel lowering tests, the three benchmarks at smoke sizes
    (interpret mode), the table."""
    env = dict(os.environ, OUT=str(tmp_path), PYTHON=sys.executable)
    env.pop("XLA_FLAGS", None)
    proc = subprocess.run(["bash", str(ROOT / "scripts/device_check.sh"), "--dry-run"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    table = (tmp_path / "table.md").read_text()
    for bench in ("bench_attention_lrp", "bench_lqer_matmul", "bench_fixed_point"):
        assert f"| {bench} |" in table and (tmp_path / f"{bench}.json").exists()
    assert "FAILED" not in table
