"""Flash attention (Pallas) whose backward can apply the AttnLRP rule: dq, dk x 1/4, dv x 1/2."""

from kernels.attention_lrp.api import BACKWARDS, as_attention_fn, attention
from kernels.attention_lrp.pallas import BlockSizes
from kernels.attention_lrp.reference import (LRP_GRAD_SCALES, MASK_VALUE, attention_lrp_reference,
                                             attention_reference, lrp_scale_gradients)

__all__ = ["BACKWARDS", "BlockSizes", "LRP_GRAD_SCALES", "MASK_VALUE", "as_attention_fn", "attention",
           "attention_lrp_reference", "attention_reference", "lrp_scale_gradients"]
