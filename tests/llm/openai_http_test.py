"""OpenAICompatibleLLM against a local stub of an OpenAI-compatible server (no network)."""

import base64
import http.server
import json
import socket
import threading

import cv2
import numpy as np
import pytest

from jaxml.llm.base import protocol_mismatches
from jaxml.llm.openai_http import LLMHTTPError, OpenAICompatibleLLM, image_data_url

COMPLETION_TEXT = "alpha beta STOP gamma END delta"


def _echo_logprobs(text):
    """Tokens: the text split before each space; token i has log-prob -0.1 * (i + 1), the first None."""
    tokens, offsets, start = [], [], 0
    for i, word in enumerate(text.split(" ")):
        token = word if i == 0 else " " + word
        tokens.append(token)
        offsets.append(start)
        start += len(token)
    assert "".join(tokens) == text
    token_logprobs = [None] + [-0.1 * (i + 1) for i in range(1, len(tokens))]
    return {"tokens": tokens, "text_offset": offsets, "token_logprobs": token_logprobs,
            "top_logprobs": None}


class _Stub(http.server.ThreadingHTTPServer):
    """Records every request; answers from `script` (status, body) first, then deterministically."""

    def __init__(self):
        super().__init__(("127.0.0.1", 0), _Handler)
        self.requests = []
        self.script = []
        self.lock = threading.Lock()

    @property
    def url(self):
        return f"http://127.0.0.1:{self.server_address[1]}/v1"


class _Handler(http.server.BaseHTTPRequestHandler):

    def log_message(self, *args):  # Keep pytest output clean.
        pass

    def do_POST(self):
        raw = self.rfile.read(int(self.headers["Content-Length"]))
        body = json.loads(raw)
        with self.server.lock:
            self.server.requests.append({"path": self.path, "headers": dict(self.headers), "body": body})
            scripted = self.server.script.pop(0) if self.server.script else None
        if scripted is not None:
            status, answer = scripted
        elif self.path == "/v1/chat/completions":
            content = body["messages"][0]["content"][::-1]
            status, answer = 200, {"choices": [{"index": 0, "message": {"role": "assistant",
                                                                         "content": content}}]}
        elif self.path == "/v1/completions" and body.get("echo"):
            status, answer = 200, {"choices": [{"index": 0, "text": body["prompt"],
                                                "logprobs": _echo_logprobs(body["prompt"])}]}
        elif self.path == "/v1/completions":
            status, answer = 200, {"choices": [{"index": 0, "text": COMPLETION_TEXT}]}
        else:
            status, answer = 404, {"error": {"message": f"no route {self.path}"}}
        data = answer if isinstance(answer, bytes) else json.dumps(answer).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


@pytest.fixture
def server():
    stub = _Stub()
    thread = threading.Thread(target=stub.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True)
    thread.start()
    yield stub
    stub.shutdown()
    stub.server_close()
    thread.join()


@pytest.fixture
def client(server, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    return OpenAICompatibleLLM(server.url, "stub-model", timeout=5.0, max_retries=2, backoff_s=0.001)


def test_signatures_follow_the_llm_protocol(client):
    assert protocol_mismatches(client) == []


def test_chat_sends_one_user_message_per_prompt_in_order(server, client):
    out = client.generate_text(["hello", "abc def"], max_new_tokens=7, chat=True, seed=3,
                               temperature=0.5, top_p=0.9)
    assert out == ["olleh", "fed cba"]
    assert [r["path"] for r in server.requests] == ["/v1/chat/completions"] * 2
    bodies = [r["body"] for r in server.requests]
    assert [b["messages"] for b in bodies] == [[{"role": "user", "content": "hello"}],
                                               [{"role": "user", "content": "abc def"}]]
    for b in bodies:
        assert b["model"] == "stub-model"
        assert b["max_tokens"] == 7
        assert b["temperature"] == 0.5
        assert b["top_p"] == 0.9
        assert b["seed"] == 3
        assert "top_k" not in b  # top_k=0 (the default) is not sent.
        assert "stop" not in b
        assert "prompt" not in b


def test_completions_map_fields_and_cut_at_the_earliest_stop(server, client):
    out = client.generate_text(["Once"], max_new_tokens=5, stop=["END", "STOP"], top_k=40)
    assert out == ["alpha beta "]
    (request,) = server.requests
    assert request["path"] == "/v1/completions"
    body = request["body"]
    assert body["prompt"] == "Once"
    assert body["stop"] == ["END", "STOP"]
    assert body["top_k"] == 40
    assert body["max_tokens"] == 5
    assert body["temperature"] == 0.0  # Greedy by default, sent explicitly.
    assert body["top_p"] == 1.0
    assert body["seed"] == 0
    assert "messages" not in body


def test_completions_without_stop_return_the_text_unchanged(client):
    assert client.generate_text(["a", "b"], max_new_tokens=4) == [COMPLETION_TEXT] * 2


def test_authorization_header_only_with_a_key(server, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    OpenAICompatibleLLM(server.url, "m").generate_text(["x"], max_new_tokens=1)
    OpenAICompatibleLLM(server.url, "m", api_key="sk-test").generate_text(["x"], max_new_tokens=1)
    monkeypatch.setenv("OPENAI_API_KEY", "env-key")
    keyed = OpenAICompatibleLLM(server.url, "m")
    keyed.generate_text(["x"], max_new_tokens=1)
    auth = [r["headers"].get("Authorization") for r in server.requests]
    assert auth == [None, "Bearer sk-test", "Bearer env-key"]
    assert "env-key" not in repr(keyed)


def test_logprobs_selects_the_continuation_tokens_by_offset(server, client):
    # "The cat sat on" -> tokens The(0) " cat"(3) " sat"(7) " on"(11), log-probs None, -.2, -.3, -.4.
    out = client.logprobs(["The cat", "The", "The cat sat"], [" sat on", " cat", " on"])
    assert [o.dtype for o in out] == [np.float64] * 3
    np.testing.assert_array_equal(out[0], [-0.1 * 3, -0.1 * 4])
    np.testing.assert_array_equal(out[1], [-0.1 * 2])
    np.testing.assert_array_equal(out[2], [-0.1 * 4])
    bodies = [r["body"] for r in server.requests]
    assert [b["prompt"] for b in bodies] == ["The cat sat on", "The cat", "The cat sat on"]
    for b in bodies:
        assert (b["max_tokens"], b["echo"], b["logprobs"]) == (0, True, 0)


def test_logprobs_includes_a_token_that_straddles_the_boundary(client):
    # Prompt "The ca" ends inside " cat" (characters 3..7), which is included, then " sat".
    (out,) = client.logprobs(["The ca"], ["t sat"])
    np.testing.assert_array_equal(out, [-0.1 * 2, -0.1 * 3])


def test_logprobs_of_an_empty_continuation_is_empty_without_a_request(server, client):
    (out,) = client.logprobs(["The cat"], [""])
    assert out.shape == (0,) and out.dtype == np.float64
    assert server.requests == []


def test_logprobs_unscored_continuation_token_is_an_error(client):
    # An empty prompt: the first continuation token has log-prob None.
    with pytest.raises(LLMHTTPError, match=r"token_logprobs\[0\]=None"):
        client.logprobs([""], ["The cat"])


def test_logprobs_needs_one_continuation_per_prompt(client):
    with pytest.raises(ValueError, match="2 prompts and 1 continuations"):
        client.logprobs(["a", "b"], ["c"])


@pytest.mark.parametrize("kwargs, error, match", [
    ({"temprature": 0.5}, ValueError, r"unknown sampling option\(s\) \['temprature'\]"),
    ({"top_p": 0.0}, ValueError, "top_p=0.0 must be in"),
    ({"max_new_tokens": 0}, ValueError, "max_new_tokens=0 must be an int >= 1"),
    ({"stop": "END"}, TypeError, "not one str"),
    ({"stop": [""]}, ValueError, "non-empty str"),
])
def test_bad_generate_arguments_raise_before_any_request(server, client, kwargs, error, match):
    kwargs = {"max_new_tokens": 4, **kwargs}
    with pytest.raises(error, match=match):
        client.generate_text(["x"], **kwargs)
    assert server.requests == []


def test_a_bare_string_of_prompts_is_an_error(client):
    with pytest.raises(TypeError, match="prompts must be a list of strings"):
        client.generate_text("hello", max_new_tokens=1)


@pytest.mark.parametrize("base_url", ["localhost:8000/v1", "ftp://host/v1", "http://", "", "/v1"])
def test_bad_base_url(base_url):
    with pytest.raises(ValueError, match="must be an http:// or https:// URL"):
        OpenAICompatibleLLM(base_url, "m")


def test_base_url_trailing_slash_is_dropped(server):
    client = OpenAICompatibleLLM(server.url + "/", "m", backoff_s=0.0)
    assert client.generate_text(["ab"], max_new_tokens=1, chat=True) == ["ba"]
    assert server.requests[0]["path"] == "/v1/chat/completions"


@pytest.mark.parametrize("status", [500, 429, 503])
def test_a_retryable_error_then_success(server, client, status):
    server.script = [(status, {"error": {"message": "busy"}})]
    assert client.generate_text(["abc"], max_new_tokens=2, chat=True) == ["cba"]
    assert len(server.requests) == 2
    assert server.requests[0]["body"] == server.requests[1]["body"]


def test_a_persistent_500_gives_up_after_max_retries(server, client):
    server.script = [(500, {"error": {"message": "model crashed"}})] * 5
    with pytest.raises(LLMHTTPError) as info:
        client.generate_text(["abc"], max_new_tokens=2)
    assert len(server.requests) == 3  # 1 + max_retries.
    assert info.value.status == 500
    assert info.value.url == server.url + "/completions"
    assert info.value.server_message == "model crashed"
    assert str(info.value) == f"{server.url}/completions: HTTP 500: model crashed"
    assert isinstance(info.value, RuntimeError)


def test_a_400_is_not_retried_and_names_the_server_message(server, client):
    server.script = [(400, {"error": {"message": "max_tokens must be at least 1, got 0"}})]
    with pytest.raises(LLMHTTPError, match=r"/v1/completions: HTTP 400: max_tokens must be at least 1"):
        client.logprobs(["The"], [" cat"])
    assert len(server.requests) == 1


def test_a_plain_text_error_body_is_reported(server, client):
    server.script = [(404, b"Not Found: no such model")]
    with pytest.raises(LLMHTTPError, match="HTTP 404: Not Found: no such model"):
        client.generate_text(["x"], max_new_tokens=1)


@pytest.mark.parametrize("answer, match", [
    (b"<html>oops</html>", "the answer is not JSON: '<html>oops</html>'"),
    ({"choices": []}, r"the answer has no choices\[0\]"),
    ({"choices": [{"message": {"role": "assistant"}}]}, r"no choices\[0\]\.message\.content"),
    ({"choices": [{"message": {"content": None}}]}, r"choices\[0\]\.message\.content is null, expected a str"),
])
def test_malformed_answers_name_what_is_missing(server, client, answer, match):
    server.script = [(200, answer)]
    with pytest.raises(LLMHTTPError, match=match):
        client.generate_text(["x"], max_new_tokens=1, chat=True)
    assert len(server.requests) == 1  # A malformed 200 is not retried.


def test_malformed_logprobs_answer(server, client):
    server.script = [(200, {"choices": [{"text": "The cat", "logprobs": {"text_offset": [0, 3]}}]})]
    with pytest.raises(LLMHTTPError, match=r"no choices\[0\]\.logprobs\.token_logprobs"):
        client.logprobs(["The"], [" cat"])


def test_connection_errors_are_retried_then_reported():
    with socket.socket() as s:  # A port nothing listens on.
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    client = OpenAICompatibleLLM(f"http://127.0.0.1:{port}/v1", "m", max_retries=1, backoff_s=0.001)
    with pytest.raises(LLMHTTPError, match=rf"127.0.0.1:{port}/v1/completions: no HTTP status: "
                                           r"could not get an answer after 2 attempt\(s\)"):
        client.generate_text(["x"], max_new_tokens=1)


# -------------------------------------------------------------------------------------------------
# chat_with_images: text + images in the OpenAI vision format.

def _chat_reply(text):
    return 200, {"choices": [{"index": 0, "message": {"role": "assistant", "content": text}}]}


def _decode_data_url(url):
    """'data:<mime>;base64,<data>' -> (mime, raw bytes)."""
    head, data = url.split(",", 1)
    assert head.startswith("data:") and head.endswith(";base64")
    return head[len("data:"):-len(";base64")], base64.b64decode(data, validate=True)


def _png_pixels(raw):
    """PNG bytes -> the image as it was sent: RGB [H, W, 3] or grey [H, W], uint8."""
    assert raw.startswith(b"\x89PNG\r\n\x1a\n")
    decoded = cv2.imdecode(np.frombuffer(raw, np.uint8), cv2.IMREAD_UNCHANGED)
    return decoded[..., ::-1] if decoded.ndim == 3 else decoded  # BGR -> RGB.


def test_chat_with_images_sends_text_then_each_image_as_a_lossless_png(server, client):
    rng = np.random.default_rng(0)
    rgb = rng.integers(0, 256, (5, 7, 3), dtype=np.uint8)
    grey = rng.integers(0, 256, (4, 3), dtype=np.uint8)
    strided = rng.integers(0, 256, (6, 8, 3), dtype=np.uint8)[::2, ::2]  # Not contiguous.
    server.script = [_chat_reply("first END tail"), _chat_reply("second"), _chat_reply("third")]
    out = client.chat_with_images(["two images", "no image", "strided"], [[rgb, grey], [], (strided,)],
                                  max_new_tokens=9, stop=["END"], seed=4, temperature=0.4, top_p=0.2)
    assert out == ["first ", "second", "third"]
    assert [r["path"] for r in server.requests] == ["/v1/chat/completions"] * 3
    bodies = [r["body"] for r in server.requests]
    for b in bodies:
        assert b["model"] == "stub-model"
        assert (b["max_tokens"], b["temperature"], b["top_p"], b["seed"], b["stop"]) == (9, 0.4, 0.2, 4, ["END"])
        assert len(b["messages"]) == 1 and b["messages"][0]["role"] == "user"
    content = bodies[0]["messages"][0]["content"]
    assert [part["type"] for part in content] == ["text", "image_url", "image_url"]
    assert content[0] == {"type": "text", "text": "two images"}
    for part, image in zip(content[1:], [rgb, grey]):
        assert set(part) == {"type", "image_url"} and set(part["image_url"]) == {"url"}
        mime, raw = _decode_data_url(part["image_url"]["url"])
        assert mime == "image/png"
        decoded = _png_pixels(raw)
        assert decoded.dtype == np.uint8 and decoded.shape == image.shape
        np.testing.assert_array_equal(decoded, image)
    assert bodies[1]["messages"][0]["content"] == [{"type": "text", "text": "no image"}]
    _, raw = _decode_data_url(bodies[2]["messages"][0]["content"][1]["image_url"]["url"])
    np.testing.assert_array_equal(_png_pixels(raw), strided)


def test_chat_with_images_passes_encoded_bytes_through_with_their_mime_type(server, client):
    image = np.random.default_rng(1).integers(0, 256, (8, 8, 3), dtype=np.uint8)
    png = cv2.imencode(".png", image)[1].tobytes()
    jpeg = cv2.imencode(".jpg", image)[1].tobytes()
    server.script = [_chat_reply("ok")]
    assert client.chat_with_images(["x"], [[png, bytearray(jpeg)]], max_new_tokens=1) == ["ok"]
    parts = server.requests[0]["body"]["messages"][0]["content"][1:]
    assert [_decode_data_url(p["image_url"]["url"]) for p in parts] == [("image/png", png), ("image/jpeg", jpeg)]
    assert image_data_url(jpeg).startswith("data:image/jpeg;base64,/9j/")
    assert image_data_url(png) == "data:image/png;base64," + base64.b64encode(png).decode()


@pytest.mark.parametrize("images, match", [
    ([[], [np.zeros((2, 2, 3), np.float32)]], r"images\[1\]\[0\]: expected a uint8 image, got dtype float32"),
    ([[np.zeros((2, 2, 3), np.uint8), np.zeros((2, 2, 4), np.uint8)], []],
     r"images\[0\]\[1\]: expected an image of shape \[H, W, 3\] \(RGB\) or \[H, W\], got shape \(2, 2, 4\)"),
    ([[], [np.zeros((0, 3), np.uint8)]], r"images\[1\]\[0\]: the image is empty"),
    ([[b"GIF89a\x01\x00"], []], r"images\[0\]\[0\]: bytes that are neither a PNG nor a JPEG file"),
    ([["cat.png"], []], r"images\[0\]\[0\]: expected a uint8 numpy array .* got a str"),
    ([np.zeros((2, 2, 3), np.uint8), []], r"images\[0\] must be a list of the images of prompt 0, got a ndarray"),
    ([[]], r"got 2 prompts and 1 image lists"),
])
def test_bad_images_raise_naming_the_index_before_any_request(server, client, images, match):
    with pytest.raises(ValueError, match=match):
        client.chat_with_images(["a", "b"], images, max_new_tokens=1)
    assert server.requests == []


def test_chat_with_images_checks_sampling_like_generate_text(server, client):
    with pytest.raises(ValueError, match=r"unknown sampling option\(s\) \['temprature'\]"):
        client.chat_with_images(["a"], [[]], max_new_tokens=1, temprature=0.1)
    with pytest.raises(TypeError, match="not one str"):
        client.chat_with_images(["a"], [[]], max_new_tokens=1, stop="END")
    assert server.requests == []
