"""AttnLRP at one scale: LLM, MiniLM and ViT faithfulness, and cost (experiment `attnlrp/reproduce`).

Runbook:
    python scripts/reproduce.py --papers=attnlrp --scale=quick
    python scripts/run.py --config=jaxml/papers/attnlrp/configs/reproduce.py --workdir=/tmp/attnlrp
The scale (`tiny`, `quick`, full) is passed to each part's own config.
"""

import ml_collections

from jaxml.core.config import parse_arg, scale_of


def get_config(arg=None) -> ml_collections.ConfigDict:
    arg = parse_arg(arg, tiny=False, quick=False)
    c = ml_collections.ConfigDict()
    c.experiment = "attnlrp/reproduce"
    c.scale = scale_of(arg)
    c.parts = ("faithfulness_llm", "faithfulness_minilm", "cost")
    if c.scale == "full":   # the ViT part trains a ViT first (minutes on a CPU): full scale only
        c.parts = ("faithfulness_llm", "faithfulness_minilm", "faithfulness_vit", "cost")
    if c.scale == "tiny":
        c.parts = ("cost",)   # the other parts' tiny configs run in the registry test on their own
    return c
