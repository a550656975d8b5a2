"""The LLM benchmark: the paper's prompt methods and the LLM-graph + solver pipeline (experiment
`asynchow/benchmark`).

Runbook:
    python scripts/run.py --config=jaxml/papers/asynchow/configs/benchmark.py --workdir=/tmp/asynchow_bench
    python scripts/run.py --config=jaxml/papers/asynchow/configs/benchmark.py:quick,llm=http://localhost:8000/v1,model=NAME \
        --workdir=/tmp/asynchow_server        # any OpenAI-compatible server instead of the local model
    python scripts/run.py --config=jaxml/papers/asynchow/configs/benchmark.py:release_path=/data/asynchow,num_tasks=0 \
        --workdir=/tmp/asynchow_release       # the release's own files (async/seq/para_benchmark.pkl), all tasks
    (2 CPU cores, SmolLM2-135M-Instruct; full: 40 generated test tasks x 8 prompt methods and 200 tasks for the
    LLM-graph + solver pipeline and 40 for the whole edge list, 49m30s (14 minutes of it
    sharing the cores with a training run); quick: 8 tasks, zero-shot and the pipeline; tiny: 1 task.)
Metric: accuracy (the benchmark's parser; correct iff the answer lies in the gold interval) by method, plan
type and complexity bin, 95% Wilson intervals. Full run, SmolLM2-135M: every prompt method 0/40 except
k-shot 1/40; LLM graph + solver 0.555 [0.486, 0.622] (111/200; whole edge list 4/40); solver oracle 40/40.
Paper: GPT-4 with PLaG is best; all models degrade with complexity (tables not available to us).
"""

from jaxml.core.config import by_scale, experiment_config

METHODS = ("zero-shot", "zero-shot CoT", "BaG", "k-shot", "k-shot CoT", "PLaG (edge list)", "PLaG (adjacency list)",
           "PLaG (BaG)")


def get_config(arg=None):
    c, scale = experiment_config("asynchow/benchmark", arg, llm="smollm2", model="", release_path="",
                                 num_tasks=-1)
    if c.num_tasks < 0:
        c.num_tasks = by_scale(scale, tiny=1, quick=8, full=40)
    c.methods = by_scale(scale, tiny=("zero-shot",), quick=("zero-shot",), full=METHODS)
    c.graph_solver_tasks = by_scale(scale, tiny=1, quick=8, full=200)
    c.whole_list = by_scale(scale, tiny=False, quick=False, full=True)   # the edge list in one generation too
    c.answer_tokens = by_scale(scale, tiny=8, quick=24, full=32)
    c.cot_tokens = by_scale(scale, tiny=16, quick=128, full=160)
    c.batch_size = by_scale(scale, tiny=8, quick=8, full=16)
    c.row_multiple = by_scale(scale, tiny=1, quick=8, full=8)   # rows padded to a multiple: fewer compiled programs
    return c
