"""pcDEQ's fixed point (Pallas): the whole plain-iteration solver of z = act(z @ w + x) in one kernel
per group of rows, with an implicit (adjoint fixed-point) gradient.
"""

from kernels.fixed_point.api import FixedPointResult, fixed_point
from kernels.fixed_point.pallas import BlockSizes, adjoint_pallas, fixed_point_pallas
from kernels.fixed_point.reference import (ACTIVATIONS, activation_fn, activation_grad, adjoint_reference,
                                           fixed_point_reference, implicit_input_grads, iterate,
                                           relative_residual)

__all__ = ["ACTIVATIONS", "BlockSizes", "FixedPointResult", "activation_fn", "activation_grad",
           "adjoint_pallas", "adjoint_reference", "fixed_point", "fixed_point_pallas", "fixed_point_reference",
           "implicit_input_grads", "iterate", "relative_residual"]
