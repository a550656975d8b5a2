import warnings

import pytest

from kernels import common
from kernels.common import (check_divisible, check_tpu_block, compiler_params, interpret_default, platform_of,
                            resolve_implementation, resolve_interpret, target_platform, tpu_interpret_params)


@pytest.mark.parametrize("backend, expected", [("cpu", "xla"), ("gpu", "pallas"), ("cuda", "pallas"),
                                               ("tpu", "pallas")])
def test_auto_picks_pallas_on_accelerators(backend, expected):
    assert resolve_implementation("auto", backend) == expected
    assert resolve_implementation("xla", backend) == "xla"
    assert resolve_implementation("pallas", backend) == "pallas"
    assert interpret_default(backend) == (backend == "cpu")


def test_without_triton_a_gpu_falls_back_to_xla_with_a_warning(monkeypatch):
    monkeypatch.setattr(common, "triton_available", lambda: False)
    with pytest.warns(RuntimeWarning, match="no Pallas Triton backend"):
        assert resolve_implementation("auto", "cuda") == "xla"
    with pytest.raises(RuntimeError, match="needs Pallas' Triton backend"):
        resolve_implementation("pallas", "gpu")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert resolve_implementation("auto", "tpu") == "pallas"       # TPU does not need Triton
        assert resolve_implementation("xla", "gpu") == "xla"


def test_targets():
    tpu = tpu_interpret_params()
    assert tpu.detect_races and tpu.uninitialized_memory == "nan"
    assert target_platform("cpu", tpu) == "tpu" and target_platform("tpu", False) == "tpu"
    assert target_platform("cpu", None) == "interpret" and target_platform("cuda", True) == "interpret"
    assert target_platform("cuda", False) == "gpu"
    assert resolve_interpret(None, "cpu") is True and resolve_interpret(None, "tpu") is False
    assert resolve_interpret(tpu) is tpu and resolve_interpret(0) is False
    assert platform_of("rocm") == "gpu"
    assert compiler_params("interpret") is None
    assert compiler_params("tpu", dimension_semantics=("parallel",)).dimension_semantics == ("parallel",)


def test_errors_name_the_values():
    with pytest.raises(ValueError, match="implementation='triton'"):
        resolve_implementation("triton")
    with pytest.raises(ValueError, match="seq_len=100 must be a multiple of block_q=64"):
        check_divisible("seq_len", 100, "block_q", 64)
    check_divisible("seq_len", 128, "block_q", 64)
    with pytest.raises(ValueError, match="backend='metal'"):
        platform_of("metal")
    with pytest.raises(ValueError, match="target='cpu'"):
        compiler_params("cpu")


@pytest.mark.parametrize("block, array, ok", [
    ((8, 128), (64, 256), True), ((16, 384), (16, 1000), True), ((4, 128), (4, 512), True),   # 4 = whole dim
    ((None, 8, 128), (2, 16, 128), True), ((128,), (1024,), True), ((64,), (64,), True),
    ((4, 128), (8, 128), False), ((8, 64), (8, 256), False), ((16,), (64,), False)])
def test_tpu_tiling_rule(block, array, ok):
    block = tuple(array[i] if b is None else b for i, b in enumerate(block))
    if ok:
        check_tpu_block("x", block, array)
    else:
        with pytest.raises(ValueError, match="Mosaic TPU's tiling"):
            check_tpu_block("x", block, array)
