"""The direct CPU 3x3 convolution (`kernels.cpu_conv3x3`) against lax.conv_general_dilated."""

import os
import subprocess
import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import kernels.cpu_conv3x3 as cpu_conv3x3

needs_kernel = pytest.mark.skipif(not cpu_conv3x3.available(),
                                  reason=f"kernel not available here: {cpu_conv3x3.unavailable_reason()}")


def _xla_conv(z, w):
    return jax.lax.conv_general_dilated(z, w, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"),
                                        precision=jax.lax.Precision.HIGHEST)


def _normal(shape, seed):
    return jax.random.normal(jax.random.PRNGKey(seed), shape, jnp.float32)


@needs_kernel
@pytest.mark.parametrize("shape", [(2, 28, 28, 12, 12), (3, 9, 7, 5, 5), (2, 5, 31, 4, 12), (1, 1, 1, 3, 2),
                                   (2, 6, 15, 16, 16), (1, 4, 30, 12, 1)],
                         ids=["28x28x12", "odd-9x7x5", "w31-c4-o12", "1x1", "c16-o16", "o1"])
@pytest.mark.parametrize("form", ["plain", "scale", "add-softsign", "all"])
def test_kernel_equals_xla_convolution(shape, form):
    # Widths 31, 15, 30 exercise the one-pixel remainder after the 14-pixel blocks; c16/o16 the full
    # vector, o1 one lane. The kernel sums in XLA:CPU's order for these channel counts (measured
    # difference 0.0 against XLA's convolution followed by the same elementwise ops); the bound allows
    # 1e-6 of the largest entry for other orders.
    n, h, wd, c, o = shape
    z, w = _normal((n, h, wd, c), 0), _normal((3, 3, c, o), 1) * 0.3
    scale = jax.random.uniform(jax.random.PRNGKey(2), z.shape) if form in ("scale", "all") else None
    add = _normal((n, h, wd, o), 3) if form in ("add-softsign", "all") else None
    activation = "softsign" if form in ("add-softsign", "all") else None
    ref = _xla_conv(z if scale is None else scale * z, w) + (0.0 if add is None else add)
    if activation == "softsign":
        ref = ref / (1.0 + jnp.abs(ref))
    got = jax.jit(lambda z, w, s, a: cpu_conv3x3.conv3x3(z, w, scale=s, add=a, activation=activation))(z, w, scale, add)
    assert got.shape == ref.shape and got.dtype == jnp.float32
    np.testing.assert_allclose(got, ref, rtol=0, atol=1e-6 * float(jnp.max(jnp.abs(ref))))


@needs_kernel
@pytest.mark.parametrize("shape", [(2, 28, 28, 12), (3, 9, 7, 5), (1, 1, 1, 3)], ids=["28x28x12", "9x7x5", "1x1"])
def test_kernel_residual_equals_relative_residual(shape):
    # residual=True: ||out - z|| / (||out|| + 1e-5) from sums the kernel accumulates (float32 per image
    # row, float64 across rows) against relative_residual's float32 reductions of the same output.
    # Measured: relative differences up to 1e-7; bound 2e-6.
    from kernels.fixed_point.reference import relative_residual
    z = _normal(shape, 0)
    w = _normal((3, 3, shape[-1], shape[-1]), 1) * 0.2
    x, scale = _normal(shape, 2), jax.random.uniform(jax.random.PRNGKey(3), shape)
    for kwargs in ({"add": x, "activation": "softsign"}, {"scale": scale, "add": x}):
        out, res = jax.jit(lambda z, w: cpu_conv3x3.conv3x3(z, w, residual=True, **kwargs))(z, w)
        np.testing.assert_array_equal(out, cpu_conv3x3.conv3x3(z, w, **kwargs))
        assert res.shape == () and res.dtype == jnp.float32
        assert float(res) == pytest.approx(float(relative_residual(out, z)), rel=2e-6)


@needs_kernel
@pytest.mark.parametrize("shape", [(64, 28, 28, 12, 12), (3, 9, 7, 5, 4), (2, 5, 31, 16, 1), (1, 1, 1, 3, 2)],
                         ids=["28x28x12", "odd-9x7-c5-o4", "w31-c16-o1", "1x1"])
def test_weight_grad_equals_xla(shape):
    # dw = sum over pixels of shifted z times g, against jax.vjp of lax.conv w.r.t. the kernel. Both sum
    # 50,176 products per entry at 28x28x12 in float32 (the kernel per image row, then float64 across
    # images); measured against float64: kernel 1.6e-7, XLA 2.7e-6 of the largest entry; against each
    # other at most 2.7e-6. Bound 1e-5.
    n, h, wd, c, o = shape
    z, g = _normal((n, h, wd, c), 0), _normal((n, h, wd, o), 1)
    ref = jax.vjp(lambda w: _xla_conv(z, w), jnp.zeros((3, 3, c, o)))[1](g)[0]
    got = jax.jit(cpu_conv3x3.weight_grad)(z, g)
    assert got.shape == (3, 3, c, o) and got.dtype == jnp.float32
    np.testing.assert_allclose(got, ref, rtol=0, atol=1e-5 * float(jnp.max(jnp.abs(ref))))
    if h == wd == 1:   # one pixel: only the centre tap, one product each
        np.testing.assert_array_equal(got, ref)
    with pytest.raises(ValueError, match="weight_grad takes z"):
        cpu_conv3x3.weight_grad(z, jnp.zeros((n, h, wd + 1, o)))
    with pytest.raises(ValueError, match="1..16 of each"):
        cpu_conv3x3.weight_grad(_normal((1, 2, 2, 17), 0), _normal((1, 2, 2, 3), 1))


@needs_kernel
def test_kernel_rejects_bad_input_with_clear_errors():
    z, w = _normal((1, 4, 4, 3), 0), _normal((3, 3, 3, 3), 1)
    with pytest.raises(ValueError, match="1..16 output channels"):
        cpu_conv3x3.conv3x3(_normal((1, 4, 4, 3), 0), _normal((3, 3, 3, 17), 1))
    with pytest.raises(ValueError, match="w \\[3, 3, c, o\\]"):
        cpu_conv3x3.conv3x3(z, _normal((3, 3, 4, 3), 1))
    with pytest.raises(ValueError, match="must be float32"):
        cpu_conv3x3.conv3x3(z.astype(jnp.bfloat16), w)
    with pytest.raises(ValueError, match="add must have"):
        cpu_conv3x3.conv3x3(z, w, add=_normal((1, 4, 4, 2), 2))
    with pytest.raises(ValueError, match="scale must have"):
        cpu_conv3x3.conv3x3(z, w, scale=_normal((1, 4, 5, 3), 2))
    with pytest.raises(ValueError, match="residual=True compares out with z and needs c == o"):
        cpu_conv3x3.conv3x3(z, _normal((3, 3, 3, 4), 1), residual=True)
    with pytest.raises(ValueError, match="activation='tanh'"):
        cpu_conv3x3.conv3x3(z, w, activation="tanh")


def test_switched_off_kernel_reports_why_and_refuses():
    # JAXML_CPU_CONV3X3=0: available() is False with the reason, and a call raises instead of running.
    code = ("import kernels.cpu_conv3x3 as k, jax.numpy as jnp\n"
            "print(k.available(), k.unavailable_reason())\n"
            "try:\n    k.conv3x3(jnp.zeros((1, 2, 2, 1)), jnp.zeros((3, 3, 1, 1)))\n"
            "except RuntimeError as e:\n    print('RuntimeError', e)\n")
    env = dict(os.environ, JAXML_CPU_CONV3X3="0")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                          cwd=os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(__file__)))))
    assert proc.returncode == 0, proc.stderr[-2000:]
    lines = proc.stdout.splitlines()
    assert lines[0] == "False switched off by JAXML_CPU_CONV3X3=0"
    assert lines[1].startswith("RuntimeError kernels.cpu_conv3x3 is not available here: switched off")
