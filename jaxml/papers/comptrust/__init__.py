"""Decoding Compressed Trust (Hong et al., ICML 2024): how quantization (RTN, GPTQ, AWQ at 8/4/3 bits) and
pruning (magnitude, Wanda, SparseGPT at 50%, 1:2, 2:4, 4:8) change a chat LLM's trustworthiness, measured
with offline DecodingTrust-style probes on SmolLM2-135M-Instruct.

    from jaxml.compress.model import Compression, compress_model
    from jaxml.papers.comptrust import harness, probes
    params_c, report = compress_model(params, stats, Compression.parse("gptq-w4"))
    suite = harness.Suite(probes=probes.build_probes(probes.PROBES, size="quick"))
    outcome = harness.evaluate(LocalLLM(model, params_c, tok), suite)   # scores, CIs, refusal rates

Modules: `probes` (the six probes, parsers, scoring rules), `privacy` (canaries, fine-tuning, leakage),
`harness` (one model through every probe and the utility measures), `metrics` (bootstrap CIs, pooling),
`experiments`; results in jaxml/papers/comptrust/README.md.
"""

from jaxml.papers.comptrust import experiments  # noqa: F401  (register the experiments)
from jaxml.papers.comptrust.harness import Suite, evaluate, mc_questions
from jaxml.papers.comptrust.probes import PROBES, build_probes

__all__ = ["PROBES", "Suite", "build_probes", "evaluate", "mc_questions"]
