"""EndpointJudge against a stub OpenAI-compatible server on 127.0.0.1 (no network): the requests it
sends per setting (prompt, image as a lossless PNG data URL, sampling), the replies in order and
parsed, retries, failures kept as "" with their message, and the user errors raised before any request."""

import base64
import http.server
import json
import threading

import cv2
import numpy as np
import pytest

from jaxml.papers.mllmjudge import formats, judgements
from jaxml.papers.mllmjudge.judges import EndpointJudge, Judge


class _Stub(http.server.ThreadingHTTPServer):
    """Records each request body; answers from `script` ((status, reply text or error body)) in order,
    then with `default`."""

    def __init__(self):
        super().__init__(("127.0.0.1", 0), _Handler)
        self.bodies = []
        self.script = []
        self.default = (200, "no verdict")
        self.lock = threading.Lock()

    @property
    def url(self):
        return f"http://127.0.0.1:{self.server_address[1]}/v1"


class _Handler(http.server.BaseHTTPRequestHandler):

    def log_message(self, *args):
        pass

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        with self.server.lock:
            self.server.bodies.append(body)
            status, payload = self.server.script.pop(0) if self.server.script else self.server.default
        if status == 200:
            answer = {"choices": [{"index": 0, "message": {"role": "assistant", "content": payload}}]}
        else:
            answer = {"error": {"message": payload}}
        data = json.dumps(answer).encode()
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
def judge(server, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    return EndpointJudge(server.url, "judge-vlm", timeout=5.0, backoff_s=0.001)


_RNG = np.random.default_rng(0)
IMAGES = {"COCO/1.jpg": _RNG.integers(0, 256, (6, 9, 3), dtype=np.uint8),
          "chart/2.png": _RNG.integers(0, 256, (4, 5, 3), dtype=np.uint8)}
SCORE = formats.ScoreItem(score_id=0, name="llava", answer="A dog on a sofa.", id=1,
                          instruction="Describe the image.", image_path="COCO/1.jpg", original_dataset="COCO", human=4)
PAIR = formats.PairItem(id=2, pair_id=7, image_path="chart/2.png", original_dataset="chart",
                        instruction="What is the maximum?", answer1=formats.Answer("gpt4", "42"),
                        answer2=formats.Answer("cogvlm", "17"), human_answer="A")
BATCH = formats.BatchItem(id=3, instruction="Describe the image.", image_path="COCO/1.jpg", original_dataset="COCO",
                          answers=tuple(formats.Answer(n, f"answer of {n}") for n in ("a", "b", "c", "d")),
                          human_answer="CABD")
ITEMS = [SCORE, PAIR, BATCH]
REPLIES = ['{"Analysis": "Accurate.", "Judgement": "[[4]]"}',
           '```json\n{"Analysis": "B is right.", "Judgement": "[[B]]"}\n```',
           '{"Analysis": "...", "Judgement": "[[C]], [[A]], [[B]], [[D]]"}']
VERDICTS = [4, "B", "CABD"]


def _content(body):
    assert body["model"] == "judge-vlm"
    (message,) = body["messages"]
    assert message["role"] == "user"
    return message["content"]


def _decoded_image(part):
    assert part["type"] == "image_url"
    head, data = part["image_url"]["url"].split(",", 1)
    assert head == "data:image/png;base64"
    return cv2.imdecode(np.frombuffer(base64.b64decode(data), np.uint8), cv2.IMREAD_COLOR)[..., ::-1]


def test_no_cot_sends_prompt_then_image_and_returns_the_replies_in_order(server, judge):
    assert judge.name == "endpoint:judge-vlm" and isinstance(judge, Judge)
    server.script = [(200, r) for r in REPLIES]
    replies = judge.judge(ITEMS, IMAGES, seed=5)
    assert replies == REPLIES
    assert [judgements.parse_for(item, r) for item, r in zip(ITEMS, replies)] == VERDICTS
    assert judge.errors == []
    assert len(server.bodies) == 3
    for item, body in zip(ITEMS, server.bodies):
        assert (body["temperature"], body["top_p"], body["max_tokens"], body["seed"]) == (0.4, 0.2, 512, 5)
        content = _content(body)
        assert [p["type"] for p in content] == ["text", "image_url"]
        assert content[0] == {"type": "text", "text": judgements.build_prompt(item, "No COT")}
        np.testing.assert_array_equal(_decoded_image(content[1]), IMAGES[item.image_path])


def test_no_figure_sends_no_image_and_needs_none(server, judge):
    server.script = [(200, REPLIES[1])]
    assert judge.judge([PAIR], {}, setting="No Figure") == [REPLIES[1]]
    assert _content(server.bodies[0]) == [{"type": "text", "text": judgements.build_prompt(PAIR, "No Figure")}]


def test_vision_expert_puts_the_caption_in_the_prompt_and_sends_no_image(server, judge):
    captions = {"COCO/1.jpg": "A brown dog lies on a red sofa.", "chart/2.png": "A bar chart."}
    server.script = [(200, REPLIES[0])]
    assert judge.judge([SCORE], IMAGES, setting="Vision Expert", captions=captions) == [REPLIES[0]]
    (part,) = _content(server.bodies[0])
    assert part["text"] == judgements.build_prompt(SCORE, "Vision Expert", captions["COCO/1.jpg"])
    assert "A brown dog lies on a red sofa." in part["text"]
    with pytest.raises(KeyError, match="chart/2.png"):
        judge.judge([SCORE, PAIR], IMAGES, setting="Vision Expert", captions={"COCO/1.jpg": "x"})
    with pytest.raises(ValueError, match="needs captions="):
        judge.judge([SCORE], IMAGES, setting="Vision Expert")
    assert len(server.bodies) == 1  # The errors came before any request.


def test_a_missing_image_is_a_user_error_before_any_request(server, judge):
    with pytest.raises(KeyError, match="chart/2.png"):
        judge.judge(ITEMS, {"COCO/1.jpg": IMAGES["COCO/1.jpg"]})
    with pytest.raises(ValueError, match="unknown setting"):
        judge.judge(ITEMS, IMAGES, setting="no cot")
    assert server.bodies == []


def test_a_bad_image_names_the_item_and_its_path(judge):
    with pytest.raises(ValueError, match=r"item 0, image_path 'COCO/1.jpg': expected a uint8 image"):
        judge.judge([SCORE], {"COCO/1.jpg": IMAGES["COCO/1.jpg"].astype(np.float32)})


def test_a_500_is_retried(server, judge):
    server.script = [(500, "overloaded"), (200, REPLIES[0])]
    assert judge.judge([SCORE], IMAGES) == [REPLIES[0]]
    assert len(server.bodies) == 2 and server.bodies[0] == server.bodies[1]
    assert judge.errors == []


def test_a_persistent_400_gives_an_empty_reply_and_an_error_entry(server, judge):
    server.script = [(200, REPLIES[0]), (400, "image too large"), (200, REPLIES[2])]
    replies = judge.judge(ITEMS, IMAGES)
    assert replies == [REPLIES[0], "", REPLIES[2]]
    assert len(server.bodies) == 3  # A 400 is not retried.
    assert [judgements.parse_for(item, r) for item, r in zip(ITEMS, replies)] == [4, None, "CABD"]
    ((index, message),) = judge.errors
    assert index == 1
    assert "HTTP 400" in message and "image too large" in message
    # The next call starts a fresh error list.
    server.script = [(200, REPLIES[0])]
    judge.judge([SCORE], IMAGES)
    assert judge.errors == []


def test_an_unreachable_server_gives_empty_replies(server, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    url = server.url
    server.shutdown()
    server.server_close()
    judge = EndpointJudge(url, "m", timeout=1.0, max_retries=1, backoff_s=0.001)
    assert judge.judge([PAIR], {}, setting="No Figure") == [""]
    assert [i for i, _ in judge.errors] == [0] and "could not get an answer" in judge.errors[0][1]


def test_bad_sampling_arguments_raise_at_construction():
    with pytest.raises(ValueError, match="top_p"):
        EndpointJudge("http://127.0.0.1:1/v1", "m", top_p=0.0)
    with pytest.raises(ValueError, match="max_new_tokens"):
        EndpointJudge("http://127.0.0.1:1/v1", "m", max_new_tokens=0)
