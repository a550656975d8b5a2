"""The import direction of DESIGN.md holds on the whole tree, and the checker catches planted breaks."""

import pathlib
import textwrap

import pytest

from tests import import_rules

ROOT = pathlib.Path(__file__).resolve().parents[1]


def test_the_tree_follows_the_import_rules():
    broken = import_rules.violations(ROOT)
    assert not broken, "\n".join(broken)


def _tree(tmp_path, files: dict[str, str]) -> pathlib.Path:
    for rel, text in files.items():
        path = tmp_path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    for pkg in {p.parent for p in tmp_path.rglob("*.py")}:
        if pkg != tmp_path and pkg.name != "scripts":
            (pkg / "__init__.py").touch()
    return tmp_path


BASE = {
    "jaxml/progress.py": "import os\n",
    "jaxml/core/train.py": "from jaxml.data import pipeline\nfrom jaxml import progress\n",
    "jaxml/data/pipeline.py": "import numpy\n",
    "jaxml/data/text.py": "from jaxml import progress\n",
    "jaxml/nn/layers.py": "import jax\n",
    "jaxml/models/llama.py": "from jaxml.nn import layers\n",
    "jaxml/llm/generate.py": "from jaxml.models.llama import Llama\n",
    "jaxml/compress/linear.py": "def quantized_linear(): ...\ndef _helper(): ...\n",
    "kernels/lqer_matmul/reference.py": "from jaxml.compress.linear import quantized_linear\n",
    "jaxml/papers/alpha/method.py": "from jaxml.llm import generate\nfrom jaxml.papers.alpha import other\n",
    "jaxml/papers/alpha/other.py": "def _private(): ...\n",
    "jaxml/papers/beta/method.py": "from jaxml.core import train\n",
    "jaxml/examples/vit.py": "from jaxml.models import llama\n",
    "scripts/run.py": "from jaxml.examples import vit\nfrom jaxml.papers.beta import method\n",
}


def test_a_clean_planted_tree_passes(tmp_path):
    assert import_rules.violations(_tree(tmp_path, BASE)) == []


@pytest.mark.parametrize("path, line, rule", [
    ("jaxml/papers/beta/method.py", "from jaxml.papers.alpha import method", "a paper imports another paper"),
    ("jaxml/papers/beta/method.py", "import jaxml.papers.alpha.other as o", "a paper imports another paper"),
    ("jaxml/llm/generate.py", "from jaxml.papers.beta.method import x", "a shared package imports a paper"),
    ("kernels/lqer_matmul/reference.py", "from jaxml.papers import alpha", "a shared package imports a paper"),
    ("jaxml/models/llama.py", "def f():\n    from jaxml.llm import generate", "jaxml.models imports jaxml.llm"),
    ("jaxml/core/train.py", "from jaxml.models.llama import Llama", "jaxml.core imports jaxml.models"),
    ("jaxml/core/train.py", "from jaxml.llm import generate", "jaxml.core imports jaxml.llm"),
    ("jaxml/core/train.py", "from jaxml.data import text", "jaxml.core imports a data-set module"),
    ("jaxml/data/text.py", "from jaxml.core import train", "jaxml.data imports jaxml.core"),
    ("jaxml/papers/beta/method.py", "from jaxml.examples.vit import make", "only scripts may import the examples"),
    ("kernels/lqer_matmul/reference.py", "from jaxml.compress.linear import _helper", "private name(s) ['_helper']"),
    ("jaxml/papers/beta/method.py", "from jaxml.compress import linear\nlinear._helper()", "private name(s) ['_helper']"),
    ("jaxml/progress.py", "from jaxml.core import train", "jaxml.progress (a leaf) imports jaxml"),
    ("jaxml/compress/linear.py", "from kernels.lqer_matmul import reference", "in a cycle"),
])
def test_a_planted_break_is_reported(tmp_path, path, line, rule):
    files = dict(BASE)
    files[path] = files[path] + line + "\n"
    broken = import_rules.violations(_tree(tmp_path, files))
    assert len(broken) >= 1 and any(rule in b for b in broken), broken
    assert all(path in b or "cycle" in b for b in broken), broken


def test_private_names_within_one_package_are_allowed(tmp_path):
    files = dict(BASE)
    files["jaxml/papers/alpha/method.py"] += "from jaxml.papers.alpha.other import _private\n"
    assert import_rules.violations(_tree(tmp_path, files)) == []
