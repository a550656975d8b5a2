"""Input clarification ensembling (Hou et al., ICML 2024): the decomposition of an LLM's predictive
uncertainty into data (aleatoric: the input is ambiguous) and model (epistemic) parts, by ensembling the
answers to clarified rewrites of the input.

Modules: `decompose` (the decomposition, batched and jitted), `clustering`, `pipeline` (clarify, answer,
decompose over any `jaxml.llm` backend, resumable), `baselines`, `data` (AmbigInst-style set, official
loaders), `metrics`, `experiments`; results in jaxml/papers/ice/README.md.

    from jaxml.papers import ice
    d = ice.decompose_answers([["paris"] * 10, ["lyon"] * 10])    # two readings, two confident answers
    float(d.total), float(d.data), float(d.model)                  # 1.0 bit, all of it data uncertainty
"""

from jaxml.papers.ice import experiments, pipeline  # noqa: F401  (registers the experiments)
from jaxml.papers.ice.clustering import (FuzzyMatcher, answer_labels, normalize_answer, semantic_clusters,
                                        word_error_rate)
from jaxml.papers.ice.data import (FAMILIES, AmbigExample, ambiguous_instructions, load_ambigqa, load_ambiginst,
                                   save_ambiginst)
from jaxml.papers.ice.decompose import (Decomposition, answer_frequencies, decompose, decompose_answers,
                                        entropy_bits)
from jaxml.papers.ice.metrics import BestF1, auroc, best_f1, bootstrap_ci

__all__ = ["FAMILIES", "AmbigExample", "ambiguous_instructions", "load_ambigqa", "load_ambiginst", "save_ambiginst",
           "BestF1", "Decomposition", "FuzzyMatcher", "answer_frequencies", "answer_labels", "auroc", "best_f1",
           "bootstrap_ci", "decompose", "decompose_answers", "entropy_bits", "normalize_answer", "semantic_clusters",
           "word_error_rate"]
