"""Two-stage AI rewrites of human passages by SmolLM2-135M-Instruct (experiment `aitext/generate`).

Runbook:
    python scripts/run.py --config=jaxml/papers/aitext/configs/generate.py --workdir=/tmp/aitext_gen
    (2 CPU cores: about 60-80 min for the 320 passages of the full config; interrupt and rerun with
    the same workdir to resume: finished passages are kept in <workdir>/generated.jsonl.)
The shipped corpus `jaxml/papers/aitext/data/smollm2_rewrites.jsonl.gz` is this config's output.
"""

import ml_collections

from jaxml.core.config import parse_arg, scale_of

OUTLINE_PROMPT = ("Summarize the following passage as a short outline of its main points.\n\n"
                  "Passage:\n{passage}")
EXPAND_PROMPT = ("Expand the following outline into a passage of about 200 words of flowing prose.\n\n"
                 "Outline:\n{outline}")


def get_config(arg=None) -> ml_collections.ConfigDict:
    arg = parse_arg(arg, tiny=False, quick=False, seed=0)
    c = ml_collections.ConfigDict()
    c.experiment = "aitext/generate"
    c.seed = arg.seed
    c.split_seed = 0                # which Austen blocks are test (jaxml.papers.aitext.corpus)
    # Passages rewritten per split (sampled from that split's human passages).
    c.n_passages = ml_collections.ConfigDict({"fit": 192, "test": 64, "shift_novel": 32, "shift_genre": 32})
    c.outline_prompt = OUTLINE_PROMPT
    c.expand_prompt = EXPAND_PROMPT
    c.outline_tokens = 96
    c.expand_tokens = 320
    c.sampling = ml_collections.ConfigDict({"temperature": 0.7, "top_p": 0.95})
    c.batch = 32
    c.model = "smollm2"             # 'smollm2' (SmolLM2-135M-Instruct) or 'tiny_random' (tests only)
    scale = scale_of(arg)
    if scale == "quick":
        c.n_passages = ml_collections.ConfigDict({"fit": 16, "test": 8, "shift_novel": 4, "shift_genre": 4})
        c.outline_tokens, c.expand_tokens, c.batch = 48, 96, 16
    if scale == "tiny":
        c.n_passages = ml_collections.ConfigDict({"fit": 2, "test": 1, "shift_novel": 1, "shift_genre": 0})
        c.outline_tokens, c.expand_tokens, c.batch, c.model = 8, 12, 4, "tiny_random"
    return c
