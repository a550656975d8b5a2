"""LQER's GEMM (Pallas): MXINT weights dequantized inside the kernel, low-rank correction fused.

    Y = Q_x(X) W_q + Q_x(Q_x(Q_x(X) A) B) + bias
"""

from kernels.lqer_matmul.api import DEFAULT_X_FORMAT, as_linear_op, lqer_matmul
from kernels.lqer_matmul.pallas import BlockSizes
from kernels.lqer_matmul.reference import PackedMXINT, lqer_matmul_reference, pack, unpack

__all__ = ["BlockSizes", "DEFAULT_X_FORMAT", "PackedMXINT", "as_linear_op", "lqer_matmul",
           "lqer_matmul_reference", "pack", "unpack"]
