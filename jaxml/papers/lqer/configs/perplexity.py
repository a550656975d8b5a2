"""LQER perplexity table on SmolLM2-135M (experiment `lqer/perplexity`).

Runbook:
    python scripts/run.py --config=jaxml/papers/lqer/configs/perplexity.py --workdir=/tmp/lqer_ppl
Variants: `:tiny` (SmolLM2 truncated to 2 decoder layers, 63 tokens: a smoke test), `:quick` (511
tokens, FP/MXINT/LQER/L2QER at W4 and W3), default (two chapters, every method at W4 and W3).
Default on 2 CPU cores: 18.5 min; W4A8 perplexity FP (the dequantized Q4_1 GGUF) 39.76, L2QER 44.43, LQER 50.49, MXINT 53.28
(the paper, LLaMA-2-7B on WikiText-2: FP16 5.479, L2QER 5.69). Numbers: jaxml/papers/lqer/README.md.
"""

from jaxml.core.config import by_scale, experiment_config
from jaxml.papers.lqer.configs import common


def get_config(arg=None):
    c, scale = experiment_config("lqer/perplexity", arg)
    common.add_shared(c, scale)
    c.bits = (4, 3)
    c.rank = by_scale(scale, tiny=8, quick=32, full=32)
    c.methods = by_scale(scale, tiny=("fp", "mxint", "lqer", "l2qer"), quick=("fp", "mxint", "lqer", "l2qer"),
                         full=("fp", "rtn", "gptq", "awq", "mxint", "lqer", "l2qer"))
    return c
