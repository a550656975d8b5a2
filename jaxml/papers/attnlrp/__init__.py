"""AttnLRP: Attention-Aware Layer-wise Relevance Propagation for Transformers (Achtibat et al., ICML 2024).

    from jaxml.papers import attnlrp
    expl = attnlrp.relevance(model, params, (tokens, positions), target=token_ids, position=last)
    expl.per_token("embeddings")          # input relevance [batch, len]
    gen = attnlrp.explain_generation(model, params, prompt_ids, generated_ids)
    gen.relevance                         # [generated, prompt + generated]

Rules (`rules`), the relevance API (`explain`), baselines, the perturbation test
(`faithfulness`), heatmaps, and the experiments (registered as `attnlrp/<name>`).
"""

from jaxml.papers.attnlrp import experiments  # noqa: F401  (registers the experiments)
from jaxml.papers.attnlrp.baselines import (atman, attention_rollout, integrated_gradients, kernel_shap,
                                            random_relevance, smoothgrad)
from jaxml.papers.attnlrp.explain import Explanation, GenerationExplanation, explain_generation, gradients, relevance
from jaxml.papers.attnlrp.rules import attnlrp_ops, cp_lrp_ops, gamma_linear, identity_rule, divide_gradient

__all__ = ["Explanation", "GenerationExplanation", "atman", "attention_rollout", "attnlrp_ops", "cp_lrp_ops",
           "divide_gradient", "explain_generation", "gamma_linear", "gradients", "identity_rule", "integrated_gradients",
           "kernel_shap", "random_relevance", "relevance", "smoothgrad"]
