"""MLLM-as-a-Judge release files, prompts and verdict parsing: readers on valid and broken lines in
the release's format, the write/read round trip, the prompt's structure per setting, and parsing
of judge replies including malformed ones."""

import dataclasses
import json

import pytest

from jaxml.papers.mllmjudge import formats, judgements

# Lines shaped like the release's (Benchmark_Lite/score_lite.jsonl, pair_lite.jsonl, Benchmark/batch.jsonl).
SCORE = {"score_id": 27, "name": "llava", "answer": "The red kite is of the United States.", "id": 107,
         "instruction": "Which country is the red kite of?", "image_path": "107.jpg", "original_dataset": "coco",
         "human": "4"}
SCORE_INT = {**SCORE, "score_id": 28, "name": "cogvlm", "human": 3}
PAIR = {"id": 0, "pair_id": 5, "image_path": "0.jpg", "original_dataset": "coco",
        "instruction": "Why are the men bending down?",
        "answer1": {"name": "gpt4", "answer": "They play baseball."},
        "answer2": {"name": "gemini", "answer": " The catcher and umpire are蹲下以便更好地看到球。"},
        "human_answer": "A"}
BATCH = {"id": 200, "instruction": "What fruit is growing from the trees?", "image_path": "image/200.jpg",
         "original_dataset": "coco",
         "answers": [{"name": "llava", "answer": "apples"}, {"name": "cogvlm", "answer": "limes"},
                     {"name": "gpt4", "answer": "apples, probably"}, {"name": "gemini", "answer": " apples"}],
         "human_answer": "CDAB"}
# The HQ split: the score gold is named Human_answer, and the judge's evaluation rides along.
SCORE_HQ = {"score_id": 0, "name": "llava", "answer": "a slice of lime", "id": 100, "instruction": "What fruit?",
            "image_path": "image/100.jpg", "original_dataset": "coco", "Human_answer": 3,
            "evaluator": {"judge_Evaluator": 4, "judge_human": 1, "analysis": 5, "hallucination": 0},
            "result": {"name": "gpt4", "judge": "4", "analysis": "Analysis: ... Judgement:[[4]]"}}
VALID = {"score": [SCORE, SCORE_INT, SCORE_HQ], "pair": [PAIR, {**PAIR, "pair_id": 6, "human_answer": "C"}],
         "batch": [BATCH, {**BATCH, "id": 201, "answers": BATCH["answers"][:3], "human_answer": "BCA"}]}


def _write_lines(path, lines):
    path.write_text("".join((ln if isinstance(ln, str) else json.dumps(ln, ensure_ascii=False)) + "\n"
                            for ln in lines), encoding="utf-8")
    return path


# ------------------------------------------------------------------------------------ readers


def test_read_valid_lines_casts_human_score_and_keeps_extras(tmp_path):
    items = formats.read_jsonl(_write_lines(tmp_path / "score.jsonl", VALID["score"]), "score")
    assert [type(it) for it in items] == [formats.ScoreItem] * 3
    # "4" (string in the file) and 3 (int) both become ints; the HQ name Human_answer is the gold.
    assert [it.human for it in items] == [4, 3, 3]
    assert items[0].extra == {} and items[0].id == 107 and items[0].score_id == 27
    assert items[2].extra == {"evaluator": SCORE_HQ["evaluator"], "result": SCORE_HQ["result"]}

    pairs = formats.read_jsonl(_write_lines(tmp_path / "pair.jsonl", VALID["pair"]), "pair")
    assert pairs[0].answer1 == formats.Answer("gpt4", "They play baseball.")
    assert pairs[0].answer2.answer.endswith("看到球。") and [p.human_answer for p in pairs] == ["A", "C"]

    batches = formats.read_jsonl(_write_lines(tmp_path / "batch.jsonl", VALID["batch"]), "batch")
    assert [b.human_answer for b in batches] == ["CDAB", "BCA"]
    assert [a.name for a in batches[0].answers] == ["llava", "cogvlm", "gpt4", "gemini"] and len(batches[1].answers) == 3


def _drop(obj, key):
    return {k: v for k, v in obj.items() if k != key}


BROKEN = [
    # kind, bad line, field named in the error (None: whole line), words in the message
    ("score", '{"score_id": 1, "name": "llava", ', None, "bad JSON"),
    ("score", "[1, 2, 3]", None, "expected a JSON object"),
    ("score", _drop(SCORE, "human"), "human", "missing"),
    ("score", _drop(SCORE, "original_dataset"), "original_dataset", "missing"),
    ("score", {**SCORE, "human": 6}, "human", "out of range"),
    ("score", {**SCORE, "human": "0"}, "human", "out of range"),
    ("score", {**SCORE, "human": 4.5}, "human", "float"),
    ("score", {**SCORE, "human": "four"}, "human", "'four'"),
    ("score", {**SCORE, "human": True}, "human", "bool"),
    ("score", {**SCORE, "score_id": "27"}, "score_id", "expected an int"),
    ("score", {**SCORE, "answer": None}, "answer", "expected a string"),
    ("pair", {**PAIR, "human_answer": "D"}, "human_answer", "one of"),
    ("pair", {**PAIR, "human_answer": -1}, "human_answer", "expected a string"),
    ("pair", {**PAIR, "answer2": "text"}, "answer2", "expected an object"),
    ("pair", {**PAIR, "answer1": {"name": "gpt4"}}, "answer1.answer", "missing"),
    ("pair", _drop(PAIR, "pair_id"), "pair_id", "missing"),
    ("batch", {**BATCH, "human_answer": "CDAA"}, "human_answer", "permutation of 'ABCD'"),
    ("batch", {**BATCH, "human_answer": "CDABE"}, "human_answer", "permutation"),
    ("batch", {**BATCH, "human_answer": "cdab"}, "human_answer", "permutation"),
    ("batch", {**BATCH, "human_answer": "CDA"}, "human_answer", "permutation"),  # 4 answers, 3 letters
    ("batch", {**BATCH, "answers": BATCH["answers"][:1], "human_answer": "A"}, "answers", "at least 2"),
    ("batch", {**BATCH, "answers": [BATCH["answers"][0], {"name": 3, "answer": "x"}]}, "answers[1].name",
     "expected a string"),
]


@pytest.mark.parametrize("kind, bad, field, words", BROKEN)
def test_broken_line_error_names_file_line_and_field(tmp_path, kind, bad, field, words):
    good = VALID[kind][0]
    # A blank line counts in the numbering but is skipped: the bad line is line 4.
    path = _write_lines(tmp_path / f"{kind}.jsonl", [good, good, "", bad, good])
    with pytest.raises(formats.JsonlFormatError) as info:
        formats.read_jsonl(path, kind)
    err = info.value
    assert isinstance(err, ValueError)
    assert (err.path, err.line, err.field) == (str(path), 4, field)
    assert str(err).startswith(f"{path}:4")
    if field is not None:
        assert f"field '{field}'" in str(err)
    assert words in str(err)


def test_reader_rejects_non_utf8_bad_kind_and_missing_file(tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_bytes(json.dumps(SCORE).encode() + b"\n\xff\xfe\n")
    with pytest.raises(formats.JsonlFormatError, match=r"bad\.jsonl:2: not UTF-8"):
        formats.read_jsonl(path, "score")
    with pytest.raises(ValueError, match="kind must be one of"):
        formats.read_jsonl(path, "scores")
    with pytest.raises(FileNotFoundError):
        formats.read_jsonl(tmp_path / "absent.jsonl", "score")


def test_item_from_dict_and_kind_checks():
    assert formats.item_from_dict(SCORE, "score").human == 4
    with pytest.raises(ValueError, match="field 'human': human score 9 is out of range"):
        formats.item_from_dict({**SCORE, "human": 9}, "score")
    with pytest.raises(TypeError, match="ScoreItem, PairItem or BatchItem"):
        formats.kind_of(SCORE)
    assert formats.ranking_letters(4) == "ABCD" and formats.is_ranking("CDAB", 4)
    assert not formats.is_ranking("CDAB", 5) and not formats.is_ranking(None, 4)


# ------------------------------------------------------------------------------- round trip


@pytest.mark.parametrize("kind", formats.KINDS)
def test_write_read_round_trip_is_exact(tmp_path, kind):
    src = _write_lines(tmp_path / f"in_{kind}.jsonl", VALID[kind])
    items = formats.read_jsonl(src, kind)
    out = tmp_path / f"out_{kind}.jsonl"
    formats.write_jsonl(items, out)
    assert formats.read_jsonl(out, kind) == items
    # Line for line the same objects, keys in the same order (HQ's Human_answer keeps its name);
    # the one normalisation is the string human score "4" written as the int 4.
    expected = [dict(obj, human=int(obj["human"])) if "human" in obj else obj for obj in VALID[kind]]
    written = out.read_text(encoding="utf-8").splitlines()
    assert [list(json.loads(ln)) for ln in written] == [list(o) for o in expected]
    assert written == [json.dumps(o, ensure_ascii=False) for o in expected]


def test_items_built_in_code_write_in_release_key_order(tmp_path):
    item = formats.BatchItem(id=1, instruction="q", image_path="image/1.jpg", original_dataset="WIT",
                             answers=(formats.Answer("llava", "a"), formats.Answer("gpt4", "b")), human_answer="BA",
                             extra={"note": [1, 2]})
    path = tmp_path / "b.jsonl"
    formats.write_jsonl([item], path)
    assert list(json.loads(path.read_text())) == list(formats.BATCH_KEYS) + ["note"]
    assert formats.read_jsonl(path, "batch") == [item]
    with pytest.raises(ValueError, match="clash"):
        formats.item_to_dict(dataclasses.replace(item, extra={"id": 3}))


def test_swap_pair_flips_answers_and_gold():
    item = formats.item_from_dict(PAIR, "pair")
    swapped = formats.swap_pair(item)
    assert (swapped.answer1, swapped.answer2, swapped.human_answer) == (item.answer2, item.answer1, "B")
    assert formats.swap_pair(swapped) == item
    tie = dataclasses.replace(item, human_answer="C")
    assert formats.swap_pair(tie).human_answer == "C"


# ---------------------------------------------------------------------------------- prompts


def _items():
    return (formats.item_from_dict(SCORE, "score"), formats.item_from_dict(PAIR, "pair"),
            formats.item_from_dict(BATCH, "batch"))


@pytest.mark.parametrize("setting", list(judgements.SETTINGS))
def test_prompt_structure_per_setting(setting):
    caption = "A tree with green fruit." if setting == "Vision Expert" else None
    for item in _items():
        kind = formats.kind_of(item)
        prompt = judgements.build_prompt(item, setting, caption=caption)
        # The release's section order: start, steps (the setting), method (the task), notice, input.
        head = (judgements.START + "\nEvaluation Steps:\n" + judgements.SETTINGS[setting] + "\nEvaluation Method:\n"
                + judgements.TASKS[kind] + "\nNotice:\n" + judgements.NOTICE + "\nHere is the input:\n")
        assert prompt.startswith(head)
        body = prompt[len(head):]
        assert body.startswith("\n[The Start of User Instruction]\n" + item.instruction + "\n[The End of User Instruction]")
        assert ("[The Start of Vision Expert’s Answer]\nA tree with green fruit.\n" in body) == (caption is not None)
        if kind == "score":
            assert body.endswith("[The Start of Assistant’s Answer]\n" + item.answer + "\n[The End of Assistant’s Answer]")
        else:
            texts = [item.answer1.answer, item.answer2.answer] if kind == "pair" else [a.answer for a in item.answers]
            starts = [body.index(f"[The Start of Assistant {c}’s Answer]\n{t}\n[The End of Assistant {c}’s Answer]")
                      for c, t in zip("ABCD", texts)]
            assert starts == sorted(starts) and len(starts) == (2 if kind == "pair" else 4)
        assert "'Judgement'" in prompt
    assert judgements.uses_image(setting) == (setting not in ("No Figure", "Vision Expert"))


def test_prompt_verdict_formats_and_errors():
    score, pair, batch = _items()
    assert '"[[1]]", "[[2]]", "[[3]]", "[[4]]", "[[5]]"' in judgements.build_prompt(score)
    assert '"[[A]]" if assistant A prevails, "[[B]]" if assistant B does, and "[[C]]" for a tie' in \
        judgements.build_prompt(pair)
    assert "[[A]], [[B]], [[C]], [[D]]" in judgements.build_prompt(batch, "COT figure")
    three = dataclasses.replace(batch, answers=batch.answers[:3], human_answer="BCA")
    assert "Assistant C’s Answer" in judgements.build_prompt(three) and "Assistant D’s" not in \
        judgements.build_prompt(three).split("Here is the input:")[1]
    with pytest.raises(ValueError, match="needs caption"):
        judgements.build_prompt(score, "Vision Expert")
    with pytest.raises(ValueError, match="only used by the 'Vision Expert'"):
        judgements.build_prompt(score, "No COT", caption="x")
    with pytest.raises(ValueError, match="unknown setting 'no cot'"):
        judgements.build_prompt(score, "no cot")


# ---------------------------------------------------------------------------------- parsing

SCORE_REPLIES = [
    ('{"Analysis": "Accurate and detailed.", "Judgement": "[[4]]"}', 4),
    ('```json\n{"Analysis": "ok", "Judgement": "[[2]]"}\n```', 2),
    ('Sure! {"Figure Analysis": "a tree", "Analysis": "fine", "Judgement": "[[5]]"} Hope this helps.', 5),
    ('{"Analysis": "fine", "judgment": 3}', 3),                       # key spelling/case, int value
    ('{"Analysis": "a "quoted" word breaks the JSON", "Judgement": "[[1]]"}', 1),   # broken JSON, label
    ("Analysis: The response is thorough., Judgement: 5", 5),          # bare, after the label (Gemini)
    ("Analysis:The response is accurate.Judgement:[[4]]", 4),
    ("I would rate it [[3]]. Final: [[3]]", 3),                        # same verdict twice
    ('{"Analysis": "meh", "Judgement": "[[6]]"}', None),               # out of range
    ('{"Analysis": "meh", "Judgement": "[[0]]"}', None),
    ('{"Analysis": "meh", "Judgement": "[[3.5]]"}', None),
    ('{"Analysis": "meh", "Judgement": "good"}', None),
    ('{"Analysis": "meh", "Judgement": "4 out of 5"}', None),          # no brackets, not a bare verdict
    ('Use "[[1]]", "[[2]]", "[[3]]", "[[4]]", "[[5]]" to indicate', None),   # quoted rubric: ambiguous
    ("The answer deserves a 4.", None),                                 # free text: no bare search
    ('{"Analysis": "meh", "Judgement": null}', None),
    ("", None), (None, None), (42, None),
]


@pytest.mark.parametrize("reply, expected", SCORE_REPLIES)
def test_parse_score(reply, expected):
    assert judgements.parse_score(reply) == expected
    assert judgements.parse_judgement(reply, "score") == expected


PAIR_REPLIES = [
    ('{"Analysis": "A is more accurate.", "Judgement": "[[A]]"}', "A"),
    ('{"Analysis": "B wins", "Judgement": "[[B]]"}', "B"),
    ('{"Analysis": "equal", "Judgement": "[[C]]"}', "C"),
    ('{"Analysis": "Assistant [[A]] vs [[B]] ...", "Judgement": "[[B]]"}', "B"),   # the field decides
    ('{"Analysis": "close", "Judgement": "A"}', "A"),                   # bare field (result.judge style)
    ("After comparing, the verdict is [[A]].", "A"),
    ("[[A]] ... on reflection [[B]]", None),                            # two verdicts
    ('{"Analysis": "x", "Judgement": "[[D]]"}', None),
    ('{"Analysis": "x", "Judgement": "Assistant A"}', None),
    ('{"Analysis": "x", "Judgement": "[[a]]"}', None),                  # upper case only
    ("Assistant A is better.", None),
    ("", None), (None, None),
]


@pytest.mark.parametrize("reply, expected", PAIR_REPLIES)
def test_parse_pair(reply, expected):
    assert judgements.parse_pair(reply) == expected
    assert judgements.parse_judgement(reply, "pair") == expected


BATCH_REPLIES = [
    ('{"Analysis": "C best, B worst", "Judgement": "[[C]], [[D]], [[A]], [[B]]"}', 4, "CDAB"),
    ('{"Analysis": "x", "Judgement": "[[B]] > [[A]] > [[C]] > [[D]]"}', 4, "BACD"),
    ('{"Analysis": "x", "Judgement": "[[B, A, D, C]]"}', 4, "BADC"),
    ('{"Analysis": "x", "Judgement": "[[BACD]]"}', 4, "BACD"),
    ('{"Analysis": "x", "Judgement": "BACD"}', 4, "BACD"),              # bare (the local judges' format)
    ('{"Analysis": "x", "Judgement": "D, C, B, A"}', 4, "DCBA"),
    ('{"Analysis": "x", "Judgement": ["[[A]]", "[[C]]", "[[B]]", "[[D]]"]}', 4, "ACBD"),
    ("Ranking: [[D]], [[A]], [[C]], [[B]]\nThat is my final rank.", 4, "DACB"),
    ('{"Analysis": "x", "Judgement": "[[C]], [[A]], [[B]]"}', 3, "CAB"),
    ('{"Analysis": "x", "Judgement": "[[C]], [[A]], [[B]]"}', 4, None),  # incomplete
    ('{"Analysis": "x", "Judgement": "[[C]], [[A]], [[A]], [[B]]"}', 4, None),   # repeated letter
    ('{"Analysis": "x", "Judgement": "[[C]], [[A]], [[B]], [[E]]"}', 4, None),   # letter outside A-D
    ('{"Analysis": "x", "Judgement": "[[A]]"}', 4, None),
    # The template quoted from the prompt plus a different ranking: ambiguous.
    ("output like [[A]], [[B]], [[C]], [[D]]. My rank: [[B]], [[A]], [[D]], [[C]]", 4, None),
    ('{"Analysis": "x", "Judgement": "C is best, then D"}', 4, None),
    (None, 4, None),
]


@pytest.mark.parametrize("reply, n, expected", BATCH_REPLIES)
def test_parse_batch(reply, n, expected):
    assert judgements.parse_batch(reply, n) == expected
    assert judgements.parse_judgement(reply, "batch", n) == expected


def test_parse_for_item_and_bad_arguments():
    score, pair, batch = _items()
    three = dataclasses.replace(batch, answers=batch.answers[:3], human_answer="BCA")
    assert judgements.parse_for(score, '{"Judgement": "[[2]]"}') == 2
    assert judgements.parse_for(pair, '{"Judgement": "[[C]]"}') == "C"
    assert judgements.parse_for(three, '{"Judgement": "[[B]], [[C]], [[A]]"}') == "BCA"
    assert judgements.parse_for(batch, '{"Judgement": "[[B]], [[C]], [[A]]"}') is None
    with pytest.raises(ValueError, match="kind must be one of"):
        judgements.parse_judgement("[[1]]", "rank")
    with pytest.raises(ValueError, match="num_answers"):
        judgements.parse_batch("[[A]]", 0)
