"""Test set-up: 8 fake CPU devices (set before JAX starts) and skips for hardware markers."""

import os

_FLAG = "--xla_force_host_platform_device_count=8"
if _FLAG not in os.environ.get("XLA_FLAGS", ""):
    os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " " + _FLAG).strip()

import jax  # noqa: E402
import pytest  # noqa: E402


def pytest_collection_modifyitems(config, items):
    has_accelerator = jax.default_backend() in ("gpu", "tpu")
    for item in items:
        if "gpu" in item.keywords and not has_accelerator:
            item.add_marker(pytest.mark.skip(reason="needs a GPU or TPU (run scripts/device_check.sh)"))
        if "torch_ref" in item.keywords:
            try:
                import torch  # noqa: F401
            except ImportError:
                item.add_marker(pytest.mark.skip(reason="needs the [torch-ref] extra (torch)"))


@pytest.fixture(scope="session")
def devices8():
    devices = jax.devices()
    if len(devices) < 8:
        pytest.fail(f"expected 8 fake CPU devices from XLA_FLAGS, got {len(devices)}: was jax imported "
                    "before tests/conftest.py?")
    return devices[:8]
