"""SmolLM2 with L2QER through the fused Pallas kernel (interpret mode) = through the XLA path.

The fast test runs SmolLM2 cut after its second decoder layer with the 7 linear layers of the
first (every kernel shape of the model) through the kernel; the slow ones run the whole model with
its first 2 (or 6) decoder layers through the kernel on more tokens.
"""

import dataclasses
import functools

import jax

import pytest

from jaxml.compress import calibration
from jaxml.compress.linear import quantized_ops
from jaxml.compress.quantizers import QuantFormat
from jaxml.core import registry
from jaxml.core.config import load_config
from jaxml.llm.generate import perplexity
from jaxml.papers.lqer import Method, quantize_model
from jaxml.papers.lqer.experiments import calibrate_for, eval_tokens, load_model
from kernels.lqer_matmul.api import as_linear_op
from kernels.lqer_matmul.reference import pack

ACT = QuantFormat("mxint", 8, 16)
_pack = jax.jit(functools.partial(pack, width=4, block=16))   # one compilation per kernel shape


def _both_paths(decoder_layers: int, packed_layers: tuple[str, ...], n_tokens: int, context: int):
    """`(XLA perplexity dict, kernel perplexity dict)` with the kernels of `packed_layers` packed."""
    config = load_config(f"{registry.config_path('lqer/perplexity')}:tiny",
                         [f"eval_tokens={n_tokens}", f"decoder_layers={decoder_layers}"])
    model, params, tok = load_model(decoder_layers)
    stats = calibrate_for(config)   # memoized: shared with the tiny experiments in this process
    q, _ = quantize_model(params, stats, Method("l2qer", 4, 32), packed_layers)
    tokens = eval_tokens(tok, config)
    assert len(tokens) == n_tokens
    xla = perplexity(model.clone(ops=quantized_ops(ACT)), q, tokens, context=context, stride=context // 2)
    original = calibration.linear_kernels(params)
    packed = calibration.replace_kernels(q, {})
    n_packed = 0
    for name in calibration.linear_kernels(q):
        if name.startswith(packed_layers):
            node = packed
            for key in name.split("/"):
                node = node[key]
            del node["kernel"]
            node["packed_kernel"] = _pack(original[name])   # int8 mantissas + shared exponents
            n_packed += 1
    assert n_packed == 7 * len(packed_layers)
    ops = dataclasses.replace(quantized_ops(ACT), linear=as_linear_op("pallas", x_format=ACT))
    return xla, perplexity(model.clone(ops=ops), packed, tokens, context=context, stride=context // 2)


def test_truncated_model_through_the_kernel_equals_the_xla_path():
    """The two mean NLLs are identical (measured 19.444494044527094 both): MXINT8 activations times
    MXINT4 weights are exact products, and the sums come out bit-identical on the CPU."""
    xla, kernel = _both_paths(2, ("layers_0/",), 48, 32)
    assert kernel["nll"] == xla["nll"]
    assert kernel["tokens"] == xla["tokens"] == 47


@pytest.mark.slow
def test_perplexity_through_the_kernel_equals_the_xla_path():
    """The whole model, its first two decoder layers through the kernel, 95 held-out tokens
    (measured 5.029728618421053 both)."""
    xla, kernel = _both_paths(0, ("layers_0/", "layers_1/"), 96, 64)
    assert kernel["nll"] == xla["nll"]
    assert kernel["tokens"] == xla["tokens"] == 95


@pytest.mark.slow
def test_six_layers_through_the_kernel_on_more_tokens():
    """Measured 3.834798655790441 both."""
    xla, kernel = _both_paths(0, tuple(f"layers_{i}/" for i in range(6)), 256, 128)
    assert kernel["nll"] == xla["nll"]
    assert kernel["tokens"] == xla["tokens"] == 255
