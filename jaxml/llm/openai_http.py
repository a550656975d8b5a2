"""`OpenAICompatibleLLM`: the `LLM` protocol for a model served behind an OpenAI-compatible HTTP API.

Works with vLLM (`vllm serve`), the llama.cpp server, OpenAI and other servers that speak the
`/v1/completions` and `/v1/chat/completions` endpoints. Standard library only (`urllib.request`,
`json`); nothing is contacted until a method is called. Beyond the `LLM` protocol,
`chat_with_images` sends text + images to a vision-language model in the OpenAI vision format
(images as `data:` URLs, see `image_data_url`; PNG encoding of arrays imports `cv2` when needed).

    llm = OpenAICompatibleLLM("http://localhost:8000/v1", "HuggingFaceTB/SmolLM2-135M-Instruct")
    llm.generate_text(["Name a colour."], max_new_tokens=8, chat=True)
    llm.logprobs(["The capital of France is"], [" Paris"])
    vlm = OpenAICompatibleLLM("http://localhost:8000/v1", "llava-hf/llava-1.5-7b-hf")
    vlm.chat_with_images(["What is in the picture?"], [[rgb_uint8_array]], max_new_tokens=64)
"""

from __future__ import annotations

import base64
import http.client
import json
import os
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Sequence
from typing import Any

import numpy as np

from jaxml.llm.base import SamplingOptions, check_texts, cut_at_stop

_RETRYABLE_STATUS = frozenset({408, 429, 500, 502, 503, 504})
_MAX_ERROR_CHARS = 500


class LLMHTTPError(RuntimeError):
    """A request to an OpenAI-compatible server failed, or its answer was not what the API promises.

    Attributes:
      url: the endpoint that was called.
      status: the HTTP status code (None for a connection error or a malformed 200 answer).
      server_message: the server's error message, or a description of what was wrong.
    """

    def __init__(self, url: str, status: int | None, server_message: str):
        self.url = url
        self.status = status
        self.server_message = server_message
        where = f"HTTP {status}" if status is not None else "no HTTP status"
        super().__init__(f"{url}: {where}: {server_message}")


class OpenAICompatibleLLM:
    """An `LLM` backed by a model served elsewhere behind an OpenAI-compatible HTTP API.

    One request per prompt, sent in order. Sampling maps onto the API as follows:
    `max_new_tokens` -> `max_tokens`; `temperature` (0 = greedy), `top_p`, `stop` (a list) and
    `seed` are sent as they are. `top_k` is not part of the OpenAI API: it is sent as `top_k` only
    when > 0 (vLLM and the llama.cpp server accept it; OpenAI itself rejects or ignores it).

    Args:
      base_url: the API root, including the version prefix, e.g. `http://localhost:8000/v1`
        (http or https). `/completions` and `/chat/completions` are appended to it.
      model: the model name the server knows (the `model` field of each request).
      api_key: sent as `Authorization: Bearer <api_key>`; defaults to `$OPENAI_API_KEY`. With
        neither (or an empty key) no Authorization header is sent.
      timeout: seconds to wait for each HTTP request.
      max_retries: how many times a request is retried after a 408/429/5xx answer or a
        connection error (0: no retry). Other 4xx answers are not retried.
      backoff_s: the wait before the first retry, doubled for each further one.
    """

    def __init__(self, base_url: str, model: str, *, api_key: str | None = None,
                 timeout: float = 60.0, max_retries: int = 2, backoff_s: float = 0.5):
        if not isinstance(base_url, str):
            raise TypeError(f"base_url must be a str like 'http://localhost:8000/v1', "
                            f"got {type(base_url).__name__}")
        parts = urllib.parse.urlsplit(base_url.strip())
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise ValueError(f"base_url={base_url!r} must be an http:// or https:// URL with a host, "
                             f"like 'http://localhost:8000/v1'")
        if parts.query or parts.fragment:
            raise ValueError(f"base_url={base_url!r} must not have a query or fragment; give the API "
                             f"root, like 'http://localhost:8000/v1'")
        if not isinstance(model, str) or not model:
            raise ValueError(f"model={model!r} must be a non-empty str (the model name the server "
                             f"serves)")
        if api_key is None:
            api_key = os.environ.get("OPENAI_API_KEY")
        if api_key is not None and not isinstance(api_key, str):
            raise TypeError(f"api_key must be a str or None, got {type(api_key).__name__}")
        if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not timeout > 0:
            raise ValueError(f"timeout={timeout!r} must be a number of seconds > 0")
        if isinstance(max_retries, bool) or not isinstance(max_retries, int) or max_retries < 0:
            raise ValueError(f"max_retries={max_retries!r} must be an int >= 0")
        if isinstance(backoff_s, bool) or not isinstance(backoff_s, (int, float)) or not backoff_s >= 0:
            raise ValueError(f"backoff_s={backoff_s!r} must be a number of seconds >= 0")
        self.base_url = base_url.strip().rstrip("/")
        self.model = model
        self._api_key = api_key or None
        self.timeout = float(timeout)
        self.max_retries = max_retries
        self.backoff_s = float(backoff_s)

    def __repr__(self) -> str:  # Never shows the key.
        return (f"{type(self).__name__}(base_url={self.base_url!r}, model={self.model!r}, "
                f"api_key={'<set>' if self._api_key else None}, timeout={self.timeout}, "
                f"max_retries={self.max_retries})")

    # ---------------------------------------------------------------------------------------------
    # The LLM protocol.

    def generate_text(self, prompts: Sequence[str], *, max_new_tokens: int, chat: bool = False,
                      stop: Sequence[str] = (), seed: int = 0, **sampling) -> list[str]:
        """Continuations of each prompt (without the prompt), one request per prompt, in order.

        Args:
          prompts: the texts to continue. `chat=False` sends each as `prompt` to `/completions`;
            `chat=True` sends each as one user message to `/chat/completions` (the server applies
            the model's chat template).
          max_new_tokens: the most tokens to generate per prompt (`max_tokens`), >= 1.
          stop: strings that end a continuation, sent as the `stop` list. The text is also cut at
            the first stop string it still contains, since some servers return it.
          seed: sampling seed (`seed`); servers ignore it when greedy.
          **sampling: `temperature`, `top_k`, `top_p` (see SamplingOptions); others raise
            ValueError. `top_k` is sent only when > 0 (not an OpenAI field; vLLM and llama.cpp
            accept it).

        Returns:
          One string per prompt.
        """
        prompts = check_texts("prompts", prompts)
        fields, stop = self._generation_fields(max_new_tokens, stop, seed, sampling)
        texts = []
        for prompt in prompts:
            if chat:
                texts.append(self._chat(prompt, fields, stop))
            else:
                url = f"{self.base_url}/completions"
                answer = self._post(url, {**fields, "prompt": prompt})
                texts.append(cut_at_stop(_field(answer, url, ("choices", 0, "text"), str), stop))
        return texts

    def logprobs(self, prompts: Sequence[str], continuations: Sequence[str]) -> list[np.ndarray]:
        """log p(continuation tokens | prompt), one float64 array [n_continuation_tokens] per pair.

        Uses the legacy `/completions` endpoint with `prompt = prompt + continuation`,
        `max_tokens=0`, `echo=True`, `logprobs=0` (the server scores the echoed prompt and
        generates nothing), and keeps, from `choices[0].logprobs`, the `token_logprobs` of the
        tokens whose `text_offset` (a character offset into the echoed text) is >= len(prompt).

        Assumption: the server's tokenizer puts a token boundary at the prompt/continuation
        boundary. When a token straddles it (starts inside the prompt, ends inside the
        continuation, e.g. prompt 'The ca' + continuation 't'), that token is included, so its
        log-prob also covers the prompt characters it spans. End prompts at a word boundary and
        start continuations with the space (' Paris') to avoid this.

        An empty continuation gives an empty array without a request. A continuation token the
        server gives no log-prob for (the first token of the text when the prompt is empty and the
        server adds no BOS token) raises LLMHTTPError.
        """
        prompts = check_texts("prompts", prompts)
        continuations = check_texts("continuations", continuations)
        if len(prompts) != len(continuations):
            raise ValueError(f"got {len(prompts)} prompts and {len(continuations)} continuations; "
                             f"logprobs needs one continuation per prompt")
        url = f"{self.base_url}/completions"
        scores = []
        for prompt, continuation in zip(prompts, continuations):
            if not continuation:
                scores.append(np.zeros((0,), np.float64))
                continue
            text = prompt + continuation
            answer = self._post(url, {"model": self.model, "prompt": text, "max_tokens": 0,
                                      "echo": True, "logprobs": 0, "temperature": 0.0})
            offsets = _field(answer, url, ("choices", 0, "logprobs", "text_offset"), list)
            token_logprobs = _field(answer, url, ("choices", 0, "logprobs", "token_logprobs"), list)
            if len(offsets) != len(token_logprobs):
                raise LLMHTTPError(url, None, f"choices[0].logprobs has {len(offsets)} text_offset "
                                              f"but {len(token_logprobs)} token_logprobs entries")
            scores.append(_continuation_logprobs(url, offsets, token_logprobs, len(prompt), len(text)))
        return scores

    # ---------------------------------------------------------------------------------------------
    # Beyond the LLM protocol: images.

    def chat_with_images(self, prompts: Sequence[str],
                         images: Sequence[Sequence[np.ndarray | bytes]], *, max_new_tokens: int,
                         stop: Sequence[str] = (), seed: int = 0, **sampling) -> list[str]:
        """Replies of a vision-language model to text + images, one `/chat/completions` request per prompt.

        Each request has one user message whose `content` is a list: `{"type": "text", "text":
        prompt}` followed by one `{"type": "image_url", "image_url": {"url": <data URL>}}` per image
        of that prompt, in order (the OpenAI vision format, which vLLM and the llama.cpp server
        accept for multimodal models). A prompt with no images sends the text part alone, still as
        a list. Every image is checked and encoded before the first request.

        Args:
          prompts: the user messages.
          images: one sequence of images per prompt (`images[i]` goes with `prompts[i]`). An image
            is a uint8 numpy array [H, W, 3] (RGB) or [H, W] (grey), sent PNG-encoded (lossless),
            or `bytes` of an already-encoded PNG or JPEG file, sent as they are with the mime type
            of their magic number.
          max_new_tokens, stop, seed, **sampling: as for `generate_text`.

        Returns:
          One reply per prompt, cut at the first stop string it contains.

        Raises:
          ValueError: a bad image, naming it as `images[i][j]`; `len(images) != len(prompts)`;
            bad sampling arguments as for `generate_text` (those raise TypeError or ValueError).
            All before any request.
          LLMHTTPError: a request that failed after the retries, or a malformed answer.
        """
        prompts = check_texts("prompts", prompts)
        fields, stop = self._generation_fields(max_new_tokens, stop, seed, sampling)
        if isinstance(images, (np.ndarray, bytes, bytearray, str)):
            raise ValueError(f"images must be a sequence with one sequence of images per prompt, got a "
                             f"single {type(images).__name__}")
        images = list(images)
        if len(images) != len(prompts):
            raise ValueError(f"got {len(prompts)} prompts and {len(images)} image lists; "
                             f"chat_with_images needs one (possibly empty) list of images per prompt")
        contents = []
        for i, (prompt, per_prompt) in enumerate(zip(prompts, images)):
            if isinstance(per_prompt, (np.ndarray, bytes, bytearray, str)) or not isinstance(per_prompt, Sequence):
                raise ValueError(f"images[{i}] must be a list of the images of prompt {i}, got a "
                                 f"{type(per_prompt).__name__}; wrap a single image in a list")
            content: list[dict[str, Any]] = [{"type": "text", "text": prompt}]
            for j, image in enumerate(per_prompt):
                try:
                    url = image_data_url(image)
                except ValueError as e:
                    raise ValueError(f"images[{i}][{j}]: {e}") from None
                content.append({"type": "image_url", "image_url": {"url": url}})
            contents.append(content)
        return [self._chat(content, fields, stop) for content in contents]

    # ---------------------------------------------------------------------------------------------
    # HTTP.

    def _generation_fields(self, max_new_tokens: int, stop: Sequence[str], seed: int,
                           sampling: dict) -> tuple[dict[str, Any], list[str]]:
        """The checked request fields every generation request shares, and the stop strings as a list."""
        if isinstance(max_new_tokens, bool) or not isinstance(max_new_tokens, int) or max_new_tokens < 1:
            raise ValueError(f"max_new_tokens={max_new_tokens!r} must be an int >= 1")
        if isinstance(stop, str):
            raise TypeError(f"stop={stop!r} must be a sequence of strings, not one str; "
                            f"pass [{stop!r}]")
        stop = list(stop)
        for s in stop:
            if not isinstance(s, str) or not s:
                raise ValueError(f"stop={stop!r}: every stop string must be a non-empty str")
        if isinstance(seed, bool) or not isinstance(seed, int):
            raise TypeError(f"seed={seed!r} must be an int")
        options = SamplingOptions.from_kwargs(**sampling)
        fields: dict[str, Any] = {
            "model": self.model,
            "max_tokens": max_new_tokens,
            "temperature": float(options.temperature),
            "top_p": float(options.top_p),
            "seed": seed,
        }
        if stop:
            fields["stop"] = stop
        if options.top_k > 0:
            fields["top_k"] = options.top_k
        return fields, stop

    def _chat(self, content: str | list, fields: dict[str, Any], stop: list[str]) -> str:
        """One user message (`content`: a str, or a list of parts) -> the reply, cut at `stop`."""
        url = f"{self.base_url}/chat/completions"
        answer = self._post(url, {**fields, "messages": [{"role": "user", "content": content}]})
        return cut_at_stop(_field(answer, url, ("choices", 0, "message", "content"), str), stop)

    def _post(self, url: str, body: dict) -> dict:
        """POSTs `body` as JSON; retries 408/429/5xx and connection errors; returns the JSON object."""
        data = json.dumps(body).encode("utf-8")
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if self._api_key:
            headers["Authorization"] = f"Bearer {self._api_key}"
        for attempt in range(self.max_retries + 1):
            last = attempt == self.max_retries
            request = urllib.request.Request(url, data=data, headers=headers, method="POST")
            try:
                with urllib.request.urlopen(request, timeout=self.timeout) as response:
                    raw = response.read()
                break
            except urllib.error.HTTPError as e:
                message = _server_message(e)
                if e.code not in _RETRYABLE_STATUS or last:
                    raise LLMHTTPError(url, e.code, message) from None
            except (urllib.error.URLError, http.client.HTTPException, ConnectionError,
                    TimeoutError) as e:
                if last:
                    reason = getattr(e, "reason", e)
                    raise LLMHTTPError(url, None, f"could not get an answer after "
                                                  f"{self.max_retries + 1} attempt(s): "
                                                  f"{type(reason).__name__}: {reason}") from e
            time.sleep(self.backoff_s * 2 ** attempt)
        try:
            answer = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError):
            raise LLMHTTPError(url, 200, f"the answer is not JSON: {_clip(raw)!r}") from None
        if not isinstance(answer, dict):
            raise LLMHTTPError(url, 200, f"the answer is JSON but not an object: {_clip(raw)!r}")
        return answer



_PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
_JPEG_MAGIC = b"\xff\xd8\xff"


def encode_png(image: np.ndarray) -> bytes:
    """A uint8 image [H, W, 3] (RGB) or [H, W] (grey) as the bytes of a PNG file (lossless)."""
    if not isinstance(image, np.ndarray):
        raise ValueError(f"expected a uint8 numpy array [H, W, 3] (RGB) or [H, W], got a "
                         f"{type(image).__name__}")
    if image.dtype != np.uint8:
        raise ValueError(f"expected a uint8 image, got dtype {image.dtype} (convert with "
                         f"np.clip(x, 0, 255).astype(np.uint8) or (x * 255).round() for [0, 1] floats)")
    if not (image.ndim == 2 or (image.ndim == 3 and image.shape[2] == 3)):
        raise ValueError(f"expected an image of shape [H, W, 3] (RGB) or [H, W], got shape "
                         f"{image.shape}")
    if image.shape[0] == 0 or image.shape[1] == 0:
        raise ValueError(f"the image is empty (shape {image.shape})")
    import cv2  # Imported here: only images need it (opencv-python-headless).

    pixels = np.ascontiguousarray(image[..., ::-1] if image.ndim == 3 else image)  # RGB -> BGR.
    ok, encoded = cv2.imencode(".png", pixels)
    if not ok:
        raise ValueError(f"cv2.imencode could not PNG-encode the image of shape {image.shape}")
    return encoded.tobytes()


def image_data_url(image: np.ndarray | bytes) -> str:
    """A `data:` URL for an image, as the OpenAI vision API takes it in an `image_url` part.

    `image`: a uint8 numpy array [H, W, 3] (RGB) or [H, W] (grey), PNG-encoded here
    (`data:image/png;base64,...`), or the bytes of an encoded PNG or JPEG file, kept as they are
    with the mime type their magic number says (`image/png` or `image/jpeg`). Anything else,
    including bytes of another format, raises ValueError.
    """
    if isinstance(image, (bytes, bytearray)):
        data = bytes(image)
        if data.startswith(_PNG_MAGIC):
            mime = "image/png"
        elif data.startswith(_JPEG_MAGIC):
            mime = "image/jpeg"
        else:
            raise ValueError(f"bytes that are neither a PNG nor a JPEG file (they start with "
                             f"{data[:8]!r}); pass an encoded PNG/JPEG or a uint8 array")
    else:
        data, mime = encode_png(image), "image/png"
    return f"data:{mime};base64,{base64.b64encode(data).decode('ascii')}"


def _field(answer: Any, url: str, path: tuple, kind: type) -> Any:
    """answer[path[0]][path[1]]...; LLMHTTPError naming the first missing or mistyped step."""
    value = answer
    where = ""
    for key in path:
        where += f"[{key}]" if isinstance(key, int) else (f".{key}" if where else key)
        try:
            value = value[key]
        except (KeyError, IndexError, TypeError):
            raise LLMHTTPError(url, 200, f"the answer has no {where}: {_clip(json.dumps(answer))}") from None
    if not isinstance(value, kind):
        raise LLMHTTPError(url, 200, f"{where} is {_clip(json.dumps(value))}, expected a "
                                     f"{kind.__name__}")
    return value


def _continuation_logprobs(url: str, offsets: list, token_logprobs: list, prompt_chars: int,
                           text_chars: int) -> np.ndarray:
    """The log-probs of the tokens from the one containing character `prompt_chars` onwards."""
    for i, o in enumerate(offsets):
        if isinstance(o, bool) or not isinstance(o, int):
            raise LLMHTTPError(url, 200, f"choices[0].logprobs.text_offset[{i}]={o!r} is not an int")
    # Token i spans [offsets[i], ends[i]); the last echoed token ends at the end of the text.
    ends = offsets[1:] + [text_chars]
    keep = [i for i, (start, end) in enumerate(zip(offsets, ends))
            if start < text_chars and (start >= prompt_chars or end > prompt_chars)]
    if not keep:
        raise LLMHTTPError(url, 200, f"no token starts at or after character {prompt_chars} (the "
                                     f"continuation) in choices[0].logprobs.text_offset={offsets}")
    values = []
    for i in keep:
        lp = token_logprobs[i]
        if lp is None and ends[i] == offsets[i]:
            continue  # A zero-width special token (BOS) that the server does not score.
        if isinstance(lp, bool) or not isinstance(lp, (int, float)):
            raise LLMHTTPError(url, 200, f"choices[0].logprobs.token_logprobs[{i}]={lp!r} is not a "
                                         f"number (token at character {offsets[i]} of the "
                                         f"continuation was not scored)")
        values.append(lp)
    return np.asarray(values, np.float64)


def _server_message(error: urllib.error.HTTPError) -> str:
    """The server's error message: `error.message` / `error` / `message` of a JSON body, else the text."""
    try:
        raw = error.read()
    except Exception:  # The body is a courtesy; the status is what matters.
        raw = b""
    try:
        body = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError):
        body = None
    if isinstance(body, dict):
        err = body.get("error")
        if isinstance(err, dict) and isinstance(err.get("message"), str):
            return _clip(err["message"])
        if isinstance(err, str):
            return _clip(err)
        if isinstance(body.get("message"), str):
            return _clip(body["message"])
    text = raw.decode("utf-8", errors="replace").strip()
    return _clip(text) if text else (error.reason or "no error message")


def _clip(value: Any) -> str:
    text = value.decode("utf-8", errors="replace") if isinstance(value, bytes) else str(value)
    return text if len(text) <= _MAX_ERROR_CHARS else text[:_MAX_ERROR_CHARS] + "..."
