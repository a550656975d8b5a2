"""MLLM-as-a-Judge (Chen et al., ICML 2024) in JAX: the benchmark harness with the release's formats
and exact metrics, an offline benchmark instance from real images, and local judges (SmolLM2 text
judge with captions, a LLaVA-style vision-language judge trained here) next to an OpenAI-compatible
endpoint judge.

    from jaxml.papers.mllmjudge import harness, judges
    items, images = harness.load_release("/data/MLLM-Judge/Benchmark")
    result = harness.run_benchmark(judges.EndpointJudge("http://localhost:8000/v1", "my-vlm"), items, images)
"""

from jaxml.papers.mllmjudge import experiments  # noqa: F401  (registers the experiments)
from jaxml.papers.mllmjudge.formats import (Answer, BatchItem, JsonlFormatError, PairItem, ScoreItem, read_jsonl,
                                            write_jsonl)
from jaxml.papers.mllmjudge.harness import load_release, run_benchmark
from jaxml.papers.mllmjudge.judgements import SETTINGS, build_prompt, parse_for, parse_judgement
from jaxml.papers.mllmjudge.judges import EndpointJudge, RandomJudge
from jaxml.papers.mllmjudge.lm_judges import TextJudge, VLMJudge
from jaxml.papers.mllmjudge.metrics import batch_levenshtein, consistency, pair_accuracy, position_bias, score_pearson
