"""Judges: what turns benchmark items (+ images) into the judge's raw replies.

A judge returns one reply text per item; the harness parses them with `judgements.parse_for`, so an
unparsable or empty reply is a failure counted there, not here.
"""

from __future__ import annotations

from typing import Mapping, Optional, Protocol, Sequence, runtime_checkable

import numpy as np

from jaxml.llm.base import SamplingOptions
from jaxml.llm.openai_http import LLMHTTPError, OpenAICompatibleLLM, encode_png
from jaxml.papers.mllmjudge import formats, judgements

# =====================================================================================================
# The judge protocol and the endpoint judge (a model behind an OpenAI-compatible server).
# =====================================================================================================


@runtime_checkable
class Judge(Protocol):
    """A multimodal judge of MLLM-as-a-Judge items."""

    name: str

    def judge(self, items: Sequence[formats.Item], images: Mapping[str, np.ndarray], *, setting: str = "No COT",
              captions: Mapping[str, str] | None = None, seed: int = 0) -> list[str]:
        """Raw reply text per item (the harness parses them with judgements.parse_for).

        Args:
          items: score, pair or batch items (mixed kinds are fine).
          images: `item.image_path` -> the RGB uint8 image [H, W, 3]; only read for settings that
            show the image (`judgements.uses_image(setting)`).
          setting: one of `judgements.SETTINGS`.
          captions: `item.image_path` -> the vision expert's caption; required for "Vision Expert",
            ignored otherwise.
          seed: sampling seed.
        """
        ...


class EndpointJudge:
    """A judge served behind an OpenAI-compatible chat API (vLLM, llama.cpp server, OpenAI, ...).

    Each item is one `/chat/completions` request: the prompt of `judgements.build_prompt(item,
    setting, caption)` as the text part, followed by the item's image (PNG) when the setting shows
    it ("No Figure" and "Vision Expert" send text only; "Vision Expert" puts the caption in the
    prompt). Sampling defaults are the release README's (temperature 0.4, top_p 0.2).

    A request that still fails after the client's retries (an HTTP error, no connection, or an
    answer without a reply text) gives the reply "" (a failure for the harness) and its message is
    appended to `self.errors` as (item index, message); `errors` is reset at each `judge` call.
    User errors raise before any request: an unknown setting (ValueError), an image or caption
    missing for an item that needs it (KeyError naming the image_path). A malformed image raises
    ValueError naming the item and image_path when that item is reached.

    Args:
      base_url: the API root, e.g. "http://localhost:8000/v1".
      model: the model name the server serves.
      temperature, top_p, max_new_tokens: sampling, sent with every request.
      api_key, timeout, max_retries, backoff_s: passed to `OpenAICompatibleLLM`.
    """

    def __init__(self, base_url: str, model: str, *, temperature: float = 0.4, top_p: float = 0.2,
                 max_new_tokens: int = 512, api_key: Optional[str] = None, timeout: float = 120.0,
                 max_retries: int = 2, backoff_s: float = 0.5):
        SamplingOptions(temperature=temperature, top_p=top_p)  # ValueError for bad values, now.
        if isinstance(max_new_tokens, bool) or not isinstance(max_new_tokens, int) or max_new_tokens < 1:
            raise ValueError(f"max_new_tokens={max_new_tokens!r} must be an int >= 1")
        self.llm = OpenAICompatibleLLM(base_url, model, api_key=api_key, timeout=timeout,
                                       max_retries=max_retries, backoff_s=backoff_s)
        self.name = f"endpoint:{model}"
        self.temperature = temperature
        self.top_p = top_p
        self.max_new_tokens = max_new_tokens
        self.errors: list[tuple[int, str]] = []

    def __repr__(self) -> str:
        return (f"EndpointJudge({self.llm!r}, temperature={self.temperature}, top_p={self.top_p}, "
                f"max_new_tokens={self.max_new_tokens})")

    def judge(self, items: Sequence[formats.Item], images: Mapping[str, np.ndarray], *, setting: str = "No COT",
              captions: Mapping[str, str] | None = None, seed: int = 0) -> list[str]:
        """Raw reply text per item, in order ("" for a request that failed; see `self.errors`)."""
        items = list(items)
        with_image = judgements.uses_image(setting)  # ValueError for an unknown setting.
        if setting == "Vision Expert" and captions is None:
            raise ValueError("the 'Vision Expert' setting needs captions= (image_path -> the vision "
                             "expert's caption of the image)")
        # Everything the requests need is checked before the first one is sent.
        prompts = []
        for i, item in enumerate(items):
            formats.kind_of(item)  # TypeError for a non-item.
            caption = None
            if setting == "Vision Expert":
                if item.image_path not in captions:
                    raise KeyError(f"no caption for image_path {item.image_path!r} (item {i}); the "
                                   f"'Vision Expert' setting needs one per image")
                caption = captions[item.image_path]
            if with_image and item.image_path not in images:
                raise KeyError(f"no image for image_path {item.image_path!r} (item {i}); the setting "
                               f"{setting!r} shows the judge the image")
            try:
                prompts.append(judgements.build_prompt(item, setting, caption))
            except ValueError as e:  # An empty caption.
                raise ValueError(f"item {i}, image_path {item.image_path!r}: {e}") from None

        self.errors = []
        replies = []
        last_path, last_png = None, None  # Consecutive items often share an image: encode it once.
        for i, (item, prompt) in enumerate(zip(items, prompts)):
            image_parts: list[bytes] = []
            if with_image:
                if item.image_path != last_path:
                    try:
                        last_png = encode_png(images[item.image_path])
                    except ValueError as e:
                        raise ValueError(f"item {i}, image_path {item.image_path!r}: {e}") from None
                    last_path = item.image_path
                image_parts = [last_png]
            try:
                (reply,) = self.llm.chat_with_images([prompt], [image_parts], max_new_tokens=self.max_new_tokens,
                                                     seed=seed, temperature=self.temperature, top_p=self.top_p)
            except LLMHTTPError as e:
                self.errors.append((i, str(e)))
                reply = ""
            replies.append(reply)
        return replies


# =====================================================================================================
# A random judge: the chance level every table is read against.
# =====================================================================================================


class RandomJudge:
    """Uniformly random verdicts in the release's format: a score 1-5, a pair verdict A/B/C, a random
    permutation for a batch. Seeded; never fails to parse."""

    name = "random"

    def judge(self, items: Sequence[formats.Item], images: Mapping[str, np.ndarray] | None = None, *,
              setting: str = judgements.DEFAULT_SETTING, captions: Mapping[str, str] | None = None,
              seed: int = 0) -> list[str]:
        rng = np.random.default_rng(seed)
        out = []
        for it in items:
            kind = formats.kind_of(it)
            if kind == "score":
                out.append(f'{{"Judgement": "[[{int(rng.integers(1, 6))}]]"}}')
            elif kind == "pair":
                out.append(f'{{"Judgement": "[[{"ABC"[int(rng.integers(3))]}]]"}}')
            else:
                letters = formats.ranking_letters(len(it.answers))
                order = "".join(letters[i] for i in rng.permutation(len(letters)))
                out.append('{"Judgement": "' + ", ".join(f"[[{c}]]" for c in order) + '"}')
        return out
