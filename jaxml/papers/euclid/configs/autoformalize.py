"""Few-shot autoformalization of Book I (experiment `euclid/autoformalize`).

Runbook:
    python scripts/run.py --config=jaxml/papers/euclid/configs/autoformalize.py --workdir=/tmp/euclid_af
    # a large model behind an OpenAI-compatible server needs only its URL and name:
    python scripts/run.py --config=jaxml/papers/euclid/configs/autoformalize.py:llm=http://host:8000/v1,model=NAME \
        --workdir=/tmp/euclid_af
Full: the local SmolLM2 (greedy, 200 new tokens, batch 8) on the 43 non-example propositions, ~6 min on
CPU. Quick: 8 propositions, 128 new tokens (~1 min). Tiny: a scripted fake LLM (2 propositions, one exact and one with
its hypotheses dropped), seconds: the local model is too slow for the tiny budget.
Metric: the share of answers equivalent to our formalisation; also parse errors and the other
categories. LeanEuclid reports no statement-equivalence rate for Book I that we could verify.
"""

import ml_collections

from jaxml.core.config import parse_arg, scale_of


def get_config(arg=None) -> ml_collections.ConfigDict:
    arg = parse_arg(arg, tiny=False, quick=False, llm="smollm2", model="", max_new_tokens=200, timeout_s=15.0)
    c = ml_collections.ConfigDict()
    c.experiment = "euclid/autoformalize"
    c.scale = scale_of(arg)
    c.llm, c.model = arg.llm, arg.model
    c.batch_size = 8
    c.max_new_tokens = arg.max_new_tokens
    c.timeout_s = arg.timeout_s
    c.names = ()                     # () = the 43 non-example propositions
    if c.scale == "quick":
        c.names = ("I.2", "I.3", "I.4", "I.6", "I.7", "I.8", "I.9", "I.10")
        c.max_new_tokens = min(c.max_new_tokens, 128)
    if c.scale == "tiny":
        c.llm, c.names, c.max_new_tokens = "scripted", ("I.2", "I.6"), 64
    return c
