"""SmolLM2 with L2QER through the fused Pallas kernel (interpret mode) = through the XLA path."""

import dataclasses

import numpy as np

from jaxml.compress import calibration
from jaxml.compress.linear import quantized_ops
from jaxml.compress.quantizers import QuantFormat
from jaxml.core.config import load_config
from jaxml.core import registry
from jaxml.llm.generate import perplexity
from jaxml.models.llama import load_smollm2
from jaxml.papers.lqer import Method, quantize_model
from jaxml.papers.lqer.experiments import calibration_batches, eval_tokens
from kernels.lqer_matmul.api import as_linear_op
from kernels.lqer_matmul.reference import pack

LAYERS = ("layers_0/", "layers_1/")   # the kernel runs interpreted on a CPU: two decoder layers


def test_perplexity_through_the_kernel_equals_the_xla_path():
    config = load_config(f"{registry.config_path('lqer/perplexity')}:tiny")
    model, params, tok = load_smollm2()
    stats = calibration.calibrate(model, params, calibration_batches(tok, config))
    q, _ = quantize_model(params, stats, Method("l2qer", 4, 32), LAYERS)
    tokens = eval_tokens(tok, config)[:96]
    act = QuantFormat("mxint", 8, 16)
    xla = perplexity(model.clone(ops=quantized_ops(act)), q, tokens, context=64, stride=32)
    original = calibration.linear_kernels(params)
    packed = calibration.replace_kernels(q, {})
    for name in calibration.linear_kernels(q):
        if name.startswith(LAYERS):
            node = packed
            for key in name.split("/"):
                node = node[key]
            del node["kernel"]
            node["packed_kernel"] = pack(original[name], 4, 16)   # int8 mantissas + shared exponents
    ops = dataclasses.replace(quantized_ops(act), linear=as_linear_op("pallas", x_format=act))
    kernel = perplexity(model.clone(ops=ops), packed, tokens, context=64, stride=32)
    np.testing.assert_allclose(kernel["nll"], xla["nll"], rtol=1e-6)
    assert kernel["tokens"] == xla["tokens"] == 95
