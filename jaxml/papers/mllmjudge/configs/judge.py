"""One judge over a release-format directory (experiment `mllmjudge/judge`).

Runbook (the real benchmark: `score.jsonl`, `pair.jsonl`, `batch.jsonl` and the images they name):
    python scripts/run.py --config=jaxml/papers/mllmjudge/configs/judge.py \
        --config.data_dir=/data/MLLM-Judge/Benchmark --config.judge=endpoint \
        --config.base_url=http://localhost:8000/v1 --config.model=Qwen2-VL-7B-Instruct --workdir=/tmp/judge
Without data_dir the offline instance's test split is written to the workdir and judged. Judges:
random, smollm2 (text only: use setting "No Figure", or "Vision Expert" with --config.captions=a JSON
file {image_path: caption}), smollm2_free, endpoint (an OpenAI-compatible multimodal server; images
sent as data URLs). Metric: the paper's, per source and overall (table.md, verdicts.jsonl).
Tiny: the random judge on 2 images per source (seconds).
"""

import ml_collections

from jaxml.core.config import by_scale, experiment_config


def get_config(arg=None) -> ml_collections.ConfigDict:
    c, scale = experiment_config("mllmjudge/judge", arg)
    c.scale = scale
    c.data_dir = ""
    c.test_per_source = by_scale(scale, tiny=2, quick=6, full=30)
    c.judge = by_scale(scale, tiny="random", quick="smollm2", full="smollm2")
    c.setting = by_scale(scale, tiny="No COT", quick="No Figure", full="No Figure")
    c.captions = ""
    c.base_url = ""
    c.model = ""
    c.limit = 0                    # items per kind (0: all)
    c.seeds = (0, 1)
    c.lm_layers = 0
    return c
