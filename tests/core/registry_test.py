import subprocess
import sys
import textwrap

import pytest

from jaxml.core import registry


def test_lookup_imports_the_package_lazily():
    # A fresh interpreter: the example package is imported by the lookup, not before.
    code = textwrap.dedent("""
        import sys
        from jaxml.core import registry
        assert "jaxml.examples" not in sys.modules
        fn = registry.get_experiment("examples/fashion_mnist_cnn")
        assert "jaxml.examples.fashion_mnist" in sys.modules
        print(fn.__module__)
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "jaxml.examples.fashion_mnist"


def test_list_experiments_includes_the_baseline_and_its_config():
    names = registry.list_experiments()
    assert "examples/fashion_mnist_cnn" in names
    assert registry.config_path("examples/fashion_mnist_cnn").name == "fashion_mnist_cnn.py"
    assert registry.get_task("examples/fashion_mnist_cnn").__name__ == "make_task"


@pytest.mark.parametrize("name, error, match", [
    ("nopaper/reproduce", KeyError, "no package for slug 'nopaper'"),
    ("examples/nothing", KeyError, "no experiment named 'examples/nothing'"),
    ("Bad Name", ValueError, "must look like"),
    ("noslash", ValueError, "must look like"),
])
def test_bad_lookups(name, error, match):
    with pytest.raises(error, match=match):
        registry.get_experiment(name)


def test_duplicate_registration_is_an_error():
    @registry.experiment("examples/dup_test")
    def first(config, workdir):
        return None

    registry.experiment("examples/dup_test")(first)  # the same function again is fine
    with pytest.raises(ValueError, match="already registered"):
        @registry.experiment("examples/dup_test")
        def second(config, workdir):
            return None
    registry._EXPERIMENTS.pop("examples/dup_test")
