"""The `LLM` protocol: what papers need from a language model, whichever backend serves it.

Backends: `jaxml.llm.local.LocalLLM` (the Flax model in this process) and
`jaxml.llm.openai_http.OpenAICompatibleLLM` (a model served elsewhere behind an OpenAI-compatible
HTTP API). Papers take an `LLM` and do not care which.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import numpy as np


@dataclasses.dataclass(frozen=True)
class SamplingOptions:
    """How to pick the next token.

    Attributes:
      temperature: 0 means greedy (argmax); > 0 samples from softmax(logits / temperature).
      top_k: keep the k most likely tokens (0: all).
      top_p: keep the smallest set of tokens whose probability reaches top_p (1.0: all).
    """

    temperature: float = 0.0
    top_k: int = 0
    top_p: float = 1.0

    def __post_init__(self):
        if not self.temperature >= 0:
            raise ValueError(f"temperature={self.temperature} must be >= 0 (0 = greedy)")
        if not isinstance(self.top_k, int) or self.top_k < 0:
            raise ValueError(f"top_k={self.top_k} must be an int >= 0 (0 = no top-k)")
        if not 0 < self.top_p <= 1:
            raise ValueError(f"top_p={self.top_p} must be in (0, 1]")

    @classmethod
    def from_kwargs(cls, **kwargs) -> "SamplingOptions":
        """Builds options, rejecting unknown names with the accepted ones."""
        fields = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(kwargs) - fields)
        if unknown:
            raise ValueError(f"unknown sampling option(s) {unknown}; accepted: {sorted(fields)}")
        return cls(**kwargs)


def check_texts(name: str, texts: Sequence[str]) -> list[str]:
    """A list of str from a sequence of str; a bare str (a sequence of characters) is an error."""
    if isinstance(texts, str):
        shown = texts if len(texts) <= 40 else texts[:37] + "..."
        raise TypeError(f"{name} must be a list of strings, not one str; pass [{shown!r}]")
    texts = list(texts)
    for i, t in enumerate(texts):
        if not isinstance(t, str):
            raise TypeError(f"{name}[{i}] is a {type(t).__name__}; {name} must all be str")
    return texts


def cut_at_stop(text: str, stop: Sequence[str]) -> str:
    """`text` up to (not including) the earliest stop string it contains."""
    return text[:min((i for i in (text.find(s) for s in stop if s) if i >= 0), default=len(text))]


@runtime_checkable
class LLM(Protocol):
    """A text-in, text-out language model with log-probabilities."""

    def generate_text(self, prompts: Sequence[str], *, max_new_tokens: int, chat: bool = False,
                      stop: Sequence[str] = (), seed: int = 0, **sampling) -> list[str]:
        """Continuations of each prompt (without the prompt).

        Args:
          prompts: the texts to continue; with `chat=True` each is sent as one user message and
            the backend's chat template is applied.
          max_new_tokens: the most tokens to generate per prompt.
          stop: strings that end a continuation (not included in the result).
          seed: sampling seed (ignored when greedy).
          **sampling: `temperature`, `top_k`, `top_p` (see SamplingOptions); others are an error.
        """
        ...

    def logprobs(self, prompts: Sequence[str], continuations: Sequence[str]) -> list[np.ndarray]:
        """log p(continuation tokens | prompt), one float array [n_continuation_tokens] per pair."""
        ...
