"""Two-stage AI rewrites of human passages by SmolLM2-135M-Instruct (experiment `aitext/generate`).

Runbook:
    python scripts/run.py --config=jaxml/papers/aitext/configs/generate.py --workdir=/tmp/aitext_gen
    (2 CPU cores: about 60-80 min for the 320 passages of the full config; interrupt and rerun with
    the same workdir to resume: finished passages are kept in <workdir>/generated.jsonl.)
The shipped corpus `jaxml/papers/aitext/data/smollm2_rewrites.jsonl.gz` is this config's output.
"""

import ml_collections

from jaxml.core.config import by_scale, experiment_config

OUTLINE_PROMPT = ("Summarize the following passage as a short outline of its main points.\n\n"
                  "Passage:\n{passage}")
EXPAND_PROMPT = ("Expand the following outline into a passage of about 200 words of flowing prose.\n\n"
                 "Outline:\n{outline}")


def get_config(arg=None) -> ml_collections.ConfigDict:
    c, scale = experiment_config("aitext/generate", arg)
    c.split_seed = 0                # which Austen blocks are test (jaxml.papers.aitext.corpus)
    # Passages rewritten per split (sampled from that split's human passages).
    c.n_passages = ml_collections.ConfigDict(by_scale(
        scale, full={"fit": 192, "test": 64, "shift_novel": 32, "shift_genre": 32},
        quick={"fit": 16, "test": 8, "shift_novel": 4, "shift_genre": 4},
        tiny={"fit": 2, "test": 1, "shift_novel": 1, "shift_genre": 0}))
    c.outline_prompt = OUTLINE_PROMPT
    c.expand_prompt = EXPAND_PROMPT
    c.outline_tokens = by_scale(scale, tiny=8, quick=48, full=96)
    c.expand_tokens = by_scale(scale, tiny=12, quick=96, full=320)
    c.sampling = ml_collections.ConfigDict({"temperature": 0.7, "top_p": 0.95})
    c.batch = by_scale(scale, tiny=4, quick=16, full=32)
    # 'smollm2' (SmolLM2-135M-Instruct) or 'tiny_random' (random 2-layer Llama, byte tokenizer: tests only)
    c.model = by_scale(scale, tiny="tiny_random", quick="smollm2", full="smollm2")
    return c
