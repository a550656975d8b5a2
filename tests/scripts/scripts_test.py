"""The two entry points, run as a user runs them."""

import importlib.util
import json
import os
import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
CONFIG = "jaxml/examples/configs/fashion_mnist_cnn.py"


def _run(args, cwd):
    env = dict(os.environ, JAXML_QUIET="1")
    env.pop("XLA_FLAGS", None)  # as a user runs it: one CPU device
    return subprocess.run([sys.executable, *args], cwd=cwd, env=env, capture_output=True, text=True)


def test_run_py_trains_with_overrides_and_writes_result(tmp_path):
    proc = _run([str(ROOT / "scripts/run.py"), f"--config={ROOT / CONFIG}:tiny", "--config.num_steps=12",
                 f"--workdir={tmp_path}"], ROOT)
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads((tmp_path / "result.json").read_text())
    assert result["headline"] == "test_accuracy"
    assert 0.0 < result["metrics"]["test_accuracy"] <= 1.0
    assert json.loads((tmp_path / "config.json").read_text())["num_steps"] == 12


def test_run_py_rejects_a_misspelled_override(tmp_path):
    proc = _run([str(ROOT / "scripts/run.py"), f"--config={ROOT / CONFIG}:tiny", "--config.num_stepz=3",
                 f"--workdir={tmp_path}"], ROOT)
    assert proc.returncode != 0
    assert "num_stepz" in proc.stderr


def _check_report(out: pathlib.Path, names: list[str]) -> list[dict]:
    report = (out / "REPORT.md").read_text()
    page = (out / "report.html").read_text()
    rows = json.loads((out / "results.json").read_text())
    assert [r["name"] for r in rows] == names
    assert all("error" not in r for r in rows), rows
    for row in rows:   # one summary row per paper: its headline claim, our number and the verdict
        slug = row["name"].split("/")[0]
        claim = row["result"]["claims"][0]
        line = next(x for x in report.splitlines() if x.startswith(f"| [{slug}](#{slug}) |"))
        assert claim["ours"].split()[0] in line and f"**{claim['verdict']}**" in line
        assert len(row["figures"]) == len(set(row["figures"]))
        for figure in row["figures"]:   # each figure once in REPORT.md, inlined in report.html
            assert (out / figure).stat().st_size > 0 and report.count(figure) == 1
            assert figure not in page
    assert 'src="figures/' not in page and "data:image/png;base64," in page
    return rows


def test_reproduce_writes_the_report(tmp_path):
    # One fast paper exercises the writer end to end; every paper's reproduce experiment already runs
    # at tiny scale in tests/core/experiments_test.py. The long version (two papers) is -m slow.
    out = tmp_path / "report"
    proc = _run([str(ROOT / "scripts/reproduce.py"), "--scale=tiny", "--papers=aitext", f"--out={out}"], tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    _check_report(out, ["aitext/reproduce"])


@pytest.mark.slow
def test_reproduce_writes_the_report_for_two_papers(tmp_path):
    out = tmp_path / "report"
    proc = _run([str(ROOT / "scripts/reproduce.py"), "--scale=tiny", "--papers=pcm,aitext", f"--out={out}"], tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    _check_report(out, ["pcm/reproduce", "aitext/reproduce"])


def _reproduce_module():
    spec = importlib.util.spec_from_file_location("_reproduce_script", ROOT / "scripts/reproduce.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_reproduce_selects_papers_and_examples():
    from jaxml.core import registry
    select = _reproduce_module()._experiments
    assert select(["aitext"]) == ["aitext/reproduce"]
    assert select(["examples"]) == registry.list_experiments(["examples"])
    assert "examples/fashion_mnist_cnn" in select(["examples"])
    assert all(n.endswith("/reproduce") for n in select(None))
    with pytest.raises(KeyError, match="no package for slug 'nothing'"):
        select(["examples", "nothing"])


@pytest.mark.slow
def test_reproduce_runs_named_examples(tmp_path):
    out = tmp_path / "report"
    proc = _run([str(ROOT / "scripts/reproduce.py"), "--scale=tiny", "--papers=examples", f"--out={out}"], tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    names = [r["name"] for r in json.loads((out / "results.json").read_text())]
    assert "examples/fashion_mnist_cnn" in names
    accuracy = next(r for r in json.loads((out / "results.json").read_text())
                    if r["name"] == "examples/fashion_mnist_cnn")["result"]["metrics"]["test_accuracy"]
    assert 0.2 < accuracy < 0.9
