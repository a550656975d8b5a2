"""LQER: Low-Rank Quantization Error Reconstruction for LLMs (Zhang et al., ICML 2024).

    from jaxml.papers.lqer import Method, quantize_model
    stats = jaxml.compress.calibration.calibrate(model, params, batches, hessian=True)
    params_q, report = quantize_model(params, stats, Method("l2qer", w_bits=4, rank=32))
    model_q = model.clone(ops=jaxml.compress.linear.quantized_ops(report.act_format))
"""

from jaxml.papers.lqer import experiments  # noqa: F401  (registers the experiments)
from jaxml.compress.lqer import (ErrorSVD, LowRank, activation_scale, average_bits, decompose, error_svd,
                                    top_singular)
from jaxml.compress.lqer import (METHODS, Method, QuantReport, pad_lowrank, quantize_model,
                                       quantize_model_ranks)

__all__ = ["ErrorSVD", "LowRank", "METHODS", "Method", "QuantReport", "activation_scale", "average_bits", "decompose",
           "error_svd", "pad_lowrank", "quantize_model", "quantize_model_ranks", "top_singular"]
