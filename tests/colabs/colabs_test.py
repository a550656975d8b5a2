"""Every notebook in colabs/ executes top to bottom in tiny mode (JAXML_SCALE=tiny)."""

import os
import pathlib

import nbformat
import pytest
from nbclient import NotebookClient

COLABS = pathlib.Path(__file__).resolve().parents[2] / "colabs"
NOTEBOOKS = sorted(COLABS.glob("*.ipynb"))


def test_there_are_notebooks():
    assert any(p.name == "quickstart.ipynb" for p in NOTEBOOKS)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_executes_in_tiny_mode(path, monkeypatch):
    monkeypatch.setenv("JAXML_SCALE", "tiny")
    monkeypatch.setenv("MPLBACKEND", "Agg")
    # A notebook user has one CPU device: the kernel drops the fake-device flag but keeps the rest (the suite's
    # `--xla_backend_optimization_level=0` from tests/conftest.py, which changes code generation, not results).
    flags = " ".join(f for f in os.environ.get("XLA_FLAGS", "").split()
                     if not f.startswith("--xla_force_host_platform_device_count"))
    if flags:
        monkeypatch.setenv("XLA_FLAGS", flags)
    else:
        monkeypatch.delenv("XLA_FLAGS", raising=False)
    nb = nbformat.read(path, as_version=4)
    NotebookClient(nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(COLABS)}}).execute()
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", []) if o.output_type == "error"]
    assert not errors, errors
    # The last cell asserts that the restored checkpoint reproduces the reported accuracy.
    assert "restored checkpoint: test accuracy" in "".join(
        o.get("text", "") for o in nb.cells[-1].get("outputs", [])) or path.stem != "quickstart"
