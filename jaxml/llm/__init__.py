"""Language-model utilities: generation with a KV cache and logits processors,
log-prob scoring and perplexity, and two `LLM` backends (local Flax model; OpenAI-compatible HTTP).

Import what you need from the submodules: `jaxml.llm.generate` (generate, score, perplexity),
`jaxml.llm.local.LocalLLM`, `jaxml.llm.openai_http.OpenAICompatibleLLM`, `jaxml.llm.base`
(LLM protocol, SamplingOptions). Tokenizers live with their models (`jaxml.models.tokenizer`).
"""
