"""`make_llm`: an `LLM` backend from a short spec, the one switch papers expose as a flag or config key."""

from __future__ import annotations


def make_llm(spec: str, *, model: str = "", batch_size: int = 8, **local_options):
    """'smollm2' (the local SmolLM2-135M-Instruct; `local_options` go to `LocalLLM`, e.g. `prompt_bucket`,
    `row_multiple`), or an OpenAI-compatible base URL ('http://host:8000/v1') with `model` the served
    model's name."""
    if spec == "smollm2":
        from jaxml.llm.local import LocalLLM
        return LocalLLM.smollm2(batch_size=batch_size, **local_options)
    if spec.startswith(("http://", "https://")):
        from jaxml.llm.openai_http import OpenAICompatibleLLM
        if not model:
            raise ValueError("an HTTP backend needs model=<the served model's name>")
        return OpenAICompatibleLLM(spec, model)
    raise ValueError(f"llm={spec!r}: accepted 'smollm2' or an http(s):// URL of an OpenAI-compatible server")
