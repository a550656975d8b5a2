"""AttnLRP at one scale: LLM, MiniLM and ViT faithfulness, and cost (experiment `attnlrp/reproduce`).

Runbook:
    python scripts/reproduce.py --papers=attnlrp --scale=quick
    python scripts/run.py --config=jaxml/papers/attnlrp/configs/reproduce.py --workdir=/tmp/attnlrp
The scale (`tiny`, `quick`, full) is passed to each part's own config.
"""

from jaxml.core.config import reproduce_config


def get_config(arg=None):
    return reproduce_config("attnlrp", arg,
                            tiny=('cost',),
                            quick=('faithfulness_llm', 'faithfulness_minilm', 'cost'),
                            full=('faithfulness_llm', 'faithfulness_minilm', 'faithfulness_vit', 'cost'))
