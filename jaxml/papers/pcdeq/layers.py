"""pcDEQ layers (Gabor, Piotrowski, Cavalcante, ICML 2024): z* = act(W z* + x), W >= 0.

Variants (the `variant` field of the layers and networks):
  'pcdeq1'   act in {tanh, softsign, relu6}; the injection is made strictly positive with
             softplus(x, beta=5) = softplus(5 x) / 5; W >= 0 by projection after every step.
  'pcdeq2'   act = sigmoid (positive at 0); injection relu(x); W >= 0 by projection.
  'deq'      the unconstrained baseline: same layer, act tanh by default, injection x as is, W of
             any sign with PyTorch's default init; no projection, no convergence guarantee.
  'explicit' the weight-tied explicit baseline: the 'deq' layer applied `unroll` times from z0 = 0
             and differentiated by backprop; the same parameters, so the same parameter count.

W is weight-normalised as in `torch.nn.utils.weight_norm` (dim 0 of PyTorch's [out, in, ...]
weight): W = g * v / ||v||, one g per output unit, the norm over the unit's inputs (and kernel
taps). Parameters are stored Flax-style: dense v [in, out], conv v [3, 3, in, out], g [out].
pcDEQ init (official `initialize_nn_weights`): v ~ U[0, 1) * sqrt(1e-4) / sqrt(out + in), g = ||v||.
"""

from __future__ import annotations

import math
from typing import Any, Callable

import flax.linen as nn
import jax
import jax.numpy as jnp

from jaxml.papers.pcdeq.solver import DEQStats, Solver, deq_solve, unrolled_solve
from kernels.fixed_point.reference import activation_fn

VARIANTS = ("pcdeq1", "pcdeq2", "deq", "explicit")
PCDEQ1_ACTIVATIONS = ("tanh", "softsign", "relu6")
CONSTRAINED = ("pcdeq1", "pcdeq2")


def check_variant(variant: str, activation: str) -> None:
    """ValueError for an unknown variant or an activation the variant does not allow."""
    if variant not in VARIANTS:
        raise ValueError(f"variant={variant!r}; accepted: {VARIANTS}")
    if variant == "pcdeq1" and activation not in PCDEQ1_ACTIVATIONS:
        raise ValueError(f"pcdeq1 takes activation in {PCDEQ1_ACTIVATIONS} (concave, nondecreasing, "
                         f"0 at 0), got {activation!r}")
    if variant == "pcdeq2" and activation != "sigmoid":
        raise ValueError(f"pcdeq2 takes activation 'sigmoid', got {activation!r}")
    activation_fn(activation)


def injection(variant: str, x: jax.Array) -> jax.Array:
    """pcdeq1: softplus(x, beta=5); pcdeq2: relu(x); deq/explicit: x."""
    if variant == "pcdeq1":
        return jax.nn.softplus(5.0 * x) / 5.0
    if variant == "pcdeq2":
        return jax.nn.relu(x)
    return x


def pcdeq_init(key, shape, dtype=jnp.float32):
    """U[0, 1) * sqrt(1e-4) / sqrt(out + in) (the official init; for conv, channels only)."""
    fan_in, fan_out = shape[-2], shape[-1]
    return jax.random.uniform(key, shape, dtype) * math.sqrt(1e-4) / math.sqrt(fan_in + fan_out)


def torch_default_init(key, shape, dtype=jnp.float32):
    """PyTorch's nn.Linear / nn.Conv2d default: U(-1/sqrt(fan_in), 1/sqrt(fan_in))."""
    fan_in = math.prod(shape[:-1])
    bound = 1.0 / math.sqrt(fan_in)
    return jax.random.uniform(key, shape, dtype, -bound, bound)


def unit_norms(v: jax.Array) -> jax.Array:
    """||v|| per output unit (the last axis): the norm over inputs and kernel taps, [out]."""
    return jnp.sqrt(jnp.sum(jnp.square(v), axis=tuple(range(v.ndim - 1))))


def weight_norm(v: jax.Array, g: jax.Array) -> jax.Array:
    """W = g * v / ||v||, the norm over all axes but the last (output) one."""
    return v * (g / unit_norms(v))


def _dense_map(w, z, x, act):
    return act(z @ w + x)


def _conv(z, w):
    return jax.lax.conv_general_dilated(z, w, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"))


@jax.custom_vjp
def conv3x3(z: jax.Array, w: jax.Array) -> jax.Array:
    """3x3 'SAME' convolution, NHWC x HWIO. Its gradient w.r.t. z is a convolution with the
    explicitly flipped and transposed kernel: JAX's own transpose rule expresses the same thing
    with `01oi` kernel dimension labels, which XLA:CPU runs about 4x slower (measured: 31 ms vs
    8 ms per adjoint iteration at 64x28x28x12), and the adjoint solve runs it every iteration."""
    return _conv(z, w)


def _conv3x3_fwd(z, w):
    return _conv(z, w), (z, w)


def _conv3x3_bwd(res, g):
    z, w = res
    w_t = jnp.transpose(w[::-1, ::-1], (0, 1, 3, 2))
    _, vjp_w = jax.vjp(lambda ww: _conv(z, ww), w)
    return _conv(g, w_t), vjp_w(g)[0]


conv3x3.defvjp(_conv3x3_fwd, _conv3x3_bwd)


def _conv_map(w, z, x, act):
    return act(conv3x3(z, w) + x)


class DEQLayer(nn.Module):
    """The fixed point z* = act(W z* + inj(x)) of a dense (`conv=False`) or 3x3 conv layer.

    Input x: [batch, features] (dense) or [batch, H, W, channels] (conv); output z* of that shape.
    Sows `diagnostics/forward_iterations` and `forward_residual`; declares a `probe` variable whose
    gradient carries the backward solve's [iterations, residual] (see `solver.deq_solve`). During
    `init` the solve is skipped and the output is zeros (the parameters depend on shapes only).

    Attributes:
      variant, activation: see the module docstring.
      conv: 3x3 convolution with padding 1 instead of a dense map.
      solver: the fixed-point solver (forward and backward).
      unroll: iterations of the 'explicit' variant.
      implementation: dense layers with plain iteration can run the `kernels.fixed_point` op:
        'auto' (Pallas on GPU/TPU), 'xla', 'pallas'; 'generic' uses `deq_solve` everywhere.
      capture: sow `capture/weight` (the normalised W) and `capture/injection` so that the map
        can be rebuilt outside the model (`layer_map`) for convergence analysis.
    """

    variant: str = "pcdeq1"
    activation: str = "tanh"
    conv: bool = False
    solver: Solver = Solver()
    unroll: int = 8
    implementation: str = "generic"
    capture: bool = False

    @nn.compact
    def __call__(self, x: jax.Array) -> jax.Array:
        check_variant(self.variant, self.activation)
        n = x.shape[-1]
        shape = (3, 3, n, n) if self.conv else (n, n)
        init = pcdeq_init if self.variant in CONSTRAINED else torch_default_init
        v = self.param("v", init, shape)
        g = self.param("g", lambda key, s: unit_norms(v), (n,))   # W = v at init, as torch
        w = weight_norm(v, g)
        act = activation_fn(self.activation)
        inj = injection(self.variant, x)
        step = _conv_map if self.conv else _dense_map
        f = lambda w_, z, x_: step(w_, z, x_, act)
        if self.capture:   # for offline convergence analysis: the map is f(w, z, inj) = step(...)
            self.sow("capture", "weight", w)
            self.sow("capture", "injection", inj)
        probe = None if self.variant == "explicit" else self.variable("probe", "backward", jnp.zeros, (2,),
                                                                          jnp.float32)
        if self.is_initializing():
            # No parameter depends on the fixed point's value (only on shapes): `init` skips the solve,
            # which would otherwise double the compiled size of a training run's initialisation.
            return jnp.zeros_like(inj)
        if self.variant == "explicit":
            return unrolled_solve(f, w, inj, self.unroll)
        solver = self.solver._replace(nonnegative=self.solver.nonnegative or self.variant in CONSTRAINED)
        use_kernel = (not self.conv and self.solver.method == "iteration"
                      and self.implementation != "generic")
        if use_kernel:
            import kernels.fixed_point as fixed_point_op   # the Pallas op (dense layers only)
            out = fixed_point_op.fixed_point(
                w, inj, activation=self.activation, tol=self.solver.tol, max_iter=self.solver.max_iter,
                block_sizes=fixed_point_op.BlockSizes(block_batch=x.shape[0]),
                implementation=self.implementation, probe=probe.value)
            z, stats = out.z, DEQStats(out.iterations.max(), out.residual.max())
        else:
            z, stats = deq_solve(f, w, inj, solver=solver, probe=probe.value)
        self.sow("diagnostics", "forward_iterations", stats.iterations.astype(jnp.float32))
        self.sow("diagnostics", "forward_residual", stats.residual)
        return z


def project_nonnegative(params: Any) -> Any:
    """Clamps every DEQ layer's v and g at 0 (the pcDEQ projection after each optimizer step)."""
    def clamp(path, leaf):
        names = [getattr(p, "key", None) for p in path]
        if names and names[-1] in ("v", "g") and any(str(k).startswith("deq") for k in names[:-1]):
            return jnp.maximum(leaf, 0.0)
        return leaf
    return jax.tree_util.tree_map_with_path(clamp, params)


def layer_map(activation: str, conv: bool) -> Callable[[jax.Array, jax.Array, jax.Array], jax.Array]:
    """The DEQ map `(w, z, injection) -> act(W z + injection)` of a dense or conv layer."""
    act = activation_fn(activation)
    step = _conv_map if conv else _dense_map
    return lambda w, z, x: step(w, z, x, act)
