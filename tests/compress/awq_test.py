"""AWQ against round-to-nearest (its alpha = 0 point), its definition, and salient-channel data."""

import jax.numpy as jnp
import numpy as np
import pytest

from jaxml.compress.awq import CLIP_RATIOS, awq, awq_search
from jaxml.compress.quantizers import QuantFormat, integer

IN, OUT, N = 64, 32, 2048


def _data(seed=0, salient=4, factor=20.0):
    """Kernel [IN, OUT], inputs [N, IN] with `salient` channels `factor` times larger."""
    rng = np.random.default_rng(seed)
    w = rng.standard_normal((IN, OUT)).astype(np.float32)
    x = rng.standard_normal((N, IN))
    x[:, rng.choice(IN, salient, replace=False)] *= factor
    return w, x


def _mse(x, w, q):
    return float(np.sum((x @ (w.astype(np.float64) - q)) ** 2) / (len(x) * w.shape[1]))


def _rtn(w, fmt):
    return np.asarray(fmt(jnp.asarray(w), axis=0))


FORMATS = [QuantFormat("int", width=3), QuantFormat("int", width=3, group_size=16),
           QuantFormat("int", width=4, group_size=16, symmetric=False), QuantFormat("mxint", width=4)]


@pytest.mark.parametrize("fmt", FORMATS)
def test_alpha_zero_is_rtn_so_awq_is_not_worse(fmt):
    w, x = _data(1, salient=0)           # no salient channels: AWQ may only tie or improve
    result = awq_search(w, np.abs(x).mean(0), fmt, grid=10, x_sample=x)
    rtn = _mse(x, w, _rtn(w, fmt))
    np.testing.assert_allclose(result.losses[0], rtn, rtol=1e-12)
    assert result.loss <= rtn
    assert result.loss == pytest.approx(_mse(x, w, result.kernel), rel=1e-12)


@pytest.mark.parametrize("fmt", FORMATS[:3])
def test_salient_channels_awq_beats_rtn(fmt):
    # 4 of 64 channels 20x larger; measured AWQ / RTN output error (norm) 0.41-0.64 over seeds 0-4
    # and formats; asserted below 0.75.
    w, x = _data(0)
    mean_abs = np.abs(x).mean(0)
    result = awq_search(w, mean_abs, fmt, x_sample=x)
    rtn = np.sqrt(_mse(x, w, _rtn(w, fmt)))
    assert np.sqrt(_mse(x, w, result.kernel)) < 0.75 * rtn
    assert result.alpha > 0
    # the Hessian objective is the same quadratic: same choice, same kernel
    h = x.T @ x / N
    by_hessian = awq_search(w, mean_abs, fmt, hessian=h)
    assert by_hessian.alpha == result.alpha
    np.testing.assert_array_equal(by_hessian.kernel, result.kernel)
    np.testing.assert_allclose(by_hessian.losses, result.losses, rtol=1e-9)


def test_kernel_and_scales_follow_the_definition():
    w, x = _data(2)
    mean_abs = np.abs(x).mean(0)
    fmt = QuantFormat("int", width=3, group_size=16)
    kernel, scales = awq(w, mean_abs, fmt, hessian=x.T @ x / N)
    result = awq_search(w, mean_abs, fmt, hessian=x.T @ x / N)
    assert kernel.shape == w.shape and kernel.dtype == np.float32 and scales.shape == (IN,)
    assert np.all(scales > 0)
    # s = mean|x|^alpha / sqrt(max * min) and kernel = diag(1/s) Q(diag(s) W)
    s = mean_abs ** result.alpha
    np.testing.assert_allclose(scales, s / np.sqrt(s.max() * s.min()), rtol=1e-6)
    want = np.asarray(integer(jnp.asarray(w * scales[:, None]), 3, group_size=16)) / scales[:, None]
    np.testing.assert_array_equal(kernel, want)


def test_diagonal_proxy_without_calibration_inputs():
    w, x = _data(3)
    mean_abs = np.abs(x).mean(0)
    fmt = QuantFormat("int", width=3)
    result = awq_search(w, mean_abs, fmt, grid=5)
    diff = w.astype(np.float64) - result.kernel
    np.testing.assert_allclose(result.loss, np.sum(diff ** 2 * mean_abs[:, None] ** 2) / OUT, rtol=1e-9)
    assert result.loss < result.losses[0]


@pytest.mark.parametrize("fmt", FORMATS[1:3])
def test_clipping_improves_on_scaling_alone(fmt):
    # Measured with clipping / without (output error norm) at seed 0: 0.84 (int3 g16), 0.98 (uint4 g16).
    w, x = _data(0)
    mean_abs = np.abs(x).mean(0)
    plain = awq_search(w, mean_abs, fmt, x_sample=x)
    clipped = awq_search(w, mean_abs, fmt, x_sample=x, clip=True)
    assert clipped.loss < plain.loss
    assert clipped.loss == pytest.approx(_mse(x, w, clipped.kernel), rel=1e-12)
    assert clipped.clip_ratio.shape == (IN // 16, OUT)
    assert set(np.unique(clipped.clip_ratio)) <= {np.float32(r) for r in CLIP_RATIOS}
    assert np.any(clipped.clip_ratio < 1)


def test_bad_inputs():
    w, x = _data(0)
    mean_abs, fmt = np.abs(x).mean(0), QuantFormat("int", width=4)
    with pytest.raises(ValueError, match="mean_abs_x shape"):
        awq(w, mean_abs[:-1], fmt)
    with pytest.raises(ValueError, match="negative"):
        awq(w, -mean_abs, fmt)
    with pytest.raises(ValueError, match="kind='none'"):
        awq(w, mean_abs, QuantFormat())
    with pytest.raises(TypeError, match="QuantFormat"):
        awq(w, mean_abs, None)
    with pytest.raises(ValueError, match="hessian shape"):
        awq(w, mean_abs, fmt, hessian=np.eye(IN + 1))
    with pytest.raises(ValueError, match="x_sample shape"):
        awq(w, mean_abs, fmt, x_sample=x[:, :-1])
    with pytest.raises(ValueError, match="grid=0"):
        awq(w, mean_abs, fmt, grid=0)
    with pytest.raises(ValueError, match="non-finite"):
        awq(np.full_like(w, np.inf), mean_abs, fmt)
    with pytest.raises(ValueError, match="divide"):
        awq(w[:40], mean_abs[:40], QuantFormat("mxint", width=4, block=16), clip=True)
