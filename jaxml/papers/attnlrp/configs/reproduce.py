"""AttnLRP at one scale: LLM, MiniLM and ViT faithfulness, and cost (experiment `attnlrp/reproduce`).

Runbook:
    python scripts/reproduce.py --papers=attnlrp --scale=quick
    python scripts/run.py --config=jaxml/papers/attnlrp/configs/reproduce.py --workdir=/tmp/attnlrp
The scale (`tiny`, `quick`, full) is passed to each part's own config. `tiny` runs the cheapest
part only (`cost` on SmolLM2 cut to 2 layers: its claim is "not comparable"); `quick` runs the
SmolLM2 and MiniLM faithfulness parts on the headline methods, the cost claim coming from the
SmolLM2 part's warm batches (the README says which full-scale numbers it stands for).
"""

from jaxml.core.config import reproduce_config


def get_config(arg=None):
    return reproduce_config("attnlrp", arg,
                            tiny=("cost",),
                            quick=("faithfulness_llm", "faithfulness_minilm"),
                            full=("faithfulness_llm", "faithfulness_minilm", "faithfulness_vit", "cost"))
