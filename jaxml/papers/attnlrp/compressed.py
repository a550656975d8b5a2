"""Explaining a compressed model: AttnLRP's rules composed with LQER's quantized operations.

Both are `jaxml.nn.ops.Ops`: the rules replace the attention, norm, activation and gate backward
passes; quantization replaces the linear layers (and the attention matmuls) with fake-quantized
ones whose gradients pass straight through. `quantized_rules` wraps the quantized attention inside
the attention rule and keeps the quantized linear layers, so the forward pass is the quantized
model's, bit for bit, and the backward pass is the rules'.

    ops = quantized_rules("attnlrp", act=QuantFormat("mxint", 8, 16))
    expl = explain.relevance(model, lqer_params, args, target=..., position=..., rules=ops)
"""

from __future__ import annotations

import dataclasses

from jaxml.compress.linear import quantized_ops
from jaxml.compress.quantizers import NONE, QuantFormat
from jaxml.nn.ops import Ops
from jaxml.papers.attnlrp.rules import attnlrp_ops, cp_lrp_ops


def quantized_rules(rules: str = "attnlrp", act: QuantFormat = NONE, attention: bool = True) -> Ops:
    """The rules ('attnlrp', 'cp_lrp' or 'gradient') on a model whose activations are quantized to `act`."""
    q = quantized_ops(act, attention)
    if rules == "gradient":
        return q
    makers = {"attnlrp": attnlrp_ops, "cp_lrp": cp_lrp_ops}
    if rules not in makers:
        raise ValueError(f"rules={rules!r}; accepted 'attnlrp', 'cp_lrp', 'gradient'")
    return dataclasses.replace(makers[rules](attention=q.attention), linear=q.linear)
