"""Cost of AttnLRP against one forward+backward pass and Integrated Gradients (`attnlrp/cost`).

Runbook:
    python scripts/run.py --config=jaxml/papers/attnlrp/configs/cost.py --workdir=/tmp/attnlrp_cost
Variants: `:tiny` (SmolLM2 cut to 2 layers, batch 2 x 16 tokens, IG 4 steps), `:quick` (batch 8 x
24 tokens, IG 8 steps: the shapes of `faithfulness_llm:quick`, whose warm calls give the quick
`reproduce` its cost claim), default (batch 8 x 64 tokens, IG 32 steps). Tiny and full also time
explaining a generation (prompt + G tokens) against one explanation per generated token.
"""

from jaxml.core.config import by_scale, experiment_config


def get_config(arg=None):
    c, scale = experiment_config("attnlrp/cost", arg)
    c.corpora = by_scale(scale, tiny=("shakespeare",), quick=("austen",), full=("austen",))
    c.model_layers = by_scale(scale, tiny=2, quick=0, full=0)
    c.batch_size = by_scale(scale, tiny=2, quick=8, full=8)
    c.length = by_scale(scale, tiny=16, quick=24, full=64)
    c.min_tokens = 8
    c.ig_steps = by_scale(scale, tiny=4, quick=8, full=32)
    c.ig_chunk = by_scale(scale, tiny=1, quick=1, full=8)    # 1: reuse the plain gradient program
    c.repeats = by_scale(scale, tiny=2, quick=3, full=5)        # timed calls after the first
    c.ig_repeats = by_scale(scale, tiny=1, quick=1, full=3)
    # Explaining a generation: prompt tokens, generated tokens (0: not measured)
    c.generation_prompt = by_scale(scale, tiny=8, quick=16, full=32)
    c.generation_tokens = by_scale(scale, tiny=4, quick=0, full=32)
    return c
