"""Few-shot autoformalization of Book I (experiment `euclid/autoformalize`).

Runbook:
    python scripts/run.py --config=jaxml/papers/euclid/configs/autoformalize.py --workdir=/tmp/euclid_af
    # a large model behind an OpenAI-compatible server needs only its URL and name:
    python scripts/run.py --config=jaxml/papers/euclid/configs/autoformalize.py:llm=http://host:8000/v1,model=NAME \
        --workdir=/tmp/euclid_af
    # the local model decoded under the statement grammar (every answer parses; a local model only):
    python scripts/run.py --config=jaxml/papers/euclid/configs/autoformalize.py:constrained=True \
        --workdir=/tmp/euclid_af_con
Full: the local SmolLM2 (greedy, 200 new tokens, batch 8) on the 43 non-example propositions, ~6 min on
CPU. Quick: the two propositions with the shortest formal statements (I.2 and I.10: 28 and 36 SmolLM2
tokens), 64 new tokens (the prompts are ~750 tokens: about 6 s of CPU per proposition). Tiny: a scripted fake LLM (2 propositions, one exact and one with its hypotheses dropped),
seconds: the local model is too slow for the tiny budget.
Metric: the share of answers equivalent to our formalisation; also parse errors and the other
categories. LeanEuclid reports no statement-equivalence rate for Book I that we could verify.
"""

import ml_collections

from jaxml.core.config import by_scale, experiment_config


def get_config(arg=None) -> ml_collections.ConfigDict:
    c, scale = experiment_config("euclid/autoformalize", arg, llm="smollm2", model="", max_new_tokens=200,
                                 timeout_s=15.0, constrained=False)
    c.scale = scale
    c.batch_size = 8
    c.names = by_scale(scale, tiny=("I.2", "I.6"), quick=("I.2", "I.10"), full=())  # () = the 43
    c.max_new_tokens = by_scale(scale, tiny=64, quick=min(c.max_new_tokens, 64), full=c.max_new_tokens)
    if scale == "tiny":
        c.llm = "scripted"
    return c
