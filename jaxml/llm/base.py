"""The `LLM` protocol: what papers need from a language model, whichever backend serves it.

Backends: `jaxml.llm.local.LocalLLM` (the Flax model in this process) and
`jaxml.llm.openai_http.OpenAICompatibleLLM` (a model served elsewhere behind an OpenAI-compatible
HTTP API). Papers take an `LLM` and do not care which.
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import numpy as np


FILTER_ORDERS = ("after_processor", "before_processor")


@dataclasses.dataclass(frozen=True)
class SamplingOptions:
    """How to pick the next token.

    Attributes:
      temperature: 0 means greedy (argmax); > 0 samples from softmax(logits / temperature).
      top_k: keep the k most likely tokens (0: all). Only when sampling (temperature > 0).
      top_p: keep the smallest set of tokens whose probability under softmax(logits /
        temperature) reaches top_p (1.0: all). Only when sampling.
      filter_order: where top-k/top-p cut relative to a logits processor (only matters with one,
        i.e. in `jaxml.llm.generate` and `LocalLLM`; an HTTP backend has no processor).
        'after_processor' (the default): the processor sees the full logits and the filters cut
        its output, as `transformers` does with a watermark processor before its warpers.
        'before_processor': the filters cut the model's logits first and the processor reweights
        the kept tokens only. A distribution-preserving processor (DiPmark) then samples, averaged
        over keys, exactly from the filtered distribution; after it, the cut of the reweighted
        logits generally changes that average.
    """

    temperature: float = 0.0
    top_k: int = 0
    top_p: float = 1.0
    filter_order: str = "after_processor"

    def __post_init__(self):
        if not self.temperature >= 0:
            raise ValueError(f"temperature={self.temperature} must be >= 0 (0 = greedy)")
        if not isinstance(self.top_k, int) or self.top_k < 0:
            raise ValueError(f"top_k={self.top_k} must be an int >= 0 (0 = no top-k)")
        if not 0 < self.top_p <= 1:
            raise ValueError(f"top_p={self.top_p} must be in (0, 1]")
        if self.filter_order not in FILTER_ORDERS:
            raise ValueError(f"filter_order={self.filter_order!r}; accepted: {FILTER_ORDERS}")

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
          **sampling: `temperature`, `top_k`, `top_p`, `filter_order` (see SamplingOptions); others
            are an error.
        """
        ...

    def logprobs(self, prompts: Sequence[str], continuations: Sequence[str]) -> list[np.ndarray]:
        """log p(continuation tokens | prompt), one float array [n_continuation_tokens] per pair."""
        ...


def protocol_mismatches(backend) -> list[str]:
    """How `backend` (a class or an instance) departs from the `LLM` protocol's methods, [] if not.

    `isinstance(x, LLM)` only checks that the method names exist. This compares each method's
    signature with the protocol's: every protocol parameter must be accepted under the same name
    and kind (positional / keyword-only / `**sampling`) with the same default, and any extra
    parameter must be optional (a default, or `*args`/`**kwargs`), so that every call written
    against the protocol works on the backend.
    """
    problems = []
    for name in ("generate_text", "logprobs"):
        method = getattr(backend, name, None)
        if not callable(method):
            problems.append(f"{name}: missing")
            continue
        want = inspect.signature(getattr(LLM, name)).parameters
        have = dict(inspect.signature(method).parameters)
        have.pop("self", None)
        for pname, param in want.items():
            if pname == "self":
                continue
            if param.kind is inspect.Parameter.VAR_KEYWORD:
                if not any(p.kind is inspect.Parameter.VAR_KEYWORD for p in have.values()):
                    problems.append(f"{name}: takes no **{pname} (the sampling options)")
                continue
            got = have.pop(pname, None)
            if got is None:
                problems.append(f"{name}: no parameter {pname!r}")
            elif got.kind is not param.kind:
                problems.append(f"{name}: {pname!r} is {got.kind.description}, the protocol has "
                                f"{param.kind.description}")
            elif got.default != param.default:
                problems.append(f"{name}: {pname!r} defaults to {got.default!r}, the protocol to "
                                f"{param.default!r}")
        for pname, got in have.items():
            optional = got.default is not inspect.Parameter.empty or got.kind in (
                inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)
            if not optional:
                problems.append(f"{name}: extra required parameter {pname!r}")
    return problems
