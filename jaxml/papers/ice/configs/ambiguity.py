"""Ambiguity detection on the AmbigInst-style set (experiment `ice/ambiguity`).

Runbook:
    python scripts/run.py --config=jaxml/papers/ice/configs/ambiguity.py --workdir=/tmp/ice_ambiguity
    python scripts/run.py --config=jaxml/papers/ice/configs/ambiguity.py:quick,base_url=http://localhost:8000/v1,model=NAME \
        --workdir=/tmp/ice_server          # any OpenAI-compatible server instead of the local model
    (2 CPU cores, SmolLM2-135M-Instruct; full: 4 families x 25 ambiguous + 25 unambiguous = 200 inputs,
    up to 5 clarifications x 10 answers (the paper's counts): 37m14s, answers from one shared prefill per
    prompt. Quick: 16 inputs, 2 clarifications x 2 answers, one in-context example, 1m19s warm,
    1m32s with JAXML_XLA_CACHE=0 (mechanics, not statistics: its CIs are wide). Tiny: 4 inputs, 2 x 2, no MiniLM, no self-report.) Generations are cached in the workdir: a killed run resumes.
Metric: AUROC and best F1 of each score for the ambiguity label, 95% bootstrap CIs. Full run, SmolLM2-135M:
ICE data 0.340 [0.261, 0.414] (its own clarifications), oracle 1.000, total entropy 0.543 [0.457, 0.626].
Paper: ICE's data uncertainty detects ambiguity (AmbigInst/AmbigQA, gpt-3.5/GPT-4; tables not available to us).
"""

from jaxml.core.config import by_scale, experiment_config


def get_config(arg=None):
    c, scale = experiment_config("ice/ambiguity", arg, base_url="", model="")
    c.scale = scale
    c.model_label = f"{c.model} via {c.base_url}" if c.base_url else "SmolLM2-135M-Instruct (local)"
    c.families = by_scale(scale, tiny=("unit", "round"), quick=("order", "unit", "first", "round"),
                          full=("order", "unit", "first", "round"))
    c.per_family = by_scale(scale, tiny=1, quick=2, full=25)
    c.max_clarifications = by_scale(scale, tiny=2, quick=2, full=5)
    c.samples = by_scale(scale, tiny=2, quick=2, full=10)
    c.clarify_samples = by_scale(scale, tiny=1, quick=1, full=2)
    c.clarify_tokens = by_scale(scale, tiny=16, quick=16, full=64)
    c.answer_tokens = by_scale(scale, tiny=6, quick=6, full=24)
    c.shots = by_scale(scale, tiny=1, quick=1, full=3)
    c.batch_size = 64
    c.prompt_bucket = 64      # prompts padded to a multiple of 64 tokens: one compiled decoder for most batches
    c.minilm = by_scale(scale, tiny=False, quick=True, full=True)
    c.self_report = by_scale(scale, tiny=False, quick=True, full=True)
    c.bootstrap = by_scale(scale, tiny=50, quick=200, full=1000)
    return c
