import pytest

from kernels.common import check_divisible, interpret_default, resolve_implementation


@pytest.mark.parametrize("backend, expected", [("cpu", "xla"), ("gpu", "pallas"), ("tpu", "pallas")])
def test_auto_picks_pallas_on_accelerators(backend, expected):
    assert resolve_implementation("auto", backend) == expected
    assert resolve_implementation("xla", backend) == "xla"
    assert resolve_implementation("pallas", backend) == "pallas"
    assert interpret_default(backend) == (backend == "cpu")


def test_errors_name_the_values():
    with pytest.raises(ValueError, match="implementation='triton'"):
        resolve_implementation("triton")
    with pytest.raises(ValueError, match="seq_len=100 must be a multiple of block_q=64"):
        check_divisible("seq_len", 100, "block_q", 64)
    check_divisible("seq_len", 128, "block_q", 64)
