"""AttnLRP at one scale: LLM, MiniLM and ViT faithfulness, and cost (experiment `attnlrp/reproduce`).

Runbook:
    python scripts/reproduce.py --papers=attnlrp --scale=quick
    python scripts/run.py --config=jaxml/papers/attnlrp/configs/reproduce.py --workdir=/tmp/attnlrp
The scale (`tiny`, `quick`, full) is passed to each part's own config. `tiny` runs the cheapest
part only (`cost` on SmolLM2 cut to 2 layers: its claim is "not comparable"); `quick` runs the
SmolLM2 faithfulness part on 96 prefixes with the headline methods and the mean replacement
(1m06s on 2 quiet CPU cores; enough examples to separate AttnLRP from Gradient x Input and random
by paired CIs), the cost claim coming from its warm batches; MiniLM is in the full run (and its
own `:quick` config). The README says which full-scale numbers the quick run stands for.
"""

from jaxml.core.config import reproduce_config


def get_config(arg=None):
    return reproduce_config("attnlrp", arg,
                            tiny=("cost",),
                            quick=("faithfulness_llm",),
                            full=("faithfulness_llm", "faithfulness_minilm", "faithfulness_vit", "cost"))
